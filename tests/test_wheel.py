"""The package as a user gets it: the wheel built from this tree, installed with no extras into a
fresh virtual environment (no system site-packages, so nothing of this environment leaks in),
runs its own default command. `capeval score --input examples/captions.jsonl` either scores or
stops naming the extra it lacks with the checkout/wheel install form (never `pip install
'capeval[X]'`, which sends pip to PyPI, where capeval is not); BLEU, ROUGE-L and CIDEr-D score
with no extra at all.

About 30 s: the build (the optional compiled cores included) ~10 s, the venv and its four
dependencies (numpy, scipy, typer, rich; from pip's cache or the index) ~15 s."""
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
    where = _run([str(bin_dir / "python"), "-c", "import capeval, pycocoevalcap"], env=env, cwd=tmp)
    assert "No module named 'pycocoevalcap'" in where.stderr  # no extra leaked in
    where = _run([str(bin_dir / "python"), "-c", "import capeval; print(capeval.__file__)"], env=env, cwd=tmp)
    assert Path(where.stdout.strip()).is_relative_to(bin_dir.parent), where.stdout
    version = _run([str(bin_dir / "capeval"), "--version"], env=env, cwd=tmp)
    assert version.stdout == f"capeval {__version__}\n"


def test_default_score_runs_or_names_the_extra(plain_install):
    bin_dir, env, tmp = plain_install
    res = _run([str(bin_dir / "capeval"), "score", "--input", str(EXAMPLE), "-q"], env=env, cwd=tmp)
    text = " ".join((res.stdout + res.stderr).split())
    assert "Traceback" not in text
    if res.returncode == 0:
        assert "meteor" in res.stdout and "cider_d" in res.stdout
    else:
        assert res.returncode == 2, text
        assert "meteor" in text and install_command(["coco"]) in text, text
        assert "pip install 'capeval[" not in text and "pip install capeval[" not in text


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
