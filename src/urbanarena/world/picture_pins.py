"""Pins of a real-imagery city's pictures: every picture by its id and sha256, with its licence and author.

A frozen suite of a city of real photographs (Panoramax, ``city from-frames``, ``city from-video``) records
its pictures in the manifest's ``pictures`` block (:func:`picture_pins`), so that a lab can publish the
manifest without the pictures and anyone can rebuild the same city and verify every picture
(``urbanarena tasks fetch``, :mod:`urbanarena.tasks.frozen_fetch`):

* **Panoramax** (``source: "panoramax"``, :mod:`urbanarena.world.importers.panoramax.pins`): the pictures
  have public ids; the block holds the instance, bbox, asset and build settings, the OSM file's sha256, every
  searched picture id in search order (``inputs``: the downloaded ones with ``sha256`` and ``bytes``) and
  every picture of the graph (``pictures``: ``id``, ``node``, ``sequence_id``, ``file``, ``sha256``,
  ``bytes``, ``licence``, ``author``, ``source_url``, ``captured_at``); a rebuild downloads them again by id.
* **frames / video** (``source: "frames"`` / ``"video"``): no public ids; ``supplied: true`` says the
  pictures must be supplied (``--pictures DIR``) and each ``pictures`` entry names its file (``file``: the
  path relative to the imagery folder, which is also its id), ``captured_at``, ``sha256``, ``bytes``,
  ``licence``, ``author``; :func:`verify_supplied` checks a folder against them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from urbanarena.errors import UrbanArenaError
from urbanarena.hashing import file_sha256
from urbanarena.world.city import City
from urbanarena.world.pins_base import PINS_VERSION, PinnedPictureError, licence_summary

def imagery_source_kind(city: City) -> str | None:
    """The city's imagery ``source`` (``panoramax``, ``frames``, ``video``, ``rendered`` ...; ``None`` without
    imagery)."""
    return (city.meta.imagery or {}).get("source")


def picture_pins(city: City) -> dict[str, Any] | None:
    """The ``pictures`` block of a frozen suite of ``city`` (module docstring), or ``None`` when the city is not
    made of real pictures (rendered or graph-only cities need no pins).

    Raises:
        UrbanArenaError: a picture file of the city is missing (names it), or a Panoramax city built before its
            search was recorded (rebuild it with ``city from-panoramax``).
    """
    kind = imagery_source_kind(city)
    if kind == "panoramax":
        from urbanarena.world.importers.panoramax.pins import panoramax_pins

        return panoramax_pins(city)
    if kind in ("frames", "video"):
        return _file_pins(city, kind)
    return None


def _file_pins(city: City, kind: str) -> dict[str, Any]:
    from urbanarena.world.imagery import imagery_of

    im = imagery_of(city, "pinning its pictures")
    pics = []
    for n, d in city.graph.nodes(data=True):
        path = im.path_for(n)
        if not path.is_file():
            raise UrbanArenaError(f"city {city.name!r}: picture of node {n} not found at {path}: cannot pin it")
        pics.append({"id": im.relative_path(n), "node": n, "file": im.relative_path(n),
                     "captured_at": d.get("captured_at"), "sha256": file_sha256(path), "bytes": path.stat().st_size,
                     "licence": d.get("licence") or im.licence, "author": d.get("author") or im.attribution})
    return {"version": PINS_VERSION, "source": kind, "supplied": True, "count": len(pics),
            "licences": licence_summary(pics), "pictures": pics}


def verify_supplied(pins: Mapping[str, Any], folder: str | Path) -> dict[str, Path]:
    """Check a folder of supplied pictures against ``pins`` (a frames/video block): every pinned ``file`` must
    exist under ``folder`` at its relative path with the pinned sha256.

    Returns: ``{picture id: path}`` of the verified files.
    Raises:
        PinnedPictureError: missing or changed pictures, each named by its id (all of them are checked first).
        UrbanArenaError: ``folder`` is not a directory.
    """
    root = Path(folder)
    if not root.is_dir():
        raise UrbanArenaError(f"{root}: pictures folder not found")
    problems: dict[str, str] = {}
    found: dict[str, Path] = {}
    for p in pins.get("pictures") or []:
        rel = str(p["file"])
        path = root / rel
        if ".." in Path(rel).parts or Path(rel).is_absolute():
            problems[str(p["id"])] = f"pinned file name {rel!r} leaves the pictures folder"
        elif not path.is_file():
            problems[str(p["id"])] = f"missing: no file {path}"
        else:
            got = file_sha256(path)
            if got != p["sha256"]:
                problems[str(p["id"])] = f"changed: {path} has sha256 {got}, pinned {p['sha256']}"
            else:
                found[str(p["id"])] = path
    if problems:
        raise PinnedPictureError(str(root), problems)
    return found


__all__ = ["PINS_VERSION", "PinnedPictureError", "imagery_source_kind", "picture_pins", "verify_supplied"]
