"""Mesh primitives of the 3D scene: the triangle-list containers (:class:`MeshData`, :class:`MeshBuilder`), boxes,
cylinders, ellipsoids, standing polygons, polygon triangulation and the colour/quad helpers the mesh modules share."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import shapely


def rgb(c) -> np.ndarray:
    """An 8-bit RGB triple -> ``(3,)`` float32 in 0..1."""
    return np.asarray(c, dtype=np.float32) / 255.0


def quad_tris(q: np.ndarray) -> np.ndarray:
    """Quads ``(..., 4, 3)`` -> triangles ``(2Q, 3, 3)`` float64 (all first halves, then all second halves)."""
    q = np.asarray(q, dtype=np.float64).reshape(-1, 4, 3)
    return np.concatenate([q[:, [0, 1, 2]], q[:, [0, 2, 3]]], axis=0)


@dataclass
class MeshData:
    """A triangle list: ``positions``/``normals`` ``(N, 3)`` float32, ``colours`` ``(N, 3)`` in 0..1,
    optional ``facade`` ``(N, 4)`` and ``shop`` ``(N,)`` (facades), ``uv`` ``(N, 2)`` (signs),
    ``feature`` ``(N,)`` float32 feature indices (integers, exact below 2**24; module docstring);
    ``N % 3 == 0``."""

    positions: np.ndarray
    normals: np.ndarray
    colours: np.ndarray
    facade: np.ndarray | None = None
    shop: np.ndarray | None = None
    uv: np.ndarray | None = None
    feature: np.ndarray | None = None

    @property
    def n_triangles(self) -> int:
        return len(self.positions) // 3

    def take_triangles(self, order: np.ndarray) -> "MeshData":
        """The same mesh with its triangles reordered (``order``: triangle indices)."""
        idx = (np.asarray(order)[:, None] * 3 + np.arange(3)[None, :]).reshape(-1)

        def t(a):
            return None if a is None else a[idx]

        return MeshData(self.positions[idx], self.normals[idx], self.colours[idx], t(self.facade), t(self.shop),
                        t(self.uv), t(self.feature))

    def tiles(self, tile_m: float) -> tuple["MeshData", np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Triangles grouped by ground tile (by centroid, ``tile_m`` squares) for frustum culling.

        Returns:
            ``(mesh, first, count, lo, hi)``: the reordered mesh, per tile the first
            vertex and vertex count, and the tile's bounding box corners ``(T, 3)``
            over the vertices of its triangles.
        """
        if self.n_triangles == 0:
            z = np.zeros((0,), np.int64)
            return self, z, z, np.zeros((0, 3)), np.zeros((0, 3))
        idx, first, count, lo, hi = self.tile_order(tile_m)
        t = (lambda a: None if a is None else a[idx])
        mesh = MeshData(self.positions[idx], self.normals[idx], self.colours[idx], t(self.facade), t(self.shop),
                        t(self.uv), t(self.feature))
        return mesh, first, count, lo, hi

    def tile_order(self, tile_m: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`tiles` without building the mesh: ``(vertex order (N,), first, count, lo, hi)``; vertex array
        ``a`` reordered is ``a[order]`` (a caller can reorder its interleaved buffer once)."""
        n = self.n_triangles
        if n == 0:
            z = np.zeros((0,), np.int64)
            return z, z, z, np.zeros((0, 3)), np.zeros((0, 3))
        tris = self.positions.reshape(n, 3, 3).astype(np.float64)
        # corner by corner (numpy reduces a length-3 middle axis slowly; the sums run in the same order)
        a, b, c = tris[:, 0], tris[:, 1], tris[:, 2]
        key = np.floor((((a[:, :2] + b[:, :2]) + c[:, :2]) / 3.0) / tile_m).astype(np.int64)
        order = np.lexsort((key[:, 1], key[:, 0]))
        key = key[order]
        change = np.flatnonzero((key[1:, 0] != key[:-1, 0]) | (key[1:, 1] != key[:-1, 1])) + 1
        starts = np.concatenate([[0], change])
        a, b, c = a[order], b[order], c[order]
        lo = np.minimum.reduceat(np.minimum(np.minimum(a, b), c), starts, axis=0)
        hi = np.maximum.reduceat(np.maximum(np.maximum(a, b), c), starts, axis=0)
        counts = np.diff(np.concatenate([starts, [n]]))
        idx = (order[:, None] * 3 + np.arange(3)[None, :]).reshape(-1)
        return idx, starts * 3, counts * 3, lo, hi

    def interleaved(self, fields: tuple[str, ...]) -> np.ndarray:
        """Vertex buffer ``(N, sum of field widths)`` float32 with the given fields side by side."""
        cols = []
        for f in fields:
            a = getattr(self, f)
            cols.append(a.reshape(len(self.positions), -1))
        return np.ascontiguousarray(np.concatenate(cols, axis=1), dtype=np.float32)


class MeshBuilder:
    """Accumulates triangles (numpy chunks) and concatenates them once.

    ``feature`` is the feature index given to the triangles added while it is set (0 = none).
    """

    def __init__(self):
        self.feature: int = 0
        self._fid: list[np.ndarray] = []
        self._p: list[np.ndarray] = []
        self._n: list[np.ndarray] = []
        self._c: list[np.ndarray] = []
        self._f: list[np.ndarray] = []
        self._s: list[np.ndarray] = []
        self._uv: list[np.ndarray] = []

    def add(self, tris: np.ndarray, colour, normals: np.ndarray | None = None, facade: np.ndarray | None = None,
            shop: float | np.ndarray | None = None, uv: np.ndarray | None = None) -> None:
        """Add triangles ``tris`` ``(T, 3, 3)``; flat normals from the winding when ``normals`` is ``None``.

        Flat normals are made to point up for horizontal faces (ground, roofs) and
        otherwise follow the right-hand rule of the vertex order.
        """
        tris = np.asarray(tris, dtype=np.float64).reshape(-1, 3, 3)
        if len(tris) == 0:
            return
        if normals is None:
            nrm = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
            ln = np.linalg.norm(nrm, axis=1, keepdims=True)
            ln[ln == 0] = 1.0
            nrm = nrm / ln
            normals = np.repeat(nrm[:, None, :], 3, axis=1)
        self._p.append(tris.reshape(-1, 3).astype(np.float32))
        self._fid.append(np.full(len(tris) * 3, float(self.feature), dtype=np.float32))
        self._n.append(np.asarray(normals, dtype=np.float32).reshape(-1, 3))
        col = np.asarray(colour, dtype=np.float32)
        if col.ndim == 1:
            col = np.broadcast_to(col, (len(tris) * 3, 3))
        self._c.append(np.ascontiguousarray(col.reshape(-1, 3), dtype=np.float32))
        if facade is not None:
            self._f.append(np.asarray(facade, dtype=np.float32).reshape(-1, 4))
            if shop is None or np.ndim(shop) == 0:
                self._s.append(np.full(len(tris) * 3, 0.0 if shop is None else shop, dtype=np.float32))
            else:
                self._s.append(np.asarray(shop, dtype=np.float32).reshape(-1))
        if uv is not None:
            self._uv.append(np.asarray(uv, dtype=np.float32).reshape(-1, 2))

    def build(self) -> MeshData:
        if not self._p:
            z = np.zeros((0, 3), np.float32)
            return MeshData(z, z.copy(), z.copy())
        return MeshData(
            np.concatenate(self._p), np.concatenate(self._n), np.concatenate(self._c),
            np.concatenate(self._f) if self._f else None,
            np.concatenate(self._s) if self._s else None,
            np.concatenate(self._uv) if self._uv else None,
            np.concatenate(self._fid),
        )


# ------------------------------------------------------------ primitives
def _frame(x: float, y: float, heading_deg: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = math.radians(heading_deg)
    fwd = np.array([math.sin(a), math.cos(a), 0.0])
    right = np.array([math.cos(a), -math.sin(a), 0.0])
    return np.array([x, y, 0.0]), right, fwd


def _to_world(local: np.ndarray, origin, right, fwd) -> np.ndarray:
    """Local ``(a, b, z)`` (right, forward, up) -> world."""
    local = np.asarray(local, dtype=np.float64)
    return origin + local[..., 0:1] * right + local[..., 1:2] * fwd + local[..., 2:3] * np.array([0.0, 0.0, 1.0])


_BOX_FACES = np.array([  # quads of a unit cube [-0.5,0.5]^2 x [0,1], outward winding
    [[-.5, -.5, 0], [.5, -.5, 0], [.5, -.5, 1], [-.5, -.5, 1]],   # back (-forward)
    [[.5, .5, 0], [-.5, .5, 0], [-.5, .5, 1], [.5, .5, 1]],       # front (+forward)
    [[.5, -.5, 0], [.5, .5, 0], [.5, .5, 1], [.5, -.5, 1]],       # right
    [[-.5, .5, 0], [-.5, -.5, 0], [-.5, -.5, 1], [-.5, .5, 1]],   # left
    [[-.5, -.5, 1], [.5, -.5, 1], [.5, .5, 1], [-.5, .5, 1]],     # top
    [[-.5, .5, 0], [.5, .5, 0], [.5, -.5, 0], [-.5, -.5, 0]],     # bottom
], dtype=np.float64)


def quads_to_tris(q: np.ndarray) -> np.ndarray:
    """Quads ``(..., 4, 3)`` -> triangles ``(2Q, 3, 3)`` in the input dtype (first halves, then second halves)."""
    q = np.asarray(q).reshape(-1, 4, 3)
    return np.concatenate([q[:, [0, 1, 2]], q[:, [0, 2, 3]]], axis=0)


def box(mb: MeshBuilder, x: float, y: float, heading_deg: float, a: float, b: float, sx: float, sy: float,
        z0: float, sz: float, colour) -> None:
    """Box of size ``sx`` (right) x ``sy`` (forward) x ``sz`` (up), centred at local ``(a, b)``, bottom at ``z0``."""
    o, r, f = _frame(x, y, heading_deg)
    loc = _BOX_FACES * np.array([sx, sy, sz]) + np.array([a, b, z0])
    mb.add(quads_to_tris(_to_world(loc, o, r, f)), rgb(colour))


def cylinder(mb: MeshBuilder, x: float, y: float, z0: float, radius: float, height: float, colour,
             segments: int = 8, top_radius: float | None = None) -> None:
    """Vertical cylinder (or truncated cone with ``top_radius``) with caps."""
    tr = radius if top_radius is None else top_radius
    ang = np.linspace(0.0, 2 * np.pi, segments + 1)
    c, s = np.cos(ang), np.sin(ang)
    bot = np.stack([x + radius * c, y + radius * s, np.full_like(c, z0)], axis=1)
    top = np.stack([x + tr * c, y + tr * s, np.full_like(c, z0 + height)], axis=1)
    q = np.stack([bot[:-1], bot[1:], top[1:], top[:-1]], axis=1)
    mb.add(quads_to_tris(q), rgb(colour))
    if tr > 0:
        ctr = np.array([x, y, z0 + height])
        mb.add(np.stack([np.broadcast_to(ctr, top[:-1].shape), top[:-1], top[1:]], axis=1), rgb(colour))


def ellipsoid(mb: MeshBuilder, x: float, y: float, zc: float, rx: float, rz: float, colour,
              segments: int = 10, rings: int = 6) -> None:
    """Low-poly ellipsoid (UV sphere) centred at ``(x, y, zc)``."""
    th = np.linspace(0.0, np.pi, rings + 1)[:, None]
    ph = np.linspace(0.0, 2 * np.pi, segments + 1)[None, :]
    P = np.stack([x + rx * np.sin(th) * np.cos(ph), y + rx * np.sin(th) * np.sin(ph),
                  np.broadcast_to(zc + rz * np.cos(th), (rings + 1, segments + 1))], axis=-1)
    q = np.stack([P[:-1, :-1], P[1:, :-1], P[1:, 1:], P[:-1, 1:]], axis=2).reshape(-1, 4, 3)
    tris = quads_to_tris(q)
    # smooth-ish normals: from the centre (scaled), keeps the crown round under lighting
    n = (tris - np.array([x, y, zc])) / np.array([rx * rx, rx * rx, rz * rz])
    n /= np.maximum(np.linalg.norm(n, axis=-1, keepdims=True), 1e-9)
    mb.add(tris, rgb(colour), normals=n)


def vertical_polygon(mb: MeshBuilder, x: float, y: float, heading_deg: float, b: float, zc: float,
                     radius: float, sides: int, colour, rot_deg: float = 0.0) -> None:
    """Flat regular polygon standing vertically at local forward offset ``b``, facing ``heading_deg``."""
    o, r, f = _frame(x, y, heading_deg)
    ang = np.radians(rot_deg) + np.linspace(0, 2 * np.pi, sides + 1)
    pts = np.stack([radius * np.sin(ang), np.full_like(ang, b), zc + radius * np.cos(ang)], axis=1)
    ctr = np.array([0.0, b, zc])
    tri = np.stack([np.broadcast_to(ctr, pts[:-1].shape), pts[1:], pts[:-1]], axis=1)
    w = _to_world(tri, o, r, f)
    n = np.broadcast_to(f, w.shape)
    mb.add(w, rgb(colour), normals=n)


# --------------------------------------------------------- triangulation
def triangulate(geom) -> np.ndarray:
    """Triangles ``(T, 3, 2)`` of a (multi)polygon by constrained Delaunay (shapely/GEOS)."""
    if geom is None or geom.is_empty:
        return np.zeros((0, 3, 2))
    tris = shapely.get_parts(shapely.constrained_delaunay_triangles(geom))
    if len(tris) == 0:
        return np.zeros((0, 3, 2))
    coords = shapely.get_coordinates(shapely.get_exterior_ring(tris))
    return coords.reshape(len(tris), 4, 2)[:, :3]


def flat(tris2d: np.ndarray, z: float) -> np.ndarray:
    """2D triangles ``(T, 3, 2)`` -> horizontal 3D triangles at height ``z`` m, each counter-clockwise seen from above."""
    t = np.concatenate([tris2d, np.full(tris2d.shape[:2] + (1,), z)], axis=2)
    # make every triangle counter-clockwise seen from above (normal up)
    cross = ((t[:, 1, 0] - t[:, 0, 0]) * (t[:, 2, 1] - t[:, 0, 1])
             - (t[:, 1, 1] - t[:, 0, 1]) * (t[:, 2, 0] - t[:, 0, 0]))
    t[cross < 0] = t[cross < 0][:, [0, 2, 1]]
    return t


__all__ = ["MeshBuilder", "MeshData", "box", "cylinder", "ellipsoid", "flat", "quad_tris", "quads_to_tris", "rgb",
           "triangulate", "vertical_polygon"]
