"""``urbanarena`` command line.

Argument grammar shared by every command:

* CITY — ``KIND:PATH`` for an importer (``cityseeker:DIR``, ``touchdown:DIR``),
  a path to a saved city directory, or the name of a city in the cache;
* TASKS — ``KIND:PATH`` for a foreign task format (``cityseeker:FILE``,
  ``map2seq:FILE``), a path to a task file in our schema, or ``default``;
* ``--seeds N`` runs seeds ``0 .. N-1`` (``--seed-base S`` shifts them).

Errors caused by input (bad files, unknown names, unwritable paths) print one
line ``error: <message>`` on stderr and exit with status 2, without a
traceback. Ctrl-C during ``run`` exits with status 130 after closing the
store; rerunning the same command resumes.

Exit status of ``run``: 0 finished, every episode without error; 2 bad input
(nothing written); 3 stopped at a budget cap (``--max-usd`` / ``--max-requests``);
4 stopped at a miss of a read-only response cache (``--cache read-only``); 5
finished, but some episodes ended in an agent or environment error (stdout says
how many, the first error and the ``--retry-errors`` command); 6 I/O failure
(disk full ...; ``run.json`` says ``failed``); 130 interrupted (Ctrl-C); 143
terminated (SIGTERM; ``run.json`` says ``interrupted``). After 3, 4, 5, 6, 130
and 143 the finished episodes are stored and rerunning the command (with a
higher cap, another cache mode, ``--retry-errors``) resumes. The table of every
command's statuses is in docs/runs.md.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from urbanarena.safe_paths import out_option
from urbanarena.cli.common import (
    accept_redrawn_option, apply_accept_redrawn, camera_option, checked_camera, checked_population, checked_style, fail,
    population_option, render_style_option,
)
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from urbanarena.errors import UrbanArenaError

app = typer.Typer(
    name="urbanarena",
    help="Evaluate embodied agents on city street-view graphs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
city_app = typer.Typer(help="Inspect and cache cities.", no_args_is_help=True)
app.add_typer(city_app, name="city")

out_console = Console()
err_console = Console(stderr=True)

from urbanarena.cli.common import (  # noqa: E402  (exit statuses: docs/runs.md)
    MAX_PARAM_JSON_DEPTH, json_depth, EXIT_BUDGET, EXIT_CACHE_MISS, EXIT_EPISODE_ERRORS, EXIT_INTERRUPTED, EXIT_TERMINATED,
)


_fail = fail  # bad input: ``error: ...`` on stderr, exit 2 (cli/common.py)


def _parse_params(items: list[str] | None) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UrbanArenaError(f"--param {item!r}: expected KEY=VALUE")
        depth = json_depth(value)
        if depth > MAX_PARAM_JSON_DEPTH:
            raise UrbanArenaError(f"--param {key}: the JSON value nests {depth} levels deep (at most "
                                  f"{MAX_PARAM_JSON_DEPTH})")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    return params


def _fmt(v: Any, key: str = "") -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


# -------------------------------------------------------------------- run
class _ProgressEvents:
    def __init__(self, progress: Progress):
        self.progress = progress
        self.task = None
        self.errors = 0
        self.started = False

    def on_start(self, total: int, skipped: int) -> None:
        self.progress.start()  # only now: errors before this point print no progress residue
        self.started = True
        if skipped:
            typer.echo(f"resuming: {skipped} finished episodes skipped", err=True)
        self.task = self.progress.add_task("episodes", total=total, errors=0)

    def on_result(self, result: dict[str, Any]) -> None:
        self.errors += result.get("stop_reason") == "error"
        self.progress.update(self.task, advance=1, errors=self.errors)


@app.command()
def run(
    city: str = typer.Option(..., "--city", help="CITY: KIND:PATH, saved city directory, or cached city name."),
    tasks: str = typer.Option(..., "--tasks", help="TASKS: KIND:PATH (cityseeker:FILE, map2seq:FILE), a task file, "
                                                   "'default' (the city's default suite), or a frozen suite of the "
                                                   "city: mini, standard, full."),
    agent: str = typer.Option(..., "--agent", help="Agent name (random, forward, straight, oracle, ocr, arena-oracle, arena-random, ug-oracle, ug-random, vlm-arena, vlm-cityseeker, vlm-urbanground) or module:Callable; oracle/random on arena or urbanground tasks mean arena-/ug-oracle and -random."),
    out: Path = typer.Option(..., "--out", parser=out_option, help="RUN_DIR (created; rerun the same command to resume)."),
    seeds: int = typer.Option(1, "--seeds", help="Number of seeds: seeds seed-base .. seed-base+N-1."),
    seed_base: int = typer.Option(0, "--seed-base", help="First seed."),
    workers: int = typer.Option(
        1, "--workers", help="Worker processes (threads for VLM agents under --backend auto or threads; 1 = run in "
                             "this process). The run keeps workers x concurrency episodes in flight."),
    concurrency: int = typer.Option(
        1, "--concurrency",
        help="Episodes in flight per worker (threads): for API-bound VLM agents, e.g. --concurrency 64 keeps 64 model "
             "calls in flight in one process; with --backend processes each of the --workers processes runs this many."),
    protocol: Optional[str] = typer.Option(None, "--protocol", help="Protocol id (default: each task family's)."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", help="Step limit per episode, 0 to 10000 (default: each task family's, 35 to 100)."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Run only the first N tasks."),
    param: Optional[list[str]] = typer.Option(None, "--param", "-p", help="Agent parameter KEY=VALUE (JSON value), repeatable; checked against the agent's schema before RUN_DIR is created (urbanarena agents NAME prints it)."),
    retry_errors: bool = typer.Option(False, "--retry-errors", help="Rerun stored episodes whose agent raised."),
    model: Optional[str] = typer.Option(
        None, "--model", help="VLM agents: model spec (openai:gpt-4o, anthropic:MODEL, openai-compatible:URL:MODEL)."),
    cache: Optional[str] = typer.Option(
        None, "--cache", help="VLM agents: response cache read-write (default), read-only (replay, no API call) or off."),
    cache_path: Optional[Path] = typer.Option(
        None, "--cache-path", help="VLM agents: response-cache file (default RUN_DIR/responses.sqlite)."),
    max_usd: Optional[float] = typer.Option(
        None, "--max-usd", help="VLM agents: stop cleanly before spending more than this (USD, shared ledger RUN_DIR/budget.sqlite)."),
    max_requests: Optional[int] = typer.Option(
        None, "--max-requests", help="VLM agents: stop cleanly before more than this many API requests (shared ledger)."),
    prices: Optional[Path] = typer.Option(None, "--prices", help="Price-table override JSON (see docs/model-clients.md)."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the requests, images, tokens and cost the run would take at most; run nothing, write nothing. "
             "A module.path:Callable agent is imported (its module's top-level code runs) but not called."),
    trace: bool = typer.Option(False, "--trace", help="Write per-step debug traces (JSONL + images) under RUN_DIR/traces/."),
    backend: str = typer.Option(
        "auto", "--backend",
        help="auto (threads for VLM agents, processes otherwise, in-process for one episode in flight), in-process, "
             "threads, processes, ray (Ray tasks; pip install 'urbanarena\\[ray]')."),
    ray_address: Optional[str] = typer.Option(
        None, "--ray-address",
        help="--backend ray: cluster address for ray.init (auto, HOST:PORT, ray://HOST:10001); default: a local "
             "cluster bound to 127.0.0.1."),
    requests_per_min: Optional[float] = typer.Option(
        None, "--requests-per-min",
        help="VLM agents: rate limit of the model's provider endpoint, HTTP requests per minute (retries count), "
             "shared by all episodes in flight."),
    tokens_per_min: Optional[float] = typer.Option(
        None, "--tokens-per-min",
        help="VLM agents: rate limit, input + output tokens per minute (reserved up front as estimated input + "
             "max output tokens, corrected by the reported usage)."),
    judge: Optional[str] = typer.Option(
        None, "--judge",
        help="LLM judge of fuzzy_match answers (model spec; never the model under test). Shares the response cache "
             "and the --max-usd/--max-requests caps; without it fuzzy answers get only the offline string match."),
    judge_param: Optional[list[str]] = typer.Option(
        None, "--judge-param",
        help="Judge generation setting KEY=VALUE (temperature, max_output_tokens, reasoning_effort, seed ...; "
             "defaults temperature 0, 1024 output tokens), repeatable."),
    blind: bool = typer.Option(
        False, "--blind", help="VLM agents: control mode, the same prompts with every image withheld (the text says "
                               "no image is available)."),
    no_map: bool = typer.Option(False, "--no-map", help="VLM agents: control mode, no map images."),
    oracle_perception: bool = typer.Option(
        False, "--oracle-perception",
        help="VLM agents: control mode, the POIs and objects in view given as text (name, category, bearing, "
             "distance) instead of pixels; no images. Needs a city with annotations (OSM)."),
    strategy: Optional[str] = typer.Option(
        None, "--strategy",
        help="Graph tasks: compose navigation strategies, e.g. B1,R3 or B1(theta=0.7),R2(radius_m=30): B1 "
             "confidence / B2 step-reward (privileged) / B3 hinted (privileged) backtracking, C1 topology / C2 "
             "relative-position map, R1 topology / R2 spatial retrieval over earlier rounds, R3 recent steps, "
             "M1 route map: CitySeeker's map ablation (privileged) (docs/strategies.md)."),
    rounds: int = typer.Option(
        1, "--rounds", help="Graph tasks: run each (task, seed) job N times in sequence with a memory scoped to the "
                            "job (R1/R2 retrieve from earlier rounds); the row is the last round."),
    render_style: str = render_style_option(),
    population: Optional[str] = population_option(),
    camera: Optional[str] = camera_option(),
    accept_redrawn_images: bool = accept_redrawn_option(),
) -> None:
    """Run AGENT on every (task, seed) and store each finished episode in RUN_DIR.

    With a VLM agent, --workers N or --concurrency N runs N episodes at once (threads). Exit status: 0 finished, 2 bad input,
    3 budget cap reached, 4 read-only cache miss, 5 some episodes ended in an error (rerun with --retry-errors),
    6 I/O failure (disk full), 130 interrupted, 143 terminated (SIGTERM); rerun the same command to resume
    (docs/runs.md).
    """
    apply_accept_redrawn(accept_redrawn_images)
    from urbanarena.runner.driver import RunRequest, execute, prepare
    from urbanarena.runner.episode import RunStopped

    try:
        req = RunRequest(
            city=city, tasks=tasks, agent=agent, out=out, seeds=seeds, seed_base=seed_base,
            agent_params=_parse_params(param), workers=workers, protocol=protocol, max_steps=max_steps,
            limit=limit, retry_errors=retry_errors, command=list(sys.argv), model=model, cache=cache,
            cache_path=cache_path, max_usd=max_usd, max_requests=max_requests, prices=prices, trace=trace,
            backend=backend, judge=judge, judge_params=_parse_params(judge_param),
            control={k: True for k, on in (("blind", blind), ("no_map", no_map),
                                            ("oracle_perception", oracle_perception)) if on},
            strategy=strategy, rounds=rounds, concurrency=concurrency, ray_address=ray_address,
            requests_per_min=requests_per_min, tokens_per_min=tokens_per_min,
            arena_view={"render_style": checked_style(render_style, fetch=False),  # prepare fetches photo's assets
                        **({"population": checked_population(population)} if population else {}),
                        **({"camera": checked_camera(camera)} if camera else {})},
        )
        from urbanarena.runner.dry_run import import_path_dry_run, is_import_path_agent

        if dry_run and is_import_path_agent(agent):  # never call user code in a dry run (runner/dry_run.py)
            typer.echo(import_path_dry_run(req))
            return
        from urbanarena.progress import ConsoleProgress

        with ConsoleProgress() as drawing:  # a frozen suite's images and check panoramas, on first use
            prepared = prepare(req, check_keys=not dry_run, progress=drawing, fetch_assets=not dry_run)
        if dry_run:
            from urbanarena.runner.preflight import estimate_prepared

            if not prepared.model_agent:
                typer.echo(f"dry run: agent {agent!r} calls no model API; {len(prepared.jobs)} episodes would run "
                           f"({len(prepared.tasks)} tasks x {len(prepared.seeds)} seeds), no request")
                return
            report = estimate_prepared(prepared)
    except (UrbanArenaError, OSError) as e:
        raise _fail(e) from None
    if prepared.task_set.suite_check:
        from urbanarena.tasks.frozen_materialize import describe_check

        warning = describe_check(prepared.task_set.suite_check)
        if warning and prepared.task_set.suite_check.get("matches", True):  # drawn within tolerance: a notice
            err_console.print(f"note: {warning}")
        elif warning:
            err_console.print(f"[yellow]warning: {warning}[/yellow]")
    if dry_run:
        typer.echo(report.format())
        if rounds > 1 or strategy:
            typer.echo(f"note: the estimate is for one round without strategy text; --rounds {rounds} runs every job "
                       f"{rounds} times (multiply by {rounds}) and strategy text (and M1's map image) lengthens each prompt")
        return
    progress = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("errors {task.fields[errors]}"), TimeElapsedColumn(), TimeRemainingColumn(),
        console=err_console, transient=False,
    )
    events = _ProgressEvents(progress)
    from urbanarena.runner.driver import Terminated

    try:
        try:
            with _sigterm_raises(Terminated):
                outcome = execute(prepared, events)
        finally:
            if events.started:
                progress.stop()
    except KeyboardInterrupt as e:
        what = "terminated (SIGTERM)" if isinstance(e, Terminated) else "interrupted"
        typer.echo(f"{what}: finished episodes are stored in {out}; rerun the same command to resume", err=True)
        raise typer.Exit(EXIT_TERMINATED if isinstance(e, Terminated) else EXIT_INTERRUPTED) from None
    except RunStopped as e:
        done = getattr(e, "outcome", None)
        n = done.run if done is not None else 0
        if e.reason == "budget":
            hint = "rerun the same command with a higher cap (or without it) to resume"
            code = EXIT_BUDGET
        else:
            hint = "the cache lacks a reply: rerun with --cache read-write (calls the API) to finish"
            code = EXIT_CACHE_MISS
        typer.echo(f"stopped ({e.reason}): {e.detail}; {n} episodes stored in {out} this time; {hint}", err=True)
        raise typer.Exit(code) from None
    except (UrbanArenaError, OSError) as e:
        raise _fail(e) from None
    protos = ", ".join(sorted({c.protocol_id for c in prepared.configs.values()}))
    hashes = ", ".join(h[:12] for h in prepared.configs)
    typer.echo(
        f"{outcome.run} episodes run, {outcome.skipped} skipped, {outcome.errors} agent errors "
        f"(protocol {protos}; config {hashes}) -> {outcome.run_dir}"
    )
    if outcome.errored:
        task_id, seed, message = outcome.first_error or ("?", 0, "?")
        retry = prepared.request.command_line()
        retry += "" if "--retry-errors" in retry else " --retry-errors"
        typer.echo(f"errors: {outcome.errored} of {outcome.planned} episodes ended in an agent or environment error "
                   f"and count as failures in every score; first: {task_id} seed {seed}: {message}")
        typer.echo(f"retry them (after fixing the cause) with: {retry}")
        raise typer.Exit(EXIT_EPISODE_ERRORS)


class _sigterm_raises:
    """While active (main thread only), SIGTERM raises ``exc`` in the main thread, so a terminated run closes its
    store, workers and ``run.json`` as at Ctrl-C."""

    def __init__(self, exc: type[BaseException]):
        self.exc = exc
        self.previous: Any = None

    def _raise(self, signum, frame):
        raise self.exc()

    def __enter__(self):
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, self._raise)
        return self

    def __exit__(self, *exc):
        import signal

        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)


# ---------------------------------------------------------------- summary
def _metric_table(title: str, s: dict[str, Any]) -> Table:
    t = Table(title=title)
    t.add_column("protocol", no_wrap=True)
    t.add_column("metric", no_wrap=True)
    t.add_column("value", justify="right")
    t.add_column("95% CI", justify="right")
    t.add_column("n", justify="right")
    counts = s.get("counts") or {}
    for k, v in s["metrics"].items():
        if v is None:
            continue
        ci = s["ci95"].get(k)
        t.add_row(s["protocol"], k, _fmt(v), f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "–", str(counts.get(k, "")))
    return t


#: short column labels of the per-group tables
SHORT_LABELS = {
    "tc_exact": "TC-E", "tc_proximity_50m": "TC-P50", "tc_category": "TC-C", "tc": "TC", "spl": "SPL",
    "ndtw": "nDTW", "sdtw": "SDTW", "goal_dist_m": "dist m", "spd_m": "SPD m", "spd_hops": "SPD hops",
    "sed": "SED", "avg_steps": "steps", "evaluation_score": "score", "scored_success": "success",
    "is_correct": "correct", "distance_to_goal": "dist m",
    "sr": "SR", "pna": "PNA", "spr": "SPR", "pcr": "PCR", "answer_correct": "correct", "final_distance_m": "dist m",
    "route_efficiency": "route eff",
}


def _group_cell(g: dict[str, Any], k: str, ci: bool) -> str:
    v = g["metrics"].get(k)
    if v is None:
        return "–"
    lo_hi = (g.get("ci95") or {}).get(k) if ci else None
    return f"{v:.1f} [{lo_hi[0]:.1f}, {lo_hi[1]:.1f}]" if lo_hi else f"{v:.1f}"


def _group_table(title: str, groups: dict[str, Any], protocol: str, keys: list[str], ci: bool = False) -> Table:
    """One row per group: episodes and the means of ``keys``; ``ci``: each mean followed by its 95 % CI
    (the summary's cluster bootstrap, ``[low, high]``)."""
    t = Table(title=f"{title} — protocol {protocol}" + (" (mean [95% CI])" if ci else ""))
    t.add_column("group", no_wrap=True)
    t.add_column("n", justify="right")
    for k in keys:
        t.add_column(SHORT_LABELS.get(k, k), justify="right")
    for name, g in groups.items():
        t.add_row(name, str(g["episodes"]), *(_group_cell(g, k, ci) for k in keys))
    return t


@app.command()
def summary(
    run_dir: Path = typer.Argument(..., help="RUN_DIR of a run."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    config: Optional[str] = typer.Option(None, "--config", help="Config hash prefix (when RUN_DIR holds several)."),
    resamples: int = typer.Option(2000, "--resamples", help="Bootstrap resamples per interval."),
) -> None:
    """Metric means with cluster-bootstrap 95 % CIs (rates in percent), overall, per category and per difficulty.
    A run whose agent or strategies used privileged information gets a one-line note."""
    from urbanarena.runner.summary import summarize_run

    try:
        if resamples < 1:
            raise UrbanArenaError(f"--resamples must be >= 1 (got {resamples})")
        s = summarize_run(run_dir, config=config, n_resamples=resamples)
    except UrbanArenaError as e:
        raise _fail(e) from None
    if as_json:
        sys.stdout.write(json.dumps(s, allow_nan=False) + "\n")
        return
    head = (
        f"{run_dir} — agent {s['agent']} · protocol {s['protocol']} · family {s['family']} · "
        f"config {s['config_hash'][:12]} · render style {s.get('render_style', 'flat')} · "
        f"{s['episodes']} episodes ({s['tasks']} tasks, {len(s['seeds'])} seeds)"
    )
    from urbanarena.runner.summary import describe_errors

    errors_line = describe_errors(s)
    if errors_line:  # above every score table
        out_console.print(errors_line, markup=False, soft_wrap=True, style="yellow")
    out_console.print(_metric_table(head, s))
    preferred = ("tc_exact", "tc_proximity_50m", "tc", "spl", "ndtw", "sed", "goal_dist_m")
    if "missing_scores" in s:  # arena config
        preferred = ("evaluation_score", "scored_success", "is_correct", "distance_to_goal", "steps")
    continuous = s.get("by_level") is not None  # urbanground: by_family (= category) and by_level
    if continuous:
        preferred = ("sr", "pna", "spr", "pcr", "answer_correct", "final_distance_m", "route_efficiency")
    keys = [k for k in preferred if s["metrics"].get(k) is not None]
    if s["by_category"] and not continuous:
        out_console.print(_group_table("by category", s["by_category"], s["protocol"], keys))
    if s["by_difficulty"]:
        out_console.print(_group_table("by difficulty", s["by_difficulty"], s["protocol"], keys))
    if s.get("by_family"):
        out_console.print(_group_table("by family", {k: {"episodes": f["episodes"], "metrics": f["metrics"]}
                                                     for k, f in s["by_family"].items()}, s["protocol"], keys))
        if s.get("mdd"):
            out_console.print(_mdd_text(s["mdd"]))
    if s.get("by_level"):
        out_console.print(_group_table("by level", s["by_level"], s["protocol"], keys))
    if s.get("by_condition"):
        out_console.print(_group_table("by condition", s["by_condition"], s["protocol"], keys, ci=True))
    note = _privileged_note(run_dir, s)
    if note:
        out_console.print(note, markup=False, soft_wrap=True)
    if s.get("complete") is False:
        out_console.print(f"[yellow]incomplete: {s['episodes']} of {s['planned']} planned episodes are stored; "
                          "rerun the run command to finish[/yellow]")
    from urbanarena.runner.summary import describe_faults

    faults_line = describe_faults(s.get("faults"))
    if faults_line:
        out_console.print(faults_line, markup=False)
    if s.get("missing_scores"):
        out_console.print(f"[yellow]{s['missing_scores']} answers could not be validated (no judge / unparsable "
                          "verdict); they count 0 in evaluation_score[/yellow]")
    fz = s.get("fuzzy") or {}
    if fz.get("answers"):
        judge = f"judge {fz['judge_model']}" if fz.get("judge_model") else "no judge (--judge)"
        out_console.print(
            f"fuzzy_match answers: {fz['answers']}, judged {fz['judged']}, unjudged {fz['unjudged']} "
            f"({fz['no_judge']} without a judge, {fz['unparsable']} unparsable verdicts, {fz['judge_errors']} judge "
            f"errors) — {judge}; offline string match {fz['offline_matches']} of {fz['answers']} "
            f"(metrics.offline_score, never in evaluation_score); judge requests {fz['judge_requests']} "
            f"({fz['judge_api_requests']} API calls)")


def _privileged_note(run_dir: Path, s: dict) -> str | None:
    """One line when the summarised config used privileged information (ground truth the agents under test
    do not see), else ``None`` (:func:`urbanarena.runner.run_facts.run_facts` decides)."""
    from urbanarena.runner.run_facts import run_facts

    facts = run_facts(s, run_dir)
    if not facts.privileged:
        return None
    return (f"note: privileged run — {facts.privileged_what(str(s.get('agent')))} used ground truth the agents "
            "under test do not see; a reference, not comparable with non-privileged agents")


def _mdd_text(mdd: dict) -> str:
    """Minimum detectable differences as two lines of text."""
    sizes = "; ".join(f"{name} ({v['tasks_per_family']}/family) {v['per_family']:.1f} per family, "
                      f"{v['overall']:.1f} overall" for name, v in mdd["sizes"].items())
    run = mdd["this_run"]
    return (f"minimum detectable difference (points; two runs, alpha {mdd['alpha']}, power {mdd['power']}, "
            f"worst-case sd {mdd['sd']}): {sizes}. Minimum detectable difference of this run ({run['tasks']} tasks): "
            f"{run['overall']} points overall.")


# ----------------------------------------------------------------- export
@app.command()
def export(
    run_dir: Path = typer.Argument(..., help="RUN_DIR of a run."),
    fmt: str = typer.Option(..., "--format", help="csv, jsonl, parquet (needs the export extra: pip install urbanarena\\[export]) or cityarena-csv (360CityArena results schema v3, arena episodes)."),
    out: Path = typer.Option(..., "--out", parser=out_option, help="Output file."),
    config: Optional[str] = typer.Option(None, "--config", help="Only this config (hash prefix)."),
) -> None:
    """Export the stored episodes (one row each, with protocol id, trajectory, metrics)."""
    from urbanarena.runner.export import export_run
    from urbanarena.runner.store import STORE_FILE, Store

    try:
        if Path(out).is_dir():
            raise UrbanArenaError(f"--out {out} is a directory; give a file name")
        hashes = None
        if config:
            with Store(Path(run_dir) / STORE_FILE, readonly=True) as store:
                hashes = [c["config_hash"] for c in store.configs() if c["config_hash"].startswith(config)]
            if not hashes:
                raise UrbanArenaError(f"{run_dir}: no config matches {config!r}")
        n = export_run(run_dir, fmt, out, hashes)
    except (UrbanArenaError, OSError) as e:
        raise _fail(e) from None
    typer.echo(f"{n} episodes -> {out}")


# --------------------------------------------------------------- protocols
@app.command()
def protocols(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List protocol ids."""
    from urbanarena.env.protocols import PROTOCOLS

    if as_json:
        sys.stdout.write(json.dumps({k: {"faithful_to": p.faithful_to, "per_stage_scoring": p.per_stage_scoring,
                                         "description": p.description, "params": p.params}
                                     for k, p in PROTOCOLS.items()}) + "\n")
        return
    t = Table(title="protocols")
    t.add_column("id")
    t.add_column("faithful to")
    t.add_column("description")
    for k, p in PROTOCOLS.items():
        t.add_row(k, p.faithful_to or "(urbanarena)", p.description)
    out_console.print(t)


# -------------------------------------------------------------------- city
@city_app.command("info")
def city_info(
    city: str = typer.Argument(..., help="CITY: KIND:PATH, saved city directory, or cached city name."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    untakeable: bool = typer.Option(
        False, "--untakeable",
        help="Also count the directed edges no action can take under each protocol and action style (slower).",
    ),
) -> None:
    """Graph facts of a city (nodes, edges, components, bbox, degrees ...)."""
    from urbanarena.world.facts import graph_facts
    from urbanarena.world.resolve import resolve_city_source

    try:
        c, source = resolve_city_source(city)
    except (UrbanArenaError, OSError) as e:
        raise _fail(e) from None
    facts = graph_facts(c)
    facts["directory"] = str(source.directory)
    facts["source"] = c.meta.source
    if (c.meta.extra or {}).get("dropped_islands"):  # CitySeeker components no route touches
        facts["dropped_islands"] = c.meta.extra["dropped_islands"]
    if untakeable:
        from urbanarena.env.protocols import make_motion

        counts = {}
        for protocol, style in (("cityseeker-v1", "heading"), ("urbanarena-graph-v1", "heading"),
                                ("touchdown-v1", "turn"), ("urbanarena-graph-v1", "turn")):
            taken = make_motion(protocol, c, style).takeable_edges()
            counts[f"{protocol}/{style}"] = c.graph.number_of_edges() - len(taken)
        facts["untakeable_edges"] = counts
    if as_json:
        facts["import_report"] = c.meta.extra
        sys.stdout.write(json.dumps(facts, default=str) + "\n")
        return
    t = Table(title=f"city {facts['name']}")
    t.add_column("fact")
    t.add_column("value")
    for k, v in facts.items():
        if k == "source":
            continue
        t.add_row(k, json.dumps(v) if isinstance(v, (dict, list)) else _fmt(v))
    out_console.print(t)


@city_app.command("import")
def city_import(
    city: str = typer.Argument(..., help="CITY to import (usually KIND:PATH)."),
    name: str = typer.Option(..., "--name", help="Name to save it under in the cache."),
    force: bool = typer.Option(False, "--force", help="Replace a cached city of the same name."),
) -> None:
    """Import (or copy) a city into the cache under NAME; later commands accept NAME as CITY."""
    from urbanarena.world.resolve import resolve_city, save_named

    try:
        c = resolve_city(city)
        path = save_named(c, name, overwrite=force)
    except (UrbanArenaError, OSError) as e:
        raise _fail(e) from None
    typer.echo(f"{c.name}: {c.graph.number_of_nodes()} nodes, {c.graph.number_of_edges()} edges -> {path}")


@city_app.command("list")
def city_list() -> None:
    """Names of the cities in the cache."""
    from urbanarena import paths
    from urbanarena.world.resolve import cached_city_names

    names = cached_city_names()
    typer.echo("\n".join(names) if names else f"(no cached cities in {paths.cities_dir()})")


def _register_plugins() -> None:
    """Commands that live in their own modules."""
    from urbanarena.cli.agents_cmd import agents
    from urbanarena.cli.assets_cmd import assets_app
    from urbanarena.cli.bench_cmd import bench
    from urbanarena.cli.build_cmd import build
    from urbanarena.cli.cache_cmd import cache_export
    from urbanarena.cli.demo_cmd import demo
    from urbanarena.cli.demos_cmd import demos_app
    from urbanarena.cli.train_cmd import train_app
    from urbanarena.cli.frames_cmd import from_frames
    from urbanarena.cli.video_cmd import from_video
    from urbanarena.cli.freeze_cmd import fetch_cmd, freeze_cmd
    from urbanarena.cli.panoramax_cmd import from_panoramax, licences
    from urbanarena.cli.tasks_cmd import tasks_app
    from urbanarena.cli.play_cmd import play, play_export
    from urbanarena.cli.replay_cmd import replay, video
    from urbanarena.cli.report_cmd import report
    from urbanarena.cli.view_cmd import view

    app.command("demo")(demo)
    app.command("agents")(agents)
    app.command("bench")(bench)
    app.command("view")(view)
    app.command("report")(report)
    app.command("play")(play)
    app.command("play-export")(play_export)
    app.command("replay")(replay)
    app.command("video")(video)
    app.command("cache-export")(cache_export)
    city_app.command("from-frames")(from_frames)
    city_app.command("from-video")(from_video)
    city_app.command("build")(build)
    city_app.command("from-panoramax")(from_panoramax)
    city_app.command("licences")(licences)
    tasks_app.command("freeze")(freeze_cmd)
    tasks_app.command("fetch")(fetch_cmd)
    app.add_typer(tasks_app, name="tasks")
    app.add_typer(assets_app, name="assets")
    app.add_typer(demos_app, name="demos")
    app.add_typer(train_app, name="train")


_register_plugins()


def main() -> None:  # pragma: no cover - console entry
    app()


if __name__ == "__main__":  # pragma: no cover
    app()
