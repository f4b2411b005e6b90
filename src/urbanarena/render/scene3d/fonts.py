"""The sign font and sign text images (Pillow).

Font
----
Signs use **Noto Sans** (variable font, axes ``wght`` 100-900 and ``wdth``
62.5-100), shipped by the PyPI package ``fontpkg-noto-sans`` (font binaries
redistributed unmodified under the SIL Open Font License 1.1; copyright The
Noto Project Authors). It covers Latin (including Vietnamese and the Finnish,
Swedish and Sami letters), Greek and Cyrillic — every name in the Helsinki
OpenStreetMap extract is Latin script. When that package is missing, DejaVu
Sans Bold from Debian's ``fonts-dejavu-core`` (Bitstream Vera / DejaVu
licence) is used instead; :func:`sign_font` reports which file is in use and
its SHA-256, which is part of the renderer's identity (a different font gives
different pixels, so cached panoramas are not reused across fonts).

Letter size
-----------
Sizes are given as the **cap height** (height of ``H``) in metres on the sign
and converted to a font size through the font's own cap-height ratio (measured
from the rendered ``H`` at 200 px). Storefront letters are 0.2-0.6 m tall in
practice; the default is 0.35 m (:data:`DEFAULT_CAP_HEIGHT_M`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

DEFAULT_CAP_HEIGHT_M = 0.35
#: Bold-ish weight of sign lettering (``wght`` axis).
SIGN_WEIGHT = 650.0

_DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf")


@dataclass(frozen=True)
class FontInfo:
    """Which font file signs are drawn with."""

    path: Path
    family: str
    licence: str
    sha256: str
    variable: bool


from urbanarena.hashing import file_sha256 as _sha256  # noqa: E402


@lru_cache(maxsize=1)
def sign_font() -> FontInfo:
    """The font used for sign text (see the module docstring).

    Raises:
        FileNotFoundError: neither ``fontpkg-noto-sans`` nor DejaVu Sans is installed
            (``pip install fontpkg-noto-sans``).
    """
    try:
        import fontpkg_noto_sans  # type: ignore[import-not-found]

        p = Path(fontpkg_noto_sans.ROOT) / "files" / "NotoSans[wdth,wght].ttf"
        if p.is_file():
            return FontInfo(p, "Noto Sans", "OFL-1.1", _sha256(p), True)
    except ImportError:
        pass
    if _DEJAVU.is_file():
        return FontInfo(_DEJAVU, "DejaVu Sans Bold", "Bitstream-Vera AND LicenseRef-DejaVu", _sha256(_DEJAVU), False)
    raise FileNotFoundError(
        "no sign font: install the PyPI package fontpkg-noto-sans (Noto Sans, OFL-1.1) "
        "or Debian's fonts-dejavu-core"
    )


@lru_cache(maxsize=64)
def _font(size_px: int, width_axis: float) -> ImageFont.FreeTypeFont:
    info = sign_font()
    f = ImageFont.truetype(str(info.path), size_px)
    if info.variable:
        axes = f.get_variation_axes()
        values = []
        for ax in axes:
            name = ax["name"].decode() if isinstance(ax["name"], bytes) else str(ax["name"])
            if name.lower().startswith("weight"):
                values.append(SIGN_WEIGHT)
            elif name.lower().startswith("width"):
                values.append(float(max(ax["minimum"], min(ax["maximum"], width_axis))))
            else:
                values.append(ax["default"])
        f.set_variation_by_axes(values)
    return f


@lru_cache(maxsize=8)
def cap_ratio(width_axis: float = 100.0) -> float:
    """Cap height / font size of the sign font (about 0.714 for Noto Sans)."""
    f = _font(200, width_axis)
    l, t, r, b = f.getbbox("H", anchor="ls")
    return -t / 200.0


def font_for_cap(cap_px: float, width_axis: float = 100.0) -> ImageFont.FreeTypeFont:
    """Font instance whose capital letters are ``cap_px`` pixels tall."""
    return _font(max(4, int(round(cap_px / cap_ratio(width_axis)))), float(width_axis))


@lru_cache(maxsize=1)
def _notdef_mask() -> tuple[tuple[int, int], bytes]:
    m = font_for_cap(40.0).getmask("\U0010FFFD")  # a private-use code point no font maps
    return m.size, bytes(m)


def has_glyph(ch: str) -> bool:
    """Whether the sign font draws ``ch`` with its own glyph (not the "missing glyph" box).

    Compares the rendered mask with that of an unmapped private-use code point.
    Whitespace counts as covered.
    """
    if ch.isspace():
        return True
    m = font_for_cap(40.0).getmask(ch)
    return (m.size, bytes(m)) != _notdef_mask()


def uncovered_characters(texts) -> set[str]:
    """Characters of ``texts`` the sign font cannot draw (e.g. to report POI names it would garble)."""
    return {ch for t in texts for ch in set(t) if not has_glyph(ch)}


def text_width_em(text: str, width_axis: float = 100.0) -> float:
    """Advance width of ``text`` in units of the cap height (size-independent up to hinting)."""
    cap_px = 100.0
    return font_for_cap(cap_px, width_axis).getlength(text) / cap_px


@dataclass(frozen=True)
class SignStyle:
    """Colours and proportions of a sign panel (all lengths in cap heights)."""

    background: tuple[int, int, int]
    text: tuple[int, int, int]
    pad_x: float = 0.8
    pad_y: float = 0.45
    line_gap: float = 0.55
    ascent: float = 1.32  # room above the baseline (accents over capitals)
    descent: float = 0.32  # room below the baseline (descenders)


def panel_size_caps(lines: Sequence[str], style: SignStyle, width_axis: float) -> tuple[float, float]:
    """``(width, height)`` of a sign panel carrying ``lines``, in cap heights."""
    w = max(text_width_em(t, width_axis) for t in lines) + 2 * style.pad_x
    n = len(lines)
    h = 2 * style.pad_y + n * (style.ascent + style.descent) + (n - 1) * style.line_gap
    return w, h


def render_sign_image(lines: Sequence[str], cap_px: float, style: SignStyle, width_axis: float = 100.0,
                      size_px: tuple[int, int] | None = None) -> np.ndarray:
    """Rasterise a sign panel: ``lines`` centred on a ``style.background`` panel.

    Args:
        lines: text lines (1 or 2).
        cap_px: capital-letter height in pixels.
        size_px: ``(width, height)`` of the output; default from :func:`panel_size_caps`.
    Returns:
        ``(H, W, 3)`` RGB ``uint8`` image; row 0 is the top of the sign. A thin
        darker border frames the panel.
    """
    wc, hc = panel_size_caps(lines, style, width_axis)
    if size_px is None:
        size_px = (max(4, int(math.ceil(wc * cap_px))), max(4, int(math.ceil(hc * cap_px))))
    w, h = size_px
    img = Image.new("RGB", (w, h), style.background)
    d = ImageDraw.Draw(img)
    font = font_for_cap(cap_px, width_axis)
    # vertical layout in cap heights, centred in the panel
    block = len(lines) * (style.ascent + style.descent) + (len(lines) - 1) * style.line_gap
    top = (h / cap_px - block) / 2.0
    for i, text in enumerate(lines):
        baseline = top + style.ascent + i * (style.ascent + style.descent + style.line_gap)
        d.text((w / 2.0, baseline * cap_px), text, font=font, fill=style.text, anchor="ms")
    bw = max(1, int(round(0.12 * cap_px)))
    border = tuple(int(c * 0.55) for c in style.background)
    d.rectangle([0, 0, w - 1, h - 1], outline=border, width=bw)
    return np.asarray(img, dtype=np.uint8).copy()
