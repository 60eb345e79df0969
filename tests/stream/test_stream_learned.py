"""The model families when streamed: QACE-Ref's offline backend streams in worker processes
(`capeval score --jobs 2`) with the in-memory numbers, file bytes and signatures; the learned
families (``learned``, ``nneval``) and QACE-Ref's neural backends are refused before any work,
naming what makes their rows depend on the rows around them."""
from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

import capeval
from capeval import score_stream
from capeval.cli.main import app
from capeval.errors import InputError
from capeval.inputs import read_jsonl, write_result
from capeval.metrics.registry import get_family
from tests._needs import family_needs

from ._rows import make_rows, write_jsonl

QACE = ["qace_ref", "qace_ref_f1", "qace_ref_bertscore", "qace_ref_answerability"]
runner = CliRunner()


@pytest.mark.needs(*family_needs(get_family("qace_ref")))
def test_qace_ref_streams_with_jobs_2_byte_for_byte(tmp_path):
    src = tmp_path / "in.jsonl"
    write_jsonl(src, make_rows(14, seed=34))
    out = tmp_path / "o.jsonl"
    res = runner.invoke(app, ["score", "-i", str(src), "-m", ",".join(QACE), "-o", str(out), "--jobs", "2",
                              "--chunk-size", "4", "-q"])
    assert res.exit_code == 0, res.output
    ids, cands, refs = read_jsonl(src)
    mem = capeval.score(cands, refs, QACE, ids=ids)
    write_result(mem, tmp_path / "mem.jsonl", ids)
    assert out.read_bytes() == (tmp_path / "mem.jsonl").read_bytes()
    assert out.with_name("o.signatures.json").read_bytes() == (tmp_path / "mem.signatures.json").read_bytes()
    # in this process too, one row per chunk, each output with its corpus mean and signature
    got = score_stream(src, QACE, chunk_size=1, keep_per_caption=True)
    for name in QACE:
        assert got.corpus[name] == mem.corpus[name] and got.signatures[name] == mem.signatures[name]
        assert np.array_equal(got.per_caption[name], mem.per_caption[name])


def test_learned_families_are_refused_naming_why(tmp_path):
    src = tmp_path / "in.jsonl"
    write_jsonl(src, make_rows(10))
    with pytest.raises(InputError, match="the feature bertscore_p of model 'learned-default' depends on the rows"):
        score_stream(src, ["bleu4", "learned"])
    with pytest.raises(InputError, match="model 'learned-mpnet' combines its features by matrix products"):
        score_stream(src, ["learned"], options={"learned": {"model": "mpnet"}})
    df = tmp_path / "df.json"
    capeval.score(["a dog runs", "two cats"], [["a dog is running"], ["cats sleep"]], ["cider_d"],
                  options={"cider_d": {"save_df": str(df)}})
    with pytest.raises(InputError, match="model 'nneval' combines its features by matrix products"):
        score_stream(src, ["nneval"], options={"nneval": {"df": str(df)}})
    with pytest.raises(InputError, match="qace_ref with Hugging Face question generation"):
        score_stream(src, ["qace_ref"], options={"qace_ref": {"qg": "some/t5", "qa": "some/t5"}})
    res = runner.invoke(app, ["score", "-i", str(src), "-m", "nneval", "--jobs", "2", "-o", str(tmp_path / "o.jsonl")])
    assert res.exit_code == 2 and "model 'nneval' combines its features by matrix products" in " ".join(res.output.split())
    assert "Traceback" not in res.output
