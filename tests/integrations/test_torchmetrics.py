"""capeval.integrations.torchmetrics: every metric's compute() == capeval.score on all the data,
in one process and across 2 gloo processes on CPU (states gathered in rank order)."""
from __future__ import annotations

import json

import pytest

from tests._needs import SPICE_PY

torch = pytest.importorskip("torch")
pytest.importorskip("torchmetrics")

import capeval  # noqa: E402
from capeval.errors import InputError  # noqa: E402
from capeval.integrations import torchmetrics as tm  # noqa: E402

CANDS = ["a dog runs on the grass", "two cats sleep on a red sofa", "a man rides a bike down the street",
         "a woman holds an umbrella", "A plate of food, with broccoli.", "a dog runs on the grass",
         "children play football in a park", "a train at the station", "", "a bus on a city street",
         "a café in Paris", "a dog"]
REFS = [["a dog is running on grass", "the dog runs in a field"], ["two cats are sleeping", "cats on a couch"],
        ["a man riding a bicycle", "a person on a bike in the street"], ["a woman with an umbrella"],
        ["a plate with broccoli and meat", "food on a white plate"], ["a brown dog running"],
        ["kids playing soccer", "children playing in the park", "a football game"], ["a train in a station"],
        ["a sign on a wall"], ["a red bus driving down the street"], ["people sitting at a cafe"],
        "a dog sits"]
OUTPUT = {"CIDErD": "cider_d", "BLEU": "bleu4", "METEOR": "meteor", "ROUGEL": "rouge_l", "SPICE": "spice"}


def _make(name):
    return tm.BLEU(4, allow_empty=True) if name == "BLEU" else getattr(tm, name)(allow_empty=True)


def _result(name, cands, refs):
    refs = [[r] if isinstance(r, str) else r for r in refs]
    return capeval.score(cands, refs, [OUTPUT[name]], allow_empty=True)


def _expected(name, cands, refs):
    return _result(name, cands, refs).corpus[OUTPUT[name]]


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.needs(*SPICE_PY)) if n == "SPICE" else n
                                  for n in sorted(OUTPUT)])
def test_one_process_equals_capeval_score(name):
    metric = _make(name)
    for i in range(0, len(CANDS), 5):
        metric.update(CANDS[i:i + 5], REFS[i:i + 5])
    value = metric.compute()
    assert value.dtype == torch.float64
    expected = _result(name, CANDS, REFS)
    assert value.item() == expected.corpus[OUTPUT[name]]
    assert metric.signature == expected.signatures[OUTPUT[name]]
    metric.reset()
    metric.update(CANDS[:4], REFS[:4])
    assert metric.compute().item() == _expected(name, CANDS[:4], REFS[:4])


def test_bleu_orders_and_options():
    for n in (1, 2, 3, 4):
        m = tm.BLEU(n, allow_empty=True)
        m.update(CANDS, REFS)
        assert m.compute().item() == capeval.score(CANDS, [[r] if isinstance(r, str) else r for r in REFS],
                                                   [f"bleu{n}"], allow_empty=True).corpus[f"bleu{n}"]
    with pytest.raises(InputError, match="orders 1 to 4"):
        tm.BLEU(5)
    m = tm.CIDErD(sigma=3.0)
    m.update(CANDS[:3], REFS[:3])
    assert m.compute().item() == capeval.score(CANDS[:3], REFS[:3], ["cider_d"],
                                               options={"cider_d": {"sigma": 3.0}}).corpus["cider_d"]


@pytest.mark.parametrize("build,match", [
    (lambda: tm.BLEU(n_gram=2.0), "orders 1 to 4, given as an integer"),
    (lambda: tm.BLEU(n_gram="2"), "orders 1 to 4"),
    (lambda: tm.BLEU(n_gram=True), "orders 1 to 4"),
    (lambda: tm.CIDErD(sigma=0), "sigma must be a positive finite number"),
    (lambda: tm.CIDErD(sigma=float("nan")), "sigma must be a positive finite number"),
    (lambda: tm.CIDErD(df="/nonexistent/df.json"), "CIDEr df file not found"),
    (lambda: tm.METEOR(backend="jvm"), "backend must be one of"),
    (lambda: tm.SPICE(backend="java"), "backend must be 'py' or 'jar'"),
    (lambda: tm.ROUGEL(tokenizer="moses"), "unknown tokenizer 'moses'"),
    (lambda: tm.ROUGEL(tokenizer=None), "a tokenizer name"),
    (lambda: tm.ROUGEL(allow_empty="yes"), "True or False"),
    (lambda: tm.ROUGEL(options={"sigmaa": 2}), "unknown option"),
])
def test_arguments_are_checked_when_the_metric_is_built(build, match):
    """Not at the first compute() after an epoch of update() (issue 33, item 12)."""
    with pytest.raises(InputError, match=match):
        build()


def test_numpy_integer_orders_are_integers():
    np = pytest.importorskip("numpy")
    assert tm.BLEU(np.int64(2)).output == "bleu2"


def test_refusals():
    m = tm.CIDErD()
    with pytest.raises(InputError, match="preds must be a list"):
        m.update("a dog", ["a dog"])
    with pytest.raises(InputError, match="2 preds but 1 targets"):
        m.update(["a", "b"], [["a"]])
    with pytest.raises(InputError, match="pred 0 is not valid Unicode"):
        m.update(["\ud800"], [["a"]])
    with pytest.raises(InputError, match="no captions"):
        m.compute()
    m.update([""], [["a dog"]])
    m.update(["a cat"], [["a cat"]])
    with pytest.raises(InputError, match="candidate 0 is empty"):
        m.compute()  # capeval.score's rule: empty candidates only with allow_empty


def _ddp_specs(df_path):
    """Every wrapped class with its defaults, CIDEr-D with a df file (its statistics path) and
    BLEU and METEOR reduced to sums: (label, class, kwargs, capeval.score options)."""
    specs = [(name, name, {"allow_empty": True}, None) for name in sorted(OUTPUT)]
    specs += [("CIDErD[df]", "CIDErD", {"df": str(df_path), "allow_empty": True}, {"cider_d": {"df": str(df_path)}}),
              ("BLEU[reduced]", "BLEU", {"allow_empty": True, "keep_per_caption": False}, None),
              ("METEOR[reduced]", "METEOR", {"allow_empty": True, "keep_per_caption": False}, None)]
    return specs


@pytest.mark.slow
@pytest.mark.needs(*SPICE_PY)  # SPICE is among the synced metrics
def test_two_gloo_processes_equal_capeval_score_on_all_the_data(tmp_path):
    import torch.multiprocessing as mp

    from capeval.metrics.cider import DocumentFrequency

    from ._ddp_worker import run_rank

    # every class of the module is among the synced ones, but CLAIR, which needs a judge (its
    # statistics states are the same kind; tests/judges/test_apps.py runs it over batches)
    wrapped = {n for n, c in vars(tm).items() if isinstance(c, type) and issubclass(c, tm._CaptionMetric)
               and c is not tm._CaptionMetric}
    assert wrapped == set(OUTPUT) | {"CLAIR"}
    df_path = tmp_path / "train-df.json"
    DocumentFrequency.from_references([r if isinstance(r, list) else [r] for r in REFS[::-1]],
                                      [1] * len(REFS)).save(df_path)
    specs = _ddp_specs(df_path)
    # Uneven shards (7 and 5 items), so the gathered states differ in length across ranks.
    shards = [(CANDS[:7], REFS[:7]), (CANDS[7:], REFS[7:])]
    mp.spawn(run_rank, args=(2, str(tmp_path), shards, [s[:3] for s in specs], []), nprocs=2, join=True)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    for label, cls, kwargs, options in specs:
        output = OUTPUT[cls]
        expected = capeval.score(CANDS, [[r] if isinstance(r, str) else r for r in REFS], [output],
                                 allow_empty=True, options=options)
        reduced = kwargs.get("keep_per_caption") is False
        for r in range(2):
            got = ranks[r][label]
            assert float.fromhex(got["value"]) == expected.corpus[output], (label, r)
            assert got["signature"] == expected.signatures[output], (label, r)
            assert got["dtype"] == "torch.float64"
            if reduced:
                assert got["per_caption"] is None
            else:  # every caption, rank 0's then rank 1's
                assert [float.fromhex(x) for x in got["per_caption"]] == expected.per_caption[output].tolist()
            # Ranks exchange statistics, not strings, but for CIDEr-D with df from the gathered
            # references (its stated rule); the state size of each rank is on record.
            texts = label == "CIDErD"
            assert got["by_statistics"] is not texts and got["state_nbytes"] > 0, label
            assert got["holds_caption_text"] is texts, label


@pytest.mark.slow
def test_a_rank_without_data(tmp_path):
    import torch.multiprocessing as mp

    from ._ddp_worker import run_rank

    shards = [(CANDS, REFS), (CANDS[:2], REFS[:2])]
    specs = [(name, name, {"allow_empty": True}) for name in ("CIDErD", "ROUGEL", "BLEU")]
    mp.spawn(run_rank, args=(2, str(tmp_path), shards, specs, ["CIDErD", "ROUGEL", "BLEU"]), nprocs=2, join=True)
    for r in range(2):
        got = json.loads((tmp_path / f"rank{r}.json").read_text())
        for name in ("CIDErD", "ROUGEL", "BLEU"):
            assert float.fromhex(got[name]["value"]) == _expected(name, CANDS, REFS)
            assert (got[name]["state_nbytes"] == 0) if r == 1 else (got[name]["state_nbytes"] > 0)


def test_ciderd_with_a_fixed_df_file(tmp_path):
    from capeval.metrics.cider import DocumentFrequency

    df_path = tmp_path / "train-df.json"
    DocumentFrequency.from_references([r if isinstance(r, list) else [r] for r in REFS], [1] * len(REFS)).save(df_path)
    m = tm.CIDErD(df=str(df_path), allow_empty=True)
    m.update(CANDS[:1], REFS[:1])  # one caption: fine with a fixed df
    expected = capeval.score(CANDS[:1], REFS[:1], ["cider_d"], options={"cider_d": {"df": str(df_path)}})
    assert m.compute().item() == expected.corpus["cider_d"]
    assert m.signature == expected.signatures["cider_d"] and "df:file:" in m.signature


@pytest.mark.parametrize("name", ["BLEU", "METEOR", "ROUGEL"])
def test_statistics_states_hold_no_text_and_reduce(name):
    """update() keeps the batch's statistics (no caption text); keep_per_caption=False reduces
    them to what the corpus score reads, with the same value."""
    kept, reduced = (tm.BLEU(4, allow_empty=True, keep_per_caption=k) if name == "BLEU" else
                     getattr(tm, name)(allow_empty=True, keep_per_caption=k) for k in (True, False))
    for m in (kept, reduced):
        assert m.by_statistics and not hasattr(m, "cand_bytes")
        for i in range(0, len(CANDS), 4):
            m.update(CANDS[i:i + 4], REFS[i:i + 4])
    expected = _result(name, CANDS, REFS)
    assert kept.compute().item() == reduced.compute().item() == expected.corpus[OUTPUT[name]]
    assert kept.result.per_caption[OUTPUT[name]].tolist() == expected.per_caption[OUTPUT[name]].tolist()
    assert kept.signature == reduced.signature == expected.signatures[OUTPUT[name]]
    assert reduced.result.per_caption == {}
    if name != "ROUGEL":  # a mean keeps its column; BLEU's and METEOR's rows reduce to sums
        assert reduced.state_nbytes < kept.state_nbytes


def test_ciderd_keeps_texts_unless_its_df_is_fixed(tmp_path):
    from capeval.metrics.cider import DocumentFrequency

    assert not tm.CIDErD().by_statistics
    df_path = tmp_path / "df.json"
    DocumentFrequency.from_references([["a dog runs"], ["a cat"]], [1, 1]).save(df_path)
    assert tm.CIDErD(df=str(df_path)).by_statistics

