"""Compute a BERTScore rescale baseline the way bert_score computed its published ones.

Usage::

    HF_HUB_OFFLINE=1 python benchmarks/compute_bertscore_baseline.py            # MiniLM-L6
    HF_HUB_OFFLINE=1 python benchmarks/compute_bertscore_baseline.py --model mpnet
    ... --out somewhere.tsv                                                    # not packaged

bert_score's recipe (Tiiiger/bert_score: get_rescale_baseline/get_rescale_baseline.py and
journal/rescale_baseline.md): take up to 1M sentences of a shuffled, deduplicated monolingual
corpus (WMT17 English news), keep those with fewer than 32 space-separated words, split them
at random into two disjoint halves paired up as (candidate, reference), score the pairs at every
layer with IDF off in chunks of 1,000 pairs and batch size 64, and average P, R and F per layer.

What differs here, because nothing outside PyPI can be reached: the corpus is caption text,
the Flickr8k captions of the training-split images (deduplicated, file order), which no
evaluation table in capeval uses; it has ~30k sentences rather than 1M, so ~15k pairs; the
pairing uses ``numpy.random.default_rng(seed)`` so it can be rebuilt; the per-layer mean is a
float64 mean over all pairs rather than bert_score's running float32 mean. The scores come
from capeval's BERTScore, which equals bert_score's to float32 rounding (tests/metrics/
test_bertscore.py). Rescaling is linear per output, so it changes no correlation.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import sys
import time
from pathlib import Path

import numpy as np

from capeval import __version__
from capeval.paths import data_root
from capeval.metrics._bertscore_baselines import BASELINE_DIR, baseline_filename, write_baseline
from capeval.metrics._bertscore_core import score_rows
from capeval.resources.encoders import load_encoder, num_hidden_layers, resolve_encoder, weights_revision

CHUNK = 1000  # pairs per bert_score call in the recipe
MAX_WORDS = 32
MAX_SENTENCES = 1_000_000


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def flickr8k_train_captions(root: Path) -> tuple[list[str], dict[str, str]]:
    """Distinct captions of the Flickr8k training images, in file order, as the recipe filters them."""
    text = root / "flickr8k" / "Flickr8k_text"
    token_file = text / "Flickr8k.token.txt"
    split_file = text / "Flickr_8k.trainImages.txt"
    train = {line.strip() for line in split_file.read_text(encoding="utf-8").splitlines() if line.strip()}
    seen: set[str] = set()
    lines: list[str] = []
    for line in token_file.read_text(encoding="utf-8").splitlines():
        key, sep, caption = line.partition("\t")
        if not sep or key.rsplit("#", 1)[0] not in train:
            continue
        caption = caption.strip()
        if caption in seen or not 0 < len(caption.split(" ")) < MAX_WORDS:
            continue
        seen.add(caption)
        lines.append(caption)
        if len(lines) == MAX_SENTENCES:
            break
    source = {
        "corpus": "Flickr8k captions of Flickr_8k.trainImages.txt images (deduplicated, file order, "
        f"< {MAX_WORDS} words)",
        "corpus_files": f"Flickr8k.token.txt sha256={_sha256(token_file)[:16]}; "
        f"Flickr_8k.trainImages.txt sha256={_sha256(split_file)[:16]}",
    }
    return lines, source


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None, help="encoder alias, hub id or directory (default: minilm)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--limit", type=int, default=None, help="use only this many sentences (smoke runs)")
    ap.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    ap.add_argument("--out", type=Path, default=None, help="default: the packaged baseline file")
    args = ap.parse_args(argv)

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    root = data_root(required=True)
    lines, source = flickr8k_train_captions(root)
    if args.limit:
        lines = lines[: args.limit]
    rng = np.random.default_rng(args.seed)
    pick = rng.choice(len(lines), size=(2, len(lines) // 2), replace=False)
    cands = [lines[i] for i in pick[0]]
    refs = [[lines[i]] for i in pick[1]]

    enc = resolve_encoder(args.model)
    tokenizer, model = load_encoder(enc.location, "cpu")
    layers = list(range(num_hidden_layers(model) + 1))
    sums = np.zeros((len(layers), 3), dtype=np.float64)
    t0 = time.perf_counter()
    for start in range(0, len(cands), CHUNK):
        got = score_rows(
            tokenizer, model, cands[start : start + CHUNK], refs[start : start + CHUNK], layers,
            idf=False, batch_size=args.batch_size, padding_floor=True,
        )
        for layer in layers:
            sums[layer] += got[layer].prf.astype(np.float64).sum(axis=0)
        print(f"{min(start + CHUNK, len(cands))}/{len(cands)} pairs, {time.perf_counter() - t0:.0f} s",
              file=sys.stderr, flush=True)
    means = sums / len(cands)

    import transformers

    meta = {
        "model": enc.name,
        "model_revision": weights_revision(enc.location),
        **source,
        "n_sentences": str(len(lines)),
        "n_pairs": str(len(cands)),
        "pairing": f"numpy.random.default_rng({args.seed}).choice(n, size=(2, n//2), replace=False); "
        "row 0 = candidates, row 1 = references",
        "recipe": "bert_score get_rescale_baseline.py: all layers, idf off, chunks of "
        f"{CHUNK} pairs, batch size {args.batch_size}, mean per layer (here float64)",
        "differs_from_bert_score": f"caption corpus instead of WMT17 news; {len(cands)} pairs "
        "instead of 500,000",
        "script": "benchmarks/compute_bertscore_baseline.py",
        "software": f"capeval {__version__}, torch {torch.__version__}, transformers {transformers.__version__}",
        "date": _dt.date.today().isoformat(),
        "seconds": f"{time.perf_counter() - t0:.0f}",
    }
    out = args.out or BASELINE_DIR / baseline_filename(enc.name)
    base = write_baseline(out, means, meta, id_prefix=f"capeval-f8k-train-s{args.seed}")
    print(f"wrote {out} (id {base.id})")
    for layer, row in enumerate(base.values):
        print(layer, *row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
