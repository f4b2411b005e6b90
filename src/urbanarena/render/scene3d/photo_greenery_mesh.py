"""Meshes of the photo style's seeded greenery (:mod:`.photo_greenery`): seeded templates of leaf cards in the
photo trees' atlas (:mod:`.trees_photo`), instanced with numpy (a turn about z, a per-axis scale, a shift, a
per-instance brightness). Positions in metres, UVs as :mod:`.trees_photo` encodes them, feature 0."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from urbanarena.render.scene3d.mesh_primitives import MeshData
from urbanarena.render.scene3d.photo_plant_tone import card_tone, depth_shade, soil_disc
from urbanarena.render.scene3d.trees_photo import _rng, card

#: atlas cells (see :data:`.trees_photo.LEAF_FILES`, :data:`.trees_photo.BARK_FILES`)
OAK, ASH, ASPEN, PINE, OAK_BARK = 0, 1, 2, 3, 4
HEDGE_TINT = (0.55, 0.6, 0.5)
CORE_RGB = (0.11, 0.16, 0.07)
TUFT_TINT = (0.66, 0.7, 0.46)
VERSION_SALT = "photo-greenery-3"
#: cards on each long side of a hedge cell, and on a bush
HEDGE_SIDE_CARDS, BUSH_CARDS = 5, 22
#: seeded templates per kind (the near and far levels pick the same one per instance)
TEMPLATE_COUNT = 3
#: the far level (:func:`hedge_cell` / :func:`bush` with ``far``): a hedge cell keeps its three upper cards on each
#: side and its two top cards (8 of 14; no low cards, no sprigs), a bush every other card (11 of 22)
HEDGE_FAR_CARDS = (0, 1, 2, 5, 6, 7, 10, 11)
BUSH_FAR_STEP = 2


def _box_core(lo, hi, rgb, sides=(True, True, True, True, True)) -> tuple[list, list, list, list]:
    """The four sides and the top of the box (those ``sides`` keeps: -y, +y, -x, +x, top) ``lo``..``hi`` (metres) as triangles sampling the oak bark cell (opaque),
    coloured ``rgb``: ``(P, N, C, UV)`` lists."""
    (x0, y0, z0), (x1, y1, z1) = lo, hi
    faces = (((x0, y0, z0), (x1, y0, z0), (x1, y0, z1), (x0, y0, z1), (0, -1, 0)),
             ((x1, y1, z0), (x0, y1, z0), (x0, y1, z1), (x1, y1, z1), (0, 1, 0)),
             ((x0, y1, z0), (x0, y0, z0), (x0, y0, z1), (x0, y1, z1), (-1, 0, 0)),
             ((x1, y0, z0), (x1, y1, z0), (x1, y1, z1), (x1, y0, z1), (1, 0, 0)),
             ((x0, y0, z1), (x1, y0, z1), (x1, y1, z1), (x0, y1, z1), (0, 0, 1)))
    faces = tuple(f for f, keep in zip(faces, sides) if keep)
    P, N, C, UV = [], [], [], []
    uvq = [(2 * OAK_BARK + 0.1, 0.0), (2 * OAK_BARK + 0.9, 0.0), (2 * OAK_BARK + 0.9, 0.8), (2 * OAK_BARK + 0.1, 0.8)]
    for *q, n in faces:
        for k in (0, 1, 2, 0, 2, 3):
            P.append(q[k])
            N.append(n)
            C.append(rgb)
            UV.append(uvq[k])
    return P, N, C, UV


def _cards(rng, n: int, centre, radii, cell: int, tint, size_m: tuple[float, float], P, N, C, UV,
           shell: float = 0.5) -> None:
    """``n`` cards on an ellipsoid (``centre``, semi-axes ``radii``), biased to its shell, leaning outward; inner
    cards darker (:func:`.photo_plant_tone.depth_shade`), each its own :func:`.photo_plant_tone.card_tone` and a
    scattered normal."""
    centre, radii, tint = (np.asarray(v, np.float64) for v in (centre, radii, tint))
    up = np.array([0.0, 0.0, 1.0])
    for _ in range(n):
        d = rng.normal(size=3)
        d[2] *= 0.8
        d /= np.linalg.norm(d)
        frac = shell + (1 - shell) * rng.random() ** 0.5
        pt = centre + frac * d * radii
        axis = d + 0.6 * up + 0.35 * rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        side = np.cross(axis, rng.normal(size=3))
        side /= max(np.linalg.norm(side), 1e-9)
        size = size_m[0] + (size_m[1] - size_m[0]) * rng.random()
        q, uv = card(pt - axis * size * 0.45, axis, side, size, cell)
        nrm = 0.7 * d + 0.25 * up + 0.35 * rng.normal(size=3)
        nrm /= np.linalg.norm(nrm)
        col = tint * depth_shade(frac) * card_tone(rng.random(), rng.random())
        P += list(q)
        UV += list(uv)
        N += [nrm] * 6
        C += [col] * 6


def _mesh(P, N, C, UV) -> MeshData:
    f32 = np.float32
    return MeshData(np.asarray(P, f32), np.asarray(N, f32), np.asarray(C, f32), uv=np.asarray(UV, f32))


def crop_uv(uv: np.ndarray, window) -> np.ndarray:
    """``uv`` of a card (``(6, 2)``, cell ``k`` encoded as ``u = 2 k + s``, ``s`` and ``v`` in 0..1) mapped into
    the sub-window ``(s0, s1, v0, v1)`` of the cell: ``s -> s0 + (s1 - s0) s``, ``v -> v0 + (v1 - v0) v``. A
    window on the dense middle of a twig photo covers about twice the card with leaves (the whole cell: 16-26
    %)."""
    uv = np.asarray(uv, np.float64)
    cell = np.floor(uv[:, 0] / 2.0)
    s0, s1, v0, v1 = window
    s = uv[:, 0] - 2 * cell
    return np.column_stack([2 * cell + s0 + (s1 - s0) * s, v0 + (v1 - v0) * uv[:, 1]])


#: the dense middle of the leaf photos (s0, s1, v0, v1; texel rows 40..200, columns 64..192 of 256)
DENSE = (0.25, 0.75, 1 - 200 / 256, 1 - 40 / 256)


def _tone_and_normal(rng, out, spread: float = 0.45) -> tuple[np.ndarray, np.ndarray]:
    """A card's colour factor (:func:`.photo_plant_tone.card_tone`) and its normal: ``out`` (unit, the way the
    card faces) tipped up by 0.25 and scattered by ``spread`` times a normal draw, so neighbouring cards catch
    the sun differently (no flat-lit wall of leaves)."""
    nrm = 0.65 * np.asarray(out, np.float64) + np.array([0.0, 0.0, 0.25]) + spread * rng.normal(size=3)
    nrm /= max(np.linalg.norm(nrm), 1e-9)
    return card_tone(rng.random(), rng.random()), nrm


def _keep_cards(P, N, C, UV, n_head: int, keep) -> tuple[list, list, list, list]:
    """The first ``n_head`` vertices (core and soil) and the 6-vertex cards after them whose index is in ``keep``."""
    idx = list(range(n_head)) + [n_head + 6 * k + i for k in keep for i in range(6)]
    return tuple([part[i] for i in idx] for part in (P, N, C, UV))


def hedge_cell(variant: int, far: bool = False) -> MeshData:
    """A hedge cell: 1 m long along x, depth 1 (y in -0.5..0.5) and height 1 (z 0..1) before scaling, around a
    dark core (y -0.26..0.26, z 0..0.8) on a dark soil strip (:func:`.photo_plant_tone.soil_disc`, y to +-0.62):
    on each long side :data:`HEDGE_SIDE_CARDS` staggered cards (the dense middle of the photo, :data:`DENSE`;
    three up, two low) leaning outward, the upper ones more (a rounded shoulder); two cards tilted over the top;
    two smaller sprigs standing up out of the top (a ragged outline). The cards cover the core about once, so it
    shows between them as the hedge's deep dark gaps. Per corner the colour is the tint times ``0.4 + 0.6 z``
    (the foot in its own shade), per card times :func:`.photo_plant_tone.card_tone` and
    :func:`.photo_plant_tone.depth_shade` of the stem's outward share; normals scattered per card. ``far``: the
    far level, the same core, soil and cards less those not in :data:`HEDGE_FAR_CARDS` (same vertices otherwise)."""
    rng = _rng(VERSION_SALT, "hedge", variant)
    P, N, C, UV = _box_core((-0.5, -0.26, 0.0), (0.5, 0.26, 0.8), CORE_RGB, (True, True, False, False, True))
    for part, extra in zip((P, N, C, UV), soil_disc(0.5, 0.62, 4, OAK_BARK)):
        part += extra
    n_head = len(P)
    cell = (OAK, ASH)[variant % 2]
    spots = [(sy, x, z, 0.64) for sy in (1.0, -1.0) for x, z in ((-0.34, 0.4), (0.0, 0.44), (0.34, 0.4),
                                                               (-0.17, 0.02), (0.17, 0.02))]
    spots += [(0.0, -0.25 + 0.5 * i, 0.66, 0.62) for i in range(2)]
    spots += [(2.0, -0.3 + 0.6 * i, 0.7, 0.36) for i in range(2)]
    for sy, x, z, base in spots:
        x += 0.12 * (rng.random() - 0.5)
        size = base * (0.9 + 0.3 * rng.random())
        if sy == 2.0:    # a sprig out of the top
            out = np.array([0.0, 0.0, 1.0])
            axis = np.array([0.0, 0.0, 1.0]) + 0.35 * rng.normal(size=3)
            across = np.array([1.0, 0.3 * rng.normal(), 0.0])
            stem = np.array([x, 0.4 * (rng.random() - 0.5), z + 0.1 * rng.random()])
            outward = 1.0
        elif sy:
            out = np.array([0.0, sy, 0.0])
            lean = 0.2 + 0.35 * (z > 0.3)
            axis = np.array([0.0, lean * sy, 1.0]) + 0.15 * rng.normal(size=3)
            across = np.array([1.0, 0.15 * rng.normal(), 0.0])
            depth = 0.2 * rng.random()
            stem = np.array([x, sy * (0.2 + depth), z])
            outward = depth / 0.2
        else:
            out = np.array([0.0, 0.0, 1.0])
            axis = np.array([0.0, 1.0 if rng.random() < 0.5 else -1.0, 0.7]) + 0.2 * rng.normal(size=3)
            across = np.array([1.0, 0.0, 0.0])
            stem = np.array([x, -0.32 * axis[1] / abs(axis[1]), z])
            outward = 0.8
        axis /= np.linalg.norm(axis)
        across = across - axis * float(across @ axis)
        across /= max(np.linalg.norm(across), 1e-9)
        q, uv = card(stem, axis, across, size, cell)
        tone, nrm = _tone_and_normal(rng, out)
        tone = tone * depth_shade(outward)
        P += list(q)
        UV += list(crop_uv(uv, DENSE))
        N += [nrm] * 6
        C += [np.asarray(HEDGE_TINT) * (0.4 + 0.6 * min(max(p[2], 0.0), 1.0)) * tone for p in q]
    if far:
        P, N, C, UV = _keep_cards(P, N, C, UV, n_head, HEDGE_FAR_CARDS)
    return _mesh(P, N, C, UV)


def bush(variant: int, far: bool = False) -> MeshData:
    """A bush of unit size: :data:`BUSH_CARDS` cards (the dense middle of the photo) on the outer shell of an
    ellipsoid (biased to it) 1 m across and about 0.95 m high, around a dark core box (0.4 m wide, 0.5 m high)
    that shows between them, on a dark soil disc (radius 0.42, 8 sides); per corner times ``0.55 + 0.45 z`` (its underside
    in shade), per card :func:`.photo_plant_tone.card_tone` and scattered normals. ``far``: the far level, every
    :data:`BUSH_FAR_STEP`-th card only (same vertices otherwise)."""
    rng = _rng(VERSION_SALT, "bush", variant)
    P, N, C, UV = _box_core((-0.2, -0.2, 0.0), (0.2, 0.2, 0.5), CORE_RGB, (True, True, True, True, True))
    for part, extra in zip((P, N, C, UV), soil_disc(0.42, 0.42, 8, OAK_BARK)):
        part += extra
    n0 = len(P)
    _cards(rng, BUSH_CARDS, (0, 0, 0.45), (0.5, 0.5, 0.45), (OAK, ASH, ASPEN)[variant % 3],
           HEDGE_TINT if variant % 3 != 2 else (0.42, 0.6, 0.5), (0.45, 0.72), P, N, C, UV, shell=0.45)
    for i in range(n0, len(P)):
        C[i] = np.asarray(C[i]) * (0.55 + 0.45 * min(max(float(P[i][2]), 0.0), 1.0))
    UV[n0:] = list(crop_uv(np.asarray(UV[n0:]), DENSE))
    if far:
        P, N, C, UV = _keep_cards(P, N, C, UV, n0, range(0, BUSH_CARDS, BUSH_FAR_STEP))
    return _mesh(P, N, C, UV)


def tuft(variant: int) -> MeshData:
    """A tuft of unit size: three cards crossed at 60 degrees, standing on the ground, each card its own
    :func:`.photo_plant_tone.card_tone`, per corner times ``0.45 + 0.55 z`` (its foot in its own shade)."""
    rng = _rng(VERSION_SALT, "tuft", variant)
    cell = PINE if variant < 2 else ASH
    P, N, C, UV = [], [], [], []
    for k in range(3):
        a = math.pi * k / 3 + 0.3 * rng.random()
        across = np.array([math.cos(a), math.sin(a), 0.0])
        axis = np.array([0.15 * rng.normal(), 0.15 * rng.normal(), 1.0])
        axis /= np.linalg.norm(axis)
        q, uv = card(np.array([0.0, 0.0, -0.05]), axis, across, 1.0, cell)
        tone = card_tone(rng.random(), rng.random())
        P += list(q)
        UV += list(uv)
        N += [np.array([0.0, 0.0, 1.0])] * 6
        C += [np.asarray(TUFT_TINT) * tone * (0.45 + 0.55 * min(max(float(p[2]), 0.0), 1.0)) for p in q]
    return _mesh(P, N, C, UV)


@lru_cache(maxsize=2)
def greenery_templates(far: bool = False) -> dict[str, tuple[MeshData, ...]]:
    """``{"hedge", "bush", "tuft"}`` -> :data:`.photo_greenery.TEMPLATES` seeded templates each; ``far``: the far
    levels of hedges and bushes and no tufts (``()``: too small to see that far)."""
    return {"hedge": tuple(hedge_cell(v, far) for v in range(3)), "bush": tuple(bush(v, far) for v in range(3)),
            "tuft": () if far else tuple(tuft(v) for v in range(3))}


def instance(tmpl: MeshData, xy: np.ndarray, turn_rad: np.ndarray, scale: np.ndarray,
             bright: np.ndarray) -> MeshData:
    """``K`` copies of ``tmpl``: scaled per axis by ``scale`` ``(K, 3)``, turned by ``turn_rad`` ``(K,)`` about z
    (counter-clockwise), moved to ``xy`` ``(K, 2)`` (z 0), colours times ``bright`` ``(K,)``."""
    p = tmpl.positions.astype(np.float64)[None] * scale[:, None, :]
    c, s = np.cos(turn_rad)[:, None], np.sin(turn_rad)[:, None]
    x = c * p[..., 0] - s * p[..., 1] + xy[:, 0:1]
    y = s * p[..., 0] + c * p[..., 1] + xy[:, 1:2]
    n = tmpl.normals.astype(np.float64)[None]
    nx, ny = c * n[..., 0] - s * n[..., 1], s * n[..., 0] + c * n[..., 1]
    nz = np.broadcast_to(n[..., 2], nx.shape)
    f32 = np.float32
    k = len(xy)
    return MeshData(np.stack([x, y, p[..., 2]], -1).reshape(-1, 3).astype(f32),
                    np.stack([nx, ny, nz], -1).reshape(-1, 3).astype(f32),
                    (tmpl.colours[None] * bright[:, None, None]).reshape(-1, 3).astype(f32),
                    uv=np.broadcast_to(tmpl.uv[None], (k, *tmpl.uv.shape)).reshape(-1, 2).astype(f32),
                    feature=np.zeros(k * len(tmpl.positions), f32))


def greenery_mesh(plan: dict[str, np.ndarray], kit, far: bool = False) -> tuple[MeshData, MeshData]:
    """``(trees, small)``: triangle lists (``uv``, ``feature`` 0) of a :func:`.photo_greenery.plan_greenery`
    plan: the trees through :func:`.trees_photo.tree_mesh`; the hedges, bushes and tufts as instanced templates
    (template and brightness ``0.85..1.1`` by a hash of the position). ``far``: ``small`` of the far templates
    (:func:`greenery_templates`; no tufts), a subset of the near one's vertices."""
    from urbanarena.render.scene3d.meshes import concat_meshes
    from urbanarena.render.scene3d.scene import StreetObject
    from urbanarena.render.scene3d.trees_photo import tree_mesh

    parts = []
    tree_part = None
    trees = [StreetObject(f"seed-tree/{x:.2f}/{y:.2f}", "tree", float(x), float(y)) for x, y in plan["tree"]]
    if trees and not far:
        tree_part = tree_mesh(trees, {}, kit)
    tm = greenery_templates(far)
    for kind in ("hedge", "bush", "tuft"):
        rows = plan[kind]
        if not len(rows) or not tm[kind]:
            continue
        hv = (np.floor(rows[:, 0] * 7.31) + np.floor(rows[:, 1] * 3.17)).astype(np.int64)
        which = hv % TEMPLATE_COUNT
        bright = 0.85 + 0.25 * ((hv * 2654435761) % 1000) / 1000.0
        if kind == "hedge":
            scale = np.column_stack([np.ones(len(rows)), rows[:, 4], rows[:, 3]])
            turn = rows[:, 2]
        else:
            scale = np.repeat(rows[:, 2:3], 3, axis=1)
            turn = rows[:, 3]
        for v in range(len(tm[kind])):
            sel = which == v
            if sel.any():
                parts.append(instance(tm[kind][v], rows[sel, :2], turn[sel], scale[sel], bright[sel]))
    z = np.zeros((0, 3), np.float32)
    empty = MeshData(z, z.copy(), z.copy(), uv=np.zeros((0, 2), np.float32), feature=np.zeros(0, np.float32))
    out = parts[0] if parts else empty
    for p in parts[1:]:
        out = concat_meshes(out, p)
    return (tree_part if tree_part is not None else empty), out


__all__ = ["BUSH_FAR_STEP", "DENSE", "HEDGE_FAR_CARDS", "TEMPLATE_COUNT", "bush", "crop_uv", "greenery_mesh", "greenery_templates", "hedge_cell", "instance", "tuft"]
