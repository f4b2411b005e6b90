"""What ``urbanarena run`` is asked to do (:class:`RunRequest`, its limits and cache modes) and the settings derived from
it: model runtime and parameters, control mode, rate limits, the task catalogue hash."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from urbanarena.runner.config import canonical_json
from urbanarena.runner.pool import AgentSpecError
from urbanarena.tasks.families import get_family
from urbanarena.tasks.resolve import task_hash


#: response-cache and budget-ledger files of model agents inside RUN_DIR
CACHE_FILE = "responses.sqlite"


LEDGER_FILE = "budget.sqlite"


CACHE_MODES = ("read-write", "read-only", "off")


#: largest --seeds accepted (jobs are planned up front)
MAX_SEEDS = 100_000


#: largest seed accepted (the run store keeps seeds as SQLite 64-bit integers)
MAX_SEED = 2**63 - 1


#: largest --rounds accepted
MAX_ROUNDS = 1000


#: largest --max-steps accepted (the family defaults are 35 to 100; an episode that long already takes hours
#: with a model agent, and a larger value would let a run of a never-stopping agent hang for days)
MAX_STEPS = 10_000


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
        model: model spec for a model agent (its ``model`` parameter).
        cache: response-cache mode of a model agent (default ``read-write``).
        cache_path: response-cache file (default ``RUN_DIR/responses.sqlite``).
        max_usd, max_requests: budget caps (ledger ``RUN_DIR/budget.sqlite``).
        prices: price-table override file (exported as ``$URBANARENA_PRICES``).
        trace: write per-step traces under ``RUN_DIR/traces``.
        backend: ``auto``, ``in-process``, ``threads`` or ``processes``.
        arena_view: :class:`~urbanarena.runner.arena.ArenaViewSettings` fields.
        judge: model spec of the fuzzy-match judge (``--judge``), ``None`` = no judge.
        judge_params: :class:`~urbanarena.agents.clients.GenerationSettings` overrides of the judge
            (``--judge-param``; defaults temperature 0, 1024 output tokens).
        control: control mode of a VLM agent (``--blind``, ``--no-map``, ``--oracle-perception``) as
            :class:`~urbanarena.agents.controls.ControlMode` fields (``{"blind": True}``); empty = normal.
        strategy: ``--strategy`` spec (``"B1,R3"``; :mod:`urbanarena.agents.strategies`), ``None`` = none.
        rounds: ``--rounds``: each (task, seed) job runs the task this many times in sequence, with a
            memory scoped to the job (default 1).
        concurrency: ``--concurrency``: episodes in flight per worker (threads); the run keeps
            ``workers x concurrency`` in flight (:func:`~urbanarena.runner.backend_base.in_flight`).
        ray_address: ``--ray-address`` of ``--backend ray`` (``None``: current connection or a local cluster).
        requests_per_min, tokens_per_min: ``--requests-per-min`` / ``--tokens-per-min``: rate limits of the
            model agent's provider endpoint (:mod:`urbanarena.agents.clients.rate_limit`); also taken from
            ``-p requests_per_min=`` / ``-p tokens_per_min=``. ``None`` = unlimited.
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
    model: str | None = None
    cache: str | None = None
    cache_path: Path | None = None
    max_usd: float | None = None
    max_requests: int | None = None
    prices: Path | None = None
    trace: bool = False
    backend: str = "auto"
    arena_view: dict[str, Any] | None = None
    judge: str | None = None
    judge_params: dict[str, Any] = field(default_factory=dict)
    control: dict[str, Any] = field(default_factory=dict)
    strategy: str | None = None
    rounds: int = 1
    concurrency: int = 1
    ray_address: str | None = None
    requests_per_min: float | None = None
    tokens_per_min: float | None = None

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
        if self.model is not None:
            parts += ["--model", self.model]
        if self.cache is not None:
            parts += ["--cache", self.cache]
        if self.cache_path is not None:
            parts += ["--cache-path", str(self.cache_path)]
        if self.max_usd is not None:
            parts += ["--max-usd", repr(float(self.max_usd))]
        if self.max_requests is not None:
            parts += ["--max-requests", str(self.max_requests)]
        if self.prices is not None:
            parts += ["--prices", str(self.prices)]
        if self.judge is not None:
            parts += ["--judge", self.judge]
        for k, v in self.judge_params.items():
            parts += ["--judge-param", f"{k}={json.dumps(v)}"]
        from urbanarena.agents.controls import FLAGS

        parts += [flag for key, flag in FLAGS.items() if self.control.get(key)]
        if self.strategy:
            parts += ["--strategy", self.strategy]
        if self.rounds != 1:
            parts += ["--rounds", str(self.rounds)]
        style = (self.arena_view or {}).get("render_style")
        if style is not None:
            parts += ["--render-style", str(style)]
        for key, flag in (("population", "--population"), ("camera", "--camera")):
            if (self.arena_view or {}).get(key) is not None:
                parts += [flag, str(self.arena_view[key])]
        if self.trace:
            parts.append("--trace")
        if self.backend != "auto":
            parts += ["--backend", self.backend]
        if self.concurrency != 1:
            parts += ["--concurrency", str(self.concurrency)]
        if self.ray_address is not None:
            parts += ["--ray-address", self.ray_address]
        if self.requests_per_min is not None:
            parts += ["--requests-per-min", repr(float(self.requests_per_min))]
        if self.tokens_per_min is not None:
            parts += ["--tokens-per-min", repr(float(self.tokens_per_min))]
        if self.retry_errors:
            parts.append("--retry-errors")
        return shlex.join(parts)


#: the first 16 bytes of every SQLite 3 database file
SQLITE_HEADER = b"SQLite format 3\x00"


def check_cache_path(path: Path, mode: str) -> None:
    """Refuse a response-cache path that cannot hold the cache, before RUN_DIR exists (``--cache-path``).

    Refused: a directory or any other non-regular file (``/dev/null``); a non-empty file that is not an SQLite
    database, or one that holds tables but no ``responses`` table (another program's database); a path whose
    nearest existing ancestor is not a directory (``/dev/null/x``); in ``read-write`` mode, a new file in a
    folder this process cannot write.

    Raises:
        AgentSpecError: naming the path and what is wrong.
    """
    where = f"--cache-path {path}"
    if path.exists() or path.is_symlink():
        if not path.is_file():
            raise AgentSpecError(f"{where}: not a regular file (a response cache is an SQLite file)")
        try:
            with open(path, "rb") as fh:
                head = fh.read(len(SQLITE_HEADER))
        except OSError as e:
            raise AgentSpecError(f"{where}: cannot be read ({e.strerror or e})") from None
        if not head:
            return  # an empty file: SQLite makes it a new database
        if head != SQLITE_HEADER:
            raise AgentSpecError(f"{where}: not an SQLite database (its first bytes are not SQLite's header), so not "
                                 "a response cache; give a new file name or an earlier run's responses.sqlite")
        import sqlite3

        try:
            con = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=10.0)
            try:
                tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            finally:
                con.close()
        except sqlite3.Error as e:
            raise AgentSpecError(f"{where}: unreadable SQLite database ({e})") from None
        if tables and "responses" not in tables:
            raise AgentSpecError(f"{where}: an SQLite database without a responses table (tables: "
                                 f"{', '.join(sorted(tables)[:5])}), not a response cache")
        return
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise AgentSpecError(f"{where}: {parent} is not a directory, so the cache file cannot be created")
    if mode == "read-write" and not os.access(parent, os.W_OK | os.X_OK):
        raise AgentSpecError(f"{where}: the folder {parent} is not writable")


def model_runtime(req: RunRequest, defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """Cache and budget settings of the run's model clients (agent and judge) from the model flags.

    Args:
        req: the request (``--cache``, ``--cache-path``, ``--max-usd``, ``--max-requests``).
        defaults: values of the same names from ``-p`` parameters (used when a flag is absent).
    Returns: ``cache`` (mode, default ``read-write``), ``cache_path`` (default ``RUN_DIR/responses.sqlite``,
        absent with ``off``), ``max_usd`` / ``max_requests`` when capped, and ``budget_ledger``
        (default ``RUN_DIR/budget.sqlite``) when any cap is set.
    Raises:
        AgentSpecError: a bad cache mode or cap, or ``read-only`` without a cache file.
    """
    d = dict(defaults or {})
    out = Path(req.out).expanduser().absolute()
    rt: dict[str, Any] = {}
    mode = req.cache or d.get("cache") or "read-write"
    if mode not in CACHE_MODES:
        raise AgentSpecError(f"--cache {mode!r}: expected one of {', '.join(CACHE_MODES)}")
    rt["cache"] = mode
    if mode != "off":
        path = Path(req.cache_path or d.get("cache_path") or out / CACHE_FILE).expanduser().absolute()
        if mode == "read-only" and not path.is_file():
            raise AgentSpecError(f"--cache read-only: no response cache at {path} (give --cache-path FILE)")
        check_cache_path(path, mode)
        rt["cache_path"] = str(path)
    max_usd = req.max_usd if req.max_usd is not None else d.get("max_usd")
    max_requests = req.max_requests if req.max_requests is not None else d.get("max_requests")
    if max_usd is not None:  # the flag or -p max_usd=...: checked alike, before RUN_DIR exists
        try:
            max_usd = float(max_usd)
        except (TypeError, ValueError):
            raise AgentSpecError(f"--max-usd {max_usd!r}: expected a number") from None
        if not (max_usd > 0 and math.isfinite(max_usd)):
            raise AgentSpecError(f"--max-usd must be > 0 and finite (got {max_usd})")
        rt["max_usd"] = max_usd
    if max_requests is not None:
        try:
            whole = not isinstance(max_requests, bool) and float(max_requests).is_integer()
        except (TypeError, ValueError):
            whole = False
        if not whole:
            raise AgentSpecError(f"--max-requests {max_requests!r}: expected a whole number")
        max_requests = int(float(max_requests))
        if max_requests < 1:
            raise AgentSpecError(f"--max-requests must be >= 1 (got {max_requests})")
        rt["max_requests"] = max_requests
    if max_usd is not None or max_requests is not None:
        rt["budget_ledger"] = str(d.get("budget_ledger") or out / LEDGER_FILE)
    return rt


def control_mode(req: RunRequest, model_agent: bool):
    """The run's :class:`~urbanarena.agents.controls.ControlMode` from ``--blind`` / ``--no-map`` /
    ``--oracle-perception``.

    Raises:
        AgentSpecError: contradictory flags, a mode for an agent that calls no model, or a mode given
            both as flags and as the ``control`` agent parameter.
    """
    from urbanarena.agents.controls import FLAGS, ControlMode

    given = " ".join(flag for key, flag in FLAGS.items() if req.control.get(key)) or "the control mode"
    try:
        mode = ControlMode.from_value(req.control or None)
    except ValueError as e:
        raise AgentSpecError(f"{given}: {e}") from None
    if mode.is_normal:
        return mode
    if not model_agent:
        raise AgentSpecError(f"agent {req.agent!r} calls no model: {given} apply to VLM agents (vlm-arena, "
                             "vlm-cityseeker)")
    if "control" in req.agent_params:
        raise AgentSpecError(f"{given} and the agent parameter 'control' both set the control mode; give one")
    return mode


def model_params(req: RunRequest, model_agent: bool) -> dict[str, Any]:
    """The agent parameters of a request: ``-p`` values, then the model flags (module docstring).

    Raises:
        AgentSpecError: model flags for an agent that calls no model (and no ``--judge``), or a bad cache mode.
    """
    params = dict(req.agent_params)
    if model_agent:
        for k in RATE_PARAMS:  # rate limits are the runner's (rate_limits_of), not agent parameters
            params.pop(k, None)
    flags = {"--model": req.model, "--cache": req.cache, "--cache-path": req.cache_path, "--max-usd": req.max_usd,
             "--max-requests": req.max_requests, "--requests-per-min": req.requests_per_min,
             "--tokens-per-min": req.tokens_per_min}
    if not model_agent:
        given = [k for k, v in flags.items() if v is not None and not (req.judge is not None and k != "--model")]
        if given:
            raise AgentSpecError(f"agent {req.agent!r} calls no model API: {', '.join(given)} apply to VLM agents "
                                 "(vlm-arena, vlm-cityseeker)" + ("" if req.judge is None else " and the --judge"))
        return params
    if req.model is not None:
        params["model"] = req.model
    rt = model_runtime(req, params)
    params["cache"] = rt["cache"]
    if "cache_path" in rt:
        params["cache_path"] = rt["cache_path"]
    else:
        params.pop("cache_path", None)
    for k in ("max_usd", "max_requests", "budget_ledger"):
        if k in rt:
            params[k] = rt[k]
    return params


#: ``-p`` parameters that set the rate limits (as ``--requests-per-min`` / ``--tokens-per-min``)
RATE_PARAMS = ("requests_per_min", "tokens_per_min")


def rate_limits_of(req: RunRequest, provider: str, endpoint: str) -> dict[str, Any] | None:
    """The run's rate limits of the model agent's provider endpoint (flags win over ``-p`` parameters), as
    a :class:`~urbanarena.runner.backend_base.WorkerSpec` ``rate_limits`` record; ``None`` without limits.

    Raises:
        AgentSpecError: a limit that is not a positive number.
    """
    from urbanarena.agents.clients.rate_limit import RateLimits

    vals: dict[str, Any] = {}
    for k, flag in zip(RATE_PARAMS, (req.requests_per_min, req.tokens_per_min)):
        v = flag if flag is not None else req.agent_params.get(k)
        if v is None:
            continue
        try:
            vals[k] = float(v)
        except (TypeError, ValueError):
            raise AgentSpecError(f"--{k.replace('_', '-')} {v!r}: expected a number") from None
    if not vals:
        return None
    try:
        limits = RateLimits(**vals)
    except ValueError as e:
        raise AgentSpecError(f"--{str(e).split(' ')[0].replace('_', '-')}: {e}") from None
    return {"provider": provider, "endpoint": endpoint, **limits.as_dict()}


def task_catalog_hash(tasks: list, task_dir: Path | None) -> str:
    """sha256 (hex) of the tasks a run plans: the canonical JSON of ``[[task_id, task_hash], ...]`` (in run
    order) and ``{reference image name: sha256 of its bytes}`` of the arena tasks' reference images."""
    refs: dict[str, str] = {}
    for t in tasks:
        fam = get_family(t.family)
        if fam.action_style == "arena":
            for name, path in zip(fam.reference_image_names(t), fam.reference_image_paths(t, task_dir)):
                refs[name] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    blob = canonical_json({"tasks": [[t.task_id, task_hash(t)] for t in tasks], "reference_images": refs})
    return hashlib.sha256(blob.encode()).hexdigest()
