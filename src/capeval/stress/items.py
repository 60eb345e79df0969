"""Stress items: a candidate caption, its references and its image.

From a benchmark of human captions (``coco``, ``flickr30k``: the Karpathy test images; ``flickr8k``:
its 1,000 test images), an item is one of the image's human captions as the candidate (chosen by
the seed) and the image's other captions as references; the original caption is the control. From
``--input rows.jsonl`` (or CSV), an item is a row as given.

``coco-paragraph`` builds detailed-caption items from the same COCO captions (docs/STRESS.md,
*Paragraphs*): the Karpathy test images in file order, in groups of ten; the candidate is a
paragraph of ten sentences, sentence i one seeded caption of image i of the group; its three
references are paragraphs of the image's other captions in the same order (reference r takes
caption r of the four left). Each caption becomes one sentence: a capital first letter, one
final full stop, and a sentence end inside it (". ") read as a comma, so that splitting a
paragraph at its sentence ends gives back its ten captions.
"""
from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError

#: Sources of human captions: name -> what it is.
SOURCES = {
    "coco": "COCO Karpathy test split, 5,000 images x 5 captions",
    "flickr30k": "Flickr30k Karpathy test split, 1,000 images x 5 captions",
    "flickr8k": "Flickr8k test split, 1,000 images x 5 captions",
    "coco-paragraph": "COCO Karpathy test split as 500 ten-sentence paragraphs (one caption of each of ten images; "
                      "3 reference paragraphs)",
}
#: Sources whose items are paragraphs: their default perturbations are the paragraph ones.
PARAGRAPH_SOURCES = frozenset({"coco-paragraph"})
PARAGRAPH_SENTENCES = 10
PARAGRAPH_REFERENCES = 3


@dataclass(frozen=True)
class StressItem:
    key: str  # unique id of the item (seeds its perturbations)
    candidate: str
    references: tuple[str, ...]
    image: str | None = None


def _check_n(n: int | None) -> None:
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise InputError(f"n={n!r}: the number of items must be a positive integer")


def benchmark_items(source: str, *, root=None, n: int | None = None, seed: int = 0) -> list[StressItem]:
    """The first ``n`` images of ``source`` (file order) as items; which caption is the
    candidate is drawn per image from ``seed``."""
    from ..data._common import (
        flickr8k_captions,
        karpathy_references,
        need,
        read_lines,
        resolve_root,
        ws,
    )

    if source not in SOURCES:
        raise InputError(f"unknown stress source {source!r}; known: {', '.join(SOURCES)} (or --input rows.jsonl)")
    _check_n(n)
    root_dir = resolve_root(root)
    if source == "coco-paragraph":
        return _paragraph_items(karpathy_references(root_dir, "coco", "stress"), n, seed)
    if source == "flickr8k":
        caps = flickr8k_captions(root_dir, "stress")
        names = [x for x in read_lines(need(root_dir, "flickr8k/Flickr8k_text/Flickr_8k.testImages.txt", "stress"))
                 if x.strip()]
        missing = [x for x in names if x not in caps]
        if missing:
            raise InputError(f"stress: Flickr8k test image {missing[0]!r} has no captions")
        by_image = {x: caps[x] for x in names}
    else:
        by_image = karpathy_references(root_dir, source, "stress")
    images = list(by_image)[:n] if n is not None else list(by_image)
    items = []
    for img in images:
        captions = [ws(c) for c in by_image[img]]
        if len(captions) < 2:
            raise InputError(f"stress: {source} image {img!r} has {len(captions)} caption(s); an item needs a "
                             "candidate and at least one reference")
        k = int(np.random.default_rng([int(seed), zlib.crc32(img.encode("utf-8"))]).integers(len(captions)))
        items.append(StressItem(f"{source}/{img}#{k}", captions[k],
                                tuple(c for j, c in enumerate(captions) if j != k), img))
    return items


_INNER_END = re.compile(r"\s*[.!?]+(?=\s+\S)")
_LOOSE_PUNCT = re.compile(r"\s+([,;:])")


def as_sentence(caption: str) -> str:
    """One caption as one sentence of a paragraph: single spaces, punctuation attached, inner
    sentence ends read as commas, a capital first letter and one final full stop."""
    text = " ".join(caption.split()).rstrip(" .!?")
    text = _LOOSE_PUNCT.sub(r"\1", _INNER_END.sub(",", text))
    return (text[:1].upper() + text[1:] + ".") if text else ""


def _paragraph_items(by_image: dict[str, list[str]], n: int | None, seed: int) -> list[StressItem]:
    images = list(by_image)
    groups = [images[i:i + PARAGRAPH_SENTENCES] for i in range(0, len(images) - PARAGRAPH_SENTENCES + 1,
                                                               PARAGRAPH_SENTENCES)]
    items = []
    for group in groups[:n] if n is not None else groups:
        cand, refs = [], [[] for _ in range(PARAGRAPH_REFERENCES)]
        for img in group:
            captions = [as_sentence(c) for c in by_image[img] if as_sentence(c)]
            if len(captions) < PARAGRAPH_REFERENCES + 1:
                raise InputError(f"stress: coco image {img!r} has {len(captions)} caption(s); a paragraph item needs "
                                 f"{PARAGRAPH_REFERENCES + 1}")
            k = int(np.random.default_rng([int(seed), zlib.crc32(img.encode("utf-8"))]).integers(len(captions)))
            cand.append(captions[k])
            rest = [c for j, c in enumerate(captions) if j != k]
            for r in range(PARAGRAPH_REFERENCES):
                refs[r].append(rest[r])
        items.append(StressItem(f"coco-paragraph/{group[0]}+{len(group) - 1}", " ".join(cand),
                                tuple(" ".join(r) for r in refs), None))
    return items


def input_items(path: str | Path, *, n: int | None = None) -> list[StressItem]:
    """Rows of a JSONL/CSV input (``capeval score`` formats, optional ``image`` field) as items."""
    from ..inputs import read_input_images
    from ..validation import validate_corpus

    _check_n(n)
    ids, cands, refs, images = read_input_images(path)
    validate_corpus(cands, refs, ids=ids)  # an empty caption or reference list is an error naming the row
    out = []
    for k, (i, c, r) in enumerate(zip(ids, cands, refs)):
        if n is not None and k >= n:
            break
        if not r:
            raise InputError(f"{path}: item {i!r} has no references")
        out.append(StressItem(str(i), c, tuple(r), images[k] if images is not None else None))
    return out


def source_label(source: str | None, path: str | Path | None) -> str:
    """The ``source`` field of the suite's signature: the benchmark, or the input file's SHA-256."""
    if path is None:
        return str(source)
    import hashlib

    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    return f"input:sha256:{digest}"
