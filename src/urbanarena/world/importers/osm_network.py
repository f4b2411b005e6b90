"""The OSM importer's street network (building): ways in local metres, sidewalks folded onto their carriers,
reconnection, clipping to the bbox, and the street chains pose nodes are spaced along."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Sequence

import networkx as nx
import numpy as np
import shapely
from shapely.geometry import LineString, Point
from shapely.strtree import STRtree

from urbanarena.world.geo import LocalFrame
from urbanarena.world.importers.osm_tags import CARRIER_HIGHWAYS


# --------------------------------------------------------------------------- the network
@dataclass
class _Way:
    idx: int
    id: int | None  # OSM way id (None for connectors)
    tags: dict[str, str]
    cls: str  # "street" | "path" | "connector"

    @property
    def highway(self) -> str:
        return "connector" if self.cls == "connector" else self.tags.get("highway", "")


class _Net:
    """Vertex-level walkable network: vertices (OSM node ids or negative synthetic ids) with
    local xy, and an undirected graph whose edges carry the way index and the way's direction."""

    def __init__(self, frame: LocalFrame):
        self.frame = frame
        self.xy: dict[int, tuple[float, float]] = {}
        self.ways: list[_Way] = []
        self.g = nx.Graph()
        self._next = -1

    def new_vertex(self, x: float, y: float) -> int:
        v = self._next
        self._next -= 1
        self.xy[v] = (float(x), float(y))
        return v

    def add_way(self, wid: int | None, tags: dict[str, str], cls: str) -> _Way:
        w = _Way(len(self.ways), wid, tags, cls)
        self.ways.append(w)
        return w

    def add_path(self, way: _Way, vids: Sequence[int]) -> None:
        for a, b in zip(vids[:-1], vids[1:]):
            if a != b:
                self.g.add_edge(a, b, way=way.idx, start=a)

    def seg_len(self, a: int, b: int) -> float:
        (x0, y0), (x1, y1) = self.xy[a], self.xy[b]
        return math.hypot(x1 - x0, y1 - y0)


def _arc(xy: np.ndarray) -> np.ndarray:
    return np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(xy, axis=0).T))])


def _fold_sidewalks(net: _Net, sidewalks: list[tuple[_Way, list[int]]], carriers: set[int], fold_m: float,
                    angle_deg: float, keep_min_m: float, report: dict[str, Any]) -> dict[int, int]:
    """Fold sidewalk ways into carriageways (rule in the module docstring).

    Adds the kept stretches to ``net``; returns ``{vertex: carrier way idx}``
    for vertices that touched a folded stretch. Records folded sides in
    ``carrier way .tags["urbanarena:sidewalk_left|right"]``.
    """
    touched: dict[int, int] = {}
    folded_len: dict[tuple[int, str], float] = defaultdict(float)
    segs_a, segs_b, seg_way = [], [], []
    for u, v, d in net.g.edges(data=True):
        if d["way"] in carriers:
            a, b = (u, v) if d["start"] == u else (v, u)
            segs_a.append(net.xy[a])
            segs_b.append(net.xy[b])
            seg_way.append(d["way"])
    n_full = n_part = n_kept_pieces = 0
    total_fold_m = 0.0
    cos_max = math.cos(math.radians(angle_deg))
    if segs_a:
        SA, SB = np.array(segs_a), np.array(segs_b)
        seg_geoms = shapely.linestrings(np.stack([SA, SB], axis=1))
        tree = STRtree(seg_geoms)
        sdir = SB - SA
        sdir = sdir / np.maximum(np.linalg.norm(sdir, axis=1, keepdims=True), 1e-9)
    for way, vids in sidewalks:
        xy = np.array([net.xy[v] for v in vids])
        s_v = _arc(xy)
        L = float(s_v[-1])
        if L <= 0:
            continue
        s = np.unique(np.concatenate([s_v, np.linspace(0, L, max(2, int(math.ceil(L / 2.0)) + 1))]))
        seg_i = np.clip(np.searchsorted(s_v, s, side="right") - 1, 0, len(vids) - 2)
        t = (s - s_v[seg_i]) / np.maximum(s_v[seg_i + 1] - s_v[seg_i], 1e-9)
        pts = xy[seg_i] + (xy[seg_i + 1] - xy[seg_i]) * t[:, None]
        tan = xy[seg_i + 1] - xy[seg_i]
        tan = tan / np.maximum(np.linalg.norm(tan, axis=1, keepdims=True), 1e-9)
        covered = np.zeros(len(s), bool)
        absorb = np.full(len(s), -1)
        side = np.zeros(len(s))
        if segs_a:
            P = shapely.points(pts)
            pi, si = tree.query(P, predicate="dwithin", distance=fold_m)
            if len(pi):
                dist = shapely.distance(P[pi], seg_geoms[si])
                par = np.abs(np.einsum("ij,ij->i", tan[pi], sdir[si])) >= cos_max
                order = np.lexsort((dist, pi))
                for k in order:
                    if not par[k]:
                        continue
                    i = pi[k]
                    if covered[i]:
                        continue
                    covered[i] = True
                    absorb[i] = seg_way[si[k]]
                    j = si[k]
                    cx = sdir[j, 0] * (pts[i, 1] - SA[j, 1]) - sdir[j, 1] * (pts[i, 0] - SA[j, 0])
                    side[i] = 1.0 if cx > 0 else -1.0  # > 0: left of the carriageway's direction
        if not covered.any():
            net.add_path(way, vids)
            continue
        # runs of equal coverage, with arc-length extents cut at midpoints between samples
        runs = []  # [flag, i0, i1]
        for i, c in enumerate(covered):
            if runs and runs[-1][0] == c:
                runs[-1][2] = i
            else:
                runs.append([bool(c), i, i])

        def snap(sv: float) -> float:
            # cut at a sidewalk vertex (a corner) when one is within a sample step
            k = int(np.argmin(np.abs(s_v - sv)))
            return float(s_v[k]) if abs(s_v[k] - sv) <= 2.5 else sv

        def extent(r):
            a = 0.0 if r[1] == 0 else snap((s[r[1] - 1] + s[r[1]]) / 2)
            b = L if r[2] == len(s) - 1 else snap((s[r[2]] + s[r[2] + 1]) / 2)
            return a, b

        changed = True
        while changed and len(runs) > 1:
            changed = False
            for k, r in enumerate(runs):
                a, b = extent(r)
                if not r[0] and b - a < keep_min_m:
                    r[0] = True
                    changed = True
                elif r[0] and b - a < 5.0 and 0 < k < len(runs) - 1 and not runs[k - 1][0] and not runs[k + 1][0]:
                    r[0] = False
                    changed = True
            merged = []
            for r in runs:
                if merged and merged[-1][0] == r[0]:
                    merged[-1][2] = r[2]
                else:
                    merged.append(list(r))
            runs = merged
        if all(r[0] for r in runs):
            n_full += 1
        else:
            n_part += 1
        # nearest covered sample's carrier for any arc position
        cov_idx = np.flatnonzero(absorb >= 0)

        def carrier_at(sv: float) -> int:
            j = cov_idx[np.argmin(np.abs(s[cov_idx] - sv))]
            return int(absorb[j])

        for i in cov_idx:
            cw = int(absorb[i])
            folded_len[(cw, "left" if side[i] > 0 else "right")] += 2.0
        for r in runs:
            a, b = extent(r)
            inner = [k for k in range(len(vids)) if a - 1e-9 <= s_v[k] <= b + 1e-9]
            if r[0]:
                total_fold_m += b - a
                for k in inner:
                    touched[vids[k]] = carrier_at(s_v[k])
                continue
            # kept stretch: original vertices inside plus cut vertices at its ends
            piece: list[int] = []
            for sv, at_start in ((a, True), (b, False)):
                close = [k for k in range(len(vids)) if abs(s_v[k] - sv) < 0.01]
                if close:
                    cut = vids[close[0]]
                else:
                    j = int(np.clip(np.searchsorted(s_v, sv, side="right") - 1, 0, len(vids) - 2))
                    tt = (sv - s_v[j]) / max(s_v[j + 1] - s_v[j], 1e-9)
                    cut = net.new_vertex(*(xy[j] + (xy[j + 1] - xy[j]) * tt))
                if (at_start and a > 0) or (not at_start and b < L):
                    touched[cut] = carrier_at(sv)
                if at_start:
                    piece.append(cut)
                    piece.extend(vids[k] for k in inner if vids[k] != cut and abs(s_v[k] - a) >= 0.01 and abs(s_v[k] - b) >= 0.01)
                else:
                    if cut != piece[-1]:
                        piece.append(cut)
            if len(piece) >= 2:
                kept = net.add_way(way.id, dict(way.tags, **{"urbanarena:sidewalk_part": "yes"}), way.cls)
                net.add_path(kept, piece)
                n_kept_pieces += 1
    for (cw, sd), length in folded_len.items():
        if length >= 5.0:
            net.ways[cw].tags[f"urbanarena:sidewalk_{sd}"] = "yes"
    report.update(sidewalk_ways=len(sidewalks), sidewalks_folded=n_full, sidewalks_partly_folded=n_part,
                  sidewalk_pieces_kept=n_kept_pieces, sidewalk_length_folded_m=round(total_fold_m, 1))
    return touched


def _carrier_line(net: _Net, way_idx: int) -> shapely.Geometry:
    segs = [LineString([net.xy[u], net.xy[v]]) for u, v, d in net.g.edges(data=True) if d["way"] == way_idx]
    return shapely.union_all(segs) if segs else LineString()


def _reconnect(net: _Net, touched: dict[int, int], fold_m: float, report: dict[str, Any]) -> None:
    """Remove corridor spurs and add connectors for vertices that touched a folded sidewalk."""
    g = net.g
    carrier_lines: dict[int, shapely.Geometry] = {}

    def cline(w: int) -> shapely.Geometry:
        if w not in carrier_lines:
            carrier_lines[w] = _carrier_line(net, w)
        return carrier_lines[w]

    spurs = 0
    changed = True
    while changed:
        changed = False
        for v in sorted(touched):
            if v not in g or g.degree(v) != 1:
                continue
            chain = [v]
            prev, cur = None, v
            while True:
                nb = [n for n in g.neighbors(cur) if n != prev]
                if not nb:
                    break
                prev, cur = cur, nb[0]
                chain.append(cur)
                if g.degree(cur) != 2:
                    break
            length = sum(net.seg_len(a, b) for a, b in zip(chain[:-1], chain[1:]))
            line = cline(touched[v])
            within = all(Point(net.xy[c]).distance(line) <= fold_m + 1.0 for c in chain)
            if length <= 2 * fold_m and within:
                for a, b in zip(chain[:-1], chain[1:]):
                    g.remove_edge(a, b)
                for c in chain:
                    if c in g and g.degree(c) == 0:
                        g.remove_node(c)
                spurs += 1
                changed = True
    carrier_vertices = {n for u, v, d in g.edges(data=True) if net.ways[d["way"]].cls == "street" and net.ways[d["way"]].highway in CARRIER_HIGHWAYS for n in (u, v)}
    connectors = 0
    conn_way = None
    for v in sorted(touched):
        if v not in g or v in carrier_vertices:
            continue
        near = nx.single_source_dijkstra_path_length(
            g, v, cutoff=1.5 * fold_m, weight=lambda a, b, d: net.seg_len(a, b))
        if any(n in carrier_vertices for n in near):
            continue
        w = touched[v]
        # nearest segment of that carrier
        best = None
        px, py = net.xy[v]
        for a, b, d in g.edges(data=True):
            if d["way"] != w:
                continue
            (ax, ay), (bx, by) = net.xy[a], net.xy[b]
            dx, dy = bx - ax, by - ay
            L2 = dx * dx + dy * dy
            t = 0.0 if L2 == 0 else max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / L2))
            qx, qy = ax + t * dx, ay + t * dy
            dd = math.hypot(px - qx, py - qy)
            if best is None or dd < best[0]:
                best = (dd, a, b, t, qx, qy, d)
        if best is None:
            continue
        dd, a, b, t, qx, qy, d = best
        seg = net.seg_len(a, b)
        if t * seg < 0.5:
            p = a
        elif (1 - t) * seg < 0.5:
            p = b
        else:
            p = net.new_vertex(qx, qy)
            g.remove_edge(a, b)
            first, second = (a, b) if d["start"] == a else (b, a)
            g.add_edge(first, p, way=w, start=first)
            g.add_edge(p, second, way=w, start=p)
        if conn_way is None:
            conn_way = net.add_way(None, {"highway": "footway", "footway": "connector", "urbanarena:connector": "sidewalk_fold"}, "connector")
        if p != v:
            g.add_edge(v, p, way=conn_way.idx, start=v)
            connectors += 1
        carrier_vertices.add(p)
    report.update(spurs_removed=spurs, connectors_added=connectors)


def _clip(net: _Net, bbox: tuple[float, float, float, float]) -> int:
    """Clip the network to the bbox (lon/lat). Returns the number of cut points added."""
    W, S, E, N = bbox
    lonlat: dict[int, tuple[float, float]] = {}

    def ll(v: int) -> tuple[float, float]:
        if v not in lonlat:
            lat, lon = net.frame.to_latlon(*net.xy[v])
            lonlat[v] = (float(lon), float(lat))
        return lonlat[v]

    def inside(p) -> bool:
        return W <= p[0] <= E and S <= p[1] <= N

    cuts = 0
    for a, b, d in list(net.g.edges(data=True)):
        pa, pb = ll(a), ll(b)
        if inside(pa) and inside(pb):
            continue
        # Liang-Barsky in lon/lat
        t0, t1 = 0.0, 1.0
        dx, dy = pb[0] - pa[0], pb[1] - pa[1]
        ok = True
        for p, q in ((-dx, pa[0] - W), (dx, E - pa[0]), (-dy, pa[1] - S), (dy, N - pa[1])):
            if p == 0:
                if q < 0:
                    ok = False
                    break
                continue
            r = q / p
            if p < 0:
                t0 = max(t0, r)
            else:
                t1 = min(t1, r)
        net.g.remove_edge(a, b)
        if not ok or t0 >= t1 - 1e-12:
            continue
        first = a if d["start"] == a else b
        ends = []
        for t, v in ((t0, a), (t1, b)):
            if (t == 0.0 and v == a) or (t == 1.0 and v == b):
                ends.append(v)
            else:
                # the cut point is exact in lon/lat (on the bbox edge); its xy comes from the projection
                lon_c, lat_c = pa[0] + t * dx, pa[1] + t * dy
                nv = net.new_vertex(*net.frame.to_xy(lat_c, lon_c))
                lonlat[nv] = (lon_c, lat_c)
                ends.append(nv)
                cuts += 1
        u, w = ends
        net.g.add_edge(u, w, way=d["way"], start=u if first == a else w)
    net.g.remove_nodes_from([v for v in list(net.g.nodes) if net.g.degree(v) == 0])
    return cuts


@dataclass
class _Chain:
    vids: list[int]
    xy: np.ndarray
    s: np.ndarray
    seg_way: list[int]
    seg_fwd: list[bool]

    @property
    def length(self) -> float:
        return float(self.s[-1])


def _street_key(net: _Net, way_idx: int) -> tuple[str, str] | None:
    w = net.ways[way_idx]
    return None if w.cls == "connector" else (w.tags.get("name") or "", w.highway)


def _chains(net: _Net) -> list[_Chain]:
    """Cut the network into chains between key vertices: degree != 2, or degree 2
    where the two ways differ in (name, highway) (connectors never cut). Each
    chain runs in the direction of its dominant OSM way."""
    g = net.g
    key = {v for v in g.nodes if g.degree(v) != 2}
    for v in g.nodes:
        if v in key:
            continue
        k1, k2 = (_street_key(net, d["way"]) for _, _, d in g.edges(v, data=True))
        if k1 is not None and k2 is not None and k1 != k2:
            key.add(v)
    seen: set[frozenset] = set()
    chains: list[_Chain] = []

    def walk(start: int, nxt: int) -> list[int]:
        """Follow degree-2 vertices from ``start`` through ``nxt`` to the next key vertex."""
        path = [start, nxt]
        seen.add(frozenset((start, nxt)))
        while path[-1] not in key:
            cur = path[-1]
            nb = [n for n in g.neighbors(cur) if n != path[-2]]
            path.append(nb[0])
            seen.add(frozenset((cur, nb[0])))
        return path

    def build(vids: list[int]) -> _Chain:
        xy = np.array([net.xy[v] for v in vids])
        ways, fwd = [], []
        for a, b in zip(vids[:-1], vids[1:]):
            d = g.edges[a, b]
            ways.append(d["way"])
            fwd.append(d["start"] == a)
        return _Chain(vids, xy, _arc(xy), ways, fwd)

    def make(vids: list[int]) -> _Chain:
        ch = build(vids)
        dom = _dominant_way(net, ch)
        share = sum((ch.s[j + 1] - ch.s[j]) * (1 if ch.seg_fwd[j] else -1) for j in range(len(ch.seg_way)) if ch.seg_way[j] == dom)
        return build(vids[::-1]) if share < 0 else ch

    for k in sorted(key):
        for n in sorted(g.neighbors(k)):
            if frozenset((k, n)) in seen:
                continue
            chains.append(make(walk(k, n)))
    # pure loops without any key vertex
    for comp in nx.connected_components(g):
        if any(v in key for v in comp):
            continue
        k = min(comp)
        key.add(k)
        chains.append(make(walk(k, min(g.neighbors(k)))))
    return chains


def _merge_close(net: _Net, merge_m: float) -> int:
    """Contract every chain shorter than ``merge_m`` (dual junctions a metre apart,
    stubs left by clipping) into one vertex; returns the number of chains contracted.

    The merged vertex sits on the group's decision point (degree >= 3) when it
    has exactly one, else at the mean of the group's vertices.
    """
    if merge_m <= 0:
        return 0
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while parent.get(x, x) != x:
            parent[x] = parent.get(parent[x], parent[x])
            x = parent[x]
        return x

    merged = 0
    for ch in _chains(net):
        if ch.length < merge_m and ch.vids[0] != ch.vids[-1]:
            merged += 1
            for v in ch.vids[1:]:
                a, b = find(ch.vids[0]), find(v)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    if not merged:
        return 0
    g = net.g
    groups: dict[int, list[int]] = defaultdict(list)
    for v in list(parent):
        groups[find(v)].append(v)
    for rep, members in groups.items():
        members = sorted(set(members) | {rep})
        hubs = [v for v in members if g.degree(v) >= 3]
        pts = [net.xy[v] for v in (hubs if len(hubs) == 1 else members)]
        net.xy[rep] = (float(np.mean([p[0] for p in pts])), float(np.mean([p[1] for p in pts])))
    h = nx.Graph()
    for u, v, d in g.edges(data=True):
        fu, fv = find(u), find(v)
        if fu == fv or h.has_edge(fu, fv):
            continue
        h.add_edge(fu, fv, way=d["way"], start=fu if d["start"] == u else fv)
    net.g = h
    return merged


def _interp(ch: _Chain, sv: float) -> tuple[float, float]:
    j = int(np.clip(np.searchsorted(ch.s, sv, side="right") - 1, 0, len(ch.vids) - 2))
    seg = ch.s[j + 1] - ch.s[j]
    t = 0.0 if seg <= 0 else (sv - ch.s[j]) / seg
    p = ch.xy[j] + (ch.xy[j + 1] - ch.xy[j]) * t
    return float(p[0]), float(p[1])


def _tangent_deg(ch: _Chain, sv: float) -> float:
    a = _interp(ch, max(0.0, sv - 1.0))
    b = _interp(ch, min(ch.length, sv + 1.0))
    return math.degrees(math.atan2(b[0] - a[0], b[1] - a[1])) % 360.0


def _seg_at(ch: _Chain, sv: float) -> int:
    return int(np.clip(np.searchsorted(ch.s, sv, side="right") - 1, 0, len(ch.vids) - 2))


def _dominant_way(net: _Net, ch: _Chain) -> int:
    tot: Counter[int] = Counter()
    for j, w in enumerate(ch.seg_way):
        tot[w] += float(ch.s[j + 1] - ch.s[j])
    # prefer non-connector ways
    order = sorted(tot.items(), key=lambda kv: (net.ways[kv[0]].cls == "connector", -kv[1], kv[0]))
    return order[0][0]
