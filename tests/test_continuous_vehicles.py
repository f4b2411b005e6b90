"""Vehicles in the continuous mode (issue 19, item 1): parked cars are obstacles, moving cars block and collide.

A synthetic street (no OpenStreetMap content): one residential carriageway 10 m wide from (0, 0) to (120, 0) in
fixture metres, plus a footway along y = 12 so the walk network has room. At 10 m the population parks on both
kerbs (centres 3.9 m off the centreline) and leaves a 5.6 m band, two lanes at +-1.4 m; lane 0 runs east at
y = -1.4 (right of the street's direction).
"""

from __future__ import annotations

import math
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest

from continuous_util import from_fix, osm_xml, to_fix
from urbanarena.env.continuous import ContinuousEnv
from urbanarena.env.continuous.dynamics import DynamicsSpec
from urbanarena.errors import TaskFormatError

NODES = {1: (0, 0), 2: (60, 0), 3: (120, 0), 4: (0, 12), 5: (120, 12), 6: (0, -12), 7: (120, -12)}
WAYS = [(10, [1, 2, 3], {"highway": "residential", "width": "10", "name": "Testikatu"}),
        (11, [4, 5], {"highway": "footway"}), (12, [1, 4], {"highway": "footway"}),
        (13, [3, 5], {"highway": "footway"}), (14, [6, 7], {"highway": "footway"}),
        (15, [1, 6], {"highway": "footway"}), (16, [3, 7], {"highway": "footway"})]


@lru_cache(maxsize=None)
def street_city():
    from urbanarena.world.importers.osm import import_city

    d = Path(tempfile.mkdtemp(prefix="ua-vehicles-"))
    p = d / "street.osm"
    p.write_text(osm_xml(NODES, {}, WAYS), encoding="utf-8")
    return import_city(str(p), name="street")


def test_vehicle_spec_parses_and_names_bad_records():
    spec = DynamicsSpec.from_dict({"vehicles": {"seed": 3, "moving": 2, "speed_mps": 5.0}})
    assert spec.vehicles.moving == 2 and spec.vehicles.parked
    assert DynamicsSpec.from_dict(spec.to_dict()) == spec
    with pytest.raises(TaskFormatError, match="dynamics.vehicles"):
        DynamicsSpec.from_dict({"vehicles": {"lorries": 1}})
    with pytest.raises(TaskFormatError, match="moving"):
        DynamicsSpec.from_dict({"vehicles": {"moving": -1}})
    with pytest.raises(TaskFormatError, match="dynamics.vehicles.condition"):
        DynamicsSpec.from_dict({"vehicles": {"condition": "hail"}})


def test_agent_cannot_walk_through_a_parked_car():
    city = street_city()
    env = ContinuousEnv(city, dynamics={"vehicles": {"seed": 0, "parked": True}})
    env.reset(options={"start_node": sorted(city.graph.nodes)[0]})
    cars = env.world.vehicles.parked
    assert cars, "the 10 m street parks cars on its kerbs"
    car = cars[len(cars) // 2]
    fx, fy = to_fix(city, car.x_m, car.y_m)
    assert abs(abs(fy) - 3.9) < 0.05  # 1.1 m inside the kerb at 5 m
    # start 3 m beside the car, towards the street's centre, and walk across it (through the car)
    side = -1.0 if fy > 0 else 1.0
    sx, sy = from_fix(city, fx, fy + side * (car.width_m / 2 + 3.0))
    toward = (math.degrees(math.atan2(car.x_m - sx, car.y_m - sy))) % 360.0
    env.reset(options={"start_xy_m": (sx, sy), "start_yaw_deg": toward})
    assert env.start_adjusted_m == 0.0
    _, _, _, _, info = env.step({"action": "move", "dir": "forward", "seconds": 1.5})  # 2.1 m of 2.75 m free
    assert not info["blocked"]
    _, _, _, _, info = env.step({"action": "move", "dir": "forward", "seconds": 2.0})
    assert info["blocked"]
    x, y = info["pose"]["x_m"], info["pose"]["y_m"]
    from shapely.geometry import Point

    gap = car.footprint().distance(Point(x, y))
    assert 0.2 <= gap <= 0.26  # stopped at the agent's radius (0.25 m) from the car's side
    rec = env.dynamics_record()
    assert rec["vehicles_parked"] == len(cars) and rec["vehicle_collisions"] == 0 and rec["pedestrian_collisions"] == 0


def test_moving_car_driving_into_a_standing_agent_is_one_vehicle_collision():
    """One car on lane 0 (east, y = -1.4) at 6 m/s. The agent stands on that lane; the car's front disc (arc
    offset o + 1.5) reaches contact distance 0.9 + 0.25 = 1.15 m at t = (a - 1.15 - o - 1.5) / 6; its three discs
    pass through the agent (cars do not yield) as one contact. PCR's pedestrian count stays 0."""
    city = street_city()
    for seed in range(40):  # the first seed whose car has 25 m of lane ahead of it
        spec = {"vehicles": {"seed": seed, "parked": False, "moving": 1, "speed_mps": 6.0}}
        env = ContinuousEnv(city, dynamics=spec)
        env.reset(options={"start_node": sorted(city.graph.nodes)[0]})
        discs = env.world.vehicles.discs
        route = discs.routes[1]
        L = route.length_m
        raw = float(discs.offsets_m[1]) % (2 * L)  # the middle disc's arc offset; the front disc is 1.5 m ahead
        if raw + 1.5 + 25.0 < L:  # driving out, towards arc L
            a = raw + 1.5 + 20.0
            break
        if raw > L and (2 * L - raw) - 1.5 - 25.0 > 0:  # driving back, towards arc 0
            a = (2 * L - raw) - 1.5 - 20.0
            break
    expected = (20.0 - 1.15) / 6.0  # the front disc 20 m away closes to 1.15 m
    import numpy as np

    ax, ay = float(np.interp(a, route.cum, route.xy[:, 0])), float(np.interp(a, route.cum, route.xy[:, 1]))
    env.reset(options={"start_xy_m": (ax, ay)})
    for _ in range(20):  # 10 s of looking around
        _, _, _, _, info = env.step({"action": "look", "yaw": 10})
    rec = env.dynamics_record()
    first = rec["vehicle_contacts"][0]
    assert first["vehicle"] == 0 and first["t_s"] == pytest.approx(expected, abs=1e-6)
    passes = [c for c in rec["vehicle_contacts"] if c["t_s"] < expected + 4.0]
    assert len(passes) == 1  # three discs, one contact
    assert rec["pedestrian_collisions"] == 0 and info["pose"]["x_m"] == ax


def test_agent_cannot_walk_into_a_moving_car_and_sees_it():
    city = street_city()
    spec = {"vehicles": {"seed": 1, "parked": False, "moving": 1, "speed_mps": 0.0}}  # a car stopped in its lane
    env = ContinuousEnv(city, dynamics=spec)
    env.reset(options={"start_node": sorted(city.graph.nodes)[0]})
    cx, cy = env.world.vehicles.discs.positions(0.0)[1]
    sx, sy = cx, cy + 3.0  # 3 m north of the car's middle, walk south into it
    env.reset(options={"start_xy_m": (sx, sy), "start_yaw_deg": 180.0})
    _, _, _, _, info = env.step({"action": "move", "dir": "forward", "seconds": 2.0})  # 2.8 m
    assert info["blocked"] and info["dynamics"]["vehicle_blocked"] and not info["dynamics"]["pedestrian_blocked"]
    assert info["pose"]["y_m"] == pytest.approx(cy + 1.15, abs=1e-4)
    assert "vehicle is in the way" in env.last_result
    objs = env.world.scene_objects(0.0)
    assert [p.kind for p in objs.placements] == ["car"] and objs.placements[0].x_m == pytest.approx(cx)
