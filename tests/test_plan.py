"""``capeval.plan``: one ScoringPlan per run resolves every name once, checks options once, and
carries the scores files as precomputed columns with the numbers they had when spliced in."""
from __future__ import annotations

import collections
import hashlib
import json
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

import capeval
import capeval.data
from capeval.cli.main import app
from capeval.errors import InputError, UnknownMetricError
from capeval.metrics import registry
from capeval.plan import ScoringPlan
from capeval.service.cache import ScoreCache
from capeval.service.scoring import score_units
from tests.metaeval.conftest import make_tables

CANDS = ["a dog runs on the grass", "a man rides a red bike", "two cats sit in the sun"]
REFS = [["a dog is running on grass", "the dog runs"], ["a man on a bike", "someone rides a red bicycle"],
        ["cats sitting in sunlight", "two cats in the sun"]]


@pytest.fixture
def toy_data(monkeypatch):
    """The metaeval package's synthetic tables, served by ``capeval.data.load``."""
    tables = make_tables()
    real, real_spec = capeval.data.load, capeval.data.registry.get_spec
    monkeypatch.setattr(capeval.data, "load", lambda name, root=None, **o: tables[name] if name in tables
                        else real(name, root, **o))
    monkeypatch.setattr(capeval.data.registry, "get_spec", lambda name: None if name in tables else real_spec(name))
    return tables


@pytest.fixture
def resolutions(monkeypatch):
    """Every ``family_for`` call from any capeval module, by name (the registry's own global and
    each module's imported copy are replaced)."""
    calls: collections.Counter[str] = collections.Counter()
    real = registry.family_for

    def counted(name):
        calls[name] += 1
        return real(name)

    for mod in [m for n, m in sys.modules.items() if n == "capeval" or n.startswith("capeval.")]:
        if getattr(mod, "family_for", None) is real:
            monkeypatch.setattr(mod, "family_for", counted)
    return calls


def length(c, r, i):
    return [float(len(x)) for x in c]


def _scores_file(tmp_path, table, name="s.jsonl"):
    from capeval.metaeval.units import export_records

    path = tmp_path / name
    path.write_text("".join(json.dumps({"id": u["id"], "score": float(len(u["candidate"]))}) + "\n"
                            for u in export_records(table)), encoding="utf-8")
    return path


def test_bench_resolves_each_name_once(toy_data, tmp_path, resolutions):
    """``capeval bench`` over three benchmarks (each scoring one or several unit lists, a system
    table one per system): every metric name is resolved once for the whole run."""
    names = ["bleu1", "bleu4", "rouge_l", "cider_d"]
    args = ["bench", "toy-corr,toy-pairs,toy-sys", "-m", ",".join(names), "--tokenizer", "none", "--no-cache", "-q",
            "--json", str(tmp_path / "r.json")]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert {n: resolutions[n] for n in names} == dict.fromkeys(names, 1)
    assert max(resolutions.values()) == 1, resolutions


def test_run_benchmark_with_scores_file_resolves_each_name_once(toy_data, tmp_path, resolutions):
    path = _scores_file(tmp_path, toy_data["toy-corr"])
    res = capeval.bench("toy-corr", ["bleu4", "cider_d", length], scores={"len_file": path},
                        cache=ScoreCache(enabled=False), tokenizer="none")
    assert set(res.metrics) == {"bleu4", "cider_d", "length", "len_file"}
    # the column name is looked up once too (it may not be a registered metric's)
    assert resolutions == collections.Counter({"bleu4": 1, "cider_d": 1, "length": 1, "len_file": 1})


def test_user_columns_from_the_plan_are_the_spliced_ones(toy_data, tmp_path):
    """score_units returns the plan's scores columns after the metrics: per-unit numbers read
    by unit id, corpus value their mean, signature naming the column and the file's SHA-256
    (what metaeval used to add to the service's result afterwards)."""
    from capeval.metaeval.units import unit_lists

    table = toy_data["toy-corr"]
    path = _scores_file(tmp_path, table)
    ul = unit_lists(table)[0]
    plan = ScoringPlan.build(["bleu4", "cider_d"], tokenizer="none", scores={"len_file": path})
    got = score_units(ul.candidates, ul.references, plan=plan, ids=ul.ids())
    plain = score_units(ul.candidates, ul.references, ["bleu4", "cider_d"], tokenizer="none")
    assert list(got.per_caption) == ["bleu4", "cider_d", "len_file"]
    for m in ("bleu4", "cider_d"):
        assert np.array_equal(got.per_caption[m], plain.per_caption[m]) and got.corpus[m] == plain.corpus[m]
        assert got.signatures[m] == plain.signatures[m]
    lengths = np.array([float(len(c)) for c in ul.candidates])
    assert np.array_equal(got.per_caption["len_file"], lengths)
    assert got.corpus["len_file"] == float(lengths.mean())
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert got.signatures["len_file"] == f"user:len_file|file:sha256:{digest}|corpus:mean|version:{capeval.__version__}"
    assert got.details["cached"] == {"bleu4": False, "cider_d": False, "len_file": False}
    with pytest.raises(InputError, match="ids="):
        score_units(ul.candidates, ul.references, plan=plan)
    # the benchmark run reports the same column
    res = capeval.bench("toy-corr", ["bleu4"], scores={"len_file": path}, cache=ScoreCache(enabled=False),
                        tokenizer="none")
    assert np.array_equal(res.scores["len_file"], lengths)
    assert res.metric_signatures["len_file"] == got.signatures["len_file"]


def test_one_plan_serves_two_score_calls_without_resolving_again(resolutions):
    plan = ScoringPlan.build(["bleu4", "rouge_l", "cider_d"], tokenizer="none")
    built = sum(resolutions.values())
    first = capeval.score(CANDS, REFS, plan=plan)
    second = capeval.score(CANDS[:2], REFS[:2], plan=plan)
    assert sum(resolutions.values()) == built == 3, "score with a plan resolves nothing"
    for res, n in ((first, 3), (second, 2)):
        direct = capeval.score(CANDS[:n], REFS[:n], ["bleu4", "rouge_l", "cider_d"], tokenizer="none")
        assert res.corpus == direct.corpus and res.signatures == direct.signatures
        assert all(np.array_equal(res.per_caption[m], direct.per_caption[m]) for m in direct.per_caption)
    # metrics given with a plan pick among its metrics, still without resolving
    resolutions.clear()
    some = capeval.score(CANDS, REFS, ["cider_d"], plan=plan)
    assert list(some.corpus) == ["cider_d"] and some.corpus["cider_d"] == first.corpus["cider_d"]
    assert not resolutions


def test_the_plan_holds_what_the_consumers_asked_each_time():
    class Late(capeval.UserMetric):
        name, version = "late_plan_test", "1"

        def reuse(self, shared, *, tokenizer):  # takes the scores computed before it: runs last
            self.shared = shared

        def score(self, candidates, references, images):
            return [0.0] * len(candidates)

    plan = ScoringPlan.build([Late, "cider_d", "bleu1", "bleu4"], tokenizer="none",
                             options={"cider_d": {"sigma": 6.0}})
    assert plan.metrics == ("late_plan_test", "cider_d", "bleu1", "bleu4")
    # families in run order: the one that reuses other scores last; outputs grouped by family
    assert [f.family for f in plan.families] == ["cider_d", "bleu", "late_plan_test"]
    assert plan.families[1].names == ("bleu1", "bleu4")
    assert plan.families[0].options == {"sigma": 6.0} and plan.families[1].options is None
    assert plan.needs_tokens and plan.needs_references and not plan.image_metrics
    assert plan.family_map()["bleu4"] is registry.get_family("bleu")
    given = {"cider_d": {"sigma": 6.0}}
    kept = ScoringPlan.build(["cider_d"], options=given)
    given["cider_d"]["sigma"] = 1.0  # the caller's dict changes afterwards; the plan's does not
    assert kept.families[0].options == {"sigma": 6.0} == kept.options["cider_d"]
    sub = plan.only(["bleu4"])
    assert sub.metrics == ("bleu4",) and [f.names for f in sub.families] == [("bleu4",)] and not sub.defaulted
    assert ScoringPlan.build(None).defaulted and ScoringPlan.build(None).metrics == registry.METRIC_SETS["coco"]


def test_plan_errors_name_the_problem(tmp_path):
    with pytest.raises(UnknownMetricError, match="nometric"):
        ScoringPlan.build(["bleu4", "nometric"])
    with pytest.raises(InputError, match="unknown option\\(s\\) 'sigmaa' for cider_d"):
        ScoringPlan.build(["bleu4"], options={"cider_d": {"sigmaa": 3}})  # a family not requested
    with pytest.raises(InputError, match="no metrics requested"):
        ScoringPlan.build([])
    with pytest.raises(InputError, match="is the name of a registered metric"):
        ScoringPlan.build(["bleu4"], scores={"cider_d": tmp_path / "x.jsonl"})
    plan = ScoringPlan.build(["bleu4"])
    with pytest.raises(InputError, match="not both"):
        capeval.score(CANDS, REFS, plan=plan, options={"bleu": {}})
    with pytest.raises(InputError, match="differs from the plan's"):
        capeval.score(CANDS, REFS, plan=plan, tokenizer="none")
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"id": "u1", "score": 1.0}) + "\n")
    with pytest.raises(InputError, match="score_units"):
        capeval.score(CANDS, REFS, plan=ScoringPlan.build(["bleu4"], scores={"mine": path}))


def test_scores_column_signatures(tmp_path):
    """Benchmarks name the corpus rule (the mean); the stress suite, which reports per-item
    scores only, does not."""
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"id": "u1", "score": 2.0}) + "\n" + json.dumps({"id": "u2", "score": 4.0}) + "\n")
    (col,) = ScoringPlan.build(["bleu4"], scores={"mine": path}).columns
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert col.signature() == f"user:mine|file:sha256:{digest}|corpus:mean|version:{capeval.__version__}"
    assert col.signature(corpus=None) == f"user:mine|file:sha256:{digest}|version:{capeval.__version__}"
    assert np.array_equal(col.values(["u2", "u1"]), [4.0, 2.0])


@pytest.mark.parametrize("cli", [False, True])
def test_a_streamed_run_resolves_each_name_once(tmp_path, resolutions, cli):
    """``capeval score --chunk-size`` and ``capeval.score_stream`` in this process (the serial
    engine): the run's plan serves its first pass and every chunk; no name is resolved again."""
    from tests.stream._rows import make_rows, write_jsonl

    src = tmp_path / "in.jsonl"
    write_jsonl(src, make_rows(30, seed=5))
    names = ["bleu4", "rouge_l", "cider_d"]
    if cli:
        res = CliRunner().invoke(app, ["score", "-i", str(src), "-m", ",".join(names), "--chunk-size", "7", "-q",
                                       "-o", str(tmp_path / "o.jsonl")])
        assert res.exit_code == 0, res.output
    else:
        capeval.score_stream(src, names, chunk_size=7)
    assert {n: resolutions[n] for n in names} == dict.fromkeys(names, 1)
