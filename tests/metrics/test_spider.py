"""SPIDEr = (CIDEr-D + SPICE) / 2, from the two registered families on the same tokenized text."""
from __future__ import annotations

import numpy as np
import pytest

import capeval
from capeval.metrics.registry import family_for, get_family

from .test_spice import CANDS, REFS, _ready


@pytest.fixture(scope="module")
def ready():
    _ready()


def test_registration_and_what_it_reads():
    cls = get_family("spider")
    assert family_for("spider") is cls and cls.output_names() == ("spider",)
    assert set(cls.reads({})) == {"spice", "cider_d"}
    # its cache keys follow SPICE's resources; CIDEr-D reads none
    assert cls.cache_resources == get_family("spice").cache_resources
    assert not cls.streamable and cls.cannot_stream({}) and not cls.uses_df


def test_spider_is_the_mean_of_its_parts(ready):
    res = capeval.score(CANDS, REFS, metrics=["spider", "cider_d", "spice"], tokenizer="none")
    expected = (res.per_caption["cider_d"] + res.per_caption["spice"]) / 2.0
    assert np.array_equal(res.per_caption["spider"], expected)
    assert res.corpus["spider"] == (res.corpus["cider_d"] + res.corpus["spice"]) / 2.0
    sig = res.signatures["spider"]
    assert sig.startswith("spider_spice_py_spacy|") and "cider:cider_d_coco" in sig
    assert "spice.wordnet:3.0" in sig and "cider.df:corpus:3" in sig


def test_cider_d_options_reach_its_half(ready, tmp_path):
    df = tmp_path / "df.json"
    capeval.score(CANDS, REFS, ["cider_d"], options={"cider_d": {"save_df": str(df)}})
    cands, refs = CANDS[:1], REFS[:1]  # one unit: CIDEr-D needs the saved df
    res = capeval.score(cands, refs, ["spider", "cider_d", "spice"], tokenizer="none",
                        options={"spider": {"cider_d": {"df": str(df)}}, "cider_d": {"df": str(df)}})
    assert res.per_caption["spider"][0] == (res.per_caption["cider_d"][0] + res.per_caption["spice"][0]) / 2.0
    df_field = next(p for p in res.signatures["cider_d"].split("|") if p.startswith("df:file:"))
    assert f"|cider.{df_field}|" in res.signatures["spider"]
