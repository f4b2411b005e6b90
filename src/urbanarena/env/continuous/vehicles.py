"""Vehicles of the dynamic city (issue 19, item 1): parked cars along the kerbs and cars driving the lanes.

Spec (the ``vehicles`` key of a dynamics spec; every key optional)::

    {"seed": 0, "parked": true, "moving": 4, "speed_mps": 6.0, "center_xy_m": null, "area_radius_m": null,
     "condition": "clear"}

* **Parked cars** (``parked``): the kerb slots of the panorama population
  (:mod:`urbanarena.render.scene3d.population`, seeded by the city seed ``"<scene name>#<seed>"`` and
  ``condition``; within ``area_radius_m`` of ``center_xy_m`` when both are given). They are obstacles like walls:
  their footprints join the walkable space's obstacles (grown by the agent's radius), so an agent cannot walk
  through a car; meeting one is a wall contact (``blocked``), not a collision.
* **Moving cars** (``moving`` of them): each drives one lane of the population's layout (a carriageway's lane
  centreline, chosen with a ``numpy`` generator seeded by ``seed``) back and forth at ``speed_mps`` (default
  6 m/s, about 22 km/h), exactly as pedestrians walk their routes (:mod:`.pedestrians`: folded arc position, pure
  functions of simulated time). For collisions a car is three discs of radius 0.9 m (half a car's width) at arc
  offsets -1.5, 0 and +1.5 m along its lane -- together they cover a 4.8 x 1.8 m footprint; at a lane's ends the
  front disc turns first, so the car is briefly shorter there (ours). Cars do not yield.

**Collisions** (ours where UrbanGround is silent: its dynamic city has pedestrians, no vehicles): a moving car
blocks the agent as a pedestrian does (the agent cannot walk into it: the move stops 1 micrometre inside the
contact distance, agent radius + 0.9 m, while moving towards one of its discs), and every onset of a contact with a
car -- the agent walking into one, or a car driving into a standing agent -- is counted once per car (a contact
that passes from one of its discs to the next is the same contact) as a **vehicle collision**
(``vehicle_collisions`` in the episode record). **PCR stays the pedestrian-collision rate** of the paper (Table 4):
it counts pedestrian contacts only; vehicle collisions are reported beside it, never folded into it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from urbanarena.env.continuous.pedestrians import PedestrianSet
from urbanarena.env.continuous.spec_record import check_record
from urbanarena.errors import TaskFormatError

VEHICLE_DISC_RADIUS_M = 0.9
DISC_OFFSETS_M = (-1.5, 0.0, 1.5)
DEFAULT_VEHICLE_SPEED_MPS = 6.0
_KEYS = {"seed", "parked", "moving", "speed_mps", "center_xy_m", "area_radius_m", "condition"}


@dataclass(frozen=True)
class VehicleSpec:
    """The ``vehicles`` part of a dynamics spec (module docstring)."""

    seed: int = 0
    parked: bool = True
    moving: int = 0
    speed_mps: float = DEFAULT_VEHICLE_SPEED_MPS
    center_xy_m: tuple[float, float] | None = None
    area_radius_m: float | None = None
    condition: str = "clear"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], record: str = "dynamics.vehicles") -> "VehicleSpec":
        """Parse and check (raises :class:`~urbanarena.errors.TaskFormatError` naming ``record``)."""
        check_record(d, record, "vehicles", "vehicle", _KEYS)

        def num(key, default, lo=0.0, integer=False):
            v = d.get(key, default)
            if v is None:
                return None
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)) or v < lo:
                raise TaskFormatError(None, record, f"{key} must be a finite number >= {lo:g}, got {v!r}")
            if integer and float(v) != int(v):
                raise TaskFormatError(None, record, f"{key} must be an integer, got {v!r}")
            return int(v) if integer else float(v)

        parked = d.get("parked", True)
        if not isinstance(parked, bool):
            raise TaskFormatError(None, record, f"parked must be true or false, got {parked!r}")
        centre = d.get("center_xy_m")
        if centre is not None:
            if (not isinstance(centre, (list, tuple)) or len(centre) != 2
                    or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in centre)):
                raise TaskFormatError(None, record, f"center_xy_m must be [x, y], got {centre!r}")
            centre = (float(centre[0]), float(centre[1]))
        cond = d.get("condition", "clear")
        from urbanarena.render.scene3d.conditions import parse_condition

        try:
            parse_condition(cond)
        except (ValueError, TypeError) as e:
            raise TaskFormatError(None, f"{record}.condition", str(e)) from None
        return cls(seed=num("seed", 0, -2**62, integer=True), parked=parked, moving=num("moving", 0, integer=True),
                   speed_mps=num("speed_mps", DEFAULT_VEHICLE_SPEED_MPS), center_xy_m=centre,
                   area_radius_m=num("area_radius_m", None), condition=str(cond))

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "parked": self.parked, "moving": self.moving, "speed_mps": self.speed_mps,
                "center_xy_m": None if self.center_xy_m is None else list(self.center_xy_m),
                "area_radius_m": self.area_radius_m, "condition": self.condition}


class VehicleSet:
    """Parked cars (static placements, obstacles) and moving cars (discs on lanes) of one world.

    Attributes:
        parked: :class:`~urbanarena.render.scene3d.population.Placement` list.
        discs: a :class:`~.pedestrians.PedestrianSet` of ``3 * n_moving`` discs (car ``i`` = discs ``3i..3i+2``).
        colours: one car colour per moving car.
    """

    def __init__(self, city, spec: VehicleSpec, scene=None):
        from urbanarena.render.scene3d.city_scene import scene_from_city
        from urbanarena.render.scene3d.population import CAR_PALETTE, city_seed, layout_of

        self.spec = spec
        scene = scene if scene is not None else scene_from_city(city)
        lay = layout_of(scene)

        def inside(x, y):
            return (spec.center_xy_m is None or spec.area_radius_m is None
                    or math.hypot(x - spec.center_xy_m[0], y - spec.center_xy_m[1]) <= spec.area_radius_m)

        seed = city_seed(scene, spec.seed)
        self.parked = [p for p in lay.parked(seed, spec.condition) if inside(p.x_m, p.y_m)] if spec.parked else []
        lanes = []
        for ln in lay.lines:
            for off, direction in ln.lanes:
                pts = [lay.at(ln.line, s, off)[:2] for s in np.linspace(0.0, ln.line.length,
                                                                        max(2, int(ln.line.length // 5) + 1))]
                if direction < 0:
                    pts = pts[::-1]
                if ln.line.length >= 12.0 and any(inside(x, y) for x, y in pts):
                    lanes.append(pts)
        rng = np.random.default_rng(int(spec.seed))
        routes, offsets, self.colours = [], [], []
        if spec.moving and not lanes:
            raise TaskFormatError(None, "dynamics.vehicles", f"city {getattr(city, 'name', '?')!r} has no lane "
                                                             "for moving vehicles in the area")
        for _ in range(spec.moving):
            lane = lanes[int(rng.integers(len(lanes)))]
            L = float(sum(math.dist(a, b) for a, b in zip(lane, lane[1:])))
            o = float(rng.uniform(2.0, max(2.0, 2 * L - 2.0)))
            for a in DISC_OFFSETS_M:
                routes.append(lane)
                offsets.append(o + a)
            self.colours.append(CAR_PALETTE[int(rng.integers(len(CAR_PALETTE)))])
        self.discs = PedestrianSet(routes, spec.speed_mps, offsets, VEHICLE_DISC_RADIUS_M)

    @property
    def n_moving(self) -> int:
        return len(self.discs) // len(DISC_OFFSETS_M)

    def obstacles(self) -> list:
        """Footprints of the parked cars (shapely polygons)."""
        return [p.footprint() for p in self.parked]

    def placements(self, t_s: float) -> tuple:
        """Parked and moving cars at ``t_s`` as placements for the renderer (a moving car at its middle disc,
        heading along its motion)."""
        from urbanarena.render.scene3d.population import Placement

        out = list(self.parked)
        if self.n_moving:
            pos = self.discs.positions(t_s)
            hd = self.discs.headings_deg(t_s)
            for i in range(self.n_moving):
                k = 3 * i + 1
                out.append(Placement(f"moving:{i}", "car", float(pos[k, 0]), float(pos[k, 1]), float(hd[k]), 4.6,
                                     1.8, 1.5, self.colours[i], "moving", 0, 2 * i))
        return tuple(out)


__all__ = ["DEFAULT_VEHICLE_SPEED_MPS", "VEHICLE_DISC_RADIUS_M", "VehicleSet", "VehicleSpec"]
