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

Continuous episodes (family ``urbanground``, protocol ``urbanground-v1``; failed = stored ``metrics.sr``
is not 1) follow their own rules, :func:`classify_continuous` (``docs/report.md`` rules U0-U11).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from urbanarena.report.episodes import (
    SELF_ENDED, Geometry, agent_error, continuous_metrics, counters, is_arena, is_continuous, succeeded,
)

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


#: wrong answers to UrbanGround L1 questions, by sub-family: what the agent got wrong
CONTINUOUS_WRONG_ANSWER = {
    "l1_visual_recognition": "Perception",   # the place is right in front: its sign or facade was misread
    "l1_orientation": "Grounding",           # the named place was put in the wrong direction
    "l1_active_exploration": "Perception",   # looked around, yet took another place's sign for the near one
}


def classify_continuous(row: Mapping[str, Any], task: Any = None) -> str | None:
    """The failure cause of one continuous (``urbanground``) episode, ``None`` for a success (stored
    ``metrics.sr == 1``). Rules, first match wins (``docs/report.md``, U0-U11):

    U0 ``Error``: stop reason ``error``. U1 ``Action``: at least :data:`ACTION_SHARE` of the steps unusable
    (``env_counters.parse_errors + invalid_actions``). U2 ``Action``: a question ended by the agent without
    an answer that names an option (no ``answer``; with the task loaded also an answer
    :func:`~urbanarena.tasks.families.urbanground.parse_answer` cannot map to an option). U3 ``Planning``: an
    announced road closure crossed or a restricted zone entered (``spr == 0``, ``zone_respected == 0`` or
    stop reason ``closure_violation``): the route ignored a constraint it had been told about. U4
    ``Action``: touched a pedestrian (``pcr == 1``). Questions: U5 ``Explore`` no answer (the step budget
    ended it); U6 ``Explore`` a wrong answer to ``l1_active_exploration`` given without moving or looking
    (at most one step, the answer); U7 a wrong answer: :data:`CONTINUOUS_WRONG_ANSWER` of the sub-family
    (``Perception`` when unknown). Point goals (``navigation``, ``search``): U8 ``Planning`` a step ended
    within the arrival radius of the goal (stored ``oracle_sr == 1``; search: of any goal point) but the
    episode ended elsewhere; U9 ``Explore`` never within it. Stops (``schedule``, ``multi_stop``): U10
    ``Planning`` at least one stop reached (stored ``stops_reached >= 1``) but not all, not in order or not
    on time; ``Explore`` none reached. U11 ``Unclassified``: no stored metrics or an unknown task kind.

    Args:
        row: a stored row with parsed JSON columns.
        task: its :class:`~urbanarena.tasks.schema.Task` when loaded (only rule U2's option check needs it).
    """
    if succeeded(row):
        return None
    if agent_error(row):
        return "Error"
    c = counters(row)
    if c["unusable"] >= ACTION_SHARE * max(1, c["steps"]):
        return "Action"
    m = continuous_metrics(row)
    details = row.get("details") if isinstance(row.get("details"), Mapping) else {}
    kind = details.get("task_kind")
    if not m or m.get("sr") is None:
        return "Unclassified"
    answer = details.get("answer")
    if kind == "choice" and row.get("stop_reason") == "terminate":
        if answer is None or str(answer).strip() == "":
            return "Action"
        if task is not None:
            from urbanarena.tasks.families.urbanground import parse_answer

            if parse_answer(task, answer) is None:
                return "Action"
    if m.get("spr") == 0 or m.get("zone_respected") == 0 or row.get("stop_reason") == "closure_violation":
        return "Planning"
    if m.get("pcr") == 1 or (m.get("pedestrian_collisions") or 0) > 0:
        return "Action"
    if kind == "choice":
        if answer is None:
            return "Explore"
        if row.get("category") == "l1_active_exploration" and c["steps"] <= 1:
            return "Explore"
        return CONTINUOUS_WRONG_ANSWER.get(str(row.get("category")), "Perception")
    if kind in ("navigation", "search"):
        return "Planning" if m.get("oracle_sr") == 1 else "Explore"
    if kind in ("schedule", "multi_stop"):
        return "Planning" if (m.get("stops_reached") or 0) >= 1 else "Explore"
    return "Unclassified"


def classify(row: Mapping[str, Any], geom: Geometry | None, success_key: str | None = None,
             task: Any = None) -> str | None:
    """The failure cause of one stored episode (module docstring), ``None`` for a success.

    Args:
        row: a stored row with parsed JSON columns.
        geom: its :func:`~urbanarena.report.episodes.geometry` (``None`` when not a position task or
            not loadable).
        success_key: the success key of graph rows (:func:`~urbanarena.report.episodes.graph_success_key`).
        task: the episode's task when loaded (continuous rows: :func:`classify_continuous`).
    Returns: one of :data:`CAUSES` or :data:`OTHER_BUCKETS`, or ``None``.
    """
    if is_continuous(row):
        return classify_continuous(row, task)
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


__all__ = ["ACTION_SHARE", "CAUSES", "CONTINUOUS_WRONG_ANSWER", "OTHER_BUCKETS", "breakdown", "classify",
           "classify_continuous"]
