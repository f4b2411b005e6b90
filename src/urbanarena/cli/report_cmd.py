"""``urbanarena report RUN_DIR [RUN_DIR ...] --out report.html``: the static HTML report of stored runs
(:mod:`urbanarena.report.html`; contents in ``docs/report.md``).

Needs the ``report`` extra (jinja2, matplotlib). Bad input (a missing RUN_DIR, a store without
episodes, an unknown ``--baseline``) prints ``error: ...`` and exits 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from urbanarena.safe_paths import out_option
from urbanarena.cli.common import fail

from urbanarena.errors import UrbanArenaError


def report(
    run_dirs: List[Path] = typer.Argument(..., help="RUN_DIRs (every config in each is a column)."),
    out: Path = typer.Option(Path("report.html"), "--out", parser=out_option, help="HTML file to write."),
    baseline: Optional[str] = typer.Option(None, "--baseline",
                                           help="Run label the paired tests compare against (default: the first "
                                                "run of each protocol)."),
    maps: int = typer.Option(3, "--maps", help="Trajectory maps per run (0: none)."),
    city: Optional[str] = typer.Option(None, "--city", help="CITY to draw maps on (default: the one in run.json)."),
    resamples: int = typer.Option(2000, "--resamples", help="Bootstrap resamples per confidence interval."),
    bootstrap: int = typer.Option(10000, "--bootstrap", help="Resamples of the paired bootstrap tests."),
    min_common_tasks: int = typer.Option(10, "--min-common-tasks",
                                         help="Fewest common tasks for a family's paired test."),
    title: str = typer.Option("urbanarena report", "--title", help="Report title."),
    failure_classifier: Optional[str] = typer.Option(
        None, "--failure-classifier",
        help="Also label failed episodes with this model (SPEC as for --model; never a model under test; key from "
             "the provider's environment variable)."),
    failure_classifier_max: int = typer.Option(40, "--failure-classifier-max",
                                               help="Failed episodes per run the classifier labels at most."),
    failure_prompt: Optional[Path] = typer.Option(None, "--failure-prompt",
                                                  help="Own prompt template for the classifier ({causes}, {episode})."),
) -> None:
    """Write a self-contained HTML report of one or several runs side by side."""
    try:
        from urbanarena.report.html import write_html_report
    except ImportError as e:  # pragma: no cover - depends on the installed extras
        typer.echo(f"error: the report needs the 'report' extra (pip install 'urbanarena[report]'): {e}", err=True)
        raise typer.Exit(2) from None
    try:
        if maps < 0:
            raise UrbanArenaError(f"--maps must be >= 0 (got {maps})")
        if resamples < 1:
            raise UrbanArenaError(f"--resamples must be >= 1 (got {resamples})")
        if bootstrap < 100:
            raise UrbanArenaError(f"--bootstrap must be >= 100 (got {bootstrap})")
        if min_common_tasks < 1:
            raise UrbanArenaError(f"--min-common-tasks must be >= 1 (got {min_common_tasks})")
        if out.exists() and out.is_dir():
            raise UrbanArenaError(f"--out {out} is a directory; give a file name such as report.html")
        if failure_classifier_max < 1:
            raise UrbanArenaError(f"--failure-classifier-max must be >= 1 (got {failure_classifier_max})")
        classifier = None
        if failure_classifier:
            from urbanarena.report.failure_llm import FailureClassifier

            classifier = FailureClassifier.from_files(failure_classifier, failure_prompt)
        try:
            path = write_html_report(run_dirs, out, baseline=baseline, n_maps=maps, n_resamples=resamples,
                                     n_boot=bootstrap, min_common_tasks=min_common_tasks, city=city, title=title,
                                     failure_classifier=classifier, classifier_max=failure_classifier_max)
        finally:
            if classifier is not None:
                classifier.close()
    except (UrbanArenaError, OSError, ValueError) as e:
        raise fail(e) from None
    typer.echo(f"report written to {path}")
