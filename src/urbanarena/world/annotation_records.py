"""The annotation records of a city (facades, buildings, POIs, street objects, streets, blocks) and their container
:class:`Annotations` with its JSON file format."""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import shapely
from shapely.geometry import LineString, Polygon

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
        from urbanarena.hashing import reproducible_gzip_text

        with reproducible_gzip_text(tmp) as f:  # no time stamp: the same annotations, the same bytes
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
