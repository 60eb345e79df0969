"""A user's image directory: image file names (as benchmarks and input files give them) → paths.

A name is looked up directly under the directory first, then anywhere below it by file name
(datasets unpack into ``val2014/``, ``Flicker8k_Dataset/``, ``JPEGImages/``...), so pointing
``--images`` at the top of an image collection works. A file name found in two places is
ambiguous and refused rather than guessed. A bare COCO ``image_id`` (an integer) is looked up
as ``COCO_val2014_%012d.jpg``, then ``COCO_train2014_...``, then ``<id>.jpg``, then ``<id>``.

What ``--images`` confines: an ``image`` field names a file under the folder -- a file name or
a relative path without ``..``; an absolute path or one with ``..`` is refused, naming it, so an
input file cannot make capeval read outside the folder. The folder itself is the user's: the
symbolic links it holds are followed (a dataset linked into it works), and the search below it
enters each directory once (a link back to ``.`` is a cycle, not an endless tree). Only regular
files are found (a FIFO or device of that name is not an image).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .guards import confined_name, kind_of, walk_files
from .errors import InputError

COCO_PATTERNS = ("COCO_val2014_{:012d}.jpg", "COCO_train2014_{:012d}.jpg", "{}.jpg", "{}")


def candidate_names(image) -> list[str]:
    """File names an input's ``image``/``image_id`` value may stand for, most specific first."""
    if isinstance(image, bool):
        return []
    if isinstance(image, int) or (isinstance(image, str) and image.strip().isdigit()):
        n = int(image)
        return [p.format(n) for p in COCO_PATTERNS]
    if isinstance(image, float) and image.is_integer():
        return candidate_names(int(image))
    return [str(image)] if isinstance(image, str) and image.strip() else []


class ImageDir:
    def __init__(self, directory: str | Path):
        self.root = Path(directory).expanduser()
        if not self.root.is_dir():
            raise InputError(f"--images {self.root}: not a directory ({kind_of(self.root)})")
        self._index: dict[str, list[Path]] | None = None

    def _by_name(self) -> dict[str, list[Path]]:
        if self._index is None:
            index: dict[str, list[Path]] = {}
            for f in walk_files(self.root):
                index.setdefault(f.name, []).append(f)
            self._index = index
        return self._index

    def find(self, image) -> Path | None:
        """The file of ``image`` (a file name, a relative path or a COCO id), or None."""
        for name in candidate_names(image):
            if "\x00" in name:
                raise InputError(f"image {name!r} holds a NUL character, which no file name can")
            direct = self.root / confined_name(name, self.root)
            if direct.is_file():
                return direct
            hits = [h for h in self._by_name().get(Path(name).name, []) if h.is_file()]
            if len(hits) > 1:
                raise InputError(f"image {name!r} is ambiguous under {self.root}: "
                                 + ", ".join(str(h) for h in hits[:3]))
            if hits:
                return hits[0]
        return None

    def resolve(self, images: Sequence, what: str) -> list[str]:
        """Paths of every image, or an error naming the missing ones (``what`` names the
        input, e.g. a benchmark, and the hint says how to list them)."""
        out, missing = [], []
        for i, image in enumerate(images):
            if image is None:
                raise InputError(f"{what}: item {i} has no image name, so image-based metrics cannot score it")
            found = self.find(image)
            if found is None:
                missing.append(str(image))
            else:
                out.append(str(found))
        if missing:
            distinct = list(dict.fromkeys(missing))
            shown = ", ".join(distinct[:5]) + (f" and {len(distinct) - 5} more" if len(distinct) > 5 else "")
            raise InputError(f"{what}: {len(distinct)} image(s) not found under {self.root}: {shown}")
        return out


def item_images(what: str, ids: Sequence, names: Sequence | None, *, directory: ImageDir | str | Path | None,
                base: Path | None, required: bool) -> list[str] | None:
    """Each item's image path from the image name it gives (``names``: an input's ``image``
    fields or COCO ids, None where it gives none), by the rules of ``capeval score``: no name at
    all is no images (an error when ``required``: the run reads them); otherwise every item
    names one. Names resolve under ``directory`` (:meth:`ImageDir.resolve`), or, without it, as
    paths relative to ``base`` (an input file's folder; None: as given). ``ids`` name the items
    in errors. In-memory and streamed runs both read images through here (a streamed run per
    chunk, and over the whole input to name an error as this says it)."""
    if names is None or all(n is None for n in names):
        if required:
            raise InputError(f"{what}: no item names an image; add an 'image' field (JSONL) or column (CSV), "
                             "or use COCO results with --annotations")
        return None
    missing = [ids[i] for i, img in enumerate(names) if img is None]
    if missing:
        raise InputError(f"{what}: item {missing[0]!r} has no image ({len(missing)} item(s) in all)")
    nul = [i for i, img in enumerate(names) if "\x00" in str(img)]
    if nul:  # no file name holds one; the OS would refuse the path with a bare ValueError
        raise InputError(f"{what}: item {ids[nul[0]]!r}: image {str(names[nul[0]])!r} holds a NUL character, "
                         f"which no file name can ({len(nul)} item(s) in all)")
    if directory is not None:
        found = directory if isinstance(directory, ImageDir) else ImageDir(directory)
        return found.resolve(names, what)
    return [str(base / img) for img in names] if base is not None else [str(img) for img in names]
