"""Threshold sensitivity: does the ranking of agents change when the success radius is scaled?

Each episode is rescored from its stored final distance with the radius scaled by ``s``
(:data:`SCALES`, 0.75-1.5x):

* arena rows scored by ``coordinate_match`` that ended with a judged ANSWER: success iff
  ``distance_to_goal < s * validation_threshold`` (strict, as the validator compares); every other arena
  row keeps its stored ``evaluation_score`` (a missing score counts 0, as in the run mean);
* graph rows: success iff ``goal_dist_m <= s * R`` with ``R`` the task's ``success_radius_m`` (CitySeeker's
  TC-P criterion; for map2seq/Touchdown runs this is a radius criterion, not their adjacency ``tc``).

* continuous rows (``urbanground``; :func:`rescore_continuous`): point goals (``navigation``, ``search``)
  succeed iff no zone or closure was violated and the stored ``final_distance_m`` (the final position's
  distance to the goal; search: to the nearest goal point) is ``<= s * R``, ``R`` the task's
  ``success_radius_m`` (UrbanGround's 15 m arrival radius when the task is not loaded); ``schedule`` and
  ``multi_stop`` tasks are rescored by the family's own scorer on the stored samples with the radius
  scaled (needs the task and the city); questions keep their stored ``sr``.

An agent's score at ``s`` is the mean over its episodes x100. The ranking at each ``s`` is compared with
the ranking at ``s = 1`` by Kendall's tau-b (``scipy.stats.kendalltau``; Kendall 1945 for ties):
1 = the same order, -1 = reversed; ``None`` when fewer than two agents or all scores tie at one scale.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from scipy.stats import kendalltau

#: radius scales reported
SCALES: tuple[float, ...] = (0.75, 1.0, 1.25, 1.5)


def rescore(row: Mapping[str, Any], scale: float, radius_m: float | None = None) -> float | None:
    """The score in [0, 1] of one stored episode with its success radius scaled by ``scale`` (module
    docstring). ``radius_m``: the task's success radius (graph rows only). ``None`` for a graph row
    without ``radius_m``."""
    if row.get("status") is not None:  # arena
        d, thr = row.get("distance_to_goal"), row.get("validation_threshold")
        if (row.get("evaluation_metric") == "coordinate_match" and row.get("status") == "ANSWER"
                and row.get("validation_available") and d is not None and thr is not None):
            return 1.0 if float(d) < scale * float(thr) else 0.0
        v = row.get("evaluation_score")
        return 0.0 if v is None else float(v)
    if radius_m is None:
        return None
    d = row.get("goal_dist_m")
    if d is None or not math.isfinite(float(d)):
        return 0.0
    return 1.0 if float(d) <= scale * float(radius_m) else 0.0


def rescore_continuous(row: Mapping[str, Any], scale: float, task: Any = None, city: Any = None) -> float | None:
    """The ``sr`` in {0, 1} of one continuous (``urbanground``) episode with its arrival radius scaled by
    ``scale`` (module docstring); ``None`` when it cannot be rescored (no stored metrics; a ``schedule`` /
    ``multi_stop`` episode without its task and city).

    At ``scale = 1`` this equals the stored ``sr``: the scorer compares the same final distance with ``<=``
    (:func:`urbanarena.tasks.metrics.urbanground.success`) and forces 0 on any violation.
    """
    from urbanarena.tasks.families.urbanground import ARRIVAL_RADIUS_M

    m = row.get("metrics") if isinstance(row.get("metrics"), Mapping) else {}
    d = row.get("details") if isinstance(row.get("details"), Mapping) else {}
    if m.get("sr") is None:
        return None
    kind = d.get("task_kind")
    if kind == "choice":
        return float(m["sr"])
    radius = ARRIVAL_RADIUS_M
    if task is not None and task.success_radius_m is not None:
        radius = float(task.success_radius_m)
    violated = m.get("zone_respected") == 0 or m.get("spr") == 0 or bool(m.get("closure_violations"))
    if kind in ("navigation", "search"):
        fd = m.get("final_distance_m")
        if violated or fd is None:
            return 0.0
        return 1.0 if float(fd) <= scale * radius else 0.0
    if task is None or city is None or not d.get("samples"):
        return None
    from urbanarena.tasks.families import get_family
    from urbanarena.tasks.families.urbanground import PROTOCOL_ID
    from urbanarena.tasks.metrics import urbanground as ug

    samples = d["samples"]
    traj = ug.Trajectory.from_arrays([s[0] for s in samples], [(s[1], s[2]) for s in samples],
                                     [bool(s[6]) for s in samples])
    closures = [ug.Closure(tuple(tuple(p) for p in c["coords"]),
                           math.inf if c.get("active_from_s") is None else float(c["active_from_s"]), bool(c["zone"]))
                for c in d.get("closures") or []]
    scaled = task.model_copy(update={"success_radius_m": scale * radius})
    out = get_family("urbanground").score_trajectory(scaled, city, PROTOCOL_ID, traj, answer=d.get("answer"),
                                                     closures=closures)
    return float(out["sr"])


def mean_at_scale(rows: Sequence[Mapping[str, Any]], scale: float,
                  radius_of: Mapping[str, float] | None = None) -> float | None:
    """Mean :func:`rescore` x100 over ``rows``; ``radius_of`` maps task id -> success radius (graph rows).
    ``None`` when a row cannot be rescored or there are no rows."""
    vals = []
    for r in rows:
        v = rescore(r, scale, (radius_of or {}).get(str(r["task_id"])))
        if v is None:
            return None
        vals.append(v)
    return 100.0 * sum(vals) / len(vals) if vals else None


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b of two score vectors over the same agents; ``None`` when undefined (fewer than two
    agents, or a constant vector)."""
    if len(x) != len(y):
        raise ValueError(f"score vectors differ in length: {len(x)} and {len(y)}")
    if len(x) < 2:
        return None
    res = kendalltau(list(x), list(y))
    tau = float(res.statistic if hasattr(res, "statistic") else res[0])
    return None if math.isnan(tau) else tau


def sensitivity(means: Mapping[float, Mapping[str, float]], base: float = 1.0) -> dict[float, float | None]:
    """``{scale: tau}`` of the ranking at each scale against the ranking at ``base``.

    Args:
        means: ``{scale: {agent label: score}}`` (every scale holds the same labels).
    Raises:
        KeyError: ``base`` not in ``means``.
    """
    labels = list(means[base])
    ref = [means[base][a] for a in labels]
    return {s: kendall_tau(ref, [m[a] for a in labels]) for s, m in means.items()}


__all__ = ["SCALES", "kendall_tau", "mean_at_scale", "rescore", "rescore_continuous", "sensitivity"]
