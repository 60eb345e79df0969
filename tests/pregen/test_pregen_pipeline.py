import numpy as np
import pytest

import capeval
from capeval.errors import InputError
from capeval.pregen import tiers
from capeval.pregen.pipeline import PostgenScorer, model_rows, per_image_cider
from capeval.pregen.stratify import image_order, strata
from capeval.pregen.tokens import TokenScores

WORDS = "a dog cat man runs sits on the grass red ball beach two women water".split()


def _corpus(n=12, seed=0):
    rng = np.random.default_rng(seed)
    sent = lambda k: " ".join(rng.choice(WORDS, k))  # noqa: E731
    refs = [[sent(int(rng.integers(4, 9))) for _ in range(3)] for _ in range(n)]
    cands = [refs[i][0] if i % 3 == 0 else sent(5) for i in range(n)]
    nested = [[[(float(rng.uniform(0.01, 1)), int(rng.integers(0, 3))) for _ in range(len(r.split()) + 1)]
               for r in group] for group in refs]
    return cands, refs, TokenScores.from_nested(nested)


def test_model_rows_follow_the_stratification_protocol():
    cands, refs, ts = _corpus()
    post = {"CIDEr": "cider_d", "BLEU4": "bleu4"}
    with PostgenScorer(post) as scorer:
        rows = model_rows({"dataset": "toy", "architecture": "init", "run": 1}, ts, cands, refs, scorer)
    assert len(rows) == 15
    assert [(r["num_strata"], r["stratum"]) for r in rows[:3]] == [(1, 0), (2, 0), (2, 1)]
    order = image_order(per_image_cider(cands, refs))
    for row, st in zip(rows, strata(order)):
        idx = st.indices.tolist()
        sub = capeval.score([cands[i] for i in idx], [refs[i] for i in idx], ["cider_d", "bleu4"], tokenizer="none")
        # each stratum is scored on its own: CIDEr's df and N come from the stratum
        assert row["CIDEr"] == sub.corpus["cider_d"] and row["BLEU4"] == sub.corpus["bleu4"]
        assert {k: row[k] for k in tiers.column_names()} == tiers.compute(ts.select_images(idx))
    # the lowest-CIDEr half scores below the highest-CIDEr half
    assert rows[1]["CIDEr"] < rows[2]["CIDEr"]
    assert "cider_d" in scorer.signatures["CIDEr"] and "tok:none" in scorer.signatures["CIDEr"]
    with pytest.raises(InputError, match="'meteor'"):
        scorer.instance("meteor")


@pytest.mark.java
@pytest.mark.slow
def test_meteor_subsets_from_row_statistics_equal_scoring_each_subset(java):
    cands, refs, _ = _corpus(8, seed=4)
    subsets = [[0, 1, 2], [3, 4, 5, 6, 7], [7, 0]]
    with PostgenScorer({"METEOR": "meteor"}) as scorer:
        fast = scorer.score_subsets(cands, refs, subsets)
        meteor = scorer.instance("meteor")  # same JVM: one start instead of four
        for values, idx in zip(fast, subsets):
            direct = meteor.compute([cands[i] for i in idx], [refs[i] for i in idx])
            assert values["METEOR"] == direct.corpus["meteor"]
    assert "meteor_1.5_coco" in scorer.signatures["METEOR"]
