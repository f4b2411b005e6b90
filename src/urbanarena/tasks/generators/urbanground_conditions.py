"""UrbanGround suites by condition: every base task once per weather / time of day (``--condition all``).

A per-condition study needs the same tasks under each condition in one file, with distinct ids (the run
store keys episodes by ``task_id``). :func:`expand_conditions` copies each base task once per condition of
:data:`~urbanarena.tasks.families.urbanground.PAPER_CONDITIONS` (clear, dusk, night, cloudy, rain: the
paper's Table 1 split), in that order right after one another, with

* ``task_id`` = ``<base id>@<condition>`` (:func:`condition_task_id`),
* ``extra.base_task_id`` = the base id (the runner stores it, and ``summary`` resamples base tasks, not
  their copies, in its cluster bootstrap: the copies of one task are not independent),
* ``extra.dynamics.condition`` = the condition (what the runner renders the first-person view in), the
  rest of ``extra.dynamics`` (closures, pedestrians) kept.

Everything else is the base task's. The condition changes only the images, so the ``ug-oracle`` (which
does not look at them) verifies each base task once.
"""

from __future__ import annotations

from typing import Sequence

from urbanarena.tasks.families.urbanground import PAPER_CONDITIONS
from urbanarena.tasks.schema import Task

#: the ``--condition`` value that asks for every condition of :data:`PAPER_CONDITIONS`
ALL_CONDITIONS = "all"
#: joins a base task id and its condition
CONDITION_SEP = "@"


def condition_task_id(base_id: str, condition: str) -> str:
    """``<base_id>@<condition>``, e.g. ``helsinki/ug/l2_short_range/000@night``."""
    return f"{base_id}{CONDITION_SEP}{condition}"


def base_task_id(task: Task) -> str:
    """The id of the task a condition copy was made from (``extra.base_task_id``), else the task's own id."""
    b = task.extra.get("base_task_id") if isinstance(task.extra, dict) else None
    return str(b) if isinstance(b, str) and b else task.task_id


def expand_conditions(tasks: Sequence[Task], conditions: Sequence[str] = PAPER_CONDITIONS) -> list[Task]:
    """Each task once per condition (module docstring), base task by base task; the inputs are not changed.

    Raises:
        ValueError: no conditions, or a condition named twice.
    """
    conds = list(conditions)
    if not conds or len(set(conds)) != len(conds):
        raise ValueError(f"conditions {conds!r}: need at least one, each once")
    out: list[Task] = []
    for t in tasks:
        for c in conds:
            d = t.model_dump()  # a deep copy, validated again below (the new id goes through the id schema)
            d["task_id"] = condition_task_id(t.task_id, c)
            d["extra"]["base_task_id"] = t.task_id
            d["extra"]["dynamics"] = {**(d["extra"].get("dynamics") or {}), "condition": c}
            out.append(Task.model_validate(d))
    return out


__all__ = ["ALL_CONDITIONS", "CONDITION_SEP", "base_task_id", "condition_task_id", "expand_conditions"]
