"""``urbanarena city from-video VIDEO --gpx TRACK.gpx --out CITY_DIR`` — a city from a 360-degree video and its GPS
track.

Registered in :mod:`urbanarena.cli.main` with ``city_app.command("from-video")(from_video)``. The rules (video
time, sampling every ``--spacing-m`` metres, blur and duplicate rejection, headings, joins where the track
crosses itself, errors) are those of :mod:`urbanarena.world.importers.video`; ``--osm`` joins OpenStreetMap
annotations as :mod:`urbanarena.world.importers.osm_join` describes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from urbanarena.cli.common import fail
from urbanarena.errors import UrbanArenaError
from urbanarena.world.importers.frames import DEFAULT_LICENCE
from urbanarena.world.importers.gpx import DEFAULT_MAX_SPEED_MPS
from urbanarena.world.importers.video import DEFAULT_BLUR_MIN_VAR, DEFAULT_DUPLICATE_MAX_DIFF, DEFAULT_SPACING_M

#: help of ``--osm`` (from-frames and from-video)
OSM_HELP = ("OSM file (.osm, .osm.pbf ...) of the area: its POIs, street names, buildings and street objects are "
            "joined to the picture nodes, so the place-based task families can be generated.")
BBOX_HELP = "Area W,S,E,N (WGS84 degrees) to read from the OSM file (default: the pictures' extent + 100 m)."
CONFIRM_HELP = "State that the OSM street objects match what the pictures show: allows counting tasks (with --osm)."


def from_video(
    video: Path = typer.Argument(..., help="Equirectangular 360-degree video (MP4, MOV ...; 2:1 frames).",
                                 show_default=False),
    gpx: Optional[Path] = typer.Option(None, "--gpx", help="GPS track recorded with the video (GPX 1.1). Required: "
                                       "tracks embedded in the video (GoPro GPMF, CAMM) are not read yet."),
    out: Path = typer.Option(..., "--out", help="CITY_DIR to write (the saved city and its frames/ folder)."),
    spacing_m: float = typer.Option(DEFAULT_SPACING_M, "--spacing-m", help="Sample a frame every this many metres "
                                    "along the track."),
    time_offset_s: float = typer.Option(0.0, "--time-offset-s", help="Seconds added to the video's clock to match "
                                        "the track's (e.g. -7200 for a camera set to local time UTC+2)."),
    video_start: Optional[str] = typer.Option(None, "--video-start", help="The video's start time (ISO 8601, "
                                              "UTC unless a zone is given); default: the container's creation_time."),
    blur_min: float = typer.Option(DEFAULT_BLUR_MIN_VAR, "--blur-min", help="Least sharpness (variance of the "
                                   "Laplacian at 512 px wide) of a sampled frame; 0 keeps blurred frames."),
    duplicate_max: float = typer.Option(DEFAULT_DUPLICATE_MAX_DIFF, "--duplicate-max", help="Frames within this "
                                        "mean grey-level difference of the last sample are duplicates; 0: off."),
    max_speed_mps: float = typer.Option(DEFAULT_MAX_SPEED_MPS, "--max-speed-mps", help="Track points farther apart "
                                        "than this speed allows are a jump (an error)."),
    name: Optional[str] = typer.Option(None, "--name", help="City name (default: the video's file name)."),
    licence: Optional[str] = typer.Option(None, "--licence", "--license", help="Licence of the footage (SPDX id or "
                                          f"text), recorded per frame; default: {DEFAULT_LICENCE!r}."),
    author: Optional[str] = typer.Option(None, "--author", help="Author of the footage, recorded per frame and as "
                                         "the imagery's attribution."),
    redistributable: Optional[bool] = typer.Option(
        None, "--redistributable/--not-redistributable",
        help="Whether the frames may be exported (default: yes for open licences such as CC-BY-4.0, else no).",
        show_default=False),
    osm: Optional[Path] = typer.Option(None, "--osm", help=OSM_HELP),
    bbox: Optional[str] = typer.Option(None, "--bbox", help=BBOX_HELP),
    confirm_objects: bool = typer.Option(False, "--confirm-object-annotation", help=CONFIRM_HELP),
    force: bool = typer.Option(False, "--force", help="Replace an existing CITY_DIR."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (counts, directory, report)."),
) -> None:
    """Build a city from an equirectangular 360-degree video and its GPS track: frames every --spacing-m metres."""
    from urbanarena.progress import ConsoleProgress
    from urbanarena.tasks.generators.real_imagery import confirm_annotations
    from urbanarena.world.importers.video import import_video

    try:
        bb = _bbox(bbox, osm)
        with ConsoleProgress() as progress:
            city = import_video(video, gpx, out, spacing_m=spacing_m, time_offset_s=time_offset_s,
                                video_start=video_start, blur_min_var=blur_min, duplicate_max_diff=duplicate_max,
                                max_speed_mps=max_speed_mps, name=name, licence=licence, author=author,
                                redistributable=redistributable, osm=osm, bbox=bb, overwrite=force,
                                progress=progress,
                                finish=confirm_annotations if confirm_objects else None)
    except (UrbanArenaError, ValueError, OSError) as e:
        raise fail(e) from None
    rep = city.meta.extra["video"]
    g = city.graph
    if as_json:
        sys.stdout.write(json.dumps({"name": city.name, "directory": str(out), "nodes": g.number_of_nodes(),
                                     "edges": g.number_of_edges(), "report": city.meta.extra}, default=str) + "\n")
        return
    typer.echo(f"{city.name}: {g.number_of_nodes()} nodes, {g.number_of_edges()} edges -> {out}")
    typer.echo(f"  {rep['samples']} frames sampled every {rep['spacing_m']:g} m from {rep['frames_decoded']} decoded "
               f"({rep['before_track']} before / {rep['after_track']} after the track; skipped targets: blur "
               f"{rep['skipped_blur']}, duplicate {rep['skipped_duplicate']}, no frame {rep['skipped_no_frame']})")
    for j in city.meta.extra["joins"]:
        a, b = j["frames"]
        typer.echo(f"  join ({j['action']}): {a} ~ {b}, {j['distance_m']:.2f} m apart")
    _echo_osm(city)


def _bbox(text: Optional[str], osm: Optional[Path]) -> Optional[tuple[float, float, float, float]]:
    from urbanarena.build import parse_bbox

    if text is None:
        return None
    if osm is None:
        raise UrbanArenaError("--bbox needs --osm (it is the area read from the OSM file)")
    return parse_bbox(text)


def _echo_osm(city) -> None:
    j = city.meta.extra.get("osm_join")
    if not j:
        return
    typer.echo(f"  OSM: {j['pois']} POIs ({j['pois_within_snap_radius']} within {j['snap_radius_m']:g} m of a "
               f"picture), {j['objects']} street objects, {j['buildings']} buildings, {j['streets_with_nodes']} of "
               f"{j['streets']} streets with pictures; {len(j['off_street'])} picture(s) off every street")


__all__ = ["from_video"]
