"""Geometry the ``realistic`` style adds to a scene's meshes (:mod:`.styles`), built once per scene and condition.

All in the scene's local frame (metres, ``z`` up), deterministic (seeded by ids through :mod:`.palette`):

* **cornices**: a 0.3 m deep, 0.3 m tall moulding along every wall of buildings at least 7 m tall,
  0.15 m under the roof line (front, underside and top faces; the building's feature index);
* **awnings**: over shopfront walls that carry no sign, and over :data:`SIGN_AWNING_SHARE` of those that carry
  one (not a blade sign; from near, the canopy then hides the lower part of the sign above it), on half of
  them (seeded), a canopy 1.1 m deep
  sloping from 2.9 m at the wall to 2.45 m, with a 0.2 m valance; plain or striped in one of six colours;
* **kerbs**: a 0.12 m granite face where a carriageway meets a sidewalk, plus a 0.25 m kerb band on the
  ground (:data:`KERB_RGB`);
* **markings**: dashed centre lines (3 m dashes, 6 m gaps, 0.12 m wide) on carriageways at least 6 m wide,
  not on tram track beds;
* **land cover** (:func:`land_layers`): the scene's planted areas (:class:`~.scene.LandArea`) minus every street
  and walking surface, as ground layers of their own material (lawn, park, shrub bed);
* **tram tracks** (:func:`tram_layers`): per :class:`~.scene.RailLine` a track bed, two rail heads
  :data:`GAUGE_M` apart and their grooves, as ground layers;
* **foliage**: tree crowns as three overlapping ellipsoids (drawn by the alpha-tested foliage program);
* **baked shade** (:func:`shade_mesh`): ground shadows of buildings and tree crowns for the condition's sun
  (each wall swept along the sun's ground direction by ``height / tan(elevation)``, unioned) and a contact
  occlusion band 0.8 m around every building. The shadow factor is the share of the light a horizontal
  surface keeps without the sun, ``E_ambient / (E_ambient + E_sun sin e)`` from :func:`.conditions.lighting`;
  the band keeps 0.8; a tree crown's shadow (three lobes) takes away :data:`TREE_SHADOW_SHARE` of what a
  building's does. Drawn as a multiplying layer over the ground. Walls get their cast shadows from the sun
  shadow map (:mod:`.sun_shadow`); objects are not shadowed.

Buildings' looks from OSM tags (roofs, balconies, the packed facade attribute) are in :mod:`.building_look`.

Layers over the ground and extra solids go to ``objects`` (drawn within ``object_distance_m``: the level of
detail of the style), markings and kerb bands to the ground (back-to-front order kept: they come last).
"""

from __future__ import annotations

import math
import time

import numpy as np
import shapely
from shapely.affinity import translate
from shapely.geometry import LineString, Polygon
from shapely.ops import substring

from urbanarena.render.scene3d.layout import SignPlacement, building_polygon, building_walls
from urbanarena.render.scene3d.palette import facade_colour, stable_index, stable_unit
from urbanarena.render.scene3d.mesh_primitives import quad_tris as _quad_tris, rgb as _rgb
from urbanarena.render.scene3d.scene import Scene

KERB_RGB = (186, 184, 178)
STRIPE_RGB = (236, 236, 230)
#: ground layer colours of the realistic style's extra materials (keys of realistic_shaders.GROUND_MATERIALS)
TRACK_BED_RGB, RAIL_RGB, GROOVE_RGB = (120, 118, 112), (150, 152, 156), (40, 40, 42)
GRASS_RGB, PARK_RGB, PLANTING_RGB = (80, 110, 50), (82, 112, 52), (70, 84, 40)
LAND_RGB = {"grass": GRASS_RGB, "park": PARK_RGB, "planting": PLANTING_RGB}
#: tram track (ours): rails GAUGE_M apart (Helsinki's metre gauge), heads 0.07 m wide with a 0.04 m groove
#: on the inside, on a track bed 2.4 m wide
GAUGE_M, RAIL_HEAD_M, GROOVE_M, TRACK_BED_M = 1.0, 0.07, 0.04, 2.4
AWNING_RGB = ((40, 80, 55), (120, 30, 40), (30, 45, 90), (200, 185, 150), (70, 70, 72), (170, 90, 40))
CORNICE_MIN_H_M = 7.0
#: share of walls with signs (but no blade sign) that get an awning anyway (partly hiding signs, ours)
SIGN_AWNING_SHARE = 0.3
CONTACT_BAND_M, CONTACT_K = 0.8, 0.8
#: share of the sun a tree crown's shadow takes away (ours: light passes between the leaves)
TREE_SHADOW_SHARE = 0.55


def cornices_and_awnings(mb, scene: Scene, placements: list[SignPlacement], shop_buildings: set[str],
                         feature_index: dict[str, int]) -> None:
    """Append cornices and awnings (module docstring) to the :class:`~.meshes.MeshBuilder` ``mb``."""
    signed = {(s.building_id, s.wall_index) for s in placements if s.building_id is not None}
    blades = {(s.building_id, s.wall_index) for s in placements if s.building_id is not None and s.kind == "blade"}
    # a share of signed walls gets an awning too: seen from near, it hides the lower part of the sign above it
    signed = {k for k in signed if k in blades or stable_unit(f"{k[0]}/{k[1]}", "awning-under-sign") >= SIGN_AWNING_SHARE}
    keep = mb.feature
    for b in scene.buildings:
        mb.feature = feature_index.get(b.id, 0)
        col = _rgb(b.colour if b.colour is not None else facade_colour(b.id))
        shop = b.shopfront or b.id in shop_buildings
        H = float(b.height_m)
        for w in building_walls(b):
            L = w.length_m
            if L < 1.5:
                continue
            p0, p1 = np.array(w.p0), np.array(w.p1)
            n = np.array(w.normal)
            if H >= CORNICE_MIN_H_M and b.base_m == 0:
                z0, z1, d = H - 0.45, H - 0.15, 0.3
                a0, a1 = p0 + n * d, p1 + n * d
                front = [[*a0, z0], [*a1, z0], [*a1, z1], [*a0, z1]]
                under = [[*p0, z0], [*p1, z0], [*a1, z0], [*a0, z0]]
                top = [[*a0, z1], [*a1, z1], [*p1, z1], [*p0, z1]]
                mb.add(_quad_tris(front), col * 1.08, normals=np.broadcast_to([*n, 0.0], (6, 3)))
                mb.add(_quad_tris(under), col * 0.7, normals=np.broadcast_to([0.0, 0.0, -1.0], (6, 3)))
                mb.add(_quad_tris(top), col * 0.9, normals=np.broadcast_to([0.0, 0.0, 1.0], (6, 3)))
            if (shop and H > 4.2 and L >= 3.0 and (b.id, w.index) not in signed
                    and stable_unit(f"{b.id}/{w.index}", "awning") < 0.5):
                e = (p1 - p0) / L
                span = min(L - 1.2, 8.0)
                c0 = p0 + e * (L - span) / 2
                colour = AWNING_RGB[stable_index(f"{b.id}/{w.index}", len(AWNING_RGB), "awning-col")]
                striped = stable_unit(f"{b.id}/{w.index}", "awning-stripes") < 0.35
                k = max(1, int(span / 0.5)) if striped else 1
                zt, zb, depth = 2.9, 2.45, 1.1
                slope_n = np.array([*(n * (zt - zb)), depth])
                slope_n /= np.linalg.norm(slope_n)
                for i in range(k):
                    s0, s1 = c0 + e * span * i / k, c0 + e * span * (i + 1) / k
                    rgb = _rgb(colour) if (i % 2 == 0 or not striped) else _rgb((235, 232, 222))
                    canopy = [[*s0, zt], [*s1, zt], [*(s1 + n * depth), zb], [*(s0 + n * depth), zb]]
                    mb.add(_quad_tris(canopy), rgb, normals=np.broadcast_to(slope_n, (6, 3)))
                    val = [[*(s0 + n * depth), zb - 0.2], [*(s1 + n * depth), zb - 0.2],
                           [*(s1 + n * depth), zb], [*(s0 + n * depth), zb]]
                    mb.add(_quad_tris(val), rgb * 0.9, normals=np.broadcast_to([*n, 0.0], (6, 3)))
    mb.feature = keep


def _surfaces(scene: Scene):
    carriage = [LineString(r.centreline).buffer(r.width_m / 2, quad_segs=4) for r in scene.roads if r.kind == "road"]
    walk = [LineString(r.centreline).buffer(r.width_m / 2 + r.sidewalk_m, quad_segs=4)
            for r in scene.roads if r.kind == "road" and r.sidewalk_m > 0]
    road = shapely.union_all(carriage) if carriage else None
    walk_u = shapely.union_all(walk) if walk else None
    return road, walk_u


def _walk_all(scene: Scene):
    parts = [LineString(r.centreline).buffer(r.width_m / 2 + r.sidewalk_m, quad_segs=4) for r in scene.roads]
    for a in scene.paved_areas:
        poly = Polygon(a.polygon, a.holes)
        parts.append(poly if poly.is_valid else shapely.make_valid(poly))
    return shapely.union_all(parts) if parts else None


def land_layers(scene: Scene) -> list[tuple[object, tuple[int, int, int]]]:
    """Planted land cover (:class:`~.scene.LandArea`) minus every street and walking surface, by kind."""
    if not scene.land_areas:
        return []
    paved = _walk_all(scene)
    out = []
    for kind in ("grass", "park", "planting"):
        polys = []
        for a in scene.land_areas:
            if a.kind == kind:
                p = Polygon(a.polygon, a.holes)
                polys.append(p if p.is_valid else shapely.make_valid(p))
        if not polys:
            continue
        g = shapely.union_all(polys)
        if paved is not None:
            g = g.difference(paved)
        if not g.is_empty:
            out.append((g, LAND_RGB[kind]))
    return out


def tram_layers(scene: Scene) -> list[tuple[object, tuple[int, int, int]]]:
    """Tram track beds, then rail grooves, then rail heads (:data:`GAUGE_M`), from ``scene.rails``."""
    if not scene.rails:
        return []
    lines = [LineString(r.centreline) for r in scene.rails]
    bed = shapely.union_all([ln.buffer(TRACK_BED_M / 2, cap_style="flat", quad_segs=2) for ln in lines])
    heads, grooves = [], []
    for ln in lines:
        for side in (-1.0, 1.0):
            off = ln.offset_curve(side * GAUGE_M / 2, quad_segs=2, join_style="round")
            if off.is_empty:
                continue
            heads.append(off.buffer(RAIL_HEAD_M / 2, cap_style="flat", quad_segs=1))
            g = ln.offset_curve(side * (GAUGE_M / 2 - (RAIL_HEAD_M + GROOVE_M) / 2), quad_segs=2, join_style="round")
            if not g.is_empty:
                grooves.append(g.buffer(GROOVE_M / 2, cap_style="flat", quad_segs=1))
    out = [(bed, TRACK_BED_RGB)]
    if grooves:
        out.append((shapely.union_all(grooves), GROOVE_RGB))
    if heads:
        out.append((shapely.union_all(heads), RAIL_RGB))
    return out


def street_layers(scene: Scene) -> list[tuple[object, tuple[int, int, int]]]:
    """Ground layers drawn over the flat style's ground, in order: planted land cover, kerb bands, tram
    tracks (:func:`tram_layers`), then centre-line dashes (not on track beds)."""
    road, walk = _surfaces(scene)
    layers = land_layers(scene)
    if road is not None and walk is not None:
        band = road.boundary.buffer(0.125, cap_style="flat").intersection(walk)
        if not band.is_empty:
            layers.append((band, KERB_RGB))
    tram = tram_layers(scene)
    layers += tram
    dashes = []
    for r in scene.roads:
        if r.kind != "road" or r.width_m < 6.0:
            continue
        line = LineString(r.centreline)
        s = 1.5
        while s + 3.0 <= line.length - 1.0:
            dashes.append(substring(line, s, s + 3.0).buffer(0.06, cap_style="flat"))
            s += 9.0
    if dashes:
        geom = shapely.union_all(dashes)
        if road is not None:
            geom = geom.intersection(road)
        if tram:
            geom = geom.difference(tram[0][0])
        if not geom.is_empty:
            layers.append((geom, STRIPE_RGB))
    return layers


def kerb_faces(mb, scene: Scene, height_m: float = 0.12) -> None:
    """Vertical kerb faces where carriageways meet sidewalks (module docstring)."""
    road, walk = _surfaces(scene)
    if road is None or walk is None:
        return
    edges = road.boundary.intersection(walk.buffer(0.05))
    quads = []
    for part in shapely.get_parts(shapely.line_merge(edges) if edges.geom_type != "Point" else edges):
        if part.geom_type != "LineString":
            continue
        c = np.asarray(part.coords)[:, :2]
        for a, b in zip(c[:-1], c[1:]):
            if np.hypot(*(b - a)) > 1e-3:
                quads.append([[*a, 0.0], [*b, 0.0], [*b, height_m], [*a, height_m]])
    if quads:
        mb.add(_quad_tris(np.array(quads)), _rgb(KERB_RGB) * 0.95)


def tree_crowns(mb, x: float, y: float, s: float, colour, oid: str) -> None:
    """Three overlapping ellipsoid clusters of a tree crown (size factor ``s``, as the flat tree's)."""
    from urbanarena.render.scene3d.mesh_primitives import ellipsoid

    zc = 2.4 * s + 1.5 * s
    for i in range(3):
        a = 2 * math.pi * (i / 3 + stable_unit(oid, "crown-rot"))
        r = 0.7 * s
        ellipsoid(mb, x + r * math.cos(a), y + r * math.sin(a), zc + (0.5 * s if i == 0 else -0.2 * s),
                  1.35 * s, 1.45 * s, colour, segments=10, rings=6)


def shade_geometry(scene: Scene, sun_dir, shadow_k: float) -> list[tuple[object, float]]:
    """``[(geometry, factor), ...]`` of the baked shade (module docstring); no shadows without sun."""
    out = []
    polys = []
    for b in scene.buildings:
        p = building_polygon(b)
        if p is None or p.is_empty:
            continue
        polys.append((b, p))
    feet = shapely.union_all([p for _, p in polys]) if polys else None
    sx, sy, sz = (float(v) for v in sun_dir)
    if sz > math.sin(math.radians(2.0)) and shadow_k < 0.999:
        g = math.hypot(sx, sy)
        cot = g / sz
        ux, uy = (-sx / g, -sy / g) if g > 1e-9 else (0.0, 0.0)
        parts = []
        for b, p in polys:
            d = float(b.height_m) * cot
            dx, dy = ux * d, uy * d
            parts.append(p)
            parts.append(translate(p, dx, dy))
            for ring in [p.exterior, *p.interiors] if p.geom_type == "Polygon" else []:
                c = np.asarray(ring.coords)[:, :2]
                for a, bb in zip(c[:-1], c[1:]):
                    q = Polygon([tuple(a), tuple(bb), (bb[0] + dx, bb[1] + dy), (a[0] + dx, a[1] + dy)])
                    if q.area > 1e-6:
                        parts.append(q.buffer(0))
        trees = []
        for o in scene.objects:
            if o.kind == "tree":
                s = 0.8 + 0.4 * stable_unit(o.id, "tree-size")
                d = (2.4 * s + 1.5 * s) * cot
                cx, cy = o.x_m + ux * d, o.y_m + uy * d
                for i in range(3):   # the crown's three leaf clusters (tree_crowns), seen along the sun
                    a = 2 * math.pi * (i / 3 + stable_unit(o.id, "crown-rot"))
                    disc = shapely.Point(cx + 0.7 * s * math.cos(a), cy + 0.7 * s * math.sin(a)).buffer(1.2 * s, quad_segs=4)
                    trees.append(shapely.affinity.scale(disc, 1.0 + 0.5 * cot * abs(ux), 1.0 + 0.5 * cot * abs(uy)))
        shadow = shapely.union_all(parts)
        if feet is not None:
            shadow = shadow.difference(feet)
        if not shadow.is_empty:
            out.append((shadow, shadow_k))
        if trees:   # crowns let light through between leaves: half as dark, never over a building's shadow
            leafy = shapely.union_all(trees).difference(shadow)
            if feet is not None:
                leafy = leafy.difference(feet)
            if not leafy.is_empty:
                out.append((leafy, 1.0 - TREE_SHADOW_SHARE * (1.0 - shadow_k)))
    if feet is not None:
        band = feet.buffer(CONTACT_BAND_M, quad_segs=2).difference(feet)
        if not band.is_empty:
            out.append((band, CONTACT_K))
    return out


def shadow_factor(light) -> float:
    """The share of light a horizontal surface keeps in shadow (module docstring; ``light`` a
    :class:`~.conditions.Lighting`)."""
    amb = light.ambient * sum(light.ambient_rgb) / 3.0
    direct = light.sun * sum(light.sun_rgb) / 3.0 * max(light.sun_dir[2], 0.0)
    return amb / max(amb + direct, 1e-9)


def shade_mesh(scene: Scene, light):
    """``(MeshData, stats)``: the baked shade layer (vertex colour = factor) and ``{"bake_s", "triangles"}``."""
    from urbanarena.render.scene3d.mesh_primitives import MeshBuilder, flat as _flat, triangulate

    t0 = time.perf_counter()
    mb = MeshBuilder()
    up = np.array([0.0, 0.0, 1.0])
    for geom, k in shade_geometry(scene, light.sun_dir, shadow_factor(light)):
        t = _flat(triangulate(geom), 0.0)
        if len(t):
            mb.add(t, np.array([k, k, k], np.float32), normals=np.broadcast_to(up, t.shape))
    mesh = mb.build()
    return mesh, {"bake_s": time.perf_counter() - t0, "triangles": mesh.n_triangles}
