"""Run one episode: env + agent + scorer -> a plain JSON-able result dict.

An episode is fully determined by (task, seed, episode config): a fresh agent
is built for every episode (so no state leaks between episodes, and results
do not depend on which worker ran what, or in which order), the agent gets
``AgentContext(seed=seed, task_id=task.task_id)`` (its stream is seeded by
``(seed, crc32(task_id))``, so tasks never share one) and the env is reset with ``seed``.

Rounds and strategies (``--rounds`` / ``--strategy``): the runner's ``rounds`` and
``strategies`` make :meth:`EpisodeRunner.run` run the job's rounds in sequence with one job
memory (:meth:`EpisodeRunner.run_rounds`; docs/strategies.md); a fresh agent is still built for
every round.

Agent failures (an exception raised by the agent factory, ``reset`` or
``act``) never crash a run: the episode ends with ``stop_reason = "error"``,
the exception text goes into ``error``, and the trajectory so far is scored
like any other (so an error counts as the failure it is). Failures of our own
code (env, scorer) propagate.

Run-level stops are not agent failures: a model agent that reaches a budget
cap (:class:`~urbanarena.agents.clients.BudgetExceeded`) or misses the
read-only response cache (:class:`~urbanarena.agents.clients.CacheMissError`)
ends the *run* — the episode is not recorded and :class:`RunStopped` is
raised, so the driver stops cleanly and a rerun resumes the episode (with
every call already paid for served from the response cache).

Agents are closed after their episode (``agent.close()`` when they have one:
model agents release their HTTP client and cache connection).
"""

from __future__ import annotations

import math
import time
import traceback
from datetime import datetime, timezone
from typing import Any, Callable

from urbanarena.tasks.errored import as_failure
from urbanarena.agents.base import Agent, AgentContext
from urbanarena.agents.clients import BudgetExceeded, CacheMissError
from urbanarena.env.graph_env import GraphNavEnv
from urbanarena.env.protocols import make_motion
from urbanarena.env.wrappers import StepLimit
from urbanarena.tasks.families import get_family
from urbanarena.tasks.families.base import Trajectory
from urbanarena.tasks.resolve import task_hash
from urbanarena.tasks.schema import Task
from urbanarena.errors import UrbanArenaError
from urbanarena.world.city import City

AgentFactory = Callable[[], Agent]

#: exceptions of an agent that stop the run instead of ending the episode as an error
RUN_LEVEL_ERRORS = (BudgetExceeded, CacheMissError)


class RunStopped(UrbanArenaError):
    """The run stopped before finishing, cleanly and resumably: a budget cap was reached or a
    read-only response cache had no reply. Finished episodes are stored; the episode that hit
    the stop is not (a rerun resumes it).

    Attributes:
        reason: ``"budget"`` (``--max-usd`` / ``--max-requests``) or ``"cache-miss"``.
        detail: the underlying error message (holds no key).
        task_id, seed: the episode that hit the stop.
    """

    def __init__(self, reason: str, detail: str, task_id: str = "", seed: int | None = None):
        self.reason = reason
        self.detail = detail
        self.task_id = task_id
        self.seed = seed
        where = f" (episode {task_id!r} seed {seed})" if task_id else ""
        super().__init__(f"{reason}: {detail}{where}")

    def __reduce__(self):  # picklable across worker processes
        return (type(self), (self.reason, self.detail, self.task_id, self.seed))


def run_stopped(exc: BaseException, task_id: str = "", seed: int | None = None) -> RunStopped:
    """The :class:`RunStopped` for a run-level agent error (:data:`RUN_LEVEL_ERRORS`)."""
    reason = "budget" if isinstance(exc, BudgetExceeded) else "cache-miss"
    return RunStopped(reason, str(exc), task_id, seed)


def close_agent(agent: Any) -> None:
    """Call ``agent.close()`` when the agent has one (errors while closing are ignored)."""
    close = getattr(agent, "close", None)
    if callable(close):
        try:
            close()
        except Exception:  # noqa: BLE001 - closing never fails an episode
            pass

#: stop reason of an episode whose agent raised
ERROR_STOP = "error"
#: longest traceback text kept in a result (characters, tail kept)
MAX_ERROR_CHARS = 4000


def utc_now() -> str:
    """Current UTC time, ISO 8601 with microseconds and ``+00:00``."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays, tuples and sets to plain JSON types (recursively)."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return float(obj)
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted(jsonable(v) for v in obj)
    item = getattr(obj, "item", None)
    if callable(item):  # numpy scalar
        try:
            return jsonable(item())
        except (TypeError, ValueError):
            pass
    tolist = getattr(obj, "tolist", None)
    if callable(tolist):
        return jsonable(tolist())
    return str(obj)


def _error_text(exc: BaseException) -> str:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    head = f"{type(exc).__name__}: {exc}"
    if len(text) > MAX_ERROR_CHARS:
        text = text[-MAX_ERROR_CHARS:]
    return head + "\n" + text


def call_agent(fn: Callable[[], Any], task_id: str, seed: int) -> tuple[Any, str | None, float]:
    """Call an agent (``fn``: its reset or act), timed, with the runner's error rule (module docstring).

    Returns: ``(result, None, seconds)``, or ``(None, error text, seconds)`` when ``fn`` raised an episode-level
        error (the episode then ends with stop reason :data:`ERROR_STOP`); ``seconds``: wall-clock time of the call.
    Raises:
        RunStopped: ``fn`` raised a run-level error (:data:`RUN_LEVEL_ERRORS`).
    """
    t = time.perf_counter()
    try:
        return fn(), None, time.perf_counter() - t
    except RUN_LEVEL_ERRORS as e:
        raise run_stopped(e, task_id, seed) from e
    except Exception as e:  # noqa: BLE001 - agent failures are recorded, never fatal
        return None, _error_text(e), time.perf_counter() - t


def row_identity(task: Task, seed: int, agent: str, config_hash: str, protocol_id: str, family: str) -> dict[str, Any]:
    """The columns that identify a stored episode and its task (shared by graph and arena rows)."""
    return {
        "task_id": task.task_id,
        "seed": int(seed),
        "agent": agent,
        "config_hash": config_hash,
        "protocol": protocol_id,
        "family": family,
        "category": task.category,
        "difficulty": task.difficulty,
        "task_hash": task_hash(task),
    }


class EpisodeRunner:
    """Runs episodes on one city with one agent factory.

    Motion models (and their per-node caches) and environments are built once
    per (protocol id, action style) and reused across episodes.

    Args:
        city: the city.
        agent_factory: zero-argument callable returning a fresh :class:`Agent`.
        agent_name: name stored with each result (registry name).
        render_settings: handed to agents in :attr:`AgentContext.render_settings` (agents that render their
            own views of a rendered city; ``None``: the renderer's default).
    """

    def __init__(self, city: City, agent_factory: AgentFactory, agent_name: str, *, rounds: int = 1,
                 strategies: str | None = None, render_settings: Any = None):
        self.city = city
        self.render_settings = render_settings
        self.agent_factory = agent_factory
        self.agent_name = agent_name
        self.rounds = int(rounds)
        self.strategies = strategies
        #: round of the episode being run (1-based; ``None`` outside rounds): read by agent factories
        #: that depend on it (per-round trace folders, :mod:`urbanarena.runner.dispatch`)
        self.current_round: int | None = None
        self._envs: dict[tuple[str, str], GraphNavEnv] = {}

    def _env(self, protocol_id: str, action_style: str) -> GraphNavEnv:
        key = (protocol_id, action_style)
        env = self._envs.get(key)
        if env is None:
            env = GraphNavEnv(self.city, make_motion(protocol_id, self.city, action_style))  # type: ignore[arg-type]
            self._envs[key] = env
        return env

    def run(self, task: Task, seed: int, protocol_id: str, max_steps: int, config_hash: str = "") -> dict[str, Any]:
        """Run one job: one episode, or ``rounds`` rounds of it (:meth:`run_rounds`) when the runner
        has ``rounds > 1`` or ``strategies`` (set by the backend from ``--rounds`` / ``--strategy``)."""
        if self.rounds > 1 or self.strategies:
            return self.run_rounds(task, seed, protocol_id, max_steps, config_hash, self.rounds)
        return self.run_once(task, seed, protocol_id, max_steps, config_hash)

    def run_rounds(self, task: Task, seed: int, protocol_id: str, max_steps: int, config_hash: str = "",
                   rounds: int = 1) -> dict[str, Any]:
        """Run the same task ``rounds`` times in sequence with one job memory (one job).

        Round ``r`` (1-based) gets a fresh agent whose context is a
        :class:`~urbanarena.agents.strategies.memory.StrategyContext` (``round``, the job's
        :class:`~urbanarena.agents.strategies.memory.JobMemory`); after each round its walk is
        written into the memory. An agent error ends the job after that round.

        Returns: the result of the last round run (its trajectory, actions, metrics, agent stats
            are the row's columns), with ``timings`` summed over the rounds, ``started_at`` of the
            first, plus ``details`` — ``rounds`` (rounds run), ``rounds_planned``, ``privileged``
            (the agent or a strategy used privileged information), ``strategies`` (what each used,
            ``None`` without strategies) and ``per_round`` (per round: ``round``, ``trajectory``,
            ``actions``, ``headings``, ``stop_reason``, ``error``, ``steps``, ``invalid_actions``,
            ``metrics``, ``strategy_events``) — and ``memory`` (the job memory's rows, which the
            store writes to its ``strategy_memory`` table with the row).
        Raises:
            RunStopped: the agent hit a run-level stop (the whole job is rerun on resume).
        """
        from urbanarena.agents.strategies.memory import JobMemory

        memory = JobMemory(self.city, config_hash=config_hash, task_id=task.task_id, seed=seed, agent=self.agent_name)
        per_round: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        privileged = False
        try:
            for r in range(1, int(rounds) + 1):
                res, priv = self._episode(task, seed, protocol_id, max_steps, config_hash, round_=r, memory=memory)
                privileged = privileged or priv
                memory.end_round(r, res["trajectory"], res["actions"], res["headings"], res["stop_reason"])
                results.append(res)
                strat = (res.get("agent_stats") or {}).get("strategy") or {}
                per_round.append({"round": r, **{k: res[k] for k in (
                    "trajectory", "actions", "headings", "stop_reason", "error", "steps", "invalid_actions", "metrics")},
                    "strategy_events": strat.get("events", [])})
                if res["stop_reason"] == ERROR_STOP:
                    break
            rows = memory.rows()
        finally:
            memory.close()
        final = dict(results[-1])
        strat = (final.get("agent_stats") or {}).get("strategy") or {}
        final["timings"] = {k: sum(float(x["timings"][k]) for x in results) for k in results[0]["timings"]}
        final["started_at"] = results[0]["started_at"]
        final["details"] = {"rounds": len(results), "rounds_planned": int(rounds), "privileged": privileged,
                            "strategies": strat.get("used"), "per_round": per_round}
        final["memory"] = rows
        return final

    def run_once(self, task: Task, seed: int, protocol_id: str, max_steps: int, config_hash: str = "") -> dict[str, Any]:
        """Run one episode and score it.

        Args:
            task: the task (its ``family`` picks the scorer and action style).
            seed: episode seed (agent RNG and env reset).
            protocol_id: protocol id.
            max_steps: step limit (:class:`StepLimit`).
            config_hash: stored with the result.
        Returns: a JSON-able dict: ``task_id``, ``seed``, ``agent``,
            ``config_hash``, ``protocol``, ``family``, ``category``,
            ``difficulty``, ``task_hash``, ``trajectory`` (node ids, start
            first), ``headings`` (degrees, one per trajectory node),
            ``actions`` (ints; -1 STOP, -2 unparseable), ``stop_reason``
            (``"stop"``, ``"max_steps"``, ``"error"``), ``error`` (text or
            ``None``), ``steps`` (actions taken), ``invalid_actions``,
            ``metrics`` (family scorer output), ``timings`` (seconds:
            ``agent_s``, ``env_s``, ``score_s``, ``total_s``), ``agent_stats``,
            ``started_at``/``finished_at`` (ISO 8601 UTC).
        Raises:
            RunStopped: the agent hit a run-level stop (:data:`RUN_LEVEL_ERRORS`).
        """
        return self._episode(task, seed, protocol_id, max_steps, config_hash)[0]

    def _episode(self, task: Task, seed: int, protocol_id: str, max_steps: int, config_hash: str = "",
                 round_: int | None = None, memory: Any = None) -> tuple[dict[str, Any], bool]:
        """One episode (a round of a job when ``round_`` is given); returns the result and whether the
        agent was privileged."""
        family = get_family(task.family)
        started_at = utc_now()
        t0 = time.perf_counter()
        self.current_round = round_
        env_base = self._env(protocol_id, family.action_style)
        env = StepLimit(env_base, max_steps)
        agent_s = env_s = 0.0
        error: str | None = None
        agent: Agent | None = None
        t = time.perf_counter()
        obs, info = env.reset(seed=seed, options=family.env_options(task))
        env_s += time.perf_counter() - t
        stop_reason: str | None = info.get("stop_reason")
        try:
            if stop_reason is None:
                def start() -> None:
                    nonlocal agent
                    agent = self.agent_factory()
                    if round_ is None:
                        context = AgentContext(city=self.city, motion=env_base.motion, seed=seed,
                                               protocol_id=protocol_id, task_id=task.task_id,
                                               render_settings=self.render_settings)
                    else:
                        from urbanarena.agents.strategies.memory import StrategyContext

                        context = StrategyContext(city=self.city, motion=env_base.motion, seed=seed,
                                                  protocol_id=protocol_id, task_id=task.task_id,
                                                  render_settings=self.render_settings,
                                                  round=round_, memory=memory)
                    agent.reset(task, context)

                _, error, dt = call_agent(start, task.task_id, seed)
                agent_s += dt
                if error is not None:
                    stop_reason = ERROR_STOP
            while stop_reason is None:
                action, error, dt = call_agent(lambda: agent.act(obs), task.task_id, seed)  # type: ignore[union-attr]
                agent_s += dt
                if error is not None:
                    stop_reason = ERROR_STOP
                    break
                t = time.perf_counter()
                obs, _, terminated, truncated, info = env.step(action)
                env_s += time.perf_counter() - t
                if terminated or truncated:
                    stop_reason = info.get("stop_reason") or ("stop" if terminated else "max_steps")
        finally:
            if agent is not None:
                close_agent(agent)
        traj = Trajectory(
            path=list(env_base.path),
            actions=list(env_base.actions),
            stop_reason=stop_reason,
            invalid_actions=int(env_base.invalid_actions),
        )
        t = time.perf_counter()
        try:
            metrics = family.score(task, self.city, protocol_id, traj)
        except Exception as e:
            raise RuntimeError(f"scoring task {task.task_id!r} (seed {seed}) failed: {type(e).__name__}: {e}") from e
        score_s = time.perf_counter() - t
        metrics = jsonable(metrics)
        if stop_reason == ERROR_STOP:
            metrics = as_failure(metrics)  # an errored episode fails every score (tasks/errored.py)
        for k, v in metrics.items():
            if isinstance(v, float) and not math.isfinite(v):
                raise RuntimeError(f"scorer of family {family.name!r} returned {k}={v} for task {task.task_id!r}")
        stats = jsonable(dict(agent.stats)) if agent is not None and isinstance(getattr(agent, "stats", None), dict) else {}
        privileged = bool(getattr(agent, "privileged", False))
        return {
            **row_identity(task, seed, self.agent_name, config_hash, protocol_id, family.name),
            "trajectory": traj.path,
            "headings": [float(h) for h in env_base.headings],
            "actions": [int(a) for a in traj.actions],
            "stop_reason": stop_reason,
            "error": error,
            "steps": traj.steps,
            "invalid_actions": traj.invalid_actions,
            "metrics": metrics,
            "timings": {
                "agent_s": agent_s,
                "env_s": env_s,
                "score_s": score_s,
                "total_s": time.perf_counter() - t0,
            },
            "agent_stats": stats,
            "started_at": started_at,
            "finished_at": utc_now(),
        }, privileged


def run_episode(
    task: Task,
    city: City,
    agent_factory: AgentFactory,
    seed: int,
    protocol_id: str,
    max_steps: int,
    agent_name: str = "agent",
    config_hash: str = "",
) -> dict[str, Any]:
    """Run one episode (convenience wrapper over :class:`EpisodeRunner`)."""
    return EpisodeRunner(city, agent_factory, agent_name).run(task, seed, protocol_id, max_steps, config_hash)
