"""The model families when streamed: QACE-Ref's offline backend, ``nneval`` and a ``learned``
model whose features stream score in chunks and in worker processes (`capeval score --jobs 2`)
with the in-memory numbers, file bytes and signatures (their models combine a row's features
alone: ``capeval.learn.rowlocal``; CIDEr-D's df is the corpus pre-pass). The shipped default
``learned`` model streams too (its BERTScore features take the true best match). A model with a
feature under bert_score's padding floor and QACE-Ref's neural backends are refused before any
work, naming what makes their rows depend on the rows around them."""
from __future__ import annotations

import random

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


def _tiny_learned(path):
    """A learned model over BLEU-4, CIDEr-D (its df is the pre-pass), ROUGE-L and length, with
    rows of more than 2 references scored in groups of 2: what a model that streams meets."""
    from capeval.learn import ranker
    from capeval.learn.ranker_features import parse
    from capeval.learn.ranker_model import RankerModel

    feats = parse("bleu4+cider_d+rouge_l+length")
    k = len(feats)
    model = RankerModel("linear", [np.linspace(0.5, 2.0, k)],
                        ranker.Scaler(np.zeros(k), np.array([1.0, 5.0, 1.0, 12.0]), np.full(k, 0.3), np.full(k, 0.7)),
                        feats, 2, meta={"name": "tiny-stream"})
    model.save(path)
    return str(path)


def _check_streams_as_in_memory(tmp_path, metrics, options, n, seed, cli_options):
    src = tmp_path / "in.jsonl"
    write_jsonl(src, make_rows(n, seed=seed))
    ids, cands, refs = read_jsonl(src)
    mem = capeval.score(cands, refs, metrics, ids=ids, options=options)
    write_result(mem, tmp_path / "mem.jsonl", ids)
    out = tmp_path / "o.jsonl"
    res = runner.invoke(app, ["score", "-i", str(src), "-m", ",".join(metrics), "-o", str(out), "--jobs", "2",
                              "--chunk-size", "4", "-q", *cli_options])
    assert res.exit_code == 0, res.output
    assert out.read_bytes() == (tmp_path / "mem.jsonl").read_bytes()
    assert out.with_name("o.signatures.json").read_bytes() == (tmp_path / "mem.signatures.json").read_bytes()
    for chunk in (1, 7, random.Random(seed).randint(2, n - 1)):
        got = score_stream(src, metrics, options=options, chunk_size=chunk, keep_per_caption=True)
        for name in mem.per_caption:
            assert got.corpus[name] == mem.corpus[name], f"{name}: corpus with chunks of {chunk}"
            assert got.signatures[name] == mem.signatures[name]
            assert np.array_equal(got.per_caption[name], mem.per_caption[name]), f"{name}: chunks of {chunk}"
    return mem


def test_a_learned_model_that_streams_gives_the_in_memory_bytes(tmp_path):
    model = _tiny_learned(tmp_path / "tiny.npz")
    mem = _check_streams_as_in_memory(tmp_path, ["bleu4", "learned"], {"learned": {"model": model}}, 30, 34,
                                      ["-O", f"learned.model={model}"])
    assert "model:tiny-stream" in mem.signatures["learned"] and len(np.unique(mem.per_caption["learned"])) > 20


@pytest.mark.needs(*family_needs(get_family("nneval")))
def test_nneval_streams_with_jobs_2_byte_for_byte(tmp_path):
    mem = _check_streams_as_in_memory(tmp_path, ["nneval"], None, 12, 3, [])
    assert len(np.unique(mem.per_caption["nneval"])) > 8


@pytest.mark.needs(*family_needs(get_family("learned")))
def test_the_shipped_default_learned_model_streams_byte_for_byte(tmp_path):
    # (the mpnet model streams in tests/metrics/test_statistics_contract.py and the every-family test)
    mem = _check_streams_as_in_memory(tmp_path, ["learned"], None, 10, 5, [])
    assert "model:learned-default" in mem.signatures["learned"]


def test_a_learned_model_with_a_batch_dependent_feature_is_refused_naming_why(tmp_path):
    from tests.learn._floor_model import REFUSAL, floor_model

    model = floor_model(tmp_path / "floor.npz")
    src = tmp_path / "in.jsonl"
    write_jsonl(src, make_rows(10))
    with pytest.raises(InputError, match=REFUSAL):
        score_stream(src, ["bleu4", "learned"], options={"learned": {"model": model}})
    with pytest.raises(InputError, match="qace_ref with Hugging Face question generation"):
        score_stream(src, ["qace_ref"], options={"qace_ref": {"qg": "some/t5", "qa": "some/t5"}})
    res = runner.invoke(app, ["score", "-i", str(src), "-m", "learned", "-O", f"learned.model={model}", "--jobs", "2",
                              "-o", str(tmp_path / "o.jsonl")])
    assert res.exit_code == 2 and REFUSAL + " around it" in " ".join(res.output.split())
    assert "Traceback" not in res.output
