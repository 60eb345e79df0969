"""The 20 hand-picked captions: each explanation flags the wrong part, and only it."""
import pytest

from tests._needs import QACE_REF

from .cases import CASES

pytestmark = pytest.mark.needs(*QACE_REF)


@pytest.fixture(scope="module")
def result():
    import capeval

    return capeval.score([c[1] for c in CASES], [c[2] for c in CASES], ["qace_ref"])


@pytest.mark.parametrize("i", range(len(CASES)), ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_explanation_flags_the_wrong_part(result, i):
    category, cand, refs, wrong = CASES[i]
    exp = result.explanations["qace_ref"][i]
    assert exp.candidate == cand and len(exp.contexts) == len(refs)
    flagged = exp.flagged()
    if wrong is None:
        assert flagged == [], exp.table()
        return
    assert flagged, exp.table()
    for row in flagged:
        words = set(row.candidate_answer.split()) | set(row.span.lower().split())
        assert wrong in words, exp.table()


def test_supported_captions_score_higher_than_flawed_ones_on_the_same_references(result):
    q = result.per_caption["qace_ref"]
    by_refs: dict = {}
    for i, c in enumerate(CASES):
        by_refs.setdefault(id(c[2]), []).append((c[3] is None, q[i]))
    for rows in by_refs.values():
        good = [s for ok, s in rows if ok]
        bad = [s for ok, s in rows if not ok]
        assert good and bad and min(good) > min(bad)
