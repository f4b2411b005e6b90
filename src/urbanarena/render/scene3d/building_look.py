"""The realistic style's buildings from their OSM tags (:data:`.scene.BUILDING_LOOK_FIELDS`, read by
:mod:`.city_scene`), with seeded variation where tags are missing (issue 14; shares ours):

* **facade attribute** (:func:`pack_facade_look`): each building's ``building:material`` (:data:`MATERIAL_CODES`),
  whether ``building:colour`` is tagged, and its storey height from ``building:levels``
  (:func:`storey_height_m`) packed into the facade program's ``shop`` attribute (:data:`FACADE_PACK`);
* **pitched roofs** (:func:`roof_geometry`, :func:`pitched_roofs`): ``roof:shape`` gabled, hipped or pyramidal
  (seeded on untagged buildings up to :data:`PITCH_MAX_H_M`), ``roof:height``, ``roof:colour``;
* **balconies** (:func:`balconies`): on a seeded share of residential or untagged buildings, aligned with the
  facade program's window columns (:func:`window_columns`, whose hash :func:`rhash` is the shader's).

All geometry in the scene's local frame (metres, ``z`` up), deterministic (seeded by ids through :mod:`.palette`).
"""

from __future__ import annotations

import math

import numpy as np

from urbanarena.render.scene3d.layout import building_polygon, building_walls
from urbanarena.render.scene3d.palette import facade_colour, stable_index, stable_unit
from urbanarena.render.scene3d.mesh_primitives import quad_tris as _quad_tris, rgb as _rgb
from urbanarena.render.scene3d.scene import Scene


#: material codes of the realistic facade program (realistic_shaders.FACADE_VS)
MATERIAL_CODES = {"brick": 1, "plaster": 2, "stone": 3, "concrete": 4, "glass": 5, "wood": 6, "metal": 7}
#: bit layout of the realistic facade attribute: shop | seed << 1 | material << 16 | tagged colour << 19 |
#: storey code << 20 (below 2**24, exact in float32)
FACADE_PACK = {"seed_bits": 15, "material_shift": 16, "tagged_shift": 19, "storey_shift": 20}
LEVEL_H_MIN_M, LEVEL_H_MAX_M = 2.6, 4.4


def storey_height_m(b, ground_h_m: float) -> float | None:
    """Storey height above the ground floor (metres) from ``building:levels``: ``(height - ground_h) /
    (levels - 1)``, clamped to 2.6-4.4 m; ``None`` without levels (or with one level): the renderer's."""
    lv = b.levels
    if lv is None or lv < 2 or float(b.height_m) <= ground_h_m + 1.0:
        return None
    return min(max((float(b.height_m) - ground_h_m) / (float(lv) - 1.0), LEVEL_H_MIN_M), LEVEL_H_MAX_M)


def storey_code(fh_m: float | None) -> int:
    """The 4-bit storey code of ``fh_m`` (0: none; see realistic_shaders.STOREY_M0)."""
    from urbanarena.render.scene3d.realistic_shaders import STOREY_M0, STOREY_STEP_M

    if fh_m is None:
        return 0
    return int(min(max(round((fh_m - STOREY_M0) / STOREY_STEP_M) + 1, 1), 15))


def pack_facade_look(facades, scene: Scene, features, ground_h_m: float) -> None:
    """Rewrite ``facades`` (a :class:`~.meshes.MeshData` from :func:`~.meshes.building_meshes`, in place) for
    the realistic program: the ``shop`` attribute re-packed per :data:`FACADE_PACK` with each building's OSM
    material (:data:`MATERIAL_CODES`, 0 = seeded), whether ``building:colour`` is tagged (then the vertex
    colour is that colour) and its storey code (:func:`storey_height_m`)."""
    if facades.n_triangles == 0 or facades.shop is None:
        return
    by_id = {b.id: b for b in scene.buildings}
    n = len(features) + 1
    mat = np.zeros(n, np.int64)
    tag = np.zeros(n, np.int64)
    sto = np.zeros(n, np.int64)
    rgb = np.full((n, 3), np.nan, np.float32)
    for k, (kind, fid) in enumerate(features, 1):
        b = by_id.get(fid) if kind == "building" else None
        if b is None:
            continue
        mat[k] = MATERIAL_CODES.get(b.material or "", 0)
        sto[k] = storey_code(storey_height_m(b, ground_h_m))
        if b.tagged_colour is not None:
            tag[k] = 1
            rgb[k] = _rgb(b.tagged_colour)
    f = facades.feature.astype(np.int64)
    old = facades.shop.astype(np.int64)
    seed = (old >> 1) >> (20 - FACADE_PACK["seed_bits"])
    facades.shop = (old & 1) + (seed << 1) + (mat[f] << FACADE_PACK["material_shift"]) \
        + (tag[f] << FACADE_PACK["tagged_shift"]) + (sto[f] << FACADE_PACK["storey_shift"])
    facades.shop = facades.shop.astype(np.float32)
    has = tag[f] == 1
    if has.any():
        facades.colours = facades.colours.copy()
        facades.colours[has] = rgb[f[has]]


M32 = 0xFFFFFFFF


def rhash(x: int, y: int, z: int) -> int:
    """The facade program's integer hash ``rhash(uvec3)`` (realistic_shaders.HASH), in Python."""
    h = ((x * 1597334677) & M32) ^ ((y * 3812015801) & M32) ^ ((z * 2798796415) & M32)
    h ^= h >> 15
    h = (h * 2246822519) & M32
    h ^= h >> 13
    h = (h * 3266489917) & M32
    h ^= h >> 16
    return h


def _hf(h: int, shift: int) -> float:
    # float((h >> shift) & 255u) / 255.0 of the shader, in float32 as there
    return float(np.float32((h >> shift) & 255) / np.float32(255.0))


def wall_seed(building_id: str, wall_index: int) -> int:
    """The 15-bit wall seed the realistic facade program reads (:func:`pack_facade_look`)."""
    return int(stable_unit(f"{building_id}/{wall_index}", "wall") * (1 << 20)) >> (20 - FACADE_PACK["seed_bits"])


def window_columns(seed: int, length_m: float) -> tuple[float, list[float]]:
    """``(window width, [window centre u_m, ...])`` of a wall as the facade program draws them
    (FACADE_VS's ``v_win`` and FACADE_FS's ``window_at``)."""
    bh = rhash(seed >> 4, 7, 1)
    win_w = 1.0 + 0.6 * _hf(bh, 0)
    spacing = max(win_w + 0.9 + 0.9 * _hf(bh, 8), 2.2)
    n = math.floor((length_m - 0.6) / spacing)
    if n < 1:
        return win_w, []
    margin = 0.5 * (length_m - n * spacing)
    return win_w, [margin + (i + 0.5) * spacing for i in range(n)]


#: seeded roofs (ours): on buildings up to PITCH_MAX_H_M tall without a ``roof:shape`` tag, these shares
#: of hipped, gabled and pyramidal (square footprints only) roofs; the rest stay flat
PITCH_MAX_H_M = 16.0
ROOF_SHARES = (("hipped", 0.35), ("gabled", 0.2), ("pyramidal", 0.08))
ROOF_PITCH_DEG = {"gabled": 32.0, "hipped": 28.0, "pyramidal": 30.0}
ROOF_MAX_M, ROOF_EAVE_M = 5.0, 0.3
ROOF_RGBS = ((72, 74, 78), (118, 56, 44), (46, 46, 50), (86, 90, 98), (96, 138, 118))
#: footprint area / its minimum rotated rectangle's area below which a pitched roof is not drawn
RECT_MIN = 0.8
#: balconies (ours): on buildings at least BALCONY_MIN_H_M tall that are residential or untagged, on this
#: share of them (seeded), from the second storey above the ground floor, on every other window column
BALCONY_SHARE, BALCONY_MIN_H_M = 0.25, 12.0
NON_RESIDENTIAL = {"office", "retail", "commercial", "university", "public", "church", "cathedral", "museum",
                   "train_station", "kiosk", "roof", "pavilion", "shed", "garage", "industrial", "warehouse",
                   "civic", "government", "school", "hotel", "parking", "transportation", "chapel"}


def roof_shape_of(b) -> str:
    """The roof drawn on ``b``: its ``roof:shape`` when gabled/hipped/pyramidal, ``flat`` for other tags,
    else seeded (:data:`ROOF_SHARES`) on buildings up to :data:`PITCH_MAX_H_M`."""
    if b.roof_shape is not None:
        return b.roof_shape if b.roof_shape in ROOF_PITCH_DEG else "flat"
    if float(b.height_m) > PITCH_MAX_H_M or b.base_m > 0:
        return "flat"
    u, acc = stable_unit(b.id, "roof-shape"), 0.0
    for shape, share in ROOF_SHARES:
        acc += share
        if u < acc:
            return shape
    return "flat"


def _oriented(tris: np.ndarray, centre: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Triangles ``(T, 3, 3)`` and their per-vertex normals, each facing away from ``centre`` (``(3,)`` or
    one per triangle ``(T, 3)``)."""
    nrm = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    nrm /= np.maximum(np.linalg.norm(nrm, axis=1, keepdims=True), 1e-12)
    out = np.einsum("ij,ij->i", nrm, tris.mean(axis=1) - centre) < 0
    nrm[out] *= -1.0
    return tris, np.repeat(nrm[:, None, :], 3, axis=1)


def roof_geometry(b) -> tuple[np.ndarray, np.ndarray] | None:
    """``(slopes, gables)`` triangles ``(T, 3, 3)`` of ``b``'s pitched roof on the minimum rotated rectangle of
    its footprint grown by :data:`ROOF_EAVE_M`, or ``None`` (flat roof, or a footprint far from a rectangle).
    The ridge runs along the long side; hips are at 45 degrees in plan; the height is ``roof_height_m``,
    else the shape's pitch over half the short side (at most :data:`ROOF_MAX_M`)."""
    shape = roof_shape_of(b)
    if shape == "flat" or b.holes:
        return None
    poly = building_polygon(b)
    if poly is None or poly.is_empty or poly.geom_type != "Polygon":
        return None
    rect = poly.minimum_rotated_rectangle
    if rect.geom_type != "Polygon" or rect.area <= 0 or poly.area / rect.area < RECT_MIN:
        return None
    c = np.asarray(rect.exterior.coords)[:4, :2]
    if np.hypot(*(c[1] - c[0])) < np.hypot(*(c[2] - c[1])):
        c = np.roll(c, -1, axis=0)
    e = (c[1] - c[0]) / np.hypot(*(c[1] - c[0]))     # along the ridge
    f = (c[3] - c[0]) / np.hypot(*(c[3] - c[0]))     # across
    L, W = np.hypot(*(c[1] - c[0])), np.hypot(*(c[3] - c[0]))
    if shape == "pyramidal" and b.roof_shape is None and L > 1.3 * W:
        shape = "hipped"
    g = ROOF_EAVE_M
    o = c[0] - e * g - f * g
    L, W = L + 2 * g, W + 2 * g
    H = float(b.height_m)
    rh = b.roof_height_m if b.roof_height_m is not None else min(
        math.tan(math.radians(ROOF_PITCH_DEG[shape])) * W / 2, ROOF_MAX_M)

    def p(a, bb, z):
        q = o + e * a + f * bb
        return [q[0], q[1], z]

    c0, c1, c2, c3 = p(0, 0, H), p(L, 0, H), p(L, W, H), p(0, W, H)
    if shape == "pyramidal":
        apex = p(L / 2, W / 2, H + rh)
        slopes = [[c0, c1, apex], [c1, c2, apex], [c2, c3, apex], [c3, c0, apex]]
        gables = []
    else:
        inset = 0.0 if shape == "gabled" else min(W / 2, L / 2 - 0.01)
        r0, r1 = p(inset, W / 2, H + rh), p(L - inset, W / 2, H + rh)
        slopes = [[c0, c1, r1], [c0, r1, r0], [c2, c3, r0], [c2, r0, r1]]
        ends = [[c1, c2, r1], [c3, c0, r0]]
        if shape == "gabled":
            gables = ends
        else:
            slopes += ends
            gables = []
    return np.asarray(slopes, np.float64), np.asarray(gables, np.float64).reshape(-1, 3, 3)


def roof_colour_of(b) -> tuple[int, int, int]:
    """``roof:colour``, else a seeded tin-roof colour (:data:`ROOF_RGBS`)."""
    if b.roof_colour is not None:
        return b.roof_colour
    return ROOF_RGBS[stable_index(b.id, len(ROOF_RGBS), "roof-col")]


def pitched_roofs(mb, scene: Scene, feature_index: dict[str, int]) -> int:
    """Append pitched roofs (:func:`roof_geometry`) to ``mb``: slopes in the roof colour with a light
    per-building tone, gable ends in the facade colour. Returns the number of roofs."""
    keep, n = mb.feature, 0
    for b in scene.buildings:
        geo = roof_geometry(b)
        if geo is None:
            continue
        n += 1
        mb.feature = feature_index.get(b.id, 0)
        slopes, gables = geo
        centre = np.array([*np.asarray(b.footprint).mean(axis=0), float(b.height_m) - 1.0])
        t, nr = _oriented(slopes, centre)
        mb.add(t, _rgb(roof_colour_of(b)) * (0.9 + 0.2 * stable_unit(b.id, "roof-tone")), normals=nr)
        if len(gables):
            wall = b.tagged_colour or (b.colour if b.colour is not None else facade_colour(b.id))
            t, nr = _oriented(gables, centre)
            mb.add(t, _rgb(wall) * 0.92, normals=nr)
    mb.feature = keep
    return n


def has_balconies(b) -> bool:
    """Whether ``b`` gets balconies (:data:`BALCONY_SHARE` of residential or untagged buildings at least
    :data:`BALCONY_MIN_H_M` tall)."""
    return (float(b.height_m) >= BALCONY_MIN_H_M and b.base_m == 0 and (b.kind or "") not in NON_RESIDENTIAL
            and b.material != "glass" and stable_unit(b.id, "balconies") < BALCONY_SHARE)


def balconies(mb, scene: Scene, feature_index: dict[str, int], floor_h_m: float, ground_h_m: float) -> int:
    """Append balconies (:func:`has_balconies`) to ``mb``, aligned with the facade program's window columns
    (:func:`window_columns`) and storeys: a 0.12 m slab 1.0 m deep and the window's width plus 0.6 m, with
    a 0.95 m railing panel in front, under every other window from the second storey above
    the ground floor up to the one below the roof line. Returns the number of balconies."""
    keep, count = mb.feature, 0
    rail_rgb = ((52, 54, 58), (205, 206, 202), (70, 72, 76))
    for b in scene.buildings:
        if not has_balconies(b):
            continue
        mb.feature = feature_index.get(b.id, 0)
        H = float(b.height_m)
        fh = storey_height_m(b, ground_h_m) or floor_h_m
        g = ground_h_m if H > ground_h_m + 1.0 else 0.0
        parity = stable_index(b.id, 2, "balcony-parity")
        rail = _rgb(rail_rgb[stable_index(b.id, len(rail_rgb), "rail")])
        slab = _rgb(b.tagged_colour or (b.colour if b.colour is not None else facade_colour(b.id))) * 0.85
        quads_s, quads_r, cs, cr = [], [], [], []
        for w in building_walls(b):
            if w.length_m < 8.0:
                continue
            win_w, cols = window_columns(wall_seed(b.id, w.index), w.length_m)
            p0, n = np.array(w.p0), np.array(w.normal)
            e = (np.array(w.p1) - p0) / w.length_m
            k = 1
            while g + (k + 1) * fh <= H - 0.5 + 1e-3:
                z = g + k * fh
                for i, u in enumerate(cols):
                    if i % 2 != parity:
                        continue
                    a, bb = p0 + e * (u - win_w / 2 - 0.3), p0 + e * (u + win_w / 2 + 0.3)
                    af, bf = a + n * 1.0, bb + n * 1.0
                    z0, z1, zr = z - 0.12, z, z + 0.95
                    quads_s += [[[*a, z1], [*bb, z1], [*bf, z1], [*af, z1]],
                                [[*a, z0], [*af, z0], [*bf, z0], [*bb, z0]],
                                [[*af, z0], [*af, z1], [*bf, z1], [*bf, z0]]]
                    quads_r += [[[*af, z1], [*bf, z1], [*bf, zr], [*af, zr]]]
                    centre = [*((a + bf) / 2), z1 - 0.075]
                    cs += [centre] * 3
                    cr += [centre]
                    count += 1
                k += 1
        for quads, cen, rgb in ((quads_s, cs, slab), (quads_r, cr, rail)):
            if quads:
                t, nr = _oriented(_quad_tris(np.array(quads)), np.concatenate([np.array(cen)] * 2))
                mb.add(t, rgb, normals=nr)
    mb.feature = keep
    return count
