"""Stress items: a candidate caption, its references and its image.

From a benchmark of human captions (``coco``, ``flickr30k``: the Karpathy test images; ``flickr8k``:
its 1,000 test images), an item is one of the image's human captions as the candidate (chosen by
the seed) and the image's other captions as references; the original caption is the control. From
``--input rows.jsonl`` (or CSV), an item is a row as given.
"""
from __future__ import annotations

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
}


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
