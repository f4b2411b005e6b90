"""The ``photo`` style's building details (issue 24, the sixth blind sort's "box buildings" tell): what makes an
extruded OSM footprint read as a Helsinki block rather than a prism. Photo style only (composed by
:mod:`.photo_content`); ``flat`` and ``realistic`` never reach this module.

Every part is built along the building's rings (:func:`building_rings`: the footprint's exterior and its
courtyards, as :func:`.layout.building_walls` orients them, outward normal ``(dy, -dx)`` of each edge) offset by
mitred vertices (:func:`offset_ring`), so bands close at corners without gaps or overlaps. All geometry is in the
scene's local frame (metres, ``z`` up), deterministic (seeded by building ids through :mod:`.palette`), in the
building's feature index, in two meshes the renderer draws near the eye (``SceneRenderer.building_detail_vaos``):
cornices, parapets and roof boxes (the silhouette) within :data:`FAR_M`, plinths, downpipes and balconies within
:data:`NEAR_M`. Both cast sun shadows on the walls (:mod:`.sun_shadow` bakes them with the walls, whole) and report
their building in the ID pass (:mod:`.id_pass`, with the same distance cuts). Choices are ours unless stated:

* **cornice** (:func:`cornice_profile`): a stepped moulding under the roof line, three steps from the bottom
  (fascia, bed moulding, corona) projecting :data:`CORNICE_STEPS` times the building's corona depth (seeded in
  :data:`CORONA_M`); on buildings at least :data:`CORNICE_MIN_H_M` tall, a single :data:`COPING` band on lower ones.
  Its colour is the wall's (the building's facade vertex colour) made lighter or darker (:data:`CORNICE_TONES`,
  at most :data:`CORNICE_MAX`).
  The corona encloses the realistic style's 0.3 m moulding (:mod:`.realistic`), which stays hidden inside it.
  Under a pitched roof (:func:`.building_look.roof_geometry`) the steps are :data:`EAVES_SCALE` as deep. Buildings
  mostly of glass curtain walls (:func:`glass_share`, the facade program's pick, :func:`wall_is_glass`) get the
  coping band in :data:`COPING_RGB` instead, no parapet, no downpipes, and no balconies on their glass walls.
* **parapet** on flat roofs: a wall :data:`PARAPET_M` high (seeded) on the roof edge, its outer face.
* faces that look up from higher than :data:`STREET_EYE_MAX_M` (the cornice's top, the tops of roof boxes, balcony
  slabs and handrails) are left out: no street camera sees them (a third of the cornice's triangles).
* **roof boxes** on flat roofs of buildings at least :data:`ROOF_BOX_MIN_H_M` tall: chimney stacks and a lift
  machine room (:func:`roof_boxes`) inside the footprint shrunk by :data:`ROOF_BOX_INSET_M`.
* **plinth** (base course): :data:`PLINTH_PROUD_M` proud of the wall, :data:`PLINTH_M` high (seeded), granite
  grey; :data:`SHOP_PLINTH_M` on buildings with a shopfront ground floor (their display glass starts there).
* **downpipes**: at :data:`DOWNPIPE_SHARE` of the convex exterior corners of buildings at least
  :data:`DOWNPIPE_MIN_H_M` tall, a :data:`DOWNPIPE_W_M` square pipe 0.35 m from the corner (where the facade
  program paints one) from the plinth to under the cornice.
* **balconies** (:func:`balconies`): on residential buildings (``building=apartments|residential|...``, or
  untagged, without a shopfront and at least :data:`BALCONY_MIN_H_M` tall, on :data:`INFERRED_SHARE` of them),
  unless the realistic style already gave them balconies (:func:`.building_look.has_balconies`): on
  :data:`BALCONY_WALL_SHARE` of their walls at least :data:`BALCONY_MIN_WALL_M` long, every other window column
  (the facade program's, :func:`.building_look.window_columns`) of every storey from the first above the ground
  floor to the one under the cornice: a slab :data:`BALCONY_DEPTH_M` deep, and either railings (handrail, bottom
  rail and bars :data:`BAR_STEP_M` apart, as thin quads) or a solid parapet panel (seeded per building).

Cost: measured by ``benchmarks/bench_photo_building_detail.py``; the numbers are in ``docs/renderer.md``.
"""

from __future__ import annotations

import math

import numpy as np
from shapely.geometry import Polygon, box as sbox
from shapely.affinity import rotate

from urbanarena.render.scene3d.layout import building_polygon
from urbanarena.render.scene3d.mesh_primitives import MeshBuilder, quad_tris, rgb as _rgb
from urbanarena.render.scene3d.palette import facade_colour, stable_index, stable_unit

#: the switch the benchmarks and tests turn off to compare with the photo style without these details
ENABLED = True
#: plinths, downpipes and balconies are drawn in tiles whose nearest point is at most this far from the eye (m);
#: cornices, parapets and roof boxes within FAR_M (a 1 m cornice is under a pixel high beyond it at 640 x 360)
NEAR_M, FAR_M = 150.0, 350.0
#: in the photo render identity (:mod:`.render_identity`, ``"buildings"``): change it when the geometry changes
DETAIL_VERSION = "photo-buildings-5"

CORNICE_MIN_H_M = 7.0
#: the corona's projection from the wall, metres (seeded per building); at least 0.3 m: the realistic moulding
#: (0.3 m deep, 0.45-0.15 m under the roof line) stays inside it
CORONA_M = (0.34, 0.48)
#: the cornice's steps from the bottom: (bottom, top) in metres under the roof line, projection as a share of
#: the corona's
CORNICE_STEPS = ((1.0, 0.75, 0.25), (0.75, 0.5, 0.55), (0.5, 0.0, 1.0))
#: the band along the roof edge of buildings under CORNICE_MIN_H_M: (bottom, top, projection m)
COPING = (0.3, 0.0, 0.12)
EAVES_SCALE = 0.6
#: the cornice's colour: the wall's times one of these (seeded), no channel above CORNICE_MAX (a light stone
#: moulding in the sun would otherwise glare white next to the photographed wall)
CORNICE_TONES = (1.12, 1.05, 0.85, 0.76)
CORNICE_MAX = 0.66
#: undersides (cornice steps, balcony slabs) take this share of their colour: the occlusion of the overhang, which
#: the plain program does not shade and the sun shadow map (0.95 m texels on the default city) cannot resolve
SOFFIT_SHADE = 0.7
PARAPET_M, PARAPET_T_M = (0.2, 0.5), 0.25
COPING_RGB = (88, 90, 92)
#: faces looking up from higher than this are left out (ours): the renderer's cameras stand 1.45-1.95 m over the
#: ground (``DEFAULT_EYE_HEIGHT_M``, the landmark references' range), so no view sees the top of a cornice, a
#: coping, a roof box or a balcony slab over the ground floor; a view from above would see them open
STREET_EYE_MAX_M = 3.0
ROOF_BOX_MIN_H_M, ROOF_BOX_INSET_M = 10.0, 1.0
CHIMNEY_RGBS = ((128, 74, 60), (150, 146, 138), (96, 92, 88))
MACHINE_ROOM_SHARE = 0.4
PLINTH_M, SHOP_PLINTH_M, PLINTH_PROUD_M = (0.6, 0.8), 0.45, 0.06
PLINTH_RGBS = ((92, 90, 88), (112, 108, 104), (78, 76, 76))
DOWNPIPE_SHARE, DOWNPIPE_MIN_H_M, DOWNPIPE_W_M, DOWNPIPE_GAP_M = 0.5, 6.0, 0.1, 0.04
DOWNPIPE_RGBS = ((70, 72, 74), (120, 122, 124), (58, 60, 58))
RESIDENTIAL = {"apartments", "residential", "house", "terrace", "dormitory", "detached", "semidetached_house"}
BALCONY_MIN_H_M, INFERRED_SHARE = 12.0, 0.5
BALCONY_WALL_SHARE, BALCONY_MIN_WALL_M = 0.5, 7.0
BALCONY_DEPTH_M, BALCONY_SLAB_M, RAIL_H_M, BAR_STEP_M, BAR_W_M = 1.1, 0.14, 1.0, 0.3, 0.025
RAIL_RGBS = ((40, 42, 44), (200, 200, 196), (66, 70, 74))
PANEL_SHARE = 0.35
#: mitre vectors are clamped to this length (times the offset) at sharp corners
MITRE_MAX = 3.0


# ------------------------------------------------------------------------------------------------ rings
def building_rings(b) -> list[np.ndarray]:
    """The rings ``(n, 2)`` (metres, not closed) of ``b``'s footprint as :func:`.layout.building_walls` walks them
    (exterior counter-clockwise, courtyards clockwise: each edge's outward normal ``(dy, -dx)`` points away from
    the building), vertices closer than 0.05 m to the previous one dropped."""
    poly = building_polygon(b)
    out = []
    for ring in (poly.exterior, *poly.interiors):
        cs = np.asarray(ring.coords, np.float64)[:-1, :2]
        keep = [cs[0]]
        for p in cs[1:]:
            if np.hypot(*(p - keep[-1])) >= 0.05:
                keep.append(p)
        if len(keep) >= 3 and np.hypot(*(keep[0] - keep[-1])) < 0.05:
            keep.pop()
        if len(keep) >= 3:
            out.append(np.array(keep))
    return out


def edge_normals(ring: np.ndarray) -> np.ndarray:
    """Outward unit normals ``(n, 2)`` of the edges ``ring[i] -> ring[i + 1]`` (``(dy, -dx)``)."""
    d = np.roll(ring, -1, axis=0) - ring
    d /= np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-12)
    return np.column_stack([d[:, 1], -d[:, 0]])


def mitres(ring: np.ndarray) -> np.ndarray:
    """Per vertex the offset ``(n, 2)`` that moves both adjacent edges 1 m along their outward normals:
    ``(n0 + n1) / (1 + n0 . n1)``, clamped to :data:`MITRE_MAX` in length."""
    n1 = edge_normals(ring)
    n0 = np.roll(n1, 1, axis=0)
    m = (n0 + n1) / np.maximum(1.0 + np.einsum("ij,ij->i", n0, n1), 1e-6)[:, None]
    ln = np.linalg.norm(m, axis=1, keepdims=True)
    return m * np.minimum(1.0, MITRE_MAX / np.maximum(ln, 1e-12))


def offset_ring(ring: np.ndarray, d_m: float, mitre: np.ndarray | None = None) -> np.ndarray:
    """``ring`` with every edge moved ``d_m`` metres outward (negative: inward), corners mitred."""
    return ring + d_m * (mitres(ring) if mitre is None else mitre)


def folds(ring: np.ndarray, d_m: float) -> bool:
    """Whether offsetting by ``d_m`` turns an edge round (the offset is not a clean band)."""
    a = np.roll(ring, -1, axis=0) - ring
    o = offset_ring(ring, d_m)
    b = np.roll(o, -1, axis=0) - o
    return bool((np.einsum("ij,ij->i", a, b) <= 0).any())


def _vertical(ring, mit, nrm, d_m: float, z0: float, z1: float, facing: float = 1.0):
    """Quads ``(n, 4, 3)`` and normals ``(n, 3)`` of the band ``d_m`` out from the ring between ``z0`` and ``z1``
    (its normals ``facing`` times the edges' outward ones)."""
    a = ring + d_m * mit
    b = np.roll(a, -1, axis=0)
    z0a, z1a = np.full(len(a), z0), np.full(len(a), z1)
    q = np.stack([np.column_stack([a, z0a]), np.column_stack([b, z0a]), np.column_stack([b, z1a]),
                  np.column_stack([a, z1a])], axis=1)
    return q, np.column_stack([facing * nrm, np.zeros(len(a))])


def _horizontal(ring, mit, da: float, db: float, z: float, up: bool):
    """Quads ``(n, 4, 3)`` and normals of the flat band between offsets ``da`` and ``db`` at height ``z``."""
    a, b = ring + da * mit, ring + db * mit
    a1, b1 = np.roll(a, -1, axis=0), np.roll(b, -1, axis=0)
    zz = np.full(len(a), z)
    q = np.stack([np.column_stack([a, zz]), np.column_stack([a1, zz]), np.column_stack([b1, zz]),
                  np.column_stack([b, zz])], axis=1)
    return q, np.tile([0.0, 0.0, 1.0 if up else -1.0], (len(a), 1))


def _add(mb: MeshBuilder, parts, colour) -> None:
    """Append ``[(quads (n, 4, 3), normals (n, 3)), ...]`` in ``colour`` (0..1) to ``mb``, less the faces that look
    up from higher than :data:`STREET_EYE_MAX_M` (no street camera sees them)."""
    qs = [q for q, _ in parts if len(q)]
    if not qs:
        return
    q = np.concatenate(qs)
    n = np.concatenate([n for q_, n in parts if len(q_)])
    seen = ~((n[:, 2] > 0.5) & (q[:, :, 2].min(axis=1) > STREET_EYE_MAX_M))
    q, n = q[seen], n[seen]
    if not len(q):
        return
    tris = quad_tris(q)
    nt = np.concatenate([n, n])
    shade = np.where(nt[:, 2] < -0.5, SOFFIT_SHADE, 1.0).astype(np.float32)   # undersides: the overhang's shade
    col = np.repeat((np.asarray(colour, np.float32)[None, :] * shade[:, None])[:, None, :], 3, axis=1)
    mb.add(tris, col.reshape(-1, 3), normals=np.repeat(nt[:, None, :], 3, axis=1))


# ---------------------------------------------------------------------------------------------- glass
def wall_is_glass(b, wall_index: int) -> bool:
    """Whether the facade program draws wall ``wall_index`` of ``b`` (:func:`.layout.building_walls`'s index) as
    a glass curtain wall: its seeded material pick (``hf(rhash(seed, 3, 5), 0)``, or the tagged material's) at
    least 0.9 on a building at least 12 m tall (or tagged glass), not wood or metal (realistic_facade_glsl)."""
    from urbanarena.render.scene3d.building_look import MATERIAL_CODES, _hf, rhash, wall_seed

    mat = MATERIAL_CODES.get(b.material or "", 0)
    if mat in (6, 7):
        return False
    pick = {1: 0.15, 2: 0.45, 3: 0.7, 4: 0.8, 5: 0.95}.get(mat, _hf(rhash(wall_seed(b.id, wall_index), 3, 5), 0))
    return pick >= 0.9 and (float(b.height_m) >= 12.0 or mat == 5)


def glass_share(b) -> float:
    """Share of ``b``'s wall length that is glass curtain wall (:func:`wall_is_glass`)."""
    from urbanarena.render.scene3d.layout import building_walls

    walls = building_walls(b)
    total = sum(w.length_m for w in walls)
    return sum(w.length_m for w in walls if wall_is_glass(b, w.index)) / total if total > 0 else 0.0


# ---------------------------------------------------------------------------------------------- profile
def cornice_profile(b) -> list[tuple[float, float, float]]:
    """``[(z0_m, z1_m, projection_m), ...]`` of ``b``'s roof-edge band from the bottom (module docstring);
    empty for buildings lower than 1.5 m."""
    H = float(b.height_m)
    if H - float(b.base_m) < 1.5:
        return []
    if H < CORNICE_MIN_H_M or b.base_m > 0 or glass_share(b) > 0.5:
        lo, hi, d = COPING
        return [(H - lo, H - hi, d)]
    from urbanarena.render.scene3d.building_look import roof_geometry

    corona = CORONA_M[0] + (CORONA_M[1] - CORONA_M[0]) * stable_unit(b.id, "photo-corona")
    if roof_geometry(b) is not None:
        corona *= EAVES_SCALE
    return [(H - lo, H - hi, share * corona) for lo, hi, share in CORNICE_STEPS]


def profile_quads(ring: np.ndarray, steps) -> list:
    """The faces of a stepped band along ``ring``: per step its front, and where the projection changes the flat
    face between the two (underside where it grows upwards, top where it shrinks), from the wall (projection 0)
    under the first step to the wall over the last. ``[(quads, normals), ...]``."""
    mit, nrm = mitres(ring), edge_normals(ring)
    parts, below = [], 0.0
    for z0, z1, d in steps:
        if d != below:
            parts.append(_horizontal(ring, mit, min(d, below), max(d, below), z0, up=d < below))
        parts.append(_vertical(ring, mit, nrm, d, z0, z1))
        below = d
    if steps and below > 0:
        parts.append(_horizontal(ring, mit, 0.0, below, steps[-1][1], up=True))
    return parts


def wall_rgb(b, facades=None, feature: int = 0) -> np.ndarray:
    """The wall's colour (0..1): the mean of the building's facade vertex colours in ``facades`` (as the photo
    style paints them, :mod:`.photo_paint`) when given, else its tagged or seeded facade colour."""
    if facades is not None and facades.feature is not None and feature:
        sel = facades.feature == feature
        if sel.any():
            return facades.colours[sel].mean(axis=0).astype(np.float32)
    return _rgb(b.tagged_colour or (b.colour if b.colour is not None else facade_colour(b.id)))


# ------------------------------------------------------------------------------------------- roof boxes
def roof_boxes(b) -> list[tuple[np.ndarray, float, float, tuple]]:
    """``[(corners (4, 2), z0_m, z1_m, rgb), ...]``: chimney stacks and a machine room on ``b``'s flat roof,
    inside the footprint shrunk by :data:`ROOF_BOX_INSET_M` (module docstring); seeded, deterministic."""
    from urbanarena.render.scene3d.building_look import roof_geometry

    H = float(b.height_m)
    if H < ROOF_BOX_MIN_H_M or b.base_m > 0 or roof_geometry(b) is not None:
        return []
    poly = building_polygon(b)
    inner = poly.buffer(-ROOF_BOX_INSET_M - PARAPET_T_M, join_style=2)
    if inner.is_empty:
        return []
    rings = building_rings(b)
    e = np.roll(rings[0], -1, axis=0) - rings[0]
    k = int(np.argmax(np.linalg.norm(e, axis=1)))
    ang = math.degrees(math.atan2(e[k, 1], e[k, 0]))
    x0, y0, x1, y1 = inner.bounds
    wall = wall_rgb(b) * 255.0
    want = [("machine", 2.0 + 1.5 * stable_unit(b.id, "mr-w"), 2.0 + 1.0 * stable_unit(b.id, "mr-d"),
             1.8 + 0.8 * stable_unit(b.id, "mr-h"), tuple(int(c) for c in wall * 0.95))] \
        if stable_unit(b.id, "machine-room") < MACHINE_ROOM_SHARE else []
    chim = CHIMNEY_RGBS[stable_index(b.id, len(CHIMNEY_RGBS), "chimney-col")]
    for i in range(1 + stable_index(b.id, 4, "chimneys")):
        want.append(("chimney", 0.5 + 0.4 * stable_unit(b.id, f"ch-w{i}"), 0.5 + 0.5 * stable_unit(b.id, f"ch-d{i}"),
                     1.0 + 0.8 * stable_unit(b.id, f"ch-h{i}"), chim))
    out, taken = [], []
    for j, (name, w, d, h, col) in enumerate(want):
        for t in range(12):
            cx = x0 + (x1 - x0) * stable_unit(b.id, f"rb-x{j}-{t}")
            cy = y0 + (y1 - y0) * stable_unit(b.id, f"rb-y{j}-{t}")
            fp = rotate(sbox(cx - w / 2, cy - d / 2, cx + w / 2, cy + d / 2), ang, origin=(cx, cy))
            if inner.contains(fp) and not any(fp.distance(o) < 0.5 for o in taken):
                taken.append(fp)
                out.append((np.asarray(fp.exterior.coords)[:4, :2], H, H + h, col))
                break
    return out


def _box_quads(corners: np.ndarray, z0: float, z1: float) -> list:
    """Sides and top of the prism over ``corners`` (a ring of 4, either orientation) from ``z0`` to ``z1``."""
    ring = corners if Polygon(corners).exterior.is_ccw else corners[::-1]
    mit, nrm = mitres(ring), edge_normals(ring)
    top = np.array([[*ring[0], z1], [*ring[1], z1], [*ring[2], z1], [*ring[3], z1]])[None]
    return [_vertical(ring, mit, nrm, 0.0, z0, z1), (top, np.array([[0.0, 0.0, 1.0]]))]


# --------------------------------------------------------------------------------------------- balconies
def is_residential(b, shop: bool) -> bool:
    """Whether ``b`` is residential: tagged so (:data:`RESIDENTIAL`), or untagged, without a shopfront, at least
    :data:`BALCONY_MIN_H_M` tall, on :data:`INFERRED_SHARE` of them (seeded)."""
    if b.base_m > 0 or b.material == "glass" or float(b.height_m) < BALCONY_MIN_H_M:
        return False
    if (b.kind or "") in RESIDENTIAL:
        return True
    return b.kind in (None, "yes") and not shop and stable_unit(b.id, "photo-residential") < INFERRED_SHARE


def balconies(b, floor_h_m: float, ground_h_m: float) -> list[tuple[list, tuple]]:
    """``[(parts, rgb), ...]`` of ``b``'s balconies (module docstring), ``parts`` as in :func:`profile_quads`;
    empty for buildings without them."""
    from urbanarena.render.scene3d.building_look import storey_height_m, wall_seed, window_columns
    from urbanarena.render.scene3d.layout import building_walls

    H = float(b.height_m)
    fh = storey_height_m(b, ground_h_m) or floor_h_m
    g = ground_h_m if H > ground_h_m + 1.0 else 0.0
    slab_rgb = tuple(int(c) for c in wall_rgb(b) * 255 * 0.88)
    rail_rgb = RAIL_RGBS[stable_index(b.id, len(RAIL_RGBS), "photo-rail")]
    panel = stable_unit(b.id, "photo-balcony-panel") < PANEL_SHARE
    parity = stable_index(b.id, 2, "photo-balcony-parity")
    slabs, rails = [], []
    for w in building_walls(b):
        if (w.length_m < BALCONY_MIN_WALL_M or wall_is_glass(b, w.index)
                or stable_unit(f"{b.id}/{w.index}", "photo-balcony-wall") >= BALCONY_WALL_SHARE):
            continue
        win_w, cols = window_columns(wall_seed(b.id, w.index), w.length_m)
        p0, n = np.array(w.p0), np.array(w.normal)
        e = (np.array(w.p1) - p0) / w.length_m
        k = 1
        while g + (k + 1) * fh <= H - 1.0 + 1e-3:
            z = g + k * fh
            for i, u in enumerate(cols):
                if i % 2 != parity:
                    continue
                a, c = p0 + e * (u - win_w / 2 - 0.35), p0 + e * (u + win_w / 2 + 0.35)
                slabs += _slab(a, c, n, z)
                rails += _railing(a, c, n, z, panel)
            k += 1
    return [(slabs, slab_rgb), (rails, rail_rgb)]


def _slab(a: np.ndarray, c: np.ndarray, n: np.ndarray, z: float) -> list:
    """A balcony slab from wall point ``a`` to ``c`` (outward ``n``), top at ``z``: top, underside, front and the
    two ends (no face against the wall)."""
    ring = np.array([a, c, c + n * BALCONY_DEPTH_M, a + n * BALCONY_DEPTH_M])[::-1]   # counter-clockwise
    q, nr = _vertical(ring, mitres(ring), edge_normals(ring), 0.0, z - BALCONY_SLAB_M, z)
    keep = [0, 1, 3]   # ring edges: front, end at c, the wall (c -> a), end at a
    top = np.array([[*ring[0], z], [*ring[1], z], [*ring[2], z], [*ring[3], z]])
    under = top[::-1] - np.array([0.0, 0.0, BALCONY_SLAB_M])
    return [(q[keep], nr[keep]), (np.stack([top, under]), np.array([[0.0, 0.0, 1.0], [0.0, 0.0, -1.0]]))]


def _railing(a: np.ndarray, c: np.ndarray, n: np.ndarray, z: float, panel: bool) -> list:
    """The railing round a balcony slab from wall point ``a`` to ``c`` (outward ``n``) on floor height ``z``:
    three runs (side, front, side) of a solid panel, or of a handrail, bottom rail and bars."""
    D = BALCONY_DEPTH_M - 0.03
    runs = [(a, a + n * D), (a + n * D, c + n * D), (c + n * D, c)]
    parts = []
    for p, q in runs:
        L = float(np.hypot(*(q - p)))
        t = (q - p) / L
        out = np.array([t[1], -t[0], 0.0])   # the run's outward side (right of its direction, runs go clockwise)
        if panel:
            parts.append((np.array([[[*p, z], [*q, z], [*q, z + RAIL_H_M], [*p, z + RAIL_H_M]]]), out[None]))
            continue
        for z0, z1 in ((z + RAIL_H_M - 0.06, z + RAIL_H_M), (z + 0.08, z + 0.13)):
            parts.append((np.array([[[*p, z0], [*q, z0], [*q, z1], [*p, z1]]]), out[None]))
        top = z + RAIL_H_M
        w3 = np.array([t[1], -t[0]]) * 0.05
        parts.append((np.array([[[*p, top], [*q, top], [*(q - w3), top], [*(p - w3), top]]]),
                      np.array([[0.0, 0.0, 1.0]])))
        nb = max(1, int(L / BAR_STEP_M))
        s = (np.arange(nb) + 0.5) / nb * L
        b0 = p[None] + t[None] * (s[:, None] - BAR_W_M / 2)
        b1 = p[None] + t[None] * (s[:, None] + BAR_W_M / 2)
        zl, zh = np.full(nb, z + 0.13), np.full(nb, top - 0.06)
        q4 = np.stack([np.column_stack([b0, zl]), np.column_stack([b1, zl]), np.column_stack([b1, zh]),
                       np.column_stack([b0, zh])], axis=1)
        parts.append((q4, np.tile(out, (nb, 1))))
    return parts


# ---------------------------------------------------------------------------------------------- building
def building_detail(b, shop: bool, feature: int, mb: MeshBuilder, floor_h_m: float = 3.2,
                    ground_h_m: float = 3.6, facades=None, near: MeshBuilder | None = None) -> None:
    """Append ``b``'s cornice, parapet and roof boxes (module docstring) to ``mb`` and its plinth, downpipes and
    balconies to ``near`` (default: ``mb`` too), in feature index ``feature``; ``shop``: its ground floor is a
    shopfront; ``facades``: the scene's facade mesh (the wall colour, :func:`wall_rgb`)."""
    from urbanarena.render.scene3d.building_look import has_balconies, roof_geometry

    far = mb
    mb = near if near is not None else mb
    far.feature = mb.feature = feature
    H, base = float(b.height_m), float(b.base_m)
    wall = wall_rgb(b, facades, feature)
    rings = building_rings(b)
    steps = cornice_profile(b)
    if steps:
        tone = CORNICE_TONES[stable_index(b.id, len(CORNICE_TONES), "photo-cornice-tone")]
        glass = glass_share(b) > 0.5
        cor = _rgb(COPING_RGB) if glass else np.clip(wall * tone, 0.0, CORNICE_MAX)
        d_max = max(d for _, _, d in steps)
        for ring in rings:
            s = steps if not folds(ring, d_max) else [(z0, z1, min(d, 0.1)) for z0, z1, d in steps]
            if folds(ring, max(d for _, _, d in s)):
                continue
            _add(far, profile_quads(ring, s), cor)
        if roof_geometry(b) is None and H >= CORNICE_MIN_H_M and base == 0 and not glass:
            p = PARAPET_M[0] + (PARAPET_M[1] - PARAPET_M[0]) * stable_unit(b.id, "photo-parapet")
            for ring in rings:   # its outer face: the inner face and the coping look away from the street
                _add(far, [_vertical(ring, mitres(ring), edge_normals(ring), 0.0, H, H + p)], cor)
    for corners, z0, z1, col in roof_boxes(b):
        _add(far, _box_quads(corners, z0, z1), _rgb(col))
    if base > 0 or H < 2.5:
        return
    hp = SHOP_PLINTH_M if shop and H > ground_h_m + 1.0 else \
        PLINTH_M[0] + (PLINTH_M[1] - PLINTH_M[0]) * stable_unit(b.id, "photo-plinth")
    prgb = _rgb(PLINTH_RGBS[stable_index(b.id, len(PLINTH_RGBS), "photo-plinth-col")])
    for ring in rings:
        if folds(ring, PLINTH_PROUD_M):
            continue
        mit, nrm = mitres(ring), edge_normals(ring)
        _add(mb, [_vertical(ring, mit, nrm, PLINTH_PROUD_M, 0.0, hp),
                  _horizontal(ring, mit, 0.0, PLINTH_PROUD_M, hp, up=True)], prgb)
    if H >= DOWNPIPE_MIN_H_M and glass_share(b) <= 0.5:
        _add(mb, downpipes(b, rings[0], hp, steps[0][0] if steps else H), _rgb(
            DOWNPIPE_RGBS[stable_index(b.id, len(DOWNPIPE_RGBS), "photo-pipe-col")]))
    if is_residential(b, shop) and not has_balconies(b):
        for parts, col in balconies(b, floor_h_m, ground_h_m):
            _add(mb, parts, _rgb(col))


def downpipes(b, ring: np.ndarray, z0: float, z1: float) -> list:
    """Square pipes at :data:`DOWNPIPE_SHARE` of the convex corners of the exterior ``ring`` (walls at least
    6 m long on the chosen side), 0.35 m from the corner, :data:`DOWNPIPE_GAP_M` off the wall, ``z0`` to ``z1``."""
    parts = []
    n = len(ring)
    nrm = edge_normals(ring)
    for i in range(n):
        prev, nxt = ring[i] - ring[i - 1], ring[(i + 1) % n] - ring[i]
        if prev[0] * nxt[1] - prev[1] * nxt[0] <= 0 or stable_unit(f"{b.id}/{i}", "photo-downpipe") >= DOWNPIPE_SHARE:
            continue   # concave or straight corner, or none here
        side = stable_index(f"{b.id}/{i}", 2, "photo-downpipe-side")
        wall, k = (nxt, i) if side else (-prev, i - 1)
        if np.hypot(*wall) < 6.0:
            continue
        t = wall / np.hypot(*wall)
        c = ring[i] + t * 0.35 + nrm[k % n] * (DOWNPIPE_GAP_M + DOWNPIPE_W_M / 2)
        h = DOWNPIPE_W_M / 2
        sq = np.array([c + (-t - nrm[k % n]) * h, c + (t - nrm[k % n]) * h, c + (t + nrm[k % n]) * h,
                       c + (-t + nrm[k % n]) * h])
        ring4 = sq if Polygon(sq).exterior.is_ccw else sq[::-1]
        parts.append(_vertical(ring4, mitres(ring4), edge_normals(ring4), 0.0, z0, z1))
    return parts


def detail_meshes(scene, features, shop_buildings: set[str], floor_h_m: float = 3.2, ground_h_m: float = 3.6,
                  facades=None) -> tuple:
    """``(far, near)`` :class:`~.mesh_primitives.MeshData` of every building's details (vertex colours 0..1, each
    building's feature index from ``features``: :attr:`.meshes.SceneMeshes.features`): cornices, parapets and roof
    boxes, drawn at every distance; plinths, downpipes and balconies, drawn within :data:`NEAR_M`."""
    index = {fid: k for k, (kind, fid) in enumerate(features, 1) if kind == "building"}
    far, near = MeshBuilder(), MeshBuilder()
    for b in scene.buildings:
        building_detail(b, b.shopfront or b.id in shop_buildings, index.get(b.id, 0), far, floor_h_m, ground_h_m,
                        facades, near=near)
    far.feature = near.feature = 0
    return far.build(), near.build()


def with_building_detail(meshes, scene, floor_h_m: float = 3.2, ground_h_m: float = 3.6) -> list:
    """``[(mesh, draw distance m), ...]``: :func:`detail_meshes`'s far part drawn within :data:`FAR_M`, its near part
    within :data:`NEAR_M` (``meshes``: :class:`~.meshes.SceneMeshes`, unchanged)."""
    shop = {s.building_id for s in meshes.placements if s.building_id is not None}
    far, near = detail_meshes(scene, meshes.features, shop, floor_h_m, ground_h_m, meshes.facades)
    return [(far, FAR_M), (near, NEAR_M)]
