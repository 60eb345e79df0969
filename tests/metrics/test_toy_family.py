"""Adding a built-in family touches its module, its registry entry and its tests, nothing else: a
toy family (a module registering it, one ``OUTPUT_MODULES`` row) is scored, listed, streamed
chunk by chunk with a corpus rule of its own, and bootstrapped from statistics, with no other
edit. (A plug-in touches no capeval file: tests/stream/test_stream_plugin.py.)"""
from __future__ import annotations

import sys
import textwrap

import numpy as np
import pytest

import capeval
from capeval.metrics import registry

TOY = textwrap.dedent('''
    import numpy as np

    from capeval.metrics.base import Metric, OutputInfo
    from capeval.metrics.registry import register
    from capeval.metrics.statistics import Aggregate, Statistics


    class WordRatio(Aggregate):
        """Corpus: summed candidate words over summed reference words (integer totals)."""

        def per_caption(self, st):
            return {"toy_ratio": st.rows["cand"] / st.rows["ref"]}

        def corpus(self, st):
            return {"toy_ratio": float(st.total("cand")) / float(st.total("ref"))}

        def reduce(self, st):
            return Statistics(st.n, self, {}, {"cand": st.total("cand"), "ref": st.total("ref")}, dict(st.fields))


    @register
    class ToyRatio(Metric):
        family = variant = "toy_ratio"
        outputs = (OutputInfo("toy_ratio", "toy_ratio", "toy_ratio", (0.0, float("inf"))),)
        cache_resources = ()

        def statistics(self, candidates, references, **kw):
            cand = np.array([len(c.split()) for c in candidates], dtype=np.int64)
            ref = np.array([max(1, sum(len(r.split()) for r in refs)) for refs in references], dtype=np.int64)
            return Statistics(len(candidates), WordRatio(), {"cand": cand, "ref": ref}, {}, {"rule": "ratio-of-sums"})

        def aggregate(self, outputs):
            return WordRatio()

        def compute(self, candidates, references):
            return self.statistics(candidates, references).scores()
''')


@pytest.fixture
def toy(tmp_path, monkeypatch):
    (tmp_path / "capeval_toy_family.py").write_text(TOY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry.OUTPUT_MODULES, "toy_ratio", "capeval_toy_family")  # its registry entry
    yield
    for table in (registry._FAMILIES, registry._OUTPUTS):
        table.pop("toy_ratio", None)
    sys.modules.pop("capeval_toy_family", None)


def test_a_toy_built_in_family_needs_no_other_edit(toy, tmp_path):
    from capeval.stats.bootstrap import corpus_distribution

    rows = [(f"a dog {'runs ' * (i % 4)}", [f"the dog number {i}", "a dog"]) for i in range(23)]
    cands, refs = [c for c, _ in rows], [r for _, r in rows]
    mem = capeval.score(cands, refs, ["toy_ratio", "bleu4"])
    assert "toy_ratio" in [o.name for o in capeval.list_metrics()]
    assert "toy_ratio" in registry.families_with("streamable")
    got = capeval.score_stream(list(zip(cands, refs)), ["toy_ratio", "bleu4"], chunk_size=5)
    assert got.corpus == mem.corpus and got.signatures == mem.signatures
    assert np.array_equal(got.per_caption["toy_ratio"], mem.per_caption["toy_ratio"])
    assert "rule:ratio-of-sums" in mem.signatures["toy_ratio"]
    with registry.get_family("toy_ratio")() as m:
        st = m.statistics(*capeval.text.tokenize_corpus(cands, refs, "ptb"))
    assert len(corpus_distribution(st, "toy_ratio", n_resamples=3)) == 3
