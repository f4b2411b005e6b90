"""Walkable space and swept collisions for the continuous environment (local metres, x east, y north).

Walkable space is everything that is not an obstacle:

* **building footprints** (every polygon of every annotated building, core and
  context), minus **passages**: a corridor of half-width ``passage_half_width_m``
  (default 1.5 m, i.e. a 3 m passage) around every line of the walkable network.
  The OSM importer keeps a way that runs through a footprint only when it is a
  ``tunnel=building_passage`` or an ordinary (``covered=yes``, arcade) way: real
  tunnels and indoor corridors are excluded from the network
  (:func:`urbanarena.world.importers.osm_tags.classify_way`), so the network lines
  that cross footprints are exactly the covered ways and building passages, and
  they stay passable. The same corridor also clears footprints that a mapped
  footway merely grazes, so the network itself is always walkable (street
  furniture aside);
* **street furniture** as discs around each object's position, radius by type
  (:data:`OBJECT_RADII_M`; they cover the renderer's meshes, see
  :mod:`urbanarena.render.scene3d.meshes`); crossings are road markings, not
  obstacles (:data:`NON_SOLID_TYPES`);
* optionally a **fence** around the area (``bounds``): the agent cannot leave the
  rectangle.

The agent is a disc of radius ``agent_radius_m`` (default 0.25 m). Collisions are
checked for its centre against the obstacles grown by that radius (the
Minkowski sum: footprints minus passages, buffered by the radius; discs of radius
``r_object + agent_radius_m``), so a passage of half-width ``h`` leaves a free
corridor of half-width ``h - agent_radius_m``.

Motion is **swept**: a straight piece of motion from ``p`` to ``q`` is tested
as the segment ``p -> q`` against the grown obstacles (``STRtree`` of the
obstacle parts, prepared geometries), never only at its end, so a long move
cannot tunnel through a thin wall or a bollard. The first contact along the
segment stops the piece ``skin_m`` (0.1 mm) before the boundary (then the point is
pushed along the wall's normal until it is at least ``skin_m`` off the wall, so
that later pieces along the wall do not graze it).

Collision response (:meth:`WalkableSpace.move`), ``mode``:

``"slide"`` (default; what a game character controller does)
    the part of the remaining motion along the wall is kept: with the wall's
    outward unit normal ``n`` at the contact and the remaining intended
    displacement ``r`` (``r . n < 0``), the agent continues by ``r - (r . n) n``
    from the contact, in the remaining time of the piece (it slows down).
    Head-on (``r`` parallel to ``n``) nothing is left and it stops. At most
    ``max_slides`` (4) contacts per piece.
``"stop"``
    the agent stops at the first contact; the rest of the motion is dropped.

Escape rule: an obstacle that already contains the start of a piece (possible
only for positions set from outside, e.g. a start pose on a bench) is ignored for
that piece, so the agent can walk out of it; :meth:`WalkableSpace.nearest_free`
moves a start out of obstacles instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import shapely
from shapely.geometry import LineString, Point, Polygon, box
from shapely.ops import nearest_points, unary_union
from shapely.strtree import STRtree

#: collision disc radius (metres) of each street object type; :data:`DEFAULT_OBJECT_RADIUS_M` for others.
#: Chosen to cover the renderer's meshes: tree trunk (0.13-0.19 m), lamp/signal poles, a vending
#: machine 1.0 x 0.75 m, a bench 1.8 x 0.45 m, a bus shelter 3.2 x 1.5 m, a subway stair enclosure 2.2 x 3.5 m.
OBJECT_RADII_M: dict[str, float] = {
    "tree": 0.2,
    "street_lamp": 0.1,
    "vending_machine": 0.65,
    "bench": 0.95,
    "traffic_sign": 0.05,
    "traffic_signals": 0.1,
    "bus_stop": 1.8,
    "subway_entrance": 2.1,
    "waste_basket": 0.25,
    "bollard": 0.1,
}
DEFAULT_OBJECT_RADIUS_M = 0.2
#: object types that are not obstacles (markings)
NON_SOLID_TYPES = frozenset({"crossing"})


@dataclass(frozen=True)
class Hit:
    """First contact of a swept piece: ``point`` on the grown obstacle's boundary, ``normal`` its outward
    unit normal there (pointing back towards the start), ``distance_m`` from the start, ``obstacle`` index."""

    point: tuple[float, float]
    normal: tuple[float, float]
    distance_m: float
    obstacle: int


@dataclass(frozen=True)
class MoveOutcome:
    """Result of :meth:`WalkableSpace.move`.

    Attributes:
        points: ``[(x_m, y_m, time_fraction)]`` after the start: the contact points and the end, each
            with the fraction of the piece's time at which the agent is there (the last is 1.0).
        end: final position.
        blocked: a contact happened.
        contacts: the contacts, in order.
    """

    points: tuple[tuple[float, float, float], ...]
    end: tuple[float, float]
    blocked: bool
    contacts: tuple[Hit, ...]


def _as_polygons(geom) -> list[Polygon]:
    if geom is None or geom.is_empty:
        return []
    return [g for g in shapely.get_parts(geom) if isinstance(g, Polygon) and not g.is_empty]


class WalkableSpace:
    """Obstacles and swept motion (see the module docstring).

    Args:
        footprints: building footprints (shapely Polygons / MultiPolygons, local metres).
        discs: street furniture ``(x_m, y_m, radius_m)``.
        passages: walkable lines (shapely LineStrings or coordinate lists) kept passable through footprints.
        agent_radius_m: radius of the agent's disc (>= 0).
        passage_half_width_m: half-width of a passage corridor; must exceed ``agent_radius_m``.
        bounds: ``(xmin, ymin, xmax, ymax)`` fence, or ``None`` (unbounded).
        skin_m: distance kept from walls after a contact.
    Raises:
        ValueError: negative radius, passage not wider than the agent, empty bounds.
    """

    def __init__(self, footprints: Iterable[Any] = (), discs: Iterable[tuple[float, float, float]] = (),
                 passages: Iterable[Any] = (), *, agent_radius_m: float = 0.25, passage_half_width_m: float = 1.5,
                 bounds: tuple[float, float, float, float] | None = None, skin_m: float = 1e-4,
                 max_slides: int = 4):
        if agent_radius_m < 0:
            raise ValueError("agent_radius_m must be >= 0")
        if passage_half_width_m <= agent_radius_m:
            raise ValueError("passage_half_width_m must exceed agent_radius_m, or passages close")
        self.agent_radius_m = float(agent_radius_m)
        self.passage_half_width_m = float(passage_half_width_m)
        self.skin_m = float(skin_m)
        self.max_slides = int(max_slides)
        self.bounds = tuple(float(v) for v in bounds) if bounds is not None else None
        fps = [shapely.make_valid(f) if not f.is_valid else f for f in footprints]
        fps = [f for f in fps if f is not None and not f.is_empty]
        lines = [ln if isinstance(ln, LineString) else LineString(ln) for ln in passages]
        lines = [ln for ln in lines if ln.length > 0]
        blocked = unary_union(fps) if fps else None
        if blocked is not None and lines:
            corridors = unary_union([ln.buffer(self.passage_half_width_m) for ln in lines])
            blocked = blocked.difference(corridors)
        parts: list[Any] = []
        if blocked is not None and not blocked.is_empty:
            parts.append(blocked.buffer(self.agent_radius_m) if self.agent_radius_m > 0 else blocked)
        self.discs = [(float(x), float(y), float(r)) for x, y, r in discs]
        for x, y, r in self.discs:
            parts.append(Point(x, y).buffer(r + self.agent_radius_m, quad_segs=16))
        if self.bounds is not None:
            x0, y0, x1, y1 = self.bounds
            if not (x1 - x0 > 2 * self.agent_radius_m and y1 - y0 > 2 * self.agent_radius_m):
                raise ValueError(f"empty bounds {self.bounds}")
            pad = 100.0
            parts.append(box(x0 - pad, y0 - pad, x1 + pad, y1 + pad).difference(
                box(x0 + self.agent_radius_m, y0 + self.agent_radius_m, x1 - self.agent_radius_m,
                    y1 - self.agent_radius_m)))
        polys = _as_polygons(unary_union(parts)) if parts else []
        self.obstacles = np.array(polys, dtype=object)
        for p in polys:
            shapely.prepare(p)
        self.tree = STRtree(self.obstacles) if len(polys) else None
        self._rings: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.footprints = fps
        self.passages = lines

    # ------------------------------------------------------------ builders
    @classmethod
    def from_annotations(cls, ann, *, object_radii_m: dict[str, float] | None = None,
                         bounds_margin_m: float | None = 50.0, **kw) -> "WalkableSpace":
        """Walkable space of an annotated (OSM) city.

        Args:
            ann: :class:`~urbanarena.world.annotations.Annotations`: ``buildings`` (footprints),
                ``objects`` (discs, :data:`OBJECT_RADII_M` overridden by ``object_radii_m``; types in
                :data:`NON_SOLID_TYPES` skipped), ``streets`` (passages).
            bounds_margin_m: fence at the streets' bounding box grown by this margin; ``None``: no fence.
            **kw: passed to the constructor (``agent_radius_m``, ``passage_half_width_m``, ...).
        """
        radii = dict(OBJECT_RADII_M)
        radii.update(object_radii_m or {})
        fps = [b.shape() for b in ann.buildings]
        discs = [(o.x_m, o.y_m, radii.get(o.type, DEFAULT_OBJECT_RADIUS_M)) for o in ann.objects
                 if o.type not in NON_SOLID_TYPES]
        lines = [s.xy for s in ann.streets if len(s.xy) >= 2]
        bounds = None
        if bounds_margin_m is not None and lines:
            xy = np.array([p for ln in lines for p in ln], float)
            bounds = (xy[:, 0].min() - bounds_margin_m, xy[:, 1].min() - bounds_margin_m,
                      xy[:, 0].max() + bounds_margin_m, xy[:, 1].max() + bounds_margin_m)
        return cls(fps, discs, lines, bounds=bounds, **kw)

    @classmethod
    def from_city(cls, city, **kw) -> "WalkableSpace":
        """:meth:`from_annotations` for an annotated city; for a city without annotations (a plain pose
        graph) only the fence around the nodes (``bounds_margin_m``, default 50 m) is an obstacle."""
        ann = getattr(city, "annotations", None)
        if ann is not None:
            return cls.from_annotations(ann, **kw)
        margin = kw.pop("bounds_margin_m", 50.0)
        kw.pop("object_radii_m", None)
        xs = [d["x_m"] for _, d in city.graph.nodes(data=True)]
        ys = [d["y_m"] for _, d in city.graph.nodes(data=True)]
        bounds = None
        if margin is not None and xs:
            bounds = (min(xs) - margin, min(ys) - margin, max(xs) + margin, max(ys) + margin)
        return cls((), (), (), bounds=bounds, **kw)

    # ------------------------------------------------------------ queries
    def is_free(self, x_m: float, y_m: float) -> bool:
        """True when the agent's centre at ``(x_m, y_m)`` touches no grown obstacle."""
        if self.tree is None:
            return True
        return len(self.tree.query(Point(x_m, y_m), predicate="intersects")) == 0

    def clearance_m(self, x_m: float, y_m: float) -> float:
        """Distance from the agent's centre to the nearest grown obstacle (0 inside one; ``inf`` without obstacles)."""
        if self.tree is None:
            return math.inf
        p = Point(x_m, y_m)
        i = self.tree.nearest(p)
        return float(self.obstacles[int(i)].distance(p))

    def nearest_free(self, x_m: float, y_m: float, max_m: float = 10.0) -> tuple[float, float] | None:
        """``(x_m, y_m)`` itself when free, else the nearest free point (1 mm off the obstacle boundary),
        or ``None`` when none lies within ``max_m``."""
        if self.is_free(x_m, y_m):
            return (float(x_m), float(y_m))
        p = Point(x_m, y_m)
        for i in self.tree.query(p, predicate="intersects"):
            poly = self.obstacles[int(i)]
            b, _ = nearest_points(poly.boundary, p)
            dx, dy = b.x - x_m, b.y - y_m
            d = math.hypot(dx, dy)
            if d > max_m:
                return None
            if d == 0:
                continue
            for eps in (1e-3, 1e-2, 0.05):
                q = (b.x + dx / d * eps, b.y + dy / d * eps)
                if self.is_free(*q):
                    return (float(q[0]), float(q[1]))
        return None

    def _ring_segments(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        hit = self._rings.get(i)
        if hit is None:
            poly = self.obstacles[i]
            a_list, b_list = [], []
            for ring in [poly.exterior, *poly.interiors]:
                c = np.asarray(ring.coords, float)
                a_list.append(c[:-1])
                b_list.append(c[1:])
            hit = (np.concatenate(a_list), np.concatenate(b_list))
            self._rings[i] = hit
        return hit

    def _normal_at(self, i: int, hx: float, hy: float, ux: float, uy: float) -> tuple[float, float]:
        """Unit normal of the boundary segment nearest to the hit point, turned against the motion ``(ux, uy)``."""
        a, b = self._ring_segments(i)
        ab = b - a
        L2 = np.maximum((ab ** 2).sum(axis=1), 1e-300)
        t = np.clip(((hx - a[:, 0]) * ab[:, 0] + (hy - a[:, 1]) * ab[:, 1]) / L2, 0.0, 1.0)
        cx, cy = a[:, 0] + t * ab[:, 0], a[:, 1] + t * ab[:, 1]
        k = int(np.argmin((cx - hx) ** 2 + (cy - hy) ** 2))
        tx, ty = ab[k] / math.sqrt(L2[k])
        nx, ny = -ty, tx
        if nx * ux + ny * uy > 0:
            nx, ny = -nx, -ny
        return float(nx), float(ny)

    def first_hit(self, p: tuple[float, float], q: tuple[float, float]) -> Hit | None:
        """First contact of the segment ``p -> q`` with a grown obstacle, or ``None`` (escape rule in the
        module docstring)."""
        if self.tree is None or (p[0] == q[0] and p[1] == q[1]):
            return None
        seg = LineString([p, q])
        P = Point(p)
        L = math.hypot(q[0] - p[0], q[1] - p[1])
        ux, uy = (q[0] - p[0]) / L, (q[1] - p[1]) / L
        best: tuple[float, int] | None = None
        for i in self.tree.query(seg, predicate="intersects"):
            i = int(i)
            poly = self.obstacles[i]
            off = 0.0
            piece = seg
            if poly.intersects(P):
                if poly.contains(P) and poly.exterior.distance(P) > self.skin_m and not any(
                        r.distance(P) <= self.skin_m for r in poly.interiors):
                    continue  # escape rule: the piece starts well inside this obstacle
                # on (or within the skin of) the boundary: blocked at once if the piece heads inwards,
                # else only a later entry counts
                off = min(2.0 * self.skin_m, L)
                if poly.intersects(Point(p[0] + ux * off, p[1] + uy * off)):
                    d = 0.0
                    if best is None or d < best[0]:
                        best = (d, i)
                    continue
                if off >= L:
                    continue
                piece = LineString([(p[0] + ux * off, p[1] + uy * off), q])
            inter = piece.intersection(poly)
            if inter.is_empty:
                continue
            d = off + float(Point(piece.coords[0]).distance(inter))
            if best is None or d < best[0]:
                best = (d, i)
        if best is None:
            return None
        d, i = best
        hx, hy = p[0] + ux * d, p[1] + uy * d
        n = self._normal_at(i, hx, hy, ux, uy)
        return Hit((hx, hy), n, d, i)

    def _contact_point(self, p, u, hit: Hit) -> tuple[float, float]:
        back = max(0.0, hit.distance_m - self.skin_m)
        cx, cy = p[0] + u[0] * back, p[1] + u[1] * back
        nx, ny = hit.normal
        # distance of c from the wall along the normal; push out to at least skin
        off = (cx - hit.point[0]) * nx + (cy - hit.point[1]) * ny
        if off < self.skin_m:
            cx, cy = cx + nx * (self.skin_m - off), cy + ny * (self.skin_m - off)
        if self.is_free(cx, cy):
            return (cx, cy)
        lo, hi = 0.0, back  # bisect back along the piece
        for _ in range(40):
            mid = (lo + hi) / 2
            if self.is_free(p[0] + u[0] * mid, p[1] + u[1] * mid):
                lo = mid
            else:
                hi = mid
        return (p[0] + u[0] * lo, p[1] + u[1] * lo)

    def move(self, p: tuple[float, float], delta: tuple[float, float], mode: str = "slide") -> MoveOutcome:
        """Move the agent's centre from ``p`` by the intended displacement ``delta`` (metres) at constant
        speed over one time unit, with swept collisions and the ``mode`` response (module docstring).

        Returns: :class:`MoveOutcome`; its ``points`` carry the time fraction at which each is reached
        (contact after fraction ``d / |delta|`` of the time; a slide uses the rest of it).
        Raises:
            ValueError: unknown ``mode``.
        """
        if mode not in ("slide", "stop"):
            raise ValueError(f"collision mode must be 'slide' or 'stop', got {mode!r}")
        pos = (float(p[0]), float(p[1]))
        rem = (float(delta[0]), float(delta[1]))
        t0, t_left = 0.0, 1.0
        points: list[tuple[float, float, float]] = []
        contacts: list[Hit] = []
        for _ in range(self.max_slides + 1):
            L = math.hypot(*rem)
            if L == 0.0:
                break
            q = (pos[0] + rem[0], pos[1] + rem[1])
            hit = self.first_hit(pos, q)
            if hit is None:
                pos = q
                break
            contacts.append(hit)
            u = (rem[0] / L, rem[1] / L)
            frac = min(1.0, hit.distance_m / L)
            c = self._contact_point(pos, u, hit)
            t_c = t0 + t_left * frac
            points.append((c[0], c[1], t_c))
            pos = c
            if mode == "stop":
                break
            left = (rem[0] * (1 - frac), rem[1] * (1 - frac))
            nx, ny = hit.normal
            dot = left[0] * nx + left[1] * ny
            rem = (left[0] - dot * nx, left[1] - dot * ny) if dot < 0 else left
            t0, t_left = t_c, t_left * (1 - frac)
            if math.hypot(*rem) < 1e-9:
                break
        points.append((pos[0], pos[1], 1.0))
        return MoveOutcome(tuple(points), pos, bool(contacts), tuple(contacts))

    def with_barriers(self, barriers: Iterable[Any]) -> "WalkableSpace":
        """A copy of this space with extra obstacles ``barriers`` (shapely polygons, local metres; e.g. the
        physical road-closure barriers of :mod:`.closures`), grown by the agent's radius like every obstacle
        but **not** cut by the passage corridors (a barrier across a footway blocks it). The copy shares this
        space's obstacles (no re-union: overlapping obstacles are tested one by one); no barriers: ``self``."""
        extra = [shapely.make_valid(b) if not b.is_valid else b for b in barriers]
        extra = [b.buffer(self.agent_radius_m) if self.agent_radius_m > 0 else b for b in extra if not b.is_empty]
        polys = _as_polygons(unary_union(extra)) if extra else []
        if not polys:
            return self
        new = object.__new__(WalkableSpace)
        new.__dict__.update(self.__dict__)
        for p in polys:
            shapely.prepare(p)
        new.obstacles = np.array(list(self.obstacles) + polys, dtype=object)
        new.tree = STRtree(new.obstacles)
        new._rings = {}
        return new

    def obstacle_union(self):
        """All grown obstacles as one shapely geometry (for drawing and tests)."""
        return unary_union(list(self.obstacles)) if len(self.obstacles) else shapely.GeometryCollection()


__all__ = ["OBJECT_RADII_M", "DEFAULT_OBJECT_RADIUS_M", "NON_SOLID_TYPES", "Hit", "MoveOutcome", "WalkableSpace"]
