"""Reading a CitySeeker release (parsing): its constants, folder layout, questions, connection edges and the per-image
info CSV, each checked with a typed error naming the file and record."""

from __future__ import annotations

import csv
import gzip
import json
import logging
import math
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from urbanarena.errors import CityFormatError, TaskFormatError
from urbanarena.world.geo import wrap_deg
from urbanarena.world.node_ids import file_name_id_problem


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
            problem = file_name_id_problem(v)
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
        problem = file_name_id_problem(name)
        if problem is not None:
            raise CityFormatError(path, line, f"column filename: {problem}")
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
