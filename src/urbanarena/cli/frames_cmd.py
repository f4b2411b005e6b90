"""``urbanarena city from-frames FRAME... --out CITY_DIR`` — build a city from geotagged 360-degree frames.

Registered in :mod:`urbanarena.cli.main` with
``city_app.command("from-frames")(from_frames)``. The import rules (capture
order, headings, thinning, joining trajectories, validation) are those of
:mod:`urbanarena.world.importers.frames`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from urbanarena.cli.common import fail

from urbanarena.cli.video_cmd import BBOX_HELP, CONFIRM_HELP, OSM_HELP, _bbox, _echo_osm
from urbanarena.errors import UrbanArenaError
from urbanarena.world.importers.frames import DEFAULT_JOIN_RADIUS_M, DEFAULT_LICENCE, DEFAULT_MAX_GAP_M

#: exit status for bad input (same as the rest of the CLI)
EXIT_BAD_INPUT = 2


def from_frames(
    frames: Optional[List[Path]] = typer.Argument(
        None, help="Frame images and/or folders. Each folder (and each sub-folder with images) is one trajectory; "
                   "loose images form one trajectory per parent folder. A single .csv argument is a manifest.",
        show_default=False, metavar="FRAME",
    ),
    out: Path = typer.Option(..., "--out", help="CITY_DIR to write (a saved city directory)."),
    csv_file: Optional[Path] = typer.Option(
        None, "--csv", help="CSV manifest (filename, lat, lon, heading[, trajectory]) instead of FRAME arguments."
    ),
    spacing_m: float = typer.Option(0.0, "--spacing-m", min=0.0, help="Thin each trajectory to this minimum spacing (metres; 0 keeps all)."),
    join_radius_m: float = typer.Option(
        DEFAULT_JOIN_RADIUS_M, "--join-radius-m", help="Trajectories passing within this distance are joined (metres)."
    ),
    max_gap_m: float = typer.Option(
        DEFAULT_MAX_GAP_M, "--max-gap-m", help="Largest allowed distance between consecutive frames (metres)."
    ),
    merge: bool = typer.Option(
        True, "--merge/--connect",
        help="At a join, merge the two nearest frames into one junction node when within the radius (default), "
             "or always connect them with a pair of join edges.",
    ),
    name: Optional[str] = typer.Option(None, "--name", help="City name (default: the frames' folder name or the CSV stem)."),
    licence: Optional[str] = typer.Option(
        None, "--licence", "--license", help=f"Licence of the frames (SPDX id or text); default: {DEFAULT_LICENCE!r}."
    ),
    attribution: Optional[str] = typer.Option(None, "--attribution", help="Attribution text to show with the frames."),
    redistributable: Optional[bool] = typer.Option(
        None, "--redistributable/--not-redistributable",
        help="Whether the frames may be exported/shared (default: yes for open licences such as MIT or CC-BY-4.0, else no).",
        show_default=False,
    ),
    verify_pixels: bool = typer.Option(True, "--verify-pixels/--no-verify-pixels", help="Decode each image once to refuse corrupt files."),
    osm: Optional[Path] = typer.Option(None, "--osm", help=OSM_HELP),
    bbox: Optional[str] = typer.Option(None, "--bbox", help=BBOX_HELP),
    confirm_objects: bool = typer.Option(False, "--confirm-object-annotation", help=CONFIRM_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the import report as one JSON object on stdout."),
) -> None:
    """Build a pose-graph city from geotagged 360-degree frames (EXIF GPS + GPSImgDirection, or a CSV manifest).

    Frames become trajectories of nodes in capture order; trajectories are
    joined where they meet; the city (with its imagery: the frames themselves)
    is saved to CITY_DIR, which every command then accepts as CITY. With --osm
    the OpenStreetMap annotations of the area are joined to the frames.
    """
    from urbanarena.world.city_io import save_city
    from urbanarena.world.facts import graph_facts
    from urbanarena.tasks.generators.real_imagery import confirm_annotations
    from urbanarena.world.importers import frames as fr
    from urbanarena.world.importers.osm_join import join_osm

    try:
        bb = _bbox(bbox, osm)
        city = fr.import_frames(
            list(frames or []),
            csv_file,
            spacing_m=spacing_m,
            join_radius_m=join_radius_m,
            max_gap_m=max_gap_m,
            merge=merge,
            name=name,
            licence=licence,
            attribution=attribution,
            redistributable=redistributable,
            verify_pixels=verify_pixels,
        )
        if osm is not None:
            city = join_osm(city, osm, bbox=bb)
        if confirm_objects:
            confirm_annotations(city)
        directory = save_city(city, out)
    except (UrbanArenaError, ValueError) as e:
        raise fail(e) from None
    except OSError as e:
        typer.echo(f"error: cannot write {out}: {e.strerror or e}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    report = city.meta.extra
    if as_json:
        facts = graph_facts(city)
        facts["directory"] = str(directory)
        facts["import_report"] = report
        typer.echo(json.dumps(facts, default=str))
        return
    g = city.graph
    typer.echo(f"{city.name}: {g.number_of_nodes()} nodes, {g.number_of_edges()} edges -> {directory}")
    for t in report["trajectories"]:
        typer.echo(f"  trajectory {t['id']}: {t['frames']} frames, {t['nodes']} kept, {t['length_m']:.1f} m "
                   f"(order: {t['order']}; headings: {', '.join(f'{k} {v}' for k, v in t['heading_sources'].items())})")
    for j in report["joins"]:
        a, b = j["frames"]
        typer.echo(f"  join ({j['action']}): {a} [{j['trajectories'][0]}] ~ {b} [{j['trajectories'][1]}], "
                   f"{j['distance_m']:.2f} m apart{' (paths cross)' if j['crossing'] else ''}")
    if not report["joins"] and len(report["trajectories"]) > 1:
        typer.echo("  no joins: the trajectories never come within the join radius of each other")
    _echo_osm(city)
    for w in report["warnings"]:
        typer.echo(f"  warning: {w}", err=True)
