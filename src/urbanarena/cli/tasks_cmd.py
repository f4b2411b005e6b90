"""``urbanarena tasks generate --city NAME --suite arena --per-family N --seed S --out FILE [--split S]``.

Generates a ``cityarena`` suite (the seven 360CityArena-style families) from
the city's own data with :func:`urbanarena.tasks.generators.generate_suite`:
every navigation task is verified by the arena oracle
(:class:`urbanarena.agents.arena_oracle.ArenaOracleSolver`) through the real
env under ``cityarena-v1`` and ``urbanarena-v1`` within the step limit. Writes
FILE (task file, ``docs/task-schema.md``), the reference images beside it
(``<suite>_assets/``, paths relative to FILE's folder) and
``<FILE stem>.report.json`` (per family: produced, calibration against the
targets, unavailable families with the reason, verification failures). Prints
the per-family summary. Bad input (unknown city, a split the city is not the
area of, bad numbers) prints ``error: ...`` and exits 2.

Register in ``cli/main.py`` (``_register_plugins``)::

    from urbanarena.cli.tasks_cmd import tasks_app
    app.add_typer(tasks_app, name="tasks")
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from urbanarena.errors import UrbanArenaError

tasks_app = typer.Typer(help="Generate task suites.", no_args_is_help=True)


@tasks_app.callback()
def _tasks() -> None:
    """Generate task suites from a city's own data."""

SUITES = ("arena",)


def reference_renderer_for(city):
    """Hook for ``landmark_image`` reference photos: a callable ``(city, view) -> RGB uint8`` that renders
    ``extra.reference_view`` (position ``x_m``/``y_m``, ``eye_height_m``, ``yaw_deg``, ``pitch_deg``,
    ``hfov_deg``, ``width``, ``height``, ``lighting`` with ``sun_azimuth_deg``/``sun_elevation_deg``)
    with the 3D renderer (``render/scene3d``). Returns ``None`` until that renderer is wired here, and the
    suite then reports ``landmark_image`` unavailable with the reason."""
    return None


@tasks_app.command("generate")
def generate(
    city: str = typer.Option(..., "--city", help="CITY: a cached city name, a saved city directory, or KIND:PATH."),
    suite: str = typer.Option("arena", "--suite", help="Suite kind: 'arena' (the seven cityarena families)."),
    per_family: int = typer.Option(25, "--per-family", help="Tasks per family (mini 25, standard 100, full 300)."),
    seed: int = typer.Option(0, "--seed", help="Seed (same city + seed + options = same file)."),
    out: Path = typer.Option(..., "--out", help="Task file to write (JSON)."),
    split: Optional[str] = typer.Option(None, "--split", help="train|val|test: the city must be that split's area."),
    name: Optional[str] = typer.Option(None, "--name", help="Suite name (default <city>-arena7-v1)."),
    families: Optional[str] = typer.Option(None, "--families", help="Comma-separated subset of the families."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", help="Step limit tasks must be solvable in (50)."),
) -> None:
    """Generate a task suite on CITY and write it to FILE."""
    from urbanarena.agents.arena_oracle import ArenaOracleSolver
    from urbanarena.tasks.generators import ALL_KINDS, generate_suite, save_suite
    from urbanarena.world.resolve import resolve_city

    try:
        if suite not in SUITES:
            raise UrbanArenaError(f"--suite {suite!r}: known suites: {', '.join(SUITES)}")
        if per_family < 1:
            raise UrbanArenaError("--per-family must be at least 1")
        if max_steps is not None and max_steps < 1:
            raise UrbanArenaError("--max-steps must be at least 1")
        kinds = tuple(k.strip() for k in families.split(",") if k.strip()) if families else ALL_KINDS
        bad = [k for k in kinds if k not in ALL_KINDS]
        if bad:
            raise UrbanArenaError(f"--families: unknown {', '.join(bad)}; known: {', '.join(ALL_KINDS)}")
        c = resolve_city(city)
        solver = ArenaOracleSolver(c, max_steps=max_steps)
        result = generate_suite(c, per_family=per_family, seed=seed, kinds=kinds, split=split, name=name,
                                solver=solver, reference_renderer=reference_renderer_for(c), max_steps=max_steps)
        path = save_suite(result, out)
    except (UrbanArenaError, ValueError, OSError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        typer.echo(f"error: {msg}", err=True)
        raise typer.Exit(2) from None
    rep = result.report
    typer.echo(f"{path}: suite {result.name}, {len(result.task_file.tasks)} tasks on {c.name} "
               f"(seed {seed}{', split ' + split if split else ''}; oracle-verified within {rep['max_steps']} steps "
               f"under {', '.join(rep['protocols'])})")
    for kind, fam in rep["families"].items():
        if fam.get("unavailable"):
            typer.echo(f"  {kind:<18} unavailable: {fam['unavailable']}")
            continue
        line = f"  {kind:<18} {fam['produced']}/{fam['requested']}"
        for d, e in fam.get("calibration", {}).items():
            if "targets" in e:
                parts = ", ".join(f"{s} {e['means'][s]:.2f} (target {t:g})" for s, t in e["targets"].items())
                line += f"; {d}: {parts}"
        typer.echo(line)
        for d, sf in (fam.get("shortfall") or {}).items():
            typer.echo(f"  {'':<18} {d}: {sf['missing']} short: {sf['reason']}")
