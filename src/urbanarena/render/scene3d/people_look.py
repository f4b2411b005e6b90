"""How the ``photo`` style varies its people (issue 24, tell 1: clone pedestrians in fixed poses).

Photo style only (:mod:`.population_photo` calls it; ``flat`` and ``realistic`` never do). Every choice is a
hash of the placement's ``variant`` (drawn from the city seed) with a salt, so the same placement always gets the
same model, mirror, colours and facing, in every process.

* **Clothing regions** (:func:`cloth_regions`): per triangle of a person's model (unit height, z up): ``0`` kept
  (the head above :data:`HEAD_FROM`, the shoes below :data:`SHOES_BELOW`, and skin-coloured triangles anywhere:
  hands, arms, bare legs), ``1`` upper clothing, ``2`` lower clothing: each clothing triangle goes to the
  region whose reference colour (the mean clothing colour of the band :data:`UPPER_BAND` or :data:`LOWER_BAND`)
  is nearer its own, so a jacket's hem or a skirt follows the garment, not a fixed height; when the two
  references lie within :data:`ONE_GARMENT` of each other (a dress, a suit) the whole outfit is region 2 (the
  lower palette's sober colours: no red suits). Skin
  (:func:`skin_like`): red the largest channel, green above blue, hue ``60 (g - b) / (r - b)`` between
  :data:`SKIN_HUE_DEG` and saturation ``(r - b) / r`` within :data:`SKIN_SAT`, ``r >= 0.2``.
* **Recolouring** (:func:`recolour`): a region's corners take its palette colour times their luminance over the
  region's mean luminance (clipped to :data:`DETAIL_CLIP`), so folds and seams of the baked texture stay; the
  colours come from :data:`UPPER_PALETTE` and :data:`LOWER_PALETTE` (display sRGB 0..1, ordinary street
  clothing); a share :data:`KEEP_ORIGINAL` of the people keep the model's own clothes.
* **Build** (:func:`build_scale`): each person's width and depth are scaled by ``BUILD[0] .. BUILD[1]`` (a
  hash), so two people of the same model and height are not the same body.
* **Mirror** (:func:`mirrored`): half of the people (a hash bit) are drawn mirrored left-right (x negated,
  triangle winding and normals' x turned with it).
* **Facing** (:func:`photo_headings`): a ``waiting`` person keeps facing the crossing; a ``pedestrian`` whose
  nearest other pedestrian stands within :data:`PAIR_M` faces it, in a share :data:`TALK_SHARE` of the pairs (a
  pair talking), else walks along its heading turned by up to :data:`JITTER_DEG` (a hash) -- positions never
  move (the population's footprints, counts and ID pass stay those of :mod:`.population`).
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

#: luminance weights of display colours (Rec. 709)
LUMA = np.array([0.2126, 0.7152, 0.0722], np.float32)
#: region limits, fractions of the model's height
HEAD_FROM = 0.845
SHOES_BELOW = 0.045
UPPER_BAND = (0.6, 0.8)
LOWER_BAND = (0.12, 0.4)
ONE_GARMENT = 0.08
#: skin colour test (hue degrees, saturation range)
SKIN_HUE_DEG = (5.0, 48.0)
SKIN_SAT = (0.12, 0.68)
#: a corner's luminance over its region's mean is clipped to this range before it multiplies the palette colour
DETAIL_CLIP = (0.35, 1.6)
#: share of people keeping the model's own clothes
KEEP_ORIGINAL = 0.25
UPPER_PALETTE = np.array([
    (0.10, 0.12, 0.20), (0.08, 0.08, 0.09), (0.25, 0.26, 0.28), (0.55, 0.56, 0.57), (0.86, 0.86, 0.84),
    (0.72, 0.64, 0.52), (0.33, 0.36, 0.22), (0.12, 0.25, 0.18), (0.45, 0.10, 0.14), (0.30, 0.42, 0.62),
    (0.62, 0.74, 0.86), (0.38, 0.25, 0.16), (0.70, 0.16, 0.14), (0.76, 0.58, 0.18), (0.85, 0.55, 0.55),
    (0.20, 0.35, 0.45)], np.float32)
LOWER_PALETTE = np.array([
    (0.20, 0.28, 0.45), (0.12, 0.16, 0.28), (0.07, 0.07, 0.08), (0.22, 0.22, 0.24), (0.62, 0.56, 0.42),
    (0.76, 0.70, 0.58), (0.45, 0.46, 0.47), (0.10, 0.12, 0.20), (0.32, 0.22, 0.15), (0.38, 0.46, 0.62)],
    np.float32)
#: range of the horizontal scale of a person's body (slimmer .. broader)
BUILD = (0.9, 1.1)
#: pedestrians nearer than this (metres) can face each other; share of such pairs that do; walking jitter
PAIR_M = 1.8
TALK_SHARE = 0.5
JITTER_DEG = 12.0


def h64(variant: int, salt: str) -> int:
    """``sha256("<salt>:<variant>")``'s first 8 bytes as an unsigned integer (the module's hash)."""
    return int.from_bytes(hashlib.sha256(f"{salt}:{int(variant)}".encode()).digest()[:8], "big")


def unit(variant: int, salt: str) -> float:
    """A hash of ``variant`` as a number in ``[0, 1)``."""
    return h64(variant, salt) / float(1 << 64)


def skin_like(rgb: np.ndarray) -> np.ndarray:
    """``(N,)`` bool: colours ``(N, 3)`` (display 0..1) that look like skin (module docstring)."""
    c = np.asarray(rgb, np.float64)
    r, g, b = c[:, 0], c[:, 1], c[:, 2]
    span = np.maximum(r - b, 1e-9)
    hue = 60.0 * (g - b) / span
    sat = (r - b) / np.maximum(r, 1e-9)
    return ((r >= g) & (g >= b) & (r >= 0.2) & (hue >= SKIN_HUE_DEG[0]) & (hue <= SKIN_HUE_DEG[1])
            & (sat >= SKIN_SAT[0]) & (sat <= SKIN_SAT[1]))


def cloth_regions(positions: np.ndarray, colours: np.ndarray) -> tuple[np.ndarray, tuple[float, float]]:
    """Clothing regions of a person model's triangle list (module docstring).

    Args:
        positions: ``(3T, 3)`` corners, unit height, z up from 0.
        colours: ``(3T, 3)`` baked display colours 0..1.
    Returns:
        ``(region (3T,) int8, (upper mean luminance, lower mean luminance))``; a region without triangles has
        mean luminance 1.
    """
    z = positions[:, 2].reshape(-1, 3).mean(axis=1)
    col = colours.reshape(-1, 3, 3).mean(axis=1)
    cloth = (z < HEAD_FROM) & (z >= SHOES_BELOW) & ~skin_like(col)
    region = np.zeros(len(z), np.int8)
    refs_rgb = []
    for lo, hi in (UPPER_BAND, LOWER_BAND):
        band = cloth & (z >= lo) & (z < hi)
        refs_rgb.append(col[band].mean(axis=0) if band.any() else None)
    up, down = refs_rgb
    if up is None or down is None or float(np.abs(up - down).max()) < ONE_GARMENT:
        region[cloth] = 2
    else:
        nearer_up = np.linalg.norm(col - up, axis=1) <= np.linalg.norm(col - down, axis=1)
        region[cloth] = np.where(nearer_up[cloth], 1, 2)
    lum = colours.reshape(-1, 3, 3) @ LUMA                                   # (T, 3)
    refs = []
    for k in (1, 2):
        sel = region == k
        refs.append(float(lum[sel].mean()) if sel.any() else 1.0)
    return np.repeat(region, 3), (max(refs[0], 1e-3), max(refs[1], 1e-3))


def clothing_colours(variant: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The ``(upper, lower)`` display colours ``(3,)`` of a person, or ``None`` to keep the model's clothes
    (module docstring); a small hashed brightness change (0.85..1.15) keeps two people in the same palette
    entry apart."""
    if unit(variant, "keep-clothes") < KEEP_ORIGINAL:
        return None
    up = UPPER_PALETTE[h64(variant, "upper") % len(UPPER_PALETTE)]
    lo = LOWER_PALETTE[h64(variant, "lower") % len(LOWER_PALETTE)]
    k_up = 0.85 + 0.3 * unit(variant, "upper-k")
    k_lo = 0.85 + 0.3 * unit(variant, "lower-k")
    return np.clip(up * k_up, 0, 1), np.clip(lo * k_lo, 0, 1)


def recolour(colours: np.ndarray, region: np.ndarray, refs: tuple[float, float], upper, lower) -> np.ndarray:
    """Colours ``(3T, 3)`` with the clothing regions painted ``upper`` / ``lower`` (display ``(3,)``) times each
    corner's luminance over its region's mean ``refs`` (clipped to :data:`DETAIL_CLIP`); region 0 unchanged."""
    out = np.array(colours, np.float32, copy=True)
    lum = colours @ LUMA
    for k, paint, ref in ((1, upper, refs[0]), (2, lower, refs[1])):
        sel = region == k
        if sel.any():
            detail = np.clip(lum[sel] / ref, *DETAIL_CLIP)[:, None]
            out[sel] = np.clip(detail * np.asarray(paint, np.float32), 0.0, 1.0)
    return out


def build_scale(variant: int) -> float:
    """The horizontal scale of a person's body: ``BUILD[0] + (BUILD[1] - BUILD[0]) * unit(variant, "build")``."""
    return BUILD[0] + (BUILD[1] - BUILD[0]) * unit(variant, "build")


def is_mirrored(variant: int) -> bool:
    """Whether a person is drawn mirrored (a hash bit)."""
    return h64(variant, "mirror") & 1 == 1


def mirrored(positions: np.ndarray, normals: np.ndarray, *per_corner: np.ndarray) -> tuple[np.ndarray, ...]:
    """A triangle list mirrored in x: positions and normals ``(3T, 3)`` with x negated and each triangle's second
    and third corners swapped (the winding stays front-facing); ``per_corner`` arrays ``(3T, ...)`` reordered the
    same way. Returns ``(positions, normals, *per_corner)``."""
    order = np.arange(len(positions)).reshape(-1, 3)[:, [0, 2, 1]].reshape(-1)
    flip = np.array([-1.0, 1.0, 1.0], np.float32)
    return (positions[order] * flip, normals[order] * flip, *(a[order] for a in per_corner))


def photo_headings(placements) -> list[float]:
    """The heading (degrees, 0 north, clockwise) each placement is drawn with in the photo style (module
    docstring); non-people keep theirs."""
    return _facing(placements)[0]


def walkers(placements) -> list[bool]:
    """Per placement whether the photo style draws it walking (:mod:`.people_pose`): a ``crossing`` person, and
    a ``pedestrian`` not standing in a talking pair (module docstring, facing); depends on the placements'
    positions, kinds and variants only (not on their headings)."""
    talking = _facing(placements)[1]
    return [p.kind == "crossing" or (p.kind == "pedestrian" and i not in talking) for i, p in enumerate(placements)]


def _facing(placements) -> tuple[list[float], set[int]]:
    """``(headings, indices of the pedestrians talking in pairs)`` (module docstring, facing)."""
    peds = [i for i, p in enumerate(placements) if p.kind == "pedestrian"]
    xy = np.array([[placements[i].x_m, placements[i].y_m] for i in peds]).reshape(-1, 2)
    out = [float(p.heading_deg) for p in placements]
    talking: set[int] = set()
    for j, i in enumerate(peds):
        p = placements[i]
        partner = None
        if len(peds) > 1:
            d = np.hypot(*(xy - xy[j]).T)
            d[j] = np.inf
            k = int(np.argmin(d))
            if d[k] <= PAIR_M:
                partner = k
        if partner is not None:
            q = placements[peds[partner]]
            # the pair talks when the hash of both variants (in either order) says so
            pair = min(int(p.variant), int(q.variant)) * 1_000_003 + max(int(p.variant), int(q.variant))
            if unit(pair, "talk") < TALK_SHARE:
                out[i] = math.degrees(math.atan2(q.x_m - p.x_m, q.y_m - p.y_m)) % 360.0
                talking.add(i)
                continue
        out[i] = (p.heading_deg + JITTER_DEG * (2.0 * unit(p.variant, "jitter") - 1.0)) % 360.0
    return out, talking


__all__ = ["DETAIL_CLIP", "HEAD_FROM", "KEEP_ORIGINAL", "LOWER_PALETTE", "PAIR_M", "SHOES_BELOW", "TALK_SHARE",
           "UPPER_PALETTE", "build_scale", "cloth_regions", "clothing_colours", "h64", "is_mirrored", "mirrored",
           "photo_headings", "recolour", "skin_like", "unit", "walkers"]
