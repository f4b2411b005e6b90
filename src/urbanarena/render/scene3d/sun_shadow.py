"""The realistic style's cast shadows on walls: a sun shadow map baked once per renderer (city and condition).

The buildings' walls and roofs (facades and solids meshes) are drawn once, at the first frame, into a depth
texture of :data:`SHADOW_MAP_PX` squared texels seen from the sun: an orthographic projection along the
condition's sun direction covering the buildings' bounding box (plus their height, so every shadow caster
is inside), :func:`sun_matrix`. The facade program (:mod:`.realistic_shaders`) then looks its fragment up
(one bilinear lookup through a comparison sampler, i.e. 2 x 2 percentage-closer filtering, a 0.25 m offset along the normal against
self-shadowing) and takes the sun's direct term away where another wall or roof stands between it and the sun.
A frame pays one matrix product per vertex and one texture lookup per sunlit facade fragment; nothing is redrawn
per frame. Ground shadows stay the baked polygons of :mod:`.realistic` (the same sun direction), so they
agree with the walls. Without sun (sun below 2 degrees, or a condition without direct light) nothing is baked.

Memory: one 32-bit depth texture, ``SHADOW_MAP_PX**2 * 4`` bytes (16 MiB at 2048).
"""

from __future__ import annotations

import math
import time

import numpy as np

#: texels per side of the sun shadow map
SHADOW_MAP_PX = 2048

DEPTH_VS = """
#version 330
uniform mat4 mvp;
in vec3 in_pos;
void main() { gl_Position = mvp * vec4(in_pos, 1.0); }
"""

DEPTH_FS = """
#version 330
void main() { }
"""


def casts_shadows(light) -> bool:
    """Whether the condition (``light``: :class:`~.conditions.Lighting`) has a sun that casts shadows."""
    return float(light.sun) > 0.0 and float(light.sun_dir[2]) > math.sin(math.radians(2.0))


def sun_matrix(lo, hi, sun_dir) -> np.ndarray:
    """4x4 world -> sun clip matrix: orthographic along ``-sun_dir`` (unit, towards the sun), covering the
    box ``lo``-``hi`` (``(3,)`` metres; a sphere around it, so any sun direction fits)."""
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    c = (lo + hi) / 2
    r = float(np.linalg.norm(hi - lo) / 2) + 1.0
    z = np.asarray(sun_dir, np.float64)
    z = z / np.linalg.norm(z)
    up = np.array([0.0, 0.0, 1.0]) if abs(z[2]) < 0.99 else np.array([0.0, 1.0, 0.0])
    x = np.cross(up, z)
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    eye = c + z * (r + 10.0)
    V = np.eye(4)
    V[:3, :3] = np.stack([x, y, z])
    V[:3, 3] = -V[:3, :3] @ eye
    near, far = 1.0, 2 * r + 20.0
    P = np.diag([1.0 / r, 1.0 / r, -2.0 / (far - near), 1.0])
    P[2, 3] = -(far + near) / (far - near)
    return P @ V


class SunShadow:
    """The baked sun shadow map of a :class:`~.renderer.SceneRenderer` (module docstring)."""

    def __init__(self, renderer, light):
        self.renderer = renderer
        self.light = light
        self.texture = None
        self.matrix = None
        self.bake_s = 0.0

    def bake(self) -> None:
        """Draw the casters into the depth texture and set the facade program's uniforms (on = 1)."""
        r = self.renderer
        ctx, mgl = r.ctx, r._mgl
        prog = r.prog_facade
        if not casts_shadows(self.light):
            prog["shadow_on"].value = 0.0
            return
        t0 = time.perf_counter()
        # photo: the buildings' cornices, balconies... (.photo_building_detail), whole
        casters = (r.vao_facades, r.vao_solids, *(t for t, _ in getattr(r, "building_detail_vaos", ())))
        sources = [t.source for t in casters if t is not None and t.source is not None]
        pos = [r.meshes.facades.positions, r.meshes.solids.positions]
        pos = np.concatenate([p for p in pos if len(p)]) if any(len(p) for p in pos) else np.zeros((0, 3))
        if not sources or not len(pos):
            prog["shadow_on"].value = 0.0
            return
        self.matrix = sun_matrix(pos.min(axis=0), pos.max(axis=0), self.light.sun_dir)
        depth_prog = r._keep(ctx.program(vertex_shader=DEPTH_VS, fragment_shader=DEPTH_FS))
        depth_prog["mvp"].write(self.matrix.T.astype("f4").tobytes())
        tex = r._keep(ctx.depth_texture((SHADOW_MAP_PX, SHADOW_MAP_PX)))
        tex.compare_func = "<="
        tex.filter = (mgl.LINEAR, mgl.LINEAR)
        tex.repeat_x = tex.repeat_y = False
        fb = ctx.framebuffer(depth_attachment=tex)
        fb.use()
        ctx.viewport = (0, 0, SHADOW_MAP_PX, SHADOW_MAP_PX)
        fb.clear(depth=1.0)
        ctx.enable(mgl.DEPTH_TEST)
        ctx.depth_func = "<"
        for buf, stride, _ in sources:
            va = ctx.vertex_array(depth_prog, [(buf, f"3f {stride - 12}x", "in_pos")])
            va.render(mgl.TRIANGLES)
            va.release()
        fb.release()
        self.texture = tex
        prog["sun_mvp"].write(self.matrix.T.astype("f4").tobytes())
        prog["sun_shadow"].value = SHADOW_UNIT
        prog["shadow_on"].value = 1.0
        self.bake_s = time.perf_counter() - t0

    def use(self) -> None:
        """Bind the depth texture for a frame (no-op without one)."""
        if self.texture is not None:
            self.texture.use(SHADOW_UNIT)


#: texture unit of the shadow map (signs use 0, the baked sky 1)
SHADOW_UNIT = 2
