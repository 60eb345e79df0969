"""The ``gts``/``res`` dictionaries of pycocoevalcap's scorers, checked and flattened."""
from __future__ import annotations

from collections.abc import Iterable

from ...errors import InputError
from ...validation import LINE_BREAKS, SPACED_LINE_BREAKS, find_line_break, space_line_breaks
from .._notices import notice


#: For scorers that split on any whitespace (``str.split()``), as BLEU and CIDEr do: a line
#: break there already is a separator, so reading it as a space changes nothing.
SPLIT_WHITESPACE = "".join(LINE_BREAKS)


def read_breaks_as_spaces(texts: list[str], who: str, harmless: str = "") -> list[str]:
    """``texts`` with the line breaks of :data:`~capeval.validation.SPACED_LINE_BREAKS` as
    spaces; the first time a caption held one that the original treats otherwise (any not in
    ``harmless``), say so once."""
    out = texts
    for i, t in enumerate(texts):
        if find_line_break(t) is None:
            continue
        if out is texts:
            out = list(texts)
        out[i] = space_line_breaks(t)
        if any(ch in SPACED_LINE_BREAKS for ch in set(t) - set(harmless)):
            notice(f"line-breaks:{who}",
                   f"capeval.compat {who}: a caption holds a line break; capeval reads every line-break character "
                   "as a space, where pycocoevalcap keeps it (its tokenizer replaces only '\\n' and shifts later "
                   "captions at '\\r', U+2028..., ROUGE-L keeps it inside a token, METEOR's protocol breaks)")
    return out


def paired(gts: dict, res: dict, who: str, ids: Iterable | None = None,
           harmless: str = "") -> tuple[list, list[str], list[list[str]]]:
    """``(ids, candidates, reference lists)`` in ``ids`` order (default: ``gts``' keys), with the
    checks pycocoevalcap makes by ``assert`` raised as :class:`InputError` naming the image.
    Line breaks are read as spaces (:func:`read_breaks_as_spaces`; ``harmless``: those the
    scorer's own splitting already treats as spaces)."""
    if not isinstance(gts, dict) or not isinstance(res, dict):
        raise InputError(f"{who}.compute_score(gts, res): both must be dicts of image id -> list of captions, "
                         f"got {type(gts).__name__} and {type(res).__name__}")
    if gts.keys() != res.keys():
        only_g = [k for k in gts if k not in res]
        only_r = [k for k in res if k not in gts]
        what = f"image {only_g[0]!r} has references but no result" if only_g else \
            f"image {only_r[0]!r} has a result but no references"
        raise InputError(f"{who}: gts and res must have the same image ids; {what} "
                         f"({len(only_g)} only in gts, {len(only_r)} only in res)")
    keys = list(gts.keys() if ids is None else ids)
    if not keys:
        raise InputError(f"{who}: no images to score")
    cands: list[str] = []
    refs: list[list[str]] = []
    for k in keys:
        hypo, ref = res[k], gts[k]
        if type(hypo) is not list or len(hypo) != 1:
            raise InputError(f"{who}: res[{k!r}] must be a list holding exactly one caption, got {hypo!r:.80}")
        if type(ref) is not list or len(ref) < 1:
            raise InputError(f"{who}: gts[{k!r}] must be a non-empty list of reference captions, got {ref!r:.80}")
        for j, t in enumerate([hypo[0], *ref]):
            if not isinstance(t, str):
                where = "res" if j == 0 else f"gts (reference {j - 1})"
                raise InputError(f"{who}: {where} of image {k!r} is not a string: {t!r:.80}")
        cands.append(hypo[0])
        refs.append(list(ref))
    cands = read_breaks_as_spaces(cands, who, harmless)
    refs = [read_breaks_as_spaces(r, who, harmless) for r in refs]
    return keys, cands, refs
