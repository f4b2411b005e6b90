"""``urbanarena demos export --city C --tasks T --agent oracle --format hf|jsonl --out DIR`` (docs/gym.md).

Runs the oracle on every task (``--seeds N`` seeds, ``--limit N`` tasks) and writes per step the
observation images, the prompt the VLM agent would receive and the oracle's action as the protocol's
reply JSON; question-answering arena kinds give one ground-truth answer turn each
(:mod:`urbanarena.runner.demos`). Prints the counts of each. ``--format hf`` needs the ``train`` extra (``datasets``).
Bad input prints ``error: ...`` and exits 2.

Register in ``cli/main.py``: ``app.add_typer(demos_app, name="demos")``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from urbanarena.safe_paths import out_option
from urbanarena.cli.common import fail
from urbanarena.errors import UrbanArenaError

demos_app = typer.Typer(help="Oracle demonstrations as datasets.", no_args_is_help=True)


@demos_app.callback()
def _demos() -> None:
    """Oracle demonstrations as supervised fine-tuning data."""


@demos_app.command("export")
def export(
    city: str = typer.Option(..., "--city", help="CITY: a cached city name, a saved city directory, or KIND:PATH."),
    tasks: str = typer.Option(..., "--tasks", help="TASKS: a task file or suite (mini ...): cityarena and urbanground "
                              "tasks; navigation kinds give action demonstrations, question-answering kinds "
                              "ground-truth answer turns."),
    agent: str = typer.Option("oracle", "--agent", help="Demonstrator: only 'oracle' (the mode's privileged oracle)."),
    fmt: str = typer.Option("hf", "--format", help="hf (a Hugging Face datasets folder) or jsonl (+ PNG files)."),
    out: Path = typer.Option(..., "--out", parser=out_option, help="Output folder (one split per export)."),
    seeds: int = typer.Option(1, "--seeds", help="Seeds 0..N-1 per task."),
    limit: Optional[int] = typer.Option(None, "--limit", help="At most N tasks (file order)."),
    protocol: Optional[str] = typer.Option(None, "--protocol", help="Protocol id (default: the family's)."),
) -> None:
    """Export oracle demonstrations of TASKS on CITY to DIR."""
    from urbanarena.runner.demos import export_demos
    from urbanarena.tasks.resolve import resolve_task_set
    from urbanarena.world.resolve import resolve_city

    try:
        if agent != "oracle":
            raise UrbanArenaError(f"--agent {agent!r}: demonstrations come from the oracle only (--agent oracle)")
        if seeds < 1 or (limit is not None and limit < 1):
            raise UrbanArenaError("--seeds and --limit must be at least 1")
        c = resolve_city(city)
        ts = resolve_task_set(tasks, c)
        chosen = ts.tasks[:limit] if limit is not None else ts.tasks
        task_dir = ts.source_files[0].parent if ts.source_files else None
        res = export_demos(c, chosen, out, fmt, seeds=list(range(seeds)), task_dir=task_dir, protocol=protocol)
    except (UrbanArenaError, ValueError, OSError, ImportError) as e:
        raise fail(e) from None
    typer.echo(f"{res['path']}: {res['rows']} rows of {res['episodes']} episodes (split {res['split']}): "
               f"{res['action_rows']} action-demonstration steps of {res['action_episodes']} oracle episodes "
               f"(navigation kinds), {res['answer_turns']} ground-truth answer turns (question-answering kinds)")
