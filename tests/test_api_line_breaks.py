"""Line breaks inside captions: read as spaces by default (== pycocoevalcap for "\\n"), named in
the signature, refused in strict mode, and never shifting captions in the ``ptb-java`` path."""
from __future__ import annotations

import numpy as np
import pytest

import capeval
from capeval.errors import InputError
from capeval.validation import LINE_BREAKS, SPACED_LINE_BREAKS

from .metrics._coco_oracle import coco_scores, ptb_java_reference

#: A reference from a public human-judgment set, verbatim (line break and double space included).
REAL = "A historic car with registration NUMBER \nYW  3775 and around"
METRICS = ["bleu1", "bleu2", "bleu3", "bleu4", "rouge_l", "cider_d"]


def _flickr8k_corpus(data_dir, n_images: int = 40):
    """Real Flickr8k captions: caption #0 of each image is the candidate, #1-#4 the references;
    every third text gets a "\\n" (inside, after a word, or at the end)."""
    rows: dict[str, list[str]] = {}
    path = data_dir / "flickr8k" / "Flickr8k_text" / "Flickr8k.token.txt"
    if not path.exists():
        pytest.skip(f"{path} not found")
    with path.open(encoding="utf-8") as f:
        for line in f:
            key, text = line.rstrip("\n").split("\t")
            img = key.split("#")[0]
            if img not in rows and len(rows) == n_images:
                break
            rows.setdefault(img, []).append(text)
    k = 0

    def breaks(text: str) -> str:
        nonlocal k
        k += 1
        words = text.split(" ")
        if k % 3 == 0:
            words.insert(len(words) // 2, "\n")
            return " ".join(words).replace(" \n ", "\n" if k % 2 else " \n")
        if k % 7 == 0:
            return text + "\n"
        return text

    cands = [breaks(caps[0]) for caps in rows.values()]
    refs = [[breaks(c) for c in caps[1:5]] for caps in rows.values()]
    refs[3][1] = REAL
    return cands, refs


@pytest.mark.oracle
@pytest.mark.java
@pytest.mark.data
@pytest.mark.parametrize("tokenizer", ["ptb", "ptb-java"])
def test_newlines_score_equal_to_pycocoevalcap_per_caption(data_dir, java, tokenizer):
    cands, refs = _flickr8k_corpus(data_dir)
    assert sum("\n" in c for c in cands) >= 5 and sum("\n" in r for rs in refs for r in rs) >= 20
    # The oracle: pycocoevalcap's own pipeline (its Java PTBTokenizer, then its scorers).
    tok_c, tok_r = ptb_java_reference(cands, refs)
    expected = coco_scores(tok_c, tok_r)
    res = capeval.score(cands, refs, METRICS, tokenizer=tokenizer)
    for name in METRICS:
        np.testing.assert_array_equal(res.per_caption[name], expected[name][1], err_msg=name)
        assert res.corpus[name] == expected[name][0], name
        assert "+breaks=space|" in res.signatures[name]


def test_real_reference_scores_as_with_a_space():
    cands = ["a historic car with a registration number", "a dog runs"]
    spaced = REAL.replace("\n", " ")
    with_break = capeval.score(cands, [[REAL], ["a dog is running"]], METRICS)
    plain = capeval.score(cands, [[spaced], ["a dog is running"]], METRICS)
    for name in METRICS:
        np.testing.assert_array_equal(with_break.per_caption[name], plain.per_caption[name])
        # the signature says the normalisation happened, and only then
        assert with_break.signatures[name] == plain.signatures[name].replace(
            "|tok:ptb-py@" + capeval.__version__, "|tok:ptb-py@" + capeval.__version__ + "+breaks=space"
        )
        assert "breaks" not in plain.signatures[name]


@pytest.mark.parametrize("ch", sorted(SPACED_LINE_BREAKS), ids=[LINE_BREAKS[c] for c in sorted(SPACED_LINE_BREAKS)])
def test_every_line_break_reads_as_a_space(ch):
    cands = [f"a man{ch}rides a horse", "two dogs play"]
    refs = [["a man riding a horse", f"a person{ch}on a horse"], ["dogs playing in the grass"]]
    got = capeval.score(cands, refs, ["bleu4", "cider_d", "rouge_l"])
    want = capeval.score(
        [c.replace(ch, " ") for c in cands], [[r.replace(ch, " ") for r in rs] for rs in refs],
        ["bleu4", "cider_d", "rouge_l"],
    )
    for name in got.per_caption:
        np.testing.assert_array_equal(got.per_caption[name], want.per_caption[name])
        assert "tok:ptb-py@" in got.signatures[name] and "+breaks=space" in got.signatures[name]


def test_raw_text_metrics_get_spaced_text_and_say_so(monkeypatch):
    # Model-based metrics receive the raw text: it is spaced too, and their "tok:none" says so.
    from capeval.metrics import registry

    seen = []
    cls = registry.family_for("bleu4")
    orig = cls.statistics  # what capeval.score asks of every family

    def spy(self, c, r, **kw):
        seen.extend(c)
        return orig(self, c, r, **kw)

    monkeypatch.setattr(cls, "text_input", "raw")
    monkeypatch.setattr(cls, "statistics", spy)
    res = capeval.score(["a dog\u2028runs", "a cat"], [["a dog runs"], ["a cat sits"]], ["bleu4"])
    assert seen == ["a dog runs", "a cat"]
    assert "|tok:none+breaks=space|" in res.signatures["bleu4"]


@pytest.mark.parametrize("ch", ["\n", "\r", "\u2028", "\x85"])
def test_strict_mode_refuses_naming_the_item(ch):
    with pytest.raises(InputError, match=r"reference 1 of item 0 \(id 'b'\) contains a line break"):
        capeval.score(["a dog", "a cat"], [["x", f"a{ch}dog"], ["y"]], ["bleu4"], ids=["b", "c"],
                      line_breaks="refuse")
    with pytest.raises(InputError, match=r"candidate 1 .*line break"):
        capeval.score(["a dog", f"a{ch}cat"], [["x"], ["y"]], ["bleu4"], line_breaks="refuse")


def test_unknown_policy_is_refused():
    with pytest.raises(InputError, match="line_breaks='keep'"):
        capeval.score(["a dog"], [["a dog"]], ["bleu4"], line_breaks="keep")


@pytest.mark.parametrize("ch", sorted(set(LINE_BREAKS) - set(SPACED_LINE_BREAKS)))
def test_line_breaks_only_python_splits_at_reach_the_tokenizer(ch):
    """U+001C-1E and NEL end no line for the jar, which reads them inside the caption (dropped,
    NEL as an ellipsis); reading them as spaces would join "12 345 6789" into one phone-number
    token. They are kept, the tokens are the jar's, and the signature says nothing changed."""
    from capeval.text import tokenize

    assert tokenize([f"call 12{ch}345 6789"], "ptb") == ["call 12 345 6789"]
    assert tokenize(["call 12 345 6789"], "ptb") == ["call 12\u00a0345\u00a06789"]
    got = capeval.score([f"call 12{ch}345 6789", "a dog"], [["call 12 345 6789"], ["a dog"]], ["bleu1"])
    want = capeval.score(["call 12 345 6789", "a dog"], [["call 12\u00a0345\u00a06789"], ["a dog"]], ["bleu1"],
                         tokenizer="none")
    np.testing.assert_array_equal(got.per_caption["bleu1"], want.per_caption["bleu1"])
    assert "+breaks" not in got.signatures["bleu1"]
    with pytest.raises(InputError, match="line break"):
        capeval.score([f"a{ch}b"], [["a b"]], ["bleu1"], line_breaks="refuse")
