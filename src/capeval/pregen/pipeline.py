"""One model's rows of the pre-gen study (docs/PREGEN.md, The four tiers): rank its test
images by per-image CIDEr-D, form the 15 strata, and score every stratum with post-gen metrics
(capeval's metric families) and with all pre-gen metrics (the tier engine)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import InputError
from ..plan import ScoringPlan
from ..signature import nrefs_field
from ..validation import validate_corpus
from .stratify import MAX_STRATA, image_order, strata
from .tiers import column_names, compute
from .tokens import TokenScores


def per_image_cider(candidates: Sequence[str], references: Sequence[Sequence[str]]):
    """Per-image CIDEr-D over the whole test set in one call (N = test-set size).

    The reference passed space-joined tokens straight to the scorer, so no tokenizer runs.
    """
    from ..api import score

    return score(candidates, references, ["cider_d"], tokenizer="none").per_caption["cider_d"]


class PostgenScorer:
    """Post-gen metrics for many subsets with one instance per metric family, so a
    subprocess-backed metric (METEOR's JVM) starts once, not once per stratum.

    ``postgen`` maps a results column name (``CIDEr``) to a capeval output name
    (``cider_d``). Text is passed as given (tokenizer ``none``), as the reference did.
    """

    def __init__(self, postgen: Mapping[str, str], options: Mapping[str, dict] | None = None):
        self.postgen = dict(postgen)
        # each output resolved once, options checked once
        self._plan = ScoringPlan.build(list(dict.fromkeys(self.postgen.values())), tokenizer="none",
                                       options=dict(options or {}))
        self._options = self._plan.options
        self._families = {}
        for out in self.postgen.values():
            cls = self._plan.family_of(out)
            if cls not in self._families:
                self._families[cls] = cls(**self._options.get(cls.family, {}))
        self.signatures: dict[str, str] = {}

    def instance(self, family: str):
        """The open metric object of a family (its subprocess stays up between calls)."""
        for cls, metric in self._families.items():
            if cls.family == family:
                return metric
        raise InputError(f"no {family!r} metric in this scorer")

    def score(self, candidates: Sequence[str], references: Sequence[Sequence[str]]) -> dict[str, float]:
        return self.score_subsets(candidates, references, [range(len(candidates))])[0]

    def score_subsets(
        self,
        candidates: Sequence[str],
        references: Sequence[Sequence[str]],
        subsets: Sequence[Sequence[int]],
    ) -> list[dict[str, float]]:
        """Corpus values of each subset, each scored as if on its own (CIDEr's df from the
        subset alone). A family whose rows' statistics depend on the row alone (it streams and
        needs no corpus pre-pass here) computes them once; each subset's scores come from its
        rows' statistics (``Statistics.take``), which is what scoring the subset does. Others
        (CIDEr with df from the subset) score each subset."""
        if not subsets:
            return []
        cands, refs = validate_corpus(candidates, references)
        nrefs = nrefs_field(refs)
        results: list[dict[str, float]] = [{} for _ in subsets]
        for cls, metric in self._families.items():
            names = [(col, out) for col, out in self.postgen.items() if self._plan.family_of(out) is cls]
            full = None
            if cls.cannot_stream(self._options.get(cls.family, {})) is None and metric.prepass(cands, refs) is None:
                full = metric.statistics(cands, refs)
                fields = full.fields
            for k, idx in enumerate(subsets):
                idx = list(idx)
                if full is not None:
                    corpus = full.take(np.asarray(idx, dtype=np.int64)).corpus()
                else:
                    res = metric.compute([cands[i] for i in idx], [refs[i] for i in idx])
                    corpus = res.corpus
                    if k == 0:
                        # The first subset's (in the stratification, the whole test set);
                        # size-dependent fields like CIDEr's df:corpus:N follow each subset.
                        fields = res.signature_fields
                for col, out in names:
                    results[k][col] = float(corpus[out])
            for col, out in names:
                self.signatures[col] = metric.signature(out, fields, tok="none", nrefs=nrefs)
        return [{col: r[col] for col in self.postgen} for r in results]

    def close(self) -> None:
        for m in self._families.values():
            m.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def model_rows(
    key: Mapping[str, object],
    token_scores: TokenScores,
    candidates: Sequence[str],
    references: Sequence[Sequence[str]],
    scorer: PostgenScorer,
    *,
    max_strata: int = MAX_STRATA,
    stable: bool = True,
    pregen_names: Sequence[str] | None = None,
) -> list[dict[str, object]]:
    """Rows (dicts) for one model: ``key`` gives dataset/architecture/run."""
    n = token_scores.n_images
    if len(candidates) != n or len(references) != n:
        raise InputError(
            f"{n} images in the token scores, {len(candidates)} candidates, {len(references)} reference groups"
        )
    order = image_order(per_image_cider(candidates, references), stable=stable)
    names = list(pregen_names) if pregen_names is not None else column_names()
    rows = []
    subsets = strata(order, max_strata)
    post = scorer.score_subsets(candidates, references, [st.indices.tolist() for st in subsets])
    for st, values in zip(subsets, post):
        idx = st.indices.tolist()
        row: dict[str, object] = dict(key)
        row["num_strata"] = st.num_strata
        row["stratum"] = st.stratum
        row.update(values)
        row.update(compute(token_scores.select_images(idx), names))
        rows.append(row)
    return rows
