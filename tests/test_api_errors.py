"""Bad metric names, options and ids are named errors (InputError), not raw tracebacks, and
misspelt option keys or families are never ignored silently."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

import capeval
from capeval.cli.main import app
from capeval.errors import CapevalError, InputError, UnknownMetricError

C = ["a dog runs on the grass", "two cats sleep"]
R = [["a dog is running"], ["two cats are sleeping"]]


@pytest.mark.parametrize("metrics, options, ids, err, match", [
    ([], None, None, InputError, "no metrics requested"),
    ([""], None, None, InputError, "empty or non-string metric name"),
    (["cider_d"], {"cider_d": {"sigmaa": 3}}, None, InputError, r"unknown option\(s\) 'sigmaa' for cider_d; did you mean sigma\? accepted: df, sigma"),
    (["bleu4"], {"cidr_d": {"sigma": 3}}, None, UnknownMetricError,
     r"unknown metric family 'cidr_d'; did you mean cider_d or cider\?"),
    ("", None, None, InputError, r"metrics='' names no metric: pass a name"),
    (" , ", None, None, InputError, r"metrics=' , ' names no metric"),
    ("b", None, None, UnknownMetricError, r"unknown metric 'b'; known: bertscore_f"),
    (["bleu"], None, None, UnknownMetricError, r"unknown metric 'bleu'; did you mean bleu4, bleu3, bleu2 or bleu1\?"),
    (["CIDEr"], None, None, UnknownMetricError, r"unknown metric 'CIDEr'; did you mean cider\? \(all: capeval metrics"),
    ("Bleu_4,METEOR", None, None, UnknownMetricError, r"unknown metric 'Bleu_4'; did you mean bleu4\?"),
    (["COCO"], None, None, UnknownMetricError, r"unknown metric 'COCO'; did you mean coco\?"),
    (["cider_d"], {"cider_d": {"sigma": 0}}, None, InputError, "sigma must be a positive finite number"),
    (["cider_d"], {"cider_d": {"sigma": float("nan")}}, None, InputError, "sigma must be a positive finite number"),
    (["bleu4"], {"bleu": {"n": 3}}, None, InputError, "bleu options"),
    (["bleu4"], {"bleu": "n=3"}, None, InputError, "options for bleu must be a mapping"),
    (["bleu4"], None, ["a\ud800", "b"], InputError, r"id of item 0 is not valid Unicode"),
])
def test_named_errors(metrics, options, ids, err, match):
    with pytest.raises(err, match=match):
        capeval.score(C, R, metrics, options=options, ids=ids, tokenizer="none")


@pytest.mark.parametrize("metrics, names", [
    ("bleu4", ["bleu4"]),
    ("bleu4, rouge_l,", ["bleu4", "rouge_l"]),
    ("ngram", ["bleu1", "bleu2", "bleu3", "bleu4", "rouge_l", "cider_d"]),
    (["bleu4", "ngram"], ["bleu4", "bleu1", "bleu2", "bleu3", "rouge_l", "cider_d"]),
])
def test_metrics_as_a_string_or_with_set_names(metrics, names):
    """A string is one name or a comma-separated list, as ``capeval score -m`` reads it (never
    one metric per character), and a set name stands for its metrics."""
    res = capeval.score(C, R, metrics, tokenizer="none")
    assert list(res.corpus) == names
    assert res.corpus == capeval.score(C, R, names, tokenizer="none").corpus


def test_cli_suggests_metric_names(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("id,candidate,ref1\na,a dog runs,a dog is running\nb,two cats,cats sleeping\n")
    for metrics, hint in (("bleu", "did you mean bleu4, bleu3, bleu2 or bleu1?"), ("CIDEr", "did you mean cider?"),
                          ("bleu4,CIDEr-D", "did you mean cider_d?"), ("COCO", "did you mean coco?")):
        res = CliRunner().invoke(app, ["score", "-i", str(p), "-q", "-m", metrics])
        text = " ".join(res.output.split())
        assert res.exit_code == 2 and hint in text and "Traceback" not in text, text
        assert "known:" not in text  # the suggestion is not buried under every name


def test_cli_reports_one_line_errors(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("id,candidate,ref1\na,a dog runs,a dog is running\nb,two cats,cats sleeping\n")
    for args, match in ((["-m", ","], "no metrics requested"),
                        (["-m", "cider_d", "-O", "cider_d.sigmaa=3"], "unknown option"),
                        (["-m", "cider_d", "-O", "cider_d.sigma=0"], "sigma must be")):
        res = CliRunner().invoke(app, ["score", "-i", str(p), "-q", *args])
        assert res.exit_code == 2, res.output  # the CLI's error exit, not a traceback (exit 1)
        assert match in " ".join(res.output.split()) and "Traceback" not in res.output


def test_truncated_mat_file_is_a_named_error(tmp_path):
    import numpy as np
    from scipy.io import savemat

    from capeval.data._common import load_mat

    p = tmp_path / "x.mat"
    savemat(p, {"a": np.arange(5000.0)}, do_compression=True)
    p.write_bytes(p.read_bytes()[:300])
    with pytest.raises(InputError, match=r"x.mat: not a readable MATLAB file"):
        load_mat(p)
    assert issubclass(InputError, CapevalError)


@pytest.mark.parametrize("text", ["...", " - ", "--"])
def test_candidate_empty_after_tokenization_follows_the_empty_rule(text):
    cands = [text, "a dog runs"]
    refs = [["a dog"], ["a dog runs fast"]]
    with pytest.raises(InputError, match=r"candidate 0 \(id 'x'\) is empty after the ptb tokenizer"):
        capeval.score(cands, refs, ["bleu4", "cider_d"], ids=["x", "y"])
    with pytest.warns(UserWarning, match="1 of 2 candidates empty after the ptb tokenizer"):
        r = capeval.score(cands, refs, ["bleu4", "cider_d"], allow_empty=True)
    assert r.details["input"]["empty_after_tokenization"] == {"candidates": 1}
    assert r.per_caption["bleu4"][0] == 0.0


def test_reference_empty_after_tokenization_is_counted_and_warned():
    with pytest.warns(UserWarning, match="2 of 4 references empty after the ptb tokenizer"):
        r = capeval.score(["a dog", "a cat"], [["a dog", "..."], ["a cat", "--"]], ["bleu4"])
    assert r.details["input"]["empty_after_tokenization"] == {"references": 2}
    # nothing to report: no key, no warning
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "input" not in capeval.score(["a dog", "a cat"], [["a dog"], ["a cat"]], ["bleu4"]).details


def test_empty_reference_warning_counts_every_reference_out_of_the_total():
    """Each reference counts, repeats included; "!!!" is a PTB token (the jar keeps it), so it is
    not empty."""
    import warnings

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = capeval.score(["a dog", "two cats"], [["!!!", "..."], ["...", ","]], ["bleu1"])
    assert r.details["input"]["empty_after_tokenization"] == {"references": 3}
    assert any("3 of 4 references empty" in str(x.message) for x in w)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = capeval.score(["a dog", "two cats"], [["...", "..."], ["...", ","]], ["bleu1"])
    assert r.details["input"]["empty_after_tokenization"] == {"references": 4}
    assert any("4 of 4 references empty" in str(x.message) for x in w)


def test_learned_range_says_what_its_scale_means():
    from capeval.metrics.registry import list_metrics

    (info,) = [m for m in list_metrics() if m.name == "learned"]
    assert info.range == (float("-inf"), float("inf"))
    assert "only its order is meaningful" in info.description


def test_missing_meteor_resources_are_named_before_any_family_scores(tmp_path):
    # A plain install has no METEOR data: the call must fail before BLEU runs, not after.
    events = []
    with pytest.raises(capeval.errors.ResourceNotFound) as e:
        capeval.score(["a dog runs"], [["a dog is running"]], ["bleu4", "meteor"],
                      options={"meteor": {"jar": str(tmp_path / "meteor-1.5.jar")}},
                      on_chunk=lambda *ev: events.append(ev))
    assert str(e.value).startswith("meteor:") and events == []


def test_missing_extras_and_resources_are_named_in_one_error(tmp_path, monkeypatch):
    # A missing extra (simulated) and SPICE-py's missing WordNet come in one error, not one at a time.
    from capeval import extras

    real = extras._importable
    monkeypatch.setattr(extras, "_importable", lambda m: False if m == "ot" else real(m))
    with pytest.raises(capeval.errors.ResourceNotFound) as e:
        capeval.score(["a dog runs"], [["a dog is running"]], ["wmd", "spice"],
                      options={"spice": {"wordnet": str(tmp_path)}})
    text = str(e.value)
    assert "[semantic]" in text and "spice: wordnet:" in text and str(tmp_path) in text


@pytest.mark.parametrize("cands, refs", [(["", "two cats"], R), (C, [[" "], ["two cats are sleeping"]])])
def test_learned_refusal_of_empty_text_does_not_offer_allow_empty(cands, refs):
    """allow_empty was given, so the refusal says the learned model cannot score empty text
    rather than offering allow_empty again."""
    with pytest.raises(InputError, match=r"is empty, and a learned model's features cannot score empty text") as e:
        capeval.score(cands, refs, ["nneval"], allow_empty=True)
    assert "Pass allow_empty" not in str(e.value)


def test_score_stream_takes_metrics_as_one_string(tmp_path):
    import json

    p = tmp_path / "rows.jsonl"
    p.write_text("".join(json.dumps({"id": i, "candidate": c, "references": r}) + "\n" for i, (c, r) in enumerate(zip(C, R))))
    res = capeval.score_stream(p, "bleu4, rouge_l")
    assert list(res.corpus) == ["bleu4", "rouge_l"]
    assert res.corpus == capeval.score_stream(p, ["bleu4", "rouge_l"]).corpus
