"""Point metrics of navigation episodes.

Every function returns a defined float (never NaN, never raises) for the
corner cases: start == goal, unreachable goal (infinite shortest path),
zero-length reference path, empty trajectory.
"""

from __future__ import annotations

import math


def tc_exact(final_node: str | None, goal_node: str | None) -> float:
    """Task completion, exact (CitySeeker TC-E): 1.0 if the final node is the goal node.

    Empty trajectory (``final_node is None``) or no goal -> 0.0.
    """
    return 1.0 if final_node is not None and goal_node is not None and final_node == goal_node else 0.0


def within_radius(dist_m: float | None, radius_m: float) -> float:
    """1.0 if ``dist_m <= radius_m`` (CitySeeker TC-P at a radius; success radius), else 0.0.

    ``None`` or non-finite distance -> 0.0.
    """
    if dist_m is None or not math.isfinite(dist_m):
        return 0.0
    return 1.0 if dist_m <= radius_m else 0.0


def spl(success: float, shortest_m: float, path_m: float) -> float:
    """Success weighted by (normalised inverse) path length.

    ``SPL_i = S_i * l_i / max(p_i, l_i)`` (Anderson et al. 2018, "On
    Evaluation of Embodied Navigation Agents", sec. 4), with ``l_i`` the
    shortest-path length and ``p_i`` the length of the path taken, both in
    metres. Corner cases: ``max(p, l) == 0`` (start == goal, no move) -> ``S``;
    ``l`` infinite (unreachable goal) -> 0.0.
    """
    if not success:
        return 0.0
    if not math.isfinite(shortest_m) or not math.isfinite(path_m):
        return 0.0
    denom = max(path_m, shortest_m)
    if denom <= 0.0:
        return float(success)
    return float(success) * shortest_m / denom
