"""Places that satisfy a need and the shortest routes to them over the pose graph (``cityseeker_needs``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from urbanarena.errors import UrbanArenaError
from urbanarena.world.city import City
from urbanarena.tasks.generators.needs_rules import AMBIGUITY_GAP_M, MAX_NODE_DISTANCE_M, MAX_ROUTE_STEPS, MIN_ROUTE_STEPS, NO_ROUTE
from urbanarena.tasks.generators.needs_mapping import Need


# --------------------------------------------------------------------------- places
@dataclass(frozen=True)
class Place:
    """A POI or street object that satisfies a need: ``kind`` ``"poi"`` or the object type, its
    annotation ``id``, ``name``, pose ``node`` and OSM ``kind`` value (POIs) for reports."""

    kind: str
    id: str
    name: str | None
    node: str
    detail: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "name": self.name, "detail": self.detail}


def satisfying_places(city: City, need: Need) -> tuple[list[Place], int]:
    """Places of ``city`` that satisfy ``need`` and their count left out for lack of a pose node.

    Returns: ``(places sorted by id, n_without_node)``; a place without ``node_id``, with a node not in
    the graph or farther than :data:`MAX_NODE_DISTANCE_M` is left out; street objects outside the
    import bbox (``in_core`` false) are never considered.
    Raises:
        UrbanArenaError: the city has no annotations (not an OSM import).
    """
    ann = getattr(city, "annotations", None)
    if ann is None:
        raise UrbanArenaError(f"city {city.name!r} has no POI annotations: generated need tasks need an OSM city "
                              "(urbanarena city import osm:FILE)")
    out: list[Place] = []
    missing = 0

    def usable(node, dist) -> bool:
        return node is not None and node in city and (dist is None or dist <= MAX_NODE_DISTANCE_M)

    for poi in list(ann.pois) + list(ann.standalone_pois):
        if need.matches(poi.tags, None):
            if usable(poi.node_id, poi.node_distance_m):
                out.append(Place("poi", poi.id, poi.name, poi.node_id, f"{poi.category}={poi.kind}"))
            else:
                missing += 1
    for o in ann.objects:
        if o.in_core and need.matches(o.tags, o.type):
            if usable(o.node_id, o.node_distance_m):
                out.append(Place(o.type, o.id, o.name, o.node_id, None))
            else:
                missing += 1
    return sorted(out, key=lambda p: p.id), missing


# --------------------------------------------------------------------------- distances
class _Graph:
    """The city graph as a sparse matrix (nodes sorted by id) for Dijkstra towards goal nodes.

    ``limit_m``: the search radius, ``(MAX_ROUTE_STEPS + 1) x`` the longest edge plus
    :data:`AMBIGUITY_GAP_M`: any route of at most ``MAX_ROUTE_STEPS + 1`` hops is shorter, and
    the second-nearest goal matters only within the gap, so the limit changes no decision.
    """

    #: target rows per Dijkstra batch are capped so a batch holds at most this many entries
    BATCH_ENTRIES = 4_000_000

    def __init__(self, city: City):
        from scipy.sparse import csr_matrix

        self.city = city
        self.nodes = sorted(city.graph.nodes)
        self.index = {n: i for i, n in enumerate(self.nodes)}
        rows, cols, w = [], [], []
        for u, v, d in city.graph.edges(data=True):
            if u == v:
                continue
            rows.append(self.index[u])
            cols.append(self.index[v])
            w.append(float(d["length_m"]))
        n = len(self.nodes)
        # reversed graph: Dijkstra from a goal over it gives every node's distance *to* that goal
        self.rev = csr_matrix((np.array(w, dtype=float), (np.array(cols, dtype=np.int64), np.array(rows, dtype=np.int64))),
                              shape=(n, n))
        self.limit_m = (MAX_ROUTE_STEPS + 1) * (max(w) if w else 0.0) + AMBIGUITY_GAP_M


@dataclass
class _NeedTable:
    """Per node, the nearest goal node of one need and the route to it (indices into ``_Graph.nodes``)."""

    need: Need
    places: list[Place]
    missing: int
    targets: np.ndarray  # goal node indices, sorted
    is_target: np.ndarray  # (N,) bool
    nearest: np.ndarray  # (N,) goal node index, -1 if none within the search limit
    dist: np.ndarray  # (N,) metres to nearest (inf if none)
    gap_ok: np.ndarray  # (N,) bool: second nearest at least AMBIGUITY_GAP_M farther
    hops: np.ndarray  # (N,) hops of the route to the nearest (-1 if none or longer than the cap)
    next: np.ndarray  # (N,) next node on the route to the nearest goal (-1 at goals / none)

    def route(self, v: int) -> list[int]:
        """Node indices from ``v`` along the metric-shortest path to a goal node (its nearest one;
        for a start with an ambiguous nearest, whichever the tie-break reaches)."""
        path = [v]
        while not self.is_target[path[-1]] and self.next[path[-1]] >= 0 and len(path) <= len(self.next):
            path.append(int(self.next[path[-1]]))
        return path


def _need_table(g: _Graph, need: Need) -> _NeedTable:
    """Dijkstra from the need's goal nodes (batches of targets) keeping, per node, the nearest goal,
    its distance, the second-nearest distance and the next hop towards the nearest."""
    from scipy.sparse.csgraph import dijkstra

    places, missing = satisfying_places(g.city, need)
    n = len(g.nodes)
    targets = np.array(sorted({g.index[p.node] for p in places}), dtype=np.int64)
    is_target = np.zeros(n, dtype=bool)
    is_target[targets] = True
    d0 = np.full(n, np.inf)
    d1 = np.full(n, np.inf)
    nearest = np.full(n, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    cols = np.arange(n)
    batch = max(1, g.BATCH_ENTRIES // max(n, 1))
    for k in range(0, len(targets), batch):
        tb = targets[k:k + batch]
        dist, pred = dijkstra(g.rev, directed=True, indices=tb, return_predecessors=True, limit=g.limit_m)
        dist = np.atleast_2d(dist)
        pred = np.atleast_2d(pred)
        j = np.argmin(dist, axis=0)  # first (lowest node index) among equals
        bd = dist[j, cols]
        if len(tb) > 1:
            second = np.partition(dist, 1, axis=0)[1]
        else:
            second = np.full(n, np.inf)
        better = bd < d0  # strict: earlier batches (lower indices) win ties
        d1 = np.where(better, np.minimum(d0, second), np.minimum(d1, bd))
        d0 = np.where(better, bd, d0)
        nearest = np.where(better, tb[j], nearest)
        nxt = np.where(better, pred[j, cols], nxt)
    nxt = np.where(nxt < 0, -1, nxt)
    reach = nearest >= 0
    gap_ok = reach & (np.isinf(d1) | (d1 - np.where(reach, d0, 0.0) >= AMBIGUITY_GAP_M))
    # hops along the next-hop chains (all nodes at once), capped: longer routes are never used
    cap = MAX_ROUTE_STEPS + 1
    cur = np.arange(n)
    hops = np.where(reach, 0, -1).astype(np.int64)
    live = reach & ~is_target
    for _ in range(cap):
        if not live.any():
            break
        cur = np.where(live, nxt[cur], cur)
        hops = np.where(live, hops + 1, hops)
        live = live & (cur >= 0) & ~is_target[np.maximum(cur, 0)]
    hops[live] = -1
    return _NeedTable(need, places, missing, targets, is_target, nearest, d0, gap_ok, hops, nxt)


@dataclass(frozen=True)
class NeedRoute:
    """Where a need leads from one start node (:func:`need_route`).

    Attributes:
        start: the start node.
        goal: the nearest goal node (``None`` when no goal node can be reached).
        distance_m: graph metres to it (``inf`` when none).
        steps: hops of the metric-shortest route (``-1`` when none, or longer than
            ``MAX_ROUTE_STEPS + 1``).
        route: node ids from ``start`` to ``goal`` (empty when none).
        usable: a one-stop task may start here (module docstring rules).
        reason: why not, when not usable.
    """

    start: str
    goal: str | None
    distance_m: float
    steps: int
    route: tuple[str, ...]
    usable: bool
    reason: str | None


def need_route(city: City, need: Need, start: str) -> NeedRoute:
    """The goal a one-stop task of ``need`` from ``start`` would have, and whether it may be used.

    Raises:
        KeyError: ``start`` is not a node of ``city``.
        UrbanArenaError: the city has no annotations.
    """
    g = _Graph(city)
    tab = _need_table(g, need)
    v = g.index[start]
    if tab.nearest[v] < 0:
        return NeedRoute(start, None, math.inf, -1, (), False, NO_ROUTE)
    route = tuple(g.nodes[i] for i in tab.route(v))
    steps = int(tab.hops[v])
    reason = None
    if tab.is_target[v]:
        reason = "start is a goal node"
    elif not tab.gap_ok[v]:
        reason = f"nearest goal ambiguous (second within {AMBIGUITY_GAP_M:g} m)"
    elif 0 <= steps < MIN_ROUTE_STEPS:
        reason = f"route under {MIN_ROUTE_STEPS} steps"
    elif steps < 0 or steps > MAX_ROUTE_STEPS:
        reason = f"route over {MAX_ROUTE_STEPS} steps"
    return NeedRoute(start, g.nodes[int(tab.nearest[v])], float(tab.dist[v]), steps, route, reason is None, reason)
