"""Object counting: how many objects of a type lie within a described range?

Ranges (our wording), each a polygon in local metres built from the city data:

``road`` — "the road ahead of you, up to the next crosswalk": from the start
node, facing along a carriageway (:data:`ROAD_HIGHWAYS`), the route continues
at each node onto the onward edge that turns least (under 30 degrees, still a
carriageway) until the first crossing object (``crossing`` street object)
within 3 m of the route and at least 8 m ahead (at most :data:`MAX_ROAD_M`).
The range is the route buffered by half the carriageway width (the widest
street along it) plus :data:`SIDEWALK_M` on both sides, with flat ends at the
start and at the crosswalk.

``road_left`` / ``road_right`` — "the left/right side of the road ...": the
same route buffered on one side only (shapely ``single_sided`` buffer).

``block_left`` / ``block_right`` — "the full perimeter of the block on your
left/right": the city block (:class:`~urbanarena.world.annotations.Block`,
bounded by street centrelines) that contains the point 6 m to that side of the
start, when the start lies on its boundary (within 3 m) and its perimeter is at
most :func:`max_block_perimeter_m` (what the step limit lets an agent walk
round); the range is the part of the block within :data:`BLOCK_BAND_M` of its
boundary (sidewalks and street-facing facades), all sides.

Objects: trees, street lamps, benches, vending machines and traffic signs
(street objects by type), and shops (named POIs of category ``shop``, counted
at their facade point). A task is dropped when any object of its type lies
within :data:`AMBIGUITY_M` of its range's boundary (inside or out), so the
ground truth never hinges on a metre of mapping error. Counts below
:data:`MIN_COUNT` are not used.

Difficulty: candidate bands by count (``easy`` 2–5, ``medium`` 3–7, ``hard``
6–15); the suite builder calibrates the means against 360CityArena's
3.5 / 4.6 / 9.0. ``extra.counted`` lists the counted objects (id, type,
position) and ``extra.view_points`` the range points nearest each of them:
where the renderer's visibility check (every counted object visible in at
least one view from inside its range) looks from.

Visibility (optional): with a ``visibility`` hook (:data:`VisibilityHook`, e.g.
:class:`urbanarena.render.scene3d.visibility.CountVisibility`: at least 100
pixels in a 640x360, 90-degree view from the node, looking at the object), a
candidate is kept only when every counted object is visible from at least one
pose node inside its range (within :data:`VIEW_NODE_TOLERANCE_M` of the range
polygon; nodes tried nearest the object first); otherwise it is dropped
(rejection reason "... not visible from any pose node in the range"), so the
ground truth never counts an object that cannot be seen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
import shapely
from shapely.geometry import LineString, Point
import shapely.ops
from shapely.strtree import STRtree

from urbanarena.tasks.generators.common import LARGE_STEP_M, Candidate, CandidatePool, FamilyUnavailable, GenContext
from urbanarena.world.geo import signed_turn_deg

KIND = "object_count"
ROAD_HIGHWAYS = frozenset({
    "primary", "primary_link", "secondary", "secondary_link", "tertiary", "tertiary_link", "unclassified",
    "residential", "living_street", "road", "pedestrian", "service", "trunk", "trunk_link",
})
SIDEWALK_M = 5.0
MAX_ROAD_M = 160.0
MIN_AHEAD_M = 8.0
CROSSING_NEAR_M = 3.0
BLOCK_BAND_M = 15.0
BLOCK_PROBE_M = 6.0
AMBIGUITY_M = 1.5
MIN_COUNT = 2
BANDS = {"easy": (2, 5), "medium": (3, 7), "hard": (6, 15)}
#: pose nodes within this distance of a range polygon are inside it (nodes on a block's bounding
#: street centrelines lie on the band's outer boundary)
VIEW_NODE_TOLERANCE_M = 0.5
#: ``(feature kind, feature id, pose node ids) -> bool``: whether the counted object is visible from
#: one of the nodes; kind ``object`` (street object id) or ``poi`` (a shop's POI id)
VisibilityHook = Callable[[str, str, Iterable[str]], bool]
#: counted type -> (plural phrase, source): source "object" (street object type) or "shop"
OBJECT_TYPES = {
    "tree": ("trees", "object"),
    "street_lamp": ("street lamps", "object"),
    "bench": ("benches", "object"),
    "vending_machine": ("vending machines", "object"),
    "traffic_sign": ("traffic signs", "object"),
    "shop": ("shops with a name sign", "shop"),
}
RANGE_TEXT = {
    "road": "the road ahead of you, up to the next crosswalk",
    "road_left": "the left side of the road ahead of you, up to the next crosswalk",
    "road_right": "the right side of the road ahead of you, up to the next crosswalk",
    "block_left": "the full perimeter of the block on your left",
    "block_right": "the full perimeter of the block on your right",
}
INSTRUCTION = ("Count the {objects} along {range}. Count only what lies within that range (a block's perimeter "
               "means all of its sides). Answer with a single number.")


@dataclass(frozen=True)
class Countable:
    id: str
    type: str
    xy: tuple[float, float]


def countables(ctx: GenContext) -> dict[str, list[Countable]]:
    """Objects by counted type (module docstring), sorted by id."""
    ann = ctx.ann
    out: dict[str, list[Countable]] = {t: [] for t in OBJECT_TYPES}
    for o in ann.objects:
        if o.type in out and OBJECT_TYPES[o.type][1] == "object":
            out[o.type].append(Countable(o.id, o.type, (o.x_m, o.y_m)))
    for p in ann.pois:
        if p.category == "shop" and p.name and p.facade_xy is not None:
            out["shop"].append(Countable(p.id, "shop", (float(p.facade_xy[0]), float(p.facade_xy[1]))))
    return {t: sorted(v, key=lambda c: c.id) for t, v in out.items()}


def road_ahead(ctx: GenContext, start: str, first: str) -> tuple[list[str], list[tuple[float, float]], float] | None:
    """The straight-on carriageway route from ``start`` via ``first`` (nodes, polyline, its widest street width)."""
    g = ctx.city.graph
    ann = ctx.ann
    path = [start, first]
    length = float(g.edges[start, first]["length_m"])
    if g.edges[start, first].get("highway") not in ROAD_HIGHWAYS:
        return None
    while length < MAX_ROAD_M:
        u, v = path[-2], path[-1]
        a_in = ctx.azimuth(u, v)
        best = None
        for w, d in ctx.city.out_edges(v):
            if w == u or d.get("highway") not in ROAD_HIGHWAYS:
                continue
            t = abs(signed_turn_deg(a_in, float(d["azimuth_deg"])))
            if t < 30.0 and (best is None or t < best[0]):
                best = (t, w)
        if best is None or best[1] in path:
            break
        length += float(g.edges[v, best[1]]["length_m"])
        path.append(best[1])
    widths = []
    for a, b in zip(path, path[1:]):
        sid = g.edges[a, b].get("street_id")
        try:
            widths.append(float(ann.street(sid).width_m))
        except (KeyError, TypeError):
            widths.append(8.0)
    return path, [ctx.xy(n) for n in path], max(widths)


def _ambiguous(region, tree: STRtree | None) -> bool:
    """Whether an object lies within :data:`AMBIGUITY_M` of the range's boundary."""
    if tree is None:
        return False
    return len(tree.query(region.boundary, predicate="dwithin", distance=AMBIGUITY_M)) > 0


def _count(region, tree: STRtree | None, objs: list[Countable]) -> list[Countable]:
    """Objects strictly inside the range, sorted by id."""
    if tree is None:
        return []
    return sorted((objs[int(i)] for i in tree.query(region, predicate="contains_properly")), key=lambda c: c.id)


def _ranges(ctx: GenContext, s: str, first: str, heading: float, cross_pts, blocks, pool: CandidatePool):
    """The ranges seen from node ``s`` facing along edge ``s -> first``: ``(name, polygon, walking line, desc)``."""
    out = []
    sx, sy = ctx.xy(s)
    road = road_ahead(ctx, s, first)
    if road is not None:
        path, xy, width = road
        line = LineString(xy)
        ahead = [a for a in (line.project(p) for p in cross_pts if line.distance(p) <= CROSSING_NEAR_M)
                 if a >= MIN_AHEAD_M]
        if ahead:
            end = min(ahead)
            sub = shapely.ops.substring(line, 0.0, end)
            half = width / 2.0 + SIDEWALK_M
            desc = {"route": list(path), "range_end_m": round(end, 3), "half_width_m": round(half, 3)}
            out.append(("road", sub.buffer(half, cap_style="flat"), sub, desc))
            out.append(("road_left", sub.buffer(half, cap_style="flat", single_sided=True), sub, desc))
            out.append(("road_right", sub.buffer(-half, cap_style="flat", single_sided=True), sub, desc))
        else:
            pool.reject("no crosswalk ahead on the road")
    for side, sign in (("left", -1.0), ("right", 1.0)):
        r = math.radians(heading + sign * 90.0)
        probe = Point(sx + BLOCK_PROBE_M * math.sin(r), sy + BLOCK_PROBE_M * math.cos(r))
        for b, shp in blocks:
            if shp.contains(probe) and shp.exterior.distance(Point(sx, sy)) <= 3.0:
                if shp.exterior.length > max_block_perimeter_m(ctx):
                    pool.reject("block perimeter beyond the step limit")
                    break
                band = shp.difference(shp.buffer(-BLOCK_BAND_M))
                out.append((f"block_{side}", band, shp.exterior, {"block_id": b.id}))
                break
    return out


def max_block_perimeter_m(ctx: GenContext) -> float:
    """Longest block perimeter a ``block_*`` range may have: twice what ``ctx.max_steps`` W LARGE steps walk
    (ours, issue 19: from its start the agent can walk half way round, to the far corner, and see every side;
    700 m at 50 steps of 7 m). Every block range of the core's frozen suites v1/v2 is shorter (at most 556 m);
    the whole extract's park and railway blocks (up to 1.8 km) are not."""
    return 2.0 * ctx.max_steps * LARGE_STEP_M


def generate(ctx: GenContext, wanted: dict[str, int], visibility: VisibilityHook | None = None) -> CandidatePool:
    """Counting candidates (module docstring); ``visibility`` drops candidates with an object that
    no pose node of its range sees (module docstring)."""
    pool = CandidatePool(KIND)
    ann = ctx.ann
    if ann is None:
        raise FamilyUnavailable(KIND, "the city has no annotations (street objects, POIs, blocks)")
    objs = countables(ctx)
    if not any(len(v) >= MIN_COUNT for v in objs.values()):
        raise FamilyUnavailable(KIND, "fewer than two mapped objects of every countable type in this area")
    trees = {t: (STRtree(np.array([Point(c.xy) for c in v], dtype=object)) if v else None) for t, v in objs.items()}
    cross_pts = [Point(o.x_m, o.y_m) for o in ann.objects if o.type == "crossing"]
    blocks = [(b, b.shape()) for b in ann.blocks]
    nodes = ctx.nodes()
    node_tree = STRtree(np.array([Point(ctx.xy(n)) for n in nodes], dtype=object)) if visibility is not None else None
    start_nodes = ctx.area_nodes()
    n_starts = min(len(start_nodes), max(120, 12 * max(wanted.values(), default=1)))
    starts = sorted(ctx.rng.choice(len(start_nodes), size=n_starts, replace=False).tolist())
    for si in starts:
        s = start_nodes[int(si)]
        sx, sy = ctx.xy(s)
        for first, d in sorted(ctx.city.out_edges(s), key=lambda e: e[0]):
            heading = float(d["azimuth_deg"])
            for rname, region, walk_line, desc in _ranges(ctx, s, first, heading, cross_pts, blocks, pool):
                if region.is_empty or region.area <= 1.0:
                    continue
                for otype, (phrase, _) in OBJECT_TYPES.items():
                    counted = _count(region, trees[otype], objs[otype])
                    if len(counted) < MIN_COUNT:
                        continue
                    if _ambiguous(region, trees[otype]):
                        pool.reject(f"{otype} within {AMBIGUITY_M:g} m of the range boundary")
                        continue
                    if visibility is not None and not _all_visible(ctx, visibility, region, counted, nodes,
                                                                   node_tree):
                        pool.reject(f"{otype} not visible from any pose node in the range")
                        continue
                    n = len(counted)
                    extra = {"task_kind": KIND, "object_type": otype, "object_phrase": phrase, "range": rname,
                             "range_text": RANGE_TEXT[rname], "range_polygon_xy": _poly_json(region), **desc,
                             "counted": [{"id": c.id, "type": c.type, "xy_m": [round(c.xy[0], 3), round(c.xy[1], 3)]}
                                         for c in counted],
                             "view_points": [_view_point(walk_line, c) for c in counted],
                             "requires_current_location": False}
                    for diff, (lo, hi) in BANDS.items():
                        if not lo <= n <= hi:
                            continue
                        pool.add(Candidate(
                            kind=KIND, difficulty=diff, key=f"{s}|{first}|{rname}|{otype}",
                            group=f"{rname.split('_')[0]}|{desc.get('block_id') or desc['route'][1]}|{otype}",
                            stats={"count": float(n), "range_area_m2": float(region.area)},
                            fields=dict(family="cityarena", city=ctx.city_ref, start=ctx.start(s, heading),
                                        instruction=INSTRUCTION.format(objects=phrase, range=RANGE_TEXT[rname]),
                                        answer=str(n), answer_metric="mean_relative_accuracy", difficulty=diff,
                                        category=rname, extra=extra)))
    if pool.total() == 0:
        raise FamilyUnavailable(KIND, "no range (road to a crosswalk, one side of it, or a block perimeter) "
                                      f"holds {MIN_COUNT} or more objects of one type unambiguously")
    return pool


def _all_visible(ctx: GenContext, visibility: VisibilityHook, region, counted: list[Countable],
                 nodes: list[str], node_tree: STRtree) -> bool:
    """Whether every counted object is visible from a pose node inside ``region`` (nearest first)."""
    inside = [nodes[int(i)] for i in node_tree.query(region, predicate="dwithin", distance=VIEW_NODE_TOLERANCE_M)]
    for c in counted:
        order = sorted(inside, key=lambda n: (math.dist(ctx.xy(n), c.xy), n))
        kind = "poi" if OBJECT_TYPES[c.type][1] == "shop" else "object"
        if not visibility(kind, c.id, order):
            return False
    return True


def _view_point(walk_line, c: Countable) -> dict:
    """Where to look at a counted object from: the nearest point of the range's walking line (the
    road route, or the block's boundary street centreline), with the bearing towards the object."""
    p = walk_line.interpolate(walk_line.project(Point(c.xy)))
    yaw = math.degrees(math.atan2(c.xy[0] - p.x, c.xy[1] - p.y)) % 360.0
    return {"id": c.id, "x_m": round(p.x, 3), "y_m": round(p.y, 3), "yaw_deg": round(yaw, 2),
            "distance_m": round(math.hypot(c.xy[0] - p.x, c.xy[1] - p.y), 2)}


def _poly_json(poly) -> list:
    geoms = list(poly.geoms) if hasattr(poly, "geoms") else [poly]
    return [[[round(x, 3), round(y, 3)] for x, y in g.exterior.coords] for g in geoms]
