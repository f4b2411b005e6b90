"""OpenStreetMap importer: a pedestrian pose graph with annotations (``--city osm:FILE``).

Reads ``.osm`` (XML), ``.osm.pbf``, ``.osm.gz`` or ``.osm.bz2`` with pyosmium
(BSD-2-Clause) and builds a :class:`~urbanarena.world.city.City` whose nodes
are pose nodes along the walkable street network, plus its
:class:`~urbanarena.world.annotations.Annotations` (POIs, street objects,
buildings, blocks, street geometry). ``import_city(path, bbox=(W, S, E, N))``
crops to a bbox in WGS84 degrees; ``osm:FILE`` (no bbox) imports the whole file.

Pipeline (every threshold is an argument of :func:`import_city`):

1. **Read** the file, keeping what lies within the bbox grown by a margin
   (``max(context_m, 3 * sidewalk_fold_m)``, so that folding and facade tests
   near the edge see their streets). Ways are split where a node location is
   missing (extract boundaries).
2. **Walkable ways** (:func:`classify_way`). Included ``highway`` values:
   :data:`STREET_HIGHWAYS` (carriageways and pedestrian streets) and
   :data:`PATH_HIGHWAYS` (footway, path, steps, track, bridleway);
   ``cycleway`` only with ``foot`` = yes/designated/permissive;
   ``trunk``/``motorway`` (and links) only with such a ``foot`` tag.
   Excluded, with the reason counted in the report: any other ``highway``
   value (platform, corridor, elevator, construction, proposed, the
   non-standard ``trail`` of the Helsinki extract, ...); ``foot`` in
   :data:`FOOT_NO`; ``access`` in :data:`ACCESS_NO` unless ``foot`` allows
   walking; ``area=yes`` (a pedestrian square's outline is not a walking
   line: it is kept as a ``walkable_areas`` polygon); ``indoor`` other than
   no; tunnels (``tunnel`` other than no/building_passage: the city is
   rendered above ground). Roads tagged ``foot=use_sidepath`` stay: they
   carry their separately mapped sidewalks (step 3). Building outlines are
   never streets (only ``highway`` ways are read as lines).
3. **Sidewalk folding.** A way tagged ``footway=sidewalk`` runs beside a
   carriageway drawn separately; the pose graph walks the carriageway's
   centreline and the sidewalk folds into it. Rule: sample the sidewalk
   every 2 m; a sample is *covered* when a carriageway segment
   (:data:`CARRIER_HIGHWAYS`) lies within ``sidewalk_fold_m`` (default
   20 m) and runs parallel to it (within ``fold_angle_deg``, default 25
   degrees). Uncovered stretches shorter than ``fold_keep_min_m`` (15 m)
   next to covered ones count as covered (corners); covered stretches are
   dropped (cuts snap to a sidewalk vertex within 2.5 m, i.e. its corner)
   and their side (left/right of the carriageway) is recorded on it
   (``Street.sidewalk_left/right``); uncovered stretches stay as footways.
   Ways that touched a dropped sidewalk are reconnected: a dead-end spur
   that lies wholly within ``sidewalk_fold_m`` of the carriageway and is at
   most ``2 * sidewalk_fold_m`` long (the half of a crossing between
   sidewalk and road) is removed; any other touching vertex that cannot
   reach a carriageway vertex within ``1.5 * sidewalk_fold_m`` along the
   network gets a straight connector to the nearest point of the
   carriageway that absorbed the sidewalk there.
4. **Crop** the network to the bbox (segments clipped at its edges), then
   contract streets (see 5) shorter than ``merge_m`` (3 m) into one vertex:
   dual junctions a metre apart and stubs left by the crop would otherwise
   give pose nodes almost on top of each other.
5. **Pose nodes.** The network is cut into streets between *decision
   points* (vertices of degree >= 3), dead ends, vertices where the way's
   ``name`` or ``highway`` changes (a corner where one street becomes
   another; connectors never cut) and, on closed loops, one vertex; a
   street runs in the direction of its dominant (longest) OSM way, and
   pose nodes sit on every such vertex. Each street of length ``L`` carries
   ``n = max(1, floor(L / spacing_m + 0.5))`` equal edges of length
   ``L / n`` along its polyline, so
   edges on streets of at least ``1.5 * spacing_m`` are within
   [0.75, 1.25] x ``spacing_m`` (shorter streets are one edge). Loops get at
   least three edges and parallel streets between the same two decision
   points at least two, so the graph is simple. Every edge exists in both
   directions except on pedestrian one-ways (``oneway:foot``, or ``oneway``
   on footway/path/steps/pedestrian; ``-1`` reverses). Edge
   ``azimuth_deg`` is the WGS84 geodesic azimuth between its two nodes,
   ``length_m`` the length of the polyline between them (local metres).
   Node ``heading_deg`` is the street direction at the node (the tangent
   of the street polyline over +-1 m, in the street's direction); at a
   street's end vertex the direction of its highest-ranked street
   (:data:`HIGHWAY_RANK`, then the longest) there.
   ``walkable_headings_deg`` = the out-edge azimuths in ascending order.
6. **Prune** to the largest strongly connected component (node count);
   the report lists what was dropped.
7. **Annotations** (:mod:`urbanarena.world.annotations`): buildings (areas
   with ``building`` other than ``no``; ``building:part`` ignored) meeting
   the bbox grown by ``context_m`` (``in_core`` if they meet the bbox
   itself); POIs (nodes and areas inside the bbox with a
   :data:`~urbanarena.world.annotations.POI_CATEGORIES` key, not street
   objects, not :data:`NON_POI_AMENITY` unless named, on the ground floor:
   no ``level`` tag or one whose values include 0; others are counted as
   ``pois_skipped_indoor``); street objects (:data:`OBJECT_RULES`, first
   match wins; a ``footway=crossing`` way without a crossing node adds a
   crossing where it meets a carriageway) within the grown bbox; blocks
   from the ``is_street`` streets (:data:`BLOCK_HIGHWAYS` and named
   ``service`` ways); pedestrian
   squares.

The import report is ``city.meta.extra["osm_import"]`` (counts of nodes,
edges, decision points, POIs by category, objects by type, buildings,
blocks, excluded ways by reason, sidewalks folded, connectors, spurs,
pruned components, timings) and ``city.meta.extra["facts"]``
(:func:`~urbanarena.world.facts.graph_facts`).

Errors: a missing file, an unknown suffix, truncated or garbled data, a
bad bbox, a bbox holding no OSM data, or one without walkable streets raise
:class:`~urbanarena.errors.CityFormatError` naming the file (and the bbox
or the XML line where known).

Modules: the tag rules are in :mod:`.osm_tags`, reading the file (parsing) in :mod:`.osm_read`, the street network
(building) in :mod:`.osm_network` and the annotations in :mod:`.osm_annotations`; this module runs the import and
re-exports their names.

Licence: OpenStreetMap data is ODbL 1.0; wherever the data or images made
from it are shown, credit "© OpenStreetMap contributors".
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

import networkx as nx
import numpy as np
from shapely.geometry import LineString, Polygon, box

from urbanarena.errors import CityFormatError
from urbanarena.world import annotations as A
from urbanarena.world.city import City, CityMeta
from urbanarena.world.geo import WGS84_GEOD, LocalFrame
# re-exported: the importer's tag rules, reading, street network and annotations were defined here (split along those seams)
from urbanarena.world.importers.osm_tags import (  # noqa: F401
    ACCESS_NO, ATTRIBUTION, BLOCK_HIGHWAYS, CARRIER_HIGHWAYS, DEFAULT_WIDTH_M, FOOT_NO, FOOT_TAG_HIGHWAYS, FOOT_YES,
    HIGHWAY_RANK, KIND, LANE_WIDTH_M, LICENCE, MAX_CHAIN_M, NON_POI_AMENITY, OBJECT_RULES, PATH_HIGHWAYS,
    STREET_HIGHWAYS, SUFFIXES, VERSION, _foot_oneway, _is_storefront, _object_type, _poi_category, _tag_sidewalks,
    _width_m, classify_way, source_files,
)
from urbanarena.world.importers.osm_read import (  # noqa: F401
    _Raw, _RawArea, _RawWay, _bbox_hit, _check_bbox, _grow, _interesting_node, _read,
)
from urbanarena.world.importers.osm_network import (  # noqa: F401
    _Chain, _Net, _Way, _arc, _carrier_line, _chains, _clip, _dominant_way, _fold_sidewalks, _interp, _merge_close,
    _reconnect, _seg_at, _street_key, _tangent_deg,
)
from urbanarena.world.importers.osm_annotations import (  # noqa: F401
    _annotations,
)


from urbanarena.hashing import file_sha256 as _sha256  # noqa: E402


def import_city(path: str | Path, bbox: Sequence[float] | None = None, spacing_m: float = 10.0, *,
                name: str | None = None, sidewalk_fold_m: float = 20.0, fold_angle_deg: float = 25.0,
                fold_keep_min_m: float = 15.0, context_m: float = 50.0, merge_m: float = 3.0) -> City:
    """Import an OSM file as a pedestrian pose graph with annotations.

    Args:
        path: ``.osm``/``.osm.pbf``/``.osm.gz``/``.osm.bz2`` file.
        bbox: ``(W, S, E, N)`` WGS84 degrees to crop to; ``None`` = the whole file.
        spacing_m: target distance between pose nodes along streets, metres.
        name: city name (default: the file name without suffixes).
        sidewalk_fold_m, fold_angle_deg, fold_keep_min_m: sidewalk folding
            (module docstring, step 3).
        context_m: buildings and street objects this far outside the bbox are
            kept (``in_core=False``) so renders near the edge are not empty.
        merge_m: streets shorter than this are contracted to one vertex
            (module docstring, step 4).
    Returns: a :class:`City` with ``city.annotations`` set; report in
        ``city.meta.extra["osm_import"]``. The local frame is centred on the
        bbox (or on the walkable network's bounds when there is no bbox).
    Raises:
        CityFormatError: bad file (missing, unknown type, truncated, not OSM),
            bad or empty bbox, no walkable street in the bbox, or a street
            longer than :data:`MAX_CHAIN_M` between junctions; the message
            names the file.
    """
    t_start = time.perf_counter()
    path = Path(path)
    source_files(path)
    if not (spacing_m > 0 and math.isfinite(spacing_m)):
        raise ValueError(f"spacing_m must be a positive number, got {spacing_m!r}")
    bb = _check_bbox(path, bbox)
    bb_rec = f"bbox {','.join(f'{v:.7f}' for v in bb)}" if bb else None
    read_bb = _grow(bb, max(context_m, 3 * sidewalk_fold_m)) if bb else None
    raw = _read(path, read_bb)
    t_read = time.perf_counter()
    report: dict[str, Any] = {"bbox": list(bb) if bb else None, "spacing_m": spacing_m, "osm_objects_read": raw.n_objects}

    # ---- walkable ways
    excluded: Counter[str] = Counter()
    walk_ways: list[tuple[_RawWay, str]] = []
    for w in raw.ways:
        cls = classify_way(w.tags)
        if cls in ("street", "path"):
            walk_ways.append((w, cls))
        else:
            excluded[cls] += 1
    if bb is not None:
        inside_any = any(
            any(bb[0] <= lon <= bb[2] and bb[1] <= lat <= bb[3] for lon, lat in w.lonlat) or
            LineString(w.lonlat).intersects(box(*bb)) for w, _ in walk_ways)
        if not raw.ways and not raw.areas and not raw.nodes:
            raise CityFormatError(path, bb_rec, "no OSM data inside the bbox (is it the right area?)")
        if not inside_any:
            raise CityFormatError(path, bb_rec, "no walkable streets inside the bbox")
    elif not walk_ways:
        raise CityFormatError(path, None, "no walkable streets in the file")
    if bb is not None:
        frame = LocalFrame((bb[1] + bb[3]) / 2, (bb[0] + bb[2]) / 2)
    else:
        lls = np.array([p for w, _ in walk_ways for p in w.lonlat])
        frame = LocalFrame((lls[:, 1].min() + lls[:, 1].max()) / 2, (lls[:, 0].min() + lls[:, 0].max()) / 2)

    net = _Net(frame)
    all_refs = sorted({r for w, _ in walk_ways for r in w.refs})
    ll_of = {r: p for w, _ in walk_ways for r, p in zip(w.refs, w.lonlat)}
    if all_refs:
        lons = np.array([ll_of[r][0] for r in all_refs])
        lats = np.array([ll_of[r][1] for r in all_refs])
        xs, ys = frame.to_xy(lats, lons)
        for r, x, y in zip(all_refs, np.atleast_1d(xs), np.atleast_1d(ys)):
            net.xy[r] = (float(x), float(y))
    sidewalks: list[tuple[_Way, list[int]]] = []
    carriers: set[int] = set()
    for w, cls in walk_ways:
        way = net.add_way(w.id, dict(w.tags), cls)
        if w.tags.get("footway") == "sidewalk" and cls == "path":
            sidewalks.append((way, w.refs))
            continue
        if cls == "street" and way.highway in CARRIER_HIGHWAYS:
            carriers.add(way.idx)
        net.add_path(way, w.refs)
    report["ways_walkable"] = len(walk_ways)
    report["ways_excluded_by_reason"] = dict(sorted(excluded.items()))

    touched = _fold_sidewalks(net, sidewalks, carriers, sidewalk_fold_m, fold_angle_deg, fold_keep_min_m, report)
    _reconnect(net, touched, sidewalk_fold_m, report)
    # the unclipped network (facade tests near the edge)
    wide_lines = [LineString([net.xy[u], net.xy[v]]) for u, v in net.g.edges]
    if bb is not None:
        report["bbox_cut_points"] = _clip(net, bb)
    if net.g.number_of_edges() == 0:
        raise CityFormatError(path, bb_rec, "no walkable streets inside the bbox")
    report["short_streets_merged"] = _merge_close(net, merge_m)

    # ---- pose nodes
    chains = _chains(net)
    for ch in chains:
        if ch.length > MAX_CHAIN_M:  # a mistyped coordinate far from the rest, not a street to sample every few m
            wid = net.ways[ch.seg_way[0]].id
            raise CityFormatError(path, f"way {wid}" if wid is not None else bb_rec,
                                  f"a walkable street of {ch.length / 1000:,.0f} km without a junction, longer than "
                                  f"{MAX_CHAIN_M / 1000:g} km (ours): is a node's coordinate wrong?")
    g = nx.DiGraph()
    key_node: dict[int, str] = {}
    counter = 0

    def new_id() -> str:
        nonlocal counter
        counter += 1
        return f"n{counter - 1:05d}"

    pair_count: Counter[tuple[str, str]] = Counter()
    chain_nodes: list[list[str]] = []
    chain_pos: list[list[float]] = []
    node_xy: dict[str, tuple[float, float]] = {}
    node_head: dict[str, float] = {}
    node_chain: dict[str, int] = {}
    for ci, ch in enumerate(chains):
        for v in (ch.vids[0], ch.vids[-1]):
            if v not in key_node:
                nid = new_id()
                key_node[v] = nid
                node_xy[nid] = net.xy[v]
        a, b = key_node[ch.vids[0]], key_node[ch.vids[-1]]
        n = max(1, int(math.floor(ch.length / spacing_m + 0.5)))
        if a == b:
            n = max(n, 3)
        elif pair_count[tuple(sorted((a, b)))] and n == 1:
            n = 2
        if n == 1:
            pair_count[tuple(sorted((a, b)))] += 1
        pos = [ch.length * k / n for k in range(n + 1)]
        ids = [a]
        for k in range(1, n):
            nid = new_id()
            node_xy[nid] = _interp(ch, pos[k])
            node_head[nid] = _tangent_deg(ch, pos[k])
            node_chain[nid] = ci
            ids.append(nid)
        ids.append(b)
        chain_nodes.append(ids)
        chain_pos.append(pos)
    # headings of decision points / ends: best-ranked incident chain, then the longest
    best_for: dict[str, tuple[tuple, int, float]] = {}
    for ci, ch in enumerate(chains):
        dom = _dominant_way(net, ch)
        rank = HIGHWAY_RANK.get(net.ways[dom].highway, 99)
        for end, sv in ((chain_nodes[ci][0], 0.0), (chain_nodes[ci][-1], ch.length)):
            cand = ((rank, -ch.length, ci), ci, sv)
            if end not in best_for or cand[0] < best_for[end][0]:
                best_for[end] = cand
    for nid, (_, ci, sv) in best_for.items():
        node_head[nid] = _tangent_deg(chains[ci], sv)
        node_chain[nid] = ci
    ids_all = list(node_xy)
    xs = np.array([node_xy[i][0] for i in ids_all])
    ys = np.array([node_xy[i][1] for i in ids_all])
    lats, lons = frame.to_latlon(xs, ys)
    lats, lons = np.atleast_1d(lats), np.atleast_1d(lons)
    for i, nid in enumerate(ids_all):
        g.add_node(nid, lat=float(lats[i]), lon=float(lons[i]), x_m=float(xs[i]), y_m=float(ys[i]),
                   heading_deg=float(node_head.get(nid, 0.0)), walkable_headings_raw=None, walkable_headings_deg=None)
    # edges
    src_u, src_v, lens, meta = [], [], [], []
    for ci, ch in enumerate(chains):
        ids, pos = chain_nodes[ci], chain_pos[ci]
        for k in range(len(ids) - 1):
            mid = (pos[k] + pos[k + 1]) / 2
            j = _seg_at(ch, mid)
            way = net.ways[ch.seg_way[j]]
            ow = _foot_oneway(way.tags) if way.cls != "connector" else 0
            fwd_ok = ow == 0 or (ow == 1) == ch.seg_fwd[j]
            bwd_ok = ow == 0 or not fwd_ok
            L = pos[k + 1] - pos[k]
            attrs = {"street_id": f"s{ci:04d}", "way_id": way.id, "highway": way.highway}
            if way.highway == "steps":
                attrs["steps"] = True
            if fwd_ok:
                src_u.append(ids[k]); src_v.append(ids[k + 1]); lens.append(L); meta.append(attrs)
            if bwd_ok:
                src_u.append(ids[k + 1]); src_v.append(ids[k]); lens.append(L); meta.append(attrs)
    if src_u:
        la0 = np.array([g.nodes[u]["lat"] for u in src_u]); lo0 = np.array([g.nodes[u]["lon"] for u in src_u])
        la1 = np.array([g.nodes[v]["lat"] for v in src_v]); lo1 = np.array([g.nodes[v]["lon"] for v in src_v])
        az, _, _ = WGS84_GEOD.inv(lo0, la0, lo1, la1)
        az = np.mod(np.asarray(az, float), 360.0)
        for u, v, L, m, a in zip(src_u, src_v, lens, meta, az):
            g.add_edge(u, v, azimuth_deg=float(a) if a < 360.0 else 0.0, length_m=float(L), **m)
    report["nodes_before_pruning"] = g.number_of_nodes()
    report["edges_before_pruning"] = g.number_of_edges()

    # ---- prune to the largest strongly connected component
    comps = sorted(nx.strongly_connected_components(g), key=lambda c: (-len(c), min(c)))
    keep = comps[0] if comps else set()
    dropped = [c for c in comps[1:]]
    drop_nodes = set().union(*dropped) if dropped else set()
    drop_edges = [(u, v) for u, v in g.edges if u in drop_nodes or v in drop_nodes]
    report["pruned"] = {
        "components_dropped": len(dropped),
        "nodes_dropped": len(drop_nodes),
        "edges_dropped": len(drop_edges),
        "length_dropped_m": round(sum(g.edges[e]["length_m"] for e in drop_edges) / 2, 1),
        "largest_dropped_nodes": max((len(c) for c in dropped), default=0),
    }
    g.remove_nodes_from(drop_nodes)
    # renumber nothing (ids stay stable); fill walkable headings and node kinds
    und = g.to_undirected(as_view=True)
    for nid in g.nodes:
        hs = sorted(float(d["azimuth_deg"]) for _, _, d in g.out_edges(nid, data=True))
        deg = und.degree(nid)
        d = g.nodes[nid]
        d["walkable_headings_raw"] = hs
        d["walkable_headings_deg"] = list(hs)
        d["node_kind"] = "decision_point" if deg >= 3 else ("dead_end" if deg <= 1 else "street")
        d["decision_point"] = deg >= 3
        d["street_id"] = f"s{node_chain[nid]:04d}" if nid in node_chain else None
    city_name = name or re.sub(r"(\.osm)?(\.pbf|\.gz|\.bz2)?$", "", path.name, flags=re.IGNORECASE) or "osm"
    t_graph = time.perf_counter()

    # ---- annotations
    to_latlon = frame.to_latlon
    streets: list[A.Street] = []
    for ci, ch in enumerate(chains):
        ids = chain_nodes[ci]
        if not all(i in g for i in ids):
            continue
        dom = net.ways[_dominant_way(net, ch)]
        tl, tr = _tag_sidewalks(dom.tags) if dom.cls == "street" else (False, False)
        fl = dom.tags.get("urbanarena:sidewalk_left") == "yes"
        fr = dom.tags.get("urbanarena:sidewalk_right") == "yes"
        left, right = tl or fl, tr or fr
        la, lo = to_latlon(ch.xy[:, 0], ch.xy[:, 1])
        way_ids = []
        for wi in ch.seg_way:
            wid = net.ways[wi].id
            if wid is not None and wid not in way_ids:
                way_ids.append(wid)
        names = [net.ways[wi].tags.get("name") for wi in ch.seg_way if net.ways[wi].tags.get("name")]
        streets.append(A.Street(
            id=f"s{ci:04d}", node_ids=ids, xy=[(float(x), float(y)) for x, y in ch.xy],
            lonlat=[(float(a), float(b)) for a, b in zip(np.atleast_1d(lo), np.atleast_1d(la))],
            length_m=ch.length, highway=dom.highway, name=dom.tags.get("name") or (names[0] if names else None),
            way_ids=way_ids, is_street=dom.cls == "street" and (
                dom.highway in BLOCK_HIGHWAYS or (dom.highway == "service" and bool(dom.tags.get("name")))),
            width_m=_width_m(dom.tags) if dom.cls != "connector" else DEFAULT_WIDTH_M["connector"],
            sidewalk_left=left, sidewalk_right=right,
            steps=any(net.ways[wi].highway == "steps" for wi in ch.seg_way)))
    ann = _annotations(path, raw, bb, frame, streets, g, wide_lines, context_m, report)
    t_ann = time.perf_counter()
    report["nodes"] = g.number_of_nodes()
    report["edges"] = g.number_of_edges()
    report["decision_points"] = sum(1 for _, d in g.nodes(data=True) if d["decision_point"])
    report["dead_ends"] = sum(1 for _, d in g.nodes(data=True) if d["node_kind"] == "dead_end")
    report["streets"] = len(streets)
    report["network_length_m"] = round(sum(s.length_m for s in streets), 1)
    if bb is not None:
        w_m = (bb[2] - bb[0]) * 111_320.0 * math.cos(math.radians((bb[1] + bb[3]) / 2))
        h_m = (bb[3] - bb[1]) * 111_320.0
        report["bbox_size_m"] = [round(w_m, 1), round(h_m, 1)]
        poly_ll = box(*bb)
        xs_b, ys_b = frame.to_xy(np.array([p[1] for p in poly_ll.exterior.coords]), np.array([p[0] for p in poly_ll.exterior.coords]))
        report["bbox_area_km2"] = round(Polygon(list(zip(xs_b, ys_b))).area / 1e6, 4)
    report["annotations"] = ann.counts()
    report["timing_s"] = {"read": round(t_read - t_start, 3), "graph": round(t_graph - t_read, 3),
                          "annotations": round(t_ann - t_graph, 3), "total": round(t_ann - t_start, 3)}
    meta = CityMeta(
        name=city_name,
        source={"kind": KIND, "files": [path.name], "sha256": {path.name: _sha256(path)}, "bbox": list(bb) if bb else None,
                "spacing_m": spacing_m, "osm_timestamp": raw.timestamp, "importer_version": VERSION},
        licence=LICENCE,
        attribution=ATTRIBUTION,
        imagery=None,
        extra={"osm_import": report},
    )
    city = City(g, meta, frame=frame)
    city.annotations = ann
    from urbanarena.world.facts import graph_facts

    city.meta.extra["facts"] = graph_facts(city)
    return city
