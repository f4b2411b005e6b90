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


#: help of ``--render-style`` (every command that renders a city)
RENDER_STYLE_HELP = ("How rendered cities look: realistic (procedural materials, shadows, clouds; the default) or "
                     "flat (the original look, frozen suite helsinki-arena7-v1); cities with real photos ignore it.")


def render_style_option():
    """The ``--render-style realistic|flat`` option (default :data:`~urbanarena.render.scene3d.styles.DEFAULT_RENDER_STYLE`)."""
    from urbanarena.render.scene3d.styles import DEFAULT_RENDER_STYLE

    return typer.Option(DEFAULT_RENDER_STYLE, "--render-style", help=RENDER_STYLE_HELP)


def checked_style(style: str) -> str:
    """``style`` or the bad-input exit (status 2) naming the known styles."""
    from urbanarena.render.scene3d.styles import check_style

    try:
        return check_style(style)
    except ValueError as e:
        raise fail(e) from None
