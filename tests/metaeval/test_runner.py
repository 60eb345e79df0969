import json

import pytest

from capeval.service.cache import ScoreCache
from capeval.metaeval.runner import resolve_names, run_benchmark
from capeval.metaeval.tables import results_to_json, to_json_dict, to_latex, to_markdown
from capeval.errors import InputError, UnknownMetricError
from capeval.stats.correlation import correlate
from capeval.stats.pairwise import pairwise_accuracy

M = ["bleu1", "bleu4", "cider_d"]


def _run(name, tmp_path, **kw):
    return run_benchmark(name, kw.pop("metrics", M), cache=ScoreCache(tmp_path), tokenizer="none", **kw)


def test_correlation_contract(toy_data, tmp_path):
    import capeval

    res = _run("toy-corr", tmp_path)
    out = to_json_dict(res)
    table = toy_data["toy-corr"]
    direct = capeval.score(table.candidates, table.references, M, tokenizer="none")
    for m in M:
        assert set(out[m]) == {"kendall_tau_c", "kendall_tau_b", "pearson", "spearman", "n"}
        assert out[m]["n"] == len(table)
        assert out[m]["kendall_tau_c"] == correlate(direct.per_caption[m], table.human, "tau-c").value
        assert -1 <= out[m]["pearson"] <= 1
    assert out["_meta"]["statistic"] == "kendall_tau_c"
    sig = out["_signatures"]["benchmark"]
    assert sig.startswith("toy-corr|rows:60|refs:synthetic|stat:tau-c|")
    assert out["_signatures"]["metrics"]["cider_d"] == direct.signatures["cider_d"]
    json.dumps(out)  # serialisable as is


def test_statistic_override_and_bootstrap(toy_data, tmp_path):
    res = _run("toy-corr", tmp_path, statistic="tau-b", bootstrap=50, seed=3)
    assert res.statistic == "kendall_tau_b"
    assert "stat:tau-b" in str(res.signature()) and "bs:50|rs:3" in str(res.signature())
    ci = res.bootstrap["cider_d"]
    assert ci.n_resamples == 50 and ci.low <= ci.value <= ci.high
    assert to_json_dict(res)["_meta"]["bootstrap"]["cider_d"]["seed"] == 3
    again = _run("toy-corr", tmp_path, statistic="tau-b", bootstrap=50, seed=3)
    assert again.bootstrap == res.bootstrap


def test_pairwise_contract_one_corpus(toy_data, tmp_path, monkeypatch):
    import capeval.api

    seen = []
    real = capeval.api.score
    monkeypatch.setattr(capeval.api, "score", lambda c, r, m, **kw: seen.append(len(c)) or real(c, r, m, **kw))
    res = _run("toy-pairs", tmp_path)
    t = toy_data["toy-pairs"]
    assert seen == [2 * len(t)], "both members of every pair are scored in one call"
    out = to_json_dict(res)
    assert set(out["cider_d"]) == {"HC", "HI", "HM", "MM", "mean"}
    direct = real(t.candidates_a + t.candidates_b, t.references * 2, ["cider_d"], tokenizer="none")
    s = direct.per_caption["cider_d"]
    want = pairwise_accuracy(s[: len(t)], s[len(t):], t.labels, t.categories)
    assert out["cider_d"]["mean"] == pytest.approx(100 * want.mean, abs=1e-12)
    assert out["_meta"]["ties"]["cider_d"]["HC"] >= 1  # pair 0 is an exact tie
    assert "stat:acc|ties:half" in out["_signatures"]["benchmark"]
    fail = to_json_dict(_run("toy-pairs", tmp_path, tie_policy="fail"))
    assert fail["cider_d"]["HC"] < out["cider_d"]["HC"]


def test_system_level(toy_data, tmp_path):
    res = _run("toy-sys", tmp_path)
    out = to_json_dict(res)
    assert set(out["bleu4"]["systems"]) == {"sys0", "sys1", "sys2", "sys3"}
    # systems copy more reference words as s grows, and human = s
    assert out["bleu4"]["vs_human"]["kendall_tau_b"] == pytest.approx(1.0)
    assert out["_meta"]["rankings"]["bleu4"][0] == "sys3"
    mean = to_json_dict(_run("toy-sys", tmp_path, aggregate="mean"))
    assert mean["_meta"]["aggregate"] == "mean"


def test_renderers_carry_signatures(toy_data, tmp_path):
    results = [_run("toy-corr", tmp_path), _run("toy-pairs", tmp_path), _run("toy-sys", tmp_path)]
    md = to_markdown(results)
    tex = to_latex(results)
    for r in results:
        assert str(r.signature()) in md
        for sig in r.metric_signatures.values():
            assert sig in md
    assert "| bleu4 |" in md and "\\begin{tabular}" in tex
    names, mat = results[2].experiment.metric_matrix
    assert f"bleu1/cider_d {mat[0, 2]:.2f}" in md  # system-ranking agreement is shown, not only in JSON
    for r in results:  # LaTeX escapes underscores, nothing else in a signature
        assert str(r.signature()).replace("_", "\\_") in tex
        assert r.metric_signatures["cider_d"].replace("_", "\\_") in tex
    both = results_to_json(results[:2])
    assert set(both) == {"toy-corr", "toy-pairs"}
    assert results_to_json(results)["toy-corr"]["bleu4"]["n"] == 60


def test_bad_arguments(toy_data, tmp_path):
    with pytest.raises(UnknownMetricError, match="nope"):
        _run("toy-corr", tmp_path, metrics=["nope"])
    with pytest.raises(InputError, match="tie policy"):
        _run("toy-pairs", tmp_path, tie_policy="coin")
    with pytest.raises(InputError, match="unknown benchmark"):
        _run("no-such-bench", tmp_path)
    assert resolve_names("all") == ["flickr8k-expert", "flickr8k-cf", "composite", "pascal50s", "abstract50s"]
    assert resolve_names("a, b") == ["a", "b"]


def _fake_score_with_nan(real):
    """capeval.score, but spice_color is NaN on every third unit (SPICE's undefined category)."""
    import numpy as np

    from capeval.result import Result

    def score(cands, refs, metrics, **kw):
        other = [m for m in metrics if m != "spice_color"]
        res = real(cands, refs, other or ["bleu1"], **kw)
        per, corpus, sigs = dict(res.per_caption), dict(res.corpus), dict(res.signatures)
        if "spice_color" in metrics:
            v = np.array([len(c) / 100 for c in cands])
            v[::3] = np.nan
            per["spice_color"], corpus["spice_color"] = v, float(np.nanmean(v))
            sigs["spice_color"] = "spice_py_spacy|out:spice_color|version:0"
        return Result(corpus=corpus, per_caption=per, signatures=sigs, n=len(cands), details={})

    return score


def test_undefined_outputs_are_skipped_and_named(toy_data, tmp_path, monkeypatch):
    """spice_color & co. used to make `capeval bench` refuse the whole table (issue 9)."""
    import numpy as np

    import capeval.api
    from capeval.metaeval.runner import undefined_outputs

    assert undefined_outputs(["spice", "spice_color", "spice_count", "bleu4"]) == {"spice_color", "spice_count"}
    monkeypatch.setattr(capeval.api, "score", _fake_score_with_nan(capeval.api.score))
    res = _run("toy-corr", tmp_path, metrics=["bleu4", "spice_color"], bootstrap=20)
    n = len(toy_data["toy-corr"])
    k = n - len(range(0, n, 3))
    out = to_json_dict(res)
    assert out["spice_color"]["n"] == k and out["bleu4"]["n"] == n
    assert f"|undef:skip|defined:{k}/{n}|version:0" in res.metric_signatures["spice_color"]
    assert "undef" not in res.metric_signatures["bleu4"]
    assert np.isfinite(res.bootstrap["spice_color"].low)
    pairs = _run("toy-pairs", tmp_path, metrics=["spice_color"])
    m = len(toy_data["toy-pairs"])
    v = np.linspace(0, 1, 2 * m)
    v[::3] = np.nan
    kept = int((~np.isnan(v[:m]) & ~np.isnan(v[m:])).sum())
    assert pairs.experiment.defined == {"spice_color": kept}
    assert sum(pairs.experiment.results["spice_color"].n.values()) == kept
    assert f"defined:{kept}/{m}" in pairs.metric_signatures["spice_color"]


def test_undefined_outputs_on_system_tables(toy_data, tmp_path, monkeypatch):
    import numpy as np

    import capeval.api

    monkeypatch.setattr(capeval.api, "score", _fake_score_with_nan(capeval.api.score))
    res = _run("toy-sys", tmp_path, metrics=["spice_color"], aggregate="mean")
    t = toy_data["toy-sys"]
    per_sys = len(t.references)
    for s, caps in t.systems.items():
        v = np.array([len(c) / 100 for c in caps])
        v[::3] = np.nan
        assert res.experiment.scores["spice_color"][s] == float(np.nanmean(v))
    k = int((~np.isnan(v)).sum()) * len(t.systems)
    assert f"undef:skip|defined:{k}/{per_sys * len(t.systems)}" in res.metric_signatures["spice_color"]
