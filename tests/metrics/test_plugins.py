"""Plug-in metrics: a distribution declaring ``capeval.metrics`` entry points is listed by
``capeval metrics`` and scores in ``score``, ``bench`` and learned-metric features like a
built-in. The test writes a small distribution (module + dist-info with entry_points.txt) into a
temporary directory and runs capeval in subprocesses with that directory on ``PYTHONPATH``, the
way an installed plug-in is seen."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

PLUGIN = textwrap.dedent('''
    import capeval
    from capeval.metrics.user import UserMetric

    class WordCount(UserMetric):
        name, version = "plug_words", "1.0"
        description = "words in the candidate"

        def score(self, candidates, references, images):
            return [float(len(c.split())) for c in candidates]

    class PlugBleu4(UserMetric):
        name, version = "plug_bleu4", "1.0"

        def score(self, candidates, references, images):
            return capeval.score(candidates, references, ["bleu4"]).per_caption["bleu4"]

    class NotAMetric:
        pass
''')

ENTRY_POINTS = textwrap.dedent('''
    [capeval.metrics]
    plug_words = capeval_plugdemo:WordCount
    plug_bleu4 = capeval_plugdemo:PlugBleu4
    plug_broken = capeval_plugdemo:NotAMetric
''')


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    d = tmp_path_factory.mktemp("site")
    (d / "capeval_plugdemo.py").write_text(PLUGIN, encoding="utf-8")
    info = d / "capeval_plugdemo-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: capeval-plugdemo\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")
    return d


def _run(site, *args, code: str | None = None, check: bool = True):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "COLUMNS": "300"}
    cmd = [sys.executable, "-c", code] if code is not None else [sys.executable, "-m", "capeval.cli.main", *args]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if check:
        assert res.returncode == 0, res.stdout + res.stderr
    return res


def test_import_capeval_reads_no_entry_point(site):
    out = _run(site, code="import capeval, capeval.metrics.registry as r; print(r._plugins_loaded)")
    assert out.stdout.strip() == "False"


def test_metrics_lists_plugins_and_names_the_broken_one(site):
    res = _run(site, "metrics")
    assert "plug_words" in res.stdout and "plug_bleu4" in res.stdout
    assert "plug_broken" in res.stderr and "not a capeval.metrics.base.Metric subclass" in res.stderr
    # The compact listing leaves descriptions to --json.
    listed = _run(site, "metrics", "--json")
    assert "words in the" in listed.stdout


def test_unknown_name_error_mentions_plugins_that_failed(site):
    code = ("import capeval\n"
            "try:\n    capeval.score(['a dog'], [['a dog']], ['nope'])\n"
            "except Exception as e:\n    print(type(e).__name__, e)")
    out = _run(site, code=code).stdout
    assert out.startswith("UnknownMetricError unknown metric 'nope'") and "plug_words" in out and "plug_broken" in out


def test_score_cli_runs_a_plugin(site, tmp_path):
    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps({"id": "a", "candidate": "a dog runs", "references": ["a dog"]}) + "\n"
                   + json.dumps({"id": "b", "candidate": "two cats", "references": ["cats"]}) + "\n", encoding="utf-8")
    out = tmp_path / "out.json"
    _run(site, "score", "-i", str(inp), "-m", "plug_words,bleu1", "-o", str(out), "-q")
    doc = json.loads(out.read_text())
    assert doc["per_caption"]["plug_words"] == [3.0, 2.0]
    assert doc["signatures"]["plug_words"].startswith("user:plug_words|out:plug_words|tok:none|")
    assert "|mv:1.0|" in doc["signatures"]["plug_words"]


def test_plugin_features_for_learned_metrics(site):
    code = textwrap.dedent('''
        from capeval.learn.features import extract, parse_features
        fm = extract(["a dog runs on grass", "a cat"], [["a dog runs"], ["the cat sleeps"]],
                     parse_features("plug_words+bleu1"), tokenizer="ptb")
        print(fm.X[:, 0].tolist())
    ''')
    assert _run(site, code=code).stdout.strip() == "[5.0, 2.0]"


def test_plugin_cache_key_names_the_distribution(site, tmp_path):
    code = textwrap.dedent(f'''
        from capeval.service.cache import ScoreCache
        from capeval.service.scoring import score_units
        c = ScoreCache({str(tmp_path)!r})
        a = score_units(["a dog"], [["a dog"]], ["plug_words"], cache=c)
        b = score_units(["a dog"], [["a dog"]], ["plug_words"], cache=c)
        print(a.details["cached"]["plug_words"], b.details["cached"]["plug_words"])
    ''')
    assert _run(site, code=code).stdout.split() == ["False", "True"]


@pytest.mark.data
def test_bench_plugin_equals_callable_and_built_in(site, tmp_path, data_dir):
    js = tmp_path / "plug.json"
    _run(site, "bench", "composite", "-m", "plug_bleu4,bleu4", "--no-cache", "-q", "--root", str(data_dir),
         "--json", str(js))
    doc = json.loads(js.read_text())
    assert doc["plug_bleu4"] == doc["bleu4"]

    import capeval
    from capeval.metaeval.tables import to_json_dict
    from capeval.service.cache import ScoreCache

    def bleu4_callable(candidates, references, images):
        return capeval.score(candidates, references, ["bleu4"]).per_caption["bleu4"]

    mine = to_json_dict(capeval.bench("composite", [bleu4_callable], root=data_dir, cache=ScoreCache(enabled=False)))
    assert mine["bleu4_callable"] == doc["plug_bleu4"]
