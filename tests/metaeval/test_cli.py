import json

from typer.testing import CliRunner

from capeval.cli.main import app


def test_bench_cli_writes_all_formats(toy_data, tmp_path):
    runner = CliRunner()
    out = tmp_path / "r.json"
    args = ["bench", "toy-corr,toy-pairs", "--metrics", "bleu4,cider_d", "--tokenizer", "none",
            "--cache-dir", str(tmp_path / "cache"), "--json", str(out), "--markdown", str(tmp_path / "r.md"),
            "--latex", str(tmp_path / "r.tex"), "--tie-policy", "random", "--seed", "7"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert set(data) == {"toy-corr", "toy-pairs"}
    assert set(data["toy-pairs"]["cider_d"]) == {"HC", "HI", "HM", "MM", "mean"}
    assert "ties:random|tie_seed:7" in data["toy-pairs"]["_signatures"]["benchmark"]
    assert "toy-corr|rows:60" in (tmp_path / "r.md").read_text()
    assert (tmp_path / "r.tex").read_text().startswith("\\begin{table}")
    assert "benchmark: toy-corr|rows:60" in res.output  # console tables carry the signature
    warm = runner.invoke(app, args[:-4] + ["-q", "--overwrite"])  # the same outputs again
    assert warm.exit_code == 0 and "2/2 metrics from cache" in warm.output


def test_bench_cli_errors(toy_data, tmp_path):
    res = CliRunner().invoke(app, ["bench", "toy-pairs", "--tie-policy", "coin", "--tokenizer", "none",
                                   "--cache-dir", str(tmp_path)])
    assert res.exit_code == 2 and "tie policy" in res.output
    res = CliRunner().invoke(app, ["bench", "nope", "--no-cache"])
    assert res.exit_code == 2 and "unknown benchmark" in res.output
