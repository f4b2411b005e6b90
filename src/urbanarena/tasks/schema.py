"""The task-file schema, version 1 (see ``docs/task-schema.md``).

One JSON schema for every task family. A task file is::

    {"format": "urbanarena-tasks", "schema_version": 1,
     "city": {"name": ..., "content_hash": ...},
     "tasks": [Task, ...]}

Units: metres for distances/radii, degrees clockwise from true north for
headings, WGS84 degrees for positions.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from urbanarena.errors import TaskFormatError

TASKS_FORMAT_ID = "urbanarena-tasks"
SCHEMA_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, allow_inf_nan=False)


class CityRef(_Model):
    """Which city a task belongs to: its name and graph content hash (sha256 hex)."""

    name: str
    content_hash: str | None = None


class Position(_Model):
    """A WGS84 position, degrees."""

    lat: float = Field(ge=-90, le=90)
    lon: float = Field(ge=-180, le=180)


class Start(_Model):
    """Start pose: a node and/or a position, and the start heading (degrees from north)."""

    node: str | None = None
    position: Position | None = None
    heading_deg: float | None = Field(default=None, ge=0, le=360)

    @model_validator(mode="after")
    def _need_one(self):
        if self.node is None and self.position is None:
            raise ValueError("start needs a node or a position")
        return self


class Goal(_Model):
    """One goal (one stage of a multi-stop task).

    Attributes:
        node: goal node id, if the goal is a node.
        position: goal position, if the goal is a place.
        label: what is sought (e.g. the target type "convenience store").
        category_nodes: nodes where the target category can be found (for
            TC-C); ``None`` when unknown.
    """

    node: str | None = None
    position: Position | None = None
    label: str | None = None
    category_nodes: list[str] | None = None


class Task(_Model):
    """One task (episode definition).

    Attributes:
        task_id: unique id within its file (e.g. ``"hongkong6/q41"``).
        family: task family (``"cityseeker"``, ``"map2seq"``, ...).
        city: the city it runs in.
        start: start pose.
        goals: ordered goals; several = multi-stop in order.
        success_radius_m: success radius in metres (``None`` = family rule).
        instruction: text given to the agent (question, route description).
        answer: expected answer for question tasks; ``answer_metric`` names
            how it is scored (e.g. ``"mra"``, ``"exact"``).
        reference_path: reference node path (whole task), may be empty.
        reference_stages: per-stage reference node paths for multi-stop tasks.
        difficulty: e.g. ``"easy"``/``"medium"``/``"hard"``.
        category: the family's category (e.g. ``"two_stop"``).
        privileged: True when scoring (or the agent) uses information a real
            agent would not have.
        provenance: source file, record and licence of the task.
        extra: family-specific fields (kept verbatim).
    """

    task_id: str
    family: str
    city: CityRef
    start: Start
    goals: list[Goal] = Field(default_factory=list)
    success_radius_m: float | None = Field(default=None, ge=0)
    instruction: str = ""
    answer: Any = None
    answer_metric: str | None = None
    reference_path: list[str] = Field(default_factory=list)
    reference_stages: list[list[str]] | None = None
    difficulty: str | None = None
    category: str | None = None
    privileged: bool = False
    provenance: dict[str, Any] = Field(default_factory=dict)
    extra: dict[str, Any] = Field(default_factory=dict)

    @property
    def final_goal(self) -> Goal | None:
        return self.goals[-1] if self.goals else None


class TaskFile(_Model):
    """A task file: format id, schema version, the city and the tasks."""

    format: Literal["urbanarena-tasks"] = TASKS_FORMAT_ID
    schema_version: Literal[1] = SCHEMA_VERSION
    city: CityRef
    tasks: list[Task]

    @model_validator(mode="after")
    def _unique_ids(self):
        seen = set()
        for t in self.tasks:
            if t.task_id in seen:
                raise ValueError(f"duplicate task_id {t.task_id!r}")
            seen.add(t.task_id)
        return self

    def save(self, path: str | Path) -> Path:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(self.model_dump_json(indent=1, exclude_none=False), encoding="utf-8")
        return p

    def content_hash(self) -> str:
        """sha256 hex of the canonical JSON of the file."""
        return hashlib.sha256(json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def check_unique_task_ids(tasks: list[Any], path: str | Path | None = None) -> None:
    """Raise when two tasks share a ``task_id`` (the run store keys episodes by it, so a second task with
    the same id would silently never run).

    Args:
        tasks: :class:`Task` objects or raw task dicts (entries without a string ``task_id`` are skipped:
            validation reports them).
        path: the file they came from (named in the error).
    Raises:
        TaskFormatError: naming the file, the later task's index and the id, and the earlier index.
    """
    first: dict[str, int] = {}
    for i, t in enumerate(tasks):
        tid = t.get("task_id") if isinstance(t, dict) else getattr(t, "task_id", None)
        if not isinstance(tid, str):
            continue
        if tid in first:
            raise TaskFormatError(path, f"task {i} ({tid})", f"duplicate task_id {tid!r}: task {first[tid]} has "
                                  "the same id (task ids must be unique)")
        first[tid] = i


def load_task_file(path: str | Path) -> TaskFile:
    """Read and validate a task file.

    Raises:
        TaskFormatError: unreadable file, invalid JSON, a duplicate ``task_id`` (:func:`check_unique_task_ids`),
            or a record that fails validation (message names the task index and field).
    """
    p = Path(path)
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise TaskFormatError(p, None, "file not found") from e
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise TaskFormatError(p, getattr(e, "lineno", None) and f"line {e.lineno}", f"invalid JSON: {e}") from e
    except RecursionError:
        raise TaskFormatError(p, None, "JSON nested too deeply") from None
    if not isinstance(raw, dict) or raw.get("format") != TASKS_FORMAT_ID:
        raise TaskFormatError(p, "format", f"not an urbanarena task file (expected format {TASKS_FORMAT_ID!r})")
    if isinstance(raw.get("tasks"), list):
        check_unique_task_ids(raw["tasks"], p)
    try:
        return TaskFile.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        loc = err.get("loc", ())
        record = None
        if len(loc) >= 2 and loc[0] == "tasks":
            idx = loc[1]
            tid = None
            try:
                tid = raw["tasks"][idx].get("task_id")
            except Exception:
                pass
            record = f"task {idx}" + (f" ({tid})" if tid else "") + " field " + ".".join(str(x) for x in loc[2:])
        elif loc:
            record = ".".join(str(x) for x in loc)
        raise TaskFormatError(p, record, err.get("msg", str(e))) from e
