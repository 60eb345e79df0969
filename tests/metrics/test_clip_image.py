"""CLIP's image preprocessing without torchvision: against the ``clip`` package's ``preprocess``
when it imports, and always against transformers' CLIP image processor, an independent PIL
implementation of the same steps."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("PIL")

from capeval.errors import InputError  # noqa: E402
from capeval.metrics._clip_image import crop_box, decode, preprocess_image, resized_size  # noqa: E402

# (width, height) whose centre-crop margins are even after the resize: there torchvision and
# transformers put the crop at the same place.
EVEN = [(224, 224), (300, 200), (199, 421), (512, 512), (640, 480), (500, 375), (333, 500), (225, 300)]
ODD = [(64, 97), (227, 224), (229, 224), (224, 301)]


def _image(w, h, seed=0, mode="RGB"):
    from PIL import Image

    arr = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    img = Image.fromarray(arr, "RGB")
    return img if mode == "RGB" else img.convert(mode)


@pytest.mark.parametrize("size", EVEN)
@pytest.mark.parametrize("mode", ["RGB", "L"])
def test_matches_transformers_clip_image_processor(size, mode):
    transformers = pytest.importorskip("transformers")
    proc = getattr(transformers, "CLIPImageProcessorPil", None) or transformers.CLIPImageProcessor
    img = _image(*size, mode=mode)
    want = proc()(images=img, return_tensors="np")["pixel_values"][0]
    got = preprocess_image(img, 224)
    assert got.dtype == np.float32 and got.shape == (3, 224, 224)
    np.testing.assert_array_equal(got, want)


@pytest.mark.needs("module:clip")
@pytest.mark.parametrize("size", EVEN + ODD)
def test_matches_the_clip_package_preprocess(size):
    from clip.clip import _transform

    img = _image(*size)
    np.testing.assert_array_equal(preprocess_image(img, 224), _transform(224)(img).numpy())


def test_resize_truncates_the_long_side_as_torchvision():
    assert resized_size(64, 97, 224) == (224, 339)  # 224 * 97 / 64 = 339.5 -> 339
    assert resized_size(500, 333, 224) == (336, 224)  # 336.33 -> 336
    assert resized_size(224, 224, 224) == (224, 224)


@pytest.mark.parametrize("size, offset", [((227, 224), 2), ((229, 224), 2), ((231, 224), 4), ((226, 224), 1)])
def test_odd_margins_round_half_to_even_as_torchvision(size, offset):
    """torchvision's CenterCrop takes ``int(round(margin / 2))`` (margins 3, 5, 7 -> 2, 2, 4);
    transformers floors instead, which is why ODD sizes are not compared with it."""
    from PIL import Image

    w, h = size
    assert crop_box(w, h, 224)[0] == offset
    # A picture whose red channel is the column index: the crop starts at column ``offset``.
    arr = np.zeros((h, w, 3), np.uint8)
    arr[..., 0] = np.arange(w, dtype=np.uint8)[None, :]
    x = preprocess_image(Image.fromarray(arr, "RGB"), 224)
    first = x[0, 0, 0] * np.float32(0.26862954) + np.float32(0.48145466)
    assert round(float(first) * 255) == offset


def test_unreadable_bytes_name_the_image():
    with pytest.raises(InputError, match="broken.jpg"):
        decode(b"\x00\x01 not an image", "broken.jpg")
