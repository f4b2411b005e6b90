"""How much of the goal a reference photo shows: the goal-share check of ``landmark_image`` references
(reference scheme 4, :mod:`urbanarena.tasks.generators.landmark`).

The photo's camera is drawn in the ID pass (:meth:`SceneRenderer.render_ids
<urbanarena.render.scene3d.renderer.SceneRenderer.render_ids>`: the same geometry, culling and depth test as
the photo) with the photo's own people and vehicles (``population_key``: the ones the photo shows). Two regions
of the goal are projected into the image through the same pinhole camera, with nothing in front of them:

* the **sign**: the goal POI's sign face (:class:`~.layout.SignPlacement`: the rectangle ``left -> right``,
  ``z_bottom_m`` to ``z_top_m``);
* the **storefront**: the rectangle of the same wall plane from the ground to the sign's top, extending
  :data:`STOREFRONT_MARGIN_M` along the wall beyond each end of the sign, cut to the wall the sign hangs on (a
  freestanding sign has no storefront: the sign alone).

A region's **share** is ``visible / area``: ``area`` the projected region's pixels (those whose centre lies in
the polygon cut at the near plane, counted in the frame and scaled up by the share of the polygon's exact area
that lies outside it, so a storefront half outside the picture counts half), ``visible`` the pixels inside the
region whose ID-pass feature is the goal (the sign: the goal POI; the
storefront: the goal POI or its building). Whatever else covers the region — a person, a tram, a parked car, a
tree, a lamp post, another building — is what hides the goal. The check passes when both shares reach
:data:`MIN_SIGN_SHARE` and :data:`MIN_STOREFRONT_SHARE` (measured on ``helsinki-arena7-v4`` mini:
docs/task-generation.md, "Image goals").
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

#: the measure's id, recorded with each check (``extra.reference_check.goal_share.measure``)
MEASURE_ID = "goal-share-v1"
#: the storefront region reaches this far along the wall beyond each end of the sign, metres
STOREFRONT_MARGIN_M = 1.0
#: fewest share of the sign face's projected area that must show the sign (v4 mini: 24 of 25 references at 0.9
#: or more, "Sound Center" 0)
MIN_SIGN_SHARE = 0.8
#: fewest share of the storefront's projected area that must show the goal's building or sign (v4 mini: median
#: 0.90; refused below 0.6: four of 25, "Sound Center" 0 behind a tram, then 0.40, 0.41, 0.53 with people or a
#: parked car across the shop front)
MIN_STOREFRONT_SHARE = 0.6


def project_polygon(points_xyz: np.ndarray, x_m: float, y_m: float, eye_height_m: float, yaw_deg: float,
                    pitch_deg: float, hfov_deg: float, width: int, height: int, near_m: float = 0.1) -> np.ndarray:
    """A planar polygon (world metres ``(N, 3)``: east, north, up) in image coordinates ``(M, 2)`` (``u`` right,
    ``v`` down, pixel ``(i, j)`` spanning ``[i, i + 1) x [j, j + 1)``), cut at ``near_m`` in front of the camera
    (empty when it lies wholly behind). Same camera as the renderer (:func:`~.cubemap.view_matrix`,
    :func:`~.cubemap.projection_matrix`: ``tan(hfov / 2)`` spans half the width, square pixels)."""
    from urbanarena.render.scene3d.cubemap import view_matrix

    V = view_matrix(np.array([x_m, y_m, eye_height_m], float), yaw_deg, pitch_deg)
    p = np.c_[np.asarray(points_xyz, float), np.ones(len(points_xyz))] @ V.T
    cam = p[:, :3]  # x right, y up, looking down -z
    kept: list[np.ndarray] = []
    n = len(cam)
    for i in range(n):  # Sutherland-Hodgman against the plane z = -near
        a, b = cam[i], cam[(i + 1) % n]
        ina, inb = a[2] <= -near_m, b[2] <= -near_m
        if ina:
            kept.append(a)
        if ina != inb:
            t = (-near_m - a[2]) / (b[2] - a[2])
            kept.append(a + t * (b - a))
    if len(kept) < 3:
        return np.zeros((0, 2))
    c = np.array(kept)
    f = (width / 2.0) / math.tan(math.radians(hfov_deg) / 2.0)
    u = width / 2.0 + f * c[:, 0] / -c[:, 2]
    v = height / 2.0 - f * c[:, 1] / -c[:, 2]
    return np.c_[u, v]


def polygon_area_px(poly: np.ndarray) -> float:
    """Area of an image polygon ``(M, 2)`` (shoelace), pixels."""
    if len(poly) < 3:
        return 0.0
    x, y = poly[:, 0], poly[:, 1]
    return float(abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))) / 2.0)


def polygon_mask(poly: np.ndarray, width: int, height: int) -> np.ndarray:
    """``(height, width)`` bool: the pixels whose centre ``(i + 0.5, j + 0.5)`` lies inside the convex polygon
    ``poly`` (a projected rectangle stays convex; cut at the frame)."""
    mask = np.zeros((height, width), bool)
    if len(poly) < 3 or polygon_area_px(poly) <= 0:
        return mask
    x0, y0 = np.floor(poly.min(axis=0)).astype(int)
    x1, y1 = np.ceil(poly.max(axis=0)).astype(int)
    x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, width), min(y1, height)
    if x0 >= x1 or y0 >= y1:
        return mask
    u, v = np.meshgrid(np.arange(x0, x1) + 0.5, np.arange(y0, y1) + 0.5)
    x, y = poly[:, 0], poly[:, 1]
    orient = np.sign(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))
    inside = np.ones(u.shape, bool)
    for (ax, ay), (bx, by) in zip(poly, np.roll(poly, -1, axis=0)):
        inside &= orient * ((bx - ax) * (v - ay) - (by - ay) * (u - ax)) >= 0
    mask[y0:y1, x0:x1] = inside
    return mask


def goal_regions(placement, wall=None, margin_m: float = STOREFRONT_MARGIN_M) -> tuple[np.ndarray, np.ndarray]:
    """``(sign, storefront)`` rectangles ``(4, 3)`` in world metres of a sign placement (module docstring);
    ``wall`` (:class:`~.layout.Wall` the sign hangs on, or ``None``) cuts the storefront to its extent."""
    (lx, ly), (rx, ry) = placement.left, placement.right
    w = math.hypot(rx - lx, ry - ly) or 1e-9
    ex, ey = (rx - lx) / w, (ry - ly) / w
    z0, z1 = float(placement.z_bottom_m), float(placement.z_top_m)
    sign = np.array([(lx, ly, z0), (rx, ry, z0), (rx, ry, z1), (lx, ly, z1)], float)
    if placement.building_id is None:
        return sign, sign.copy()
    t0, t1 = -margin_m, w + margin_m
    if wall is not None:  # along-wall coordinates of the wall's ends, measured from the sign's left corner
        ends = [(px - lx) * ex + (py - ly) * ey for px, py in (wall.p0, wall.p1)]
        t0, t1 = max(t0, min(ends)), min(t1, max(ends))
        t0, t1 = min(t0, 0.0), max(t1, w)  # never narrower than the sign itself
    a = (lx + t0 * ex, ly + t0 * ey)
    b = (lx + t1 * ex, ly + t1 * ey)
    front = np.array([(a[0], a[1], 0.0), (b[0], b[1], 0.0), (b[0], b[1], z1), (a[0], a[1], z1)], float)
    return sign, front


def region_share(ids: np.ndarray, poly: np.ndarray, goal_indices: Sequence[int]) -> dict[str, Any]:
    """``{"share", "visible_px", "area_px", "in_frame_px"}`` of one projected region in an ID image: ``area_px``
    the region's whole projected area, ``in_frame_px`` its rasterised pixels in the frame, ``visible_px`` those
    showing ``goal_indices``; ``share = visible / (in_frame_px * area / area in the frame)`` (the raster count
    in the frame, scaled up by the part of the region outside it), at most 1."""
    from shapely.geometry import Polygon, box

    h, w = ids.shape
    area = polygon_area_px(poly)
    mask = polygon_mask(poly, w, h)
    in_frame = int(np.count_nonzero(mask))
    visible = int(np.count_nonzero(mask & np.isin(ids, list(goal_indices))))
    share = 0.0
    if area > 0 and in_frame > 0:
        inside = Polygon(poly).buffer(0).intersection(box(0, 0, w, h)).area
        share = min(1.0, visible / (in_frame * area / inside)) if inside > 0 else 0.0
    return {"share": round(share, 4), "visible_px": visible, "area_px": round(area, 1), "in_frame_px": in_frame}


def measure_goal_share(renderer, poi_id: str, view: Mapping[str, Any], dynamic=None) -> dict[str, Any]:
    """The goal share of one camera (module docstring) with ``renderer`` (a
    :class:`~.renderer.SceneRenderer`; its sign placements and ID pass) and ``dynamic`` (the people and vehicles
    drawn, or ``None``).

    Returns ``{"sign": region, "storefront": region, "occluders_px": {kind: px}}`` (:func:`region_share`;
    ``occluders_px``: pixels of the storefront region showing something else, by feature kind and
    ``population``).

    Raises:
        KeyError: the scene has no sign of ``poi_id``.
    """
    from urbanarena.render.scene3d.layout import building_walls

    placed = {s.poi_id: s for s in renderer.meshes.placements}
    if poi_id not in placed:
        raise KeyError(f"goal share: no sign of POI {poi_id!r} in the scene")
    s = placed[poi_id]
    feats = renderer.features
    index = {key: k for k, key in enumerate(feats, 1)}
    sign_idx = index[("poi", poi_id)]
    goal = [sign_idx]
    wall = None
    if s.building_id is not None:
        if ("building", s.building_id) in index:
            goal.append(index[("building", s.building_id)])
        b = next((b for b in renderer.scene.buildings if b.id == s.building_id), None)
        if b is not None and s.wall_index is not None:
            walls = building_walls(b)
            wall = walls[s.wall_index] if 0 <= s.wall_index < len(walls) else None
    sign_q, front_q = goal_regions(s, wall)
    cam = (float(view["x_m"]), float(view["y_m"]), float(view["eye_height_m"]), float(view["yaw_deg"]) % 360.0,
           float(view["pitch_deg"]), float(view["hfov_deg"]), int(view["width"]), int(view["height"]))
    ids = renderer.render_ids(cam[0], cam[1], cam[3], cam[4], cam[5], cam[6], cam[7], cam[2], dynamic=dynamic)
    near = float(getattr(renderer.settings, "near_m", 0.1))
    sign_poly = project_polygon(sign_q, *cam, near_m=near)
    front_poly = project_polygon(front_q, *cam, near_m=near)
    front_mask = polygon_mask(front_poly, cam[6], cam[7])
    other = ids[front_mask & ~np.isin(ids, goal)]
    occ: dict[str, int] = {}
    base = len(feats)
    for k, n in zip(*np.unique(other, return_counts=True)):
        kind = "none" if k == 0 else ("population" if k > base else feats[int(k) - 1][0])
        occ[kind] = occ.get(kind, 0) + int(n)
    return {"sign": region_share(ids, sign_poly, [sign_idx]), "storefront": region_share(ids, front_poly, goal),
            "occluders_px": dict(sorted(occ.items()))}


def passes(measured: Mapping[str, Any], min_sign: float = MIN_SIGN_SHARE,
           min_storefront: float = MIN_STOREFRONT_SHARE) -> bool:
    """Whether a :func:`measure_goal_share` result shows the goal (both shares at their thresholds)."""
    return measured["sign"]["share"] >= min_sign and measured["storefront"]["share"] >= min_storefront


class GoalShare:
    """The goal-share hook of ``landmark_image`` references, callable as ``(city, view, poi_id) -> dict``:
    :func:`measure_goal_share` of the reference camera ``view`` in the renderer that draws the photo
    (:func:`~.reference.reference_renderer_of` in ``render_style``, the photo's condition) with the photo's own
    people and vehicles (``view["population_key"]``), plus ``measure``, ``passed`` and the thresholds.

    Raises:
        KeyError: no sign of the POI. ValueError: a bad view field. RendererUnavailableError: no OpenGL here.
    """

    def __init__(self, city, render_style: str = "flat", min_sign: float = MIN_SIGN_SHARE,
                 min_storefront: float = MIN_STOREFRONT_SHARE):
        self.city, self.render_style = city, render_style
        self.min_sign, self.min_storefront = float(min_sign), float(min_storefront)

    def __call__(self, city, view: Mapping[str, Any], poi_id: str) -> dict[str, Any]:
        from urbanarena.render.scene3d.population_draw import release_population
        from urbanarena.render.scene3d.reference import reference_renderer_of, reference_settings

        if city is not self.city:
            raise ValueError("GoalShare: built for another city")
        rr = reference_renderer_of(city, self.render_style)
        settings = reference_settings(view, rr.base_settings)
        renderer = rr.renderer(settings)
        people = rr._population(view, settings, float(view["x_m"]), float(view["y_m"]))
        try:
            got = measure_goal_share(renderer, poi_id, view, dynamic=people)
        finally:
            release_population(renderer, people)
        return {"measure": MEASURE_ID, **got,
                "threshold": {"sign": self.min_sign, "storefront": self.min_storefront},
                "passed": passes(got, self.min_sign, self.min_storefront)}


__all__ = ["GoalShare", "MEASURE_ID", "MIN_SIGN_SHARE", "MIN_STOREFRONT_SHARE", "STOREFRONT_MARGIN_M",
           "goal_regions", "measure_goal_share", "passes", "polygon_area_px", "polygon_mask", "project_polygon",
           "region_share"]
