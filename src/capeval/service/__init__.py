"""The cached scoring service: score (candidates, references) with named metrics once per
(texts, metric, settings), reading back what an earlier run stored.

It sits between ``capeval.score`` (which it calls for whatever is missing) and its users:
learned-metric features (``capeval.learn``), benchmark runs (``capeval.metaeval``) and the learned
metric families themselves.

- :mod:`.cache` — the content-addressed ``ScoreCache`` and its keys;
- :mod:`.scoring` — ``score_units`` / ``score_units_each_ref``.
"""
from .cache import CachedScores, ScoreCache, corpus_digest, score_key
from .scoring import REF_MODES, score_units, score_units_each_ref

__all__ = ["CachedScores", "REF_MODES", "ScoreCache", "corpus_digest", "score_key", "score_units",
           "score_units_each_ref"]
