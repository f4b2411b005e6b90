"""Run kinds of the HTML report: one strategy object per kind of stored run, chosen from its rows.

The report (:mod:`urbanarena.report.html`) never asks *what* a run is; it asks the run's kind
(:attr:`urbanarena.report.runs.ReportRun.kind`) for what differs:

* :class:`ArenaKind` — 360CityArena-style families (rows carry ``status``): evaluation score x100 per
  family and per difficulty; success ``scored_success``.
* :class:`GraphKind` — CitySeeker / map2seq / Touchdown families: navigation metrics; success the
  protocol's success key (:func:`~urbanarena.report.episodes.graph_success_key`).
* :class:`ContinuousKind` — the UrbanGround ladder (family ``urbanground``, protocol ``urbanground-v1``):
  SR, PNA, SPR, PCR (and route efficiency, on-time ratio) overall, per sub-family and per level, with the
  summary's cluster-bootstrap CIs (:func:`urbanarena.runner.summary.summarize_run`, so the report's
  numbers are the summary's); success the stored ``metrics.sr``.

Each kind gives: the score tables of a protocol section (:meth:`RunKind.tables`), the success-chart
grouping, per-episode success, the per-task score and family of the paired comparison, the geometry
of position tasks (:mod:`urbanarena.report.episodes`), the failure cause (:mod:`urbanarena.report.failures`),
the rescored success at a scaled radius (:mod:`urbanarena.report.sensitivity`) and what a trajectory map
draws. :func:`kind_for_rows` picks the kind from a config's stored rows.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from urbanarena.report.charts import order_difficulties
from urbanarena.report.episodes import (
    continuous_closures, continuous_path, geometry, graph_success_key, is_arena, is_continuous, succeeded,
)
from urbanarena.report.failures import classify, classify_continuous
from urbanarena.report.sensitivity import rescore, rescore_continuous

#: graph metric keys shown in the overall table, in order (those with a value in some run)
GRAPH_KEYS = ("tc_exact", "tc_proximity_50m", "tc_category", "tc", "spl", "ndtw", "sdtw", "sed", "goal_dist_m",
              "spd_m", "spd_hops", "avg_steps")
#: continuous (UrbanGround) keys of the overall table, in order (those with a value in some run)
CONTINUOUS_KEYS = ("sr", "pna", "spr", "pcr", "zone_respected", "answer_correct", "oracle_sr", "endpoint_regressed",
                   "rdr", "final_distance_m", "route_efficiency", "on_time_ratio", "mean_lateness_s", "stops_reached",
                   "pedestrian_collisions", "path_length_m", "sim_time_s", "steps")
#: continuous keys tabulated per sub-family and per level (tables only where some group has a value)
CONTINUOUS_GROUP_KEYS = ("sr", "pna", "spr", "pcr", "route_efficiency", "on_time_ratio")
LABELS = {
    "tc_exact": "TC-E %", "tc_proximity_50m": "TC-P50 %", "tc_category": "TC-C %", "tc": "TC %", "spl": "SPL %",
    "ndtw": "nDTW %", "sdtw": "SDTW %", "sed": "SED %", "goal_dist_m": "goal distance m", "spd_m": "SPD m",
    "spd_hops": "SPD hops", "avg_steps": "steps", "evaluation_score": "evaluation score",
    "sr": "SR %", "pna": "PNA %", "spr": "SPR %", "pcr": "PCR %", "zone_respected": "zone respected %",
    "answer_correct": "answer correct %", "oracle_sr": "oracle SR %", "endpoint_regressed": "endpoint regressed %",
    "rdr": "RDR", "final_distance_m": "final distance m", "route_efficiency": "route efficiency",
    "on_time_ratio": "on-time ratio %", "mean_lateness_s": "lateness s", "stops_reached": "stops reached",
    "pedestrian_collisions": "pedestrian collisions", "path_length_m": "path length m", "sim_time_s": "simulated s",
    "steps": "steps",
}


def num(v: Any) -> str:
    """Full-precision text of a number for ``data-*`` attributes ('' for None)."""
    return "" if v is None else repr(float(v))


def cell(mean: float | None, ci: Sequence[float] | None, n: int | None = None) -> dict[str, Any]:
    """A table cell: ``mean [lo, hi]`` to one decimal (``–`` without a value) plus ``data-*`` numbers."""
    if mean is None:
        text = "–"
    elif ci:
        text = f"{mean:.1f} [{ci[0]:.1f}, {ci[1]:.1f}]"
    else:
        text = f"{mean:.1f}"
    return {"text": text, "mean": num(mean), "lo": num(ci[0]) if ci else "", "hi": num(ci[1]) if ci else "",
            "n": "" if n is None else str(n)}


def _arena_family(row: Mapping[str, Any]) -> str | None:
    d = row.get("details")
    if isinstance(d, Mapping) and d.get("task_kind"):
        return str(d["task_kind"])
    from urbanarena.tasks.families.cityarena import TASK_KINDS

    return {tt: k for k, (tt, _) in TASK_KINDS.items()}.get(str(row.get("task_type")))


def _group_table(group: Sequence[Any], pid: str, grp: str, key: str, title: str, names: Sequence[str],
                 count_key: bool = False) -> dict[str, Any] | None:
    """One score table: rows the groups ``names`` of summary field ``grp`` that have ``key`` in some run;
    cell ``n`` the episodes with a value (``count_key``) or the group's episodes."""
    rows = []
    for name in names:
        cells = []
        for r in group:
            g = (r.summary.get(grp) or {}).get(name)
            if g is None:
                cells.append(cell(None, None))
                continue
            n = (g.get("counts") or {}).get(key) if count_key else g.get("episodes")
            cells.append(cell(g["metrics"].get(key), g["ci95"].get(key), n))
        if not count_key or any(c["mean"] for c in cells):  # per-key tables list only groups with a value
            rows.append({"name": name, "key": name, "cells": cells, "total": False})
    if not rows:
        return None
    return {"id": f"{pid}-{grp.replace('_', '-')}" + (f"-{key.replace('_', '-')}" if count_key else ""),
            "title": title, "labels": [r.label for r in group], "rows": rows, "key": key}


def _metric_rows(group: Sequence[Any], keys: Sequence[str]) -> list[dict[str, Any]]:
    keys = [k for k in keys if any(r.summary["metrics"].get(k) is not None for r in group)]
    return [{"name": LABELS.get(k, k), "key": k, "total": False, "cells": [
        cell(r.summary["metrics"].get(k), r.summary["ci95"].get(k),
             (r.summary.get("counts") or {}).get(k) if r.summary.get("counts") else None) for r in group]}
        for k in keys]


class RunKind(ABC):
    """What the report does differently per kind of run (module docstring). Subclasses set the class
    attributes and implement :meth:`tables` and :meth:`rescore`.

    Attributes:
        name: ``arena``, ``graph`` or ``urbanground`` (shown as "(NAME runs)").
        section_suffix: appended to the protocol's section id.
        needs_tasks: the report reloads the run's task file (goals for rules, maps, rescoring).
        has_blocked_moves: the environment counts moves stopped by an obstacle.
        success_key: the per-episode success measure (summary key).
        chart_group, chart_group_label: summary grouping of the success chart and its axis name.
        failure_note: one-paragraph summary of the failure rules shown under the failure table.
    """

    name = "?"
    section_suffix = ""
    needs_tasks = False
    has_blocked_moves = False
    success_key = "?"
    chart_group = "by_difficulty"
    chart_group_label = "difficulty"
    failure_note = ""

    @abstractmethod
    def tables(self, group: Sequence[Any], pid: str) -> list[dict[str, Any]]:
        """Score tables of a protocol section (rows and cells, see ``templates/report.html.j2``)."""

    def succeeded(self, row: Mapping[str, Any]) -> bool:
        """Whether one stored episode succeeded."""
        return succeeded(row, self.success_key)

    def score(self, row: Mapping[str, Any]) -> float | None:
        """The per-episode score of the paired comparison, in [0, 1] (``None``: no value)."""
        v = row.get(self.success_key)
        return None if v is None else float(v)

    def family_of(self, row: Mapping[str, Any]) -> str | None:
        """The family an episode is compared in (paired comparison)."""
        return str(row.get("family"))

    def family_order(self, names: set[str]) -> list[str]:
        """Families in table order."""
        return sorted(names)

    def geometry(self, row: Mapping[str, Any], city: Any, task: Any) -> Any:
        """:func:`~urbanarena.report.episodes.geometry` of a position task, else ``None``."""
        return geometry(row, city, task)

    def classify(self, row: Mapping[str, Any], geom: Any, task: Any) -> str | None:
        """Failure cause (:mod:`urbanarena.report.failures`), ``None`` for a success."""
        return classify(row, geom, self.success_key, task)

    @abstractmethod
    def rescore(self, row: Mapping[str, Any], scale: float, task: Any, city: Any) -> float | None:
        """Success in [0, 1] with the success radius scaled (:mod:`urbanarena.report.sensitivity`)."""

    def map_spec(self, row: Mapping[str, Any], geom: Any, city: Any) -> dict[str, Any] | None:
        """What a trajectory map of the episode draws (``path``, ``goal_xy``, ``radius_m``, ``others``,
        ``closures``, ``zones``), ``None`` when it has no path to draw."""
        if geom is None:
            return None
        return {"path": list(geom.path_xy), "goal_xy": geom.goal_xy, "radius_m": geom.radius_m, "others": (),
                "closures": (), "zones": ()}

    def map_caption(self, row: Mapping[str, Any], geom: Any) -> str:
        if geom is None:
            return ""
        return f", final distance {geom.final_distance_m:.0f} m (radius {geom.radius_m:.0f} m)"


class ArenaKind(RunKind):
    """360CityArena-style runs (module docstring)."""

    name = "arena"
    has_blocked_moves = True
    success_key = "evaluation_score"
    failure_note = ("Action: at least half the steps unusable or an unparsable answer. Planning: came within the "
                    "success radius but failed. Grounding: never within the radius and ended the episode itself "
                    "(or named the wrong map cell / a distractor). Explore: never within the radius and stopped by "
                    "a budget or stop rule (or gave no answer). Perception: another wrong answer. Error: the agent "
                    "raised. Unjudged: an answer no validator could judge.")

    def tables(self, group: Sequence[Any], pid: str) -> list[dict[str, Any]]:
        from urbanarena.report.arena_report import FAMILY_ORDER

        fams = [f for f in FAMILY_ORDER if any(f in (r.summary.get("by_family") or {}) for r in group)]
        fams += sorted({f for r in group for f in (r.summary.get("by_family") or {})} - set(fams))
        rows = []
        for f in fams:
            cells = []
            for r in group:
                g = (r.summary.get("by_family") or {}).get(f)
                cells.append(cell(g["mean"], g["ci95"], g["tasks"]) if g else cell(None, None))
            rows.append({"name": f, "key": f, "cells": cells, "total": False})
        rows.append({"name": "overall", "key": "overall", "cells": [
            cell(r.summary["metrics"].get("evaluation_score"), r.summary["ci95"].get("evaluation_score"),
                 r.summary["tasks"]) for r in group], "total": True})
        tables = [{"id": f"{pid}-family", "title": "Evaluation score x100 per family (95 % CI; n = tasks)",
                   "labels": [r.label for r in group], "rows": rows, "key": "evaluation_score"}]
        names = order_difficulties(sorted({g for r in group for g in r.summary["by_difficulty"]}))
        t = _group_table(group, pid, "by_difficulty", self.success_key,
                         f"{LABELS[self.success_key]} per difficulty (95 % CI; n = episodes)", names)
        return tables + ([t] if t else [])

    def succeeded(self, row: Mapping[str, Any]) -> bool:
        return bool(row.get("scored_success"))

    def score(self, row: Mapping[str, Any]) -> float | None:
        return 0.0 if row.get("evaluation_score") is None else float(row["evaluation_score"])

    def family_of(self, row: Mapping[str, Any]) -> str | None:
        return _arena_family(row)

    def family_order(self, names: set[str]) -> list[str]:
        from urbanarena.report.arena_report import FAMILY_ORDER

        return [f for f in FAMILY_ORDER if f in names] + sorted(set(names) - set(FAMILY_ORDER))

    def classify(self, row: Mapping[str, Any], geom: Any, task: Any) -> str | None:
        return classify(row, geom, None, task)

    def rescore(self, row: Mapping[str, Any], scale: float, task: Any, city: Any) -> float | None:
        return rescore(row, scale)


class GraphKind(RunKind):
    """CitySeeker / map2seq / Touchdown runs (module docstring); ``success_key`` as
    :func:`~urbanarena.report.episodes.graph_success_key`."""

    name = "graph"
    section_suffix = "-graph"
    needs_tasks = True
    failure_note = ("Action: at least half the steps unusable. Planning: came within the success radius but "
                    "failed. Grounding: never within the radius and ended the episode itself. Explore: never "
                    "within the radius and stopped by a budget or stop rule. Error: the agent raised. "
                    "Unclassified: path or goal not loadable.")

    def __init__(self, success_key: str = "tc_proximity_50m"):
        self.success_key = success_key

    def tables(self, group: Sequence[Any], pid: str) -> list[dict[str, Any]]:
        fams = sorted({str(r.summary["family"]) for r in group})
        tables = [{"id": f"{pid}-family", "title": f"Family {', '.join(fams)}: metrics over all episodes "
                   "(rates in %, 95 % CI; n = episodes with a value)", "labels": [r.label for r in group],
                   "rows": _metric_rows(group, GRAPH_KEYS), "key": None}]
        key = self.success_key
        for grp, title in (("by_difficulty", "per difficulty"), ("by_category", "per category")):
            names = sorted({g for r in group for g in r.summary[grp]})
            if grp == "by_difficulty":
                names = order_difficulties(names)
            t = _group_table(group, pid, grp, key, f"{LABELS.get(key, key)} {title} (95 % CI; n = episodes)", names)
            if t:
                tables.append(t)
        return tables

    def rescore(self, row: Mapping[str, Any], scale: float, task: Any, city: Any) -> float | None:
        radius = None if task is None or task.success_radius_m is None else float(task.success_radius_m)
        return rescore(row, scale, radius)

    def map_spec(self, row: Mapping[str, Any], geom: Any, city: Any) -> dict[str, Any] | None:
        if geom is not None:
            return super().map_spec(row, geom, city)
        traj = row.get("trajectory")
        if city is None or not isinstance(traj, list) or not traj or not all(n in city for n in traj):
            return None
        return {"path": [city.xy(n) for n in traj], "goal_xy": None, "radius_m": None, "others": (),
                "closures": (), "zones": ()}


class ContinuousKind(RunKind):
    """UrbanGround ladder runs (family ``urbanground``, protocol ``urbanground-v1``; module docstring)."""

    name = "urbanground"
    needs_tasks = True
    has_blocked_moves = True
    success_key = "sr"
    chart_group = "by_level"
    chart_group_label = "level"
    failure_note = ("Rules U0-U11 of docs/report.md. Action: at least half the steps unusable, a question ended "
                    "without an answer naming an option, or a pedestrian touched. Planning: an announced closure "
                    "crossed or a restricted zone entered; or a step ended within 15 m of the goal (any stop "
                    "reached, for multi-stop tasks) yet the episode ended elsewhere. Explore: never within 15 m "
                    "of the goal (no stop reached; a question unanswered, or answered without looking around in "
                    "active exploration). Grounding: a wrong orientation answer. Perception: a wrong recognition "
                    "or exploration answer. Error: the agent raised. Unclassified: no stored metrics.")

    def tables(self, group: Sequence[Any], pid: str) -> list[dict[str, Any]]:
        from urbanarena.tasks.families.urbanground import PAPER_CONDITIONS, SUBFAMILIES

        tables = [{"id": f"{pid}-family", "title": "UrbanGround metrics over all episodes (rates in %, 95 % CI; "
                   "n = episodes with a value)", "labels": [r.label for r in group],
                   "rows": _metric_rows(group, CONTINUOUS_KEYS), "key": None}]
        subs = {g for r in group for g in (r.summary.get("by_family") or {})}
        subs_order = [s for s in SUBFAMILIES if s in subs] + sorted(subs - set(SUBFAMILIES))
        levels = sorted({g for r in group for g in (r.summary.get("by_level") or {})})
        conds = {g for r in group for g in (r.summary.get("by_condition") or {})}
        conds_order = [c for c in PAPER_CONDITIONS if c in conds] + sorted(conds - set(PAPER_CONDITIONS))
        for grp, what, names in (("by_family", "per sub-family", subs_order), ("by_level", "per level", levels),
                                 ("by_condition", "per condition", conds_order)):
            for key in CONTINUOUS_GROUP_KEYS:
                t = _group_table(group, pid, grp, key, f"{LABELS[key]} {what} (95 % CI; n = episodes with a value)",
                                 names, count_key=True)
                if t:
                    tables.append(t)
        return tables

    def succeeded(self, row: Mapping[str, Any]) -> bool:
        return succeeded(row)

    def score(self, row: Mapping[str, Any]) -> float | None:
        m = row.get("metrics") if isinstance(row.get("metrics"), Mapping) else {}
        return None if m.get("sr") is None else float(m["sr"])

    def family_of(self, row: Mapping[str, Any]) -> str | None:
        return None if row.get("category") is None else str(row["category"])

    def family_order(self, names: set[str]) -> list[str]:
        from urbanarena.tasks.families.urbanground import SUBFAMILIES

        return [s for s in SUBFAMILIES if s in names] + sorted(set(names) - set(SUBFAMILIES))

    def classify(self, row: Mapping[str, Any], geom: Any, task: Any) -> str | None:
        return classify_continuous(row, task)

    def rescore(self, row: Mapping[str, Any], scale: float, task: Any, city: Any) -> float | None:
        return rescore_continuous(row, scale, task, city)

    def map_spec(self, row: Mapping[str, Any], geom: Any, city: Any) -> dict[str, Any] | None:
        if geom is not None:
            others = tuple(g for g in geom.goals_xy if g != geom.goal_xy)
            return {"path": list(geom.path_xy), "goal_xy": geom.goal_xy, "radius_m": geom.radius_m, "others": others,
                    "closures": tuple((c[0], c[1]) for c in geom.closures), "zones": geom.zones}
        path = continuous_path(row)
        d = row.get("details") if isinstance(row.get("details"), Mapping) else {}
        if not path or d.get("task_kind") == "choice":
            return None
        return {"path": path, "goal_xy": None, "radius_m": None, "others": (),
                "closures": tuple((c[0], c[1]) for c in continuous_closures(row)), "zones": ()}

    def map_caption(self, row: Mapping[str, Any], geom: Any) -> str:
        m = row.get("metrics") if isinstance(row.get("metrics"), Mapping) else {}
        parts = []
        if m.get("final_distance_m") is not None:
            parts.append(f"final distance {float(m['final_distance_m']):.0f} m")
        if geom is not None:
            parts.append(f"radius {geom.radius_m:.0f} m")
        if m.get("stops_reached") is not None and geom is not None:
            parts.append(f"{int(m['stops_reached'])} of {len(geom.goals_xy)} stops reached")
        if m.get("spr") is not None:
            parts.append("closure respected" if m["spr"] == 1 else "closure crossed")
        if m.get("pedestrian_collisions"):
            parts.append(f"{int(m['pedestrian_collisions'])} pedestrian contacts")
        return (", " + ", ".join(parts)) if parts else ""


ARENA = ArenaKind()
CONTINUOUS = ContinuousKind()


def kind_for_rows(rows: Sequence[Mapping[str, Any]]) -> RunKind:
    """The kind of a config from its stored rows: :class:`ContinuousKind` when a row is of family
    ``urbanground``, :class:`ArenaKind` when a row carries ``status``, else :class:`GraphKind` with the
    rows' success key."""
    if any(is_continuous(r) for r in rows):
        return CONTINUOUS
    if any(is_arena(r) for r in rows):
        return ARENA
    return GraphKind(graph_success_key(rows))


__all__ = ["ARENA", "CONTINUOUS", "CONTINUOUS_GROUP_KEYS", "CONTINUOUS_KEYS", "ArenaKind", "ContinuousKind",
           "GRAPH_KEYS", "GraphKind", "LABELS", "RunKind", "cell", "kind_for_rows", "num"]
