"""People and vehicles of a panorama: a deterministic snapshot per node (issue 19, item 1).

A panorama is a moment. :func:`snapshot` places, around a node's camera, the people and vehicles of that moment,
from the city seed (the scene's name and :attr:`~.renderer.RenderSettings.population_seed`), the node id and the
condition (``clear``, ``night``, ``rain+dusk`` ...); the same inputs always give the same placements. The panorama
store draws them into the node's panorama (``population="snapshot"``; the setting is part of the cache key, so the
cache, prerendering and frozen-suite fingerprints keep working), the ID pass counts their pixels
(:func:`population_ids`) and the counting tasks read their ground truth from the same placements.

Kinds (local metres, x east, y north; headings compass degrees; sizes are the footprint's ``length_m`` along the
heading, ``width_m`` across, ``height_m`` up):

* ``parked_car`` -- along the kerbs of carriageways: both kerbs when the carriageway is at least
  :data:`PARK_BOTH_M` wide, the right-hand kerb from :data:`PARK_ONE_M`, none narrower; slots every
  :data:`PARK_SLOT_M` along the kerb, centred :data:`PARK_KERB_OFFSET_M` inside the edge, none within
  :data:`JUNCTION_CLEAR_M` of a street's ends (junctions) or :data:`CROSSWALK_CLEAR_M` of a crosswalk.
  **Parked cars do not depend on the node**: seeded by (city seed, condition, kerb slot), so neighbouring
  panoramas show the same parked cars (a parked car does not move between two panoramas taken seconds apart)
  and a count of the parked cars along a block is the same from every node.
* ``car`` (cars and vans) and ``tram`` -- moving, in the lanes left between the parking bands (two opposite lanes
  when that band is at least :data:`TWO_LANES_M` wide, else one), gaps drawn from an exponential law (mean
  :data:`CAR_GAP_MEAN_M`, at least :data:`CAR_GAP_MIN_M` bumper to bumper). Trams run on roads (ours), not on the
  imported tram tracks (``rail_lines``, drawn as rails by the realistic style since issue 14: placing them
  there would change the frozen ``helsinki-arena7-v3``/``-v4`` panoramas and their fingerprints): on a
  carriageway of at least :data:`TRAM_MIN_WIDTH_M` with probability :data:`TRAM_SHARE` per street and moment,
  a three-section articulated tram (9 m sections, 2.4 m wide, 3.4 m high, green and white as Helsinki's)
  whose sections follow the lane's curve.
* ``pedestrian`` -- walking on sidewalks (the renderer's 2 m sidewalks, centre 1 m outside the carriageway),
  on the verge beside carriageways without mapped sidewalks (the same offset, where it is not a building or
  another carriageway), on footways and pedestrian streets (across their width) and on squares; density per
  metre :data:`WALK_DENSITY_PER_M`, doubled on **shopping streets** (a road with at least
  :data:`SHOPPING_POIS` named POIs within :data:`SHOPPING_RADIUS_M` of it) and on pedestrian streets, times
  the condition's factor (:data:`CONDITION_FACTOR`: fewer at night and in rain).
* ``waiting`` -- people standing at the kerb at either end of a crosswalk, facing across the road (0-4 each end),
  and ``crossing`` -- people on the stripes (a third of the crosswalks). No walker or cyclist stands in a waiting
  zone (within :data:`WAIT_ZONE_ALONG_M` of the crosswalk's axis, up to :data:`WAIT_ZONE_ACROSS_M` beyond the
  kerb), so whoever stands there is waiting: the count of people waiting at a crosswalk is unambiguous.
* ``cyclist`` -- on cycleways/footways at least 3 m wide and in the kerb lane of carriageways without parking.

Every placement is dropped when its footprint comes within :data:`CAMERA_CLEAR_M` (people) or
:data:`CAMERA_CLEAR_VEHICLE_M` (vehicles) of the camera (the agent stands there; a car closer than that fills the
view, as no street-view camera sees one), overlaps a building or a street object's disc (trees, benches, lamps: the continuous mode's radii), or,
for people and cyclists off the road, lies on a carriageway; only placements within :data:`RADIUS_M` of the node
are kept (a 1.7 m person at 90 m is under 14 px tall in a 640 px, 90-degree view). Variety: cars 3.9-4.9 m
(vans 5.0-5.6 m) long from a palette of common car colours; people 1.50-1.95 m tall with shirt, trousers, hair
and skin tones, some with coats or bags (:mod:`.population_meshes`). Lighting is the condition's: the meshes are
drawn with the lit street-furniture program, so night, rain and fog light them as they light everything else.
"""

from __future__ import annotations

import hashlib
import math
import threading
import weakref
from dataclasses import dataclass

import numpy as np
import shapely
from shapely.geometry import LineString, Point, Polygon
from shapely.strtree import STRtree

from urbanarena.render.scene3d.scene import Scene

#: bumped whenever placements or meshes change (part of the panorama cache key, :func:`population_identity`)
POPULATION_VERSION = "population-1"
POPULATION_MODES = ("snapshot", "none")
#: the population each render style draws unless told otherwise (flat keeps its original pixels)
DEFAULT_POPULATION_OF_STYLE = {"realistic": "snapshot", "flat": "none", "photo": "snapshot"}

KINDS = ("pedestrian", "waiting", "crossing", "cyclist", "parked_car", "car", "tram")
PEOPLE_KINDS = ("pedestrian", "waiting", "crossing", "cyclist")
VEHICLE_KINDS = ("parked_car", "car", "tram")

RADIUS_M = 90.0
CAMERA_CLEAR_M = 1.5
CAMERA_CLEAR_VEHICLE_M = 3.0
PARK_BOTH_M = 9.0
PARK_ONE_M = 6.0
PARK_SLOT_M = 6.0
PARK_BAND_M = 2.2
PARK_KERB_OFFSET_M = 1.1
PARK_SHARE = 0.6
JUNCTION_CLEAR_M = 8.0
CROSSWALK_CLEAR_M = 5.0
TWO_LANES_M = 5.0
CAR_GAP_MEAN_M = 35.0
CAR_GAP_MIN_M = 6.0
TRAM_MIN_WIDTH_M = 6.5
TRAM_SHARE = 0.2
TRAM_SECTION_M = 9.0
WALK_DENSITY_PER_M = 1.0 / 9.0
SHOPPING_POIS = 4
SHOPPING_RADIUS_M = 20.0
SIDEWALK_OFFSET_M = 1.0
CYCLE_GAP_MEAN_M = 60.0
WAIT_ZONE_ALONG_M = 2.0
WAIT_ZONE_ACROSS_M = 2.5
CONDITION_FACTOR = {"day": 1.0, "dusk": 0.8, "night": 0.35, "clear": 1.0, "cloudy": 1.0, "rain": 0.6, "fog": 0.8}

#: keep-out radius around street objects by kind (metres; others 0.2 m): the furniture's meshes, as the continuous
#: mode's collision discs (which live in the env layer, above this one)
OBJECT_CLEAR_M = {"tree": 0.3, "street_lamp": 0.15, "vending_machine": 0.65, "bench": 0.95, "traffic_sign": 0.1,
                  "traffic_signals": 0.15, "bus_stop": 1.8, "subway_entrance": 2.1, "waste_basket": 0.25,
                  "bollard": 0.15}

#: colours of cars (a spread of common ones: white, black, greys, silver, blue, red, beige, green)
CAR_PALETTE = ((235, 235, 232), (24, 24, 26), (120, 122, 126), (170, 172, 176), (40, 62, 120), (150, 28, 30),
               (200, 188, 160), (48, 84, 60), (90, 40, 30), (210, 210, 215))


def check_population(mode: str) -> str:
    """``mode`` when it is one of :data:`POPULATION_MODES`. Raises ``ValueError`` naming the known ones."""
    if mode not in POPULATION_MODES:
        raise ValueError(f"population must be one of {', '.join(POPULATION_MODES)}, got {mode!r}")
    return mode


def population_identity() -> dict:
    """What determines the placements and meshes besides the settings (the version), for cache keys."""
    from urbanarena.render.scene3d.population_meshes import MESHES_VERSION

    return {"version": POPULATION_VERSION, "meshes": MESHES_VERSION}


@dataclass(frozen=True)
class Placement:
    """One person or vehicle of a snapshot (module docstring: kinds, sizes, units).

    ``anchor`` is what it belongs to: the road id (``road:<id>``), crosswalk (``crosswalk:<id>``) or square
    (``area:<id>``); counting tasks group by it. ``side`` is the kerb (+1 right of the road's direction, -1 left,
    0 none) of parked cars and waiting people. ``variant`` seeds the mesh's details (colours, coat, bag)."""

    id: str
    kind: str
    x_m: float
    y_m: float
    heading_deg: float
    length_m: float
    width_m: float
    height_m: float
    colour: tuple[int, int, int]
    anchor: str
    side: int = 0
    variant: int = 0

    def footprint(self, grow_m: float = 0.0) -> Polygon:
        """The oriented rectangle on the ground (grown by ``grow_m``)."""
        a = math.radians(self.heading_deg)
        f = np.array([math.sin(a), math.cos(a)])
        r = np.array([math.cos(a), -math.sin(a)])
        hl, hw = self.length_m / 2 + grow_m, self.width_m / 2 + grow_m
        c = np.array([self.x_m, self.y_m])
        return Polygon([tuple(c + sf * hl * f + sr * hw * r) for sf, sr in ((1, 1), (1, -1), (-1, -1), (-1, 1))])


@dataclass(frozen=True)
class Snapshot:
    """The people and vehicles of one node's panorama: ``placements`` in a fixed order (by id)."""

    node: str
    x_m: float
    y_m: float
    placements: tuple[Placement, ...]

    def of_kind(self, *kinds: str) -> list[Placement]:
        return [p for p in self.placements if p.kind in kinds]

    def count(self, kinds, anchor: str | None = None, side: int | None = None) -> int:
        """How many placements of ``kinds`` (a kind or a tuple), optionally of one ``anchor`` and kerb ``side``."""
        kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
        return sum(1 for p in self.placements if p.kind in kinds and (anchor is None or p.anchor == anchor)
                   and (side is None or p.side == side))

    def __len__(self) -> int:
        return len(self.placements)


# ------------------------------------------------------------------ seeding
def _rng(*parts) -> np.random.Generator:
    h = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return np.random.default_rng(int.from_bytes(h[:8], "little"))


def city_seed(scene: Scene, population_seed: int = 0) -> str:
    """The city seed: the scene's name and the settings' ``population_seed`` (not the content hash, so a renderer
    change that redraws the scene does not move the people)."""
    return f"{scene.name}#{int(population_seed)}"


# ------------------------------------------------------------------ layout
@dataclass
class _Line:
    """A line people or vehicles are placed along: a road's centreline at a signed lateral offset."""

    road: str
    line: LineString
    width_m: float
    kind: str
    shopping: bool
    parking: tuple[int, ...]   # kerb sides with parking (+1 right, -1 left)
    lanes: tuple[tuple[float, int], ...]   # (offset right of the centreline m, direction +1 along / -1 against)
    cycle_offset_m: float | None


class _Layout:
    """Per scene: lines, obstacles and indices (built once per scene, cached by content hash)."""

    def __init__(self, scene: Scene):
        self.scene = scene
        polys = []
        for b in scene.buildings:
            try:
                p = Polygon(b.footprint, list(b.holes))
                if p.is_valid and p.area > 0:
                    polys.append(p)
            except ValueError:
                continue
        self.buildings = shapely.union_all(polys) if polys else Polygon()
        shapely.prepare(self.buildings)
        discs = [Point(o.x_m, o.y_m).buffer(OBJECT_CLEAR_M.get(o.kind, 0.2), quad_segs=4) for o in scene.objects]
        self.objects = shapely.union_all(discs) if discs else Polygon()
        shapely.prepare(self.objects)
        carriage = [LineString(r.centreline).buffer(r.width_m / 2, cap_style="flat")
                    for r in scene.roads if r.kind == "road" and len(r.centreline) >= 2]
        self.carriageways = shapely.union_all(carriage) if carriage else Polygon()
        shapely.prepare(self.carriageways)
        poi_pts = np.array([(p.x_m, p.y_m) for p in scene.pois]) if scene.pois else np.zeros((0, 2))
        self.crosswalks = list(scene.crosswalks)
        cw_pts = [Point(c.x_m, c.y_m) for c in self.crosswalks]
        cw_tree = STRtree(cw_pts) if cw_pts else None
        self.lines: list[_Line] = []
        for r in scene.roads:
            if len(r.centreline) < 2:
                continue
            line = LineString(r.centreline)
            if line.length < 1.0:
                continue
            near = 0
            if len(poi_pts):
                near = int(shapely.intersects(line.buffer(r.width_m / 2 + SHOPPING_RADIUS_M),
                                              shapely.points(poi_pts)).sum())
            shopping = near >= SHOPPING_POIS
            parking: tuple[int, ...] = ()
            lanes: tuple[tuple[float, int], ...] = ()
            cycle = None
            if r.kind == "road":
                w = r.width_m
                parking = (1, -1) if w >= PARK_BOTH_M else (1,) if w >= PARK_ONE_M else ()
                lo = -w / 2 + (PARK_BAND_M if -1 in parking else 0.0)
                hi = w / 2 - (PARK_BAND_M if 1 in parking else 0.0)
                band = hi - lo
                mid = (lo + hi) / 2
                if band >= TWO_LANES_M:
                    lanes = ((mid + band / 4, 1), (mid - band / 4, -1))
                elif band >= 2.6:
                    lanes = ((mid, 1),)
                if not parking and w >= 5.0:
                    cycle = w / 2 - 0.8
            self.lines.append(_Line(r.id, line, float(r.width_m), r.kind, shopping, parking, lanes, cycle))
        self.road = {ln.road: ln for ln in self.lines}
        self.tree = STRtree([ln.line for ln in self.lines]) if self.lines else None
        self.cw_tree = cw_tree
        self.cw_pts = cw_pts
        self.areas = []
        for a in scene.paved_areas:
            try:
                p = Polygon(a.polygon, list(a.holes))
                if p.is_valid and p.area > 1.0:
                    self.areas.append((a.id, p))
            except ValueError:
                continue
        self._parked: dict[tuple, list[Placement]] = {}
        self._lock = threading.Lock()

    # ---------------------------------------------------------- geometry
    @staticmethod
    def at(line: LineString, s: float, offset_m: float) -> tuple[float, float, float]:
        """``(x, y, heading_deg)`` at arc length ``s`` of ``line``, ``offset_m`` to the right of its direction."""
        L = line.length
        s = min(max(s, 0.0), L)
        p0 = line.interpolate(max(0.0, s - 0.75))
        p1 = line.interpolate(min(L, s + 0.75))
        dx, dy = p1.x - p0.x, p1.y - p0.y
        n = math.hypot(dx, dy) or 1.0
        q = line.interpolate(s)
        # right of the direction (dx, dy) is (dy, -dx)
        return q.x + offset_m * dy / n, q.y - offset_m * dx / n, math.degrees(math.atan2(dx, dy)) % 360.0

    def near_crosswalk(self, x: float, y: float, r_m: float) -> bool:
        if self.cw_tree is None:
            return False
        return len(self.cw_tree.query(Point(x, y), predicate="dwithin", distance=r_m)) > 0

    def lines_near(self, x: float, y: float, r_m: float) -> list[_Line]:
        if self.tree is None:
            return []
        idx = self.tree.query(Point(x, y), predicate="dwithin", distance=r_m)
        return [self.lines[i] for i in sorted(int(i) for i in idx)]

    # ---------------------------------------------------------- parked cars (node-independent)
    def parked(self, seed: str, condition: str) -> list[Placement]:
        key = (seed, condition)
        with self._lock:
            got = self._parked.get(key)
            if got is not None:
                return got
        out: list[Placement] = []
        for ln in self.lines:
            for side in ln.parking:
                off = side * (ln.width_m / 2 - PARK_KERB_OFFSET_M)
                n = int((ln.line.length - 2 * JUNCTION_CLEAR_M) // PARK_SLOT_M)
                for k in range(max(0, n)):
                    s = JUNCTION_CLEAR_M + (k + 0.5) * PARK_SLOT_M
                    rng = _rng(seed, condition, "park", ln.road, side, k)
                    if rng.random() >= PARK_SHARE:
                        continue
                    x, y, h = self.at(ln.line, s, off)
                    if self.near_crosswalk(x, y, CROSSWALK_CLEAR_M):
                        continue
                    # facing the traffic of its kerb's side (right: along the road, left: against it), 10 % not
                    facing = h if side > 0 else (h + 180.0) % 360.0
                    if rng.random() < 0.1:
                        facing = (facing + 180.0) % 360.0
                    out.append(_vehicle(f"parked:{ln.road}:{side:+d}:{k}", "parked_car", x, y, facing, rng,
                                        f"road:{ln.road}", side))
        with self._lock:
            self._parked[key] = out
        return out


def _vehicle(pid: str, kind: str, x: float, y: float, heading: float, rng: np.random.Generator, anchor: str,
             side: int = 0) -> Placement:
    van = rng.random() < 0.15
    if van:
        L, W, H = rng.uniform(5.0, 5.6), rng.uniform(1.95, 2.05), rng.uniform(2.0, 2.35)
    else:
        L, W, H = rng.uniform(3.9, 4.9), rng.uniform(1.7, 1.9), rng.uniform(1.4, 1.6)
    colour = CAR_PALETTE[int(rng.integers(len(CAR_PALETTE)))]
    return Placement(pid, kind, float(x), float(y), float(heading), float(L), float(W), float(H), colour, anchor,
                     side, int(rng.integers(1 << 30)) * 2 + (1 if van else 0))


def _person(pid: str, kind: str, x: float, y: float, heading: float, rng: np.random.Generator, anchor: str,
            side: int = 0) -> Placement:
    h = float(np.clip(rng.normal(1.72, 0.1), 1.5, 1.95))
    if rng.random() < 0.08:  # a child
        h = float(rng.uniform(1.05, 1.4))
    return Placement(pid, kind, float(x), float(y), float(heading) % 360.0, 0.35, 0.5, h, (0, 0, 0), anchor, side,
                     int(rng.integers(1 << 30)))


def _cyclist(pid: str, x: float, y: float, heading: float, rng: np.random.Generator, anchor: str) -> Placement:
    return Placement(pid, "cyclist", float(x), float(y), float(heading) % 360.0, 1.75, 0.6,
                     float(np.clip(rng.normal(1.75, 0.08), 1.55, 1.95)), (0, 0, 0), anchor, 0,
                     int(rng.integers(1 << 30)))


_LAYOUTS: "dict[int, tuple]" = {}
_LAYOUT_LOCK = threading.Lock()


def layout_of(scene: Scene) -> _Layout:
    """The scene's placement layout (built once per scene object, the last four kept)."""
    with _LAYOUT_LOCK:
        got = _LAYOUTS.get(id(scene))
        if got is not None and got[0]() is scene:
            return got[1]
        lay = _Layout(scene)
        _LAYOUTS[id(scene)] = (weakref.ref(scene), lay)
        while len(_LAYOUTS) > 4:
            _LAYOUTS.pop(next(iter(_LAYOUTS)))
        return lay


# ------------------------------------------------------------------ the snapshot
def _footprints(ps: list[Placement]) -> np.ndarray:
    """Oriented rectangles of ``ps`` as shapely polygons (vectorised)."""
    a = np.radians([p.heading_deg for p in ps])
    f = np.stack([np.sin(a), np.cos(a)], axis=1)
    r = np.stack([np.cos(a), -np.sin(a)], axis=1)
    hl = np.array([p.length_m / 2 for p in ps])[:, None]
    hw = np.array([p.width_m / 2 for p in ps])[:, None]
    c = np.array([[p.x_m, p.y_m] for p in ps])
    ring = np.stack([c + sf * hl * f + sr * hw * r for sf, sr in ((1, 1), (1, -1), (-1, -1), (-1, 1), (1, 1))],
                    axis=1)
    return shapely.polygons(ring)


def _filter(lay: _Layout, cands: list[tuple[Placement, bool]], x_m: float, y_m: float) -> list[Placement]:
    """The candidates kept (module docstring): clear of the camera, buildings and furniture, and people off the
    carriageways unless they cross it."""
    if not cands:
        return []
    ps = [p for p, _ in cands]
    fps = _footprints(ps)
    cam = Point(x_m, y_m)
    vehicle = np.array([p.kind in VEHICLE_KINDS for p in ps])
    ok = shapely.distance(fps, cam) >= np.where(vehicle, CAMERA_CLEAR_VEHICLE_M, CAMERA_CLEAR_M)
    ok &= ~shapely.intersects(lay.buildings, fps)
    ok &= ~shapely.intersects(lay.objects, fps)
    off_road = np.array([not on for _, on in cands])
    if off_road.any():
        pts = shapely.points([(p.x_m, p.y_m) for p in ps])
        ok &= ~(off_road & shapely.intersects(lay.carriageways, pts))
    return [p for p, k in zip(ps, ok) if k]


def _clear_waiting_zones(lay: _Layout, cands: list, x_m: float, y_m: float, radius_m: float) -> list:
    """Drop walkers and cyclists standing in a crosswalk's waiting zone (within :data:`WAIT_ZONE_ALONG_M` of its
    axis, up to :data:`WAIT_ZONE_ACROSS_M` beyond the kerb), so that whoever stands there is waiting to cross."""
    near = [c for c in lay.crosswalks if math.hypot(c.x_m - x_m, c.y_m - y_m) <= radius_m + 5.0]
    if not near:
        return cands
    out = []
    for p, on in cands:
        if p.kind in ("pedestrian", "cyclist"):
            hit = False
            for c in near:
                a = math.radians(c.road_bearing_deg)
                dx, dy = p.x_m - c.x_m, p.y_m - c.y_m
                along = abs(dx * math.sin(a) + dy * math.cos(a))
                across = abs(dx * math.cos(a) - dy * math.sin(a))
                if along <= WAIT_ZONE_ALONG_M and c.road_width_m / 2 <= across <= c.road_width_m / 2 + WAIT_ZONE_ACROSS_M:
                    hit = True
                    break
            if hit:
                continue
        out.append((p, on))
    return out


def snapshot(scene: Scene, node: str, x_m: float, y_m: float, condition: str = "clear",
             population_seed: int = 0, radius_m: float = RADIUS_M) -> Snapshot:
    """The people and vehicles of ``node``'s panorama (module docstring), camera at ``(x_m, y_m)``.

    Args:
        scene: the city's scene (roads, crosswalks, squares, buildings, objects, POIs).
        node: the node id (seeds everything but the parked cars).
        x_m, y_m: the camera position, local metres.
        condition: the render condition's name (``clear``, ``night``, ``rain+dusk`` ...).
        population_seed: the city seed's number (:func:`city_seed`).
        radius_m: placements farther from the camera are left out.
    Returns:
        a :class:`Snapshot` whose placements are sorted by id.
    """
    lay = layout_of(scene)
    seed = city_seed(scene, population_seed)
    weather, _, tod = condition.partition("+")
    if not tod:
        weather, tod = (("clear", weather) if weather in ("day", "dusk", "night") else (weather, "day"))
    factor = CONDITION_FACTOR.get(weather, 1.0) * CONDITION_FACTOR.get(tod, 1.0)
    cam = Point(x_m, y_m)
    R2 = radius_m * radius_m
    cands: list[tuple[Placement, bool]] = []

    def keep(p: Placement, on_road: bool) -> None:
        if (p.x_m - x_m) ** 2 + (p.y_m - y_m) ** 2 <= R2:
            cands.append((p, on_road))

    for p in lay.parked(seed, condition):
        keep(p, True)
    for ln in lay.lines_near(x_m, y_m, radius_m):
        L = ln.line.length
        base = f"{ln.road}"
        # moving vehicles
        for li, (off, direction) in enumerate(ln.lanes):
            rng = _rng(seed, condition, node, "lane", ln.road, li)
            if li == 0 and ln.width_m >= TRAM_MIN_WIDTH_M and L >= 3 * TRAM_SECTION_M + 2 and rng.random() < TRAM_SHARE:
                s0 = rng.uniform(TRAM_SECTION_M * 1.5, L - TRAM_SECTION_M * 1.5)
                for k in (-1, 0, 1):
                    x, y, h = lay.at(ln.line, s0 + k * (TRAM_SECTION_M + 0.3), off)
                    keep(Placement(f"tram:{base}:{li}:{k + 1}", "tram", x, y, h if direction > 0 else (h + 180) % 360,
                                   TRAM_SECTION_M, 2.4, 3.4, (60, 140, 70), f"road:{ln.road}", 0, k + 1), True)
                continue
            s = rng.exponential(CAR_GAP_MEAN_M / max(factor, 0.3)) * rng.random()
            k = 0
            while s < L - 2.5:
                if s > 2.5:
                    x, y, h = lay.at(ln.line, s, off)
                    v = _vehicle(f"car:{base}:{li}:{k}", "car", x, y, h if direction > 0 else (h + 180) % 360, rng,
                                 f"road:{ln.road}")
                    if not lay.near_crosswalk(x, y, 2.5):
                        keep(v, True)
                    s += v.length_m
                    k += 1
                s += CAR_GAP_MIN_M + rng.exponential(CAR_GAP_MEAN_M / max(factor, 0.3))
        # cyclists
        if ln.cycle_offset_m is not None or (ln.kind == "footway" and ln.width_m >= 3.0):
            rng = _rng(seed, condition, node, "cycle", ln.road)
            off = ln.cycle_offset_m if ln.cycle_offset_m is not None else 0.0
            s = rng.exponential(CYCLE_GAP_MEAN_M / factor)
            k = 0
            while s < L:
                x, y, h = lay.at(ln.line, s, off)
                keep(_cyclist(f"cyclist:{base}:{k}", x, y, h if rng.random() < 0.5 else h + 180, rng,
                              f"road:{ln.road}"), ln.kind == "road")
                k += 1
                s += 4.0 + rng.exponential(CYCLE_GAP_MEAN_M / factor)
        # pedestrians
        rng = _rng(seed, condition, node, "walk", ln.road)
        dens = WALK_DENSITY_PER_M * factor * (2.0 if (ln.shopping or ln.kind == "pedestrian") else 1.0)
        if ln.kind == "road":
            sides = ((1, ln.width_m / 2 + SIDEWALK_OFFSET_M), (-1, -(ln.width_m / 2 + SIDEWALK_OFFSET_M)))
            for side, off in sides:
                n = int(rng.poisson(dens * L))
                for k in range(n):
                    s = rng.uniform(0, L)
                    x, y, h = lay.at(ln.line, s, off + rng.uniform(-0.6, 0.6))
                    keep(_person(f"ped:{base}:{side:+d}:{k}", "pedestrian", x, y,
                                 h if rng.random() < 0.5 else h + 180 + rng.normal(0, 10), rng, f"road:{ln.road}",
                                 side), False)
        else:
            half = max(0.0, ln.width_m / 2 - 0.4)
            n = int(rng.poisson(dens * L * max(1.0, ln.width_m / 3.0)))
            for k in range(n):
                s = rng.uniform(0, L)
                x, y, h = lay.at(ln.line, s, rng.uniform(-half, half))
                keep(_person(f"ped:{base}:0:{k}", "pedestrian", x, y,
                             h if rng.random() < 0.5 else h + 180 + rng.normal(0, 10), rng, f"road:{ln.road}"), False)
    # squares
    for aid, poly in lay.areas:
        if poly.distance(cam) > radius_m:
            continue
        rng = _rng(seed, condition, node, "area", aid)
        n = int(rng.poisson(poly.area / 60.0 * factor))
        minx, miny, maxx, maxy = poly.bounds
        for k in range(n):
            for _ in range(10):
                x, y = rng.uniform(minx, maxx), rng.uniform(miny, maxy)
                if poly.contains(Point(x, y)):
                    keep(_person(f"ped:area:{aid}:{k}", "pedestrian", x, y, rng.uniform(0, 360), rng, f"area:{aid}"),
                         False)
                    break
    # crosswalks: people waiting at both kerbs, some on the stripes
    for ci, c in enumerate(lay.crosswalks):
        if (c.x_m - x_m) ** 2 + (c.y_m - y_m) ** 2 > R2:
            continue
        rng = _rng(seed, condition, node, "crosswalk", c.id)
        a = math.radians(c.road_bearing_deg)
        across = np.array([math.cos(a), -math.sin(a)])  # right of the road's direction
        along = np.array([math.sin(a), math.cos(a)])
        for side in (1, -1):
            n = int(min(4, rng.poisson(1.1 * factor)))
            for k in range(n):
                d = c.road_width_m / 2 + 0.6 + 0.55 * (k // 2)
                t = (k % 2 - 0.5) * 0.9 + rng.normal(0, 0.15)
                x, y = np.array([c.x_m, c.y_m]) + side * d * across + t * along
                facing = (c.road_bearing_deg + (-90.0 if side > 0 else 90.0) + rng.normal(0, 8)) % 360.0
                keep(_person(f"wait:{c.id}:{side:+d}:{k}", "waiting", x, y, facing, rng, f"crosswalk:{c.id}", side),
                     False)
        if rng.random() < 0.33:
            n = int(rng.integers(1, 4))
            for k in range(n):
                t = rng.uniform(-c.road_width_m / 2 + 0.5, c.road_width_m / 2 - 0.5)
                x, y = np.array([c.x_m, c.y_m]) + t * across + rng.uniform(-1.0, 1.0) * along
                facing = (c.road_bearing_deg + (90.0 if rng.random() < 0.5 else -90.0)) % 360.0
                keep(_person(f"cross:{c.id}:{k}", "crossing", x, y, facing, rng, f"crosswalk:{c.id}"), True)
    cands = _clear_waiting_zones(lay, cands, x_m, y_m, radius_m)
    out = _filter(lay, cands, x_m, y_m)
    out.sort(key=lambda p: p.id)
    return Snapshot(node, float(x_m), float(y_m), tuple(out))


def snapshot_for_settings(scene: Scene, settings, node: str, x_m: float, y_m: float) -> Snapshot | None:
    """:func:`snapshot` when ``settings.population`` is ``snapshot``, else ``None``."""
    if getattr(settings, "population", "none") != "snapshot":
        return None
    return snapshot(scene, node, x_m, y_m, settings.condition, settings.population_seed)


__all__ = ["CAR_PALETTE", "DEFAULT_POPULATION_OF_STYLE", "KINDS", "PEOPLE_KINDS", "POPULATION_MODES",
           "POPULATION_VERSION", "Placement", "Snapshot", "VEHICLE_KINDS", "check_population", "city_seed",
           "layout_of", "population_identity", "snapshot", "snapshot_for_settings"]
