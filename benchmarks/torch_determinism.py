"""Largest difference per torch-backed family across the conditions of issue 32, item 1.

Every family that runs here (tests/resources/_torch_probes.py: sentsim, BERTScore, QACE's
BERTScore of answers, learned, CLIP-S/RefCLIP-S on the tests' tiny random CLIP, and sentsim
with mpnet when installed) scores the first ``--rows`` COCO rows of tanti-coco (a system's
caption, one reference) and the contract test's 5 rows. The reference is a fresh process at one
torch thread, families in one order; against it, in this process:

* ``threads2_after_others_reversed``: torch at 2 threads, after every other family ran
  (reverse order), rows reversed where a family's rows are independent (not learned: its
  BERTScore feature keeps bert_score's neighbour-dependent padding floor);
* ``threads4``: torch at 4 threads;
* ``two_threads_1_and_4``: two Python threads scoring at once, torch at 1 in one and 4 in
  the other.

Prints the largest absolute difference per family and condition, and writes
benchmarks/results/torch_determinism.json. ``==`` everywhere is the target.

    python benchmarks/torch_determinism.py [--rows 300] [--out PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.resources import _torch_probes as tp  # noqa: E402 - after the sys.path entry

ORDER_FREE = {"sentsim", "bertscore", "qace_bertscore", "clip", "sentsim_mpnet"}


def _mpnet() -> bool:
    from capeval.errors import ResourceNotFound
    from capeval.resources.encoders import resolve_encoder

    try:
        resolve_encoder("mpnet")
    except ResourceNotFound:
        return False
    return True


def _concurrent(probe, rows) -> list[dict]:
    import torch

    results: list = [None, None]
    errors: list = []
    start = threading.Barrier(2)

    def worker(k: int, threads: int) -> None:
        try:
            torch.set_num_threads(threads)
            start.wait()
            results[k] = tp.run(probe, rows)
        except Exception as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    workers = [threading.Thread(target=worker, args=(k, n)) for k, n in enumerate((1, 4))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise errors[0]
    return results


def main() -> None:
    import torch

    import capeval
    from capeval.paths import data_root

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=300, help="COCO rows (default 300)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "torch_determinism.json")
    args = ap.parse_args()

    mpnet = _mpnet()
    families = ["sentsim", "bertscore", "qace_bertscore", "learned", "clip"] + (["sentsim_mpnet"] if mpnet else [])
    corpora: dict = {"contract": list(tp.contract_rows())}
    root = data_root()
    if root is not None:
        corpora = {"coco": list(tp.coco_rows(root, args.rows)), **corpora}
    else:
        print("benchmark data not found (set CAPEVAL_DATA): the contract rows only", file=sys.stderr)
    wanted = {k: [f for f in families if f != "sentsim_mpnet" or k == "contract"] for k in corpora}

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tiny = tp.make_tiny_clip(folder / "tiny", max(len(v[0]) for v in corpora.values()))
        (folder / "tiny" / "tiny.json").write_text(json.dumps(tiny))
        for v in corpora.values():
            v.append(tiny["images"][:len(v[0])])
        (folder / "corpora.json").write_text(json.dumps({"__probes__": wanted, **corpora}))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        subprocess.run([sys.executable, "-m", "tests.resources._torch_probes", str(folder / "ref.npz"),
                        str(folder / "tiny"), str(folder / "corpora.json")], cwd=ROOT, env=env, check=True)
        with np.load(folder / "ref.npz") as z:
            reference = {k: z[k] for k in z.files}

        probes = tp.probes(tiny, mpnet=mpnet)
        keep = torch.get_num_threads()
        table: dict = {}
        try:
            for corpus, (c, r, images) in corpora.items():
                rows = (c, r, images)
                ref = {f: {k.split("/", 2)[2]: v for k, v in reference.items() if k.startswith(f"{corpus}/{f}/")}
                       for f in wanted[corpus]}
                got: dict = {f: {} for f in wanted[corpus]}
                torch.set_num_threads(2)
                for f in reversed(wanted[corpus]):
                    got[f]["threads2_after_others_reversed"] = tp.largest_difference(
                        ref[f], tp.run(probes[f], rows, reverse=f in ORDER_FREE))
                torch.set_num_threads(4)
                for f in wanted[corpus]:
                    got[f]["threads4"] = tp.largest_difference(ref[f], tp.run(probes[f], rows))
                torch.set_num_threads(keep)
                for f in wanted[corpus]:
                    got[f]["two_threads_1_and_4"] = max(tp.largest_difference(ref[f], x)
                                                        for x in _concurrent(probes[f], rows))
                table[corpus] = {"rows": len(c), "families": got}
        finally:
            torch.set_num_threads(keep)

    width = max(len(f) for f in families)
    for corpus, entry in table.items():
        print(f"{corpus} ({entry['rows']} rows): largest |difference| from a fresh process at 1 torch thread")
        for f, conds in entry["families"].items():
            cells = "  ".join(f"{k}={v:.3g}" for k, v in conds.items())
            print(f"  {f:<{width}}  max={max(conds.values()):.3g}  {cells}")
    out = {
        "what": "largest absolute per-row difference from a fresh process at one torch thread (0 = identical)",
        "capeval": capeval.__version__, "torch": torch.__version__, "python": platform.python_version(),
        "cpu_count": os.cpu_count(), "corpora": table,
        "all_identical": all(v == 0.0 for e in table.values() for c in e["families"].values() for v in c.values()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
