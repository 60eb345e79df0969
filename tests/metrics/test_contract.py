"""The contract every registered output keeps (built-in, plug-in or user-registered): on a small
fixed corpus, its per-caption scores are one per caption and inside its declared range, its
signature names variant, output, tokenizer, reference count and version, a rerun gives the same
numbers and signature, and two threads scoring at once give them too.

Outputs that read images are tested with image fixtures (test_clip*.py), not here. What a
built-in family needs beyond its pip extras (a model, a resource) is in tests/_needs.py; unmet,
its outputs are skipped at collection, and a ResourceNotFound while scoring fails. Families
that load a transformer encoder (the ``bertscore`` extra) take seconds per load and are marked
slow."""
from __future__ import annotations

import math
import threading
import warnings

import numpy as np
import pytest

import capeval
from capeval.metrics.base import Metric
from capeval.metrics.registry import family_for
from tests._needs import family_needs

CANDS = ["a dog runs on the grass", "two men ride bikes down a street", "a cat sleeps on a sofa",
         "a red ball floats in the water", "a dog runs on the grass"]
REFS = [["a dog is running on grass", "the dog runs across a lawn"],
        ["two people riding bicycles on a street", "men on bikes", "two men cycling"],
        ["a cat is sleeping on a sofa", "a cat naps"],
        ["a ball floats in the water", "a red ball on a lake"],
        ["a dog is running on grass", "the dog runs across a lawn"]]

_runs: dict[str, tuple] = {}  # family -> (first, rerun, [thread results])


def _score(names):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return capeval.score(CANDS, REFS, names)


def _family_runs(cls):
    if cls.family in _runs:
        return _runs[cls.family]
    names = list(cls.output_names())
    first = _score(names)
    rerun = _score(names)
    results, errors = [None, None], []

    def worker(k):
        try:
            results[k] = _score(names)
        except Exception as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    _runs[cls.family] = (first, rerun, results)
    return _runs[cls.family]


def _params():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a broken plug-in is tested in test_plugins.py
        outputs = capeval.list_metrics()
    out = []
    for info in outputs:
        cls = family_for(info.name)
        if cls.needs_images:
            continue
        marks = [pytest.mark.slow] if "bertscore" in cls.extras else []
        needs = family_needs(cls)
        if needs:
            marks.append(pytest.mark.needs(*needs))
        out.append(pytest.param(info, id=info.name, marks=marks))
    return out


def _same(a, b) -> bool:
    return np.array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float), equal_nan=True)


@pytest.mark.parametrize("info", _params())
def test_output_contract(info):
    cls = family_for(info.name)
    first, rerun, threaded = _family_runs(cls)
    name = info.name

    per = np.asarray(first.per_caption[name], dtype=float)
    assert per.shape == (len(CANDS),)
    lo, hi = info.range
    defined = per[~np.isnan(per)]
    if len(defined) < len(per):
        assert info.undefined, f"{name} gave NaN but declares no undefined case"
    assert np.all((defined >= lo) & (defined <= hi)), f"{name} outside {info.range}: {per}"
    corpus = first.corpus[name]
    assert (math.isnan(corpus) and info.undefined) or lo <= corpus <= hi
    # rows 0 and 4 are the same caption and references: a row's score does not depend on its place
    row_local = cls.streamable and cls.prepass is Metric.prepass and not cls.cannot_stream({})
    if row_local or np.isnan(per[0]):
        assert _same(per[0], per[4])

    sig = first.signatures[name]
    parts = sig.split("|")
    fields = dict(p.split(":", 1) for p in parts[1:])
    assert parts[0].startswith(info.variant), sig
    assert fields["out"] == name
    assert fields["tok"] and fields["nrefs"] == "var"
    assert parts[-1] == f"version:{capeval.__version__}"

    for other in (rerun, *threaded):
        assert _same(other.per_caption[name], per)
        assert _same(other.corpus[name], corpus)
        assert other.signatures[name] == sig
