"""Plug-ins that misbehave while loading or scoring (issue 33, items 7 and 8): a plug-in raising
``SystemExit(0)`` at import is listed as not loaded and never makes a command exit 0 without its
output; plug-ins named like a built-in family are refused by name and leave the built-ins
working for the rest of the process. A distribution is written to a temporary directory and
capeval runs in subprocesses with it on ``PYTHONPATH``, as an installed plug-in is seen."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

MODULES = {
    "capeval_exits.py": "raise SystemExit(0)\n",
    "capeval_goodm.py": textwrap.dedent('''
        from capeval.metrics.user import UserMetric

        class Good(UserMetric):
            name, version = "goodm", "1"

            def score(self, candidates, references, images):
                return [float(len(c)) for c in candidates]

        class ExitsWhileScoring(UserMetric):
            name, version = "exits_in_score", "1"

            def score(self, candidates, references, images):
                raise SystemExit(0)
    '''),
    "capeval_familynames.py": textwrap.dedent('''
        from capeval.metrics.user import UserMetric

        def _named(n):
            return type("M_" + n, (UserMetric,), {"name": n, "version": "1",
                                                  "score": lambda self, c, r, i: [99.0] * len(c)})

        Bleu, BertScore, SentSim, BleuSmooth = (_named(n) for n in ("bleu", "bertscore", "sentsim", "bleu_smooth"))
    '''),
}

ENTRY_POINTS = textwrap.dedent('''
    [capeval.metrics]
    exits = capeval_exits:Whatever
    goodm = capeval_goodm:Good
    exits_in_score = capeval_goodm:ExitsWhileScoring
    bleu = capeval_familynames:Bleu
    bertscore = capeval_familynames:BertScore
    sentsim = capeval_familynames:SentSim
    bleu_smooth = capeval_familynames:BleuSmooth
''')


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    d = tmp_path_factory.mktemp("site")
    for name, text in MODULES.items():
        (d / name).write_text(text, encoding="utf-8")
    info = d / "capeval_hostile-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: capeval-hostile\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")
    rows = d / "rows.jsonl"
    rows.write_text(json.dumps({"id": "a", "candidate": "a dog runs", "references": ["a dog runs fast"]}) + "\n",
                    encoding="utf-8")
    return d


def _run(site, *args, code: str | None = None):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "COLUMNS": "300"}
    cmd = [sys.executable, "-c", code] if code is not None else [sys.executable, "-m", "capeval.cli.main", *args]
    return subprocess.run(cmd, check=False, env=env, capture_output=True, text=True, timeout=300, cwd=site)


def test_metrics_lists_a_plugin_that_exits_at_import_as_not_loaded(site):
    res = _run(site, "metrics")
    assert res.returncode == 0, res.stderr
    assert "bleu4" in res.stdout and "goodm" in res.stdout  # the listing was printed
    assert "exits" in res.stderr and "SystemExit" in res.stderr


def test_score_with_a_good_plugin_beside_one_that_exits_writes_its_output(site, tmp_path):
    out = tmp_path / "x.json"
    res = _run(site, "score", "-i", str(site / "rows.jsonl"), "-m", "goodm", "-o", str(out), "-q")
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads(out.read_text(encoding="utf-8"))["corpus"]["goodm"] == len("a dog runs")


@pytest.mark.parametrize("metric", ["exits", "exits_in_score"])
def test_a_plugin_that_exits_never_ends_a_run_with_status_0(site, tmp_path, metric):
    out = tmp_path / "x.json"
    res = _run(site, "score", "-i", str(site / "rows.jsonl"), "-m", metric, "-o", str(out), "-q")
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stdout + res.stderr
    assert "SystemExit" in " ".join((res.stdout + res.stderr).split())
    assert not out.exists()


def test_plugins_named_like_a_family_are_refused_and_builtins_keep_working(site):
    code = textwrap.dedent('''
        import capeval
        from capeval.metrics import registry
        errors = registry.plugin_errors()
        for fam in ("bleu", "bertscore", "sentsim", "bleu_smooth"):
            assert any(e.startswith(f"plug-in {fam!r}") and f"built-in name {fam!r}" in e for e in errors), (fam, errors)
        r = capeval.score(["a dog runs"], [["a dog runs fast"]], ["bleu4", "bleu4_smooth", "goodm"])
        assert 0 < r.corpus["bleu4_smooth"] < 1 and r.corpus["goodm"] == 10.0, r.corpus
        try:
            capeval.score(["a dog"], [["a dog"]], ["bleu"])
        except capeval.errors.UnknownMetricError as e:
            assert "bleu" in str(e)
        else:
            raise AssertionError("'bleu' scored")
        assert registry.get_family("bleu").__module__ == "capeval.metrics.bleu"
        print("ok")
    ''')
    res = _run(site, code=code)
    assert res.returncode == 0 and res.stdout.strip().endswith("ok"), res.stdout + res.stderr


def test_a_plugin_that_hangs_at_import_is_stopped_by_ctrl_c_with_status_130(tmp_path):
    """No timeout is imposed on third-party code: Ctrl-C (SIGINT) stops the command, status 130."""
    import signal
    import time

    started = tmp_path / "started"
    (tmp_path / "capeval_hangs.py").write_text(
        f"import pathlib, time\npathlib.Path({str(started)!r}).touch()\ntime.sleep(600)\n", encoding="utf-8")
    info = tmp_path / "capeval_hangs-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: capeval-hangs\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[capeval.metrics]\nhangs = capeval_hangs:X\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    # Python's own SIGINT handler, as in a terminal: a test runner started in the background
    # may hand its children SIGINT ignored.
    code = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "sys.argv = ['capeval', 'metrics']; runpy.run_module('capeval.cli.main', run_name='__main__')")
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not started.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert started.exists(), "the plug-in was never imported"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + err
    assert "Traceback" not in out + err
