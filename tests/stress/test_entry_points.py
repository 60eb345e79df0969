"""``capeval.stress`` takes what ``capeval.score`` takes (issue 41, item 12): a ``ScoringPlan``
as its metrics, or a clear refusal; and a cache it cannot write does not stop WordNet from
loading (a read-only ``$CAPEVAL_CACHE``)."""
from __future__ import annotations

import errno
from pathlib import Path

import pytest

import capeval
from capeval import ScoringPlan
from capeval.errors import InputError
from capeval.stress import StressItem
from tests._needs import SPICE_PY, requires

ITEMS = [StressItem("r1", "A man riding a horse on a beach .", ("a person rides a horse by the sea",)),
         StressItem("r2", "Two dogs are playing in the green grass .", ("two dogs play on a lawn",))]


@pytest.fixture(scope="module")
@requires(*SPICE_PY)
def spacy_parser():
    from capeval.data.distractors import SpacyParser

    return SpacyParser()


def test_a_plan_is_accepted_as_the_metrics(spacy_parser):
    kw = dict(items=ITEMS, parser=spacy_parser, n_resamples=20, perturbations="repeat,case_punct")
    by_plan = capeval.stress(metrics=ScoringPlan.build(["bleu1", "rouge_l"]), **kw)
    by_name = capeval.stress(metrics=["bleu1", "rouge_l"], **kw)
    assert by_plan.metrics == by_name.metrics == ["bleu1", "rouge_l"]
    assert by_plan.to_json()["results"] == by_name.to_json()["results"]


def test_a_plan_with_options_or_scores_beside_it_is_refused():
    plan = ScoringPlan.build(["bleu1"])
    with pytest.raises(InputError, match="pass options in the plan"):
        capeval.stress(items=ITEMS, metrics=plan, options={"cider_d": {"sigma": 6.0}})
    with pytest.raises(InputError, match="differs from the plan's"):
        capeval.stress(items=ITEMS, metrics=plan, tokenizer="none")
    with pytest.raises(InputError, match="expected metric names"):
        capeval.stress(items=ITEMS, metrics=42)


@requires(*SPICE_PY)
def test_wordnet_loads_from_a_private_copy_when_the_cache_is_read_only(tmp_path, monkeypatch):
    from capeval.resources import wordnet

    monkeypatch.setenv("CAPEVAL_WORDNET_DIR", str(wordnet.wordnet_dir()))  # found before the cache moves
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(wordnet, "_private", {})
    real_mkdir = Path.mkdir

    def read_only(self, *a, **kw):
        if str(self).startswith(str(tmp_path / "cache")):
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        return real_mkdir(self, *a, **kw)

    monkeypatch.setattr(Path, "mkdir", read_only)
    root = wordnet.prepare_nltk_data()
    assert not (tmp_path / "cache").exists()
    assert root.name.startswith("wordnet-") and (root / "corpora" / "wordnet" / ".capeval-complete").is_file()
    assert wordnet.prepare_nltk_data() == root  # once per process
    assert {"index.noun", "data.noun", "lexnames"} <= {p.name for p in (root / "corpora" / "wordnet").iterdir()}
