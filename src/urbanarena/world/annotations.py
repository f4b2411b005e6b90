"""City annotations: what stands along the streets of a city.

An :class:`Annotations` object travels with a :class:`~urbanarena.world.city.City`
(``city.annotations``; ``None`` for cities without any, e.g. CitySeeker) and
is saved beside the graph as ``annotations.json.gz`` (see *File format* below).
Importers fill it (today: :mod:`urbanarena.world.importers.osm`); the renderer
and the task generators read it.

Coordinates: every position is given twice, in the city's local frame
(``x_m``/``y_m`` or ``*_xy``: metres, x east, y north, the city's
:class:`~urbanarena.world.geo.LocalFrame`) and in WGS84 (``lat``/``lon`` or
``*_lonlat``: degrees, **lon first** in coordinate lists, as GeoJSON).
Angles are degrees clockwise from true north in [0, 360).

Records
-------
:class:`Building`
    Footprint polygons (exterior ring counter-clockwise in local metres, holes
    clockwise), height and facades. Height rule (:func:`building_height`):
    the ``height`` tag (metres; ``"12 m"``, ``"40'"`` and ``"40 ft"`` are
    understood), else ``building:levels`` x :data:`LEVEL_HEIGHT_M` (3 m),
    else :data:`DEFAULT_BUILDING_HEIGHT_M` (12 m, about four storeys);
    ``height_source`` says which rule applied. ``min_height_m`` from
    ``min_height`` or ``building:min_level`` x 3 m (else 0).
:class:`Facade`
    One wall of a building's outer ring: consecutive ring edges that turn by
    less than :data:`FACADE_MERGE_ANGLE_DEG` are merged into one straight
    facade from ``p0`` to ``p1`` (exterior rings run counter-clockwise, so the
    outside is on the right of ``p0 -> p1``; ``normal_deg`` is the outward
    normal's azimuth). A facade is *street-facing* when a ray cast outward
    along its normal from 25 %, 50 % or 75 % of its length reaches the
    walkable network within :data:`FACADE_STREET_MAX_M` before entering any
    building (party walls and courtyard walls are not street-facing);
    ``street_distance_m`` is the shortest such ray.
:class:`POI`
    A named or unnamed shop, amenity, tourism site ... that belongs to a
    building facade. ``category`` is the OSM key that made it a POI (first of
    :data:`POI_CATEGORIES` present), ``kind`` that key's value, ``tags`` the raw
    tags. Attachment (:func:`attach_pois`): the building containing the point,
    else the nearest building within :data:`POI_BUILDING_MAX_M`; on it the
    nearest street-facing facade (the nearest facade of any kind when the
    building has no street-facing one); ``facade_xy`` is the point's
    projection on that facade, kept 0.5 m from its ends; ``front_xy`` is the
    point of walkable space in front of it: where a ray from ``facade_xy``
    along the facade normal first meets the pedestrian network (within
    :data:`FACADE_STREET_MAX_M`, before entering a building;
    ``front_method="normal"``), else the nearest point of the network
    (``"nearest"``). Task goals and success radii are measured to
    ``front_xy``. ``node_id`` is the pose node nearest to ``front_xy``;
    ``street_id``/``along_m``/``lateral_m`` place the facade point along a
    street (``lateral_m`` > 0: right of the street's direction).
    Named POIs with no building within reach are kept apart as
    ``standalone_pois`` (same record, ``building_id``/``facade_id`` null).
:class:`StreetObject`
    Trees, street lamps, vending machines, benches, traffic signals, traffic
    signs, crossings, bus stops and subway entrances (:data:`OBJECT_TYPES`),
    each placed along its nearest street like POIs (``street_azimuth_deg`` is
    the street's direction there; crossings are drawn across it).
:class:`Street`
    A piece of the walkable network between two decision points (or dead
    ends) after pruning: polyline, pose node ids along it, OSM way ids, the
    dominant ``highway`` value, name, carriageway ``width_m`` and whether a
    sidewalk runs on its left/right (mapped as ``sidewalk=*`` on the road or
    as a separate ``footway=sidewalk`` way folded into it).
    ``is_street`` is true for carriageways and pedestrian streets (not for
    footpaths, steps, cycleways): only those bound city blocks.
:class:`Block`
    A polygon enclosed by streets: :func:`city_blocks` polygonizes the
    (noded) ``is_street`` lines with :func:`shapely.polygonize` and keeps
    faces of at least :data:`BLOCK_MIN_AREA_M2` that are wider than
    ``2 x`` :data:`BLOCK_MIN_HALF_WIDTH_M` somewhere (drops slivers between
    dual carriageways and traffic islands). Lists the buildings and POIs
    inside it and the streets along its boundary.

File format (``annotations.json.gz``, gzip UTF-8 JSON, version 1)
------------------------------------------------------------------
``{"format": "urbanarena-annotations", "format_version": 1, "origin": {lat, lon},
"bbox": [W, S, E, N] | null, "source": {...}, "pois": [...], "standalone_pois": [...],
"objects": [...], "buildings": [...], "blocks": [...], "streets": [...],
"walkable_areas": [...]}``, plus ``"rail_lines"`` and ``"land_areas"`` when non-empty (drawn-only tram
tracks and planted land cover, see :class:`Annotations`); each record is the dataclass below as a JSON
object (tuples become lists). Its sha256 over canonical JSON
(:attr:`Annotations.content_hash`) is stored in ``city.json``
(``annotations_hash``) and checked on load.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import shapely
from shapely.geometry import LineString, MultiLineString, Point, Polygon
from shapely.geometry.polygon import orient
from shapely.ops import polygonize, unary_union
from shapely.strtree import STRtree

from urbanarena.errors import CityFormatError

FORMAT_ID = "urbanarena-annotations"
FORMAT_VERSION = 1
ANNOTATIONS_FILE = "annotations.json.gz"

#: OSM keys that make a tagged feature a POI, in priority order (the first present is its ``category``)
POI_CATEGORIES = ("shop", "amenity", "tourism", "leisure", "office", "craft", "healthcare", "historic")
#: street object types, see :mod:`urbanarena.world.importers.osm` for the tag rules
OBJECT_TYPES = (
    "tree", "street_lamp", "vending_machine", "bench", "traffic_signals", "traffic_sign",
    "crossing", "bus_stop", "subway_entrance",
)

LEVEL_HEIGHT_M = 3.0
DEFAULT_BUILDING_HEIGHT_M = 12.0
FACADE_MERGE_ANGLE_DEG = 20.0
FACADE_STREET_MAX_M = 40.0
POI_BUILDING_MAX_M = 25.0
FACADE_END_MARGIN_M = 0.5
BLOCK_MIN_AREA_M2 = 200.0
BLOCK_MIN_HALF_WIDTH_M = 3.0


# --------------------------------------------------------------------------- records
@dataclass
class Facade:
    """One straight wall of a building's outer ring (local metres).

    ``p0 -> p1`` runs counter-clockwise around the building, so the outside is
    on the right; ``normal_deg`` is the azimuth of the outward normal.
    """

    id: str
    building_id: str
    p0: tuple[float, float]
    p1: tuple[float, float]
    normal_deg: float
    street_facing: bool = False
    street_distance_m: float | None = None

    @property
    def length_m(self) -> float:
        return math.hypot(self.p1[0] - self.p0[0], self.p1[1] - self.p0[1])

    def point_at(self, offset_m: float) -> tuple[float, float]:
        """Point ``offset_m`` metres from ``p0`` towards ``p1``."""
        L = self.length_m or 1.0
        t = offset_m / L
        return (self.p0[0] + t * (self.p1[0] - self.p0[0]), self.p0[1] + t * (self.p1[1] - self.p0[1]))

    def project(self, x: float, y: float) -> tuple[float, float]:
        """``(offset_m, distance_m)``: offset along the facade (clamped to its
        length) of the nearest facade point to (x, y) and the distance to it."""
        dx, dy = self.p1[0] - self.p0[0], self.p1[1] - self.p0[1]
        L2 = dx * dx + dy * dy
        t = 0.0 if L2 == 0 else max(0.0, min(1.0, ((x - self.p0[0]) * dx + (y - self.p0[1]) * dy) / L2))
        px, py = self.p0[0] + t * dx, self.p0[1] + t * dy
        return t * math.sqrt(L2), math.hypot(x - px, y - py)

    def normal_vec(self) -> tuple[float, float]:
        r = math.radians(self.normal_deg)
        return math.sin(r), math.cos(r)


@dataclass
class Building:
    """A building footprint (one or more polygons) with height and facades.

    ``polygons_xy``: ``[polygon][ring][vertex] -> [x_m, y_m]``, ring 0 the
    exterior (counter-clockwise), further rings holes (clockwise), rings not
    repeating their first vertex. ``polygons_lonlat``: the same in WGS84
    ``[lon, lat]``. ``in_core``: the footprint meets the import bbox (others
    are context kept for rendering near the edge).
    """

    id: str
    osm_id: str
    polygons_xy: list[list[list[tuple[float, float]]]]
    polygons_lonlat: list[list[list[tuple[float, float]]]]
    height_m: float
    height_source: str
    min_height_m: float = 0.0
    levels: float | None = None
    name: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    facades: list[Facade] = field(default_factory=list)
    in_core: bool = True

    def shape(self) -> shapely.Geometry:
        """Footprint as a shapely (Multi)Polygon in local metres."""
        polys = [Polygon(p[0], p[1:]) for p in self.polygons_xy]
        return polys[0] if len(polys) == 1 else shapely.MultiPolygon(polys)


@dataclass
class POI:
    """A point of interest on a building facade (see the module docstring for the rules)."""

    id: str
    osm_id: str
    name: str | None
    category: str
    kind: str
    x_m: float
    y_m: float
    lat: float
    lon: float
    tags: dict[str, str] = field(default_factory=dict)
    building_id: str | None = None
    facade_id: str | None = None
    facade_offset_m: float | None = None
    facade_xy: tuple[float, float] | None = None
    front_xy: tuple[float, float] | None = None
    front_lat: float | None = None
    front_lon: float | None = None
    front_distance_m: float | None = None
    front_method: str | None = None
    node_id: str | None = None
    node_distance_m: float | None = None
    street_id: str | None = None
    along_m: float | None = None
    lateral_m: float | None = None


@dataclass
class StreetObject:
    """A tree, lamp, bench, sign ... (``type`` in :data:`OBJECT_TYPES`).

    ``street_id``/``along_m``/``lateral_m``: nearest street, distance along
    it from its first node, signed distance from its centreline (metres,
    > 0 right of the street's direction). ``street_azimuth_deg``: the
    street's direction at ``along_m``. ``in_core``: inside the import bbox.
    """

    id: str
    osm_id: str
    type: str
    x_m: float
    y_m: float
    lat: float
    lon: float
    name: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    node_id: str | None = None
    node_distance_m: float | None = None
    street_id: str | None = None
    along_m: float | None = None
    lateral_m: float | None = None
    street_azimuth_deg: float | None = None
    in_core: bool = True


@dataclass
class Street:
    """A stretch of the walkable network between decision points / dead ends.

    ``xy``/``lonlat``: polyline (local metres / WGS84 lon-lat) from the first
    to the last of ``node_ids`` (the pose nodes along it, in order).
    ``width_m``: carriageway (or path) width estimate: the ``width`` tag,
    else ``lanes`` x 3.25 m, else a default per ``highway`` value.
    """

    id: str
    node_ids: list[str]
    xy: list[tuple[float, float]]
    lonlat: list[tuple[float, float]]
    length_m: float
    highway: str
    name: str | None
    way_ids: list[int]
    is_street: bool
    width_m: float
    sidewalk_left: bool = False
    sidewalk_right: bool = False
    steps: bool = False

    def line(self) -> LineString:
        return LineString(self.xy)


@dataclass
class Block:
    """A city block: a face of the street network (see :func:`city_blocks`).

    ``polygon_xy``: ``[ring][vertex]`` (exterior counter-clockwise, then holes);
    ``polygon_lonlat`` the same in WGS84 ``[lon, lat]``.
    """

    id: str
    polygon_xy: list[list[tuple[float, float]]]
    polygon_lonlat: list[list[tuple[float, float]]]
    area_m2: float
    building_ids: list[str] = field(default_factory=list)
    poi_ids: list[str] = field(default_factory=list)
    street_ids: list[str] = field(default_factory=list)

    def shape(self) -> Polygon:
        return Polygon(self.polygon_xy[0], self.polygon_xy[1:])


_RECORD_TYPES = {
    "pois": POI, "standalone_pois": POI, "objects": StreetObject, "buildings": Building,
    "blocks": Block, "streets": Street,
}


@dataclass
class Annotations:
    """Everything annotated in a city (see the module docstring).

    ``walkable_areas``: pedestrian squares (``highway=pedestrian`` +
    ``area=yes`` and the like) as ``{"id", "osm_id", "name", "polygon_xy",
    "polygon_lonlat"}`` for rendering; they are not part of the graph.
    ``rail_lines``: tram tracks (``railway=tram``, not in tunnels) as ``{"id", "osm_id", "railway", "xy"}``
    and ``land_areas``: planted land cover (:func:`land_cover_kind`) as ``{"id", "osm_id", "kind",
    "polygon_xy"}`` (``[polygon][ring][vertex]``), both drawn only (realistic style), in the core plus the
    context margin; written to the file only when non-empty (files from before them load unchanged).
    """

    origin_lat: float
    origin_lon: float
    bbox: tuple[float, float, float, float] | None = None
    source: dict[str, Any] = field(default_factory=dict)
    pois: list[POI] = field(default_factory=list)
    standalone_pois: list[POI] = field(default_factory=list)
    objects: list[StreetObject] = field(default_factory=list)
    buildings: list[Building] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    streets: list[Street] = field(default_factory=list)
    walkable_areas: list[dict[str, Any]] = field(default_factory=list)
    rail_lines: list[dict[str, Any]] = field(default_factory=list)
    land_areas: list[dict[str, Any]] = field(default_factory=list)

    # ------------------------------------------------------------- look-ups
    def building(self, building_id: str) -> Building:
        """The building with this id (``KeyError`` if absent)."""
        return self._index("buildings")[building_id]

    def poi(self, poi_id: str) -> POI:
        """The POI (facade-attached or standalone) with this id (``KeyError`` if absent)."""
        idx = self._index("pois")
        return idx[poi_id] if poi_id in idx else self._index("standalone_pois")[poi_id]

    def street(self, street_id: str) -> Street:
        return self._index("streets")[street_id]

    def facade(self, facade_id: str) -> Facade:
        """The facade ``"<building_id>:<k>"``."""
        b = self.building(facade_id.rsplit(":", 1)[0])
        for f in b.facades:
            if f.id == facade_id:
                return f
        raise KeyError(facade_id)

    def objects_of_type(self, type_: str) -> list[StreetObject]:
        return [o for o in self.objects if o.type == type_]

    def _index(self, name: str) -> dict[str, Any]:
        # rebuilt when the list object or its length changes (records are appended/replaced, not renamed)
        recs = getattr(self, name)
        cache = self.__dict__.setdefault("_idx", {})
        hit = cache.get(name)
        if hit is None or hit[0] is not recs or hit[1] != len(recs):
            hit = (recs, len(recs), {r.id: r for r in recs})
            cache[name] = hit
        return hit[2]

    def counts(self) -> dict[str, Any]:
        """Counts for reports: POIs by category, objects by type (core and context margin
        together; ``objects_in_core`` those inside the bbox), buildings, blocks, streets."""
        by_cat: dict[str, int] = {}
        for p in self.pois:
            by_cat[p.category] = by_cat.get(p.category, 0) + 1
        by_type = {t: 0 for t in OBJECT_TYPES}
        for o in self.objects:
            by_type[o.type] = by_type.get(o.type, 0) + 1
        return {
            "pois": len(self.pois),
            "named_pois": sum(1 for p in self.pois if p.name),
            "pois_by_category": dict(sorted(by_cat.items())),
            "standalone_pois": len(self.standalone_pois),
            "objects": len(self.objects),
            "objects_by_type": by_type,
            "objects_in_core": sum(1 for o in self.objects if o.in_core),
            "buildings": len(self.buildings),
            "buildings_in_core": sum(1 for b in self.buildings if b.in_core),
            "blocks": len(self.blocks),
            "streets": len(self.streets),
            "walkable_areas": len(self.walkable_areas),
        }

    # ------------------------------------------------------------ serialise
    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict of the file format (tuples become lists)."""
        d: dict[str, Any] = {
            "format": FORMAT_ID,
            "format_version": FORMAT_VERSION,
            "origin": {"lat": self.origin_lat, "lon": self.origin_lon},
            "bbox": list(self.bbox) if self.bbox is not None else None,
            "source": self.source,
        }
        for name in _RECORD_TYPES:
            d[name] = [asdict(r) for r in getattr(self, name)]
        d["walkable_areas"] = self.walkable_areas
        for name in ("rail_lines", "land_areas"):
            if getattr(self, name):
                d[name] = getattr(self, name)
        return json.loads(json.dumps(d, allow_nan=False))  # tuples -> lists, checks finiteness

    @property
    def content_hash(self) -> str:
        """sha256 (hex) of :meth:`to_dict` as compact JSON with sorted keys."""
        blob = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()

    @classmethod
    def from_dict(cls, d: Any, path: str | Path | None = None) -> "Annotations":
        """Rebuild from :meth:`to_dict` output.

        Raises:
            CityFormatError: wrong format id/version or a malformed record
                (the message names the list and index, e.g. ``pois[3]``).
        """
        if not isinstance(d, dict) or d.get("format") != FORMAT_ID:
            raise CityFormatError(path, "format", f"expected format {FORMAT_ID!r}")
        if d.get("format_version") != FORMAT_VERSION:
            raise CityFormatError(path, "format_version", f"unsupported annotations version {d.get('format_version')!r}")
        origin = d.get("origin") or {}
        try:
            ann = cls(float(origin["lat"]), float(origin["lon"]))
        except (KeyError, TypeError, ValueError) as e:
            raise CityFormatError(path, "origin", "origin {lat, lon} missing or not numeric") from e
        bbox = d.get("bbox")
        ann.bbox = tuple(float(v) for v in bbox) if bbox is not None else None  # type: ignore[assignment]
        ann.source = d.get("source") or {}
        for name, typ in _RECORD_TYPES.items():
            recs = d.get(name, [])
            if not isinstance(recs, list):
                raise CityFormatError(path, name, "must be a list")
            out = []
            for i, rec in enumerate(recs):
                try:
                    out.append(_from_record(typ, rec))
                except (TypeError, KeyError, ValueError) as e:
                    raise CityFormatError(path, f"{name}[{i}]", f"malformed record: {e}") from e
            setattr(ann, name, out)
        areas = d.get("walkable_areas", [])
        if not isinstance(areas, list):
            raise CityFormatError(path, "walkable_areas", "must be a list")
        ann.walkable_areas = areas
        for name in ("rail_lines", "land_areas"):
            recs = d.get(name, [])
            if not isinstance(recs, list) or not all(isinstance(r, dict) for r in recs):
                raise CityFormatError(path, name, "must be a list of objects")
            setattr(ann, name, recs)
        return ann

    def save(self, directory: str | Path) -> Path:
        """Write ``<directory>/annotations.json.gz`` atomically; returns its path."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        final = d / ANNOTATIONS_FILE
        tmp = d / (ANNOTATIONS_FILE + ".tmp")
        with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=5) as f:
            json.dump(self.to_dict(), f, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        os.replace(tmp, final)
        return final

    @classmethod
    def load(cls, directory_or_file: str | Path) -> "Annotations":
        """Read ``annotations.json.gz`` (a path to it or to its directory).

        Raises:
            CityFormatError: missing, truncated or garbled file, or bad records.
        """
        p = Path(directory_or_file)
        if p.is_dir():
            p = p / ANNOTATIONS_FILE
        try:
            with gzip.open(p, "rt", encoding="utf-8") as f:
                d = json.load(f)
        except FileNotFoundError as e:
            raise CityFormatError(p, None, "annotations file missing") from e
        except (OSError, EOFError, json.JSONDecodeError, UnicodeDecodeError) as e:
            raise CityFormatError(p, None, f"unreadable annotations file: {e}") from e
        except RecursionError:
            raise CityFormatError(p, None, "JSON nested too deeply") from None
        return cls.from_dict(d, p)


def _tuple2(v: Any) -> tuple[float, float] | None:
    if v is None:
        return None
    a, b = v
    return (float(a), float(b))


def _from_record(typ: type, rec: Any) -> Any:
    if not isinstance(rec, dict):
        raise TypeError("record must be an object")
    names = {f.name for f in fields(typ)}
    unknown = set(rec) - names
    if unknown:
        raise KeyError(f"unknown fields {sorted(unknown)}")
    kw = dict(rec)
    if typ is Building:
        kw["facades"] = [_from_record(Facade, f) for f in rec.get("facades", [])]
        for k in ("polygons_xy", "polygons_lonlat"):
            kw[k] = [[[_tuple2(p) for p in ring] for ring in poly] for poly in rec[k]]
    elif typ is Facade:
        kw["p0"], kw["p1"] = _tuple2(rec["p0"]), _tuple2(rec["p1"])
    elif typ is POI:
        for k in ("facade_xy", "front_xy"):
            kw[k] = _tuple2(rec.get(k))
    elif typ is Street:
        kw["xy"] = [_tuple2(p) for p in rec["xy"]]
        kw["lonlat"] = [_tuple2(p) for p in rec["lonlat"]]
    elif typ is Block:
        for k in ("polygon_xy", "polygon_lonlat"):
            kw[k] = [[_tuple2(p) for p in ring] for ring in rec[k]]
    return typ(**kw)


# --------------------------------------------------------------------------- heights
_NUM = re.compile(r"^\s*([-+]?\d+(?:[.,]\d+)?)\s*(m|meters?|metres?|ft|feet|'|)\s*$", re.IGNORECASE)
_FEET_INCHES = re.compile(r"^\s*(\d+)\s*'\s*(\d+(?:\.\d+)?)\s*\"\s*$")


def parse_length_m(value: str | None) -> float | None:
    """Parse an OSM length value to metres (``"12"``, ``"12.5 m"``, ``"40'"``,
    ``"40 ft"``, ``"10'6\\""``; the first of ``;``-separated values). ``None``
    when absent, unparseable, not finite or negative."""
    if value is None:
        return None
    v = str(value).split(";")[0].strip()
    m = _FEET_INCHES.match(v)
    if m:
        out = (float(m.group(1)) * 12 + float(m.group(2))) * 0.0254
    else:
        m = _NUM.match(v)
        if not m:
            return None
        out = float(m.group(1).replace(",", "."))
        if m.group(2).lower() in ("ft", "feet", "'"):
            out *= 0.3048
    return out if math.isfinite(out) and out >= 0 else None


#: land cover drawn as planting (ours): tag value -> kind (``grass`` lawns, ``park`` lawns with beds,
#: ``planting`` shrubs and flower beds)
LAND_COVER = {
    ("landuse", "grass"): "grass", ("landuse", "meadow"): "grass", ("landuse", "village_green"): "grass",
    ("landuse", "recreation_ground"): "grass", ("landuse", "flowerbed"): "planting",
    ("leisure", "park"): "park", ("leisure", "garden"): "park", ("natural", "grassland"): "grass",
    ("natural", "scrub"): "planting", ("natural", "heath"): "planting", ("landuse", "plant_nursery"): "planting",
}


def land_cover_kind(tags: dict[str, str]) -> str | None:
    """The land-cover kind (:data:`LAND_COVER`) of an area's OSM tags, first matching key in the
    order landuse, leisure, natural; ``None`` if none."""
    for key in ("landuse", "leisure", "natural"):
        k = LAND_COVER.get((key, tags.get(key, "")))
        if k is not None:
            return k
    return None


def _levels(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        out = float(str(value).split(";")[0].strip().replace(",", "."))
    except ValueError:
        return None
    return out if math.isfinite(out) and out >= 0 else None


def building_height(tags: dict[str, str]) -> tuple[float, str, float | None, float]:
    """Height of a building from its OSM tags.

    Returns ``(height_m, source, levels, min_height_m)``: ``source`` is
    ``"height"`` (the ``height`` tag, metres), ``"levels"``
    (``building:levels`` x :data:`LEVEL_HEIGHT_M`) or ``"default"``
    (:data:`DEFAULT_BUILDING_HEIGHT_M`); ``levels`` the parsed
    ``building:levels`` or ``None``; ``min_height_m`` from ``min_height``, else
    ``building:min_level`` x :data:`LEVEL_HEIGHT_M`, else 0. A zero height
    counts as missing.
    """
    levels = _levels(tags.get("building:levels"))
    h = parse_length_m(tags.get("height"))
    if h is not None and h > 0:
        height, src = h, "height"
    elif levels is not None and levels > 0:
        height, src = levels * LEVEL_HEIGHT_M, "levels"
    else:
        height, src = DEFAULT_BUILDING_HEIGHT_M, "default"
    mh = parse_length_m(tags.get("min_height"))
    if mh is None:
        ml = _levels(tags.get("building:min_level"))
        mh = ml * LEVEL_HEIGHT_M if ml is not None else 0.0
    return float(height), src, levels, float(min(mh, height))


# --------------------------------------------------------------------------- facades
def _azimuth(dx: float, dy: float) -> float:
    return math.degrees(math.atan2(dx, dy)) % 360.0


def make_facades(building_id: str, exteriors_xy: Sequence[Sequence[tuple[float, float]]],
                 merge_angle_deg: float = FACADE_MERGE_ANGLE_DEG, min_length_m: float = 0.5) -> list[Facade]:
    """Split exterior rings into straight facades.

    Args:
        exteriors_xy: exterior rings in local metres (any orientation; they are
            made counter-clockwise here), not repeating the first vertex.
        merge_angle_deg: consecutive edges turning by less than this are one facade.
        min_length_m: shorter edges are merged into their neighbour.
    Returns: facades ``"<building_id>:<k>"`` numbered around the rings; the
    outward normal is the facade direction turned 90 degrees clockwise.
    """
    out: list[Facade] = []
    for ring in exteriors_xy:
        pts = [tuple(map(float, p)) for p in ring]
        if len(pts) >= 2 and pts[0] == pts[-1]:
            pts = pts[:-1]
        if len(pts) < 3:
            continue
        if not shapely.LinearRing(pts).is_ccw:
            pts = pts[::-1]
        n = len(pts)
        # drop near-duplicate points
        pts = [p for i, p in enumerate(pts) if math.dist(p, pts[(i + 1) % n]) > 1e-6]
        n = len(pts)
        if n < 3:
            continue
        az = [_azimuth(pts[(i + 1) % n][0] - pts[i][0], pts[(i + 1) % n][1] - pts[i][1]) for i in range(n)]
        ln = [math.dist(pts[i], pts[(i + 1) % n]) for i in range(n)]

        def turn(i: int, j: int) -> float:
            d = abs(az[j] - az[i]) % 360.0
            return min(d, 360.0 - d)

        # a "corner" before edge i is where the direction changes by >= merge angle (ignoring tiny edges)
        corners = [i for i in range(n) if turn((i - 1) % n, i) >= merge_angle_deg]
        if not corners:
            corners = [int(np.argmax(ln))]
        runs = []
        for k, c in enumerate(corners):
            nxt = corners[(k + 1) % len(corners)]
            run = []
            i = c
            while True:
                run.append(i)
                i = (i + 1) % n
                if i == nxt:
                    break
            runs.append(run)
        for run in runs:
            p0 = pts[run[0]]
            p1 = pts[(run[-1] + 1) % n]
            L = math.dist(p0, p1)
            if L < min_length_m:
                continue
            d_az = _azimuth(p1[0] - p0[0], p1[1] - p0[1])
            out.append(Facade(id="", building_id=building_id, p0=p0, p1=p1, normal_deg=(d_az + 90.0) % 360.0))
    for k, f in enumerate(out):
        f.id = f"{building_id}:{k}"
    return out


def _first_hit(ray: LineString, start: Point, geoms: np.ndarray, idx: Iterable[int]) -> float:
    best = math.inf
    for i in idx:
        inter = ray.intersection(geoms[i])
        if not inter.is_empty:
            best = min(best, start.distance(inter))
    return best


class _RayCaster:
    """Casts rays against the network lines and building footprints (local metres)."""

    def __init__(self, network_lines: Sequence[LineString], building_shapes: Sequence[shapely.Geometry]):
        self.lines = np.array(list(network_lines), dtype=object)
        self.line_tree = STRtree(self.lines) if len(self.lines) else None
        self.bldgs = np.array(list(building_shapes), dtype=object)
        self.bldg_tree = STRtree(self.bldgs) if len(self.bldgs) else None

    def cast(self, x: float, y: float, ux: float, uy: float, max_m: float, start_offset_m: float = 0.05) -> float | None:
        """Distance from (x, y) to the first network line along the unit
        direction (ux, uy), or ``None`` if a building footprint comes first or
        nothing is hit within ``max_m``. The ray starts ``start_offset_m`` out
        so that it does not touch the wall it leaves."""
        if self.line_tree is None:
            return None
        sx, sy = x + ux * start_offset_m, y + uy * start_offset_m
        ray = LineString([(sx, sy), (x + ux * max_m, y + uy * max_m)])
        start = Point(sx, sy)
        d_line = _first_hit(ray, start, self.lines, self.line_tree.query(ray, predicate="intersects"))
        if not math.isfinite(d_line):
            return None
        if self.bldg_tree is not None:
            d_b = _first_hit(ray, start, self.bldgs, self.bldg_tree.query(ray, predicate="intersects"))
            if d_b < d_line:
                return None
        return d_line + start_offset_m


def mark_street_facing(buildings: Sequence[Building], network_lines: Sequence[LineString],
                       max_distance_m: float = FACADE_STREET_MAX_M) -> None:
    """Set ``street_facing``/``street_distance_m`` of every facade (in place).

    Rule: rays along the outward normal from 25 %, 50 % and 75 % of the
    facade; the facade faces the street if one of them meets a network line
    within ``max_distance_m`` before entering any building footprint.
    """
    caster = _RayCaster(network_lines, [b.shape() for b in buildings])
    for b in buildings:
        for f in b.facades:
            ux, uy = f.normal_vec()
            best = math.inf
            for t in (0.25, 0.5, 0.75):
                px = f.p0[0] + t * (f.p1[0] - f.p0[0])
                py = f.p0[1] + t * (f.p1[1] - f.p0[1])
                hit = caster.cast(px, py, ux, uy, max_distance_m)
                if hit is not None:
                    best = min(best, hit)
            f.street_facing = math.isfinite(best)
            f.street_distance_m = float(best) if math.isfinite(best) else None


# --------------------------------------------------------------------------- streets
class StreetLocator:
    """Nearest-street queries over :class:`Street` polylines (local metres)."""

    def __init__(self, streets: Sequence[Street]):
        self.streets = list(streets)
        self.lines = np.array([s.line() for s in self.streets], dtype=object)
        self.tree = STRtree(self.lines) if len(self.lines) else None

    def locate(self, x: float, y: float) -> tuple[str, float, float, float, tuple[float, float]] | None:
        """``(street_id, along_m, lateral_m, street_azimuth_deg, nearest_xy)`` of the
        street nearest to (x, y); ``lateral_m`` > 0 when the point lies right of
        the street's direction. ``None`` when there are no streets."""
        if self.tree is None:
            return None
        p = Point(x, y)
        i = int(self.tree.nearest(p))
        line = self.lines[i]
        along = float(line.project(p))
        q = line.interpolate(along)
        a0 = line.interpolate(max(0.0, along - 0.5))
        a1 = line.interpolate(min(line.length, along + 0.5))
        tx, ty = a1.x - a0.x, a1.y - a0.y
        dist = math.hypot(x - q.x, y - q.y)
        cross = tx * (y - q.y) - ty * (x - q.x)  # > 0: left of direction
        lateral = -dist if cross > 0 else dist
        return self.streets[i].id, along, float(lateral), _azimuth(tx, ty), (float(q.x), float(q.y))

    def nearest_point(self, x: float, y: float) -> tuple[float, float]:
        loc = self.locate(x, y)
        assert loc is not None
        return loc[4]


# --------------------------------------------------------------------------- POIs
def attach_pois(pois: Sequence[POI], buildings: Sequence[Building], streets: Sequence[Street],
                node_ids: Sequence[str], node_xy: np.ndarray, to_latlon,
                building_max_m: float = POI_BUILDING_MAX_M, front_max_m: float = FACADE_STREET_MAX_M,
                building_of: dict[str, str] | None = None) -> tuple[list[POI], list[POI]]:
    """Attach POIs to a building facade, walkable space in front of it and a pose node.

    Args:
        pois: POIs with ``x_m``/``y_m`` set (local metres).
        buildings: buildings with facades (:func:`make_facades`,
            :func:`mark_street_facing` already run).
        streets: the pruned walkable network (front points lie on it).
        node_ids, node_xy: pose nodes and their local positions ``(N, 2)``.
        to_latlon: ``(x_m, y_m) -> (lat, lon)`` of the city's frame.
        building_of: optional ``{poi_id: building_id}`` for POIs that are
            building outlines themselves (an area POI belongs to its own building).
    Returns: ``(attached, standalone)``: POIs with a building, and named POIs
        without one within ``building_max_m`` (unnamed ones are dropped).
    Rules: module docstring (:class:`POI`).
    """
    from scipy.spatial import cKDTree

    shapes = [b.shape() for b in buildings]
    tree = STRtree(np.array(shapes, dtype=object)) if shapes else None
    by_id = {b.id: i for i, b in enumerate(buildings)}
    caster = _RayCaster([s.line() for s in streets], shapes)
    locator = StreetLocator(streets)
    kd = cKDTree(node_xy) if len(node_xy) else None
    attached: list[POI] = []
    standalone: list[POI] = []
    for poi in pois:
        p = Point(poi.x_m, poi.y_m)
        bi: int | None = None
        if building_of and poi.id in building_of and building_of[poi.id] in by_id:
            bi = by_id[building_of[poi.id]]
        elif tree is not None:
            inside = [int(i) for i in tree.query(p, predicate="covered_by")]
            if inside:
                bi = min(inside, key=lambda i: shapes[i].area)  # innermost
            else:
                j = tree.query_nearest(p, max_distance=building_max_m)
                if len(j):
                    bi = int(j[0])
        if bi is None:
            if poi.name:
                _place_front(poi, poi.x_m, poi.y_m, None, caster, locator, kd, node_ids, to_latlon, front_max_m)
                standalone.append(poi)
            continue
        b = buildings[bi]
        if not b.facades:
            if poi.name:
                _place_front(poi, poi.x_m, poi.y_m, None, caster, locator, kd, node_ids, to_latlon, front_max_m)
                standalone.append(poi)
            continue
        cands = [f for f in b.facades if f.street_facing] or b.facades
        best = min(cands, key=lambda f: (f.project(poi.x_m, poi.y_m)[1], f.id))
        off, _ = best.project(poi.x_m, poi.y_m)
        L = best.length_m
        off = min(max(off, min(FACADE_END_MARGIN_M, L / 2)), max(L - FACADE_END_MARGIN_M, L / 2))
        fx, fy = best.point_at(off)
        poi.building_id = b.id
        poi.facade_id = best.id
        poi.facade_offset_m = float(off)
        poi.facade_xy = (float(fx), float(fy))
        _place_front(poi, fx, fy, best, caster, locator, kd, node_ids, to_latlon, front_max_m)
        attached.append(poi)
    return attached, standalone


def _place_front(poi: POI, fx: float, fy: float, facade: Facade | None, caster: _RayCaster, locator: StreetLocator,
                 kd, node_ids: Sequence[str], to_latlon, front_max_m: float) -> None:
    front = None
    if facade is not None:
        ux, uy = facade.normal_vec()
        hit = caster.cast(fx, fy, ux, uy, front_max_m)
        if hit is not None:
            front = (fx + ux * hit, fy + uy * hit)
            poi.front_method = "normal"
    if front is None and locator.tree is not None:
        front = locator.nearest_point(fx, fy)
        poi.front_method = "nearest"
    if front is None:
        return
    poi.front_xy = (float(front[0]), float(front[1]))
    lat, lon = to_latlon(front[0], front[1])
    poi.front_lat, poi.front_lon = float(lat), float(lon)
    poi.front_distance_m = float(math.hypot(front[0] - fx, front[1] - fy))
    if kd is not None:
        d, i = kd.query(front)
        poi.node_id = node_ids[int(i)]
        poi.node_distance_m = float(d)
    loc = locator.locate(fx, fy)
    if loc is not None:
        poi.street_id, poi.along_m, poi.lateral_m = loc[0], float(loc[1]), float(loc[2])


def place_objects(objects: Sequence[StreetObject], streets: Sequence[Street], node_ids: Sequence[str],
                  node_xy: np.ndarray) -> None:
    """Fill ``node_id``/``street_id``/``along_m``/``lateral_m``/``street_azimuth_deg`` (in place)."""
    from scipy.spatial import cKDTree

    locator = StreetLocator(streets)
    kd = cKDTree(node_xy) if len(node_xy) else None
    for o in objects:
        if kd is not None:
            d, i = kd.query((o.x_m, o.y_m))
            o.node_id, o.node_distance_m = node_ids[int(i)], float(d)
        loc = locator.locate(o.x_m, o.y_m)
        if loc is not None:
            o.street_id, o.along_m, o.lateral_m, o.street_azimuth_deg = loc[0], float(loc[1]), float(loc[2]), float(loc[3])


# --------------------------------------------------------------------------- blocks
def city_blocks(street_lines: Sequence[LineString], min_area_m2: float = BLOCK_MIN_AREA_M2,
                min_half_width_m: float = BLOCK_MIN_HALF_WIDTH_M) -> list[Polygon]:
    """Faces of the street network: polygons enclosed by streets (local metres).

    The lines are noded (:func:`shapely.ops.unary_union`) and polygonized
    (:func:`shapely.ops.polygonize`); faces smaller than ``min_area_m2`` or
    nowhere wider than ``2 * min_half_width_m`` (a negative buffer by
    ``min_half_width_m`` leaves nothing) are dropped. Returned sorted by
    (centroid y descending, x), i.e. north to south, west to east.
    """
    lines = [ln for ln in street_lines if ln.length > 0]
    if not lines:
        return []
    noded = unary_union(MultiLineString(lines))
    polys = []
    for poly in polygonize(noded):
        poly = orient(poly, sign=1.0)  # exterior counter-clockwise
        if poly.area < min_area_m2 or poly.buffer(-min_half_width_m).is_empty:
            continue
        polys.append(poly)
    polys.sort(key=lambda q: (-round(q.centroid.y, 3), round(q.centroid.x, 3)))
    return polys
