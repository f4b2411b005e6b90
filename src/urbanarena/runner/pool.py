"""Execution backends: where episodes run.

A backend receives :class:`Job` records (a task as JSON, a seed, a protocol
id, a step limit and the config hash) and yields result dicts (see
:meth:`urbanarena.runner.episode.EpisodeRunner.run`) in completion order. It
never touches the store: the driver alone writes results. A backend is set up
once per run with a :class:`WorkerSpec` (where to load the city from and how
to build the agent), so its workers load the saved city directory themselves
instead of receiving a pickled graph.

Every backend runs a job through an
:class:`~urbanarena.runner.dispatch.EpisodeDispatcher` (graph loop or arena
loop by the task's family). A run-level stop
(:class:`~urbanarena.runner.episode.RunStopped`: budget cap, read-only cache
miss) stops the submission of new jobs; the results of episodes already
finished (or finishing) are still yielded, then ``RunStopped`` is raised.

Backends here:

* :class:`InProcessBackend` — runs jobs one after another in the driver
  process (``--workers 1``);
* :class:`ThreadPoolBackend` — ``workers x concurrency`` episodes at once on
  threads of the driver process: the backend for API-bound agents (VLM agents
  spend their time waiting for the model server, so threads give many
  concurrent episodes without a process each; ``--concurrency 256`` keeps 256
  model calls in flight). Each thread has its own dispatcher (envs, caches);
  the camera observer (panorama store and its memory cache, view sampling
  grids; all thread-safe) is shared by the threads, so memory does not grow
  with the thread count. Agents are built per episode; their model clients
  share one HTTP connection pool per endpoint
  (:mod:`urbanarena.agents.clients.http_pool`). Ctrl-C sets a cancel event
  that aborts the running episodes at their next step;
* :class:`ProcessPoolBackend` — a :class:`concurrent.futures.ProcessPoolExecutor`
  of ``workers`` processes (``forkserver`` start method where available,
  else ``spawn``), each initialised once and running up to ``concurrency``
  episodes at once on its own threads. Jobs are sent in adaptive chunks (see
  the class), at most ``2 * workers`` chunks in flight, so an interrupt
  cancels promptly. Workers exit on their own when the driver dies (a
  watchdog thread checks it). Library callers using more than one worker
  from a script need the usual ``if __name__ == "__main__":`` guard (the
  workers re-import the main module, as with any spawn/forkserver pool);
* :class:`~urbanarena.runner.ray_backend.RayBackend` (``--backend ray``,
  optional extra ``urbanarena[ray]``) — episodes as Ray tasks on a local or
  remote Ray cluster, ``workers x concurrency`` in flight.

``--workers`` and ``--concurrency``: ``workers`` is the number of worker
processes (threads for the ``threads`` backend), ``concurrency`` the episodes
in flight per worker; the run keeps ``workers x concurrency`` episodes in
flight (:func:`in_flight`). ``auto`` runs a model (API-bound) agent on
threads of the driver process, anything else on processes.

Per-provider rate limits (:class:`WorkerSpec` ``rate_limits``;
:mod:`urbanarena.agents.clients.rate_limit`) are installed in every process
that runs episodes; one limiter per process is shared by all its episodes.
Processes cannot share a bucket, so each of ``n`` processes gets ``1 / n`` of
the limits (:func:`install_rate_limits`).
"""

from __future__ import annotations

import copy
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Iterable, Iterator

from urbanarena.agents.clients import http_pool
from urbanarena.pids import pid_alive
from urbanarena.runner.dispatch import EpisodeDispatcher
from urbanarena.runner.episode import RunStopped
from urbanarena.runner.trace import EpisodeCancelled
from urbanarena.world.city import City
from urbanarena.world.city_io import load_city
# re-exported: the jobs, worker spec, agent factories and the Backend interface were defined here
from urbanarena.runner.backend_base import (  # noqa: F401
    AgentSpecError, Backend, Job, RunnerError, WorkerSpec, _import_callable, _run_job, agent_class, agent_factory,
    in_flight, install_rate_limits, is_model_agent, make_dispatcher, uninstall_rate_limits,
)


class InProcessBackend(Backend):
    """Runs jobs sequentially in the calling process.

    Args:
        spec: worker spec (the agent is built from it).
        city: an already loaded city (avoids a second load); loaded from
            ``spec.city_dir`` when ``None``.
    """

    name = "in-process"

    def __init__(self, spec: WorkerSpec, city: City | None = None):
        self.runner = make_dispatcher(spec, city)
        self._limits = install_rate_limits(spec.rate_limits)

    def close(self, cancel: bool = False) -> None:
        uninstall_rate_limits(self._limits)
        self._limits = None

    def run(self, jobs: Iterable[Job]) -> Iterator[dict[str, Any]]:
        for job in jobs:
            try:
                yield _run_job(self.runner, job)
            except RunStopped:
                raise
            except Exception as e:
                raise RunnerError(f"episode {job.task_id!r} seed {job.seed} failed: {e}") from e


# ----------------------------------------------------------------- threads
class _SharedCamera:
    """One camera observer for all the dispatchers of a process, built on first call (under a lock)
    from the first attached dispatcher's settings. ``PanoramaObserver`` calls are thread-safe (locked
    LRU panorama store, locked grid cache; its ``last_placements`` is read by nothing)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._template: Any = None
        self._observer: Any = None
        self._built = False

    def _get(self) -> Any:
        with self._lock:
            if not self._built:
                self._observer = self._template.observer  # RendererUnavailableError propagates, as unshared
                self._built = True
            return self._observer

    def __call__(self, city: City, pose: Any) -> Any:
        return self._get()(city, pose)

    def __getattr__(self, name: str) -> Any:  # hfov_deg, width ... of the real observer
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._get(), name)

    def attach(self, dispatcher: EpisodeDispatcher) -> None:
        """Give ``dispatcher``'s arena runner the shared observer (nothing for a graph-only city,
        whose observer stays ``None``)."""
        from urbanarena.env.observers import observation_source

        if observation_source(dispatcher.city) is None:
            return
        arena = dispatcher.arena
        with self._lock:
            if self._template is None:
                self._template = copy.copy(arena)  # builds the observer the way the runner would
        arena._observer, arena._observer_built = self, True


def _shared_thread_dispatcher(local: threading.local, spec: WorkerSpec, city: City, cancel: threading.Event | None,
                              camera: _SharedCamera) -> EpisodeDispatcher:
    d = getattr(local, "dispatcher", None)
    if d is None:
        d = make_dispatcher(spec, city, cancel=cancel)
        camera.attach(d)
        local.dispatcher = d
    return d


class ThreadPoolBackend(Backend):
    """``workers`` concurrent episodes on threads of the driver process (see the module docstring).

    At most ``workers`` jobs are submitted at a time, so a stop or an
    interrupt leaves no queue behind. Results are yielded in completion order.

    Args:
        spec: worker spec.
        workers: concurrent episodes (>= 1): ``--workers x --concurrency`` from the CLI.
        city: the loaded city (shared read-only by the threads; loaded when ``None``).
    """

    name = "threads"

    def __init__(self, spec: WorkerSpec, workers: int, city: City | None = None):
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.spec = spec
        self.workers = int(workers)
        self.city = city if city is not None else load_city(spec.city_dir, verify_hash=False)
        agent_factory(spec.agent_name, spec.agent_params)  # fail here, not in every thread
        self.cancel = threading.Event()
        self._local = threading.local()
        self._camera = _SharedCamera()
        http_pool.size_for(self.workers)
        self._limits = install_rate_limits(spec.rate_limits)
        self.executor = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="urbanarena-episode")

    def _dispatcher(self) -> EpisodeDispatcher:
        return _shared_thread_dispatcher(self._local, self.spec, self.city, self.cancel, self._camera)

    def _job(self, job: Job) -> dict[str, Any] | None:
        if self.cancel.is_set():
            return None
        try:
            return _run_job(self._dispatcher(), job)
        except EpisodeCancelled:
            return None

    def run(self, jobs: Iterable[Job]) -> Iterator[dict[str, Any]]:
        queue = iter(list(jobs))
        pending: dict[Future, Job] = {}
        stopped: RunStopped | None = None

        def fill() -> None:
            while stopped is None and len(pending) < self.workers:
                job = next(queue, None)
                if job is None:
                    return
                pending[self.executor.submit(self._job, job)] = job

        try:
            fill()
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    job = pending.pop(fut)
                    try:
                        result = fut.result()
                    except RunStopped as e:
                        stopped = stopped or e
                        continue
                    except Exception as e:
                        self.cancel.set()
                        raise RunnerError(f"episode {job.task_id!r} seed {job.seed} failed: {e}") from e
                    if result is not None:
                        yield result
                fill()
        except BaseException:
            self.cancel.set()
            raise
        if stopped is not None:
            raise stopped

    def close(self, cancel: bool = False) -> None:
        if cancel:
            self.cancel.set()
        self.executor.shutdown(wait=True, cancel_futures=True)
        uninstall_rate_limits(self._limits)
        self._limits = None


# ----------------------------------------------------------------- process pool
_WORKER_RUNNER: EpisodeDispatcher | None = None
#: worker process with ``concurrency > 1``: its threads, their dispatchers and the shared camera
_WORKER_THREADS: ThreadPoolExecutor | None = None
_WORKER_LOCAL = threading.local()
_WORKER_SPEC: WorkerSpec | None = None
_WORKER_CITY: City | None = None
_WORKER_CAMERA: _SharedCamera | None = None



def _watch_driver(driver_pid: int, parent_pid: int) -> None:
    """Exit the worker when the driver is gone (checked every 0.5 s).

    Both the parent (spawn: the driver itself) and the driver pid are
    watched: under ``forkserver`` the parent is the fork server, which stays
    alive as long as any worker does.
    """
    while True:
        time.sleep(0.5)
        if os.getppid() != parent_pid or not pid_alive(driver_pid):
            os._exit(0)


def _init_worker(spec: WorkerSpec, driver_pid: int, concurrency: int = 1, share: float = 1.0) -> None:
    """Worker initializer: start the orphan watchdog, install the rate limits (``share`` of them),
    load the city once and build the agent factory (and ``concurrency`` threads when above 1)."""
    global _WORKER_RUNNER, _WORKER_THREADS, _WORKER_SPEC, _WORKER_CITY, _WORKER_CAMERA
    # the driver handles Ctrl-C and shuts the pool down; workers must not die mid-job
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_driver, args=(driver_pid, os.getppid()), daemon=True).start()
    install_rate_limits(spec.rate_limits, share)
    _WORKER_RUNNER = make_dispatcher(spec)
    if concurrency > 1:
        http_pool.size_for(concurrency)
        _WORKER_SPEC, _WORKER_CITY, _WORKER_CAMERA = spec, _WORKER_RUNNER.city, _SharedCamera()
        _WORKER_THREADS = ThreadPoolExecutor(max_workers=int(concurrency), thread_name_prefix="urbanarena-episode")


def _worker_thread_job(job: Job, stop: threading.Event) -> dict[str, Any] | None:
    if stop.is_set():
        return None
    assert _WORKER_SPEC is not None and _WORKER_CITY is not None and _WORKER_CAMERA is not None
    d = _shared_thread_dispatcher(_WORKER_LOCAL, _WORKER_SPEC, _WORKER_CITY, None, _WORKER_CAMERA)
    return _run_job(d, job)


def _worker_chunk_threads(jobs: list[Job]) -> tuple[list[dict[str, Any]], RunStopped | None]:
    """A chunk on the worker's threads: jobs not started when a run-level stop happens are skipped."""
    assert _WORKER_THREADS is not None
    stop = threading.Event()
    futs = {_WORKER_THREADS.submit(_worker_thread_job, job, stop): job for job in jobs}
    out: list[dict[str, Any]] = []
    stopped: RunStopped | None = None
    failure: BaseException | None = None
    for fut in list(futs):
        job = futs[fut]
        try:
            r = fut.result()
        except RunStopped as e:
            stop.set()
            stopped = stopped or e
            continue
        except Exception as e:  # noqa: BLE001 - reported after the other jobs of the chunk finished
            stop.set()
            failure = failure or RunnerError(f"episode {job.task_id!r} seed {job.seed} failed in a worker: {e}")
            continue
        if r is not None:
            out.append(r)
    if failure is not None:
        raise failure
    return out, stopped


def _worker_chunk(jobs: list[Job]) -> tuple[list[dict[str, Any]], RunStopped | None]:
    """Run a chunk; returns the finished results and the run-level stop that ended it early (or ``None``)."""
    assert _WORKER_RUNNER is not None, "worker not initialised"
    if _WORKER_THREADS is not None:
        return _worker_chunk_threads(jobs)
    out = []
    for job in jobs:
        try:
            out.append(_run_job(_WORKER_RUNNER, job))
        except RunStopped as e:
            return out, e
        except Exception as e:
            raise RunnerError(f"episode {job.task_id!r} seed {job.seed} failed in a worker: {e}") from e
    return out, None


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

    With ``concurrency > 1`` every worker runs a chunk's jobs on ``concurrency``
    threads, and a chunk holds ``concurrency`` times as many jobs (taken across
    tasks), so each process keeps ``concurrency`` episodes in flight; a chunk
    returns when its slowest episode ends.

    Args:
        spec: worker spec.
        workers: number of processes (>= 1).
        max_in_flight: chunks submitted ahead (default ``2 * workers``).
        mp_context: multiprocessing context (default :func:`default_mp_context`).
        max_chunk: largest chunk (jobs).
        chunk_target_s: wall time of work a chunk aims at, seconds.
        concurrency: episodes in flight per process (threads; >= 1).
    """

    name = "process-pool"

    def __init__(self, spec: WorkerSpec, workers: int, max_in_flight: int | None = None, mp_context=None,
                 max_chunk: int = 16, chunk_target_s: float = 0.5, concurrency: int = 1):
        in_flight(workers, concurrency)  # ValueError below 1
        self.workers = workers
        self.concurrency = int(concurrency)
        self.max_in_flight = max_in_flight or 2 * workers
        self.max_chunk = max(1, int(max_chunk))
        self.chunk_target_s = float(chunk_target_s)
        self._done = 0
        self._busy_s = 0.0
        self.executor = ProcessPoolExecutor(
            max_workers=workers, mp_context=mp_context or default_mp_context(),
            initializer=_init_worker, initargs=(spec, os.getpid(), self.concurrency, 1.0 / workers),
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
        stopped: RunStopped | None = None

        def fill() -> None:
            while stopped is None and len(pending) < self.max_in_flight and groups:
                k = self.chunk_size() * self.concurrency
                chunk: list[Job] = []
                while groups and len(chunk) < k:  # one task's seeds; with concurrency > 1 across tasks
                    tid = next(iter(groups))
                    group = groups[tid]
                    take, rest = group[:k - len(chunk)], group[k - len(chunk):]
                    chunk += take
                    if rest:
                        groups[tid] = rest
                    else:
                        del groups[tid]
                    if self.concurrency == 1:
                        break
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
                    results, stop = fut.result()
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
                if stop is not None and stopped is None:
                    stopped = stop
            fill()
        if stopped is not None:
            raise stopped

    def close(self, cancel: bool = False) -> None:
        self.executor.shutdown(wait=True, cancel_futures=cancel)


BACKENDS = ("auto", "in-process", "threads", "processes", "ray")


def backend_name(kind: str, workers: int, api_bound: bool, concurrency: int = 1) -> str:
    """The backend ``make_backend`` picks: ``auto`` = ``in-process`` for one episode in flight
    (``workers x concurrency == 1``), else ``threads`` for API-bound (VLM) agents and
    ``process-pool`` for the rest; ``ray`` = ``ray``.

    Raises: ``ValueError`` for an unknown kind, ``in-process`` with more than one episode in flight,
        or ``workers`` / ``concurrency`` below 1.
    """
    if kind not in BACKENDS:
        raise ValueError(f"unknown backend {kind!r}; choose one of {', '.join(BACKENDS)}")
    n = in_flight(workers, concurrency)
    if kind == "ray":
        return "ray"
    if kind == "in-process":
        if n > 1:
            raise ValueError(f"--backend in-process runs one episode at a time; --workers {workers} x "
                             f"--concurrency {concurrency} asks for {n}")
        return "in-process"
    if kind == "auto" and n <= 1:
        return "in-process"
    if kind == "threads" or (kind == "auto" and api_bound):
        return "threads"
    return "process-pool"


def make_backend(spec: WorkerSpec, workers: int, city: City | None = None, kind: str = "auto",
                 api_bound: bool = False, concurrency: int = 1, ray_address: str | None = None) -> Backend:
    """The backend for ``kind`` (see :func:`backend_name`): ``threads`` gets ``workers x concurrency``
    threads, ``processes`` ``workers`` processes of ``concurrency`` threads each, ``ray`` keeps
    ``workers x concurrency`` Ray tasks in flight (on the cluster at ``ray_address``, or an existing
    ``ray.init`` connection, or a new local cluster)."""
    name = backend_name(kind, workers, api_bound, concurrency)
    if name == "in-process":
        return InProcessBackend(spec, city)
    if name == "threads":
        return ThreadPoolBackend(spec, in_flight(workers, concurrency), city)
    if name == "ray":
        from urbanarena.runner.ray_backend import RayBackend

        return RayBackend(spec, in_flight(workers, concurrency), address=ray_address, concurrency=concurrency)
    return ProcessPoolBackend(spec, workers, concurrency=concurrency)
