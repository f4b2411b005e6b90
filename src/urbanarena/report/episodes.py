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
* **continuous** rows (family ``urbanground``, protocol ``urbanground-v1``; :func:`row_kind`
  ``"urbanground"``): success is the stored ``metrics.sr == 1``; the path is ``details.samples``
  (``[t_s, x_m, y_m, yaw_deg, pitch_deg, step, checkpoint]``, city-frame metres: the exact piecewise-linear
  trajectory the scorer integrates); goals come from the task (:func:`continuous_geometry`), closures from
  ``details.closures``; counters from ``details.env_counters``.
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


#: family name of continuous (UrbanGround ladder) rows
CONTINUOUS_FAMILY = "urbanground"


def is_arena(row: Mapping[str, Any]) -> bool:
    """Whether a stored row is an arena episode (its ``status`` column is set)."""
    return row.get("status") is not None


def is_continuous(row: Mapping[str, Any]) -> bool:
    """Whether a stored row is a continuous episode (family ``urbanground``)."""
    return row.get("family") == CONTINUOUS_FAMILY


def row_kind(row: Mapping[str, Any]) -> str:
    """``"urbanground"`` (continuous rows), ``"arena"`` (``status`` set) or ``"graph"``."""
    if is_continuous(row):
        return CONTINUOUS_FAMILY
    return "arena" if is_arena(row) else "graph"


def _mapping(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def continuous_metrics(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The stored per-episode metrics of a continuous row (``metrics`` JSON; ``{}`` when absent)."""
    return _mapping(row.get("metrics"))


def graph_success_key(rows: Sequence[Mapping[str, Any]]) -> str:
    """The success key of graph rows: ``tc`` (map2seq/Touchdown task completion) when any row has it,
    else ``tc_proximity_50m`` (CitySeeker's TC-P at its published 50 m radius)."""
    return "tc" if any(r.get("tc") is not None for r in rows) else "tc_proximity_50m"


def succeeded(row: Mapping[str, Any], success_key: str | None = None) -> bool:
    """Episode success: arena ``scored_success == 1``; continuous ``metrics.sr == 1``; graph
    ``row[success_key] == 1``."""
    if is_continuous(row):
        v = continuous_metrics(row).get("sr")
        return v is not None and float(v) >= 1.0
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
    action could not be executed: arena and continuous ``env_counters.parse_errors + invalid_actions``;
    graph the ``-2`` actions plus ``invalid_actions``), ``parse_errors`` (replies without usable JSON:
    ``parse_error_count`` when stored; else ``env_counters.parse_errors`` (arena, continuous) / graph
    ``-2`` actions), ``invalid_actions`` (``invalid_action_count`` when stored, else arena/graph the
    ``invalid_actions`` column, continuous ``env_counters.invalid_actions``), ``blocked_moves`` (arena,
    continuous: moves stopped by an obstacle), ``agent_error`` (0/1), and the model columns
    ``llm_requests``, ``llm_errors``, ``prompt_tokens``, ``completion_tokens``, ``llm_latency_s``
    (``None`` when the episode stored none), ``wall_s`` (episode wall time).
    """
    details = _mapping(row.get("details"))
    env = _mapping(details.get("env_counters"))
    kind = row_kind(row)
    if kind == "graph":
        actions = row.get("actions") if isinstance(row.get("actions"), list) else []
        graph_unparsed = sum(1 for a in actions if a == -2)
        steps = _int(row.get("steps"))
        unusable = graph_unparsed + _int(row.get("invalid_actions"))
        parse_fallback, invalid_fallback = graph_unparsed, _int(row.get("invalid_actions"))
    else:  # arena and continuous episodes keep the environment's counters
        steps = (_int(row.get("act_requests")) or _int(row.get("steps"))) if kind == "arena" else _int(row.get("steps"))
        unusable = _int(env.get("parse_errors")) + _int(env.get("invalid_actions"))
        parse_fallback = _int(env.get("parse_errors"))
        invalid_fallback = _int(row.get("invalid_actions")) if kind == "arena" else _int(env.get("invalid_actions"))
    pe = row.get("parse_error_count")
    ia = row.get("invalid_action_count")
    return {
        "steps": steps,
        "unusable": unusable,
        "parse_errors": _int(pe) if pe is not None else parse_fallback,
        "invalid_actions": _int(ia) if ia is not None else invalid_fallback,
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


@dataclass(frozen=True)
class ContinuousGeometry(Geometry):
    """A continuous (``urbanground``) episode's path, goals and closures.

    Attributes (besides :class:`Geometry`'s; ``goal_xy`` is the scored goal: ``navigation`` the task's last
    goal, ``search`` the goal point nearest the final position, ``schedule`` / ``multi_stop`` the last stop;
    ``distances_m`` from each sample to the nearest of ``goals_xy``):
        goals_xy: every goal point / stop, city-frame metres, in task order.
        closures: ``((coords, zone, active_from_s), ...)`` of ``details.closures`` (``coords`` city-frame
            metres; ``active_from_s`` ``None`` when the notice never came).
        zones: restricted-zone rings of the task, city-frame metres.
        task_kind: ``navigation``, ``search``, ``schedule`` or ``multi_stop``.
    """

    goals_xy: tuple[tuple[float, float], ...] = ()
    closures: tuple[tuple[tuple[tuple[float, float], ...], bool, float | None], ...] = ()
    zones: tuple[tuple[tuple[float, float], ...], ...] = ()
    task_kind: str = "navigation"


def continuous_path(row: Mapping[str, Any]) -> list[tuple[float, float]]:
    """The stored trajectory of a continuous row: ``(x_m, y_m)`` of every ``details.samples`` entry
    (city-frame metres, start first); ``[]`` when none is stored."""
    samples = _mapping(row.get("details")).get("samples") or []
    return [(float(s[1]), float(s[2])) for s in samples if isinstance(s, (list, tuple)) and len(s) >= 3]


def continuous_closures(row: Mapping[str, Any]) -> tuple:
    """``details.closures`` of a continuous row as ``((coords, zone, active_from_s), ...)``."""
    out = []
    for c in _mapping(row.get("details")).get("closures") or []:
        if isinstance(c, Mapping) and c.get("coords"):
            af = c.get("active_from_s")
            out.append((tuple(tuple(map(float, p[:2])) for p in c["coords"]), bool(c.get("zone")),
                        None if af is None else float(af)))
    return tuple(out)


def continuous_geometry(row: Mapping[str, Any], city: Any = None, task: Any = None) -> ContinuousGeometry | None:
    """The :class:`ContinuousGeometry` of a continuous position task (``navigation``, ``search``,
    ``schedule``, ``multi_stop``; radius the task's ``success_radius_m``, default UrbanGround's 15 m), or
    ``None`` for a question (``choice``), without stored samples, or without the city and task (the goals
    are the task's positions, :func:`urbanarena.tasks.families.urbanground.goal_points_xy`)."""
    from urbanarena.tasks.families.urbanground import ARRIVAL_RADIUS_M, goal_points_xy, kind_of, zones_xy

    path = continuous_path(row)
    if city is None or task is None or not path:
        return None
    kind = kind_of(task)
    if kind == "choice":
        return None
    goals = [tuple(map(float, g)) for g in goal_points_xy(task, city)]
    if not goals:
        return None
    fx, fy = path[-1]
    goal = min(goals, key=lambda g: math.hypot(g[0] - fx, g[1] - fy)) if kind == "search" else goals[-1]
    radius = float(task.success_radius_m if task.success_radius_m is not None else ARRIVAL_RADIUS_M)
    d = tuple(min(math.hypot(x - gx, y - gy) for gx, gy in goals) for x, y in path)
    zones = tuple(tuple(tuple(map(float, p)) for p in ring) for ring in zones_xy(task, city))
    return ContinuousGeometry(tuple(path), goal, radius, d, goals_xy=tuple(goals), closures=continuous_closures(row),
                              zones=zones, task_kind=kind)


def parse_expected_xy(expected: Any) -> tuple[float, float] | None:
    """``"x:-25.00 y:0.01"`` -> ``(-25.0, 0.01)``; anything else -> ``None``."""
    if not isinstance(expected, str):
        return None
    m = _EXPECTED_XY.match(expected)
    return (float(m.group(1)), float(m.group(2))) if m else None


def geometry(row: Mapping[str, Any], city: Any = None, task: Any = None) -> Geometry | None:
    """The :class:`Geometry` of a position task (module docstring), or ``None`` when the episode is not a
    position task or the data needed is missing (no stored positions; graph rows without ``city`` or
    ``task``, or a goal/trajectory node the city lacks). Continuous rows: :func:`continuous_geometry`."""
    if is_continuous(row):
        return continuous_geometry(row, city, task)
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


__all__ = ["CONTINUOUS_FAMILY", "ContinuousGeometry", "Geometry", "SELF_ENDED", "agent_error", "continuous_closures",
           "continuous_geometry", "continuous_metrics", "continuous_path", "counters", "geometry", "graph_success_key",
           "is_arena", "is_continuous", "parse_expected_xy", "row_kind", "succeeded"]
