"""Dynamic objects drawn on top of a static scene: walking figures and closure barriers.

The static :class:`~urbanarena.render.scene3d.scene.Scene` is hashed and cached;
things that change with (simulated) time -- pedestrians, road-closure barriers that
appear after a notice -- are passed to each
:meth:`~urbanarena.render.scene3d.renderer.SceneRenderer.render_view` call as a
:class:`DynamicObjects` value (``dynamic=``), meshed here with the same primitives
and lighting as the street furniture (:mod:`.meshes`, the ``PLAIN`` program of
:mod:`.shaders`). Panoramas, the ID pass and the caches are unaffected.

Geometry (local metres, x east, y north, z up; bearings compass degrees):

* :class:`Figure` -- a pedestrian standing at ``(x_m, y_m)`` facing
  ``heading_deg``: two legs (0.14 x 0.16 m, 0.80 m high), a torso
  (0.36 x 0.24 m, 0.60 m, shirt colour), arms beside it and a head (ellipsoid,
  radius 0.11 m), for the default ``height_m`` of 1.75 m (all sizes scale with
  it); 0.5 m wide overall, the collision disc of the environment's pedestrians.
* :class:`Barrier` -- a closure barrier along a polyline: a 1.0 m high, 0.1 m
  thick fence of alternating red and white 1 m panels on a dark base, as road
  works barriers are painted.
* ``placements`` -- people and vehicles of :mod:`.population` (:class:`~.population.Placement`: cars, trams,
  cyclists ...), meshed by :mod:`.population_meshes` (the continuous mode's vehicles).

Anything with a ``mesh()`` method returning :class:`~.meshes.MeshData` can be drawn (:func:`draw_dynamic`), e.g.
a node's population (:class:`~.population_draw.PopulationObjects`, whose mesh is built once for the six faces of a
panorama); :func:`draw_dynamic_ids` draws the same into the ID pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from urbanarena.render.scene3d.meshes import MeshBuilder, MeshData, box, ellipsoid

#: shirt colours of figures (index by :attr:`Figure.colour_index`)
SHIRT_PALETTE: tuple[tuple[int, int, int], ...] = (
    (200, 40, 40), (40, 90, 190), (240, 200, 40), (40, 150, 70), (120, 50, 140), (230, 120, 30),
    (30, 30, 30), (235, 235, 235),
)
TROUSERS_RGB = (44, 48, 64)
SKIN_RGB = (214, 170, 140)
BARRIER_RED = (210, 30, 30)
BARRIER_WHITE = (240, 240, 240)
BARRIER_BASE = (40, 40, 40)
BARRIER_HEIGHT_M = 1.0
BARRIER_THICKNESS_M = 0.1
BARRIER_PANEL_M = 1.0


@dataclass(frozen=True)
class Figure:
    """A walking person (module docstring): position (local metres), facing bearing, height, shirt colour."""

    x_m: float
    y_m: float
    heading_deg: float = 0.0
    height_m: float = 1.75
    colour_index: int = 0


@dataclass(frozen=True)
class Barrier:
    """A closure barrier along ``line_xy`` ``((x_m, y_m), ...)`` (at least 2 points)."""

    line_xy: tuple[tuple[float, float], ...]
    height_m: float = BARRIER_HEIGHT_M


@dataclass(frozen=True)
class DynamicObjects:
    """What changes between renders: ``figures`` and ``barriers`` (tuples)."""

    figures: tuple[Figure, ...] = ()
    barriers: tuple[Barrier, ...] = ()
    placements: tuple = ()

    def __bool__(self) -> bool:
        return bool(self.figures or self.barriers or self.placements)

    def mesh(self) -> MeshData:
        """:func:`dynamic_mesh` of these objects."""
        return dynamic_mesh(self)


def figure_mesh(mb: MeshBuilder, f: Figure) -> None:
    """Add one figure's boxes and head to ``mb`` (module docstring)."""
    k = f.height_m / 1.75
    shirt = SHIRT_PALETTE[int(f.colour_index) % len(SHIRT_PALETTE)]
    leg_h = 0.80 * k
    for a in (-0.09, 0.09):
        box(mb, f.x_m, f.y_m, f.heading_deg, a * k, 0.0, 0.14 * k, 0.16 * k, 0.0, leg_h, TROUSERS_RGB)
    torso_h = 0.60 * k
    box(mb, f.x_m, f.y_m, f.heading_deg, 0.0, 0.0, 0.36 * k, 0.24 * k, leg_h, torso_h, shirt)
    for a in (-0.215, 0.215):
        box(mb, f.x_m, f.y_m, f.heading_deg, a * k, 0.0, 0.07 * k, 0.10 * k, leg_h + 0.05 * k, 0.55 * k, shirt)
    r = 0.11 * k
    ellipsoid(mb, f.x_m, f.y_m, f.height_m - r - 0.02 * k, r, r * 1.15, SKIN_RGB, segments=8, rings=5)


def barrier_mesh(mb: MeshBuilder, b: Barrier) -> None:
    """Add one barrier's panels to ``mb`` (module docstring)."""
    pts = [tuple(map(float, p)) for p in b.line_xy]
    n_panel = 0
    base_h = 0.15
    for (x0, y0), (x1, y1) in zip(pts[:-1], pts[1:]):
        L = math.hypot(x1 - x0, y1 - y0)
        if L <= 1e-9:
            continue
        heading = math.degrees(math.atan2(x1 - x0, y1 - y0))
        n = max(1, int(math.ceil(L / BARRIER_PANEL_M - 1e-9)))
        seg = L / n
        for i in range(n):
            c = (i + 0.5) * seg
            cx, cy = x0 + (x1 - x0) * c / L, y0 + (y1 - y0) * c / L
            colour = BARRIER_RED if n_panel % 2 == 0 else BARRIER_WHITE
            n_panel += 1
            # local frame facing `heading`: the panel runs along "forward"
            box(mb, cx, cy, heading, 0.0, 0.0, BARRIER_THICKNESS_M, seg, 0.0, base_h, BARRIER_BASE)
            box(mb, cx, cy, heading, 0.0, 0.0, BARRIER_THICKNESS_M, seg, base_h, b.height_m - base_h, colour)


def dynamic_mesh(objs: DynamicObjects) -> MeshData:
    """One triangle list (positions, normals, colours) of all figures, barriers and placements (the
    placements' triangles carry feature indices 1, 2, ... in their order; figures and barriers 0)."""
    mb = MeshBuilder()
    for f in objs.figures:
        figure_mesh(mb, f)
    for b in objs.barriers:
        barrier_mesh(mb, b)
    mesh = mb.build()
    if objs.placements:
        from urbanarena.render.scene3d.meshes import concat_meshes
        from urbanarena.render.scene3d.population_meshes import placements_mesh

        more = placements_mesh(objs.placements)
        mesh = more if mesh.n_triangles == 0 else concat_meshes(mesh, more)
    return mesh


def _mesh_of(objs) -> MeshData:
    return objs.mesh() if hasattr(objs, "mesh") else dynamic_mesh(objs)


def draw_dynamic(ctx, prog, objs: DynamicObjects | Sequence | None) -> int:
    """Draw ``objs`` with the lit ``prog`` (its ``mvp``/lighting uniforms already set) into the bound
    framebuffer; returns the number of triangles drawn. Buffers live only for this call; objects with a
    ``draw(ctx, prog) -> triangles`` method draw themselves (and may keep theirs)."""
    import moderngl

    if not objs:
        return 0
    own = getattr(objs, "draw", None)  # objects that draw themselves (.population_draw: kept, culled arrays)
    if own is not None:
        return own(ctx, prog)
    mesh = _mesh_of(objs)
    if mesh.n_triangles == 0:
        return 0
    names = ("in_pos", "in_normal", "in_colour")
    fmt = " ".join("3f" if name in prog else "12x" for name in names)
    used = [name for name in names if name in prog]
    buf = ctx.buffer(mesh.interleaved(("positions", "normals", "colours")).tobytes())
    vao = ctx.vertex_array(prog, [(buf, fmt, *used)])
    try:
        vao.render(moderngl.TRIANGLES)
    finally:
        vao.release()
        buf.release()
    return mesh.n_triangles


def draw_dynamic_ids(ctx, prog, objs, first_index: int) -> int:
    """Draw ``objs`` into the bound ID framebuffer with the ID program ``prog`` (``mvp`` set): each triangle's
    feature ``k >= 1`` as index ``first_index + k`` (0 stays 0); returns the number of triangles drawn."""
    import moderngl

    if not objs:
        return 0
    mesh = _mesh_of(objs)
    if mesh.n_triangles == 0:
        return 0
    feat = np.zeros(len(mesh.positions), np.float32) if mesh.feature is None else mesh.feature.astype(np.float32)
    feat = np.where(feat > 0, feat + float(first_index), 0.0).astype(np.float32)
    pos = ctx.buffer(np.ascontiguousarray(mesh.positions, dtype=np.float32).tobytes())
    fbuf = ctx.buffer(feat.tobytes())
    vao = ctx.vertex_array(prog, [(pos, "3f", "in_pos"), (fbuf, "1f", "in_feature")])
    try:
        vao.render(moderngl.TRIANGLES)
    finally:
        vao.release()
        pos.release()
        fbuf.release()
    return mesh.n_triangles


__all__ = ["Figure", "Barrier", "DynamicObjects", "figure_mesh", "barrier_mesh", "dynamic_mesh", "draw_dynamic",
           "draw_dynamic_ids",
           "SHIRT_PALETTE", "BARRIER_HEIGHT_M", "BARRIER_THICKNESS_M"]
