"""Run pycocoevalcap's pure-Python scorers (BLEU, ROUGE-L, CIDEr-D) on pre-tokenized text."""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

# One corpus for the BLEU and CIDEr-D oracle tests, so both compare the same captions.
CANDS = ["a dog runs on the grass", "two men ride bikes down a street", "a cat", "a red ball in the water"]
REFS = [
    ["a dog is running on grass", "the dog runs across a lawn"],
    ["two people riding bicycles on a street", "men on bikes", "two men cycling"],
    ["a cat is sleeping on a sofa"],
    ["a ball floats in the water", "a red ball on a lake"],
]


def coco_scores(cands: list[str], refs: list[list[str]]) -> dict:
    pytest.importorskip("pycocoevalcap.bleu.bleu", reason="pycocoevalcap (the oracle) not installed")
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    gts = {i: list(r) for i, r in enumerate(refs)}
    res = {i: [c] for i, c in enumerate(cands)}
    out = {}
    with contextlib.redirect_stdout(io.StringIO()):  # Bleu prints its statistics
        b, bs = Bleu(4).compute_score(gts, res, verbose=0)
    for k in range(4):
        out[f"bleu{k + 1}"] = (b[k], np.asarray(bs[k], dtype=float))
    r, rs = Rouge().compute_score(gts, res)
    out["rouge_l"] = (r, np.asarray(rs, dtype=float))
    if len(cands) > 0:
        c, cs = Cider().compute_score(gts, res)
        out["cider_d"] = (c, np.asarray(cs, dtype=float))
    return out


def ptb_java_reference(cands: list[str], refs: list[list[str]]):
    """pycocoevalcap's own PTB tokenization (Java), as COCOEvalCap applies it."""
    pytest.importorskip("pycocoevalcap.tokenizer.ptbtokenizer")
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    gts = {i: [{"caption": r} for r in rs] for i, rs in enumerate(refs)}
    res = {i: [{"caption": c}] for i, c in enumerate(cands)}
    tok = PTBTokenizer()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        g = tok.tokenize(gts)
        r = tok.tokenize(res)
    return [r[i][0] for i in range(len(cands))], [g[i] for i in range(len(cands))]
