"""A plug-in metric family streams with no edit to capeval and no declaration of its own (the
default statistics contract: its per-row value and their mean): planted in a temporary plug-in
distribution (``capeval.metrics`` entry point), it is scored chunk by chunk by ``score_stream``
and by ``capeval score --chunk-size --jobs 2`` (workers load the plug-in themselves), with the
in-memory numbers."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

PLUGIN = textwrap.dedent('''
    from capeval.metrics.user import UserMetric

    class Overlap(UserMetric):
        """Share of the candidate's words found in one of its references: a function of the row."""
        name, version = "plug_overlap", "1.0"
        range = (0.0, 1.0)

        def score(self, candidates, references, images):
            out = []
            for c, refs in zip(candidates, references):
                words = c.split()
                seen = {w for r in refs for w in r.split()}
                out.append(sum(w in seen for w in words) / len(words))
            return out
''')

ROWS = [
    {"id": i, "candidate": c, "references": r} for i, (c, r) in enumerate([
        ("a dog runs on the grass", ["a dog is running on grass", "the dog runs"]),
        ("two men ride bikes", ["two people riding bicycles", "men on bikes in a park"]),
        ("a cat sleeps", ["a cat is sleeping on a sofa", "the cat naps"]),
        ("a red ball in the water", ["a ball floats in the water", "red ball on a lake"]),
        ("a woman sits on a bench", ["a woman sitting on a park bench", "a lady on a bench"]),
        ("people walk down the street", ["pedestrians on a busy street", "people walking"]),
        ("a child plays with a dog", ["a kid playing with a puppy", "a child and a dog"]),
    ])
]

CODE = textwrap.dedent('''
    import json, sys
    import capeval
    from capeval.stream import streamable

    rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
    names = ["plug_overlap", "bleu4", "cider_d"]
    cands = [r["candidate"] for r in rows]
    refs = [r["references"] for r in rows]
    whole = capeval.score(cands, refs, names)
    streamed = capeval.score_stream(sys.argv[1], names, chunk_size=2)
    print(json.dumps({
        "streamable": streamable(["plug_overlap"]),
        "same_per_caption": all(list(whole.per_caption[m]) == list(streamed.per_caption[m]) for m in names),
        "same_corpus": all(whole.corpus[m] == streamed.corpus[m] for m in names),
        "corpus": streamed.corpus["plug_overlap"],
        "signature": streamed.signatures["plug_overlap"] == whole.signatures["plug_overlap"],
    }))
''')


def _site(tmp_path):
    d = tmp_path / "site"
    d.mkdir()
    (d / "capeval_streamdemo.py").write_text(PLUGIN, encoding="utf-8")
    info = d / "capeval_streamdemo-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: capeval-streamdemo\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[capeval.metrics]\nplug_overlap = capeval_streamdemo:Overlap\n",
                                           encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")
    return d


def _run(site, args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "COLUMNS": "300"}
    res = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    return res


def test_planted_streamable_plugin_streams(tmp_path):
    site = _site(tmp_path)
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    out = json.loads(_run(site, ["-c", CODE, str(data)]).stdout)
    assert out["streamable"] is True
    assert out["same_per_caption"] and out["same_corpus"] and out["signature"]
    assert 0.0 < out["corpus"] < 1.0

    # The command line streams it too, in worker processes that find the plug-in by its entry
    # point (--jobs/--chunk-size are refused for a metric that does not stream).
    scored = tmp_path / "scored.jsonl"
    _run(site, ["-m", "capeval.cli.main", "score", "-i", str(data), "-m", "plug_overlap,cider_d",
                "--chunk-size", "3", "--jobs", "2", "-o", str(scored), "-q"])
    lines = [json.loads(line) for line in scored.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in lines] == list(range(len(ROWS)))
    assert all(0.0 <= r["plug_overlap"] <= 1.0 for r in lines)
