"""Annotation geometry: building facades and which face a street, the street locator, POIs attached to buildings and
streets, street objects placed on the graph, and city blocks."""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np
import shapely
from shapely.geometry import LineString, MultiLineString, Point, Polygon
from shapely.geometry.polygon import orient
from shapely.ops import polygonize, unary_union
from shapely.strtree import STRtree

from urbanarena.world.annotation_records import BLOCK_MIN_AREA_M2, BLOCK_MIN_HALF_WIDTH_M, Building, FACADE_END_MARGIN_M, FACADE_MERGE_ANGLE_DEG, FACADE_STREET_MAX_M, Facade, POI, POI_BUILDING_MAX_M, Street, StreetObject


# --------------------------------------------------------------------------- facades
def _azimuth(dx: float, dy: float) -> float:
    return math.degrees(math.atan2(dx, dy)) % 360.0


def make_facades(building_id: str, exteriors_xy: Sequence[Sequence[tuple[float, float]]],
                 merge_angle_deg: float = FACADE_MERGE_ANGLE_DEG, min_length_m: float = 0.5) -> list[Facade]:
    """Split exterior rings into straight facades.

    Args:
        exteriors_xy: exterior rings in local metres (any orientation; they are
            made counter-clockwise here), not repeating the first vertex.
        merge_angle_deg: consecutive edges turning by less than this are one facade.
        min_length_m: shorter edges are merged into their neighbour.
    Returns: facades ``"<building_id>:<k>"`` numbered around the rings; the
    outward normal is the facade direction turned 90 degrees clockwise.
    """
    out: list[Facade] = []
    for ring in exteriors_xy:
        pts = [tuple(map(float, p)) for p in ring]
        if len(pts) >= 2 and pts[0] == pts[-1]:
            pts = pts[:-1]
        if len(pts) < 3:
            continue
        if not shapely.LinearRing(pts).is_ccw:
            pts = pts[::-1]
        n = len(pts)
        # drop near-duplicate points
        pts = [p for i, p in enumerate(pts) if math.dist(p, pts[(i + 1) % n]) > 1e-6]
        n = len(pts)
        if n < 3:
            continue
        az = [_azimuth(pts[(i + 1) % n][0] - pts[i][0], pts[(i + 1) % n][1] - pts[i][1]) for i in range(n)]
        ln = [math.dist(pts[i], pts[(i + 1) % n]) for i in range(n)]

        def turn(i: int, j: int) -> float:
            d = abs(az[j] - az[i]) % 360.0
            return min(d, 360.0 - d)

        # a "corner" before edge i is where the direction changes by >= merge angle (ignoring tiny edges)
        corners = [i for i in range(n) if turn((i - 1) % n, i) >= merge_angle_deg]
        if not corners:
            corners = [int(np.argmax(ln))]
        runs = []
        for k, c in enumerate(corners):
            nxt = corners[(k + 1) % len(corners)]
            run = []
            i = c
            while True:
                run.append(i)
                i = (i + 1) % n
                if i == nxt:
                    break
            runs.append(run)
        for run in runs:
            p0 = pts[run[0]]
            p1 = pts[(run[-1] + 1) % n]
            L = math.dist(p0, p1)
            if L < min_length_m:
                continue
            d_az = _azimuth(p1[0] - p0[0], p1[1] - p0[1])
            out.append(Facade(id="", building_id=building_id, p0=p0, p1=p1, normal_deg=(d_az + 90.0) % 360.0))
    for k, f in enumerate(out):
        f.id = f"{building_id}:{k}"
    return out


def _first_hit(ray: LineString, start: Point, geoms: np.ndarray, idx: Iterable[int]) -> float:
    best = math.inf
    for i in idx:
        inter = ray.intersection(geoms[i])
        if not inter.is_empty:
            best = min(best, start.distance(inter))
    return best


class _RayCaster:
    """Casts rays against the network lines and building footprints (local metres)."""

    def __init__(self, network_lines: Sequence[LineString], building_shapes: Sequence[shapely.Geometry]):
        self.lines = np.array(list(network_lines), dtype=object)
        self.line_tree = STRtree(self.lines) if len(self.lines) else None
        self.bldgs = np.array(list(building_shapes), dtype=object)
        self.bldg_tree = STRtree(self.bldgs) if len(self.bldgs) else None

    def cast(self, x: float, y: float, ux: float, uy: float, max_m: float, start_offset_m: float = 0.05) -> float | None:
        """Distance from (x, y) to the first network line along the unit
        direction (ux, uy), or ``None`` if a building footprint comes first or
        nothing is hit within ``max_m``. The ray starts ``start_offset_m`` out
        so that it does not touch the wall it leaves."""
        if self.line_tree is None:
            return None
        sx, sy = x + ux * start_offset_m, y + uy * start_offset_m
        ray = LineString([(sx, sy), (x + ux * max_m, y + uy * max_m)])
        start = Point(sx, sy)
        d_line = _first_hit(ray, start, self.lines, self.line_tree.query(ray, predicate="intersects"))
        if not math.isfinite(d_line):
            return None
        if self.bldg_tree is not None:
            d_b = _first_hit(ray, start, self.bldgs, self.bldg_tree.query(ray, predicate="intersects"))
            if d_b < d_line:
                return None
        return d_line + start_offset_m


def mark_street_facing(buildings: Sequence[Building], network_lines: Sequence[LineString],
                       max_distance_m: float = FACADE_STREET_MAX_M) -> None:
    """Set ``street_facing``/``street_distance_m`` of every facade (in place).

    Rule: rays along the outward normal from 25 %, 50 % and 75 % of the
    facade; the facade faces the street if one of them meets a network line
    within ``max_distance_m`` before entering any building footprint.
    """
    caster = _RayCaster(network_lines, [b.shape() for b in buildings])
    for b in buildings:
        for f in b.facades:
            ux, uy = f.normal_vec()
            best = math.inf
            for t in (0.25, 0.5, 0.75):
                px = f.p0[0] + t * (f.p1[0] - f.p0[0])
                py = f.p0[1] + t * (f.p1[1] - f.p0[1])
                hit = caster.cast(px, py, ux, uy, max_distance_m)
                if hit is not None:
                    best = min(best, hit)
            f.street_facing = math.isfinite(best)
            f.street_distance_m = float(best) if math.isfinite(best) else None


# --------------------------------------------------------------------------- streets
class StreetLocator:
    """Nearest-street queries over :class:`Street` polylines (local metres)."""

    def __init__(self, streets: Sequence[Street]):
        self.streets = list(streets)
        self.lines = np.array([s.line() for s in self.streets], dtype=object)
        self.tree = STRtree(self.lines) if len(self.lines) else None

    def locate(self, x: float, y: float) -> tuple[str, float, float, float, tuple[float, float]] | None:
        """``(street_id, along_m, lateral_m, street_azimuth_deg, nearest_xy)`` of the
        street nearest to (x, y); ``lateral_m`` > 0 when the point lies right of
        the street's direction. ``None`` when there are no streets."""
        if self.tree is None:
            return None
        p = Point(x, y)
        i = int(self.tree.nearest(p))
        line = self.lines[i]
        along = float(line.project(p))
        q = line.interpolate(along)
        a0 = line.interpolate(max(0.0, along - 0.5))
        a1 = line.interpolate(min(line.length, along + 0.5))
        tx, ty = a1.x - a0.x, a1.y - a0.y
        dist = math.hypot(x - q.x, y - q.y)
        cross = tx * (y - q.y) - ty * (x - q.x)  # > 0: left of direction
        lateral = -dist if cross > 0 else dist
        return self.streets[i].id, along, float(lateral), _azimuth(tx, ty), (float(q.x), float(q.y))

    def nearest_point(self, x: float, y: float) -> tuple[float, float]:
        loc = self.locate(x, y)
        assert loc is not None
        return loc[4]


# --------------------------------------------------------------------------- POIs
def attach_pois(pois: Sequence[POI], buildings: Sequence[Building], streets: Sequence[Street],
                node_ids: Sequence[str], node_xy: np.ndarray, to_latlon,
                building_max_m: float = POI_BUILDING_MAX_M, front_max_m: float = FACADE_STREET_MAX_M,
                building_of: dict[str, str] | None = None) -> tuple[list[POI], list[POI]]:
    """Attach POIs to a building facade, walkable space in front of it and a pose node.

    Args:
        pois: POIs with ``x_m``/``y_m`` set (local metres).
        buildings: buildings with facades (:func:`make_facades`,
            :func:`mark_street_facing` already run).
        streets: the pruned walkable network (front points lie on it).
        node_ids, node_xy: pose nodes and their local positions ``(N, 2)``.
        to_latlon: ``(x_m, y_m) -> (lat, lon)`` of the city's frame.
        building_of: optional ``{poi_id: building_id}`` for POIs that are
            building outlines themselves (an area POI belongs to its own building).
    Returns: ``(attached, standalone)``: POIs with a building, and named POIs
        without one within ``building_max_m`` (unnamed ones are dropped).
    Rules: module docstring (:class:`POI`).
    """
    from scipy.spatial import cKDTree

    shapes = [b.shape() for b in buildings]
    tree = STRtree(np.array(shapes, dtype=object)) if shapes else None
    by_id = {b.id: i for i, b in enumerate(buildings)}
    caster = _RayCaster([s.line() for s in streets], shapes)
    locator = StreetLocator(streets)
    kd = cKDTree(node_xy) if len(node_xy) else None
    attached: list[POI] = []
    standalone: list[POI] = []
    for poi in pois:
        p = Point(poi.x_m, poi.y_m)
        bi: int | None = None
        if building_of and poi.id in building_of and building_of[poi.id] in by_id:
            bi = by_id[building_of[poi.id]]
        elif tree is not None:
            inside = [int(i) for i in tree.query(p, predicate="covered_by")]
            if inside:
                bi = min(inside, key=lambda i: shapes[i].area)  # innermost
            else:
                j = tree.query_nearest(p, max_distance=building_max_m)
                if len(j):
                    bi = int(j[0])
        if bi is None:
            if poi.name:
                _place_front(poi, poi.x_m, poi.y_m, None, caster, locator, kd, node_ids, to_latlon, front_max_m)
                standalone.append(poi)
            continue
        b = buildings[bi]
        if not b.facades:
            if poi.name:
                _place_front(poi, poi.x_m, poi.y_m, None, caster, locator, kd, node_ids, to_latlon, front_max_m)
                standalone.append(poi)
            continue
        cands = [f for f in b.facades if f.street_facing] or b.facades
        best = min(cands, key=lambda f: (f.project(poi.x_m, poi.y_m)[1], f.id))
        off, _ = best.project(poi.x_m, poi.y_m)
        L = best.length_m
        off = min(max(off, min(FACADE_END_MARGIN_M, L / 2)), max(L - FACADE_END_MARGIN_M, L / 2))
        fx, fy = best.point_at(off)
        poi.building_id = b.id
        poi.facade_id = best.id
        poi.facade_offset_m = float(off)
        poi.facade_xy = (float(fx), float(fy))
        _place_front(poi, fx, fy, best, caster, locator, kd, node_ids, to_latlon, front_max_m)
        attached.append(poi)
    return attached, standalone


def _place_front(poi: POI, fx: float, fy: float, facade: Facade | None, caster: _RayCaster, locator: StreetLocator,
                 kd, node_ids: Sequence[str], to_latlon, front_max_m: float) -> None:
    front = None
    if facade is not None:
        ux, uy = facade.normal_vec()
        hit = caster.cast(fx, fy, ux, uy, front_max_m)
        if hit is not None:
            front = (fx + ux * hit, fy + uy * hit)
            poi.front_method = "normal"
    if front is None and locator.tree is not None:
        front = locator.nearest_point(fx, fy)
        poi.front_method = "nearest"
    if front is None:
        return
    poi.front_xy = (float(front[0]), float(front[1]))
    lat, lon = to_latlon(front[0], front[1])
    poi.front_lat, poi.front_lon = float(lat), float(lon)
    poi.front_distance_m = float(math.hypot(front[0] - fx, front[1] - fy))
    if kd is not None:
        d, i = kd.query(front)
        poi.node_id = node_ids[int(i)]
        poi.node_distance_m = float(d)
    loc = locator.locate(fx, fy)
    if loc is not None:
        poi.street_id, poi.along_m, poi.lateral_m = loc[0], float(loc[1]), float(loc[2])


def place_objects(objects: Sequence[StreetObject], streets: Sequence[Street], node_ids: Sequence[str],
                  node_xy: np.ndarray) -> None:
    """Fill ``node_id``/``street_id``/``along_m``/``lateral_m``/``street_azimuth_deg`` (in place)."""
    from scipy.spatial import cKDTree

    locator = StreetLocator(streets)
    kd = cKDTree(node_xy) if len(node_xy) else None
    for o in objects:
        if kd is not None:
            d, i = kd.query((o.x_m, o.y_m))
            o.node_id, o.node_distance_m = node_ids[int(i)], float(d)
        loc = locator.locate(o.x_m, o.y_m)
        if loc is not None:
            o.street_id, o.along_m, o.lateral_m, o.street_azimuth_deg = loc[0], float(loc[1]), float(loc[2]), float(loc[3])


# --------------------------------------------------------------------------- blocks
def city_blocks(street_lines: Sequence[LineString], min_area_m2: float = BLOCK_MIN_AREA_M2,
                min_half_width_m: float = BLOCK_MIN_HALF_WIDTH_M) -> list[Polygon]:
    """Faces of the street network: polygons enclosed by streets (local metres).

    The lines are noded (:func:`shapely.ops.unary_union`) and polygonized
    (:func:`shapely.ops.polygonize`); faces smaller than ``min_area_m2`` or
    nowhere wider than ``2 * min_half_width_m`` (a negative buffer by
    ``min_half_width_m`` leaves nothing) are dropped. Returned sorted by
    (centroid y descending, x), i.e. north to south, west to east.
    """
    lines = [ln for ln in street_lines if ln.length > 0]
    if not lines:
        return []
    noded = unary_union(MultiLineString(lines))
    polys = []
    for poly in polygonize(noded):
        poly = orient(poly, sign=1.0)  # exterior counter-clockwise
        if poly.area < min_area_m2 or poly.buffer(-min_half_width_m).is_empty:
            continue
        polys.append(poly)
    polys.sort(key=lambda q: (-round(q.centroid.y, 3), round(q.centroid.x, 3)))
    return polys
