"""Encoding of RGB arrays to JPEG/PNG at the model-client boundary.

Images travel through urbanarena as RGB ``uint8`` arrays ``(H, W, 3)``; they
become JPEG or PNG bytes only here, right before a request is sent. The
encoding itself is the render layer's
:func:`urbanarena.render.encode.encode_image` (OpenCV; RGB order preserved,
one shrink to the pixel limits with ``INTER_AREA``, then while over the byte
limit the linear scale is multiplied by ``downscale_step`` and the image
re-encoded from the original, down to ``min_side_px``). This module maps
:class:`ImageSettings` and the provider onto its arguments:

* side and pixel caps: ``ImageSettings.max_side_px`` / ``max_pixels``, the
  provider's hard side limit (Anthropic 8000 px) when tighter;
* byte cap: ``ImageSettings.max_bytes`` if set, else the provider's
  (:data:`urbanarena.render.encode.PROVIDER_LIMITS`: Anthropic 5 MiB of
  base64 text, which is what its API checks; OpenAI and OpenAI-compatible
  servers 20 MiB of file bytes). The length is measured on the base64 text for
  Anthropic and on the file for the others.

:func:`planned_size` repeats the encoder's first (pixel-limit) stage so cost
estimates see the size that will be sent when no byte-limit step is needed.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass

from urbanarena.agents.clients.errors import ImageEncodingError
from urbanarena.agents.clients.types import Image, ImageSettings
from urbanarena.errors import ImageEncodeError
from urbanarena.render.encode import PROVIDER_LIMITS, ImageLimits, base64_len
from urbanarena.render.encode import encode_image as _render_encode


@dataclass(frozen=True)
class EncodedImage:
    """An encoded image ready to send.

    Attributes:
        data: JPEG/PNG bytes.
        media_type: ``image/jpeg`` or ``image/png``.
        width / height: encoded size (pixels).
        source_width / source_height: size of the array it came from.
        source_sha256: :attr:`Image.sha256` of the source array.
        sha256: sha256 hex of :attr:`data`.
    """

    data: bytes
    media_type: str
    width: int
    height: int
    source_width: int
    source_height: int
    source_sha256: str
    sha256: str

    @property
    def extension(self) -> str:
        return "jpg" if self.media_type == "image/jpeg" else "png"

    def b64(self) -> str:
        """Base64 text of :attr:`data` (computed once per object)."""
        return self._b64

    @functools.cached_property
    def _b64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")

    def data_url(self) -> str:
        """``data:<media type>;base64,<data>`` (OpenAI ``image_url``)."""
        return f"data:{self.media_type};base64,{self._b64}"

    @property
    def b64_len(self) -> int:
        """Length of the base64 text (4 * ceil(bytes / 3))."""
        return base64_len(len(self.data))


def provider_limits(provider: str) -> ImageLimits:
    """The render layer's preset for ``provider`` (OpenAI-compatible servers use OpenAI's)."""
    return PROVIDER_LIMITS["anthropic" if provider == "anthropic" else "openai"]


def _caps(settings: ImageSettings, provider: str) -> tuple[int | None, int | None]:
    """Effective ``(max_side, max_pixels)``."""
    hard = provider_limits(provider).max_side
    sides = [s for s in (settings.max_side_px, hard) if s is not None]
    return (min(sides) if sides else None), settings.max_pixels


def planned_size(width: int, height: int, settings: ImageSettings, provider: str) -> tuple[int, int]:
    """Size after the encoder's pixel-limit shrink (before any byte-limit steps).

    Same arithmetic as :func:`urbanarena.render.encode.encode_image`: one scale
    ``s = min(max_side / max(W, H), sqrt(max_pixels / (W*H)))`` when a cap is
    exceeded, sides floored (at least 1).

    Args:
        width, height: source size in pixels.
        settings: image settings.
        provider: provider id (adds its hard side limit, Anthropic 8000 px).
    Returns: ``(width, height)``.
    """
    max_side, max_pixels = _caps(settings, provider)
    scale = 1.0
    if max_side is not None and max(width, height) > max_side:
        scale = min(scale, max_side / max(width, height))
    if max_pixels is not None and width * height > max_pixels:
        scale = min(scale, math.sqrt(max_pixels / (width * height)))
    if scale >= 1.0:
        return width, height
    w, h = max(1, math.floor(width * scale)), max(1, math.floor(height * scale))
    while max_pixels is not None and w * h > max_pixels:
        w, h = max(1, w - 1), max(1, math.floor(w * height / width))
    return w, h


#: encodings kept by :func:`encode_image`, least recently used dropped first (the sweep's 640x360 view: a 47 kB JPEG)
MAX_CACHED_ENCODINGS = 64
_ENCODED: OrderedDict[tuple[str, ImageSettings, str], EncodedImage] = OrderedDict()
_ENCODED_LOCK = threading.Lock()


def encode_image(image: Image, settings: ImageSettings, provider: str) -> EncodedImage:
    """Encode ``image`` under ``settings`` and ``provider``'s limits (module docstring).

    The encoding is a function of the pixels (:attr:`Image.sha256`), the settings and the provider, so
    the last :data:`MAX_CACHED_ENCODINGS` are kept per process and an image sent before (the same view
    in another episode or seed, a conversation that repeats a picture) is not encoded again.

    Args:
        image: the RGB array wrapper.
        settings: format, quality and limits.
        provider: ``openai``, ``openai-compatible`` or ``anthropic``.
    Returns: the :class:`EncodedImage`.
    Raises:
        ImageEncodingError: the byte limit cannot be met above ``min_side_px``.
    """
    key = (image.sha256, settings, provider)
    with _ENCODED_LOCK:
        hit = _ENCODED.get(key)
        if hit is not None:
            _ENCODED.move_to_end(key)
            return hit
    enc = _encode(image, settings, provider)
    with _ENCODED_LOCK:
        _ENCODED[key] = enc
        while len(_ENCODED) > MAX_CACHED_ENCODINGS:
            _ENCODED.popitem(last=False)
    return enc


def _encode(image: Image, settings: ImageSettings, provider: str) -> EncodedImage:
    limits = provider_limits(provider)
    max_side, max_pixels = _caps(settings, provider)
    try:
        enc = _render_encode(
            image.array,
            settings.format,
            max_side=max_side,
            max_pixels=max_pixels,
            max_bytes=settings.max_bytes if settings.max_bytes is not None else limits.max_bytes,
            limit_base64=limits.limit_base64,
            jpeg_quality=settings.jpeg_quality,
            step=settings.downscale_step,
            min_side=settings.min_side_px,
        )
    except ImageEncodeError as e:
        raise ImageEncodingError(str(e)) from e
    return EncodedImage(
        data=enc.data, media_type=enc.mime_type, width=enc.width, height=enc.height,
        source_width=image.width, source_height=image.height, source_sha256=image.sha256,
        sha256=hashlib.sha256(enc.data).hexdigest(),
    )
