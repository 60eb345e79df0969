"""The ``distractors`` benchmark table built from the shared Flickr8k / Flickr30k captions."""
from __future__ import annotations

import os
from collections import Counter

import numpy as np
import pytest

from capeval import data
from capeval.data.distractor_tasks import TASKS
from capeval.data.distractors import SpacyParser, load_distractors
from capeval.guards import CacheDamaged
from capeval.errors import InputError
from tests._needs import SPACY, requires

LIMIT = 12  # images per dataset: enough for every task, a few seconds of parsing


@pytest.fixture(scope="module")
@requires(*SPACY)
def parser():
    p = SpacyParser()
    p.nlp  # noqa: B018 - loads the pipeline here, not inside the first test
    return p


@pytest.fixture(scope="module")
def cache_env(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CAPEVAL_CACHE", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture(scope="module")
def table(data_dir, parser, cache_env):
    return data.load("distractors", data_dir, limit=LIMIT, parser=parser)


@pytest.mark.data
@pytest.mark.slow
def test_table_shape_and_protocol(table):
    assert table.name == "distractors"
    counts = Counter(table.categories)
    assert set(counts) == set(TASKS)
    assert all(n <= 2 * LIMIT for n in counts.values())
    assert (table.labels == 0).all()  # candidate a is always the correct caption
    p = table.protocol
    assert p["source"] == "flickr8k-test+flickr30k-test" and p["refs"] == "image-others"
    assert p["gen_seed"] == "2016" and p["limit"] == str(LIMIT) and p["rows"] == str(len(table))
    assert p["parser"].startswith("spacy-")


@pytest.mark.data
@pytest.mark.slow
def test_items_follow_the_reference_rule(table, data_dir):
    from capeval.data._common import flickr8k_captions, karpathy_references, ws

    f8 = flickr8k_captions(data_dir, "t")
    f30 = karpathy_references(data_dir, "flickr30k", "t")
    for it, a, b, refs in zip(table.extra["items"], table.candidates_a, table.candidates_b, table.references):
        ds, img = it.image.split("/", 1)
        caps = [ws(c) for c in (f8 if ds == "flickr8k" else f30)[img]]
        assert a == caps[it.caption_index] and refs == caps[:it.caption_index] + caps[it.caption_index + 1:]
        assert a not in refs and b != a
        if it.donor:
            assert it.donor.split("/")[0] == ds and it.donor != it.image  # donors stay in their dataset


@pytest.mark.data
@pytest.mark.slow
def test_deterministic_through_the_parse_cache(table, data_dir, parser, cache_env):
    fresh = SpacyParser()
    again = load_distractors(data_dir, limit=LIMIT, parser=fresh)
    assert fresh._nlp is None  # served from the on-disk parse cache: spaCy never loaded
    assert again.candidates_b == table.candidates_b and again.references == table.references
    assert again.protocol == table.protocol
    other = load_distractors(data_dir, limit=LIMIT, seed=1, parser=fresh)
    assert other.candidates_b != table.candidates_b


@pytest.mark.data
def test_options_are_checked(data_dir):
    fake = lambda texts: []  # noqa: E731  never reached
    with pytest.raises(InputError, match="datasets='coco'"):
        load_distractors(data_dir, datasets="coco", parser=fake)
    with pytest.raises(InputError, match="tasks='swap'"):
        load_distractors(data_dir, tasks="shuffle,swap", parser=fake)
    with pytest.raises(InputError, match="unknown option"):
        load_distractors(data_dir, nrefs=3, parser=fake)
    with pytest.raises(InputError, match="limit"):
        load_distractors(data_dir, limit="x", parser=fake)


def nouns(texts):
    """A stand-in parser: every word of every caption a noun (tests inject it for spaCy)."""
    from capeval.data.distractor_tasks import Token

    out = []
    for t in texts:
        words, pos = t.split(" "), 0
        toks = []
        for w in words:
            toks.append(Token(w, pos, "NN", "NOUN", "ROOT" if not toks else "dep", 0, w.lower()))
            pos += len(w) + 1
        out.append(tuple(toks))
    return out


@pytest.mark.data
def test_injected_parser_and_task_subset(data_dir):
    """The table builds with any parser; the toy one here makes every caption a bag of nouns."""
    t = load_distractors(data_dir, datasets="flickr8k", tasks="shuffle,object-list", limit=5, parser=nouns)
    assert Counter(t.categories) == {"shuffle": 5, "object-list": 5}
    assert t.protocol["parser"] == "injected" and t.protocol["source"] == "flickr8k-test"
    assert np.all(t.labels == 0)
    # the training split (what ``learned`` may train on) shares no image with the test split
    tr = load_distractors(data_dir, datasets="flickr8k", split="train", tasks="shuffle", parser=nouns)
    te = load_distractors(data_dir, datasets="flickr8k", split="test", tasks="shuffle", parser=nouns)
    assert tr.protocol["source"] == "flickr8k-train"
    imgs = lambda tab: {it.image for it in tab.extra["items"]} | {it.donor for it in tab.extra["items"]}  # noqa: E731
    assert len(imgs(tr)) > 5000 and not (imgs(tr) - {""}) & imgs(te)


class _FakeTok:
    def __init__(self, i, text, idx):
        self.i, self.text, self.idx = i, text, idx
        self.tag_, self.pos_, self.dep_, self.lemma_ = "NN", "NOUN", "dep", text.lower()
        self.head = self


class _FakeNLP:
    """Stands in for a spaCy pipeline: one 'doc' (token list) per text, counting calls."""

    def __init__(self):
        self.calls = 0

    def pipe(self, texts, batch_size=None):
        self.calls += 1
        for t in texts:
            toks, pos = [], 0
            for i, w in enumerate(t.split(" ")):
                toks.append(_FakeTok(i, w, pos))
                pos += len(w) + 1
            yield toks


def _fake_parser():
    p = SpacyParser("fake-pipeline")
    p._nlp = _FakeNLP()
    p.describe = lambda: "fake-1"
    return p


def test_parse_cache_round_trip_and_damaged_files(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path))
    texts = ["A man runs .", "Two dogs play in the snow ."]
    parser = _fake_parser
    first = parser()
    parses = first(texts)
    assert first._nlp.calls == 1 and [t.text for t in parses[1]] == texts[1].split()
    (cached,) = (tmp_path / "parses").glob("*.json")
    second = parser()
    assert second(texts) == parses and second._nlp.calls == 0
    cached.write_text("{not json", encoding="utf-8")
    third = parser()
    with pytest.warns(CacheDamaged, match=cached.name):
        assert third(texts) == parses and third._nlp.calls == 1  # a damaged file is dropped, then rewritten
    assert parser()(texts) == parses
    assert parser()(texts[:1]) == parses[:1]  # another text list is another key
    assert len(list((tmp_path / "parses").glob("*.json"))) == 2
    # a cache that cannot be written only costs time: the parses still come back, nothing is left
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("x", encoding="utf-8")
    monkeypatch.setenv("CAPEVAL_CACHE", str(blocked))
    fourth = parser()
    assert fourth(texts) == parses and fourth._nlp.calls == 1
    assert blocked.read_text(encoding="utf-8") == "x"


def _entry(tmp_path):
    (entry,) = (tmp_path / "parses").glob("*.json")
    return entry


def _relist(entry, data: bytes):
    """``data`` written as a self-consistent entry in ``entry``'s place (its name and manifest
    line follow the new digest): only the shape check can catch it."""
    import json

    from capeval.guards import cache_entry_name

    manifest = entry.parent / "manifest.jsonl"
    (line,) = [json.loads(x) for x in manifest.read_text().splitlines()]
    entry.unlink()
    name = cache_entry_name(data, ".json")
    (entry.parent / name).write_bytes(data)
    manifest.write_text(json.dumps({"entry": name, "key": line["key"]}) + "\n")


def _nn_to_jj(entry):  # the probe's edit: every NN tag made JJ
    entry.write_bytes(entry.read_bytes().replace(b'"NN"', b'"JJ"'))


def _fifo(entry):
    entry.unlink()
    os.mkfifo(entry)


def _dev_zero(entry):
    entry.unlink()
    entry.symlink_to("/dev/zero")


def _deep(entry):
    _relist(entry, b"[" * 100_000 + b"]" * 100_000)


def _wrong_types(entry):
    _relist(entry, b'[[["A", "0", "NN", "NOUN", "dep", 0, "a"]], [[1, 2]]]')


def _wrong_offsets(entry):
    _relist(entry, b'[[["A", 5, "NN", "NOUN", "dep", 9, "a"]], []]')


def _foreign(entry):
    import json

    from capeval.guards import cache_entry_name

    data = entry.read_bytes().replace(b'"NN"', b'"JJ"')
    (entry.parent / cache_entry_name(data, ".json")).write_bytes(data)  # not in the manifest
    (entry.parent / "manifest.jsonl").write_text(json.dumps({"entry": "0" * 32 + ".json", "key": "x"}) + "\n")


@pytest.mark.parametrize("damage", [_nn_to_jj, _fifo, _dev_zero, _deep, _wrong_types, _wrong_offsets, _foreign],
                         ids=lambda f: f.__name__.strip("_"))
def test_a_damaged_parse_cache_entry_is_dropped_and_parsed_again(tmp_path, monkeypatch, damage):
    """Issue 41, items 5 and 9: the stress parse cache goes through the doors. A rewritten entry
    (NN -> JJ moved a stress result) no longer matches its digest; a FIFO hung, a link to
    /dev/zero took 3.8 GB, a 100,000-deep value was a RecursionError and wrong field types an
    IndexError: each is dropped with a note, the texts are parsed again, the parses are the
    fresh ones."""
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path))
    texts = ["A man runs .", "Two dogs play in the snow ."]
    want = _fake_parser()(texts)
    damage(_entry(tmp_path))
    again = _fake_parser()
    with pytest.warns(CacheDamaged):
        assert again(texts) == want
    assert again._nlp.calls == 1
    healed = _fake_parser()
    assert healed(texts) == want and healed._nlp.calls == 0


def test_a_caption_spacy_would_parse_without_end_is_refused_by_name(tmp_path, monkeypatch):
    """Issue 41, item 8: a 1,000,000-character caption took 55 s and 3.47 GB in spaCy before a
    MemoryError; captions are capped as SPICE-py caps them."""
    from capeval.errors import InputError

    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path))
    p = _fake_parser()
    with pytest.raises(InputError, match="caption 1 has 1,000,000 characters"):
        p(["a dog", "a" * 1_000_000])
    assert p._nlp.calls == 0
