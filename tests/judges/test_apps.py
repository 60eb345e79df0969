"""Judges in the other applications, against the loopback server: ``capeval bench --file`` (a
ratings file, FLEUR with images), ``capeval stress --input`` and the torchmetrics wrapper ``CLAIR``
(FLEUR has none: ``update`` carries no images). Each equals ``capeval.score`` on the same rows,
and unanswered rows are counted as in ``capeval score``."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

import capeval
from capeval.cli.main import app

ROWS = [("a dog runs on the grass", ["a dog is running on grass", "the dog runs in a field"], 4.5),
        ("a cat sleeps on a car", ["a dog is running on grass"], 1.0),
        ("two cats sleep on a sofa", ["two cats are sleeping", "cats asleep on a couch"], 5.0),
        ("a man", ["a man rides a bike down the street"], 2.0),
        ("a bus on a city street", ["a red bus driving down the street"], 4.0)]


def _opts(server, tmp_path) -> list[str]:
    return ["-O", f"clair.url={server.url}", "-O", "clair.model=tiny-judge", "-O", "clair.max_tokens=24",
            "-O", f"clair.cache={tmp_path / 'judge-cache'}"]


def _direct(server, tmp_path, cands, refs):
    return capeval.score(cands, refs, ["clair"], options={"clair": {
        "url": server.url, "model": "tiny-judge", "max_tokens": 24, "cache": str(tmp_path / "judge-cache")}})


def _floats(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _floats(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _floats(v)
    elif isinstance(obj, float):
        yield obj


def test_bench_file_correlates_the_judges_scores(server, tmp_path, images):
    # FLEUR's smoothed scores vary with the row on the tiny random model; its CLAIR answer is one
    # number for every prompt, whose correlation the bench rightly calls undefined
    from pathlib import Path

    src, paths = _fleur_ratings(tmp_path, images)
    out = tmp_path / "bench.json"
    opts = ["-O", f"fleur.url={server.url}", "-O", "fleur.model=tiny-judge", "-O", f"fleur.cache={tmp_path / 'jc'}"]
    res = CliRunner().invoke(app, ["bench", "--file", str(src), "--images", str(Path(images[0]).parent), "-m", "fleur",
                                   *opts, "--no-cache", "--json", str(out), "-q"])
    assert res.exit_code == 0, res.output
    assert server.requests == len(ROWS)
    text = out.read_text()
    assert "backend:http" in text and "judge:tiny-judge" in text and "unans:0" in text
    # the bench's correlation is that of capeval.score's per-caption scores with the ratings
    direct = capeval.score([c for c, _, _ in ROWS], [r for _, r, _ in ROWS], ["fleur"], images=paths, options={
        "fleur": {"url": server.url, "model": "tiny-judge", "cache": str(tmp_path / "jc")}})
    assert server.requests == len(ROWS)  # every answer from the judge cache
    from capeval.stats.correlation import kendall_tau_c

    tau = kendall_tau_c(direct.per_caption["fleur"], np.array([h for _, _, h in ROWS])).value
    assert any(math.isclose(v, tau, rel_tol=0, abs_tol=1e-12) for v in _floats(json.loads(text))), (tau, text)


def _fleur_ratings(tmp_path, images):
    from pathlib import Path

    src = tmp_path / "ratings.jsonl"
    pics = [Path(images[k % len(images)]).name for k in range(len(ROWS))]
    src.write_text("".join(json.dumps({"id": f"r{k}", "candidate": c, "references": r, "human": h,
                                       "image": pics[k]}) + "\n" for k, (c, r, h) in enumerate(ROWS)))
    return src, [str(Path(images[0]).parent / p) for p in pics]


def test_bench_skips_unanswered_rows_and_its_score_cache_keeps_them_until_no_cache(server, tmp_path, images):
    from pathlib import Path

    src, _ = _fleur_ratings(tmp_path, images)
    out = tmp_path / "bench.json"
    base = ["bench", "--file", str(src), "--images", str(Path(images[0]).parent), "-m", "fleur",
            "-O", f"fleur.url={server.url}", "-O", "fleur.model=tiny-judge", "-O", f"fleur.cache={tmp_path / 'jc'}",
            "-O", "fleur.retries=0", "-O", "fleur.concurrency=1", "--cache-dir", str(tmp_path / "bench-cache"),
            "-q", "--json", str(out), "--overwrite"]
    server.faults.append("500")
    res = CliRunner().invoke(app, base)
    flat = " ".join(res.output.split())
    assert res.exit_code == 2 and "Traceback" not in res.output and "1 of 5 rows unanswered" in flat, flat
    allowed = [*base, "-O", "fleur.allow_unanswered=1"]
    server.faults.append("500")
    res = CliRunner().invoke(app, allowed)
    assert res.exit_code == 0, res.output
    assert server.requests == 6  # row 0 twice; rows 1-4 once (then from the judge cache)
    sig = json.loads(out.read_text())["_signatures"]["metrics"]["fleur"]
    assert "unans:1" in sig and "defined:4/5" in sig  # the NaN row is left out of the correlation
    res = CliRunner().invoke(app, allowed)  # the bench's score cache holds the result, NaN row and all
    assert res.exit_code == 0 and server.requests == 6
    assert json.loads(out.read_text())["_signatures"]["metrics"]["fleur"] == sig
    res = CliRunner().invoke(app, [*allowed, "--no-cache"])  # scored again: only row 0 is asked
    assert res.exit_code == 0 and server.requests == 7
    assert "unans:0" in json.loads(out.read_text())["_signatures"]["metrics"]["fleur"]


def test_stress_runs_the_judge_on_its_units(server, tmp_path):
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps({"id": f"r{k}", "candidate": c, "references": r}) + "\n"
                           for k, (c, r, _) in enumerate(ROWS)))
    out, units = tmp_path / "stress.json", tmp_path / "units.jsonl"
    res = CliRunner().invoke(app, ["stress", "--input", str(src), "-m", "clair", *_opts(server, tmp_path),
                                   "--bootstrap", "10", "--json", str(out), "--export", str(units), "-q"])
    assert res.exit_code == 0, res.output
    assert server.requests > len(ROWS)  # the controls and their perturbations
    assert "backend:http" in out.read_text()
    sent = server.requests
    exported = [json.loads(line) for line in units.read_text().splitlines()]
    direct = _direct(server, tmp_path, [u["candidate"] for u in exported], [u["references"] for u in exported])
    assert server.requests == sent  # the same prompts: every answer from the judge cache
    assert direct.details["clair"]["unanswered"] == 0


def test_torchmetrics_clair_equals_score_over_batches(server, tmp_path):
    pytest.importorskip("torchmetrics")
    from capeval.integrations.torchmetrics import CLAIR

    judge = {"url": server.url, "model": "tiny-judge", "max_tokens": 24, "cache": str(tmp_path / "judge-cache"),
             "allow_unanswered": 1, "retries": 0, "concurrency": 1}
    metric = CLAIR(judge=judge)
    assert server.requests == 0  # building the wrapper asks nothing
    metric.update([c for c, _, _ in ROWS[:3]], [r for _, r, _ in ROWS[:3]])
    server.faults.append("500")  # row 3, the second batch's first, is left unanswered
    metric.update([c for c, _, _ in ROWS[3:]], [r for _, r, _ in ROWS[3:]])
    value = metric.compute()
    server.faults.append("500")  # and again for the in-memory run (the others come from the cache)
    whole = capeval.score([c for c, _, _ in ROWS], [r for _, r, _ in ROWS], ["clair"], options={"clair": judge})
    assert float(value) == whole.corpus["clair"]  # the mean of the same four cached answers
    per = metric.result.per_caption["clair"]
    assert np.isnan(per[3]) and np.array_equal(per, whole.per_caption["clair"], equal_nan=True)
    assert "unans:1|" in metric.signature and "allow:1|" in metric.signature
    assert metric.signature == whole.signatures["clair"]


def test_torchmetrics_clair_fails_on_too_many_unanswered_rows(server, tmp_path):
    pytest.importorskip("torchmetrics")
    from capeval.integrations.torchmetrics import CLAIR
    from capeval.judges.metric import TooManyUnanswered

    metric = CLAIR(judge={"url": server.url, "model": "tiny-judge", "max_tokens": 24, "cache": False,
                          "retries": 0})
    server.faults.append("500")
    metric.update(["a dog"], [["a dog runs"]])  # a batch's failures are counted at compute()
    metric.update(["a cat"], [["a cat sleeps"]])
    with pytest.raises(TooManyUnanswered, match="1 of 2 rows unanswered"):
        metric.compute()
