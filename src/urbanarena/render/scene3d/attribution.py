"""Attribution text on rendered images ("© OpenStreetMap contributors" for OSM cities).

OpenStreetMap data is ODbL: renders derived from it must credit "© OpenStreetMap
contributors" where they are shown. :func:`stamp_attribution` writes the text
in the bottom-right corner of an image shown to people;
:func:`stamp_panorama_attribution` writes it in a band along the bottom rows of
an equirectangular panorama (the nadir, straight down, which perspective views
at ordinary pitches never include), so every panorama file carries it without
changing what an agent sees. Text is drawn with the sign font (it has ©).
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from urbanarena.render.scene3d.fonts import font_for_cap


def stamp_attribution(img: np.ndarray, text: str, cap_px: float | None = None) -> np.ndarray:
    """Copy of RGB ``img`` ``(H, W, 3)`` with ``text`` on a dark translucent box in the bottom-right corner.

    ``cap_px`` (capital height in pixels) defaults to ``max(7, H / 60)``.
    """
    h, w = img.shape[:2]
    cap = cap_px or max(7.0, h / 60.0)
    font = font_for_cap(cap, 100.0)
    pim = Image.fromarray(np.ascontiguousarray(img))
    d = ImageDraw.Draw(pim, "RGBA")
    l, t, r, b = d.textbbox((0, 0), text, font=font, anchor="ls")
    pad = int(round(cap * 0.5))
    x1, y1 = w - 1, h - 1
    x0, y0 = x1 - (r - l) - 2 * pad, y1 - (b - t) - 2 * pad
    d.rectangle([x0, y0, x1, y1], fill=(0, 0, 0, 150))
    d.text((x0 + pad - l, y1 - pad - b), text, font=font, fill=(255, 255, 255, 255), anchor="ls")
    return np.asarray(pim, dtype=np.uint8).copy()


def nadir_band_rows(height: int) -> int:
    """Rows of the attribution band at the bottom of a panorama ``height`` pixels tall (``max(10, H / 64)``)."""
    return max(10, height // 64)


def stamp_panorama_attribution(pano: np.ndarray, text: str) -> np.ndarray:
    """Copy of an equirectangular ``pano`` with ``text`` centred in a dark band over its bottom
    :func:`nadir_band_rows` rows (elevations below about ``-90 + 180 * rows / H`` degrees)."""
    h, w = pano.shape[:2]
    rows = nadir_band_rows(h)
    out = np.array(pano, copy=True)
    band = (out[h - rows:].astype(np.uint16) * 2 // 5).astype(np.uint8)
    pim = Image.fromarray(band)
    d = ImageDraw.Draw(pim)
    font = font_for_cap(rows * 0.55, 100.0)
    d.text((w / 2.0, rows * 0.78), text, font=font, fill=(255, 255, 255), anchor="ms")
    out[h - rows:] = np.asarray(pim, dtype=np.uint8)
    return out
