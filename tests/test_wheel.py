"""The package as a user gets it: the wheel built from this tree, installed with no extras into a
fresh virtual environment (no system site-packages, so nothing of this environment leaks in),
runs its own default command: `capeval score --input examples/captions.jsonl` scores the coco
set, METEOR included (its native backend reads pycocoevalcap's resources, a base dependency),
with the checkout's numbers. Without pycocoevalcap it stops naming the extra it lacks in one
line that pastes, in the checkout/wheel install form (never `pip install 'capeval[X]'`, which
sends pip to PyPI, where capeval is not).

About a minute: the build (the optional compiled cores included) ~10 s, the venv and its
dependencies (numpy, scipy, typer, rich, pycocoevalcap and pycocotools; from pip's cache or the
index) ~20 s, METEOR's one-time conversion of the paraphrase table into the venv's cache ~30 s."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import capeval
from capeval import __version__
from capeval.extras import install_command
from capeval.metrics.registry import METRIC_SETS

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "captions.jsonl"

pytestmark = pytest.mark.slow


def _run(args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=600, **kw)


@pytest.fixture(scope="module")
def plain_install(tmp_path_factory):
    """(the fresh venv's bin directory, an environment to run it in)."""
    tmp = tmp_path_factory.mktemp("wheel")
    # The build reads a copy: setuptools writes build/ and *.egg-info beside its input, and the
    # checkout is shared. Compiled modules built in place are left out (the wheel builds its own).
    tree = tmp / "tree"
    tree.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, tree / name)
    shutil.copytree(ROOT / "src", tree / "src",
                    ignore=shutil.ignore_patterns("*.egg-info", "__pycache__", "*.pyc", "*.so", "*.pyd"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    isolation = [] if importlib.util.find_spec("setuptools") is None else ["--no-build-isolation"]
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q", "-w", str(tmp / "dist"),
                  str(tree)], env=env)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (tmp / "dist").glob("capeval-*.whl")

    venv = tmp / "venv"
    made = _run([sys.executable, "-m", "venv", str(venv)], env=env)
    assert made.returncode == 0, made.stderr[-3000:]
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    installed = _run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)], env=env)
    assert installed.returncode == 0, installed.stderr[-3000:]
    env["CAPEVAL_CACHE"] = str(tmp / "cache")
    for var in [k for k in env if k.startswith("CAPEVAL_") and k != "CAPEVAL_CACHE"]:
        del env[var]  # a resource path set for the suite would not be there for a new user
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    env["COLUMNS"] = "200"
    return bin_dir, env, tmp


def test_the_wheel_is_what_runs(plain_install):
    bin_dir, env, tmp = plain_install
    where = _run([str(bin_dir / "python"), "-c", "import capeval, pycocoevalcap; import spacy"], env=env, cwd=tmp)
    assert "No module named 'spacy'" in where.stderr  # pycocoevalcap is a dependency; no extra leaked in
    where = _run([str(bin_dir / "python"), "-c", "import capeval; print(capeval.__file__)"], env=env, cwd=tmp)
    assert Path(where.stdout.strip()).is_relative_to(bin_dir.parent), where.stdout
    version = _run([str(bin_dir / "capeval"), "--version"], env=env, cwd=tmp)
    assert version.stdout == f"capeval {__version__}\n"


def test_default_score_runs_with_the_checkouts_numbers(plain_install):
    # The default metrics (the coco set, METEOR included) with no extra: exit 0, every corpus
    # score and per-caption value == this checkout's on this machine.
    bin_dir, env, tmp = plain_install
    res = _run([str(bin_dir / "capeval"), "score", "--input", str(EXAMPLE), "-o", str(tmp / "default.json"), "-q"],
               env=env, cwd=tmp)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads((tmp / "default.json").read_text(encoding="utf-8"))
    here = capeval.score(*_example(), metrics=list(METRIC_SETS["coco"]))
    assert set(out["corpus"]) == set(METRIC_SETS["coco"]) and "meteor" in out["corpus"]
    assert out["corpus"] == here.corpus
    assert out["signatures"]["meteor"] == here.signatures["meteor"]
    for name in METRIC_SETS["coco"]:
        assert out["per_caption"][name] == here.per_caption[name].tolist(), name


def test_plain_install_scores_bleu_rouge_and_cider(plain_install):
    bin_dir, env, tmp = plain_install
    res = _run([str(bin_dir / "capeval"), "score", "--input", str(EXAMPLE), "-m", "bleu4,rouge_l,cider_d",
                "-o", str(tmp / "out.json"), "-q"], env=env, cwd=tmp)
    assert res.returncode == 0, res.stderr[-3000:]
    corpus = json.loads((tmp / "out.json").read_text(encoding="utf-8"))["corpus"]
    here = capeval.score(*_example(), metrics=["bleu4", "rouge_l", "cider_d"]).corpus
    assert corpus == here  # the wheel's numbers are the checkout's


def _example():
    rows = [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r["candidate"] for r in rows], [r["references"] for r in rows]


def test_without_pycocoevalcap_one_pasteable_line_names_the_extra(plain_install, tmp_path):
    # pycocoevalcap uninstalled from a copy of the plain install (its python is a link to the
    # base interpreter; pyvenv.cfg beside it makes the copy its own environment), as a user who
    # removed it or installed with --no-deps; the 80 columns of a narrow terminal.
    bin_dir, env, tmp = plain_install
    venv = tmp_path / "venv"
    shutil.copytree(bin_dir.parent, venv, symlinks=True)
    py = venv / bin_dir.name / "python"
    gone = _run([str(py), "-m", "pip", "uninstall", "-q", "-y", "pycocoevalcap"], env=env)
    assert gone.returncode == 0, gone.stderr[-3000:]
    narrow = {**env, "COLUMNS": "80"}
    res = _run([str(py), "-m", "capeval.cli.main", "score", "--input", str(EXAMPLE), "-q"], env=narrow, cwd=tmp)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-3000:]
    lines = res.stderr.splitlines()
    hint = [line for line in lines if "meteor needs [coco] (pycocoevalcap missing)" in line]
    assert len(hint) == 1 and install_command(["coco"]) in hint[0], res.stderr  # one line, command whole
    assert "jar" not in hint[0]
    assert "pip install 'capeval[" not in res.stderr and "pip install capeval[" not in res.stderr
    listing = _run([str(py), "-m", "capeval.cli.main", "metrics"], env=narrow, cwd=tmp)
    assert listing.returncode == 0, listing.stderr[-3000:]
    meteor = next(line for line in listing.stdout.splitlines() if line.startswith("meteor "))
    assert meteor.split()[-1] == "coco*"
    assert "coco" in listing.stdout.split("* not installed")[1]
