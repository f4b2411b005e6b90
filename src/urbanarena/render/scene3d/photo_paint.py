"""Painted facade colours as paint looks in a photograph (photo style only; issue 24).

OSM's ``building:colour`` is often a CSS name (``red``, ``yellow``), which :mod:`.city_scene` reads as the pure
colour (255, 0, 0): no painted wall is that saturated, and the blind sorter took such a wall for computer
graphics. :func:`mute_paint` keeps the hue and compresses high saturation above a knee, darkening saturated paint
a little (ours, chosen by eye against the street photos, not measured)::

    s' = s                                  for s <= KNEE
    s' = KNEE + SLOPE (s - KNEE)            above it
    v' = v (1 - DARKEN max(s - KNEE, 0) / (1 - KNEE))

with HSV saturation ``s = (max - min) / max`` and value ``v = max`` of the RGB (0-1); each channel is rebuilt
as ``v' (1 - s' (max - c) / (max - min))``, which keeps the hue. Pure red becomes (0.70, 0.27, 0.27).

:func:`with_paint` applies it to the facades of buildings whose colour is tagged (the packed ``tagged`` bit of
:data:`.building_look.FACADE_PACK`); the untagged palette (saturation below the knee) would not change anyway.
The ``realistic`` style is untouched.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from urbanarena.render.scene3d.building_look import FACADE_PACK

#: bumped when the muting changes pixels (the photo style's render identity)
PAINT_VERSION = "photo-paint-1"
KNEE, SLOPE, DARKEN = 0.4, 0.35, 0.3


def mute_paint(rgb: np.ndarray) -> np.ndarray:
    """``rgb`` ``(N, 3)`` in 0-1 with saturation above :data:`KNEE` compressed (module docstring); ``(N, 3)``
    float32, the hue kept; greys and colours under the knee come back unchanged."""
    c = np.asarray(rgb, dtype=np.float64).reshape(-1, 3)
    mx, mn = c.max(axis=1), c.min(axis=1)
    s = np.divide(mx - mn, mx, out=np.zeros_like(mx), where=mx > 0)
    over = np.maximum(s - KNEE, 0.0)
    s2 = np.where(s > KNEE, KNEE + SLOPE * over, s)
    v2 = mx * (1.0 - DARKEN * over / (1.0 - KNEE))
    span = mx - mn
    rel = np.divide(mx[:, None] - c, span[:, None], out=np.zeros_like(c), where=span[:, None] > 0)
    out = np.where(s[:, None] > KNEE, v2[:, None] * (1.0 - s2[:, None] * rel), c)
    return out.astype(np.float32)


def tagged_vertices(facades) -> np.ndarray:
    """``(N,)`` bool: the facade vertices of buildings with a tagged colour (``facades.shop``, packed by
    :func:`.building_look.pack_facade_look`); all false without the packing."""
    if facades is None or facades.shop is None:
        return np.zeros(0 if facades is None else len(facades.colours), bool)
    shop = facades.shop.astype(np.int64)
    return ((shop >> FACADE_PACK["tagged_shift"]) & 1) == 1


def with_paint(meshes):
    """``meshes`` (:class:`~.meshes.SceneMeshes`) with the tagged facades' colours muted (:func:`mute_paint`);
    a new facades mesh, the input's arrays untouched (a cached mesh set may be shared by other renderers)."""
    f = meshes.facades
    tagged = tagged_vertices(f)
    if not tagged.any():
        return meshes
    colours = f.colours.copy()
    colours[tagged] = mute_paint(colours[tagged])
    return replace(meshes, facades=replace(f, colours=colours))
