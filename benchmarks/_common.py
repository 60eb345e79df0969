"""Inputs shared by the benchmark scripts (run as ``python benchmarks/<name>.py``, so this
module is importable as ``_common``)."""
from __future__ import annotations


def expert_rows(n: int | None = None) -> tuple[list[str], list[list[str]]]:
    """Flickr8k-Expert candidates and references (16,992 rows, whitespace-normalised, file
    order), optionally the first ``n`` only."""
    import capeval.data

    table = capeval.data.load("flickr8k-expert")
    cands, refs = table.candidates, table.references
    if n is not None:
        cands, refs = cands[:n], refs[:n]
    return cands, refs


def candidate_sets() -> dict[str, tuple[list[str], list[list[str]]]]:
    """Every benchmark candidate set as (candidates, references) rows: the correlation sets'
    rows, both candidates of each pairwise row, and every system's captions of the Tanti sets."""
    import capeval.data

    out: dict[str, tuple[list[str], list[list[str]]]] = {}
    for name in ("flickr8k-expert", "flickr8k-cf", "composite", "tanti-human200"):
        t = capeval.data.load(name)
        out[name] = (list(t.candidates), [list(r) for r in t.references])
    for name in ("pascal50s", "abstract50s"):
        t = capeval.data.load(name)
        out[name] = (list(t.candidates_a) + list(t.candidates_b), [list(r) for r in t.references] * 2)
    for name in ("tanti-flickr8k", "tanti-flickr30k", "tanti-coco"):
        t = capeval.data.load(name)
        c: list[str] = []
        r: list[list[str]] = []
        for caps in t.systems.values():
            c += caps
            r += [list(x) for x in t.references]
        out[name] = (c, r)
    return out
