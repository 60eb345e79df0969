"""The corpus bootstrap resamples statistics: each resample's corpus score equals scoring the
resampled rows (families whose rows need no pre-pass), with no metric run per resample."""
from __future__ import annotations

import numpy as np
import pytest

import capeval
from capeval.errors import InputError
from capeval.metrics.registry import get_family
from capeval.stats.bootstrap import corpus_distribution, resample_indices
from capeval.text import tokenize_corpus

from ..stream._rows import make_rows


@pytest.mark.parametrize("family,output,options", [("bleu", "bleu4", {}), ("meteor", "meteor", {"backend": "native"}),
                                                   ("ter", "ter", {}), ("rouge_l", "rouge_l", {})])
def test_resampled_statistics_equal_rescoring(family, output, options):
    rows = make_rows(40, seed=2)
    cands, refs = [r["candidate"] for r in rows], [r["references"] for r in rows]
    tc, tr = tokenize_corpus(cands, refs, "ptb")
    with get_family(family)(**options) as m:
        stats = m.statistics(tc, tr)
    dist = corpus_distribution(stats, output, n_resamples=5, seed=3)
    (idx,) = list(resample_indices(40, 5, 3))
    for value, row in zip(dist, idx):
        again = capeval.score([cands[i] for i in row], [refs[i] for i in row], [output], options={family: options})
        assert value == again.corpus[output]


def test_unknown_output_is_refused():
    with get_family("rouge_l")() as m:
        stats = m.statistics(["a dog"], [["a dog runs"]])
    with pytest.raises(InputError, match="'bleu4' is not an output"):
        corpus_distribution(stats, "bleu4", n_resamples=2)
    assert np.isfinite(corpus_distribution(stats, "rouge_l", n_resamples=2)).all()
