"""Every class of capeval.compat.pycocoevalcap against pycocoevalcap 1.2 itself, ``==`` with the
same types and shapes, and COCOEvalCap's printed lines identical but for pycocotools' timings.

Both flows run on the same pycocotools ``COCO`` objects with every scorer's inputs and outputs
recorded (tests/compat/_flow.py); each compat class is then held to the original's output on the
same input. pycocoevalcap runs its jars (PTB tokenizer, METEOR), so these tests need Java; the
compat side uses none. SPICE is the agreed exception: the jar needs CoreNLP's models (a download)
and capeval's SPICE-py is an approximation, so in these flows both sides' ``Spice`` is one
stand-in (SPICE-py itself is checked against the jar's format in test_pycocoevalcap_api.py and
in the example flow). The reference flows run once per module.
"""
from __future__ import annotations

import pytest

import capeval.compat.pycocoevalcap.eval as ours_eval

from ._corpus import coco_rows, fuzz_rows
from ._flow import load_coco, recording, run_flow, without_timing, write_coco
from ._same import assert_same

pytestmark = [pytest.mark.oracle, pytest.mark.java]
pe = pytest.importorskip("pycocoevalcap.eval", reason="pycocoevalcap 1.2 (the oracle) not installed")
pytest.importorskip("pycocotools.coco", reason="pycocotools (COCO objects for the flow) not installed")

SCORERS = ("PTBTokenizer", "Bleu", "Meteor", "Rouge", "Cider")


def _both_flows(tmp, rows):
    coco, coco_res = load_coco(*write_coco(tmp, *rows))
    with recording(pe) as ref_calls:
        ref, ref_lines = run_flow(pe.COCOEvalCap, coco, coco_res)
    with recording(ours_eval) as our_calls:
        ours, our_lines = run_flow(ours_eval.COCOEvalCap, coco, coco_res)
    return dict(ref=ref, ref_lines=ref_lines, ref_calls=ref_calls, ours=ours, our_lines=our_lines,
                our_calls=our_calls)


@pytest.fixture(scope="module")
def coco5k(data_dir, java, tmp_path_factory):
    rows = coco_rows(data_dir)
    assert len(rows[0]) == 5000
    return _both_flows(tmp_path_factory.mktemp("coco5k"), rows)


@pytest.fixture(scope="module")
def fuzz(java, tmp_path_factory):
    return _both_flows(tmp_path_factory.mktemp("fuzz"), fuzz_rows())


def _check_flows(f):
    assert without_timing(f["our_lines"]) == without_timing(f["ref_lines"])
    assert_same(f["ours"].eval, f["ref"].eval, "eval")
    assert_same(f["ours"].imgToEval, f["ref"].imgToEval, "imgToEval")
    assert_same(f["ours"].evalImgs, f["ref"].evalImgs, "evalImgs")


def _check_classes(f):
    for name in SCORERS:
        ours, ref = f["our_calls"][name], f["ref_calls"][name]
        assert len(ref) == (2 if name == "PTBTokenizer" else 1) and len(ours) == len(ref), name
        for i, ((our_args, our_out), (ref_args, ref_out)) in enumerate(zip(ours, ref)):
            # Inputs equal (the tokenizer's outputs feed the scorers), then outputs.
            assert_same(our_args, ref_args, f"{name} call {i} inputs")
            assert_same(our_out, ref_out, f"{name} call {i}")


@pytest.mark.data
@pytest.mark.slow
def test_coco_flow_prints_and_fills_the_same(coco5k):
    _check_flows(coco5k)
    assert coco5k["ref"].eval["CIDEr"] > 0.5  # a real system, not an empty flow


@pytest.mark.data
@pytest.mark.slow
def test_coco_every_class_equals_pycocoevalcap(coco5k):
    _check_classes(coco5k)


@pytest.mark.slow
def test_fuzz_flow_prints_and_fills_the_same(fuzz):
    _check_flows(fuzz)


@pytest.mark.slow
def test_fuzz_every_class_equals_pycocoevalcap(fuzz):
    _check_classes(fuzz)


def _raw_gts_res(rows):
    ids, refs, cands = rows
    return {i: list(r) for i, r in zip(ids, refs)}, {i: [c] for i, c in zip(ids, cands)}


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::capeval.compat.CompatNotice")
def test_scorers_on_untokenized_fuzz_text(java):
    """Scorers called directly on raw text (no tokenizer): odd whitespace, punctuation, empty
    strings. No line breaks: there capeval differs on purpose (test_pycocoevalcap_api.py)."""
    from pycocoevalcap.bleu.bleu import Bleu as RefBleu
    from pycocoevalcap.cider.cider import Cider as RefCider
    from pycocoevalcap.meteor.meteor import Meteor as RefMeteor
    from pycocoevalcap.rouge.rouge import Rouge as RefRouge

    from capeval.compat.pycocoevalcap.bleu.bleu import Bleu
    from capeval.compat.pycocoevalcap.cider.cider import Cider
    from capeval.compat.pycocoevalcap.meteor.meteor import Meteor
    from capeval.compat.pycocoevalcap.rouge.rouge import Rouge

    gts, res = _raw_gts_res(fuzz_rows(n=80, seed=7, newline=False))
    for ours, ref in ((Bleu(4), RefBleu(4)), (Rouge(), RefRouge()), (Cider(), RefCider()),
                      (Meteor(), RefMeteor())):
        kwargs = {"verbose": 0} if isinstance(ours, Bleu) else {}
        assert_same(ours.compute_score(gts, res, **kwargs), ref.compute_score(gts, res, **kwargs),
                    type(ours).__name__)
        assert ours.method() == ref.method()
