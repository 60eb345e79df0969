"""A tiny learned model with a feature whose rows depend on their batch mates (BERTScore with
bert_score's padding floor, its default): what every refusal to stream a learned model names.
The shipped models no longer have such a feature (their BERTScore features take the true best
match), so the tests build one."""
from __future__ import annotations

from pathlib import Path

import numpy as np

NAME = "tiny-floor"
#: the words of the refusal, as Learned.cannot_stream gives them
REFUSAL = f"the feature bertscore_p of model '{NAME}' depends on the rows"


def floor_model(path: Path) -> str:
    """Save the model to ``path``; returns the path as a string (an option value)."""
    from capeval.learn import ranker
    from capeval.learn.ranker_features import parse
    from capeval.learn.ranker_model import RankerModel

    feats = parse("bleu4+bertscore_p")
    k = len(feats)
    RankerModel("linear", [np.linspace(0.5, 1.0, k)],
                ranker.Scaler(np.zeros(k), np.ones(k), np.full(k, 0.1), np.full(k, 0.9)), feats, None,
                meta={"name": NAME}).save(path)
    return str(path)
