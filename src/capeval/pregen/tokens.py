"""Per-token teacher-forcing records: the input every pre-gen metric is computed from.

A model scored on the reference captions of a test set yields, for each image, for each
reference caption, for each scored position t = 1..L+1 (the words and the end token), the
probability the model gave the reference token and that token's rank (0 = the argmax).
``TokenScores`` stores them flat, with caption lengths and captions-per-image, so the tier
engine can work on whole arrays instead of nested lists.
"""
from __future__ import annotations

import os
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError

# Keys of the ``.npz`` exchange format (``capeval pregen score --probs``).
NPZ_KEYS = ("probs", "ranks", "caption_lengths", "captions_per_image")


@dataclass(frozen=True)
class TokenScores:
    """Flat per-token (probability, rank) arrays with their grouping.

    probs : float64, one per scored position, captions concatenated in image order.
    ranks : int64, same length; 0 means the reference token was the model's argmax.
    caption_lengths : int64, T = L + 1 scored positions per caption (the end token counts).
    captions_per_image : int64, number of reference captions of each image.
    """

    probs: np.ndarray
    ranks: np.ndarray
    caption_lengths: np.ndarray
    captions_per_image: np.ndarray

    def __post_init__(self) -> None:
        probs = np.asarray(self.probs, dtype=np.float64)
        ranks = np.asarray(self.ranks)
        lens = np.asarray(self.caption_lengths)
        cpi = np.asarray(self.captions_per_image)
        for name, arr in (("ranks", ranks), ("caption_lengths", lens), ("captions_per_image", cpi)):
            if arr.ndim != 1:
                raise InputError(f"{name} must be one-dimensional, got shape {arr.shape}")
            if arr.size and not np.issubdtype(arr.dtype, np.integer):
                if not np.all(np.isfinite(arr)) or not np.array_equal(arr, np.round(arr)):
                    raise InputError(f"{name} must hold integers")
        if probs.ndim != 1:
            raise InputError(f"probs must be one-dimensional, got shape {probs.shape}")
        ranks = ranks.astype(np.int64)
        lens = lens.astype(np.int64)
        cpi = cpi.astype(np.int64)
        if probs.shape != ranks.shape:
            raise InputError(f"probs ({probs.size}) and ranks ({ranks.size}) differ in length")
        if cpi.size == 0:
            raise InputError("no images: captions_per_image is empty")
        bad = np.flatnonzero(cpi < 1)
        if bad.size:
            raise InputError(f"image {bad[0]} has {cpi[bad[0]]} reference captions; need at least 1")
        if int(cpi.sum()) != lens.size:
            raise InputError(
                f"captions_per_image sums to {int(cpi.sum())} but there are {lens.size} caption lengths"
            )
        bad = np.flatnonzero(lens < 1)
        if bad.size:
            img, cap = self._locate(cpi, int(bad[0]))
            raise InputError(
                f"image {img} caption {cap} has {lens[bad[0]]} scored positions; "
                "need at least 1 (the end token is always scored)"
            )
        if int(lens.sum()) != probs.size:
            raise InputError(
                f"caption_lengths sum to {int(lens.sum())} but there are {probs.size} token records"
            )
        bad = np.flatnonzero(~((probs >= 0.0) & (probs <= 1.0)))
        if bad.size:
            img, cap, pos = self._locate_token(cpi, lens, int(bad[0]))
            raise InputError(
                f"image {img} caption {cap} position {pos}: probability {float(probs[bad[0]])!r} "
                "is not in [0, 1]"
            )
        bad = np.flatnonzero(ranks < 0)
        if bad.size:
            img, cap, pos = self._locate_token(cpi, lens, int(bad[0]))
            raise InputError(f"image {img} caption {cap} position {pos}: negative rank {int(ranks[bad[0]])}")
        object.__setattr__(self, "probs", probs)
        object.__setattr__(self, "ranks", ranks)
        object.__setattr__(self, "caption_lengths", lens)
        object.__setattr__(self, "captions_per_image", cpi)

    @staticmethod
    def _locate(cpi: np.ndarray, caption: int) -> tuple[int, int]:
        ends = np.cumsum(cpi)
        img = int(np.searchsorted(ends, caption, side="right"))
        return img, caption - int(ends[img] - cpi[img])

    @classmethod
    def _locate_token(cls, cpi: np.ndarray, lens: np.ndarray, token: int) -> tuple[int, int, int]:
        ends = np.cumsum(lens)
        cap = int(np.searchsorted(ends, token, side="right"))
        img, cap_in_img = cls._locate(cpi, cap)
        return img, cap_in_img, token - int(ends[cap] - lens[cap])

    # -- shape -----------------------------------------------------------------------
    @property
    def n_images(self) -> int:
        return int(self.captions_per_image.size)

    @property
    def n_captions(self) -> int:
        return int(self.caption_lengths.size)

    def caption_starts(self) -> np.ndarray:
        return np.concatenate(([0], np.cumsum(self.caption_lengths)[:-1])).astype(np.int64)

    def image_starts(self) -> np.ndarray:
        """Index of each image's first caption."""
        return np.concatenate(([0], np.cumsum(self.captions_per_image)[:-1])).astype(np.int64)

    # -- selection -------------------------------------------------------------------
    def select_images(self, indices: Sequence[int] | np.ndarray) -> "TokenScores":
        """The records of the given images, in the given order (a stratum)."""
        idx = np.asarray(indices, dtype=np.int64)
        if idx.size == 0:
            raise InputError("cannot select an empty set of images")
        if idx.min() < 0 or idx.max() >= self.n_images:
            raise InputError(f"image index out of range 0..{self.n_images - 1}")
        img_starts = self.image_starts()
        cap_idx = np.concatenate(
            [np.arange(img_starts[i], img_starts[i] + self.captions_per_image[i]) for i in idx]
        )
        cap_starts = self.caption_starts()
        tok_idx = np.concatenate(
            [np.arange(cap_starts[c], cap_starts[c] + self.caption_lengths[c]) for c in cap_idx]
        )
        return TokenScores(
            self.probs[tok_idx],
            self.ranks[tok_idx],
            self.caption_lengths[cap_idx],
            self.captions_per_image[idx],
        )

    # -- conversions -----------------------------------------------------------------
    @classmethod
    def from_nested(cls, images: Sequence[Sequence[Sequence[Sequence[float]]]]) -> "TokenScores":
        """From ``images[i][c][t] = (prob, rank)``, the layout of the reference code's
        ``test_probs/*.json`` cache."""
        probs: list[float] = []
        ranks: list[int] = []
        lens: list[int] = []
        cpi: list[int] = []
        for i, caps in enumerate(images):
            cpi.append(len(caps))
            for c, cap in enumerate(caps):
                lens.append(len(cap))
                for t, rec in enumerate(cap):
                    if len(rec) != 2:
                        raise InputError(
                            f"image {i} caption {c} position {t}: expected (prob, rank), got {rec!r}"
                        )
                    probs.append(float(rec[0]))
                    ranks.append(int(rec[1]))
        return cls(
            np.asarray(probs, dtype=np.float64),
            np.asarray(ranks, dtype=np.int64),
            np.asarray(lens, dtype=np.int64),
            np.asarray(cpi, dtype=np.int64),
        )

    def to_nested(self) -> list[list[list[tuple[float, int]]]]:
        out: list[list[list[tuple[float, int]]]] = []
        tok = 0
        cap = 0
        for n_caps in self.captions_per_image:
            img = []
            for _ in range(n_caps):
                t = int(self.caption_lengths[cap])
                img.append(
                    [(float(p), int(r)) for p, r in zip(self.probs[tok : tok + t], self.ranks[tok : tok + t])]
                )
                tok += t
                cap += 1
            out.append(img)
        return out

    def save_npz(self, path: str | Path) -> None:
        np.savez_compressed(
            path,
            probs=self.probs,
            ranks=self.ranks,
            caption_lengths=self.caption_lengths,
            captions_per_image=self.captions_per_image,
        )

    @classmethod
    def load_npz(cls, path: str | Path) -> "TokenScores":
        path = Path(path)
        from ..guards import MAX_PICKLE_BYTES, open_regular

        if not os.path.lexists(path):  # lexists: a link loop reaches the door, which names it
            raise InputError(f"{path}: no such file")
        f = open_regular(path, "--probs file", MAX_PICKLE_BYTES)  # a regular file (not a FIFO or device)
        try:
            z = np.load(f, allow_pickle=False)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:  # not an npz, or one with pickles
            f.close()
            raise InputError(f"{path}: not a readable .npz of arrays ({type(e).__name__}: {e})") from None
        with f, z:
            missing = [k for k in NPZ_KEYS if k not in z.files]
            if missing:
                raise InputError(
                    f"{path}: missing array(s) {', '.join(missing)}; expected {', '.join(NPZ_KEYS)}"
                )
            try:
                return cls(*(z[k] for k in NPZ_KEYS))
            except InputError as e:
                raise InputError(f"{path}: {e}") from None
