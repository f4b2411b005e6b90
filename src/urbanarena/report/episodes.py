"""Per-episode facts the HTML report reads from stored rows (:meth:`urbanarena.runner.store.Store.rows`
with parsed JSON): success, error counters, and the geometry of position tasks (the path walked, the
goal and its success radius).

Two kinds of rows:

* **arena** rows (360CityArena-style families; ``status`` is set): success is ``scored_success``
  (an ANSWER the validator judged correct); a *position task* is one scored by ``coordinate_match``
  (landmark, map-navigation and VLN families): its goal is the stored ``expected`` point
  ``x:<east m> y:<north m>`` (city-frame metres), its radius ``validation_threshold`` (m), its path
  ``details.positions`` (city-frame metres, start first); distances are Euclidean in that frame, as the
  validator measures them.
* **graph** rows (CitySeeker / map2seq / Touchdown families): success is the protocol's success key
  (:func:`graph_success_key`); every task is a position task whose goal is the task's last goal node and
  radius its ``success_radius_m``; the path is the stored node trajectory, distances are WGS84 geodesic
  (:meth:`~urbanarena.world.city.City.distance_m`, as ``goal_dist_m`` is computed) — this needs the city
  and the task, which the report loads from ``run.json`` when it can.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: ``expected`` of a coordinate_match arena task: ``x:<east m> y:<north m>``
_EXPECTED_XY = re.compile(r"^\s*x:\s*(-?\d+(?:\.\d+)?)\s+y:\s*(-?\d+(?:\.\d+)?)\s*$")
#: stop reasons / statuses that mean the agent ended the episode itself
SELF_ENDED = frozenset({"ANSWER", "stop"})
ERROR_STATUSES = frozenset({"error"})


def is_arena(row: Mapping[str, Any]) -> bool:
    """Whether a stored row is an arena episode (its ``status`` column is set)."""
    return row.get("status") is not None


def graph_success_key(rows: Sequence[Mapping[str, Any]]) -> str:
    """The success key of graph rows: ``tc`` (map2seq/Touchdown task completion) when any row has it,
    else ``tc_proximity_50m`` (CitySeeker's TC-P at its published 50 m radius)."""
    return "tc" if any(r.get("tc") is not None for r in rows) else "tc_proximity_50m"


def succeeded(row: Mapping[str, Any], success_key: str | None = None) -> bool:
    """Episode success: arena ``scored_success == 1``; graph ``row[success_key] == 1``."""
    if is_arena(row):
        return bool(row.get("scored_success"))
    v = row.get(success_key or "tc_proximity_50m")
    return v is not None and float(v) >= 1.0


def agent_error(row: Mapping[str, Any]) -> bool:
    """The episode ended with an exception of the agent (stop reason / status ``error``)."""
    return row.get("stop_reason") in ERROR_STATUSES or row.get("status") in ERROR_STATUSES


def _int(v: Any) -> int:
    try:
        return int(v or 0)
    except (TypeError, ValueError):
        return 0


def counters(row: Mapping[str, Any]) -> dict[str, Any]:
    """Error and cost counters of one episode.

    Returns: ``steps`` (env steps: arena ``act_requests``, else ``steps``), ``unusable`` (steps whose
    action could not be executed: arena ``env_counters.parse_errors + invalid_actions``; graph the
    ``-2`` actions plus ``invalid_actions``), ``parse_errors`` (replies without usable JSON:
    ``parse_error_count`` when stored; else arena ``env_counters.parse_errors`` / graph ``-2`` actions),
    ``invalid_actions`` (``invalid_action_count`` when stored, else the ``invalid_actions`` column),
    ``blocked_moves`` (arena), ``agent_error`` (0/1), and the model columns ``llm_requests``,
    ``llm_errors``, ``prompt_tokens``, ``completion_tokens``, ``llm_latency_s`` (``None`` when the
    episode stored none), ``wall_s`` (episode wall time).
    """
    details = row.get("details") if isinstance(row.get("details"), Mapping) else {}
    env = (details or {}).get("env_counters") or {}
    actions = row.get("actions") if isinstance(row.get("actions"), list) else []
    graph_unparsed = sum(1 for a in actions if a == -2)
    if is_arena(row):
        steps = _int(row.get("act_requests")) or _int(row.get("steps"))
        unusable = _int(env.get("parse_errors")) + _int(env.get("invalid_actions"))
        parse_fallback = _int(env.get("parse_errors"))
    else:
        steps = _int(row.get("steps"))
        unusable = graph_unparsed + _int(row.get("invalid_actions"))
        parse_fallback = graph_unparsed
    pe = row.get("parse_error_count")
    ia = row.get("invalid_action_count")
    return {
        "steps": steps,
        "unusable": unusable,
        "parse_errors": _int(pe) if pe is not None else parse_fallback,
        "invalid_actions": _int(ia) if ia is not None else _int(row.get("invalid_actions")),
        "blocked_moves": _int(env.get("blocked_moves")),
        "agent_error": int(agent_error(row)),
        "llm_requests": row.get("llm_request_count"),
        "llm_errors": row.get("llm_error_count"),
        "prompt_tokens": row.get("total_prompt_tokens"),
        "completion_tokens": row.get("total_completion_tokens"),
        "llm_latency_s": row.get("total_llm_latency_seconds"),
        "wall_s": row.get("duration_s"),
    }


@dataclass(frozen=True)
class Geometry:
    """A position task's path and goal.

    Attributes:
        path_xy: ``[(x_m, y_m), ...]`` city-frame metres (x east, y north), start first.
        goal_xy: the goal, city-frame metres.
        radius_m: the success radius, metres.
        distances_m: distance from each path point to the goal, metres (same length as ``path_xy``).
    """

    path_xy: tuple[tuple[float, float], ...]
    goal_xy: tuple[float, float]
    radius_m: float
    distances_m: tuple[float, ...]

    @property
    def min_distance_m(self) -> float:
        return min(self.distances_m)

    @property
    def final_distance_m(self) -> float:
        return self.distances_m[-1]


def parse_expected_xy(expected: Any) -> tuple[float, float] | None:
    """``"x:-25.00 y:0.01"`` -> ``(-25.0, 0.01)``; anything else -> ``None``."""
    if not isinstance(expected, str):
        return None
    m = _EXPECTED_XY.match(expected)
    return (float(m.group(1)), float(m.group(2))) if m else None


def geometry(row: Mapping[str, Any], city: Any = None, task: Any = None) -> Geometry | None:
    """The :class:`Geometry` of a position task (module docstring), or ``None`` when the episode is not a
    position task or the data needed is missing (no stored positions; graph rows without ``city`` or
    ``task``, or a goal/trajectory node the city lacks)."""
    if is_arena(row):
        if row.get("evaluation_metric") != "coordinate_match":
            return None
        goal = parse_expected_xy(row.get("expected"))
        radius = row.get("validation_threshold")
        details = row.get("details") if isinstance(row.get("details"), Mapping) else {}
        pos = [tuple(map(float, p[:2])) for p in ((details or {}).get("positions") or []) if p and len(p) >= 2]
        if not pos:
            fp = (details or {}).get("final_position") or {}
            if fp.get("x_m") is not None:
                pos = [(float(fp["x_m"]), float(fp["y_m"]))]
        if goal is None or radius is None or not pos:
            return None
        d = tuple(math.hypot(x - goal[0], y - goal[1]) for x, y in pos)
        return Geometry(tuple(pos), goal, float(radius), d)
    if city is None or task is None or not getattr(task, "goals", None):
        return None
    goal_node = task.goals[-1].node
    traj = row.get("trajectory") if isinstance(row.get("trajectory"), list) else []
    if goal_node not in city or not traj or any(n not in city for n in traj):
        return None
    radius = task.success_radius_m
    if radius is None:
        return None
    path = tuple(tuple(map(float, city.xy(n))) for n in traj)
    d = tuple(float(city.distance_m(n, goal_node)) for n in traj)
    return Geometry(path, tuple(map(float, city.xy(goal_node))), float(radius), d)


__all__ = ["Geometry", "SELF_ENDED", "agent_error", "counters", "geometry", "graph_success_key", "is_arena",
           "parse_expected_xy", "succeeded"]
