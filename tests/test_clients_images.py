"""Image encoding at the client boundary: RGB order, pixel/side limits, byte limits by steps."""

from __future__ import annotations

import base64
import io
import math

import numpy as np
import pytest
from PIL import Image as PILImage

from urbanarena.agents.clients import Image, ImageSettings, encode_image, planned_size
from urbanarena.agents.clients.errors import ImageEncodingError


def decode(enc) -> np.ndarray:
    pil = PILImage.open(io.BytesIO(base64.b64decode(enc.b64())))
    assert pil.size == (enc.width, enc.height)
    return np.asarray(pil.convert("RGB"))


@pytest.mark.parametrize("fmt", ["jpeg", "png"])
@pytest.mark.parametrize("channel", [0, 1, 2])
def test_pure_colours_survive_encoding(fmt, channel):
    a = np.zeros((90, 160, 3), np.uint8)
    a[..., channel] = 255
    enc = encode_image(Image(a), ImageSettings(format=fmt), "openai")
    assert enc.media_type == f"image/{fmt}"
    mean = decode(enc).reshape(-1, 3).mean(axis=0)
    expected = np.zeros(3)
    expected[channel] = 255
    # JPEG's chroma quantisation moves pure primaries by a few levels at most; PNG is exact.
    assert np.abs(mean - expected).max() <= (3 if fmt == "jpeg" else 0)


def test_png_is_lossless_and_data_url_form():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (37, 53, 3), dtype=np.uint8)
    enc = encode_image(Image(a), ImageSettings(format="png"), "anthropic")
    assert np.array_equal(decode(enc), a)
    assert enc.data_url().startswith("data:image/png;base64,")
    assert enc.b64_len == len(enc.b64()) == 4 * math.ceil(len(enc.data) / 3)
    assert (enc.width, enc.height) == (53, 37)


@pytest.mark.parametrize(
    "w, h, settings, provider, expected",
    [
        (640, 360, ImageSettings(), "openai", (640, 360)),
        # max_side_px: 3000 -> 1568 (floor of 3000 * 1568/3000, which float arithmetic may put at 1567),
        # 2000 * 1568 / 3000 = 1045.33 -> 1045
        (3000, 2000, ImageSettings(max_side_px=1568), "openai", ((1567, 1568), 1045)),
        # max_pixels: scale sqrt(1e6 / 6e6) = 0.408248 -> 1224.7 x 816.5 -> 1224 x 816 (998,784 px <= 1e6)
        (3000, 2000, ImageSettings(max_pixels=1_000_000), "openai", (1224, 816)),
        # Anthropic's hard 8000 px side limit applies without settings: 10000 x 500 -> 8000 x 400
        (10000, 500, ImageSettings(), "anthropic", (8000, 400)),
        (10000, 500, ImageSettings(), "openai", (10000, 500)),
    ],
)
def test_planned_size_and_encoder_agree(w, h, settings, provider, expected):
    got = planned_size(w, h, settings, provider)
    ew, eh = expected
    assert (got[0] in ew if isinstance(ew, tuple) else got[0] == ew) and got[1] == eh
    if settings.max_pixels:
        assert got[0] * got[1] <= settings.max_pixels
    if settings.max_side_px:
        assert max(got) <= settings.max_side_px
    # the encoder sends exactly the planned size (no byte-limit step needed for a flat image)
    enc = encode_image(Image(np.zeros((h, w, 3), np.uint8)), settings, provider)
    assert (enc.width, enc.height) == got


def test_byte_limit_is_met_by_downscaling_in_steps():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, (400, 600, 3), dtype=np.uint8)  # noise: incompressible
    full = encode_image(Image(a), ImageSettings(format="png"), "openai")
    limit = len(full.data) // 3
    s = ImageSettings(format="png", max_bytes=limit, downscale_step=0.8)
    enc = encode_image(Image(a), s, "openai")
    assert len(enc.data) <= limit  # OpenAI: file bytes
    # sizes follow the chain floor(600 * 0.8^k) x floor(400 * 0.8^k); noise PNG bytes scale with area,
    # so at least ceil(log(1/3) / log(0.64)) = 3 steps are needed
    chain = [(math.floor(600 * 0.8**k), math.floor(400 * 0.8**k)) for k in range(20)]
    k = chain.index((enc.width, enc.height))
    assert k >= 3
    # one step fewer would not have fitted
    bigger = encode_image(Image(a), ImageSettings(format="png", max_side_px=chain[k - 1][0], max_bytes=10**9), "openai")
    assert (bigger.width, bigger.height) == chain[k - 1] and len(bigger.data) > limit


def test_anthropic_limit_counts_base64():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (200, 300, 3), dtype=np.uint8)
    n = len(encode_image(Image(a), ImageSettings(format="png"), "openai").data)
    # a limit between the file size and its base64 length: fine for OpenAI, too big for Anthropic
    limit = n + (4 * math.ceil(n / 3) - n) // 2
    s = ImageSettings(format="png", max_bytes=limit)
    assert (encode_image(Image(a), s, "openai").width, encode_image(Image(a), s, "openai").height) == (300, 200)
    small = encode_image(Image(a), s, "anthropic")
    assert small.width < 300 and small.b64_len <= limit


def test_byte_limit_impossible_raises():
    rng = np.random.default_rng(2)
    a = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    with pytest.raises(ImageEncodingError, match="cannot encode"):
        encode_image(Image(a), ImageSettings(format="png", max_bytes=100, min_side_px=32), "openai")


def test_image_validation_and_content_hash():
    with pytest.raises(ImageEncodingError):
        Image(np.zeros((4, 4), np.uint8))
    with pytest.raises(ImageEncodingError):
        Image(np.zeros((4, 4, 3), np.float32))
    with pytest.raises(ImageEncodingError):
        Image(np.zeros((4, 4, 4), np.uint8))
    a = np.arange(6 * 8 * 3, dtype=np.uint8).reshape(6, 8, 3)
    # a non-contiguous view with the same pixels hashes the same as a contiguous copy
    big = np.zeros((12, 8, 3), np.uint8)
    big[::2] = a
    assert Image(big[::2]).sha256 == Image(a.copy()).sha256
    # the wrapper copies: editing the source later changes nothing
    img = Image(a)
    h0 = img.sha256
    a[0, 0, 0] ^= 1
    assert Image(a).sha256 != h0 and img.sha256 == h0
    # same bytes, different shape -> different hash
    assert Image(a.reshape(8, 6, 3)).sha256 != Image(a).sha256


def test_an_image_sent_again_is_not_encoded_again(monkeypatch):
    import urbanarena.agents.clients.images as images

    calls = []
    real = images._render_encode
    monkeypatch.setattr(images, "_render_encode", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setattr(images, "_ENCODED", images.OrderedDict())
    monkeypatch.setattr(images, "MAX_CACHED_ENCODINGS", 2)
    rng = np.random.default_rng(9)
    a, b, c = (rng.integers(0, 256, (20, 30, 3), dtype=np.uint8) for _ in range(3))
    jpeg = ImageSettings(format="jpeg", jpeg_quality=80)
    first = encode_image(Image(a), jpeg, "openai")
    again = encode_image(Image(a.copy()), jpeg, "openai")  # same pixels, another array
    assert again == first and len(calls) == 1
    # the bytes are the encoder's: decoding them gives the JPEG of a 30x20 image
    assert PILImage.open(io.BytesIO(base64.b64decode(again.b64()))).size == (30, 20)
    assert again.data_url() == "data:image/jpeg;base64," + base64.b64encode(first.data).decode()
    # other settings or another provider: encoded anew
    encode_image(Image(a), ImageSettings(format="png"), "openai")
    encode_image(Image(a), jpeg, "anthropic")
    assert len(calls) == 3
    # at most MAX_CACHED_ENCODINGS kept, least recently used dropped first
    encode_image(Image(b), jpeg, "openai")
    encode_image(Image(c), jpeg, "openai")
    n = len(calls)
    encode_image(Image(c), jpeg, "openai")
    assert len(calls) == n
    encode_image(Image(a), jpeg, "openai")
    assert len(calls) == n + 1
