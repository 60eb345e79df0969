"""The layer order of docs/ARCHITECTURE.md, checked on the source: no module imports a layer
above its own, no two modules import each other (directly or round a circle), and no module
imports another module's private name (``from .api import _helper``).

Imports are read with ``ast`` (module level and inside functions alike), so a lazy import that
runs upward is caught as well. The metric and resource name tables refer to modules by string on
purpose (plugins register themselves when loaded) and are not imports.
"""
from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

#: Top to bottom. A module may import its own package and any package of a lower layer; the
#: packages of one layer do not import each other. ``capeval`` itself (the façade re-exporting
#: ``score``, ``score_stream`` ...) sits above everything and nothing inside imports it.
LAYERS: list[tuple[str, ...]] = [
    ("cli",),
    ("compat", "integrations"),
    ("metaeval", "stress"),
    ("learn", "pregen", "stream", "qace", "judges"),
    ("stats",),
    ("data",),
    ("service",),
    ("api", "reward"),
    ("plan",),
    ("metrics",),
    ("scenegraph", "text"),
    ("resources",),
    ("inputs",),
    ("rowfiles", "dffile", "scorefile"),
    ("outputs", "result", "validation", "signature", "progress", "dedup", "paths", "digests", "imagedir", "extras", "_compiled"),
    ("guards",),
    ("errors", "_version", "_speedups", "_meteor_speedups", "_process"),
]
LEVEL = {pkg: i for i, layer in enumerate(LAYERS) for pkg in layer}


def _modules() -> dict[str, Path]:
    mods = {}
    for p in (SRC / "capeval").rglob("*.py"):
        parts = list(p.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    # Compiled extensions (``from . import _speedups``) are leaves: named by their C source.
    for p in (SRC / "capeval").rglob("*.c"):
        parts = list(p.relative_to(SRC).with_suffix("").parts)
        mods.setdefault(".".join(parts), p)
    return mods


def _imports(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: set[str] = set()
    if path.suffix != ".py":
        return out
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            subs = [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in mods]
            targets = subs if len(subs) == len(node.names) else [mod, *subs]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        out.update(t for t in targets if t in mods and t != name)
    return out


#: Imports of another module's private name that are allowed, each with a comment saying why
#: (none now: a helper used by another module is public, or lives where it is used).
PRIVATE_IMPORTS_ALLOWED: set[tuple[str, str]] = set()


def _private_imports(name: str, path: Path, mods: dict[str, Path]) -> set[tuple[str, str]]:
    """``(module, "other.module._name")`` for every ``from other.module import _name`` (module
    level or inside a function) where ``_name`` is not a submodule: a private module of a package
    (``metrics._ngrams``) may be imported, a private name of another module may not."""
    if path.suffix != ".py":
        return set()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        if mod.split(".")[0] != "capeval" or mod == name:
            continue
        for a in node.names:
            private = a.name.startswith("_") and not a.name.startswith("__")
            if private and f"{mod}.{a.name}" not in mods:
                out.add((name, f"{mod}.{a.name}"))
    return out


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    mods = _modules()
    return {name: _imports(name, path, mods) for name, path in mods.items()}


def test_every_package_has_a_layer(graph):
    missing = sorted({_top(m) for m in graph} - set(LEVEL) - {""})
    assert not missing, f"add these to LAYERS (and docs/ARCHITECTURE.md): {missing}"


def test_no_module_imports_a_layer_above_or_beside_it(graph):
    bad = []
    for src, targets in graph.items():
        if src == "capeval":
            continue
        for dst in targets:
            a, b = _top(src), _top(dst)
            if dst == "capeval":
                bad.append(f"{src} imports the capeval façade")
            elif a != b and LEVEL[b] <= LEVEL[a]:
                bad.append(f"{src} ({a}, layer {LEVEL[a]}) imports {dst} ({b}, layer {LEVEL[b]})")
    assert not bad, "\n".join(sorted(bad))


def test_no_import_circle(graph):
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = iter(range(10**9))

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = next(counter)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not circles, circles


def test_the_checker_sees_a_violation(tmp_path):
    """The rules above can fail: a planted upward import is reported."""
    mods = {"capeval.metrics.x": tmp_path / "x.py", "capeval.metaeval.runner": tmp_path / "r.py"}
    mods["capeval.metrics.x"].write_text("from ..metaeval.runner import run_benchmark\n")
    got = _imports("capeval.metrics.x", mods["capeval.metrics.x"], mods)
    assert got == {"capeval.metaeval.runner"}
    assert LEVEL[_top("capeval.metaeval.runner")] < LEVEL[_top("capeval.metrics.x")]


def test_no_module_imports_another_modules_private_name():
    mods = _modules()
    found = set().union(*(_private_imports(n, p, mods) for n, p in mods.items()))
    new = sorted(f"{src} imports {dst}" for src, dst in found - PRIVATE_IMPORTS_ALLOWED)
    assert not new, "make these names public or move them where they are used:\n" + "\n".join(new)
    fixed = sorted(f"{src} -> {dst}" for src, dst in PRIVATE_IMPORTS_ALLOWED - found)
    assert not fixed, "no longer imported; delete from PRIVATE_IMPORTS_ALLOWED:\n" + "\n".join(fixed)


def test_the_private_name_check_sees_one(tmp_path):
    mods = {"capeval.stream.x": tmp_path / "x.py", "capeval.api": tmp_path / "api.py",
            "capeval.metrics._ngrams": tmp_path / "_ngrams.py"}
    mods["capeval.stream.x"].write_text("def f():\n    from ..api import _helper, score\n"
                                         "from ..metrics import _ngrams\n")
    assert _private_imports("capeval.stream.x", mods["capeval.stream.x"], mods) == {
        ("capeval.stream.x", "capeval.api._helper")}


# ---- string imports ---------------------------------------------------------------------------

#: Links made by a string instead of an ``import``: a module names another (``"capeval.qace.metric"``,
#: ``"flickr8k:load_expert"``) and loads it with ``importlib`` on first use. The import graph above
#: does not see them, so they are collected here from the source (every string constant that names
#: a capeval module) and from the name tables themselves (:func:`_table_links`, which also see
#: names built by concatenation). One that reaches a layer above its holder (or a package beside
#: it) is declared below, per holder and package, with its reason; a new one fails until it is, and
#: a row no longer found fails too.
STRING_IMPORTS: dict[tuple[str, str], str] = {
    ("capeval.metrics.registry", "learn"): "OUTPUT_MODULES: the nneval and learned families live beside their "
                                           "training code and models, loaded when one of their names is asked for",
    ("capeval.metrics.registry", "qace"): "OUTPUT_MODULES: the QACE families live beside their question "
                                          "generation and answering models",
    ("capeval.metrics.registry", "judges"): "OUTPUT_MODULES: the model-judge families live beside their HTTP and "
                                            "local backends and response cache",
}

_MODULE_STRING = re.compile(r"capeval(?:\.\w+)+(?::[\w.]+)?")


def _module_of(text: str, mods: dict[str, Path]) -> str | None:
    """The capeval module a string names (``pkg.mod``, ``pkg.mod:attr``), or None."""
    target = text.split(":", 1)[0]
    while target not in mods and "." in target:
        target = target.rsplit(".", 1)[0]
    return target if target in mods and target != "capeval" else None


def _source_links(mods: dict[str, Path]) -> set[tuple[str, str]]:
    out = set()
    for name, path in mods.items():
        if path.suffix != ".py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _MODULE_STRING.fullmatch(node.value):
                target = _module_of(node.value, mods)
                if target is not None and target != name:
                    out.add((name, target))
    return out


def _table_links(mods: dict[str, Path]) -> set[tuple[str, str]]:
    """The name tables' entries as loaded, each checked to name an existing module."""
    from capeval.data.registry import specs
    from capeval.metrics.registry import OUTPUT_MODULES
    from capeval.resources.resolver import RESOURCE_MODULES
    from capeval.text import TOKENIZERS

    tables = {
        "capeval.metrics.registry": set(OUTPUT_MODULES.values()),
        "capeval.resources.resolver": set(RESOURCE_MODULES),
        "capeval.data.registry": {"capeval.data." + d.loader.split(":")[0] for d in specs()},
        "capeval.text": {module for module, _ in TOKENIZERS.values()},
    }
    out = set()
    for holder, names in tables.items():
        missing = sorted(n for n in names if n not in mods)
        assert not missing, f"{holder} names modules that do not exist: {missing}"
        out.update((holder, n) for n in names)
    return out


def _upward(links: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """``(holder, package)`` of each link to a layer above the holder's or to a package beside it."""
    return {(src, _top(dst)) for src, dst in links
            if _top(src) != _top(dst) and LEVEL[_top(dst)] <= LEVEL[_top(src)]}


def test_string_imports_are_declared():
    mods = _modules()
    links = _source_links(mods) | _table_links(mods)
    assert ("capeval.metrics.registry", "capeval.metrics.bleu") in links  # the tables are read
    found = _upward(links)
    new = sorted(f"{src} -> {pkg}" for src, pkg in found - set(STRING_IMPORTS))
    assert not new, "string imports of a layer above: declare each in STRING_IMPORTS with its reason\n" + "\n".join(new)
    stale = sorted(f"{src} -> {pkg}" for src, pkg in set(STRING_IMPORTS) - found)
    assert not stale, "declared in STRING_IMPORTS but no longer found:\n" + "\n".join(stale)


def test_the_string_import_check_sees_one(tmp_path):
    mods = {"capeval.metrics.x": tmp_path / "x.py", "capeval.stream.run": tmp_path / "run.py"}
    mods["capeval.metrics.x"].write_text('LOADERS = {"a": "capeval.stream.run:main", "b": "not capeval.stream"}\n')
    mods["capeval.stream.run"].write_text('"capeval.metrics.x"\n')  # downward: no declaration needed
    assert _upward(_source_links(mods)) == {("capeval.metrics.x", "stream")}


# ---- function length ------------------------------------------------------------------------

ROOT = SRC.parent
LIMIT = 80


def _long_functions(src: Path) -> set[tuple[str, str]]:
    """(file under src/, qualified name) of each function over the limit, by scripts/long_functions.py."""
    spec = importlib.util.spec_from_file_location("long_functions", ROOT / "scripts" / "long_functions.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return {(where.rsplit(":", 1)[0], name) for _, where, name in mod.long_functions(src, LIMIT)}


def _listed_long_functions() -> set[tuple[str, str]]:
    """The rows of ARCHITECTURE.md's "Functions over 80 lines" table that give a reason."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("## Functions over 80 lines", 1)[1].split("\n## ", 1)[0]
    return {(m[1], m[2]) for m in re.finditer(r"^\| `([^`]+\.py): ([\w.]+)` \| *\S", section, re.M)}


def test_no_function_over_80_lines_unless_listed_with_its_reason():
    found, listed = _long_functions(SRC), _listed_long_functions()
    unlisted = sorted(found - listed)
    assert not unlisted, (f"functions over {LIMIT} lines: {unlisted}; split them into named steps, or list each "
                          "with its reason in docs/ARCHITECTURE.md (Functions over 80 lines)")
    stale = sorted(listed - found)
    assert not stale, f"listed in docs/ARCHITECTURE.md but not over {LIMIT} lines (any more): {stale}; remove the rows"


def test_the_length_check_sees_a_long_function(tmp_path):
    (tmp_path / "capeval").mkdir()
    body = "".join(f"        x{i} = {i}\n" for i in range(LIMIT))  # 81 lines with the def
    (tmp_path / "capeval" / "m.py").write_text(f"class C:\n    def f(self):\n{body}\n\ndef g():\n    return 1\n")
    assert _long_functions(tmp_path) == {("capeval/m.py", "C.f")}


# ---- file length ------------------------------------------------------------------------------

FILE_LIMIT = 400


def _long_files(src: Path) -> set[str]:
    """``src/...`` paths of the .py and .c files over the limit."""
    return {f"src/{p.relative_to(src.parent).as_posix()}" for p in sorted(src.rglob("*")) if p.suffix in (".py", ".c")
            and len(p.read_text(encoding="utf-8").splitlines()) > FILE_LIMIT}


def _listed_long_files() -> set[str]:
    """The rows of ARCHITECTURE.md's "Files over 400 lines" table that give a reason."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("## Files over 400 lines", 1)[1].split("\n## ", 1)[0]
    return {m[1] for m in re.finditer(r"^\| `(src/[^`]+)` \| *\S", section, re.M)}


def test_no_file_over_400_lines_unless_listed_with_its_reason():
    found, listed = _long_files(SRC / "capeval"), _listed_long_files()
    unlisted = sorted(found - listed)
    assert not unlisted, (f"files over {FILE_LIMIT} lines: {unlisted}; split them, or list each with its reason in "
                          "docs/ARCHITECTURE.md (Files over 400 lines)")
    stale = sorted(listed - found)
    assert not stale, f"listed in docs/ARCHITECTURE.md but not over {FILE_LIMIT} lines (any more): {stale}; remove the rows"


def test_the_file_length_check_sees_a_long_file(tmp_path):
    (tmp_path / "capeval").mkdir()
    (tmp_path / "capeval" / "m.py").write_text("x = 1\n" * (FILE_LIMIT + 1))
    (tmp_path / "capeval" / "short.c").write_text("int x;\n" * FILE_LIMIT)
    assert _long_files(tmp_path / "capeval") == {"src/capeval/m.py"}
