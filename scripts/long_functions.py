"""List the functions and methods in src/ longer than a limit (default 80 lines, decorators and
docstring included), longest first: ``python scripts/long_functions.py [LIMIT]``."""
from __future__ import annotations

import ast
import sys
from pathlib import Path


def long_functions(root: Path, limit: int) -> list[tuple[int, str, str]]:
    rows = []
    for path in sorted(root.rglob("*.py")):
        stack: list[tuple[ast.AST, str]] = [(ast.parse(path.read_text(encoding="utf-8")), "")]
        while stack:
            node, prefix = stack.pop()
            for child in ast.iter_child_nodes(node):
                if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    continue
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    if child.end_lineno - start + 1 > limit:
                        rows.append((child.end_lineno - start + 1, f"{path.relative_to(root)}:{child.lineno}", name))
                stack.append((child, name + "."))
    return sorted(rows, reverse=True)


if __name__ == "__main__":
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 80
    for n, where, name in long_functions(Path(__file__).resolve().parents[1] / "src", limit):
        print(f"{n:4d}  {where:48s} {name}")
