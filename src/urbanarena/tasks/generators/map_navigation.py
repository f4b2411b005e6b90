"""Map navigation: walk from the start (blue marker) to the goal (red marker) of a reference map.

Start and goal are pose nodes; the goal position is the goal node's position
and success is ``coordinate_match`` within 20 m of it. The reference map is
:meth:`MapRenderer.start_goal_map` over the district extent (640 x 640 px,
blue start, red goal); the agent also gets its current-location map
(``requires_current_location``).

Statistics (calibrated against 360CityArena): ``path_length_m``, the graph
shortest-path length from start to goal node; ``decision_points``, the nodes
of that path where the arena shows arrows (:func:`~.common.analyse_route`).
Candidate bands of path length: ``easy`` 85–170 m, ``medium`` 195–295 m,
``hard`` 285–345 m (hard routes of 360CityArena's 347 m rarely fit in 50
arena steps of at most 7 m each plus a key press per decision point, so the
band is kept where some do); the suite builder then picks a subset per difficulty
whose means of both statistics are closest to the targets, among candidates
the oracle can solve within the step limit (routes whose quick estimate,
:func:`~.common.estimated_steps`, comes within 12 steps of the limit are
planned by the oracle's planner, ``ctx.plan_steps``; the suite builder runs
every chosen task through the env anyway). Goals closer than 40 m in a straight line are not used
(the 20 m disc would nearly reach the start).
"""

from __future__ import annotations

import math

import networkx as nx

from urbanarena.tasks.generators.common import (
    PLAN_MARGIN_STEPS,
    Candidate,
    CandidatePool,
    FamilyUnavailable,
    GenContext,
    ImageSpec,
    analyse_route,
    estimated_steps,
)
from urbanarena.tasks.schema import Goal

KIND = "map_navigation"
RADIUS_M = 20.0
MAP_PX = 640
BANDS_M = {"easy": (85.0, 170.0), "medium": (195.0, 295.0), "hard": (285.0, 345.0)}
#: goals drawn per start and band (long routes are the scarcest within the step limit)
GOALS_PER_START = {"easy": 2, "medium": 3, "hard": 8}
MIN_STRAIGHT_M = 40.0
INSTRUCTION = (
    "Walk from your starting point, the blue marker on the attached reference map, to the goal, the red "
    "marker. When you have reached the goal, answer to confirm that you have arrived."
)


def generate(ctx: GenContext, wanted: dict[str, int]) -> CandidatePool:
    """Map-navigation candidates (module docstring).

    Raises: :class:`FamilyUnavailable` when the network has no pair of nodes in any band.
    """
    pool = CandidatePool(KIND)
    g = ctx.city.graph
    nodes = ctx.area_nodes()
    n_starts = min(len(nodes), max(80, 8 * max(wanted.values(), default=1)))
    starts = sorted(ctx.rng.choice(len(nodes), size=n_starts, replace=False).tolist())
    for si in starts:
        s = nodes[int(si)]
        sx, sy = ctx.xy(s)
        dist, paths = nx.single_source_dijkstra(g, s, cutoff=BANDS_M["hard"][1], weight="length_m")
        for diff, (lo, hi) in BANDS_M.items():
            goals = sorted(n for n, d in dist.items() if lo <= d <= hi
                           and math.hypot(ctx.xy(n)[0] - sx, ctx.xy(n)[1] - sy) >= MIN_STRAIGHT_M)
            if not goals:
                pool.reject(f"{diff}: no goal {lo:g}-{hi:g} m from a start")
                continue
            picks = ctx.rng.choice(len(goals), size=min(GOALS_PER_START[diff], len(goals)), replace=False)
            for k in sorted(int(i) for i in picks):
                t = goals[k]
                path = paths[t]
                info = analyse_route(ctx, path)
                est = estimated_steps(info, RADIUS_M)
                if est > ctx.max_steps + 6:  # keeps ~90 % of the solvable ones
                    pool.reject("clearly beyond the step limit")
                    continue
                gx, gy = ctx.xy(t)
                task_fields = dict(
                    family="cityarena", city=ctx.city_ref, start=ctx.start(s, ctx.random_heading(s)),
                    goals=[Goal(node=t, position=ctx.position(gx, gy), label="goal marker")],
                    success_radius_m=RADIUS_M, instruction=INSTRUCTION, answer_metric="coordinate_match",
                    reference_path=list(path), difficulty=diff, category="start_goal_map",
                    extra={"task_kind": KIND, "requires_current_location": True})
                cand = Candidate(
                    kind=KIND, difficulty=diff, key=f"{s}->{t}", group=t,
                    stats={"path_length_m": info.length_m, "decision_points": float(info.decision_points),
                           "straight_m": math.hypot(gx - sx, gy - sy)},
                    fields=task_fields,
                    images=[ImageSpec("start_goal_map", f"{KIND}_{s}_{t}",
                                      {"start_xy": [sx, sy], "goal_xy": [gx, gy], "size_px": MAP_PX})])
                if ctx.plan_steps is not None and est >= ctx.max_steps - PLAN_MARGIN_STEPS:
                    steps = ctx.plan_steps(cand.build("probe"))
                    if steps is None or steps > ctx.max_steps:
                        pool.reject("oracle plan exceeds the step limit")
                        continue
                pool.add(cand)
    if pool.total() == 0:
        raise FamilyUnavailable(KIND, "no start/goal pair 80-400 m apart that the oracle can walk within "
                                      f"{ctx.max_steps} steps")
    return pool
