"""Tier engine speed: capeval's vectorised 504 values vs the reference's loop structure.

The reference (PG correlation_phase2.py) recomputes filter → sentence score → image
aggregation → dataset aggregation for each of the 504 names on nested Python lists; the loop
oracle in tests/pregen/_reference_loops.py does the same. Both run on the same synthetic
Flickr-sized test set (1,000 images × 5 captions, caption lengths as in Flickr8k) and must give
bit-identical values.

    python benchmarks/pregen_tiers.py   # writes benchmarks/results/pregen_tiers.json
"""
from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def synthetic(n_images: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    images = []
    for _ in range(n_images):
        caps = []
        for _ in range(5):
            T = int(rng.integers(6, 20))
            probs = rng.beta(0.6, 1.5, T).astype(np.float32).astype(float)
            ranks = np.where(rng.uniform(size=T) < 0.45, 0, rng.geometric(0.05, T))
            caps.append([(float(p), int(r)) for p, r in zip(probs, ranks)])
        images.append(caps)
    return images


def main() -> int:
    from capeval import __version__
    from capeval.pregen.tiers import column_names, compute
    from capeval.pregen.tokens import TokenScores
    from tests.pregen._reference_loops import reference_value

    nested = synthetic(1000)
    t0 = time.perf_counter()
    ts = TokenScores.from_nested(nested)
    t_convert = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours = compute(ts)
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref = {n: reference_value(nested, n) for n in column_names()}
    t_ref = time.perf_counter() - t0
    identical = sum(ours[n] == ref[n] for n in ref)
    out = {
        "what": "all 504 pre-gen values, 1,000 images x 5 captions (synthetic, Flickr-sized)",
        "command": "python benchmarks/pregen_tiers.py",
        "capeval_version": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "tokens": int(ts.probs.size),
        "seconds": {"capeval_vectorised": t_ours, "nested_to_arrays": t_convert, "reference_loops": t_ref},
        "speedup": t_ref / t_ours,
        "bit_identical_values": f"{identical}/{len(ref)}",
    }
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "pregen_tiers.json").write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))
    return 0 if identical == len(ref) else 1


if __name__ == "__main__":
    sys.exit(main())
