"""The documented image limit is the one applied (issue 41, item 13): 2**27 pixels, checked from
the header by the image door, not PIL's own 89,478,485-pixel decompression-bomb limit."""
from __future__ import annotations

import io

import pytest

from capeval.guards import MAX_IMAGE_PIXELS
from capeval.errors import InputError

Image = pytest.importorskip("PIL.Image")


def _png(w: int, h: int) -> bytes:
    buf = io.BytesIO()
    Image.new("1", (w, h)).save(buf, format="PNG")  # one bit per pixel: small to hold and to decode
    return buf.getvalue()


def test_an_image_between_pils_limit_and_the_documented_one_is_decoded():
    from capeval.metrics._clip_image import decode

    w, h = 10_000, 9_000
    assert Image.MAX_IMAGE_PIXELS < w * h <= MAX_IMAGE_PIXELS
    assert decode(_png(w, h), "big.png").size == (w, h)


@pytest.mark.parametrize("side", [12_000, 14_000])  # over 2**27; over twice PIL's limit as well
def test_an_image_over_the_documented_limit_is_refused_naming_it(side):
    from capeval.metrics._clip_image import decode

    assert side * side > MAX_IMAGE_PIXELS
    with pytest.raises(InputError, match=r"'huge.png'.*134,217,728"):
        decode(_png(side, side), "huge.png")
