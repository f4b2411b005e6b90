"""What every command shares: bad input prints one ``error: ...`` line on stderr and exits 2."""

from __future__ import annotations

import typer

#: exit status of bad input (a typed error naming the file and record)
EXIT_BAD_INPUT = 2


def fail(e: BaseException) -> typer.Exit:
    """Print the first line of ``e`` as ``error: ...`` on stderr and return the exit (status 2) to raise."""
    msg = str(e).splitlines()[0] if str(e) else type(e).__name__
    typer.echo(f"error: {msg}", err=True)
    return typer.Exit(EXIT_BAD_INPUT)
