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

Modules: reading the files (parsing) is in :mod:`.cityseeker_read`, the graph reconstruction and rule facts in
:mod:`.cityseeker_graph`; this module runs the import and re-exports their names.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from urbanarena.errors import CityFormatError, TaskFormatError
from urbanarena.world.city import City, CityMeta
from urbanarena.world.facts import graph_facts
from urbanarena.world.geo import lonlat_to_mercator, mercator_to_lonlat, wrap_deg
# re-exported: reading the release's files and reconstructing its graph were defined here
from urbanarena.world.importers.cityseeker_read import (  # noqa: F401
    ATTRIBUTION, CATEGORIES, EDGE_FIELDS, HEADING_TOLERANCE_DEG, INFO_COLUMNS, KIND, LICENCE,
    MAX_EDGE_DISTANCE_MERCATOR, MERCATOR_LIMIT, QUESTION_FIELDS, STAGE_FIELDS, _EDGE_SET, _check_heading,
    _check_route, _city_dir, _connections_file, _info_csv, _load_json, _num, _parse_headings, _question_record,
    _read_edges, _read_info_csv, log, question_routes, question_stage_goals, read_questions, source_files,
)
from urbanarena.world.importers.cityseeker_graph import (  # noqa: F401
    _Reach, _drop_islands, _reconstruct, cityseeker_takeable_edges,
)


# ------------------------------------------------------------------- import
#: farthest a node of the info CSV may lie from the median position of all nodes (km; ours: a CitySeeker city
#: spans a few km, so a node 100 km off is a typo in its coordinates, not a street)
MAX_NODE_SPREAD_KM = 100.0


def _check_spread(info_path: Path, names: list[str], lat: np.ndarray, lon: np.ndarray, rows: dict) -> None:
    """Refuse an info-CSV node farther than :data:`MAX_NODE_SPREAD_KM` from the median position (haversine on
    a 6371 km sphere: the bound is coarse, the sphere is close enough)."""
    if len(names) < 3:
        return
    la0, lo0 = np.radians(np.median(lat)), np.radians(np.median(lon))
    la, lo = np.radians(lat), np.radians(lon)
    h = np.sin((la - la0) / 2) ** 2 + np.cos(la) * np.cos(la0) * np.sin((lo - lo0) / 2) ** 2
    km = 2 * 6371.0 * np.arcsin(np.sqrt(np.clip(h, 0.0, 1.0)))
    far = np.flatnonzero(km > MAX_NODE_SPREAD_KM)
    if far.size:
        i = int(far[np.argmax(km[far])])
        raise CityFormatError(info_path, rows[names[i]]["line"],
                              f"node {names[i]} lies {km[i]:,.0f} km from the median position of the city's nodes "
                              f"(at most {MAX_NODE_SPREAD_KM:g} km; {far.size} node(s) that far): check its lat/lon")


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
        _check_spread(info_path, names, lat, lon, rows)
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
