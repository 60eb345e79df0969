"""The ``CiderD`` of the ruotianluo/cider fork (``pyciderevalcap.ciderD.ciderD``), as self-critical
sequence training calls it, computed by capeval's CIDEr-D (:class:`capeval.metrics.cider.CiderD`).

    from capeval.compat.ciderD import CiderD         # was: from pyciderevalcap.ciderD.ciderD import CiderD
    scorer = CiderD(df="coco-train-idxs")           # reads data/coco-train-idxs.json (converted, see below)
    score, scores = scorer.compute_score(gts, res)  # res: [{"image_id": k, "caption": [str]}], gts: {k: [str]}

``df="corpus"`` counts document frequencies over the references of the call, one per entry of
``res`` (an image sampled five times counts five times), as the fork does. Any other ``df`` names
a df file: a path, or, like the fork, a name looked up as ``data/<name>``. The fork's files are
pickles; capeval reads them only once converted (``capeval compat convert-cider-df
data/<name>.p data/<name>.json``; see :mod:`capeval.compat.fork_df`), or with ``allow_pickle=True``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InputError
from ..metrics.cider import SIGMA, DocumentFrequency
from ..metrics.cider import CiderD as _CiderDFamily
from ._notices import notice
from .fork_df import read_fork_df
from .pycocoevalcap._inputs import SPLIT_WHITESPACE, read_breaks_as_spaces

_PICKLE_SUFFIXES = (".p", ".pkl", ".pickle")


def _converted_hint(p: Path) -> str:
    return (f"capeval does not unpickle df files by default (a pickle runs code while it loads). Convert it once: "
            f"capeval compat convert-cider-df {p} {p.with_suffix('.json')} -- or pass allow_pickle=True "
            "for a file you trust")


def resolve_df(df, allow_pickle: bool = False) -> DocumentFrequency | None:
    """None for ``"corpus"``; else the df the fork would read for ``df``, from a capeval df file."""
    if isinstance(df, DocumentFrequency):
        return df
    if isinstance(df, str) and df == "corpus":
        return None
    if not isinstance(df, (str, Path)):
        raise InputError(f"CiderD(df={df!r}): df must be 'corpus', a df file path or name, or a DocumentFrequency")
    given = Path(df)
    # The fork opens data/<df>.p relative to the working directory; a converted file beside it wins.
    # exists(), not is_file(): a device or FIFO of that name is refused by the file door, naming it.
    candidates = [given] if given.exists() else [Path("data") / f"{df}.json", Path("data") / f"{df}.p"]
    for p in candidates:
        if not p.exists():
            continue
        if p.suffix.lower() in _PICKLE_SUFFIXES:
            if not allow_pickle:
                raise InputError(f"CiderD(df={str(df)!r}): {p} is a pickle; {_converted_hint(p)}")
            return read_fork_df(p, allow_pickle=True).to_document_frequency()
        return DocumentFrequency.load(p)
    raise InputError(f"CiderD(df={str(df)!r}): no df file found (looked for "
                     f"{', '.join(str(p) for p in candidates)})")


class CiderD:
    """CIDEr-D over 1- to 4-grams with the Gaussian length penalty (sigma 6), as the fork computes it.

    Parameters
    ----------
    n : int
        4 (capeval computes CIDEr-D over 1- to 4-grams).
    sigma : float
        Accepted for the fork's signature; the fork builds its scorer with 6.0 whatever is passed,
        and so does this class (a notice says so when another value is given).
    df : "corpus", path, name or DocumentFrequency
        Document frequencies: from the call's references, or a df file (see the module docstring).
    allow_pickle : bool
        Read a fork pickle directly with Python's unpickler. It runs any code the file carries:
        only for a file from a source you trust (a warning repeats this).
    """

    def __init__(self, n=4, sigma=6.0, df="corpus", allow_pickle=False):
        if n != 4:
            raise InputError(f"CiderD(n={n!r}): capeval computes CIDEr-D over 1- to 4-grams; n must be 4")
        if sigma != SIGMA:
            notice("ciderD-sigma", f"CiderD(sigma={sigma!r}): the ruotianluo/cider fork ignores sigma (its scorer "
                   f"is built with {SIGMA}), and so does capeval.compat.ciderD, to give the fork's numbers; for "
                   "another width use capeval.score(..., options={'cider_d': {'sigma': ...}})")
        self._n = n
        self._sigma = sigma
        self._df = df
        self._fixed = resolve_df(df, allow_pickle)
        self._metric = _CiderDFamily(df=self._fixed, sigma=SIGMA)

    def compute_score(self, gts, res):
        """``(mean CIDEr-D, array of CIDEr-D per entry of res)``."""
        if not isinstance(gts, dict):
            raise InputError(f"CiderD.compute_score: gts must be a dict of image id -> list of references, "
                             f"got {type(gts).__name__}")
        cands: list[str] = []
        refs: list[list[str]] = []
        for i, item in enumerate(res):
            if not isinstance(item, dict) or "image_id" not in item or "caption" not in item:
                raise InputError(f"CiderD: res[{i}] must be a dict with 'image_id' and 'caption', got {item!r:.80}")
            hypo, key = item["caption"], item["image_id"]
            if type(hypo) is not list or len(hypo) != 1 or not isinstance(hypo[0], str):
                raise InputError(f"CiderD: res[{i}]['caption'] must be a list holding one caption, got {hypo!r:.80}")
            if key not in gts:
                raise InputError(f"CiderD: res[{i}] has image_id {key!r}, which gts does not have")
            ref = gts[key]
            if type(ref) is not list or not ref or not all(isinstance(r, str) for r in ref):
                raise InputError(f"CiderD: gts[{key!r}] must be a non-empty list of reference captions, "
                                 f"got {ref!r:.80}")
            cands.append(hypo[0])
            refs.append(ref)
        if not cands:
            raise InputError("CiderD: res is empty; nothing to score")
        cands = read_breaks_as_spaces(cands, "CiderD", SPLIT_WHITESPACE)
        refs = [read_breaks_as_spaces(r, "CiderD", SPLIT_WHITESPACE) for r in refs]
        if self._fixed is None and len(cands) == 1:
            # ln(1) = 0 weights every n-gram by 0: the fork returns 0; capeval's family refuses.
            scores = np.zeros(1, dtype=np.float64)
            return np.mean(scores), scores
        out = self._metric.compute(cands, refs)
        scores = np.asarray(out.per_caption["cider_d"], dtype=np.float64)
        return np.float64(out.corpus["cider_d"]), scores

    def method(self):
        return "CIDEr-D"
