import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._budget import examples

from capeval.errors import InputError
from capeval.validation import LINE_BREAKS, check_ratings, validate_corpus


@pytest.mark.parametrize("ch", sorted(LINE_BREAKS))
def test_line_breaks_in_candidate_are_refused_naming_the_item(ch):
    with pytest.raises(InputError, match=r"candidate 1 \(id 'b'\).*line break"):
        validate_corpus(["ok", f"bad{ch}caption"], [["r"], ["r"]], ids=["a", "b"], line_breaks="refuse")


@pytest.mark.parametrize("ch", ["\r", "\u2028", "\x85"])
def test_line_breaks_in_reference_are_refused(ch):
    with pytest.raises(InputError, match=r"reference 1 of item 0"):
        validate_corpus(["ok"], [["fine", f"x{ch}y"]], line_breaks="refuse")


@pytest.mark.parametrize("ch", sorted(LINE_BREAKS))
def test_line_breaks_become_spaces_by_default(ch):
    cands, refs = validate_corpus(
        [f"a{ch}b", "c d", f"a{ch}b"], [[f"x{ch}{ch}y", "z"], [f"x{ch}{ch}y"], ["q"]]
    )
    assert cands == ["a b", "c d", "a b"]
    assert refs == [["x  y", "z"], ["x  y"], ["q"]]


def test_a_caption_of_line_breaks_only_is_empty():
    with pytest.raises(InputError, match="candidate 0 is empty"):
        validate_corpus(["\n\r"], [["r"]])
    with pytest.raises(InputError, match="reference 0 of item 0 is empty"):
        validate_corpus(["a"], [["\u2028"]])


def test_empty_candidate_refused_unless_allowed():
    with pytest.raises(InputError, match="candidate 0 is empty"):
        validate_corpus(["  "], [["r"]])
    assert validate_corpus([""], [["r"]], allow_empty=True)[0] == [""]


def test_shape_errors():
    with pytest.raises(InputError, match="2 candidates but 1 reference"):
        validate_corpus(["a", "b"], [["r"]])
    with pytest.raises(InputError, match="item 1 has no references"):
        validate_corpus(["a", "b"], [["r"], []])
    with pytest.raises(InputError, match="not a single string"):
        validate_corpus("a dog", [["r"]])
    with pytest.raises(InputError, match="must be a list of strings, got a string"):
        validate_corpus(["a"], ["a dog"])
    with pytest.raises(InputError, match="duplicate id 'x' at items 0 and 1"):
        validate_corpus(["a", "b"], [["r"], ["r"]], ids=["x", "x"])
    with pytest.raises(InputError, match="expected a string, got int"):
        validate_corpus([3], [["r"]])
    with pytest.raises(InputError, match="reference 0 of item 0 is empty"):
        validate_corpus(["a"], [[""]])


def test_nan_ratings_named():
    with pytest.raises(InputError, match="rating 2 is NaN"):
        check_ratings([1.0, 2.0, math.nan])


@settings(max_examples=examples(200), deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_validation_is_total_on_unicode(text):
    """Any string is either accepted (unchanged but for line breaks, which become spaces) or
    refused with InputError; nothing else."""
    spaced = "".join(" " if c in LINE_BREAKS else c for c in text)
    try:
        cands, refs = validate_corpus([text], [[text]])
    except InputError:
        assert not spaced.strip()
    else:
        assert cands == [spaced] and refs == [[spaced]]
    try:
        cands, refs = validate_corpus([text], [[text]], line_breaks="refuse")
    except InputError:
        assert not text.strip() or spaced != text
    else:
        assert cands == [text] and refs == [[text]]
