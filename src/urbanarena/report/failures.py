"""Failure causes of stored episodes by fixed, deterministic rules over the stored trace.

These are **heuristics**: the rules look only at what the store holds (counters, the path walked, the
answer's verdict), not at why a model did what it did. They are documented in ``docs/report.md``;
the rules, in the order they are tried (first match wins), for an episode that did not succeed
(:func:`urbanarena.report.episodes.succeeded`):

0. ``Error`` — the agent raised (stop reason ``error``); not a cause, reported apart.
1. ``Action`` — at least :data:`ACTION_SHARE` of the episode's steps could not be executed
   (replies without usable JSON, unknown/invalid actions, moves the environment rejected:
   :func:`~urbanarena.report.episodes.counters` ``unusable``), or the final answer could not be parsed
   by its validator (``metrics.validation.parsed`` false).
2. ``Unjudged`` — an answer no validator could judge (``validation_available`` false, e.g. a
   fuzzy-match answer without ``--judge``); not a cause, reported apart.

Position tasks (a goal point and success radius ``r``: arena ``coordinate_match`` tasks, every graph
task; :func:`~urbanarena.report.episodes.geometry`):

3. ``Planning`` — some point of the path came within ``r`` of the goal (``min distance <= r``) but the
   episode failed: the agent passed or reached the goal and did not end there.
4. ``Grounding`` — never within ``r``, and the agent ended the episode itself (ANSWER / STOP): it took
   another place for the described goal.
5. ``Explore`` — never within ``r``, and a budget or stop rule ended the episode (step limit,
   stagnation, moving away from the goal): it did not find the goal.
6. ``Unclassified`` — a graph episode whose path or goal the report could not load (city or task file
   unavailable).

Answer tasks (arena tasks scored on the answer text: localization ``exact_match``, counting
``mean_relative_accuracy``, relational ``name_match``, ``fuzzy_match``):

7. ``Explore`` — no answer was given (a budget or stop rule ended the episode).
8. ``Grounding`` — the answer put a correct-looking reading in the wrong place: a localization answer
   naming the wrong map cell (the view was matched to the wrong part of the map), or a relational
   answer naming one of the task's distractors (a sign that was read, but of the wrong place).
9. ``Perception`` — any other wrong answer (a wrong count, a name that is not in view, a wrong
   fuzzy-match answer).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from urbanarena.report.episodes import SELF_ENDED, Geometry, agent_error, counters, is_arena, succeeded

#: share of unusable steps from which an episode's failure counts as an Action failure
ACTION_SHARE = 0.5
#: the five causes, in report order
CAUSES = ("Action", "Grounding", "Perception", "Explore", "Planning")
#: buckets that are not causes
OTHER_BUCKETS = ("Error", "Unjudged", "Unclassified")
#: answer-task metrics whose wrong answer is a grounding failure
GROUNDING_ANSWER_METRICS = frozenset({"exact_match"})


def _validation(row: Mapping[str, Any]) -> Mapping[str, Any]:
    m = row.get("metrics")
    if not isinstance(m, Mapping):
        return {}
    v = m.get("validation")
    return v if isinstance(v, Mapping) else {}


def classify(row: Mapping[str, Any], geom: Geometry | None, success_key: str | None = None) -> str | None:
    """The failure cause of one stored episode (module docstring), ``None`` for a success.

    Args:
        row: a stored row with parsed JSON columns.
        geom: its :func:`~urbanarena.report.episodes.geometry` (``None`` when not a position task or
            not loadable).
        success_key: the success key of graph rows (:func:`~urbanarena.report.episodes.graph_success_key`).
    Returns: one of :data:`CAUSES` or :data:`OTHER_BUCKETS`, or ``None``.
    """
    if succeeded(row, success_key):
        return None
    if agent_error(row):
        return "Error"
    c = counters(row)
    val = _validation(row)
    if c["unusable"] >= ACTION_SHARE * max(1, c["steps"]) or val.get("parsed") is False:
        return "Action"
    arena = is_arena(row)
    if arena and row.get("status") == "ANSWER" and not row.get("validation_available"):
        return "Unjudged"
    self_ended = (row.get("status") if arena else row.get("stop_reason")) in SELF_ENDED
    position_task = (not arena) or row.get("evaluation_metric") == "coordinate_match"
    if position_task:
        if geom is None:
            return "Unclassified"
        if geom.min_distance_m <= geom.radius_m:
            return "Planning"
        return "Grounding" if self_ended else "Explore"
    if not self_ended:
        return "Explore"
    metric = row.get("evaluation_metric")
    if metric in GROUNDING_ANSWER_METRICS:
        return "Grounding"
    pred = val.get("prediction")
    if metric == "name_match" and isinstance(pred, Mapping) and pred.get("distractors_read"):
        return "Grounding"
    return "Perception"


def breakdown(causes: Iterable[str | None]) -> dict[str, Any]:
    """Counts of :func:`classify` results: ``{"episodes", "successes", "failures", "counts": {bucket: n}
    (every cause and other bucket, zeros included)}``."""
    counts = {k: 0 for k in CAUSES + OTHER_BUCKETS}
    n = ok = 0
    for c in causes:
        n += 1
        if c is None:
            ok += 1
        else:
            counts[c] += 1
    return {"episodes": n, "successes": ok, "failures": n - ok, "counts": counts}


__all__ = ["ACTION_SHARE", "CAUSES", "OTHER_BUCKETS", "breakdown", "classify"]
