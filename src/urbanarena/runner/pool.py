"""Execution backends: where episodes run.

A backend receives :class:`Job` records (a task as JSON, a seed, a protocol
id, a step limit and the config hash) and yields result dicts (see
:meth:`urbanarena.runner.episode.EpisodeRunner.run`) in completion order. It
never touches the store: the driver alone writes results. A backend is set up
once per run with a :class:`WorkerSpec` (where to load the city from and how
to build the agent), so its workers load the saved city directory themselves
instead of receiving a pickled graph.

Backends here:

* :class:`InProcessBackend` — runs jobs one after another in the driver
  process (``--workers 1``; also the natural base of a future in-process
  async backend for API-bound agents);
* :class:`ProcessPoolBackend` — a :class:`concurrent.futures.ProcessPoolExecutor`
  of ``workers`` processes (``forkserver`` start method where available,
  else ``spawn``), each initialised once. Jobs are sent in adaptive chunks of
  one task's seeds (see the class), at most ``2 * workers`` chunks in flight,
  so an interrupt cancels promptly. Workers exit on their own when the driver
  dies (a watchdog thread checks it). Library callers using more than one
  worker from a script need the usual ``if __name__ == "__main__":`` guard
  (the workers re-import the main module, as with any spawn/forkserver pool).

A future Ray or async backend implements the same three methods.
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from abc import ABC, abstractmethod
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from urbanarena.agents.base import Agent
from urbanarena.errors import UrbanArenaError
from urbanarena.runner.episode import AgentFactory, EpisodeRunner
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
    """

    city_dir: str
    city_hash: str
    agent_name: str
    agent_params: dict[str, Any] = field(default_factory=dict)


def _import_callable(spec: str):
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
    if ":" in name:
        target = _import_callable(name)

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
    return make


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


def _run_job(runner: EpisodeRunner, job: Job) -> dict[str, Any]:
    task = Task.model_validate(job.task)
    return runner.run(task, job.seed, job.protocol_id, job.max_steps, job.config_hash)


class InProcessBackend(Backend):
    """Runs jobs sequentially in the calling process.

    Args:
        spec: worker spec (the agent is built from it).
        city: an already loaded city (avoids a second load); loaded from
            ``spec.city_dir`` when ``None``.
    """

    name = "in-process"

    def __init__(self, spec: WorkerSpec, city: City | None = None):
        city = city if city is not None else load_city(spec.city_dir, verify_hash=False)
        self.runner = EpisodeRunner(city, agent_factory(spec.agent_name, spec.agent_params), spec.agent_name)

    def run(self, jobs: Iterable[Job]) -> Iterator[dict[str, Any]]:
        for job in jobs:
            try:
                yield _run_job(self.runner, job)
            except Exception as e:
                raise RunnerError(f"episode {job.task_id!r} seed {job.seed} failed: {e}") from e


# ----------------------------------------------------------------- process pool
_WORKER_RUNNER: EpisodeRunner | None = None


def _pid_alive(pid: int) -> bool:
    """True while process ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return stat[stat.rfind(b")") + 2:][:1] != b"Z"
    except OSError:
        return True


def _watch_driver(driver_pid: int, parent_pid: int) -> None:
    """Exit the worker when the driver is gone (checked every 0.5 s).

    Both the parent (spawn: the driver itself) and the driver pid are
    watched: under ``forkserver`` the parent is the fork server, which stays
    alive as long as any worker does.
    """
    while True:
        time.sleep(0.5)
        if os.getppid() != parent_pid or not _pid_alive(driver_pid):
            os._exit(0)


def _init_worker(spec: WorkerSpec, driver_pid: int) -> None:
    """Worker initializer: start the orphan watchdog, load the city once and
    build the agent factory."""
    global _WORKER_RUNNER
    # the driver handles Ctrl-C and shuts the pool down; workers must not die mid-job
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_driver, args=(driver_pid, os.getppid()), daemon=True).start()
    city = load_city(spec.city_dir, verify_hash=False)
    _WORKER_RUNNER = EpisodeRunner(city, agent_factory(spec.agent_name, spec.agent_params), spec.agent_name)


def _worker_chunk(jobs: list[Job]) -> list[dict[str, Any]]:
    assert _WORKER_RUNNER is not None, "worker not initialised"
    out = []
    for job in jobs:
        try:
            out.append(_run_job(_WORKER_RUNNER, job))
        except Exception as e:
            raise RunnerError(f"episode {job.task_id!r} seed {job.seed} failed in a worker: {e}") from e
    return out


def default_mp_context() -> mp.context.BaseContext:
    """``forkserver`` on POSIX (no fork of a threaded driver), else ``spawn``."""
    methods = mp.get_all_start_methods()
    if "forkserver" in methods and sys.platform != "darwin":
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["urbanarena.runner.pool"])
        return ctx
    return mp.get_context("spawn")


class ProcessPoolBackend(Backend):
    """Runs jobs on ``workers`` processes (see module docstring).

    Jobs travel in chunks made of seeds of one task, so a task's per-goal
    caches (shortest-path distances) are built by one worker rather than by
    all of them. The chunk size adapts so a chunk holds about
    ``chunk_target_s`` seconds of work (measured from the episodes done so
    far; 1 job until the first results arrive, at most ``max_chunk``): fast
    baselines get big chunks, slow (API-bound) agents get one episode per
    chunk, so a crash loses at most about ``chunk_target_s`` of work per worker.

    Args:
        spec: worker spec.
        workers: number of processes (>= 1).
        max_in_flight: chunks submitted ahead (default ``2 * workers``).
        mp_context: multiprocessing context (default :func:`default_mp_context`).
        max_chunk: largest chunk (jobs).
        chunk_target_s: wall time of work a chunk aims at, seconds.
    """

    name = "process-pool"

    def __init__(self, spec: WorkerSpec, workers: int, max_in_flight: int | None = None, mp_context=None,
                 max_chunk: int = 16, chunk_target_s: float = 0.5):
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.workers = workers
        self.max_in_flight = max_in_flight or 2 * workers
        self.max_chunk = max(1, int(max_chunk))
        self.chunk_target_s = float(chunk_target_s)
        self._done = 0
        self._busy_s = 0.0
        self.executor = ProcessPoolExecutor(
            max_workers=workers, mp_context=mp_context or default_mp_context(),
            initializer=_init_worker, initargs=(spec, os.getpid()),
        )

    def chunk_size(self) -> int:
        """Jobs per chunk now (see class docstring)."""
        if self._done == 0:
            return 1
        mean_s = self._busy_s / self._done
        if mean_s <= 0:
            return self.max_chunk
        return max(1, min(self.max_chunk, int(self.chunk_target_s / mean_s)))

    def run(self, jobs: Iterable[Job]) -> Iterator[dict[str, Any]]:
        groups: dict[str, list[Job]] = {}
        for job in jobs:
            groups.setdefault(job.task_id, []).append(job)
        pending: dict[Future, list[Job]] = {}

        def fill() -> None:
            while len(pending) < self.max_in_flight and groups:
                tid = next(iter(groups))
                group = groups[tid]
                k = self.chunk_size()
                chunk, rest = group[:k], group[k:]
                if rest:
                    groups[tid] = rest
                else:
                    del groups[tid]
                pending[self.executor.submit(_worker_chunk, chunk)] = chunk

        try:
            fill()
        except BrokenProcessPool as e:
            raise RunnerError(f"the worker pool could not start: {e}") from e
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                chunk = pending.pop(fut)
                try:
                    results = fut.result()
                except BrokenProcessPool as e:
                    raise RunnerError(
                        f"a worker process died (episode {chunk[0].task_id!r}): {e}; "
                        "finished episodes are stored, rerun the same command to resume"
                    ) from e
                except RunnerError:
                    raise
                except Exception as e:
                    raise RunnerError(f"episode {chunk[0].task_id!r} failed in a worker: {e}") from e
                for r in results:
                    self._done += 1
                    self._busy_s += float((r.get("timings") or {}).get("total_s") or 0.0)
                yield from results
            fill()

    def close(self, cancel: bool = False) -> None:
        self.executor.shutdown(wait=True, cancel_futures=cancel)


def make_backend(spec: WorkerSpec, workers: int, city: City | None = None) -> Backend:
    """``InProcessBackend`` for ``workers == 1``, else ``ProcessPoolBackend``."""
    if workers <= 1:
        return InProcessBackend(spec, city)
    return ProcessPoolBackend(spec, workers)
