"""COCO-format files from caption lists, and pycocoevalcap's ``COCOEvalCap`` flow run with its
scorers' inputs and outputs recorded (the oracle for every compat class)."""
from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import numpy as np


def coco_image_id(name: str) -> int:
    """``COCO_val2014_000000391895.jpg`` -> 391895."""
    return int(re.search(r"(\d+)\.\w+$", name).group(1))


def write_coco(tmp: Path, image_ids: list[int], refs: list[list[str]], cands: list[str]) -> tuple[Path, Path]:
    """An annotation file (captions_*.json layout) and a results file, as the COCO tools read them."""
    images = [{"id": i, "file_name": f"COCO_val2014_{i:012d}.jpg"} for i in image_ids]
    anns = [{"image_id": i, "id": n, "caption": r}
            for n, (i, r) in enumerate(((i, r) for i, rs in zip(image_ids, refs) for r in rs), start=1)]
    ann_path, res_path = tmp / "captions_val2014.json", tmp / "captions_val2014_fakecap_results.json"
    ann_path.write_text(json.dumps({"info": {}, "licenses": [], "type": "captions", "images": images,
                                    "annotations": anns}))
    res_path.write_text(json.dumps([{"image_id": i, "caption": c} for i, c in zip(image_ids, cands)]))
    return ann_path, res_path


def load_coco(ann_path: Path, res_path: Path):
    from pycocotools.coco import COCO

    with contextlib.redirect_stdout(io.StringIO()):  # pycocotools reports its loading
        coco = COCO(str(ann_path))
        return coco, coco.loadRes(str(res_path))


def run_flow(evaluator_cls, coco, coco_res, image_ids=None):
    """``evaluator_cls(coco, coco_res).evaluate()``; returns (evaluator, printed lines)."""
    ev = evaluator_cls(coco, coco_res)
    if image_ids is not None:
        ev.params["image_id"] = image_ids
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        ev.evaluate()
    return ev, buf.getvalue().splitlines()


class StandInSpice:
    """Replaces the SPICE scorer in a flow that compares everything *but* SPICE: the jar needs
    CoreNLP models (a download), and SPICE-py is an approximation, excepted from the comparison.
    Deterministic and cheap: the candidate's token count, in the jar's return format."""

    def compute_score(self, gts, res):
        ids = sorted(gts)
        f = [float(len(res[i][0].split())) for i in ids]
        return np.mean(np.array(f)), [{"All": {"f": x}} for x in f]

    def method(self):
        return "SPICE"


@contextlib.contextmanager
def recording(module, spice=StandInSpice):
    """Patch ``module``'s (``pycocoevalcap.eval`` or the shim's ``eval``) scorer classes so each
    call's inputs and outputs land in the yielded dict: ``calls[class name] = [(args, out), ...]``."""
    import copy

    calls: dict[str, list] = {}
    saved = {n: getattr(module, n) for n in ("PTBTokenizer", "Bleu", "Meteor", "Rouge", "Cider", "Spice")}

    def wrap(cls, method):
        class Recording(cls):
            pass

        def call(self, *args, **kwargs):
            out = getattr(super(Recording, self), method)(*args, **kwargs)
            calls.setdefault(cls.__name__, []).append((copy.deepcopy(args), out))
            return out

        setattr(Recording, method, call)
        Recording.__name__ = cls.__name__
        return Recording

    try:
        module.PTBTokenizer = wrap(saved["PTBTokenizer"], "tokenize")
        for n in ("Bleu", "Meteor", "Rouge", "Cider"):
            setattr(module, n, wrap(saved[n], "compute_score"))
        module.Spice = wrap(spice, "compute_score") if spice is not None else wrap(saved["Spice"], "compute_score")
        yield calls
    finally:
        for n, cls in saved.items():
            setattr(module, n, cls)


_TIMING = re.compile(r"\bt=\d+(\.\d+)?s\b")


def without_timing(lines: list[str]) -> list[str]:
    return [_TIMING.sub("t=_s", line) for line in lines]
