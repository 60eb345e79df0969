"""CONTRIBUTING.md's example family, installed as a plug-in from the document alone: its module is
the Python block above ``# try it``, its entry point the TOML block. Then ``capeval score --jobs 2``
writes the in-memory run's rows and signatures, the corpus bootstrap from statistics equals
scoring each resample afresh, and two gloo processes of a torchmetrics wrapper of the output
give ``capeval.score``'s numbers on all the data (the wrappers' statistics path under DDP)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from tests.stream._rows import make_rows, write_jsonl

DOC = Path(__file__).resolve().parents[2] / "CONTRIBUTING.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```$", DOC.read_text(encoding="utf-8"), re.S | re.M)


def _family_source() -> str:
    [block] = [b for b in _blocks("python") if "# try it" in b]
    return block.split("# try it", 1)[0]


def _entry_points() -> dict[str, str]:
    [block] = [b for b in _blocks("toml") if "capeval.metrics" in b]
    return tomllib.loads(block)["project"]["entry-points"]["capeval.metrics"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A site folder holding the plug-in distribution CONTRIBUTING.md describes."""
    root = tmp_path_factory.mktemp("contributing")
    site = root / "site"
    entry = _entry_points()
    assert entry == {"word_ratio": "my_package.word_ratio:WordRatio"}
    module, _ = entry["word_ratio"].split(":")
    path = site.joinpath(*module.split(".")).with_suffix(".py")
    path.parent.mkdir(parents=True)
    (path.parent / "__init__.py").write_text("", encoding="utf-8")
    path.write_text(_family_source(), encoding="utf-8")
    info = site / "my_package-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-package\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(
        "[capeval.metrics]\n" + "".join(f"{k} = {v}\n" for k, v in entry.items()), encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")
    rows = make_rows(23, seed=8)
    write_jsonl(root / "rows.jsonl", rows)
    return {"site": site, "root": root, "rows": rows}


def _run(site, args, cwd):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "COLUMNS": "300"}
    res = subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    return res


def test_the_plugin_scored_with_two_jobs_writes_the_in_memory_rows(site):
    root = site["root"]
    outs = {}
    for label, extra in (("mem", []), ("jobs", ["--jobs", "2", "--chunk-size", "4"])):
        out = root / f"{label}.jsonl"
        _run(site["site"], ["-m", "capeval.cli.main", "score", "-i", str(root / "rows.jsonl"),
                            "-m", "bleu4,word_ratio", "-o", str(out), "-q", "--overwrite", *extra], root)
        outs[label] = out
    assert outs["mem"].read_bytes() == outs["jobs"].read_bytes()
    rows = [json.loads(line) for line in outs["jobs"].read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len(site["rows"]) and all(r["word_ratio"] > 0 for r in rows)
    sigs = [p.read_text(encoding="utf-8") for p in (root / "mem.signatures.json", root / "jobs.signatures.json")]
    assert sigs[0] == sigs[1] and "rule:ratio-of-sums" in sigs[0]


BOOTSTRAP = textwrap.dedent("""
    import json, sys
    import numpy as np
    import capeval
    from capeval.metrics.registry import get_family
    from capeval.stats import corpus_distribution
    from capeval.stats.bootstrap import resample_indices
    from capeval.text import tokenize_corpus

    rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
    cands = [r["candidate"] for r in rows]
    refs = [r["references"] for r in rows]
    with get_family("word_ratio")() as metric:
        stats = metric.statistics(*tokenize_corpus(cands, refs, "ptb"))
    dist = corpus_distribution(stats, "word_ratio", n_resamples=12, seed=3)
    idx = np.concatenate(list(resample_indices(len(rows), 12, 3)))
    again = [capeval.score([cands[i] for i in row], [refs[i] for i in row], ["word_ratio"]).corpus["word_ratio"]
             for row in idx]
    print(json.dumps({"dist": dist.tolist(), "again": again, "whole": capeval.score(cands, refs, ["word_ratio"]).corpus}))
""")


def test_its_corpus_bootstrap_equals_scoring_each_resample(site):
    out = json.loads(_run(site["site"], ["-c", BOOTSTRAP, str(site["root"] / "rows.jsonl")], site["root"]).stdout)
    # A ratio of integer sums: the same float whichever way the rows are summed.
    assert out["dist"] == out["again"] and len(set(out["dist"])) > 1
    assert min(out["dist"]) < out["whole"]["word_ratio"] < max(out["dist"])


RANK = textwrap.dedent("""
    import json
    from pathlib import Path

    from capeval.integrations.torchmetrics import _CaptionMetric


    class WordRatioMetric(_CaptionMetric):
        output = "word_ratio"


    def run_rank(rank, world, tmp, shards):
        import torch.distributed as dist

        dist.init_process_group("gloo", init_method=f"file://{tmp}/rendezvous", rank=rank, world_size=world)
        try:
            metric = WordRatioMetric()
            cands, refs = shards[rank]
            for i in range(0, len(cands), 3):
                metric.update(cands[i:i + 3], refs[i:i + 3])
            value = metric.compute()
            Path(tmp, f"rank{rank}.json").write_text(json.dumps({
                "value": float(value).hex(), "signature": metric.signature, "by_statistics": metric.by_statistics,
                "per_caption": [float(x).hex() for x in metric.result.per_caption["word_ratio"]]}))
        finally:
            dist.destroy_process_group()
""")

DDP = textwrap.dedent("""
    import json, sys
    import torch.multiprocessing as mp
    from ddp_rank import run_rank

    rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
    cands = [r["candidate"] for r in rows]
    refs = [r["references"] for r in rows]
    shards = [(cands[:14], refs[:14]), (cands[14:], refs[14:])]  # uneven
    mp.spawn(run_rank, args=(2, sys.argv[2], shards), nprocs=2, join=True)
""")


@pytest.mark.slow
def test_two_ddp_processes_of_a_wrapper_equal_capeval_score(site, tmp_path):
    pytest.importorskip("torchmetrics")
    import capeval

    (site["site"] / "ddp_rank.py").write_text(RANK, encoding="utf-8")
    _run(site["site"], ["-c", DDP, str(site["root"] / "rows.jsonl"), str(tmp_path)], tmp_path)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    sys.path.insert(0, str(site["site"]))
    try:
        from my_package.word_ratio import WordRatio

        rows = site["rows"]
        expected = capeval.score([r["candidate"] for r in rows], [r["references"] for r in rows], [WordRatio])
    finally:
        sys.path.remove(str(site["site"]))
        for name in [m for m in sys.modules if m.startswith("my_package")]:
            del sys.modules[name]
    for got in ranks:
        assert got["by_statistics"] is True  # ranks exchanged statistics, not captions
        assert float.fromhex(got["value"]) == expected.corpus["word_ratio"]
        assert [float.fromhex(x) for x in got["per_caption"]] == expected.per_caption["word_ratio"].tolist()
        assert got["signature"] == expected.signatures["word_ratio"]
