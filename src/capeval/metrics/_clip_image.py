"""CLIP's image preprocessing with PIL and numpy, step for step as torchvision runs it.

The reference scripts (clipscore.py, PAC-S's evaluation code, ``clip.load``'s ``preprocess``) all
use ``Compose([Resize(n_px, BICUBIC), CenterCrop(n_px), convert("RGB"), ToTensor(),
Normalize(CLIP_MEAN, CLIP_STD)])``. torchvision runs ``Resize`` and ``CenterCrop`` on a PIL
image through PIL itself, so doing the same PIL calls with the same sizes and offsets gives the
same pixels without torchvision (which cannot be imported beside every torch build). The order
matters for non-RGB images: resizing happens in the file's own mode (a palette image is resized
with nearest neighbour by PIL), the RGB conversion after the crop.
"""
from __future__ import annotations

import io

import numpy as np

from ..guards import MAX_IMAGE_PIXELS, check_image_size
from ..errors import InputError

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
#: Named in signatures: what the pixels went through.
PREPROCESS_ID = "resize-short-bicubic-center-crop-rgb-clipnorm"


def resized_size(width: int, height: int, n_px: int) -> tuple[int, int]:
    """(width, height) after torchvision's ``Resize(n_px)``: the shorter side becomes ``n_px``,
    the longer one ``int(n_px * long / short)`` (truncated, not rounded)."""
    if width <= height:
        return n_px, int(n_px * height / width)
    return int(n_px * width / height), n_px


def crop_box(width: int, height: int, n_px: int) -> tuple[int, int, int, int]:
    """PIL crop box of torchvision's ``CenterCrop(n_px)``; offsets use Python's ``round`` (half
    to even), as torchvision does, so an odd margin puts the extra pixel where it puts it."""
    top = int(round((height - n_px) / 2.0))
    left = int(round((width - n_px) / 2.0))
    return left, top, left + n_px, top + n_px


def preprocess_image(image, n_px: int) -> np.ndarray:
    """A PIL image -> float32 array (3, n_px, n_px), normalised with CLIP's mean and std."""
    from PIL import Image

    w, h = image.size
    check_image_size(w, h, getattr(image, "filename", "") or "<image>")  # before the resize allocates
    new = resized_size(w, h, n_px)
    if new != (w, h):
        image = image.resize(new, Image.BICUBIC)
    image = image.crop(crop_box(new[0], new[1], n_px)).convert("RGB")
    # ToTensor divides by 255 and Normalize subtracts then divides, all in float32.
    x = np.asarray(image, dtype=np.uint8).astype(np.float32) / np.float32(255)
    x = (x - np.asarray(CLIP_MEAN, dtype=np.float32)) / np.asarray(CLIP_STD, dtype=np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1))


def decode(data: bytes, name: str):
    """The PIL image in ``data`` (the bytes of file ``name``), fully decoded; a file PIL cannot
    read, or whose pixels or aspect ratio are over the image door's limits
    (:func:`capeval.guards.check_image_size`, checked from the header before decoding), is an
    :class:`InputError` naming it and its size."""
    import warnings

    from PIL import Image, UnidentifiedImageError

    size = f"{len(data):,} bytes"
    try:
        with warnings.catch_warnings():
            # PIL warns past its own limit (89,478,485 pixels), below the door's 2**27, and raises
            # past twice that: the door's limit decides between the two, and above both PIL's
            # error is reported as the door's refusal.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            try:
                image = Image.open(io.BytesIO(data))
            except Image.DecompressionBombError:
                raise InputError(f"image {name!r} ({size}) has more than {MAX_IMAGE_PIXELS:,} pixels; "
                                 "resize it first") from None
            w, h = image.size
            size = f"{w}x{h} pixels, {len(data):,} bytes"
            check_image_size(w, h, name, len(data))
            image.load()
    except InputError:
        raise
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError,
            Image.DecompressionBombWarning) as exc:
        raise InputError(f"image {name!r} ({size}) cannot be read as an image: {exc}") from None
    except MemoryError:
        raise InputError(f"image {name!r} ({size}) cannot be decoded within the memory available") from None
    return image
