"""Image-metric throughput on CPU: images/s and captions/s of clip_s + refclip_s.

No real CLIP weights exist here, so two random models stand in: the tests' tiny CLIP
(tests/metrics/_tiny_clip.py, transformers and OpenAI formats) and a random model with ViT-B/32's
shapes in OpenAI format (width 768/512, 12+12 layers, patch 32, 49,408 tokens), which costs what
the real ViT-B/32 costs. The images are synthetic 500x375 JPEGs (the Flickr8k/COCO size class), 5
references per candidate. Measured per model, in one process:

* ``preprocess``: decode + CLIP preprocessing alone (PIL/numpy), images/s;
* ``cold``: ``ClipScore.compute`` with no embeddings known (images decoded and embedded, then
  every text embedded), candidates/s and the image and text phases;
* ``warm``: the same call again in a new memory state with the image embeddings on disk.

    python benchmarks/bench_clip_throughput.py [--images 96] [--threads 1]

Writes benchmarks/results/clip_throughput.json (or --out).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def vit_b32_shaped(path: Path, merges_vocab: int) -> Path:
    """A random OpenAI-format state dict with ViT-B/32's shapes (vocabulary cut to the tiny BPE's
    size changes only the embedding table lookup, not the cost)."""
    import torch

    from capeval.metrics._clip_openai import _model_class

    torch.manual_seed(0)
    net = _model_class()(embed_dim=512, image_resolution=224, vision_layers=12, vision_width=768, vision_patch=32,
                         context_length=77, vocab_size=max(merges_vocab, 49408), width=512, layers=12, quick_gelu=True)
    with torch.no_grad():
        for p in net.parameters():
            p.normal_(0, 0.02)
    torch.save(net.state_dict(), path)
    return path


def synthetic_jpegs(folder: Path, n: int) -> list[str]:
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        yy, xx = np.mgrid[0:375, 0:500]
        arr = np.stack([(xx + 3 * i) % 256, (yy * 2 + i) % 256, (xx + yy) % 256], -1)
        arr = np.clip(arr + rng.integers(-40, 40, arr.shape), 0, 255).astype(np.uint8)
        p = folder / f"{i:05d}.jpg"
        Image.fromarray(arr).save(p, quality=90)
        out.append(str(p))
    return out


def measure(label: str, options: dict, images: list[str], cands: list[str], refs: list[list[str]]) -> dict:
    from capeval.metrics import _clip_models
    from capeval.metrics._clip_image import decode, preprocess_image
    from capeval.metrics.clipscore import ClipScore

    t, c = time.perf_counter(), time.process_time()
    for p in images:
        preprocess_image(decode(Path(p).read_bytes(), p), 224)
    pre, pre_cpu = time.perf_counter() - t, time.process_time() - c

    t = time.perf_counter()
    metric = ClipScore(**options)
    load = time.perf_counter() - t
    _clip_models._memory.clear()
    t, c = time.perf_counter(), time.process_time()
    _clip_models.image_embeddings(metric.encoder, images, batch_size=metric.batch_size, disk=False)
    img_phase, img_cpu = time.perf_counter() - t, time.process_time() - c
    texts = [f"A photo depicts {c}" for c in cands + [r for rs in refs for r in rs]]
    t, c = time.perf_counter(), time.process_time()
    _clip_models.text_embeddings(metric.encoder, texts, batch_size=metric.batch_size)
    txt_phase, txt_cpu = time.perf_counter() - t, time.process_time() - c

    _clip_models._memory.clear()
    t0, c0 = time.perf_counter(), time.process_time()
    cold = metric.compute(cands, refs, images=images)
    cold_s, cold_cpu = time.perf_counter() - t0, time.process_time() - c0
    _clip_models._memory.clear()  # a new run: the image embeddings now come from the disk shards
    t0 = time.perf_counter()
    warm = metric.compute(cands, refs, images=images)
    warm_s = time.perf_counter() - t0
    assert np.array_equal(cold.per_caption["clip_s"], warm.per_caption["clip_s"])
    assert warm.details["images"]["embedded"] == 0
    n_texts = len(texts)
    return {
        "model": label, "arch": metric.encoder.arch, "backend": metric.encoder.backend,
        "load_s": round(load, 3),
        "preprocess_images_per_s": round(len(images) / pre, 1),
        "preprocess_images_per_cpu_s": round(len(images) / pre_cpu, 1),
        "image_phase_images_per_s": round(len(images) / img_phase, 1),
        "image_phase_images_per_cpu_s": round(len(images) / img_cpu, 1),
        "text_phase_texts_per_s": round(n_texts / txt_phase, 1),
        "text_phase_texts_per_cpu_s": round(n_texts / txt_cpu, 1),
        "cold_s": round(cold_s, 3), "cold_cpu_s": round(cold_cpu, 3),
        "cold_captions_per_s": round(len(cands) / cold_s, 1),
        "cold_captions_per_cpu_s": round(len(cands) / cold_cpu, 1),
        "warm_s": round(warm_s, 3), "warm_captions_per_s": round(len(cands) / warm_s, 1),
        "images": len(images), "candidates": len(cands), "texts": n_texts,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=96)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "clip_throughput.json")
    args = ap.parse_args()

    import torch
    import transformers

    from tests.metrics._tiny_clip import WORDS, build_hf, save_openai

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        os.environ["CAPEVAL_CACHE"] = str(tmp / "cache")
        hf, merges = build_hf(tmp / "tiny-hf")
        tiny_pt = save_openai(hf, tmp / "tiny.pt")
        vocab = len(json.loads((tmp / "tiny-hf" / "tok" / "vocab.json").read_text()))
        big = vit_b32_shaped(tmp / "vitb32-random.pt", vocab)
        images = synthetic_jpegs(tmp / "img", args.images)
        rng = np.random.default_rng(1)
        cands = [" ".join(rng.choice(WORDS, 9)) for _ in images]
        refs = [[" ".join(rng.choice(WORDS, 10)) for _ in range(5)] for _ in images]
        load_before = os.getloadavg()
        runs = [
            measure("tiny (transformers)", {"model": str(tmp / "tiny-hf")}, images, cands, refs),
            measure("tiny (openai format)", {"model": str(tiny_pt), "tokenizer": str(merges)}, images, cands, refs),
            measure("ViT-B/32-shaped random (openai format)", {"model": str(big), "tokenizer": str(merges)},
                    images, cands, refs),
        ]
    doc = {
        "runs": runs,
        "torch_threads": args.threads, "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__,
                    "transformers": transformers.__version__},
        "note": "synthetic 500x375 JPEGs, 5 references per candidate, random weights; shared machine",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    for r in runs:
        print(r)


if __name__ == "__main__":
    main()
