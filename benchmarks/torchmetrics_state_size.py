"""Per-rank state size of the torchmetrics metrics under DDP: statistics against texts (issue 34).

``--rows`` synthetic COCO-style rows (``stream_synth.py``: a unique candidate and 5 unique
references per row) are split over 2 gloo processes on CPU (rank 0 the first half). Each rank
updates every wrapped class of ``capeval.integrations.torchmetrics`` in batches of ``--batch``
rows, then reports its ``state_nbytes`` (bytes of its own states, per state name), the bytes
after the sync (every rank's states gathered, what ``compute()`` reads) and the UTF-8 bytes of
its captions and references; every rank's value and signature must ``==`` ``capeval.score`` on
all the rows. Variants: CIDEr-D with df from the gathered references (the default, which keeps
the texts: a stated rule) and with a df file (from ``--rows`` other rows, as a training set's
df), BLEU and METEOR also with ``keep_per_caption=False`` (summed per batch).
Writes benchmarks/results/torchmetrics_state_size.json. Not timed.

    python benchmarks/torchmetrics_state_size.py [--rows 1000] [--batch 50] [--no-spice]
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

WORLD = 2


def _specs(df_path: str, spice: bool) -> list[tuple[str, str, dict, dict | None]]:
    """(label, class, keyword arguments, capeval.score options of the same numbers)."""
    specs = [
        ("CIDErD (df from the gathered references: texts)", "CIDErD", {}, None),
        ("CIDErD (df file)", "CIDErD", {"df": df_path}, {"cider_d": {"df": df_path}}),
        ("BLEU", "BLEU", {}, None),
        ("BLEU (keep_per_caption=False)", "BLEU", {"keep_per_caption": False}, None),
        ("METEOR", "METEOR", {}, None),
        ("METEOR (keep_per_caption=False)", "METEOR", {"keep_per_caption": False}, None),
        ("ROUGEL", "ROUGEL", {}, None),
    ]
    if spice:
        specs.append(("SPICE", "SPICE", {}, None))
    return specs


def _nbytes(metric) -> dict[str, int]:
    out = {}
    for name in metric._states():
        state = getattr(metric, name)
        out[name] = sum(t.numel() * t.element_size() for t in (state if isinstance(state, list) else [state]))
    return out


def run_rank(rank: int, tmp: str, shards: list, specs: list, batch: int) -> None:
    import torch.distributed as dist

    from capeval.integrations import torchmetrics as tm

    dist.init_process_group("gloo", init_method=f"file://{tmp}/rendezvous", rank=rank, world_size=WORLD)
    try:
        cands, refs = shards[rank]
        out = {}
        for label, cls, kwargs, _ in specs:
            metric = getattr(tm, cls)(**kwargs)
            for i in range(0, len(cands), batch):
                metric.update(cands[i:i + batch], refs[i:i + batch])
            local = _nbytes(metric)
            metric.sync()
            gathered = metric.state_nbytes
            metric.unsync()
            value = metric.compute()
            out[label] = {"by_statistics": metric.by_statistics, "state_nbytes": sum(local.values()),
                          "state_nbytes_by_state": local, "after_sync_nbytes": gathered,
                          "value": float(value).hex(), "signature": metric.signature}
        Path(tmp, f"rank{rank}.json").write_text(json.dumps(out))
    finally:
        dist.destroy_process_group()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=50, help="rows per update() (default %(default)s)")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--no-spice", action="store_true", help="leave SPICE out (SPICE-py needs WordNet and spaCy)")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "torchmetrics_state_size.json")
    a = ap.parse_args(argv)
    if a.rows < WORLD or a.batch < 1:
        ap.error(f"--rows must be at least {WORLD} and --batch positive")

    import torch.multiprocessing as mp

    import capeval
    from capeval.metrics.cider import DocumentFrequency
    from stream_synth import Generator

    gen = Generator(a.seed)
    rows = [gen.row(i) for i in range(a.rows)]
    cands = [r["candidate"] for r in rows]
    refs = [r["references"] for r in rows]
    half = (a.rows + 1) // 2
    shards = [(cands[:half], refs[:half]), (cands[half:], refs[half:])]
    report: dict = {
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "rows": a.rows, "ranks": WORLD, "backend": "gloo (CPU)", "batch_rows": a.batch,
        "generator": f"benchmarks/stream_synth.py seed {a.seed} (a unique candidate and 5 unique references per row)",
        "text_utf8_bytes_per_rank": [sum(len(c.encode()) + sum(len(x.encode()) for x in r) for c, r in zip(*s))
                                     for s in shards],
        "note": ("state_nbytes: this rank's states before the sync; after_sync_nbytes: every rank's, "
                 "gathered for compute(). stat_meta is each batch's layout (pickled: columns, "
                 "aggregate, signature): a fixed cost per update(), not per row"),
        "families": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        df_path = str(Path(tmp) / "train-df.json")
        train = [gen.row(i)["references"] for i in range(a.rows, 2 * a.rows)]
        DocumentFrequency.from_references(train, [1] * len(train)).save(df_path)
        specs = _specs(df_path, not a.no_spice)
        mp.spawn(run_rank, args=(tmp, shards, specs, a.batch), nprocs=WORLD, join=True)
        ranks = [json.loads(Path(tmp, f"rank{r}.json").read_text()) for r in range(WORLD)]
        for label, cls, _kwargs, options in specs:
            from capeval.integrations import torchmetrics as tm

            output = getattr(tm, cls).output if cls != "BLEU" else "bleu4"
            expected = capeval.score(cands, refs, [output], options=options)
            equal = all(float.fromhex(r[label]["value"]) == expected.corpus[output]
                        and r[label]["signature"] == expected.signatures[output] for r in ranks)
            if not equal:
                raise SystemExit(f"{label}: a rank's value or signature differs from capeval.score on all rows")
            report["families"][label] = {
                "by_statistics": ranks[0][label]["by_statistics"],
                "equal_to_capeval_score_on_all_rows": equal,
                "per_rank": [{k: r[label][k] for k in ("state_nbytes", "state_nbytes_by_state", "after_sync_nbytes")}
                             for r in ranks],
                "state_over_text": [round(r[label]["state_nbytes"] / t, 3)
                                    for r, t in zip(ranks, report["text_utf8_bytes_per_rank"])],
            }
            print(label, json.dumps(report["families"][label]["per_rank"][0]["state_nbytes"]),
                  report["families"][label]["state_over_text"], flush=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
