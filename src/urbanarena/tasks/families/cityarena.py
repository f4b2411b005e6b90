"""The ``cityarena`` task family: 360CityArena-style tasks in our task schema.

360CityArena (Watanabe et al., ECCV 2026; repository ``360MM-Team/360CityArena``,
``docs/task_taxonomy.md`` and ``python/src/cityarena/tasks``) has seven task
families. A ``cityarena`` task names its kind in ``extra.task_kind``:

=====================  ===============================  =====================
``task_kind``          360CityArena task type           default answer metric
=====================  ===============================  =====================
``localization``       Localization                     ``exact_match``
``landmark_language``  Landmark Search with Language    ``coordinate_match``
``landmark_image``     Landmark Search with Image       ``coordinate_match``
``map_navigation``     Map Navigation                   ``coordinate_match``
``vln``                Language Guided Navigation       ``coordinate_match``
``object_count``       Counting                         ``mean_relative_accuracy``
``relational``         Relational Spatial Reasoning     ``fuzzy_match``
=====================  ===============================  =====================

Task fields used:

* ``start.node`` (required) and ``start.heading_deg`` (travel direction);
* ``goals[-1]`` — the target as a ``node`` and/or a ``position`` (WGS84);
  required by ``coordinate_match``;
* ``answer`` and ``answer_metric`` (``exact_match``, ``coordinate_match``,
  ``mra`` or ``mean_relative_accuracy``, ``fuzzy_match``, or our ``name_match``
  with ``extra.distractor_names``; default: the kind's);
  ``exact_match`` needs a grid answer ``x:N y:M``, MRA a number;
* ``success_radius_m`` — the coordinate_match radius (default: the protocol's
  ``coordinate_radius_m``, 10 m, or ``map_navigation_radius_m``, 20 m, for
  map navigation);
* ``instruction`` — the task text the agent receives;
* ``extra.reference_images`` — image files given to the agent with every
  request (reference photo, 5 x 5 grid map, start/goal map), paths relative
  to the task file's folder (no absolute paths, no ``..``);
* ``extra.requires_current_location`` — send the current-location map with
  the agent's marker (360CityArena's per-task ``requires_current_location``);
* ``extra.map_id`` / ``extra.landmark`` — copied into the results columns of
  the same names (``landmark`` defaults to the final goal's ``label``).

Episodes run in :class:`~urbanarena.env.arena_env.ArenaEnv` under
``cityarena-v1`` (default) or ``urbanarena-v1``, 50 steps by default; the
runner's arena loop scores them with :meth:`CityArenaFamily.make_validator`
(:mod:`urbanarena.tasks.validators`) and 360CityArena's episode columns
(:func:`~urbanarena.tasks.validators.score_episode`). Arena episodes have no
graph trajectory for the navigation metrics, so :meth:`CityArenaFamily.score`
is not used.

``fuzzy_match`` answers are judged by the run's LLM judge (``urbanarena run
--judge SPEC``, :mod:`urbanarena.runner.judge`), passed to
:meth:`CityArenaFamily.make_validator` with the model under test; without a
judge only the offline string match is recorded (``offline_score``) and the
official score stays missing.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any, Callable

from urbanarena.env.arena_env import NonTextAnswer
from urbanarena.env.protocols import get_protocol
from urbanarena.errors import ProtocolError, UrbanArenaError
from urbanarena.tasks.families.base import TaskFamily, Trajectory
from urbanarena.tasks.reference_answers import reference_exact_match, reference_mra_match
from urbanarena.tasks.schema import Task
from urbanarena.tasks.validators import (
    COORDINATE_MATCH,
    EXACT_MATCH,
    FUZZY_MATCH,
    MRA,
    NAME_MATCH,
    Judge,
    ValidationResult,
    coordinate_match,
    exact_match,
    first_number,
    fuzzy_match,
    mra_match,
    name_match,
    parse_grid_answer,
)
from urbanarena.world.city import City

#: ``task_kind`` -> (360CityArena ``TaskType`` enum name, default answer metric)
TASK_KINDS: dict[str, tuple[str, str]] = {
    "localization": ("Localization", EXACT_MATCH),
    "landmark_language": ("LandmarkSearchWithLanguage", COORDINATE_MATCH),
    "landmark_image": ("LandmarkSearchWithImage", COORDINATE_MATCH),
    "map_navigation": ("MapNavigation", COORDINATE_MATCH),
    "vln": ("LanguageGuidedNavigation", COORDINATE_MATCH),
    "object_count": ("Counting", MRA),
    "relational": ("RelationalSpatialReasoning", FUZZY_MATCH),
}

#: accepted spellings of ``answer_metric``
METRIC_ALIASES: dict[str, str] = {
    "exact_match": EXACT_MATCH, "exact": EXACT_MATCH,
    "coordinate_match": COORDINATE_MATCH,
    "mra": MRA, "mean_relative_accuracy": MRA,
    "fuzzy_match": FUZZY_MATCH,
    "name_match": NAME_MATCH,
}

#: ``(status, answer, final_xy_m) -> ValidationResult | None`` (as :func:`urbanarena.agents.vlm.run_arena_episode` takes)
Validator = Callable[[str, "str | None", "tuple[float, float]"], "ValidationResult | None"]


class CityArenaFamily(TaskFamily):
    """360CityArena-style tasks (module docstring)."""

    name = "cityarena"
    action_style = "arena"
    default_protocol = "cityarena-v1"
    default_max_steps = 50
    version = 1

    # ------------------------------------------------------------- checks
    @staticmethod
    def check_protocol(protocol_id: str) -> None:
        """Raise :class:`ProtocolError` unless ``protocol_id`` is an arena protocol (``action_set == "arena"``)."""
        if get_protocol(protocol_id).params.get("action_set") != "arena":
            raise ProtocolError(
                f"task family 'cityarena' runs in the arena (protocols cityarena-v1, urbanarena-v1), not {protocol_id!r}")

    @staticmethod
    def task_kind(task: Task) -> str:
        """``task.extra["task_kind"]``. Raises ``ValueError`` when missing or unknown."""
        kind = task.extra.get("task_kind")
        if kind not in TASK_KINDS:
            raise ValueError(f"extra.task_kind {kind!r} is not one of {', '.join(TASK_KINDS)}")
        return str(kind)

    @classmethod
    def task_type(cls, task: Task) -> str:
        """360CityArena's ``TaskType`` enum name of the task's kind (results column ``task_type``)."""
        return TASK_KINDS[cls.task_kind(task)][0]

    @classmethod
    def metric(cls, task: Task) -> str:
        """The task's answer metric (validators' name), from ``answer_metric`` or the kind's default.

        Raises: ``ValueError`` for an unknown metric or kind.
        """
        if task.answer_metric is None:
            return TASK_KINDS[cls.task_kind(task)][1]
        m = METRIC_ALIASES.get(str(task.answer_metric).strip().lower())
        if m is None:
            raise ValueError(f"answer_metric {task.answer_metric!r} is not one of {', '.join(METRIC_ALIASES)}")
        return m

    @staticmethod
    def reference_image_names(task: Task) -> list[str]:
        """``extra.reference_images`` as a list of relative POSIX paths. Raises ``ValueError`` when malformed."""
        refs = task.extra.get("reference_images") or []
        if not isinstance(refs, list) or not all(isinstance(r, str) and r.strip() for r in refs):
            raise ValueError("extra.reference_images must be a list of file paths (strings)")
        for r in refs:
            p = PurePosixPath(r.replace("\\", "/"))
            if p.is_absolute() or Path(r).is_absolute() or ".." in p.parts:
                raise ValueError(f"reference image {r!r} must be a path relative to the task file, without '..'")
        return list(refs)

    @classmethod
    def reference_image_paths(cls, task: Task, base_dir: str | Path | None) -> list[Path]:
        """Reference image files of ``task``, resolved against ``base_dir`` (the task file's folder)."""
        base = Path(base_dir) if base_dir is not None else Path.cwd()
        return [base / r for r in cls.reference_image_names(task)]

    @staticmethod
    def requires_current_location(task: Task) -> bool:
        """Whether the agent gets the current-location map (``extra.requires_current_location``)."""
        v = task.extra.get("requires_current_location", False)
        if not isinstance(v, bool):
            raise ValueError(f"extra.requires_current_location must be true or false, got {v!r}")
        return v

    @classmethod
    def sends_location_map(cls, task: Task, protocol_id: str) -> bool:
        """Whether the agent gets the current-location map under ``protocol_id`` (its ``location_map``
        parameter, :mod:`urbanarena.env.protocols`): ``except-localization`` (``cityarena-v1``: every kind but
        localization, as 360CityArena's task loader sets ``requires_current_location``) or ``task-flag``
        (the task's ``extra.requires_current_location``)."""
        rule = get_protocol(protocol_id).params.get("location_map", "task-flag")
        if rule == "except-localization":
            return cls.task_kind(task) != "localization"
        return cls.requires_current_location(task)

    @classmethod
    def check_task(cls, task: Task, base_dir: str | Path | None = None) -> None:
        """Check a task's arena fields (see the module docstring).

        Raises:
            ValueError: naming the field: unknown kind or metric, an answer the
                metric cannot read, a coordinate task without a goal, a
                malformed or missing reference image file.
        """
        cls.task_kind(task)
        metric = cls.metric(task)
        if task.start.node is None:
            raise ValueError("start.node is required (the arena starts on a panorama node)")
        if metric == EXACT_MATCH and parse_grid_answer(str(task.answer or "")) is None:
            raise ValueError(f"exact_match needs an answer 'x:N y:M', got {task.answer!r}")
        if metric == MRA and first_number(str(task.answer if task.answer is not None else "")) is None:
            raise ValueError(f"mean_relative_accuracy needs a numeric answer, got {task.answer!r}")
        if metric in (FUZZY_MATCH, NAME_MATCH) and not str(task.answer or "").strip():
            raise ValueError(f"{metric} needs a reference answer")
        if metric == NAME_MATCH:
            names = task.extra.get("distractor_names", [])
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise ValueError("extra.distractor_names must be a list of strings")
        if metric == COORDINATE_MATCH:
            g = task.final_goal
            if g is None or (g.node is None and g.position is None):
                raise ValueError("coordinate_match needs a final goal with a node or a position")
        cls.requires_current_location(task)
        for p in cls.reference_image_paths(task, base_dir):
            if not p.is_file():
                raise ValueError(f"reference image {p} not found")

    # ------------------------------------------------------------- episodes
    def env_options(self, task: Task) -> dict[str, Any]:
        """``ArenaEnv.reset`` options: ``start_node``, ``start_heading_deg``, ``task_text`` and the
        final goal as ``goal_node`` and/or ``goal_latlon`` (reference images are added by the runner)."""
        opts: dict[str, Any] = {"start_node": task.start.node, "start_heading_deg": task.start.heading_deg,
                                "task_text": task.instruction}
        g = task.final_goal
        if g is not None:
            if g.node is not None:
                opts["goal_node"] = g.node
            if g.position is not None:
                opts["goal_latlon"] = (g.position.lat, g.position.lon)
        return opts

    @classmethod
    def goal_xy_m(cls, task: Task, city: City) -> tuple[float, float] | None:
        """The final goal in local ENU metres: its ``position`` when given, else its node's position."""
        g = task.final_goal
        if g is None:
            return None
        if g.position is not None:
            x, y = city.frame.to_xy(g.position.lat, g.position.lon)
            return float(x), float(y)
        if g.node is not None:
            x, y = city.xy(g.node)
            return float(x), float(y)
        return None

    @classmethod
    def radius_m(cls, task: Task, protocol_id: str) -> float:
        """coordinate_match radius: ``success_radius_m``, else the protocol's radius for the kind
        (``map_navigation_radius_m`` for map navigation, else ``coordinate_radius_m``)."""
        if task.success_radius_m is not None:
            return float(task.success_radius_m)
        p = get_protocol(protocol_id).params
        if cls.task_kind(task) == "map_navigation":
            return float(p.get("map_navigation_radius_m", 20.0))
        return float(p.get("coordinate_radius_m", 10.0))

    @classmethod
    def make_validator(cls, task: Task, city: City, protocol_id: str, *, judge: Judge | None = None,
                       model_under_test: str | None = None) -> Validator:
        """The task's validator for the arena loop.

        ``exact_match``, MRA and ``fuzzy_match`` judge the ANSWER text and give
        no verdict (``None``) for other terminations; ``coordinate_match``
        judges the final position after every termination (360CityArena reports
        final-position correctness for location tasks that did not answer,
        while ``evaluation_score`` stays 0). ``fuzzy_match`` without ``judge``
        records only the offline string match (``validation_available`` false).

        Under a protocol with ``answer_reading = "reference"`` (``cityarena-v1``) grid and count answers
        are read as 360CityArena's validators read them and an answer that arrived as a JSON number (a
        :class:`~urbanarena.env.arena_env.NonTextAnswer`) scores 0 in every kind
        (:mod:`urbanarena.tasks.reference_answers`); otherwise (``urbanarena-v1``) the forgiving readers.

        Raises: ``ValueError`` for a task :meth:`check_task` rejects.
        """
        validator = cls._validator(task, city, protocol_id, judge=judge, model_under_test=model_under_test)
        if get_protocol(protocol_id).params.get("answer_reading") != "reference":
            return validator
        metric = cls.metric(task)

        def reference(status: str, answer: str | None, xy) -> ValidationResult | None:
            # 360CityArena validates an ANSWER by first calling .strip() on the answer: one sent as a JSON
            # number (or null, a list ...) fails there and scores 0 in every task type
            if status == "ANSWER" and isinstance(answer, NonTextAnswer):
                return ValidationResult(metric, False, 0.0, "" if task.answer is None else str(task.answer),
                                        str.__str__(answer), f"the answer arrived as JSON {answer}, not text: "
                                        "the reference's validator cannot read it; score 0", parsed=False)
            return validator(status, answer, xy)

        return reference

    @classmethod
    def _validator(cls, task: Task, city: City, protocol_id: str, *, judge: Judge | None,
                   model_under_test: str | None) -> Validator:
        metric = cls.metric(task)
        expected = "" if task.answer is None else str(task.answer)
        reference = get_protocol(protocol_id).params.get("answer_reading") == "reference"
        if metric == EXACT_MATCH:
            read_grid = reference_exact_match if reference else exact_match
            return lambda status, answer, xy: read_grid(answer or "", expected) if status == "ANSWER" else None
        if metric == MRA:
            read_count = reference_mra_match if reference else mra_match
            return lambda status, answer, xy: read_count(answer or "", expected) if status == "ANSWER" else None
        if metric == FUZZY_MATCH:
            question = task.instruction

            def fuzzy(status: str, answer: str | None, xy) -> ValidationResult | None:
                if status != "ANSWER":
                    return None
                return fuzzy_match(question, expected, answer or "", judge=judge, model_under_test=model_under_test)

            return fuzzy
        if metric == NAME_MATCH:
            distractors = list(task.extra.get("distractor_names", []))
            return lambda status, answer, xy: (name_match(answer or "", expected, distractors)
                                               if status == "ANSWER" else None)
        goal = cls.goal_xy_m(task, city)
        if goal is None:
            raise ValueError(f"task {task.task_id!r}: coordinate_match needs a goal node or position")
        radius = cls.radius_m(task, protocol_id)
        return lambda status, answer, xy: coordinate_match(xy, goal, radius)

    def score(self, task: Task, city: City, protocol_id: str, traj: Trajectory) -> dict[str, float | None]:
        """Not applicable: arena episodes are scored by :meth:`make_validator` in the arena loop
        (:mod:`urbanarena.runner.arena`), which the runner uses for every ``action_style == "arena"`` family.

        Raises: :class:`UrbanArenaError` always (a graph trajectory has no answer or metric position).
        """
        raise UrbanArenaError(
            f"task {task.task_id!r} (family 'cityarena') is an arena task: it is scored from the arena episode "
            "(urbanarena.runner.arena), not from a graph trajectory")


__all__ = ["CityArenaFamily", "METRIC_ALIASES", "TASK_KINDS"]
