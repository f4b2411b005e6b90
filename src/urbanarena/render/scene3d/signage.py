"""Storefront signs like real streets (realistic style only; issue 14 item 2).

:func:`restyle_signs` turns the layout's placements (:mod:`.layout`, one box per POI, the flat style's look)
into a mix of sign kinds, each chosen per POI by a seeded rule (:func:`~.palette.stable_unit` of the POI id,
so the same city gives the same signs):

* ``fascia`` (50 %) -- a thin board over the shopfront; alone on its wall it grows with the facade
  (cap height x ``clip(height_m / 9, 1, 1.35)``, never wider than the wall);
* ``backlit`` (28 %) -- a deep light box, letters on a dark or white face;
* ``window`` (8 %) -- lettering on the shop window glass (no body, 1.1-2.3 m up, white, cream or gilt letters on a
  glass-dark face);
* ``blade`` (8 %) -- a projecting sign perpendicular to the wall on a bracket, 0.15 m clear of the wall, on
  the sign's left end, short names only (others stay fascia);
* ``vertical`` (6 %) -- a tall narrow panel with the letters stacked down it (names of at most 9 letters;
  others stay fascia).

Then variations (ours, chosen so most signs stay readable): 12 % of wall signs are ``small`` (cap height x 0.7),
10 % ``high`` (raised one storey when the building is tall enough), 12 % ``faded`` (colours washed 35-55 %
towards grey) and 12 % ``angled`` (the face turned 8-18 degrees about its vertical axis). Freestanding
(post-mounted) signs keep their kind ``panel`` but get a font family.

Fonts: each sign draws its lines in one of :data:`FAMILIES` (seeded): Noto Sans, Oswald, Bitter and
Playfair Display, all SIL Open Font License 1.1 and shipped by the PyPI packages ``fontpkg-noto-sans``,
``fontpkg-oswald``, ``fontpkg-bitter`` and ``fontpkg-playfair-display``. A family whose package is
missing falls back to the default sign font (:func:`.fonts.sign_font`); :func:`family_identity` names the
files in use (part of the realistic renderer's identity).
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from urbanarena.hashing import file_sha256
from urbanarena.render.scene3d.fonts import SIGN_WEIGHT, font_for_cap, sign_font
from urbanarena.render.scene3d.layout import SignLayout, SignPlacement
from urbanarena.render.scene3d.palette import stable_unit

#: family key -> (display name, import name, font file under ``files/``); licence OFL-1.1 for all.
FAMILIES: dict[str, tuple[str, str, str]] = {
    "noto-sans": ("Noto Sans", "fontpkg_noto_sans", "NotoSans[wdth,wght].ttf"),
    "oswald": ("Oswald", "fontpkg_oswald", "Oswald[wght].ttf"),
    "bitter": ("Bitter", "fontpkg_bitter", "Bitter[wght].ttf"),
    "playfair-display": ("Playfair Display", "fontpkg_playfair_display", "PlayfairDisplay[wght].ttf"),
}
#: cumulative shares of the wall sign kinds (module docstring)
KIND_SHARES = (("fascia", 0.50), ("backlit", 0.78), ("window", 0.86), ("blade", 0.94), ("vertical", 1.0))
#: how much a narrow family's letters may grow to fill the layout's face
MAX_CAP_GROWTH = 1.25
#: gap between the wall and a blade sign's inner edge (metres)
BLADE_GAP_M = 0.15
SIGNAGE_VERSION = "3"
#: window lettering: face colour (the glass) and letter colours (white, cream, gilt)
WINDOW_GLASS_RGB = (44, 52, 60)
WINDOW_INK = ((240, 240, 236), (236, 226, 196), (214, 178, 96))


@lru_cache(maxsize=None)
def family_path(family: str) -> Path | None:
    """Font file of ``family`` (a :data:`FAMILIES` key), or ``None`` when its package is not installed."""
    if family not in FAMILIES:
        return None
    import importlib

    try:
        mod = importlib.import_module(FAMILIES[family][1])
    except ImportError:
        return None
    p = Path(mod.ROOT) / "files" / FAMILIES[family][2]
    return p if p.is_file() else None


def family_identity() -> dict[str, str]:
    """``{family: sha256}`` of the font files signs use (missing packages -> ``"missing"``)."""
    return {f: (file_sha256(p) if (p := family_path(f)) is not None else "missing") for f in sorted(FAMILIES)}


@lru_cache(maxsize=128)
def _family_font(family: str, size_px: int) -> ImageFont.FreeTypeFont | None:
    p = family_path(family)
    if p is None or family == "noto-sans":
        return None
    f = ImageFont.truetype(str(p), size_px)
    try:
        vals = []
        for ax in f.get_variation_axes():
            name = ax["name"].decode() if isinstance(ax["name"], bytes) else str(ax["name"])
            vals.append(float(max(ax["minimum"], min(ax["maximum"], SIGN_WEIGHT))) if name.lower().startswith("weight")
                        else ax["default"])
        f.set_variation_by_axes(vals)
    except OSError:  # not a variable font
        pass
    return f


@lru_cache(maxsize=16)
def _cap_ratio(family: str) -> float:
    f = _family_font(family, 200)
    l, t, r, b = f.getbbox("H", anchor="ls")
    return -t / 200.0


def font_for(family: str, cap_px: float, width_axis: float = 100.0) -> ImageFont.FreeTypeFont:
    """Font of ``family`` whose capitals are ``cap_px`` tall (default sign font for ``""``/``noto-sans``/missing)."""
    if _family_font(family, 200) is None:
        return font_for_cap(cap_px, width_axis)
    return _family_font(family, max(4, int(round(cap_px / _cap_ratio(family)))))


def _fade(rgb: Sequence[int], k: float) -> tuple[int, int, int]:
    g = 150.0
    return tuple(int(round(c * (1 - k) + g * k)) for c in rgb)  # type: ignore[return-value]


def render_styled_sign(s: SignPlacement, cap_px: float, size_px: tuple[int, int]) -> np.ndarray:
    """Rasterise the face of a restyled sign ``s`` (``(H, W, 3)`` uint8, row 0 = top): its lines in its
    family, fitted to the face width; ``vertical`` signs stack the letters; ``window`` lettering has no border."""
    w, h = size_px
    bg, fg = _fade(s.background, s.fade), _fade(s.text_colour, s.fade)
    img = Image.new("RGB", (w, h), bg)
    d = ImageDraw.Draw(img)
    if s.kind == "vertical":
        letters = [c for c in " ".join(s.lines) if not c.isspace()]
        step = h / max(1, len(letters))
        cap = min(cap_px, 0.62 * step, 0.62 * w)
        font = font_for(s.family, cap, s.width_axis)
        for i, c in enumerate(letters):
            d.text((w / 2.0, (i + 0.5) * step + cap / 2.0), c, font=font, fill=fg, anchor="ms")
    else:
        n = len(s.lines)
        # letters fill the face: up to 1.25 x the layout's cap height for a narrow family (the face has room
        # for it above and below), smaller for a family wider than the layout's font
        font = font_for(s.family, cap_px, s.width_axis)
        widest = max(font.getlength(t) for t in s.lines)
        cap = cap_px * min(MAX_CAP_GROWTH, 0.9 * w / max(widest, 1e-6))
        font = font_for(s.family, cap, s.width_axis)
        gap = 1.85 * cap
        y0 = h / 2.0 - (n - 1) * gap / 2.0 + cap / 2.0
        for i, text in enumerate(s.lines):
            d.text((w / 2.0, y0 + i * gap), text, font=font, fill=fg, anchor="ms")
    if s.kind != "window":
        bw = max(1, int(round((0.3 if s.kind == "backlit" else 0.12) * cap_px)))
        border = (200, 200, 204) if s.kind == "backlit" else tuple(int(c * 0.55) for c in bg)
        d.rectangle([0, 0, w - 1, h - 1], outline=border, width=bw)
    return np.asarray(img, dtype=np.uint8).copy()


def _kind(poi_id: str) -> str:
    u = stable_unit(poi_id, "sign-kind")
    return next(k for k, c in KIND_SHARES if u < c)


def _with_face(s: SignPlacement, cx: float, cy: float, facing_deg: float, width_m: float, z0: float, z1: float,
               **kw) -> SignPlacement:
    a = math.radians(facing_deg)
    rx, ry = -math.cos(a), math.sin(a)  # viewer's right
    return replace(s, left=(cx - rx * width_m / 2, cy - ry * width_m / 2),
                   right=(cx + rx * width_m / 2, cy + ry * width_m / 2), z_bottom_m=z0, z_top_m=z1,
                   facing_deg=facing_deg % 360.0, **kw)


def restyle_signs(placements: list[SignPlacement], layout: SignLayout) -> list[SignPlacement]:
    """The realistic style's signs for ``placements`` (same order and POIs; module docstring)."""
    per_wall: dict[tuple, int] = {}
    for s in placements:
        if s.building_id is not None:
            per_wall[(s.building_id, s.wall_index)] = per_wall.get((s.building_id, s.wall_index), 0) + 1
    out = []
    for s in placements:
        pid = s.poi_id
        fam = sorted(FAMILIES)[min(len(FAMILIES) - 1, int(stable_unit(pid, "sign-font") * len(FAMILIES)))]
        if s.freestanding or s.building_id is None:
            out.append(replace(s, family=fam))
            continue
        b = layout.buildings[s.building_id]
        wall = layout.walls[s.building_id][s.wall_index]
        height = b.height_m
        cx, cy, cz = s.centre
        w, h, facing = s.width_m, s.height_m, s.facing_deg
        kind = _kind(pid)
        name = " ".join(s.lines)
        if kind == "vertical" and (len(name.replace(" ", "")) > 9 or height < 7.0):
            kind = "fascia"
        if kind == "blade" and w > 3.2:
            kind = "fascia"
        fade = 0.35 + 0.2 * stable_unit(pid, "sign-fade-k") if stable_unit(pid, "sign-fade") < 0.12 else 0.0
        scale = 0.7 if stable_unit(pid, "sign-small") < 0.12 else 1.0
        lift = 3.0 if (stable_unit(pid, "sign-high") < 0.10 and s.z_top_m + 3.2 < height) else 0.0
        common = dict(kind=kind, family=fam, fade=fade)
        if kind in ("fascia", "backlit"):
            if per_wall[(s.building_id, s.wall_index)] == 1 and scale == 1.0 and s.row == 0:
                grow = min(1.35, max(1.0, height / 9.0), (wall.length_m - 0.6) / max(w, 1e-6),
                           (height - s.z_bottom_m - 0.3) / max(h, 1e-6))
                scale = max(scale, grow)
            ww, hh = w * scale, h * scale
            z0 = s.z_bottom_m + lift
            t = replace(s, cap_height_m=s.cap_height_m * scale, **common)
            t = _with_face(t, cx, cy, facing, ww, z0, z0 + hh)
            if stable_unit(pid, "sign-angle") < 0.12:  # turned about its vertical axis, kept clear of the wall
                turn = (8.0 + 10.0 * stable_unit(pid, "sign-angle-k")) * (1 if stable_unit(pid, "sign-side") < .5 else -1)
                a = math.radians(facing)
                out_m = abs(math.sin(math.radians(turn))) * ww / 2
                t = _with_face(t, cx + out_m * math.sin(a), cy + out_m * math.cos(a), facing + turn, ww, z0, z0 + hh)
        elif kind == "window":
            ww, hh = w * scale, h * scale
            z0 = max(1.1, min(2.3 - hh, s.z_bottom_m - hh - 0.3))
            # letters painted on the glass (the face stays the layout's 0.12 m off the wall, clear of the
            # shopfront frames): a dark glass face, white or gilt letters
            fg = WINDOW_INK[min(len(WINDOW_INK) - 1, int(stable_unit(pid, "window-ink") * len(WINDOW_INK)))]
            t = replace(s, cap_height_m=s.cap_height_m * scale, background=WINDOW_GLASS_RGB, text_colour=fg, **common)
            t = _with_face(t, cx, cy, facing, ww, z0, z0 + hh)
        elif kind == "blade":
            ww = min(w, 1.6) if len(s.lines) == 1 else min(w, 1.3)
            k = ww / w
            hh = h * k
            a = math.radians(facing)
            # mounted at the sign's left end on a bracket, projecting from the wall (face along the wall)
            out_m = BLADE_GAP_M + ww / 2 - 0.12  # s.left is already 0.12 m in front of the wall
            bx, by = s.left[0] + math.sin(a) * out_m, s.left[1] + math.cos(a) * out_m
            z0 = max(2.6, s.z_bottom_m) + lift
            t = replace(s, cap_height_m=s.cap_height_m * k, **common)
            t = _with_face(t, bx, by, (facing - 90.0) if stable_unit(pid, "blade-side") < .5 else facing + 90.0,
                           ww, z0, z0 + hh)
        else:  # vertical
            letters = len(name.replace(" ", ""))
            ww = max(0.55, 1.6 * s.cap_height_m)
            hh = min(height - 3.0, letters * 1.5 * s.cap_height_m + 0.3)
            z0 = 3.0 if hh + 3.2 < height else max(2.4, height - hh - 0.2)
            t = replace(s, **common)
            t = _with_face(t, s.left[0] + (s.right[0] - s.left[0]) * 0.1, s.left[1] + (s.right[1] - s.left[1]) * 0.1,
                           facing, ww, z0, z0 + hh)
        out.append(t)
    return out


def body_depth_m(s: SignPlacement) -> float | None:
    """Depth of the panel body behind the face (``None`` = no body: window lettering)."""
    return {"window": None, "backlit": 0.28, "fascia": 0.06, "blade": 0.05, "vertical": 0.14}.get(s.kind, 0.12)


__all__ = ["FAMILIES", "KIND_SHARES", "SIGNAGE_VERSION", "body_depth_m", "family_identity", "family_path",
           "font_for", "render_styled_sign", "restyle_signs"]
