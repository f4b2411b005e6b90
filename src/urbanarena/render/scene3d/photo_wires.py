"""Tram overhead wires and their poles in the ``photo`` style (issue 24: the street photos' "power lines"; a
city with trams, as Helsinki's centre, has a web of wires over its streets that our views lacked).

Geometry (metres, the scene's local frame; ours, from the usual look of urban tram lines, not measured):

* **supports** every :data:`SPAN_M` along each tram track (``Scene.rails``), from :data:`SPAN_M` / 2 on; a
  support whose span would lie within :data:`MERGE_M` of one already placed is dropped (the two tracks of a
  street share their spans);
* **poles**: on both kerbs of the nearest carriageway within :data:`ROAD_SEARCH_M` (its centreline's normal
  at the nearest point, ``width_m / 2 +`` :data:`KERB_OUT_M` out), else :data:`TRACK_SIDE_M` either side of the
  track; an anchor within :data:`TRACK_CLEAR_M` of a track or inside a carriageway moves outwards in steps of
  :data:`PUSH_STEP_M` (at most :data:`PUSH_MAX_M`; a span that cannot be anchored so is dropped); a pole that
  falls inside a building is not drawn (the span is anchored in its wall), poles closer than
  :data:`POLE_MERGE_M` are one; each a tapered 8-sided steel pole, :data:`POLE_H_M` high, in
  :data:`POLE_RGB`;
* **span wire** between the two anchors at :data:`SPAN_Z_M`, sagging :data:`SPAN_SAG_M` at its middle
  (parabola, :data:`SPAN_PIECES` straight pieces);
* **contact wire** :data:`CONTACT_Z_M` above each track, straight from support to support, staggered
  ``±`` :data:`STAGGER_M` sideways at alternate supports (as a pantograph's wear is spread).

The wires are thinner than a pixel beyond a few metres, so they are drawn as GL lines whose opacity is the
wire's width in pixels at that depth, ``clamp(diameter_m f_px / w, 0, 1)`` (``w`` the fragment's view depth,
``f_px`` the focal length in pixels): coverage as a photo's pixel would average it, fading with distance;
blended over what is already drawn, depth-tested, writing no depth (:class:`WirePass`). The poles are solid
street objects (``meshes.objects``; feature 0: no task's feature).
"""

from __future__ import annotations

import math

import numpy as np

#: bumped when the wires' geometry or drawing changes pixels (the photo style's render identity)
WIRES_VERSION = "photo-wires-1"
#: set False to draw no wires (the tests compare photo pixels with and without)
ENABLED = True
SPAN_M = 32.0
MERGE_M = 14.0
ROAD_SEARCH_M = 9.0
KERB_OUT_M = 0.6
TRACK_SIDE_M = 3.2
POLE_MERGE_M = 2.5
TRACK_CLEAR_M = 2.2
PUSH_STEP_M = 0.5
PUSH_MAX_M = 6.0
POLE_H_M = 7.4
POLE_R_M = (0.13, 0.08)   # foot, top
POLE_RGB = (0.27, 0.29, 0.28)
SPAN_Z_M = 6.6
SPAN_SAG_M = 0.35
SPAN_PIECES = 8
CONTACT_Z_M = 5.8
STAGGER_M = 0.2
#: wire diameters (m): the contact wire, the span wires
CONTACT_D_M = 0.014
SPAN_D_M = 0.010
WIRE_RGB = (0.06, 0.06, 0.065)


def _carriageways(scene):
    from shapely.geometry import LineString
    from shapely.strtree import STRtree

    roads = [r for r in scene.roads if r.kind == "road"]
    lines = [LineString(r.centreline) for r in roads]
    return roads, lines, (STRtree(lines) if lines else None)


def plan_wires(scene) -> dict:
    """The wires of ``scene`` (module docstring) as arrays: ``contact`` ``(N, 2, 3)`` and ``span`` ``(M, 2, 3)``
    line segments (metres), ``poles`` ``(K, 2)`` pole feet; all empty without tram tracks."""
    from shapely.geometry import Point
    from shapely.strtree import STRtree

    from urbanarena.render.scene3d.photo_placement import line_normal_at, line_samples

    contact, span, poles, mids = [], [], [], []
    if not scene.rails:
        return {"contact": np.zeros((0, 2, 3)), "span": np.zeros((0, 2, 3)), "poles": np.zeros((0, 2))}
    roads, lines, tree = _carriageways(scene)
    from shapely.geometry import Polygon

    footprints = [Polygon(b.footprint) for b in scene.buildings]
    btree = STRtree(footprints) if footprints else None
    from shapely.geometry import LineString

    tracks = [LineString(r.centreline) for r in scene.rails]
    ttree = STRtree(tracks)
    lanes = [ln.buffer(r.width_m / 2, cap_style=2) for r, ln in zip(roads, lines)]

    def blocked(q) -> bool:
        pt = Point(*q)
        if any(tracks[int(i)].distance(pt) < TRACK_CLEAR_M for i in ttree.query(pt.buffer(TRACK_CLEAR_M))):
            return True
        return tree is not None and any(lanes[int(i)].contains(pt) for i in tree.query(pt.buffer(ROAD_SEARCH_M)))

    def anchor(e, mid):
        out = np.asarray(e, float) - mid
        out = out / max(np.hypot(*out), 1e-9)
        for k in range(int(PUSH_MAX_M / PUSH_STEP_M) + 1):
            q = np.asarray(e, float) + k * PUSH_STEP_M * out
            if not blocked(q):
                return q
        return None
    for rail in scene.rails:
        sup = line_samples(rail.centreline, SPAN_M, 0.0, 0.0)
        if len(sup) < 2:
            continue
        last = np.asarray(rail.centreline[-1], float)
        pts = [tuple(p[:2]) for p in sup]
        if np.hypot(*(last - np.asarray(pts[-1]))) > 1.0:
            pts.append(tuple(last))
        for k in range(len(pts) - 1):   # the contact wire, staggered
            a, b = np.array(pts[k]), np.array(pts[k + 1])
            d = b - a
            n = np.array([-d[1], d[0]]) / max(np.hypot(*d), 1e-9)
            sa = STAGGER_M if k % 2 == 0 else -STAGGER_M
            contact.append([[*(a + sa * n), CONTACT_Z_M], [*(b - sa * n), CONTACT_Z_M]])
        for x, y, bearing, s in sup:
            if s < SPAN_M / 2 - 1e-9:
                continue
            p = Point(x, y)
            if any(math.hypot(x - mx, y - my) < MERGE_M for mx, my in mids):
                continue
            ends = None
            if tree is not None:
                near = tree.query(p.buffer(ROAD_SEARCH_M))
                if len(near):
                    j = min(near, key=lambda i: lines[int(i)].distance(p))
                    if lines[int(j)].distance(p) <= ROAD_SEARCH_M:
                        c, nrm = line_normal_at(lines[int(j)], p)
                        off = roads[int(j)].width_m / 2 + KERB_OUT_M
                        ends = (c + off * nrm, c - off * nrm)
            if ends is None:
                nrm = np.array([-math.sin(bearing), math.cos(bearing)])   # the track's own left
                ends = (np.array([x, y]) + TRACK_SIDE_M * nrm, np.array([x, y]) - TRACK_SIDE_M * nrm)
            centre = 0.5 * (ends[0] + ends[1])
            e0, e1 = anchor(ends[0], centre), anchor(ends[1], centre)
            if e0 is None or e1 is None:
                continue
            ends = (e0, e1)
            mids.append((x, y))
            t = np.linspace(0.0, 1.0, SPAN_PIECES + 1)
            xy = e0[None, :] + t[:, None] * (e1 - e0)[None, :]
            z = SPAN_Z_M - SPAN_SAG_M * 4.0 * t * (1.0 - t)
            chain = np.column_stack([xy, z])
            span.extend(np.stack([chain[:-1], chain[1:]], axis=1).tolist())
            for e in ends:
                inside = btree is not None and any(footprints[int(i)].contains(Point(*e))
                                                   for i in btree.query(Point(*e)))
                if not inside and all(math.hypot(e[0] - q[0], e[1] - q[1]) >= POLE_MERGE_M for q in poles):
                    poles.append((float(e[0]), float(e[1])))
    return {"contact": np.asarray(contact, np.float64).reshape(-1, 2, 3),
            "span": np.asarray(span, np.float64).reshape(-1, 2, 3),
            "poles": np.asarray(poles, np.float64).reshape(-1, 2)}


def pole_mesh(poles: np.ndarray):
    """The poles as a :class:`~.mesh_primitives.MeshData` (feature 0), tapered 8-sided cylinders."""
    from urbanarena.render.scene3d.mesh_primitives import MeshBuilder, cylinder

    mb = MeshBuilder()
    for x, y in np.asarray(poles, float).reshape(-1, 2):
        cylinder(mb, float(x), float(y), 0.0, POLE_R_M[0], POLE_H_M, POLE_RGB, segments=8, top_radius=POLE_R_M[1])
    return mb.build()


def with_poles(meshes, plan: dict):
    """``meshes`` with the poles of ``plan`` (:func:`plan_wires`) appended to ``objects``."""
    from dataclasses import replace

    from urbanarena.render.scene3d.meshes import concat_meshes

    if not len(plan["poles"]):
        return meshes
    poles = pole_mesh(plan["poles"])
    objects = meshes.objects
    if objects.feature is not None and poles.feature is None:
        poles = replace(poles, feature=np.zeros(len(poles.positions), np.float32))
    return replace(meshes, objects=concat_meshes(objects, poles))


WIRE_VS = """
#version 330
uniform mat4 mvp;
in vec3 in_pos;
in float in_d;
out float v_d;
out float v_w;
void main() {
    gl_Position = mvp * vec4(in_pos, 1.0);
    v_w = gl_Position.w;
    v_d = in_d;
}
"""

WIRE_FS = """
#version 330
uniform float f_px;
uniform vec3 wire_rgb;
in float v_d;
in float v_w;
out vec4 f_colour;
void main() {
    float a = clamp(v_d * f_px / max(v_w, 0.05), 0.0, 1.0);
    f_colour = vec4(wire_rgb, a);
}
"""


def wire_vertices(plan: dict) -> np.ndarray:
    """``(2 (N + M), 4)`` float32 line vertices ``(x, y, z, diameter_m)``: the contact wires, then the spans."""
    out = []
    for segs, d in ((plan["contact"], CONTACT_D_M), (plan["span"], SPAN_D_M)):
        v = np.asarray(segs, np.float64).reshape(-1, 3)
        out.append(np.column_stack([v, np.full(len(v), d)]))
    return np.concatenate(out).astype(np.float32) if out else np.zeros((0, 4), np.float32)


class WirePass:
    """The wires of one renderer as GL lines (module docstring); :meth:`draw` after the opaque scene."""

    def __init__(self, renderer, plan: dict):
        ctx = renderer.ctx
        self.ctx, self._mgl = ctx, renderer._mgl
        verts = wire_vertices(plan)
        self.n = len(verts)
        self.prog = renderer._keep(ctx.program(vertex_shader=WIRE_VS, fragment_shader=WIRE_FS))
        self.prog["wire_rgb"].value = WIRE_RGB
        self.vao = None
        if self.n:
            buf = renderer._keep(ctx.buffer(verts.tobytes()))
            self.vao = renderer._keep(ctx.vertex_array(self.prog, [(buf, "3f 1f", "in_pos", "in_d")]))

    def draw(self, fbo, mvp_bytes: bytes, projection: np.ndarray, height: int) -> None:
        """Blend the wires into ``fbo`` (depth-tested, no depth writes); ``projection`` the 4 x 4 matrix of
        the view (its ``[1, 1]`` times half the height is the focal length in pixels)."""
        if self.vao is None:
            return
        mgl = self._mgl
        self.prog["mvp"].write(mvp_bytes)
        self.prog["f_px"].value = float(projection[1, 1]) * height / 2.0
        self.ctx.enable(mgl.BLEND)
        self.ctx.blend_func = mgl.SRC_ALPHA, mgl.ONE_MINUS_SRC_ALPHA
        fbo.depth_mask = False
        self.ctx.depth_func = "<"
        self.vao.render(mgl.LINES)
        fbo.depth_mask = True
        self.ctx.disable(mgl.BLEND)
