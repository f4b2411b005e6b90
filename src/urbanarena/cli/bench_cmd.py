"""``urbanarena bench all [--json] [--quick]`` and ``urbanarena bench NAME``: speed and memory figures.

NAME is one of ``cut``, ``env``, ``graph``, ``graph1m``, ``render``, ``sweep``
(:mod:`urbanarena.bench` lists what each measures), or ``realism`` (not part of ``all``: image statistics of
rendered views in each render style beside real photos, :mod:`urbanarena.bench.realism`; ``--photo FILE``
repeatable, ``--nodes N``, ``--speed`` adds frames/s, panoramas/s and bake figures); ``all`` runs them in one
process, one after another. Without ``--json`` it prints a table of the
top-level figures with their goals, then the ratios; with ``--json`` one JSON
object (:func:`urbanarena.bench.run`). ``--out FILE`` also writes the JSON to
FILE. Exit status 0 whether goals are met or not (the figures are reports);
2 for an unknown NAME.

Register in ``cli/main.py`` with ``app.command("bench")(bench)``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from urbanarena.cli.common import fail


def _fmt(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def render_table(result: dict) -> str:
    """The text report of a :func:`urbanarena.bench.run` result: required figures with goals, ratios, notes."""
    from urbanarena.bench import REQUIRED_KEYS

    goals = result.get("goals", {})
    notes = result.get("notes", {})
    lines = [f"{'figure':32} {'value':>12}  goal"]
    for k in REQUIRED_KEYS:
        if k not in result:
            continue
        g = goals.get(k)
        gtxt = ""
        if g:
            verdict = {True: "met", False: "MISSED", None: "not judged"}[g.get("met")]
            gtxt = f"{g['goal']} ({verdict}{', by ' + g['missed_by'] if g.get('missed_by') else ''})"
        lines.append(f"{k:32} {_fmt(result[k]):>12}  {gtxt}")
    ratios = []
    if result.get("cut_ms") is not None and result.get("cut_ms_py360convert") is not None:
        ratios.append(f"perspective cut: ours {result['cut_ms']:.2f} ms vs py360convert "
                      f"{result['cut_ms_py360convert']:.2f} ms -> {_fmt(result.get('cut_speedup_vs_py360convert'))}x")
    walls = [(int(k.rsplit("_", 1)[1]), v) for k, v in result.items() if k.startswith("sweep_wall_s_")]
    if walls:
        walls.sort()
        ratios.append("sweep wall s by concurrency: " + ", ".join(f"{n}: {_fmt(w)}" for n, w in walls))
        ratios.append("sweep speed-up vs concurrency 1 (our CPU per step): " + ", ".join(
            f"{n}: {_fmt(result.get(f'sweep_speedup_{n}'))} (best {result.get(f'sweep_ideal_speedup_{n}')}; "
            f"{_fmt(result.get(f'sweep_cpu_ms_per_step_{n}'))} ms)" for n, _ in walls))
    if result.get("render_fps_640") is not None:
        md = result.get("metadrive_fps_640")
        ratios.append(f"render 640x360: ours {_fmt(result['render_fps_640'])} fps vs MetaDrive {_fmt(md)} fps")
    if ratios:
        lines.append("")
        lines += ratios
    for k, g in goals.items():
        if g.get("why"):
            lines.append(f"why {k} missed: {g['why']}")
    if notes:
        lines.append("")
        lines += [f"note {k}: {v}" for k, v in notes.items()]
    m = result.get("machine", {})
    lines.append("")
    lines.append(f"machine: {m.get('cores')} cores, load average {m.get('loadavg_start')} -> {m.get('loadavg_end')}; "
                 f"seconds {result.get('seconds')}" + ("; --quick" if result.get("quick") else ""))
    return "\n".join(lines)


def _emit(result: dict, format_report, json_out: bool, out) -> None:
    """Print ``result`` as JSON (``--json``) or as ``format_report`` text; also write the JSON to ``out``."""
    text = json.dumps(result, indent=2, default=str)
    if out is not None:
        out.write_text(text + "\n", encoding="utf-8")
    sys.stdout.write(text + "\n" if json_out else format_report(result) + "\n")


def _realism(photos, nodes: int, speed: bool, shared, json_out: bool, out) -> None:
    from urbanarena.bench.realism import format_report, measure
    from urbanarena.errors import UrbanArenaError

    if nodes < 1:
        raise fail(ValueError(f"--nodes must be at least 1, got {nodes}"))
    try:
        result = measure(nodes=nodes, photos=photos or None, speed=speed, shared=shared,
                         progress=None if json_out else (lambda s: typer.echo(s, err=True)))
    except (UrbanArenaError, ValueError, OSError) as e:
        raise fail(e) from None
    _emit(result, format_report, json_out, out)


def _population(quick: bool, speed: bool, json_out: bool, out) -> None:
    from urbanarena.bench.population import format_report, measure
    from urbanarena.errors import UrbanArenaError

    try:
        result = measure(nodes=20 if quick else None, with_speed=speed,
                         progress=None if json_out else (lambda s: typer.echo(s, err=True)))
    except (UrbanArenaError, ValueError, OSError) as e:
        raise fail(e) from None
    _emit(result, format_report, json_out, out)


def bench(
    name: str = typer.Argument("all", help="all, cut, env, graph, graph1m, render, sweep, or realism / population "
                                           "(not in all)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object instead of the table."),
    quick: bool = typer.Option(False, "--quick", help="Small inputs through the same code (seconds; goals not judged)."),
    out: Path | None = typer.Option(None, "--out", help="Also write the JSON result to this file."),
    shared: Path | None = typer.Option(None, "--shared", help="Real-data folder holding touchdown/ (default: "
                                       "$URBANARENA_SHARED_DATA, else the checkout's ../shared/data)."),
    metadrive_python: str | None = typer.Option(None, "--metadrive-python",
                                                help="A Python interpreter with metadrive-simulator installed "
                                                     "(default: $URBANARENA_METADRIVE_PYTHON, else this one)."),
    photo: Optional[list[Path]] = typer.Option(None, "--photo", help="realism: an equirectangular photo to compare "
                                               "(repeatable; default the shared panoramas/ folder)."),
    nodes: int = typer.Option(6, "--nodes", help="realism: pose nodes of the default city (4 views each)."),
    speed: bool = typer.Option(False, "--speed", help="realism: also frames/s, panoramas/s and bake figures per "
                                                      "style, clear noon and night; population: panoramas/s and "
                                                      "frames/s with people and vehicles."),
) -> None:
    """Measure speed and memory (perspective cut, env step, sweep, graphs, rendering) and print figures and ratios."""
    from urbanarena import bench as B

    if name == "realism":
        _realism(photo, nodes, speed, shared, json_out, out)
        return
    if name == "population":  # people and vehicles on the shopping streets (--quick: their first 20 nodes)
        _population(quick, speed, json_out, out)
        return

    names = B.NAMES if name == "all" else (name,)
    if name != "all" and name not in B.PROVIDES:
        raise fail(ValueError(f"unknown benchmark {name!r}; choose all, {', '.join(B.NAMES)}"))
    if out is not None:  # refuse an unwritable --out before minutes of measuring, not after
        if out.is_dir():
            raise fail(ValueError(f"--out {out}: is a directory, expected a file path"))
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise fail(ValueError(f"--out {out}: cannot create its folder: {e}"))
    progress = None if json_out else (lambda n: typer.echo(f"measuring {n} ...", err=True))
    result = B.run(names, quick=quick, options={"shared": shared, "metadrive_python": metadrive_python},
                   progress=progress)
    text = json.dumps(result, indent=2, default=str)
    if out is not None:
        try:
            out.write_text(text + "\n", encoding="utf-8")
        except OSError as e:
            sys.stdout.write(text + "\n")  # keep the figures measured
            raise fail(ValueError(f"--out {out}: cannot write: {e}"))
    if json_out:
        sys.stdout.write(text + "\n")
    else:
        typer.echo(render_table(result))
