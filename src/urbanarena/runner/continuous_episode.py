"""Continuous episodes for the runner: a task of an ``action_style == "continuous"`` family
(``urbanground``) run in :class:`~urbanarena.env.continuous.ContinuousEnv` and turned into a store row.

Per runner (one per worker process or thread) the environment -- walkable space, walk network,
map view -- is built once and reset per episode; the first-person observer
(:class:`~urbanarena.env.continuous.SceneViewObserver`, 640 x 360, 90 degrees) only for agents that
look at images (:func:`~urbanarena.runner.arena.agent_uses_images`), so ``ug-oracle`` and
``ug-random`` run where no OpenGL context exists. A fresh agent is built per episode and reset with
an :class:`~urbanarena.agents.base.AgentContext` (``motion`` is ``None``: there is no graph motion
model; ``context.dynamics`` is the episode's dynamic world, ``context.closures`` its road closures as
:class:`~urbanarena.tasks.metrics.urbanground.Closure`, both for privileged agents).

Loop: ``agent.act(observation)`` returns UrbanGround's action JSON (or a
:class:`~urbanarena.env.continuous.ContinuousAction`); the env executes it in simulated time; the
episode ends by the task's :class:`~urbanarena.env.continuous.ending.EpisodeEnd`
(:meth:`~urbanarena.tasks.families.urbanground.UrbanGroundFamily.episode_end`, the rules
``urbanarena/Continuous-v1`` ends by too): on ``terminate`` (``stop_reason`` ``"terminate"``), when it
crosses an announced closure (``"closure_violation"``, the environment's rule), when a task's exploration
window has passed in simulated time (``"time_window"``: L1 active exploration, 60 s; the question is then
unanswered), after ``max_steps`` steps (``"max_steps"``) -- or when the agent raises (``"error"``, the
runner's own; the trajectory so far is scored). Closures are scored with the
environment's record (``env.dynamics_record()``: active from the notice's delivery), pedestrians on their
exact tracks (:meth:`~urbanarena.env.continuous.dynamics.DynamicWorld.pedestrian_tracks`). The
answer of a question is the ``answer`` field of the ending action (:meth:`EpisodeEnd.answer`).

Stored row (:mod:`urbanarena.runner.store`): ``trajectory`` the start's nearest pose node then the
nearest pose node after every step, ``headings`` the camera yaw after every step (start first),
``actions`` the actions as given, ``metrics`` the family's
:meth:`~urbanarena.tasks.families.urbanground.UrbanGroundFamily.score_trajectory`, ``details``:
``level``, ``task_kind``, ``answer``, ``samples`` (``[t_s, x_m, y_m, yaw_deg, pitch_deg, step,
checkpoint]`` per trajectory sample: the exact piecewise-linear trajectory the metrics integrate),
``final_position`` (``x_m``, ``y_m``, ``lat``, ``lon``), ``sim_time_s``, ``env_counters``,
``clamped_steps`` and, with a dynamic city, ``pedestrians`` (their sampled trajectories) and
``closures``. The results-schema-v3 columns are the model columns only (as graph episodes).
Traces (``--trace``) go through :class:`~urbanarena.runner.trace.EpisodeRecorder` (one line per step
with the step's outcome).
"""

from __future__ import annotations

import math
import time
import threading
from typing import Any, Callable

import numpy as np
from scipy.spatial import cKDTree

from urbanarena.agents.base import Agent, AgentContext
from urbanarena.env.continuous import ContinuousConfig, ContinuousEnv
from urbanarena.env.continuous.ending import MAX_STEPS_STOP, TERMINATE_STOP, TIME_WINDOW_STOP
from urbanarena.runner.arena import agent_uses_images
from urbanarena.runner.episode import (
    ERROR_STOP, RUN_LEVEL_ERRORS, _error_text, call_agent, close_agent, jsonable, row_identity, run_stopped, utc_now,
)
from urbanarena.runner.results import graph_columns
from urbanarena.tasks.errored import as_failure
from urbanarena.runner.trace import EpisodeRecorder, TraceWriter
from urbanarena.tasks.families import get_family
from urbanarena.tasks.schema import Task
from urbanarena.world.city import City

AgentFactory = Callable[[], Agent]


def dynamic_world(task: Task, city: City, network: Any = None):
    """The episode's dynamic world from ``task.extra["dynamics"]`` (``None`` without one), built by
    :class:`urbanarena.env.continuous.dynamics.DynamicWorld`."""
    spec = (task.extra or {}).get("dynamics")
    if not spec:
        return None
    from urbanarena.env.continuous.dynamics import DynamicWorld

    return DynamicWorld.from_spec(city, spec, network)


class ContinuousEpisodeRunner:
    """Runs continuous-family episodes on one city (module docstring).

    Args:
        city: the city (annotated OSM city).
        agent_factory: zero-argument callable returning a fresh agent.
        agent_name: name stored with each result.
        config: :class:`ContinuousConfig` of the environment.
        view_size: ``(width, height)`` of first-person renders for agents that look at images.
    """

    def __init__(self, city: City, agent_factory: AgentFactory, agent_name: str, *,
                 config: ContinuousConfig | None = None, view_size: tuple[int, int] = (640, 360),
                 render_style: str | None = None):
        from urbanarena.render.scene3d.styles import usable_style

        self.render_style = usable_style(render_style)   # photo without its assets: realistic (one line)
        self.city = city
        self.agent_factory = agent_factory
        self.agent_name = agent_name
        self.config = config or ContinuousConfig()
        self.view_size = view_size
        self._env: ContinuousEnv | None = None
        self._observer: dict[str | None, Any] = {}
        node_ids = list(city.graph.nodes)
        self._node_ids = node_ids
        self._kd = cKDTree(np.array([city.xy(n) for n in node_ids], float)) if node_ids else None

    @property
    def env(self) -> ContinuousEnv:
        if self._env is None:
            self._env = ContinuousEnv(self.city, self.config)
        return self._env

    def observer(self, condition: str | None = None):
        """The first-person observer for a render ``condition`` (weather / time of day from the task's
        ``dynamics.condition``; ``None`` = clear day), built on first use and kept per condition."""
        if condition not in self._observer:
            from urbanarena.env.continuous import SceneViewObserver
            from urbanarena.render.scene3d.styles import settings_for_style

            self._observer[condition] = SceneViewObserver(self.city, width=self.view_size[0],
                                                          height=self.view_size[1], condition=condition,
                                                          settings=settings_for_style(self.render_style))
        return self._observer[condition]

    def nearest_node(self, x_m: float, y_m: float) -> str | None:
        if self._kd is None:
            return None
        return str(self._node_ids[int(self._kd.query([x_m, y_m])[1])])

    def run(self, task: Task, seed: int, protocol_id: str, max_steps: int, config_hash: str = "", *,
            trace: TraceWriter | None = None, cancel: threading.Event | None = None) -> dict[str, Any]:
        """Run one episode and return its store row (module docstring).

        Raises:
            RunStopped: a run-level stop (budget cap, read-only cache miss).
            ProtocolError: ``protocol_id`` is not the family's.
        """
        family = get_family(task.family)
        family.check_protocol(protocol_id)
        started_at = utc_now()
        t0 = time.perf_counter()
        env = self.env
        dyn = dynamic_world(task, self.city, env.network)
        agent_s = env_s = 0.0
        error: str | None = None
        stop_reason: str | None = None
        answer: Any = None
        recorder: EpisodeRecorder | None = None
        inner: Agent | None = None
        try:
            inner = self.agent_factory()
            recorder = EpisodeRecorder(inner, trace, arena=True, cancel=cancel)
        except RUN_LEVEL_ERRORS as e:
            raise run_stopped(e, task.task_id, seed) from e
        except Exception as e:  # noqa: BLE001 - recorded as the episode's agent error
            error, stop_reason = _error_text(e), ERROR_STOP
        if inner is not None and agent_uses_images(inner):
            env.observer = self.observer(dyn.spec.condition if dyn is not None else None)
        else:
            env.observer = None
        t = time.perf_counter()
        opts = family.env_options(task, self.city)
        opts["dynamics"] = dyn
        obs, info = env.reset(seed=seed, options=opts)
        env_s += time.perf_counter() - t
        headings = [float(info["pose"]["yaw_deg"])]
        nodes = [self.nearest_node(info["pose"]["x_m"], info["pose"]["y_m"])]
        clamped_steps = 0
        try:
            if stop_reason is None:
                def start() -> None:
                    ctx = AgentContext(city=self.city, motion=None, seed=seed, protocol_id=protocol_id,  # type: ignore[arg-type]
                                       task_id=task.task_id)
                    ctx.dynamics = dyn  # type: ignore[attr-defined]
                    ctx.closures = list(dyn.closures) if dyn is not None else []  # type: ignore[attr-defined]
                    recorder.reset(task, ctx)  # type: ignore[union-attr]

                _, error, dt = call_agent(start, task.task_id, seed)
                agent_s += dt
                if error is not None:
                    stop_reason = ERROR_STOP
            ends = family.episode_end(task, max_steps)
            if stop_reason is None:
                stop_reason = ends.at_start(env)
            while stop_reason is None:
                action, error, dt = call_agent(lambda: recorder.act(obs), task.task_id, seed)  # type: ignore[union-attr]
                agent_s += dt
                if error is not None:
                    stop_reason = ERROR_STOP
                    break
                t = time.perf_counter()
                obs, _, _, _, info = env.step(action)
                env_s += time.perf_counter() - t
                clamped_steps += bool(info.get("clamped"))
                headings.append(float(info["pose"]["yaw_deg"]))
                nodes.append(self.nearest_node(info["pose"]["x_m"], info["pose"]["y_m"]))
                recorder.record_outcome(info)  # type: ignore[union-attr]
                stop_reason = ends.after_step(env, info)
                answer = ends.answer(stop_reason, action)
            if stop_reason in ends.asks_final_answer and answer is None and (task.extra or {}).get("options"):
                # the exploration of a question ended without terminate: the agent may still answer from
                # what it saw (UrbanGround's released agent is asked after its last turn); nothing is executed
                got, error, dt = call_agent(lambda: recorder.final_answer(obs), task.task_id, seed)  # type: ignore[union-attr]
                agent_s += dt
                if error is not None:
                    stop_reason = ERROR_STOP
                else:
                    answer = got
        finally:
            if recorder is not None:
                close_agent(recorder)
        t = time.perf_counter()
        record: dict[str, Any] = (env.dynamics_record() or {}) if dyn is not None else {}
        try:
            metrics, closures, peds = family.score_env_episode(task, self.city, protocol_id, env, answer=answer)
        except Exception as e:
            raise RuntimeError(f"scoring task {task.task_id!r} (seed {seed}) failed: {type(e).__name__}: {e}") from e
        score_s = time.perf_counter() - t
        metrics = jsonable(metrics)
        if stop_reason == ERROR_STOP:
            metrics = as_failure(metrics)  # an errored episode fails every score (tasks/errored.py)
        for k, v in metrics.items():
            if isinstance(v, float) and not math.isfinite(v):
                raise RuntimeError(f"scorer of family {family.name!r} returned {k}={v} for task {task.task_id!r}")
        pose = env.pose()
        from urbanarena.tasks.families.urbanground import condition_of, kind_of, level_of

        details: dict[str, Any] = {
            "level": level_of(task),
            "task_kind": kind_of(task),
            "condition": condition_of(task),
            "answer": answer,
            "samples": [[s.t_s, s.x_m, s.y_m, s.yaw_deg, s.pitch_deg, s.step, s.checkpoint] for s in env.samples],
            "final_position": {"x_m": pose.x_m, "y_m": pose.y_m, "lat": pose.lat, "lon": pose.lon},
            "sim_time_s": env.sim_time_s,
            "env_counters": dict(env.counters),
            "clamped_steps": clamped_steps,
        }
        if isinstance((task.extra or {}).get("base_task_id"), str):  # a condition copy (tasks generate --condition all)
            details["base_task_id"] = task.extra["base_task_id"]
        if closures:  # active_from_s None: the notice never came (the closure was never active)
            details["closures"] = [{"coords": [list(p) for p in c.coords], "zone": c.zone,
                                    "active_from_s": c.active_from_s if math.isfinite(c.active_from_s) else None}
                                   for c in closures]
        if record:
            details["dynamics"] = {k: record.get(k) for k in ("closure_violated", "notices", "pedestrian_collisions",
                                                             "pedestrian_blocks")}
        if peds is not None:
            details["pedestrians"] = [[[float(tt), float(x), float(y)] for tt, (x, y) in zip(p.t_s, p.xy_m)]
                                      for p in peds]
        stats = inner.stats if inner is not None and isinstance(getattr(inner, "stats", None), dict) else {}
        result = {
            **row_identity(task, seed, self.agent_name, config_hash, protocol_id, family.name),
            "trajectory": nodes,
            "headings": headings,
            "actions": [a if isinstance(a, dict) else repr(a) for a in env.actions],
            "stop_reason": stop_reason,
            "error": error,
            "steps": int(env.counters["steps"]),
            "invalid_actions": int(env.counters["invalid_actions"] + env.counters["parse_errors"]),
            "metrics": metrics,
            "timings": {"agent_s": agent_s, "env_s": env_s, "score_s": score_s, "total_s": time.perf_counter() - t0},
            "agent_stats": jsonable(dict(stats)),
            "details": details,
            "started_at": started_at,
            "finished_at": utc_now(),
        }
        result = jsonable(result)
        result["v3"] = graph_columns(result)
        return result


__all__ = ["ContinuousEpisodeRunner", "MAX_STEPS_STOP", "TERMINATE_STOP", "TIME_WINDOW_STOP", "dynamic_world"]
