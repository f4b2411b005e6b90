"""The ``photo`` style's grass verges (issue 24, items 2 and 3: "real grass, wildflowers"): unmown strips of grass
with seed heads and wildflowers on the free ground just past the sidewalk (or beside a path), where the street side
is not a hedge (:mod:`.photo_greenery`). Drawn with the photo trees' atlas and program (:mod:`.trees_photo`).

**Plan** (:func:`plan_verges`; every choice a hash, same scene -> same verges):

* a street side's :data:`.photo_placement.SEGMENT_M` piece carries a verge when it is no hedge (the greenery's own
  piece draw) and a second draw (key ``road/side/piece``, salt ``verge``) is below :data:`VERGE_SHARE`;
* the verge band runs from :func:`verge_band_m` ``inner`` to ``outer`` sideways of the centreline; it is cut into
  :data:`ROWS` rows and sampled every :data:`STEP_M` along each; a sample jitters by up to +-0.4 of the step along
  and +-0.3 of a row across (:func:`hash_u`, an integer hash of road, side, row and sample), and is kept where
  :meth:`.photo_placement.FreeGround.free` holds with :data:`TUFT_R_M`;
* every kept sample is a grass tuft (width 0.5-0.8 m, height 0.45-0.9 m, to 1.15 m on a wilder street side;
  :data:`FLOWER_SHARE` of them also a wildflower cluster); at every :data:`MAT_EVERY`-th sample of the first row
  a ground mat (a flat :data:`MAT_ALONG_M` x :data:`MAT_ACROSS_M` quad centred on the band's middle line, where
  that centre is free with :data:`MAT_R_M`), so that the grass stands on green ground, not on the paving.

*Lawn edges*: OSM ``park`` and ``grass`` areas get one row of the same grass (and flowers, no mats: the lawn
material is green) every :data:`STEP_M` along their outline, :data:`EDGE_IN_M` inside it, jittered along only,
where free and inside the area.

**Level of detail**: the share :data:`FAR_SHARE` of the tufts (by a hash) is in a *mid* array of
:data:`MID_TILE_M` tiles drawn within :data:`MID_DISTANCE_M` (so about 35-65 m); the other tufts, the flowers and the mats
are in a *detail* array of :data:`DETAIL_TILE_M` tiles drawn only within :data:`DETAIL_DISTANCE_M` (about 12-22 m): the
grass thins to :data:`FAR_SHARE` of its density with distance and ends where it would be a few pixels, instead of
paying for every blade to the greenery's 120 m (:func:`.photo_greenery.verge_arrays`).
"""

from __future__ import annotations

import numpy as np
import shapely
from shapely.geometry import Polygon

from urbanarena.render.scene3d.photo_placement import HEDGE_SHARE, SEGMENT_M, FreeGround, line_samples, unit

#: share of non-hedge street pieces that carry a verge
VERGE_SHARE = 0.55
#: verge band width (m) and its start past the sidewalk (or past a path's edge)
VERGE_WIDTH_M, VERGE_GAP_M = 1.3, 0.08
ROWS, STEP_M = 2, 0.65
TUFT_R_M = 0.06
#: lawn edges: the row of grass stands this far (m) inside a park's or lawn's outline
EDGE_IN_M = 0.35
FLOWER_SHARE = 0.16
MAT_EVERY = 1
#: a mat's centre keeps this far (m) from walking surfaces, walk lines and walls
MAT_R_M = 0.3
#: a mat's size along the street and across it (m)
MAT_ALONG_M, MAT_ACROSS_M = 0.85, VERGE_WIDTH_M
#: share of the tufts kept beyond the detail distance
FAR_SHARE = 0.2
#: the detail array: tile size and draw distance (m from the tile's nearest point)
DETAIL_TILE_M, DETAIL_DISTANCE_M = 10.0, 12.0
#: the mid array (the far share of the grass): tile size and draw distance (m)
MID_TILE_M, MID_DISTANCE_M = 20.0, 35.0

_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def hash_u(seed: int, *ints: np.ndarray) -> np.ndarray:
    """Numbers in ``[0, 1)`` (float64, the broadcast shape of ``ints``) fixed by an integer ``seed`` and integer
    arrays ``ints``: a splitmix64 finaliser folded over them (deterministic across runs and machines)."""
    with np.errstate(over="ignore"):
        h = np.full(np.broadcast(*ints).shape if ints else (), np.uint64(seed & 0xFFFFFFFFFFFFFFFF), np.uint64)
        for a in ints:
            h = h ^ (np.asarray(a).astype(np.int64).astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
                     + (h << np.uint64(6)) + (h >> np.uint64(2)))
            h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            h = h ^ (h >> np.uint64(31))
    return (h >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def verge_band_m(road) -> tuple[float, float]:
    """``(inner_m, outer_m)``: sideways distances from ``road``'s centreline between which its verge lies: from
    :data:`VERGE_GAP_M` past its sidewalk's outer edge (a path: past its own edge) for :data:`VERGE_WIDTH_M`."""
    inner = road.width_m / 2 + max(road.sidewalk_m, 0.0) + VERGE_GAP_M
    return inner, inner + VERGE_WIDTH_M


def plan_verges(scene, ground: FreeGround | None = None) -> dict[str, np.ndarray]:
    """The verges of ``scene`` (module docstring): ``{"grass": (K, 6) x_m, y_m, width_m, height_m, turn_rad,
    far (1.0 when also drawn beyond the detail distance); "flower": (K, 5) x_m, y_m, size_m, turn_rad, colour
    (0 yellow, 1 white, 2 purple); "mat": (K, 3) x_m, y_m, bearing_rad}``; deterministic."""

    g = ground or FreeGround(scene)
    rows = []   # per road side and row: (xy, unjittered xy, h (K, 8), k, bearing, across, j, bushy, row_m)
    for r in scene.roads:
        inner, outer = verge_band_m(r)
        row_m = (outer - inner) / ROWS
        hedge_share = HEDGE_SHARE * (0.6 if r.kind != "road" else 1.0)
        for side in (1, -1):
            seed = int(unit(f"{r.id}/{side}", "verge-seed") * 2**62)
            bushy = unit(f"{r.id}/{side}", "verge-tall") * 0.25   # per street side: taller, wilder grass
            ok_piece: dict[int, bool] = {}
            for j in range(ROWS):
                d = inner + (j + 0.5) * row_m
                pts = line_samples(r.centreline, STEP_M, side * d, 0.5 * STEP_M * (j % 2))
                if not len(pts):
                    continue
                piece = np.floor(pts[:, 3] / SEGMENT_M).astype(int)
                for p in np.unique(piece):
                    if p not in ok_piece:
                        ok_piece[p] = (unit(f"{r.id}/{side}/{p}", "green-piece") >= hedge_share
                                       and unit(f"{r.id}/{side}/{p}", "verge") < VERGE_SHARE)
                keep = np.array([ok_piece[p] for p in piece])
                if not keep.any():
                    continue
                pts = pts[keep]
                k = np.round((pts[:, 3] - 0.5 * STEP_M * (j % 2)) / STEP_M).astype(np.int64)
                h = hash_u(seed, np.int64(j), k[:, None], np.arange(8)[None, :])
                along = np.column_stack([np.cos(pts[:, 2]), np.sin(pts[:, 2])])
                across = np.column_stack([-along[:, 1], along[:, 0]]) * side
                xy = (pts[:, :2] + along * ((h[:, 0] - 0.5) * 0.8 * STEP_M)[:, None]
                      + across * ((h[:, 1] - 0.5) * 0.6 * row_m)[:, None])
                rows.append((xy, pts[:, :2], h, k, pts[:, 2], across, j, bushy, row_m))
    for a in scene.land_areas:   # lawn edges: one row of unmown grass just inside a park's or lawn's outline
        if a.kind not in ("park", "grass"):
            continue
        ring = shapely.geometry.polygon.orient(Polygon(a.polygon), 1.0).exterior.coords   # counter-clockwise
        pts = line_samples(ring, STEP_M, EDGE_IN_M, 0.0)   # left of a counter-clockwise ring is inside
        if not len(pts):
            continue
        k = np.arange(len(pts), dtype=np.int64)
        h = hash_u(int(unit(a.id, "lawn-edge") * 2**62), np.int64(0), k[:, None], np.arange(8)[None, :])
        along = np.column_stack([np.cos(pts[:, 2]), np.sin(pts[:, 2])])
        across = np.column_stack([-along[:, 1], along[:, 0]])
        xy = pts[:, :2] + along * ((h[:, 0] - 0.5) * 0.8 * STEP_M)[:, None]
        inside = shapely.contains_xy(Polygon(a.polygon, a.holes), xy[:, 0], xy[:, 1])   # not jittered past a corner
        xy, pts, h, k, across = xy[inside], pts[inside], h[inside], k[inside], across[inside]
        rows.append((xy, pts[:, :2], h, k, pts[:, 2], across, 1, 0.1, 0.5))   # j = 1: no mats (the lawn is green)
    if not rows:
        return {"grass": np.zeros((0, 6)), "flower": np.zeros((0, 5)), "mat": np.zeros((0, 3))}
    # one free-ground test for all tufts, one for all mats (the same answers as row by row, far fewer calls)
    free_all = g.free(np.concatenate([x[0] for x in rows]), TUFT_R_M)
    cuts = np.cumsum([len(x[0]) for x in rows])[:-1]
    grass, flowers, mats, mids = [], [], [], []
    for (xy, base, h, k, bearing, across, j, bushy, row_m), free in zip(rows, np.split(free_all, cuts)):
        xy, base, h, k, bearing, across = xy[free], base[free], h[free], k[free], bearing[free], across[free]
        if not len(xy):
            continue
        grass.append(np.column_stack([xy, 0.5 + 0.3 * h[:, 2], 0.45 + (0.45 + bushy) * h[:, 3] ** 0.7,
                                      2 * np.pi * h[:, 4], (h[:, 5] < FAR_SHARE).astype(np.float64)]))
        fl = h[:, 6] < FLOWER_SHARE
        if fl.any():
            colour = np.floor(3 * h[fl, 7]).clip(0, 2)
            flowers.append(np.column_stack([xy[fl], 0.3 + 0.35 * h[fl, 2], 2 * np.pi * h[fl, 5], colour]))
        if j == 0:   # a mat on the band's middle line at every sample of the first row (its unjittered point)
            m = k % MAT_EVERY == 0
            mids.append(np.column_stack([base[m] + across[m] * (0.5 * row_m), bearing[m]]))
    if mids:
        mids_all = np.concatenate(mids)
        mats.append(mids_all[g.free(mids_all[:, :2], MAT_R_M)])

    def cat(parts, w):
        return np.concatenate(parts) if parts else np.zeros((0, w))

    return {"grass": cat(grass, 6), "flower": cat(flowers, 5), "mat": cat(mats, 3)}


__all__ = ["DETAIL_DISTANCE_M", "DETAIL_TILE_M", "FAR_SHARE", "FLOWER_SHARE", "MID_DISTANCE_M", "MID_TILE_M",
           "VERGE_SHARE", "hash_u", "plan_verges", "verge_band_m"]
