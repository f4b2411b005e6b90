"""``urbanarena cache-export CACHE --out DIR``: export a response cache as an audit bundle.

Register in :mod:`urbanarena.cli.main` with ``app.command("cache-export")(cache_export)``
(or under a ``cache`` sub-app as ``export``).
"""

from __future__ import annotations

from pathlib import Path

import typer

from urbanarena.agents.clients.cache import ResponseCache
from urbanarena.errors import UrbanArenaError


def cache_export(
    cache: Path = typer.Argument(..., help="Response cache file (responses.sqlite in a run directory)."),
    out: Path = typer.Option(..., "--out", "-o", help="Bundle directory to write (responses.jsonl, images/, manifest.json)."),
) -> None:
    """Export every cached model call (requests with image hashes, the images sent, replies) for audit.

    The bundle holds no credentials: the cache never stores API keys.
    Exit status 2 with ``error: ...`` when the cache file does not exist.
    """
    try:
        rc = ResponseCache(cache, "read-only")
    except UrbanArenaError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    try:
        rc.export_bundle(out)
        n = len(rc)
    finally:
        rc.close()
    typer.echo(f"exported {n} responses to {out}")
