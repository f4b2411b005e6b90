"""``urbanarena agents [NAME] [--json]``: the registered agents, or one agent's ``-p`` parameter schema
(key, type, default, range, meaning; :mod:`urbanarena.agents.params`).

Register in ``cli/main.py`` with ``app.command("agents")(agents)``.
"""

from __future__ import annotations

import json
from typing import Optional

import typer

from urbanarena.cli.common import fail
from urbanarena.errors import UrbanArenaError


def agents(
    name: Optional[str] = typer.Argument(None, help="Agent name: print its -p parameters (default: list the agents)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List the agents, or print the -p parameters of one (type, default, range, meaning); every -p value is
    checked against them before RUN_DIR is created."""
    from urbanarena.agents.params import AGENT_PARAMS, params_table

    if name is None:
        rows = [{"agent": n, "summary": (m.__doc__ or "").strip().splitlines()[0]} for n, m in AGENT_PARAMS.items()]
        if as_json:
            typer.echo(json.dumps(rows, indent=1))
            return
        for r in rows:
            typer.echo(f"{r['agent']:<16} {r['summary']}")
        typer.echo("\nurbanarena agents NAME prints an agent's -p parameters")
        return
    try:
        rows = params_table(name)
    except KeyError as e:
        raise fail(UrbanArenaError(e.args[0])) from None
    if as_json:
        typer.echo(json.dumps(rows, indent=1))
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{name}: -p KEY=VALUE (JSON values, e.g. -p retry='{{\"max_retries\": 2}}')")
    for col in ("key", "type", "default", "range", "description"):
        t.add_column(col, overflow="fold")
    for r in rows:
        t.add_row(r["key"], r["type"], r["default"], r["range"], r["description"])
    Console(width=160).print(t)
