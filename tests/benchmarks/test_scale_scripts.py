"""The issue-34 benchmark scripts run on tiny inputs and write what the lead reads: which side
is measured and which extrapolated, byte identity, the ratios (their numbers are not checked
here: they are timings)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args], capture_output=True,
                          text=True, timeout=600, cwd=ROOT)


def test_stream_vs_memory_writes_identity_and_ratios(tmp_path):
    out = tmp_path / "svm.json"
    done = _run("stream_vs_memory.py", "--rows", "30", "--sizes", "12,30", "--chunk-size", "7",
                "--metrics", "bleu4,rouge_l", "--workdir", str(tmp_path / "work"), "--out", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(out.read_text())
    assert got["all_byte_identical"] is True and got["metrics"] == ["bleu4", "rouge_l"]
    assert set(got["sizes"]) == {"12", "30"}
    for entry in got["sizes"].values():
        assert set(entry["cpu_vs_in_memory"]) == {"streamed --jobs 1"}
        runs = entry["runs"]
        assert runs["in-memory"]["rows_sha256"] == runs["streamed --jobs 1"]["rows_sha256"]
    assert got["peak_rss_largest_over_smallest"]["sizes"] == [12, 30]
    assert set(got["signatures"]["corpus"]) == {"bleu4", "rouge_l"}


@pytest.mark.needs("data")
def test_bootstrap_statistics_labels_what_it_extrapolates(tmp_path):
    out = tmp_path / "bs.json"
    done = _run("bootstrap_statistics.py", "--rows", "12", "--resamples", "6", "--rescore-resamples", "2",
                "--metrics", "bleu4,rouge_l", "--out", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(out.read_text())
    assert got["resamples"] == 6 and set(got["metrics"]) == {"bleu4", "rouge_l"}
    for m in got["metrics"].values():
        assert m["rescored_resamples"] == 2 and m["rescoring"] == "extrapolated_linear from 2 re-scored resamples"
        assert m["rescored_values_equal_statistics_values"] is True
    done = _run("bootstrap_statistics.py", "--rows", "12", "--resamples", "3", "--metrics", "ter", "--out", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    ter = json.loads(out.read_text())["metrics"]["ter"]
    assert ter["rescoring"] == "measured" and ter["rescored_resamples"] == 3
    assert ter["rescoring_cpu_s"] == ter["rescoring_cpu_s_measured"]
