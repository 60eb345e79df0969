import numpy as np
import pytest

from capeval.errors import InputError
from capeval.pregen.tokens import TokenScores

NESTED = [[[(0.5, 0), (0.25, 3)], [(1.0, 0)]], [[(0.125, 1), (0.5, 0), (0.5, 0)]]]


def test_nested_roundtrip_and_npz(tmp_path):
    ts = TokenScores.from_nested(NESTED)
    assert ts.caption_lengths.tolist() == [2, 1, 3] and ts.captions_per_image.tolist() == [2, 1]
    assert ts.to_nested() == NESTED
    ts.save_npz(tmp_path / "p.npz")
    back = TokenScores.load_npz(tmp_path / "p.npz")
    assert back.to_nested() == NESTED


def test_select_images_keeps_order():
    ts = TokenScores.from_nested(NESTED)
    assert ts.select_images([1, 0]).to_nested() == [NESTED[1], NESTED[0]]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(probs=[0.5, 1.5], ranks=[0, 0], caption_lengths=[2], captions_per_image=[1]),
         r"image 0 caption 0 position 1: probability 1\.5"),
        (dict(probs=[0.5, np.nan], ranks=[0, 0], caption_lengths=[1, 1], captions_per_image=[1, 1]),
         r"image 1 caption 0 position 0"),
        (dict(probs=[0.5], ranks=[-1], caption_lengths=[1], captions_per_image=[1]), "negative rank"),
        (dict(probs=[0.5], ranks=[0], caption_lengths=[1, 0], captions_per_image=[2]),
         "image 0 caption 1 has 0 scored positions"),
        (dict(probs=[0.5], ranks=[0], caption_lengths=[1], captions_per_image=[2]), "sums to 2"),
        (dict(probs=[0.5], ranks=[0], caption_lengths=[2], captions_per_image=[1]), "sum to 2"),
        (dict(probs=[0.5], ranks=[0.5], caption_lengths=[1], captions_per_image=[1]), "integers"),
        (dict(probs=[0.5], ranks=[0], caption_lengths=[1], captions_per_image=[0, 1]), "image 0 has 0"),
    ],
)
def test_bad_records_are_located(kwargs, message):
    with pytest.raises(InputError, match=message):
        TokenScores(**kwargs)


def test_npz_missing_array_is_named(tmp_path):
    np.savez(tmp_path / "x.npz", probs=np.ones(1), ranks=np.zeros(1))
    with pytest.raises(InputError, match="caption_lengths, captions_per_image"):
        TokenScores.load_npz(tmp_path / "x.npz")


def test_score_carries_signature():
    import capeval.pregen as pg

    ts = TokenScores.from_nested(NESTED)
    res = pg.score(ts, [pg.BEST], rank_rule="gt-logits")
    assert res.values == {pg.BEST: pg.compute(ts, [pg.BEST])[pg.BEST]}
    assert res.signature.startswith("pregen_tanti2018|images:2|caps:3|tokens:6|rank:gt-logits|")
