"""capeval's CLIP image preprocessing against torchvision's transforms, as the reference scripts
compose them: ``Resize(224, BICUBIC)``, ``CenterCrop(224)``, ``convert("RGB")``, ``ToTensor()``,
``Normalize(CLIP mean, std)``.

torchvision's package ``__init__`` registers compiled operators, which fail when its build does
not match the installed torch; its transforms on PIL images need none of them. The script
therefore loads ``torchvision.transforms`` from a torchvision directory without running that
``__init__`` (a package stub pointing at the directory): the Python code that runs is
torchvision's own. Inputs: synthetic images over a grid of sizes (odd and even crop margins,
portrait, landscape, smaller and larger than 224) in the modes RGB, L, P, RGBA, CMYK and I;16,
saved as PNG or JPEG and decoded by PIL, plus any image files given with --images.

    pip install --no-deps --target /tmp/tv torchvision==0.28.0
    python benchmarks/clip_preprocess_agreement.py --torchvision /tmp/tv/torchvision [--images DIR]

Writes benchmarks/results/clip_preprocess_agreement.json (or --out).
"""
from __future__ import annotations

import argparse
import io
import json
import sys
import types
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

SIZES = [(w, h) for w in (17, 100, 199, 224, 225, 227, 300, 333, 500, 640, 1001) for h in (64, 224, 229, 375, 480, 777)]
MODES = ("RGB", "L", "P", "RGBA", "CMYK", "I;16")


def reference_transform(torchvision_dir: Path):
    stub = types.ModuleType("torchvision")
    stub.__path__ = [str(torchvision_dir)]
    sys.modules["torchvision"] = stub
    from torchvision.transforms import CenterCrop, Compose, InterpolationMode, Normalize, Resize, ToTensor

    return Compose([
        Resize(224, interpolation=InterpolationMode.BICUBIC),
        CenterCrop(224),
        lambda image: image.convert("RGB"),
        ToTensor(),
        Normalize((0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)),
    ])


def synthetic(w: int, h: int, mode: str, seed: int):
    from PIL import Image

    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    arr = np.stack([(xx * 7) % 256, (yy * 5) % 256, (xx + 2 * yy) % 256], -1)
    arr = np.clip(arr + rng.integers(-50, 50, arr.shape), 0, 255).astype(np.uint8)
    img = Image.fromarray(arr, "RGB")
    if mode == "P":
        img = img.quantize(64)
    elif mode == "I;16":
        img = Image.fromarray(arr[..., 0].astype(np.uint16) * 257).convert("I;16")
    elif mode != "RGB":
        img = img.convert(mode)
    buf = io.BytesIO()
    fmt = "JPEG" if mode in ("RGB", "L", "CMYK") and seed % 2 else "PNG"
    img.save(buf, format=fmt)
    return buf.getvalue(), fmt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--torchvision", type=Path, required=True)
    ap.add_argument("--images", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "clip_preprocess_agreement.json")
    args = ap.parse_args()

    import PIL

    from capeval.metrics._clip_image import decode, preprocess_image

    ref = reference_transform(args.torchvision)
    cases, mismatches, seed = 0, [], 0
    inputs = []
    for w, h in SIZES:
        for mode in MODES:
            seed += 1
            data, fmt = synthetic(w, h, mode, seed)
            inputs.append((f"{w}x{h} {mode} {fmt}", data))
    if args.images:
        inputs += [(str(p), p.read_bytes()) for p in sorted(args.images.rglob("*")) if p.is_file()]
    for name, data in inputs:
        ours = preprocess_image(decode(data, name), 224)
        theirs = ref(decode(data, name)).numpy()
        cases += 1
        if ours.shape != theirs.shape or not np.array_equal(ours, theirs):
            diff = float(np.abs(ours - theirs).max()) if ours.shape == theirs.shape else None
            mismatches.append({"image": name, "max_abs": diff})
    import torchvision.version as tv_version

    doc = {"images": cases, "mismatches": len(mismatches), "first_mismatches": mismatches[:20],
           "modes": list(MODES), "sizes": len(SIZES), "pillow": PIL.__version__,
           "torchvision": getattr(tv_version, "__version__", "?")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print({k: v for k, v in doc.items() if k != "first_mismatches"}, mismatches[:5])


if __name__ == "__main__":
    main()
