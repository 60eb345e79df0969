"""``COCOEvalCap(coco, coco_res).evaluate()``: capeval's drop-in (capeval.compat.pycocoevalcap) vs
pycocoevalcap 1.2, side by side in one run, on one where-image2 system's captions of the 5,000
COCO Karpathy-test images (pycocotools ``COCO`` objects, as the original example builds them).

Each side runs in its own fresh Python process, timed from importing its ``COCOEvalCap`` to
``evaluate()`` returning (pycocoevalcap: two PTB tokenizer JVMs and the METEOR JVM, which loads the
paraphrase table; capeval: no Java, the native METEOR's converted resources as already cached
by an earlier run -- a cold cache adds the one-time conversion, see bench_meteor_native.py).
Recorded per side: wall and CPU seconds (CPU includes finished child processes, the JVMs), peak
RSS, seconds per scorer, ``.eval``. Both sides' ``.eval`` must be equal for the timing to count.

SPICE: pycocoevalcap's jar needs Stanford CoreNLP's models (a download) and cannot run offline,
so both timed flows replace ``Spice`` by the same no-op; a third run times capeval's full flow
with SPICE-py (an approximation, not the jar) for what a user of the drop-in actually waits.

    python benchmarks/compat_speed.py [--system merge_1] [--images N] [--result PATH]
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SIDES = ("pycocoevalcap", "capeval", "capeval_with_spice_py")


def _cpu_seconds() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class _NoSpice:
    """SPICE left out of a timed flow (see the module docstring)."""

    def compute_score(self, gts, res):
        import numpy as np

        return np.float64(0.0), [{"All": {"f": 0.0}} for _ in gts]

    def method(self):
        return "SPICE"


def _timed(cls, method: str, seconds: dict):
    class Timed(cls):
        pass

    def call(self, *args, **kwargs):
        t = time.perf_counter()
        try:
            return getattr(super(Timed, self), method)(*args, **kwargs)
        finally:
            name = cls.__name__ if cls is not _NoSpice else "Spice"
            seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - t

    setattr(Timed, method, call)
    return Timed


def run_side(side: str, ann: Path, res: Path, out: Path) -> None:
    from pycocotools.coco import COCO

    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO(str(ann))
        coco_res = coco.loadRes(str(res))
    load = os.getloadavg()
    cpu0, t0 = _cpu_seconds(), time.perf_counter()
    if side == "pycocoevalcap":
        import pycocoevalcap.eval as ev_mod
    else:
        import capeval.compat.pycocoevalcap.eval as ev_mod
    t_import = time.perf_counter() - t0
    seconds: dict[str, float] = {}
    ev_mod.PTBTokenizer = _timed(ev_mod.PTBTokenizer, "tokenize", seconds)
    for name in ("Bleu", "Meteor", "Rouge", "Cider"):
        setattr(ev_mod, name, _timed(getattr(ev_mod, name), "compute_score", seconds))
    ev_mod.Spice = _timed(ev_mod.Spice if side == "capeval_with_spice_py" else _NoSpice, "compute_score", seconds)
    ev = ev_mod.COCOEvalCap(coco, coco_res)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        ev.evaluate()
    gc.collect()  # pycocoevalcap's Meteor kills and waits for its JVM when collected: its CPU is then counted
    elapsed = time.perf_counter() - t0
    cpu = _cpu_seconds() - cpu0
    out.write_text(json.dumps({
        "seconds": elapsed, "cpu_seconds": cpu, "import_seconds": t_import,
        "scorer_seconds": seconds,
        "eval": {k: float(v) for k, v in ev.eval.items()},
        "printed": printed.getvalue().splitlines(),
        "load_average_at_start": load,
        "peak_rss_mib_python": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "peak_rss_mib_largest_child": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    }))


def write_coco(tmp: Path, system: str, images: int | None) -> tuple[Path, Path, int]:
    import re

    import capeval.data

    t = capeval.data.load("tanti-coco")
    ids = [int(re.search(r"(\d+)\.\w+$", name).group(1)) for name in t.image_ids]
    cands, refs = t.systems[system], t.references
    n = len(ids) if images is None else images
    anns = [{"image_id": i, "id": k, "caption": r}
            for k, (i, r) in enumerate(((i, r) for i, rs in zip(ids[:n], refs[:n]) for r in rs), start=1)]
    ann, res = tmp / "captions.json", tmp / "results.json"
    ann.write_text(json.dumps({"info": {}, "licenses": [], "type": "captions",
                               "images": [{"id": i} for i in ids[:n]], "annotations": anns}))
    res.write_text(json.dumps([{"image_id": i, "caption": c} for i, c in zip(ids[:n], cands[:n])]))
    return ann, res, n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--system", default="merge_1", help="where-image2 system (default merge_1)")
    ap.add_argument("--images", type=int, default=None, help="first N images only (default: all 5,000)")
    ap.add_argument("--result", type=Path, default=HERE / "results" / "compat_speed.json")
    ap.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)
    ap.add_argument("--ann", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--res", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.side:
        run_side(args.side, args.ann, args.res, args.out)
        return

    load_before = os.getloadavg()
    sides = {}
    with tempfile.TemporaryDirectory() as tmp:
        ann, res, n = write_coco(Path(tmp), args.system, args.images)
        for side in SIDES:
            path = Path(tmp) / f"{side}.json"
            subprocess.run([sys.executable, __file__, "--side", side, "--ann", str(ann), "--res", str(res),
                            "--out", str(path)], check=True)
            sides[side] = json.loads(path.read_text())
    ref, ours = sides["pycocoevalcap"], sides["capeval"]
    same_eval = ref["eval"] == ours["eval"]
    same_printed = ref["printed"] == ours["printed"]
    result = {
        "benchmark": "COCOEvalCap(coco, coco_res).evaluate() on a COCO Karpathy-test system: "
                     "capeval.compat.pycocoevalcap vs pycocoevalcap 1.2 (SPICE left out of both; "
                     "capeval_with_spice_py adds capeval's SPICE-py)",
        "system": f"tanti-coco/{args.system}",
        "images": n,
        "seconds": {k: round(v["seconds"], 3) for k, v in sides.items()},
        "cpu_seconds": {k: round(v["cpu_seconds"], 3) for k, v in sides.items()},
        "speedup_wall": round(ref["seconds"] / ours["seconds"], 2),
        "speedup_cpu": round(ref["cpu_seconds"] / ours["cpu_seconds"], 2),
        "scorer_seconds": {k: {m: round(s, 3) for m, s in v["scorer_seconds"].items()} for k, v in sides.items()},
        "import_seconds": {k: round(v["import_seconds"], 3) for k, v in sides.items()},
        "peak_rss_mib": {k: {"python": round(v["peak_rss_mib_python"], 1),
                             "largest_child": round(v["peak_rss_mib_largest_child"], 1)} for k, v in sides.items()},
        "eval": {k: v["eval"] for k, v in sides.items()},
        "eval_identical": same_eval,
        "printed_identical": same_printed,
        "load_average_before": load_before,
        "load_average_at_start": {k: v["load_average_at_start"] for k, v in sides.items()},
        "load_average_at_end": os.getloadavg(),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
    }
    if not (same_eval and same_printed):
        raise SystemExit(f"the two flows disagree (eval identical: {same_eval}, printed identical: {same_printed}); "
                         "not recording a speed comparison")
    args.result.parent.mkdir(parents=True, exist_ok=True)
    args.result.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("images", "seconds", "cpu_seconds", "speedup_wall", "speedup_cpu")}))


if __name__ == "__main__":
    main()
