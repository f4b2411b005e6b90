"""The dynamic city of the continuous environment: a task's JSON dynamics spec and its world state.

Spec (JSON object a task carries; every key optional; ``docs/continuous.md``)::

    {"closures": [{"id": "c1", "line_xy_m": [[x, y], ...], "half_width_m": 0.0,
                   "notice_after_s": 30.0, "physical": false, "label": "Mannerheimintie"}],
     "pedestrians": {"seed": 0, "count": 12, "speed_mps": 1.2,
                     "routes": null | [[[x, y], ...], ...],
                     "center_xy_m": null | [x, y], "area_radius_m": null | r,
                     "route_length_m": [40, 200], "radius_m": 0.25}}

* closures: :mod:`.closures` (``half_width_m``, ``notice_after_s``, ``physical``,
  ``label`` default 0, 0, false, the id);
* pedestrians: :mod:`.pedestrians`. ``routes`` given: one pedestrian per route
  starting at its first point at ``t = 0`` (``count``, if given, must equal the number
  of routes; ``seed`` unused); ``routes`` null: ``count`` generated routes from
  ``seed`` (and the optional area and length range). ``speed_mps`` default 1.2
  (a typical pedestrian walking speed; the agent walks at 1.4 m/s).

:class:`DynamicWorld` is that world as pure functions of simulated time (what is
shown, where each pedestrian is, their exact trajectories);
:class:`EpisodeDynamics` is one episode's record kept by
:class:`~urbanarena.env.continuous.env.ContinuousEnv` (notices delivered, contacts,
the closure violation) and what the scorer needs (:meth:`EpisodeDynamics.record`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import cv2
import numpy as np

from urbanarena.env.continuous.closures import ClosureSpec, first_crossing, notice_text, parse_points
from urbanarena.env.continuous.pedestrians import (
    PEDESTRIAN_RADIUS_M, STOP_EPS_M, PedestrianSet, contact_onsets, first_block,
)
from urbanarena.env.continuous.vehicles import VehicleSet, VehicleSpec
from urbanarena.env.continuous.spec_record import check_record
from urbanarena.errors import TaskFormatError
from urbanarena.render.scene3d.dynamic import Barrier, DynamicObjects, Figure, SHIRT_PALETTE

DEFAULT_PEDESTRIAN_SPEED_MPS = 1.2
CLOSURE_MAP_RGB = (230, 30, 30)

_PED_KEYS = {"seed", "count", "speed_mps", "routes", "center_xy_m", "area_radius_m", "route_length_m", "radius_m"}


def _number(d: Mapping, key: str, record: str, default, lo: float | None = None, integer: bool = False):
    v = d.get(key, default)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
        raise TaskFormatError(None, record, f"{key} must be a finite number, got {v!r}")
    if integer and float(v) != int(v):
        raise TaskFormatError(None, record, f"{key} must be an integer, got {v!r}")
    if lo is not None and v < lo:
        raise TaskFormatError(None, record, f"{key} must be >= {lo}, got {v!r}")
    return int(v) if integer else float(v)


@dataclass(frozen=True)
class PedestrianSpec:
    """The ``pedestrians`` part of a dynamics spec (module docstring)."""

    seed: int = 0
    count: int = 0
    speed_mps: float = DEFAULT_PEDESTRIAN_SPEED_MPS
    routes: tuple[tuple[tuple[float, float], ...], ...] | None = None
    center_xy_m: tuple[float, float] | None = None
    area_radius_m: float | None = None
    route_length_m: tuple[float, float] = (40.0, 200.0)
    radius_m: float = PEDESTRIAN_RADIUS_M

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], record: str = "dynamics.pedestrians") -> "PedestrianSpec":
        """Parse and check (raises :class:`~urbanarena.errors.TaskFormatError` naming ``record``)."""
        check_record(d, record, "pedestrians", "pedestrian", _PED_KEYS)
        routes = d.get("routes")
        if routes is not None:
            if not isinstance(routes, (list, tuple)):
                raise TaskFormatError(None, record, "routes must be a list of polylines or null")
            routes = tuple(parse_points(r, f"{record}.routes[{k}]", "route", min_points=1)
                           for k, r in enumerate(routes))
        count = _number(d, "count", record, None, 0, integer=True)
        if routes is not None:
            if count is not None and count != len(routes):
                raise TaskFormatError(None, record, f"count {count} differs from the {len(routes)} routes given")
            count = len(routes)
        elif count is None:
            raise TaskFormatError(None, record, "pedestrians need routes or a count")
        centre = d.get("center_xy_m")
        if centre is not None:
            centre = parse_points([centre], record, "center_xy_m", min_points=1)[0]
        rl = d.get("route_length_m", (40.0, 200.0))
        if (not isinstance(rl, (list, tuple)) or len(rl) != 2 or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in rl) or not 0 <= rl[0] <= rl[1]):
            raise TaskFormatError(None, record, f"route_length_m must be [lo, hi] with 0 <= lo <= hi, got {rl!r}")
        return cls(seed=_number(d, "seed", record, 0, integer=True), count=count,
                   speed_mps=_number(d, "speed_mps", record, DEFAULT_PEDESTRIAN_SPEED_MPS, 0.0), routes=routes,
                   center_xy_m=centre, area_radius_m=_number(d, "area_radius_m", record, None, 0.0),
                   route_length_m=(float(rl[0]), float(rl[1])),
                   radius_m=_number(d, "radius_m", record, PEDESTRIAN_RADIUS_M, 0.0))

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "count": self.count, "speed_mps": self.speed_mps,
                "routes": None if self.routes is None else [[list(p) for p in r] for r in self.routes],
                "center_xy_m": None if self.center_xy_m is None else list(self.center_xy_m),
                "area_radius_m": self.area_radius_m, "route_length_m": list(self.route_length_m),
                "radius_m": self.radius_m}


@dataclass(frozen=True)
class DynamicsSpec:
    """A task's dynamics: ``closures``, optional ``pedestrians`` and an optional render ``condition``
    (weather / time of day: ``night``, ``fog``, ``rain+dusk`` ...; :mod:`urbanarena.render.scene3d.conditions`;
    ``None`` = the renderer's default clear day)."""

    closures: tuple[ClosureSpec, ...] = ()
    pedestrians: PedestrianSpec | None = None
    condition: str | None = None
    vehicles: VehicleSpec | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None, record: str = "dynamics") -> "DynamicsSpec":
        """Parse a JSON dynamics spec (``None`` or ``{}``: nothing dynamic).

        Raises:
            TaskFormatError: unknown keys, malformed closures/pedestrians, duplicate closure ids.
        """
        if d is None:
            return cls()
        check_record(d, record, "dynamics", "dynamics", {"closures", "pedestrians", "condition", "vehicles"})
        raw = d.get("closures") or []
        if not isinstance(raw, (list, tuple)):
            raise TaskFormatError(None, record, "closures must be a list")
        closures = tuple(ClosureSpec.from_dict(c, f"{record}.closures[{k}]") for k, c in enumerate(raw))
        ids = [c.id for c in closures]
        if len(ids) != len(set(ids)):
            dup = sorted({i for i in ids if ids.count(i) > 1})
            raise TaskFormatError(None, f"{record}.closures", f"duplicate closure ids {dup}")
        ped = d.get("pedestrians")
        cond = d.get("condition")
        if cond is not None:
            from urbanarena.render.scene3d.conditions import parse_condition

            try:
                parse_condition(cond)
            except (ValueError, TypeError) as e:
                raise TaskFormatError(None, f"{record}.condition", str(e)) from None
        veh = d.get("vehicles")
        return cls(closures, PedestrianSpec.from_dict(ped, f"{record}.pedestrians") if ped is not None else None,
                   cond, VehicleSpec.from_dict(veh, f"{record}.vehicles") if veh is not None else None)

    def to_dict(self) -> dict[str, Any]:
        d = {"closures": [c.to_dict() for c in self.closures],
             "pedestrians": None if self.pedestrians is None else self.pedestrians.to_dict()}
        if self.condition is not None:
            d["condition"] = self.condition
        if self.vehicles is not None:
            d["vehicles"] = self.vehicles.to_dict()
        return d


class DynamicWorld:
    """A dynamics spec on a city, as pure functions of simulated time.

    Args:
        city: the city (its local frame for notices; its walk network for generated routes).
        spec: :class:`DynamicsSpec`.
        network: the :class:`~urbanarena.env.continuous.walk_network.WalkNetwork` (built from the city when
            needed and not given).
    Raises:
        TaskFormatError: generated pedestrian routes impossible on this network (no vertex in the area, no
            route of the requested length).
    """

    def __init__(self, city, spec: DynamicsSpec, network=None):
        self.city = city
        self.spec = spec
        self.closures = spec.closures
        self.pedestrians: PedestrianSet | None = None
        p = spec.pedestrians
        if p is not None and p.count > 0:
            if p.routes is not None:
                self.pedestrians = PedestrianSet(p.routes, p.speed_mps, None, p.radius_m)
            else:
                if network is None:
                    from urbanarena.env.continuous.walk_network import WalkNetwork
                    network = WalkNetwork.from_city(city)
                try:
                    self.pedestrians = PedestrianSet.generate(network, p.count, p.seed, p.speed_mps, p.center_xy_m,
                                                              p.area_radius_m, p.route_length_m, p.radius_m)
                except ValueError as e:
                    raise TaskFormatError(None, "dynamics.pedestrians",
                                          f"on city {getattr(city, 'name', '?')!r}: {e}") from e
        #: parked and moving cars (:mod:`.vehicles`), or ``None``
        self.vehicles: VehicleSet | None = None
        if spec.vehicles is not None and (spec.vehicles.parked or spec.vehicles.moving):
            if getattr(city, "annotations", None) is None:
                raise TaskFormatError(None, "dynamics.vehicles",
                                      f"city {getattr(city, 'name', '?')!r} has no annotations: no roads for vehicles")
            self.vehicles = VehicleSet(city, spec.vehicles)

    @classmethod
    def from_spec(cls, city, spec: Mapping[str, Any] | DynamicsSpec | None, network=None) -> "DynamicWorld":
        """From a JSON spec (dict) or a :class:`DynamicsSpec` (raises ``TaskFormatError`` on bad specs)."""
        if not isinstance(spec, DynamicsSpec):
            spec = DynamicsSpec.from_dict(spec)
        return cls(city, spec, network)

    # ------------------------------------------------------------ closures
    def announced_closures(self, t_s: float) -> list[ClosureSpec]:
        """Closures whose notice time ``notice_after_s`` is ``<= t_s``."""
        return [c for c in self.closures if c.notice_after_s <= t_s]

    def shown_barriers(self, t_s: float) -> list[ClosureSpec]:
        """Closures drawn in the first-person view at ``t_s``: physical ones always, others once announced."""
        return [c for c in self.closures if c.physical or c.notice_after_s <= t_s]

    def physical_obstacles(self) -> list:
        """Footprints of the physical barriers and parked cars (shapely polygons, before growing by the agent's
        radius)."""
        cars = self.vehicles.obstacles() if self.vehicles is not None else []
        return [c.obstacle() for c in self.closures if c.physical] + cars

    # ------------------------------------------------------------ pedestrians
    @property
    def n_pedestrians(self) -> int:
        return 0 if self.pedestrians is None else len(self.pedestrians)

    def pedestrian_positions(self, t_s: float) -> np.ndarray:
        """``(N, 2)`` pedestrian positions (local metres) at simulated ``t_s`` (``(0, 2)`` without pedestrians)."""
        return np.zeros((0, 2)) if self.pedestrians is None else self.pedestrians.positions(t_s)

    def pedestrian_tracks(self, t_end_s: float, t_start_s: float = 0.0) -> list[tuple[np.ndarray, np.ndarray]]:
        """Exact trajectories ``[(t_s (K,), xy_m (K, 2))]`` on ``[t_start_s, t_end_s]``, one per pedestrian:
        ``[Trajectory.from_arrays(t, xy) for t, xy in world.pedestrian_tracks(T)]`` is the ``pedestrians``
        argument of ``urbanarena.tasks.metrics.urbanground.pedestrian_collisions``."""
        return [] if self.pedestrians is None else self.pedestrians.tracks(t_end_s, t_start_s)

    # ------------------------------------------------------------ drawing
    def scene_objects(self, t_s: float) -> DynamicObjects:
        """Figures (pedestrians at ``t_s``), barriers (:meth:`shown_barriers`) and cars (parked, and moving at
        ``t_s``) for the 3D renderer."""
        figs = ()
        if self.pedestrians is not None:
            pos = self.pedestrians.positions(t_s)
            hd = self.pedestrians.headings_deg(t_s)
            figs = tuple(Figure(float(x), float(y), float(h), colour_index=i % len(SHIRT_PALETTE))
                         for i, ((x, y), h) in enumerate(zip(pos, hd)))
        bars = tuple(Barrier(tuple(line)) for c in self.shown_barriers(t_s) for line in c.barrier_lines())
        cars = self.vehicles.placements(t_s) if self.vehicles is not None else ()
        return DynamicObjects(figs, bars, cars)

    def draw_on_map(self, img: np.ndarray, map_renderer, t_s: float) -> np.ndarray:
        """Draw the announced closures (red lines, zones outlined; with a white core) on a map image in place.

        Args:
            img: the map image ``(H, W, 3)``; map_renderer: the :class:`~urbanarena.render.maps.MapRenderer`
                that drew it (its ``world_to_px``).
        """
        for c in self.announced_closures(t_s):
            for line in c.barrier_lines():
                xy = np.asarray(line, float)
                u, v = map_renderer.world_to_px(xy[:, 0], xy[:, 1])
                pts = np.round(np.stack([np.asarray(u, float), np.asarray(v, float)], axis=1) * 16).astype(np.int32)
                cv2.polylines(img, [pts], False, CLOSURE_MAP_RGB, 5, cv2.LINE_AA, shift=4)
                cv2.polylines(img, [pts], False, (255, 255, 255), 1, cv2.LINE_AA, shift=4)
        return img


class EpisodeDynamics:
    """One episode's dynamic state, kept by the environment (module docstring).

    Attributes:
        world: the :class:`DynamicWorld`.
        contact_m: agent radius + pedestrian radius.
        notice_times_s: closure id -> simulated time of the observation that delivered its notice.
        notices: notice texts delivered so far (in order).
        violation: ``{"closure", "t_s", "xy_m"}`` of the closure violation that ended the episode, or ``None``.
        contacts: ``[{"pedestrian", "t_s"}]`` collision onsets (the PCR count is ``len(contacts)``).
        blocks: number of moves cut short by a pedestrian.
    """

    def __init__(self, world: DynamicWorld, agent_radius_m: float):
        self.world = world
        self.contact_m = float(agent_radius_m) + (world.pedestrians.radius_m if world.pedestrians else 0.0)
        self.notice_times_s: dict[str, float] = {}
        self.notices: list[str] = []
        self.violation: dict[str, Any] | None = None
        self.contacts: list[dict[str, Any]] = []
        self.blocks = 0
        self._inside = np.zeros(world.n_pedestrians, bool)
        veh = world.vehicles
        #: agent radius + a car disc's radius; vehicle collision onsets ``[{"vehicle", "t_s"}]`` (not in PCR)
        self.vehicle_contact_m = float(agent_radius_m) + (veh.discs.radius_m if veh is not None else 0.0)
        self.vehicle_contacts: list[dict[str, Any]] = []
        self.vehicle_blocks = 0
        self._vinside = np.zeros(len(veh.discs) if veh is not None else 0, bool)

    # ------------------------------------------------------------ pedestrians
    def block_motion(self, t0: float, x0: float, y0: float, yaw0: float, pitch0: float,
                     samples: list[tuple[float, float, float, float, float]]
                     ) -> tuple[list[tuple[float, float, float, float, float]], float | None]:
        """Cut a move's samples (absolute ``(t, x, y, yaw, pitch)`` after the start pose ``(t0, x0, y0, yaw0,
        pitch0)``) at the
        first pedestrian block (:func:`.pedestrians.first_block` at ``contact_m - 1e-6``); after it the position
        stays, the orientation goes on. Returns ``(samples, block time or None)``."""
        peds = self.world.pedestrians
        cars = self.world.vehicles.discs if self.world.vehicles is not None else None
        if (peds is None and cars is None) or not samples:
            return samples, None
        at = np.array([t0] + [s[0] for s in samples])
        axy = np.array([(x0, y0)] + [(s[1], s[2]) for s in samples])
        tp = _first_block_of(peds, at, axy, self.contact_m)
        tv = _first_block_of(cars, at, axy, self.vehicle_contact_m)
        best = min((t for t in (tp, tv) if t is not None), default=None)
        if best is None:
            return samples, None
        if tp is not None and tp == best:
            self.blocks += 1
        else:
            self.vehicle_blocks += 1
        bx, by = (float(np.interp(best, at, axy[:, 0])), float(np.interp(best, at, axy[:, 1])))
        out = []
        for k, s in enumerate(samples):
            if s[0] < best:
                out.append(s)
                continue
            if not out or out[-1][0] < best:
                prev = samples[k - 1] if k > 0 else (t0, x0, y0, yaw0, pitch0)
                yaw, pitch = s[3], s[4]
                if s[0] > prev[0]:
                    f = (best - prev[0]) / (s[0] - prev[0])
                    dyaw = (s[3] - prev[3] + 180.0) % 360.0 - 180.0
                    yaw, pitch = (prev[3] + f * dyaw) % 360.0, prev[4] + f * (s[4] - prev[4])
                if best > t0:
                    out.append((best, bx, by, yaw, pitch))
            if s[0] > best:
                out.append((s[0], bx, by, s[3], s[4]))
        return out, best

    def count_contacts(self, at: np.ndarray, axy: np.ndarray) -> list[dict[str, Any]]:
        """Record the collision onsets of the agent's path ``(at, axy)`` (one step, its start included); returns
        the new pedestrian contacts (vehicle contacts go to :attr:`vehicle_contacts`, :mod:`.vehicles`)."""
        self._count_vehicle_contacts(at, axy)
        peds = self.world.pedestrians
        if peds is None:
            return []
        t0, t1 = float(at[0]), float(at[-1])
        reach = float(np.hypot(*(axy - axy[0]).T).max()) + self.contact_m + float(peds.speed_mps.max()) * (t1 - t0)
        near = np.hypot(*(peds.positions(t0) - axy[0]).T) <= reach + 1e-9
        new = []
        for i in range(len(peds)):
            if not near[i]:
                self._inside[i] = False  # out of reach for the whole step: no contact at its end
                continue
            pt, pxy = peds.track(i, t0, t1)
            onsets, inside = contact_onsets(at, axy, pt, pxy, self.contact_m, bool(self._inside[i]))
            self._inside[i] = inside
            new.extend({"pedestrian": i, "t_s": t} for t in onsets)
        new.sort(key=lambda c: (c["t_s"], c["pedestrian"]))
        self.contacts.extend(new)
        return new

    def _count_vehicle_contacts(self, at: np.ndarray, axy: np.ndarray) -> None:
        """Vehicle collision onsets, one per car and contact (a contact passing between its discs is one)."""
        veh = self.world.vehicles
        if veh is None or not veh.n_moving:
            return
        cars = veh.discs
        t0, t1 = float(at[0]), float(at[-1])
        cm = self.vehicle_contact_m
        reach = float(np.hypot(*(axy - axy[0]).T).max()) + cm + float(cars.speed_mps.max()) * (t1 - t0)
        near = np.hypot(*(cars.positions(t0) - axy[0]).T) <= reach + 1e-9
        new = []
        for i in range(len(cars)):
            if not near[i]:
                self._vinside[i] = False
                continue
            pt, pxy = cars.track(i, t0, t1)
            onsets, inside = contact_onsets(at, axy, pt, pxy, cm, bool(self._vinside[i]))
            self._vinside[i] = inside
            car = i // 3
            for t in onsets:
                ax, ay = float(np.interp(t, at, axy[:, 0])), float(np.interp(t, at, axy[:, 1]))
                others = [j for j in range(3 * car, 3 * car + 3) if j != i]
                # the same contact when another disc of the car already touches the agent at that moment
                if not any(float(np.hypot(*(cars.positions(t)[j] - (ax, ay)))) < cm - 1e-9 for j in others):
                    new.append({"vehicle": car, "t_s": t})
        new.sort(key=lambda c: (c["t_s"], c["vehicle"]))
        merged = []
        for c in new:  # two discs of one car starting the same contact at the same instant: one onset
            if not any(m["vehicle"] == c["vehicle"] and abs(m["t_s"] - c["t_s"]) < 1e-9 for m in merged):
                merged.append(c)
        self.vehicle_contacts.extend(merged)

    def start(self, x: float, y: float) -> None:
        """Contacts at the reset pose (a pedestrian on the start point counts as an onset at ``t = 0``)."""
        self.count_contacts(np.array([0.0]), np.array([[x, y]]))

    # ------------------------------------------------------------ closures
    def check_crossing(self, at: np.ndarray, axy: np.ndarray) -> dict[str, Any] | None:
        """The first violation of an announced closure along the path, recorded (or ``None``)."""
        best = None
        for c in self.world.closures:
            t_from = self.notice_times_s.get(c.id)
            if t_from is None:
                continue
            hit = first_crossing(at, axy, c.geometry(), t_from)
            if hit is not None and (best is None or hit[0] < best["t_s"]):
                best = {"closure": c.id, "t_s": hit[0], "xy_m": list(hit[1])}
        if best is not None and self.violation is None:
            self.violation = best
        return best

    def deliver_notices(self, t_s: float, x: float, y: float) -> list[str]:
        """Deliver the notices due at observation time ``t_s`` (agent at ``(x, y)``); returns the new notice
        texts. A newly announced closure on which the agent stands is violated at once."""
        due = [c for c in self.world.closures if c.notice_after_s <= t_s and c.id not in self.notice_times_s]
        if not due:
            return []
        for c in due:
            self.notice_times_s[c.id] = float(t_s)
        text = notice_text(due, self.world.city.frame)
        self.notices.append(text)
        self.check_crossing(np.array([t_s]), np.array([[x, y]]))
        return [text]

    # ------------------------------------------------------------ scoring
    def metric_closures(self) -> list[dict[str, Any]]:
        """Closures as the metric needs them: ``{"id", "coords", "zone", "active_from_s"}`` with
        ``active_from_s`` the notice's delivery time (``inf`` when never delivered), i.e.
        ``Closure(tuple(map(tuple, d["coords"])), d["active_from_s"], d["zone"])`` of
        :mod:`urbanarena.tasks.metrics.urbanground`."""
        return [{"id": c.id, "coords": [list(p) for p in c.metric_coords()], "zone": c.zone,
                 "active_from_s": self.notice_times_s.get(c.id, math.inf)} for c in self.world.closures]

    def record(self, t_end_s: float) -> dict[str, Any]:
        """What the scorer needs (JSON-able except ``inf``): closures (:meth:`metric_closures`), the
        violation, ``closure_violated``, pedestrian collisions (count and onsets), blocks, the number of
        pedestrians and the span ``t_end_s`` their trajectories must cover
        (:meth:`DynamicWorld.pedestrian_tracks`)."""
        return {"closures": self.metric_closures(), "closure_violation": self.violation,
                "closure_violated": self.violation is not None, "notices": list(self.notices),
                "pedestrians": self.world.n_pedestrians, "pedestrian_collisions": len(self.contacts),
                "pedestrian_contacts": list(self.contacts), "pedestrian_blocks": self.blocks,
                "contact_m": self.contact_m, "t_end_s": float(t_end_s),
                **({"vehicles_parked": len(self.world.vehicles.parked), "vehicles_moving": self.world.vehicles.n_moving,
                    "vehicle_collisions": len(self.vehicle_contacts), "vehicle_contacts": list(self.vehicle_contacts),
                    "vehicle_blocks": self.vehicle_blocks, "vehicle_contact_m": self.vehicle_contact_m}
                   if self.world.vehicles is not None else {})}


def _first_block_of(movers: PedestrianSet | None, at: np.ndarray, axy: np.ndarray, contact_m: float) -> float | None:
    """The earliest :func:`.pedestrians.first_block` of the agent's path against any of ``movers`` (discs)."""
    if movers is None or not len(movers):
        return None
    t0, t1 = float(at[0]), float(at[-1])
    reach = float(np.hypot(*(axy - axy[0]).T).max()) + contact_m + float(movers.speed_mps.max()) * (t1 - t0)
    near = np.hypot(*(movers.positions(t0) - axy[0]).T) <= reach + 1e-9
    best = None
    for i in np.flatnonzero(near):
        pt, pxy = movers.track(int(i), t0, t1)
        tb = first_block(at, axy, pt, pxy, contact_m - STOP_EPS_M)
        if tb is not None and (best is None or tb < best):
            best = tb
    return best


__all__ = ["DEFAULT_PEDESTRIAN_SPEED_MPS", "PedestrianSpec", "DynamicsSpec", "DynamicWorld", "EpisodeDynamics"]
