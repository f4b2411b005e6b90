"""Pin a Panoramax city's pictures by id and sha256, and rebuild the same city from the pins.

:func:`panoramax_pins` writes the ``pictures`` block of a frozen suite (:mod:`urbanarena.world.picture_pins`)
from a city built by :func:`~.build.build_city_from_panoramax` (whose report records the searched ids in
search order, ``extra.panoramax.searched``): the instance, bbox, asset, the build settings, the OSM file's
name and sha256, the confirmed annotations, the download errors of the build, every searched picture
(``inputs``: ``id``, and for each downloaded one ``sha256`` and ``bytes`` of the cached file) and every
picture of the graph with its licence and author (``pictures``).

:func:`rebuild_panoramax_city` makes the same city on another machine:

1. the OSM file must have the pinned sha256 (else :class:`~urbanarena.errors.UrbanArenaError` naming it);
2. the bbox is searched again on the instance (the same STAC search as the build, without ``max_items``);
   every pinned id must be found — a missing one is a :class:`~urbanarena.world.picture_pins.PinnedPictureError`
   naming it (pictures added since are ignored);
3. the pictures the build downloaded are downloaded again into a temporary folder beside the cache (the
   client verifies each against the server's ``file:checksum``), and each file's sha256 must equal its pin —
   a changed one is named; all are checked before the error, and on any error the temporary folder is
   removed, so nothing unverified reaches the cache;
4. the verified files are moved into the cache (``<cache_dir>/<host>/``) and the pose graph is built from
   the pictures in the pinned search order with the pinned settings (:func:`~.build.finish_city`, the
   build's own last step), the build's download errors reproduced as recorded (their pictures are not
   asked for again). The confirmed annotations (``confirmed_annotations``) are the caller's to apply
   (:func:`urbanarena.tasks.generators.real_imagery.confirm_annotations`), as ``city from-panoramax`` does.

The caller compares the result's content hash with the suite's (:mod:`urbanarena.tasks.frozen_fetch`).
"""

from __future__ import annotations

import copy
from dataclasses import asdict
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Mapping

from urbanarena.errors import UrbanArenaError
from urbanarena.hashing import file_sha256
from urbanarena.progress import Progress, counted
from urbanarena.world.city import City
from urbanarena.world.pins_base import PINS_VERSION, PinnedPictureError, licence_summary

#: issue kinds of pictures the build never downloads (their metadata already disqualifies them)
NOT_DOWNLOADED = ("bad_id", "bad_position", "no_heading", "not_360")
#: build settings recorded in the report and passed again to the rebuild
SETTINGS = ("spacing_m", "snap_radius_m", "junction_radius_m", "max_gap_m", "min_separation_m")


def panoramax_pins(city: City) -> dict[str, Any]:
    """The ``pictures`` block of a Panoramax city (module docstring).

    Raises:
        UrbanArenaError: the city's report lacks the searched ids (built before they were recorded: build it
            again with ``urbanarena city from-panoramax``), or a downloaded picture's file is not in the cache.
    """
    from urbanarena.world.imagery import imagery_of
    from urbanarena.world.importers.panoramax.client import cache_file_name

    rep = (city.meta.extra or {}).get("panoramax") or {}
    src = city.meta.source or {}
    if "searched" not in rep:
        raise UrbanArenaError(f"city {city.name!r}: its build report does not record the searched pictures (built "
                              "by an older urbanarena); build it again with `urbanarena city from-panoramax` to "
                              "pin its pictures")
    root = Path(imagery_of(city, "pinning its pictures").root)
    asset = str(src.get("asset") or "hd")
    errors = dict(rep.get("download_errors") or {})
    skipped = {i.get("picture") for i in rep.get("issues") or [] if i.get("kind") in NOT_DOWNLOADED}
    inputs: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    for pid in (str(p) for p in rep["searched"]):  # a repeated id stays repeated: the build counts it
        if pid in by_id:
            inputs.append(by_id[pid])
            continue
        entry: dict[str, Any] = {"id": pid}
        if pid not in errors and pid not in skipped:
            f = root / cache_file_name(pid, asset)
            if not f.is_file():
                raise UrbanArenaError(f"city {city.name!r}: picture {pid} was downloaded by the build but its file "
                                      f"{f} is not in the cache: cannot pin it (build the city again)")
            entry.update(file=f.name, sha256=file_sha256(f), bytes=f.stat().st_size)
        inputs.append(entry)
        by_id[pid] = entry
    pictures = []
    for n, d in city.graph.nodes(data=True):
        pid = str(d.get("picture_id") or n)
        pin = by_id.get(pid, {})
        pictures.append({"id": pid, "node": n, "sequence_id": d.get("sequence_id"), "file": d.get("image"),
                         "sha256": pin.get("sha256"), "bytes": pin.get("bytes"), "licence": d.get("licence"),
                         "author": d.get("author"), "source_url": d.get("source_url"),
                         "captured_at": d.get("captured_at")})
    osm_file = src.get("osm_file")
    return {
        "version": PINS_VERSION, "source": "panoramax", "supplied": False,
        "instance": src.get("instance"), "bbox": src.get("bbox"), "asset": asset,
        "settings": {k: rep.get(k) for k in SETTINGS},
        "max_items": rep.get("max_items"), "osm_spacing_m": rep.get("osm_spacing_m"),
        "osm": {"file": Path(osm_file).name if osm_file else None, "sha256": src.get("osm_sha256")},
        "confirmed_annotations": sorted(((city.meta.extra or {}).get("real_imagery") or {})
                                        .get("confirmed_annotations") or []),
        "download_errors": errors, "count": len(pictures), "licences": licence_summary(pictures),
        "inputs": inputs, "pictures": pictures,
    }


def rebuild_panoramax_city(pins: Mapping[str, Any], name: str, osm_path: str | Path, client: Any, *,
                           progress: Progress | None = None) -> City:
    """Rebuild the city ``name`` from a Panoramax ``pictures`` block through ``client`` (a
    :class:`~.client.PanoramaxClient` of the pinned instance or a mirror; its cache is where the verified
    pictures go). Steps and guarantees in the module docstring; ``progress`` hears each download (step
    ``download pinned pictures``).

    Raises:
        UrbanArenaError: the OSM file's sha256 differs from the pinned one (names the file).
        PinnedPictureError: pictures missing from the instance or whose bytes differ from their pins (each by id).
        PanoramaxError: the search fails after retries.
        CityFormatError: as :func:`~.build.build_pose_graph`.
    """
    from urbanarena.world.importers.osm import import_city as import_osm
    from urbanarena.world.importers.panoramax.build import finish_city
    from urbanarena.world.importers.panoramax.client import DownloadStats, PanoramaxError
    from urbanarena.world.importers.panoramax.client import cache_file_name

    osm_path = Path(osm_path)
    want_osm = (pins.get("osm") or {}).get("sha256")
    got_osm = file_sha256(osm_path)
    if want_osm and got_osm != want_osm:
        raise UrbanArenaError(f"{osm_path}: sha256 {got_osm} differs from the pinned OSM file's {want_osm} "
                              f"({(pins.get('osm') or {}).get('file')}): give the OSM file the city was built from")
    bbox = tuple(float(v) for v in pins["bbox"])
    osm_spacing_m = float(pins.get("osm_spacing_m") or 10.0)
    osm_city = import_osm(osm_path, bbox=bbox, spacing_m=osm_spacing_m, name=name)
    searched = [str(e["id"]) for e in pins["inputs"]]
    found: dict[str, Any] = {}
    for p in client.search(bbox):
        found.setdefault(p.id, p)
    missing = {pid: f"missing: not served by {client.api} in the bbox any more" for pid in searched if pid not in found}
    if missing:
        raise PinnedPictureError(client.api, missing)
    client.cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".fetch-", dir=client.cache_dir.parent))
    try:
        staging = copy.copy(client)  # the same instance and settings; downloads go to the temporary folder
        staging.cache_dir = tmp
        staging.stats = DownloadStats()
        staging._session = None
        problems: dict[str, str] = {}
        pinned = list({str(e["id"]): e for e in pins["inputs"] if e.get("sha256")}.values())
        for e in counted(progress, "download pinned pictures", pinned):
            p = found[str(e["id"])]
            try:
                f = staging.fetch(p)
            except PanoramaxError as err:
                problems[p.id] = f"download failed: {err}"
                continue
            got = file_sha256(f)
            if got != e["sha256"]:
                problems[p.id] = f"changed: {client.api} serves bytes with sha256 {got}, pinned {e['sha256']}"
        if problems:
            raise PinnedPictureError(client.api, problems)
        for e in pinned:
            p = found[str(e["id"])]
            dest = client.cache_dir / cache_file_name(p.id, p.asset)
            os.replace(tmp / cache_file_name(p.id, p.asset), dest)
            p.local_path = str(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish_city([found[pid] for pid in searched], osm_city, osm_path, name,
                       api=client.api, asset=str(pins.get("asset") or client.asset), bbox=bbox,
                       spacing_m=float(pins["settings"]["spacing_m"]), max_items=pins.get("max_items"),
                       osm_spacing_m=osm_spacing_m, download_errors=dict(pins.get("download_errors") or {}),
                       downloads=asdict(staging.stats), image_dir=client.cache_dir,
                       **{k: pins["settings"][k] for k in SETTINGS if k != "spacing_m"
                          and pins["settings"].get(k) is not None})


__all__ = ["NOT_DOWNLOADED", "SETTINGS", "panoramax_pins", "rebuild_panoramax_city"]
