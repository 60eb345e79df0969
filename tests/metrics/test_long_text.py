"""``long_text`` of the encoder families (docs/LONG_CAPTIONS.md): on texts just under, at and over
each window, ``truncate`` keeps today's numbers, warns and marks the signature only when it cut
something; the reading mode (``windows``) gives a fitting text the truncate numbers and changes
the score when words are appended past the window. Tiny random models, built here.

Comparisons of two numbers computed in this process by the same code on the same tokens use
``==``; nothing compares numbers across processes or machines."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import capeval
from capeval.errors import InputError
from capeval.metrics._bertscore_windows import best_window, window_spans
from capeval.metrics._clip_long import pack, split_sentences
from capeval.metrics._long_text import LongTextWarning

from . import _tiny_bert
from ._tiny_bert import words

TAIL = " dog cats red bike"  # four words, one token each in both tiny vocabularies


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    return _tiny_bert.build(tmp_path_factory.mktemp("tinybert"))


def _score(metric, family, cands, refs, options, images=None):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        res = capeval.score(cands, refs, [metric], options={family: options}, images=images)
    said = [str(w.message) for w in seen if issubclass(w.category, LongTextWarning)]
    return res, said


def _check_family(metric, family, options, fit, refs, images=None):
    """``fit``: content tokens that just fit the window. Candidates just under, at and over it."""
    under, at = words(fit - 1), words(fit)
    over = at + TAIL
    cands = [under, at, over]
    refs3 = [refs] * 3
    imgs = None if images is None else [images[0]] * 3
    t, said = _score(metric, family, cands, refs3, {**options, "long_text": "truncate"}, imgs)
    # only the text over the window is cut, by the tail's 4 tokens
    assert t.details[family]["long_text"] == {"mode": "truncate", "window": t.details[family]["long_text"]["window"],
                                              "cut_texts": 1, "cut_tokens": 4}
    assert len(said) == 1 and "1 text(s)" in said[0] and "4 tokens" in said[0]
    assert t.signatures[metric].endswith("|trunc:1|version:" + capeval.__version__)
    assert t.per_caption[metric][2] == t.per_caption[metric][1]  # the tail was never read
    # nothing cut: no warning, no trunc field, the signature of a default run
    short, said = _score(metric, family, cands[:2], refs3[:2], options, None if imgs is None else imgs[:2])
    assert not said and "trunc:" not in short.signatures[metric] and "long:" not in short.signatures[metric]
    assert short.signatures[metric] == t.signatures[metric].replace("|trunc:1", "")
    assert list(short.per_caption[metric]) == list(t.per_caption[metric][:2])

    w, said = _score(metric, family, cands, refs3, {**options, "long_text": "windows"}, imgs)
    assert not said and w.details[family]["long_text"]["cut_texts"] == 0
    assert "|long:windows|" in w.signatures[metric] and "trunc:" not in w.signatures[metric]
    assert list(w.per_caption[metric][:2]) == list(t.per_caption[metric][:2])  # fitting texts unchanged
    assert w.per_caption[metric][2] != w.per_caption[metric][1]  # the tail is read
    return t, w


def test_bertscore_window_edges(bert_dir):
    # 16-token window: [CLS] + 14 words + [SEP]
    _check_family("bertscore_f", "bertscore", {"model": str(bert_dir), "num_layers": 2}, 14, [words(5, 3)])


def test_bertscore_windows_read_every_token_with_context():
    spans = window_spans(40, 14)
    assert spans[0] == (0, 14) and spans[-1] == (26, 40)
    assert all(b - a == 14 for a, b in spans)
    assert all(spans[k + 1][0] - spans[k][0] <= 7 for k in range(len(spans) - 1))
    chosen = best_window(spans, 40)
    for p, k in enumerate(chosen):
        a, b = spans[k]
        assert a <= p < b
        # no other window gives the token more context on its poorer side
        assert min(p - a, b - 1 - p) == max(min(p - x, y - 1 - p) for x, y in spans if x <= p < y)
    assert window_spans(14, 14) == [(0, 14)]


def test_sentsim_window_edges(bert_dir):
    _check_family("sentsim_max", "sentsim", {"model": str(bert_dir)}, 14, [words(5, 3)])


def test_bertscore_idf_and_references_over_the_window(bert_dir):
    long_ref = words(20, 2)
    res, said = _score("bertscore_f", "bertscore", [words(3), words(4)], [[long_ref], [long_ref, words(2)]],
                       {"model": str(bert_dir), "num_layers": 2, "idf": True})
    # a reference is counted once per row it occurs in
    assert res.details["bertscore"]["long_text"]["cut_texts"] == 2
    assert res.details["bertscore"]["long_text"]["cut_tokens"] == 2 * (22 - 16)
    assert res.signatures["bertscore_f"].endswith(f"|trunc:2|version:{capeval.__version__}")
    w, _ = _score("bertscore_f", "bertscore", [words(3), words(4)], [[long_ref], [long_ref, words(2)]],
                  {"model": str(bert_dir), "num_layers": 2, "idf": True, "long_text": "windows"})
    assert np.isfinite(w.per_caption["bertscore_f"]).all()


def test_a_streamed_run_counts_and_stamps_like_memory(bert_dir, tmp_path):
    from tests.stream._rows import assert_same_result

    cands = [words(5), words(20, 2), words(4, 7), words(30, 1), words(6)]
    refs = [[words(3)], [words(5), words(25)], [words(4)], [words(3)], [words(17)]]
    rows = [{"candidate": c, "references": r} for c, r in zip(cands, refs)]
    for mode in ("truncate", "windows"):
        opts = {"bertscore": {"model": str(bert_dir), "num_layers": 2, "long_text": mode, "padding_floor": False}}
        mem = capeval.score(cands, refs, ["bertscore_f"], options=opts)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            got = capeval.score_stream(rows, ["bertscore_f"], options=opts, chunk_size=2, run_dir=tmp_path / mode)
        assert_same_result(mem, got, ["bertscore_f"])  # signatures included: trunc:N of the whole input
        assert got.details["bertscore"]["long_text"] == mem.details["bertscore"]["long_text"]
        said = [w for w in seen if issubclass(w.category, LongTextWarning)]
        assert len(said) == (1 if mode == "truncate" else 0)
        assert ("|trunc:4|" in mem.signatures["bertscore_f"]) == (mode == "truncate")


def test_unknown_mode_is_refused(bert_dir):
    for fam, metric in (("bertscore", "bertscore_f"), ("sentsim", "sentsim_max")):
        with pytest.raises(InputError, match="long_text must be one of truncate, windows"):
            capeval.score(["a dog"], [["a dog"]], [metric], options={fam: {"model": str(bert_dir), "long_text": "all"}})


# ----------------------------------------------------------------------------- CLIP and PAC-S


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    pytest.importorskip("PIL")
    pytest.importorskip("ftfy")
    from ._tiny_clip import build_hf, save_openai, synthetic_images

    root = tmp_path_factory.mktemp("tinyclip_long")
    model, merges = build_hf(root / "hf")
    return {"pt": save_openai(model, root / "tiny.pt"), "pacs": save_openai(model, root / "p.pth", wrap=True),
            "merges": merges, "hf_dir": root / "hf", "images": [str(p) for p in synthetic_images(root / "img")]}


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))


def _clip_words(n: int) -> str:
    from ._tiny_clip import WORDS as CLIP_WORDS

    vocab = [w for w in CLIP_WORDS if w not in {";", ",", "street", "children"}]  # one BPE token each
    return " ".join(vocab[i % len(vocab)] for i in range(n))


@pytest.mark.parametrize("family,metric,backend", [("clip_s", "clip_s", "openai"), ("clip_s", "refclip_s", "transformers"),
                                                   ("pac_s", "pac_s", "openai")])
def test_clip_window_edges(tiny_clip, monkeypatch, family, metric, backend):
    # 77 tokens: start, "a photo depicts" (3), 72 caption words, end
    monkeypatch.setattr(_tiny_bert, "WORDS", _clip_words(200).split())
    opts = {"model": str(tiny_clip["hf_dir"])} if backend == "transformers" else {
        "model": str(tiny_clip["pacs" if family == "pac_s" else "pt"]), "tokenizer": str(tiny_clip["merges"])}
    _check_family(metric, family, opts, 72, [_clip_words(6)], images=tiny_clip["images"])


def test_clip_windows_pack_whole_sentences():
    assert split_sentences("A dog runs.  Two cats sleep! A man") == ["A dog runs.", "Two cats sleep!", "A man"]
    assert pack([[1, 2, 3], [4, 5], [6, 7, 8, 9]], 5) == [[1, 2, 3, 4, 5], [6, 7, 8, 9]]
    # a sentence longer than a window is cut into equal parts
    assert pack([list(range(12))], 5) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
