"""Walkable space and swept collisions of the continuous environment, hand-worked.

Hand-built obstacles (local metres): the agent is a disc of radius 0.25 m, so a wall at x = 10 stops
its centre at x = 9.75 (minus the 0.1 mm skin). Walk 1.4 m/s, sprint 3.0 m/s (ContinuousConfig).
"""

from __future__ import annotations

import math

import pytest
from shapely.geometry import LineString, box

from continuous_util import fix_pose, from_fix, passage_city
from urbanarena.env.continuous import ContinuousAction, ContinuousConfig, ContinuousEnv, WalkableSpace
from urbanarena.env.continuous.kinematics import integrate_move

R = 0.25
S2 = math.sqrt(0.5)


def test_perpendicular_approach_stops_at_footprint():
    sp = WalkableSpace([box(10, -5, 20, 5)], agent_radius_m=R)
    out = sp.move((5.0, 0.0), (6.0, 0.0))  # a 2 s sprint east: would end at x = 11
    assert out.blocked
    assert out.end[0] == pytest.approx(9.75, abs=2e-4) and out.end[1] == pytest.approx(0.0, abs=1e-12)
    # contact after 4.75 of 6 m: at 4.75 / 6 of the time
    assert out.points[0][2] == pytest.approx(4.75 / 6.0, abs=1e-4)
    assert out.contacts[0].normal == pytest.approx((-1.0, 0.0))
    assert sp.is_free(*out.end)
    # same with "stop"
    assert sp.move((5.0, 0.0), (6.0, 0.0), "stop").end[0] == pytest.approx(9.75, abs=2e-4)


def test_oblique_approach_slides_or_stops():
    """From (7, 0) heading 45 deg (north-east), 6 m: the wall x = 9.75 is met after 2.75 / sin 45 = 3.889 m
    at (9.75, 2.75). Sliding keeps the northward component of the whole move: end (9.75, 6 cos 45 = 4.2426).
    Stopping ends at the contact."""
    sp = WalkableSpace([box(10, -5, 20, 5)], agent_radius_m=R)
    d = (6 * S2, 6 * S2)
    slide = sp.move((7.0, 0.0), d, "slide")
    assert slide.end == pytest.approx((9.75, 6 * S2), abs=2e-4)
    assert slide.points[0][:2] == pytest.approx((9.75, 2.75), abs=2e-4)
    assert slide.points[0][2] == pytest.approx((2.75 / S2) / 6.0, abs=1e-4)
    stop = sp.move((7.0, 0.0), d, "stop")
    assert stop.end == pytest.approx((9.75, 2.75), abs=2e-4)
    # head-on: nothing is left to slide along
    assert sp.move((5.0, 0.0), (6.0, 0.0), "slide").end[1] == pytest.approx(0.0, abs=1e-12)


def test_no_tunnelling_through_thin_wall_or_bollard():
    """The end points (11, 0) are free, the segments are not: a 0.3 m wall and a bollard (r 0.1 m)."""
    wall = WalkableSpace([box(10, -5, 10.3, 5)], agent_radius_m=R)
    assert wall.is_free(11.0, 0.0)
    assert wall.move((5.0, 0.0), (6.0, 0.0)).end[0] == pytest.approx(9.75, abs=2e-4)
    bollard = WalkableSpace(discs=[(10.0, 0.0, 0.1)], agent_radius_m=R)
    assert bollard.is_free(11.0, 0.0)
    end = bollard.move((5.0, 0.0), (6.0, 0.0), "stop").end
    assert end[0] == pytest.approx(10.0 - 0.35, abs=2e-4)


def test_passage_corridor_is_passable_beside_it_is_not():
    """Building 10..20 x -5..5 with a walkable line along y = 0 through it: corridor half-width 1.5 m,
    free for the centre where |y| < 1.5 - 0.25 = 1.25."""
    sp = WalkableSpace([box(10, -5, 20, 5)], passages=[LineString([(0, 0), (30, 0)])], agent_radius_m=R)
    assert not sp.move((5.0, 0.0), (20.0, 0.0)).blocked
    assert not sp.move((5.0, 1.2), (20.0, 0.0), "stop").blocked
    assert sp.move((5.0, 2.0), (20.0, 0.0), "stop").end[0] == pytest.approx(9.75, abs=2e-4)
    # at y = 1.3 the centre meets the rounded (radius 0.25) edge of the corridor's corner (10, 1.5):
    # x = 10 - sqrt(0.25^2 - 0.2^2) = 9.85 (the buffer's arc is a polygon: 1 mm)
    assert sp.move((5.0, 1.3), (20.0, 0.0), "stop").end[0] == pytest.approx(9.85, abs=2e-3)
    with pytest.raises(ValueError):
        WalkableSpace([box(10, -5, 20, 5)], agent_radius_m=1.0, passage_half_width_m=1.0)


def test_turning_move_follows_the_arc():
    """Forward 2 s at 1.4 m/s turning right at 90 deg/s from yaw 0: a half circle of radius
    R = 1.4 / (pi / 2) = 0.8913 m, centre (R, 0): it ends at (2R, 0) facing south."""
    res = integrate_move(WalkableSpace(), 0.0, 0.0, 0.0, 0.0, direction_offset_deg=0.0, speed_mps=1.4, seconds=2.0,
                         yaw_rate_dps=90.0)
    rad = 1.4 / (math.pi / 2)
    assert (res.x_m, res.y_m) == pytest.approx((2 * rad, 0.0), abs=1e-9)
    assert res.yaw_deg == pytest.approx(180.0)
    assert len(res.samples) == 20  # 0.1 s sub-steps
    for t, x, y, _, _ in res.samples:  # every sub-step end lies on the circle, at the angle swept by then
        a = math.radians(90.0 * t)
        assert (x, y) == pytest.approx((rad - rad * math.cos(a), rad * math.sin(a)), abs=1e-9)
    # left strafe, 0.5 s, facing east: 0.7 m north
    res = integrate_move(WalkableSpace(), 0.0, 0.0, 90.0, 0.0, direction_offset_deg=-90.0, speed_mps=1.4, seconds=0.5)
    assert (res.x_m, res.y_m) == pytest.approx((0.0, 0.7), abs=1e-12)


def test_pieces_starting_on_or_inside_an_obstacle():
    """On the grown boundary (x = 9.75): away and along move, into it does not. Deep inside (a start set from
    outside): the escape rule lets the agent walk out."""
    sp = WalkableSpace([box(10, -5, 20, 5)], agent_radius_m=R)
    assert sp.move((9.75, 0.0), (-1.0, 0.0)).end == pytest.approx((8.75, 0.0))
    assert sp.move((9.75, 0.0), (1.0, 0.0)).end[0] == pytest.approx(9.75, abs=2e-4)
    assert sp.move((9.75, 0.0), (0.0, 2.0)).end == pytest.approx((9.75, 2.0), abs=2e-4)
    assert sp.move((15.0, 0.0), (-6.0, 0.0)).end == pytest.approx((9.0, 0.0))


def test_start_inside_an_obstacle_moves_to_nearest_free_point():
    sp = WalkableSpace(discs=[(10.0, 0.0, 0.95)], agent_radius_m=R)  # a bench
    p = sp.nearest_free(10.5, 0.0)
    assert math.dist(p, (10.0, 0.0)) == pytest.approx(1.2, abs=2e-3) and p[0] > 10.0
    assert sp.nearest_free(3.0, 3.0) == (3.0, 3.0)


# ----------------------------------------------------------------- through the OSM importer
def _env(mode="slide"):
    city = passage_city()
    return city, ContinuousEnv(city, ContinuousConfig(collision_mode=mode))


def _sprints(env, n):
    info = None
    for _ in range(n):
        _, _, _, _, info = env.step(ContinuousAction.move("forward", 2.0, sprint=True))
    return info


def test_imported_building_passage_and_covered_way_are_passable():
    city, env = _env()
    # through B1 along the tunnel=building_passage footway: 7 sprints of 6 m from (5, 0) reach (47, 0)
    env.reset(options={"start_xy_m": from_fix(city, 5, 0), "start_yaw_deg": 90})
    info = _sprints(env, 7)
    assert fix_pose(city, info) == pytest.approx((47.0, 0.0), abs=0.01)
    assert env.counters["blocked_moves"] == 0
    # under B2 along the covered=yes arcade
    env.reset(options={"start_xy_m": from_fix(city, 5, 40), "start_yaw_deg": 90})
    info = _sprints(env, 7)
    assert fix_pose(city, info) == pytest.approx((47.0, 40.0), abs=0.01)
    # 4 m beside the passage B1 is solid: stopped at x = 20 - 0.25
    env.reset(options={"start_xy_m": from_fix(city, 5, 4), "start_yaw_deg": 90})
    info = _sprints(env, 3)
    assert fix_pose(city, info) == pytest.approx((19.75, 4.0), abs=0.01)
    assert info["blocked"] and env.counters["blocked_moves"] == 1


def test_imported_solid_building_and_bench_stop_the_agent():
    city, env = _env("stop")
    env.reset(options={"start_xy_m": from_fix(city, 30, -20), "start_yaw_deg": 180})
    _, _, _, _, info = env.step({"action": "sprint", "dir": "forward", "seconds": 2.0})
    assert fix_pose(city, info) == pytest.approx((30.0, -24.75), abs=0.01)
    assert info["blocked"] and info["moved_m"] == pytest.approx(4.75, abs=0.01)
    assert info["sim_time_s"] == 2.0  # a blocked move still lasts its seconds
    env.reset(options={"start_xy_m": from_fix(city, 3, 20), "start_yaw_deg": 90})
    _, _, _, _, info = env.step({"action": "sprint", "dir": "forward", "seconds": 2.0})
    assert fix_pose(city, info) == pytest.approx((10.0 - 0.95 - 0.25, 20.0), abs=0.01)


@pytest.mark.parametrize("mode", ["slide", "stop"])
def test_random_walks_never_cross_an_obstacle(mode):
    """300 random actions on the generator fixture (buildings, trees, lamps, benches): no recorded straight
    piece of the trajectory meets the grown obstacles (checked against their shapely union)."""
    from shapely.geometry import LineString

    from generate_util import fixture_city

    city = fixture_city()
    env = ContinuousEnv(city, ContinuousConfig(collision_mode=mode))
    env.reset(seed=3, options={"start_xy_m": from_fix(city, 45, 9), "start_yaw_deg": 90})
    for _ in range(300):
        env.step(env.action_space.sample())
    union = env.space.obstacle_union()
    pieces = [LineString([(a.x_m, a.y_m), (b.x_m, b.y_m)]) for a, b in zip(env.samples[:-1], env.samples[1:])
              if (a.x_m, a.y_m) != (b.x_m, b.y_m)]
    assert len(pieces) > 100 and env.counters["blocked_moves"] > 0
    assert not any(p.intersects(union) for p in pieces)
