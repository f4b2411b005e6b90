"""Navigation families on the hand-written fixture: goals at POI front points, decision points and
walking directions worked out by hand, and the arena oracle acting through ``ArenaEnv.step`` only.

Layout: header of ``tests/data/osm_generate_fixture.osm`` (a 2 x 2 grid of 100 m blocks; Mainstreet
y = 0, Midstreet x = 100; storefronts north of Mainstreet at x = 20 ... 80).
"""

from __future__ import annotations

import math

import cv2
import networkx as nx
import numpy as np
import pytest
from scipy.spatial import cKDTree

from generate_util import fixture_city, from_fix, node_at, to_fix
from urbanarena.agents.arena_oracle import ArenaOracleAgent, plan_to_goal, start_state
from urbanarena.agents.registry import make_agent
from urbanarena.agents.vlm.arena_loop import run_arena_episode
from urbanarena.env.stop_rules import arena_config_for
from urbanarena.env.motion.trajectory import TrajectoryMotion
from urbanarena.render.maps import BLUE, RED, MapRenderer
from urbanarena.tasks.families.cityarena import CityArenaFamily
from urbanarena.tasks.generators import landmark, vln
from urbanarena.tasks.generators.common import analyse_route, make_context
from urbanarena.tasks.generators.suite import generate_suite
from urbanarena.tasks.schema import CityRef, Goal, Position, Start, Task


@pytest.fixture(scope="module")
def city():
    return fixture_city()


def poi(city, name):
    return next(p for p in city.annotations.pois if p.name == name)


def arena_task(city, start_xy, heading, goal_xy, radius, kind="map_navigation") -> Task:
    lat, lon = city.frame.to_latlon(*from_fix(city, *goal_xy))
    return Task(task_id="t", family="cityarena", city=CityRef(name=city.name, content_hash=city.content_hash),
                start=Start(node=node_at(city, *start_xy), heading_deg=heading),
                goals=[Goal(position=Position(lat=float(lat), lon=float(lon)))], success_radius_m=radius,
                answer_metric="coordinate_match", extra={"task_kind": kind})


def test_landmark_goal_is_the_facade_point_snapped_to_the_street(city):
    pool = landmark.generate(make_context(city, 0), {}, "landmark_language")
    cands = [c for cs in pool.by_difficulty.values() for c in cs if c.fields["extra"]["landmark"] == "Echo Optics"]
    assert cands
    for c in cands:
        g = c.fields["goals"][0]
        x, y = city.frame.to_xy(g.position.lat, g.position.lon)
        assert to_fix(city, x, y) == pytest.approx((80.0, 0.0), abs=0.05)  # facade (80, 12) -> street (80, 0)
        assert g.node == node_at(city, 80, 0) and g.label == "Echo Optics"
        assert c.fields["success_radius_m"] == 10.0 and "Echo Optics" in c.fields["instruction"]
        lo, hi = landmark.BANDS_M[c.difficulty]
        assert lo <= city.shortest_path_length_m(c.fields["start"].node, g.node) <= hi


def test_decision_points_hand_worked(city):
    ctx = make_context(city, 0)
    path = nx.shortest_path(city.graph, node_at(city, 50, -100), node_at(city, 80, 0), weight="length_m")
    info = analyse_route(ctx, path)
    # (100,-100): arriving east, Southstreet on and Midstreet north -> arrows, turn left;
    # (100,0): arriving north, west / north / east -> arrows, turn left
    assert [to_fix(city, *city.xy(d.node)) for d in info.decisions] == [pytest.approx((100, -100), abs=0.05),
                                                                       pytest.approx((100, 0), abs=0.05)]
    assert [d.direction for d in info.decisions] == ["left", "left"]
    assert info.length_m == pytest.approx(50 + 100 + 20, abs=0.05) and info.followable


def test_vln_directions_hand_worked(city):
    ctx = make_context(city, 0)
    goal = poi(city, "Echo Optics")
    path = nx.shortest_path(city.graph, node_at(city, 50, -100), goal.node_id, weight="length_m")
    steps = vln.directions(ctx, path, analyse_route(ctx, path), goal, [], None)
    assert steps == ["Walk straight ahead.", "Turn left at the first intersection.", "Keep going straight.",
                     "Turn left at the first intersection.", "Stop in front of Echo Optics, on your right."]


def test_vln_landmark_at_the_decision_point(city, monkeypatch):
    monkeypatch.setattr(vln, "LANDMARK_NEAR_DP_M", 25.0)  # Echo Optics' front point is 20 m from (100,0)
    ctx = make_context(city, 0)
    goal = poi(city, "Alpha Books")
    lms = landmark.goal_pois(ctx, "vln")
    path = nx.shortest_path(city.graph, node_at(city, 100, -50), goal.node_id, weight="length_m")
    steps = vln.directions(ctx, path, analyse_route(ctx, path), goal, lms,
                           cKDTree(np.array([p.front_xy for p in lms])))
    assert steps == ["Walk straight ahead.", "Turn left at the first intersection, where you see Echo Optics.",
                     "Keep going straight.", "Stop in front of Alpha Books, on your right."]


def test_vln_candidates_are_numbered_and_start_along_the_route(city):
    pool = vln.generate(make_context(city, 0), {})
    for c in [c for cs in pool.by_difficulty.values() for c in cs]:
        f = c.fields
        lines = [ln for ln in f["instruction"].splitlines() if ln[:1].isdigit()]
        assert len(lines) == c.stats["instruction_steps"] == len(f["extra"]["directions"])
        assert lines[0] == "1. Walk straight ahead." and lines[-1].split(". ", 1)[1].startswith("Stop in front of ")
        path = f["reference_path"]
        assert f["start"].heading_deg == pytest.approx(city.graph.edges[path[0], path[1]]["azimuth_deg"], abs=1e-5)
        assert path[-1] == f["goals"][0].node


def test_oracle_plan_hand_worked(city):
    # from (30,0) facing east to within 20 m of (100,60): east to the junction (100,0), LEFT, north until
    # within 19.5 m (the 0.5 m margin), ANSWER. In the city's frame the 70 m stretch is 70.001 m long
    # (the importer's projection is centred elsewhere than the fixture's), so 10 W LARGE (70 m) stop
    # 1 mm short and an 11th walks the last millimetre, stopped by the junction; then 40.5 m north is
    # the least that reaches the disc: 6 W LARGE = 42 m.
    east = city.shortest_path_length_m(node_at(city, 30, 0), node_at(city, 100, 0))
    assert 70.0 < east < 70.01
    t = arena_task(city, (30, 0), 90.0, (100, 60), 20.0)
    motion = TrajectoryMotion(city, arena_config_for("cityarena-v1").motion)
    plan = plan_to_goal(motion, start_state(city, t), CityArenaFamily.goal_xy_m(t, city), 20.0)
    assert [a.label() for a in plan.actions] == ["W LARGE"] * 11 + ["LEFT"] + ["W LARGE"] * 6 + ["ANSWER: I have arrived."]
    assert to_fix(city, *plan.final_xy) == pytest.approx((100, 42), abs=0.01)
    assert plan.branch_choices == 1 and plan.reversals == 0


def test_oracle_reverses_when_the_goal_is_behind(city):
    # facing east at (50,0), goal 30 m west: two D LARGE (camera 180 deg) flip the walking direction
    t = arena_task(city, (50, 0), 90.0, (20, 0), 10.0, kind="landmark_language")
    motion = TrajectoryMotion(city, arena_config_for("cityarena-v1").motion)
    plan = plan_to_goal(motion, start_state(city, t), CityArenaFamily.goal_xy_m(t, city), 10.0)
    labels = [a.label() for a in plan.actions]
    assert labels[:2] == ["D LARGE", "D LARGE"] and plan.reversals == 1
    # then 20.5 .. 39.5 m west: W LARGE x 3 = 21 m
    assert labels[2:] == ["W LARGE"] * 3 + ["ANSWER: I have arrived."]


@pytest.mark.parametrize("protocol", ["cityarena-v1", "urbanarena-v1"])
def test_oracle_acts_only_through_env_steps(city, protocol):
    t = arena_task(city, (30, 0), 90.0, (100, 60), 20.0)
    agent = make_agent("arena-oracle")
    assert isinstance(agent, ArenaOracleAgent) and agent.privileged
    res = run_arena_episode(city, agent, t, seed=0, protocol_id=protocol,
                            validator=CityArenaFamily.make_validator(t, city, protocol))
    assert res["stop_reason"] == "ANSWER" and res["scored_success"] and res["evaluation_score"] == 1.0
    assert res["steps"] == 19 and res["env_counters"]["invalid_actions"] == 0
    assert res["env_counters"]["blocked_moves"] == 1  # the 11th walk stops at the junction
    assert not res["agent_stats"]["diverged"]
    fx, fy = to_fix(city, res["final_position"]["x_m"], res["final_position"]["y_m"])
    assert math.hypot(fx - 100, fy - 60) < 20.0


def test_oracle_without_a_legal_plan_records_it(city):
    # a goal 60 m north of Northstreet with a 10 m radius: no walkable point comes within reach
    t = arena_task(city, (30, 0), 90.0, (50, 160), 10.0, kind="landmark_language")
    res = run_arena_episode(city, ArenaOracleAgent(), t, seed=0, protocol_id="cityarena-v1",
                            validator=CityArenaFamily.make_validator(t, city, "cityarena-v1"))
    assert res["agent_stats"]["no_legal_path"] and not res["scored_success"]


def test_map_navigation_task_and_reference_map(city):
    res = generate_suite(city, per_family=3, seed=2, kinds=("map_navigation",))
    tasks = res.task_file.tasks
    assert len(tasks) == 3
    r = MapRenderer(city, 640, 640, extent=make_context(city, 0).extent)
    for t in tasks:
        goal = t.goals[0]
        assert t.success_radius_m == 20.0 and t.extra["requires_current_location"] is True
        assert city.xy(goal.node) == pytest.approx(city.frame.to_xy(goal.position.lat, goal.position.lon), abs=1e-6)
        path = t.reference_path
        assert path[0] == t.start.node and path[-1] == goal.node
        assert t.extra["stats"]["path_length_m"] == pytest.approx(city.shortest_path_length_m(path[0], path[-1]), abs=1e-3)
        (ref,) = t.extra["reference_images"]
        img = cv2.cvtColor(cv2.imdecode(np.frombuffer(res.assets[ref], np.uint8), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
        for node, colour in ((t.start.node, BLUE), (goal.node, RED)):
            u, v = r.world_to_px(*city.xy(node))
            assert tuple(int(c) for c in img[int(round(float(v))), int(round(float(u)))]) == colour
    # no solver: the report says the navigation tasks were not verified
    assert res.report["verified"] is False
