"""Nothing persisted is unpickled (issue 41): no call in ``src/`` that unpickles (``pickle.load(s)``,
``Unpickler``, ``marshal.load(s)``, ``shelve``, ``dill``/``joblib``/``cloudpickle`` loads,
``allow_pickle=True``) except the sites below, each of which reads bytes that never were on disk
or is the df converter's guarded path. A new site fails this test with its file and line."""
from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "capeval"

_MODULES = {"pickle", "cPickle", "_pickle", "dill", "cloudpickle", "joblib", "marshal", "shelve"}
_CALLS = {"load", "loads", "Unpickler", "open"}


def _unpickles(node: ast.Call) -> bool:
    """``pickle.load(s)(...)`` and the like, ``Unpickler(...)``, or any call with
    ``allow_pickle=True``."""
    f = node.func
    if isinstance(f, ast.Attribute) and f.attr in _CALLS and isinstance(f.value, ast.Name) and f.value.id in _MODULES:
        return f.attr != "open" or f.value.id == "shelve"
    if isinstance(f, ast.Name) and f.id == "Unpickler":
        return True
    return any(k.arg == "allow_pickle" and not (isinstance(k.value, ast.Constant) and k.value.value is False)
               for k in node.keywords)


#: file -> (number of sites, why they are safe)
KNOWN = {
    "compat/fork_df.py": (None, "the df converter: pre-scanned, and only with the caller's allow_pickle=True"),
    "compat/ciderD.py": (1, "passes the caller's explicit allow_pickle=True on to compat/fork_df.py"),
    "stream/chunks.py": (2, "a run-time metric class pickled by this run's own process, sent to its workers over "
                            "their pipe (never written)"),
    "integrations/torchmetrics.py": (1, "metadata gathered from this job's ranks over torch.distributed (never "
                                        "written)"),
}


def _sites() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and _unpickles(node):
                found.setdefault(rel, []).append(f"{rel}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    return found


def test_nothing_read_from_disk_is_unpickled():
    found = _sites()
    unknown = [s for rel, sites in found.items() if rel not in KNOWN for s in sites]
    assert not unknown, "unpickling outside the known sites:\n" + "\n".join(unknown)
    for rel, (count, _why) in KNOWN.items():
        if count is not None:
            assert len(found.get(rel, [])) <= count, "\n".join(found[rel])


def test_the_scan_finds_what_it_names():
    for code in ("pickle.loads(data)", "pickle.load(f)", "marshal.loads(b)", "np.load(p, allow_pickle=True)",
                 "cloudpickle.loads(x)", "Unpickler(f)", "shelve.open(p)", "f(allow_pickle=flag)"):
        assert _unpickles(ast.parse(code).body[0].value), code  # type: ignore[attr-defined]
    for code in ("pickle.dumps(x)", "np.load(p, allow_pickle=False)", "open(p)"):
        assert not _unpickles(ast.parse(code).body[0].value), code  # type: ignore[attr-defined]
