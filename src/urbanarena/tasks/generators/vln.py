"""Vision-language navigation: numbered walking directions ending "stop in front of X".

Route: the graph shortest path from a start node to the pose node of a
uniquely named POI X (goal: X's front point, 10 m, ``coordinate_match``). The
start heading is the route's first edge, and the start is not a decision point
(the first direction is always "walk straight ahead"). Decision points are the
route's nodes where the arena shows arrows (:func:`~.common.analyse_route`);
at each, the route goes ``straight`` (turn under 30 degrees), ``left`` or
``right``. Routes are kept only when every decision point is unambiguous (no
other offered branch reads the same way), the walk follows the route by itself
between decision points, and no turn comes more than five intersections after
the previous direction.

Directions (our own wording), one numbered step each:

1. ``Walk straight ahead.``
2. per turn: ``Turn left|right at the first|second|... intersection`` — counted
   from the previous direction, straight-on intersections included — plus
   ``, where you see <POI>`` when a uniquely named POI's front point lies
   within 15 m of that intersection (the landmark at the decision point; not
   repeated when the previous turn named the same one);
3. after a turn, ``Keep going straight.`` unless the next turn or the goal
   follows within 25 m with no intersection in between;
4. ``Stop in front of <X>, on your left|right.`` (X's facade relative to the
   last walking direction).

``instruction_steps`` (the number of numbered steps) is calibrated against
360CityArena's 4.4 / 5.9 / 7.4; candidate bands by route length: ``easy``
50–160 m, ``medium`` 100–230 m, ``hard`` 150–260 m.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
from scipy.spatial import cKDTree

from urbanarena.tasks.generators.common import (
    PLAN_MARGIN_STEPS,
    Candidate,
    CandidatePool,
    FamilyUnavailable,
    GenContext,
    analyse_route,
    estimated_steps,
    poi_goal,
    side_of,
)
from urbanarena.tasks.generators.landmark import MAX_FRONT_NODE_M, goal_pois

KIND = "vln"
RADIUS_M = 10.0
BANDS_M = {"easy": (50.0, 160.0), "medium": (100.0, 230.0), "hard": (150.0, 260.0)}
LANDMARK_NEAR_DP_M = 15.0
SHORT_LEG_M = 25.0
ORDINALS = ("first", "second", "third", "fourth", "fifth")


def directions(ctx: GenContext, path: list[str], info, goal_poi, landmarks: list,
               lm_tree: cKDTree | None) -> list[str] | None:
    """The numbered steps for a route (module docstring), or ``None`` when it cannot be described."""
    steps = ["Walk straight ahead."]
    since = 0  # decision points since the last direction
    last_landmark = None
    turns = [dp for dp in info.decisions if dp.direction != "straight"]
    if not turns:
        return None
    for i, dp in enumerate(info.decisions):
        if dp.ambiguous():
            return None
        since += 1
        if dp.direction == "straight":
            continue
        if since > len(ORDINALS):
            return None
        text = f"Turn {dp.direction} at the {ORDINALS[since - 1]} intersection"
        if lm_tree is not None:
            x, y = ctx.xy(dp.node)
            hits = sorted(lm_tree.query_ball_point((x, y), LANDMARK_NEAR_DP_M))
            hits = [landmarks[h] for h in hits if landmarks[h].id != goal_poi.id]
            if hits:
                best = min(hits, key=lambda p: (math.hypot(p.front_xy[0] - x, p.front_xy[1] - y), p.id))
                if best.id != last_landmark:  # the same landmark twice in a row tells nothing
                    text += f", where you see {best.name}"
                last_landmark = best.id
            else:
                last_landmark = None
        steps.append(text + ".")
        since = 0
        nxt = next((d for d in info.decisions if d.index > dp.index), None)
        next_along = nxt.along_m if nxt is not None else info.length_m
        if not (next_along - dp.along_m < SHORT_LEG_M and (nxt is None or nxt.direction != "straight")):
            steps.append("Keep going straight.")
    last_dir = ctx.azimuth(path[-2], path[-1])
    side = side_of(last_dir, ctx.xy(path[-1]), goal_poi.facade_xy)
    steps.append(f"Stop in front of {goal_poi.name}, on your {side}.")
    return steps


def generate(ctx: GenContext, wanted: dict[str, int]) -> CandidatePool:
    """VLN candidates (module docstring)."""
    pool = CandidatePool(KIND)
    pois = goal_pois(ctx, KIND)
    landmarks = [p for p in pois if p.node_distance_m is not None and p.node_distance_m <= MAX_FRONT_NODE_M]
    lm_tree = cKDTree(np.array([p.front_xy for p in landmarks])) if landmarks else None
    rev = ctx.city.graph.reverse(copy=False)
    per_band = 2
    for poi in pois:
        dist, paths = nx.single_source_dijkstra(rev, poi.node_id, cutoff=BANDS_M["hard"][1], weight="length_m")
        for diff, (lo, hi) in BANDS_M.items():
            starts = sorted(n for n, d in dist.items() if lo <= d <= hi and ctx.in_area(n))
            if not starts:
                continue
            picks = ctx.rng.choice(len(starts), size=min(per_band, len(starts)), replace=False)
            for k in sorted(int(i) for i in picks):
                s = starts[k]
                path = list(reversed(paths[s]))
                if len(path) < 3:
                    continue
                heading = ctx.azimuth(path[0], path[1])
                br = ctx.motion.branches_at(s, heading)
                if len(br) != 1 or br[0].target != path[1]:
                    pool.reject("start at a decision point")
                    continue
                info = analyse_route(ctx, path)
                if not info.followable:
                    pool.reject("route not followable between decision points")
                    continue
                steps = directions(ctx, path, info, poi, landmarks, lm_tree)
                if steps is None:
                    pool.reject("route without a turn, with an ambiguous or far decision point")
                    continue
                text = "\n".join(f"{i}. {t}" for i, t in enumerate(steps, 1))
                instruction = ("Follow these directions to your destination:\n" + text +
                               "\nWhen you have arrived, answer to confirm.")
                cand = Candidate(
                    kind=KIND, difficulty=diff, key=f"{s}->{poi.id}", group=poi.id,
                    stats={"instruction_steps": float(len(steps)), "path_length_m": info.length_m,
                           "decision_points": float(info.decision_points),
                           "turns": float(sum(1 for d in info.decisions if d.direction != "straight"))},
                    fields=dict(family="cityarena", city=ctx.city_ref, start=ctx.start(s, heading),
                                goals=[poi_goal(ctx, poi)], success_radius_m=RADIUS_M, instruction=instruction,
                                answer_metric="coordinate_match", reference_path=path, difficulty=diff,
                                category="turn_by_turn",
                                extra={"task_kind": KIND, "landmark": poi.name, "poi_id": poi.id,
                                       "directions": steps, "requires_current_location": False}))
                if ctx.plan_steps is not None and estimated_steps(info, RADIUS_M) >= ctx.max_steps - PLAN_MARGIN_STEPS:
                    n = ctx.plan_steps(cand.build("probe"))
                    if n is None or n > ctx.max_steps:
                        pool.reject("oracle plan exceeds the step limit")
                        continue
                pool.add(cand)
    if pool.total() == 0:
        raise FamilyUnavailable(KIND, "no route to a named POI that turns at unambiguous intersections")
    return pool
