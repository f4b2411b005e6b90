"""Image encoding within provider limits: pixel limits, byte limits reached by downscaling in
steps, base64 accounting, colour order, failures."""

from __future__ import annotations

import base64
import math

import numpy as np
import pytest

from urbanarena.errors import ImageEncodeError
from urbanarena.render.encode import PROVIDER_LIMITS, base64_len, decode_image, encode_image


def noise(h, w, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def test_no_limits_keeps_size_and_pixels():
    img = noise(60, 80)
    enc = encode_image(img, "png")
    assert (enc.width, enc.height, enc.mime_type, enc.format) == (80, 60, "image/png", "png")
    assert not enc.downscaled and enc.jpeg_quality is None
    assert np.array_equal(decode_image(enc.data), img)
    assert enc.data_url().startswith("data:image/png;base64,")
    assert base64.b64decode(enc.base64()) == enc.data


def test_max_side_and_max_pixels():
    img = noise(300, 1000)
    enc = encode_image(img, "jpeg", max_side=500)
    assert (enc.width, enc.height) == (500, 150) and enc.mime_type == "image/jpeg" and enc.jpeg_quality == 90
    enc = encode_image(img, "png", max_pixels=30_000)
    # scale sqrt(30000/300000) = 0.3162 -> floor(316.2) x floor(94.86) = 316 x 94
    assert (enc.width, enc.height) == (316, 94)
    assert enc.width * enc.height <= 30_000
    assert decode_image(enc.data).shape == (94, 316, 3)


def test_max_bytes_downscales_in_steps_from_the_original():
    img = noise(400, 400)  # incompressible: PNG ~ 3 bytes per pixel
    full = len(encode_image(img, "png").data)
    enc = encode_image(img, "png", max_bytes=full // 3, step=0.8)
    assert len(enc.data) <= full // 3
    # steps 0.8, 0.64, 0.512: 0.512^2 * full < full / 3 < 0.64^2 * full -> 3 steps, side floor(400 * 0.8^3) = 204
    assert (enc.width, enc.height) == (int(math.floor(400 * 0.8 ** 3)), int(math.floor(400 * 0.8 ** 3)))


def test_base64_limit_counts_the_encoded_text():
    img = noise(200, 200)
    raw = len(encode_image(img, "png").data)
    assert base64_len(raw) == len(base64.b64encode(encode_image(img, "png").data))
    # a limit between the raw size and its base64 length: fits raw, not base64
    limit = (raw + base64_len(raw)) // 2
    assert not encode_image(img, "png", max_bytes=limit).downscaled
    enc = encode_image(img, "png", max_bytes=limit, limit_base64=True)
    assert enc.downscaled and base64_len(len(enc.data)) <= limit


def test_provider_preset_anthropic():
    lim = PROVIDER_LIMITS["anthropic"]
    assert lim.max_bytes == 5 * 1024 * 1024 and lim.limit_base64 and lim.max_side == 8000
    img = noise(64, 9000)
    enc = encode_image(img, "jpeg", limits=lim)
    assert enc.width == 8000 and enc.height == int(math.floor(64 * 8000 / 9000))


def test_impossible_limit_raises():
    with pytest.raises(ImageEncodeError, match="cannot encode"):
        encode_image(noise(100, 100), "png", max_bytes=50)


def test_red_round_trip_png_and_jpeg():
    img = np.zeros((90, 160, 3), np.uint8)
    img[..., 0] = 255
    assert np.array_equal(decode_image(encode_image(img, "png").data), img)
    j = decode_image(encode_image(img, "jpg", jpeg_quality=80).data)
    assert j[..., 0].min() >= 245 and j[..., 1:].max() <= 10


@pytest.mark.parametrize("bad", [np.zeros((4, 4, 4), np.uint8), np.zeros((4, 4, 3), np.float32)])
def test_bad_arrays(bad):
    with pytest.raises(ValueError):
        encode_image(bad)
    with pytest.raises(ValueError):
        encode_image(np.zeros((4, 4, 3), np.uint8), "gif")
