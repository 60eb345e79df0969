"""Every torch-backed family that can run here, as a function of rows returning its per-row
values: the probes of tests/resources/test_encoder_determinism.py and
benchmarks/torch_determinism.py.

CLIP weights do not exist here: CLIP-S and RefCLIP-S run the tests' tiny random CLIP
(tests/metrics/_tiny_clip.py) on small random images, one per row. Run as a script, this file
computes every probe in a fresh process and saves the values (``python -m
tests.resources._torch_probes OUT.npz TINY_DIR CORPORA.json``)."""
from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tests.metrics.test_contract import CANDS, REFS

Rows = tuple[list[str], list[list[str]], list[str]]  # candidates, references, image paths
Probe = Callable[[list[str], list[list[str]], list[str]], dict[str, np.ndarray]]


def coco_rows(root, n: int = 300) -> tuple[list[str], list[list[str]]]:
    """The first ``n`` COCO Karpathy-test images of tanti-coco: a system's caption and one
    human reference each."""
    from capeval import data

    table = data.load("tanti-coco", root=root)
    system = min(table.systems)
    return list(table.systems[system][:n]), [[refs[0]] for refs in table.references[:n]]


def contract_rows() -> tuple[list[str], list[list[str]]]:
    return list(CANDS), [list(r) for r in REFS]


def make_tiny_clip(folder: Path, n_images: int) -> dict:
    """The tests' tiny CLIP (OpenAI format) and ``n_images`` distinct small random images."""
    from PIL import Image

    from tests.metrics._tiny_clip import build_hf, save_openai

    folder.mkdir(parents=True, exist_ok=True)
    model, merges = build_hf(folder / "hf")
    pt = save_openai(model, folder / "tiny.pt")
    rng = np.random.default_rng(0)
    images = []
    for k in range(n_images):
        path = folder / f"img{k:04d}.png"
        Image.fromarray(rng.integers(0, 256, (24, 32, 3), dtype=np.uint8)).save(path)
        images.append(str(path))
    return {"pt": str(pt), "merges": str(merges), "images": images}


def _score(names, options=None) -> Probe:
    def probe(c, r, _images):
        import capeval

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = capeval.score(c, r, names, options=options)
        return {k: np.asarray(out.per_caption[k], dtype=float) for k in names}

    return probe


def _qace_bertscore(c, r, _images):
    from capeval.qace.similarity import BERTScoreSimilarity

    return {"qace_bertscore": BERTScoreSimilarity()(list(zip(c, (refs[0] for refs in r))))}


def _clip(tiny: dict) -> Probe:
    def probe(c, r, images):
        from capeval.metrics import _clip_models
        from capeval.metrics.clipscore import ClipScore

        _clip_models._memory.clear()  # image embeddings kept from an earlier run would hide a change
        m = ClipScore(model=tiny["pt"], tokenizer=tiny["merges"], embedding_cache=False)
        out = m.compute(c, r, images=images)
        return {k: np.asarray(v, dtype=float) for k, v in out.per_caption.items()}

    return probe


def probes(tiny: dict | None, *, mpnet: bool = False, learned: bool = True) -> dict[str, Probe]:
    """name -> probe. bertscore runs without bert_score's padding floor, so its rows can also be
    compared when the row order changes (the floor depends on neighbouring rows by design)."""
    out: dict[str, Probe] = {
        "sentsim": _score(["sentsim_max", "sentsim_mean", "sentsim_centroid"]),
        "bertscore": _score(["bertscore_p", "bertscore_r", "bertscore_f"],
                            {"bertscore": {"padding_floor": False}}),
        "qace_bertscore": _qace_bertscore,
    }
    if learned:
        out["learned"] = _score(["learned"])
    if tiny is not None:
        out["clip"] = _clip(tiny)
    if mpnet:
        out["sentsim_mpnet"] = _score(["sentsim_centroid"], {"sentsim": {"model": "mpnet"}})
    return out


def run(probe: Probe, rows: Rows, *, reverse: bool = False) -> dict[str, np.ndarray]:
    """The probe's values in row order; with ``reverse`` the rows go in reversed, so every
    length group has other batch-mates, and the values are put back in order."""
    c, r, images = rows
    if not reverse:
        return probe(c, r, images)
    got = probe(c[::-1], r[::-1], images[::-1])
    return {k: v[::-1] for k, v in got.items()}


def largest_difference(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> float:
    """The largest absolute difference over every output and row (NaN in both counts as equal)."""
    worst = 0.0
    for k, va in a.items():
        x, y = np.asarray(va, dtype=float), np.asarray(b[k], dtype=float)
        same_nan = np.isnan(x) & np.isnan(y)
        if (np.isnan(x) != np.isnan(y)).any():
            return float("inf")
        if (~same_nan).any():
            worst = max(worst, float(np.abs(x - y)[~same_nan].max()))
    return worst


def main(argv: list[str]) -> None:
    """Fresh process: torch at one thread, every probe in the order given, values saved."""
    import torch

    out_path, tiny_dir, corpora_path = argv
    torch.set_num_threads(1)
    corpora = json.loads(Path(corpora_path).read_text())
    tiny = json.loads((Path(tiny_dir) / "tiny.json").read_text())
    wanted = corpora.pop("__probes__")  # corpus -> probe names, in the order to run them
    ps = probes(tiny, mpnet=any("sentsim_mpnet" in v for v in wanted.values()))
    saved = {}
    for corpus, (c, r, images) in corpora.items():
        for name in wanted[corpus]:
            for k, v in run(ps[name], (c, r, images)).items():
                saved[f"{corpus}/{name}/{k}"] = v
    np.savez(out_path, **saved)


if __name__ == "__main__":
    main(sys.argv[1:])
