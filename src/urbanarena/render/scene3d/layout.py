"""Where storefront signs go: the facade nearest each POI that faces the street, packed without overlaps.

Walls
-----
A building's walls are the edges of its footprint rings after orienting the
exterior counter-clockwise and holes clockwise (``shapely.geometry.polygon.orient``).
For an edge ``p0 -> p1`` with unit direction ``e = (ex, ey)`` the outward normal
is ``n = (ey, -ex)`` (the right-hand side of a counter-clockwise ring is
outside). A viewer facing the wall looks along ``-n``; their right-hand side is
``(-n_y, n_x) = e``, so sign text runs from ``p0`` towards ``p1``.

Choosing a facade
-----------------
For each POI the candidate walls are those of its ``building_id`` (when given
and present) or else of every building within ``search_radius_m``. A wall is
*street-facing* when a ray cast outward along its normal (from the POI's foot
point on the wall, and from the wall's middle) reaches a road surface
(centreline buffered by half its width plus sidewalks) within
``street_distance_m`` before entering any building — the rule the OSM
annotations use for facades; in a scene without roads, when the ray enters no
building within 6 m. The
chosen wall minimises the distance from the POI to the wall, among
street-facing walls at least ``min_wall_m`` long when there are any (else
among all candidates). When the POI carries the importer's facade normal
(``facing_hint_deg``), a wall within 1 m of the POI facing within 30 degrees of
it wins over the renderer's own test, so signs stay on the facade the
annotations chose. POIs with no candidate wall get a freestanding sign on
a post at their position, facing the nearest road.

Packing
-------
Signs on one wall keep their order along the wall (by the projection of each
POI onto it). With widths ``w_i``, desired left edges ``d_i`` and gap ``g``,
left edges ``x_i`` must satisfy ``x_{i+1} >= x_i + w_i + g`` and stay within
the wall margins. Substituting ``y_i = x_i - S_i`` with
``S_i = sum_{j<i}(w_j + g)`` turns this into a monotone least-squares fit
``min sum (y_i - (d_i - S_i))^2`` with ``y`` non-decreasing — isotonic
regression (``scipy.optimize.isotonic_regression``) — clipped to the bounds
(clipping preserves optimality for common box bounds). When the signs do not
fit in one row at the default letter height, the layout tries, in order:
narrower letters (the font's width axis), smaller letters (down to
``min_cap_height_m``), two lines for a name longer than the wall, then more
rows of signs above each other (alternating signs between rows), and as a last
resort letters smaller than the minimum (``squeezed=True``). Before that, a
facade that cannot hold another sign even at the smallest letters in every
row its building allows (or is narrower than the sign) passes it on to the POI's next facade in the ranking
(importer's facade, then street-facing ones by distance) that has room.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import shapely
from scipy.optimize import isotonic_regression
from shapely.geometry import LineString, Point as SPoint, Polygon
from shapely.geometry.polygon import orient

from urbanarena.render.scene3d.fonts import DEFAULT_CAP_HEIGHT_M, SignStyle, panel_size_caps
from urbanarena.render.scene3d.palette import sign_colours
from urbanarena.render.scene3d.scene import Building, Point, Poi, Scene
from urbanarena.world.geo import wrap_deg


@dataclass(frozen=True)
class Wall:
    """One wall (footprint edge) of a building; see the module docstring for the normal convention."""

    building_id: str
    index: int
    p0: Point
    p1: Point

    @property
    def length_m(self) -> float:
        return math.hypot(self.p1[0] - self.p0[0], self.p1[1] - self.p0[1])

    @property
    def direction(self) -> Point:
        L = self.length_m
        return ((self.p1[0] - self.p0[0]) / L, (self.p1[1] - self.p0[1]) / L)

    @property
    def normal(self) -> Point:
        ex, ey = self.direction
        return (ey, -ex)

    @property
    def facing_deg(self) -> float:
        """Compass bearing of the outward normal."""
        nx, ny = self.normal
        return wrap_deg(math.degrees(math.atan2(nx, ny)))

    def point_at(self, t_m: float, out_m: float = 0.0) -> Point:
        """Point ``t_m`` along the wall from ``p0`` and ``out_m`` in front of it."""
        ex, ey = self.direction
        nx, ny = self.normal
        return (self.p0[0] + ex * t_m + nx * out_m, self.p0[1] + ey * t_m + ny * out_m)


#: Footprints are simplified with this tolerance (metres) before walls are made: surveyed
#: outlines carry many tiny kinks, which would split a straight facade into short walls.
SIMPLIFY_M = 0.15


def building_polygon(b: Building) -> Polygon:
    """Shapely polygon of a footprint, simplified by :data:`SIMPLIFY_M` (topology kept),
    exterior counter-clockwise, holes clockwise.

    Raises:
        ValueError: an invalid footprint (self-intersecting) — fixed with ``make_valid``
            when that yields one polygon, else rejected.
    """
    poly = Polygon(b.footprint, b.holes)
    if not poly.is_valid:
        fixed = shapely.make_valid(poly)
        polys = [g for g in getattr(fixed, "geoms", [fixed]) if isinstance(g, Polygon)]
        if not polys:
            raise ValueError(f"building {b.id!r}: invalid footprint")
        poly = max(polys, key=lambda g: g.area)
    simple = poly.simplify(SIMPLIFY_M, preserve_topology=True)
    if isinstance(simple, Polygon) and simple.is_valid and not simple.is_empty:
        poly = simple
    return orient(poly, 1.0)


def building_walls(b: Building, min_length_m: float = 0.05) -> list[Wall]:
    """Walls of a building (exterior ring first, then holes), skipping edges shorter than ``min_length_m``."""
    poly = building_polygon(b)
    walls: list[Wall] = []
    for ring in (poly.exterior, *poly.interiors):
        cs = list(ring.coords)
        for a, c in zip(cs[:-1], cs[1:]):
            w = Wall(b.id, len(walls), (float(a[0]), float(a[1])), (float(c[0]), float(c[1])))
            if w.length_m >= min_length_m:
                walls.append(w)
    # re-index consecutively
    return [Wall(w.building_id, i, w.p0, w.p1) for i, w in enumerate(walls)]


@dataclass(frozen=True)
class LayoutParams:
    """Sign layout settings (metres)."""

    cap_height_m: float = DEFAULT_CAP_HEIGHT_M
    min_cap_height_m: float = 0.2
    base_z_m: float = 3.0
    gap_m: float = 0.4
    wall_margin_m: float = 0.3
    offset_m: float = 0.12
    max_rows: int = 3
    row_gap_m: float = 0.25
    search_radius_m: float = 25.0
    street_distance_m: float = 30.0
    min_wall_m: float = 2.0
    freestanding_z_m: float = 1.9


@dataclass(frozen=True)
class SignPlacement:
    """A placed sign. The face is the vertical rectangle ``left -> right`` (as seen from the front),
    from ``z_bottom_m`` to ``z_top_m``, facing compass bearing ``facing_deg``.

    ``left``/``right`` are the bottom corners' ``(x, y)`` in local metres, already
    ``offset_m`` in front of the wall.
    """

    poi_id: str
    name: str
    lines: tuple[str, ...]
    building_id: str | None
    wall_index: int | None
    left: Point
    right: Point
    z_bottom_m: float
    z_top_m: float
    facing_deg: float
    cap_height_m: float
    width_axis: float
    background: tuple[int, int, int]
    text_colour: tuple[int, int, int]
    row: int = 0
    freestanding: bool = False
    squeezed: bool = False
    #: realistic style only (:mod:`.signage`): sign kind (``panel`` = the flat style's box), font family key
    #: (``""`` = the default sign font), fade in [0, 1] (colours washed towards grey)
    kind: str = "panel"
    family: str = ""
    fade: float = 0.0

    @property
    def width_m(self) -> float:
        return math.hypot(self.right[0] - self.left[0], self.right[1] - self.left[1])

    @property
    def height_m(self) -> float:
        return self.z_top_m - self.z_bottom_m

    @property
    def centre(self) -> tuple[float, float, float]:
        """``(x, y, z)`` of the face centre."""
        return ((self.left[0] + self.right[0]) / 2, (self.left[1] + self.right[1]) / 2,
                (self.z_bottom_m + self.z_top_m) / 2)

    def viewpoint(self, distance_m: float, off_axis_deg: float = 0.0) -> tuple[float, float, float]:
        """Camera ``(x_m, y_m, yaw_deg)`` ``distance_m`` from the face centre, ``off_axis_deg`` off its
        normal (positive = to the sign's right as seen by a viewer facing it), looking at the centre."""
        cx, cy, _ = self.centre
        b = math.radians(self.facing_deg - off_axis_deg)
        x, y = cx + distance_m * math.sin(b), cy + distance_m * math.cos(b)
        yaw = wrap_deg(math.degrees(math.atan2(cx - x, cy - y)))
        return x, y, yaw


@dataclass
class _Item:
    poi: Poi
    t: float  # desired centre along the wall, metres from p0


def _split_two_lines(name: str) -> tuple[str, ...] | None:
    words = name.split()
    if len(words) < 2:
        return None
    best, best_d = None, None
    for k in range(1, len(words)):
        a, b = " ".join(words[:k]), " ".join(words[k:])
        d = abs(len(a) - len(b))
        if best_d is None or d < best_d:
            best, best_d = (a, b), d
    return best


class SignLayout:
    """Computes :class:`SignPlacement` for every POI of a scene (see the module docstring).

    Args:
        scene: the scene.
        params: :class:`LayoutParams`.
    """

    def __init__(self, scene: Scene, params: LayoutParams | None = None):
        self.scene = scene
        self.p = params or LayoutParams()
        self.buildings = {b.id: b for b in scene.buildings}
        self.polys = [building_polygon(b) for b in scene.buildings]
        self.poly_tree = shapely.STRtree(self.polys) if self.polys else None
        self.walls: dict[str, list[Wall]] = {b.id: building_walls(b) for b in scene.buildings}
        self.all_walls = [w for b in scene.buildings for w in self.walls[b.id]]
        self.wall_tree = (shapely.STRtree([LineString([w.p0, w.p1]) for w in self.all_walls])
                          if self.all_walls else None)
        lines = [LineString(r.centreline) for r in scene.roads]
        self.road_lines = lines
        self.road_areas = [ln.buffer(r.width_m / 2 + r.sidewalk_m, quad_segs=2) for ln, r in zip(lines, scene.roads)]
        self.road_tree = shapely.STRtree(self.road_areas) if lines else None
        self.road_line_tree = shapely.STRtree(lines) if lines else None

    # ------------------------------------------------------------ facades
    def _inside_building(self, x: float, y: float) -> bool:
        if self.poly_tree is None:
            return False
        return len(self.poly_tree.query(SPoint(x, y), predicate="intersects")) > 0

    def _first_hit(self, ray: LineString, start: SPoint, geoms, tree) -> float:
        best = math.inf
        if tree is None:
            return best
        for i in tree.query(ray, predicate="intersects"):
            inter = ray.intersection(geoms[int(i)])
            if not inter.is_empty:
                best = min(best, float(start.distance(inter)))
        return best

    def street_facing(self, wall: Wall, t_m: float | None = None) -> bool:
        """Whether a ray cast outward along the wall normal (from ``t_m`` along the wall, default its
        middle, and from its middle) reaches a road surface within ``street_distance_m`` before
        entering any building; without roads in the scene, whether it enters no building within 6 m
        (not a party wall or a narrow courtyard)."""
        ts = {wall.length_m / 2}
        if t_m is not None:
            ts.add(min(max(t_m, 0.05), wall.length_m - 0.05))
        reach = self.p.street_distance_m if self.road_tree is not None else 6.0
        for t in sorted(ts):
            sx, sy = wall.point_at(t, 0.05)
            ex, ey = wall.point_at(t, 0.05 + reach)
            ray, start = LineString([(sx, sy), (ex, ey)]), SPoint(sx, sy)
            d_b = self._first_hit(ray, start, self.polys, self.poly_tree)
            if self.road_tree is None:
                if not math.isfinite(d_b):
                    return True
                continue
            d_r = self._first_hit(ray, start, self.road_areas, self.road_tree)
            if d_r < d_b:
                return True
        return False

    def candidate_walls(self, poi: Poi) -> list[Wall]:
        """Walls considered for ``poi``: its building's, or all within ``search_radius_m``."""
        if poi.building_id is not None and poi.building_id in self.walls:
            return list(self.walls[poi.building_id])
        if self.wall_tree is None:
            return []
        idx = self.wall_tree.query(SPoint(poi.x_m, poi.y_m), predicate="dwithin", distance=self.p.search_radius_m)
        return [self.all_walls[int(i)] for i in sorted(idx)]

    def ranked_walls(self, poi: Poi) -> list[tuple[int, Wall, float]]:
        """Candidate walls for ``poi`` as ``(rank, wall, t_m)``, best first: rank 0 = the importer's facade
        (``facing_hint_deg``), 1 = street-facing and at least ``min_wall_m`` long, 2 = any other; ties by
        distance from the POI, then building id and wall index. ``t_m``: the POI's projection along the wall."""
        pt = SPoint(poi.x_m, poi.y_m)
        scored = []
        for w in self.candidate_walls(poi):
            line = LineString([w.p0, w.p1])
            t = float(line.project(pt))
            d = float(line.distance(pt))
            hinted = (poi.facing_hint_deg is not None and d <= 1.0
                      and abs((w.facing_deg - poi.facing_hint_deg + 180.0) % 360.0 - 180.0) <= 30.0)
            long_enough = w.length_m >= self.p.min_wall_m
            good = long_enough and self.street_facing(w, t)
            rank = 0 if (hinted and long_enough) else 1 if good else 2
            scored.append((rank, round(d, 6), w.building_id, w.index, w, t))
        scored.sort(key=lambda s: s[:4])
        return [(rk, w, t) for rk, _, _, _, w, t in scored]

    def choose_wall(self, poi: Poi) -> tuple[Wall, float] | None:
        """``(wall, t_m)`` for ``poi`` — the first of :meth:`ranked_walls` — or ``None``."""
        ranked = self.ranked_walls(poi)
        return (ranked[0][1], ranked[0][2]) if ranked else None

    def _capacity_m(self, wall: Wall) -> float:
        """Total sign width (plus gaps) a wall holds at the smallest letters, over all rows its building allows."""
        h_min = self._panel_m(("Hg",), self.p.min_cap_height_m, 62.5)[1]
        height = self.buildings[wall.building_id].height_m
        rows = max(1, min(self.p.max_rows, int((height - 2.2 + self.p.row_gap_m) // (h_min + self.p.row_gap_m))))
        return rows * max(0.0, wall.length_m - 2 * self.p.wall_margin_m)

    def _min_width_m(self, poi: Poi) -> float:
        w = self._panel_m((poi.name,), self.p.min_cap_height_m, 62.5)[0]
        two = _split_two_lines(poi.name)
        if two is not None:
            w = min(w, self._panel_m(two, self.p.min_cap_height_m, 62.5)[0])
        return w + self.p.gap_m

    # ------------------------------------------------------------ packing
    def _panel_m(self, lines: Sequence[str], cap_m: float, wdth: float) -> tuple[float, float]:
        wc, hc = panel_size_caps(lines, SignStyle((0, 0, 0), (0, 0, 0)), wdth)
        return wc * cap_m, hc * cap_m

    @staticmethod
    def pack_row(desired_centres: Sequence[float], widths: Sequence[float], lo: float, hi: float,
                 gap: float) -> list[float] | None:
        """Left edges of intervals kept in order, ``gap`` apart, within ``[lo, hi]``, as close as possible
        (least squares) to their desired centres; ``None`` when they cannot fit."""
        w = np.asarray(widths, dtype=float)
        c = np.asarray(desired_centres, dtype=float)
        n = len(w)
        if n == 0:
            return []
        S = np.concatenate([[0.0], np.cumsum(w[:-1] + gap)])
        total = S[-1] + w[-1]
        if total > hi - lo + 1e-9:
            return None
        target = (c - w / 2.0) - S
        y = isotonic_regression(target).x if n > 1 else target
        y = np.clip(y, lo, hi - total)
        return [float(v) for v in (y + S)]

    def _try_group(self, wall: Wall, items: list[_Item], rows: int, wdth: float, cap_m: float,
                   allow_two_lines: bool) -> list[tuple[_Item, tuple[str, ...], float, float, int]] | None:
        lo, hi = self.p.wall_margin_m, wall.length_m - self.p.wall_margin_m
        avail = hi - lo
        if avail <= 0:
            return None
        sized = []
        for it in items:
            lines: tuple[str, ...] = (it.poi.name,)
            w, h = self._panel_m(lines, cap_m, wdth)
            if w > avail and allow_two_lines:
                two = _split_two_lines(it.poi.name)
                if two is not None:
                    w2, h2 = self._panel_m(two, cap_m, wdth)
                    if w2 < w:
                        lines, w, h = two, w2, h2
            if w > avail:
                return None
            sized.append((it, lines, w, h))
        out = []
        for r in range(rows):
            row = sized[r::rows]
            lefts = self.pack_row([s[0].t for s in row], [s[2] for s in row], lo, hi, self.p.gap_m)
            if lefts is None:
                return None
            out += [(s[0], s[1], left, s[2], r) for s, left in zip(row, lefts)]
        return out

    def _fit_group(self, wall: Wall, items: list[_Item]) -> tuple[list, float, float, bool]:
        p = self.p
        caps = [p.cap_height_m]
        c = p.cap_height_m
        while c * 0.85 >= p.min_cap_height_m - 1e-9:
            c *= 0.85
            caps.append(c)
        if caps[-1] > p.min_cap_height_m + 1e-9:
            caps.append(p.min_cap_height_m)  # the capacity estimate assumes the minimum is reachable
        attempts = []
        for rows in range(1, min(p.max_rows, len(items)) + 1):
            for cap in caps:
                for wdth in (100.0, 80.0, 62.5):
                    attempts.append((rows, wdth, cap))
        # prefer one row: all letter sizes, then two lines, before stacking rows
        for rows, wdth, cap in attempts:
            for two in (False, True):
                res = self._try_group(wall, items, rows, wdth, cap, two)
                if res is not None:
                    return res, cap, wdth, False
        # squeeze: shrink letters until one row fits
        rows = min(p.max_rows, len(items))
        cap = caps[-1]
        while cap > 0.01:
            cap *= 0.85
            res = self._try_group(wall, items, rows, 62.5, cap, True)
            if res is not None:
                return res, cap, 62.5, True
        raise ValueError(f"cannot fit {len(items)} signs on wall {wall.index} of building {wall.building_id!r}")

    # ------------------------------------------------------------ public
    def place(self) -> list[SignPlacement]:
        """Placements for all POIs, in the order of ``scene.pois``."""
        p = self.p
        groups: dict[tuple[str, int], list[_Item]] = defaultdict(list)
        wall_of: dict[tuple[str, int], Wall] = {}
        free: list[Poi] = []
        load: dict[tuple[str, int], float] = defaultdict(float)
        for poi in self.scene.pois:
            ranked = self.ranked_walls(poi)
            if not ranked:
                free.append(poi)
                continue
            need = self._min_width_m(poi)
            w, t = ranked[0][1], ranked[0][2]
            # spill over: a facade already full (even at the smallest letters, in every row the building
            # allows) passes the sign to the next good facade, if any
            for rank, cw, ct in ranked:
                if rank > 1:
                    break
                ck = (cw.building_id, cw.index)
                fits_row = need - self.p.gap_m <= cw.length_m - 2 * self.p.wall_margin_m
                if fits_row and load[ck] + need <= self._capacity_m(cw) + 1e-9:
                    w, t = cw, ct
                    break
            key = (w.building_id, w.index)
            load[key] += need
            wall_of[key] = w
            groups[key].append(_Item(poi, t))
        placed: dict[str, SignPlacement] = {}
        for key in sorted(groups):
            wall = wall_of[key]
            items = sorted(groups[key], key=lambda it: (it.t, it.poi.id))
            res, cap, wdth, squeezed = self._fit_group(wall, items)
            row_h: dict[int, float] = defaultdict(float)
            for it, lines, left, w, r in res:
                row_h[r] = max(row_h[r], self._panel_m(lines, cap, wdth)[1])
            nrows = max(row_h) + 1
            total_h = sum(row_h[r] for r in range(nrows)) + (nrows - 1) * p.row_gap_m
            height = self.buildings[wall.building_id].height_m
            base = min(p.base_z_m, max(2.2, height - total_h - 0.2))
            if base + total_h > height:  # very low building: hang as high as it allows
                base = max(0.3, height - total_h - 0.05)
            row_z = {0: base}
            for r in range(1, nrows):
                row_z[r] = row_z[r - 1] + row_h[r - 1] + p.row_gap_m
            for it, lines, left, w, r in res:
                _, h = self._panel_m(lines, cap, wdth)
                z0 = row_z[r] + (row_h[r] - h) / 2
                bg, fg = sign_colours(it.poi.id)
                placed[it.poi.id] = SignPlacement(
                    poi_id=it.poi.id, name=it.poi.name, lines=tuple(lines), building_id=wall.building_id,
                    wall_index=wall.index, left=wall.point_at(left, p.offset_m),
                    right=wall.point_at(left + w, p.offset_m), z_bottom_m=z0, z_top_m=z0 + h,
                    facing_deg=wall.facing_deg, cap_height_m=cap, width_axis=wdth, background=bg,
                    text_colour=fg, row=r, squeezed=squeezed)
        placed.update(self._freestanding(free))
        return [placed[poi.id] for poi in self.scene.pois]

    def _facing_road(self, x: float, y: float) -> float:
        """Compass bearing from ``(x, y)`` to the nearest road centreline point (180 without roads)."""
        if self.road_line_tree is None:
            return 180.0
        line = self.road_lines[int(self.road_line_tree.nearest(SPoint(x, y)))]
        q = line.interpolate(line.project(SPoint(x, y)))
        dx, dy = q.x - x, q.y - y
        if math.hypot(dx, dy) < 1e-6:
            return 180.0
        return wrap_deg(math.degrees(math.atan2(dx, dy)))

    def _freestanding(self, pois: Iterable[Poi]) -> dict[str, SignPlacement]:
        """Post-mounted signs; POIs within 2 m of each other stack upwards."""
        p = self.p
        out: dict[str, SignPlacement] = {}
        stacks: dict[tuple[int, int], list[Poi]] = defaultdict(list)
        for poi in pois:
            stacks[(int(math.floor(poi.x_m / 2.0)), int(math.floor(poi.y_m / 2.0)))].append(poi)
        for key in sorted(stacks):
            z = p.freestanding_z_m
            for poi in sorted(stacks[key], key=lambda q: q.id):
                facing = self._facing_road(poi.x_m, poi.y_m)
                lines = (poi.name,)
                w, h = self._panel_m(lines, p.cap_height_m, 100.0)
                if w > 4.0:
                    two = _split_two_lines(poi.name)
                    if two is not None:
                        lines = two
                    w, h = self._panel_m(lines, p.cap_height_m, 80.0)
                    wdth = 80.0
                else:
                    wdth = 100.0
                a = math.radians(facing)
                rx, ry = -math.cos(a), math.sin(a)  # viewer's right = (-n_y, n_x)
                cx, cy = poi.x_m, poi.y_m
                bg, fg = sign_colours(poi.id)
                out[poi.id] = SignPlacement(
                    poi_id=poi.id, name=poi.name, lines=tuple(lines), building_id=None, wall_index=None,
                    left=(cx - rx * w / 2, cy - ry * w / 2), right=(cx + rx * w / 2, cy + ry * w / 2),
                    z_bottom_m=z, z_top_m=z + h, facing_deg=facing, cap_height_m=p.cap_height_m,
                    width_axis=wdth, background=bg, text_colour=fg, freestanding=True)
                z += h + p.row_gap_m
        return out


def layout_signs(scene: Scene, params: LayoutParams | None = None) -> list[SignPlacement]:
    """Sign placements for every POI of ``scene`` (order of ``scene.pois``); see the module docstring."""
    return SignLayout(scene, params).place()
