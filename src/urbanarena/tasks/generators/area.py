"""Keeping generated tasks inside a split's area of a larger city (:mod:`.splits`, issue 19).

On a city that contains a split's area (the default city ``helsinki``, the whole extract), the suite
builder keeps a candidate only when everything it is made of lies in the area (WGS84 bbox, edges
included):

* its start node, every goal's node and position;
* the route: the reference path when the task has one, else the graph shortest path from the start to
  each goal node (the route the oracle walks; landmark search);
* every point the task's ``extra`` records: any ``{"x_m", "y_m"}`` pair (counting view points,
  the landmark reference camera) and any ``[x, y]`` under a key ending in ``xy`` or ``xy_m``
  (counted objects, the counting range polygon, the reference camera's target), in local metres;
* every node listed under ``extra["route"]`` (the counting road);
* the storefronts it names (``extra`` keys ``poi_id`` and ending in ``_poi_id``: the POI's facade and
  front points).

A candidate that leaves the area is dropped with the rejection reason ``outside the <split> area``.
Because the areas are convex and edges join nodes about 10 m apart, a route whose nodes all lie in
the area walks only the area's streets.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from urbanarena.tasks.generators.common import Candidate, CandidatePool, GenContext
from urbanarena.tasks.generators.splits import CityArea, latlon_inside
from urbanarena.world.city import City


def area_nodes(city: City, area: CityArea) -> list[str]:
    """The city's pose nodes inside ``area``, sorted."""
    nodes = sorted(city.graph.nodes)
    if not nodes:
        return []
    ll = np.array([city.latlon(n) for n in nodes], float)
    keep = latlon_inside(area.bbox, ll[:, 0], ll[:, 1])
    return [n for n, k in zip(nodes, keep) if k]


def _is_pair(v: Any) -> bool:
    return (isinstance(v, (list, tuple)) and len(v) == 2
            and all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in v))


def extra_points(obj: Any, key: str = "") -> Iterator[tuple[float, float]]:
    """Local-metre points recorded in a task's ``extra`` (module docstring)."""
    if isinstance(obj, dict):
        x, y = obj.get("x_m"), obj.get("y_m")
        if _is_pair((x, y)):
            yield float(x), float(y)
        for k, v in obj.items():
            yield from extra_points(v, str(k))
    elif isinstance(obj, (list, tuple)):
        if key.endswith(("xy", "xy_m")) and _is_pair(obj):
            yield float(obj[0]), float(obj[1])
        else:
            for v in obj:
                yield from extra_points(v, key)


def candidate_inside(ctx: GenContext, cand: Candidate, area: CityArea) -> bool:
    """Whether everything ``cand`` is made of lies in ``area`` (module docstring)."""
    city = ctx.city
    f = cand.fields
    extra = f.get("extra") or {}
    nodes: list[str] = []
    start = f.get("start")
    if start is not None and start.node is not None:
        nodes.append(start.node)
    goals = list(f.get("goals") or [])
    points: list[tuple[float, float]] = []
    latlons: list[tuple[float, float]] = []
    for g in goals:
        if g.node is not None:
            nodes.append(g.node)
        if g.position is not None:
            latlons.append((g.position.lat, g.position.lon))
    path = f.get("reference_path")
    if path:
        nodes.extend(path)
    elif start is not None and start.node is not None:
        for g in goals:
            if g.node is None:
                continue
            route = city.shortest_path(start.node, g.node)
            if route is None:
                return False
            nodes.extend(route)
    nodes.extend(str(n) for n in extra.get("route") or [])
    points.extend(extra_points(extra))
    ann = ctx.ann
    if ann is not None:
        for k, v in extra.items():
            if (k == "poi_id" or k.endswith("_poi_id")) and isinstance(v, str):
                try:
                    poi = ann.poi(v)
                except KeyError:
                    return False
                points.extend(p for p in (poi.facade_xy, poi.front_xy) if p is not None)
    for n in dict.fromkeys(nodes):
        if n not in city.graph:
            return False
        latlons.append(tuple(city.latlon(n)))
    if points:
        xy = np.array(points, float)
        lat, lon = city.frame.to_latlon(xy[:, 0], xy[:, 1])
        latlons.extend(zip(np.atleast_1d(lat).tolist(), np.atleast_1d(lon).tolist()))
    if not latlons:
        return False
    ll = np.array(latlons, float)
    return bool(latlon_inside(area.bbox, ll[:, 0], ll[:, 1]).all())


def restrict_pool(ctx: GenContext, pool: CandidatePool, area: CityArea) -> CandidatePool:
    """The candidates of ``pool`` that lie in ``area`` (same order); the others counted as rejected."""
    out = CandidatePool(pool.kind, rejected=dict(pool.rejected))
    for cands in pool.by_difficulty.values():
        for c in cands:
            if candidate_inside(ctx, c, area):
                out.add(c)
            else:
                out.reject(f"outside the {area.split} area")
    return out


__all__ = ["area_nodes", "candidate_inside", "extra_points", "restrict_pool"]
