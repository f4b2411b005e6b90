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

On a city of real photographs (Panoramax, frames, video) the manifest pins every picture by id and sha256 with
its licence and author, and the families its views exclude are listed (``excluded_families``).
``--confirm-landmark-references [--reference-pictures DIR_OR_CSV]`` adds ``landmark_image`` with references cut
from other real pictures (as ``tasks generate``); the chosen pictures are pinned too (``reference_pictures``,
:mod:`urbanarena.tasks.frozen_refs`).
``urbanarena tasks fetch MANIFEST [--out DIR] [--osm FILE] [--instance URL] [--pictures DIR --city CITY]
[--reference-pictures DIR]``
rebuilds that city and suite elsewhere (:mod:`urbanarena.tasks.frozen_fetch`; docs/real-imagery.md).
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
    reference_pictures: Optional[Path] = typer.Option(
        None, "--reference-pictures", help="Real-imagery city: a folder or CSV of geotagged 360-degree pictures "
        "other than the city's, cut into landmark_image references (a Panoramax city searches its STAC instead); "
        "pinned in the manifest by id and sha256."),
    confirm_landmark_references: bool = typer.Option(
        False, "--confirm-landmark-references", help="Real-imagery city: you have looked at the reference "
        "pictures (their geometry is checked, the storefront's visibility in their pixels is not); without it "
        "landmark_image is an excluded family there."),
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
        from urbanarena.cli.tasks_cmd import real_references_for
        from urbanarena.tasks.generators import ALL_KINDS

        real = real_references_for(c, ALL_KINDS, False, reference_pictures, confirm_landmark_references)
        size_list = tuple(s.strip() for s in sizes.split(",") if s.strip())
        if render_style is None and c.meta.imagery is not None:
            style = "realistic"   # a city of photographs draws no street view: its suites keep the style and name (-v2)
        else:                     # they had before photo became the default, and need no photo assets
            style = checked_style(render_style, fallback=False)   # photo without its assets: freeze refuses
        folder = out or user_dir() / (name or default_suite_name(c.name, style))
        fs = freeze(c, folder, suite=name, seed=seed, sizes=size_list, split=split or None,
                    solver=ArenaOracleSolver(c), build=_build_hint(c),
                    log=lambda s: typer.echo(s, err=True), render_style=style, real_references=real)
    except (UrbanArenaError, ValueError, OSError) as e:
        raise fail(e) from None
    for size in fs.sizes():
        e = fs.manifest["sizes"][size]
        typer.echo(f"{fs.directory}: {e['suite_name']}: {e['tasks']} tasks "
                   f"({', '.join(f'{k} {v}' for k, v in e['by_family'].items())}), {len(e['assets'])} images")
    typer.echo(f"city {c.name} hash {c.content_hash[:12]}...; fingerprint: "
               f"{len(fs.manifest.get('panorama_fingerprint') or {})} panoramas")


def _build_hint(c) -> str:
    """How another machine gets the city (the manifest's ``city.build``)."""
    from urbanarena.world.picture_pins import imagery_source_kind

    kind = imagery_source_kind(c)
    if kind == "panoramax":
        osm = Path(str((c.meta.source or {}).get("osm_file") or "FILE")).name
        return f"urbanarena tasks fetch MANIFEST --osm {osm}"
    if kind in ("frames", "video"):
        return (f"urbanarena city from-{kind} on the pinned pictures (options: the city's import report), then "
                "urbanarena tasks fetch MANIFEST --pictures DIR --city CITY")
    return f"urbanarena city build {c.name}"


def fetch_cmd(
    manifest: Path = typer.Argument(..., help="A frozen real-imagery suite: its manifest.json or folder."),
    out: Optional[Path] = typer.Option(None, "--out", help="Suite folder to write (default <home>/frozen/<suite>)."),
    osm: Optional[Path] = typer.Option(None, "--osm", help="Panoramax: the OSM file the city was built on (the "
                                                           "manifest pins its sha256)."),
    instance: Optional[str] = typer.Option(None, "--instance", help="Panoramax: instance URL (default: the pinned "
                                                                   "one; a mirror must serve the same items)."),
    pictures: Optional[Path] = typer.Option(None, "--pictures", help="Frames/video: folder of the supplied pictures "
                                                                     "(pinned relative paths; verified by sha256)."),
    city: Optional[str] = typer.Option(None, "--city", help="Frames/video: the city built from --pictures."),
    reference_pictures: Optional[Path] = typer.Option(
        None, "--reference-pictures", help="The suite's supplied landmark_image reference pictures (pinned file "
        "names under it; default --pictures); Panoramax ones are downloaded by id."),
    timeout_s: float = typer.Option(30.0, "--timeout-s", help="Panoramax: connect/read timeout per request (seconds)."),
    retries: int = typer.Option(5, "--retries", help="Panoramax: tries after the first per request."),
    force: bool = typer.Option(False, "--force", help="Replace an existing --out and a cached city of the same name."),
) -> None:
    """Rebuild a frozen real-imagery suite and its city from the manifest: Panoramax pictures are downloaded again by
    id, frames/video pictures supplied with --pictures; every picture is checked against its pinned sha256 (a missing
    or changed one is named by id, exit 2, nothing written), the city's hash and every task file must match."""
    import warnings

    from urbanarena.agents.arena_oracle import ArenaOracleSolver
    from urbanarena.progress import ConsoleProgress
    from urbanarena.tasks.frozen_fetch import fetch_suite, load_manifest
    from urbanarena.world.resolve import resolve_city

    try:
        fs = load_manifest(manifest)
        pins = fs.manifest.get("pictures") or {}
        client = None
        if pins.get("source") == "panoramax":
            from urbanarena.world.importers.panoramax.client import PanoramaxClient

            client = PanoramaxClient(instance or str(pins.get("instance")), asset=str(pins.get("asset") or "hd"),
                                     timeout_s=timeout_s, max_retries=retries)
        with warnings.catch_warnings(), ConsoleProgress() as progress:
            # the build's skipped pictures are the original build's too (in city.json extra.panoramax.issues)
            warnings.simplefilter("ignore", UserWarning)
            res = fetch_suite(fs.directory, solver_for=ArenaOracleSolver, out_dir=out, osm=osm, client=client,
                              pictures_dir=pictures, city=resolve_city(city) if city else None, force=force,
                              progress=progress, log=lambda s: typer.echo(s, err=True),
                              reference_pictures_dir=reference_pictures)
    except (UrbanArenaError, ValueError, OSError) as e:
        raise fail(e) from None
    for w in res.warnings:
        typer.echo(f"warning: {w}", err=True)
    typer.echo(f"{res.suite_dir}: {fs.name}: {', '.join(f'{s} {n} tasks' for s, n in res.sizes.items())}, "
               f"task files and images verified")
    typer.echo(f"city {res.city_name} -> {res.city_dir} ({res.pictures} pictures verified by sha256; "
               f"use --city {res.city_name})")
