"""Every family streams through its statistics: METEOR, TER, SPICE, WMD, WEmbSim, a
``UserMetric`` subclass and a callable registered at run time, in worker processes, give the
in-memory numbers, signatures and file bytes."""
from __future__ import annotations

import pytest

import capeval
from capeval import score_stream
from capeval.inputs import write_result
from capeval.metrics.registry import get_family
from capeval.metrics.user import UserMetric, from_callable

from tests._needs import family_needs

from ._rows import assert_same_result as _same, make_rows, write_jsonl


class WordCount(UserMetric):
    """Importable by name: workers unpickle it by reference."""

    name, version = "stream_words", "1"

    def score(self, candidates, references, images):
        return [len(c.split()) for c in candidates]


def _ref_share(candidates, references, images):
    """Wrapped by from_callable at run time: workers get the class by value (cloudpickle)."""
    return [sum(w in {x for r in refs for x in r.split()} for w in c.split()) / max(1, len(c.split()))
            for c, refs in zip(candidates, references)]


def _in_memory(rows, names, **kw):
    return capeval.score([r["candidate"] for r in rows], [r["references"] for r in rows], names,
                         ids=[r["id"] for r in rows], **kw)


@pytest.mark.parametrize("jobs", [1, 2])
def test_meteor_ter_and_user_metrics_stream_in_workers(tmp_path, jobs):
    rows = make_rows(160, seed=34)
    names = ["bleu4", "meteor", "ter", "rouge_l", "cider_d", capeval.metrics.user.as_metric_name(WordCount),
             capeval.metrics.user.as_metric_name(from_callable(_ref_share, name="stream_ref_share"))]
    options = {"meteor": {"backend": "native"}}
    mem = _in_memory(rows, names, options=options)
    p = tmp_path / "in.jsonl"
    write_jsonl(p, rows)
    out = tmp_path / "o.jsonl"
    got = score_stream(p, names, chunk_size=37, jobs=jobs, options=options, output=out, keep_per_caption=True)
    _same(mem, got, names)
    write_result(mem, tmp_path / "mem.jsonl", [r["id"] for r in rows])
    assert out.read_bytes() == (tmp_path / "mem.jsonl").read_bytes()
    mem_sig = (tmp_path / "mem.signatures.json").read_bytes()
    assert out.with_name("o.signatures.json").read_bytes() == mem_sig


@pytest.mark.parametrize("names", [
    pytest.param(["wmd", "wembsim"], marks=pytest.mark.needs(*family_needs(get_family("wmd")))),
    pytest.param(["spice", "spice_object"], marks=pytest.mark.needs(*family_needs(get_family("spice")))),
    pytest.param(["spider", "cider_d"], marks=pytest.mark.needs(*family_needs(get_family("spider"))))])
def test_vector_and_scene_graph_families_stream(tmp_path, names):
    rows = make_rows(24 if any(n.startswith("sp") for n in names) else 90, seed=5)
    mem = _in_memory(rows, names)
    p = tmp_path / "in.jsonl"
    write_jsonl(p, rows)
    _same(mem, score_stream(p, names, chunk_size=7, keep_per_caption=True), names)


def test_score_stream_takes_user_metric_classes_and_callables(tmp_path):
    rows = make_rows(30, seed=8)
    p = tmp_path / "in.jsonl"
    write_jsonl(p, rows)
    ref_share = from_callable(_ref_share, name="stream_ref_share2")
    got = score_stream(p, [WordCount, ref_share, "bleu4"], chunk_size=7, jobs=2)
    mem = _in_memory(rows, [WordCount, ref_share, "bleu4"])
    assert list(got.corpus) == ["stream_words", "stream_ref_share2", "bleu4"]
    assert got.corpus == mem.corpus and got.signatures == mem.signatures
