"""What every command shares: the exit statuses (docs/runs.md, "Exit status") and the one-line error.

Bad input prints one ``error: ...`` line on stderr and exits 2; a failure to write on the machine's
side (disk full, quota, I/O error, read-only file system) prints ``error: I/O failure: ...`` naming
the path and exits 6.
"""

from __future__ import annotations

import errno

import typer

from urbanarena.errors import RunIOError

#: exit statuses of every command (docs/runs.md keeps the table)
EXIT_OK = 0
#: bad input (a typed error naming the file and record); for ``run``: detected before RUN_DIR exists
EXIT_BAD_INPUT = 2
EXIT_BUDGET = 3
EXIT_CACHE_MISS = 4
#: ``run`` finished, but some planned episodes ended in an agent or environment error
EXIT_EPISODE_ERRORS = 5
#: writing failed on the machine's side (disk full, quota, I/O error, read-only file system)
EXIT_IO = 6
#: Ctrl-C (128 + SIGINT)
EXIT_INTERRUPTED = 130
#: SIGTERM (128 + SIGTERM)
EXIT_TERMINATED = 143

#: OS errors that are the machine's failure, not the user's input
IO_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EFBIG})


#: deepest nesting of lists/objects a ``KEY=VALUE`` option's JSON value may have (no agent parameter nests
#: more than a few levels; a deeper value is refused before parsing, so no parser recursion is reached)
MAX_PARAM_JSON_DEPTH = 32


def json_depth(text: str) -> int:
    """Deepest ``[``/``{`` nesting in ``text``, brackets inside JSON strings not counted (a linear scan that
    needs no parse: it runs before ``json.loads`` so a hostile value cannot exhaust the recursion limit)."""
    depth = deepest = 0
    in_string = escaped = False
    for c in text:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth = max(depth - 1, 0)
    return deepest


def is_io_failure(e: BaseException) -> bool:
    """Whether ``e`` is a write failure on the machine's side (:data:`IO_ERRNOS`, :class:`RunIOError`)."""
    return isinstance(e, RunIOError) or (isinstance(e, OSError) and e.errno in IO_ERRNOS)


def fail(e: BaseException) -> typer.Exit:
    """Print the first line of ``e`` as ``error: ...`` on stderr and return the exit to raise: status 6
    for an I/O failure (:func:`is_io_failure`, the path named), else 2 (bad input)."""
    msg = str(e).splitlines()[0] if str(e) else type(e).__name__
    if is_io_failure(e):
        if not isinstance(e, RunIOError) and getattr(e, "filename", None) and str(e.filename) not in msg:
            msg = f"{e.filename}: {msg}"
        typer.echo(f"error: I/O failure: {msg}", err=True)
        return typer.Exit(EXIT_IO)
    typer.echo(f"error: {msg}", err=True)
    return typer.Exit(EXIT_BAD_INPUT)


#: help of ``--render-style`` (every command that renders a city)
RENDER_STYLE_HELP = ("How rendered cities look: photo (the default: photographed materials, real textured people, "
                     "vehicles, trees and clutter, an HDRI sky and a consumer 360 camera; fetches its pinned "
                     "184 MB of assets once, realistic when they cannot be had), realistic (procedural materials, "
                     "shadows, clouds) or flat (the original look, frozen suite helsinki-arena7-v1); cities with "
                     "real photos ignore it.")


def render_style_option():
    """The ``--render-style photo|realistic|flat`` option (default :data:`~urbanarena.render.scene3d.render_settings.DEFAULT_RENDER_STYLE`,
    ``photo``; :func:`checked_style` fetches its assets or falls back to ``realistic``)."""
    from urbanarena.render.scene3d.styles import DEFAULT_RENDER_STYLE

    return typer.Option(None, "--render-style", help=RENDER_STYLE_HELP + f" [default: {DEFAULT_RENDER_STYLE}]",
                        show_default=False)


#: help of ``--accept-redrawn-images`` (the commands that run a frozen suite)
ACCEPT_REDRAWN_HELP = ("Run a frozen suite even when this machine draws its reference images differently from the "
                       "manifest (another OpenCV, GL driver or font); recorded as accepted_redrawn_images in run.json. "
                       "Without it such a run is refused (exit 2). Same as URBANARENA_ACCEPT_REDRAWN_IMAGES=1.")


def accept_redrawn_option():
    """The ``--accept-redrawn-images`` flag (default off: refuse; :mod:`urbanarena.tasks.frozen_check`)."""
    return typer.Option(False, "--accept-redrawn-images", help=ACCEPT_REDRAWN_HELP)


def apply_accept_redrawn(accept: bool) -> None:
    """Make ``--accept-redrawn-images`` reach every resolver of this process and its workers (through the
    environment variable :data:`~urbanarena.tasks.frozen_check.ACCEPT_ENV`)."""
    if accept:
        import os

        from urbanarena.tasks.frozen_check import ACCEPT_ENV

        os.environ[ACCEPT_ENV] = "1"


#: help of ``--population`` (the commands that render panoramas)
POPULATION_HELP = ("People and vehicles in rendered panoramas: snapshot (a deterministic moment per node) or none; "
                   "default: the render style's (snapshot for realistic, none for flat).")


def population_option():
    """The ``--population snapshot|none`` option (default ``None``: the render style's default)."""
    return typer.Option(None, "--population", help=POPULATION_HELP)


#: help of ``--camera`` (the commands that show rendered views)
CAMERA_HELP = ("Camera model the views go through: clean (the renderer's pixels), consumer360 (a consumer 360 camera's "
               "frames: softness, noise, exposure, JPEG), phone; default: the render style's (clean for flat and "
               "realistic, consumer360 for photo). docs/renderer.md.")


def camera_option():
    """The ``--camera`` option (default ``None``: the render style's camera)."""
    return typer.Option(None, "--camera", help=CAMERA_HELP)


def checked_camera(camera: str | None) -> str | None:
    """``camera`` (or ``None``) or the bad-input exit (status 2) naming the known cameras."""
    from urbanarena.render.camera_model import get_camera

    if camera is None:
        return None
    try:
        return get_camera(camera).name
    except ValueError as e:
        raise fail(e) from None


def checked_population(population: str | None) -> str | None:
    """``population`` (or ``None``) or the bad-input exit (status 2) naming the known modes."""
    from urbanarena.render.scene3d.population import check_population

    if population is None:
        return None
    try:
        return check_population(population)
    except ValueError as e:
        raise fail(e) from None


def checked_style(style: str | None, *, fetch: bool = True, fallback: bool = True) -> str | None:
    """The style the command renders: ``style`` (``None``: the default,
    :data:`~urbanarena.render.scene3d.render_settings.DEFAULT_RENDER_STYLE`), or the bad-input exit (status 2)
    naming the known styles.

    With ``fetch``, ``photo`` fetches the pinned asset packages first when they are missing (a progress bar on a
    terminal; never when :data:`~urbanarena.render.scene3d.styles.NO_FETCH_ENV` is set). When they cannot be had it
    is ``realistic`` after one line on stderr (:func:`~urbanarena.render.scene3d.styles.usable_style`), or with
    ``fallback`` off ``photo`` all the same, for a caller that refuses on its own (``tasks freeze``: a photo suite
    needs the assets). Without ``fetch`` the style is only checked and ``None`` stays ``None`` (``run`` and
    ``demo`` fetch in :func:`urbanarena.runner.driver.prepare`, once the city is known to be rendered).
    """
    from urbanarena.progress import ConsoleProgress
    from urbanarena.render.scene3d.styles import check_style, usable_style

    from urbanarena.render.scene3d.styles import DEFAULT_RENDER_STYLE

    try:
        checked = check_style(style or DEFAULT_RENDER_STYLE)
    except ValueError as e:
        raise fail(e) from None
    if not fetch:
        return style and checked
    if checked != "photo":
        return checked
    with ConsoleProgress() as progress:
        got = usable_style(style, fetch=True, progress=progress)
    return got if fallback else checked
