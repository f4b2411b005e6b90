"""The ``photo`` style's seeded greenery (issue 24, tells "leaf-card trees", "bare paved plazas"): trees along
streets and in green areas where OSM maps none, hedges and bushes on the free ground beside sidewalks and paths,
and grass tufts along kerbs and wall bases. Everything is drawn with the photo trees' atlas and program
(:mod:`.trees_photo`), in the foliage mesh; nothing here collides (:mod:`.photo_placement`).

**Plan** (:func:`plan_greenery`; every choice a hash of a key, :func:`.photo_placement.unit`):

* *street sides*: each road's centreline is sampled on both sides (:func:`.photo_placement.line_samples`) at
  :func:`edge_offset_m` (beyond the sidewalk, or beyond the path); the side is cut into :data:`SEGMENT_M`
  pieces, each (key ``road/side/piece``) a hedge (:data:`HEDGE_SHARE`), a row of bushes (up to
  :data:`BUSH_SHARE`) or bare. Hedge cells every metre on free ground (radius 0.45 m), height per piece
  ``0.8 + 0.9 u`` m; bushes every 3 m with probability 0.6. Trees every :data:`TREE_STEP_M` m, 1.6 m
  further out, probability 0.3 (0.15 along paths), free with 2.5 m from buildings and :data:`TREE_SPACING_M` from any tree.
* *green areas* (:class:`~.scene.LandArea`): ``park``/``grass`` get one tree candidate per 14/22 m grid cell
  (jittered, probability 0.35), ``planting`` one bush per 2.8 m cell (0.7); grass tufts every 3 m cell (0.25).
* *tufts*: on the sidewalk 0.22 m from the kerb and 0.15 m in front of its back edge (slots every 1.7 m, each
  moved up to 0.7 m along and 0.05 m across; in patches: a third of the 12 m stretches are weedy, a slot there
  holds a tuft with probability 0.7, elsewhere 0.08; 0.16-0.42 m tall, smaller than the others), and 0.15 m out
  from building walls (every 1.8 m, 0.35).

**Meshes** (:func:`greenery_mesh`): per kind a few seeded templates (leaf cards of the atlas, :func:`.trees_photo
.card`, showing the dense middle of the photo) instanced by a turn, a per-axis scale and a per-instance brightness:
a *hedge cell* (1 m long, unit height and depth) is 14 cards (five staggered on each long side leaning outward, two
over the top, two sprigs out of the top) around a dark core (two long sides and the top of a box, a bark cell
tinted dark green: the hedge's shadowed inside, showing between the cards as deep gaps) on a dark soil strip, a
*bush* 22 cards on an ellipsoid around a dark core box on a soil disc, a *tuft* three crossed cards of the pine
(grass) or ash (weed) cut-out, tinted yellow-green. Every card has its own tone (some yellowing, some old and
dark) and a scattered normal, cards deeper inside are darker (:mod:`.photo_plant_tone`); hedges and bushes are
darker low down (per corner). Trees use :func:`.trees_photo.tree_mesh`
(feature 0). The grass verges are :mod:`.photo_verges` (drawn as :func:`verge_arrays`).
"""

from __future__ import annotations

import math
import threading

import numpy as np
import shapely
from shapely.geometry import Polygon

from urbanarena.render.scene3d.photo_placement import (BUSH_SHARE, HEDGE_SHARE, SEGMENT_M,  # noqa: F401 (re-exported)
                                                       FreeGround, line_samples, spaced, unit)

#: bumped whenever the greenery's plan or meshes change pixels (part of the photo render identity)
GREENERY_VERSION = "photo-greenery-5"
#: kerb and sidewalk-edge weeds grow in patches (ours): the street side is cut into PATCH_M stretches, a share
#: PATCH_SHARE of them weedy, where a 1.7 m slot holds a tuft with probability TUFT_IN_PATCH, elsewhere
#: TUFT_OUTSIDE; each moved up to KERB_JITTER_M (along, across) and KERB_TUFT_M (base, spread) in size (m)
PATCH_M = 12.0
PATCH_SHARE = 0.35
TUFT_IN_PATCH, TUFT_OUTSIDE = 0.7, 0.08
KERB_JITTER_M = (0.7, 0.05)
KERB_TUFT_M = (0.16, 0.26)
#: off: the photo style draws none of it (tests compare the trees or the people alone)
ENABLED = True
#: off: no grass verges (:mod:`.photo_verges`; benchmarks compare with and without)
VERGES = True
TREE_STEP_M, TREE_SPACING_M = 16.0, 7.0
TEMPLATES = 3
#: seeded trees, hedges, bushes and tufts are drawn in ground tiles up to this far (m; OSM trees to 200 m)
SMALL_DISTANCE_M = 120.0
#: hedges, bushes and tufts are drawn whole in ground tiles nearer than this (m); tiles farther off draw the far
#: level (:func:`.photo_greenery_mesh.greenery_mesh` ``far``: fewer cards, no tufts) out to SMALL_DISTANCE_M
FAR_FROM_M = 35.0
#: ground tiles (m) the seeded greenery's arrays are grouped by (finer than the scene's: the level switches per tile)
GREEN_TILE_M = 20.0


def edge_offset_m(road) -> float:
    """Sideways distance (m) from a road's centreline to the middle of its hedge line: half its width, its
    sidewalk and 0.55 m (a hedge's half depth 0.35 m plus a 0.2 m gap) for carriageways with sidewalks,
    0.9 m past the edge otherwise."""
    return road.width_m / 2 + (road.sidewalk_m + 0.55 if road.sidewalk_m > 0 else 0.9)


def _draw(keys, salt: str) -> np.ndarray:
    return np.array([unit(k, salt) for k in keys], np.float64)


def plan_greenery(scene, ground: FreeGround | None = None) -> dict[str, np.ndarray]:
    """The seeded greenery of ``scene`` (module docstring): ``{"tree": (K, 2) x_m, y_m; "hedge": (K, 5) x_m, y_m,
    bearing_rad, height_m, depth_m; "bush": (K, 4) x_m, y_m, size_m, turn_rad; "tuft": (K, 4) x_m, y_m,
    size_m, turn_rad}``; deterministic."""
    g = ground or FreeGround(scene)
    trees, hedges, bushes, tufts = [], [], [], []
    for r in scene.roads:
        off = edge_offset_m(r)
        foot = r.kind != "road"
        for side in (1, -1):
            pts = line_samples(r.centreline, 1.0, side * off, 0.5)
            if not len(pts):
                continue
            piece = np.floor(pts[:, 3] / SEGMENT_M).astype(int)
            us = {p: unit(f"{r.id}/{side}/{p}", "green-piece") for p in np.unique(piece)}
            u = np.array([us[p] for p in piece])
            hedge_share = HEDGE_SHARE * (0.6 if foot else 1.0)
            is_h = u < hedge_share
            if is_h.any():
                h = pts[is_h]
                ok = g.free(h[:, :2], 0.45)
                hh = 0.8 + 0.9 * (u[is_h][ok] / hedge_share)
                hedges.append(np.column_stack([h[ok, :3], hh, np.full(ok.sum(), 0.7)]))
            is_b = (u >= hedge_share) & (u < BUSH_SHARE) & (np.round(pts[:, 3] - 0.5) % 3 == 0)
            if is_b.any():
                b = pts[is_b]
                keys = [f"{r.id}/{side}/{s:.0f}" for s in b[:, 3]]
                ok = (_draw(keys, "green-bush") < 0.6) & g.free(b[:, :2], 0.5)
                sz = 0.7 + 0.8 * _draw(keys, "green-bush-size")
                bushes.append(np.column_stack([b[ok, :2], sz[ok], 2 * math.pi * _draw(keys, "green-turn")[ok]]))
            t = line_samples(r.centreline, TREE_STEP_M, side * (off + 1.6), 6.0)
            if len(t):
                keys = [f"{r.id}/{side}/{s:.0f}" for s in t[:, 3]]
                ok = (_draw(keys, "green-tree") < (0.15 if foot else 0.3)) & g.free(t[:, :2], 0.8, 2.5)
                trees.append(t[ok, :2])
        if r.kind == "road" and r.sidewalk_m > 0:
            for side in (1, -1):
                for d, salt in ((r.width_m / 2 + 0.22, "kerb"), (r.width_m / 2 + r.sidewalk_m - 0.15, "back")):
                    t = line_samples(r.centreline, 1.7, side * d, 0.4)
                    if len(t):
                        keys = [f"{r.id}/{side}/{salt}/{s:.1f}" for s in t[:, 3]]
                        t = _kerb_jitter(t, keys)
                        weedy = _draw([f"{r.id}/{side}/{salt}/{s // PATCH_M:.0f}" for s in t[:, 3]], "green-patch")
                        p = np.where(weedy < PATCH_SHARE, TUFT_IN_PATCH, TUFT_OUTSIDE)
                        ok = (_draw(keys, "green-tuft") < p) & g.kerb_ok(t[:, :2], 0.12)
                        tufts.append(_tuft_rows(t[ok, :2], np.asarray(keys)[ok], KERB_TUFT_M))
    for b in scene.buildings:
        ring = shapely.geometry.polygon.orient(Polygon(b.footprint), 1.0).exterior.coords
        t = line_samples(ring, 1.8, -0.15, 0.6)
        if len(t):
            keys = [f"{b.id}/{s:.1f}" for s in t[:, 3]]
            ok = _draw(keys, "green-wall") < 0.35
            ok[ok] &= ~g._near(g.buildings, t[ok, :2], 0.0) & ~g.near_lines(t[ok, :2], 1.5)
            tufts.append(_tuft_rows(t[ok, :2], np.asarray(keys)[ok]))
    for a in scene.land_areas:
        _plan_area(a, g, trees, bushes, tufts)
    existing = np.array([(o.x_m, o.y_m) for o in scene.objects if o.kind == "tree"]).reshape(-1, 2)
    tr = np.concatenate(trees) if trees else np.zeros((0, 2))
    tr = tr[spaced(tr, TREE_SPACING_M, existing)]

    def cat(parts, w):
        return np.concatenate(parts) if parts else np.zeros((0, w))

    return {"tree": tr, "hedge": cat(hedges, 5), "bush": cat(bushes, 4), "tuft": cat(tufts, 4)}


def _kerb_jitter(t: np.ndarray, keys) -> np.ndarray:
    """Line samples ``t`` (:func:`.photo_placement.line_samples` rows) moved along their line by up to
    ``±`` :data:`KERB_JITTER_M` (``[0]``) and across it by up to ``±`` ``[1]`` (seeded by ``keys``), so that kerb
    weeds do not stand at exact intervals on one line."""
    if not len(t):
        return t
    along = (2.0 * _draw(keys, "green-tuft-along") - 1.0) * KERB_JITTER_M[0]
    across = (2.0 * _draw(keys, "green-tuft-across") - 1.0) * KERB_JITTER_M[1]
    u = np.column_stack([np.cos(t[:, 2]), np.sin(t[:, 2])])
    out = t.copy()
    out[:, :2] = t[:, :2] + along[:, None] * u + across[:, None] * np.column_stack([-u[:, 1], u[:, 0]])
    out[:, 3] = t[:, 3] + along
    return out


def _tuft_rows(xy: np.ndarray, keys, size_m: tuple[float, float] = (0.28, 0.3)) -> np.ndarray:
    return np.column_stack([xy, size_m[0] + size_m[1] * _draw(keys, "green-tuft-size"),
                            2 * math.pi * _draw(keys, "green-tuft-turn")]) if len(xy) else np.zeros((0, 4))


def _grid(poly, cell_m: float, salt: str, aid: str) -> tuple[np.ndarray, list[str]]:
    x0, y0, x1, y1 = poly.bounds
    gx = np.arange(math.floor(x0 / cell_m), math.floor(x1 / cell_m) + 1)
    gy = np.arange(math.floor(y0 / cell_m), math.floor(y1 / cell_m) + 1)
    if len(gx) * len(gy) > 40000:
        return np.zeros((0, 2)), []
    cx, cy = (a.ravel() for a in np.meshgrid(gx, gy))
    keys = [f"{aid}/{i}/{j}" for i, j in zip(cx, cy)]
    pts = np.column_stack([(cx + _draw(keys, salt + "x")) * cell_m, (cy + _draw(keys, salt + "y")) * cell_m])
    inside = shapely.contains_xy(poly, pts[:, 0], pts[:, 1])
    return pts[inside], [k for k, i in zip(keys, inside) if i]


def _plan_area(a, g: FreeGround, trees, bushes, tufts) -> None:
    poly = Polygon(a.polygon, a.holes)
    poly = poly if poly.is_valid else shapely.make_valid(poly)
    shapely.prepare(poly)
    if a.kind in ("park", "grass"):
        pts, keys = _grid(poly, 14.0 if a.kind == "park" else 22.0, "area-tree", a.id)
        if len(pts):
            ok = (_draw(keys, "area-tree") < 0.35) & g.free(pts, 0.8, 2.5)
            trees.append(pts[ok])
        pts, keys = _grid(poly, 3.0, "area-tuft", a.id)
        if len(pts):
            ok = (_draw(keys, "area-tuft") < 0.25) & g.free(pts, 0.15)
            tufts.append(_tuft_rows(pts[ok], np.asarray(keys)[ok]))
    else:
        pts, keys = _grid(poly, 2.8, "area-bush", a.id)
        if len(pts):
            ok = (_draw(keys, "area-bush") < 0.7) & g.free(pts, 0.4)
            sz = 0.6 + 0.7 * _draw(keys, "area-bush-size")
            bushes.append(np.column_stack([pts[ok], sz[ok], 2 * math.pi * _draw(keys, "area-turn")[ok]]))


from urbanarena.render.scene3d.photo_greenery_mesh import greenery_mesh, greenery_templates  # noqa: E402

_PLANS: dict = {}
_PLAN_LOCK = threading.Lock()


def _cached(scene, what: str, build):
    key = (scene.content_hash(), what)
    with _PLAN_LOCK:
        if key in _PLANS:
            return _PLANS[key]
    from urbanarena.render.scene3d.photo_placement import ground_for

    plan = build(scene, ground_for(scene))
    with _PLAN_LOCK:
        _PLANS[key] = plan
        while len(_PLANS) > 8:
            _PLANS.pop(next(iter(_PLANS)))
    return plan


def plan_for(scene) -> dict[str, np.ndarray]:
    """:func:`plan_greenery` of ``scene``, kept per scene content hash (the last four scenes)."""
    return _cached(scene, "greenery", plan_greenery)


def verges_for(scene) -> dict[str, np.ndarray]:
    """:func:`.photo_verges.plan_verges` of ``scene``, kept like :func:`plan_for`."""
    from urbanarena.render.scene3d.photo_verges import plan_verges

    return _cached(scene, "verges", plan_verges)


def with_greenery(meshes, scene, kit):
    """``(meshes, seeded)``: ``meshes`` unchanged and the seeded trees, hedges, bushes and tufts of ``scene``
    (:func:`greenery_mesh`, feature 0) as ``[(mesh, from_m, to_m)]``, non-empty meshes only, that the renderer
    draws with the tree program in the ground tiles whose nearest point is ``from_m`` (exclusive; 0: none) to
    ``to_m`` m from the eye: the trees to :data:`SMALL_DISTANCE_M`, the hedges, bushes and tufts whole to
    :data:`FAR_FROM_M` and their far level from there to :data:`SMALL_DISTANCE_M` (not in the ID pass: they hide
    no feature from visibility counts). A far tile's cards are a subset of its near tile's (the same triangles
    in the same tiles), so a tile on the boundary drawn at both levels shows the near level's pixels."""
    plan = plan_for(scene)
    trees, small = greenery_mesh(plan, kit)
    _, far = greenery_mesh(plan, kit, far=True)
    out = [(trees, 0.0, SMALL_DISTANCE_M), (small, 0.0, FAR_FROM_M), (far, FAR_FROM_M, SMALL_DISTANCE_M)]
    return meshes, [t for t in out if t[0].n_triangles]


def verge_arrays(scene) -> list:
    """The verges of ``scene`` (:mod:`.photo_verges`) as ``[(mesh, tile_m, distance_m)]``: the mats and a share
    of the grass (:func:`.photo_verges_mesh.verge_mesh`'s first mesh) in :data:`.photo_verges.MID_TILE_M` tiles
    drawn within :data:`.photo_verges.MID_DISTANCE_M`, the rest of the grass and the flowers in
    :data:`.photo_verges.DETAIL_TILE_M` tiles within :data:`.photo_verges.DETAIL_DISTANCE_M`; empty meshes left
    out, ``[]`` when verges are off."""
    if not VERGES:
        return []
    from urbanarena.render.scene3d import photo_verges as PV
    from urbanarena.render.scene3d.photo_verges_mesh import verge_mesh

    mid, det = verge_mesh(verges_for(scene))
    return [(m, t, d) for m, t, d in ((mid, PV.MID_TILE_M, PV.MID_DISTANCE_M),
                                      (det, PV.DETAIL_TILE_M, PV.DETAIL_DISTANCE_M)) if m.n_triangles]


__all__ = ["FAR_FROM_M", "GREEN_TILE_M", "GREENERY_VERSION", "edge_offset_m", "greenery_mesh", "greenery_templates", "plan_for",
           "plan_greenery", "verge_arrays", "verges_for", "with_greenery"]
