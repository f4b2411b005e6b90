"""Resolve a TASKS argument (``--tasks``) to a list of :class:`Task`.

Grammar:

* ``KIND:PATH`` — a foreign task format, imported by the family whose
  ``foreign_format == KIND`` (``cityseeker:question.json``,
  ``map2seq:dev.jsonl``);
* a path to a task file in our schema (:func:`~urbanarena.tasks.schema.load_task_file`);
  its ``city.content_hash`` (and each task's) must match the city's;
* ``default`` — the city's default suite, named by ``city.meta.extra["default_tasks"]``
  (itself a TASKS argument; a relative path is taken relative to the saved
  city's directory); a city without one gets its frozen ``mini`` suite;
* ``mini`` / ``standard`` / ``full`` — the frozen suite of that size built on
  this city (:mod:`urbanarena.tasks.frozen`: matched by the city's content
  hash, materialized under ``<urbanarena home>/suites/`` with its images
  redrawn and checked against the frozen hashes; the check is
  :attr:`TaskSet.suite_check`); the newest suite when several are frozen on the city
  (``helsinki``: ``helsinki-arena7-v4``);
* ``<suite>-<size>`` — that size of one named frozen suite of this city
  (``helsinki-arena7-v3-mini``), for figures published on an older suite; a file of that name wins.

The task source hash (:attr:`TaskSet.source_hash`) is a sha256 over the bytes
of the file(s) read; it goes into the run metadata. Each task's own hash
(:func:`task_hash`) is stored with every episode so a resumed run notices a
task that changed under the same id.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from urbanarena.errors import TaskFormatError, UrbanArenaError
from urbanarena.tasks.families import families
from urbanarena.progress import Progress
from urbanarena.tasks.schema import Task, check_unique_task_ids, load_task_file
from urbanarena.world.city import City


@dataclass
class TaskSet:
    """Resolved tasks.

    Attributes:
        spec: the TASKS argument.
        tasks: tasks in source order.
        source_hash: sha256 hex over the source file bytes (see :func:`file_hash`).
        source_files: the files read.
        suite_check: for a frozen suite, :func:`urbanarena.tasks.frozen_materialize.materialize`'s check
            (hash comparison of the redrawn images and fingerprint panoramas); else ``None``.
    """

    spec: str
    tasks: list[Task]
    source_hash: str
    source_files: list[Path] = field(default_factory=list)
    suite_check: dict | None = None


#: TASKS values naming a frozen suite size
FROZEN_SPECS = ("mini", "standard", "full")
#: a TASKS value naming one frozen suite of the city and a size, e.g. ``helsinki-arena7-v3-mini``
NAMED_FROZEN_SPEC = re.compile(r"^(?P<suite>[A-Za-z0-9_.-]+-v\d+)-(?P<size>mini|standard|full)$")


def _frozen_task_set(spec: str, size: str, city: City, render_style: str | None = None,
                     name: str | None = None, progress=None, accept_redrawn_images: bool | None = None) -> TaskSet:
    from urbanarena.tasks.frozen import frozen_for_city
    from urbanarena.tasks.frozen_materialize import materialize
    from urbanarena.tasks.frozen_check import enforce_frozen_images

    path, check = materialize(frozen_for_city(city, render_style, name), size, city, progress=progress)
    check = enforce_frozen_images(check, accept_redrawn_images)
    # frozen v1/v2 name the core city 'helsinki' (its name when they were frozen); materialize matched the hash
    ts = _resolve_file(Path(path), city, renamed_ok=True)
    return TaskSet(spec, ts.tasks, ts.source_hash, ts.source_files, check)


def file_hash(files: list[Path]) -> str:
    """sha256 hex over each file's name and bytes, in the given order (a
    directory contributes its files recursively, sorted by relative path)."""
    h = hashlib.sha256()
    for f in files:
        f = Path(f)
        members = sorted(p for p in f.rglob("*") if p.is_file()) if f.is_dir() else [f]
        for m in members:
            h.update(m.name.encode() + b"\0")
            with open(m, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            h.update(b"\0")
    return h.hexdigest()


def task_hash(task: Task) -> str:
    """sha256 hex of a task's canonical JSON (sorted keys)."""
    blob = json.dumps(task.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def foreign_kinds() -> dict[str, str]:
    """``{foreign_format: family name}`` for every family that imports a foreign format."""
    return {f.foreign_format: name for name, f in families().items() if f.foreign_format}


def _name_problem(ref, city: City, renamed_ok: bool) -> str | None:
    """Why a ``city`` reference (:class:`~urbanarena.tasks.schema.CityRef`) does not name ``city``, or ``None``.
    ``renamed_ok``: a different name with the city's own content hash passes (the same graph under an older
    name: frozen suites, whose hashes materialize has checked)."""
    if ref.name == city.name:
        return None
    if renamed_ok and ref.content_hash and ref.content_hash == city.content_hash:
        return None
    hint = (" (the content hash is this city's: set city.name to the city's name)"
            if ref.content_hash and ref.content_hash == city.content_hash else "")
    return f"is for city {ref.name!r}, but this run's city is {city.name!r}{hint}"


def _check_tasks(tasks: list[Task], city: City, path: Path | None, renamed_ok: bool = False) -> None:
    """Check families are known, start, goal, reference and category nodes exist in ``city``, and graph
    families' tasks have a goal node (:attr:`~urbanarena.tasks.families.base.TaskFamily.needs_goal_node`).

    Raises:
        TaskFormatError: naming the task index and id.
    """
    check_unique_task_ids(tasks, path)  # foreign sources too: the store keys episodes by task_id
    fams = families()
    for i, t in enumerate(tasks):
        rec = f"task {i} ({t.task_id})"
        problem = _name_problem(t.city, city, renamed_ok)
        if problem:
            raise TaskFormatError(path, rec + " field city.name", f"task {problem}")
        if t.family not in fams:
            raise TaskFormatError(path, rec, f"unknown task family {t.family!r}; known: {', '.join(sorted(fams)) or 'none'}")
        if t.start.node is not None and t.start.node not in city:
            raise TaskFormatError(path, rec, f"start node {t.start.node!r} is not in city {city.name!r}")
        for k, g in enumerate(t.goals):
            if g.node is not None and g.node not in city:
                raise TaskFormatError(path, rec, f"goal {k} node {g.node!r} is not in city {city.name!r}")
        for name, nodes in [("reference_path", t.reference_path)] + [
            (f"reference_stages[{k}]", st) for k, st in enumerate(t.reference_stages or [])
        ] + [(f"goal {k} category_nodes", g.category_nodes or []) for k, g in enumerate(t.goals)]:
            for n in nodes:
                if n not in city:
                    raise TaskFormatError(path, rec, f"{name} node {n!r} is not in city {city.name!r}")
        if t.start.node is None and getattr(fams[t.family], "action_style", None) != "continuous":
            raise TaskFormatError(path, rec, "graph navigation needs a start node")  # continuous: a position will do
        if getattr(fams[t.family], "needs_goal_node", False) and not any(g.node is not None for g in t.goals):
            raise TaskFormatError(path, rec, f"a {t.family} task needs a goal with a node (goals is "
                                             f"{'empty' if not t.goals else 'without a node'})")


def resolve_task_set(spec: str, city: City, city_dir: str | Path | None = None,
                     render_style: str | None = None, progress: Progress | None = None,
                     accept_redrawn_images: bool | None = None) -> TaskSet:
    """Resolve a TASKS argument against ``city``.

    Args:
        spec: ``KIND:PATH``, a task-file path, ``default``, ``mini``, ``standard`` or ``full`` (the city's newest
            frozen suite for the style), or ``<suite>-<size>`` naming one of the city's frozen suites
            (``helsinki-arena7-v3-mini``: the published v3 rather than the default v4).
        city: the city the tasks run in.
        city_dir: the saved city's directory (for a relative ``default_tasks``).
        render_style: the render style of the run (``realistic``/``flat``, default
            :data:`~urbanarena.render.scene3d.render_settings.DEFAULT_RENDER_STYLE`): a frozen suite size resolves to
            the city's newest suite frozen for that style (``helsinki``: ``helsinki-arena7-v4``; ``helsinki-core``:
            ``-v2`` realistic, ``-v1`` flat).
        progress: hears a frozen suite's drawing (:func:`urbanarena.tasks.frozen_materialize.materialize`;
            :mod:`urbanarena.progress`).
        accept_redrawn_images: run a frozen suite whose reference images this machine draws differently
            (recorded in the check); ``None`` reads the environment
            (:data:`~urbanarena.tasks.frozen_check.ACCEPT_ENV`).
    Raises:
        SuiteImagesDifferError: a frozen suite's reference images differ here and were not accepted
            (:mod:`urbanarena.tasks.frozen_check`).
        TaskFormatError: unreadable/malformed task source, a task file for
            another city (content hash mismatch), unknown family, or a
            start/goal node missing from the city.
        UrbanArenaError: an unknown ``KIND``, a missing path, or ``default``/``mini``/``standard``/``full``
            for a city without a frozen suite (:class:`~urbanarena.tasks.frozen.FrozenSuiteError`).
    """
    spec = str(spec)
    if spec in FROZEN_SPECS:
        return _frozen_task_set(spec, spec, city, render_style, progress=progress,
                                accept_redrawn_images=accept_redrawn_images)
    named = NAMED_FROZEN_SPEC.match(spec)
    if named and not Path(spec).exists():
        return _frozen_task_set(spec, named.group("size"), city, render_style, named.group("suite"), progress,
                                accept_redrawn_images)
    if spec == "default":
        default = (city.meta.extra or {}).get("default_tasks")
        if not default:
            return _frozen_task_set(spec, "mini", city, render_style, progress=progress,
                                    accept_redrawn_images=accept_redrawn_images)
        default = str(default)
        if default == "default":
            raise UrbanArenaError(f"city {city.name!r}: default_tasks must not be 'default'")
        kinds = foreign_kinds()
        kind, sep, rest = default.partition(":")
        if city_dir is not None:
            if sep and kind in kinds and not Path(rest).is_absolute():
                default = f"{kind}:{Path(city_dir) / rest}"
            elif not (sep and kind in kinds) and not Path(default).is_absolute():
                default = str(Path(city_dir) / default)
        ts = resolve_task_set(default, city, city_dir, progress=progress)
        return TaskSet(spec, ts.tasks, ts.source_hash, ts.source_files)

    kinds = foreign_kinds()
    kind, sep, rest = spec.partition(":")
    if sep and kind in kinds and rest:
        p = Path(rest).expanduser()
        if not p.exists():
            raise TaskFormatError(p, None, "file not found")
        fam = families()[kinds[kind]]
        try:
            tasks = fam.load_foreign(p, city)
        except ValidationError as e:  # a record that passed the importer's own checks but not the task schema
            err = e.errors()[0]
            raise TaskFormatError(p, "field " + ".".join(str(x) for x in err.get("loc", ())),
                                  f"{kind} record outside the task schema: {err.get('msg', e)}") from None
        if not tasks:
            raise TaskFormatError(p, None, f"no {kind} tasks in this file")
        _check_tasks(tasks, city, p)
        return TaskSet(spec, list(tasks), file_hash([p]), [p])

    p = Path(spec).expanduser()
    if not p.exists():
        if sep and not Path(kind).exists() and len(kind) > 1:
            raise UrbanArenaError(
                f"unknown task format {kind!r} in {spec!r}; known: {', '.join(sorted(kinds)) or 'none'} "
                "(or give a task file path, or 'default')"
            )
        raise TaskFormatError(p, None, "file not found (TASKS is KIND:PATH, a task file, or 'default')")
    if p.is_dir():
        raise TaskFormatError(p, None, "is a directory; a task file (JSON) or KIND:PATH is expected")
    return _resolve_file(p, city, spec)


def _resolve_file(p: Path, city: City, spec: str | None = None, renamed_ok: bool = False) -> TaskSet:
    """A task file in our schema, checked against ``city`` (:func:`resolve_task_set`)."""
    tf = load_task_file(p)
    if tf.city.content_hash and tf.city.content_hash != city.content_hash:
        raise TaskFormatError(
            p, "city.content_hash",
            f"task file is for city {tf.city.name!r} (hash {tf.city.content_hash[:12]}...), "
            f"but city {city.name!r} has hash {city.content_hash[:12]}...",
        )
    for i, t in enumerate(tf.tasks):
        if t.city.content_hash and t.city.content_hash != city.content_hash:
            raise TaskFormatError(
                p, f"task {i} ({t.task_id}) field city.content_hash",
                f"task is for city {t.city.name!r} (hash {t.city.content_hash[:12]}...), "
                f"but city {city.name!r} has hash {city.content_hash[:12]}...",
            )
    problem = _name_problem(tf.city, city, renamed_ok)
    if problem:
        raise TaskFormatError(p, "city.name", f"task file {problem}")
    if not tf.tasks:
        raise TaskFormatError(p, "tasks", "the task file holds no tasks")
    _check_tasks(tf.tasks, city, p, renamed_ok)
    return TaskSet(spec if spec is not None else str(p), list(tf.tasks), file_hash([p]), [p])


def resolve_tasks(spec: str, city: City, city_dir: str | Path | None = None) -> list[Task]:
    """The tasks of a TASKS argument (see :func:`resolve_task_set`)."""
    return resolve_task_set(spec, city, city_dir).tasks
