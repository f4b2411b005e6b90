"""The run driver: plan (city, tasks, agent, seeds) into jobs, run them on a
backend, and commit every result to the run store.

Two phases, so bad input never leaves a partial run directory behind:

1. :func:`prepare` resolves and validates everything (city, tasks, agent,
   protocol per family, step limits) and computes every job's config hash —
   without touching ``RUN_DIR``;
2. :func:`execute` creates ``RUN_DIR``, writes ``run.json``, skips the jobs
   whose key ``(task_id, seed, agent, config_hash)`` is already stored, runs
   the rest and commits each result in its own transaction as it arrives.

Resume = run the same command again. A different config (another agent,
protocol, step limit ...) may share a ``RUN_DIR``: its rows get their own
config hash, and ``summary``/``export`` select one with ``--config``.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from urbanarena.env.protocols import get_protocol, make_motion
from urbanarena.errors import StoreError, UrbanArenaError
from urbanarena.runner.config import EpisodeConfig
from urbanarena.runner.episode import ERROR_STOP, utc_now
from urbanarena.runner.metadata import start_record, write_run_json
from urbanarena.runner.pool import Job, WorkerSpec, agent_factory, make_backend
from urbanarena.runner.store import STORE_FILE, Store
from urbanarena.tasks.families import get_family
from urbanarena.tasks.resolve import TaskSet, resolve_task_set, task_hash
from urbanarena.world.city import City
from urbanarena.world.resolve import CitySource, resolve_city_source


#: largest --seeds accepted (jobs are planned up front)
MAX_SEEDS = 100_000


@dataclass
class RunRequest:
    """A ``urbanarena run`` invocation.

    Attributes:
        city: CITY argument. tasks: TASKS argument.
        agent: agent name (registry name or ``module:Callable``).
        agent_params: agent keyword arguments.
        seeds: number of seeds; seeds are ``seed_base .. seed_base + seeds - 1``.
        out: RUN_DIR.
        workers: worker processes (1 = in-process).
        protocol: protocol id for every family (``None`` = each family's default).
        max_steps: step limit (``None`` = each family's default).
        limit: run only the first ``limit`` tasks.
        retry_errors: rerun stored episodes whose agent raised.
        command: the process argv, for the metadata.
    """

    city: str
    tasks: str
    agent: str
    out: Path
    seeds: int = 1
    seed_base: int = 0
    agent_params: dict[str, Any] = field(default_factory=dict)
    workers: int = 1
    protocol: str | None = None
    max_steps: int | None = None
    limit: int | None = None
    retry_errors: bool = False
    command: list[str] = field(default_factory=list)

    def command_line(self) -> str:
        """The canonical ``urbanarena run ...`` command of this request (rerun it to resume)."""
        parts = ["urbanarena", "run", "--city", self.city, "--tasks", self.tasks, "--agent", self.agent,
                 "--seeds", str(self.seeds), "--seed-base", str(self.seed_base), "--workers", str(self.workers),
                 "--out", str(self.out)]
        if self.protocol is not None:
            parts += ["--protocol", self.protocol]
        if self.max_steps is not None:
            parts += ["--max-steps", str(self.max_steps)]
        if self.limit is not None:
            parts += ["--limit", str(self.limit)]
        for k, v in self.agent_params.items():
            parts += ["--param", f"{k}={json.dumps(v)}"]
        if self.retry_errors:
            parts.append("--retry-errors")
        return shlex.join(parts)


@dataclass
class PreparedRun:
    """A validated run, ready to execute (nothing written yet)."""

    request: RunRequest
    city: City
    city_source: CitySource
    task_set: TaskSet
    tasks: list
    seeds: list[int]
    configs: dict[str, EpisodeConfig]  # config hash -> config
    family_config: dict[str, str]  # family name -> config hash
    jobs: list[Job]
    task_hashes: dict[str, str]
    agent_config: dict[str, Any]


@dataclass
class RunOutcome:
    """What :func:`execute` did."""

    run_dir: Path
    planned: int
    skipped: int
    run: int
    errors: int
    status: str


class RunEvents:
    """Progress hooks (the CLI draws a progress bar with them)."""

    def on_start(self, total: int, skipped: int) -> None: ...

    def on_result(self, result: dict[str, Any]) -> None: ...


def prepare(req: RunRequest) -> PreparedRun:
    """Resolve and validate a run request (no side effect on ``RUN_DIR``).

    Raises:
        UnknownCityError, CityFormatError: bad CITY.
        TaskFormatError, UrbanArenaError: bad TASKS.
        ProtocolError: unknown protocol, or one a family cannot run.
        AgentSpecError: unknown agent or bad agent parameters.
        UrbanArenaError: bad seeds/workers/limit/max-steps, or ``--out`` is a file.
    """
    if req.seeds < 1:
        raise UrbanArenaError(f"--seeds must be >= 1 (got {req.seeds})")
    if req.seeds > MAX_SEEDS:
        raise UrbanArenaError(f"--seeds must be <= {MAX_SEEDS} (got {req.seeds})")
    if req.seed_base < 0:
        raise UrbanArenaError(f"--seed-base must be >= 0 (got {req.seed_base})")
    if req.workers < 1:
        raise UrbanArenaError(f"--workers must be >= 1 (got {req.workers})")
    if req.limit is not None and req.limit < 1:
        raise UrbanArenaError(f"--limit must be >= 1 (got {req.limit})")
    if req.max_steps is not None and req.max_steps < 0:
        raise UrbanArenaError(f"--max-steps must be >= 0 (got {req.max_steps})")
    out = Path(req.out)
    if out.exists() and not out.is_dir():
        raise UrbanArenaError(f"--out {out} exists and is not a directory")
    if req.protocol is not None:
        get_protocol(req.protocol)
    factory = agent_factory(req.agent, req.agent_params)
    agent_config = factory().config()
    city, source = resolve_city_source(req.city)
    task_set = resolve_task_set(req.tasks, city, source.directory)
    tasks = task_set.tasks[: req.limit] if req.limit else list(task_set.tasks)
    seeds = list(range(req.seed_base, req.seed_base + req.seeds))

    configs: dict[str, EpisodeConfig] = {}
    family_config: dict[str, str] = {}
    for fam_name in dict.fromkeys(t.family for t in tasks):
        fam = get_family(fam_name)
        protocol_id = req.protocol or fam.default_protocol
        make_motion(protocol_id, city, fam.action_style)  # raises ProtocolError if the family cannot run it
        cfg = EpisodeConfig(
            protocol_id=protocol_id,
            max_steps=int(req.max_steps if req.max_steps is not None else fam.default_max_steps),
            agent_name=req.agent,
            agent_config=agent_config,
            family=fam.name,
            family_version=getattr(fam, "version", None),
            city_hash=city.content_hash,
        )
        configs[cfg.hash] = cfg
        family_config[fam_name] = cfg.hash

    jobs = []
    task_json = {t.task_id: t.model_dump(mode="json") for t in tasks}
    for seed in seeds:
        for t in tasks:
            h = family_config[t.family]
            cfg = configs[h]
            jobs.append(Job(task_json[t.task_id], seed, cfg.protocol_id, cfg.max_steps, h))
    return PreparedRun(
        request=req, city=city, city_source=source, task_set=task_set, tasks=tasks, seeds=seeds,
        configs=configs, family_config=family_config, jobs=jobs,
        task_hashes={t.task_id: task_hash(t) for t in tasks}, agent_config=agent_config,
    )


def _invocation(p: PreparedRun) -> dict[str, Any]:
    r = p.request
    return {
        "city": {
            "spec": r.city, "name": p.city.name, "content_hash": p.city.content_hash,
            "directory": str(p.city_source.directory),
        },
        "tasks": {
            "spec": r.tasks, "source_hash": p.task_set.source_hash,
            "files": [str(f) for f in p.task_set.source_files], "count": len(p.tasks), "limit": r.limit,
        },
        "agent": {"name": r.agent, "params": r.agent_params, "config": p.agent_config},
        "seeds": p.seeds,
        "protocols": {fam: p.configs[h].protocol_id for fam, h in p.family_config.items()},
        "max_steps": {fam: p.configs[h].max_steps for fam, h in p.family_config.items()},
        "configs": {h: c.as_dict() for h, c in p.configs.items()},
        "planned_by_config": {h: sum(j.config_hash == h for j in p.jobs) for h in p.configs},
        "workers": r.workers,
        "backend": "in-process" if r.workers <= 1 else "process-pool",
        "command": r.command_line(),
        "argv": r.command,
        "started_at": utc_now(),
    }


def execute(p: PreparedRun, events: RunEvents | None = None) -> RunOutcome:
    """Run the pending jobs of a prepared run and commit every result.

    Raises:
        StoreError: a stored episode's task changed since it was run (same
            task id, different task content).
        RunnerError: a worker died or our own code failed on an episode
            (finished episodes stay committed; rerun to resume).
        KeyboardInterrupt: propagated after the store and ``run.json`` are
            closed/updated.
    """
    events = events or RunEvents()
    run_dir = Path(p.request.out)
    created = not run_dir.exists()
    run_dir.mkdir(parents=True, exist_ok=True)
    store = None
    lock = None
    record: dict[str, Any] | None = None
    outcome = RunOutcome(run_dir, len(p.jobs), 0, 0, 0, "failed")
    try:
        lock = _lock_run_dir(run_dir)
        store = Store(run_dir / STORE_FILE)
        now = utc_now()
        for h, cfg in p.configs.items():
            store.add_config(h, cfg.as_dict(), now)
        done = store.done_keys()
        agent = p.request.agent
        pending: list[Job] = []
        replace: set[tuple] = set()
        for job in p.jobs:
            key = (job.task_id, job.seed, agent, job.config_hash)
            hit = done.get(key)
            if hit is None:
                pending.append(job)
                continue
            stored_hash, stop_reason = hit
            if stored_hash != p.task_hashes[job.task_id]:
                raise StoreError(
                    f"{run_dir}: task {job.task_id!r} differs from the one stored there (same id, new content); "
                    "use a new --out directory"
                )
            if p.request.retry_errors and stop_reason == ERROR_STOP:
                pending.append(job)
                replace.add(key)
        outcome.skipped = len(p.jobs) - len(pending)
        record = start_record(run_dir, _invocation(p))
        events.on_start(len(pending), outcome.skipped)
        spec = WorkerSpec(str(p.city_source.directory), p.city.content_hash, agent, p.request.agent_params)
        with make_backend(spec, p.request.workers, p.city) as backend:
            for result in backend.run(pending):
                key = (result["task_id"], result["seed"], result["agent"], result["config_hash"])
                store.add(result, replace=key in replace)
                outcome.run += 1
                outcome.errors += result.get("stop_reason") == ERROR_STOP
                events.on_result(result)
        outcome.status = "finished"
        return outcome
    except KeyboardInterrupt:
        outcome.status = "interrupted"
        raise
    finally:
        committed = store.count() if store is not None else 0
        if store is not None:
            store.close()
        if created and committed == 0 and outcome.status == "failed":
            shutil.rmtree(run_dir, ignore_errors=True)
        elif record is not None:
            record.update(
                status=outcome.status,
                finished_at=utc_now(),
                episodes={"planned": outcome.planned, "skipped": outcome.skipped, "run": outcome.run, "errors": outcome.errors},
            )
            write_run_json(run_dir, record)
        if lock is not None:
            lock.close()


LOCK_FILE = ".lock"


def _lock_run_dir(run_dir: Path):
    """Take an exclusive advisory lock on ``RUN_DIR/.lock`` (POSIX ``flock``; the
    kernel drops it when the process dies, even by SIGKILL). Returns the open
    lock file, or ``None`` where ``fcntl`` is unavailable.

    Raises:
        StoreError: another process is running into the same RUN_DIR.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX
        return None
    f = open(run_dir / LOCK_FILE, "a+")
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        holder = f.read().strip()
        f.close()
        raise StoreError(
            f"{run_dir}: another urbanarena run is writing here{f' (pid {holder})' if holder else ''}; "
            "wait for it to finish or use another --out"
        ) from None
    f.seek(0)
    f.truncate()
    f.write(str(os.getpid()))
    f.flush()
    return f
