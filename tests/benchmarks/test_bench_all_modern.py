"""The THumB / Nebula / Polaris section of docs/REPRODUCTION.md (benchmarks/bench_all.py)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench_all():
    spec = importlib.util.spec_from_file_location("bench_all", REPO / "benchmarks" / "bench_all.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def targets():
    return json.loads((REPO / "benchmarks" / "published_targets.json").read_text())


def test_every_published_value_has_a_status_and_a_source(targets):
    for name in ("nebula", "polaris"):
        t = targets[name]
        for stat, by_metric in t["statistics"].items():
            for metric, (value, status) in by_metric.items():
                assert status in ("checked", "recalled") and 0 < value < 100
                assert t["value_sources"][stat][metric]
    assert targets["polaris"]["statistics"]["kendall_tau_c"]["refpac_s"] == [56.0, "recalled"]
    assert targets["nebula"]["statistics"]["kendall_tau_c"]["polos"] == [55.0, "recalled"]


def test_section_without_data_says_not_run(bench_all, targets):
    text = bench_all.modern_section({}, targets)
    assert text.count("Not run: the files were not present") == 4
    assert "| cider_d | τc | — | 52.1 | not run | recalled |" in text


def test_section_fills_in_capeval_values(bench_all, targets):
    entry = {"json": {"cider_d": {"kendall_tau_c": 0.5234}}, "command": "capeval bench polaris -m cider_d",
             "markdown": "(tables)\n"}
    text = bench_all.modern_section({"polaris": entry}, targets)
    assert "| cider_d | τc | 52.3 | 52.1 | +0.2 | recalled |" in text
    assert "Command: `capeval bench polaris -m cider_d`" in text
    assert (REPO / "docs" / "REPRODUCTION.md").read_text().count(bench_all.modern_section({}, targets)) == 1
