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
        #: ``None`` (one draw call per run of tiles) or an :class:`IndirectDraws` that submits a frame's runs as one
        #: multi-draw call (the photo style): the same draws in the same order, so the same pixels
        self.indirect = None

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

    def render(self, planes: np.ndarray, eye: np.ndarray | None = None, max_dist_m: float | None = None,
               min_dist_m: float | None = None) -> None:
        """Draw the tiles meeting the frustum ``planes`` ``(6, 4)``; with ``eye`` ``(3,)`` (m) only those whose box's
        nearest point is at most ``max_dist_m`` and more than ``min_dist_m`` (m) from it (each ``None``: no limit)."""
        import moderngl

        vis = self.visible(planes)
        d2 = None
        if eye is not None:
            nearest = np.clip(eye[None, :], self.lo, self.hi)  # closest box point to the eye
            d2 = np.einsum("tk,tk->t", nearest - eye, nearest - eye)
        if max_dist_m is not None and d2 is not None:
            vis &= d2 <= max_dist_m * max_dist_m
        if min_dist_m is not None and d2 is not None:
            vis &= d2 > min_dist_m * min_dist_m
        if not vis.any():
            return
        if self.front_to_back and d2 is not None:
            idx = np.flatnonzero(vis)
            idx = idx[np.argsort(d2[idx], kind="stable")]
            # runs of tiles consecutive both in the nearest-first order and in storage: one draw call each
            cut = np.flatnonzero(np.diff(idx) != 1) + 1
            if self.indirect is not None:
                a, b = idx[np.concatenate([[0], cut])], idx[np.concatenate([cut - 1, [len(idx) - 1]])]
                self.indirect.draw(self.vao, self.first[a], self.first[b] + self.count[b] - self.first[a])
                return
            for run in np.split(idx, cut):
                a, b = int(run[0]), int(run[-1])
                first = int(self.first[a])
                self.vao.render(moderngl.TRIANGLES, vertices=int(self.first[b] + self.count[b] - first), first=first)
            return
        # merge runs of consecutive visible tiles into one draw call each
        edges = np.diff(np.concatenate([[0], vis.astype(np.int8), [0]]))
        if self.indirect is not None:
            a, b = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
            self.indirect.draw(self.vao, self.first[a], self.first[b] + self.count[b] - self.first[a])
            return
        for a, b in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)):
            first = int(self.first[a])
            count = int(self.first[b - 1] + self.count[b - 1] - first)
            self.vao.render(moderngl.TRIANGLES, vertices=count, first=first)


class IndirectDraws:
    """Submits a list of triangle ranges of one vertex array as a single ``glMultiDrawArraysIndirect`` call.

    GL defines that call as the ranges drawn one after another in the list's order, so the pixels are those of
    one ``glDrawArrays`` per range; what it saves is the per-call work of the driver (state validation, about
    7-13 microseconds a call on llvmpipe with the photo programs) and of Python. The commands go into a buffer
    kept between calls (orphaned before each write, grown when a list is longer); moderngl reads 20 bytes a
    command (``count``, ``instanceCount``, ``first``, two words unused here).

    Args:
        ctx: the moderngl context the vertex arrays belong to.
    """

    #: 32-bit words per command as moderngl strides them
    WORDS = 5

    def __init__(self, ctx):
        self.ctx = ctx
        self._buf = None

    @staticmethod
    def commands(first: np.ndarray, count: np.ndarray) -> np.ndarray:
        """``(n, 5)`` uint32 commands for ranges ``first`` ``(n,)`` and ``count`` ``(n,)`` (vertices): ``count``,
        one instance, ``first``, 0, 0."""
        first = np.asarray(first, np.int64)
        cmd = np.zeros((len(first), IndirectDraws.WORDS), np.uint32)
        cmd[:, 0] = np.asarray(count, np.int64)
        cmd[:, 1] = 1
        cmd[:, 2] = first
        return cmd

    def draw(self, vao, first: np.ndarray, count: np.ndarray) -> None:
        """Draw the ranges ``first[i], count[i]`` (vertices, ``(n,)`` each) of ``vao`` as triangles, in order."""
        import moderngl

        if not len(first):
            return
        data = self.commands(first, count).tobytes()
        if self._buf is None or self._buf.size < len(data):
            if self._buf is not None:
                self._buf.release()
            self._buf = self.ctx.buffer(reserve=max(len(data), 4096))
        else:
            self._buf.orphan()   # fresh storage: the write never waits on a draw still reading the old
        self._buf.write(data)
        vao.render_indirect(self._buf, moderngl.TRIANGLES, count=len(first))

    def release(self) -> None:
        if self._buf is not None:
            self._buf.release()
            self._buf = None


#: triangles per chunk of :class:`OrderedChunks`
CHUNK_TRIS = 64
#: slack (metres) of :class:`OrderedChunks`' plane test: a chunk is skipped only when its box is this far outside
#: one plane, so float32 clipping on the GL side never keeps a fragment of a skipped triangle
CHUNK_SLACK_M = 0.5


def boxes_outside(lo: np.ndarray, hi: np.ndarray, planes: np.ndarray, slack_m: float = 0.0) -> np.ndarray:
    """Mask ``(B,)`` of the axis-aligned boxes ``lo``/``hi`` ``(B, 3)`` lying entirely more than ``slack_m``
    outside one of ``planes`` ``(P, 4)`` (inside: ``plane . (p, 1) >= 0``; with normalised plane normals
    ``slack_m`` is in metres)."""
    n = planes[:, :3]
    pv = np.where(n[None, :, :] >= 0, hi[:, None, :], lo[:, None, :])  # each box's corner farthest along n
    d = np.einsum("tpk,pk->tp", pv, n) + planes[None, :, 3]
    return np.any(d < -slack_m * np.linalg.norm(n, axis=1)[None, :], axis=1)


class OrderedChunks:
    """Draws runs ``(vertex array, first vertex, vertex count)`` of one triangle list in their order, skipping
    the chunks of :data:`CHUNK_TRIS` consecutive triangles whose bounding box lies wholly outside the frustum.

    For layers drawn in painter's order (the ground, no depth writes): a skipped triangle would have been clipped
    away whole, and the kept ones keep their order, so the pixels are those of drawing every run whole.

    With ``max_dist_m`` (per run, ``None`` for no limit) a run's chunks whose bounding box is farther than that
    from the eye are skipped too (thin ground detail -- kerbs, rails -- narrower than a pixel there): that does
    change pixels, where such a line would have covered a pixel centre.

    Args:
        runs: ``[(vertex array, first, count)]`` (vertex counts multiples of 3).
        positions: ``(N, 3)`` the triangle list's vertex positions (the runs index into it).
        chunk_tris: triangles per chunk.
        max_dist_m: ``None`` or per run a draw distance in metres or ``None``.
    """

    def __init__(self, runs, positions: np.ndarray, chunk_tris: int = CHUNK_TRIS, max_dist_m=None):
        pos = np.asarray(positions, np.float64)
        va, first, count, lo, hi = [], [], [], [], []
        for k, (vao, f, c) in enumerate(runs):
            f, c = int(f), int(c)
            if c <= 0:
                continue
            tri = pos[f:f + c].reshape(-1, 3, 3)
            starts = np.arange(0, len(tri), chunk_tris)
            a, b, cc = tri[:, 0], tri[:, 1], tri[:, 2]
            lo.append(np.minimum.reduceat(np.minimum(np.minimum(a, b), cc), starts, axis=0))
            hi.append(np.maximum.reduceat(np.maximum(np.maximum(a, b), cc), starts, axis=0))
            first.append(f + 3 * starts)
            count.append(3 * (np.minimum(starts + chunk_tris, len(tri)) - starts))
            va.append(np.full(len(starts), k))
        self.vaos = [r[0] for r in runs]
        z = np.zeros((0,), np.int64)
        self.run = np.concatenate(va) if va else z
        self.first = np.concatenate(first) if first else z
        self.count = np.concatenate(count) if count else z
        self.lo = np.concatenate(lo) if lo else np.zeros((0, 3))
        self.hi = np.concatenate(hi) if hi else np.zeros((0, 3))
        #: per chunk its run's draw distance (m; infinite: none)
        lim = [np.inf if max_dist_m is None or max_dist_m[k] is None else float(max_dist_m[k])
               for k in range(len(runs))]
        self.max_dist_m = np.asarray(lim, np.float64)[self.run] if len(self.run) else np.zeros(0)
        #: ``None`` or an :class:`IndirectDraws` (one multi-draw call per vertex array in a row; same pixels)
        self.indirect = None

    def draws(self, planes: np.ndarray, eye: np.ndarray | None = None) -> list[tuple[int, int, int]]:
        """``(run index, first vertex, vertex count)`` of the draw calls for a frustum ``planes`` ``(6, 4)`` (and,
        with ``eye`` ``(3,)``, the runs' draw distances): consecutive kept chunks of one run merged, in the runs'
        order."""
        keep = ~boxes_outside(self.lo, self.hi, planes, CHUNK_SLACK_M)
        if eye is not None and np.isfinite(self.max_dist_m).any():
            near = np.clip(np.asarray(eye, np.float64)[None, :], self.lo, self.hi)   # each box's point nearest
            keep &= np.einsum("tk,tk->t", near - eye, near - eye) <= self.max_dist_m ** 2
        idx = np.flatnonzero(keep)
        if not len(idx):
            return []
        # a new call where the kept chunks stop being adjacent in storage, or the run changes
        cut = np.flatnonzero((np.diff(idx) != 1) | (np.diff(self.run[idx]) != 0)) + 1
        out = []
        for part in np.split(idx, cut):
            a, b = int(part[0]), int(part[-1])
            out.append((int(self.run[a]), int(self.first[a]), int(self.first[b] + self.count[b] - self.first[a])))
        return out

    def render(self, planes: np.ndarray, eye: np.ndarray | None = None) -> None:
        import moderngl

        draws = self.draws(planes, eye)
        if self.indirect is not None:   # consecutive draws through one vertex array: one multi-draw call
            d = np.asarray(draws, np.int64).reshape(-1, 3)
            start = 0
            for i in range(1, len(d) + 1):
                if i == len(d) or self.vaos[d[i, 0]] is not self.vaos[d[start, 0]]:
                    self.indirect.draw(self.vaos[d[start, 0]], d[start:i, 1], d[start:i, 2])
                    start = i
            return
        for k, first, count in draws:
            self.vaos[k].render(moderngl.TRIANGLES, vertices=count, first=first)


__all__ = ["CHUNK_SLACK_M", "CHUNK_TRIS", "IndirectDraws", "OrderedChunks", "TILE_M", "TiledVertexArray",
           "boxes_outside", "frustum_planes"]
