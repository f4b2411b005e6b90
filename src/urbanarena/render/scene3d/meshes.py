"""Triangle meshes of a :class:`~urbanarena.render.scene3d.scene.Scene` (numpy, no GL).

The primitives (boxes, cylinders, ellipsoids, triangulation, the mesh containers) are in
:mod:`urbanarena.render.scene3d.mesh_primitives`. Everything is built as non-indexed triangle lists in the local
frame (metres, ``x`` east, ``y`` north, ``z`` up) with flat per-face normals:

* :class:`MeshData` ``ground`` — ground plane, sidewalks/footways, carriageways,
  crosswalk stripes, all at ``z = 0`` and **ordered back to front**: the
  renderer draws them in this order with the depth test set to "always", so later
  layers cover earlier ones without depth fighting.
* ``facades`` — building walls with per-vertex facade coordinates
  ``(u_m along the wall, z_m, wall length_m, building height_m)`` and a per-vertex
  ``shop`` value (``shopfront flag + 2 * wall seed``), from which the fragment shader draws window rows and
  shopfront glazing (:mod:`urbanarena.render.scene3d.shaders`).
* ``solids`` — roofs and overhang undersides (vertex colours);
* ``objects`` — street objects and sign panel bodies/posts (vertex colours; the
  renderer skips them beyond ``RenderSettings.object_distance_m``).
* ``signs`` — textured sign faces per atlas page (uv into
  :class:`SignAtlas` pages, RGB images drawn by :mod:`.fonts`).

Every vertex also carries a **feature index** (``MeshData.feature``): ``0`` for
ground and anything that belongs to no feature, else ``k`` for the ``k``-th
entry of :attr:`SceneMeshes.features` — ``("building", id)`` for a building's
walls, roof and underside, ``("poi", id)`` for a sign face and its panel body
and posts, ``("object", id)`` for a street object. The renderer's ID pass
(:mod:`urbanarena.render.scene3d.visibility`) draws these indices as flat
colours; normal renders ignore them.

Object meshes (local axes: ``forward`` = the object's facing bearing, ``right``
= 90 degrees clockwise from it):

tree: trunk cylinder + ellipsoid crown; street_lamp: pole, arm over the road,
lamp head; vending_machine: 1.0 x 0.75 x 1.85 m cabinet with a lit display and
slot; bench: seat, backrest, legs; traffic_sign: pole + plate (octagon for
``stop``, triangle for ``give_way``, disc otherwise); traffic_signals: pole +
housing with red/amber/green lamps facing the road; bus_stop: shelter (roof,
back glass, posts) + blue sign; subway_entrance: orange "M" pillar sign and a
stair enclosure; waste_basket, bollard: cylinders; anything else: a grey post.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
import shapely
from shapely.geometry import LineString, Polygon, box as sbox

from urbanarena.render.scene3d.fonts import SignStyle, render_sign_image
from urbanarena.render.scene3d.layout import SignLayout, SignPlacement, building_polygon, building_walls
from urbanarena.render.scene3d.palette import facade_colour, stable_index, stable_unit
from urbanarena.render.scene3d.scene import Scene, StreetObject
from urbanarena.render.scene3d.mesh_primitives import (  # noqa: F401  (re-exported: these lived here)
    MeshBuilder, MeshData, box, cylinder, ellipsoid, triangulate, vertical_polygon,
)
from urbanarena.render.scene3d.mesh_primitives import flat as _flat, quads_to_tris as _quads_to_tris, rgb as _rgb

# ------------------------------------------------------------------ colours
GROUND_RGB = (132, 128, 118)
SIDEWALK_RGB = (168, 165, 158)
ROAD_RGB = (72, 74, 78)
STRIPE_RGB = (236, 236, 230)
ROOF_RGB = (92, 86, 84)
TRUNK_RGB = (96, 72, 50)
POLE_RGB = (62, 64, 68)


# ------------------------------------------------------------------ ground
def ground_mesh(scene: Scene, disjoint: bool = False) -> MeshData:
    """Ground plane, sidewalks/footways, carriageways, crosswalk stripes (back-to-front order, ``z = 0``).

    ``disjoint`` (the realistic style): each layer minus the ones drawn over it, so every ground pixel is
    shaded once (the ground plane and the walking surfaces lose what the carriageways cover; the stripes
    still overlap the carriageways)."""
    mb = MeshBuilder()
    up = np.array([0.0, 0.0, 1.0])
    if scene.ground_extent is not None:
        x0, y0, x1, y1 = scene.ground_extent
    else:
        bx0, by0, bx1, by1 = scene.bounds()
        x0, y0, x1, y1 = bx0 - 500, by0 - 500, bx1 + 500, by1 + 500

    def add_layer(geom, rgb):
        t = _flat(triangulate(geom), 0.0)
        if len(t):
            mb.add(t, _rgb(rgb), normals=np.broadcast_to(up, t.shape))

    if not disjoint:
        add_layer(sbox(x0, y0, x1, y1), GROUND_RGB)
    carriage = [LineString(r.centreline).buffer(r.width_m / 2, quad_segs=4) for r in scene.roads if r.kind == "road"]
    walk = [LineString(r.centreline).buffer(r.width_m / 2 + r.sidewalk_m, quad_segs=4)
            for r in scene.roads if r.kind == "road" and r.sidewalk_m > 0]
    walk += [LineString(r.centreline).buffer(r.width_m / 2, quad_segs=4) for r in scene.roads if r.kind != "road"]
    for a in scene.paved_areas:
        poly = Polygon(a.polygon, a.holes)
        walk.append(poly if poly.is_valid else shapely.make_valid(poly))
    road_union = shapely.union_all(carriage) if carriage else None
    if disjoint:
        walk_union = shapely.union_all(walk) if walk else None
        base = sbox(x0, y0, x1, y1)
        for g in (walk_union, road_union):
            if g is not None:
                base = base.difference(g)
        add_layer(base, GROUND_RGB)
        if walk_union is not None:
            add_layer(walk_union if road_union is None else walk_union.difference(road_union), SIDEWALK_RGB)
    elif walk:
        add_layer(shapely.union_all(walk), SIDEWALK_RGB)
    if road_union is not None:
        add_layer(road_union, ROAD_RGB)
    stripes = []
    for cw in scene.crosswalks:
        a = math.radians(cw.road_bearing_deg)
        d = np.array([math.sin(a), math.cos(a)])       # along traffic
        acr = np.array([math.cos(a), -math.sin(a)])    # across the road
        s = cw.stripe_m
        n = max(1, int((cw.road_width_m - 0.4 + s) // (2 * s)))
        span = n * s + (n - 1) * s
        c = np.array([cw.x_m, cw.y_m])
        for k in range(n):
            o0 = -span / 2 + 2 * s * k
            pts = [c + acr * o0 - d * cw.length_m / 2, c + acr * (o0 + s) - d * cw.length_m / 2,
                   c + acr * (o0 + s) + d * cw.length_m / 2, c + acr * o0 + d * cw.length_m / 2]
            stripes.append(Polygon(pts))
    if stripes:
        add_layer(shapely.union_all(stripes), STRIPE_RGB)
    return mb.build()


# --------------------------------------------------------------- buildings
def building_meshes(scene: Scene, shop_buildings: set[str],
                    feature_index: Mapping[str, int] | None = None) -> tuple[MeshData, MeshData]:
    """``(facades, roofs)``: extruded walls with facade coordinates, flat roofs.

    Facade vertices carry ``(u_m, z_m, wall_length_m, height_m)``; ``shop`` is 1 on
    buildings in ``shop_buildings`` (or with ``Building.shopfront``). ``feature_index``
    maps building id -> feature index (module docstring; default: none).
    """
    fb, rb = MeshBuilder(), MeshBuilder()
    up = np.array([0.0, 0.0, 1.0])
    for b in scene.buildings:
        fb.feature = rb.feature = (feature_index or {}).get(b.id, 0)
        h = float(b.height_m)
        base = float(b.base_m)
        col = _rgb(b.colour if b.colour is not None else facade_colour(b.id))
        shop = 1.0 if (b.shopfront or b.id in shop_buildings) else 0.0
        walls = building_walls(b)
        if walls:
            p0 = np.array([w.p0 for w in walls])
            p1 = np.array([w.p1 for w in walls])
            L = np.array([w.length_m for w in walls])
            nrm = np.array([[*w.normal, 0.0] for w in walls])
            z0 = np.full(len(walls), base)
            zh = np.full(len(walls), h)
            q = np.stack([np.column_stack([p0, z0]), np.column_stack([p1, z0]),
                          np.column_stack([p1, zh]), np.column_stack([p0, zh])], axis=1)
            fq = np.stack([np.column_stack([np.zeros_like(L), z0, L, zh]), np.column_stack([L, z0, L, zh]),
                           np.column_stack([L, zh, L, zh]), np.column_stack([np.zeros_like(L), zh, L, zh])], axis=1)
            tris = _quads_to_tris(q)
            ftri = np.concatenate([fq[:, [0, 1, 2]], fq[:, [0, 2, 3]]], axis=0)
            ntri = np.repeat(np.concatenate([nrm, nrm], axis=0)[:, None, :], 3, axis=1)
            seeds = np.array([int(stable_unit(f"{b.id}/{w.index}", "wall") * (1 << 20)) for w in walls], float)
            packed = np.repeat(np.concatenate([shop + 2.0 * seeds] * 2)[:, None], 3, axis=1)
            fb.add(tris, col, normals=ntri, facade=ftri, shop=packed)
        tri2d = triangulate(building_polygon(b))
        roof = _flat(tri2d, h)
        if len(roof):
            rb.add(roof, _rgb(ROOF_RGB), normals=np.broadcast_to(up, roof.shape))
        if base > 0:  # underside of an overhang / bridge
            under = _flat(tri2d, base)
            rb.add(under, col * 0.7, normals=np.broadcast_to(-up, under.shape))
    return fb.build(), rb.build()


# ----------------------------------------------------------- street objects
def _facing(layout: SignLayout, o: StreetObject) -> float:
    if o.heading_deg is not None:
        return float(o.heading_deg)
    return layout._facing_road(o.x_m, o.y_m)


#: street-lamp head and vending-machine display colours: the night shaders key their glow on them
#: (:mod:`.shaders` ``PLAIN_FS``); the lamp head spans 4.90-5.06 m, 1.15 m out along the object's heading
LAMP_HEAD_RGB = (250, 238, 190)
DISPLAY_RGB = (235, 240, 245)
LAMP_HEAD_OUT_M, LAMP_LIGHT_Z_M = 1.15, 4.85


def object_mesh(mb: MeshBuilder, o: StreetObject, heading: float, foliage: MeshBuilder | None = None) -> None:
    """Append the mesh of one street object (see the module docstring); with ``foliage`` (the realistic
    style), tree crowns go there as leaf clusters (:func:`.realistic.tree_crowns`) instead."""
    x, y, k = o.x_m, o.y_m, o.kind
    if k == "tree":
        s = 0.8 + 0.4 * stable_unit(o.id, "tree-size")
        greens = ((70, 120, 55), (58, 105, 48), (88, 132, 60))
        cylinder(mb, x, y, 0.0, 0.16 * s, 2.4 * s, TRUNK_RGB, segments=5)
        if foliage is not None:
            from urbanarena.render.scene3d.realistic import tree_crowns

            foliage.feature = mb.feature
            tree_crowns(foliage, x, y, s, greens[stable_index(o.id, 3, "tree-col")], o.id)
            return
        ellipsoid(mb, x, y, 2.4 * s + 1.5 * s, 1.9 * s, 2.0 * s, greens[stable_index(o.id, 3, "tree-col")],
                  segments=9, rings=5)
    elif k == "street_lamp":
        cylinder(mb, x, y, 0.0, 0.08, 5.2, POLE_RGB, segments=6, top_radius=0.06)
        box(mb, x, y, heading, 0.0, 0.6, 0.08, 1.2, 5.05, 0.08, POLE_RGB)
        box(mb, x, y, heading, 0.0, 1.15, 0.3, 0.55, 4.9, 0.16, LAMP_HEAD_RGB)
    elif k == "vending_machine":
        body = ((200, 30, 40), (30, 90, 170), (230, 230, 230))[stable_index(o.id, 3, "vm")]
        box(mb, x, y, heading, 0.0, 0.0, 1.0, 0.75, 0.0, 1.85, body)
        box(mb, x, y, heading, -0.12, 0.38, 0.6, 0.02, 0.75, 0.95, DISPLAY_RGB)   # lit product display
        box(mb, x, y, heading, 0.33, 0.38, 0.18, 0.02, 0.9, 0.5, (40, 40, 45))        # pay panel
        box(mb, x, y, heading, -0.05, 0.38, 0.7, 0.03, 0.15, 0.3, (30, 30, 35))       # delivery slot
    elif k == "bench":
        wood, iron = (150, 100, 58), (45, 45, 48)
        box(mb, x, y, heading, 0.0, 0.0, 1.8, 0.45, 0.42, 0.06, wood)
        box(mb, x, y, heading, 0.0, -0.22, 1.8, 0.06, 0.55, 0.38, wood)
        for a in (-0.8, 0.8):
            box(mb, x, y, heading, a, 0.0, 0.06, 0.45, 0.0, 0.42, iron)
            box(mb, x, y, heading, a, -0.22, 0.06, 0.06, 0.42, 0.5, iron)
    elif k == "traffic_sign":
        cylinder(mb, x, y, 0.0, 0.035, 2.6, (150, 150, 150), segments=6)
        lab = (o.label or "").lower()
        if "stop" in lab:
            vertical_polygon(mb, x, y, heading, 0.05, 2.25, 0.38, 8, (200, 20, 30), rot_deg=22.5)
        elif "give" in lab or "yield" in lab:
            vertical_polygon(mb, x, y, heading, 0.05, 2.2, 0.45, 3, (230, 40, 30), rot_deg=180)
            vertical_polygon(mb, x, y, heading, 0.052, 2.2, 0.3, 3, (250, 250, 250), rot_deg=180)
        else:
            vertical_polygon(mb, x, y, heading, 0.05, 2.25, 0.35, 12, (30, 80, 180))
            vertical_polygon(mb, x, y, heading, 0.052, 2.25, 0.15, 8, (250, 250, 250))
    elif k == "traffic_signals":
        cylinder(mb, x, y, 0.0, 0.07, 3.2, POLE_RGB, segments=6)
        box(mb, x, y, heading, 0.0, 0.12, 0.34, 0.22, 2.2, 0.95, (25, 25, 25))
        for i, col in enumerate(((230, 30, 30), (240, 170, 20), (40, 200, 70))):
            vertical_polygon(mb, x, y, heading, 0.235, 2.98 - i * 0.3, 0.1, 10, col)
    elif k == "bus_stop":
        glass, frame = (150, 180, 195), (70, 75, 80)
        box(mb, x, y, heading, 0.0, 0.0, 3.2, 1.5, 2.4, 0.12, frame)            # roof
        box(mb, x, y, heading, 0.0, -0.7, 3.0, 0.05, 0.1, 2.25, glass)          # back glass
        for a in (-1.55, 1.55):
            box(mb, x, y, heading, a, -0.7, 0.08, 0.08, 0.0, 2.4, frame)
            box(mb, x, y, heading, a, 0.65, 0.08, 0.08, 0.0, 2.4, frame)
        box(mb, x, y, heading, 0.0, -0.45, 1.6, 0.35, 0.42, 0.06, (120, 90, 60))  # seat
        cylinder(mb, x + 2.0 * math.cos(math.radians(heading)), y - 2.0 * math.sin(math.radians(heading)),
                 0.0, 0.05, 2.9, (150, 150, 150), segments=6)
        box(mb, x, y, heading, 2.0, 0.0, 0.5, 0.05, 2.3, 0.6, (0, 110, 190))
    elif k == "subway_entrance":
        orange = (255, 102, 0)
        box(mb, x, y, heading, 0.0, 0.0, 2.2, 3.5, 0.0, 1.1, (120, 125, 130))    # stair enclosure
        box(mb, x, y, heading, 0.0, 0.8, 1.6, 1.8, 1.1, 0.02, (40, 40, 45))      # opening (dark)
        box(mb, x, y, heading, 1.4, 1.6, 0.25, 0.25, 0.0, 2.6, (90, 90, 95))     # pillar
        box(mb, x, y, heading, 1.4, 1.6, 0.7, 0.7, 2.6, 0.7, orange)            # orange M cube
        for a, b_, w, h in ((-0.2, 0.36, 0.08, 0.5), (0.2, 0.36, 0.08, 0.5), (0.0, 0.36, 0.08, 0.3)):
            box(mb, x, y, heading, 1.4 + a, 1.6 + b_, w, 0.02, 2.7 if h == 0.5 else 2.9, h, (255, 255, 255))
    elif k == "waste_basket":
        cylinder(mb, x, y, 0.0, 0.24, 0.9, (40, 80, 55), segments=10)
    elif k == "bollard":
        cylinder(mb, x, y, 0.0, 0.1, 0.9, (60, 60, 62), segments=8)
    else:
        cylinder(mb, x, y, 0.0, 0.06, 1.5, (128, 128, 128), segments=6)
        box(mb, x, y, heading, 0.0, 0.0, 0.25, 0.25, 1.5, 0.25, (128, 128, 128))


# --------------------------------------------------------------------- signs
@dataclass
class SignAtlas:
    """RGB pages (``(H, W, 3)`` uint8) holding sign face images; ``rects[poi_id] = (page, x, y, w, h)``."""

    pages: list[np.ndarray] = field(default_factory=list)
    rects: dict[str, tuple[int, int, int, int, int]] = field(default_factory=dict)


def build_sign_atlas(signs: list[SignPlacement], px_per_m: float = 128.0, max_px: int = 1536,
                     page_size: int = 4096, pad: int = 8) -> SignAtlas:
    """Rasterise every sign face (:func:`render_sign_image`) and shelf-pack them into atlas pages.

    Each image is ``round(width_m * ppm) x round(height_m * ppm)`` pixels with
    ``ppm = min(px_per_m, max_px / width_m)`` and surrounded by ``pad`` pixels
    of its own edge colour (no colour bleeding under mipmapping).
    """
    imgs = []
    for s in signs:
        ppm = min(px_per_m, max_px / max(s.width_m, 1e-6), max_px / max(s.height_m, 1e-6))
        w = max(4, int(round(s.width_m * ppm)))
        h = max(4, int(round(s.height_m * ppm)))
        if s.kind == "panel" and not s.family:  # the flat style's sign
            img = render_sign_image(s.lines, s.cap_height_m * ppm, SignStyle(s.background, s.text_colour),
                                    s.width_axis, size_px=(w, h))
        else:
            from urbanarena.render.scene3d.signage import render_styled_sign

            img = render_styled_sign(s, s.cap_height_m * ppm, (w, h))
        imgs.append((s.poi_id, np.pad(img, ((pad, pad), (pad, pad), (0, 0)), mode="edge")))
    atlas = SignAtlas()
    order = sorted(range(len(imgs)), key=lambda i: (-imgs[i][1].shape[0], imgs[i][0]))
    page = -1
    x = y = shelf_h = 0
    heights: list[int] = []
    placed: list[tuple[int, int, int, np.ndarray, str]] = []
    for i in order:
        pid, im = imgs[i]
        h, w = im.shape[:2]
        if page < 0 or x + w > page_size:
            x, y, shelf_h = 0, y + shelf_h, 0
        if page < 0 or y + h > page_size:
            page += 1
            heights.append(0)
            x = y = shelf_h = 0
        placed.append((page, x, y, im, pid))
        heights[page] = max(heights[page], y + h)
        x += w
        shelf_h = max(shelf_h, h)
    for p, hgt in enumerate(heights):
        hh = 1 << max(4, int(math.ceil(math.log2(max(hgt, 16)))))
        atlas.pages.append(np.zeros((min(hh, page_size), page_size, 3), np.uint8))
    for p, x, y, im, pid in placed:
        h, w = im.shape[:2]
        atlas.pages[p][y:y + h, x:x + w] = im
        atlas.rects[pid] = (p, x + pad, y + pad, w - 2 * pad, h - 2 * pad)
    return atlas


def sign_meshes(signs: list[SignPlacement], atlas: SignAtlas, solids: MeshBuilder,
                panel_depth_m: float = 0.12, feature_index: Mapping[str, int] | None = None) -> list[MeshData]:
    """Textured sign faces, one :class:`MeshData` per atlas page; panel bodies and posts go to ``solids``.
    ``feature_index`` maps POI id -> feature index (module docstring; default: none)."""
    per_page = [MeshBuilder() for _ in atlas.pages]
    keep = solids.feature
    for s in signs:
        p, x, y, w, h = atlas.rects[s.poi_id]
        per_page[p].feature = solids.feature = (feature_index or {}).get(s.poi_id, 0)
        ph, pw = atlas.pages[p].shape[:2]
        u0, u1 = x / pw, (x + w) / pw
        v0, v1 = y / ph, (y + h) / ph  # v0 = top row of the image
        L, R = np.array([*s.left, 0.0]), np.array([*s.right, 0.0])
        zb, zt = s.z_bottom_m, s.z_top_m
        quad = np.array([L + [0, 0, zb], R + [0, 0, zb], R + [0, 0, zt], L + [0, 0, zt]])
        a = math.radians(s.facing_deg)
        n = np.array([math.sin(a), math.cos(a), 0.0])
        uvq = np.array([[u0, v1], [u1, v1], [u1, v0], [u0, v0]])
        tris = np.stack([quad[[0, 1, 2]], quad[[0, 2, 3]]])
        uvs = np.stack([uvq[[0, 1, 2]], uvq[[0, 2, 3]]])
        if s.kind == "window":  # realistic window lettering: u + 2 tells its program the glass is see-through
            uvs = uvs + np.array([2.0, 0.0])
        per_page[p].add(tris, np.ones(3, np.float32), normals=np.broadcast_to(n, tris.shape), uv=uvs)
        # panel body behind the face (sides, top, bottom, back)
        cx, cy, _ = s.centre
        depth = panel_depth_m if not s.freestanding else 0.08
        if s.kind != "panel":
            from urbanarena.render.scene3d.signage import body_depth_m

            depth = body_depth_m(s)
        if s.kind == "blade":  # two-faced: the same face on the back, mirrored so it reads from that side
            back = quad - n * (depth + 0.01)
            buv = np.array([[u1, v1], [u0, v1], [u0, v0], [u1, v0]])
            per_page[p].add(np.stack([back[[0, 2, 1]], back[[0, 3, 2]]]), np.ones(3, np.float32),
                            normals=np.broadcast_to(-n, tris.shape), uv=np.stack([buv[[0, 2, 1]], buv[[0, 3, 2]]]))
        body_col = tuple(int(c * 0.6) for c in s.background)
        if depth is not None:
            bx, by = cx - n[0] * (depth / 2 + 0.005), cy - n[1] * (depth / 2 + 0.005)
            box(solids, bx, by, s.facing_deg, 0.0, 0.0, s.width_m, depth, zb, zt - zb, body_col)
        if s.kind == "blade":  # bracket from the wall over the blade's top edge
            box(solids, cx, cy, s.facing_deg, 0.0, 0.0, s.width_m + 0.3, 0.04, zt, 0.05, POLE_RGB)
        if s.freestanding:
            for side in (-1, 1):
                px_ = cx + side * (s.right[0] - s.left[0]) * 0.4 - n[0] * depth
                py_ = cy + side * (s.right[1] - s.left[1]) * 0.4 - n[1] * depth
                cylinder(solids, px_, py_, 0.0, 0.05, zb + 0.05, POLE_RGB, segments=6)
    solids.feature = keep
    return [mb.build() for mb in per_page]


@dataclass
class SceneMeshes:
    """All meshes of a scene plus the sign layout and atlas they were built from.

    ``features[k - 1]`` is ``(kind, id)`` of feature index ``k`` (``kind`` in ``building``,
    ``poi``, ``object``; module docstring): buildings in scene order, then POIs, then objects.
    """

    ground: MeshData
    facades: MeshData
    solids: MeshData
    objects: MeshData
    signs: list[MeshData]
    atlas: SignAtlas
    placements: list[SignPlacement]
    features: tuple[tuple[str, str], ...] = ()
    foliage: MeshData | None = None   # realistic style: alpha-tested tree crowns
    shade: MeshData | None = None     # realistic style: baked ground shade (vertex colour = factor)
    bake: dict | None = None          # realistic style: {"bake_s", "triangles"} of the shade

    @property
    def n_triangles(self) -> int:
        return (self.ground.n_triangles + self.facades.n_triangles + self.solids.n_triangles
                + self.objects.n_triangles + sum(m.n_triangles for m in self.signs)
                + sum(m.n_triangles for m in (self.foliage, self.shade) if m is not None))


def concat_meshes(a: MeshData, b: MeshData) -> MeshData:
    """``a`` then ``b`` (fields both have; ``b`` empty gives ``a``)."""
    if b.n_triangles == 0:
        return a

    def cat(x, y):
        return None if x is None or y is None else np.concatenate([x, y])

    return MeshData(np.concatenate([a.positions, b.positions]), np.concatenate([a.normals, b.normals]),
                    np.concatenate([a.colours, b.colours]), cat(a.facade, b.facade), cat(a.shop, b.shop),
                    cat(a.uv, b.uv), cat(a.feature, b.feature))


def build_scene_meshes(scene: Scene, layout: SignLayout | None = None, px_per_m: float = 128.0,
                       style: str = "flat", light=None, floor_h_m: float = 3.2,
                       ground_h_m: float = 3.6) -> SceneMeshes:
    """Build every mesh of ``scene`` (deterministic: same scene, same arrays).

    ``style="realistic"`` adds :mod:`.realistic`'s geometry (cornices, awnings, balconies, pitched roofs,
    kerbs, markings, tram tracks, land-use planting, leaf clusters; the facades' OSM look packed for its
    program) and, with ``light`` (:class:`~.conditions.Lighting` of the condition), the baked shade.
    ``floor_h_m``/``ground_h_m``: the renderer's storey heights (``RenderSettings``), which balconies follow."""
    layout = layout or SignLayout(scene)
    placements = layout.place()
    shop = {s.building_id for s in placements if s.building_id is not None}
    if style == "realistic":
        from urbanarena.render.scene3d.signage import restyle_signs

        placements = restyle_signs(placements, layout)
    features = feature_table(scene)
    index = {kind: {} for kind in FEATURE_KINDS}
    for k, (kind, fid) in enumerate(features, 1):
        index[kind][fid] = k
    facades, roofs = building_meshes(scene, shop, index["building"])
    objects = MeshBuilder()
    real = style == "realistic"
    foliage = MeshBuilder() if real else None
    for o in scene.objects:
        objects.feature = index["object"][o.id]
        object_mesh(objects, o, _facing(layout, o), foliage)
    objects.feature = 0
    atlas = build_sign_atlas(placements, px_per_m=px_per_m)
    signs = sign_meshes(placements, atlas, objects, feature_index=index["poi"])
    ground = ground_mesh(scene, disjoint=real)
    shade = bake = None
    if real:
        from urbanarena.render.scene3d import realistic as R

        R.cornices_and_awnings(objects, scene, placements, shop, index["building"])
        from urbanarena.render.scene3d import building_look as BL

        BL.pack_facade_look(facades, scene, features, ground_h_m)
        BL.balconies(objects, scene, index["building"], floor_h_m, ground_h_m)
        pitched = MeshBuilder()
        BL.pitched_roofs(pitched, scene, index["building"])
        roofs = concat_meshes(roofs, pitched.build())
        R.kerb_faces(objects, scene)
        extra = MeshBuilder()
        up = np.array([0.0, 0.0, 1.0])
        for geom, rgb in R.street_layers(scene):
            t = _flat(triangulate(geom), 0.0)
            if len(t):
                extra.add(t, _rgb(rgb), normals=np.broadcast_to(up, t.shape))
        ground = concat_meshes(ground, extra.build())
        if light is not None:
            shade, bake = R.shade_mesh(scene, light)
    return SceneMeshes(ground, facades, roofs, objects.build(), signs, atlas, placements, features,
                       foliage=foliage.build() if foliage is not None else None, shade=shade, bake=bake)


#: Kinds of feature the ID pass tells apart (:attr:`SceneMeshes.features`).
FEATURE_KINDS = ("building", "poi", "object")


def feature_table(scene: Scene) -> tuple[tuple[str, str], ...]:
    """``((kind, id), ...)`` of every feature of ``scene``: feature index ``k`` is entry ``k - 1``
    (buildings in scene order, then POIs, then street objects; index 0 = no feature)."""
    return (tuple(("building", b.id) for b in scene.buildings) + tuple(("poi", p.id) for p in scene.pois)
            + tuple(("object", o.id) for o in scene.objects))
