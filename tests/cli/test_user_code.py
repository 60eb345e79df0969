"""User code cannot end a run silently (issue 41, items 10, 12 and 13): plug-ins that call
``os._exit(0)``, leave a non-daemon thread running, fork, or raise ``ValueError``,
``RecursionError`` or ``MemoryError`` while scoring, in memory and in ``--jobs 2`` runs; and an
``image`` field holding a NUL character. A distribution is written to a temporary directory and
the ``capeval`` command runs in a subprocess with it on ``PYTHONPATH``, as an installed plug-in is
seen; every failure is exit 2 with one message naming the metric and no traceback."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the watched child process is Linux's")

PLUGIN = textwrap.dedent('''
    import os, threading, time
    from capeval.metrics.user import UserMetric

    def _m(name, body):
        return type(name, (UserMetric,), {"name": name, "version": "1", "score": body})

    def _exits(self, c, r, i):
        os._exit(0)

    def _lingers(self, c, r, i):
        threading.Thread(target=time.sleep, args=(3600,)).start()  # not a daemon
        return [1.0] * len(c)

    def _forks(self, c, r, i):
        os.fork()  # both copies return into capeval
        return [1.0] * len(c)

    def _value(self, c, r, i):
        raise ValueError("no score for you")

    def _recursion(self, c, r, i):
        def f(n):
            return f(n + 1)
        return f(0)

    def _memory(self, c, r, i):
        raise MemoryError()

    def _images(self, c, r, i):
        return [float(len(os.path.basename(p))) for p in i]

    OsExit, Lingers, Forks = _m("osexit", _exits), _m("lingers", _lingers), _m("forks", _forks)
    Value, Recursion, Memory = _m("valueerr", _value), _m("recursion", _recursion), _m("memerr", _memory)
    Images = _m("imgname", _images)
''')
NAMES = {"osexit": "OsExit", "lingers": "Lingers", "forks": "Forks", "valueerr": "Value",
         "recursion": "Recursion", "memerr": "Memory", "imgname": "Images"}
ROWS = [{"id": "a", "candidate": "a dog runs", "references": ["a dog runs fast"]},
        {"id": "b", "candidate": "a cat sits", "references": ["a cat is sitting"]}]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    d = tmp_path_factory.mktemp("site")
    (d / "capeval_usercode.py").write_text(PLUGIN, encoding="utf-8")
    info = d / "capeval_usercode-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: capeval-usercode\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(
        "[capeval.metrics]\n" + "".join(f"{k} = capeval_usercode:{v}\n" for k, v in NAMES.items()), encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")
    (d / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return d


def _run(site, *args, timeout: float = 240):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "COLUMNS": "400"}
    return subprocess.run([sys.executable, "-m", "capeval.cli.main", *args], check=False, env=env,
                          capture_output=True, text=True, timeout=timeout, cwd=site)


def _failed(res, *needles):
    text = " ".join((res.stdout + res.stderr).split())
    assert res.returncode == 2, text
    assert "Traceback" not in text
    for n in needles:
        assert n in text, text


@pytest.mark.parametrize("jobs", [[], ["--chunk-size", "1"], ["--jobs", "2"]])
def test_a_plugin_calling_os_exit_0_fails_the_command_naming_it(site, tmp_path, jobs):
    out = tmp_path / "x.jsonl"
    res = _run(site, "score", "-i", "rows.jsonl", "-m", "bleu4,osexit", "-o", str(out), "-q", *jobs)
    _failed(res, "'osexit' (plug-in capeval-usercode==0.1)")
    assert not out.exists()


def test_a_plugin_calling_os_exit_0_at_import_is_listed_as_not_loaded(site, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "capeval_exits_at_import.py").write_text("import os\nos._exit(0)\n", encoding="utf-8")
    (site / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    info = site / "capeval_importexit-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: capeval-importexit\nVersion: 0.1\n",
                                   encoding="utf-8")
    (info / "entry_points.txt").write_text("[capeval.metrics]\nimportexit = capeval_exits_at_import:X\n",
                                           encoding="utf-8")
    res = _run(site, "metrics")
    assert res.returncode == 0 and "bleu4" in res.stdout, res.stdout + res.stderr
    assert "importexit" in res.stderr and "os._exit(0)" in res.stderr
    _failed(_run(site, "score", "-i", "rows.jsonl", "-m", "importexit", "-q"), "'importexit'", "os._exit(0)")


def test_a_plugin_thread_left_running_does_not_keep_the_command_alive(site, tmp_path):
    out = tmp_path / "x.json"
    start = time.monotonic()
    res = _run(site, "score", "-i", "rows.jsonl", "-m", "bleu4,lingers", "-o", str(out), "-q", timeout=120)
    assert res.returncode == 0, res.stderr
    assert json.loads(out.read_text(encoding="utf-8"))["corpus"]["lingers"] == 1.0
    assert time.monotonic() - start < 120


def test_a_plugin_that_forks_gives_one_run(site, tmp_path):
    out = tmp_path / "x.json"
    res = _run(site, "score", "-i", "rows.jsonl", "-m", "bleu4,forks", "-o", str(out), "-q")
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("per-caption scores written") == 1, res.stdout  # the copy never went on
    assert json.loads(out.read_text(encoding="utf-8"))["corpus"]["forks"] == 1.0


@pytest.mark.parametrize("metric,kind", [("valueerr", "ValueError while scoring: no score for you"),
                                         ("recursion", "RecursionError"), ("memerr", "MemoryError")])
@pytest.mark.parametrize("jobs", [[], ["--jobs", "2"]])
def test_a_plugin_exception_is_a_named_error(site, tmp_path, metric, kind, jobs):
    res = _run(site, "score", "-i", "rows.jsonl", "-m", f"bleu4,{metric}", "-o", str(tmp_path / "x.jsonl"), "-q",
               *jobs)
    _failed(res, f"metric '{metric}' (plug-in capeval-usercode==0.1) raised", kind, "capeval_usercode.py:")


def test_the_python_api_raises_user_code_error_with_the_cause_chained(site):
    code = textwrap.dedent('''
        import capeval
        from capeval.errors import UserCodeError
        try:
            capeval.score(["a b"], [["a b"]], ["valueerr"])
        except UserCodeError as e:
            assert isinstance(e.__cause__, ValueError) and "'valueerr'" in str(e), e
            print("ok")
    ''')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert res.stdout.strip() == "ok", res.stdout + res.stderr


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("with_dir", [False, True])
def test_an_image_name_holding_a_nul_character_is_refused_by_name(site, tmp_path, streamed, with_dir):
    rows = tmp_path / "nul.jsonl"
    rows.write_text("".join(json.dumps({**r, "image": f"img{k}\u0000.jpg"}) + "\n" for k, r in enumerate(ROWS)),
                    encoding="utf-8")
    (tmp_path / "imgs").mkdir()
    args = ["score", "-i", str(rows), "-m", "imgname", "-q", "-o", str(tmp_path / "x.jsonl")]
    args += ["--images", str(tmp_path / "imgs")] if with_dir else []
    args += ["--chunk-size", "1"] if streamed else []
    _failed(_run(site, *args), "item 'a'", "NUL character")
