"""``learned`` and ``nneval`` on paragraphs built from real COCO captions: the plain model
(``long_text=truncate``) against ``long_text=sentences`` (docs/LEARNED.md, "Long captions").

Paragraphs (Karpathy test split, ``references_karpathy_test/coco_precomp/testall_caps.txt``, five
captions per image in file order; the first ``--images`` images): the reference is captions 1-3 of
the image joined into one paragraph; the candidate is captions 4-5 of the same image, the pair
repeated ``r`` times (r = 1, 3, 5, 10, 20: 2 to 40 sentences, about 25 to 500 words; the content stays correct as the text
grows). Two negatives per candidate, scored against the same reference:

- ``other image``: the same paragraph built from the next image's captions 4-5;
- ``one wrong sentence``: the candidate with its last sentence replaced by caption 4 of the next
  image (a hallucinated sentence among correct ones).

Reported per model, mode and r: the mean score of the correct paragraphs, pairwise accuracy
(correct > negative; ties count half), and the rows outside the training range (``ood``).

    CAPEVAL_DATA=/work/shared/data python benchmarks/learned_paragraphs.py [--images 100]
"""
from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np

import capeval
from capeval.paths import data_root

REPEATS = (1, 3, 5, 10, 20)
MODELS = {"learned": "learned", "nneval": "nneval"}


def captions() -> list[str]:
    path = data_root() / "references_karpathy_test" / "coco_precomp" / "testall_caps.txt"
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]


def sentence(c: str) -> str:
    c = c.strip().rstrip(" .")
    return c[:1].upper() + c[1:] + "."


def rows(caps: list[str], n_images: int, r: int):
    cands, others, wrong, refs = [], [], [], []
    for i in range(n_images):
        j = i + 1
        own = [sentence(caps[5 * i + k]) for k in (3, 4)] * r
        other = [sentence(caps[5 * j + k]) for k in (3, 4)] * r
        cands.append(" ".join(own))
        others.append(" ".join(other))
        wrong.append(" ".join(own[:-1] + [sentence(caps[5 * j + 3])]))
        refs.append([" ".join(sentence(caps[5 * i + k]) for k in (0, 1, 2))])
    return cands, others, wrong, refs


def accuracy(good: np.ndarray, bad: np.ndarray) -> float:
    return float(np.mean((good > bad) + 0.5 * (good == bad)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=100)
    ap.add_argument("--out", default="benchmarks/results/learned_paragraphs.json")
    args = ap.parse_args()
    caps = captions()
    out: dict = {"images": args.images, "repeats": list(REPEATS), "results": []}
    for r in REPEATS:
        cands, others, wrong, refs = rows(caps, args.images, r)
        words = float(np.mean([len(c.split()) for c in cands]))
        for fam, metric in MODELS.items():
            for mode in ("truncate", "sentences"):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = capeval.score(cands + others + wrong, refs * 3, [metric],
                                        options={fam: {"long_text": mode}})
                s = res.per_caption[metric]
                n = args.images
                good, oth, wr = s[:n], s[n:2 * n], s[2 * n:]
                row = {"model": fam, "mode": mode, "sentences": 2 * r, "words": round(words, 1),
                       "mean_correct": float(np.mean(good)), "acc_other_image": accuracy(good, oth),
                       "acc_one_wrong_sentence": accuracy(good, wr),
                       "ood_rows": res.details[fam]["out_of_range"]["rows"], "rows": 3 * n,
                       "signature": res.signatures[metric]}
                out["results"].append(row)
                print({k: v for k, v in row.items() if k != "signature"}, flush=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
