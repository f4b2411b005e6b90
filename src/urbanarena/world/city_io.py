"""Saved-city format, version 1 (see ``docs/city-format.md``).

A saved city is one directory::

    <dir>/city.json        metadata (format id/version, name, content hash,
                           local-frame origin, source, licence, attribution,
                           imagery, importer facts)
    <dir>/graph.json.gz    {"nodes": [...], "edges": [...]} (gzip JSON)
    <dir>/annotations.json.gz  optional: ``city.annotations`` (POIs, objects,
                           buildings, blocks; see :mod:`urbanarena.world.annotations`);
                           its sha256 is ``annotations_hash`` in city.json.
                           Cities saved without one load with ``annotations=None``.

Node records: ``id`` (string), ``lat``/``lon`` (WGS84 degrees),
``heading_deg`` (panorama heading, degrees clockwise from true north, or null),
``walkable_headings_raw`` / ``walkable_headings_deg`` (lists or null), plus any
importer attributes. Edge records: ``source``, ``target``, ``azimuth_deg``
(degrees clockwise from true north), ``length_m`` (metres), plus importer
attributes. Local x/y are not stored: they are recomputed from lat/lon with the
saved origin.
"""

from __future__ import annotations

import gzip
import json
import math
import os
from pathlib import Path
from typing import Any

import networkx as nx

from urbanarena.errors import CityFormatError
from urbanarena.hashing import reproducible_gzip_text
from urbanarena.world.city import City, CityMeta
from urbanarena.world.geo import LocalFrame
from urbanarena.world.node_ids import check_node_id

FORMAT_ID = "urbanarena-city"
FORMAT_VERSION = 1
META_FILE = "city.json"
GRAPH_FILE = "graph.json.gz"
ANNOTATIONS_FILE = "annotations.json.gz"


def save_city(city: City, directory: str | Path) -> Path:
    """Write ``city`` to ``directory`` (created; files replaced atomically).

    Returns the directory path.
    """
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    records = city.to_records()
    tmp = d / (GRAPH_FILE + ".tmp")
    with reproducible_gzip_text(tmp) as f:  # no time stamp: the same city, the same bytes
        json.dump(records, f, separators=(",", ":"), allow_nan=False)
    os.replace(tmp, d / GRAPH_FILE)
    ann = getattr(city, "annotations", None)
    ann_hash = None
    if ann is not None:
        ann.save(d)
        ann_hash = ann.content_hash
    else:
        (d / ANNOTATIONS_FILE).unlink(missing_ok=True)
    meta = {
        "format": FORMAT_ID,
        "format_version": FORMAT_VERSION,
        "name": city.meta.name,
        "content_hash": city.content_hash,
        "origin": {"lat": city.frame.origin_lat, "lon": city.frame.origin_lon},
        "frame": "aeqd (x east, y north, metres)",
        "counts": {"nodes": city.graph.number_of_nodes(), "edges": city.graph.number_of_edges()},
        "source": city.meta.source,
        "licence": city.meta.licence,
        "attribution": city.meta.attribution,
        "imagery": city.meta.imagery,
        "extra": city.meta.extra,
    }
    if ann_hash is not None:
        meta["annotations_hash"] = ann_hash
    tmp = d / (META_FILE + ".tmp")
    tmp.write_text(json.dumps(meta, indent=2, ensure_ascii=False, allow_nan=False))
    os.replace(tmp, d / META_FILE)
    return d


def _finite(v: Any) -> bool:
    try:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    except OverflowError:  # an integer beyond the float range
        return False


def _no_constant(name: str) -> Any:
    """``parse_constant`` of the loaders: a saved city holds no NaN/Infinity (it could not be saved again)."""
    raise ValueError(f"non-finite number {name} (a saved city holds finite numbers only)")


def _node_problem(rec: dict[str, Any]) -> str | None:
    """What is wrong with a saved node's core attributes (``CORE_NODE_KEYS``), or ``None``."""
    lat, lon = rec.get("lat"), rec.get("lon")
    if not (_finite(lat) and _finite(lon) and -90 <= lat <= 90 and -180 <= lon <= 180):
        return f"lat/lon missing, not finite or out of range: {lat!r}, {lon!r}"
    for k in ("x_m", "y_m", "heading_deg"):
        if rec.get(k) is not None and not _finite(rec[k]):
            return f"{k} must be a finite number or null, got {rec[k]!r}"
    for k in ("walkable_headings_raw", "walkable_headings_deg"):
        v = rec.get(k)
        if v is not None and not (isinstance(v, list) and all(_finite(x) for x in v)):
            return f"{k} must be a list of finite numbers or null, got {v!r}"
    return None


def load_city(directory: str | Path, verify_hash: bool = True) -> City:
    """Load a saved city directory.

    Raises:
        CityFormatError: missing/garbled files, wrong format id or version,
            bad node/edge records (naming the record), or a content hash that
            does not match the stored one.
    """
    d = Path(directory)
    meta_path = d / META_FILE
    graph_path = d / GRAPH_FILE
    if not meta_path.is_file():
        raise CityFormatError(meta_path, None, "not a saved city (city.json missing)")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as e:  # JSONDecodeError, NaN/Infinity
        raise CityFormatError(meta_path, None, f"invalid JSON: {e}") from e
    except RecursionError:
        raise CityFormatError(meta_path, None, "JSON nested too deeply") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_ID:
        raise CityFormatError(meta_path, "format", f"expected format {FORMAT_ID!r}")
    if meta.get("format_version") != FORMAT_VERSION:
        raise CityFormatError(meta_path, "format_version", f"unsupported version {meta.get('format_version')!r}")
    try:
        with gzip.open(graph_path, "rt", encoding="utf-8") as f:
            records = json.load(f, parse_constant=_no_constant)
    except FileNotFoundError as e:
        raise CityFormatError(graph_path, None, "graph file missing") from e
    except (OSError, EOFError, ValueError, UnicodeDecodeError) as e:  # ValueError: bad JSON, NaN/Infinity
        raise CityFormatError(graph_path, None, f"unreadable graph file: {e}") from e
    except RecursionError:
        raise CityFormatError(graph_path, None, "JSON nested too deeply") from None
    if not isinstance(records, dict) or not isinstance(records.get("nodes", []), list) \
            or not isinstance(records.get("edges", []), list):
        raise CityFormatError(graph_path, None, "expected an object with 'nodes' and 'edges' lists")
    g = nx.DiGraph()
    for i, rec in enumerate(records.get("nodes", [])):
        if not isinstance(rec, dict) or not isinstance(rec.get("id"), str):
            raise CityFormatError(graph_path, f"node {i}", "node record needs a string 'id'")
        check_node_id(rec["id"], graph_path, f"node {i}")
        if rec["id"] in g:
            raise CityFormatError(graph_path, f"node {i}", f"duplicate node id {rec['id']!r}")
        problem = _node_problem(rec)
        if problem:
            raise CityFormatError(graph_path, f"node {rec['id']}", problem)
        attrs = {k: v for k, v in rec.items() if k != "id"}
        g.add_node(rec["id"], **attrs)
    for i, rec in enumerate(records.get("edges", [])):
        if not isinstance(rec, dict):
            raise CityFormatError(graph_path, f"edge {i}", "edge record must be an object")
        u, v = rec.get("source"), rec.get("target")
        if not isinstance(u, str) or not isinstance(v, str) or u not in g or v not in g:
            raise CityFormatError(graph_path, f"edge {i}", f"unknown node {u if not isinstance(u, str) or u not in g else v!r}")
        if u == v or g.has_edge(u, v):
            raise CityFormatError(graph_path, f"edge {i}", f"{'self-loop' if u == v else 'duplicate edge'} {u} -> {v}")
        az, length = rec.get("azimuth_deg"), rec.get("length_m")
        if not (_finite(az) and _finite(length) and 0 <= az < 360 and length >= 0):
            raise CityFormatError(graph_path, f"edge {i}", "azimuth_deg in [0, 360) and length_m >= 0 must be finite "
                                                           f"numbers, got {az!r}, {length!r}")
        g.add_edge(u, v, **{k: val for k, val in rec.items() if k not in ("source", "target")})
    if g.number_of_nodes() == 0:
        raise CityFormatError(graph_path, "nodes", "the graph has no nodes")
    origin = meta.get("origin") or {}
    if not isinstance(origin, dict) or ("lat" in origin and not (
            _finite(origin.get("lat")) and _finite(origin.get("lon")) and abs(origin["lat"]) <= 90
            and abs(origin["lon"]) <= 180)):
        raise CityFormatError(meta_path, "origin", f"expected {{lat, lon}} in WGS84 degrees, got {origin!r}")
    for key, kinds in (("name", (str,)), ("source", (dict, type(None))), ("extra", (dict, type(None))),
                       ("imagery", (dict, type(None)))):
        if key in meta and not isinstance(meta[key], kinds):
            raise CityFormatError(meta_path, key, f"unexpected {type(meta[key]).__name__} value {meta[key]!r}")
    frame = LocalFrame(origin["lat"], origin["lon"]) if "lat" in origin else None
    city = City(
        g,
        CityMeta(
            name=meta.get("name", d.name),
            source=meta.get("source") or {},
            licence=meta.get("licence"),
            attribution=meta.get("attribution"),
            imagery=meta.get("imagery"),
            extra=meta.get("extra") or {},
        ),
        frame=frame,
    )
    if verify_hash and meta.get("content_hash") and meta["content_hash"] != city.content_hash:
        raise CityFormatError(meta_path, "content_hash", "graph content does not match the stored hash")
    if meta.get("annotations_hash") is not None or (d / ANNOTATIONS_FILE).is_file():
        from urbanarena.world.annotations import Annotations  # shapely only when a city has annotations

        ann_path = d / ANNOTATIONS_FILE
        if not ann_path.is_file():
            raise CityFormatError(ann_path, None, "annotations file missing (city.json lists annotations_hash)")
        city.annotations = Annotations.load(ann_path)
        if verify_hash and meta.get("annotations_hash") and meta["annotations_hash"] != city.annotations.content_hash:
            raise CityFormatError(meta_path, "annotations_hash", "annotations do not match the stored hash")
    return city
