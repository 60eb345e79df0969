"""Score-cache keys follow the code: editing a metric's source changes its key and the keys of
the families that read its scores, and nothing else's."""
from __future__ import annotations

import pytest

from capeval.metrics.registry import family_for
from capeval.service import codehash
from capeval.service.cache import ScoreCache
from capeval.service.scoring import score_units


@pytest.fixture
def edit(monkeypatch):
    """Pretend one module's source gained a line."""
    original = codehash.module_source

    def apply(module: str) -> None:
        def source(name: str):
            data = original(name)
            return data + b"\n# edited\n" if name == module and data is not None else data

        monkeypatch.setattr(codehash, "module_source", source)
        codehash.clear()

    yield apply
    codehash.clear()


def _codes(names):
    return {n: codehash.family_code(family_for(n)) for n in names}


def test_editing_cider_changes_cider_and_its_readers_only(edit):
    names = ["cider_d", "spider", "nneval", "learned", "bleu4", "wmd"]
    before = _codes(names)
    edit("capeval.metrics.cider")
    after = _codes(names)
    assert {n for n in names if before[n] != after[n]} == {"cider_d", "spider", "nneval", "learned"}


def test_editing_shared_ngram_code_or_the_tokenizer_reaches_bleu(edit):
    before = _codes(["bleu4", "cider_d", "wmd"])
    edit("capeval.metrics._ngrams")
    assert _codes(["bleu4"])["bleu4"] != before["bleu4"]
    edit("capeval.text.ptb")
    after = _codes(["bleu4", "cider_d", "wmd"])
    assert after["bleu4"] != before["bleu4"] and after["cider_d"] != before["cider_d"]


def test_the_compiled_core_counts_by_its_c_source(edit):
    before = _codes(["bleu4"])
    edit("capeval._speedups")
    assert _codes(["bleu4"]) != before


def test_neutral_modules_keep_keys(edit):
    before = _codes(["cider_d", "learned"])
    edit("capeval.errors")
    assert _codes(["cider_d", "learned"]) == before


def test_learned_reads_its_models_features():
    reads = family_for("learned").reads({})
    assert "cider_d" in reads and "bleu4" in reads
    assert set(family_for("spider").reads({})) == {"spice", "cider_d"}


def test_an_edit_makes_the_cache_miss(tmp_path, edit):
    cache = ScoreCache(tmp_path)
    cands, refs = ["a dog runs", "two cats"], [["a dog is running"], ["two cats sleep"]]
    score_units(cands, refs, ["cider_d", "bleu4"], cache=cache)
    res = score_units(cands, refs, ["cider_d", "bleu4"], cache=cache)
    assert res.details["cached"] == {"cider_d": True, "bleu4": True}
    edit("capeval.metrics.cider")
    res = score_units(cands, refs, ["cider_d", "bleu4"], cache=cache)
    assert res.details["cached"] == {"cider_d": False, "bleu4": True}
