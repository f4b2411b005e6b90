"""Meshes of the photo style's grass verges (:mod:`.photo_verges`): seeded templates of cards in the photo trees'
atlas (:mod:`.trees_photo`), instanced like the greenery (:func:`.photo_greenery_mesh.instance`).

* *grass tuft* (unit width and height): three crossed cards (the dense middle of the photo, :data:`GRASS_WINDOW`)
  of the pine twig (read as grass blades; variants 0 and
  1, fresh green and a straw-yellow one with seed heads) or of the ash twig (a leafy weed, variant 2), each leaning
  a little, and :data:`SPLAYED` low cards lying out at :data:`SPLAY_RAD` above the ground towards the neighbouring
  tufts (so the clumps merge into a sward instead of standing apart); per corner the colour is the tint times
  ``0.45 + 0.55 z`` (the base of a tuft in its own shade);
* *wildflower* (unit size): three small aspen-leaf cards tilted up to face the sky at heights 0.6-1.0 -- the
  yellow aspen leaf tinted to a flower colour (:data:`FLOWER_RGB`: yellow, white, purple);
* *mat* (unit square, x along the street): one flat quad 3 cm above the ground showing an opaque window of the
  oak cut-out (:data:`MAT_WINDOW_PX`: rows and columns of the 256-texel cell, wholly at alpha >= 0.5), tinted
  grass green: the verge's green ground.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from urbanarena.render.scene3d.mesh_primitives import MeshData
from urbanarena.render.scene3d.photo_greenery_mesh import ASH, ASPEN, OAK, PINE, _mesh, crop_uv, instance
from urbanarena.render.scene3d.trees_photo import _rng, card

VERSION_SALT = "photo-verges-2"
#: low splayed cards per grass tuft (one: a second cost 2-3 % of a frame), their lean above the ground (rad) and size (of the tuft's unit width)
SPLAYED, SPLAY_RAD, SPLAY_SIZE = 1, 0.5, 0.8
GRASS_TINT = ((0.88, 0.9, 0.64), (1.4, 1.22, 1.0), (0.9, 0.95, 0.78))
#: the aspen leaf's mean colour is about (0.77, 0.59, 0.22): these tints make it yellow, white, purple
FLOWER_RGB = ((1.22, 1.42, 0.7), (1.2, 1.55, 4.1), (0.9, 0.85, 3.3))
MAT_TINT = (0.44, 0.44, 0.3)
#: the grass cards show the dense middle of the twig (s0, s1, v0, v1; texel rows 60..230, columns 64..192)
GRASS_WINDOW = (0.25, 0.75, 1 - 230 / 256, 1 - 60 / 256)
#: the mat's texels in the oak cell (row0, row1, col0, col1 of its 256 x 256 cut-out; all at alpha >= 0.5)
MAT_WINDOW_PX = (89, 105, 124, 140)
MAT_Z_M = 0.03


def _shade_by_height(P: list, tint, lo: float = 0.45) -> list:
    """Per corner ``tint * (lo + (1 - lo) min(z, 1))`` (``P`` corner positions at unit height)."""
    t = np.asarray(tint, np.float64)
    return [t * (lo + (1 - lo) * min(max(float(p[2]), 0.0), 1.0)) for p in P]


def grass_tuft(variant: int, splayed: int = SPLAYED) -> MeshData:
    """A grass tuft of unit width and height (module docstring) with ``splayed`` low cards; ``variant`` 0..2."""
    rng = _rng(VERSION_SALT, "grass", variant)
    cell = ASH if variant == 2 else PINE
    P, N, UV = [], [], []
    for k in range(3):
        a = math.pi * k / 3 + 0.4 * rng.random()
        across = np.array([math.cos(a), math.sin(a), 0.0])
        lean = 0.25 * rng.normal(size=2)
        axis = np.array([lean[0], lean[1], 1.0])
        axis /= np.linalg.norm(axis)
        q, uv = card(np.array([0.0, 0.0, -0.04]), axis, across, 1.0, cell)
        P += list(q)
        UV += list(crop_uv(uv, GRASS_WINDOW))
        N += [np.array([0.0, 0.0, 1.0])] * 6
    for k in range(splayed):   # low cards lying out towards the neighbours: the tufts merge into a sward
        a = 2 * math.pi * (k + rng.random() * 0.5) / max(splayed, 1)
        out = np.array([math.cos(a), math.sin(a), 0.0])
        axis = out * math.cos(SPLAY_RAD) + np.array([0.0, 0.0, math.sin(SPLAY_RAD)])
        across = np.array([-math.sin(a), math.cos(a), 0.0])
        q, uv = card(np.array([0.0, 0.0, -0.03]), axis, across, SPLAY_SIZE, cell)
        P += list(q)
        UV += list(crop_uv(uv, GRASS_WINDOW))
        N += [np.array([0.0, 0.0, 1.0])] * 6
    C = _shade_by_height(P, GRASS_TINT[variant])
    return _mesh(P, N, C, UV)


def flower(colour: int) -> MeshData:
    """A wildflower cluster of unit size in colour ``colour`` (0 yellow, 1 white, 2 purple)."""
    rng = _rng(VERSION_SALT, "flower", colour)
    P, N, C, UV = [], [], [], []
    for _ in range(3):
        z = 0.6 + 0.4 * rng.random()
        x, y = 0.35 * rng.normal(size=2)
        a = 2 * math.pi * rng.random()
        across = np.array([math.cos(a), math.sin(a), 0.0])
        axis = np.array([-math.sin(a), math.cos(a), 1.2])
        axis /= np.linalg.norm(axis)
        size = 0.16 + 0.08 * rng.random()
        q, uv = card(np.array([x, y, z]) - axis * size * 0.5, axis, across, size, ASPEN)
        P += list(q)
        UV += list(uv)
        N += [np.array([0.0, 0.0, 1.0])] * 6
        C += [np.asarray(FLOWER_RGB[colour]) * (0.9 + 0.2 * rng.random())] * 6
    return _mesh(P, N, C, UV)


def mat() -> MeshData:
    """The verge's ground mat: a unit square (x -0.5..0.5 along, y -0.5..0.5 across) at :data:`MAT_Z_M`."""
    r0, r1, c0, c1 = MAT_WINDOW_PX
    s0, s1 = 2 * OAK + c0 / 256.0, 2 * OAK + c1 / 256.0
    v0, v1 = 1.0 - r1 / 256.0, 1.0 - r0 / 256.0
    corners = [(-0.5, -0.5, s0, v0), (0.5, -0.5, s1, v0), (0.5, 0.5, s1, v1), (-0.5, 0.5, s0, v1)]
    P, N, C, UV = [], [], [], []
    for k in (0, 1, 2, 0, 2, 3):
        x, y, s, v = corners[k]
        P.append((x, y, MAT_Z_M))
        N.append((0.0, 0.0, 1.0))
        C.append(MAT_TINT)
        UV.append((s, v))
    return _mesh(P, N, C, UV)


@lru_cache(maxsize=1)
def verge_templates() -> dict[str, tuple[MeshData, ...]]:
    """``{"grass": 3 tufts, "grass_mid": the same without splayed cards, "flower": 3 colours, "mat": (mat,)}``."""
    return {"grass": tuple(grass_tuft(v) for v in range(3)), "grass_mid": tuple(grass_tuft(v, 0) for v in range(3)),
            "flower": tuple(flower(c) for c in range(3)),
            "mat": (mat(),)}


def _bright(xy: np.ndarray) -> np.ndarray:
    from urbanarena.render.scene3d.photo_verges import hash_u

    return 0.82 + 0.3 * hash_u(7, np.floor(xy[:, 0] * 20), np.floor(xy[:, 1] * 20))


def verge_mesh(plan: dict[str, np.ndarray]) -> tuple[MeshData, MeshData]:
    """``(mid, detail)`` triangle lists (``uv``, ``feature`` 0) of a :func:`.photo_verges.plan_verges` plan: the
    tufts flagged ``far`` in ``mid`` (drawn to :data:`.photo_verges.MID_DISTANCE_M`; without the splayed cards,
    which are a few pixels there), the other tufts, the flowers
    and the mats in ``detail`` (drawn near only). Grass template by a hash of the position (a third of the tufts
    straw-coloured, a sixth weeds), brightness 0.82-1.12."""
    from urbanarena.render.scene3d.meshes import concat_meshes
    from urbanarena.render.scene3d.photo_verges import hash_u

    tm = verge_templates()
    far, det = [], []
    g = plan["grass"]
    if len(g):
        which = np.floor(hash_u(11, np.floor(g[:, 0] * 20), np.floor(g[:, 1] * 20)) * 6).astype(int)
        which = np.select([which < 3, which < 5], [0, 1], 2)
        scale = np.column_stack([g[:, 2], g[:, 2], g[:, 3]])
        for v in range(3):
            for sel, out, key in ((g[:, 5] > 0.5, far, "grass_mid"), (g[:, 5] <= 0.5, det, "grass")):
                sel = sel & (which == v)
                if sel.any():
                    out.append(instance(tm[key][v], g[sel, :2], g[sel, 4], scale[sel], _bright(g[sel, :2])))
    f = plan["flower"]
    for c in range(3):
        sel = f[:, 4] == c
        if sel.any():
            det.append(instance(tm["flower"][c], f[sel, :2], f[sel, 3], np.repeat(f[sel, 2:3], 3, axis=1),
                                np.ones(int(sel.sum()))))
    m = plan["mat"]
    if len(m):
        from urbanarena.render.scene3d.photo_verges import MAT_ACROSS_M, MAT_ALONG_M

        scale = np.tile([MAT_ALONG_M, MAT_ACROSS_M, 1.0], (len(m), 1))
        det.append(instance(tm["mat"][0], m[:, :2], m[:, 2], scale, _bright(m[:, :2])))
    z = np.zeros((0, 3), np.float32)
    empty = MeshData(z, z.copy(), z.copy(), uv=np.zeros((0, 2), np.float32), feature=np.zeros(0, np.float32))

    def join(parts):
        out = parts[0] if parts else empty
        for p in parts[1:]:
            out = concat_meshes(out, p)
        return out

    return join(far), join(det)


__all__ = ["FLOWER_RGB", "MAT_WINDOW_PX", "flower", "grass_tuft", "mat", "verge_mesh", "verge_templates"]
