"""Landmark search: walk to a named POI given its name (``landmark_language``) or a reference photo
(``landmark_image``).

Goal: the POI's front point — its facade point snapped to walkable space in
front of it (:class:`~urbanarena.world.annotations.POI` ``front_xy``) — with
success radius 10 m (``coordinate_match``), and its nearest pose node. Only
POIs whose folded name is unique in the area are used (a chain with two
branches would make the goal ambiguous), whose front point lies on the
network (``front_method == "normal"``) within :data:`MAX_FRONT_NODE_M` of a
pose node. The start is a pose node at a graph distance from the goal node in
the difficulty's band (``easy`` 30–80 m, ``medium`` 80–140 m, ``hard``
140–200 m; "the goal is not far from the starting point"), at least 20 m in a
straight line from the goal, facing along a random street direction.

Reference photo (``landmark_image``): :func:`reference_view` picks a camera
that is *not* a pose node — on the street 3–8 m along the facade from the
front point, at least 1.5 m from every pose node — at an eye height and a sun
position the panoramas never use (:data:`REFERENCE_EYE_HEIGHTS_M`,
:data:`REFERENCE_LIGHTING`), looking at the facade point; so pixel matching
against stored views cannot solve the task. The image itself is rendered by
the hook the suite builder is given (``reference_renderer``); without one the
family is reported unavailable.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial import cKDTree
from shapely.geometry import Point
from shapely.strtree import STRtree

from urbanarena.tasks.generators.common import (
    Candidate,
    CandidatePool,
    FamilyUnavailable,
    GenContext,
    ImageSpec,
    poi_goal,
    unique_named_pois,
)

RADIUS_M = 10.0
MAX_FRONT_NODE_M = 6.0
MIN_STRAIGHT_M = 20.0
BANDS_M = {"easy": (30.0, 80.0), "medium": (80.0, 140.0), "hard": (140.0, 200.0)}
#: camera heights of reference photos, metres (panoramas are rendered at 1.7 m)
REFERENCE_EYE_HEIGHTS_M = (1.2, 2.4)
#: sun (azimuth, elevation) of reference photos, degrees (panoramas: 200, 40)
REFERENCE_LIGHTING = ({"name": "morning", "sun_azimuth_deg": 110.0, "sun_elevation_deg": 18.0},
                      {"name": "evening", "sun_azimuth_deg": 265.0, "sun_elevation_deg": 12.0})
REFERENCE_SIZE_PX = (640, 480)
REFERENCE_HFOV_DEG = 70.0

INSTRUCTIONS = {
    "landmark_language": ("Go to {name}. When you are standing in front of it, answer to confirm that you "
                          "have arrived. It is not far from where you start."),
    "landmark_image": ("Go to the place shown in the attached reference photo. When you are standing in front "
                       "of it, answer to confirm that you have arrived. It is not far from where you start."),
}


def goal_pois(ctx: GenContext, kind: str):
    """The POIs usable as goals (module docstring), sorted by id. Raises :class:`FamilyUnavailable`."""
    ann = ctx.ann
    if ann is None:
        raise FamilyUnavailable(kind, "the city has no annotations (POIs): landmark goals need named POIs")
    pois = [p for p in unique_named_pois(ann)
            if p.front_method == "normal" and p.node_distance_m is not None and p.node_distance_m <= MAX_FRONT_NODE_M
            and p.node_id in ctx.city and ctx.in_area(p.node_id)]
    if not pois:
        raise FamilyUnavailable(kind, "no uniquely named POI with a storefront on the walkable network "
                                      f"(front point within {MAX_FRONT_NODE_M:g} m of a pose node) in this area")
    return pois


def reference_view(ctx: GenContext, poi, node_tree: cKDTree, bldg_tree: STRtree | None,
                   rng: np.random.Generator) -> dict | None:
    """Camera of a reference photo of ``poi`` (module docstring), or ``None`` when no valid spot exists.

    Returns a JSON-able dict: ``x_m``, ``y_m`` (local metres), ``lat``, ``lon``, ``eye_height_m``,
    ``yaw_deg`` (towards the facade point), ``pitch_deg``, ``hfov_deg``, ``width``, ``height``,
    ``lighting`` (``name``, ``sun_azimuth_deg``, ``sun_elevation_deg``), ``nearest_node_m``.
    """
    ann = ctx.ann
    f = ann.facade(poi.facade_id)
    L = f.length_m or 1.0
    tx, ty = (f.p1[0] - f.p0[0]) / L, (f.p1[1] - f.p0[1]) / L
    fx, fy = poi.front_xy
    for _ in range(12):
        t = float(rng.uniform(3.0, 8.0)) * (1 if rng.random() < 0.5 else -1)
        x, y = fx + t * tx, fy + t * ty
        d_node = float(node_tree.query((x, y))[0])
        if d_node < 1.5:
            continue
        if bldg_tree is not None and len(bldg_tree.query(Point(x, y), predicate="within")):
            continue
        dist = math.hypot(poi.facade_xy[0] - x, poi.facade_xy[1] - y)
        if not 3.0 <= dist <= 30.0:
            continue
        yaw = math.degrees(math.atan2(poi.facade_xy[0] - x, poi.facade_xy[1] - y)) % 360.0
        light = REFERENCE_LIGHTING[int(rng.integers(len(REFERENCE_LIGHTING)))]
        lat, lon = ctx.city.frame.to_latlon(x, y)
        return {"x_m": round(x, 3), "y_m": round(y, 3), "lat": float(lat), "lon": float(lon),
                "eye_height_m": REFERENCE_EYE_HEIGHTS_M[int(rng.integers(len(REFERENCE_EYE_HEIGHTS_M)))],
                "yaw_deg": round(yaw, 3), "pitch_deg": 6.0, "hfov_deg": REFERENCE_HFOV_DEG,
                "width": REFERENCE_SIZE_PX[0], "height": REFERENCE_SIZE_PX[1], "lighting": dict(light),
                "nearest_node_m": round(d_node, 3), "target_xy_m": [poi.facade_xy[0], poi.facade_xy[1]]}
    return None


def generate(ctx: GenContext, wanted: dict[str, int], kind: str = "landmark_language") -> CandidatePool:
    """Landmark-search candidates of ``kind`` (module docstring)."""
    import networkx as nx

    pool = CandidatePool(kind)
    pois = goal_pois(ctx, kind)
    g = ctx.city.graph
    rev = g.reverse(copy=False)
    node_ids = ctx.nodes()
    node_tree = cKDTree(np.array([ctx.xy(n) for n in node_ids]))
    bldgs = [b.shape() for b in ctx.ann.buildings] if ctx.ann is not None else []
    bldg_tree = STRtree(np.array(bldgs, dtype=object)) if bldgs else None
    per_poi = 2
    for poi in pois:
        dist = nx.single_source_dijkstra_path_length(rev, poi.node_id, cutoff=BANDS_M["hard"][1], weight="length_m")
        fx, fy = poi.front_xy
        for diff, (lo, hi) in BANDS_M.items():
            starts = sorted(n for n, d in dist.items() if lo <= d <= hi and ctx.in_area(n)
                            and math.hypot(ctx.xy(n)[0] - fx, ctx.xy(n)[1] - fy) >= MIN_STRAIGHT_M)
            if not starts:
                pool.reject(f"{diff}: no start node {lo:g}-{hi:g} m from the goal")
                continue
            picks = ctx.rng.choice(len(starts), size=min(per_poi, len(starts)), replace=False)
            for i in sorted(int(k) for k in picks):
                s = starts[i]
                extra = {"task_kind": kind, "landmark": poi.name, "poi_id": poi.id,
                         "requires_current_location": False}
                images: list[ImageSpec] = []
                if kind == "landmark_image":
                    view = reference_view(ctx, poi, node_tree, bldg_tree, ctx.rng)
                    if view is None:
                        pool.reject("no reference-photo viewpoint off the pose nodes")
                        continue
                    extra["reference_view"] = view
                    images = [ImageSpec("reference_view", f"{kind}_{poi.id}_{s}", view)]
                instruction = INSTRUCTIONS[kind].format(name=poi.name)
                pool.add(Candidate(
                    kind=kind, difficulty=diff, key=f"{s}->{poi.id}", group=poi.id,
                    stats={"path_length_m": float(dist[s]),
                           "straight_m": math.hypot(ctx.xy(s)[0] - fx, ctx.xy(s)[1] - fy)},
                    fields=dict(family="cityarena", city=ctx.city_ref, start=ctx.start(s, ctx.random_heading(s)),
                                goals=[poi_goal(ctx, poi)], success_radius_m=RADIUS_M, instruction=instruction,
                                answer_metric="coordinate_match", difficulty=diff, category=poi.category,
                                extra=extra),
                    images=images))
    if pool.total() == 0:
        raise FamilyUnavailable(kind, "no start node within 200 m of any usable landmark")
    return pool
