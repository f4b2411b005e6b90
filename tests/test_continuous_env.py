"""The continuous environment: action schema, clamping, simulated time, map mode, a scripted walk.

No OpenGL: the observer is left out (``obs["view"] is None``); renders are in test_continuous_render.py.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from arena_util import city_from_xy
from continuous_util import bearing_deg, from_fix
from generate_util import fixture_city, to_fix
from urbanarena.env.continuous import ContinuousAction, ContinuousConfig, ContinuousEnv
from urbanarena.tasks.metrics import urbanground as ug
from urbanarena.world.geo import signed_turn_deg


def _open_env(**cfg):
    """A plain pose graph (no annotations, no attribution): 200 m street along y = 0; only the fence blocks."""
    city = city_from_xy({"a": (0, 0), "b": (100, 0), "c": (200, 0)}, [("a", "b"), ("b", "c")])
    return ContinuousEnv(city, ContinuousConfig(**cfg))


def test_clamping_and_defaults_are_recorded():
    env = _open_env()
    env.reset(options={"start_xy_m": (50.0, 0.0), "start_yaw_deg": 90.0})
    _, _, _, _, info = env.step({"action": "move", "dir": "forward", "seconds": 5, "yaw_rate": 400})
    assert info["clamped"] == [{"field": "seconds", "given": 5.0, "used": 2.0},
                               {"field": "yaw_rate", "given": 400.0, "used": 180.0}]
    assert info["sim_time_s"] == 2.0 and info["pose"]["yaw_deg"] == pytest.approx(90.0)  # 90 + 180 * 2 = 450
    # turning at 180 deg/s for 2 s is a full circle of circumference 2.8 m: back at the start
    assert (info["pose"]["x_m"], info["pose"]["y_m"]) == pytest.approx((50.0, 0.0), abs=1e-9)
    _, _, _, _, info = env.step({"action": "move", "dir": "forward"})  # seconds missing -> 0.5
    assert info["defaulted"] == ["seconds"] and info["clamped"] == []
    assert info["pose"]["x_m"] == pytest.approx(50.7, abs=1e-9)
    _, _, _, _, info = env.step({"action": "look", "yaw": -270, "pitch": 120})
    assert info["clamped"] == [{"field": "yaw", "given": -270.0, "used": -180.0},
                               {"field": "pitch", "given": 120.0, "used": 90.0},
                               {"field": "pitch_deg", "given": 90.0, "used": 89.0}]
    assert info["pose"]["yaw_deg"] == pytest.approx(270.0) and info["pose"]["pitch_deg"] == 89.0
    _, _, _, _, info = env.step(ContinuousAction.move("forward", 0.01, sprint=True))
    assert info["clamped"] == [{"field": "seconds", "given": 0.01, "used": 0.05}]
    assert info["pose"]["x_m"] == pytest.approx(50.7 - 0.15, abs=1e-9)  # 0.05 s west at 3 m/s
    assert env.counters["clamped_actions"] == 3
    _, _, _, _, info = env.step({"action": "move", "dir": "forward", "seconds": 1, "pitch_rate": -180})
    assert info["clamped"] == [{"field": "pitch_deg", "given": 89.0 - 180.0, "used": -89.0}]


def test_invalid_actions_execute_nothing_and_are_counted():
    env = _open_env()
    env.reset(options={"start_xy_m": (50.0, 0.0)})
    bad = [{"action": "fly"}, {"action": "move", "dir": "up", "seconds": 1}, {"action": "look", "yaw": "left"},
           {"action": "move", "dir": "forward", "seconds": float("nan")}, {"action": "map_pan", "east": 10},
           {"action": "close_map"}, "move forward", {"action": "parse_error", "error": "no JSON"}]
    for a in bad:
        _, _, term, _, info = env.step(a)
        assert not info["executed"] and not term
        assert info["pose"]["x_m"] == 50.0 and info["sim_time_s"] == 0.0
    assert env.counters["invalid_actions"] == 7 and env.counters["parse_errors"] == 1
    env.step({"action": "open_map"})
    _, _, _, _, info = env.step({"action": "move", "dir": "forward", "seconds": 1})
    assert info["invalid_action"] and info["invalid_reason"] == "move is unavailable in map mode"
    _, _, term, _, info = env.step({"action": "terminate"})
    assert term and info["stop_reason"] == "terminate"
    with pytest.raises(RuntimeError):
        env.step({"action": "look"})


def test_simulated_time_adds_up_durations():
    env = _open_env(step_overhead_s=0.25)
    env.reset(options={"start_xy_m": (50.0, 0.0), "start_yaw_deg": 90.0})
    seq = [({"action": "move", "dir": "forward", "seconds": 0.8}, 0.8), ({"action": "look", "yaw": 30}, 0.5),
           ({"action": "open_map"}, 1.0), ({"action": "map_zoom", "factor": 2}, 1.0), ({"action": "close_map"}, 1.0),
           ({"action": "fly"}, 0.0), ({"action": "sprint", "dir": "backward", "seconds": 1.5}, 1.5)]
    total = 0.0
    for a, d in seq:
        _, _, _, _, info = env.step(a)
        total += d + 0.25
        assert info["step_seconds"] == pytest.approx(d + 0.25)
        assert info["sim_time_s"] == pytest.approx(total)
    # 0.8 s east at 1.4 m/s, then 1.5 s backward at 3 m/s facing 120 deg
    x = 50.0 + 1.12 - 4.5 * math.sin(math.radians(120))
    y = 0.0 - 4.5 * math.cos(math.radians(120))
    assert (info["pose"]["x_m"], info["pose"]["y_m"]) == pytest.approx((x, y), abs=1e-9)
    # the recorded samples end every step with a checkpoint at the step's end time
    cps = [s for s in env.samples if s.checkpoint]
    assert [s.step for s in cps] == list(range(len(seq) + 1))
    assert cps[-1].t_s == pytest.approx(total)


class _WildClock:
    """A fake wall clock that jumps by random amounts (0 .. 1 hour) every time it is read or slept on."""

    def __init__(self, seed):
        self.now = 1.7e9
        self.rng = np.random.default_rng(seed)

    def read(self):
        self.now += float(self.rng.uniform(0, 3600))
        return self.now

    def sleep(self, s):
        self.now += float(s) + float(self.rng.uniform(0, 3600))


ACTIONS = (
    [{"action": "sprint", "dir": "forward", "seconds": 2.0}] * 3
    + [{"action": "move", "dir": "left", "seconds": 1.3, "yaw_rate": 37, "pitch_rate": 5},
       {"action": "look", "yaw": -95, "pitch": -10}, {"action": "open_map"}, {"action": "map_pan", "east": 40},
       {"action": "map_select", "x": 0.3, "y": 0.6}, {"action": "close_map"}]
    + [{"action": "sprint", "dir": "forward", "seconds": 2.0}] * 4
    + [{"action": "move", "dir": "backward", "seconds": 0.7, "yaw_rate": -120}, {"action": "terminate"}]
)


def _run(city, clock=None, monkeypatch=None):
    if clock is not None:
        for name in ("time", "monotonic", "perf_counter"):
            monkeypatch.setattr(time, name, clock.read)
        monkeypatch.setattr(time, "sleep", clock.sleep)
    env = ContinuousEnv(city)
    env.reset(options={"start_xy_m": from_fix(city, 0, 60), "start_yaw_deg": 175.0})
    for a in ACTIONS:
        if clock is not None:
            time.sleep(float(clock.rng.uniform(0, 30)))  # "model latency"
        env.step(a)
    assert env.counters["blocked_moves"] == 3  # sliding down the west wall of building 1101
    return [s.to_dict() for s in env.samples], env.sim_time_s


def test_trajectory_does_not_depend_on_latency_or_wall_clock(monkeypatch):
    """The same actions under a wildly jumping fake clock (and fake "model latency" sleeps) give exactly the
    same samples and simulated times; the walk includes blocked moves (into building 1101) and turning moves."""
    city = fixture_city()
    ref, t_ref = _run(city)
    with monkeypatch.context() as m:
        got, t_got = _run(city, _WildClock(1), m)
    assert got == ref and t_got == t_ref
    assert t_ref == pytest.approx(3 * 2 + 1.3 + 0.5 + 4 * 1.0 + 4 * 2 + 0.7)
    assert any(s["step"] > 0 and not s["checkpoint"] for s in ref)  # turning sub-steps are recorded


def test_map_mode_pan_zoom_select_change_the_view():
    """Hand-worked map geometry of the plain city (no attribution band): canvas 640 x 360, pad 6 px, the square
    of half-size h fills the 348 px high area: s = 348 / (2 h) px/m, centred horizontally."""
    env = _open_env()
    obs, _ = env.reset(options={"start_xy_m": (60.0, 0.0), "start_yaw_deg": 0.0})
    assert obs["mode"] == "first_person" and obs["map"] is None and obs["view"] is None
    obs, _, _, _, _ = env.step({"action": "open_map"})
    assert obs["mode"] == "map" and obs["view"] is None and obs["map"].shape == (360, 640, 3)
    st = obs["text"]["state"]["map"]
    assert (st["center_x_m"], st["center_y_m"], st["half_m"]) == (60.0, 0.0, 150.0)
    img0 = obs["map"]
    assert tuple(img0[180, 320]) == (220, 20, 20)  # the agent's red disc at the centre (pixel 319.5, 179.5)
    obs, _, _, _, _ = env.step({"action": "map_zoom", "factor": 0.5})
    assert obs["text"]["state"]["map"]["half_m"] == 75.0
    s = 348 / 150.0
    obs, _, _, _, info = env.step({"action": "map_pan", "east": 50, "north": -20})
    st = obs["text"]["state"]["map"]
    assert (st["center_x_m"], st["center_y_m"]) == (110.0, -20.0)
    assert st["metres_per_px"] == pytest.approx(1 / s)
    # the agent is now 50 m west and 20 m north of the centre: drawn at (320 - 50 s, 180 - 20 s)
    u, v = 320 - 50 * s, 180 - 20 * s
    assert tuple(obs["map"][int(round(v)), int(round(u))]) == (220, 20, 20)
    assert tuple(obs["map"][180, 320]) != (220, 20, 20)
    obs, _, _, _, info = env.step({"action": "map_select", "x": 0.75, "y": 0.5})
    sel = obs["text"]["state"]["map"]["selected"]
    assert (sel["x_m"], sel["y_m"]) == pytest.approx((110.0 + 0.25 * 640 / s, -20.0), abs=1e-9)
    lat, lon = env.city.frame.to_latlon(sel["x_m"], sel["y_m"])
    assert (sel["lat"], sel["lon"]) == pytest.approx((float(lat), float(lon)))
    assert tuple(obs["map"][180, 480]) == (30, 90, 230)  # the blue selection cross
    _, _, _, _, info = env.step({"action": "map_pan", "east": 5000})
    assert info["clamped"] == [{"field": "east", "given": 5000.0, "used": 2000.0}]
    _, _, _, _, info = env.step({"action": "map_zoom", "factor": 0.1})
    assert info["clamped"] == [{"field": "factor", "given": 0.1, "used": 0.25}]
    _, _, _, _, info = env.step({"action": "map_zoom", "factor": 0.25})  # 18.75 * 0.25 = 4.69 < 10 m
    assert info["clamped"] == [{"field": "map_half_m", "given": 4.6875, "used": 10.0}]
    obs, _, _, _, _ = env.step({"action": "close_map"})
    assert obs["mode"] == "first_person" and obs["map"] is None
    obs, _, _, _, _ = env.step({"action": "open_map"})  # re-centred on the agent, zoom kept
    st = obs["text"]["state"]["map"]
    assert (st["center_x_m"], st["center_y_m"], st["half_m"]) == (60.0, 0.0, 10.0)
    assert env.counters["map_actions"] == 9 and env.pose().x_m == 60.0  # the map never moves the agent


def test_scripted_walk_along_the_network_reaches_the_goal():
    """An oracle-like script on the generator fixture: from the north-west corner (0, 100) to the front of
    Golf Kiosk on Mainstreet, along the network's shortest walk (down Weststreet, east on Mainstreet:
    100 m + the POI's offset along Mainstreet), acting only with look + move."""
    city = fixture_city()
    golf = next(p for p in city.annotations.pois if p.name and p.name.startswith("Golf"))
    gx, gy = to_fix(city, *golf.front_xy)
    assert gy == pytest.approx(0.0, abs=0.05)  # the front lies on Mainstreet
    env = ContinuousEnv(city)
    start = from_fix(city, 0, 100)
    env.reset(options={"start_xy_m": start, "start_yaw_deg": 90.0, "goal_xy_m": golf.front_xy})
    walk = env.network.shortest_walk(start, golf.front_xy)
    assert env.network.network_distance_m(start, golf.front_xy) == pytest.approx(100.0 + gx, abs=0.05)
    for (x0, y0), (x1, y1) in zip(walk[:-1], walk[1:]):
        turn = signed_turn_deg(env.pose().yaw_deg, bearing_deg(x1 - x0, y1 - y0))
        env.step({"action": "look", "yaw": turn})
        left = math.hypot(x1 - x0, y1 - y0)
        while left > 1e-9:
            secs = max(0.05, min(2.0, left / 1.4))
            env.step({"action": "move", "dir": "forward", "seconds": secs})
            left -= secs * 1.4
    _, _, term, _, info = env.step({"action": "terminate"})
    assert term and env.counters["blocked_moves"] == 0
    traj = ug.Trajectory.from_samples(env.samples)
    m = ug.navigation_metrics(traj, golf.front_xy, network=env.network)
    assert m["sr"] == 1.0 and m["final_distance_m"] < 0.1
    assert m["pna"] == 1.0  # the fixture's streets have no mapped sidewalks: their centrelines are walked
    eff = ug.route_efficiency(ug.mst_lower_bound_m(start, [golf.front_xy], env.network), traj.path_length_m())
    assert eff == pytest.approx(1.0, abs=0.002)
