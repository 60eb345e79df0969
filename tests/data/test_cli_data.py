"""``capeval data list | verify | download`` through the typer app."""
from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from capeval.cli.main import app
from capeval.data.checksums import build_manifest, packaged_manifest, parse_sums

runner = CliRunner()
HELD_OUT = {"thumb", "nebula", "polaris"}


@pytest.mark.data
def test_packaged_manifest_matches_team_sha256sums(data_dir):
    # The evaluation sets (THumB, Nebula, Polaris) are held out of the team data; their
    # checksums come from their public releases (tests/data/test_thumb.py etc.).
    folders = sorted(set(packaged_manifest()) - HELD_OUT)
    team = {f: e["files"] for f, e in build_manifest(data_dir, folders)["folders"].items()}
    assert team == {f: v for f, v in packaged_manifest().items() if f not in HELD_OUT}


@pytest.mark.data
def test_data_list_json(data_dir):
    res = runner.invoke(app, ["data", "list", "--root", str(data_dir), "--json"])
    assert res.exit_code == 0, res.output
    rows = {r["name"]: r for r in json.loads(res.output)}
    assert rows["flickr8k-expert"]["counts"]["rows"] == 16992
    assert rows["flickr8k-cf"]["counts"]["rows"] == 47830
    assert rows["composite"]["counts"]["rows"] == 11985
    assert rows["pascal50s"]["counts"]["rows"] == 4000
    assert rows["tanti-coco"]["counts"] == {"rows": 60000, "images": 5000, "systems": 12}
    assert all(r["present"] and r["checksum"] == "ok" for n, r in rows.items() if n not in HELD_OUT)
    assert all(not rows[n]["present"] and "missing" in rows[n]["checksum"] for n in HELD_OUT)
    sig = rows["flickr8k-cf"]["signature"]
    assert sig.startswith("flickr8k-cf|") and "refs:image-minus-cf-candidates" in sig and "|version:" in sig


@pytest.mark.data
def test_data_verify_detects_tampering(data_dir, tmp_path):
    root = tmp_path / "d"
    shutil.copytree(data_dir / "foil_sample_only", root / "foil_sample_only")
    ok = runner.invoke(app, ["data", "verify", "foil-sample", "--root", str(root)])
    assert ok.exit_code == 0 and "foil_sample_only: ok" in ok.output
    with open(root / "foil_sample_only/annotation.txt", "a") as fh:
        fh.write("x")
    (root / "foil_sample_only/sample_foil_train2017.json").unlink()
    bad = runner.invoke(app, ["data", "verify", "foil-sample", "--root", str(root)])
    assert bad.exit_code == 1
    assert "MISMATCH foil_sample_only/annotation.txt" in bad.output
    assert "missing  foil_sample_only/sample_foil_train2017.json" in bad.output


def test_list_without_data_reports_absent(tmp_path):
    res = runner.invoke(app, ["data", "list", "--root", str(tmp_path), "--json", "--no-verify"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    assert rows and not any(r["present"] for r in rows)
    assert all("missing" in r["checksum"] for r in rows)


def test_cli_errors_are_one_line(tmp_path):
    res = runner.invoke(app, ["data", "verify", "nope", "--root", str(tmp_path)])
    assert res.exit_code == 2 and "error: unknown dataset 'nope'" in res.output
    res = runner.invoke(app, ["data", "download", "foil-sample", "--to", str(tmp_path), "--base-url", "ftp://x"])
    assert res.exit_code == 2 and "scheme" in res.output


def test_parse_sums_refuses_unsafe_paths():
    from capeval.errors import InputError

    assert parse_sums("a" * 64 + "  ./x/y.txt\n", "S") == {"x/y.txt": "a" * 64}
    for bad in ("../x", "/etc/passwd", "x/../../y"):
        with pytest.raises(InputError, match="unsafe"):
            parse_sums("a" * 64 + "  " + bad, "S")


def test_list_with_no_data_root_lists_every_benchmark_missing(monkeypatch):
    """A newcomer without ../shared/data: every known benchmark, status missing, and the command
    that fetches it; exit 0 instead of "data root not found"."""
    from capeval.data.registry import specs

    monkeypatch.setenv("CAPEVAL_DATA", "/nonexistent/capeval-data")
    res = runner.invoke(app, ["data", "list", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    assert [r["name"] for r in rows] == [s.name for s in specs()]
    assert all(not r["present"] and r["download"] == f"capeval data download {r['name']}" for r in rows)
    res = runner.invoke(app, ["data", "list"], env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    flat = res.output.replace("\n", "")
    assert "missing" in flat and "capeval data download flickr8k-expert" in flat
    assert "no data root" in flat and "CAPEVAL_DATA" in flat


def test_verify_absent_is_not_damage_unless_required(tmp_path, monkeypatch):
    from .modern_fixtures import pinned_root

    root = pinned_root(tmp_path, monkeypatch, "nebula", "thumb")
    res = runner.invoke(app, ["data", "verify", "--root", str(root)])
    assert res.exit_code == 0, res.output
    assert "nebula: ok" in res.output and "polaris: absent (none of its" in res.output
    assert "not required, so not an error" in res.output
    res = runner.invoke(app, ["data", "verify", "--root", str(root), "--require", "polaris", "--require", "nebula"])
    assert res.exit_code == 1 and "polaris: absent" in res.output and "required (named or --require)" in res.output
    # a benchmark named as NAME must be present too: exit 0 would read as "verified"
    res = runner.invoke(app, ["data", "verify", "polaris", "--root", str(root)])
    assert res.exit_code == 1 and "polaris: absent" in res.output
    # a benchmark named by --require outside the checked NAME is still checked
    res = runner.invoke(app, ["data", "verify", "nebula", "--root", str(root), "--require", "polaris"])
    assert res.exit_code == 1 and "polaris: absent" in res.output
    res = runner.invoke(app, ["data", "verify", "--root", str(root), "--require", "nope"])
    assert res.exit_code == 2 and "unknown dataset 'nope'" in res.output
    # an interrupted copy (some files of a folder) and a modified file are damage
    (root / "thumb/mscoco/mscoco_references.json").unlink()
    res = runner.invoke(app, ["data", "verify", "thumb", "--root", str(root)])
    assert res.exit_code == 1 and "missing  thumb/mscoco/mscoco_references.json" in res.output
    with open(root / "nebula/nebula_test.json", "a") as fh:
        fh.write(" ")
    res = runner.invoke(app, ["data", "verify", "nebula", "--root", str(root)])
    assert res.exit_code == 1 and "MISMATCH nebula/nebula_test.json" in res.output


def test_no_data_root_names_the_unset_or_dangling_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_DATA", "/nonexistent/capeval-data")
    res = runner.invoke(app, ["data", "export", "flickr8k-cf", "-o", str(tmp_path / "u.jsonl")])
    assert res.exit_code == 2
    flat = " ".join(res.output.split())
    assert "CAPEVAL_DATA=/nonexistent/capeval-data points to nothing, not a directory" in flat
    # the mirror is optional: bracketed as usage lines write options
    assert "capeval data download NAME --to DIR [--base-url URL]" in flat
    assert "--to DIR --base-url URL" not in flat
    res = runner.invoke(app, ["data", "list"], env={"COLUMNS": "300"})
    assert "CAPEVAL_DATA=/nonexistent/capeval-data points to nothing" in res.output.replace("\n", "")
    monkeypatch.delenv("CAPEVAL_DATA")
    # as on a fresh clone: no ../shared/data next to the checkout
    monkeypatch.setattr("capeval.data._common.data_root", lambda: None)
    res = runner.invoke(app, ["data", "export", "flickr8k-cf", "-o", str(tmp_path / "u.jsonl")])
    assert res.exit_code == 2 and "CAPEVAL_DATA is not set and there is no ../shared/data" in res.output


def test_list_reads_a_published_file_with_line_breaks(tmp_path, monkeypatch):
    """A reference ending in a line break (as in the published Nebula file) is no load error."""
    from .modern_fixtures import pin_fixtures, pinned_root

    root = pinned_root(tmp_path, monkeypatch, "nebula")
    items = json.loads((root / "nebula/nebula_test.json").read_text())
    items[1]["refs"][0] += " in the image.\n"
    (root / "nebula/nebula_test.json").write_text(json.dumps(items))
    pin_fixtures(monkeypatch, root)
    res = runner.invoke(app, ["data", "list", "--root", str(root), "--json"])
    assert res.exit_code == 0, res.output
    row = {r["name"]: r for r in json.loads(res.output)}["nebula"]
    assert row["present"] and row["checksum"] == "ok" and row["counts"]["rows"] == len(items)
    assert "|breaks:space:1|" in row["signature"]
