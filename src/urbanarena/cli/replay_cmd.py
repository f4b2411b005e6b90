"""``urbanarena replay RUN_DIR`` (browse stored episodes step by step) and ``urbanarena video``.

``replay RUN_DIR [--city CITY] [--host 127.0.0.1] [--port 8766] [--public]`` serves the replay page
(:mod:`urbanarena.web.replay`; needs the ``web`` extra) and prints its link with a viewer token; the
bind rule of ``play`` applies. The first view is drawn ahead while the server starts (it builds the city's
3D scene), with a progress bar on stderr when it is a terminal.

``video RUN_DIR --episode ID --out FILE.mp4|.gif [--fps 2] [--city CITY]`` writes one episode (row id
from ``replay``, or a task id stored once) as a video of ``steps + 1`` frames with the map inset and
captions (:mod:`urbanarena.report.video`; MP4 needs the ``video`` extra, PyAV); a terminal's stderr shows the
frames' progress.

Bad input prints ``error: ...`` and exits 2.

Register in ``cli/main.py`` (``_register_plugins``)::

    from urbanarena.cli.replay_cmd import replay, video
    app.command("replay")(replay)
    app.command("video")(video)
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Optional

import typer

from urbanarena.cli.common import checked_style, fail, render_style_option
from urbanarena.errors import UrbanArenaError
from urbanarena.progress import ConsoleProgress, Progress

DEFAULT_PORT = 8766


def replay(
    run_dir: Path = typer.Argument(..., help="RUN_DIR to replay."),
    city: Optional[str] = typer.Option(None, "--city", help="CITY to replay on (default: the one in run.json)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (non-loopback needs --public)."),
    port: int = typer.Option(DEFAULT_PORT, "--port", help="Port to bind."),
    public: bool = typer.Option(False, "--public", help="Allow a non-loopback --host (token auth guards it)."),
    render_style: Optional[str] = typer.Option(
        None, "--render-style", help="Render style: realistic, flat or photo (default: the one the run used)."),
) -> None:
    """Browse any stored arena episode step by step: views, trajectory map, thought, memory, answer, score."""
    try:
        import uvicorn

        from urbanarena.web.replay import create_replay_app
    except ImportError as e:  # pragma: no cover - depends on the installed extras
        typer.echo(f"error: replay needs the 'web' extra (pip install 'urbanarena[web]'): {e}", err=True)
        raise typer.Exit(2) from None
    from urbanarena.report.replay_data import RunReplay
    from urbanarena.web.auth import ParticipantTokens, check_bind

    try:
        check_bind(host, public)
        if not 0 < port < 65536:
            raise UrbanArenaError(f"--port must be in 1..65535 (got {port})")
        rr = RunReplay(run_dir, city, checked_style(render_style) if render_style else None)
        tokens, issued = ParticipantTokens.issue(["viewer"])
    except (UrbanArenaError, OSError) as e:
        raise fail(e) from None
    app = create_replay_app(rr, tokens)
    h = f"[{host}]" if ":" in host and not host.startswith("[") else host
    typer.echo(f"urbanarena replay: {len(rr.rows)} episodes in {run_dir}")
    typer.echo(f"open http://{h}:{port}/?token={issued['viewer']}")
    with ConsoleProgress() as progress:
        draw_first_view(rr, progress, app.state.render_lock)
        uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)


def draw_first_view(rr, progress: Progress, lock=None) -> threading.Thread | None:
    """Draw ahead, in a background thread, the first view of the first replayable episode (what the page shows
    first), reporting it to ``progress`` as one step: the renderer's first view builds the city's scene (tens
    of seconds on a large city), so the server answers meanwhile and the page's image request waits for it.
    ``lock``: the app's render lock (views are drawn one at a time). Returns the thread (``None``: no replayable
    episode). A failure is left for the page to report."""
    first = next((e["id"] for e in rr.episodes() if e.get("replayable")), None)
    if first is None:
        return None
    label = f"drawing the first view (episode {first})"

    def work() -> None:
        progress(label, 0, 1)
        try:
            with lock if lock is not None else contextlib.nullcontext():
                rr.episode(first).view(0)
        except Exception:  # noqa: BLE001 - the page's own request reports it
            pass
        finally:
            progress(label, 1, 1)

    t = threading.Thread(target=work, name="replay-first-view", daemon=True)
    t.start()
    return t


def video(
    run_dir: Path = typer.Argument(..., help="RUN_DIR holding the episode."),
    episode: str = typer.Option(..., "--episode", help="Episode: row id (see `urbanarena replay`) or a task id "
                                                       "stored once."),
    out: Path = typer.Option(..., "--out", help="Video file: .mp4 (needs the 'video' extra) or .gif."),
    fps: float = typer.Option(2.0, "--fps", help="Frames (states) per second."),
    city: Optional[str] = typer.Option(None, "--city", help="CITY (default: the one in run.json)."),
    render_style: Optional[str] = typer.Option(
        None, "--render-style", help="Render style: realistic, flat or photo (default: the one the run used)."),
) -> None:
    """Write one stored arena episode as a video: one frame per state (steps + 1), map inset, captions."""
    from urbanarena.report.video import video_of_run

    try:
        with ConsoleProgress() as progress:
            info = video_of_run(run_dir, episode, out, fps=fps, city=city,
                                render_style=checked_style(render_style) if render_style else None,
                                progress=progress)
    except (UrbanArenaError, OSError) as e:
        raise fail(e) from None
    typer.echo(f"{info.path}: {info.frames} frames, {info.width}x{info.height}, {info.fps:g} fps ({info.codec})")


__all__ = ["replay", "video"]
