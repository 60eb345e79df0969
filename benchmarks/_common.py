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
