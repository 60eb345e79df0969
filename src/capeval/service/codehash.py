"""The code a family's numbers come from, as one digest for its score-cache keys.

A cached number is valid only for the code that computed it. The digest covers the source of
the module defining the family, every capeval module it imports (statically, including imports
inside functions, followed transitively; the compiled core by its C source), and the same for
every family whose scores it reads (``Metric.reads``: a learned model's features). Editing
CIDEr-D's code therefore changes the keys of ``cider_d`` and of ``spider``, ``nneval`` and
``learned``, with no revision to bump by hand. Sources are read from the installed package on
first use and kept for the process.

Modules whose edits cannot change a number are left out, so that rewording an error message
keeps every cache warm: :data:`NEUTRAL`.
"""
from __future__ import annotations

import ast
import hashlib
from functools import lru_cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]  # .../capeval

#: Error types and messages, the version (already in every key), progress hooks, the data and
#: cache roots, atomic file writing.
NEUTRAL = frozenset({"capeval.errors", "capeval._version", "capeval.progress", "capeval.paths",
                     "capeval.outputs"})


def module_file(name: str) -> Path | None:
    """The source of capeval module ``name`` (``capeval.metrics.cider``): its ``.py``, its
    package ``__init__.py``, or the ``.c`` of a compiled module; None for anything else."""
    parts = name.split(".")
    if parts[0] != "capeval":
        return None
    base = _PACKAGE.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py", base.with_suffix(".c")):
        if candidate.is_file():
            return candidate
    return None


def module_source(name: str) -> bytes | None:
    path = module_file(name)
    return path.read_bytes() if path is not None else None


def _is_package(name: str) -> bool:
    path = module_file(name)
    return path is not None and path.name == "__init__.py"


def _imports(name: str, source: bytes) -> set[str]:
    """capeval modules that ``name``'s source imports (``from .x import y`` counts ``.x.y`` when
    it is a module, else ``.x``)."""
    if module_file(name) is None or module_file(name).suffix != ".py":
        return set()
    package = name if _is_package(name) else name.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if not mod.startswith("capeval"):
                continue
            subs = {f"{mod}.{a.name}" for a in node.names if module_file(f"{mod}.{a.name}") is not None}
            out.update(subs)
            # a package's __init__ counts only when a name is taken from it, not a submodule
            if len(subs) < len(node.names) or not _is_package(mod):
                out.add(mod)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("capeval"))
    return {m for m in out if module_file(m) is not None}


@lru_cache(maxsize=None)
def _module_info(name: str) -> tuple[str, frozenset[str]]:
    source = module_source(name)
    if source is None:
        return "", frozenset()
    return hashlib.sha256(source).hexdigest(), frozenset(_imports(name, source))


def closure(roots) -> list[str]:
    """``roots`` and every capeval module they import, transitively, less :data:`NEUTRAL`."""
    seen: set[str] = set()
    todo = [r for r in roots if module_file(r) is not None]
    while todo:
        mod = todo.pop()
        if mod in seen or mod in NEUTRAL:
            continue
        seen.add(mod)
        todo.extend(_module_info(mod)[1] - seen)
    return sorted(seen)


def code_digest(roots) -> str:
    """One sha256 over the sources of :func:`closure` (module names and file digests)."""
    h = hashlib.sha256()
    for mod in closure(roots):
        h.update(f"{mod}\0{_module_info(mod)[0]}\n".encode())
    return h.hexdigest()


def family_modules(cls, options: dict | None = None) -> list[str]:
    """The modules a family's numbers come from: its own, the tokenizer's when it scores
    tokenized text, and those of every family it reads (``cls.reads(options)``, followed
    through their own reads)."""
    from ..metrics.registry import OUTPUT_MODULES, family_for

    mods = {cls.__module__}
    if getattr(cls, "text_input", None) == "tokenized":
        from ..text import TOKENIZERS

        # the tokenizers' code decides the tokens it scores (loaded by name, not imported)
        mods.update(["capeval.text", *(module for module, _ in TOKENIZERS.values())])
    seen: set[str] = set()
    todo = list(cls.reads(options or {}))
    while todo:
        out = todo.pop()
        if out in seen or out not in OUTPUT_MODULES:
            continue  # a user's scores file or callable names no module of capeval
        seen.add(out)
        mods.add(OUTPUT_MODULES[out])
        todo.extend(family_for(out).reads({}))
    return sorted(mods)


def family_code(cls, options: dict | None = None) -> str:
    """The code digest of ``cls`` (a ``Metric`` subclass) under ``options``."""
    return code_digest(family_modules(cls, options))


def clear() -> None:
    """Forget the sources read so far (tests that edit them)."""
    _module_info.cache_clear()
