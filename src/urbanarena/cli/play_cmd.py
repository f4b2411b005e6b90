"""``urbanarena play`` (a human plays arena or continuous-mode tasks in the browser) and ``urbanarena play-export``.

``play --city CITY --tasks FILE|default [--participant ID ...] [--out RUN_DIR] [--host 127.0.0.1]
[--port 8765] [--public] [--tokens FILE] [--practice FILE | --practice-count N] [--time-limit S]
[--per-participant N] [--consent FILE] [--protocol ID] [--max-steps N]`` serves the play page
(:mod:`urbanarena.web.app`) and prints one personal link per participant. Arena tasks (``cityarena``) get
the arena page; continuous-mode tasks (``urbanground``, UrbanGround's actions) the continuous page
(:mod:`urbanarena.web.play_continuous`), by the task family's ``action_style``. Episodes go to
RUN_DIR's run store as ``human:<participant>`` (docs/play.md). A non-loopback ``--host`` is refused
without ``--public``; every request needs a participant token either way.

``play-export RUN_DIR --out FILE.jsonl`` writes the anonymised export of the human episodes
(:func:`urbanarena.web.study.export_anonymised`).

Both need the ``web`` extra (fastapi, uvicorn, jinja2). Bad input prints ``error: ...`` and exits 2.

Register in ``cli/main.py`` (``_register_plugins``)::

    from urbanarena.cli.play_cmd import play, play_export
    app.command("play")(play)
    app.command("play-export")(play_export)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from urbanarena.safe_paths import out_option
from urbanarena.cli.common import accept_redrawn_option, apply_accept_redrawn, checked_style, fail, render_style_option
from urbanarena.errors import UrbanArenaError

DEFAULT_PORT = 8765


def _check_port_free(host: str, port: int) -> None:
    """Refuse a port another program listens on before anything is prepared, printed or written (bind a
    socket as the server will, with ``SO_REUSEADDR``, and close it; exit 2 through the caller).

    Raises: UrbanArenaError: the address is in use or cannot be bound here."""
    import errno
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise UrbanArenaError(f"--host {host!r}: cannot resolve it ({e})") from None
    family, _, _, _, addr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(addr)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise UrbanArenaError(f"--port {port} on {host} is already in use (another server?); choose another "
                                      "--port; nothing was written") from None
            raise UrbanArenaError(f"cannot bind {host}:{port}: {e.strerror or e}; nothing was written") from None


def _url(host: str, port: int, token: str) -> str:
    h = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{h}:{port}/?token={token}"


def play(
    city: str = typer.Option(..., "--city", help="CITY: KIND:PATH, saved city directory, or cached city name."),
    tasks: str = typer.Option(..., "--tasks", help="TASKS: a task file of arena (cityarena) or continuous (urbanground) tasks, or 'default'."),
    participant: Optional[List[str]] = typer.Option(
        None, "--participant", help="Participant id (repeatable; default 'player'). Order = counterbalancing row."),
    out: Path = typer.Option(Path("play-run"), "--out", parser=out_option, help="RUN_DIR the episodes are stored in."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (non-loopback needs --public)."),
    port: int = typer.Option(DEFAULT_PORT, "--port", help="Port to bind."),
    public: bool = typer.Option(False, "--public", help="Allow a non-loopback --host (token auth guards it)."),
    tokens_file: Optional[Path] = typer.Option(
        None, "--tokens", help="Token file (participant<TAB>token, mode 0600): read, new participants added."),
    practice: Optional[str] = typer.Option(None, "--practice", help="TASKS of practice tasks (not scored)."),
    practice_count: int = typer.Option(
        1, "--practice-count", help="Without --practice: the first N tasks are practice (not scored) for everyone."),
    time_limit: float = typer.Option(600.0, "--time-limit", help="Seconds per task from its first view (0: none)."),
    per_participant: Optional[int] = typer.Option(None, "--per-participant",
                                                  help="Scored tasks per participant (default: all)."),
    consent: Optional[Path] = typer.Option(None, "--consent", help="Plain-text file with the consent text."),
    protocol: Optional[str] = typer.Option(None, "--protocol", help="Protocol (default the family's: cityarena-v1, urbanground-v1)."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", help="Step limit (default the family's: 50 arena, 100 urbanground)."),
    render_style: str = render_style_option(),
    accept_redrawn_images: bool = accept_redrawn_option(),
) -> None:
    """Serve arena or continuous-mode tasks to human participants in the browser; store their episodes as
    human:<participant>."""
    try:
        import uvicorn

        from urbanarena.web.app import create_play_app
    except ImportError as e:  # pragma: no cover - depends on the installed extras
        typer.echo(f"error: play needs the 'web' extra (pip install 'urbanarena[web]'): {e}", err=True)
        raise typer.Exit(2) from None
    from urbanarena.web.auth import ParticipantTokens, check_bind
    from urbanarena.web.play import open_play

    apply_accept_redrawn(accept_redrawn_images)

    try:
        check_bind(host, public)
        if not 0 < port < 65536:
            raise UrbanArenaError(f"--port must be in 1..65535 (got {port})")
        _check_port_free(host, port)
        if time_limit < 0:
            raise UrbanArenaError(f"--time-limit must be >= 0 seconds (got {time_limit})")
        ids = list(participant or [])
        if tokens_file is not None:
            reg, tokens = ParticipantTokens.load_or_issue(tokens_file, ids)
        else:
            reg, tokens = ParticipantTokens.issue(ids or ["player"])
        consent_text = consent.read_text(encoding="utf-8") if consent is not None else None
        service = open_play(city, tasks, reg, out, practice=practice, practice_count=practice_count,
                            time_limit_s=time_limit or None, per_participant=per_participant,
                            consent_text=consent_text, protocol=protocol, max_steps=max_steps, command=list(sys.argv),
                            render_style=checked_style(render_style))
    except (UrbanArenaError, OSError, ValueError) as e:
        raise fail(e) from None
    app = create_play_app(service)
    typer.echo(f"urbanarena play: {len(service.plan.tasks)} scored and {len(service.plan.practice)} practice tasks "
               f"on {service.city.name}; episodes -> {out}")
    typer.echo("personal links (keep private; each token is a participant's password):")
    for pid, tok in tokens.items():
        typer.echo(f"  {pid}: {_url(host, port, tok)}")
    try:
        # access_log off: the entry URL carries the token in its query string
        uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
    finally:
        service.close()


def play_export(
    run_dir: Path = typer.Argument(..., help="RUN_DIR of a play study."),
    out: Path = typer.Option(..., "--out", parser=out_option, help="JSONL file to write."),
) -> None:
    """Write the study's human episodes anonymised (participants as P01, P02 ...; no token, no id, no times)."""
    from urbanarena.web.study import export_anonymised

    try:
        res = export_anonymised(run_dir, out)
    except (UrbanArenaError, OSError) as e:
        raise fail(e) from None
    typer.echo(f"{res['episodes']} episodes of {res['participants']} participants -> {res['path']}")


__all__ = ["play", "play_export"]
