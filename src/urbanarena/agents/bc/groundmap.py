"""Reading the continuous environment's map-mode image (numpy + OpenCV + SciPy; no privileged state).

In map mode (:mod:`urbanarena.env.continuous.map_view`) an UrbanGround agent sees a north-up map: grey
street lines, building footprints blended over them, a scale bar in the bottom-left corner, the task's
markers (red discs of radius 7 px in a white ring, labelled with their name: for ``l2_constrained`` the
goal POI and ``restricted zone``) and the agent (a red disc of 6 px without ring, with a triangle along
its yaw). :func:`read_ground_map` reads it the way a person would (ours):

* **discs**: the red pixels' distance transform, peak after peak (each found disc is blanked before the
  next), so two touching discs are both found (:func:`red_discs`);
* **agent or marker**: a marker has the white ring; the agent has none (:func:`ring_whiteness`); the
  agent's heading is the direction of the farthest red pixel of its triangle
  (:func:`urbanarena.agents.bc.mapread.heading_at`);
* **zone or goal**: the label ``restricted zone`` drawn with the renderer's font where a marker's label
  starts is compared with the red pixels there; the marker whose label matches is the zone, another
  marker is the goal (:func:`zone_label_score`);
* **scale**: the scale bar, by :func:`urbanarena.agents.bc.mapread.scale_bar_m_per_px`;
* **walkable evidence**: pixels of the blended building colour are buildings, grey pixels streets
  (:func:`building_mask`, :func:`street_mask`); :func:`walk_cost_field` gives, on a half-resolution grid,
  the cost of walking from every cell to the goal (Dijkstra, 8 neighbours; metres times 1 on streets,
  1.5 on open ground, 25 through buildings, tripled within 16 m of the zone's centre and impassable
  within 10.5 m of it).
  The generator's zones have a radius of 10 m, which the task text says; the map shows only their centre.

Every reader returns ``None`` where the image does not show what it looks for (an all-zero image, the
blind ablation's, shows nothing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from urbanarena.agents.bc.mapread import RED, colour_mask, heading_at, scale_bar_m_per_px

#: map-mode colours (RGB): :class:`urbanarena.render.maps.MapStyle` and the footprint blend of
#: :class:`urbanarena.env.continuous.map_view.FootprintMapRenderer` (60 % building colour over the map)
BACKGROUND = (245, 243, 238)
STREET = (150, 150, 150)
BUILDING = (206, 199, 188)
BUILDING_OVER_BG = tuple(int(round(0.6 * b + 0.4 * g)) for b, g in zip(BUILDING, BACKGROUND))
BUILDING_OVER_STREET = tuple(int(round(0.6 * b + 0.4 * s)) for b, s in zip(BUILDING, STREET))
ZONE_LABEL = "restricted zone"
MARKER_RADIUS_PX = 7
#: walking cost per metre on streets, open ground and through drawn buildings (ours)
COST_STREET, COST_OPEN, COST_BUILDING = 1.0, 1.5, 25.0


def red_discs(img: np.ndarray, min_radius_px: float = 3.5, max_discs: int = 8) -> list[tuple[float, float, float]]:
    """``[(u, v, radius_px)]`` of the red discs of ``img``, widest first (module docstring)."""
    import cv2

    m = colour_mask(img, RED)
    out: list[tuple[float, float, float]] = []
    while m.any() and len(out) < max_discs:
        d = cv2.distanceTransform(m, cv2.DIST_L2, 5)
        peak = float(d.max())
        if peak < min_radius_px:
            break
        vs, us = np.nonzero(d >= peak - 0.5)
        # the plateau of one disc: the pixels of the plateau nearest the first one
        near = (us - us[0]) ** 2 + (vs - vs[0]) ** 2 <= 9
        u, v = float(us[near].mean()), float(vs[near].mean())
        out.append((u, v, peak))
        cv2.circle(m, (int(round(u)), int(round(v))), int(math.ceil(peak)) + 2, 0, -1)
    return out


def ring_whiteness(img: np.ndarray, u: float, v: float, radius_px: float = 8.5) -> float:
    """Fraction of 32 points on the circle of ``radius_px`` around ``(u, v)`` that are white (a marker's ring)."""
    a = np.asarray(img)
    h, w = a.shape[:2]
    ang = np.linspace(0.0, 2 * math.pi, 32, endpoint=False)
    us = np.clip(np.round(u + radius_px * np.cos(ang)).astype(int), 0, w - 1)
    vs = np.clip(np.round(v + radius_px * np.sin(ang)).astype(int), 0, h - 1)
    px = a[vs, us, :3].astype(int)
    return float((px.min(axis=1) >= 250).mean())


def zone_label_score(img: np.ndarray, u: float, v: float) -> float:
    """Fraction of the red strokes of the label ``restricted zone``, drawn as the renderer draws a marker's
    label at ``(u, v)``, that are red in ``img`` (best over a 1 px jitter); 0 off the image."""
    import cv2

    a = np.asarray(img)
    h, w = a.shape[:2]
    org = (int(round(u + MARKER_RADIUS_PX + 4)), int(round(v + 4)))
    (tw, th), _ = cv2.getTextSize(ZONE_LABEL, cv2.FONT_HERSHEY_SIMPLEX, 0.45, 1)
    x0, y0, x1, y1 = org[0] - 2, org[1] - th - 3, org[0] + tw + 3, org[1] + 4
    if x0 < 0 or y0 < 0 or x1 > w or y1 > h:
        return 0.0
    red = colour_mask(a[y0:y1, x0:x1], RED).astype(bool)
    best = 0.0
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
            t = np.zeros((y1 - y0, x1 - x0, 3), np.uint8)
            cv2.putText(t, ZONE_LABEL, (org[0] - x0 + dx, org[1] - y0 + dy), cv2.FONT_HERSHEY_SIMPLEX, 0.45,
                        (220, 20, 20), 1, cv2.LINE_AA)
            tm = colour_mask(t, RED).astype(bool)
            if tm.any():
                best = max(best, float((tm & red).sum() / tm.sum()))
    return best


def _near(img: np.ndarray, rgb, tol: int) -> np.ndarray:
    a = np.asarray(img)[:, :, :3].astype(np.int16)
    return (np.abs(a - np.asarray(rgb, np.int16)).max(axis=2) <= tol)


def building_mask(img: np.ndarray) -> np.ndarray:
    """``(H, W)`` bool: pixels of the blended building colour: ``0.6 building + 0.4 q`` with ``q`` any mix of
    the street grey and the background (a footprint over anti-aliased street edges included)."""
    a = np.asarray(img)[:, :, :3].astype(np.float32)
    q = (a - 0.6 * np.asarray(BUILDING, np.float32)) / 0.4
    s, g = np.asarray(STREET, np.float32), np.asarray(BACKGROUND, np.float32)
    d = g - s
    t = np.clip(((q - s) @ d) / float(d @ d), 0.0, 1.0)
    off = q - (s + t[..., None] * d)
    warm = a[..., 0] - a[..., 2] >= 9.0  # the footprint colour's tint (R - B >= 11); street greys are neutral
    return (np.abs(off).max(axis=2) <= 12.0) & warm


def street_mask(img: np.ndarray) -> np.ndarray:
    """``(H, W)`` bool: grey street pixels (anti-aliased edges included), not under a building."""
    a = np.asarray(img)[:, :, :3].astype(np.int16)
    grey = (a.max(axis=2) - a.min(axis=2)) <= 8
    lum = a.mean(axis=2)
    return grey & (lum >= 120) & (lum <= 215)


@dataclass
class GroundMapReading:
    """What one map image shows (pixel coordinates ``u`` right, ``v`` down; metres east/north).

    ``agent_px``, ``heading_deg`` (compass), ``m_per_px``; ``goal_px`` / ``zone_px`` or ``None``;
    ``buildings`` ``(H, W)`` bool; ``cost`` ``(H // 2, W // 2)`` float32 walking cost to the goal
    (:func:`walk_cost_field`; ``None`` without a goal)."""

    agent_px: tuple[float, float]
    heading_deg: float
    m_per_px: float
    goal_px: tuple[float, float] | None
    zone_px: tuple[float, float] | None
    buildings: np.ndarray
    cost: np.ndarray | None = None

    def px_of(self, east_m: float, north_m: float) -> tuple[float, float]:
        """Pixel of the point ``east_m``/``north_m`` metres from where the agent stood on this map."""
        return self.agent_px[0] + east_m / self.m_per_px, self.agent_px[1] - north_m / self.m_per_px

    def offset_m(self, px: tuple[float, float]) -> tuple[float, float]:
        """East/north metres of pixel ``px`` from where the agent stood on this map."""
        return (px[0] - self.agent_px[0]) * self.m_per_px, -(px[1] - self.agent_px[1]) * self.m_per_px

    def inside(self, px: tuple[float, float]) -> bool:
        h, w = self.buildings.shape
        return 0 <= px[0] < w and 0 <= px[1] < h

    def cost_at(self, px: tuple[float, float]) -> float:
        """Walking cost (metres-equivalent) from pixel ``px`` to the goal; ``inf`` off the map or unreachable."""
        if self.cost is None or not self.inside(px):
            return math.inf
        return float(self.cost[min(int(px[1]) // 2, self.cost.shape[0] - 1), min(int(px[0]) // 2, self.cost.shape[1] - 1)])

    def costs_at(self, us: np.ndarray, vs: np.ndarray) -> np.ndarray:
        """:meth:`cost_at` of many pixels (arrays of ``u``, ``v``)."""
        us, vs = np.asarray(us, float), np.asarray(vs, float)
        out = np.full(us.shape, np.inf)
        if self.cost is None:
            return out
        h, w = self.buildings.shape
        ok = (us >= 0) & (us < w) & (vs >= 0) & (vs < h)
        r = np.minimum(vs[ok].astype(int) // 2, self.cost.shape[0] - 1)
        c = np.minimum(us[ok].astype(int) // 2, self.cost.shape[1] - 1)
        out[ok] = self.cost[r, c]
        return out

    def free_ray_m(self, px: tuple[float, float], bearing_deg: float, max_m: float = 20.0) -> float:
        """Metres from ``px`` along compass ``bearing_deg`` to the first building pixel or the map's edge."""
        a = math.radians(bearing_deg)
        du, dv = math.sin(a), -math.cos(a)
        h, w = self.buildings.shape
        step = 0.5
        d = step
        while d <= max_m:
            u = int(round(px[0] + du * d / self.m_per_px))
            v = int(round(px[1] + dv * d / self.m_per_px))
            if not (0 <= u < w and 0 <= v < h) or self.buildings[v, u]:
                return d - step
            d += step
        return max_m


def walk_cost_field(img: np.ndarray, goal_px: tuple[float, float], m_per_px: float,
                    zone_px: tuple[float, float] | None = None, zone_keep_m: float = 10.5,
                    zone_band_m: float = 16.0) -> np.ndarray:
    """``(H // 2, W // 2)`` float32: the least walking cost from each 2 x 2 cell to the goal's cell (module
    docstring); ``inf`` where unreachable (within ``zone_keep_m`` of the zone's centre; the cost per metre is
    tripled out to ``zone_band_m``, so routes keep a margin)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import dijkstra

    b = building_mask(img)
    s = street_mask(img)
    h, w = b.shape[0] // 2, b.shape[1] // 2
    b2 = b[: 2 * h, : 2 * w].reshape(h, 2, w, 2).sum(axis=(1, 3)) >= 2
    s2 = s[: 2 * h, : 2 * w].reshape(h, 2, w, 2).any(axis=(1, 3))
    cell_m = 2.0 * m_per_px
    cost = np.where(b2, COST_BUILDING, np.where(s2, COST_STREET, COST_OPEN)).astype(np.float64)
    if zone_px is not None:
        vv, uu = np.mgrid[0:h, 0:w]
        r2 = (uu * 2 + 1 - zone_px[0]) ** 2 + (vv * 2 + 1 - zone_px[1]) ** 2
        cost[r2 <= (zone_band_m / m_per_px) ** 2] *= 3.0
        cost[r2 <= (zone_keep_m / m_per_px) ** 2] = np.inf
    idx = np.arange(h * w).reshape(h, w)
    rows, cols, vals = [], [], []
    for dv, du in ((0, 1), (1, 0), (1, 1), (1, -1)):
        a = idx[0: h - dv, max(0, -du): w - max(0, du)]
        bb = idx[dv: h, max(0, du): w - max(0, -du)]
        ca, cb = cost.ravel()[a.ravel()], cost.ravel()[bb.ravel()]
        wgt = 0.5 * (ca + cb) * cell_m * math.hypot(du, dv)
        ok = np.isfinite(wgt)
        rows.append(a.ravel()[ok])
        cols.append(bb.ravel()[ok])
        vals.append(wgt[ok])
    r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    g = coo_matrix((v, (r, c)), shape=(h * w, h * w)).tocsr()
    gu = min(max(int(goal_px[0]) // 2, 0), w - 1)
    gv = min(max(int(goal_px[1]) // 2, 0), h - 1)
    dist = dijkstra(g, directed=False, indices=int(idx[gv, gu]))
    return dist.reshape(h, w).astype(np.float32)


def read_ground_map(img: np.ndarray | None, with_cost: bool = True) -> GroundMapReading | None:
    """Read a map-mode image (module docstring); ``None`` without an agent marker or a readable scale bar."""
    if img is None:
        return None
    a = np.asarray(img)
    if a.ndim != 3 or not a.any():
        return None
    discs = red_discs(a)
    h, w = a.shape[:2]
    # the agent: the ringless disc nearest the image centre (map mode opens centred on the agent); every
    # other disc is a marker (a neighbour's label may cover part of a marker's ring)
    agents = [d for d in discs if ring_whiteness(a, d[0], d[1]) < 0.35]
    if not agents:
        return None
    ag = min(agents, key=lambda d: (d[0] - w / 2) ** 2 + (d[1] - h / 2) ** 2)
    markers = [d for d in discs if d is not ag]
    m_per_px = scale_bar_m_per_px(a)
    if m_per_px is None:
        return None
    import cv2

    others = np.zeros((h, w), np.uint8)
    for d in markers:
        cv2.circle(others, (int(round(d[0])), int(round(d[1]))), MARKER_RADIUS_PX + 3, 1, -1)
    heading = heading_at(a, ag[0], ag[1], max_r_px=17.0, ignore=others)
    zone = goal = None
    if markers:
        scores = [zone_label_score(a, d[0], d[1]) for d in markers]
        k = int(np.argmax(scores))
        if scores[k] >= 0.5:
            zone = markers[k][:2]
        rest = [d for i, d in enumerate(markers) if zone is None or i != k]
        if rest:
            goal = min(rest, key=lambda d: -d[2])[:2]
    reading = GroundMapReading((ag[0], ag[1]), heading, m_per_px, goal, zone, building_mask(a))
    if with_cost and goal is not None:
        reading.cost = walk_cost_field(a, goal, m_per_px, zone)
    return reading


__all__ = ["BUILDING_OVER_BG", "GroundMapReading", "ZONE_LABEL", "building_mask", "read_ground_map", "red_discs",
           "ring_whiteness", "street_mask", "walk_cost_field", "zone_label_score"]
