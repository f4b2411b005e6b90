"""The UrbanGround ladder suite (``tasks generate --suite urbanground``): L1-L5 tasks with exact ground truth.

Every task is built from the city's own annotations (an OSM import: named POIs with
their facade and front points, street objects, the walkable network) and the
continuous environment's geometry (:class:`~urbanarena.env.continuous.WalkableSpace`
for free start/goal points, :class:`~urbanarena.env.continuous.WalkNetwork` for network
distances and routes). Family ``urbanground`` (:mod:`urbanarena.tasks.families.urbanground`);
docs: ``docs/continuous.md``, *The ladder*.

Sub-families and their ground truth (distances are network metres unless said otherwise;
"facade point" = the POI's ``facade_xy``; "front point" = its ``front_xy``, where its goal is):

``l1_visual_recognition``
    Start at a named POI's front point facing its facade point. "Which place is directly in
    front of you?" Four names: the POI's and three distractor names of named POIs whose every
    facade point lies >= 60 m from the start (no option but the answer is within 60 m).
``l1_orientation``
    Start at a free pose node; a named POI (no other POI of that name within 200 m) whose facade
    point lies 20-120 m away; the start yaw is drawn so that the POI's relative bearing lies
    within 30 degrees of one of ahead / to the right / behind / to the left (quadrant ``k``, jitter
    uniform in +-30). Options in that fixed order; answer quadrant ``k``.
``l1_active_exploration``
    "Which of these places is within 40 m of where you started?" One named POI with a facade
    point within 40 m (straight line); three distractor names none of whose POIs lies within
    150 m.
``l2_short_range`` / ``l2_long_range``
    Walk to a POI whose name is unique in the city; network distance 40-150 m / 250-800 m;
    long range: the goal is marked on the map (``extra.map_markers``), no route given.
``l2_instruction``
    A route from a free pose node to a pose node 80-250 m away along the network's shortest walk,
    described in words: legs merged while the turn is below 35 degrees and the street name stays
    the same; each turn "turn left/right" (35-135 degrees), "turn sharply left/right" (more);
    distances rounded to 10 m; 1-4 turns, every leg >= 8 m. The start yaw faces the first leg. Goal:
    the route's end.
``l2_constrained``
    As short range (80-300 m) plus a restricted zone: a regular octagon of circumradius 10 m centred
    on the shortest route at 40-60 % of its length, >= 25 m (plus the radius) from start and goal;
    the network without the edges within 1.5 m of it must still connect them with a walk at most
    2.5 x + 150 m the shortest. Entering the zone fails.
``l3_place_type_search`` / ``l3_implicit_intent``
    A need of the CitySeeker need mapping (:func:`~urbanarena.tasks.generators.needs_mapping.load_needs`;
    categories ``basic_poi`` + ``brand_specific`` / ``implicit_need`` + ``latent_poi``). Its
    places: the POIs (front point) and in-core street objects (their point) that satisfy it.
    Start: a free pose node whose nearest place is 50-400 m away. Success: within 15 m of any
    place (``extra.goal_points``); ``goals`` holds the nearest.
``l4_time_window``
    Two or three POIs with unique names, each leg 40-200 m, to visit in order; deadline of stop
    ``k`` = ``ceil(1.5 x (legs up to k) / 1.4 m/s + 30 s x k)`` simulated seconds (walking speed of
    the environment, 50 % slack, 30 s per stop).
``l4_multi_stop``
    Three POIs with unique names within 120 m of the start (network; >= 30 m in a straight line), pairwise
    >= 30 m apart, any order, whose shortest tour (best order, network) is at most 250 m (``extra.tour_m``;
    walkable in the 100-step limit); ``extra.mst_m`` is the network MST over start + stops (the
    route-efficiency bound). (Generator version 1: within 250 m, no tour bound; the oracle ran out of steps
    on nearly every tour over 300 m.)
``l5_road_closure``
    As short range (120-400 m) plus one closure (``extra.dynamics``, :mod:`urbanarena.env.continuous.dynamics`):
    a 30 m line across the shortest route at 40-70 % of its length (at least 60 m along it), >= 25 m
    from start and goal, announced after 30 s of simulated time (UrbanGround DynamicClosureNav's
    delay; the agent cannot reach it before), not physical; the network without the edges within
    1.5 m of it still connects start and goal within 2.5 x + 150 m. Crossing it once announced fails.
``l5_pedestrians``
    As short range (60-200 m) plus pedestrians on given routes at 1.2 m/s: one walks the agent's
    shortest route head-on (goal to start), up to seven more walk network routes of 30-200 m
    that cross it, between two pose nodes 10-60 m from it (version 1 drew the far end anywhere in the
    city: on the whole Helsinki city 399 of 400 draws found fewer than two). Touching one counts a
    collision (PCR).

Determinism: sub-family ``k`` (index in :data:`SUBFAMILY_ORDER`) draws from
``numpy.random.default_rng([seed, k])``; the same city, seed and arguments give a
byte-identical task file. A task the verifier (``verify(task) -> {"solved": bool, ...}``, the
``ug-oracle`` through the runner's continuous loop in the CLI) cannot solve is dropped and
counted in the report. A sub-family with too few candidates is reported with the shortfall and
``rejected`` (why draws gave no task, with counts: the builders of L4 multi-stop and L5 pedestrians say
why, the others count as "no candidate"; "a task drawn before" for a repeat).
Suite name (ours): ``<city>-urbanground-v1``.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import networkx as nx
import numpy as np
import shapely
from shapely.geometry import LineString, Point, Polygon

from urbanarena.env.continuous.env import ContinuousConfig
from urbanarena.errors import UrbanArenaError
from urbanarena.tasks.families.urbanground import LETTERS, PAPER_CONDITIONS, PROTOCOL_ID, SUBFAMILIES
from urbanarena.tasks.generators.cityseeker_needs import NeedMapping
from urbanarena.tasks.generators.urbanground_conditions import ALL_CONDITIONS, expand_conditions
from urbanarena.tasks.generators.urbanground_context import (  # noqa: F401  (GENERATOR_VERSION re-exported)
    GENERATOR_VERSION, GenContext, bearing_deg, build_context, distinct_names, facade_point, front_point, kind_label,
    make_task, shuffled_choice,
)
from urbanarena.tasks.schema import CityRef, Task, TaskFile
from urbanarena.world.city import City
from urbanarena.world.geo import wrap_deg

SUITE_VERSION = 1
#: sub-families in stream order (L5 added when the dynamic city is available)
SUBFAMILY_ORDER: tuple[str, ...] = tuple(SUBFAMILIES)
#: sub-families this generator makes
GENERATED: tuple[str, ...] = SUBFAMILY_ORDER
#: L5 closure: notice delay (UrbanGround DynamicClosureNav's 30 s), closure line half-length, least distance
#: along the route (the agent cannot reach it before the notice: 1.4 m/s x 30 s = 42 m plus margin)
CLOSURE_NOTICE_S = 30.0
CLOSURE_HALF_LENGTH_M = 15.0
CLOSURE_MIN_ALONG_M = 60.0
PEDESTRIANS_PER_TASK = 8
#: L4 multi-stop: stops within this network distance of the start, and the shortest tour over start + stops (best
#: order, network metres) at most this long: a walker covers 2.8 m per step (a 2 s move, the longest) and spends
#: steps on turning, so the ug-oracle's longest tour within the family's 100 steps is about 300 m (measured on
#: the whole Helsinki city; generator version 1 drew tours of 270-920 m and the oracle ran out of steps on 97 %)
MULTI_STOP_RADIUS_M = 120.0
MULTI_STOP_TOUR_MAX_M = 250.0
MULTI_STOP_TRIES = 10  # draws of three stops per start
ORIENTATION_WORDS = ("ahead", "to the right", "behind", "to the left")
WALK_MPS = ContinuousConfig().walk_speed_mps
MAX_ATTEMPTS = 400

Verifier = Callable[[Task], dict[str, Any]]


def suite_name(city_name: str) -> str:
    return f"{city_name}-urbanground-v{SUITE_VERSION}"


def _visual(ctx: GenContext, rng) -> Task | None:
    p = ctx.pois[int(rng.integers(len(ctx.pois)))]
    if p.facade_xy is None:
        return None
    start = front_point(ctx, p)
    if not 2.0 <= math.dist(start, facade_point(p)) <= 30.0:
        return None
    d = distinct_names(ctx, rng, {p.name.casefold()}, start, 60.0, 3)
    if d is None:
        return None
    options, ans = shuffled_choice(rng, p.name, d)
    return make_task(ctx, "l1_visual_recognition", start, bearing_deg(start, facade_point(p)),
                 "Look at the building you are facing. Which place is directly in front of you?", answer=ans,
                 options=options, target_name=p.name, target_poi=p.id)


def _orientation(ctx: GenContext, rng) -> Task | None:
    start = ctx.xy(ctx.nodes[int(rng.integers(len(ctx.nodes)))])
    cand = [p for p in ctx.pois if 20.0 <= math.dist(start, facade_point(p)) <= 120.0]
    if not cand:
        return None
    p = cand[int(rng.integers(len(cand)))]
    if sum(1 for q in ctx.pois if q.name.casefold() == p.name.casefold() and math.dist(start, facade_point(q)) < 200) != 1:
        return None
    k = int(rng.integers(4))
    jitter = float(rng.uniform(-30.0, 30.0))
    yaw = wrap_deg(bearing_deg(start, facade_point(p)) - 90.0 * k - jitter)
    return make_task(ctx, "l1_orientation", start, yaw,
                 f"Relative to the direction you are facing now, where is {p.name}?", answer=LETTERS[k],
                 options=list(ORIENTATION_WORDS), target_name=p.name, target_poi=p.id,
                 relative_bearing_deg=round(90.0 * k + jitter, 3))


def _exploration(ctx: GenContext, rng) -> Task | None:
    start = ctx.xy(ctx.nodes[int(rng.integers(len(ctx.nodes)))])
    near = [p for p in ctx.pois if math.dist(start, facade_point(p)) <= 40.0]
    if not near:
        return None
    p = near[int(rng.integers(len(near)))]
    d = distinct_names(ctx, rng, {q.name.casefold() for q in near}, start, 150.0, 3)
    if d is None:
        return None
    options, ans = shuffled_choice(rng, p.name, d)
    return make_task(ctx, "l1_active_exploration", start, float(rng.uniform(0, 360)),
                 "Look around and explore. Which of these places is within 40 m of where you started?",
                 answer=ans, options=options, target_name=p.name, target_poi=p.id)


def _unique_pois(ctx: GenContext) -> list[Any]:
    return [p for p in ctx.pois if ctx.name_count[p.name.casefold()] == 1]


def _start_and_poi(ctx: GenContext, rng, lo: float, hi: float, min_straight_m: float = 0.0):
    """A random start node's position and, among up to 40 POIs in random order, the first whose front
    is ``lo``-``hi`` metres away along the network (and at least ``min_straight_m`` in a straight line).

    Returns: ``(start_xy, poi, goal_xy, network_distance_m)``, or ``None`` when no POI qualifies.
    """
    start = ctx.xy(ctx.nodes[int(rng.integers(len(ctx.nodes)))])
    uniq = _unique_pois(ctx)
    for i in [int(k) for k in rng.permutation(len(uniq))][:40]:
        p = uniq[i]
        goal = front_point(ctx, p)
        d = ctx.nd(start, goal)
        if lo <= d <= hi and math.dist(start, goal) >= min_straight_m:
            return start, p, goal, d
    return None


def _goto(ctx: GenContext, rng, sub: str, lo: float, hi: float) -> Task | None:
    found = _start_and_poi(ctx, rng, lo, hi, min_straight_m=25.0)
    if found is None:
        return None
    start, p, goal, d = found
    if sub == "l2_long_range":
        lat, lon = ctx.city.frame.to_latlon(*goal)
        return make_task(ctx, sub, start, float(rng.uniform(0, 360)),
                     f"Go to {p.name} ({kind_label(p)}). It is marked on your map (open_map); no route is given. "
                     "Stop in front of it.", goals=[(goal, p.name)], route_m=round(d, 2), target_poi=p.id,
                     map_markers=[{"label": p.name, "lat": float(lat), "lon": float(lon)}])
    if sub == "l2_constrained":
        return _constrained(ctx, rng, start, goal, p, d)
    return make_task(ctx, sub, start, float(rng.uniform(0, 360)),
                 f"Walk to {p.name} ({kind_label(p)}) and stop in front of it.", goals=[(goal, p.name)],
                 route_m=round(d, 2), target_poi=p.id)


def _octagon(c, r: float) -> list[tuple[float, float]]:
    return [(c[0] + r * math.sin(math.radians(22.5 + 45 * i)), c[1] + r * math.cos(math.radians(22.5 + 45 * i)))
            for i in range(8)]


def _route_avoiding(ctx: GenContext, a, b, avoid) -> float:
    """Network walk length from ``a`` to ``b`` without the edges within 1.5 m of ``avoid`` (``inf`` if none)."""
    net = ctx.net
    zone = avoid.buffer(1.5)
    xy = net.node_xy
    g = nx.Graph((u, v, d) for u, v, d in net.graph.edges(data=True)
                 if not zone.intersects(LineString([xy[u], xy[v]])))
    best = math.inf
    sa, sb = net.snap(*a), net.snap(*b)
    for na, da in ((sa.u, sa.offset_m), (sa.v, sa.length_m - sa.offset_m)):
        if zone.intersects(LineString([sa.point, xy[na]])) or na not in g:
            continue
        lengths = nx.single_source_dijkstra_path_length(g, na, weight="length_m")
        for nb, db in ((sb.u, sb.offset_m), (sb.v, sb.length_m - sb.offset_m)):
            if nb in lengths and not zone.intersects(LineString([sb.point, xy[nb]])):
                best = min(best, da + lengths[nb] + db)
    return best


def _constrained(ctx: GenContext, rng, start, goal, p, d: float) -> Task | None:
    if not 80.0 <= d <= 300.0:
        return None
    route = LineString(ctx.net.shortest_walk(start, goal))
    r = 10.0
    f = float(rng.uniform(0.4, 0.6))
    c = route.interpolate(f, normalized=True)
    centre = (float(c.x), float(c.y))
    if math.dist(centre, start) < 25.0 + r or math.dist(centre, goal) < 25.0 + r:
        return None
    ring = _octagon(centre, r)
    zone = Polygon(ring)
    alt = _route_avoiding(ctx, start, goal, zone)
    if not alt <= 2.5 * d + 150.0:
        return None
    lat, lon = ctx.city.frame.to_latlon(*centre)
    glat, glon = ctx.city.frame.to_latlon(*goal)
    ring_ll = [[float(a), float(b)] for a, b in (ctx.city.frame.to_latlon(x, y) for x, y in ring)]
    return make_task(ctx, "l2_constrained", start, float(rng.uniform(0, 360)),
                 f"Walk to {p.name} ({kind_label(p)}) and stop in front of it. Do not enter the restricted zone: "
                 f"the area within {r:.0f} m of lat {float(lat):.6f}, lon {float(lon):.6f} (marked 'restricted zone' "
                 "on your map). Entering it fails the task.", goals=[(goal, p.name)], route_m=round(d, 2),
                 detour_route_m=round(alt, 2), target_poi=p.id, restricted_zones=[ring_ll],
                 map_markers=[{"label": p.name, "lat": float(glat), "lon": float(glon)},
                              {"label": "restricted zone", "lat": float(lat), "lon": float(lon)}])


def _street_at(ctx: GenContext, a, b) -> str | None:
    m = ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)
    return ctx.net.street_name_at(*m, max_m=0.5)


def describe_route(ctx: GenContext, pts: Sequence[tuple[float, float]]) -> tuple[list[dict[str, Any]], int]:
    """Legs of a polyline: merged while the turn stays below 35 degrees and the street name is the same.

    Returns: ``(legs, turns)``; a leg is ``{"bearing_deg", "length_m", "street", "turn_deg"}`` (turn into the
    leg, signed, positive = right; 0 for the first).
    """
    legs: list[dict[str, Any]] = []
    for a, b in zip(pts, pts[1:]):
        L = math.dist(a, b)
        if L < 1e-6:
            continue
        br = bearing_deg(a, b)
        st = _street_at(ctx, a, b)
        if legs:
            turn = (br - legs[-1]["end_bearing"] + 180.0) % 360.0 - 180.0
            if abs(turn) < 35.0 and st == legs[-1]["street"]:
                legs[-1]["length_m"] += L
                legs[-1]["end_bearing"] = br
                continue
            legs.append({"bearing_deg": br, "end_bearing": br, "length_m": L, "street": st, "turn_deg": turn})
        else:
            legs.append({"bearing_deg": br, "end_bearing": br, "length_m": L, "street": st, "turn_deg": 0.0})
    turns = sum(1 for lg in legs[1:] if abs(lg["turn_deg"]) >= 35.0)
    return legs, turns


def _turn_words(t: float) -> str:
    a = abs(t)
    side = "right" if t > 0 else "left"
    if a < 35.0:
        return "continue straight"
    return f"turn {side}" if a <= 135.0 else f"turn sharply {side}"


def _instruction(ctx: GenContext, rng) -> Task | None:
    s = ctx.nodes[int(rng.integers(len(ctx.nodes)))]
    start = ctx.xy(s)
    order = [int(i) for i in rng.permutation(len(ctx.nodes))][:60]
    for i in order:
        goal = ctx.xy(ctx.nodes[i])
        d = ctx.nd(start, goal)
        if not 80.0 <= d <= 250.0:
            continue
        pts = ctx.net.shortest_walk(start, goal)
        pts = [start] + [p for p in pts if math.dist(p, start) > 1e-6]
        if math.dist(pts[-1], goal) > 1e-6:
            pts.append(goal)
        legs, turns = describe_route(ctx, pts)
        if 1 <= turns <= 4 and all(lg["length_m"] >= 8.0 for lg in legs):
            break
    else:
        return None
    words = []
    for j, lg in enumerate(legs):
        dist = max(10, int(round(lg["length_m"] / 10.0)) * 10)
        along = f" along {lg['street']}" if lg["street"] else ""
        if j == 0:
            words.append(f"Walk straight ahead{along} for about {dist} m.")
        else:
            onto = f" onto {lg['street']}" if lg["street"] else ""
            words.append(f"Then {_turn_words(lg['turn_deg'])}{onto} and walk about {dist} m.")
    words.append("Stop there.")
    return make_task(ctx, "l2_instruction", start, legs[0]["bearing_deg"], " ".join(words), goals=[(goal, "route end")],
                 route_m=round(d, 2), turns=turns,
                 route_legs=[{"bearing_deg": round(lg["bearing_deg"], 2), "length_m": round(lg["length_m"], 2),
                              "street": lg["street"], "turn_deg": round(lg["turn_deg"], 2)} for lg in legs])


def need_places(ctx: GenContext, need) -> list[tuple[tuple[float, float], str]]:
    """Places that satisfy ``need``: POIs (free front point) and in-core street objects (their point), with labels."""
    ann = ctx.city.annotations
    out = []
    for p in sorted(list(ann.pois) + list(ann.standalone_pois), key=lambda p: p.id):
        if p.front_xy is not None and need.matches(p.tags, None):
            f = ctx.space.nearest_free(*p.front_xy, max_m=2.0)
            if f is not None:
                out.append(((float(f[0]), float(f[1])), p.name or kind_label(p)))
    for o in sorted(ann.objects, key=lambda o: o.id):
        if o.in_core and need.matches(o.tags, o.type):
            out.append(((float(o.x_m), float(o.y_m)), o.name or o.type.replace("_", " ")))
    return out


def _search(ctx: GenContext, rng, sub: str) -> Task | None:
    cats = ("basic_poi", "brand_specific") if sub == "l3_place_type_search" else ("implicit_need", "latent_poi")
    needs = [n for n in ctx.needs.needs if n.category in cats]
    if not needs:
        return None
    need = needs[int(rng.integers(len(needs)))]
    places = need_places(ctx, need)
    if not places:
        return None
    start = ctx.xy(ctx.nodes[int(rng.integers(len(ctx.nodes)))])
    if any(math.dist(start, xy) <= 15.0 for xy, _ in places):
        return None
    dists = [ctx.nd(start, xy) for xy, _ in places]
    j = int(np.argmin(dists))
    if not 50.0 <= dists[j] <= 400.0:
        return None
    text = need.instructions[int(rng.integers(len(need.instructions)))]
    gp = []
    for xy, label in places:
        pos = ctx.pos(xy)
        gp.append({"lat": pos.lat, "lon": pos.lon, "label": label})
    return make_task(ctx, sub, start, float(rng.uniform(0, 360)), f"{text} Stop when you are there.",
                 goals=[places[j]], need=need.id, need_label=need.label, goal_points=gp, route_m=round(dists[j], 2))


def _stops(ctx: GenContext, rng, start, n: int, leg_lo: float, leg_hi: float, radius: float | None) -> list[Any] | None:
    uniq = _unique_pois(ctx)
    chosen: list[Any] = []
    here = start
    for _ in range(n):
        ok = None
        for i in [int(k) for k in rng.permutation(len(uniq))][:40]:
            p = uniq[i]
            f = front_point(ctx, p)
            if p in chosen or any(math.dist(f, front_point(ctx, q)) < 30.0 for q in chosen) or math.dist(f, start) < 30.0:
                continue
            if radius is not None and ctx.nd(start, f) > radius:
                continue
            if leg_lo <= ctx.nd(here, f) <= leg_hi:
                ok = p
                break
        if ok is None:
            return None
        chosen.append(ok)
        here = front_point(ctx, ok) if radius is None else here
    return chosen


def _schedule(ctx: GenContext, rng) -> Task | None:
    start = ctx.xy(ctx.nodes[int(rng.integers(len(ctx.nodes)))])
    n = 2 + int(rng.integers(2))
    stops = _stops(ctx, rng, start, n, 40.0, 200.0, None)
    if stops is None:
        return None
    pts = [start] + [front_point(ctx, p) for p in stops]
    legs = [ctx.nd(a, b) for a, b in zip(pts, pts[1:])]
    deadlines = [float(math.ceil(1.5 * sum(legs[: k + 1]) / WALK_MPS + 30.0 * (k + 1))) for k in range(n)]
    lines = " ".join(f"{k + 1}. {p.name} by t = {deadlines[k]:.0f} s." for k, p in enumerate(stops))
    markers = []
    for p, xy in zip(stops, pts[1:]):
        lat, lon = ctx.city.frame.to_latlon(*xy)
        markers.append({"label": p.name, "lat": float(lat), "lon": float(lon)})
    return make_task(ctx, "l4_time_window", start, float(rng.uniform(0, 360)),
                 "Visit these places in this order, reaching each by its deadline (simulated seconds since the start; "
                 f"your state shows time_s): {lines} Stop at the last one.",
                 goals=[(xy, p.name) for p, xy in zip(stops, pts[1:])], deadlines_s=deadlines,
                 legs_m=[round(v, 2) for v in legs], map_markers=markers)


def _multi(ctx: GenContext, rng) -> Task | None:
    from urbanarena.tasks.metrics.urbanground import mst_lower_bound_m

    start = ctx.xy(ctx.nodes[int(rng.integers(len(ctx.nodes)))])
    # every unique-name POI in reach (network distances from one start share one Dijkstra), then three of them
    cand = [p for p in _unique_pois(ctx) if math.dist(front_point(ctx, p), start) >= 30.0
            and ctx.nd(start, front_point(ctx, p)) <= MULTI_STOP_RADIUS_M]
    for _ in range(MULTI_STOP_TRIES):
        stops: list[Any] = []
        for i in [int(k) for k in rng.permutation(len(cand))]:
            f = front_point(ctx, cand[i])
            if all(math.dist(f, front_point(ctx, q)) >= 30.0 for q in stops):
                stops.append(cand[i])
            if len(stops) == 3:
                break
        if len(stops) < 3:
            ctx.reject(f"fewer than 3 unique-name places >= 30 m apart within {MULTI_STOP_RADIUS_M:.0f} m")
            return None
        pts = [front_point(ctx, p) for p in stops]
        tour = min(sum(ctx.nd(a, b) for a, b in zip([start, *o], o)) for o in itertools.permutations(pts))
        if tour <= MULTI_STOP_TOUR_MAX_M:
            break
    else:
        ctx.reject(f"no 3 stops with a tour within {MULTI_STOP_TOUR_MAX_M:.0f} m in {MULTI_STOP_TRIES} draws")
        return None
    mst = mst_lower_bound_m(start, pts, ctx.net)
    markers = []
    for p, xy in zip(stops, pts):
        lat, lon = ctx.city.frame.to_latlon(*xy)
        markers.append({"label": p.name, "lat": float(lat), "lon": float(lon)})
    names = ", ".join(p.name for p in stops)
    return make_task(ctx, "l4_multi_stop", start, float(rng.uniform(0, 360)),
                 f"Visit all of these places, in any order, with as short a walk as you can, then stop: {names}.",
                 goals=[(xy, p.name) for p, xy in zip(stops, pts)], mst_m=round(mst, 2), tour_m=round(tour, 2),
                 map_markers=markers)


def _closure(ctx: GenContext, rng) -> Task | None:
    found = _start_and_poi(ctx, rng, 120.0, 400.0)
    if found is None:
        return None
    start, p, goal, d = found
    route = LineString(ctx.net.shortest_walk(start, goal))
    at = float(rng.uniform(max(CLOSURE_MIN_ALONG_M, 0.4 * route.length), 0.7 * route.length))
    c = route.interpolate(at)
    a, b = route.interpolate(max(0.0, at - 1.0)), route.interpolate(min(route.length, at + 1.0))
    br = math.radians(bearing_deg((a.x, a.y), (b.x, b.y)) + 90.0)
    h = CLOSURE_HALF_LENGTH_M
    line = [(c.x - h * math.sin(br), c.y - h * math.cos(br)), (c.x + h * math.sin(br), c.y + h * math.cos(br))]
    geom = LineString(line)
    if geom.distance(Point(start)) < 25.0 or geom.distance(Point(goal)) < 25.0:
        return None
    alt = _route_avoiding(ctx, start, goal, geom)
    if not alt <= 2.5 * d + 150.0:
        return None
    spec = {"closures": [{"id": "c1", "line_xy_m": [[round(x, 3), round(y, 3)] for x, y in line], "half_width_m": 0.0,
                          "notice_after_s": CLOSURE_NOTICE_S, "physical": False, "label": "road works"}]}
    return make_task(ctx, "l5_road_closure", start, float(rng.uniform(0, 360)),
                 f"Walk to {p.name} ({kind_label(p)}) and stop in front of it. Roads may be closed on the way: a "
                 "closure notice will tell you; never cross a closed road (crossing it fails the task).",
                 goals=[(goal, p.name)], route_m=round(d, 2), detour_route_m=round(alt, 2), target_poi=p.id,
                 closure_along_m=round(at, 2), dynamics=spec)


def _pedestrians(ctx: GenContext, rng) -> Task | None:
    found = _start_and_poi(ctx, rng, 60.0, 200.0)
    if found is None:
        ctx.reject("no unique-name place 60-200 m away among 40 drawn")
        return None
    start, p, goal, d = found
    walk = ctx.net.shortest_walk(start, goal)
    route = LineString(walk)
    routes = [[[round(x, 3), round(y, 3)] for x, y in reversed(walk)]]  # head-on along the agent's own route
    # crossing walkers run between two pose nodes 10-60 m from the route (both ends drawn near it: drawn over
    # the whole city, as in generator version 1, almost no pair qualified on a city larger than the core)
    if ctx.node_xy is None:
        ctx.node_xy = np.array([ctx.xy(n) for n in ctx.nodes], dtype=float)
    xy = ctx.node_xy
    off = shapely.distance(route, shapely.points(xy))
    near = [i for i in range(len(ctx.nodes)) if 10.0 <= off[i] <= 60.0]
    if len(near) < 2:
        ctx.reject("fewer than 2 crossing walkers")
        return None
    for j in [int(k) for k in rng.permutation(len(near))][:200]:
        a = (float(xy[near[j], 0]), float(xy[near[j], 1]))
        bi = near[int(rng.integers(len(near)))]
        b = (float(xy[bi, 0]), float(xy[bi, 1]))
        try:
            w = ctx.net.shortest_walk(a, b)
        except ValueError:  # on parts of the network that do not connect
            continue
        if len(w) >= 2 and 30.0 <= LineString(w).length <= 200.0 and LineString(w).intersects(route):
            routes.append([[round(x, 3), round(y, 3)] for x, y in w])
        if len(routes) >= PEDESTRIANS_PER_TASK:
            break
    if len(routes) < 3:
        ctx.reject("fewer than 2 crossing walkers")
        return None
    spec = {"pedestrians": {"routes": routes, "count": len(routes), "speed_mps": 1.2}}
    return make_task(ctx, "l5_pedestrians", start, float(rng.uniform(0, 360)),
                 f"Walk to {p.name} ({kind_label(p)}) and stop in front of it. People walk around you: do not bump "
                 "into anyone.", goals=[(goal, p.name)], route_m=round(d, 2), target_poi=p.id, dynamics=spec)


BUILDERS: dict[str, Callable[[GenContext, Any], Task | None]] = {
    "l1_visual_recognition": _visual,
    "l1_orientation": _orientation,
    "l1_active_exploration": _exploration,
    "l2_short_range": lambda c, r: _goto(c, r, "l2_short_range", 40.0, 150.0),
    "l2_long_range": lambda c, r: _goto(c, r, "l2_long_range", 250.0, 800.0),
    "l2_instruction": _instruction,
    "l2_constrained": lambda c, r: _goto(c, r, "l2_constrained", 80.0, 300.0),
    "l3_place_type_search": lambda c, r: _search(c, r, "l3_place_type_search"),
    "l3_implicit_intent": lambda c, r: _search(c, r, "l3_implicit_intent"),
    "l4_time_window": _schedule,
    "l4_multi_stop": _multi,
    "l5_road_closure": _closure,
    "l5_pedestrians": _pedestrians,
}


@dataclass
class UrbanGroundSuite:
    """A generated suite: ``task_file``, ``report`` (per sub-family: requested, produced, attempts,
    verification failures, shortfall) and ``name``."""

    task_file: TaskFile
    report: dict[str, Any]
    name: str


def _key(t: Task) -> str:
    g = t.goals[-1].position if t.goals else None
    return f"{t.start.position.lat:.6f},{t.start.position.lon:.6f}|{g.lat if g else ''},{t.extra.get('target_poi')}"


def generate_urbanground_suite(city: City, *, per_family: int = 5, seed: int = 0,
                               subfamilies: Sequence[str] | None = None, needs: NeedMapping | None = None,
                               verify: Verifier | None = None, name: str | None = None,
                               condition: str | None = None) -> UrbanGroundSuite:
    """Generate the ladder suite (module docstring).

    Args:
        city: an annotated (OSM) city.
        per_family: tasks per sub-family (>= 1).
        seed: seed of every stream.
        subfamilies: subset of :data:`GENERATED` (default all).
        needs: need mapping for L3 (default the built-in one).
        verify: ``task -> {"solved": bool, ...}``; unsolved tasks are dropped.
        name: suite name (default :func:`suite_name`).
        condition: render condition (weather / time of day, e.g. ``night``, ``fog``, ``rain+dusk``) set as
            ``extra.dynamics.condition`` of every task: what agents that look at images are shown. Drawn
            after the rest, so the tasks are otherwise those of the clear-day suite of the same seed.
            ``"all"``: every task once per condition of :data:`PAPER_CONDITIONS`, ids ``<id>@<condition>``,
            ``extra.base_task_id`` = ``<id>`` (:mod:`urbanarena.tasks.generators.urbanground_conditions`);
            the report's ``produced`` counts base tasks, ``base_tasks`` and ``conditions`` say how many and which.
    Raises:
        UrbanArenaError: no annotations, ``per_family < 1``, an unknown sub-family, an unknown condition.
    """
    if per_family < 1:
        raise UrbanArenaError("--per-family must be at least 1")
    if condition is not None and condition != ALL_CONDITIONS:
        from urbanarena.render.scene3d.conditions import parse_condition

        try:
            parse_condition(condition)
        except ValueError as e:
            raise UrbanArenaError(f"--condition: {e}") from None
    subs = tuple(subfamilies) if subfamilies else GENERATED
    bad = [s for s in subs if s not in BUILDERS]
    if bad:
        raise UrbanArenaError(f"unknown or unavailable urbanground sub-families {', '.join(bad)}; "
                              f"known: {', '.join(GENERATED)}")
    ctx = build_context(city, needs)
    tasks: list[Task] = []
    report: dict[str, Any] = {"suite": name or suite_name(city.name), "seed": seed, "per_family": per_family,
                              "generator_version": GENERATOR_VERSION, "protocol": PROTOCOL_ID, "families": {}}
    for sub in subs:
        k = SUBFAMILY_ORDER.index(sub)
        rng = np.random.default_rng([int(seed), k])
        got: list[Task] = []
        seen: set[str] = set()
        attempts = failures = 0
        rejected: dict[str, int] = {}
        while len(got) < per_family and attempts < MAX_ATTEMPTS:
            attempts += 1
            ctx.why = None
            t = BUILDERS[sub](ctx, rng)
            if t is None or _key(t) in seen:
                why = "a task drawn before" if t is not None else ctx.why or "no candidate"
                rejected[why] = rejected.get(why, 0) + 1
                continue
            seen.add(_key(t))
            t.task_id = f"{city.name}/ug/{sub}/{len(got):03d}"
            if verify is not None and not verify(t).get("solved"):
                failures += 1
                continue
            got.append(t)
        rep = {"requested": per_family, "produced": len(got), "attempts": attempts, "verification_failures": failures,
               "level": SUBFAMILIES[sub][0]}
        if len(got) < per_family:
            why = "; ".join(f"{n} x {w}" for w, n in sorted(rejected.items(), key=lambda kv: (-kv[1], kv[0])))
            rep["shortfall"] = (f"{per_family - len(got)} short after {attempts} attempts (too few candidates here"
                                + (f": {why}" if why else "") + ")")
        if rejected:
            rep["rejected"] = dict(sorted(rejected.items()))
        report["families"][sub] = rep
        tasks.extend(got)
    if condition == ALL_CONDITIONS:
        report.update(condition=ALL_CONDITIONS, conditions=list(PAPER_CONDITIONS), base_tasks=len(tasks))
        tasks = expand_conditions(tasks, PAPER_CONDITIONS)
    elif condition is not None:
        report["condition"] = condition
        for t in tasks:
            t.extra["dynamics"] = {**(t.extra.get("dynamics") or {}), "condition": condition}
    tf = TaskFile(city=CityRef(name=city.name, content_hash=city.content_hash), tasks=tasks)
    return UrbanGroundSuite(tf, report, report["suite"])


def save_urbanground_suite(suite: UrbanGroundSuite, out: str | Path) -> Path:
    """Write the task file to ``out`` and the report to ``<out stem>.report.json``; returns ``out``."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    suite.task_file.save(out)
    rep = out.with_name((out.name[: -len(out.suffix)] if out.suffix else out.name) + ".report.json")
    rep.write_text(json.dumps(suite.report, indent=1, sort_keys=True), encoding="utf-8")
    return out


__all__ = ["BUILDERS", "GENERATED", "ORIENTATION_WORDS", "SUBFAMILY_ORDER", "UrbanGroundSuite", "describe_route",
           "generate_urbanground_suite", "need_places", "save_urbanground_suite", "suite_name"]
