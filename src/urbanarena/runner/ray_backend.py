"""Ray backend (``urbanarena run ... --backend ray [--ray-address ADDR]``; extra ``urbanarena[ray]``).

Every episode is one Ray task (:func:`run_job_task`); the driver keeps ``workers x concurrency``
tasks in flight, collects their result dicts as they finish (``ray.wait``) and, as with every
backend, alone writes the store. A task's result is exactly what the local backends return, so a
run on Ray stores the same rows as the same run in process (``tests/test_ray_backend.py``).

Cluster: ``--ray-address`` is passed to ``ray.init(address=...)`` (``auto``, ``HOST:PORT`` or
``ray://HOST:10001``). Without it the backend uses the caller's ``ray.init`` connection when there
is one (tests: ``ray.init(num_cpus=2, include_dashboard=False)``), else it starts a local cluster
bound to 127.0.0.1 without the dashboard, and shuts down only a cluster it started.

Worker processes: a task needs ``1 / concurrency`` CPU (``--concurrency 8`` packs 8 API-bound
episodes per CPU; Ray runs each in-flight task in its own worker process). A worker process
keeps its loaded city and dispatcher between tasks (cached per worker spec), so the city is loaded
once per process, not per episode. Tasks are not retried by Ray (``max_retries=0``): an episode
that dies with its worker fails the run like a dead pool process; rerunning the command resumes.

Files on the cluster: workers load the saved city directory, the task folder's reference images
and, for model agents, the response cache and budget ledger under ``RUN_DIR``, by path; traces are
written under ``RUN_DIR/traces``. On a multi-machine cluster these paths must be on a shared
filesystem (or use ``--cache off``), and ``module:Callable`` agents must be importable on the
workers.

Secrets: API keys are never task arguments nor part of a ``runtime_env``. The worker spec holds
the agent parameters (model spec, ``api_key_env`` is a variable *name*), and each worker's model
client reads its key from its own environment (:func:`urbanarena.agents.clients.spec.resolve_api_key`):
a local cluster's workers inherit the driver's environment; on a remote cluster set the variables
on the nodes. So nothing Ray logs or stores (task specs, the GCS, worker logs) contains a key.

Rate limits: each worker process has its own limiter and gets ``1 / (workers x concurrency)`` of
the configured limits (at most that many tasks run at once), so the run never exceeds them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
from typing import Any, Iterable, Iterator

from urbanarena.errors import UrbanArenaError
from urbanarena.runner.episode import RunStopped
from urbanarena.runner.backend_base import (
    Backend,
    Job,
    RunnerError,
    WorkerSpec,
    _run_job,
    agent_factory,
    install_rate_limits,
    make_dispatcher,
)


class RayUnavailableError(UrbanArenaError):
    """``--backend ray`` without Ray installed, or the cluster cannot be reached."""


#: per worker process: worker-spec key -> dispatcher (city loaded once per process)
_DISPATCHERS: dict[str, Any] = {}
_DISPATCHERS_LOCK = threading.Lock()


def spec_key(spec: WorkerSpec) -> str:
    """sha256 of the worker spec's canonical JSON (the worker-process cache key)."""
    blob = json.dumps(dataclasses.asdict(spec), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def run_job_task(spec: WorkerSpec, job: Job, share: float) -> dict[str, Any]:
    """Body of the Ray task: run ``job`` in this worker process.

    Returns: ``{"result": row}``, ``{"stopped": [reason, detail, task_id, seed]}`` for a run-level stop,
        or ``{"error": message}`` when our code failed (exceptions are returned, not raised, so the
        driver gets them intact whatever Ray does to exception classes).
    """
    key = spec_key(spec)
    with _DISPATCHERS_LOCK:
        d = _DISPATCHERS.get(key)
        if d is None:
            install_rate_limits(spec.rate_limits, share)
            d = _DISPATCHERS[key] = make_dispatcher(spec)
    try:
        return {"result": _run_job(d, job)}
    except RunStopped as e:
        return {"stopped": [e.reason, e.detail, e.task_id, e.seed]}
    except Exception as e:  # noqa: BLE001 - reported by the driver as a RunnerError
        return {"error": f"{type(e).__name__}: {e}"}


def probe_gcs_address(address: str | None, timeout_s: float = 10.0) -> None:
    """Fail fast where ``ray.init`` would wait minutes: a plain ``HOST:PORT`` (a Ray head's GCS) that does
    not accept a TCP connection within ``timeout_s`` seconds. Other forms (``None``, ``auto``, ``local``,
    ``ray://...``) fail quickly inside ``ray.init`` and are left to it.

    Raises:
        RayUnavailableError: nothing listens at ``HOST:PORT`` (refused, unreachable, timed out).
    """
    import socket

    if not address or "://" in address or ":" not in address:
        return
    host, _, port = address.rpartition(":")
    try:
        port_n = int(port)
    except ValueError:
        return
    try:
        socket.create_connection((host.strip("[]"), port_n), timeout=timeout_s).close()
    except OSError as e:
        raise RayUnavailableError(f"cannot reach the Ray cluster at {address}: {e} (is a Ray head running "
                                  "there? start one with `ray start --head`)") from None


def _import_ray():
    try:
        import ray
    except ImportError as e:
        raise RayUnavailableError("--backend ray needs Ray: pip install 'urbanarena[ray]'") from e
    return ray


class RayBackend(Backend):
    """Episodes as Ray tasks (module docstring).

    Args:
        spec: worker spec.
        in_flight: tasks kept in flight (``--workers x --concurrency``, >= 1).
        address: Ray cluster address (``--ray-address``); ``None``: the current ``ray.init``
            connection, else a new local cluster.
        concurrency: tasks per CPU (each task requests ``1 / concurrency`` CPU).
    Raises:
        RayUnavailableError: Ray is not installed or ``ray.init`` failed.
        AgentSpecError: the agent cannot be built (checked here, before any task).
    """

    name = "ray"

    def __init__(self, spec: WorkerSpec, in_flight: int, address: str | None = None, concurrency: int = 1):
        if in_flight < 1:
            raise ValueError("in_flight must be >= 1")
        agent_factory(spec.agent_name, spec.agent_params)  # fail here, not in every task
        ray = _import_ray()
        self.ray = ray
        self.in_flight = int(in_flight)
        self._started = False
        if address is not None or not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if address is None:
                kwargs["_node_ip_address"] = "127.0.0.1"
            probe_gcs_address(address if address is not None else os.environ.get("RAY_ADDRESS"))
            try:
                ray.init(address=address, **kwargs)
            except Exception as e:  # noqa: BLE001 - connection failures of any kind
                raise RayUnavailableError(f"cannot start or reach the Ray cluster{f' at {address}' if address else ''}: "
                                          f"{e}") from e
            self._started = True
        self._spec_ref = ray.put(spec)
        self._remote = ray.remote(run_job_task).options(num_cpus=1.0 / max(1, int(concurrency)), max_retries=0)
        self._share = 1.0 / self.in_flight
        self._pending: dict[Any, Job] = {}

    def run(self, jobs: Iterable[Job]) -> Iterator[dict[str, Any]]:
        ray = self.ray
        queue = iter(list(jobs))
        stopped: RunStopped | None = None

        def fill() -> None:
            while stopped is None and len(self._pending) < self.in_flight:
                job = next(queue, None)
                if job is None:
                    return
                self._pending[self._remote.remote(self._spec_ref, job, self._share)] = job

        fill()
        while self._pending:
            done, _ = ray.wait(list(self._pending), num_returns=1)
            for ref in done:
                job = self._pending.pop(ref)
                try:
                    out = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - a worker died, the task could not run
                    raise RunnerError(f"episode {job.task_id!r} seed {job.seed} failed on Ray: {e}; finished episodes "
                                      "are stored, rerun the same command to resume") from e
                if "error" in out:
                    raise RunnerError(f"episode {job.task_id!r} seed {job.seed} failed on Ray: {out['error']}")
                if "stopped" in out:
                    stopped = stopped or RunStopped(*out["stopped"])
                    continue
                yield out["result"]
            fill()
        if stopped is not None:
            raise stopped

    def close(self, cancel: bool = False) -> None:
        ray = self.ray
        for ref in list(self._pending):
            try:
                ray.cancel(ref, force=False)
            except Exception:  # noqa: BLE001 - best effort
                pass
        self._pending.clear()
        if self._started:
            ray.shutdown()
            self._started = False


__all__ = ["RayBackend", "RayUnavailableError", "run_job_task", "spec_key"]
