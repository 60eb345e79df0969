"""Answer similarity: SQuAD token F1 and BERTScore F between answers (QuestEval's recipe;
docs/QACE.md, The paper's public code).

An unanswerable answer ("") scores 0 on both against a non-empty candidate answer.
"""
from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

import numpy as np

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = frozenset(string.punctuation)


def normalize_answer(s: str) -> str:
    """SQuAD v1.1 normalisation: lower-case, drop punctuation and articles, collapse spaces."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def token_f1(a: str, b: str) -> float:
    """SQuAD token-multiset F1; 1 when both normalise to empty, 0 when only one does."""
    ta, tb = normalize_answer(a).split(), normalize_answer(b).split()
    if not ta or not tb:
        return float(ta == tb)
    common = sum((Counter(ta) & Counter(tb)).values())
    if common == 0:
        return 0.0
    p, r = common / len(ta), common / len(tb)
    return 2 * p * r / (p + r)


class BERTScoreSimilarity:
    """BERTScore F (capeval's implementation, one reference per pair) between answer pairs.

    Pairs with an empty side get 0 and are not sent to the model; each distinct pair is scored once.
    """

    def __init__(self, model: str | None = None, batch_size: int = 64):
        from ..metrics.bertscore import BERTScore

        # No padding floor: an answer pair's score must not depend on its batch neighbours.
        self._metric = BERTScore(model=model, batch_size=batch_size, padding_floor=False)
        self.id = f"{self._metric.encoder.name}@L{self._metric.num_layers}"
        self.signature: dict[str, object] = {}

    def __call__(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        out = np.zeros(len(pairs))
        todo = list(dict.fromkeys(p for p in pairs if p[0].strip() and p[1].strip()))
        if todo:
            res = self._metric.compute([c for c, _ in todo], [[r] for _, r in todo])
            f = dict(zip(todo, res.per_caption["bertscore_f"]))
            self.signature = {k: res.signature_fields[k] for k in ("model", "rev", "layer")}
            for i, p in enumerate(pairs):
                if p in f:
                    out[i] = f[p]
        return out
