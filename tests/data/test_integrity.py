"""Fault injection on benchmark data: ``bench`` checks the files against the packaged
checksums before a run, refuses a modified copy naming the file, and runs it only with
``--allow-modified-data``, which the signature then shows.

The shared data are copied (the needed folder only) into a temporary data root and damaged
there; the tests skip when the shared data are absent (``data_dir``).
"""
from __future__ import annotations

import json
import os
import shutil

import pytest
from typer.testing import CliRunner

from capeval.cli.main import app
from capeval.data import integrity
from capeval.errors import InputError, ResourceDamaged
from capeval.metaeval.runner import run_benchmark

EXPERT = "flickr8k/clipscore_format_EXPERT/flickr8k.json"


@pytest.fixture
def root(data_dir, tmp_path, monkeypatch):
    """A data root holding a private copy of the flickr8k folder, and an empty cache."""
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(integrity, "_memo", {})
    shutil.copytree(data_dir / "flickr8k", tmp_path / "data" / "flickr8k")
    return tmp_path / "data"


def _invert_ratings(path, n_images=300):
    """The probe's damage: the ratings of the first ``n_images`` images turned upside down."""
    data = json.loads(path.read_text(encoding="utf-8"))
    for image in list(data)[:n_images]:
        for j in data[image]["human_judgement"]:
            j["rating"] = 5 - j["rating"]
    path.write_text(json.dumps(data), encoding="utf-8")


def test_modified_data_are_refused_naming_the_file(root):
    _invert_ratings(root / EXPERT)
    with pytest.raises(ResourceDamaged, match="flickr8k.json") as e:
        run_benchmark("flickr8k-expert", ["bleu4"], root=root)
    assert "--allow-modified-data" in str(e.value)


def test_allow_modified_data_runs_and_says_so(root, tmp_path):
    clean = run_benchmark("flickr8k-expert", ["bleu4"], root=root, cache=None)
    assert "data:" not in str(clean.signature())
    _invert_ratings(root / EXPERT)
    res = run_benchmark("flickr8k-expert", ["bleu4"], root=root, allow_modified_data=True)
    assert "data:modified" in str(res.signature())
    assert res.experiment.results["bleu4"]["kendall_tau_c"] != clean.experiment.results["bleu4"]["kendall_tau_c"]


def test_cli_refuses_then_allows(root, tmp_path):
    _invert_ratings(root / EXPERT)
    args = ["bench", "flickr8k-expert", "-m", "bleu4", "--root", str(root), "--cache-dir", str(tmp_path / "c")]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    assert "flickr8k.json" in res.output and "Traceback" not in res.output
    out = tmp_path / "r.json"
    res = CliRunner().invoke(app, [*args, "--allow-modified-data", "--json", str(out), "-q"])
    assert res.exit_code == 0, res.output
    assert "data:modified" in out.read_text(encoding="utf-8")


def test_truncated_json_is_a_named_error(root):
    path = root / EXPERT
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(ResourceDamaged, match="flickr8k.json"):
        run_benchmark("flickr8k-expert", ["bleu4"], root=root)
    with pytest.raises(InputError, match="flickr8k.json is not valid JSON"):
        run_benchmark("flickr8k-expert", ["bleu4"], root=root, allow_modified_data=True)


def test_verification_is_remembered_until_the_file_changes(root, monkeypatch):
    calls = []
    real = integrity.sha256_file
    monkeypatch.setattr(integrity, "sha256_file", lambda p: calls.append(p) or real(p))
    assert integrity.check_benchmark_data("flickr8k-expert", root) == []
    first = len(calls)
    assert first > 0
    monkeypatch.setattr(integrity, "_memo", {})  # a new process: only the record on disk
    assert integrity.check_benchmark_data("flickr8k-expert", root) == []
    assert len(calls) == first  # nothing hashed again
    # same size, same mtime restored: the change time still gives it away
    path = root / EXPERT
    st = path.stat()
    data = bytearray(path.read_bytes())
    k = data.index(b'"rating": 1')
    data[k + len(b'"rating": ')] = ord("4")
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    monkeypatch.setattr(integrity, "_memo", {})
    bad = integrity.check_benchmark_data("flickr8k-expert", root, allow_modified=True)
    assert [m.path for m in bad] == [path]
    assert len(calls) == first + 1


def test_unregistered_tables_are_not_checked(tmp_path):
    assert integrity.check_benchmark_data("toy-corr", tmp_path) == []
