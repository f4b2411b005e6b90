"""Rebuilding CitySeeker's pose graph from its edges (islands dropped, edges reconstructed) and the rule facts read
from it (which edges its action rule can take, reachability)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse.csgraph import breadth_first_order, connected_components

from urbanarena.errors import CityFormatError
from urbanarena.world.geo import lonlat_to_mercator
from urbanarena.world.importers.cityseeker_read import log


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
