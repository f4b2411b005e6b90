"""The task-file schema, version 1 (see ``docs/task-schema.md``).

One JSON schema for every task family. A task file is::

    {"format": "urbanarena-tasks", "schema_version": 1,
     "city": {"name": ..., "content_hash": ...},
     "tasks": [Task, ...]}

Units: metres for distances/radii, degrees clockwise from true north for
headings, WGS84 degrees for positions.

Bounds (ours; every task source goes through these models: task files, frozen suites, foreign importers,
generators): ids (``task_id``, node ids) are non-empty, at most :data:`MAX_ID_CHARS` characters
(node ids :data:`~urbanarena.world.node_ids.MAX_NODE_ID_CHARS`), without control, bidirectional-formatting
or line-separator characters (:data:`~urbanarena.world.node_ids.BAD_ID_CHARS`); texts (``instruction``,
goal ``label``, a text ``answer``) are at most :data:`MAX_TEXT_CHARS` / :data:`MAX_LABEL_CHARS` characters
without NUL, other control characters than tab, line feed and carriage return, bidirectional-formatting
characters or lone surrogates (:data:`BAD_TEXT_CHARS`); names (``family``, ``category``, ``difficulty``,
``answer_metric``, ``city.name``) at most :data:`MAX_NAME_CHARS`; ``success_radius_m`` in
``[0, MAX_RADIUS_M]``; at most :data:`MAX_GOALS` goals, no two equal; at most :data:`MAX_PATH_NODES` nodes
in a path or category list and :data:`MAX_STAGES` stages; ``privileged`` a JSON boolean (not ``"yes"``).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, ValidationError, model_validator

from urbanarena.errors import TaskFormatError
from urbanarena.world.node_ids import BAD_ID_CHARS, MAX_NODE_ID_CHARS, node_id_problem

TASKS_FORMAT_ID = "urbanarena-tasks"
SCHEMA_VERSION = 1


#: longest task id (characters)
MAX_ID_CHARS = 256
#: longest instruction / question (characters)
MAX_TEXT_CHARS = 20_000
#: longest goal label (characters)
MAX_LABEL_CHARS = 1_000
#: longest family / category / difficulty / metric / city name (characters)
MAX_NAME_CHARS = 128
#: largest success radius (metres)
MAX_RADIUS_M = 5_000.0
#: most goals (stages) of one task
MAX_GOALS = 64
#: most nodes in a reference path, a stage or a goal's category nodes
MAX_PATH_NODES = 100_000
#: most reference stages
MAX_STAGES = 64
#: characters refused in texts: C0 controls but tab, line feed and carriage return; DEL and C1; bidirectional
#: formatting characters; lone surrogates
BAD_TEXT_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                            "\ud800-\udfff]")


def _bad_char(text: str, pattern: re.Pattern) -> str | None:
    m = pattern.search(text)
    return None if m is None else f"U+{ord(m.group()):04X} at character {m.start()}"


def _check_id(value: str) -> str:
    if not value:
        raise ValueError("empty id")
    if len(value) > MAX_ID_CHARS:
        raise ValueError(f"id of {len(value)} characters (at most {MAX_ID_CHARS})")
    bad = _bad_char(value, BAD_ID_CHARS)
    if bad:
        raise ValueError(f"id holds the control or bidirectional-formatting character {bad}")
    return value


def _check_node(value: str) -> str:
    problem = node_id_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _check_name(value: str) -> str:
    if len(value) > MAX_NAME_CHARS:
        raise ValueError(f"name of {len(value)} characters (at most {MAX_NAME_CHARS})")
    bad = _bad_char(value, BAD_ID_CHARS)
    if bad:
        raise ValueError(f"name holds the control or bidirectional-formatting character {bad}")
    return value


def _text_checker(limit: int):
    def check(value: str) -> str:
        if len(value) > limit:
            raise ValueError(f"text of {len(value)} characters (at most {limit})")
        bad = _bad_char(value, BAD_TEXT_CHARS)
        if bad:
            raise ValueError(f"text holds the control or bidirectional-formatting character {bad}")
        return value
    return check


def _check_answer(value: Any) -> Any:
    if isinstance(value, str):
        return _text_checker(MAX_TEXT_CHARS)(value)
    return value


#: a task id (module docstring)
TaskId = Annotated[str, AfterValidator(_check_id)]
#: a node id (:mod:`urbanarena.world.node_ids`, bounded)
NodeId = Annotated[str, AfterValidator(_check_node)]
#: a short name (family, category, city ...)
Name = Annotated[str, AfterValidator(_check_name)]
NodeList = Annotated[list[NodeId], Field(max_length=MAX_PATH_NODES)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, allow_inf_nan=False)


class CityRef(_Model):
    """Which city a task belongs to: its name and graph content hash (sha256 hex)."""

    name: Name
    content_hash: Annotated[str, Field(max_length=128)] | None = None


class Position(_Model):
    """A WGS84 position, degrees."""

    lat: float = Field(ge=-90, le=90)
    lon: float = Field(ge=-180, le=180)


class Start(_Model):
    """Start pose: a node and/or a position, and the start heading (degrees from north)."""

    node: NodeId | None = None
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

    node: NodeId | None = None
    position: Position | None = None
    label: Annotated[str, AfterValidator(_text_checker(MAX_LABEL_CHARS))] | None = None
    category_nodes: NodeList | None = None


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

    task_id: TaskId
    family: Name
    city: CityRef
    start: Start
    goals: list[Goal] = Field(default_factory=list, max_length=MAX_GOALS)
    success_radius_m: float | None = Field(default=None, ge=0, le=MAX_RADIUS_M)
    instruction: Annotated[str, AfterValidator(_text_checker(MAX_TEXT_CHARS))] = ""
    answer: Annotated[Any, AfterValidator(_check_answer)] = None
    answer_metric: Name | None = None
    reference_path: NodeList = Field(default_factory=list)
    reference_stages: Annotated[list[NodeList], Field(max_length=MAX_STAGES)] | None = None
    difficulty: Name | None = None
    category: Name | None = None
    privileged: StrictBool = False
    provenance: dict[str, Any] = Field(default_factory=dict)
    extra: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _distinct_goals(self):
        seen: dict[str, int] = {}
        for k, g in enumerate(self.goals):
            key = g.model_dump_json()
            if key in seen:
                raise ValueError(f"goal {k} repeats goal {seen[key]} (goals are distinct stages)")
            seen[key] = k
        return self

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
            short = len(tid) <= 60 and not BAD_ID_CHARS.search(tid)  # never echo a huge or hidden id back
            shown = tid if short else repr(tid[:60]) + "..."
            quoted = repr(tid) if short else shown
            raise TaskFormatError(path, f"task {i} ({shown})", f"duplicate task_id {quoted}: "
                                  f"task {first[tid]} has the same id (task ids must be unique)")
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
            if isinstance(tid, str) and (len(tid) > 60 or BAD_ID_CHARS.search(tid)):
                tid = repr(tid[:60]) + ("..." if len(tid) > 60 else "")  # never echo a huge or hidden id back
            record = f"task {idx}" + (f" ({tid})" if tid else "") + " field " + ".".join(str(x) for x in loc[2:])
        elif loc:
            record = ".".join(str(x) for x in loc)
        raise TaskFormatError(p, record, err.get("msg", str(e))) from e
