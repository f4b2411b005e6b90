"""The city model: a directed pose graph with geometry.

A :class:`City` wraps a :class:`networkx.DiGraph` whose node ids are strings.

Node attributes (all cities):
    ``lat``, ``lon``: WGS84 degrees.
    ``x_m``, ``y_m``: local east/north metres in the city's :class:`LocalFrame`.
    ``heading_deg``: compass heading of the node's panorama centre column,
        degrees clockwise from true north in [0, 360), or ``None``.
    ``walkable_headings_raw``: the source's walkable headings in their original
        order and values (CitySeeker keeps values slightly outside [0, 360)),
        or ``None`` when the source has none.
    ``walkable_headings_deg``: the same, wrapped into [0, 360), or ``None``.
Edge attributes:
    ``azimuth_deg``: bearing of the move, degrees clockwise from true north, [0, 360).
    ``length_m``: length in metres.
Importers may add further JSON-serialisable attributes (kept by save/load),
e.g. CitySeeker's raw ``edge_distance_mercator``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterable

import networkx as nx
import numpy as np

from urbanarena.world.geo import LocalFrame, geodesic_distance_m, lonlat_to_mercator

CORE_NODE_KEYS = ("lat", "lon", "x_m", "y_m", "heading_deg", "walkable_headings_raw", "walkable_headings_deg")
CORE_EDGE_KEYS = ("azimuth_deg", "length_m")


@dataclass
class CityMeta:
    """Descriptive metadata of a city (stored in ``city.json``).

    Attributes:
        name: short name, e.g. ``"hongkong6"``.
        source: where the data came from: ``{"kind": "cityseeker", "files": [...], ...}``.
        licence: licence of the graph data (SPDX id or free text).
        attribution: text that must be shown with the data or renders.
        imagery: imagery source description or ``None`` for graph-only cities.
        extra: importer-specific facts (e.g. reconstruction residuals).
    """

    name: str
    source: dict[str, Any] = field(default_factory=dict)
    licence: str | None = None
    attribution: str | None = None
    imagery: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class City:
    """A city: directed pose graph + local frame + metadata.

    Args:
        graph: ``nx.DiGraph`` with the node/edge attributes listed in the module
            docstring (``x_m``/``y_m`` are filled here from lat/lon if missing).
        meta: :class:`CityMeta`.
        frame: local frame; default centred on the bounding box of the nodes.

    Attributes:
        annotations: :class:`urbanarena.world.annotations.Annotations` (POIs,
            street objects, buildings, blocks) or ``None`` when the source has
            none; saved beside the graph by ``save_city``.
    """

    #: number of per-target distance tables kept by :meth:`distances_to`
    DIST_CACHE_TARGETS = 256

    def __init__(self, graph: nx.DiGraph, meta: CityMeta, frame: LocalFrame | None = None):
        self.graph = graph
        self.meta = meta
        if frame is None:
            lats = np.array([d["lat"] for _, d in graph.nodes(data=True)], dtype=float)
            lons = np.array([d["lon"] for _, d in graph.nodes(data=True)], dtype=float)
            frame = LocalFrame.centred_on(lats, lons) if len(lats) else LocalFrame(0.0, 0.0)
        self.frame = frame
        self.annotations: Any = None
        self._fill_xy()
        self._dist_to: OrderedDict[tuple[str, str], dict[str, float]] = OrderedDict()
        self._out_sorted: dict[str, list[tuple[str, dict]]] = {}

    # ------------------------------------------------------------------ basics
    @property
    def name(self) -> str:
        return self.meta.name

    def _fill_xy(self) -> None:
        ids = [n for n, d in self.graph.nodes(data=True) if "x_m" not in d or d.get("x_m") is None]
        if not ids:
            return
        lats = np.array([self.graph.nodes[n]["lat"] for n in ids], dtype=float)
        lons = np.array([self.graph.nodes[n]["lon"] for n in ids], dtype=float)
        xs, ys = self.frame.to_xy(lats, lons)
        for n, x, y in zip(ids, np.atleast_1d(xs), np.atleast_1d(ys)):
            self.graph.nodes[n]["x_m"] = float(x)
            self.graph.nodes[n]["y_m"] = float(y)

    def __contains__(self, node: str) -> bool:
        return node in self.graph

    def node(self, node: str) -> dict[str, Any]:
        """Attribute dict of a node (raises ``KeyError`` if absent)."""
        return self.graph.nodes[node]

    def latlon(self, node: str) -> tuple[float, float]:
        """(lat, lon) in WGS84 degrees."""
        d = self.graph.nodes[node]
        return d["lat"], d["lon"]

    def xy(self, node: str) -> tuple[float, float]:
        """(x_m, y_m) local east/north metres."""
        d = self.graph.nodes[node]
        return d["x_m"], d["y_m"]

    def mercator_xy(self, node: str) -> tuple[float, float]:
        """Web Mercator (EPSG:3857) coordinates of a node, in Mercator units."""
        lat, lon = self.latlon(node)
        x, y = lonlat_to_mercator(lon, lat)
        return float(x), float(y)

    def out_edges(self, node: str) -> list[tuple[str, dict[str, Any]]]:
        """Outgoing edges as ``[(target, attrs)]`` sorted by (azimuth_deg, target) — a stable order."""
        cached = self._out_sorted.get(node)
        if cached is None:
            cached = sorted(
                ((v, d) for _, v, d in self.graph.out_edges(node, data=True)),
                key=lambda t: (t[1]["azimuth_deg"], t[0]),
            )
            self._out_sorted[node] = cached
        return cached

    def neighbours(self, node: str) -> list[str]:
        """Successor node ids in :meth:`out_edges` order."""
        return [v for v, _ in self.out_edges(node)]

    # --------------------------------------------------------------- distances
    def distance_m(self, a: str, b: str) -> float:
        """Straight-line geodesic distance between two nodes, metres (WGS84)."""
        if a == b:
            return 0.0
        la, oa = self.latlon(a)
        lb, ob = self.latlon(b)
        return geodesic_distance_m(la, oa, lb, ob)

    def mercator_distance(self, a: str, b: str) -> float:
        """Euclidean distance between two nodes in Web Mercator units (EPSG:3857)."""
        xa, ya = self.mercator_xy(a)
        xb, yb = self.mercator_xy(b)
        return math.hypot(xa - xb, ya - yb)

    def distances_to(self, target: str, weight: str | None = "length_m", undirected: bool = False) -> dict[str, float]:
        """Shortest-path distance from every node to ``target``.

        Args:
            weight: edge attribute to sum (``"length_m"`` -> metres) or ``None``
                for hop counts.
            undirected: treat edges as undirected (as map2seq's SPD does).
        Returns: ``{node: distance}``; unreachable nodes are absent. Cached per
            (target, weight, undirected) in an LRU of :attr:`DIST_CACHE_TARGETS`
            tables, so memory stays bounded on large graphs.
        """
        key = (target, f"{weight}|{undirected}")
        cached = self._dist_to.get(key)
        if cached is not None:
            self._dist_to.move_to_end(key)
        else:
            g = self._undirected if undirected else self.graph.reverse(copy=False)
            if weight is None:
                cached = {k: float(v) for k, v in nx.single_source_shortest_path_length(g, target).items()}
            else:
                cached = nx.single_source_dijkstra_path_length(g, target, weight=weight)
            self._dist_to[key] = cached
            while len(self._dist_to) > self.DIST_CACHE_TARGETS:
                self._dist_to.popitem(last=False)
        return cached

    @cached_property
    def _undirected(self) -> nx.Graph:
        return self.graph.to_undirected(as_view=False)

    def shortest_path_length_m(self, a: str, b: str, cache: bool = True) -> float:
        """Graph shortest-path length from ``a`` to ``b`` in metres; ``math.inf`` if unreachable.

        With ``cache=True`` a whole distance table to ``b`` is computed and
        kept (fast for many queries to the same goal, e.g. scoring every seed);
        with ``cache=False`` a point-to-point bidirectional Dijkstra is used
        unless the table is already cached.
        """
        if a == b:
            return 0.0
        key = (b, "length_m|False")
        if cache or key in self._dist_to:
            return self.distances_to(b).get(a, math.inf)
        try:
            length, _ = nx.bidirectional_dijkstra(self.graph, a, b, weight="length_m")
        except (nx.NetworkXNoPath, nx.NodeNotFound):
            return math.inf
        return float(length)

    def shortest_path(self, a: str, b: str, weight: str = "length_m") -> list[str] | None:
        """A shortest path (node ids) from ``a`` to ``b`` or ``None`` if unreachable."""
        try:
            return nx.shortest_path(self.graph, a, b, weight=weight)
        except nx.NetworkXNoPath:
            return None

    def path_length_m(self, path: Iterable[str]) -> float:
        """Sum of ``length_m`` along consecutive nodes of ``path``; repeated nodes add 0.

        Raises ``KeyError`` if two consecutive distinct nodes are not joined by an edge.
        """
        total = 0.0
        prev = None
        for n in path:
            if prev is not None and n != prev:
                total += self.graph.edges[prev, n]["length_m"]
            prev = n
        return total

    # ------------------------------------------------------------------ hashing
    def to_records(self) -> dict[str, list[dict[str, Any]]]:
        """JSON-able records ``{"nodes": [...], "edges": [...]}`` in graph insertion order.

        Order is kept (not sorted) because it is behaviour: ``cityseeker-v1``
        breaks azimuth ties by a node's out-edge order, which is the source
        file's order. Reloading the records re-creates the same order.
        """
        nodes = []
        for n, attrs in self.graph.nodes(data=True):
            d = dict(attrs)
            d.pop("x_m", None)
            d.pop("y_m", None)
            nodes.append({"id": n, **d})
        edges = [{"source": u, "target": v, **d} for u, v, d in self.graph.edges(data=True)]
        return {"nodes": nodes, "edges": edges}

    @cached_property
    def content_hash(self) -> str:
        """sha256 (hex) of :meth:`to_records` as compact JSON with sorted keys; identifies a city's content (order included)."""
        blob = json.dumps(self.to_records(), sort_keys=True, separators=(",", ":"), allow_nan=False)
        return hashlib.sha256(blob.encode()).hexdigest()

    def __repr__(self) -> str:
        return f"City({self.name!r}, nodes={self.graph.number_of_nodes()}, edges={self.graph.number_of_edges()})"
