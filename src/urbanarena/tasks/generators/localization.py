"""Localization tasks: which cell of a 5 x 5 grid over the district map did the agent start in?

Ground truth: the start node's cell on the grid that :meth:`MapRenderer.grid_cell`
cuts over the district map extent (:func:`~.common.district_extent`), the same
extent and renderer that draw the reference grid map, so the answer and the
drawn labels agree. Convention (issue 4, 360CityArena's data): ``x`` = column
counted from the west, ``y`` = row counted from the north, 0-based; answer
``x:N y:M``; metric ``exact_match``.

Starts closer than :data:`MIN_LINE_M` to a grid line are not used (the cell
would hinge on centimetres). Difficulty (documented rule, no published target):
``easy`` — at least 12 m from every grid line and a named POI's front point
within 25 m; ``hard`` — no named POI within 50 m, or within 6 m of a grid line;
``medium`` — the rest.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial import cKDTree

from urbanarena.render.maps import map_renderer_for
from urbanarena.tasks.generators.common import Candidate, CandidatePool, FamilyUnavailable, GenContext, ImageSpec

KIND = "localization"
GRID_N = 5
MAP_PX = 640
MIN_LINE_M = 3.0
GRID_IMAGE = "localization_grid_5x5"

INSTRUCTION = (
    "Work out where you started. The attached reference map is cut into a 5 x 5 grid: columns x:0 to x:4 "
    "run from west to east, rows y:0 to y:4 from north to south. Walk and look around until you are sure, "
    "then answer with the cell of your starting position in the form x:N y:M (whole numbers only)."
)


def line_distance_m(ctx: GenContext, x_m: float, y_m: float, n: int = GRID_N) -> float:
    """Metres from ``(x_m, y_m)`` to the nearest interior grid line of the ``n x n`` grid over ``ctx.extent``."""
    e = ctx.extent
    dx = min(abs(x_m - (e.xmin + e.width_m * i / n)) for i in range(1, n))
    dy = min(abs(y_m - (e.ymin + e.height_m * j / n)) for j in range(1, n))
    return min(dx, dy)


def generate(ctx: GenContext, wanted: dict[str, int]) -> CandidatePool:
    """Localization candidates at every node inside the map extent (module docstring).

    Raises: :class:`FamilyUnavailable` when no node lies inside the extent away from grid lines.
    """
    pool = CandidatePool(KIND)
    renderer = map_renderer_for(ctx.city, MAP_PX, MAP_PX, ctx.extent)
    ann = ctx.ann
    named = [p.front_xy for p in (ann.pois if ann is not None else []) if p.name and p.front_xy is not None]
    tree = cKDTree(np.array(named)) if named else None
    for node in ctx.area_nodes():
        x, y = ctx.xy(node)
        cell = renderer.grid_cell(x, y, GRID_N)
        if cell is None:
            pool.reject("outside the district map extent")
            continue
        line = line_distance_m(ctx, x, y)
        if line < MIN_LINE_M:
            pool.reject(f"within {MIN_LINE_M:g} m of a grid line")
            continue
        poi_m = float(tree.query((x, y))[0]) if tree is not None else math.inf
        if line >= 12.0 and poi_m <= 25.0:
            diff = "easy"
        elif poi_m > 50.0 or line < 6.0:
            diff = "hard"
        else:
            diff = "medium"
        gx, gy = cell
        pool.add(Candidate(
            kind=KIND, difficulty=diff, key=node, group=f"cell {gx},{gy}",
            stats={"grid_line_m": line, "nearest_named_poi_m": poi_m if math.isfinite(poi_m) else -1.0},
            fields=dict(family="cityarena", city=ctx.city_ref, start=ctx.start(node, ctx.random_heading(node)),
                        instruction=INSTRUCTION, answer=f"x:{gx} y:{gy}", answer_metric="exact_match",
                        difficulty=diff, category="grid_5x5",
                        extra={"task_kind": KIND, "grid": {"n": GRID_N, "extent_m": [ctx.extent.xmin, ctx.extent.ymin,
                                                                                     ctx.extent.xmax, ctx.extent.ymax],
                                                           "axes": "x columns from west, y rows from north"},
                               "requires_current_location": False}),
            images=[ImageSpec("grid_map", GRID_IMAGE, {"n": GRID_N, "size_px": MAP_PX})]))
    if pool.total() == 0:
        raise FamilyUnavailable(KIND, "no pose node lies inside the district map away from the grid lines")
    return pool
