"""Where the ``photo`` style's seeded greenery and street clutter may stand (issue 24, tells "leaf-card trees",
"no clutter"): the ground left free by streets, walking surfaces and buildings, and the rule that keeps every
seeded thing off the walkable network's path centres.

* **Walk lines** are the centrelines of every :class:`~.scene.Road` (carriageways, footways, pedestrian
  streets): the continuous environment's walk network and the passages that its collision code
  (:mod:`urbanarena.env.continuous.collision`) keeps open around them, ``passage_half_width_m`` = 1.5 m.
  Nothing seeded here stands within :data:`CLEAR_M` (that half-width) plus its own radius of a walk line.
  Seeded things are drawn only: they are not in the annotations, so first-person movement never collides
  with them (tagged objects keep their collision discs).
* **Free ground** (:meth:`FreeGround.free`): a point whose disc of radius ``r`` touches no walking surface
  (:func:`.realistic._walk_all`: carriageways with sidewalks, footways, paved areas; and tram track beds,
  :data:`RAIL_CLEAR_M` either side of a rail line) and no building
  footprint, and keeps :data:`CLEAR_M` + ``r`` from every walk line.
* **Kerb ground** (:meth:`FreeGround.kerb_ok`): a point on a sidewalk (inside the walking surfaces), off
  every carriageway by ``r``, off buildings, and :data:`CLEAR_M` + ``r`` from every walk line.
* **Line samples** (:func:`line_samples`): points every ``step_m`` along a polyline, shifted sideways by
  ``offset_m`` (positive: to the left of the direction of travel), with the tangent bearing.

Everything is a pure function of the scene (no randomness beyond :func:`unit`, a hash of a key).
"""

from __future__ import annotations

import hashlib
import math
import threading

import numpy as np
import shapely
from shapely.geometry import LineString, Polygon

#: half-width (m) kept free around every walk line (the collision code's ``passage_half_width_m``)
CLEAR_M = 1.5
#: half-width (m) of a tram track's bed, kept free like a walking surface
RAIL_CLEAR_M = 1.6
#: a street side is cut into pieces of this length (m); the shares of pieces that hold a hedge or a row of
#: bushes (:mod:`.photo_greenery`; :mod:`.photo_verges` puts its verges on the pieces without a hedge)
SEGMENT_M = 12.0
HEDGE_SHARE, BUSH_SHARE = 0.22, 0.45


def unit(key: str, salt: str) -> float:
    """A number in ``[0, 1)`` fixed by ``key`` and ``salt`` (SHA-256; the same as :func:`.palette.stable_unit`)."""
    h = hashlib.sha256(f"{salt}\x00{key}".encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big") / 2.0**64


def line_samples(xy, step_m: float, offset_m: float = 0.0, start_m: float = 0.0) -> np.ndarray:
    """Points along the polyline ``xy`` (``(N, 2)`` metres, N >= 2) at arc lengths ``start_m, start_m +
    step_m, ...`` (up to its length), each moved ``offset_m`` to the left of its segment's direction:
    ``(K, 4)`` rows ``(x_m, y_m, bearing_rad, s_m)`` with ``bearing_rad`` the segment's direction
    (``atan2(dy, dx)``, counter-clockwise from east) and ``s_m`` the arc length. Zero-length segments are
    skipped; an empty ``(0, 4)`` array when nothing fits."""
    p = np.asarray(xy, np.float64)
    d = np.diff(p, axis=0)
    seg = np.hypot(d[:, 0], d[:, 1])
    keep = seg > 1e-9
    p0, d, seg = p[:-1][keep], d[keep], seg[keep]
    if not len(seg) or step_m <= 0:
        return np.zeros((0, 4))
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    s = np.arange(start_m, cum[-1] + 1e-9, step_m)
    if not len(s):
        return np.zeros((0, 4))
    k = np.clip(np.searchsorted(cum, s, side="right") - 1, 0, len(seg) - 1)
    t = (s - cum[k]) / seg[k]
    u = d[k] / seg[k, None]
    pts = p0[k] + d[k] * t[:, None] + offset_m * np.stack([-u[:, 1], u[:, 0]], axis=1)
    return np.column_stack([pts, np.arctan2(u[:, 1], u[:, 0]), s])


def line_normal_at(line: LineString, point) -> tuple[np.ndarray, np.ndarray]:
    """``(c, left)``: the nearest point ``c`` ``(2,)`` of ``line`` (metres) to ``point`` (a shapely point) and the
    unit left normal ``(2,)`` of the line there, from its direction over 0.5 m either side (``(0, 1)``, east's
    left, for a line of zero length)."""
    s = line.project(point)
    a = line.interpolate(max(s - 0.5, 0.0))
    b = line.interpolate(min(s + 0.5, line.length))
    d = np.array([b.x - a.x, b.y - a.y])
    n = float(np.hypot(*d))
    d = d / n if n > 1e-9 else np.array([1.0, 0.0])
    c = line.interpolate(s)
    return np.array([c.x, c.y]), np.array([-d[1], d[0]])


def _valid(poly: Polygon):
    return poly if poly.is_valid else shapely.make_valid(poly)


class FreeGround:
    """The free and kerb ground of a :class:`~.scene.Scene` (module docstring); built once per scene."""

    def __init__(self, scene):
        from urbanarena.render.scene3d.realistic import _surfaces, _walk_all

        self.walk = _walk_all(scene)
        rails = [LineString(r.centreline).buffer(RAIL_CLEAR_M) for r in scene.rails if len(r.centreline) >= 2]
        if rails:
            self.walk = shapely.union_all([self.walk, *rails]) if self.walk is not None else shapely.union_all(rails)
        self.road, _ = _surfaces(scene)
        blds = [_valid(Polygon(b.footprint, b.holes)) for b in scene.buildings]
        self.buildings = shapely.union_all(blds) if blds else None
        self.lines = [LineString(r.centreline) for r in scene.roads]
        self.line_tree = shapely.STRtree(self.lines) if self.lines else None
        for g in (self.walk, self.road, self.buildings):
            if g is not None:
                shapely.prepare(g)

    def _near(self, geom, pts, r: float) -> np.ndarray:
        if geom is None or not len(pts):
            return np.zeros(len(pts), bool)
        return shapely.dwithin(geom, shapely.points(pts), r) if r > 0 else shapely.contains_xy(
            geom, pts[:, 0], pts[:, 1])

    def near_lines(self, pts: np.ndarray, d_m: float) -> np.ndarray:
        """``(K,)`` bool: which of ``pts`` (``(K, 2)``) lie within ``d_m`` of a walk line."""
        out = np.zeros(len(pts), bool)
        if self.line_tree is None or not len(pts):
            return out
        idx = self.line_tree.query(shapely.points(pts), predicate="dwithin", distance=d_m)
        out[np.unique(idx[0])] = True
        return out

    def free(self, pts: np.ndarray, r_m: float, building_clear_m: float | None = None) -> np.ndarray:
        """``(K,)`` bool: ``pts`` (``(K, 2)``) whose disc of radius ``r_m`` is on free ground (module
        docstring); ``building_clear_m`` (default ``r_m``) is the distance kept from buildings."""
        pts = np.asarray(pts, np.float64).reshape(-1, 2)
        bc = r_m if building_clear_m is None else building_clear_m
        return (~self._near(self.walk, pts, r_m) & ~self._near(self.buildings, pts, bc)
                & ~self.near_lines(pts, CLEAR_M + r_m))

    def kerb_ok(self, pts: np.ndarray, r_m: float) -> np.ndarray:
        """``(K,)`` bool: ``pts`` on kerb ground (module docstring) for a thing of radius ``r_m``."""
        pts = np.asarray(pts, np.float64).reshape(-1, 2)
        on_walk = self._near(self.walk, pts, 0.0)
        return (on_walk & ~self._near(self.road, pts, r_m) & ~self._near(self.buildings, pts, r_m + 0.3)
                & ~self.near_lines(pts, CLEAR_M + r_m))


_GROUNDS: dict = {}
_GROUND_LOCK = threading.Lock()


def ground_for(scene) -> FreeGround:
    """The :class:`FreeGround` of ``scene``, kept per scene content hash (the last two scenes), so that the
    greenery and the clutter of one renderer share it."""
    key = scene.content_hash()
    with _GROUND_LOCK:
        got = _GROUNDS.get(key)
    if got is None:
        got = FreeGround(scene)
        with _GROUND_LOCK:
            _GROUNDS[key] = got
            while len(_GROUNDS) > 2:
                _GROUNDS.pop(next(iter(_GROUNDS)))
    return got


def spaced(pts: np.ndarray, min_m: float, taken: np.ndarray | None = None) -> np.ndarray:
    """``(K,)`` bool: greedy in order, keep a point when it is at least ``min_m`` from every kept point and from
    every row of ``taken`` (``(M, 2)``)."""
    from scipy.spatial import cKDTree

    pts = np.asarray(pts, np.float64).reshape(-1, 2)
    keep = np.zeros(len(pts), bool)
    if taken is not None and len(taken):
        far = cKDTree(np.asarray(taken, np.float64)).query(pts, k=1)[0] >= min_m if len(pts) else keep
    else:
        far = np.ones(len(pts), bool)
    cell: dict[tuple[int, int], list[int]] = {}
    for i in np.flatnonzero(far):
        x, y = pts[i]
        cx, cy = int(math.floor(x / min_m)), int(math.floor(y / min_m))
        ok = True
        for gx in (cx - 1, cx, cx + 1):
            for gy in (cy - 1, cy, cy + 1):
                for j in cell.get((gx, gy), ()):
                    if (pts[j, 0] - x) ** 2 + (pts[j, 1] - y) ** 2 < min_m * min_m:
                        ok = False
                        break
        if ok:
            keep[i] = True
            cell.setdefault((cx, cy), []).append(i)
    return keep


__all__ = ["CLEAR_M", "FreeGround", "ground_for", "line_samples", "spaced", "unit"]
