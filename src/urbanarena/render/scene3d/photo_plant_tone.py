"""Per-card colour and the soil at the foot of the ``photo`` style's hedges and bushes (issue 24, tells "flat
hedge", "sprite shrubs", "CG foliage"; used by :mod:`.photo_greenery_mesh`).

* :func:`card_tone`: a real hedge is not one green -- a few leaves are yellowing, some are old and dark. A card
  draws two numbers ``u1``, ``u2`` in 0..1: ``u1 <`` :data:`YELLOW_SHARE` yellowed (times :data:`YELLOW_RGB`),
  ``u1 <`` :data:`YELLOW_SHARE` ``+`` :data:`DARK_SHARE` old and dark (times :data:`DARK_RGB`), else unchanged;
  all times a brightness ``0.8 + 0.3 u2``.
* :func:`depth_shade`: leaves deep inside a hedge or bush get little sky or sun: a card's colour times
  ``DEPTH_LO + (1 - DEPTH_LO) f``, with ``f`` in 0..1 its stem's outward share (0 at the core, 1 on the shell).
* :func:`soil_disc`: a flat dark polygon 1.5 cm over the ground under a plant (mulch and the plant's own shade,
  where the leaves meet the ground): ``sides`` triangles of a fan, or a quad for a hedge, sampling the bark cell.
"""

from __future__ import annotations

import math

import numpy as np

YELLOW_SHARE, DARK_SHARE = 0.12, 0.14
YELLOW_RGB = (1.12, 1.0, 0.62)
DARK_RGB = (0.58, 0.62, 0.66)
DEPTH_LO = 0.5
SOIL_RGB = (0.12, 0.1, 0.07)
SOIL_Z_M = 0.015


def card_tone(u1: float, u2: float) -> np.ndarray:
    """``(3,)`` colour factor of a card from two uniform draws (module docstring)."""
    base = np.ones(3)
    if u1 < YELLOW_SHARE:
        base = np.asarray(YELLOW_RGB, np.float64)
    elif u1 < YELLOW_SHARE + DARK_SHARE:
        base = np.asarray(DARK_RGB, np.float64)
    return base * (0.8 + 0.3 * u2)


def depth_shade(outward: float) -> float:
    """Occlusion factor of a card whose stem lies at outward share ``outward`` (clipped to 0..1)."""
    return DEPTH_LO + (1.0 - DEPTH_LO) * min(max(float(outward), 0.0), 1.0)


def soil_disc(radius_x: float, radius_y: float, sides: int, bark_cell: int) -> tuple[list, list, list, list]:
    """A flat fan of ``sides`` triangles (``sides >= 3``) round the origin at :data:`SOIL_Z_M`, an ellipse of
    semi-axes ``radius_x``, ``radius_y`` (m; for ``sides == 4`` the rectangle ``2 radius_x`` by ``2 radius_y``
    instead), normal up, coloured :data:`SOIL_RGB`, UVs inside atlas cell ``bark_cell``: ``(P, N, C, UV)``
    lists of ``3 sides`` corners (``6`` for the rectangle)."""
    P, N, C, UV = [], [], [], []
    u_mid = (2 * bark_cell + 0.5, 0.5)
    if sides == 4:
        q = [(-radius_x, -radius_y), (radius_x, -radius_y), (radius_x, radius_y), (-radius_x, radius_y)]
        tris = [(q[0], q[1], q[2]), (q[0], q[2], q[3])]
    else:
        ring = [(radius_x * math.cos(2 * math.pi * k / sides), radius_y * math.sin(2 * math.pi * k / sides))
                for k in range(sides)]
        tris = [((0.0, 0.0), ring[k], ring[(k + 1) % sides]) for k in range(sides)]
    for tri in tris:
        for x, y in tri:
            P.append((x, y, SOIL_Z_M))
            N.append((0.0, 0.0, 1.0))
            C.append(SOIL_RGB)
            UV.append((u_mid[0] + 0.3 * x / max(radius_x, 1e-6), u_mid[1] + 0.3 * y / max(radius_y, 1e-6)))
    return P, N, C, UV


__all__ = ["DARK_RGB", "DARK_SHARE", "DEPTH_LO", "SOIL_RGB", "SOIL_Z_M", "YELLOW_RGB", "YELLOW_SHARE",
           "card_tone", "depth_shade", "soil_disc"]
