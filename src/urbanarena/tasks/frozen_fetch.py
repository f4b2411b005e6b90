"""Rebuild a frozen real-imagery suite and its city from the manifest alone (``urbanarena tasks fetch``).

A frozen suite of a city of real photographs pins every picture (manifest ``pictures`` block,
:mod:`urbanarena.world.picture_pins`). :func:`fetch_suite` makes the same city and the same suite on
another machine, so that a lab can publish the manifest without redistributing the pictures:

1. **City.** Panoramax (``pictures.source == "panoramax"``): the pictures are searched and downloaded
   again by id from the instance (:func:`urbanarena.world.importers.panoramax.pins.rebuild_panoramax_city`:
   the OSM file must have the pinned sha256, every picture must be served with its pinned sha256, the pose
   graph is built with the pinned settings), then the pinned confirmations are applied. Frames and video
   cities have no public ids: the pictures must be supplied (``pictures_dir``), each file is verified by
   its sha256 (:func:`urbanarena.world.picture_pins.verify_supplied`), and the city built from them
   (``city from-frames``/``from-video`` on that folder, as the manifest's ``city.build`` says) is given as
   ``city``. Missing or changed pictures raise
   :class:`~urbanarena.world.picture_pins.PinnedPictureError` naming each by its id.
2. **Check.** The city's content hash (and annotations hash, when pinned) must equal the manifest's.
3. **Reference pictures.** When the manifest pins ``landmark_image`` reference pictures (``reference_pictures``,
   :mod:`urbanarena.tasks.frozen_refs`), each is got again — a Panoramax one by id from the instance, a supplied
   one from ``reference_pictures_dir`` (default ``pictures_dir``) — and checked against its sha256 (a missing or
   changed one is named by id); the suite is generated with exactly these pictures as references.
4. **Suite.** Every size is generated again (:func:`urbanarena.tasks.frozen.freeze` with the manifest's
   name, seed, split and render style) into a temporary folder beside ``out_dir``; each task file's sha256
   and every reference image's pixel hash must equal the manifest's (fingerprint panoramas that differ only
   warn, as in runs: another GL driver). The published ``manifest.json`` is copied byte for byte.
5. **Write.** Only then is the city saved into the cache (atomically) and the temporary folder renamed to
   ``out_dir``: any failure leaves neither a half-written suite nor a city.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from urbanarena.errors import UrbanArenaError
from urbanarena.progress import Progress
from urbanarena.tasks.frozen import FrozenSuite, FrozenSuiteError, freeze, load_frozen, user_dir
from urbanarena.world.city import City


@dataclass
class FetchResult:
    """What :func:`fetch_suite` wrote: the suite folder, the cached city's folder and name, the picture count,
    the sizes and task counts verified, and warnings (fingerprint panoramas that differ)."""

    suite_dir: Path
    city_dir: Path
    city_name: str
    pictures: int
    sizes: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def load_manifest(path: str | Path) -> FrozenSuite:
    """A frozen suite from its ``manifest.json`` or its folder.

    Raises:
        TaskFormatError: not a frozen suite manifest (names the file).
    """
    p = Path(path)
    return load_frozen(p.parent if p.name == "manifest.json" or p.is_file() else p)


def fetch_suite(manifest: str | Path, *, solver_for: Callable[[City], Any], out_dir: str | Path | None = None,
                osm: str | Path | None = None, client: Any = None, pictures_dir: str | Path | None = None,
                city: City | None = None, force: bool = False, progress: Progress | None = None,
                log: Callable[[str], None] = lambda s: None,
                reference_pictures_dir: str | Path | None = None) -> FetchResult:
    """Rebuild the city and suite of a frozen real-imagery ``manifest`` (module docstring).

    Args:
        manifest: ``manifest.json`` or the suite folder (task files beside it are not needed).
        solver_for: the oracle for a city (``ArenaOracleSolver``): the generator verifies tasks with it.
        out_dir: the suite folder to write (default ``<urbanarena home>/frozen/<suite>``, where ``run --tasks``
            finds it); must not exist unless ``force``.
        osm: Panoramax: the OSM file the city was built on (its sha256 is pinned).
        client: Panoramax: a :class:`~urbanarena.world.importers.panoramax.client.PanoramaxClient` (default:
            one for the pinned instance); its cache receives the verified pictures.
        pictures_dir: frames/video: the supplied pictures (pinned relative paths under it).
        city: frames/video: the city built from ``pictures_dir``.
        reference_pictures_dir: the supplied ``landmark_image`` reference pictures (pinned ``file`` under it;
            default ``pictures_dir``); Panoramax reference pictures come from ``client``'s instance.
        force: replace an existing ``out_dir`` and a cached city of the same name with another content hash.
    Returns:
        :class:`FetchResult`.
    Raises:
        FrozenSuiteError: no ``pictures`` block, a city whose hash differs, a regenerated task file or image
            that differs, an existing output without ``force``.
        PinnedPictureError: missing or changed pictures (each by id).
        UrbanArenaError: a missing argument (``osm``, ``pictures_dir``, ``city``), a bad OSM file.
        PanoramaxError: the instance fails after retries.
    """
    from urbanarena import paths
    from urbanarena.tasks.generators.real_imagery import confirm_annotations
    from urbanarena.world.picture_pins import verify_supplied
    from urbanarena.world.resolve import save_named

    fs = load_manifest(manifest)
    pins = fs.manifest.get("pictures")
    if not isinstance(pins, dict) or "source" not in pins:
        raise FrozenSuiteError(f"{fs.directory / 'manifest.json'}: suite {fs.name} pins no pictures (its city is not "
                               "made of real photographs): build its city with `urbanarena city build` and use the "
                               "task files as they are")
    name = str(fs.manifest["city"]["name"])
    out = Path(out_dir) if out_dir is not None else user_dir() / fs.name
    if out.exists() and not force:
        raise FrozenSuiteError(f"{out} exists: give another --out or --force to replace it")
    if pins["source"] == "panoramax":
        if osm is None:
            o = pins.get("osm") or {}
            raise UrbanArenaError(f"suite {fs.name}: give the OSM file its city was built on with --osm FILE "
                                  f"({o.get('file')}, sha256 {o.get('sha256')})")
        from urbanarena.world.importers.panoramax.client import PanoramaxClient
        from urbanarena.world.importers.panoramax.pins import rebuild_panoramax_city

        client = client if client is not None else PanoramaxClient(str(pins["instance"]), asset=str(pins["asset"]))
        log(f"searching {client.api} for the {len(pins['inputs'])} pinned pictures of {name}")
        c = rebuild_panoramax_city(pins, name, osm, client, progress=progress)
        kinds = tuple(pins.get("confirmed_annotations") or ())
        if kinds:
            confirm_annotations(c, kinds)
    else:
        if pictures_dir is None:
            raise UrbanArenaError(f"suite {fs.name}: its {pins.get('count')} {pins['source']} pictures have no public "
                                  "ids: supply them with --pictures DIR (each is verified by its sha256), build the "
                                  f"city from them ({fs.manifest['city'].get('build')}) and pass it with --city")
        verify_supplied(pins, pictures_dir)
        if city is None:
            raise UrbanArenaError(f"suite {fs.name}: the supplied pictures verify; now build the city from them "
                                  f"({fs.manifest['city'].get('build')}) and pass it with --city")
        c = city
    _check_city(fs, c)
    finder = None
    if fs.manifest.get("reference_pictures"):
        from urbanarena.tasks.frozen_refs import finder_from_pins

        block = fs.manifest["reference_pictures"]
        log(f"getting the {block.get('count')} pinned landmark_image reference pictures")
        if client is None and any(p.get("source") == "panoramax" for p in block.get("pictures") or []):
            from urbanarena.world.importers.panoramax.client import PanoramaxClient

            client = PanoramaxClient(str(block.get("instance")))
        finder = finder_from_pins(c, block, client=client, progress=progress,
                                  pictures_dir=reference_pictures_dir if reference_pictures_dir is not None
                                  else pictures_dir)
    log(f"city {name} rebuilt: content hash {c.content_hash[:12]}... matches; generating {', '.join(fs.sizes())}")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.fetch-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        new = freeze(c, tmp, suite=fs.name, seed=int(fs.manifest.get("seed", 0)), sizes=fs.sizes(),
                     split=fs.manifest.get("split"), solver=solver_for(c), build=fs.manifest["city"].get("build"),
                     log=log, render_style=fs.render_style, real_references=finder)
        warnings = _compare(fs, new)
        (tmp / "manifest.json").write_bytes((fs.directory / "manifest.json").read_bytes())
        cached = paths.cities_dir() / name
        if cached.exists() and not force:
            try:
                have = json.loads((cached / "city.json").read_text(encoding="utf-8")).get("content_hash")
            except (OSError, ValueError):
                have = None
            if have != c.content_hash:
                raise FrozenSuiteError(f"a cached city named {name!r} with another content hash exists at {cached}: "
                                       "--force replaces it")
        city_dir = save_named(c, name, overwrite=True)
        if out.exists():
            shutil.rmtree(out)
        os.rename(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return FetchResult(out, city_dir, name, int(pins.get("count") or 0),
                       {s: int(fs.manifest["sizes"][s]["tasks"]) for s in fs.sizes()}, warnings)


def _check_city(fs: FrozenSuite, city: City) -> None:
    if city.content_hash != fs.city_hash:
        raise FrozenSuiteError(f"suite {fs.name}: the rebuilt city's content hash {city.content_hash[:12]}... differs "
                               f"from the pinned {fs.city_hash[:12]}... (the pictures verified, so another urbanarena "
                               "or library version, or item metadata changed on the instance)")
    want = fs.manifest["city"].get("annotations_hash")
    ann = getattr(city, "annotations", None)
    if want and (ann is None or ann.content_hash != want):
        raise FrozenSuiteError(f"suite {fs.name}: the rebuilt city's annotations differ from the pinned ones "
                               f"(hash {want[:12]}...): another OSM file or importer version")


def _compare(fs: FrozenSuite, new: FrozenSuite) -> list[str]:
    """Raise when a regenerated task file or image differs from the manifest; warnings for panoramas."""
    for size in fs.sizes():
        want, got = fs.manifest["sizes"][size], new.manifest["sizes"][size]
        if got["task_file_sha256"] != want["task_file_sha256"]:
            raise FrozenSuiteError(
                f"suite {want['suite_name']}: the regenerated task file differs from the pinned one (sha256 "
                f"{got['task_file_sha256'][:12]}... vs {want['task_file_sha256'][:12]}...; generator version "
                f"{got.get('generator_version')} here, {want.get('generator_version')} pinned)")
        differ = sorted(rel for rel in set(want["assets"]) | set(got["assets"])
                        if (want["assets"].get(rel) or {}).get("pixel_sha256")
                        != (got["assets"].get(rel) or {}).get("pixel_sha256"))
        if differ:
            raise FrozenSuiteError(f"suite {want['suite_name']}: {len(differ)} reference image(s) drawn differently "
                                   f"here: {', '.join(differ[:5])} (another OpenCV or GL driver; install with the "
                                   "lock, constraints.txt)")
    want_p = fs.manifest.get("panorama_fingerprint") or {}
    got_p = new.manifest.get("panorama_fingerprint") or {}
    pano = [n for n in want_p if got_p.get(n) != want_p[n]]
    return ([f"suite {fs.name}: {len(pano)} of {len(want_p)} fingerprint panoramas render differently here (another "
             "GL driver): scores are comparable only with runs on the frozen renderer"] if pano else [])


__all__ = ["FetchResult", "fetch_suite", "load_manifest"]
