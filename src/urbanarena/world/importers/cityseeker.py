"""Importer for the CitySeeker release (``--city cityseeker:DIR``).

A CitySeeker city directory holds:

``connections.json`` or ``connections.json.gz``
    A JSON list of directed edge records with the fields ``start_filename``,
    ``start_heading``, ``start_walkable_headings``, ``end_filename``,
    ``end_heading``, ``end_walkable_headings``, ``edge_azimuth`` (degrees
    clockwise from true north) and ``edge_distance`` (Web Mercator units,
    EPSG:3857 — *not* metres). Node ids are the panorama file names.
``question.json`` (optional, but needed for anchors when there is no info CSV)
    A JSON list of questions (see :func:`read_questions`).
``<City>_info.csv`` (optional)
    Columns ``filename, lon, lat, year, month, heading, walkable_headings``
    (WGS84 degrees; ``walkable_headings`` a JSON list such as ``"[12.5, 190.1]"``
    or numbers separated by ``;`` or spaces).

What the city keeps:

* node ``heading_deg``: the panorama heading, wrapped into [0, 360);
  ``walkable_headings_raw``: the list exactly as in the file (order and values:
  CitySeeker's forward baseline takes its first element);
  ``walkable_headings_deg``: the same wrapped into [0, 360). Headings within
  15 degrees outside [0, 360) (the release has one at -9.6) are accepted;
  anything further is a :class:`CityFormatError`. Every record that mentions a
  node must give it the same heading and walkable headings.
* edge ``azimuth_deg`` = ``edge_azimuth`` (must lie in [0, 360]; wrapped),
  ``edge_distance`` must lie in [0, 10000] (ours: the release's longest is
  about 20), file names must be valid node ids (:mod:`urbanarena.world.node_ids`),
  ``edge_distance_mercator`` = the raw ``edge_distance``, and
  ``length_m`` = ``edge_distance * cos(lat_mid)`` where ``lat_mid`` is the mean
  latitude of the edge's two end nodes (WGS84 degrees). Rule: Web Mercator
  scales every length by ``sec(lat)`` (spherical Mercator scale factor, Snyder
  1987, "Map Projections — A Working Manual", USGS PP 1395, eq. 7-3), so true
  ground metres are the Mercator length times ``cos(lat)``; on street-scale
  edges this agrees with the WGS84 geodesic to about 0.5 %.
* Edges are inserted in file order, so each node's out-edges iterate in file
  order (CitySeeker's client breaks azimuth ties by that order).

Node positions: taken from the info CSV when present. Otherwise they are
reconstructed by linear least squares in Web Mercator: every edge record
gives ``P_end - P_start = edge_distance * (sin az, cos az)``; nodes that
appear in question routes (``complete_route`` and the two-stop
``stage1_route``/``stage2_route`` entries carry ``latitude``/``longitude``)
are fixed at those coordinates (hard anchors, their unknowns eliminated), and
the remaining positions solve the sparse over-determined system with
``scipy.sparse.linalg.lsqr`` (x and y separately: they share the matrix).
The per-edge residual ``|P_end - P_start - v|`` converted to metres (RMS and
max) goes into ``city.meta.extra["reconstruction"]``. A weakly connected
component that no question route touches holds no anchor, cannot be positioned
and cannot be reached by any task (real release cities hold such small
islands): it is dropped with a warning and counted in
``city.meta.extra["dropped_islands"]`` (``components``, ``nodes``, ``edges``,
``examples``), shown by ``urbanarena city info``. Every node in a component of
a route is kept.

The import report (``city.meta.extra``) holds the graph facts
(:func:`urbanarena.world.facts.graph_facts`), the reconstruction residual,
the number of nodes whose walkable-heading count differs from their
out-degree, edges without a reverse edge, task endpoints unreachable in the
graph, and the edges that no action can take under CitySeeker's client rule
(nearest ``edge_azimuth`` to a walkable heading by plain absolute difference,
first edge in file order on ties; also with 360-degree wrap) with the task
endpoints that rule leaves unreachable.

Licence: CitySeeker code is Apache-2.0; its README says the data is for
research use only.
"""

from __future__ import annotations

import csv
import gzip
import json
import logging
import math
import zlib
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse.csgraph import breadth_first_order, connected_components

from urbanarena.errors import CityFormatError, TaskFormatError
from urbanarena.world.city import City, CityMeta
from urbanarena.world.facts import graph_facts
from urbanarena.world.geo import lonlat_to_mercator, mercator_to_lonlat, wrap_deg
from urbanarena.world.node_ids import node_id_problem

KIND = "cityseeker"
log = logging.getLogger(__name__)

#: longest edge accepted, EPSG:3857 units (ours: the release's longest is about 20; a street-view step of
#: 10 km is a broken record, and larger values overflow the position reconstruction)
MAX_EDGE_DISTANCE_MERCATOR = 10_000.0
#: |x| and |y| bound of EPSG:3857 (pi x 6378137 m; latitude +-85.0511 deg)
MERCATOR_LIMIT = math.pi * 6378137.0
#: walkable/panorama headings may lie this far outside [0, 360) (degrees)
HEADING_TOLERANCE_DEG = 15.0

LICENCE = "Apache-2.0 (CitySeeker code); data: research use only (CitySeeker README)"
ATTRIBUTION = "CitySeeker benchmark release (street-view pose graph and questions); data for research use only"

EDGE_FIELDS = (
    "start_filename",
    "start_heading",
    "start_walkable_headings",
    "end_filename",
    "end_heading",
    "end_walkable_headings",
    "edge_azimuth",
    "edge_distance",
)
_EDGE_SET = frozenset(EDGE_FIELDS)
INFO_COLUMNS = ("filename", "lon", "lat", "year", "month", "heading", "walkable_headings")
QUESTION_FIELDS = ("question_idx", "idx", "folder", "question", "from", "to", "complete_route", "difficulty", "category")
STAGE_FIELDS = ("from", "to", "route")
#: CitySeeker question categories (there is no ``question3`` in the release)
CATEGORIES = ("question1", "question2", "question4", "question5", "question6", "question7", "question8", "question9")


# ---------------------------------------------------------------- file helpers
def _connections_file(d: Path) -> Path:
    for name in ("connections.json", "connections.json.gz"):
        if (d / name).is_file():
            return d / name
    raise CityFormatError(d / "connections.json", None, "no connections.json or connections.json.gz in the city directory")


def _city_dir(path: str | Path) -> Path:
    p = Path(path)
    if p.is_file() and p.name.startswith("connections.json"):
        return p.parent
    if not p.is_dir():
        raise CityFormatError(p, None, "not a CitySeeker city directory (expected a directory with connections.json[.gz])")
    return p


def _info_csv(d: Path) -> Path | None:
    found = sorted(d.glob("*_info.csv"))
    if not found:
        return None
    for f in found:
        if f.name.lower() == f"{d.name.lower()}_info.csv":
            return f
    if len(found) > 1:
        raise CityFormatError(d, None, f"several info CSV files ({', '.join(f.name for f in found)}); keep one")
    return found[0]


def source_files(path: str | Path) -> list[Path]:
    """Files whose content identifies a CitySeeker import (hashed for the import cache).

    Returns ``[connections file, question.json (if present), info CSV (if present)]``.
    Raises :class:`CityFormatError` if the directory has no connections file.
    """
    d = _city_dir(path)
    out = [_connections_file(d)]
    if (d / "question.json").is_file():
        out.append(d / "question.json")
    info = _info_csv(d)
    if info is not None:
        out.append(info)
    return out


def _load_json(path: Path, error: type) -> Any:
    """Parse a JSON (or gzip JSON) file; NaN/Infinity literals are parsed (and rejected later)."""
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as f:
                data = f.read()
        else:
            data = path.read_bytes()
    except FileNotFoundError as e:
        raise error(path, None, "file not found") from e
    except (OSError, EOFError, zlib.error) as e:
        raise error(path, None, f"unreadable or truncated gzip file: {e}") from e
    if not data.strip():
        raise error(path, "line 1", "empty file")
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise error(path, f"byte {e.start}", f"not UTF-8 text: {e.reason}") from e
    except json.JSONDecodeError as e:
        raise error(path, f"line {e.lineno} column {e.colno}", f"invalid or truncated JSON: {e.msg}") from e
    except RecursionError:
        raise error(path, None, "JSON nested too deeply") from None


def _num(v: Any) -> float | None:
    """``float(v)`` if ``v`` is a finite JSON number (not a bool), else ``None``."""
    if type(v) is float:
        return v if math.isfinite(v) else None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:  # an integer beyond the float range (10**400)
        return None
    return f if math.isfinite(f) else None


def _check_heading(v: float) -> bool:
    return -HEADING_TOLERANCE_DEG <= v < 360.0 + HEADING_TOLERANCE_DEG


# ------------------------------------------------------------------- questions
def _question_record(i: int, q: Any) -> str:
    qi = q.get("question_idx") if isinstance(q, dict) else None
    return f"question {i}" + (f" (question_idx {qi})" if qi is not None and not isinstance(qi, (dict, list)) else "")


def _check_route(path: Path, rec: str, route: Any, name: str) -> None:
    if not isinstance(route, list) or not route:
        raise TaskFormatError(path, rec, f"{name} must be a non-empty list of {{filename, latitude, longitude}}")
    for j, p in enumerate(route):
        if not isinstance(p, dict):
            raise TaskFormatError(path, rec, f"{name}[{j}] is not an object")
        if not isinstance(p.get("filename"), str) or not p["filename"]:
            raise TaskFormatError(path, rec, f"{name}[{j}].filename missing or not a string")
        lat, lon = _num(p.get("latitude")), _num(p.get("longitude"))
        if lat is None or lon is None:
            raise TaskFormatError(path, rec, f"{name}[{j}] latitude/longitude missing or not a finite number: "
                                             f"{p.get('latitude')!r}, {p.get('longitude')!r}")
        if not (-85.0 < lat < 85.0 and -180.0 <= lon <= 180.0):
            raise TaskFormatError(path, rec, f"{name}[{j}] latitude/longitude out of range: {lat}, {lon}")


def read_questions(path: str | Path) -> list[dict[str, Any]]:
    """Read and validate a CitySeeker ``question.json`` (plain or ``.gz``).

    Checks every record: the fields ``question_idx`` (int, unique), ``idx``
    (int), ``folder``, ``question``, ``from``, ``to``, ``difficulty``,
    ``category`` (one of :data:`CATEGORIES`), ``complete_route`` (non-empty list
    of ``{filename, latitude, longitude}`` with finite WGS84 degrees, first/last
    filename equal to ``from``/``to``), finite ``total_weight`` when present,
    and for ``question2`` the ``stage1_route``/``stage2_route`` objects (``from``,
    ``to``, ``route``; stage 1 starts at ``from``, stage 2 starts where stage 1
    ends and ends at ``to``). Unknown extra fields are kept.

    Args:
        path: the question file, or a city directory holding ``question.json``.
    Returns:
        The records (dicts, file order).
    Raises:
        TaskFormatError: unreadable/empty/invalid JSON (message names the line),
            or a bad record (message names ``question <i> (question_idx <q>)``).
    """
    p = Path(path)
    if p.is_dir():
        p = p / "question.json"
    raw = _load_json(p, TaskFormatError)
    if not isinstance(raw, list):
        raise TaskFormatError(p, None, "expected a JSON list of question records")
    seen: dict[int, int] = {}
    for i, q in enumerate(raw):
        rec = _question_record(i, q)
        if not isinstance(q, dict):
            raise TaskFormatError(p, rec, "question record is not an object")
        missing = [k for k in QUESTION_FIELDS if k not in q]
        if missing:
            raise TaskFormatError(p, rec, f"missing field(s): {', '.join(missing)}")
        for k in ("question_idx", "idx"):
            if isinstance(q[k], bool) or not isinstance(q[k], int):
                raise TaskFormatError(p, rec, f"{k} must be an integer, got {q[k]!r}")
        if q["question_idx"] in seen:
            raise TaskFormatError(p, rec, f"duplicate question_idx {q['question_idx']} (also question {seen[q['question_idx']]})")
        seen[q["question_idx"]] = i
        for k in ("folder", "question", "from", "to", "difficulty", "category"):
            if not isinstance(q[k], str) or not q[k]:
                raise TaskFormatError(p, rec, f"{k} must be a non-empty string, got {q[k]!r}")
        if q["category"] not in CATEGORIES:
            raise TaskFormatError(p, rec, f"unknown category {q['category']!r}; known: {', '.join(CATEGORIES)}")
        if "city" in q and not (isinstance(q["city"], str) and q["city"]):
            raise TaskFormatError(p, rec, f"city must be a non-empty string, got {q['city']!r}")
        if "total_weight" in q and _num(q["total_weight"]) is None:
            raise TaskFormatError(p, rec, f"total_weight is not a finite number: {q['total_weight']!r}")
        _check_route(p, rec, q["complete_route"], "complete_route")
        route = q["complete_route"]
        if route[0]["filename"] != q["from"] or route[-1]["filename"] != q["to"]:
            raise TaskFormatError(p, rec, f"complete_route runs {route[0]['filename']} -> {route[-1]['filename']}, "
                                          f"not from {q['from']} to {q['to']}")
        if q["category"] == "question2":
            prev_to = q["from"]
            for k in ("stage1_route", "stage2_route"):
                st = q.get(k)
                if not isinstance(st, dict):
                    raise TaskFormatError(p, rec, f"two-stop question needs an object {k}")
                miss = [f for f in STAGE_FIELDS if f not in st]
                if miss:
                    raise TaskFormatError(p, rec, f"{k} missing field(s): {', '.join(miss)}")
                _check_route(p, rec, st["route"], f"{k}.route")
                if st["from"] != prev_to or st["route"][0]["filename"] != st["from"] or st["route"][-1]["filename"] != st["to"]:
                    raise TaskFormatError(p, rec, f"{k} does not chain: runs {st['route'][0]['filename']} -> "
                                                  f"{st['route'][-1]['filename']} (from {st['from']!r}, to {st['to']!r}, expected to start at {prev_to!r})")
                if "weight" in st and _num(st["weight"]) is None:
                    raise TaskFormatError(p, rec, f"{k}.weight is not a finite number: {st['weight']!r}")
                prev_to = st["to"]
            if prev_to != q["to"]:
                raise TaskFormatError(p, rec, f"stage2_route ends at {prev_to!r}, not at to={q['to']!r}")
    return raw


def question_routes(q: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The routes of a validated question: ``[complete_route]`` plus the stage routes of two-stop ones."""
    out = [q["complete_route"]]
    for k in ("stage1_route", "stage2_route"):
        if isinstance(q.get(k), dict):
            out.append(q[k]["route"])
    return out


def question_stage_goals(q: dict[str, Any]) -> list[str]:
    """Goal nodes in order: ``[to]`` for one-stop, ``[stage1.to, stage2.to]`` for two-stop questions."""
    if q.get("category") == "question2" and isinstance(q.get("stage1_route"), dict):
        return [q["stage1_route"]["to"], q["stage2_route"]["to"]]
    return [q["to"]]


# ------------------------------------------------------------------- edges
def _read_edges(path: Path):
    """Validate the connections list; return node attrs, edge arrays and the edge list."""
    raw = _load_json(path, CityFormatError)
    if not isinstance(raw, list):
        raise CityFormatError(path, None, "expected a JSON list of edge records")
    if not raw:
        raise CityFormatError(path, None, "no edge records")
    nodes: dict[str, dict[str, Any]] = {}
    first_seen: dict[str, int] = {}
    pairs: dict[tuple[str, str], int] = {}
    starts, ends, az, dist = [], [], [], []
    for i, e in enumerate(raw):
        rec = f"edge {i}"
        if not isinstance(e, dict):
            raise CityFormatError(path, rec, "edge record is not an object")
        if not _EDGE_SET <= e.keys():
            missing = [k for k in EDGE_FIELDS if k not in e]
            raise CityFormatError(path, rec, f"missing field(s): {', '.join(missing)}")
        s, t = e["start_filename"], e["end_filename"]
        for k, v in (("start_filename", s), ("end_filename", t)):
            problem = node_id_problem(v)
            if problem is not None:
                raise CityFormatError(path, rec, f"{k}: {problem}")
        if s == t:
            raise CityFormatError(path, rec, f"self-loop on {s}")
        if (s, t) in pairs:
            raise CityFormatError(path, rec, f"duplicate edge {s} -> {t} (first at edge {pairs[s, t]})")
        pairs[s, t] = i
        a = _num(e["edge_azimuth"])
        if a is None:
            raise CityFormatError(path, rec, f"edge_azimuth is not a finite number: {e['edge_azimuth']!r}")
        if not 0.0 <= a <= 360.0:
            raise CityFormatError(path, rec, f"edge_azimuth {a} outside [0, 360]")
        d = _num(e["edge_distance"])
        if d is None:
            raise CityFormatError(path, rec, f"edge_distance is not a finite number: {e['edge_distance']!r}")
        if not 0 <= d <= MAX_EDGE_DISTANCE_MERCATOR:
            raise CityFormatError(path, rec, f"edge_distance {d} outside [0, {MAX_EDGE_DISTANCE_MERCATOR:g}] (EPSG:3857 units)")
        for side, node in (("start", s), ("end", t)):
            h = e[f"{side}_heading"]
            wh = e[f"{side}_walkable_headings"]
            known = nodes.get(node)
            if known is not None and known["_h"] == h and known["_wh"] == wh:
                continue  # same values as before: already validated
            hv = _num(h)
            if hv is None:
                raise CityFormatError(path, rec, f"{side}_heading is not a finite number: {h!r}")
            if not _check_heading(hv):
                raise CityFormatError(path, rec, f"{side}_heading {hv} is more than {HEADING_TOLERANCE_DEG:g} deg outside [0, 360)")
            if not isinstance(wh, list):
                raise CityFormatError(path, rec, f"{side}_walkable_headings must be a list, got {wh!r}")
            whv = []
            for j, x in enumerate(wh):
                xv = _num(x)
                if xv is None:
                    raise CityFormatError(path, rec, f"{side}_walkable_headings[{j}] is not a finite number: {x!r}")
                if not _check_heading(xv):
                    raise CityFormatError(path, rec, f"{side}_walkable_headings[{j}] = {xv} is more than "
                                                     f"{HEADING_TOLERANCE_DEG:g} deg outside [0, 360)")
                whv.append(xv)
            if known is not None:
                raise CityFormatError(path, rec, f"node {node}: {side}_heading/{side}_walkable_headings ({h!r}, {wh!r}) "
                                                 f"disagree with edge {first_seen[node]} ({known['_h']!r}, {known['_wh']!r})")
            nodes[node] = {
                "_h": h,
                "_wh": wh,
                "heading_deg": wrap_deg(hv),
                "walkable_headings_raw": whv,
                "walkable_headings_deg": [wrap_deg(x) for x in whv],
            }
            first_seen[node] = i
        starts.append(s)
        ends.append(t)
        az.append(a)
        dist.append(d)
    return nodes, first_seen, starts, ends, np.array(az), np.array(dist)


# ------------------------------------------------------------------- info CSV
def _parse_headings(text: str) -> list[float]:
    t = text.strip()
    if t.startswith("["):
        vals = json.loads(t)
        if not isinstance(vals, list):
            raise ValueError("not a list")
    else:
        vals = [x for x in t.replace(";", " ").replace(",", " ").split() if x]
    out = [float(v) for v in vals]
    if any(not math.isfinite(v) for v in out):
        raise ValueError("non-finite value")
    return out


def _read_info_csv(path: Path) -> dict[str, dict[str, Any]]:
    """Rows of the info CSV by filename: lon, lat, year, month, heading, walkable headings, line."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise CityFormatError(path, None, f"not UTF-8 text: {e.reason}") from e
    if not text.strip():
        raise CityFormatError(path, "line 1", "empty file")
    reader = csv.reader(text.splitlines())
    header = [h.strip() for h in next(reader)]
    missing = [c for c in INFO_COLUMNS if c not in header]
    if missing:
        raise CityFormatError(path, "line 1", f"header lacks column(s) {', '.join(missing)}; expected {', '.join(INFO_COLUMNS)}")
    col = {c: header.index(c) for c in INFO_COLUMNS}
    rows: dict[str, dict[str, Any]] = {}
    for row in reader:
        line = f"line {reader.line_num}"
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise CityFormatError(path, line, f"{len(row)} columns, expected {len(header)} ({', '.join(header)})")
        name = row[col["filename"]].strip()
        if not name:
            raise CityFormatError(path, line, "empty filename")
        if name in rows:
            raise CityFormatError(path, line, f"duplicate filename {name} (also {rows[name]['line']})")
        vals: dict[str, Any] = {"line": line}
        for c in ("lon", "lat", "heading"):
            try:
                v = float(row[col[c]])
            except ValueError:
                raise CityFormatError(path, line, f"column {c}: not a number: {row[col[c]]!r}") from None
            if not math.isfinite(v):
                raise CityFormatError(path, line, f"column {c}: not a finite number: {row[col[c]]!r}")
            vals[c] = v
        for c in ("year", "month"):
            s = row[col[c]].strip()
            if s:
                try:
                    vals[c] = int(float(s))
                except ValueError:
                    raise CityFormatError(path, line, f"column {c}: not a number: {s!r}") from None
            else:
                vals[c] = None
        if not (-85.0 < vals["lat"] < 85.0 and -180.0 <= vals["lon"] <= 180.0):
            raise CityFormatError(path, line, f"lat/lon out of range: {vals['lat']}, {vals['lon']}")
        if not _check_heading(vals["heading"]):
            raise CityFormatError(path, line, f"heading {vals['heading']} is more than {HEADING_TOLERANCE_DEG:g} deg outside [0, 360)")
        try:
            vals["walkable"] = _parse_headings(row[col["walkable_headings"]])
        except (ValueError, json.JSONDecodeError, TypeError, RecursionError):
            raise CityFormatError(path, line, f"column walkable_headings: not a list of numbers: {row[col['walkable_headings']]!r}") from None
        bad = [h for h in vals["walkable"] if not _check_heading(h)]
        if bad:
            raise CityFormatError(path, line, f"walkable heading {bad[0]} is more than {HEADING_TOLERANCE_DEG:g} deg outside [0, 360)")
        rows[name] = vals
    if not rows:
        raise CityFormatError(path, "line 2", "no data rows")
    return rows


# ------------------------------------------------------------ reconstruction
def _drop_islands(nodes: dict[str, dict[str, Any]], starts: list[str], ends: list[str], az: np.ndarray,
                  dist: np.ndarray, anchors: dict[str, Any], conn_path: Path):
    """Drop the weakly connected components that hold no anchored node (no question route touches
    them: no task can reach them and their positions cannot be reconstructed).

    Returns ``(nodes, starts, ends, az, dist, report)`` with the kept nodes/edges in file order and
    ``report`` = ``{"components", "nodes", "edges", "examples"}`` (``None`` when nothing was dropped);
    logs one warning naming the file and the count.
    """
    names = list(nodes)
    ids = {n: i for i, n in enumerate(names)}
    s_idx = np.fromiter((ids[x] for x in starts), dtype=np.int64, count=len(starts))
    t_idx = np.fromiter((ids[x] for x in ends), dtype=np.int64, count=len(ends))
    adj = sp.coo_matrix((np.ones(len(s_idx)), (s_idx, t_idx)), shape=(len(names), len(names)))
    ncomp, labels = connected_components(adj, directed=True, connection="weak")
    anchored = np.zeros(ncomp, dtype=bool)
    anchored[labels[[ids[k] for k in anchors]]] = True
    if anchored.all():
        return nodes, starts, ends, az, dist, None
    keep_node = anchored[labels]
    keep_edge = keep_node[s_idx]  # both ends of an edge lie in one component
    dropped = np.flatnonzero(~anchored)
    examples = [names[int(np.flatnonzero(labels == c)[0])] for c in dropped[:5]]
    report = {"components": int(len(dropped)), "nodes": int((~keep_node).sum()), "edges": int((~keep_edge).sum()),
              "examples": examples}
    log.warning("%s: dropped %d component(s) no question route touches (%d node(s), %d edge(s); e.g. the one "
                "holding %s): no task can reach them and they cannot be positioned", conn_path,
                report["components"], report["nodes"], report["edges"], examples[0])
    kept = [n for n, k in zip(names, keep_node.tolist()) if k]
    ke = keep_edge.tolist()
    return ({n: nodes[n] for n in kept}, [x for x, k in zip(starts, ke) if k], [x for x, k in zip(ends, ke) if k],
            az[keep_edge], dist[keep_edge], report)


def _reconstruct(ids: dict[str, int], s_idx: np.ndarray, t_idx: np.ndarray, az_deg: np.ndarray, dist: np.ndarray,
                 anchors: dict[str, tuple[float, float, str]], conn_path: Path, q_path: Path | None):
    """Least-squares node positions in Web Mercator from edge vectors and hard anchors.

    Returns ``(merc_x, merc_y, residual, info)``: node coordinates, shape
    ``(N,)`` in EPSG:3857 units; per-edge residual ``|P_end - P_start - v|``,
    shape ``(M,)`` in EPSG:3857 units; and a dict of solver facts.
    Raises :class:`CityFormatError` when there are no anchors or a connected
    component holds none.
    """
    n, m = len(ids), len(s_idx)
    if not anchors:
        raise CityFormatError(q_path or conn_path, None,
                              "no node coordinates: need an <City>_info.csv or a question.json whose routes carry latitude/longitude")
    # every component needs an anchor
    adj = sp.coo_matrix((np.ones(m), (s_idx, t_idx)), shape=(n, n))
    ncomp, labels = connected_components(adj, directed=True, connection="weak")
    a_idx = np.array([ids[k] for k in anchors], dtype=np.int64)
    anchored = np.zeros(ncomp, dtype=bool)
    anchored[labels[a_idx]] = True
    if not anchored.all():
        names = list(ids)
        comp = int(np.flatnonzero(~anchored)[0])
        members = np.flatnonzero(labels == comp)
        raise CityFormatError(conn_path, f"node {names[members[0]]}",
                              f"{int((~anchored[labels]).sum())} node(s) in {int((~anchored).sum())} component(s) are not connected to any "
                              f"anchored node (route coordinates in question.json), e.g. a component of {len(members)} node(s) holding "
                              f"{names[members[0]]}: positions cannot be reconstructed")
    alon = np.array([anchors[k][0] for k in anchors])
    alat = np.array([anchors[k][1] for k in anchors])
    ax, ay = lonlat_to_mercator(alon, alat)
    ax, ay = np.asarray(ax, dtype=float), np.asarray(ay, dtype=float)
    x0, y0 = float(ax.mean()), float(ay.mean())  # centre for numerical precision
    ax, ay = ax - x0, ay - y0
    rad = np.radians(az_deg)
    bx, by = dist * np.sin(rad), dist * np.cos(rad)
    rows = np.arange(m)
    A = sp.csr_matrix((np.r_[np.ones(m), -np.ones(m)], (np.r_[rows, rows], np.r_[t_idx, s_idx])), shape=(m, n))
    fixed = np.zeros(n, dtype=bool)
    fixed[a_idx] = True
    free = np.flatnonzero(~fixed)
    X = np.zeros(n)
    Y = np.zeros(n)
    X[a_idx], Y[a_idx] = ax, ay
    iters = []
    if len(free):
        # initial guess: walk the edge vectors outward from the anchors (breadth first), so that
        # lsqr only solves for the small correction and a relative tolerance is a tight absolute one
        k = len(a_idx)
        und = sp.csr_matrix((np.ones(2 * m + k), (np.r_[s_idx, t_idx, np.full(k, n)], np.r_[t_idx, s_idx, a_idx])),
                            shape=(n + 1, n + 1))
        order, pred = breadth_first_order(und, n, directed=True, return_predecessors=True)
        vec = {(int(u), int(v)): (float(x), float(y)) for u, v, x, y in zip(s_idx, t_idx, bx, by)}
        xs, ys = X.tolist(), Y.tolist()
        for v in order[1:].tolist():
            u = int(pred[v])
            if u == n:
                continue
            hit = vec.get((u, v))
            if hit is not None:
                xs[v], ys[v] = xs[u] + hit[0], ys[u] + hit[1]
            else:
                hx, hy = vec[(v, u)]
                xs[v], ys[v] = xs[u] - hx, ys[u] - hy
        X0, Y0 = np.array(xs), np.array(ys)
        Af = A[:, free].tocsc()
        Ak = A[:, a_idx]
        for arr, guess, b, ak in ((X, X0, bx, ax), (Y, Y0, by, ay)):
            rhs = b - Ak @ ak - Af @ guess[free]
            sol = spla.lsqr(Af, rhs, atol=1e-9, btol=1e-9, iter_lim=20 * n + 100)
            arr[free] = guess[free] + sol[0]
            iters.append(int(sol[2]))
    res = np.hypot(A @ X - bx, A @ Y - by)
    return X + x0, Y + y0, res, {"method": "lsqr (breadth-first initial guess), hard anchors on route coordinates", "anchors": len(anchors),
                                 "free_nodes": int(len(free)), "lsqr_iterations": iters}


# ------------------------------------------------------------------- rule facts
def cityseeker_takeable_edges(graph: nx.DiGraph, wrap: bool = False) -> set[tuple[str, str]]:
    """Edges CitySeeker's client rule can take: for each walkable heading ``h``
    of a node, the out-edge minimising ``|azimuth - h|`` (first in insertion
    order on ties); with ``wrap`` the angular difference modulo 360 is used.

    Import-report helper (the environment's rule is
    ``urbanarena.env.motion.heading_hop.CitySeekerHop``).
    """
    out: set[tuple[str, str]] = set()
    succ = graph.succ
    for u, nd in graph.nodes(data=True):
        edges = [(v, d["azimuth_deg"]) for v, d in succ[u].items()]
        if not edges:
            continue
        for h in nd.get("walkable_headings_raw") or []:
            best, best_diff = None, math.inf
            for v, a in edges:
                diff = abs(a - h)
                if wrap:
                    diff = diff % 360.0
                    diff = min(diff, 360.0 - diff)
                if diff < best_diff:  # strict: the first minimum wins ties
                    best, best_diff = v, diff
            out.add((u, best))
    return out


class _Reach:
    """Reachability queries on a directed graph restricted to some edges (scipy BFS, cached per source)."""

    def __init__(self, nodes: list[str], edges):
        self.ids = {n: i for i, n in enumerate(nodes)}
        e = np.array([(self.ids[u], self.ids[v]) for u, v in edges], dtype=np.int64).reshape(-1, 2)
        n = len(nodes)
        self.adj = sp.csr_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(n, n))
        self._cache: dict[str, np.ndarray] = {}

    def __call__(self, a: str, b: str) -> bool:
        if a == b:
            return True
        seen = self._cache.get(a)
        if seen is None:
            seen = np.zeros(self.adj.shape[0], dtype=bool)
            seen[breadth_first_order(self.adj, self.ids[a], directed=True, return_predecessors=False)] = True
            self._cache[a] = seen
        return bool(seen[self.ids[b]])


# ------------------------------------------------------------------- import
def import_city(path: str | Path) -> City:
    """Import a CitySeeker city directory into a :class:`City`.

    Args:
        path: the city directory (or its ``connections.json[.gz]`` file).
    Returns:
        The city: node ids are panorama file names; see the module docstring
        for attributes, the metre conversion and the reconstruction. Name: the
        questions' ``city`` field when present (e.g. ``"hongkong6"``), else the
        directory name lowercased.
    Raises:
        CityFormatError: a malformed file (message names the file and the
            record: ``edge <i>``, ``line <n>``, ``question <i> (question_idx <q>)``),
            a question naming an unknown node or a route step that is not an
            edge, a node without edges in the info CSV, or no coordinates at all
            (neither an info CSV nor route coordinates).
    """
    d = _city_dir(path)
    conn_path = _connections_file(d)
    nodes, first_seen, starts, ends, az, dist = _read_edges(conn_path)

    q_path = d / "question.json"
    questions: list[dict[str, Any]] = []
    if q_path.is_file():
        try:
            questions = read_questions(q_path)
        except TaskFormatError as e:
            raise CityFormatError(e.path, e.record, e.reason) from e
    else:
        q_path = None

    # questions must only mention nodes of the graph, and routes must follow edges
    edge_set = set(zip(starts, ends))
    anchors: dict[str, tuple[float, float, str]] = {}
    anchor_spread_m = 0.0
    for i, q in enumerate(questions):
        rec = _question_record(i, q)
        for k in ("from", "to"):
            if q[k] not in nodes:
                raise CityFormatError(q_path, rec, f"unknown node {q[k]!r} in field {k!r}")
        for route in question_routes(q):
            prev = None
            for j, p in enumerate(route):
                fn = p["filename"]
                if fn not in nodes:
                    raise CityFormatError(q_path, rec, f"unknown node {fn!r} in a route (entry {j})")
                if prev is not None and prev != fn and (prev, fn) not in edge_set:
                    raise CityFormatError(q_path, rec, f"route step {prev} -> {fn} (entry {j}) is not an edge of the graph")
                prev = fn
                ll = (float(p["longitude"]), float(p["latitude"]), rec)
                old = anchors.get(fn)
                if old is None:
                    anchors[fn] = ll
                elif (old[0], old[1]) != ll[:2]:
                    # same node, different coordinates in two records: keep the first, report the spread
                    dlat = (ll[1] - old[1]) * 111_320.0
                    dlon = (ll[0] - old[0]) * 111_320.0 * math.cos(math.radians(ll[1]))
                    anchor_spread_m = max(anchor_spread_m, math.hypot(dlat, dlon))

    info_path = _info_csv(d)
    islands = None
    if info_path is None and anchors:  # components no route touches cannot be positioned: drop them
        nodes, starts, ends, az, dist, islands = _drop_islands(nodes, starts, ends, az, dist, anchors, conn_path)
    ids = {n: i for i, n in enumerate(nodes)}
    s_idx = np.fromiter((ids[s] for s in starts), dtype=np.int64, count=len(starts))
    t_idx = np.fromiter((ids[t] for t in ends), dtype=np.int64, count=len(ends))
    names = list(nodes)
    recon: dict[str, Any]
    if info_path is not None:
        rows = _read_info_csv(info_path)
        for name, r in rows.items():
            if name not in nodes:
                raise CityFormatError(info_path, r["line"], f"node {name} has no edges in {conn_path.name}")
        missing = [n for n in names if n not in rows]
        if missing:
            raise CityFormatError(info_path, None, f"no row for node {missing[0]} (first in {conn_path.name} edge "
                                                   f"{first_seen[missing[0]]}); {len(missing)} node(s) missing")
        lon = np.array([rows[n]["lon"] for n in names])
        lat = np.array([rows[n]["lat"] for n in names])
        mx, my = lonlat_to_mercator(lon, lat)
        mx, my = np.asarray(mx, float), np.asarray(my, float)
        rad = np.radians(az)
        res = np.hypot(mx[t_idx] - mx[s_idx] - dist * np.sin(rad), my[t_idx] - my[s_idx] - dist * np.cos(rad))
        recon = {"method": f"coordinates from {info_path.name}", "anchors": 0, "free_nodes": 0, "lsqr_iterations": []}
        for n in names:
            r = rows[n]
            nodes[n]["capture_year"] = r["year"]
            nodes[n]["capture_month"] = r["month"]
    else:
        mx, my, res, recon = _reconstruct(ids, s_idx, t_idx, az, dist, anchors, conn_path, q_path)
        lon, lat = mercator_to_lonlat(mx, my)
        lon, lat = np.asarray(lon, float), np.asarray(lat, float)
        off = ~(np.isfinite(lat) & np.isfinite(lon) & (np.abs(mx) <= MERCATOR_LIMIT) & (np.abs(my) <= MERCATOR_LIMIT))
        if off.any():
            bad = names[int(np.flatnonzero(off)[0])]
            raise CityFormatError(conn_path, f"edge {first_seen[bad]}", f"node {bad}: the position reconstructed from the "
                                  f"edge vectors lies outside the Web Mercator range ({int(off.sum())} node(s)); "
                                  "edge_distance values are too large for the anchors' coordinates")

    lat_mid = (lat[s_idx] + lat[t_idx]) / 2.0
    cos_mid = np.cos(np.radians(lat_mid))
    length_m = dist * cos_mid
    res_m = res * cos_mid
    recon.update({
        "residual_rms_m": float(np.sqrt(np.mean(res_m ** 2))),
        "residual_max_m": float(res_m.max()),
        "anchor_conflict_max_m": anchor_spread_m,
    })

    g = nx.DiGraph()
    for i, n in enumerate(names):
        a = nodes[n]
        attrs = {
            "lat": float(lat[i]),
            "lon": float(lon[i]),
            "heading_deg": a["heading_deg"],
            "walkable_headings_raw": a["walkable_headings_raw"],
            "walkable_headings_deg": a["walkable_headings_deg"],
        }
        if "capture_year" in a:
            attrs["capture_year"] = a["capture_year"]
            attrs["capture_month"] = a["capture_month"]
        g.add_node(n, **attrs)
    g.add_edges_from(
        (s, t, {"azimuth_deg": wrap_deg(a_), "length_m": float(l_), "edge_distance_mercator": float(d_)})
        for s, t, a_, l_, d_ in zip(starts, ends, az.tolist(), length_m.tolist(), dist.tolist())
    )

    name = d.name.lower()
    q_cities = sorted({q["city"] for q in questions if "city" in q})
    if q_cities:
        name = q_cities[0]
    files = [conn_path] + ([q_path] if q_path else []) + ([info_path] if info_path else [])
    meta = CityMeta(
        name=name,
        source={"kind": KIND, "directory": str(d), "files": [f.name for f in files],
                "description": "CitySeeker release: connections.json (edges), question.json (tasks)"},
        licence=LICENCE,
        attribution=ATTRIBUTION,
        imagery=None,
    )
    city = City(g, meta)
    city.meta.extra = _report(city, questions, recon, q_cities)
    if islands is not None:
        city.meta.extra["dropped_islands"] = islands
    return city


def _report(city: City, questions: list[dict[str, Any]], recon: dict[str, Any], q_cities: list[str]) -> dict[str, Any]:
    g = city.graph
    wh_ne_deg = sum(1 for n, d in g.nodes(data=True) if len(d["walkable_headings_raw"]) != g.out_degree(n))
    no_reverse = sum(1 for u, v in g.edges if not g.has_edge(v, u))
    take = cityseeker_takeable_edges(g, wrap=False)
    take_wrap = cityseeker_takeable_edges(g, wrap=True)
    nodes = list(g.nodes)
    reach_graph = _Reach(nodes, g.edges)
    reach_cs = _Reach(nodes, take)
    unreach_graph, unreach_cs_final, unreach_cs_stages = [], [], []
    for q in questions:
        tid = f"{city.name}/{q['question_idx']}"
        goals = question_stage_goals(q)
        legs = list(zip([q["from"]] + goals[:-1], goals))
        if not all(reach_graph(a, b) for a, b in legs):
            unreach_graph.append(tid)
        if not reach_cs(q["from"], q["to"]):
            unreach_cs_final.append(tid)
        if not all(reach_cs(a, b) for a, b in legs):
            unreach_cs_stages.append(tid)
    return {
        "report_version": 1,
        "facts": graph_facts(city),
        "reconstruction": recon,
        "walkable_count_ne_degree": wh_ne_deg,
        "edges_without_reverse": no_reverse,
        "questions": len(questions),
        "question_cities": q_cities,
        "unreachable_task_endpoints": unreach_graph,
        "cityseeker_v1": {
            "untakeable_edges": g.number_of_edges() - len(take),
            "untakeable_edges_with_wrap": g.number_of_edges() - len(take_wrap),
            "unreachable_final_goals": unreach_cs_final,
            "unreachable_stage_goals": unreach_cs_stages,
        },
    }
