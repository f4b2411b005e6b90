"""The pedestrian network of a city, kept as a graph for analysis (not as a movement constraint).

Two geometries (local metres):

* the **routing graph** (:attr:`WalkNetwork.graph`, an undirected
  ``networkx.Graph``): the walkable network's lines as the OSM importer keeps them
  (``Annotations.streets``: carriageway centrelines with their sidewalks folded in,
  footways, paths, pedestrian streets). Nodes are the polyline vertices (integer
  ids; ``xy`` in :attr:`WalkNetwork.node_xy`), edges the straight pieces between
  consecutive vertices with ``length_m``. Used for network distances
  (:meth:`WalkNetwork.network_distance_m`), shortest walks and the MST bound of the
  route-efficiency metric. Vertices closer than 1 mm are one node.
* the **pedestrian lines** (:attr:`WalkNetwork.pedestrian_geometry`): where people
  walk, for the pedestrian-network adherence metric (PNA). Footways, paths, steps
  and pedestrian streets: their lines. A carriageway (``is_street``, ``highway``
  not pedestrian/footway/path/steps -- the renderer's rule) with mapped sidewalks:
  each sidewalk's centre line, the centreline offset by ``width_m / 2 +
  sidewalk_width_m / 2`` to that side (``sidewalk_width_m`` = the renderer's 2 m,
  :data:`urbanarena.render.scene3d.city_scene.SIDEWALK_M`), so a 3 m buffer covers
  the drawn sidewalk; a carriageway without sidewalks: its centreline (people walk
  on the road there). Marked crossings (``crossing`` objects on a carriageway): a
  segment across the road, ``width_m + 2 x sidewalk_width_m`` long. This mirrors
  UrbanGround's pedestrian network (Hong Kong's 3D Pedestrian Network, where
  sidewalks and crossings are separate lines); the importer folds OSM's separately
  mapped sidewalks into the carriageway, so they are rebuilt here from the
  ``sidewalk_left/right`` flags.

For a city without annotations (a plain pose graph) both are the pose graph's
edges as straight lines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Sequence

import networkx as nx
import numpy as np
import shapely
from shapely.geometry import LineString, MultiLineString, Point
from shapely.strtree import STRtree

from urbanarena.render.scene3d.city_scene import SIDEWALK_M as SIDEWALK_WIDTH_M  # the renderer's sidewalk width

_NOT_CARRIAGEWAY = ("pedestrian", "footway", "path", "steps")


def _is_carriageway(street) -> bool:
    return bool(street.is_street) and street.highway not in _NOT_CARRIAGEWAY


@dataclass(frozen=True)
class Snap:
    """The point of the routing graph nearest to a query point.

    Attributes:
        point: ``(x_m, y_m)`` on the network.
        distance_m: from the query point.
        u, v: node ids of the edge it lies on; ``offset_m`` from ``u``; ``length_m`` of the edge.
    """

    point: tuple[float, float]
    distance_m: float
    u: int
    v: int
    offset_m: float
    length_m: float


class WalkNetwork:
    """Routing graph + pedestrian lines (module docstring).

    Args:
        lines: routing lines, each a sequence of ``(x_m, y_m)`` or a LineString.
        pedestrian_lines: lines for PNA (default: ``lines``).
        names: a name per routing line (or ``None``), for :meth:`street_name_at`.
    Raises:
        ValueError: no line with two distinct points.
    """

    def __init__(self, lines: Iterable[Any], pedestrian_lines: Iterable[Any] | None = None,
                 names: Sequence[str | None] | None = None):
        coords = [np.asarray(ln.coords if isinstance(ln, LineString) else ln, float) for ln in lines]
        names = list(names) if names is not None else [None] * len(coords)
        key_of: dict[tuple[int, int], int] = {}
        xy: list[tuple[float, float]] = []
        g = nx.Graph()
        seg_a, seg_b, seg_uv, seg_name = [], [], [], []

        def node(p) -> int:
            k = (int(round(p[0] * 1000)), int(round(p[1] * 1000)))
            i = key_of.get(k)
            if i is None:
                i = len(xy)
                key_of[k] = i
                xy.append((float(p[0]), float(p[1])))
                g.add_node(i)
            return i

        for c, nm in zip(coords, names):
            if c.ndim != 2 or len(c) < 2:
                continue
            for p, q in zip(c[:-1], c[1:]):
                u, v = node(p), node(q)
                if u == v:
                    continue
                L = math.dist(xy[u], xy[v])
                if not g.has_edge(u, v) or g[u][v]["length_m"] > L:
                    g.add_edge(u, v, length_m=L)
                seg_a.append(xy[u])
                seg_b.append(xy[v])
                seg_uv.append((u, v))
                seg_name.append(nm)
        if not seg_uv:
            raise ValueError("a walk network needs at least one line with two distinct points")
        self.graph = g
        self.node_xy = np.array(xy, float)
        self._a = np.array(seg_a, float)
        self._b = np.array(seg_b, float)
        self._uv = seg_uv
        self._names = seg_name
        self._segs = np.array([LineString([a, b]) for a, b in zip(seg_a, seg_b)], dtype=object)
        self._tree = STRtree(self._segs)
        ped = [ln if isinstance(ln, LineString) else LineString(ln) for ln in
               (pedestrian_lines if pedestrian_lines is not None else coords)]
        ped = [ln for ln in ped if ln.length > 0]
        self.pedestrian_geometry = MultiLineString(ped) if ped else MultiLineString(list(self._segs))
        self._ped_parts = np.array(list(shapely.get_parts(self.pedestrian_geometry)), dtype=object)
        self._ped_tree = STRtree(self._ped_parts)
        self._buffers: dict[float, Any] = {}
        self._sssp = lru_cache(maxsize=512)(self._sssp_uncached)

    # ------------------------------------------------------------ builders
    @classmethod
    def from_annotations(cls, ann, sidewalk_width_m: float = SIDEWALK_WIDTH_M) -> "WalkNetwork":
        """Routing graph from ``ann.streets``; pedestrian lines rebuilt as in the module docstring."""
        lines, names, ped = [], [], []
        by_id = {}
        for s in ann.streets:
            if len(s.xy) < 2:
                continue
            ln = LineString(s.xy)
            if ln.length <= 0:
                continue
            by_id[s.id] = s
            lines.append(ln)
            names.append(s.name)
            if _is_carriageway(s) and (s.sidewalk_left or s.sidewalk_right):
                off = float(s.width_m) / 2.0 + sidewalk_width_m / 2.0
                for flag, sign in ((s.sidewalk_left, 1.0), (s.sidewalk_right, -1.0)):
                    if flag:
                        oc = ln.offset_curve(sign * off)
                        ped.extend(g for g in shapely.get_parts(oc) if g.length > 0)
            else:
                ped.append(ln)
        for o in ann.objects:
            if o.type != "crossing" or o.street_id not in by_id or o.street_azimuth_deg is None:
                continue
            s = by_id[o.street_id]
            if not _is_carriageway(s):
                continue
            half = float(s.width_m) / 2.0 + sidewalk_width_m
            a = math.radians(o.street_azimuth_deg + 90.0)
            dx, dy = math.sin(a) * half, math.cos(a) * half
            ped.append(LineString([(o.x_m - dx, o.y_m - dy), (o.x_m + dx, o.y_m + dy)]))
        return cls(lines, ped, names)

    @classmethod
    def from_city(cls, city) -> "WalkNetwork":
        """:meth:`from_annotations` for an annotated city; else the pose graph's edges (both geometries)."""
        ann = getattr(city, "annotations", None)
        if ann is not None and ann.streets:
            return cls.from_annotations(ann)
        g = city.graph
        seen, lines = set(), []
        for u, v in g.edges:
            k = (u, v) if u <= v else (v, u)
            if k in seen:
                continue
            seen.add(k)
            lines.append([(g.nodes[u]["x_m"], g.nodes[u]["y_m"]), (g.nodes[v]["x_m"], g.nodes[v]["y_m"])])
        return cls(lines)

    # ------------------------------------------------------------ pedestrian lines
    def distance_m(self, x_m: float, y_m: float) -> float:
        """Distance from ``(x_m, y_m)`` to the nearest pedestrian line, metres."""
        p = Point(x_m, y_m)
        i = self._ped_tree.nearest(p)
        return float(self._ped_parts[int(i)].distance(p))

    def buffer(self, radius_m: float):
        """The pedestrian lines buffered by ``radius_m`` (a shapely polygon; cached, prepared)."""
        r = float(radius_m)
        hit = self._buffers.get(r)
        if hit is None:
            hit = self.pedestrian_geometry.buffer(r, quad_segs=16)
            shapely.prepare(hit)
            self._buffers[r] = hit
        return hit

    # ------------------------------------------------------------ routing graph
    def snap(self, x_m: float, y_m: float) -> Snap:
        """Nearest point of the routing graph (:class:`Snap`)."""
        p = Point(x_m, y_m)
        i = int(self._tree.nearest(p))
        a, b = self._a[i], self._b[i]
        ab = b - a
        L = float(math.hypot(*ab))
        t = min(1.0, max(0.0, float(((x_m - a[0]) * ab[0] + (y_m - a[1]) * ab[1]) / (L * L))))
        q = (float(a[0] + t * ab[0]), float(a[1] + t * ab[1]))
        u, v = self._uv[i]
        return Snap(q, math.hypot(x_m - q[0], y_m - q[1]), u, v, t * L, L)

    def street_name_at(self, x_m: float, y_m: float, max_m: float = 15.0) -> str | None:
        """Name of the routing line nearest to the point when within ``max_m`` (``None`` otherwise or unnamed)."""
        p = Point(x_m, y_m)
        i = int(self._tree.nearest(p))
        if self._segs[i].distance(p) > max_m:
            return None
        return self._names[i]

    def _sssp_uncached(self, source: int) -> dict[int, float]:
        return nx.single_source_dijkstra_path_length(self.graph, source, weight="length_m")

    def _ends(self, s: Snap) -> list[tuple[int, float]]:
        return [(s.u, s.offset_m), (s.v, s.length_m - s.offset_m)]

    def network_distance_m(self, a_xy: tuple[float, float], b_xy: tuple[float, float]) -> float:
        """Shortest walk between the snapped points of ``a_xy`` and ``b_xy`` along the routing graph, metres
        (``inf`` when they lie on disconnected parts). The legs from the points to the network are not added."""
        return self._route(self.snap(*a_xy), self.snap(*b_xy))[0]

    def _route(self, sa: Snap, sb: Snap) -> tuple[float, int | None, int | None]:
        best = (math.inf, None, None)
        if {sa.u, sa.v} == {sb.u, sb.v}:
            ob = sb.offset_m if sb.u == sa.u else sb.length_m - sb.offset_m
            best = (abs(sa.offset_m - ob), None, None)
        for na, da in self._ends(sa):
            dist = self._sssp(na)
            for nb, db in self._ends(sb):
                d = da + dist.get(nb, math.inf) + db
                if d < best[0]:
                    best = (d, na, nb)
        return best

    def shortest_walk(self, a_xy: tuple[float, float], b_xy: tuple[float, float]) -> list[tuple[float, float]]:
        """Polyline of the shortest walk along the routing graph from the snapped ``a_xy`` to the snapped
        ``b_xy`` (consecutive duplicates removed).

        Raises:
            ValueError: the points lie on disconnected parts of the network.
        """
        sa, sb = self.snap(*a_xy), self.snap(*b_xy)
        d, na, nb = self._route(sa, sb)
        if not math.isfinite(d):
            raise ValueError(f"no walk between {a_xy} and {b_xy}: disconnected network")
        pts = [sa.point]
        if na is not None:
            path = nx.dijkstra_path(self.graph, na, nb, weight="length_m")
            pts.extend(tuple(map(float, self.node_xy[n])) for n in path)
        pts.append(sb.point)
        out = [pts[0]]
        for p in pts[1:]:
            if math.dist(p, out[-1]) > 1e-9:
                out.append(p)
        return out

    def distance_matrix_m(self, points: Sequence[tuple[float, float]]) -> np.ndarray:
        """``(n, n)`` network distances between the snapped points (symmetric, zero diagonal)."""
        snaps = [self.snap(*p) for p in points]
        n = len(snaps)
        D = np.zeros((n, n))
        for i in range(n):
            for j in range(i + 1, n):
                D[i, j] = D[j, i] = self._route(snaps[i], snaps[j])[0]
        return D


__all__ = ["SIDEWALK_WIDTH_M", "Snap", "WalkNetwork"]
