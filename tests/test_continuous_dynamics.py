"""The dynamic city of the continuous environment (closures, pedestrians), hand-worked; no OpenGL.

The plain city is a 200 m street along y = 0 (only the fence blocks). Walk 1.4 m/s, sprint 3.0 m/s, look 0.5 s;
agent radius 0.25 m, pedestrian radius 0.25 m: contact at 0.5 m between centres.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from arena_util import city_from_xy
from continuous_util import from_fix
from generate_util import fixture_city
from urbanarena.env.continuous import ContinuousEnv, DynamicsSpec, DynamicWorld
from urbanarena.env.continuous.dynamics import CLOSURE_MAP_RGB
from urbanarena.errors import TaskFormatError
from urbanarena.tasks.metrics import urbanground as ug


def _city():
    return city_from_xy({"a": (0, 0), "b": (100, 0), "c": (200, 0)}, [("a", "b"), ("b", "c")])


def _metric_closures(rec):
    return [ug.Closure(tuple(map(tuple, c["coords"])), c["active_from_s"], c["zone"]) for c in rec["closures"]]


def _ped_trajs(env):
    return [ug.Trajectory.from_arrays(t, xy) for t, xy in env.world.pedestrian_tracks(env.sim_time_s)]


EAST = {"action": "move", "dir": "forward", "seconds": 2.0}


def test_spec_round_trip_and_bad_specs_name_the_record():
    d = {"closures": [{"id": "c1", "line_xy_m": [[60, -10], [60, 10]], "notice_after_s": 30}],
         "pedestrians": {"seed": 3, "count": 4, "speed_mps": 1.1}}
    spec = DynamicsSpec.from_dict(d)
    assert spec.closures[0].notice_after_s == 30.0 and spec.closures[0].half_width_m == 0.0
    assert not spec.closures[0].physical and spec.pedestrians.routes is None
    assert DynamicsSpec.from_dict(spec.to_dict()) == spec
    bad = [({"closures": [{"id": "c1", "line_xy_m": [[0, 0]]}]}, "dynamics.closures[0]"),
           ({"closures": [{"id": "c1", "line_xy_m": [[0, 0], [1, 1]], "notice_after_s": -1}]}, "dynamics.closures[0]"),
           ({"closures": [{"id": "c", "line_xy_m": [[0, 0], [1, 0]]}, {"id": "c", "line_xy_m": [[0, 1], [1, 1]]}]},
            "dynamics.closures"),
           ({"pedestrians": {"routes": [[[0, 0], [1, 0]]], "count": 2}}, "dynamics.pedestrians"),
           ({"pedestrians": {"seed": 1}}, "dynamics.pedestrians"),
           ({"weather": "rain"}, "dynamics")]
    for spec_d, record in bad:
        with pytest.raises(TaskFormatError) as e:
            DynamicsSpec.from_dict(spec_d)
        assert e.value.record == record


def test_pedestrian_positions_on_a_straight_route_equal_hand_computed_values():
    """Route (0,0) -> (10,0) -> (10,5): L = 15 m, at 1.5 m/s out and back, period 20 s."""
    w = DynamicWorld.from_spec(_city(), {"pedestrians": {"routes": [[[0, 0], [10, 0], [10, 5]]], "speed_mps": 1.5}})
    expect = {0.0: (0, 0), 2.0: (3, 0), 8.0: (10, 2), 10.0: (10, 5), 14.0: (9, 0), 21.0: (1.5, 0)}
    for t, xy in expect.items():
        assert w.pedestrian_positions(t) == pytest.approx(np.array([xy], float), abs=1e-12)
    hd = {2.0: 90.0, 8.0: 0.0, 12.0: 180.0, 14.0: 270.0}
    for t, h in hd.items():
        assert w.pedestrians.headings_deg(t)[0] == pytest.approx(h)
    (t, xy), = w.pedestrian_tracks(14.0)
    assert t == pytest.approx([0, 10 / 1.5, 10, 20 / 1.5, 14])
    assert xy == pytest.approx(np.array([(0, 0), (10, 0), (10, 5), (10, 0), (9, 0)], float))


def test_generated_pedestrians_are_deterministic_and_walk_on_the_network():
    city = fixture_city()
    spec = {"pedestrians": {"seed": 7, "count": 5, "route_length_m": [30, 120]}}
    a, b = DynamicWorld.from_spec(city, spec), DynamicWorld.from_spec(city, spec)
    c = DynamicWorld.from_spec(city, {"pedestrians": {"seed": 8, "count": 5, "route_length_m": [30, 120]}})
    ts = [0.0, 3.3, 47.0, 1000.0]
    assert all(np.array_equal(a.pedestrian_positions(t), b.pedestrian_positions(t)) for t in ts)
    assert not np.array_equal(a.pedestrian_positions(3.3), c.pedestrian_positions(3.3))
    env = ContinuousEnv(city)
    for t in ts:
        for x, y in a.pedestrian_positions(t):
            assert env.network.snap(x, y).distance_m < 1e-6
    for r in a.pedestrians.routes:
        assert 30 - 1e-9 <= r.length_m <= 120 + 1e-9


def test_notice_appears_exactly_after_the_delay_in_simulated_time():
    spec = {"closures": [{"id": "works", "line_xy_m": [[150, -10], [150, 10]], "notice_after_s": 30.0,
                          "label": "Main St works"}]}
    env = ContinuousEnv(_city(), dynamics=spec)
    obs, _ = env.reset(options={"start_xy_m": (10.0, 0.0), "start_yaw_deg": 90.0})
    assert obs["text"]["notices"] == []
    for k in range(14):  # 14 x 2 s = 28 s
        obs, _, _, _, info = env.step(EAST)
        assert obs["text"]["notices"] == [] and info["dynamics"]["closures_announced"] == []
    obs, _, _, _, info = env.step({"action": "move", "dir": "forward", "seconds": 1.5})  # 29.5 s
    assert env.sim_time_s == 29.5 and obs["text"]["notices"] == []
    obs, _, _, _, info = env.step({"action": "move", "dir": "forward", "seconds": 1.0})  # 30.5 s
    assert env.sim_time_s == 30.5 and len(obs["text"]["notices"]) == 1
    note = obs["text"]["notices"][0]
    lat, lon = env.city.frame.to_latlon(150.0, -10.0)
    assert "Main St works" in note and f"({float(lat):.6f}, {float(lon):.6f})" in note
    assert info["dynamics"]["new_notices"] == [note] and info["dynamics"]["closures_announced"] == ["works"]
    # enforced from the observation that delivered it (UrbanGround: once disclosed), not from 30.0 s
    assert env.dynamics_record()["closures"][0]["active_from_s"] == 30.5
    obs, _, _, _, info = env.step(EAST)
    assert info["dynamics"]["new_notices"] == [] and obs["text"]["notices"] == [note]  # kept, not repeated
    # a notice due at 0 comes with the reset observation
    env0 = ContinuousEnv(_city(), dynamics={"closures": [{"id": "x", "line_xy_m": [[150, -1], [150, 1]]}]})
    obs, info = env0.reset(options={"start_xy_m": (10.0, 0.0)})
    assert len(obs["text"]["notices"]) == 1 and env0.dynamics_record()["closures"][0]["active_from_s"] == 0.0


def test_closure_crossing_after_the_notice_fails_the_episode():
    """From x = 50 east at 1.4 m/s: 2 s steps end at 52.8, 55.6, 58.4; the 4th crosses x = 60 after 1.6 m,
    at t = 6 + 1.6 / 1.4 s. The goal (61, 0) lies within 15 m of the final position: without the closure the
    episode would succeed."""
    spec = {"closures": [{"id": "c1", "line_xy_m": [[60, -10], [60, 10]], "notice_after_s": 0.0}]}
    env = ContinuousEnv(_city(), dynamics=spec)
    env.reset(options={"start_xy_m": (50.0, 0.0), "start_yaw_deg": 90.0, "goal_xy_m": (61.0, 0.0)})
    for _ in range(3):
        _, _, term, _, info = env.step(EAST)
        assert not term
    _, _, term, _, info = env.step(EAST)
    assert term and info["stop_reason"] == "closure_violation" and not info["blocked"]
    v = info["dynamics"]["closure_violation"]
    assert v["closure"] == "c1" and v["t_s"] == pytest.approx(6 + 1.6 / 1.4) and v["xy_m"] == pytest.approx([60, 0])
    with pytest.raises(RuntimeError):
        env.step(EAST)
    rec = env.dynamics_record()
    assert rec["closure_violated"] and rec["closure_violation"] == v
    traj = ug.Trajectory.from_samples(env.samples)
    closures = _metric_closures(rec)
    mv = ug.closure_violations(traj, closures)
    assert len(mv) == 1 and mv[0].t_s == pytest.approx(v["t_s"]) and mv[0].xy == pytest.approx(tuple(v["xy_m"]))
    m = ug.navigation_metrics(traj, (61.0, 0.0), closures=closures)
    assert m["final_distance_m"] < 15 and m["sr"] == 0.0 and m["closure_respected"] == 0.0
    # the same walk with the notice at 10 s: crossing at 7.14 s is allowed, the episode goes on and succeeds
    env = ContinuousEnv(_city(), dynamics={"closures": [{**spec["closures"][0], "notice_after_s": 10.0}]})
    env.reset(options={"start_xy_m": (50.0, 0.0), "start_yaw_deg": 90.0, "goal_xy_m": (61.0, 0.0)})
    for _ in range(4):
        _, _, term, _, info = env.step(EAST)
    assert not term and info["pose"]["x_m"] == pytest.approx(61.2)
    assert env.dynamics_record()["closures"][0]["active_from_s"] == math.inf  # not announced yet
    for _ in range(4):
        _, _, term, _, info = env.step({"action": "look", "yaw": 10})  # t = 10 s: announced, agent beyond it
    assert not term and info["dynamics"]["closures_announced"] == ["c1"]
    _, _, term, _, info = env.step({"action": "terminate"})
    rec = env.dynamics_record()
    assert not rec["closure_violated"] and rec["closures"][0]["active_from_s"] == 10.0
    m = ug.navigation_metrics(ug.Trajectory.from_samples(env.samples), (61.0, 0.0), closures=_metric_closures(rec))
    assert m["sr"] == 1.0 and m["closure_respected"] == 1.0


def test_zone_closure_is_entered_and_line_geometry_matches_the_metric():
    """A closed zone of half-width 3 m around x = 60 (y -10..10): entered at x = 57 after 7 m (t = 5 s)."""
    spec = {"closures": [{"id": "z", "line_xy_m": [[60, -10], [60, 10]], "half_width_m": 3.0}]}
    env = ContinuousEnv(_city(), dynamics=spec)
    env.reset(options={"start_xy_m": (50.0, 0.0), "start_yaw_deg": 90.0})
    for _ in range(3):
        _, _, term, _, info = env.step(EAST)
        if term:
            break
    v = info["dynamics"]["closure_violation"]
    assert term and v["t_s"] == pytest.approx(5.0) and v["xy_m"] == pytest.approx([57.0, 0.0])
    rec = env.dynamics_record()
    assert rec["closures"][0]["zone"] and ug.closure_violations(
        ug.Trajectory.from_samples(env.samples), _metric_closures(rec))[0].t_s == pytest.approx(5.0)


def test_physical_barrier_blocks_motion():
    """A physical barrier on x = 60 is a 0.1 m thick fence: the agent's centre stops 0.05 + 0.25 m before
    x = 60 (and the 0.1 mm skin). It stands from t = 0 (drawn), its notice only comes at 100 s."""
    spec = {"closures": [{"id": "fence", "line_xy_m": [[60, -10], [60, 10]], "notice_after_s": 100.0,
                          "physical": True}]}
    env = ContinuousEnv(_city(), dynamics=spec)
    env.reset(options={"start_xy_m": (50.0, 0.0), "start_yaw_deg": 90.0})
    assert [c.id for c in env.world.shown_barriers(0.0)] == ["fence"] and env.world.announced_closures(0.0) == []
    sprint = {"action": "sprint", "dir": "forward", "seconds": 2.0}
    _, _, _, _, info = env.step(sprint)
    assert info["pose"]["x_m"] == pytest.approx(56.0) and not info["blocked"]
    _, _, term, _, info = env.step(sprint)
    assert info["blocked"] and not term
    assert info["pose"]["x_m"] == pytest.approx(60 - 0.05 - 0.25, abs=2e-4)
    # beyond the fence's end (y > 10.3) the way is open
    env.step({"action": "look", "yaw": -90})
    for _ in range(4):
        env.step(sprint)  # north to y = 24
    env.step({"action": "look", "yaw": 90})
    _, _, _, _, info = env.step(sprint)
    assert info["pose"]["x_m"] == pytest.approx(59.7 + 6.0, abs=2e-4) and not info["blocked"]
    assert not env.dynamics_record()["closure_violated"]
    # the static space is untouched: an env without dynamics walks through x = 60
    env2 = ContinuousEnv(_city(), space=env.static_space, network=env.network)
    env2.reset(options={"start_xy_m": (50.0, 0.0), "start_yaw_deg": 90.0})
    env2.step(sprint)
    _, _, _, _, info = env2.step(sprint)
    assert info["pose"]["x_m"] == pytest.approx(62.0)


def test_pedestrian_walking_into_a_standing_agent_is_a_collision():
    """The agent stands at (50, 0) (looking around, 0.5 s per look). A pedestrian walks (40, 0) <-> (60, 0)
    at 1.2 m/s: contact (0.5 m) from x = 49.5 at t = 9.5 / 1.2 until x = 50.5; it turns at 60 (t = 50 / 3) and
    re-enters at x = 50.5 at t = 50 / 3 + 9.5 / 1.2. Two collisions; the agent never moves."""
    spec = {"pedestrians": {"routes": [[[40, 0], [60, 0]]], "speed_mps": 1.2}}
    env = ContinuousEnv(_city(), dynamics=spec)
    env.reset(options={"start_xy_m": (50.0, 0.0)})
    for _ in range(60):
        _, _, _, _, info = env.step({"action": "look", "yaw": 10})
    rec = env.dynamics_record()
    assert [c["t_s"] for c in rec["pedestrian_contacts"]] == pytest.approx([9.5 / 1.2, 50 / 3 + 9.5 / 1.2])
    assert rec["pedestrian_collisions"] == 2 and rec["pedestrian_blocks"] == 0
    assert info["pose"]["x_m"] == 50.0 and env.sim_time_s == 30.0
    traj = ug.Trajectory.from_samples(env.samples)
    assert ug.pedestrian_collisions(traj, _ped_trajs(env)) == 2
    m = ug.navigation_metrics(traj, (50.0, 0.0), pedestrians=_ped_trajs(env))
    assert m["pedestrian_collisions"] == 2 and m["pcr"] == 1.0


def test_agent_cannot_walk_into_a_pedestrian():
    """Head-on: the agent from 50 east at 1.4 m/s, a pedestrian from 70 west at 1.0 m/s: the gap 20 m closes to
    0.5 m at t = 19.5 / 2.4 = 8.125 s, the agent at x = 61.375: its 9th move stops there (1 um inside the
    contact disc). The pedestrian walks on through it; moving away (east, it is behind) is possible."""
    spec = {"pedestrians": {"routes": [[[70, 0], [30, 0]]], "speed_mps": 1.0}}
    env = ContinuousEnv(_city(), dynamics=spec)
    env.reset(options={"start_xy_m": (50.0, 0.0), "start_yaw_deg": 90.0})
    walk = {"action": "move", "dir": "forward", "seconds": 1.0}
    for k in range(9):
        _, _, _, _, info = env.step(walk)
        assert info["dynamics"]["pedestrian_blocked"] == (k == 8)
    assert info["blocked"] and info["pose"]["x_m"] == pytest.approx(61.375, abs=1e-5)
    assert info["moved_m"] == pytest.approx(61.375 - 61.2, abs=1e-5)
    assert info["dynamics"]["new_contacts"] == [{"pedestrian": 0, "t_s": pytest.approx(8.125)}]
    _, _, _, _, info = env.step(walk)  # the pedestrian (now at 61) is west of the agent: walking east is free
    assert not info["blocked"] and info["pose"]["x_m"] == pytest.approx(61.375 + 1.4, abs=1e-5)
    traj = ug.Trajectory.from_samples(env.samples)
    assert ug.pedestrian_collisions(traj, _ped_trajs(env)) == env.dynamics_record()["pedestrian_collisions"] == 1
    # the environment's exact path: a sample at the stop time, standing afterwards
    stop = [s for s in env.samples if s.t_s == pytest.approx(8.125)]
    assert stop and stop[0].x_m == pytest.approx(61.375, abs=1e-5)


def test_map_shows_announced_closures():
    spec = {"closures": [{"id": "c1", "line_xy_m": [[60, -20], [60, 20]], "notice_after_s": 2.0}]}
    env = ContinuousEnv(_city(), dynamics=spec)
    env.reset(options={"start_xy_m": (50.0, 0.0)})
    obs, _, _, _, _ = env.step({"action": "open_map"})  # t = 1: not yet announced
    red = np.all(obs["map"] == np.array(CLOSURE_MAP_RGB, np.uint8), axis=-1)
    assert not red.any()
    obs, _, _, _, info = env.step({"action": "map_zoom", "factor": 1.0})  # t = 2: announced
    assert info["dynamics"]["closures_announced"] == ["c1"]
    red = np.all(obs["map"] == np.array(CLOSURE_MAP_RGB, np.uint8), axis=-1)
    rows, cols = np.nonzero(red)
    # map centred on the agent (50, 0), half-size 150 m over 348 px: x = 60 at column 319.5 + 10 * 348 / 300
    u = 319.5 + 10 * 348 / 300
    assert len(cols) > 20 and np.all(np.abs(cols - u) <= 3.5)
    v_half = 20 * 348 / 300
    assert rows.min() >= 179.5 - v_half - 3.5 and rows.max() <= 179.5 + v_half + 3.5


class _Clock:
    def __init__(self, seed: int):
        self.now = 1e9
        self.rng = np.random.default_rng(seed)

    def read(self):
        self.now += float(self.rng.uniform(0, 3600))
        return self.now

    def sleep(self, s):
        self.now += float(s) + float(self.rng.uniform(0, 3600))


def _run_dynamic(city, monkeypatch=None, clock=None):
    if clock is not None:
        for name in ("time", "monotonic", "perf_counter"):
            monkeypatch.setattr(time, name, clock.read)
        monkeypatch.setattr(time, "sleep", clock.sleep)
    spec = {"closures": [{"id": "c", "line_xy_m": [from_fix(city, -10, 40), from_fix(city, 10, 40)],
                          "notice_after_s": 4.0}],
            "pedestrians": {"seed": 1, "count": 30, "speed_mps": 1.5, "center_xy_m": from_fix(city, 0, 60),
                            "area_radius_m": 100, "route_length_m": [20, 250]}}
    env = ContinuousEnv(city, dynamics=spec)
    env.reset(options={"start_xy_m": from_fix(city, 0, 60), "start_yaw_deg": 175.0})
    rng = np.random.default_rng(5)
    for _ in range(40):
        if clock is not None:
            time.sleep(float(clock.rng.uniform(0, 30)))  # "model latency"
        a = rng.choice(["move", "sprint", "look"])
        act = ({"action": "look", "yaw": float(rng.uniform(-20, 20))} if a == "look" else
               {"action": str(a), "dir": "forward", "seconds": float(rng.uniform(0.1, 2.0)),
                "yaw_rate": float(rng.uniform(-10, 10))})
        _, _, term, _, _ = env.step(act)
        if term:
            break
    return [s.to_dict() for s in env.samples], env.dynamics_record()


def test_same_actions_same_dynamic_trajectory_regardless_of_wall_clock(monkeypatch):
    """A random walk south from the fixture's (0, 60) among 30 generated pedestrians, into a closure at y = 40
    announced after 4 s; under a fake clock jumping up to an hour per read, the samples and the record
    (contacts, blocks, violation) are identical."""
    city = fixture_city()
    ref = _run_dynamic(city)
    with monkeypatch.context() as m:
        got = _run_dynamic(city, m, _Clock(1))
    assert got == ref
    rec = ref[1]
    assert rec["pedestrian_collisions"] >= 1 and rec["pedestrian_blocks"] >= 1 and rec["closure_violated"]
    assert rec["closures"][0]["active_from_s"] >= 4.0
