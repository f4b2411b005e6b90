"""Reading an OSM file for the importer (parsing): the ways, areas and tagged nodes inside a bbox, and the bbox checks."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from urbanarena.errors import CityFormatError
from urbanarena.world import annotations as A
from urbanarena.world.importers.osm_tags import _object_type


# --------------------------------------------------------------------------- reading
@dataclass
class _RawWay:
    id: int
    tags: dict[str, str]
    refs: list[int]
    lonlat: list[tuple[float, float]]


@dataclass
class _RawArea:
    id: str  # "w123" / "r45"
    osm_id: str
    tags: dict[str, str]
    polygons: list[list[list[tuple[float, float]]]]  # lon/lat rings


@dataclass
class _Raw:
    nodes: dict[int, tuple[float, float, dict[str, str]]] = field(default_factory=dict)
    ways: list[_RawWay] = field(default_factory=list)
    areas: list[_RawArea] = field(default_factory=list)
    rails: list[_RawWay] = field(default_factory=list)  # railway=tram ways (drawn, not walked)
    n_objects: int = 0
    timestamp: str | None = None


def _interesting_node(t: dict[str, str]) -> bool:
    return _object_type(t) is not None or any(k in t for k in A.POI_CATEGORIES)


def _bbox_hit(lons: Sequence[float], lats: Sequence[float], bb: tuple[float, float, float, float] | None) -> bool:
    if bb is None:
        return True
    return not (max(lons) < bb[0] or min(lons) > bb[2] or max(lats) < bb[1] or min(lats) > bb[3])


def _read(path: Path, read_bb: tuple[float, float, float, float] | None) -> _Raw:
    import osmium

    raw = _Raw()
    try:
        fp = osmium.FileProcessor(str(path)).with_areas()
        try:
            hdr = fp.header
            raw.timestamp = hdr.get("osmosis_replication_timestamp") or hdr.get("timestamp") or None
        except Exception:  # header is optional
            raw.timestamp = None
        for o in fp:
            raw.n_objects += 1
            if o.is_node():
                if not len(o.tags):
                    continue
                t = dict(o.tags)
                if not _interesting_node(t) or not o.location.valid():
                    continue
                lon, lat = o.location.lon, o.location.lat
                if read_bb is None or (read_bb[0] <= lon <= read_bb[2] and read_bb[1] <= lat <= read_bb[3]):
                    raw.nodes[o.id] = (lon, lat, t)
            elif o.is_way():
                if o.tags.get("railway") == "tram" and o.tags.get("tunnel") in (None, "no"):
                    ll = [(n.lon, n.lat) for n in o.nodes if n.location.valid()]
                    if len(ll) >= 2 and _bbox_hit([p[0] for p in ll], [p[1] for p in ll], read_bb):
                        raw.rails.append(_RawWay(o.id, dict(o.tags), [], ll))
                if "highway" not in o.tags:
                    continue
                t = dict(o.tags)
                piece_refs: list[int] = []
                piece_ll: list[tuple[float, float]] = []
                pieces = []
                for n in o.nodes:
                    if n.location.valid():
                        piece_refs.append(n.ref)
                        piece_ll.append((n.lon, n.lat))
                    else:  # missing node (extract boundary): split here
                        pieces.append((piece_refs, piece_ll))
                        piece_refs, piece_ll = [], []
                pieces.append((piece_refs, piece_ll))
                for refs, ll in pieces:
                    if len(refs) >= 2 and _bbox_hit([p[0] for p in ll], [p[1] for p in ll], read_bb):
                        raw.ways.append(_RawWay(o.id, t, refs, ll))
            elif o.is_area():
                t = dict(o.tags)
                wanted = ("building" in t and t.get("building") != "no") or any(k in t for k in A.POI_CATEGORIES) or (
                    t.get("highway") in ("pedestrian", "footway") and t.get("area") == "yes") or (
                    A.land_cover_kind(t) is not None)
                if not wanted:
                    continue
                polys = []
                for outer in o.outer_rings():
                    ring = [(n.lon, n.lat) for n in outer]
                    holes = [[(n.lon, n.lat) for n in inner] for inner in o.inner_rings(outer)]
                    polys.append([ring] + holes)
                if not polys:
                    continue
                lons = [p[0] for poly in polys for p in poly[0]]
                lats = [p[1] for poly in polys for p in poly[0]]
                if not _bbox_hit(lons, lats, read_bb):
                    continue
                kind = "w" if o.from_way() else "r"
                oid = o.orig_id()
                raw.areas.append(_RawArea(f"{kind}{oid}", f"{'way' if kind == 'w' else 'relation'}/{oid}", t, polys))
    except CityFormatError:
        raise
    except Exception as e:  # libosmium reports every parse error as RuntimeError; be broad but typed
        msg = str(e)
        m = re.search(r"line (\d+)", msg)
        raise CityFormatError(path, f"line {m.group(1)}" if m else None, f"cannot read OSM data: {msg}") from e
    if raw.n_objects == 0:
        raise CityFormatError(path, None, "no OSM objects in the file (empty or not OSM data)")
    return raw


# --------------------------------------------------------------------------- import
def _check_bbox(path: Path, bbox: Sequence[float] | None) -> tuple[float, float, float, float] | None:
    if bbox is None:
        return None
    rec = "bbox " + ",".join(str(v) for v in bbox) if isinstance(bbox, (list, tuple)) else f"bbox {bbox!r}"
    try:
        W, S, E, N = (float(v) for v in bbox)
    except (TypeError, ValueError) as e:
        raise CityFormatError(path, rec, "bbox must be four numbers W,S,E,N (WGS84 degrees)") from e
    if not all(math.isfinite(v) for v in (W, S, E, N)):
        raise CityFormatError(path, rec, "bbox values must be finite")
    if not (-180 <= W <= 180 and -180 <= E <= 180 and -90 <= S <= 90 and -90 <= N <= 90):
        raise CityFormatError(path, rec, "bbox out of range (lon in [-180, 180], lat in [-90, 90])")
    if not (W < E and S < N):
        raise CityFormatError(path, rec, "empty bbox: need W < E and S < N")
    return (W, S, E, N)


def _grow(bb: tuple[float, float, float, float], margin_m: float) -> tuple[float, float, float, float]:
    W, S, E, N = bb
    lat_c = (S + N) / 2
    dlat = margin_m / 111_320.0
    dlon = margin_m / (111_320.0 * max(math.cos(math.radians(lat_c)), 1e-6))
    return (W - dlon, S - dlat, E + dlon, N + dlat)
