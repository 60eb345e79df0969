"""Seeded synthetic caption rows for the streaming benchmarks (issue 13).

Each row is one image: five references and one candidate, all different from every other row's
(the hard case for memory: nothing deduplicates, and the CIDEr-D df grows with the reference
set). Captions follow the shape of COCO captions ("A brown dog runs on the grass.") with
Zipf-distributed words from a pseudo-word vocabulary, capitalised and with a final period so
the PTB tokenizer has work to do. ``--calibrate`` prints the growth of distinct 1-4-grams
against the COCO Karpathy-test references so the vocabulary can be checked for realism.

    python benchmarks/stream_synth.py --rows 1000000 --out rows.jsonl [--seed 13]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

SYLLABLES = ("ba be bi bo bu da de di do du ka ke ki ko ku la le li lo lu ma me mi mo mu na ne ni no nu "
             "pa pe pi po pu ra re ri ro ru sa se si so su ta te ti to tu va ve vi vo vu za ze zi zo zu").split()
DETS = ("a", "the", "two", "an", "some", "three")
PREPS = ("on", "in", "with", "next to", "near", "under", "at", "of", "behind", "by")
VERBS_AUX = ("is", "are", "", "", "")


def vocabulary(rng: np.random.Generator, n: int) -> list[str]:
    words: dict[str, None] = {}
    while len(words) < n:
        k = int(rng.integers(1, 4))
        words["".join(SYLLABLES[int(i)] for i in rng.integers(0, len(SYLLABLES), size=k))] = None
    return list(words)


class Generator:
    """Captions for row ``i`` depend only on (seed, i): any slice can be regenerated alone."""

    def __init__(self, seed: int = 13, n_nouns: int = 6000, n_adjs: int = 1500, n_verbs: int = 2000,
                 zipf: float = 1.1):
        rng = np.random.default_rng(seed)
        self.seed = seed
        self.nouns = vocabulary(rng, n_nouns)
        self.adjs = vocabulary(rng, n_adjs)
        self.verbs = [w + "ing" for w in vocabulary(rng, n_verbs)]

        def zipf_p(n):
            p = 1.0 / np.arange(1, n + 1) ** zipf
            return np.cumsum(p / p.sum())

        self._cdf = {"n": zipf_p(n_nouns), "a": zipf_p(n_adjs), "v": zipf_p(n_verbs)}

    def _pick(self, rng, kind: str, words: list[str]) -> str:
        return words[min(int(np.searchsorted(self._cdf[kind], rng.random())), len(words) - 1)]

    def _phrase(self, rng) -> list[str]:
        out = [DETS[int(rng.integers(0, len(DETS)))]]
        if rng.random() < 0.5:
            out.append(self._pick(rng, "a", self.adjs))
        out.append(self._pick(rng, "n", self.nouns))
        return out

    def caption(self, rng, topic: list[str]) -> str:
        words = list(topic) if rng.random() < 0.7 else self._phrase(rng)
        aux = VERBS_AUX[int(rng.integers(0, len(VERBS_AUX)))]
        if aux:
            words.append(aux)
        words.append(self._pick(rng, "v", self.verbs))
        for _ in range(int(rng.integers(1, 3))):
            words.append(PREPS[int(rng.integers(0, len(PREPS)))])
            words.extend(self._phrase(rng))
        text = " ".join(words)
        return text[0].upper() + text[1:] + ("." if rng.random() < 0.6 else "")

    def row(self, i: int) -> dict:
        rng = np.random.default_rng([self.seed, i])
        topic = self._phrase(rng)
        refs = [self.caption(rng, topic) for _ in range(5)]
        return {"id": f"img{i:08d}", "candidate": self.caption(rng, topic), "references": refs}


def write_jsonl(path: Path, rows: int, seed: int) -> None:
    gen = Generator(seed)
    with path.open("w", encoding="utf-8") as f:
        for i in range(rows):
            f.write(json.dumps(gen.row(i)) + "\n")


def _distinct_growth(sentences, marks):
    grams: set[str] = set()
    out = {}
    for i, s in enumerate(sentences, 1):
        w = s.lower().rstrip(".").split()
        for k in range(1, 5):
            for j in range(len(w) - k + 1):
                grams.add(" ".join(w[j:j + k]))
        if i in marks:
            out[i] = len(grams)
    return out


def calibrate(seed: int) -> None:
    from capeval.paths import data_root

    marks = (1000, 5000, 25000)
    gen = Generator(seed)
    synth = [r for i in range(5000) for r in gen.row(i)["references"]]
    print("synthetic refs:", _distinct_growth(synth, marks))
    root = data_root()
    if root is not None:
        coco = (root / "references_karpathy_test/coco_precomp/testall_caps.txt").read_text().split("\n")
        print("COCO Karpathy-test refs:", _distinct_growth([c for c in coco if c.strip()], marks))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--calibrate", action="store_true")
    a = ap.parse_args(argv)
    if a.calibrate:
        calibrate(a.seed)
        return 0
    if a.out is None:
        ap.error("--out is required")
    write_jsonl(a.out, a.rows, a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
