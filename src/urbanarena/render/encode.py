"""Encode RGB arrays to PNG/JPEG bytes for a model, within provider limits.

:func:`encode_image` takes an RGB ``uint8`` array ``(H, W, 3)`` (or ``(H, W)``
grey) and returns :class:`EncodedImage` (bytes, MIME type, final size). Limits:

* ``max_side`` — longest side in pixels;
* ``max_pixels`` — ``width * height``;
* ``max_bytes`` — size of the encoded file, or of its base64 text when
  ``limit_base64=True`` (Anthropic checks the base64 length).

The image is first shrunk (aspect kept, ``INTER_AREA``) to satisfy the pixel
limits, then encoded; while the result is over ``max_bytes`` the linear scale
is multiplied by ``step`` (default 0.8) and the image re-encoded *from the
original* (no cumulative blur), down to ``min_side`` pixels, after which
:class:`~urbanarena.errors.ImageEncodeError` is raised. The JPEG quality is
fixed (part of the protocol's image settings), never lowered silently.

OpenCV encodes BGR, so the array is converted once here: the bytes decode to
the same RGB colours (tested with a pure-red image through PNG and JPEG).

Provider presets (:data:`PROVIDER_LIMITS`):

* ``anthropic`` — base64 length <= 5 MiB (the API error reads
  "image exceeds 5 MB maximum: N bytes > 5242880 bytes"), sides <= 8000 px
  (2000 px when a request carries more than 20 images: pass ``max_side=2000``);
* ``openai`` — file <= 20 MiB, no side limit enforced here (the API rescales
  to fit its ``detail`` setting).
"""

from __future__ import annotations

import base64
import hashlib
import math
from dataclasses import dataclass

import cv2
import numpy as np

from urbanarena.errors import ImageEncodeError

MIME = {"png": "image/png", "jpeg": "image/jpeg"}


@dataclass(frozen=True)
class ImageLimits:
    """Provider limits for one image (``None`` = no limit)."""

    max_bytes: int | None = None
    max_side: int | None = None
    max_pixels: int | None = None
    limit_base64: bool = False


PROVIDER_LIMITS: dict[str, ImageLimits] = {
    "anthropic": ImageLimits(max_bytes=5 * 1024 * 1024, max_side=8000, limit_base64=True),
    "openai": ImageLimits(max_bytes=20 * 1024 * 1024),
}


@dataclass(frozen=True)
class EncodedImage:
    """An encoded image.

    Attributes:
        data: the PNG/JPEG file bytes.
        mime_type: ``image/png`` or ``image/jpeg``.
        width, height: final size in pixels.
        original_width, original_height: size of the input array.
        format: ``"png"`` or ``"jpeg"``.
        jpeg_quality: quality used (``None`` for PNG).
    """

    data: bytes
    mime_type: str
    width: int
    height: int
    original_width: int
    original_height: int
    format: str
    jpeg_quality: int | None

    @property
    def downscaled(self) -> bool:
        return (self.width, self.height) != (self.original_width, self.original_height)

    @property
    def sha256(self) -> str:
        """Hex sha256 of the bytes (content hash for caches)."""
        return hashlib.sha256(self.data).hexdigest()

    def base64(self) -> str:
        """Standard base64 of the bytes (ASCII)."""
        return base64.b64encode(self.data).decode("ascii")

    def data_url(self) -> str:
        """``data:<mime>;base64,<...>`` URL (OpenAI-style image input)."""
        return f"data:{self.mime_type};base64,{self.base64()}"


def base64_len(n_bytes: int) -> int:
    """Length of the padded base64 text of ``n_bytes`` bytes: ``4 * ceil(n / 3)``."""
    return 4 * ((n_bytes + 2) // 3)


def _encode(img_bgr: np.ndarray, fmt: str, jpeg_quality: int, png_compression: int) -> bytes:
    if fmt == "jpeg":
        ok, buf = cv2.imencode(".jpg", img_bgr, [cv2.IMWRITE_JPEG_QUALITY, int(jpeg_quality)])
    else:
        ok, buf = cv2.imencode(".png", img_bgr, [cv2.IMWRITE_PNG_COMPRESSION, int(png_compression)])
    if not ok:
        raise ImageEncodeError(f"OpenCV could not encode a {img_bgr.shape} image as {fmt}")
    return buf.tobytes()


def encode_image(
    img: np.ndarray,
    fmt: str = "png",
    *,
    max_side: int | None = None,
    max_pixels: int | None = None,
    max_bytes: int | None = None,
    limit_base64: bool = False,
    jpeg_quality: int = 90,
    png_compression: int = 3,
    step: float = 0.8,
    min_side: int = 16,
    limits: ImageLimits | None = None,
) -> EncodedImage:
    """Encode an RGB image within size limits, downscaling in steps until it fits.

    Args:
        img: ``(H, W, 3)`` RGB or ``(H, W)`` grey ``uint8``.
        fmt: ``"png"`` or ``"jpeg"`` (``"jpg"`` accepted).
        max_side, max_pixels, max_bytes, limit_base64: limits (module docstring);
            ``limits`` supplies defaults for any left ``None``.
        jpeg_quality: 1..100.
        step: linear scale factor per downscaling step, in (0, 1).
        min_side: smallest allowed final side; below it the call fails.
    Returns:
        :class:`EncodedImage`.
    Raises:
        ImageEncodeError: the image cannot fit ``max_bytes`` at ``min_side``.
        ValueError: bad arguments or array.
    """
    fmt = {"jpg": "jpeg"}.get(fmt.lower(), fmt.lower())
    if fmt not in MIME:
        raise ValueError(f"format must be png or jpeg, got {fmt!r}")
    if not (0.0 < step < 1.0):
        raise ValueError("step must be in (0, 1)")
    if not (1 <= jpeg_quality <= 100):
        raise ValueError("jpeg_quality must be in 1..100")
    if limits is not None:
        max_side = max_side if max_side is not None else limits.max_side
        max_pixels = max_pixels if max_pixels is not None else limits.max_pixels
        max_bytes = max_bytes if max_bytes is not None else limits.max_bytes
        limit_base64 = limit_base64 or limits.limit_base64
    arr = np.asarray(img)
    if arr.dtype != np.uint8 or arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] != 3):
        raise ValueError(f"expected uint8 (H, W, 3) RGB or (H, W) grey, got {arr.dtype} {arr.shape}")
    h0, w0 = arr.shape[:2]
    bgr = cv2.cvtColor(arr, cv2.COLOR_RGB2BGR) if arr.ndim == 3 else arr

    scale = 1.0
    if max_side is not None and max(w0, h0) > max_side:
        scale = min(scale, max_side / max(w0, h0))
    if max_pixels is not None and w0 * h0 > max_pixels:
        scale = min(scale, math.sqrt(max_pixels / (w0 * h0)))

    def size_at(s: float) -> tuple[int, int]:
        if s >= 1.0:
            return w0, h0
        w, h = max(1, int(math.floor(w0 * s))), max(1, int(math.floor(h0 * s)))
        # floor keeps both limits satisfied; guard float error on exact fits
        while max_pixels is not None and w * h > max_pixels:
            w, h = max(1, w - 1), max(1, int(math.floor(w * h0 / w0)))
        return w, h

    while True:
        w, h = size_at(scale)
        if min(w, h) < min(min_side, min(w0, h0)):
            raise ImageEncodeError(
                f"cannot encode a {w0}x{h0} image as {fmt} within {max_bytes} bytes"
                f"{' (base64)' if limit_base64 else ''} at a side of at least {min_side} px"
            )
        src = bgr if (w, h) == (w0, h0) else cv2.resize(bgr, (w, h), interpolation=cv2.INTER_AREA)
        data = _encode(src, fmt, jpeg_quality, png_compression)
        n = base64_len(len(data)) if limit_base64 else len(data)
        if max_bytes is None or n <= max_bytes:
            return EncodedImage(data, MIME[fmt], w, h, w0, h0, fmt, jpeg_quality if fmt == "jpeg" else None)
        scale = scale * step if scale < 1.0 else step


def decode_image(data: bytes) -> np.ndarray:
    """Decode PNG/JPEG bytes to an RGB ``uint8`` array (helper for tests and fake servers).

    Raises:
        ValueError: undecodable bytes.
    """
    arr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if arr is None:
        raise ValueError("undecodable image bytes")
    return cv2.cvtColor(arr, cv2.COLOR_BGR2RGB)
