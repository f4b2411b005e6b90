"""What every runner backend shares: the job and worker-spec records, the agent factories built from agent names,
rate-limit installation, the per-worker dispatcher and the :class:`Backend` interface (:mod:`.pool` and
:mod:`.ray_backend` implement it)."""

from __future__ import annotations

import importlib
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from urbanarena.agents.base import Agent
from urbanarena.agents.clients import rate_limit as _rate_limit
from urbanarena.errors import UrbanArenaError
from urbanarena.runner.dispatch import EpisodeDispatcher
from urbanarena.runner.episode import AgentFactory
from urbanarena.tasks.schema import Task
from urbanarena.world.city import City
from urbanarena.world.city_io import load_city


class RunnerError(UrbanArenaError):
    """An episode could not be run (a worker died, or our own code failed)."""


class AgentSpecError(UrbanArenaError, ValueError):
    """An ``--agent`` name or parameter that cannot build an agent."""


@dataclass(frozen=True)
class Job:
    """One episode to run.

    Attributes:
        task: the task as JSON (``Task.model_dump(mode="json")``).
        seed: episode seed.
        protocol_id: protocol id.
        max_steps: step limit.
        config_hash: the episode's config hash.
    """

    task: dict[str, Any]
    seed: int
    protocol_id: str
    max_steps: int
    config_hash: str

    @property
    def task_id(self) -> str:
        return self.task["task_id"]


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker needs to start: the saved city directory and the agent.

    Attributes:
        city_dir: saved city directory (loaded once per worker).
        city_hash: expected city content hash (checked by the driver; workers
            skip rehashing).
        agent_name: a registry name (``random``) or ``module.path:Callable``.
        agent_params: keyword arguments for the agent.
        task_dir: folder of the task file (arena reference images resolve against it).
        run_dir: the RUN_DIR (traces are written under it).
        trace: write per-step traces (``--trace``).
        arena_view: :class:`~urbanarena.runner.arena.ArenaViewSettings` fields.
        judge: :class:`~urbanarena.runner.judge.JudgeSettings` fields of the fuzzy-match judge (``--judge``).
        model_under_test: the agent's model (``provider:model``), which the judge must not be.
        strategies: ``--strategy`` spec composed around every agent
            (:func:`urbanarena.agents.strategies.strategy_factory`), ``None`` for none.
        rounds: rounds per job (``--rounds``; :meth:`~urbanarena.runner.episode.EpisodeRunner.run_rounds`).
        rate_limits: per-provider rate limits of the agent's model endpoint: ``provider``, ``endpoint``
            and :class:`~urbanarena.agents.clients.rate_limit.RateLimits` fields (``None`` = no limits).
    """

    city_dir: str
    city_hash: str
    agent_name: str
    agent_params: dict[str, Any] = field(default_factory=dict)
    task_dir: str | None = None
    run_dir: str | None = None
    trace: bool = False
    arena_view: dict[str, Any] | None = None
    judge: dict[str, Any] | None = None
    model_under_test: str | None = None
    strategies: str | None = None
    rounds: int = 1
    rate_limits: dict[str, Any] | None = None


def in_flight(workers: int, concurrency: int = 1) -> int:
    """Episodes a run keeps in flight: ``workers x concurrency`` (each >= 1).

    Raises: ``ValueError`` when either is below 1.
    """
    if int(workers) < 1:
        raise ValueError(f"workers must be >= 1 (got {workers})")
    if int(concurrency) < 1:
        raise ValueError(f"concurrency must be >= 1 (got {concurrency})")
    return int(workers) * int(concurrency)


def install_rate_limits(rate_limits: dict[str, Any] | None, share: float = 1.0) -> tuple[str, str] | None:
    """Install a :class:`WorkerSpec` ``rate_limits`` record in this process (``share`` of the limits:
    ``1 / processes``); returns the ``(provider, endpoint)`` installed, or ``None`` without limits.

    Raises: ``ValueError`` for a bad limit.
    """
    if not rate_limits:
        return None
    rl = dict(rate_limits)
    provider, endpoint = rl.pop("provider"), rl.pop("endpoint")
    limits = _rate_limit.RateLimits(**rl).scaled(share)
    _rate_limit.configure(provider, endpoint, limits)
    return provider, endpoint


def uninstall_rate_limits(installed: tuple[str, str] | None) -> None:
    """Remove limits installed by :func:`install_rate_limits` (driver-process backends, at close)."""
    if installed is not None:
        _rate_limit.configure(installed[0], installed[1], None)


def import_callable(spec: str):
    mod_name, _, attr = spec.partition(":")
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as e:
        raise AgentSpecError(f"agent {spec!r}: cannot import module {mod_name!r} ({e})") from e
    obj = mod
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise AgentSpecError(f"agent {spec!r}: {mod_name!r} has no attribute {attr!r}")
    if not callable(obj):
        raise AgentSpecError(f"agent {spec!r}: {attr!r} is not callable")
    return obj


def agent_factory(name: str, params: dict[str, Any] | None = None) -> AgentFactory:
    """A zero-argument factory of fresh agents.

    Args:
        name: an agent registry name (``urbanarena.agents.registry.make_agent``)
            or ``module.path:Callable`` (a class or function returning an
            :class:`Agent`).
        params: keyword arguments passed to the agent.
    Raises:
        AgentSpecError: unknown name, unimportable callable, or parameters the
            agent rejects (checked by building one agent now).
    """
    params = dict(params or {})
    if ":" in name and not name.startswith("bc:"):  # bc:CHECKPOINT is a registry agent with its file
        target = import_callable(name)

        def make() -> Agent:
            return target(**params)
    else:
        try:
            registry = importlib.import_module("urbanarena.agents.registry")
        except ImportError as e:
            raise AgentSpecError(f"no agent registry available ({e})") from e

        def make() -> Agent:
            return registry.make_agent(name, **params)

    try:
        probe = make()
    except UrbanArenaError as e:
        raise AgentSpecError(f"agent {name!r}: {e}") from e
    except (KeyError, TypeError, ValueError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        raise AgentSpecError(f"agent {name!r}: {msg}") from e
    if not isinstance(probe, Agent):
        raise AgentSpecError(f"agent {name!r}: built a {type(probe).__name__}, not an urbanarena Agent")
    close = getattr(probe, "close", None)
    if callable(close):
        close()
    return make


def agent_class(name: str) -> Any:
    """The class (or callable) an ``--agent`` name builds, without building it.

    Raises: :class:`AgentSpecError` for an unknown name or an unimportable callable.
    """
    registry = importlib.import_module("urbanarena.agents.registry")
    if ":" in name and not name.startswith("bc:"):
        return import_callable(name)
    try:
        return registry.AGENTS[registry.split_spec(name)[0]]
    except KeyError:
        raise AgentSpecError(f"agent {name!r}: unknown agent {name!r}; known: {', '.join(sorted(registry.AGENTS))}") from None


def is_model_agent(name: str) -> bool:
    """Whether ``--agent name`` is a VLM agent calling a model API (a
    :class:`~urbanarena.agents.vlm.common.ModelAgent` subclass)."""
    from urbanarena.agents.vlm.common import ModelAgent

    target = agent_class(name)
    return isinstance(target, type) and issubclass(target, ModelAgent)


def make_dispatcher(spec: WorkerSpec, city: City | None = None, cancel: threading.Event | None = None) -> EpisodeDispatcher:
    """An :class:`EpisodeDispatcher` for ``spec`` (loads the city unless given)."""
    city = city if city is not None else load_city(spec.city_dir, verify_hash=False)
    factory = agent_factory(spec.agent_name, spec.agent_params)
    if spec.strategies:
        from urbanarena.agents.strategies import strategy_factory

        factory = strategy_factory(factory, spec.strategies)
    d = EpisodeDispatcher(city, factory, spec.agent_name,
                          city_dir=spec.city_dir, task_dir=spec.task_dir, run_dir=spec.run_dir, trace=spec.trace,
                          arena_view=spec.arena_view, cancel=cancel, judge=spec.judge,
                          model_under_test=spec.model_under_test)
    d.graph.rounds = int(spec.rounds)  # graph jobs: rounds and strategies (EpisodeRunner.run_rounds)
    d.graph.strategies = spec.strategies or None
    return d


class Backend(ABC):
    """Where episodes run. Use as a context manager around :meth:`run`."""

    name: str = "backend"

    @abstractmethod
    def run(self, jobs: Iterable[Job]) -> Iterator[dict[str, Any]]:
        """Run ``jobs``; yield one result dict per job, in completion order.

        Raises:
            RunnerError: a job failed in our code or a worker died.
        """

    def close(self, cancel: bool = False) -> None:
        """Release workers (``cancel``: drop jobs not started yet)."""

    def __enter__(self) -> "Backend":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(cancel=exc_type is not None)


def run_job(runner: EpisodeDispatcher, job: Job) -> dict[str, Any]:
    """Run one :class:`Job` on ``runner``: its task (validated from the job's dict), seed, protocol, step limit and
    config hash; returns the episode's result row."""
    task = Task.model_validate(job.task)
    return runner.run(task, job.seed, job.protocol_id, job.max_steps, job.config_hash)


_run_job = run_job  # the name the backends used before this module existed
_import_callable = import_callable

__all__ = ["AgentSpecError", "Backend", "Job", "RunnerError", "WorkerSpec", "agent_class", "agent_factory",
           "import_callable", "in_flight", "install_rate_limits", "is_model_agent", "make_dispatcher", "run_job",
           "uninstall_rate_limits"]
