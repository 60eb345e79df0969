"""A streamed run's last step: chunk results read back in input order into the output file (written
under a temporary name and renamed), each family's chunk statistics merged into its corpus scores
(``capeval.metrics.statistics``), and the signatures stamped over all rows."""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ..metrics.statistics import Statistics
from ..result import Result
from ..rowfiles import RowFileWriter
from ..signature import with_fields, with_last_fields
from .chunks import ChunkResult
from .store import RunStore


def _merged(family: str, parts: list[Statistics]) -> Statistics:
    """One family's statistics of the whole input from its chunks'. Parts that disagree (a
    signature field that depends on the chunk) are a bug in that family's contract."""
    try:
        return Statistics.merge(parts)
    except ValueError as e:
        raise RuntimeError(f"{family}: the chunks' statistics do not merge ({e})") from None


class Assembly:
    """What the chunk results add up to, taken in input order."""

    def __init__(self, metrics: list[str], keep_per_caption: bool):
        self.metrics = metrics
        self.keep_per_caption = keep_per_caption
        self.per_caption: dict[str, list[np.ndarray]] = {m: [] for m in metrics}
        self.stats: dict[str, list[Statistics]] = {}
        self.nrefs: set[int] = set()
        self.line_break = False
        self.emptied: dict[str, int] = {}
        self.forms = [0, 0]  # texts holding composed / decomposed Unicode
        self.first_signatures: dict[str, str] = {}

    def add(self, r: ChunkResult) -> None:
        if self.keep_per_caption:
            for m in self.metrics:
                self.per_caption[m].append(r.per_caption[m])
        for fam, st in r.stats.items():
            self.stats.setdefault(fam, []).append(st)
        self.nrefs |= r.nrefs
        self.line_break |= r.line_break
        for what, v in r.emptied.items():
            self.emptied[what] = self.emptied.get(what, 0) + v
        for form, v in enumerate(r.extra.get("unicode_forms", (0, 0))):
            self.forms[form] += v
        if not self.first_signatures:
            self.first_signatures = dict(r.signatures)

    def signatures(self, tokenizer: str, families: dict[str, type]) -> dict[str, str]:
        """Each chunk stamped its own rows' ``tok`` and ``nrefs``: the whole input's instead."""
        from ..text import tokenizer_id
        from ..validation import LINE_BREAK_TAG

        tag = LINE_BREAK_TAG if self.line_break else ""
        nrefs = str(next(iter(self.nrefs))) if len(self.nrefs) == 1 else "var"
        return {m: with_fields(self.first_signatures[m], nrefs=nrefs,
                               tok=(tokenizer_id(tokenizer) if families[m].text_input == "tokenized" else "none") + tag)
                for m in self.metrics}

    def merged(self) -> dict[str, Statistics]:
        return {fam: _merged(fam, parts) for fam, parts in self.stats.items()}

    def details(self, merged: dict[str, Statistics], tokenizer: str) -> dict[str, Any]:
        """The families' corpus details and the input counts, warning once with the totals."""
        from ..validation import mixed_message

        details: dict[str, Any] = {fam: d for fam, st in merged.items() if (d := st.aggregate.details(st))}
        if self.emptied:
            details["input"] = {"empty_after_tokenization": self.emptied}
            warnings.warn(f"{', '.join(f'{v} {k}' for k, v in self.emptied.items())} empty after the {tokenizer} "
                          "tokenizer (scored as empty text by the n-gram metrics); counted in "
                          "result.details['input']", stacklevel=4)
        for st in merged.values():
            if (said := st.aggregate.warning(st)) is not None:
                warnings.warn(said, stacklevel=4)
        if (mixed := mixed_message(*self.forms)) is not None:
            warnings.warn(mixed, UserWarning, stacklevel=4)
        return details


def assemble(store: RunStore, keys: list[str], metrics: list[str], *, out_path: Path | None, fmt: str | None,
             chunk_size: int, tokenizer: str, keep_per_caption: bool, n_rows: int,
             families: dict[str, type]) -> Result:
    """The run's Result from its saved chunk results; the output file written beside it.
    ``families``: each metric's family (the run's plan)."""

    writer = RowFileWriter(out_path, fmt, metrics) if out_path is not None and fmt is not None else None
    acc = Assembly(metrics, keep_per_caption)
    try:
        for i, key in enumerate(keys):
            r = store.load(i, key)
            if r is None:
                raise RuntimeError(f"chunk {i} result missing or damaged in {store.folder} after scoring")
            if writer is not None:
                rids = r.ids if r.ids is not None else list(range(i * chunk_size, i * chunk_size + r.n))
                writer.write(r.fragment, rids, r.per_caption)
            acc.add(r)
        merged = acc.merged()
        signatures = {m: with_last_fields(sig, merged[families[m].family].aggregate.fields(merged[families[m].family]),
                                          ("trunc", "ood", "unans"))
                      for m, sig in acc.signatures(tokenizer, families).items()}
        corpus = {m: float(merged[families[m].family].corpus()[m]) for m in metrics}
        if writer is not None:
            writer.commit(corpus, signatures)  # rows and signatures as a pair (rowfiles.commit_pair)
            writer = None
    finally:
        if writer is not None:
            writer.abort()
    arrays = {m: np.concatenate(v) if v else np.zeros(0) for m, v in acc.per_caption.items()}
    return Result(corpus=corpus, per_caption=arrays if keep_per_caption else {}, signatures=signatures, n=n_rows,
                  details=acc.details(merged, tokenizer))
