"""The pure-Python PTB tokenizer: the jar's input/output table (tests/text/_ptb_cases.py), its two
internal paths, totality, and agreement with the CoreNLP jar on random caption-like strings and on real captions."""
from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from tests._budget import examples

from capeval.errors import InputError
from capeval.text import _ptb_lexer, ptb
from capeval.validation import LINE_BREAKS

from ._ptb_cases import TABLE


@pytest.mark.parametrize(("text", "expected"), TABLE, ids=[t[:30] for t, _ in TABLE])
def test_protocol_table(text, expected):
    assert ptb.tokenize([text]) == [expected]


def test_empty_and_blank():
    assert ptb.tokenize(["", " ", "\t", "\u00a0", "..."]) == ["", "", "", "", ""]
    assert ptb.tokenize([]) == []


def test_one_output_per_input_in_order():
    caps = ["A dog.", "", "Two cats!", "A dog."]
    assert ptb.tokenize(caps) == ["a dog", "", "two cats", "a dog"]


def test_non_string_item_is_named():
    with pytest.raises(InputError, match="caption 1"):
        ptb.tokenize(["a dog", None])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The owl hoots. :)", "the owl hoots :-rrb-"),  # smileys keep their parenthesis
        ("I. The end", "i the end"),  # a one-letter initial before a listed word loses its period
        ("a. b", "a. b"),
        ("no. 5 and fig. 3 but no more.", "no. 5 and fig. 3 but no more"),
        ("5 1/2 cups, call 12 345 6789", "5\u00a01/2 cups call 12\u00a0345\u00a06789"),
        ("'tis 'twas gotta wanna dunno", "'t is 't was got ta wan na dunno"),
        ("c++ and c# on www.x.com", "c++ and c# on www.x.com"),
        ("\u00a3 5 \u20ac 5 \u00a2", "# 5 $ 5 cents"),
        ("O'Neil l'amour o'clock rock'n'roll", "o'neil l'amour o'clock rock 'n' roll"),
        ("&lt;b&gt; &quot;x&quot;", "< b > x"),
    ],
)
def test_selected_behaviours(text, expected):
    """Behaviours beyond the table, each checked against the jar when written."""
    assert ptb.tokenize([text]) == [expected]


#: Differences the differential fuzz against the jar found (tests/fuzz/test_vs_jar.py), each
#: fixed from CoreNLP 3.4.1's grammar; outputs are the jar's (test_fuzz_findings_match_jar).
FUZZ_FINDINGS = [
    ("b3.5\u00dfc\u0301fU.S.h,", "b3.5\u00dfc\u0301fu.s.h"),  # FILENAME takes {LETTER}: combining marks
    ("3.5c\u0301f.h", "3.5c\u0301f.h"),
    ("non-U.S trade", "non-u.s trade"),  # ACRO's named alternatives
    ("U.S.-U.K talks", "u.s.-u.k talks"),
    ("EU-U.S deal, sino-u.s x", "eu-u.s deal sino-u.s x"),
    ("old\tFt.a.", "old ft.a"),  # "Ft" is only a title (ABBREV2) in 3.4.1: the longer WORD wins
    ("Ft.o'clock shirt", "ft.o clock shirt"),
    ("Dept.a x", "dept.a x"),
    ("Ft. Worth, x Dept.", "ft. worth x dept."),
    ("bldg. 5 Bldg.a etc.x", "bldg. 5 bldg. a etc. x"),
    ("n't! n'tx xn't.", "n't n'tx x n't"),
    # caseless literals take İ and ı for i, ſ for s, the Kelvin sign for k (as Java's case mappings)
    ("c\u0130e... x", "ci\u0307e. x"),
    ("\u017ft. x \u0131nc. x \u212ay. x", "\u017ft. x \u0131nc. x ky. x"),
    ("'t\u0130s M\u017f. e\u017ft. x", "'t i\u0307s m\u017f. e\u017ft. x"),
]


@pytest.mark.parametrize(("text", "expected"), FUZZ_FINDINGS, ids=[t for t, _ in FUZZ_FINDINGS])
def test_fuzz_findings(text, expected):
    assert ptb.tokenize([text]) == [expected]
    assert ptb.tokenize_lines([text, "x"]) == [expected, "x"]


@pytest.mark.oracle
@pytest.mark.java
def test_fuzz_findings_match_jar(java):
    from capeval.text import ptb_java

    texts = [line for t, _ in FUZZ_FINDINGS for line in (t, "x")]
    assert ptb_java.tokenize(texts)[::2] == [want for _, want in FUZZ_FINDINGS]


#: Batches in which the jar tokenizes a caption by its next line or by the end of the file
#: (docs/TOKENIZER.md, "Context across lines"); outputs are the jar's (test_batches_match_jar).
BATCHES = [
    (["q e.", "The x", "q e.", "the x"], ["q e", "the x", "q e.", "the x"]),
    (["a.bd e.", "Mr.", "U.S. e.", "A.", " \t", "", "It is"], ["a.bd e", "mr.", "u.s. e.", "a", "", "", "it is"]),
    (["He ran x.", "About it", "x I.", "Did it"], ["he ran x", "about it", "x i.", "did it"]),
    (["see no.", "5 cats", "see no.", "cats"], ["see no.", "5 cats", "see no", "cats"]),
    (["2.c", "old 5-62.c"], ["2.c", "old 5-62 c"]),  # the last line is followed by end of file
    (["x I. The"], ["x i. the"]),
]


@pytest.mark.parametrize(("batch", "expected"), BATCHES)
def test_tokenize_lines_reads_the_next_line(batch, expected):
    assert ptb.tokenize_lines(batch) == expected
    # tokenize: every caption as if followed by an empty line, whatever its neighbours
    assert ptb.tokenize(batch) == [ptb.tokenize_lines([t, ""])[0] for t in batch]


def test_per_caption_tokens_ignore_neighbours():
    assert ptb.tokenize(["q e.", "The x"]) == ["q e.", "the x"]
    assert ptb.tokenize(["The x", "q e."]) == ptb.tokenize(["q e.", "The x"])[::-1]


def test_tokenize_lines_validates_like_tokenize():
    assert ptb.tokenize_lines([]) == []
    with pytest.raises(InputError, match="caption 1"):
        ptb.tokenize_lines(["a dog", None])  # type: ignore[list-item]


@pytest.mark.oracle
@pytest.mark.java
@pytest.mark.parametrize(("batch", "expected"), BATCHES)
def test_batches_match_jar(java, batch, expected):
    from capeval.text import ptb_java

    assert ptb_java.tokenize(batch) == expected


# A hyphen before a final period: the fast-path shape must refuse these (the lexer splits the
# hyphen off). Python 3.11.2 matched the old possessive-quantifier shape and kept "runs-".
# Outputs checked against the jar.
HYPHEN_PERIOD = [("a dog runs-.", "a dog runs"), ("0-.", "0"), ("runs-. now", "runs now"), ("a-b-.", "a-b")]


@pytest.mark.parametrize(("text", "expected"), HYPHEN_PERIOD)
def test_hyphen_before_final_period(text, expected):
    assert ptb._fast(text) is None
    assert ptb._fast_many([text]) == [None]
    assert ptb.tokenize_one(text) == expected
    assert ptb.tokenize([text]) == [expected]


def test_fast_shape_uses_no_patch_release_dependent_construct():
    """Possessive quantifiers and atomic groups match differently across 3.11 patch releases."""
    import re

    for pattern in (ptb._FAST_SHAPE.pattern, ptb._FAST_LINE.pattern, _ptb_lexer._LETTER_RUN.pattern):
        assert not re.search(r"\(\?>|(?<!\\)[*+?}]\+", pattern), pattern


# --- internal consistency (no Java needed) ----------------------------------------------------

_PIECES = [
    "a", "A", "dog", "Dogs", "man's", "'s", "n't", "don't", "can't", "cannot", "gonna", "I", "U.S.",
    "Mr.", "etc.", "e.g.", "p.m.", "no.", "fig.", "St.", "The", "He", "t-shirt", "20-year-old",
    "1,000", "3:30", "3.5", "5", "12", "345", "6789", "1/2", "5-6", "'90s", "rock'n'roll", "o'clock",
    "&amp;", "&lt;", "&quot;", "AT&T", "c++", "c#", "#tag", "@home", "a@b.com", "www.x.com",
    "http://x.com/a", "<b>", "</b>", "<a b='c'>", ":)", ":(", ";-)", "^_^", "...", "..", "--", "---",
    "-", "(", ")", "[", "]", "{", "}", "\"", "'", "`", "``", "''", "!", "?", "?!", ",", ";", ":",
    ".", "$", "US$", "%", "*", "**", "/", "\\", "=", "+", "_", "~", "^", "|", "caf\u00e9",
    "na\u00efve", "\u00bd", "\u2153", "\u00a3", "\u20ac", "\u00a2", "\u201c", "\u201d", "\u2018",
    "\u2019", "\u2013", "\u2014", "\u2026", "\u00b0", "\u00d7", "\U0001F600", "\ufffd", "\u200b",
    "e\u0301", "\u00ab", "\u00bb", "-LRB-", "S&P-500", "&apos;", "&#39;", "&nbsp;", "Inc.", "Jan.",
    "a.k.a.", "Ph.D.", "2.jpg", "file.txt", "O'o", "y'all", "I'm", "we're", "they'll", "'em",
    "'cause", "C.D.s", "pro-", "anti-", "555-1234", "(555) 123-4567", "12/25/2010", "1-1/2", "x\u00b2",
    "\u2082", "\u2030", "\u00a7", "<!-- c -->", '<a href="x y">', ". . .", "....", "soft\u00adhyphen",
    "\ufb01", "\u0130", "--5", "+5", ".5", "A.", "Z.", "No. 5", "U.S. The", "I. He",
]
_CHARS = (
    "abcdeoinstxyzABCDEIOSTXYZ0123456789 .,;:!?'\"`-()[]{}<>/&$#%*@+=_~^|\\"
    "\u00e9\u00f1\u00fc\u00e7\u00c9\u00a0\t\u201c\u201d\u2018\u2019\u2013\u2014\u2026\u00bd\u00b0"
    "\u00d7\u20ac\u00a3\u00b4\u00ab\u00bb\u200b\ufffd\U0001F600"
)
_SEPARATORS = [" ", " ", " ", "", "  ", "\t", "\u00a0"]

caption_like = st.builds(
    lambda parts, seps: "".join(p + s for p, s in zip(parts, seps)).strip(" "),
    st.lists(
        st.one_of(st.sampled_from(_PIECES), st.text(alphabet=_CHARS, min_size=1, max_size=6)),
        min_size=1,
        max_size=12,
    ),
    st.lists(st.sampled_from(_SEPARATORS), min_size=12, max_size=12),
)


@settings(max_examples=examples(300), deadline=None)
@given(caption_like)
def test_rule_prefilter_is_exact(text):
    """Trying only the rules whose first-character class admits the next character gives the
    same tokens as trying every rule everywhere."""
    assert _ptb_lexer.lex(text) == _ptb_lexer.lex(text, prefilter=False)


@settings(max_examples=examples(300), deadline=None)
@given(caption_like)
@example("a dog runs-.")
@example("0-.")
def test_fast_path_agrees_with_lexer(text):
    fast = ptb._fast(text)
    assert fast is None or fast == ptb._slow(text)
    assert ptb.tokenize_one(text) == ptb._slow(text)


# Plain captions, the fast path's job (were it to decline them all, the property above would
# compare nothing): words, case, a possessive, a comma, a final period, a hyphenated number.
PLAIN = ["a dog runs on the grass", "Two men are riding horses on a beach .",
         "A little girl in a pink dress climbs the stairs", "a man's red bike, parked by the road.",
         "People watch a 20-year-old skier"]


@pytest.mark.parametrize("text", PLAIN)
def test_fast_path_answers_plain_captions_as_the_lexer(text):
    fast = ptb._fast(text)
    assert fast is not None and fast == ptb._slow(text)
    assert ptb._fast_many([text]) == [fast]


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.text(max_size=40), max_size=5))
def test_total_on_any_unicode(texts):
    out = ptb.tokenize(texts)
    assert len(out) == len(texts)
    assert all(isinstance(t, str) and "  " not in t and t == t.strip(" ") for t in out)


def test_line_breaks_do_not_change_the_count():
    texts = [f"a{ch}b" for ch in LINE_BREAKS]
    assert ptb.tokenize(texts) == ["a b"] * len(texts)


# --- agreement with the jar -------------------------------------------------------------------


def _jar(texts: list[str]) -> list[str]:
    from capeval.text import ptb_java

    # A sentinel line after each caption: in the jar a caption's last token can depend on the
    # next line (docs/TOKENIZER.md, "context across lines"); the emulation assumes a neutral one.
    interleaved = [line for t in texts for line in (t, "x")]
    return ptb_java.tokenize(interleaved)[::2]


@pytest.mark.oracle
@pytest.mark.java
@pytest.mark.slow
@settings(
    max_examples=6,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # shrinking would re-run Java a lot
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(caption_like, min_size=50, max_size=50))
def test_matches_jar_on_random_caption_like_strings(java, texts):
    got = ptb.tokenize(texts)
    want = _jar(texts)
    diffs = [(t, w, g) for t, w, g in zip(texts, want, got) if w != g]
    assert not diffs, json.dumps(diffs[:10], ensure_ascii=False, indent=1)


def _real_caption_sample(root, k=1500, seed=0) -> list[str]:
    lines = (root / "flickr8k/Flickr8k_text/Flickr8k.token.txt").read_text(encoding="utf-8").splitlines()
    caps = [line.split("\t", 1)[1] for line in lines if "\t" in line]
    pascal = json.loads((root / "pascal50s/EXPERT_processed/pascal_50s.json").read_text(encoding="utf-8"))
    for items in pascal.values():
        for item in items:
            caps.extend(item["captions"])
            caps.extend(item["references"])
    with open(root / "composite/composite_umic_decoded.jsonl", encoding="utf-8") as f:
        caps.extend(json.loads(line)["candidate"] for line in f if line.strip())
    caps = sorted(set(caps))
    return random.Random(seed).sample(caps, k)


@pytest.mark.data
@pytest.mark.oracle
@pytest.mark.java
def test_matches_jar_on_real_captions(data_dir, java):
    texts = _real_caption_sample(data_dir)
    got = ptb.tokenize(texts)
    want = _jar(texts)
    diffs = [(t, w, g) for t, w, g in zip(texts, want, got) if w != g]
    assert not diffs, json.dumps(diffs[:10], ensure_ascii=False, indent=1)
