"""CLIP's BPE tokenizer: against transformers' CLIPTokenizer (its own BPE implementation) on
the same vocabulary, and against open_clip's when it imports; truncation as clip.tokenize."""
from __future__ import annotations

import pytest

pytest.importorskip("ftfy")
pytest.importorskip("regex")

from capeval.metrics._clip_bpe import ClipBPE  # noqa: E402

from ._tiny_clip import write_tokenizer_files  # noqa: E402

TEXTS = [
    "A photo depicts a dog runs on the grass.",
    "Two CATS   sleep,in a sunny-room!!",
    "the man's bike isn't red; he'd ride 2 bikes (or 10)",
    "children play ball near water \t\n again",
    "Zebra über café ß ñ 漢字 🙂",
    "",
]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_tokenizer_files(tmp_path_factory.mktemp("bpe"))


@pytest.mark.parametrize("text", TEXTS)
def test_same_ids_as_transformers_clip_tokenizer(files, text):
    transformers = pytest.importorskip("transformers")
    merges, _ = files
    hf = transformers.CLIPTokenizer(str(merges.parent / "vocab.json"), str(merges.parent / "merges.txt"))
    assert ClipBPE(merges).tokenize([text])[0] == hf(text)["input_ids"]


def test_truncation_keeps_76_tokens_and_the_end_token(files):
    transformers = pytest.importorskip("transformers")
    merges, _ = files
    bpe = ClipBPE(merges)
    text = " ".join(["children play ball near water"] * 30)
    full = [bpe.sot, *bpe.encode(text), bpe.eot]
    got = bpe.tokenize([text])[0]
    assert len(full) > 77 and len(got) == 77
    assert got[:76] == full[:76] and got[76] == bpe.eot
    hf = transformers.CLIPTokenizer(str(merges.parent / "vocab.json"), str(merges.parent / "merges.txt"))
    assert got == hf(text, truncation=True, max_length=77)["input_ids"]


def test_html_is_unescaped_as_openai_does(files):
    bpe = ClipBPE(files[0])
    assert bpe.encode("fish &amp;amp; chips") == bpe.encode("fish & chips")


@pytest.mark.needs("module:open_clip")
def test_same_ids_as_open_clip_on_its_vocabulary():
    import open_clip

    from capeval.resources.clip import clip_bpe_path

    bpe = ClipBPE(clip_bpe_path())
    for text in TEXTS:
        want = [int(i) for i in open_clip.tokenize([text])[0] if int(i) != 0]
        assert bpe.tokenize([text])[0] == want
