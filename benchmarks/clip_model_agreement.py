"""capeval's OpenAI-format CLIP module against OpenAI's ``clip/model.py`` on the same weights.

The reference ``model.py`` (OpenAI's ``clip`` package; PAC-S ships the copy its scores come from)
imports only torch, so it is loaded by path and built with its own ``build_model`` from a random
state dict with ViT-B/32's shapes (no real weights are needed to compare two implementations of
one architecture). Both embed the same pixels (capeval's preprocessing of synthetic images) and
the same token ids (capeval's BPE on the real vocabulary, every text padded to 77 for the
reference, to the longest text for capeval), in float32 on CPU; the script reports the largest
absolute and relative differences of the embeddings and of the CLIP-S/RefCLIP-S values computed
from them.

    python benchmarks/clip_model_agreement.py --reference DIR

DIR holds ``model.py`` and ``bpe_simple_vocab_16e6.txt.gz``. Writes
benchmarks/results/clip_model_agreement.json (or --out).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

TEXTS = ["a dog runs on the grass", "two cats sleep in a sunny room", "a man rides a red bike down the street",
         "children play ball near the water", "a black and white photo of an old building with many windows",
         " ".join(["a very long caption about a dog"] * 20)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reference", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "clip_model_agreement.json")
    args = ap.parse_args()

    import torch

    from bench_clip_throughput import synthetic_jpegs, vit_b32_shaped
    from capeval.metrics import _clip_models
    from capeval.metrics._clip_image import decode, preprocess_image
    from capeval.metrics.clipscore import harmonic, image_text_scores, reference_cosines

    spec = importlib.util.spec_from_file_location("openai_clip_model", args.reference / "model.py")
    ref_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref_module)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ckpt = vit_b32_shaped(tmp / "vitb32.pt", 49408)
        images = synthetic_jpegs(tmp / "img", len(TEXTS))
        enc = _clip_models.load(str(ckpt), default_resource="clip-vit-b32",
                                tokenizer=str(args.reference / "bpe_simple_vocab_16e6.txt.gz"))
        ours_img, _ = _clip_models.image_embeddings(enc, images, batch_size=8, disk=False)
        prompts = ["A photo depicts " + t for t in TEXTS]
        ours_txt = _clip_models.text_embeddings(enc, prompts, batch_size=8)

        sd = torch.load(ckpt, map_location="cpu", weights_only=True)
        # build_model loads into half-precision weights (OpenAI's release is float16 anyway);
        # PAC-S's compute_metrics.py then calls .float() and loads its float32 state dict again.
        ref = ref_module.build_model(dict(sd)).float()
        ref.load_state_dict(sd)
        ref = ref.eval()
        from capeval.metrics._clip_bpe import ClipBPE

        rows = ClipBPE(args.reference / "bpe_simple_vocab_16e6.txt.gz").tokenize(prompts)
        ids = torch.zeros(len(rows), 77, dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, :len(r)] = torch.tensor(r)
        px = torch.from_numpy(np.stack([preprocess_image(decode(Path(p).read_bytes(), p), 224) for p in images]))
        with torch.no_grad():
            ref_img = ref.encode_image(px).numpy()
            ref_txt = ref.encode_text(ids).numpy()

    def diff(a, b):
        return {"max_abs": float(np.abs(a - b).max()), "max_rel": float((np.abs(a - b) / np.abs(b).max()).max())}

    n = len(TEXTS)
    owner = np.arange(n - 1).astype(np.intp)  # text i+1 is candidate i's one reference
    scores = {}
    for side, (img, txt) in {"capeval": (ours_img, ours_txt), "reference": (ref_img, ref_txt)}.items():
        s = image_text_scores(img[: n - 1], txt[: n - 1], 2.5)
        scores[side] = (s, harmonic(s, reference_cosines(txt[: n - 1], txt[1:], owner, n - 1)))
    doc = {
        "image_embeddings": diff(ours_img, ref_img),
        "text_embeddings": diff(ours_txt, ref_txt),
        "clip_s_max_abs": float(np.abs(scores["capeval"][0] - scores["reference"][0]).max()),
        "refclip_s_max_abs": float(np.abs(scores["capeval"][1] - scores["reference"][1]).max()),
        "clip_s_capeval": scores["capeval"][0].tolist(),
        "shapes": "ViT-B/32 (vision 768x12, patch 32, 224 px; text 512x12, 77 tokens, 49,408 ids), random N(0, 0.02)",
        "texts": len(TEXTS), "images": len(images), "torch": torch.__version__,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in doc.items() if k != "clip_s_capeval"}, indent=1))


if __name__ == "__main__":
    main()
