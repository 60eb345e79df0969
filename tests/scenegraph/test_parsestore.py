"""SPICE-py's on-disk caches: parses and WordNet answers come back equal to fresh ones, a second
scorer parses nothing and loads no WordNet, forked parsing gives the same tuples, and every part
of the parser's identity is in the key."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from capeval.scenegraph.parsestore import DiskStore, store_key
from tests._needs import SPACY, SPICE_PY, requires

TEXTS = ["a man riding a horse on the beach", "two dogs play in the grass", "a black dog runs",
         "a woman is hoping to ride the wooded trail", "a couple of kids sitting next to a red car",
         "people", "a dog . a cat sits on a mat ."]
CANDS = TEXTS[:4]
REFS = [TEXTS[1:4], TEXTS[4:], TEXTS[:2], [TEXTS[5]]]


def test_store_round_trip(tmp_path):
    s = DiskStore(tmp_path, {"kind": "t"})
    s.put([("a", [["x"], ["y", "z"]]), ("b\x00c é", []), ("lone \ud800", [["q"]])])
    assert s.get(["a", "b\x00c é", "lone \ud800", "missing"]) == {"a": [["x"], ["y", "z"]], "b\x00c é": []}
    assert DiskStore(tmp_path, {"kind": "t"}).items() == {"a": [["x"], ["y", "z"]], "b\x00c é": []}
    assert DiskStore(tmp_path, {"kind": "u"}).get(["a"]) == {}


def test_key_depends_on_every_field_and_the_rule_code(monkeypatch):
    base = {"spacy": "3.8", "model": "m-1", "lemma_repair": "wordnet:x"}
    keys = {store_key(base)} | {store_key({**base, k: "other"}) for k in base}
    assert len(keys) == 1 + len(base)
    import capeval.scenegraph.parsestore as ps

    monkeypatch.setattr(ps, "code_digest", lambda: "edited")
    assert store_key(base) not in keys


def test_an_unwritable_cache_is_reported_and_scoring_goes_on(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    s = DiskStore(blocker / "sub", {"kind": "t"})
    s.put([("a", [])])
    assert s.get(["a"]) == {} and "sub" in s.error


def _set_value(store: DiskStore, key: str, value: str) -> None:
    import sqlite3

    with sqlite3.connect(store.path) as conn:
        conn.execute("UPDATE kv SET value = ? WHERE key = ?", (value, key))


PARSES = {"a": [["dog"], ["dog", "black"]], "b": [["bathroom"]], "c": [["man"], ["man", "ride", "horse"]]}


@pytest.mark.parametrize("value", [
    '[["bathroom"]],[["x","y","z"]]',  # two values in one row: used to shift every later text
    "garbage", '{"tuples": []}', '[["a","b","c","d"]]', '[[1]]', '"bathroom"', "[" * 100_000 + "]" * 100_000,
], ids=["two values", "garbage", "object", "four words", "number", "string", "100k deep"])
def test_a_damaged_row_is_dropped_alone_and_recomputed(tmp_path, value):
    """Issue 41, item 5: rows are decoded each on its own and checked against the store's
    shape; a damaged one is deleted with a note (so it is parsed and stored again), and the
    other rows keep their own values."""
    from capeval.guards import CacheDamaged

    s = DiskStore(tmp_path, {"kind": "spacy-parses"})
    s.put(PARSES.items())
    _set_value(s, "b", value)
    again = DiskStore(tmp_path, {"kind": "spacy-parses"})
    with pytest.warns(CacheDamaged, match="1 damaged row"):
        assert again.get(list(PARSES)) == {"a": PARSES["a"], "c": PARSES["c"]}
    assert again.get(list(PARSES)) == {"a": PARSES["a"], "c": PARSES["c"]}  # deleted: a miss, no second note
    again.put([("b", PARSES["b"])])
    assert DiskStore(tmp_path, {"kind": "spacy-parses"}).get(list(PARSES)) == PARSES  # healed


def test_wordnet_facts_rows_are_checked_too(tmp_path):
    from capeval.guards import CacheDamaged

    s = DiskStore(tmp_path, {"kind": "wordnet-facts"})
    s.put([("dog", [False, True, ["dog.n.01"]]), ("run", [True, True, ["run.v.01"]])])
    _set_value(s, "dog", '[1, true, ["dog.n.01"]]')
    with pytest.warns(CacheDamaged, match="damaged row"):
        assert DiskStore(tmp_path, {"kind": "wordnet-facts"}).items() == {"run": [True, True, ["run.v.01"]]}


def _fifo(path):
    path.unlink()
    os.mkfifo(path)


def _device(path):
    path.unlink()
    path.symlink_to("/dev/zero")


def _garbage(path):
    path.write_bytes(b"not a database " * 300)


@pytest.mark.parametrize("damage", [_fifo, _device, _garbage], ids=["fifo", "device", "garbage"])
def test_a_store_file_sqlite_cannot_read_is_rebuilt(tmp_path, damage):
    """A FIFO in the store's place would block SQLite, a device would be read without end, and
    a file that is not a database failed every later run: each is dropped with a note and the
    store starts anew."""
    from capeval.guards import CacheDamaged

    s = DiskStore(tmp_path, {"kind": "spacy-parses"})
    s.put(PARSES.items())
    s.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{s.path}{suffix}").unlink(missing_ok=True)
    damage(s.path)
    again = DiskStore(tmp_path, {"kind": "spacy-parses"})
    with pytest.warns(CacheDamaged, match=s.path.name):
        assert again.get(list(PARSES)) == {}
    again.put(PARSES.items())
    assert again.error is None and DiskStore(tmp_path, {"kind": "spacy-parses"}).get(list(PARSES)) == PARSES


@pytest.fixture(scope="module")
@requires(*SPICE_PY)
def scorer_factory():
    from capeval.scenegraph.scorer import PySpiceScorer

    return PySpiceScorer


def test_second_scorer_reads_parses_and_words_from_disk(tmp_path, scorer_factory):
    fresh = scorer_factory(parse_cache=False)
    want = fresh.score(CANDS, REFS)
    want_tuples = fresh.parser.parse(TEXTS)
    first = scorer_factory(parse_cache=tmp_path)
    got1 = first.score(CANDS, REFS)
    assert first.stats["parse_cache_hits"] == 0 and first.stats["distinct_sentences_parsed"] == len(TEXTS)
    second = scorer_factory(parse_cache=tmp_path)
    got2 = second.score(CANDS, REFS)
    assert second.stats["distinct_sentences_parsed"] == 0 and second.stats["parse_cache_hits"] == len(TEXTS)
    assert not second.lexicon.loaded_wordnet  # every word's answers came from disk
    assert second.parser._nlp is None  # nor was the spaCy pipeline loaded
    assert second.parser.parse(TEXTS) == want_tuples
    for k in want:
        assert want[k].tobytes() == got1[k].tobytes() == got2[k].tobytes(), k


def test_an_edited_parse_row_changes_no_spice_score(tmp_path, scorer_factory):
    """Issue 41, item 5: one row set to two values shifted every later text's tuples (7 of 8
    SPICE scores changed, corpus 0.0904 -> 0.0573, same signature); 'garbage' gave a
    JSONDecodeError on every later run. Now the row is dropped, its text parsed again, and every
    score is the clean one."""
    import sqlite3

    from capeval.guards import CacheDamaged

    first = scorer_factory(parse_cache=tmp_path)
    want = first.score(CANDS, REFS)
    path = first.parser.store.path
    for value in ('[["bathroom"]],[["x","y","z"]]', "garbage"):
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE kv SET value = ? WHERE key = ?", (value, TEXTS[1]))
        sc = scorer_factory(parse_cache=tmp_path)
        with pytest.warns(CacheDamaged, match="damaged row"):
            got = sc.score(CANDS, REFS)
        assert sc.stats["distinct_sentences_parsed"] == 1
        for k in want:
            assert want[k].tobytes() == got[k].tobytes(), k


def test_cached_wordnet_answers_equal_wordnet(tmp_path, scorer_factory):
    from capeval.scenegraph.lemmas import wordnet_known_test, wordnet_verb_test
    from capeval.scenegraph.synonyms import WordNetSynsets

    sc = scorer_factory(parse_cache=tmp_path)
    words = ["ride", "riding", "rid", "dog", "sit on", "woode", "outstretched", "", "xqzv", "Car "]
    for w in words:
        sc.lexicon.facts(w)
    sc.lexicon.flush()
    again = scorer_factory(parse_cache=tmp_path).lexicon
    from capeval.resources.wordnet import load_wordnet

    wn = load_wordnet()  # NLTK's reader: the answers the cached files must give
    verb, known, syn = wordnet_verb_test(wn), wordnet_known_test(wn), WordNetSynsets(wn)
    for w in words:
        assert again.facts(w) == (verb(w), known(w), syn(w)), w
    assert not again.loaded_wordnet


def test_forked_parsing_gives_the_same_tuples(tmp_path, scorer_factory, monkeypatch):
    import capeval.scenegraph.parser as parser_mod

    one = scorer_factory(parse_cache=False, batch_size=2)
    two = scorer_factory(parse_cache=tmp_path, batch_size=2, n_process=2)
    texts = TEXTS + [f"a dog number {i} runs after {i + 1} cats" for i in range(9)]
    forked = []
    real = parser_mod.TupleParser._parse_forked
    monkeypatch.setattr(parser_mod, "FORK_MIN_TEXTS", 4)
    monkeypatch.setattr(parser_mod.TupleParser, "_parse_forked",
                        lambda self, todo: forked.append(len(todo)) or real(self, todo))
    assert two.parser.parse(texts) == one.parser.parse(texts)
    assert forked == [len(texts)]
    # the workers' WordNet answers came back to the parent and reach the disk
    two.lexicon.flush()
    assert scorer_factory(parse_cache=tmp_path).lexicon.size() >= 1


def test_forked_matching_gives_the_same_evaluations(tmp_path, scorer_factory, monkeypatch):
    """Units matched on forked workers get the in-process results, and the workers' new
    WordNet answers (graph words such as "ride on") come back to the parent's store."""
    import capeval.scenegraph.scorer as scorer_mod

    cands = CANDS + [f"a dog number {i} rides on {i + 1} cats" for i in range(9)]
    refs = REFS + [[TEXTS[i % 7], f"dogs ride on {i} wooded cats"] for i in range(9)]
    want = scorer_factory(parse_cache=False).evaluations(cands, refs)
    two = scorer_factory(parse_cache=tmp_path, n_process=2)
    two.parser.parse(cands + [r for rs in refs for r in rs])  # parsed here: only matching forks
    forked = []
    real = scorer_mod.PySpiceScorer._evaluate_forked
    monkeypatch.setattr(scorer_mod, "FORK_MIN_UNITS", 4)
    monkeypatch.setattr(scorer_mod.PySpiceScorer, "_evaluate_forked",
                        lambda self, pairs, parses, n: forked.append(len(pairs)) or real(self, pairs, parses, n))
    got = two.evaluations(cands, refs)
    assert forked == [len(cands)]
    assert [repr(e) for e in got] == [repr(e) for e in want]  # NaN fields compare by their repr
    assert not two._ref_sets  # the graphs stayed in the workers
    stored = scorer_factory(parse_cache=tmp_path).lexicon
    assert "ride on" in stored._table()


def test_units_already_parsed_are_matched_while_the_others_parse(tmp_path, scorer_factory, monkeypatch):
    """With some texts in the store, their units are matched in a forked process started
    before parsing (the pipeline is not loaded yet), the others after: together the in-process
    results, in row order, and the early process's new WordNet answers reach the store."""
    import capeval.scenegraph.scorer as scorer_mod

    cands = CANDS + [f"a dog number {i} rides on {i + 1} cats" for i in range(9)]
    refs = REFS + [[TEXTS[5], f"dogs ride on {i} wooded cats"] for i in range(9)]
    want = scorer_factory(parse_cache=False).evaluations(cands, refs)
    scorer_factory(parse_cache=tmp_path).parser.parse(TEXTS)  # the first four units' texts only
    two = scorer_factory(parse_cache=tmp_path, n_process=2)
    early = []
    real = scorer_mod._EarlyMatch.__init__

    def spy(self, scorer, pairs, parses):
        early.append((len(pairs), scorer.parser._nlp is None))
        real(self, scorer, pairs, parses)

    monkeypatch.setattr(scorer_mod, "FORK_MIN_UNITS", 4)
    monkeypatch.setattr(scorer_mod._EarlyMatch, "__init__", spy)
    got = two.evaluations(cands, refs)
    assert early == [(len(CANDS), True)]
    assert [repr(e) for e in got] == [repr(e) for e in want]  # NaN fields compare by their repr
    stored = scorer_factory(parse_cache=tmp_path).lexicon._table()
    assert "ride on" in stored and "beach" in stored  # "beach": only in the early process's units


def test_a_failed_early_match_is_an_error(scorer_factory, monkeypatch):
    import capeval.scenegraph.scorer as scorer_mod

    sc = scorer_factory(parse_cache=False)
    monkeypatch.setattr(scorer_mod.PySpiceScorer, "_evaluate", lambda *a: 1 / 0)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        scorer_mod._EarlyMatch(sc, [("a", ("b",))], {}).result()


WORDS = ("jumping climbing painted wooded surfing skiing biking grazing perched leaning carved stacked "
         "splashing wading tossing kicking hugging juggling paddling sledding hiking roasted folded "
         "crouching sprinting knitting welding ladders kites umbrellas benches saddles canoes fences "
         "puddles hammocks lanterns scarves wagons cliffs meadows orchards barns docks piers").split()


def test_forked_workers_read_wordnet_through_their_own_files(tmp_path, scorer_factory, monkeypatch):
    """Workers meet new words at once: each must read WordNet through files of its own (a fork
    shares file offsets), or lookups read each other's lines."""
    import capeval.scenegraph.parser as parser_mod

    texts = [f"a man {a} near the {b} and {c}" for a, b, c in zip(WORDS, WORDS[7:] + WORDS[:7], WORDS[19:] + WORDS[:19])]
    want = scorer_factory(parse_cache=False).parser.parse(texts)
    sc = scorer_factory(parse_cache=tmp_path, batch_size=3, n_process=2)
    sc.lexicon.wordnet()  # loaded (files open) in the parent before the fork
    monkeypatch.setattr(parser_mod, "FORK_MIN_TEXTS", 4)
    assert sc.parser.parse(texts) == want
    from capeval.resources.wordnet import load_wordnet
    from capeval.scenegraph.lexicon import CachedWordNet
    from capeval.scenegraph.wnfacts import WordNetFiles

    assert isinstance(sc.lexicon.wordnet(), WordNetFiles)  # memory maps: no file offset to share
    lex = CachedWordNet(wordnet=load_wordnet())  # an NLTK reader passed in
    lex.facts("dog")
    reader = lex.wordnet()
    before = reader._reader._data_file_map
    lex.after_fork()
    assert reader._reader._data_file_map == {} and reader._reader._data_file_map is not before


@pytest.mark.needs(*SPACY)
def test_pipeline_identity_from_its_files_equals_the_loaded_pipelines():
    from capeval.scenegraph.parser import DEFAULT_MODEL, load_spacy, loaded_identity, package_identity

    predicted = package_identity(DEFAULT_MODEL)  # model:spacy-sm: installed as a package
    assert predicted is not None
    assert predicted == loaded_identity(load_spacy(DEFAULT_MODEL), DEFAULT_MODEL)
    assert package_identity("some_other_pipeline") is None


def test_a_pipeline_unlike_its_files_is_refused(scorer_factory, monkeypatch):
    import capeval.scenegraph.parser as parser_mod

    sc = scorer_factory(parse_cache=False)
    assert sc.parser._nlp is None  # identity read from the package's files, pipeline not loaded
    monkeypatch.setitem(sc.parser._identity, "pipes", ["tagger"])
    with pytest.raises(RuntimeError, match="parse store keys"):
        sc.parser.parse(["a dog runs"])
    assert parser_mod.package_identity(parser_mod.DEFAULT_MODEL)["pipes"] != ["tagger"]
