"""SPIDEr = (CIDEr-D + SPICE) / 2, from the two registered families on the same tokenized text."""
from __future__ import annotations

import numpy as np
import pytest

import capeval
from capeval.metrics.registry import family_for, get_family
from tests._needs import SPICE_PY

from .test_spice import CANDS, REFS


def test_registration_and_what_it_reads():
    cls = get_family("spider")
    assert family_for("spider") is cls and cls.output_names() == ("spider",)
    assert set(cls.reads({})) == {"spice", "cider_d"}
    # its cache keys follow SPICE's resources; CIDEr-D reads none
    assert cls.cache_resources == get_family("spice").cache_resources
    # it streams as CIDEr-D does: CIDEr-D's df is its corpus pre-pass
    assert cls.streamable and cls.cannot_stream({}) is None and cls.uses_df


@pytest.mark.needs(*SPICE_PY)
def test_spider_is_the_mean_of_its_parts():
    res = capeval.score(CANDS, REFS, metrics=["spider", "cider_d", "spice"], tokenizer="none")
    expected = (res.per_caption["cider_d"] + res.per_caption["spice"]) / 2.0
    assert np.array_equal(res.per_caption["spider"], expected)
    assert res.corpus["spider"] == (res.corpus["cider_d"] + res.corpus["spice"]) / 2.0
    sig = res.signatures["spider"]
    assert sig.startswith("spider_spice_py_spacy|") and "cider:cider_d_coco" in sig
    assert "spice.wordnet:3.0" in sig and "cider.df:corpus:3" in sig


@pytest.mark.needs(*SPICE_PY)
def test_cider_d_options_reach_its_half(tmp_path):
    df = tmp_path / "df.json"
    capeval.score(CANDS, REFS, ["cider_d"], options={"cider_d": {"save_df": str(df)}})
    cands, refs = CANDS[:1], REFS[:1]  # one unit: CIDEr-D needs the saved df
    res = capeval.score(cands, refs, ["spider", "cider_d", "spice"], tokenizer="none",
                        options={"spider": {"cider_d": {"df": str(df)}}, "cider_d": {"df": str(df)}})
    assert res.per_caption["spider"][0] == (res.per_caption["cider_d"][0] + res.per_caption["spice"][0]) / 2.0
    df_field = next(p for p in res.signatures["cider_d"].split("|") if p.startswith("df:file:"))
    assert f"|cider.{df_field}|" in res.signatures["spider"]
    # its own df option, as CIDEr-D's (capeval score --cider-df), reaches the same half
    own = capeval.score(cands, refs, ["spider"], tokenizer="none", options={"spider": {"df": str(df)}})
    assert own.per_caption["spider"][0] == res.per_caption["spider"][0]
    with pytest.raises(capeval.errors.InputError, match="df given twice"):
        capeval.score(cands, refs, ["spider"], options={"spider": {"df": str(df), "cider_d": {"df": "corpus"}}})
