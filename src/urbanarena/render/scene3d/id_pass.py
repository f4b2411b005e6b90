"""The ID pass of :class:`~.renderer.SceneRenderer` (split out of renderer.py): each pixel's feature index, drawn
with the geometry, draw order, culling and depth test of the colour pass; and the framebuffer release both use."""

from __future__ import annotations

import numpy as np

from urbanarena.render.scene3d import shaders
from urbanarena.render.scene3d.cubemap import projection_matrix, view_matrix
from urbanarena.render.scene3d.dynamic import draw_dynamic_ids
from urbanarena.render.scene3d.framebuffers import release_framebuffers
from urbanarena.render.scene3d.tiles import frustum_planes as _frustum_planes


class IdPassMixin:
    """The ID pass methods; the renderer provides ``ctx``, ``_mgl``, ``settings``, ``_keep``, ``_fbos``,
    ``_id_pass``, ``features`` and its tiled vertex arrays."""

    def _build_id_pass(self) -> tuple:
        """The ID program and vertex arrays over the existing vertex buffers (built once, on first use)."""
        ctx = self.ctx
        prog = self._keep(ctx.program(vertex_shader=shaders.ID_VS, fragment_shader=shaders.ID_FS))

        def id_vao(tiled):
            if tiled is None:
                return None
            buf, stride, feature = tiled.source
            n = (buf.size // stride)
            feat = np.zeros(n, np.float32) if feature is None else np.ascontiguousarray(feature, dtype=np.float32)
            fbuf = self._keep(ctx.buffer(feat.tobytes()))
            pos = "3f" if stride == 12 else f"3f {stride - 12}x"
            return tiled.with_vao(self._keep(ctx.vertex_array(prog, [(buf, pos, "in_pos"),
                                                                     (fbuf, "1f", "in_feature")])))

        return (prog, id_vao(self.vao_facades), id_vao(self.vao_solids), id_vao(self.vao_objects),
                [id_vao(t) for _, t in self.sign_vaos], id_vao(getattr(self, "vao_foliage", None)),
                [(id_vao(t), d) for t, d in getattr(self, "building_detail_vaos", ())])

    def _id_fbo(self, width: int, height: int):
        key = ("id", width, height)
        f = self._fbos.get(key)
        if f is not None:
            self._fbos.move_to_end(key)
            return f[0]
        ctx = self.ctx
        fb = ctx.framebuffer([ctx.renderbuffer((width, height), 4)], ctx.depth_renderbuffer((width, height)))
        self._fbos[key] = (fb, None)
        while len(self._fbos) > 4:
            _, old = self._fbos.popitem(last=False)
            release_framebuffers(old)
        return fb

    def _draw_ids(self, eye: np.ndarray, yaw_deg: float, pitch_deg: float, hfov_deg: float, width: int,
                  height: int, dynamic=None) -> np.ndarray:
        """Feature-index image ``(height, width)`` int32: the geometry, draw order, culling and depth
        test of :meth:`_draw` (steps 1; the sky and the ground, which writes no depth, hide nothing)."""
        mgl = self._mgl
        ctx = self.ctx
        s = self.settings
        if self._id_pass is None:
            self._id_pass = self._build_id_pass()
        prog, facades, solids, objects, signs, foliage, building_detail = self._id_pass
        fb = self._id_fbo(width, height)
        fb.use()
        ctx.viewport = (0, 0, width, height)
        fb.clear(0.0, 0.0, 0.0, 1.0, depth=1.0)
        P = projection_matrix(hfov_deg, width, height, s.near_m, s.far_m)
        V = view_matrix(eye, yaw_deg, pitch_deg)
        prog["mvp"].write((P @ V).T.astype("f4").tobytes())
        ctx.disable(mgl.CULL_FACE | mgl.BLEND)
        ctx.enable(mgl.DEPTH_TEST)
        ctx.depth_func = "<"
        planes = _frustum_planes(P @ V)
        for tiled in (facades, solids):
            if tiled is not None:
                tiled.render(planes, eye)
        for tiled in (objects, foliage):
            if tiled is not None:
                tiled.render(planes, eye, s.object_distance_m)
        for tiled, distance_m in building_detail:   # photo: cornices, balconies... as drawn (.photo_building_detail)
            tiled.render(planes, eye, distance_m)
        for tiled in signs:
            if tiled is not None:
                tiled.render(planes, eye)
        if dynamic:  # the population's people and vehicles (.population): indices after the scene's features
            draw_dynamic_ids(ctx, prog, dynamic, len(self.features))
        data = fb.read(viewport=(0, 0, width, height), components=3, alignment=1)
        rgb = np.frombuffer(data, dtype=np.uint8).reshape(height, width, 3)[::-1].astype(np.int32)
        return np.ascontiguousarray(rgb[..., 0] | (rgb[..., 1] << 8) | (rgb[..., 2] << 16))


__all__ = ["IdPassMixin", "release_framebuffers"]
