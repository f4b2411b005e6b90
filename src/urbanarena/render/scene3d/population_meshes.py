"""Meshes of the population's people and vehicles (:mod:`.population`), from the primitives of :mod:`.meshes`.

Sizes follow each :class:`~.population.Placement` (``length_m`` along its heading, ``width_m`` across,
``height_m`` up; local metres):

* **person** (``pedestrian``, ``waiting``, ``crossing``): the proportions of the continuous mode's walking
  figures (:func:`.dynamic.figure_mesh`: legs 0.46 of the height, torso 0.34, head radius 0.063), with a shirt,
  trousers, skin and hair tone drawn from the variant, a knee-long coat for a quarter of them and a bag for a
  fifth; walkers have their legs apart in mid-stride.
* **cyclist**: two 0.68 m wheels (12-sided discs, dark tyres), a frame and handlebar, and a rider whose torso
  leans forward above the saddle (0.95 m).
* **car** (``car``, ``parked_car``): a body box over four dark wheels (0.62 m), a cabin of tinted glass under a
  roof in the body colour (a van: a tall box with a short bonnet), bumpers, head- and tail-lights.
* **tram** section: white lower body with a green band, a window band of dark glass with white pillars,
  a white roof; the middle section carries a pantograph.

Every placement's triangles carry its feature index (``MeshBuilder.feature``), so the ID pass can tell them apart.
"""

from __future__ import annotations

import math

import numpy as np

from urbanarena.render.scene3d.meshes import MeshBuilder, MeshData, _frame, _rgb, _to_world, box, ellipsoid

MESHES_VERSION = "population-meshes-1"

SHIRTS = ((200, 40, 40), (40, 90, 190), (240, 200, 40), (40, 150, 70), (120, 50, 140), (230, 120, 30),
          (30, 30, 30), (235, 235, 235), (150, 150, 155), (90, 60, 40), (200, 110, 140), (70, 110, 130))
TROUSERS = ((44, 48, 64), (30, 30, 34), (90, 96, 110), (120, 100, 80), (60, 70, 100), (160, 150, 130))
SKINS = ((236, 196, 170), (214, 170, 140), (180, 130, 100), (130, 90, 64), (96, 64, 46))
HAIRS = ((30, 24, 20), (70, 48, 30), (150, 110, 60), (200, 190, 170), (120, 60, 30))
COATS = ((40, 40, 48), (110, 90, 70), (60, 70, 60), (150, 140, 120), (30, 50, 80))
GLASS = (40, 52, 64)
TYRE = (22, 22, 24)
LIGHT_FRONT = (250, 245, 220)
LIGHT_BACK = (200, 20, 20)
TRAM_WHITE = (232, 232, 226)
TRAM_GREEN = (40, 130, 70)


def _pick(seq, v: int, k: int):
    return seq[(v >> (3 * k)) % len(seq)]


def person_mesh(mb: MeshBuilder, p) -> None:
    """A standing or walking person (module docstring)."""
    v = int(p.variant)
    H = p.height_m
    k = H / 1.75
    x, y, hd = p.x_m, p.y_m, p.heading_deg
    shirt, trousers = _pick(SHIRTS, v, 0), _pick(TROUSERS, v, 1)
    skin, hair = _pick(SKINS, v, 2), _pick(HAIRS, v, 3)
    leg_h = 0.80 * k
    stride = 0.14 * k if p.kind in ("pedestrian", "crossing") and (v >> 15) % 3 else 0.0
    for a, b in ((-0.09, stride), (0.09, -stride)):
        box(mb, x, y, hd, a * k, b, 0.14 * k, 0.16 * k, 0.0, leg_h, trousers)
    torso_h = 0.60 * k
    coat = (v >> 18) % 4 == 0
    if coat:
        box(mb, x, y, hd, 0.0, 0.0, 0.40 * k, 0.27 * k, leg_h - 0.35 * k, torso_h + 0.35 * k, _pick(COATS, v, 4))
    else:
        box(mb, x, y, hd, 0.0, 0.0, 0.36 * k, 0.24 * k, leg_h, torso_h, shirt)
    arm = _pick(COATS, v, 4) if coat else shirt
    for a, b in ((-0.215, -stride * 0.6), (0.215, stride * 0.6)):
        box(mb, x, y, hd, a * k, b, 0.07 * k, 0.10 * k, leg_h + 0.05 * k, 0.55 * k, arm)
    if (v >> 21) % 5 == 0:  # a bag at the side
        box(mb, x, y, hd, 0.30 * k, 0.0, 0.10 * k, 0.32 * k, leg_h - 0.10 * k, 0.30 * k, _pick(COATS, v, 5))
    r = 0.11 * k
    zc = H - r - 0.02 * k
    ellipsoid(mb, x, y, zc, r, r * 1.15, skin, segments=8, rings=5)
    # hair: a cap over the top and back of the head
    o, rt, f = _frame(x, y, hd)
    ellipsoid(mb, *(o[:2] - f[:2] * 0.02 * k), zc + 0.03 * k, r * 1.05, r * 0.95, hair, segments=8, rings=3)


def _wheel(mb: MeshBuilder, x: float, y: float, heading_deg: float, b: float, zc: float, radius: float,
           thickness: float, colour, sides: int = 12, a: float = 0.0) -> None:
    """A disc in the vertical plane containing the heading (a wheel), centred at local ``(a, b)`` (right,
    forward), ``zc`` up."""
    o, r, f = _frame(x, y, heading_deg)
    ang = np.linspace(0, 2 * np.pi, sides + 1)
    ring = np.stack([np.full_like(ang, a), b + radius * np.sin(ang), zc + radius * np.cos(ang)], axis=1)
    for side in (-thickness / 2, thickness / 2):
        pts = ring + np.array([side, 0.0, 0.0])
        ctr = np.array([a + side, b, zc])
        tri = np.stack([np.broadcast_to(ctr, pts[:-1].shape), pts[:-1], pts[1:]], axis=1)
        mb.add(_to_world(tri, o, r, f), _rgb(colour))
    q = np.stack([ring[:-1] + [-thickness / 2, 0, 0], ring[1:] + [-thickness / 2, 0, 0],
                  ring[1:] + [thickness / 2, 0, 0], ring[:-1] + [thickness / 2, 0, 0]], axis=1)
    quads = _to_world(q, o, r, f)
    mb.add(np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]], axis=0), _rgb(colour))


def cyclist_mesh(mb: MeshBuilder, p) -> None:
    """A cyclist on a bicycle (module docstring)."""
    v = int(p.variant)
    x, y, hd = p.x_m, p.y_m, p.heading_deg
    R = 0.34
    for b in (-0.52, 0.52):
        _wheel(mb, x, y, hd, b, R, R, 0.05, TYRE)
    frame = _pick(SHIRTS, v, 5)
    box(mb, x, y, hd, 0.0, 0.0, 0.05, 1.0, 0.55, 0.05, frame)       # top tube
    box(mb, x, y, hd, 0.0, -0.12, 0.05, 0.05, R, 0.58, frame)       # seat tube
    box(mb, x, y, hd, 0.0, 0.50, 0.05, 0.05, R, 0.72, frame)        # fork and stem
    box(mb, x, y, hd, 0.0, 0.50, 0.55, 0.04, 1.02, 0.04, (40, 40, 40))  # handlebar
    k = p.height_m / 1.75
    shirt, trousers, skin = _pick(SHIRTS, v, 0), _pick(TROUSERS, v, 1), _pick(SKINS, v, 2)
    seat = 0.95
    for a, b in ((-0.1, 0.05), (0.1, -0.05)):
        box(mb, x, y, hd, a, b, 0.13 * k, 0.15 * k, 0.30, seat - 0.30, trousers)
    box(mb, x, y, hd, 0.0, 0.12, 0.36 * k, 0.30 * k, seat, 0.55 * k, shirt)   # torso, leaning forward
    for a in (-0.2, 0.2):
        box(mb, x, y, hd, a, 0.32, 0.07 * k, 0.36, seat + 0.25 * k, 0.08, shirt)  # arms to the bar
    r = 0.11 * k
    o, rt, f = _frame(x, y, hd)
    hx, hy = o[:2] + f[:2] * 0.22
    ellipsoid(mb, hx, hy, seat + 0.55 * k + r + 0.04, r, r * 1.15, skin, segments=8, rings=5)
    ellipsoid(mb, hx, hy, seat + 0.55 * k + r + 0.10, r * 1.15, r * 0.75, _pick(SHIRTS, v, 6), segments=8,
              rings=3)  # helmet


def car_mesh(mb: MeshBuilder, p) -> None:
    """A car or van (module docstring)."""
    x, y, hd = p.x_m, p.y_m, p.heading_deg
    L, W, H = p.length_m, p.width_m, p.height_m
    van = int(p.variant) % 2 == 1
    body = p.colour
    wr = 0.31
    for a in (-W / 2 + 0.2, W / 2 - 0.2):
        for b in (-L / 2 + 0.75, L / 2 - 0.8):
            _wheel(mb, x, y, hd, b, wr, wr, 0.22, TYRE, sides=10, a=a)
    z0, zb = 0.28, 0.55 * H if not van else 0.45 * H
    box(mb, x, y, hd, 0.0, 0.0, W, L, z0, zb - z0 + 0.2, body)
    if van:
        box(mb, x, y, hd, 0.0, -0.35, W * 0.98, L * 0.75, zb + 0.2, H - zb - 0.25, body)
        box(mb, x, y, hd, 0.0, L * 0.75 / 2 - 0.35 + 0.02, W * 0.9, 0.05, zb + 0.3, (H - zb) * 0.45, GLASS)
        box(mb, x, y, hd, 0.0, -0.35, W, L * 0.3, zb + 0.35, (H - zb) * 0.4, GLASS)
    else:
        cab_l = 0.5 * L
        box(mb, x, y, hd, 0.0, -0.08 * L, W * 0.86, cab_l, zb + 0.2, H - zb - 0.28, GLASS)
        box(mb, x, y, hd, 0.0, -0.1 * L, W * 0.84, cab_l * 0.8, H - 0.08, 0.06, body)   # roof
    for a in (-W / 2 + 0.25, W / 2 - 0.25):
        box(mb, x, y, hd, a, L / 2 + 0.01, 0.3, 0.04, zb - 0.05, 0.12, LIGHT_FRONT)
        box(mb, x, y, hd, a, -L / 2 - 0.01, 0.3, 0.04, zb - 0.05, 0.12, LIGHT_BACK)
    for b in (L / 2, -L / 2):
        box(mb, x, y, hd, 0.0, b, W * 1.01, 0.12, z0, 0.2, (36, 36, 38))  # bumpers


def tram_mesh(mb: MeshBuilder, p) -> None:
    """One section of an articulated tram (module docstring)."""
    x, y, hd = p.x_m, p.y_m, p.heading_deg
    L, W, H = p.length_m, p.width_m, p.height_m
    box(mb, x, y, hd, 0.0, 0.0, W, L, 0.3, 0.6, TRAM_GREEN)
    box(mb, x, y, hd, 0.0, 0.0, W, L, 0.9, 0.9, TRAM_WHITE)
    box(mb, x, y, hd, 0.0, 0.0, W * 0.99, L * 0.995, 1.8, 1.2, GLASS)
    n = max(2, int(L // 1.6))
    for i in range(n + 1):
        b = -L / 2 + i * L / n
        box(mb, x, y, hd, 0.0, b, W * 1.005, 0.12, 1.8, 1.2, TRAM_WHITE)
    box(mb, x, y, hd, 0.0, 0.0, W, L, 3.0, 0.35, TRAM_WHITE)
    box(mb, x, y, hd, 0.0, 0.0, W * 0.95, L * 0.98, 0.1, 0.2, (30, 30, 30))
    if int(p.variant) == 1:
        box(mb, x, y, hd, 0.0, 0.0, 0.8, 1.6, 3.35, 0.1, (50, 50, 50))
        box(mb, x, y, hd, 0.0, 0.0, 0.05, 0.05, 3.35, 0.9, (50, 50, 50))
        box(mb, x, y, hd, 0.0, 0.0, 1.6, 0.08, 4.2, 0.05, (50, 50, 50))


_MESH_OF = {"pedestrian": person_mesh, "waiting": person_mesh, "crossing": person_mesh, "cyclist": cyclist_mesh,
            "car": car_mesh, "parked_car": car_mesh, "tram": tram_mesh}


def placements_mesh(placements, first_feature: int = 1) -> MeshData:
    """One triangle list of all ``placements``; placement ``i``'s triangles carry feature ``first_feature + i``."""
    mb = MeshBuilder()
    for i, p in enumerate(placements):
        mb.feature = first_feature + i
        _MESH_OF[p.kind](mb, p)
    return mb.build()


__all__ = ["MESHES_VERSION", "car_mesh", "cyclist_mesh", "person_mesh", "placements_mesh", "tram_mesh"]
