import json

import pytest
from typer.testing import CliRunner

from capeval.cli.main import app

runner = CliRunner()


@pytest.mark.data
def test_bench_metric_option_reaches_signature_and_cache(tmp_path, data_dir):
    base = ["bench", "pascal50s", "-m", "cider_d", "-q", "--cache-dir", str(tmp_path / "cache"), "--root", str(data_dir)]
    out1, out2 = tmp_path / "a.json", tmp_path / "b.json"
    r1 = runner.invoke(app, base + ["--json", str(out1)])
    r2 = runner.invoke(app, base + ["--json", str(out2), "-O", "cider_d.sigma=3.0"])
    assert r1.exit_code == 0 and r2.exit_code == 0, r1.output + r2.output
    a, b = json.loads(out1.read_text()), json.loads(out2.read_text())
    assert "sigma:6.0" in a["_signatures"]["metrics"]["cider_d"]
    assert "sigma:3.0" in b["_signatures"]["metrics"]["cider_d"]
    assert a["cider_d"] != b["cider_d"]  # a different option is never served from the other's cache


def test_bench_bad_option_is_a_clear_error(tmp_path):
    r = runner.invoke(app, ["bench", "pascal50s", "-m", "cider_d", "-O", "oops", "-q"])
    assert r.exit_code == 2 and "FAMILY.KEY=VALUE" in r.output
