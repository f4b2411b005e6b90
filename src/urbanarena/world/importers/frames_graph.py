"""The frames importer's graph building: frames resolved and ordered, thinned to a spacing, course headings, and
trajectories joined where they cross."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from urbanarena.errors import CityFormatError
from urbanarena.world.geo import WGS84_GEOD, wrap_deg
from urbanarena.world.importers.frames_inputs import ASPECT_TOLERANCE_PX, _Entry, _Frame, _natural_key
from urbanarena.world.importers.frames_exif import read_frame_exif


# ================================================================== resolve
def _where(e: _Entry) -> tuple[Path, str | None]:
    """(file, record) naming a frame in errors: the CSV line when there is one."""
    if e.csv_path is not None:
        return e.csv_path, f"line {e.line} ({e.path.name})"
    return e.path, None


def _resolve(e: _Entry, verify_pixels: bool, warnings: list[str]) -> _Frame:
    ex = read_frame_exif(e.path, verify_pixels=verify_pixels)
    problems = []
    if abs(ex.width_px - 2 * ex.height_px) > ASPECT_TOLERANCE_PX:
        problems.append(f"image is {ex.width_px}x{ex.height_px}, not a 2:1 equirectangular panorama")
    lat, lon = e.lat, e.lon
    if lat is None:
        if not ex.has_exif:
            problems.append("no EXIF metadata at all, so no GPS position (give lat/lon in a CSV manifest)")
        elif ex.gps_problem:
            problems.append(ex.gps_problem + " (give lat/lon in a CSV manifest to override)")
        else:
            lat, lon = ex.lat, ex.lon
    if problems:
        # the image file is what is wrong: name it; CSV rows add their line
        raise CityFormatError(e.path, f"{e.csv_path.name} line {e.line}" if e.csv_path else None, "; ".join(problems))
    if e.heading is not None:
        heading, source = wrap_deg(e.heading), "csv"
    elif ex.heading_deg is not None:
        heading = ex.heading_deg
        source = "exif" if ex.heading_ref != "M" else "exif_magnetic"
        if ex.heading_ref not in ("T", "M"):
            warnings.append(f"{e.path}: GPSImgDirectionRef {ex.heading_ref!r} unknown, heading taken as true north")
        elif ex.heading_ref == "M":
            warnings.append(f"{e.path}: GPSImgDirection is relative to magnetic north; used without declination correction")
    else:
        heading, source = None, None
    assert lat is not None and lon is not None
    return _Frame(e.path, e.trajectory, float(lat), float(lon), heading, source, ex.captured_at)


def _order(frames: list[_Frame], by_csv: bool) -> str:
    """Sort ``frames`` in place into capture order; returns the rule used."""
    if by_csv:
        return "csv"
    if all(f.captured_at is not None for f in frames):
        frames.sort(key=lambda f: (f.captured_at, _natural_key(f.path.name)))
        return "exif_time"
    frames.sort(key=lambda f: _natural_key(f.path.name))
    return "filename"


def thin(lats: np.ndarray, lons: np.ndarray, spacing_m: float) -> list[int]:
    """Indices kept by thinning to a minimum spacing (rule in the module docstring).

    Args:
        lats, lons: WGS84 degrees, capture order, shape ``(n,)``.
        spacing_m: minimum geodesic spacing in metres (``<= 0``: keep all).
    """
    n = len(lats)
    if spacing_m <= 0 or n <= 2:
        return list(range(n))
    kept = [0]
    for k in range(1, n - 1):
        _, _, d = WGS84_GEOD.inv(lons[kept[-1]], lats[kept[-1]], lons[k], lats[k])
        if d >= spacing_m:
            kept.append(k)
    _, _, d = WGS84_GEOD.inv(lons[kept[-1]], lats[kept[-1]], lons[n - 1], lats[n - 1])
    if d < spacing_m and len(kept) > 1:
        kept.pop()
    kept.append(n - 1)
    return kept


def course_headings(lats: np.ndarray, lons: np.ndarray) -> np.ndarray:
    """Course at each point of a polyline, degrees clockwise from true north in [0, 360).

    Point ``k < n-1``: geodesic forward azimuth from point ``k`` to ``k+1``;
    last point: forward azimuth at the last point of the geodesic from point
    ``n-2`` (``back azimuth + 180``). Needs ``n >= 2`` distinct points.
    """
    az, baz, _ = WGS84_GEOD.inv(lons[:-1], lats[:-1], lons[1:], lats[1:])
    az = np.atleast_1d(az)
    last = float(np.atleast_1d(baz)[-1]) + 180.0
    return np.array([wrap_deg(a) for a in az] + [wrap_deg(last)])


# ==================================================================== joins
def _edge_attrs(g: nx.DiGraph, u: str, v: str, **extra: Any) -> dict[str, Any]:
    a, b = g.nodes[u], g.nodes[v]
    az, _, d = WGS84_GEOD.inv(a["lon"], a["lat"], b["lon"], b["lat"])
    return {"azimuth_deg": wrap_deg(az), "length_m": float(d), **extra}


def _zones(cells: set[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """Connected sets of cells under 8-neighbour adjacency, each sorted, ordered by first cell."""
    h = nx.Graph()
    h.add_nodes_from(cells)
    for i, j in cells:
        for di, dj in ((0, 1), (1, -1), (1, 0), (1, 1)):
            if (i + di, j + dj) in cells:
                h.add_edge((i, j), (i + di, j + dj))
    return sorted((sorted(c) for c in nx.connected_components(h)), key=lambda c: c[0])


def _join(
    g: nx.DiGraph,
    node_ids: list[list[str]],
    xy: list[np.ndarray],
    cum: list[np.ndarray],
    traj_names: list[str],
    radius_m: float,
    merge: bool,
) -> list[dict[str, Any]]:
    """Join trajectories where they meet (module docstring); edits ``g``; returns the joins made."""
    import shapely

    seg_traj: list[int] = []
    seg_local: list[int] = []
    coords = []
    for t, pts in enumerate(xy):
        for k in range(len(pts) - 1):
            seg_traj.append(t)
            seg_local.append(k)
            coords.append(pts[k:k + 2])
    if not coords:
        return []
    segs = shapely.linestrings(np.asarray(coords, dtype=float))
    tree = shapely.STRtree(segs)
    qa, qb = tree.query(segs, predicate="dwithin", distance=radius_m)
    cells: dict[tuple[int, int], set[tuple[int, int]]] = {}
    for a, b in zip(qa.tolist(), qb.tolist()):
        if a >= b:
            continue
        ta, tb = seg_traj[a], seg_traj[b]
        i, j = seg_local[a], seg_local[b]
        if ta == tb and (j < i + 2 or cum[ta][j] - cum[ta][i + 1] <= 2 * radius_m):
            continue
        cells.setdefault((ta, tb), set()).add((i, j))
    rep: dict[str, str] = {}

    def find(n: str) -> str:
        while n in rep:
            n = rep[n]
        return n

    seg_index = {(t, k): s for s, (t, k) in enumerate(zip(seg_traj, seg_local))}
    joins: list[dict[str, Any]] = []
    for ta, tb in sorted(cells):
        for zone in _zones(cells[(ta, tb)]):
            cand_a = sorted({k for i, _ in zone for k in (i, i + 1)})
            cand_b = sorted({k for _, j in zone for k in (j, j + 1)})
            best = None
            for ka in cand_a:
                for kb in cand_b:
                    if ta == tb and abs(cum[ta][kb] - cum[ta][ka]) <= 2 * radius_m:
                        continue
                    d = float(np.hypot(*(xy[ta][ka] - xy[tb][kb])))
                    key = (d, ka, kb)
                    if best is None or key < best:
                        best = key
            if best is None:
                continue
            _, ka, kb = best
            if ta == tb and kb < ka:
                ka, kb = kb, ka
            na, nb = find(node_ids[ta][ka]), find(node_ids[tb][kb])
            if na == nb or g.has_edge(na, nb):
                continue
            zsegs = [(segs[seg_index[(ta, i)]], segs[seg_index[(tb, j)]]) for i, j in zone]
            gap = min(float(shapely.distance(s, t)) for s, t in zsegs)
            crosses = any(bool(shapely.intersects(s, t)) for s, t in zsegs)
            _, _, dist = WGS84_GEOD.inv(g.nodes[na]["lon"], g.nodes[na]["lat"], g.nodes[nb]["lon"], g.nodes[nb]["lat"])
            record = {
                "trajectories": [traj_names[ta], traj_names[tb]],
                "nodes": [na, nb],
                "frames": [node_ids[ta][ka], node_ids[tb][kb]],
                "distance_m": float(dist),
                "min_gap_m": gap,
                "crossing": crosses,
            }
            if merge and dist <= radius_m:
                _merge(g, keep=na, drop=nb)
                rep[nb] = na
                record["action"] = "merge"
                record["junction"] = na
            else:
                g.add_edge(na, nb, **_edge_attrs(g, na, nb, trajectory_id=None, edge_kind="join"))
                g.add_edge(nb, na, **_edge_attrs(g, nb, na, trajectory_id=None, edge_kind="join"))
                record["action"] = "connect"
            joins.append(record)
    return joins


def _merge(g: nx.DiGraph, keep: str, drop: str) -> None:
    """Re-attach ``drop``'s edges to ``keep`` (geometry from ``keep``) and remove ``drop``."""
    for u, _, d in list(g.in_edges(drop, data=True)):
        if u != keep and not g.has_edge(u, keep):
            extra = {k: v for k, v in d.items() if k not in ("azimuth_deg", "length_m")}
            g.add_edge(u, keep, **_edge_attrs(g, u, keep, **extra))
    for _, v, d in list(g.out_edges(drop, data=True)):
        if v != keep and not g.has_edge(keep, v):
            extra = {k: v2 for k, v2 in d.items() if k not in ("azimuth_deg", "length_m")}
            g.add_edge(keep, v, **_edge_attrs(g, keep, v, **extra))
    merged = list(g.nodes[keep].get("merged_frames") or [])
    merged.append(drop)
    merged.extend(g.nodes[drop].get("merged_frames") or [])
    g.nodes[keep]["merged_frames"] = merged
    g.remove_node(drop)
