"""--engine ray: the same chunk functions as Ray tasks on a local Ray started here (no network)."""
from __future__ import annotations

import sys

import pytest

from capeval import score, score_stream
from capeval.errors import ResourceNotFound

from ._rows import make_rows, write_jsonl

METRICS = ["bleu1", "bleu4", "rouge_l", "cider_d"]


def test_missing_ray_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    p = tmp_path / "in.jsonl"
    write_jsonl(p, make_rows(30))
    from capeval.extras import install_hint

    with pytest.raises(ResourceNotFound, match="needs Ray, the ray extra") as e:
        score_stream(p, METRICS, engine="ray")
    assert install_hint(["ray"]) in str(e.value)


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.mark.slow
def test_ray_equals_in_memory_and_files_identical(tmp_path, local_ray):
    rows = make_rows(1500, seed=21)
    p = tmp_path / "in.jsonl"
    write_jsonl(p, rows)
    ref = score([r["candidate"] for r in rows], [r["references"] for r in rows], METRICS,
                ids=[r["id"] for r in rows])
    got = score_stream(p, METRICS, engine="ray", chunk_size=250)
    assert got.corpus == ref.corpus and got.signatures == ref.signatures and got.details == ref.details
    for m in METRICS:
        assert got.per_caption[m].tolist() == ref.per_caption[m].tolist()
    a, b = tmp_path / "ray.jsonl", tmp_path / "local.jsonl"
    score_stream(p, METRICS, engine="ray", chunk_size=250, output=a)
    score_stream(p, METRICS, chunk_size=250, output=b)
    assert a.read_bytes() == b.read_bytes()
    assert local_ray.is_initialized()  # a Ray the caller started is left running


@pytest.mark.slow
def test_ray_with_saved_df_file(tmp_path, local_ray):
    rows = make_rows(600, seed=4)
    df = tmp_path / "df.json"
    cands, refs = [r["candidate"] for r in rows], [r["references"] for r in rows]
    score(cands[:200], refs[:200], ["cider_d"], options={"cider_d": {"save_df": str(df)}})
    ref = score(cands, refs, ["cider_d"], options={"cider_d": {"df": str(df)}})
    got = score_stream(((c, r) for c, r in zip(cands, refs)), ["cider_d"], engine="ray", chunk_size=150,
                       options={"cider_d": {"df": str(df)}})
    assert got.corpus == ref.corpus and got.signatures == ref.signatures
    assert got.per_caption["cider_d"].tolist() == ref.per_caption["cider_d"].tolist()
