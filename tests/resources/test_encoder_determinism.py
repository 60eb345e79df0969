"""Issue 32, item 1: a torch-backed family's values are the same (``==``) whatever the torch
thread count, other Python threads scoring at once, the other rows of the call, or what ran
earlier in the process (``capeval.resources.torch_runner``).

Every family that can run here (tests/resources/_torch_probes.py: sentsim, BERTScore,
QACE's BERTScore of answers, learned, CLIP-S/RefCLIP-S on the tests' tiny random CLIP, sentsim
with mpnet when installed) on 300 COCO rows and on the contract test's 5 rows, under:

* the reference: a fresh process, torch at one thread, the families in one order;
* this process, after the other tests and the other families ran (reverse order), torch at
  two threads, and the rows reversed (other batch-mates for every text; not for learned,
  whose BERTScore feature keeps bert_score's neighbour-dependent padding floor);
* two Python threads scoring at once, one with torch at one thread, the other at four.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from tests._needs import unmet
from tests.resources import _torch_probes as tp

pytestmark = [pytest.mark.needs("extra:bertscore", "extra:image", "model:encoder-minilm-l6"),
              pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
MPNET = unmet("model:encoder-mpnet-base") is None
ORDER_FREE = ("sentsim", "bertscore", "qace_bertscore", "clip", "sentsim_mpnet")


def _families(corpus: str) -> list[str]:
    """On the 300 rows, the families that run the encoders themselves; learned's and QACE's
    torch-backed values are their sentsim and BERTScore parts, so they (and mpnet, 40 texts a
    second) run on the 5 rows only, to keep this file under a minute."""
    if corpus == "coco":
        return ["sentsim", "bertscore", "clip"]
    return ["sentsim", "bertscore", "qace_bertscore", "learned", "clip"] + (["sentsim_mpnet"] if MPNET else [])


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    import torch

    from capeval.paths import data_root

    folder = tmp_path_factory.mktemp("torch_probes")
    root = data_root()
    corpora: dict = {}
    if root is not None:
        c, r = tp.coco_rows(root, 300)
        corpora["coco"] = [c, r]
    corpora["contract"] = list(tp.contract_rows())
    tiny = tp.make_tiny_clip(folder / "tiny", max(len(v[0]) for v in corpora.values()))
    (folder / "tiny" / "tiny.json").write_text(json.dumps(tiny))
    for v in corpora.values():
        v.append(tiny["images"][:len(v[0])])
    spec = {"__probes__": {k: _families(k) for k in corpora}, **corpora}
    (folder / "corpora.json").write_text(json.dumps(spec))
    out = folder / "reference.npz"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "tests.resources._torch_probes", str(out), str(folder / "tiny"),
                           str(folder / "corpora.json")], check=False, cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(out) as z:
        reference = {k: z[k] for k in z.files}
    threads = torch.get_num_threads()
    yield {"corpora": {k: tuple(v) for k, v in corpora.items()}, "tiny": tiny, "reference": reference,
           "here": {}}
    torch.set_num_threads(threads)


def _reference(setup, corpus: str, family: str) -> dict[str, np.ndarray]:
    prefix = f"{corpus}/{family}/"
    return {k[len(prefix):]: v for k, v in setup["reference"].items() if k.startswith(prefix)}


def _here(setup, corpus: str) -> dict[str, dict[str, np.ndarray]]:
    """Every family in this process, in reverse order, torch at two threads, rows reversed
    where a family's rows are independent of each other."""
    import torch

    if corpus not in setup["here"]:
        probes = tp.probes(setup["tiny"], mpnet=MPNET)
        keep = torch.get_num_threads()
        torch.set_num_threads(2)
        try:
            got = {}
            for name in reversed(_families(corpus)):
                got[name] = tp.run(probes[name], setup["corpora"][corpus], reverse=name in ORDER_FREE)
        finally:
            torch.set_num_threads(keep)
        setup["here"][corpus] = got
    return setup["here"][corpus]


def _corpus(setup, corpus: str):
    if corpus not in setup["corpora"]:
        pytest.skip("benchmark data not found (tanti-coco's COCO rows): set CAPEVAL_DATA")


CASES = [pytest.param(c, f, id=f"{c}-{f}") for c in ("coco", "contract") for f in _families(c)]


@pytest.mark.parametrize(("corpus", "family"), CASES)
def test_same_in_a_fresh_process_and_here_after_other_families(setup, corpus, family):
    _corpus(setup, corpus)
    ref = _reference(setup, corpus, family)
    got = _here(setup, corpus)[family]
    assert ref and set(ref) == set(got)
    n = len(setup["corpora"][corpus][0])
    for k in ref:
        assert ref[k].shape == (n,), k
        assert np.array_equal(ref[k], got[k], equal_nan=True), (k, tp.largest_difference({k: ref[k]}, {k: got[k]}))


@pytest.mark.parametrize(("corpus", "family"), CASES)
def test_same_with_two_threads_at_once_at_torch_threads_1_and_4(setup, corpus, family):
    import torch

    _corpus(setup, corpus)
    ref = _reference(setup, corpus, family)
    probe = tp.probes(setup["tiny"], mpnet=MPNET)[family]
    results: list = [None, None]
    errors: list = []
    start = threading.Barrier(2)

    def worker(k: int, threads: int) -> None:
        try:
            torch.set_num_threads(threads)
            start.wait()
            results[k] = tp.run(probe, setup["corpora"][corpus])
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    workers = [threading.Thread(target=worker, args=(k, n)) for k, n in enumerate((1, 4))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors[0]
    for got in results:
        for k in ref:
            assert np.array_equal(ref[k], got[k], equal_nan=True), (k, tp.largest_difference({k: ref[k]}, {k: got[k]}))


def test_the_runner_leaves_the_callers_torch_threads_alone():
    import torch

    from capeval.resources import torch_runner

    keep = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        seen = torch_runner.run(lambda _: torch.get_num_threads(), range(6), workers=2)
        assert seen == [1] * 6  # every task runs single-threaded
        assert torch.get_num_threads() == 3
        # a thread that has not used torch yet starts from torch's default, which is the caller's again
        fresh: list = []
        t = threading.Thread(target=lambda: fresh.append(torch.get_num_threads()))
        t.start()
        t.join()
        assert fresh == [3]
    finally:
        torch.set_num_threads(keep)


def test_fixed_batches_have_one_shape_per_key():
    from capeval.resources.torch_runner import ROWS, fixed_batches

    keys = [5, 7, 7, 3, 7, 5, 9, 7, 7] + [7] * 10
    batches = fixed_batches(keys)
    assert all(len(b) == ROWS and len({keys[i] for i in b}) == 1 for b in batches)
    assert sorted({i for b in batches for i in b}) == list(range(len(keys)))
    # filler copies repeat a member of the batch, never another key's input
    assert fixed_batches([4, 4, 2], rows=lambda k: k) == [[0, 1, 0, 0], [2, 2]]
    with pytest.raises(ValueError, match="at least 1"):
        fixed_batches([1], rows=0)


def test_a_task_error_reaches_the_caller_and_nested_runs_go_inline():
    from capeval.resources import torch_runner

    def work(k):
        if k == 3:
            raise ValueError("task 3 failed")
        return k

    with pytest.raises(ValueError, match="task 3 failed"):
        torch_runner.run(work, range(6), workers=2)
    nested = torch_runner.run(lambda k: torch_runner.run(lambda j: (k, j, torch_runner.on_runner_thread()),
                                                         range(2)), range(3), workers=2)
    assert nested == [[(k, j, True) for j in range(2)] for k in range(3)]
