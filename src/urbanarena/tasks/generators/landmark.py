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

Reference photo (``landmark_image``, generator version 4, ``scheme`` 4 of ``extra.reference_view``; version 3's
scheme 3 is the same with conditions other than the clear day only (:data:`REFERENCE_CONDITIONS_V3`) and no
goal-share check, version 2's scheme 2 that without people):
:func:`reference_view` draws cameras (per goal POI, :func:`reference_options`) that show the storefront *with its
neighbours and the street*, from where the agent never stands and not as the episodes show it:

* **where**: on the far side of the street, 1-3 m in front of the opposite building (found by casting
  a ray from the facade along its outward normal; 25 m out when nothing is hit within
  :data:`ACROSS_MAX_M`), ``across`` (4-9 m along the block from the storefront; :data:`ACROSS_SHARE`
  of the draws) or ``diagonal`` (10-25 m along the block); 8-35 m from the facade point, seeing the
  storefront at most :data:`MAX_INCIDENCE_DEG` (60 degrees) off its normal, at least
  :data:`MIN_NODE_M` (2.5 m) from every pose node, outside every building, with a line of sight to the
  storefront that crosses no building and passes no tree within :data:`TREE_CLEARANCE_M`;
* **framing**: a wide lens (:data:`REFERENCE_HFOV_RANGE_DEG`, 90-110 degrees) turned so that the
  storefront sits off-centre (3-15 % of the field of view to one side), pitch 2-10 degrees up, a
  hand-held eye height of 1.45-1.95 m: the sign is small or oblique, so the name is often not
  legible (the OCR-readable share is measured: docs/task-generation.md);
* **when**: a condition drawn from a stated mix that includes the episodes' own clear day
  (:data:`REFERENCE_CONDITIONS`: clear 40 %, cloudy, dusk, rain, cloudy+dusk 15 % each; ours;
  ``extra.reference_view.condition``) and another sun (morning or evening);
* **who**: the people and vehicles of the photo's own moment (``population_key``: a population snapshot
  seeded by the POI instead of a node, in the photo's condition), drawn wherever the episodes' panoramas
  have people (the realistic style): other people than the agent meets there, other parked cars.

Up to :data:`REFERENCE_OPTIONS` valid cameras are drawn per POI. When the suite builder is given a goal-share
hook (``reference_goal_share``: :class:`urbanarena.render.scene3d.goal_share.GoalShare`), a camera is
refused unless the photo shows the goal: in its ID pass with the photo's own people and vehicles, at least
:data:`~urbanarena.render.scene3d.goal_share.MIN_SIGN_SHARE` of the goal sign's projected face and
:data:`~urbanarena.render.scene3d.goal_share.MIN_STOREFRONT_SHARE` of its storefront (the wall from the ground
to the sign's top, 1 m beyond each end of the sign) show the sign or its building
(``extra.reference_check.goal_share``: shares, pixels, thresholds, occluders). When it is given a
view-distance hook (``reference_check``: :class:`urbanarena.render.scene3d.reference.GoalViewDistance`),
the first of them whose photo lies at least
:data:`~urbanarena.render.view_distance.REFERENCE_MIN_DISTANCE` from every view the agent can take at a
goal node (the POI's node and every pose node within the success radius of its front point) becomes the
reference, checked once a candidate is selected (:class:`ReferencePicker`); a POI none of whose cameras
passes is replaced like a task the oracle fails. ``extra.reference_check`` records the distance.
Without the hook the first camera is used. The image itself is rendered by the hook the suite builder
is given (``reference_renderer``); without one the family is reported unavailable.

Generator version 1 (the references of ``helsinki-arena7-v1``/``-v2``): 3-8 m along the facade from
the front point at 1.2 or 2.4 m, 70 degrees, looking straight at the facade point in a morning or
evening sun -- the sign filled the picture; those frozen specs still draw identically.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
from scipy.spatial import cKDTree
from shapely.geometry import LineString, Point
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

#: ``(city, reference view, goal nodes) -> {"min_view_distance", ...}``: the view-distance hook
#: (:class:`urbanarena.render.scene3d.reference.GoalViewDistance`)
ReferenceCheck = Callable[[Any, dict, list], dict]
#: ``(city, reference view, goal POI id) -> {"passed", "sign", "storefront", ...}``: the goal-share hook
#: (:class:`urbanarena.render.scene3d.goal_share.GoalShare`)
GoalShareCheck = Callable[[Any, dict, str], dict]

RADIUS_M = 10.0
MAX_FRONT_NODE_M = 6.0
MIN_STRAIGHT_M = 20.0
BANDS_M = {"easy": (30.0, 80.0), "medium": (80.0, 140.0), "hard": (140.0, 200.0)}
#: sun (azimuth, elevation) of reference photos, degrees (panoramas: 200, 40); dusk moves the sun itself
REFERENCE_LIGHTING = ({"name": "morning", "sun_azimuth_deg": 110.0, "sun_elevation_deg": 18.0},
                      {"name": "evening", "sun_azimuth_deg": 265.0, "sun_elevation_deg": 12.0})
#: weather / time of day of reference photos (the episodes: the clear day; render/scene3d/conditions.py)
#: scheme 4 (ours): the mix references are drawn from, condition -> probability; it includes the episodes' own
#: condition (the clear day), so an image goal is not always "another light" than the walk
REFERENCE_CONDITIONS = {"clear": 0.4, "cloudy": 0.15, "dusk": 0.15, "rain": 0.15, "cloudy+dusk": 0.15}
#: schemes 2 and 3 (``helsinki-arena7-v3``/``-v4``): one of these, uniformly; never the clear day
REFERENCE_CONDITIONS_V3 = ("dusk", "cloudy", "rain", "cloudy+dusk")
REFERENCE_SIZE_PX = (640, 480)
REFERENCE_HFOV_RANGE_DEG = (90.0, 110.0)
#: share of ``across`` placements (the rest ``diagonal``): across the street the name is read about 3x as
#: often (docs/task-generation.md)
ACROSS_SHARE = 0.2
REFERENCE_EYE_HEIGHT_RANGE_M = (1.45, 1.95)
#: generator version 1's camera heights (metres) and field of view (degrees): :func:`reference_view_v1`
V1_EYE_HEIGHTS_M = (1.2, 2.4)
V1_HFOV_DEG = 70.0
#: ``extra.reference_view.scheme`` of the references this generator draws (absent = version 1's)
REFERENCE_SCHEME = 4
#: a reference camera stands at least this far from every pose node, metres
MIN_NODE_M = 2.5
#: the ray across the street looks this far for the opposite building, metres
ACROSS_MAX_M = 60.0
#: camera to facade point, metres
REFERENCE_DISTANCE_M = (8.0, 35.0)
#: the line of sight passes no tree closer than this, metres (the renderer's crowns: radius up to 2.3 m)
TREE_CLEARANCE_M = 2.5
#: largest angle between the storefront's outward normal and the direction to the camera, degrees
MAX_INCIDENCE_DEG = 60.0
#: camera draws per POI (geometry) before the POI is given up
REFERENCE_TRIES = 40
#: valid cameras kept per POI for the view-distance step (the first far enough is used)
REFERENCE_OPTIONS = 4

#: the rejection counted for a goal POI without a real reference picture (:mod:`.real_references`)
NO_REAL_REFERENCE = "no real reference picture meets the rules (distance, angle, OSM occlusion, not a pose node's)"

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


def goal_nodes(ctx: GenContext, poi, node_tree: cKDTree, node_ids: list[str]) -> list[str]:
    """The pose nodes an agent may stand at when it succeeds: the POI's node and every node within
    :data:`RADIUS_M` of its front point (sorted, the POI's node first)."""
    near = {node_ids[i] for i in node_tree.query_ball_point(poi.front_xy, RADIUS_M)}
    return [poi.node_id] + sorted(near - {poi.node_id})


def _first_hit_m(origin, direction, max_m: float, bldg_tree: STRtree | None, bldgs) -> float | None:
    """Distance along ``direction`` from ``origin`` to the first building outline, or ``None``."""
    if bldg_tree is None:
        return None
    ox, oy = origin
    ray = LineString([(ox, oy), (ox + direction[0] * max_m, oy + direction[1] * max_m)])
    best = None
    for i in bldg_tree.query(ray, predicate="intersects"):
        inter = bldgs[int(i)].boundary.intersection(ray)
        for g in getattr(inter, "geoms", [inter]):
            if g.is_empty:
                continue
            d = Point(ox, oy).distance(g)
            best = d if best is None else min(best, d)
    return best


def _segment_distance(points: np.ndarray, a, b) -> np.ndarray:
    """Distance of each of ``points`` ``(N, 2)`` to the segment ``a``-``b`` (metres)."""
    a_, ab = np.asarray(a, float), np.asarray(b, float) - np.asarray(a, float)
    t = np.clip(((points - a_) @ ab) / max(float(ab @ ab), 1e-12), 0.0, 1.0)
    return np.hypot(*(points - (a_ + t[:, None] * ab)).T)


def reference_view(ctx: GenContext, poi, node_tree: cKDTree, bldg_tree: STRtree | None, bldgs,
                   rng: np.random.Generator, trees: np.ndarray | None = None) -> dict | None:
    """One candidate camera of a reference photo of ``poi`` (module docstring), or ``None`` when the
    drawn placement is not valid (the caller draws again).

    Returns a JSON-able dict: ``scheme`` (4), ``placement`` (``across`` / ``diagonal``), ``x_m``, ``y_m``
    (local metres), ``lat``, ``lon``, ``eye_height_m``, ``yaw_deg``, ``pitch_deg``, ``hfov_deg``,
    ``width``, ``height``, ``condition``, ``lighting`` (``name``, ``sun_azimuth_deg``,
    ``sun_elevation_deg``), ``nearest_node_m``, ``distance_m`` (to the facade point), ``target_xy_m``,
    ``population_key`` (the photo's own people and vehicles, :mod:`urbanarena.render.scene3d.reference`).
    """
    f = ctx.ann.facade(poi.facade_id)
    L = f.length_m or 1.0
    tx, ty = (f.p1[0] - f.p0[0]) / L, (f.p1[1] - f.p0[1]) / L
    a = math.radians(f.normal_deg)
    nx_, ny_ = math.sin(a), math.cos(a)  # outward normal (compass azimuth -> east, north)
    fx, fy = poi.facade_xy
    placement = "across" if rng.random() < ACROSS_SHARE else "diagonal"
    along = (float(rng.uniform(4.0, 9.0)) if placement == "across" else float(rng.uniform(10.0, 25.0)))
    along *= 1 if rng.random() < 0.5 else -1
    bx, by = fx + along * tx, fy + along * ty  # the facade line, ``along`` metres from the storefront
    start = (bx + 0.5 * nx_, by + 0.5 * ny_)
    hit = _first_hit_m(start, (nx_, ny_), ACROSS_MAX_M, bldg_tree, bldgs)
    depth = (hit + 0.5 if hit is not None else 25.0) - float(rng.uniform(1.0, 3.0))
    x, y = bx + depth * nx_, by + depth * ny_
    dist = math.hypot(fx - x, fy - y)
    if not REFERENCE_DISTANCE_M[0] <= dist <= REFERENCE_DISTANCE_M[1]:
        return None
    if math.degrees(math.acos(max(-1.0, min(1.0, depth / dist)))) > MAX_INCIDENCE_DEG:
        return None  # the storefront seen too obliquely: a speck, not a picture of it
    d_node = float(node_tree.query((x, y))[0])
    if d_node < MIN_NODE_M:
        return None
    if bldg_tree is not None:
        if len(bldg_tree.query(Point(x, y), predicate="intersects")):
            return None
        # line of sight to a point 0.3 m in front of the storefront
        sight = LineString([(x, y), (fx + 0.3 * nx_, fy + 0.3 * ny_)])
        if len(bldg_tree.query(sight, predicate="intersects")):
            return None
    if trees is not None and len(trees) and _segment_distance(trees, (x, y), (fx, fy)).min() < TREE_CLEARANCE_M:
        return None  # a tree crown between the camera and the sign
    hfov = float(rng.uniform(*REFERENCE_HFOV_RANGE_DEG))
    off = float(rng.uniform(0.03, 0.15)) * hfov * (1 if rng.random() < 0.5 else -1)
    yaw = (math.degrees(math.atan2(fx - x, fy - y)) + off) % 360.0
    condition = draw_condition(rng)
    light = REFERENCE_LIGHTING[int(rng.integers(len(REFERENCE_LIGHTING)))]
    lat, lon = ctx.city.frame.to_latlon(x, y)
    return {"scheme": REFERENCE_SCHEME, "placement": placement, "x_m": round(x, 3), "y_m": round(y, 3),
            "lat": float(lat), "lon": float(lon),
            "eye_height_m": round(float(rng.uniform(*REFERENCE_EYE_HEIGHT_RANGE_M)), 2),
            "yaw_deg": round(yaw, 3), "pitch_deg": round(float(rng.uniform(2.0, 10.0)), 2),
            "hfov_deg": round(hfov, 2), "width": REFERENCE_SIZE_PX[0], "height": REFERENCE_SIZE_PX[1],
            "condition": condition, "lighting": dict(light), "nearest_node_m": round(d_node, 3),
            "distance_m": round(dist, 3), "target_xy_m": [fx, fy], "population_key": f"reference/{poi.id}"}


def draw_condition(rng: np.random.Generator) -> str:
    """One condition of :data:`REFERENCE_CONDITIONS`, drawn with its probability (one uniform draw)."""
    names = list(REFERENCE_CONDITIONS)
    cum = np.cumsum([REFERENCE_CONDITIONS[n] for n in names])
    return names[min(int(np.searchsorted(cum, float(rng.random()) * cum[-1], side="right")), len(names) - 1)]


def reference_view_v1(ctx: GenContext, poi, node_tree: cKDTree, bldg_tree: STRtree | None,
                      rng: np.random.Generator) -> dict | None:
    """Generator version 1's camera of a reference photo of ``poi`` (module docstring; the specs of
    ``helsinki-arena7-v1``/``-v2``), or ``None`` when no valid spot exists; kept as the control of the
    view-distance and OCR measurements (benchmarks/bench_reference_goals.py).

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
                "eye_height_m": V1_EYE_HEIGHTS_M[int(rng.integers(len(V1_EYE_HEIGHTS_M)))],
                "yaw_deg": round(yaw, 3), "pitch_deg": 6.0, "hfov_deg": V1_HFOV_DEG,
                "width": REFERENCE_SIZE_PX[0], "height": REFERENCE_SIZE_PX[1], "lighting": dict(light),
                "nearest_node_m": round(d_node, 3), "target_xy_m": [poi.facade_xy[0], poi.facade_xy[1]]}
    return None


def reference_options(ctx: GenContext, poi, node_tree: cKDTree, bldg_tree: STRtree | None, bldgs,
                      trees: np.ndarray | None = None) -> list[dict]:
    """Up to :data:`REFERENCE_OPTIONS` valid cameras of ``poi`` (:func:`reference_view`) from at most
    :data:`REFERENCE_TRIES` draws, in the order drawn."""
    out: list[dict] = []
    for _ in range(REFERENCE_TRIES):
        view = reference_view(ctx, poi, node_tree, bldg_tree, bldgs, ctx.rng, trees)
        if view is not None:
            out.append(view)
            if len(out) == REFERENCE_OPTIONS:
                break
    return out


class ReferencePicker:
    """The reference checks of ``landmark_image`` candidates (a :attr:`Candidate.finalize`): the first of the
    POI's :func:`reference_options` that passes the goal-share check (``goal_share``: the photo shows the goal;
    module docstring) and whose smallest distance to the views at the goal nodes (:func:`goal_nodes`) is at
    least :data:`~urbanarena.render.view_distance.REFERENCE_MIN_DISTANCE` (``check``) becomes the candidate's
    reference (``extra.reference_view``, its image and ``extra.reference_check``: ``measure``, ``threshold``,
    ``min_view_distance``, the goal view it was found at, ``option``, and ``goal_share``); either hook may be
    ``None`` (not checked). Run once per POI, only for selected candidates (rendering the goal panoramas of
    every POI would cost minutes). :attr:`hidden` counts the cameras refused by the goal-share check."""

    def __init__(self, ctx: GenContext, check: ReferenceCheck | None, node_tree: cKDTree, node_ids: list[str],
                 goal_share: GoalShareCheck | None = None):
        self.ctx, self.check, self.node_tree, self.node_ids = ctx, check, node_tree, node_ids
        self.goal_share = goal_share
        self.hidden = 0
        self._done: dict[str, tuple[dict, dict] | None] = {}
        self._why: dict[str, str] = {}

    def pick(self, poi, options: list[dict]) -> tuple[dict, dict] | None:
        from urbanarena.render.view_distance import MEASURE_ID, REFERENCE_MIN_DISTANCE

        if poi.id not in self._done:
            nodes = goal_nodes(self.ctx, poi, self.node_tree, self.node_ids)
            got = None
            hidden = 0
            for i, view in enumerate(options):
                rec: dict[str, Any] = {}
                if self.goal_share is not None:
                    share = dict(self.goal_share(self.ctx.city, view, poi.id))
                    if not share["passed"]:
                        hidden += 1
                        continue
                    rec["goal_share"] = share
                if self.check is not None:
                    res = dict(self.check(self.ctx.city, view, nodes))
                    if res["min_view_distance"] < REFERENCE_MIN_DISTANCE:
                        continue
                    rec = {"measure": MEASURE_ID, "threshold": REFERENCE_MIN_DISTANCE, **res, **rec}
                got = (view, {**rec, "option": i})
                break
            self.hidden += hidden
            self._done[poi.id] = got
            if got is None:
                self._why[poi.id] = (
                    "reference photo: the goal is hidden (goal share below the threshold) in every camera tried"
                    if hidden == len(options) else
                    "reference photo: every camera tried hides the goal or lies closer than the view-distance "
                    "threshold to a goal view" if hidden else
                    "reference photo: every camera tried lies closer than the view-distance threshold to a goal view")
        return self._done[poi.id]

    def finalize_for(self, poi, options: list[dict]):
        def finalize(c: Candidate) -> str | None:
            got = self.pick(poi, options)
            if got is None:
                return self._why[poi.id]
            _set_reference(c, poi, *got)
            return None
        return finalize


def _set_reference(c: Candidate, poi, view: dict, checked: dict | None) -> None:
    c.fields["extra"]["reference_view"] = view
    if checked is not None:
        c.fields["extra"]["reference_check"] = checked
    c.images = [ImageSpec("reference_view", f"{c.kind}_{poi.id}", view)]


def _set_real_reference(c: Candidate, poi, view: dict, params: dict) -> None:
    """A real picture as the candidate's reference (:mod:`.real_references`): its record, the unchecked
    pixel visibility, and the image cut from the picture file."""
    from urbanarena.tasks.generators.real_references import VISIBILITY_NOTE, rules

    c.fields["extra"]["reference_view"] = view
    c.fields["extra"]["reference_check"] = {"visibility_in_pixels": "not checked", "note": VISIBILITY_NOTE,
                                            "confirmed_by_user": True, "rules": rules()}
    c.images = [ImageSpec("real_reference", f"{c.kind}_{poi.id}", params)]


def generate(ctx: GenContext, wanted: dict[str, int], kind: str = "landmark_language",
             reference_check: ReferenceCheck | None = None,
             goal_share: GoalShareCheck | None = None, real_references: Any = None) -> CandidatePool:
    """Landmark-search candidates of ``kind`` (module docstring); ``reference_check``: the view-distance
    hook of ``landmark_image`` references, ``goal_share`` their goal-share hook (none: not checked);
    ``real_references``: on a city of real pictures, the
    :class:`~urbanarena.tasks.generators.real_references.ReferenceFinder` whose picture of each goal POI is the
    reference (a POI without one gets no candidate, counted in ``rejected``)."""
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
    trees = (np.array([(o.x_m, o.y_m) for o in ctx.ann.objects_of_type("tree")], float).reshape(-1, 2)
             if ctx.ann is not None else None)
    picker = (ReferencePicker(ctx, reference_check, node_tree, node_ids, goal_share)
              if reference_check is not None or goal_share is not None else None)
    for poi in pois:
        options: list[dict] = []
        real = None
        if kind == "landmark_image" and real_references is not None:
            real = real_references.reference(ctx, poi)
            if real is None:
                pool.reject(NO_REAL_REFERENCE)
                continue
        elif kind == "landmark_image":
            options = reference_options(ctx, poi, node_tree, bldg_tree, bldgs, trees)
            if not options:
                pool.reject("no reference-photo viewpoint off the pose nodes")
                continue
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
                instruction = INSTRUCTIONS[kind].format(name=poi.name)
                cand = Candidate(
                    kind=kind, difficulty=diff, key=f"{s}->{poi.id}", group=poi.id,
                    stats={"path_length_m": float(dist[s]),
                           "straight_m": math.hypot(ctx.xy(s)[0] - fx, ctx.xy(s)[1] - fy)},
                    fields=dict(family="cityarena", city=ctx.city_ref, start=ctx.start(s, ctx.random_heading(s)),
                                goals=[poi_goal(ctx, poi)], success_radius_m=RADIUS_M, instruction=instruction,
                                answer_metric="coordinate_match", difficulty=diff, category=poi.category,
                                extra=extra))
                if real is not None:
                    _set_real_reference(cand, poi, *real)
                elif options and picker is not None:
                    cand.finalize = picker.finalize_for(poi, options)
                elif options:
                    _set_reference(cand, poi, options[0], None)
                pool.add(cand)
    if pool.total() == 0 and real_references is not None and pool.rejected.get(NO_REAL_REFERENCE) == len(pois):
        raise FamilyUnavailable(kind, f"none of the {len(pois)} goal POIs has a real reference picture that meets "
                                      "the rules (distance, angle, OSM occlusion, not a pose node's picture)")
    if pool.total() == 0:
        raise FamilyUnavailable(kind, "no start node within 200 m of any usable landmark")
    return pool
