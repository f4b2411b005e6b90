"""A minimal episode loop for the arena (the runner drives only graph episodes today).

:func:`run_arena_episode` builds the protocol's arena env
(:func:`urbanarena.env.stop_rules.make_arena_env`: ArenaEnv + STEP_LIMIT,
STAGNATION and, for map navigation, AWAY_FROM_GOAL), resets it from a
:class:`Task`, lets the agent act until the episode ends, validates the
answer or final position and returns a JSON-able result dict with
360CityArena's episode columns (:func:`urbanarena.tasks.validators.score_episode`).

Like the graph runner, agent failures (an exception from ``reset`` or
``act``: a transport fault after the retries, a rejected request, a missing
image ...) end the episode with ``stop_reason = "error"`` and the text in
``error``; the trajectory so far is scored as a non-ANSWER termination.
Run-level stops are not episode results and propagate
(:data:`RUN_LEVEL_ERRORS`: a budget cap reached, a read-only cache miss), so a
capped run stops cleanly and resumes the episode later.

Task -> reset options (:func:`arena_reset_options`): ``start.node`` and
``start.heading_deg``; the final goal's ``node`` and/or ``position``;
``instruction`` as the task text; ``task.extra["task_kind"]`` names the kind
(e.g. ``"map_navigation"``) that selects AWAY_FROM_GOAL and the
coordinate radius. Validation: the task layer decides how a task is scored,
so without ``validator=`` the loop uses the ``cityarena`` family's
:meth:`~urbanarena.tasks.families.cityarena.CityArenaFamily.make_validator`
(metric from ``answer_metric`` or the kind's default, aliases accepted, the
protocol's radii) — the validator the runner passes; ``fuzzy_match`` without a
judge then records only the offline string match (``validation_available``
false).
"""

from __future__ import annotations

import time
import traceback
from typing import Any, Callable

import numpy as np

from urbanarena.agents.base import Agent, AgentContext
from urbanarena.agents.clients import BudgetExceeded, CacheMissError
from urbanarena.env.arena_env import ArenaEnv, MapRenderer, Observer
from urbanarena.env.motion.trajectory import MotionConfig
from urbanarena.env.stop_rules import make_arena_env
from urbanarena.tasks.schema import Task
from urbanarena.tasks.validators import ValidationResult, score_episode
from urbanarena.world.city import City

Validator = Callable[[str, "str | None", "tuple[float, float]"], "ValidationResult | None"]

MAX_ERROR_CHARS = 4000

#: exceptions that stop the run instead of ending the episode as an error
RUN_LEVEL_ERRORS = (BudgetExceeded, CacheMissError)


def arena_reset_options(task: Task, city: City) -> dict[str, Any]:
    """``ArenaEnv.reset`` options from a task (module docstring); the ``cityarena``
    family's :meth:`~urbanarena.tasks.families.cityarena.CityArenaFamily.env_options`."""
    from urbanarena.tasks.families.cityarena import CityArenaFamily

    return CityArenaFamily().env_options(task)


def _error_text(exc: BaseException) -> str:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return f"{type(exc).__name__}: {exc}\n" + text[-MAX_ERROR_CHARS:]


def run_arena_episode(
    city: City,
    agent: Agent,
    task: Task,
    *,
    seed: int,
    protocol_id: str = "cityarena-v1",
    max_steps: int | None = None,
    observer: Observer | None = None,
    map_renderer: MapRenderer | None = None,
    motion: MotionConfig | None = None,
    reset_options: dict[str, Any] | None = None,
    validator: Validator | None = None,
    observation_wrapper: Callable[[Any], Any] | None = None,
) -> dict[str, Any]:
    """Run one arena episode and score it.

    Args:
        city: the city (with imagery for a VLM agent; give ``observer``).
        agent: an agent whose ``act`` returns :class:`ArenaAction` (a fresh or
            reusable one; ``reset`` is called here). If it has
            ``record_outcome(info)`` it is called after every step.
        task: the task (see :func:`arena_reset_options`).
        seed: episode seed (agent context and env reset).
        protocol_id: ``cityarena-v1`` or ``urbanarena-v1``.
        max_steps: step limit (default: the protocol's, 50).
        observer, map_renderer, motion: passed to :func:`make_arena_env`.
        reset_options: replace the options built from the task.
        validator: ``(status, answer, final_xy_m) -> ValidationResult | None``
            (default: the ``cityarena`` family's ``make_validator``; module docstring).
        observation_wrapper: ``env -> env`` applied around the protocol's env (e.g. the
            ``--oracle-perception`` wrapper); default: the one of the agent's control mode
            (``agent.control.env_wrapper``, :mod:`urbanarena.agents.controls`) when it has one,
            with the observer's ``hfov_deg`` (90 when it has none).
    Raises:
        BudgetExceeded, CacheMissError: run-level stops (:data:`RUN_LEVEL_ERRORS`).
    Returns: JSON-able dict: ``task_id``, ``seed``, ``protocol``, ``agent``,
        ``task_kind``, ``stop_reason`` (``ANSWER``, ``STEP_LIMIT``,
        ``STAGNATION``, ``AWAY_FROM_GOAL`` or ``error``),
        ``stop_reason_detail``, ``stop_privileged``, ``error``, ``steps``
        (requests consumed), ``answer``, ``final_position`` (``x_m``, ``y_m``,
        ``lat``, ``lon``), ``positions`` (``[x_m, y_m]`` per step, start
        first), ``actions`` (labels), ``env_counters`` (steps,
        executed_actions, parse_errors, invalid_actions, blocked_moves,
        answers), ``goal_distance_m``, the :func:`score_episode` columns
        (``status``, ``is_correct``, ``scored_success``, ``evaluation_score``
        ...), ``validation`` (the validator's full result), ``agent_stats``,
        ``timings`` (seconds) and ``agent_config``.
    """
    task_kind = task.extra.get("task_kind") if isinstance(task.extra, dict) else None
    env = make_arena_env(city, protocol_id, task_kind=task_kind, max_steps=max_steps, observer=observer,
                         map_renderer=map_renderer, motion=motion)
    if observation_wrapper is None and getattr(agent, "control", None) is not None:
        observation_wrapper = agent.control.env_wrapper(float(getattr(observer, "hfov_deg", 90.0)))
    if observation_wrapper is not None:
        env = observation_wrapper(env)
    base: ArenaEnv = env.unwrapped  # type: ignore[assignment]
    t0 = time.perf_counter()
    agent_s = env_s = 0.0
    t = time.perf_counter()
    obs, info = env.reset(seed=seed, options=reset_options if reset_options is not None else arena_reset_options(task, city))
    env_s += time.perf_counter() - t
    stop_reason: str | None = None
    error: str | None = None
    t = time.perf_counter()
    try:
        agent.reset(task, AgentContext(city=city, motion=base.motion, seed=seed,  # type: ignore[arg-type]
                                       protocol_id=protocol_id, task_id=task.task_id))
    except RUN_LEVEL_ERRORS:
        raise
    except Exception as e:  # noqa: BLE001 - agent failures are recorded, never fatal
        error, stop_reason = _error_text(e), "error"
    agent_s += time.perf_counter() - t
    record = getattr(agent, "record_outcome", None)
    while stop_reason is None:
        t = time.perf_counter()
        try:
            action = agent.act(obs)
        except RUN_LEVEL_ERRORS:
            raise
        except Exception as e:  # noqa: BLE001
            agent_s += time.perf_counter() - t
            error, stop_reason = _error_text(e), "error"
            break
        agent_s += time.perf_counter() - t
        t = time.perf_counter()
        obs, _, terminated, truncated, info = env.step(action)
        env_s += time.perf_counter() - t
        if callable(record):
            record(info)
        if terminated or truncated:
            stop_reason = info.get("stop_reason") or ("ANSWER" if terminated else "STEP_LIMIT")
    if validator is not None:
        validate = validator
    else:
        from urbanarena.tasks.families.cityarena import CityArenaFamily

        validate = CityArenaFamily.make_validator(task, city, protocol_id)
    pose = base.pose()
    final_xy = (pose.x_m, pose.y_m)
    result = validate(stop_reason, base.answer, final_xy) if validate is not None else None
    cols = score_episode(stop_reason, result)
    stats = getattr(agent, "stats", {}) or {}
    return _jsonable({
        "task_id": task.task_id,
        "seed": int(seed),
        "protocol": protocol_id,
        "agent": getattr(agent, "name", type(agent).__name__),
        "task_kind": task_kind,
        "stop_reason": stop_reason,
        "stop_reason_detail": info.get("stop_reason_detail") if stop_reason != "error" else None,
        "stop_privileged": bool(info.get("stop_privileged", False)) if stop_reason != "error" else False,
        "error": error,
        "steps": int(base.counters["steps"]),
        "answer": base.answer,
        "final_position": {"x_m": pose.x_m, "y_m": pose.y_m, "lat": pose.lat, "lon": pose.lon},
        "positions": [list(p) for p in base.positions],
        "actions": [a.label() for a in base.actions],
        "env_counters": dict(base.counters),
        "goal_distance_m": {"euclidean": base.euclidean_goal_distance_m(), "graph": base.graph_goal_distance_m()},
        **cols,
        "validation": result.to_dict() if result is not None else None,
        "agent_stats": dict(stats),
        "agent_config": agent.config(),
        "timings": {"agent_s": agent_s, "env_s": env_s, "total_s": time.perf_counter() - t0},
    })


def _jsonable(obj: Any) -> Any:
    if obj is None or isinstance(obj, (bool, str, int)):
        return obj
    if isinstance(obj, float):
        return obj if np.isfinite(obj) else (None if np.isnan(obj) else ("inf" if obj > 0 else "-inf"))
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return _jsonable(obj.item())
    return str(obj)


__all__ = ["RUN_LEVEL_ERRORS", "arena_reset_options", "run_arena_episode"]
