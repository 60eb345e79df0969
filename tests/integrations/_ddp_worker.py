"""One rank of the 2-process gloo runs in test_torchmetrics.py (spawned, so importable by name).

Each spec is ``(label, class name, keyword arguments)``: a wrapped class of
``capeval.integrations.torchmetrics`` built with those arguments."""
from __future__ import annotations

import json
from pathlib import Path


def run_rank(rank: int, world: int, tmp: str, shards: list, specs: list, empty_on_rank1: list[str],
             batch: int = 3) -> None:
    import torch.distributed as dist

    from capeval.integrations import torchmetrics as tm

    dist.init_process_group("gloo", init_method=f"file://{tmp}/rendezvous", rank=rank, world_size=world)
    try:
        out = {}
        for label, cls, kwargs in specs:
            metric = getattr(tm, cls)(**kwargs)
            cands, refs = shards[rank]
            if not (rank == 1 and label in empty_on_rank1):
                for i in range(0, len(cands), batch):  # a few batches per rank
                    metric.update(cands[i:i + batch], refs[i:i + batch])
            local_bytes = metric.state_nbytes  # before compute() gathers every rank's
            holds = _holds_caption(metric, cands)
            value = metric.compute()
            per = metric.result.per_caption.get(metric.output)
            out[label] = {"value": float(value).hex(), "dtype": str(value.dtype),
                          "per_caption": None if per is None else [float(x).hex() for x in per],
                          "signature": metric.signature, "by_statistics": metric.by_statistics,
                          "state_nbytes": local_bytes, "holds_caption_text": holds}
        Path(tmp, f"rank{rank}.json").write_text(json.dumps(out))
    finally:
        dist.destroy_process_group()


def _holds_caption(metric, cands: list[str]) -> bool:
    """Whether this rank's states hold the UTF-8 bytes of one of its captions (of 10 bytes or
    more, so that a short word does not match by chance)."""
    blob = b"".join(t.cpu().numpy().tobytes() for name in metric._states()
                    for t in (getattr(metric, name) if isinstance(getattr(metric, name), list) else [getattr(metric, name)]))
    return any(c.encode() in blob for c in cands if len(c.encode()) >= 10)
