"""``urbanarena tasks freeze --city NAME [--out DIR] [--sizes mini,standard,full] [--seed S]``.

Generates the city's arena suite at each size and freezes it
(:mod:`urbanarena.tasks.frozen`): gzip'd task files plus a manifest with the
city, task-file, reference-image and fingerprint-panorama hashes. Without
``--out`` it goes to ``<urbanarena home>/frozen/<suite>/``, where ``--tasks
default|mini|standard|full`` find it for that city. ``--redraw-images
REASON`` keeps the task files of the suite already at ``--out`` and re-pins
only its images and fingerprint panoramas to this renderer
(:func:`urbanarena.tasks.frozen.redraw_images`; the reason is recorded in the
manifest). Every ``landmark_image`` reference of reference scheme 4 must show its goal: the generator redraws
cameras that hide it, and a suite still holding one without a passing goal-share check is refused
(:func:`urbanarena.tasks.frozen.unchecked_references`). Bad input prints ``error: ...`` and exits 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from urbanarena.cli.common import checked_style, fail, render_style_option

from urbanarena.errors import UrbanArenaError


def freeze_cmd(
    city: str = typer.Option(..., "--city", help="CITY: a cached city name, a saved city directory, or KIND:PATH."),
    out: Optional[Path] = typer.Option(None, "--out", help="Suite folder (default <home>/frozen/<suite>)."),
    sizes: str = typer.Option("mini,standard,full", "--sizes", help="Comma-separated sizes: mini, standard, full."),
    seed: int = typer.Option(0, "--seed", help="Generator seed."),
    split: Optional[str] = typer.Option("test", "--split", help="Split area the city must be ('' for none)."),
    name: Optional[str] = typer.Option(None, "--name", help="Suite name (default <city>-arena7-v2 for the realistic "
                                                             "style, -v1 for flat; helsinki: helsinki-arena7-v4, "
                                                             "helsinki-core: v1/v2)."),
    render_style: str = render_style_option(),
    redraw: Optional[str] = typer.Option(None, "--redraw-images", metavar="REASON",
                                         help="Keep the task files of the suite at --out; redraw its images and "
                                              "fingerprints in this renderer and record REASON (the style is "
                                              "the suite's own; --sizes/--seed/--split/--name are not used)."),
) -> None:
    """Generate and freeze a city's arena suite (task files + hashes) so every machine runs the same tasks."""
    from urbanarena.agents.arena_oracle import ArenaOracleSolver
    from urbanarena.tasks.frozen import default_suite_name, freeze, load_frozen, redraw_images, user_dir
    from urbanarena.world.resolve import resolve_city

    try:
        c = resolve_city(city)
        if redraw is not None:
            if out is None or not redraw.strip():
                raise UrbanArenaError("--redraw-images needs --out (the frozen suite's folder) and a reason")
            from urbanarena.progress import ConsoleProgress

            with ConsoleProgress() as progress:
                fs = redraw_images(load_frozen(out), c, reason=redraw.strip(), log=lambda s: typer.echo(s, err=True),
                                   progress=progress)
            last = fs.manifest["images_redrawn"][-1]
            typer.echo(f"{fs.directory}: {fs.name}: {last['assets_changed']} images and "
                       f"{last['panoramas_changed']} fingerprint panoramas changed; task files kept")
            return
        size_list = tuple(s.strip() for s in sizes.split(",") if s.strip())
        style = checked_style(render_style)
        folder = out or user_dir() / (name or default_suite_name(c.name, style))
        fs = freeze(c, folder, suite=name, seed=seed, sizes=size_list, split=split or None,
                    solver=ArenaOracleSolver(c), build=f"urbanarena city build {c.name}",
                    log=lambda s: typer.echo(s, err=True), render_style=style)
    except (UrbanArenaError, ValueError, OSError) as e:
        raise fail(e) from None
    for size in fs.sizes():
        e = fs.manifest["sizes"][size]
        typer.echo(f"{fs.directory}: {e['suite_name']}: {e['tasks']} tasks "
                   f"({', '.join(f'{k} {v}' for k, v in e['by_family'].items())}), {len(e['assets'])} images")
    typer.echo(f"city {c.name} hash {c.content_hash[:12]}...; fingerprint: "
               f"{len(fs.manifest.get('panorama_fingerprint') or {})} panoramas")
