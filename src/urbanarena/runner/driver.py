"""The run driver: plan (city, tasks, agent, seeds) into jobs, run them on a
backend, and commit every result to the run store. The request and its derived settings are in
:mod:`.run_request`, the RUN_DIR lock in :mod:`.run_lock` (both re-exported here).

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

Model (VLM) agents: the request's ``model`` / ``cache`` / ``cache_path`` /
``max_usd`` / ``max_requests`` fill the agent's parameters of the same names
(:func:`model_params`): the response cache defaults to ``read-write`` in
``RUN_DIR/responses.sqlite`` and the caps share the ledger
``RUN_DIR/budget.sqlite`` (so they hold across worker threads/processes and
resumes). None of these settings changes a reply, so none enters the config
hash: a replay from another RUN_DIR's cache has the same config hash. A
run-level stop (budget cap reached, read-only cache miss) ends
:func:`execute` with :class:`~urbanarena.runner.episode.RunStopped`
(finished episodes committed, ``run.json`` status ``"stopped"``; rerun to
resume). Arena families (``cityarena``) run in the arena episode loop
(:mod:`urbanarena.runner.dispatch`).

Strategies and rounds (``strategy`` / ``rounds``, :mod:`urbanarena.agents.strategies`, graph tasks
only): the spec is parsed and checked against the agent before anything is written (a strategy
the agent cannot use is refused naming both); its canonical form, what each strategy uses and
whether any is privileged enter the config hash (``strategies``), as does ``rounds`` when not 1.
A job is still one (task, seed): with ``--rounds n`` it runs its n rounds in sequence in one
worker and returns one row (the last round; every round under ``details.per_round``) plus the
job memory rows, committed together — so resume, ``--workers`` and any backend stay exact: a job
killed mid-way is rerun whole, never half-stored. ``run.json`` records ``strategies``,
``rounds`` and ``privileged``.

Fuzzy-match judge (``judge`` / ``judge_params``, :mod:`urbanarena.runner.judge`):
checked before anything is written (spec, API key, price for ``--max-usd``,
never the model under test); its pinned settings enter the config hash of
every arena config of the run; it shares the response cache and the budget
ledger of the run (the model flags apply to it even when the agent calls no
model) and is recorded in ``run.json`` under ``judge``.
"""

from __future__ import annotations

import logging
import os
import shutil
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from urbanarena.env.observers import observation_source, require_renderer
from urbanarena.env.protocols import get_protocol, make_motion
from urbanarena.errors import ProtocolError, StoreError, TaskFormatError, UrbanArenaError
from urbanarena.render.camera_model import camera_version_entry, default_camera
from urbanarena.runner.arena import ArenaViewSettings
from urbanarena.runner.config import EpisodeConfig, stale_config_note
from urbanarena.runner.episode import ERROR_STOP, RunStopped, utc_now
from urbanarena.runner.judge import JudgeSettings, check_judge
from urbanarena.runner.logs import RunLog
from urbanarena.runner.metadata import start_record, write_run_json
from urbanarena.runner.pool import (
    BACKENDS,
    AgentSpecError,
    Job,
    WorkerSpec,
    agent_factory,
    backend_name,
    is_model_agent,
    make_backend,
)
from urbanarena.runner.store import STORE_FILE, Store
from urbanarena.runner.run_folder import check_run_folder
from urbanarena.tasks.families import get_family
from urbanarena.progress import Progress
from urbanarena.tasks.resolve import TaskSet, resolve_task_set, task_hash
from urbanarena.world.city import City
from urbanarena.world.imagery import has_imagery
from urbanarena.world.resolve import CitySource, resolve_city_source
# re-exported: the run request and its derived settings, and the RUN_DIR lock, were defined here
from urbanarena.runner.run_request import (  # noqa: F401
    CACHE_FILE, CACHE_MODES, LEDGER_FILE, MAX_ROUNDS, MAX_SEED, MAX_SEEDS, MAX_STEPS, RATE_PARAMS, RunRequest, control_mode,
    model_params, model_runtime, rate_limits_of, task_catalog_hash,
)
from urbanarena.runner.run_lock import (  # noqa: F401
    LOCK_FILE, _lock_run_dir, lock_run_dir,
)

log = logging.getLogger("urbanarena.runner")


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
    agent_params: dict[str, Any] = field(default_factory=dict)
    model_agent: bool = False
    prompt_hash: str | None = None
    task_catalog_hash: str = ""
    task_dir: Path | None = None
    runtime: dict[str, Any] = field(default_factory=dict)
    judge: Any = None  # JudgeSettings | None
    model_under_test: str | None = None
    probe_privileged: bool = False

    @property
    def backend(self) -> str:
        """The backend this run uses (:func:`~urbanarena.runner.pool.backend_name`)."""
        return backend_name(self.request.backend, self.request.workers, self.model_agent, self.request.concurrency)


@dataclass
class RunOutcome:
    """What :func:`execute` did."""

    run_dir: Path
    planned: int
    skipped: int
    run: int
    errors: int
    status: str
    stop: RunStopped | None = None
    #: stored episodes of the planned jobs that ended in an error (this time or before), and the first of them
    #: as ``(task_id, seed, last line of its error text)``
    errored: int = 0
    first_error: tuple[str, int, str] | None = None
    #: why the run failed (``status`` ``failed``), as recorded in ``run.json``
    failure: str | None = None


class Terminated(KeyboardInterrupt):
    """SIGTERM reached the driver (raised by the CLI's signal handler): the run stops as at Ctrl-C,
    with ``run.json`` status ``interrupted`` and ``signal`` ``SIGTERM``."""


class RunEvents:
    """Progress hooks (the CLI draws a progress bar with them)."""

    def on_start(self, total: int, skipped: int) -> None: ...

    def on_result(self, result: dict[str, Any]) -> None: ...


def check_request(req: RunRequest) -> None:
    """The checks of a request's own values (seeds, workers, limit, ``--max-steps`` up to
    :data:`~urbanarena.runner.run_request.MAX_STEPS`, rounds, ``--out``, backend, protocol, price table), before
    any city, task or agent is read: :func:`prepare` runs them first. Raises: UrbanArenaError."""
    if req.seeds < 1:
        raise UrbanArenaError(f"--seeds must be >= 1 (got {req.seeds})")
    if req.seeds > MAX_SEEDS:
        raise UrbanArenaError(f"--seeds must be <= {MAX_SEEDS} (got {req.seeds})")
    if req.seed_base < 0:
        raise UrbanArenaError(f"--seed-base must be >= 0 (got {req.seed_base})")
    if req.seed_base + req.seeds - 1 > MAX_SEED:
        raise UrbanArenaError(f"--seed-base {req.seed_base} with --seeds {req.seeds}: the last seed must be <= {MAX_SEED} "
                              "(2**63 - 1, the largest integer the run store holds)")
    if req.workers < 1:
        raise UrbanArenaError(f"--workers must be >= 1 (got {req.workers})")
    if req.concurrency < 1:
        raise UrbanArenaError(f"--concurrency must be >= 1 (got {req.concurrency})")
    if req.backend == "in-process" and req.workers * req.concurrency > 1:
        raise UrbanArenaError(f"--backend in-process runs one episode at a time; --workers {req.workers} x "
                              f"--concurrency {req.concurrency} asks for {req.workers * req.concurrency}")
    if req.ray_address is not None and req.backend != "ray":
        raise UrbanArenaError("--ray-address needs --backend ray")
    if req.limit is not None and req.limit < 1:
        raise UrbanArenaError(f"--limit must be >= 1 (got {req.limit})")
    if req.max_steps is not None and not 0 <= req.max_steps <= MAX_STEPS:
        raise UrbanArenaError(f"--max-steps must be between 0 and {MAX_STEPS} (got {req.max_steps})")
    if not 1 <= req.rounds <= MAX_ROUNDS:
        raise UrbanArenaError(f"--rounds must be between 1 and {MAX_ROUNDS} (got {req.rounds})")
    out = Path(req.out)
    if out.exists() and not out.is_dir():
        raise UrbanArenaError(f"--out {out} exists and is not a directory")
    check_run_folder(out)
    if req.backend not in BACKENDS:
        raise UrbanArenaError(f"--backend {req.backend!r}: choose one of {', '.join(BACKENDS)}")
    if req.protocol is not None:
        get_protocol(req.protocol)
    if req.prices is not None:
        from urbanarena.agents.clients import PriceTable
        from urbanarena.agents.clients.cost import PRICES_ENV

        prices = Path(req.prices).expanduser().absolute()
        PriceTable(prices)  # raises ModelClientError for an unreadable table
        os.environ[PRICES_ENV] = str(prices)  # the agents' clients read it


def usable_request(req: RunRequest, city: City, fetch: bool = True, progress: Progress | None = None) -> RunRequest:
    """``req`` with ``arena_view.render_style`` set to the style this machine draws: ``photo`` (named or the
    default, :data:`~urbanarena.render.scene3d.render_settings.DEFAULT_RENDER_STYLE`) stays ``photo`` when its pinned
    assets are installed, after fetching them with ``fetch`` on a rendered city (no imagery of its own), else it
    becomes ``realistic`` after one line on stderr (:func:`~urbanarena.render.scene3d.styles.usable_style`; issue 24:
    never a half-textured city). Other styles, and cities of real photographs, are left as they are."""
    from urbanarena.render.scene3d.styles import DEFAULT_RENDER_STYLE, usable_style

    view = dict(req.arena_view or {})
    if (view.get("render_style") or DEFAULT_RENDER_STYLE) != "photo" or city.meta.imagery is not None:
        return req
    got = usable_style(view.get("render_style"), fetch=fetch, progress=progress)
    if got == view.get("render_style"):
        return req
    return dataclasses.replace(req, arena_view={**view, "render_style": got})


def prepare(req: RunRequest, check_keys: bool = True, progress: Progress | None = None,
            fetch_assets: bool = True) -> PreparedRun:
    """Resolve and validate a run request (no side effect on ``RUN_DIR``).

    Args:
        req: the request.
        check_keys: check that a model agent's API key variable is set (off for ``--dry-run``).
        progress: hears a frozen suite's first drawing and the photo assets' download (:mod:`urbanarena.progress`).
        fetch_assets: on a rendered city, fetch the ``photo`` style's pinned assets when missing (off for
            ``--dry-run``); the prepared request then names the style really drawn (:func:`usable_request`).
    Raises:
        UnknownCityError, CityFormatError: bad CITY.
        TaskFormatError, UrbanArenaError: bad TASKS (arena tasks: kind, answer, goal, reference images).
        ProtocolError: unknown protocol, or one a family cannot run.
        AgentSpecError: unknown agent, bad agent parameters (outside the agent's schema,
            :mod:`urbanarena.agents.params`), model flags for a non-model
            agent, an agent that cannot act in a family's env.
        MissingAPIKeyError: the model's key variable is unset.
        UrbanArenaError: bad seeds/workers/limit/max-steps/backend, ``--out`` is a file,
            a graph-only city for a VLM agent on arena tasks, ``--judge`` for a run without arena tasks.
        JudgeConflictError: the ``--judge`` model is the model under test.
        ModelSpecError: a bad ``--judge`` spec.
        AgentSpecError: a bad ``--strategy`` spec or a strategy the agent cannot use; UrbanArenaError:
            ``--rounds`` out of range, ``--strategy``/``--rounds`` on arena tasks.
    """
    check_request(req)
    strategies = _parse_strategies(req.strategy)
    model_agent = is_model_agent(req.agent)
    control = control_mode(req, model_agent)
    params = model_params(req, model_agent)
    if not control.is_normal:
        params["control"] = control.fields()
    _check_params(req.agent, params)
    factory = agent_factory(req.agent, params)
    probe = factory()
    agent_config = probe.config()
    prompt_hash = getattr(probe, "prompt_hash", None)
    if model_agent and params.get("max_usd") is not None:
        from urbanarena.agents.clients import PriceTable

        spec = probe.model_spec
        entry = PriceTable().lookup(spec.provider, spec.model)
        if not entry.priced:
            raise AgentSpecError(f"--max-usd: {spec.provider}:{spec.model} has no price in the price table "
                                 f"(matched entry {entry.matched!r}); add one with --prices FILE")
    if check_keys and model_agent:
        from urbanarena.agents.clients.spec import resolve_api_key

        resolve_api_key(probe.model_spec, getattr(probe, "api_key_env", None))  # MissingAPIKeyError before RUN_DIR
    model_under_test = f"{probe.model_spec.provider}:{probe.model_spec.model}" if model_agent else req.agent
    judge = _prepare_judge(req, params if model_agent else {}, model_under_test, check_keys)
    city, source = resolve_city_source(req.city)
    req = usable_request(req, city, fetch_assets, progress)
    arena_view = ArenaViewSettings(**(req.arena_view or {}))
    task_set = resolve_task_set(req.tasks, city, source.directory, render_style=arena_view.render_style,
                                progress=progress)
    tasks = task_set.tasks[: req.limit] if req.limit else list(task_set.tasks)
    from urbanarena.agents.registry import resolve_alias

    alias = resolve_alias(req.agent, {get_family(t.family).action_style for t in tasks})
    if alias != req.agent:  # e.g. --agent oracle on arena tasks runs arena-oracle
        req = dataclasses.replace(req, agent=alias)
        _check_params(alias, params)
        factory = agent_factory(alias, params)
        probe = factory()
        agent_config = probe.config()
    if strategies:
        from urbanarena.agents.strategies import StrategyError, check_applicable

        try:
            check_applicable(probe, strategies, req.agent)  # e.g. B1 needs a confidence: refuse random
        except StrategyError as e:
            raise AgentSpecError(str(e)) from None
    from urbanarena.agents.strategies import strategies_config

    strategy_cfg = strategies_config(strategies)
    seeds = list(range(req.seed_base, req.seed_base + req.seeds))
    task_file = task_set.source_files[0] if task_set.source_files else None
    task_dir = Path(task_file).absolute().parent if task_file is not None else None

    configs: dict[str, EpisodeConfig] = {}
    family_config: dict[str, str] = {}
    for fam_name in dict.fromkeys(t.family for t in tasks):
        fam = get_family(fam_name)
        protocol_id = req.protocol or fam.default_protocol
        arena = fam.action_style == "arena"
        if arena:
            fam.check_protocol(protocol_id)
            if strategies or req.rounds != 1:
                raise UrbanArenaError(f"--strategy and --rounds apply to graph tasks; {fam_name!r} tasks run in the "
                                      "arena")
        elif fam.action_style == "continuous":  # urbanground: runner/continuous_episode.py
            _check_continuous(req, probe, fam, protocol_id, city, bool(strategies))
        else:
            make_motion(protocol_id, city, fam.action_style)  # raises ProtocolError if the family cannot run it
            if getattr(probe, "action_style", None) == "continuous":
                raise AgentSpecError(f"agent {req.agent!r} acts in continuous mode; {fam_name!r} tasks are graph tasks "
                                     "(use random, forward, straight, oracle, vlm-cityseeker or a graph agent)")
        _check_agent_fits(req.agent, probe, fam_name, arena, protocol_id)
        if control.oracle_perception:
            from urbanarena.env.perception import perception_index

            perception_index(city)  # NoAnnotationsError before RUN_DIR
        if model_agent and control.shows_view and not (has_imagery(city) or observation_source(city) == "rendered"):
            raise UrbanArenaError(
                f"city {city.name!r} is graph-only (no imagery): the VLM agent {req.agent!r} on {fam_name!r} tasks "
                "needs panorama images (attach them, see docs/city-format.md)")
        renders_own_views = bool(model_agent and control.shows_view and not has_imagery(city))
        if renders_own_views:
            require_renderer(city)  # its views are rendered: RendererUnavailableError (with the reason) before RUN_DIR
        cfg = EpisodeConfig(
            protocol_id=protocol_id,
            max_steps=int(req.max_steps if req.max_steps is not None else fam.default_max_steps),
            agent_name=req.agent,
            agent_config=agent_config,
            family=fam.name,
            family_version=getattr(fam, "version", None),
            city_hash=city.content_hash,
            extra=({"arena_view": arena_view.as_dict(), **({"judge": judge.config()} if judge is not None else {})}
                   if arena else ({"render_style": arena_view.render_style,
                                   **camera_version_entry(default_camera(arena_view.render_style))}
                                  if (fam.action_style == "continuous" or renders_own_views)
                                  and arena_view.render_style != "flat" else {})),
            control=None if control.is_normal else control.as_dict(),
            strategies=None if arena else strategy_cfg,
            rounds=1 if arena else int(req.rounds),
        )
        configs[cfg.hash] = cfg
        family_config[fam_name] = cfg.hash
    if judge is not None and not any(get_family(f).action_style == "arena" for f in family_config):
        raise UrbanArenaError(f"--judge scores the fuzzy_match answers of arena tasks (cityarena); the tasks of this "
                              f"run are {', '.join(family_config)} tasks")
    for i, t in enumerate(tasks):
        fam = get_family(t.family)
        if fam.action_style in ("arena", "continuous"):
            try:
                fam.check_task(t, task_dir, *((city,) if fam.action_style == "continuous" else ()))
            except ValueError as e:
                raise TaskFormatError(task_file, f"task {i} ({t.task_id})", str(e)) from e

    jobs = []
    task_json = {t.task_id: t.model_dump(mode="json") for t in tasks}
    for seed in seeds:
        for t in tasks:
            h = family_config[t.family]
            cfg = configs[h]
            jobs.append(Job(task_json[t.task_id], seed, cfg.protocol_id, cfg.max_steps, h))
    runtime: dict[str, Any] = {}
    if model_agent:
        runtime = {
            "model": str(probe.model_spec),
            "cache": {"mode": params.get("cache"), "path": params.get("cache_path")},
            "budget": {"max_usd": params.get("max_usd"), "max_requests": params.get("max_requests"),
                       "ledger": params.get("budget_ledger")},
            "timeout_s": getattr(probe, "timeout_s", None),
            "rate_limits": rate_limits_of(req, probe.model_spec.provider, probe.model_spec.endpoint),
        }
    return PreparedRun(
        request=req, city=city, city_source=source, task_set=task_set, tasks=tasks, seeds=seeds,
        configs=configs, family_config=family_config, jobs=jobs,
        task_hashes={t.task_id: task_hash(t) for t in tasks}, agent_config=agent_config,
        agent_params=params, model_agent=model_agent, prompt_hash=prompt_hash,
        task_catalog_hash=task_catalog_hash(tasks, task_dir), task_dir=task_dir, runtime=runtime,
        judge=judge, model_under_test=model_under_test, probe_privileged=bool(getattr(probe, "privileged", False)),
    )


def _check_params(agent: str, params: dict[str, Any]) -> None:
    """``-p`` values against the agent's schema (:mod:`urbanarena.agents.params`), before RUN_DIR exists.

    Raises:
        AgentSpecError: naming the agent, the key, the value and its range.
    """
    from urbanarena.agents.params import AgentParamError, validate_agent_params

    try:
        validate_agent_params(agent, params)
    except AgentParamError as e:
        raise AgentSpecError(str(e)) from None


def _parse_strategies(spec: str | None) -> list:
    """The strategies of ``--strategy`` (``[]`` without). Raises :class:`AgentSpecError` for a bad spec."""
    if spec is None:
        return []
    from urbanarena.agents.strategies import StrategyError, parse_strategies

    try:
        return parse_strategies(spec)
    except StrategyError as e:
        raise AgentSpecError(str(e)) from None


def _prepare_judge(req: RunRequest, agent_params: dict[str, Any], model_under_test: str,
                   check_keys: bool) -> JudgeSettings | None:
    """The run's :class:`JudgeSettings` from ``--judge`` (``None`` without), checked (see :func:`prepare`).

    The judge shares the agent's cache and budget settings (``agent_params`` of a model agent, else the
    model flags alone), the agent's timeout and retry policy.
    """
    if req.judge is None:
        if req.judge_params:
            raise AgentSpecError("--judge-param needs --judge")
        return None
    from pydantic import ValidationError

    from urbanarena.agents.clients import PriceTable
    from urbanarena.agents.clients.spec import resolve_api_key

    rt = model_runtime(req, agent_params)
    settings = JudgeSettings(
        spec=req.judge, generation=dict(req.judge_params), cache_mode=rt["cache"], cache_path=rt.get("cache_path"),
        max_usd=rt.get("max_usd"), max_requests=rt.get("max_requests"), budget_ledger=rt.get("budget_ledger"),
        timeout_s=float(agent_params.get("timeout_s", 120.0)),
        retry=dict(agent_params["retry"]) if isinstance(agent_params.get("retry"), dict) else None,
    )
    spec = settings.model_spec  # ModelSpecError for a bad spec
    try:
        settings.generation_settings()
        from urbanarena.agents.params import GenerationParams

        GenerationParams(**settings.generation)  # finite numbers, bounded tokens, 64-bit seed (agents/params.py)
    except ValidationError as e:
        err = e.errors()[0]
        raise AgentSpecError(f"--judge-param {'.'.join(map(str, err.get('loc') or ()))}: {err.get('msg')}") from None
    except TypeError as e:
        raise AgentSpecError(f"--judge-param: {e}") from None
    check_judge(settings, model_under_test)
    if settings.max_usd is not None:
        entry = PriceTable().lookup(spec.provider, spec.model)
        if not entry.priced:
            raise AgentSpecError(f"--max-usd: the judge {spec.provider}:{spec.model} has no price in the price table "
                                 f"(matched entry {entry.matched!r}); add one with --prices FILE")
    if check_keys:
        resolve_api_key(spec)  # MissingAPIKeyError before RUN_DIR
    return settings


def _check_continuous(req: RunRequest, probe: Any, fam: Any, protocol_id: str, city: City, strategies: bool) -> None:
    """Refuse what a continuous family (``urbanground``) cannot run, before anything is written.

    Raises: ProtocolError (another protocol), UrbanArenaError (``--strategy``/``--rounds``, a city without
        annotations), AgentSpecError (an agent that does not act in the continuous env).
    """
    fam.check_protocol(protocol_id)
    if strategies or req.rounds != 1:
        raise UrbanArenaError(f"--strategy and --rounds apply to graph tasks; {fam.name!r} tasks run in continuous mode")
    if getattr(city, "annotations", None) is None:
        raise UrbanArenaError(f"{fam.name!r} tasks need an OSM city with annotations; {city.name!r} has none")
    if getattr(probe, "action_style", None) != "continuous" and ":" not in req.agent:
        raise AgentSpecError(f"agent {req.agent!r} does not act in continuous mode; {fam.name!r} tasks need "
                             "ug-oracle, ug-random, vlm-urbanground or a module:Callable agent returning UrbanGround action JSON")


def _check_agent_fits(agent_name: str, probe: Any, family: str, arena: bool, protocol_id: str) -> None:
    """Refuse agents that cannot act in a family's env (before anything runs).

    Raises: :class:`AgentSpecError`.
    """
    from urbanarena.agents.vlm import ArenaReActAgent

    acts_in_arena = isinstance(probe, ArenaReActAgent) or getattr(probe, "action_style", None) == "arena"
    if arena and not acts_in_arena and ":" not in agent_name:
        raise AgentSpecError(f"agent {agent_name!r} acts on graph choices; {family!r} tasks run in the arena "
                             "(use oracle / arena-oracle (privileged), random / arena-random, ocr, vlm-arena, or a "
                             "module:Callable agent returning ArenaAction)")
    if not arena and acts_in_arena:
        raise AgentSpecError(f"agent {agent_name!r} acts in the arena; {family!r} tasks are graph tasks "
                             "(use vlm-cityseeker or a graph agent)")
    per_step = getattr(probe, "max_requests_per_step", None)
    if callable(per_step):
        try:
            per_step(protocol_id)
        except ProtocolError as e:
            raise AgentSpecError(f"agent {agent_name!r} on {family!r} tasks: {e}") from e


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
            "suite_check": p.task_set.suite_check,
        },
        "agent": {"name": r.agent, "params": p.agent_params, "config": p.agent_config},
        "seeds": p.seeds,
        "protocols": {fam: p.configs[h].protocol_id for fam, h in p.family_config.items()},
        "max_steps": {fam: p.configs[h].max_steps for fam, h in p.family_config.items()},
        "configs": {h: c.as_dict() for h, c in p.configs.items()},
        "planned_by_config": {h: sum(j.config_hash == h for j in p.jobs) for h in p.configs},
        "strategies": next((c.strategies for c in p.configs.values() if c.strategies), None),
        "rounds": r.rounds,
        "privileged": bool(p.probe_privileged or any(c.privileged_strategies for c in p.configs.values())),
        "workers": r.workers,
        "concurrency": r.concurrency,
        "backend": p.backend,
        "prompt_hash": p.prompt_hash,
        "task_catalog_hash": p.task_catalog_hash,
        "model_runtime": p.runtime or None,
        "judge": None if p.judge is None else {
            "model": p.judge.model_id, "spec": p.judge.spec, "config": p.judge.config(), "runtime": p.judge.runtime(),
            "model_under_test": p.model_under_test,
        },
        "trace": bool(r.trace),
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
        RunStopped: a budget cap was reached or a read-only cache missed
            (finished episodes committed, ``run.json`` status ``"stopped"``
            with ``stop``; its ``outcome`` attribute is the :class:`RunOutcome`).
        KeyboardInterrupt: propagated after the store and ``run.json`` are
            closed/updated.
    """
    events = events or RunEvents()
    run_dir = Path(p.request.out)
    created = not run_dir.exists()
    run_dir.mkdir(parents=True, exist_ok=True)
    store = None
    lock = None
    runlog = None
    record: dict[str, Any] | None = None
    outcome = RunOutcome(run_dir, len(p.jobs), 0, 0, 0, "failed")
    try:
        lock = _lock_run_dir(run_dir)
        runlog = RunLog(run_dir).__enter__()
        store = Store(run_dir / STORE_FILE)
        now = utc_now()
        for h, cfg in p.configs.items():
            store.add_config(h, cfg.as_dict(), now)
        for c in store.configs():  # episodes of an older engine keep their own hash, never resumed into
            note = stale_config_note(c.get("config") or {})
            if note and c["config_hash"] not in p.configs:
                log.warning("%s: %d stored episodes of config %s are not resumed: %s", run_dir, c["episodes"],
                            c["config_hash"][:12], note)
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
        log.info("run started: %d episodes planned, %d stored already, %d to run (backend %s, %d workers x %d "
                 "concurrency): %s", len(p.jobs), outcome.skipped, len(pending), p.backend, p.request.workers,
                 p.request.concurrency, p.request.command_line())
        events.on_start(len(pending), outcome.skipped)
        spec = WorkerSpec(str(p.city_source.directory), p.city.content_hash, agent, p.agent_params,
                          task_dir=str(p.task_dir) if p.task_dir is not None else None,
                          run_dir=str(run_dir.absolute()), trace=bool(p.request.trace),
                          arena_view=dict(p.request.arena_view or {}),
                          judge=p.judge.as_dict() if p.judge is not None else None,
                          model_under_test=p.model_under_test, strategies=p.request.strategy or None,
                          rounds=int(p.request.rounds), rate_limits=(p.runtime or {}).get("rate_limits"))
        with make_backend(spec, p.request.workers, p.city, kind=p.request.backend, api_bound=p.model_agent,
                          concurrency=p.request.concurrency, ray_address=p.request.ray_address) as backend:
            for result in backend.run(pending):
                key = (result["task_id"], result["seed"], result["agent"], result["config_hash"])
                store.add(result, replace=key in replace)
                outcome.run += 1
                outcome.errors += result.get("stop_reason") == ERROR_STOP
                log.info("stored %s seed %s: %s in %d steps", result["task_id"], result["seed"],
                         result.get("stop_reason"), int(result.get("steps") or 0))
                if result.get("stop_reason") == ERROR_STOP and result.get("error"):
                    # the agent error's last line (exception type and message; keys never appear in it)
                    log.warning("agent error in %s seed %s: %s", result["task_id"], result["seed"],
                                _last_line(result["error"]))
                events.on_result(result)
        planned_keys = {(j.task_id, j.seed, j.config_hash) for j in p.jobs}
        errored = [e for e in store.errored(agent, p.configs) if (e[0], e[1], e[2]) in planned_keys]
        outcome.errored = len(errored)
        if errored:
            task_id, seed, _, text = errored[0]
            outcome.first_error = (task_id, int(seed), _last_line(text))
        outcome.status = "finished"
        log.info("run finished: %d episodes run, %d skipped, %d agent errors (%d of the %d planned episodes "
                 "stored with an error)", outcome.run, outcome.skipped, outcome.errors, outcome.errored, outcome.planned)
        return outcome
    except RunStopped as e:
        outcome.status = "stopped"
        outcome.stop = e
        e.outcome = outcome  # type: ignore[attr-defined]
        log.warning("run stopped (%s): %s; %d episodes stored this time, rerun to resume", e.reason, e.detail,
                    outcome.run)
        raise
    except KeyboardInterrupt as e:
        outcome.status = "interrupted"
        if record is not None:
            record["signal"] = "SIGTERM" if isinstance(e, Terminated) else "SIGINT"
        log.warning("run interrupted: %d episodes stored this time, rerun to resume", outcome.run)
        raise
    except BaseException as e:
        outcome.failure = f"{type(e).__name__}: {_last_line(str(e))}"
        log.error("run failed: %s; %d episodes stored this time", outcome.failure, outcome.run)
        raise
    finally:
        if runlog is not None:
            runlog.__exit__(None, None, None)
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
            if outcome.failure is not None:
                record["error"] = outcome.failure
            if outcome.errored:
                record["episodes"]["errored"] = outcome.errored
            if outcome.stop is not None:
                record["stop"] = {"reason": outcome.stop.reason, "message": outcome.stop.detail,
                                  "task_id": outcome.stop.task_id, "seed": outcome.stop.seed}
            write_run_json(run_dir, record)
        if lock is not None:
            lock.close()


def _last_line(text: Any, limit: int = 500) -> str:
    """The last non-blank line of an error text (a traceback's exception line), at most ``limit`` characters."""
    last = [ln for ln in str(text or "").strip().splitlines() if ln.strip()][-1:]
    return last[0].strip()[:limit] if last else "?"
