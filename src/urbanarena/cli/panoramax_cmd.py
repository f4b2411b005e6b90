"""``urbanarena city from-panoramax`` and ``urbanarena city licences`` — cities of real Panoramax photographs.

``city from-panoramax --bbox W,S,E,N --osm FILE --name NAME [--instance URL] [--spacing-m M]`` searches
the bbox on a Panoramax instance (STAC API, :mod:`urbanarena.world.importers.panoramax.client`),
downloads the pictures into ``<urbanarena home>/panoramax/<host>/`` (resumable, verified), builds the
pose graph on the OSM street network of the same bbox
(:mod:`urbanarena.world.importers.panoramax.build`) and saves it as the cached city NAME
(``--city NAME`` afterwards). Skipped pictures and gaps in the imagery are printed as warnings.

``city licences CITY`` lists every imagery licence of a city with its authors and picture count
(``--json``: also each picture's id and source URL), plus the street network's attribution, plus the
licences of the photographic render assets installed in the cache (``urbanarena assets status``; their
manifest is ``<urbanarena home>/assets/licences.json``).

Register in ``cli/main.py`` (``_register_plugins``)::

    from urbanarena.cli.panoramax_cmd import from_panoramax, licences
    city_app.command("from-panoramax")(from_panoramax)
    city_app.command("licences")(licences)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from urbanarena.cli.common import fail
from urbanarena.errors import UrbanArenaError
from urbanarena.world.importers.panoramax.client import DEFAULT_INSTANCE


def from_panoramax(
    bbox: str = typer.Option(..., "--bbox", help="Area W,S,E,N (WGS84 degrees): the picture search and the OSM crop."),
    osm: Path = typer.Option(..., "--osm", help="OSM file (.osm, .osm.pbf ...) covering the bbox: the street network."),
    name: str = typer.Option(..., "--name", help="Name to cache the city under (--city NAME)."),
    instance: str = typer.Option(DEFAULT_INSTANCE, "--instance", help="Panoramax instance URL (its STAC API is <URL>/api)."),
    spacing_m: float = typer.Option(5.0, "--spacing-m", help="Thin each sequence to this minimum spacing (metres)."),
    asset: str = typer.Option("hd", "--asset", help="Picture size to download: hd, sd or thumb."),
    snap_radius_m: float = typer.Option(15.0, "--snap-radius-m", help="Largest picture-to-street distance (metres)."),
    max_gap_m: float = typer.Option(20.0, "--max-gap-m", help="Longest stretch joined without pictures (metres)."),
    max_items: Optional[int] = typer.Option(None, "--max-items", help="Stop the search after this many pictures."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="Picture cache (default <urbanarena home>/panoramax)."),
    confirm_objects: bool = typer.Option(
        False, "--confirm-object-annotation",
        help="State that the OSM street objects match what the photographs show: allows counting tasks."),
    timeout_s: float = typer.Option(30.0, "--timeout-s", help="Connect/read timeout per request (seconds)."),
    retries: int = typer.Option(5, "--retries", help="Tries after the first per request on 429/5xx, timeouts and "
                                "dropped connections (a silent server fails after about (retries + 1) x timeout)."),
    force: bool = typer.Option(False, "--force", help="Replace a cached city of the same name."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (counts, directory, build report)."),
) -> None:
    """Build a city of real Panoramax 360-degree pictures joined on the OSM street network and cache it as NAME."""
    import warnings

    from urbanarena.build import parse_bbox
    from urbanarena.progress import ConsoleProgress
    from urbanarena.tasks.generators.real_imagery import confirm_annotations
    from urbanarena.world.importers.panoramax.build import PanoramaxInputWarning, build_city_from_panoramax
    from urbanarena.world.importers.panoramax.client import PanoramaxClient
    from urbanarena.world.resolve import save_named

    try:
        bb = parse_bbox(bbox)
        client = PanoramaxClient(instance, cache_dir=cache_dir, asset=asset, timeout_s=timeout_s, max_retries=retries)
        with warnings.catch_warnings(), ConsoleProgress() as progress:
            warnings.simplefilter("ignore", PanoramaxInputWarning)  # printed below from the report
            city = build_city_from_panoramax(bb, osm, name, client=client, spacing_m=spacing_m,
                                             max_items=max_items, snap_radius_m=snap_radius_m, max_gap_m=max_gap_m,
                                             progress=progress)
        if confirm_objects:
            confirm_annotations(city)
        directory = save_named(city, name, overwrite=force)
    except (UrbanArenaError, ValueError, OSError) as e:
        raise fail(e) from None
    rep = city.meta.extra["panoramax"]
    g = city.graph
    if as_json:
        out = {"name": city.name, "directory": str(directory), "nodes": g.number_of_nodes(),
               "edges": g.number_of_edges(), "report": rep}
        sys.stdout.write(json.dumps(out, ensure_ascii=False, default=str) + "\n")
        return
    typer.echo(f"{city.name}: {g.number_of_nodes()} pictures, {g.number_of_edges()} edges from "
               f"{rep['pictures_searched']} searched on {client.api} -> {directory} (use --city {city.name})")
    typer.echo(f"  junctions {sum(1 for j in rep['junctions'] if j['joined'] or j['merged'])}, "
               f"gaps {len(rep['gaps'])}, skipped pictures/sequences {len(rep['issues'])}, "
               f"downloads {rep['downloads']['fetched']} fetched, {rep['downloads']['cached']} cached, "
               f"{rep['downloads']['resumes']} resumed")
    for lic, v in rep["licences"].items():
        typer.echo(f"  imagery {lic}: {v['pictures']} pictures by {', '.join(v['authors'])}")
    for iss in rep["issues"]:
        typer.echo(f"  warning [{iss['kind']}]: {iss['message']}", err=True)
    for gap in rep["gaps"]:
        typer.echo(f"  gap [{gap['kind']}]: {gap['message']}", err=True)
    for pid, msg in sorted(rep.get("download_errors", {}).items()):
        typer.echo(f"  warning [download_failed]: {msg}", err=True)


def licences(
    city: str = typer.Argument(..., help="CITY: cached name, saved city directory or KIND:PATH."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object: licences with authors, pictures and URLs."),
) -> None:
    """List every imagery licence and author to cite for CITY (and the street network's attribution), and the
    licences of the installed photographic render assets."""
    from urbanarena import paths
    from urbanarena.render.assets import licence_summary
    from urbanarena.render.assets.fetch import LICENCES
    from urbanarena.world.importers.panoramax.build import licence_table
    from urbanarena.world.resolve import resolve_city

    try:
        c = resolve_city(city)
    except (UrbanArenaError, OSError) as e:
        raise fail(e) from None
    rows = licence_table(c) if any("licence" in d for _, d in c.graph.nodes(data=True)) else []
    im = c.meta.imagery or {}
    assets = licence_summary()
    manifest = paths.assets_dir() / LICENCES
    if as_json:
        out = {"city": c.name, "graph_licence": c.meta.licence, "attribution": c.meta.attribution,
               "imagery": {"source": im.get("source"), "licence": im.get("licence"),
                           "attribution": im.get("attribution")} if im else None,
               "licences": rows, "render_assets": assets,
               "render_assets_manifest": str(manifest) if assets else None}
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        return
    typer.echo(f"{c.name}: data {c.meta.licence or 'licence unknown'}"
               + (f" — credit: {c.meta.attribution}" if c.meta.attribution else ""))
    if rows:
        for r in rows:
            typer.echo(f"  {r['licence']}: {r['pictures']} picture(s) by {', '.join(r['authors'])}")
    elif im:
        typer.echo(f"  imagery ({im.get('source')}): {im.get('licence') or 'licence unknown'}"
                   + (f" — {im['attribution']}" if im.get("attribution") else ""))
    else:
        typer.echo("  no imagery (graph-only or rendered city)")
    if assets:
        typer.echo(f"  photographic render assets (every file in {manifest}):")
        for a in assets:
            typer.echo(f"    {a['licence']}: {a['files']} file(s) of {a['package']} {a['version']} by {a['authors']}")
    else:
        typer.echo("  photographic render assets: none fetched (urbanarena assets fetch)")


__all__ = ["from_panoramax", "licences"]
