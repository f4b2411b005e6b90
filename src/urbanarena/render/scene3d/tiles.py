"""Frustum culling for the 3D renderer: the ground-tile size meshes are grouped by, the clip planes of a camera, and
a vertex array that draws only the tiles the camera sees."""

from __future__ import annotations

import numpy as np


#: Side of the ground tiles that meshes are grouped by for frustum culling, metres.
TILE_M = 40.0


def frustum_planes(M: np.ndarray) -> np.ndarray:
    """The six clip planes ``(6, 4)`` of a projection-view matrix (Gribb & Hartmann 2001):
    a point ``p`` is inside when ``plane . (p, 1) >= 0`` for all six."""
    return np.stack([M[3] + M[0], M[3] - M[0], M[3] + M[1], M[3] - M[1], M[3] + M[2], M[3] - M[2]])


class TiledVertexArray:
    """A vertex array whose triangles are grouped by ground tile; draws only tiles meeting the frustum.

    ``source`` = ``(buffer, stride_bytes, feature indices per vertex)``: what the ID pass needs to
    draw the same vertices (positions first in each ``stride_bytes`` record)."""

    def __init__(self, vao, first: np.ndarray, count: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                 source: tuple | None = None, front_to_back: bool = False):
        self.vao, self.first, self.count, self.lo, self.hi = vao, first, count, lo, hi
        self.source = source
        #: draw the visible tiles nearest first (the realistic style: the depth test then rejects hidden
        #: fragments before their costly shading); else in storage order (the flat style's pixels)
        self.front_to_back = front_to_back

    def with_vao(self, vao) -> "TiledVertexArray":
        """The same tiling, in the same order, drawn through another vertex array over the same vertices."""
        return TiledVertexArray(vao, self.first, self.count, self.lo, self.hi, front_to_back=self.front_to_back)

    def visible(self, planes: np.ndarray) -> np.ndarray:
        """Mask of tiles whose bounding box is not entirely outside one plane (conservative)."""
        n = planes[:, :3]
        # the box corner farthest along each plane normal ("p-vertex")
        pv = np.where(n[None, :, :] >= 0, self.hi[:, None, :], self.lo[:, None, :])  # (T, 6, 3)
        d = np.einsum("tpk,pk->tp", pv, n) + planes[None, :, 3]
        return np.all(d >= 0, axis=1)

    def render(self, planes: np.ndarray, eye: np.ndarray | None = None, max_dist_m: float | None = None) -> None:
        import moderngl

        vis = self.visible(planes)
        d2 = None
        if eye is not None:
            nearest = np.clip(eye[None, :], self.lo, self.hi)  # closest box point to the eye
            d2 = np.einsum("tk,tk->t", nearest - eye, nearest - eye)
        if max_dist_m is not None and d2 is not None:
            vis &= d2 <= max_dist_m * max_dist_m
        if not vis.any():
            return
        if self.front_to_back and d2 is not None:
            idx = np.flatnonzero(vis)
            idx = idx[np.argsort(d2[idx], kind="stable")]
            # runs of tiles consecutive both in the nearest-first order and in storage: one draw call each
            cut = np.flatnonzero(np.diff(idx) != 1) + 1
            for run in np.split(idx, cut):
                a, b = int(run[0]), int(run[-1])
                first = int(self.first[a])
                self.vao.render(moderngl.TRIANGLES, vertices=int(self.first[b] + self.count[b] - first), first=first)
            return
        # merge runs of consecutive visible tiles into one draw call each
        edges = np.diff(np.concatenate([[0], vis.astype(np.int8), [0]]))
        for a, b in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)):
            first = int(self.first[a])
            count = int(self.first[b - 1] + self.count[b - 1] - first)
            self.vao.render(moderngl.TRIANGLES, vertices=count, first=first)


__all__ = ["TILE_M", "TiledVertexArray", "frustum_planes"]
