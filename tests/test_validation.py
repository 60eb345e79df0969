
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._budget import examples

from capeval.errors import InputError
from capeval.validation import LINE_BREAKS, SPACED_LINE_BREAKS, validate_corpus


@pytest.mark.parametrize("ch", sorted(LINE_BREAKS))
def test_line_breaks_in_candidate_are_refused_naming_the_item(ch):
    with pytest.raises(InputError, match=r"candidate 1 \(id 'b'\).*line break"):
        validate_corpus(["ok", f"bad{ch}caption"], [["r"], ["r"]], ids=["a", "b"], line_breaks="refuse")


@pytest.mark.parametrize("ch", ["\r", "\u2028", "\x85"])
def test_line_breaks_in_reference_are_refused(ch):
    with pytest.raises(InputError, match=r"reference 1 of item 0"):
        validate_corpus(["ok"], [["fine", f"x{ch}y"]], line_breaks="refuse")


@pytest.mark.parametrize("ch", sorted(SPACED_LINE_BREAKS))
def test_line_breaks_become_spaces_by_default(ch):
    cands, refs = validate_corpus(
        [f"a{ch}b", "c d", f"a{ch}b"], [[f"x{ch}{ch}y", "z"], [f"x{ch}{ch}y"], ["q"]]
    )
    assert cands == ["a b", "c d", "a b"]
    assert refs == [["x  y", "z"], ["x  y"], ["q"]]


@pytest.mark.parametrize("ch", sorted(set(LINE_BREAKS) - set(SPACED_LINE_BREAKS)))
def test_breaks_the_jar_reads_inside_a_line_are_kept_by_default(ch):
    assert validate_corpus([f"a{ch}b"], [[f"x{ch}y"]]) == ([f"a{ch}b"], [[f"x{ch}y"]])


def test_a_caption_of_line_breaks_only_is_empty():
    with pytest.raises(InputError, match="candidate 0 is empty"):
        validate_corpus(["\n\r"], [["r"]])
    with pytest.raises(InputError, match="reference 0 of item 0 is empty"):
        validate_corpus(["a"], [["\u2028"]])


def test_empty_candidate_refused_unless_allowed():
    with pytest.raises(InputError, match="candidate 0 is empty"):
        validate_corpus(["  "], [["r"]])
    assert validate_corpus([""], [["r"]], allow_empty=True)[0] == [""]


@pytest.mark.parametrize("ref", ["", "   ", "\n"])
def test_empty_reference_refusal_names_a_way_out_that_works(ref):
    """The refusal of an empty or blank reference offers allow_empty, and allow_empty accepts it
    (it once offered an option that then failed with the same message)."""
    with pytest.raises(InputError, match=r"reference 0 of item 0 is empty\. Pass allow_empty=True \(CLI: "
                                         r"--allow-empty\) to score empty or blank candidates and references"):
        validate_corpus(["a dog"], [[ref, "a cat"]])
    assert validate_corpus(["a dog"], [[ref, "a cat"]], allow_empty=True)[1] == [[ref.replace("\n", " "), "a cat"]]


@pytest.mark.parametrize("ref", ["", "   "])
def test_empty_references_score_as_the_drop_in_scores_them(ref):
    """allow_empty=True scores empty and blank references as pycocoevalcap's scorers (capeval's
    drop-in) do: the same numbers for the n-gram metrics (both sides run the same integer
    counts and float steps on this machine, so they are equal on any CPU)."""
    import capeval
    from capeval.compat.pycocoevalcap.bleu.bleu import Bleu
    from capeval.compat.pycocoevalcap.cider.cider import Cider
    from capeval.compat.pycocoevalcap.rouge.rouge import Rouge

    cands, refs = ["a dog runs", "a cat"], [[ref, "a dog is running"], [ref, "a cat sits on a mat"]]
    res = capeval.score(cands, refs, ["bleu4", "rouge_l", "cider_d"], tokenizer="none", allow_empty=True)
    gts, hyp = {i: r for i, r in enumerate(refs)}, {i: [c] for i, c in enumerate(cands)}
    bleu = Bleu().compute_score(gts, hyp, verbose=0)
    assert res.corpus["bleu4"] == bleu[0][3] and list(res.per_caption["bleu4"]) == list(bleu[1][3])
    for name, scorer in (("rouge_l", Rouge()), ("cider_d", Cider())):  # pycocoevalcap's Cider is CIDEr-D
        corpus, per = scorer.compute_score(gts, hyp)
        assert res.corpus[name] == corpus and list(res.per_caption[name]) == list(per), name


def test_a_scorer_that_takes_no_empty_text_does_not_offer_allow_empty():
    with pytest.raises(InputError, match=r"candidate 0 is empty, and X cannot score empty text \(even with "
                                         r"allow_empty/--allow-empty\)") as e:
        validate_corpus([" "], [["r"]], empty_refused_by="X")
    assert "Pass allow_empty" not in str(e.value)


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


@settings(max_examples=examples(200), deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_validation_is_total_on_unicode(text):
    """Any string is either accepted (unchanged but for the line breaks the jar ends a line at,
    which become spaces) or refused with InputError; nothing else."""
    spaced = "".join(" " if c in SPACED_LINE_BREAKS else c for c in text)
    try:
        cands, refs = validate_corpus([text], [[text]])
    except InputError:
        assert not spaced.strip()
    else:
        assert cands == [spaced] and refs == [[spaced]]
    try:
        cands, refs = validate_corpus([text], [[text]], line_breaks="refuse")
    except InputError:
        assert not text.strip() or any(c in LINE_BREAKS for c in text)
    else:
        assert cands == [text] and refs == [[text]]
