"""Arena episodes for the runner: a task of an ``action_style == "arena"`` family
(``cityarena``) run by :func:`urbanarena.agents.vlm.run_arena_episode` and turned
into a store row.

Per runner (one per worker process or thread) the city's camera observer
(:class:`~urbanarena.env.observers.PanoramaObserver`, ``ArenaViewSettings``:
640 x 360 px, 90 degree field of view, 360CityArena's capture size) and the
current-location map (:class:`~urbanarena.env.observers.LocationMapObserver`,
640 x 640 px, for the tasks the protocol's ``location_map`` rule names: ``cityarena-v1`` every kind but
localization, ``urbanarena-v1`` tasks with ``extra.requires_current_location``) are
built once; reference images are read once per file (RGB). The task family
gives the reset options and the validator
(:meth:`~urbanarena.tasks.families.cityarena.CityArenaFamily.make_validator`).

Stored row (see :mod:`urbanarena.runner.store`): ``stop_reason`` is the arena
status (``ANSWER``, ``STEP_LIMIT``, ``STAGNATION``, ``AWAY_FROM_GOAL``, or
``error`` when the agent raised), ``steps`` the consumed model requests,
``actions`` the action labels (``"W LARGE"``, ``"ANSWER: x:1 y:2"``),
``trajectory`` the start node then the nearest panorama node after every
step, ``headings`` empty, ``metrics`` 360CityArena's episode columns
(:func:`~urbanarena.tasks.validators.score_episode`) plus the validator's
full result, ``details`` (positions, final position, goal distances, env
counters, answer, poses) and the results-schema-v3 columns
(:mod:`urbanarena.runner.results`). Budget caps and read-only cache misses
raise :class:`~urbanarena.runner.episode.RunStopped`.

The camera observer decodes panoramas at the width that loses no detail at
the view centre (2012 px for the 640 px, 90 degree view;
:func:`~urbanarena.env.observers.panorama_observer_for`), not at full
resolution. For a city without imagery but with OSM annotations it shows
panoramas rendered on demand and cached on disk (2048 px, the width
``urbanarena city build --prerender`` writes). The observer is built on the
first episode of an agent that looks at images (:func:`agent_uses_images`):
agents that do not (``arena-oracle``, graph-only baselines) run with
``observation["view"] = None`` and never render, so they run where no OpenGL
context exists; a VLM agent on a rendered city there fails with
:class:`~urbanarena.render.scene3d.context.RendererUnavailableError` naming the reason.

Fuzzy-match judge (``--judge``, :mod:`urbanarena.runner.judge`): with a
:class:`~urbanarena.runner.judge.JudgeSettings` the runner builds one
:class:`~urbanarena.runner.judge.RunJudge` (its own model client on the
run's response cache and budget ledger) and passes it to the validator of
``fuzzy_match`` tasks with the model under test; the episode's judge usage
goes to ``details.judge_usage`` (never into the agent's counters). Without a
judge, fuzzy answers get only the offline string match (``offline_score``)
and a null ``evaluation_score``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from urbanarena.agents.base import Agent, AgentContext
from urbanarena.agents.vlm.arena_loop import run_arena_episode
from urbanarena.env.observers import LocationMapObserver, panorama_observer_for
from urbanarena.render.scene3d.styles import check_style, settings_for_style, usable_style
from urbanarena.render.encode import decode_image
from urbanarena.render.views import ViewRenderer
from urbanarena.runner.episode import RUN_LEVEL_ERRORS, close_agent, jsonable, row_identity, run_stopped, utc_now
from urbanarena.runner.judge import JudgeSettings, RunJudge
from urbanarena.runner.results import arena_columns
from urbanarena.runner.trace import EpisodeRecorder, TraceWriter
from urbanarena.tasks.errored import as_failure
from urbanarena.tasks.families import get_family
from urbanarena.tasks.schema import Task
from urbanarena.tasks.validators import FUZZY_MATCH
from urbanarena.world.city import City

AgentFactory = Callable[[], Agent]


@dataclass(frozen=True)
class ArenaViewSettings:
    """What the arena agent is shown (part of the episode config and its hash).

    Attributes:
        width, height, hfov_deg: camera view, pixels and degrees (360CityArena: 640 x 360).
        map_width, map_height: current-location map, pixels (360CityArena: 640 x 640).
        render_style: how rendered cities look (``photo``, ``realistic`` or ``flat``;
            :mod:`urbanarena.render.scene3d.styles`); ``None`` = the default, ``photo``. ``photo`` becomes
            ``realistic`` when this machine lacks the fetched photo assets
            (:func:`~urbanarena.render.scene3d.styles.usable_style`, one line on stderr; never fetches), so the
            settings always name the style really drawn, and the camera default follows it. Left out of :meth:`as_dict` when ``flat``, so flat runs keep the
            config hashes they had before styles existed. Cities with real imagery ignore it.
        population: people and vehicles in rendered panoramas (``snapshot`` or ``none``;
            :mod:`urbanarena.render.scene3d.population`); ``None`` = the style's default (``snapshot`` for
            realistic, ``none`` for flat). Recorded in :meth:`as_dict` unless ``none``, so flat runs keep their hashes.
        camera: the camera model views go through (:mod:`urbanarena.render.camera_model`: ``clean``,
            ``consumer360``, ``phone``); ``None`` = the style's default (``clean`` for flat and realistic).
            Recorded in :meth:`as_dict` unless ``clean``, so earlier runs keep their hashes, with the camera's
            pixel version (``camera_version``, :func:`~urbanarena.render.camera_model.camera_version_entry`) when
            it has one: runs through a re-tuned camera get new config hashes.
    """

    width: int = 640
    height: int = 360
    hfov_deg: float = 90.0
    map_width: int = 640
    map_height: int = 640
    render_style: str | None = None
    population: str | None = None
    camera: str | None = None

    def __post_init__(self) -> None:
        from urbanarena.render.camera_model import default_camera, get_camera
        from urbanarena.render.scene3d.population import DEFAULT_POPULATION_OF_STYLE, check_population

        object.__setattr__(self, "render_style", usable_style(self.render_style))  # photo without assets: realistic
        if self.population is None:
            object.__setattr__(self, "population", DEFAULT_POPULATION_OF_STYLE[self.render_style])
        check_population(self.population)
        if self.camera is None:
            object.__setattr__(self, "camera", default_camera(self.render_style))
        get_camera(str(self.camera))

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["render_style"] == "flat":
            del d["render_style"]
        if d["population"] == "none":
            del d["population"]
        if d["camera"] == "clean":
            del d["camera"]
        else:
            from urbanarena.render.camera_model import camera_version_entry

            d.update(camera_version_entry(d["camera"]))  # a camera whose pixels changed changes the config hash
        return d

    @property
    def render_settings(self):
        """The :class:`~urbanarena.render.scene3d.render_settings.RenderSettings` of rendered panoramas."""
        return settings_for_style(self.render_style, population=self.population)

    @classmethod
    def from_stored(cls, d: dict[str, Any] | None) -> "ArenaViewSettings":
        """The settings of a stored config's ``extra.arena_view`` (:meth:`as_dict`: an absent
        ``render_style`` means ``flat``, an absent ``population`` ``none``: runs before issue 19 drew none; an
        absent ``camera`` ``clean``: runs before the camera model)."""
        # the camera's version is recorded, not a setting
        d = {k: v for k, v in (d or {}).items() if k != "camera_version"}
        return cls(**{"render_style": "flat", "population": "none", "camera": "clean", **d})


def agent_uses_images(agent: Any) -> bool:
    """Whether ``agent`` looks at camera views: its ``uses_images`` attribute when it has one, else
    ``True`` unless it is ``privileged`` (a privileged agent such as ``arena-oracle`` plans on ground
    truth). Agents that read only the graph, poses or text (a random baseline) set
    ``uses_images = False``; their episodes then run without an observer (``observation["view"]`` is
    ``None``), so they neither render nor decode panoramas."""
    flag = getattr(agent, "uses_images", None)
    if flag is not None:
        return bool(flag)
    return not bool(getattr(agent, "privileged", False))


def control_wrapper(agent: Any, hfov_deg: float):
    """The env wrapper of ``agent``'s control mode (``--oracle-perception`` adds the features in view,
    :mod:`urbanarena.agents.controls`), or ``None``."""
    control = getattr(agent, "control", None)
    return control.env_wrapper(hfov_deg) if control is not None else None


class _FailedAgent(Agent):
    """Stands in for an agent whose factory raised, so the arena loop records the error like any agent error."""

    name = "failed"
    uses_images = False

    def __init__(self, exc: BaseException):
        super().__init__()
        self.exc = exc

    def reset(self, task: Task, context: AgentContext) -> None:
        raise self.exc

    def act(self, observation: dict[str, Any]) -> Any:
        raise self.exc


def load_reference_image(path: str | Path) -> np.ndarray:
    """A reference image file as RGB uint8 ``(H, W, 3)``.

    Raises: ``OSError`` when unreadable, ``ValueError``/``ImageFormatError`` when not an image.
    """
    return decode_image(Path(path).read_bytes())


class ArenaEpisodeRunner:
    """Runs arena-family episodes on one city (module docstring).

    Args:
        city: the city (with imagery for a VLM agent).
        agent_factory: zero-argument callable returning a fresh agent.
        agent_name: name stored with each result.
        city_dir: saved city directory (a relative imagery root resolves against it).
        task_dir: folder of the task file (reference images resolve against it).
        view: :class:`ArenaViewSettings`.
        max_cached_references: reference images kept decoded.
        judge: the fuzzy-match judge (``None``: offline string match only).
        model_under_test: the agent's model (``provider:model``; the agent name for agents that call no
            model): the judge must be another model (checked again on every verdict).
    """

    def __init__(self, city: City, agent_factory: AgentFactory, agent_name: str, *,
                 city_dir: str | Path | None = None, task_dir: str | Path | None = None,
                 view: ArenaViewSettings | None = None, max_cached_references: int = 64,
                 judge: JudgeSettings | RunJudge | None = None, model_under_test: str | None = None):
        self.city = city
        self.agent_factory = agent_factory
        self.agent_name = agent_name
        self.task_dir = Path(task_dir) if task_dir is not None else None
        self.view = view or ArenaViewSettings()
        self.city_dir = city_dir
        self._observer: Any = None
        self._observer_built = False
        self.map_renderer = LocationMapObserver(self.view.map_width, self.view.map_height)
        self._refs: OrderedDict[Path, np.ndarray] = OrderedDict()
        self._max_refs = int(max_cached_references)
        self.judge = RunJudge(judge) if isinstance(judge, JudgeSettings) else judge
        self.model_under_test = model_under_test or agent_name

    @property
    def observer(self):
        """The camera observer (built on first use; ``None`` for a graph-only city).

        Raises:
            RendererUnavailableError: the city's panoramas must be rendered and no OpenGL context exists here.
        """
        if not self._observer_built:
            self._observer = panorama_observer_for(self.city, base_dir=self.city_dir, width=self.view.width,
                                                   height=self.view.height, hfov_deg=self.view.hfov_deg,
                                                   renderer=ViewRenderer(max_grids=16),
                                                   render_settings=self.view.render_settings,
                                                   camera=self.view.camera)
            self._observer_built = True
        return self._observer

    def observer_for(self, agent: Agent):
        """The observer an episode of ``agent`` gets: ``None`` when the agent does not look at camera
        views (:func:`agent_uses_images`), so such agents never force panoramas to be rendered or decoded."""
        return self.observer if agent_uses_images(agent) else None

    def reference_images(self, paths: list[Path]) -> list[np.ndarray]:
        """Decoded reference images (cached)."""
        out = []
        for p in paths:
            img = self._refs.get(p)
            if img is None:
                img = load_reference_image(p)
                img.setflags(write=False)
                self._refs[p] = img
                while len(self._refs) > self._max_refs:
                    self._refs.popitem(last=False)
            else:
                self._refs.move_to_end(p)
            out.append(img)
        return out

    def run(self, task: Task, seed: int, protocol_id: str, max_steps: int, config_hash: str = "", *,
            trace: TraceWriter | None = None, cancel: threading.Event | None = None) -> dict[str, Any]:
        """Run one arena episode and return its store row (module docstring).

        Raises:
            RunStopped: a run-level stop (budget cap, read-only cache miss).
        """
        family = get_family(task.family)
        started_at = utc_now()
        try:
            inner = self.agent_factory()
        except Exception as e:  # noqa: BLE001 - recorded as the episode's agent error
            inner = _FailedAgent(e)
        agent = EpisodeRecorder(inner, trace, arena=True, cancel=cancel)
        opts = family.env_options(task)
        opts["reference_images"] = self.reference_images(family.reference_image_paths(task, self.task_dir))
        needs_map = family.sends_location_map(task, protocol_id)
        judged = self.judge is not None and family.metric(task) == FUZZY_MATCH
        if judged:
            self.judge.begin_episode()  # type: ignore[union-attr]
        validator = family.make_validator(task, self.city, protocol_id,
                                          judge=self.judge.judge if judged else None,  # type: ignore[union-attr]
                                          model_under_test=self.model_under_test if judged else None)
        try:
            res = run_arena_episode(self.city, agent, task, seed=seed, protocol_id=protocol_id, max_steps=max_steps,
                                    observer=self.observer_for(inner),
                                    map_renderer=self.map_renderer if needs_map else None,
                                    reset_options=opts, validator=validator,
                                    observation_wrapper=control_wrapper(inner, self.view.hfov_deg))
        except RUN_LEVEL_ERRORS as e:
            raise run_stopped(e, task.task_id, seed) from e
        finally:
            close_agent(agent)
            if judged:
                self.judge.close()  # type: ignore[union-attr]  # rebuilt on the next judged episode, like agents
        judge_usage = self.judge.usage() if judged else None  # type: ignore[union-attr]
        return self._row(task, seed, protocol_id, config_hash, res, agent.poses, started_at, judge_usage)

    def _row(self, task: Task, seed: int, protocol_id: str, config_hash: str, res: dict[str, Any],
             poses: list[dict[str, Any]], started_at: str, judge_usage: dict[str, Any] | None = None) -> dict[str, Any]:
        family = get_family(task.family)
        kind = family.task_kind(task)
        g = task.final_goal
        landmark = task.extra.get("landmark", g.label if g is not None else None)
        metric_keys = ("status", "completed_by_answer", "is_correct", "scored_success", "validation_available",
                       "evaluation_metric", "evaluation_score", "offline_score", "user_answer", "expected",
                       "distance_to_goal", "validation_threshold", "message", "judge_model", "judge_reported_model",
                       "judge_model_version", "judge_prompt_hash", "judge_verdict_parsed")
        metrics = {k: res.get(k) for k in metric_keys}
        metrics["validation"] = res.get("validation")
        if res.get("stop_reason") == "error":
            metrics = as_failure(metrics)  # an errored episode fails every score (tasks/errored.py)
        counters = res.get("env_counters") or {}
        final_pose = poses[-1] if poses else None
        trajectory = [task.start.node] + [str(p.get("nearest_node")) for p in poses]
        details = {
            "task_kind": kind,
            "answer": res.get("answer"),
            "final_position": res.get("final_position"),
            "positions": res.get("positions"),
            "goal_distance_m": res.get("goal_distance_m"),
            "env_counters": counters,
            "stop_reason_detail": res.get("stop_reason_detail"),
            "stop_privileged": res.get("stop_privileged"),
            "poses": poses,
        }
        if judge_usage is not None:
            details["judge_usage"] = judge_usage
        timings = dict(res.get("timings") or {})
        v3 = arena_columns(res, task_type=family.task_type(task), map_id=task.extra.get("map_id"), landmark=landmark,
                           final_pose=final_pose)
        return jsonable({
            **row_identity(task, seed, self.agent_name, config_hash, protocol_id, family.name),
            "trajectory": trajectory,
            "headings": [],
            "actions": list(res.get("actions") or []),
            "stop_reason": res.get("stop_reason"),
            "error": res.get("error"),
            "steps": int(res.get("steps") or 0),
            "invalid_actions": int(counters.get("invalid_actions") or 0),
            "metrics": metrics,
            "timings": timings,
            "agent_stats": res.get("agent_stats") or {},
            "details": details,
            "v3": v3,
            "started_at": started_at,
            "finished_at": utc_now(),
        })


__all__ = ["ArenaEpisodeRunner", "ArenaViewSettings", "agent_uses_images", "load_reference_image"]
