"""Graph facts reported by importers and ``urbanarena city info``."""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable

import networkx as nx

from urbanarena.world.city import City


def graph_facts(city: City) -> dict[str, Any]:
    """Basic facts of a city's pose graph.

    Returns a JSON-able dict: ``name``, ``content_hash``, ``nodes``, ``edges``
    (directed), ``components`` (weakly connected), ``strong_components``,
    ``largest_component_nodes``, ``out_degree_histogram`` (``{degree: count}``),
    ``nodes_without_edges``, ``bbox`` (``[min_lon, min_lat, max_lon, max_lat]``,
    WGS84), ``total_length_m`` (sum of directed edge lengths), ``licence``,
    ``attribution``.
    """
    g = city.graph
    weak = list(nx.weakly_connected_components(g)) if len(g) else []
    strong = nx.number_strongly_connected_components(g) if len(g) else 0
    lats = [d["lat"] for _, d in g.nodes(data=True)]
    lons = [d["lon"] for _, d in g.nodes(data=True)]
    hist = Counter(d for _, d in g.out_degree())
    return {
        "name": city.name,
        "content_hash": city.content_hash,
        "nodes": g.number_of_nodes(),
        "edges": g.number_of_edges(),
        "components": len(weak),
        "strong_components": strong,
        "largest_component_nodes": max((len(c) for c in weak), default=0),
        "out_degree_histogram": {str(k): v for k, v in sorted(hist.items())},
        "nodes_without_edges": sum(1 for n in g if g.degree(n) == 0),
        "bbox": [min(lons), min(lats), max(lons), max(lats)] if lats else None,
        "total_length_m": float(sum(d["length_m"] for _, _, d in g.edges(data=True))),
        "licence": city.meta.licence,
        "attribution": city.meta.attribution,
    }


def unreachable_pairs(city: City, pairs: Iterable[tuple[str, str, str]], allowed_edges: set[tuple[str, str]] | None = None) -> list[str]:
    """Ids of (id, start, goal) pairs whose goal cannot be reached from start.

    Args:
        allowed_edges: restrict moves to these directed edges (e.g. the edges a
            protocol's actions can take); ``None`` = every edge.
    """
    g = city.graph if allowed_edges is None else city.graph.edge_subgraph(allowed_edges)
    out = []
    for pid, s, t in pairs:
        if s == t:
            continue
        if s not in g or t not in g or not nx.has_path(g, s, t):
            out.append(pid)
    return out
