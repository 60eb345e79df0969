"""One rank of the 2-process gloo run in test_torchmetrics.py (spawned, so importable by name)."""
from __future__ import annotations

import json
from pathlib import Path


def run_rank(rank: int, world: int, tmp: str, shards: list, names: list[str], empty_on_rank1: list[str]) -> None:
    import torch.distributed as dist

    from capeval.integrations import torchmetrics as tm

    dist.init_process_group("gloo", init_method=f"file://{tmp}/rendezvous", rank=rank, world_size=world)
    try:
        out = {}
        for name in names:
            metric = tm.BLEU(4, allow_empty=True) if name == "BLEU" else getattr(tm, name)(allow_empty=True)
            cands, refs = shards[rank]
            if not (rank == 1 and name in empty_on_rank1):
                for i in range(0, len(cands), 3):  # a few batches per rank
                    metric.update(cands[i:i + 3], refs[i:i + 3])
            local_bytes = metric.state_nbytes  # before compute() gathers every rank's
            value = metric.compute()
            per = metric.result.per_caption[next(iter(metric.result.per_caption))]
            out[name] = {"value": float(value).hex(), "dtype": str(value.dtype),
                         "per_caption": [float(x).hex() for x in per], "by_statistics": metric.by_statistics,
                         "state_nbytes": local_bytes}
        Path(tmp, f"rank{rank}.json").write_text(json.dumps(out))
    finally:
        dist.destroy_process_group()
