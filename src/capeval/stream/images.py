"""Image paths of streamed rows, by the rules of ``capeval score`` (:func:`capeval.imagedir.item_images`).

A run that reads images (a family with ``needs_images`` or ``accepts_images``, or an image
directory given) resolves each chunk's image names in the reading process, so a chunk carries
paths (:attr:`~capeval.stream.readers.Chunk.images`) and workers never search the directory.
The directory's index (:class:`~capeval.imagedir.ImageDir`) is built once per run, the first
time a name is not found directly under it.

The in-memory rules look at the whole input (no item naming an image; every item naming one;
the count of missing images); a chunk sees its own rows. So a chunk's error sends the run back
over the whole input's ``(id, image)`` pairs through the same function, which raises the error
the in-memory run raises (a one-shot iterator cannot be read again: its chunk's error is
raised, naming the rows). Only this error path holds the whole input's image names.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from ..imagedir import ImageDir, item_images


class ImageRows:
    """How one run turns rows' image names into paths: under ``directory`` (CLI ``--images``),
    or, without it, relative to the input file's folder (an iterable's: as given)."""

    def __init__(self, rows, directory, classes, one_shot: bool = False):
        self.rows = rows
        self.what = str(rows) if isinstance(rows, (str, Path)) else "rows"
        self.required = directory is not None or any(cls.needs_images for cls in classes)
        self.wanted = self.required or any(cls.accepts_images for cls in classes)
        self.dir = ImageDir(directory) if directory is not None else None
        self.base = Path(rows).parent if isinstance(rows, (str, Path)) else None
        self.one_shot = one_shot
        #: whether the rows name images (decided by the first chunk; the others must agree)
        self.named: bool | None = None

    def fingerprint(self) -> str:
        """What the paths depend on beyond the rows, for the run's fingerprint."""
        if not self.wanted:
            return "none"
        if self.dir is not None:
            return f"dir:{self.dir.root.resolve()}"
        return f"base:{self.base.resolve() if self.base is not None else ''}"

    def resolve(self, ids: list | None, names: list, start: int) -> list[str] | None:
        """The chunk's image paths (None: the run reads no images), or the in-memory error."""
        labels = ids if ids is not None else list(range(start, start + len(names)))
        try:
            paths = item_images(self.what, labels, names, directory=self.dir, base=self.base,
                                required=self.required or bool(self.named))
            if self.named is None:
                self.named = paths is not None
            elif paths is not None and not self.named:  # images after rows without: refused as in memory
                raise InputError(f"{self.what}: item {labels[0]!r} names an image, and rows before it do not")
        except InputError as e:
            raise self._whole_input_error(e, start, len(names)) from None
        return paths

    def _whole_input_error(self, e: InputError, start: int, n: int) -> InputError:
        if self.one_shot:
            return InputError(f"{e} [in input rows {start}-{start + n - 1}]")
        from .readers import open_rows

        ids, names = [], []
        for i, (_, key, _c, _r, image) in enumerate(open_rows(self.rows, with_image=True)):
            ids.append(i if key is None else key)
            names.append(image)
        try:
            item_images(self.what, ids, names, directory=self.dir, base=self.base, required=self.required)
        except InputError as whole:
            return whole
        return e


def image_rows(rows, images, families: list) -> ImageRows:
    """The image rules of a run of the metric ``families`` over ``rows`` (``images``: the
    directory, checked here, before any work)."""
    one_shot = not isinstance(rows, (str, Path)) and iter(rows) is rows
    return ImageRows(rows, images, list(families), one_shot=one_shot)
