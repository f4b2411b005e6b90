"""ArenaEnv motion, branch choice and bookkeeping on small synthetic cities.

Expected metres and degrees are worked by hand from the layouts in
``tests/arena_util.py`` (10 m / 20 m street segments on a north-up grid).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from arena_util import FRAME, block_loop, city_from_xy, cross, straight_street, t_junction
from urbanarena.env.arena_env import ActionKind, ArenaAction, ArenaConfig, ArenaEnv, Magnitude
from urbanarena.env.motion.trajectory import MotionConfig
from urbanarena.world.geo import geodesic_distance_m

W = lambda m=None: ArenaAction("W", m)  # noqa: E731


def run(env, actions):
    """Step through ``actions``; return the last step's 5-tuple."""
    out = None
    for a in actions:
        out = env.step(a)
    return out


def xy(info):
    return info["pose"]["x_m"], info["pose"]["y_m"]


def test_walk_metres_pass_through_and_dead_end():
    env = ArenaEnv(straight_street())
    _, info = env.reset(options={"start_node": "a", "start_heading_deg": 0.0})
    assert xy(info) == (0.0, 0.0) and info["pose"]["node"] == "a"
    # MEDIUM = 4 m along a->b
    _, _, _, _, info = env.step(W("MEDIUM"))
    assert xy(info) == pytest.approx((0.0, 4.0), abs=1e-12)
    assert info["pose"]["edge"] == ["a", "b"] and info["pose"]["offset_m"] == pytest.approx(4.0)
    assert info["moved_m"] == pytest.approx(4.0) and info["displacement_m"] == pytest.approx(4.0)
    # LARGE = 7 m: 6 m to b (one onward branch: passes through), 1 m onto b->c
    _, _, _, _, info = env.step(W("LARGE"))
    assert xy(info) == pytest.approx((0.0, 11.0), abs=1e-12)
    assert info["pose"]["edge"] == ["b", "c"] and not info["blocked"]
    # omitted magnitude = 3 m, SMALL = 1.5 m
    _, _, _, _, info = env.step(W())
    assert xy(info)[1] == pytest.approx(14.0)
    _, _, _, _, info = env.step(W("SMALL"))
    assert xy(info)[1] == pytest.approx(15.5)
    # 7 + 7 + 1.5 = 15.5 m more would pass 30 m: stops at the dead end d, the rest dropped
    run(env, [W("LARGE"), W("LARGE")])  # 22.5, 29.5
    _, _, _, _, info = env.step(W("SMALL"))
    assert xy(info) == pytest.approx((0.0, 30.0), abs=1e-12)
    assert info["pose"]["node"] == "d" and info["blocked"] and info["invalid_reason"] == "dead_end"
    assert info["moved_m"] == pytest.approx(0.5)
    assert info["counters"]["blocked_moves"] == 1 and info["counters"]["invalid_actions"] == 0


def test_camera_yaw_pitch_exact_degrees_and_clamp():
    env = ArenaEnv(straight_street())
    _, info = env.reset(options={"start_node": "b", "start_heading_deg": 0.0})
    seq = [("A", "SMALL", 330.0), ("A", "LARGE", 240.0), ("A", None, 216.0), ("D", "MEDIUM", 276.0),
           ("D", "LARGE", 6.0)]
    for kind, mag, yaw in seq:
        _, _, _, _, info = env.step(ArenaAction(kind, mag))
        assert info["pose"]["yaw_deg"] == pytest.approx(yaw, abs=1e-9), (kind, mag)
        assert info["displacement_m"] == 0.0 and info["pose"]["travel_deg"] == 0.0
    # pitch: Q up, E down; clamped to [-75, +85]
    for kind, mag, pitch in [("Q", "LARGE", 85.0), ("Q", "SMALL", 85.0), ("E", "LARGE", -5.0), ("E", "LARGE", -75.0),
                             ("E", "SMALL", -75.0), ("Q", None, -51.0), ("Q", "MEDIUM", 9.0)]:
        _, _, _, _, info = env.step(ArenaAction(kind, mag))
        assert info["pose"]["pitch_deg"] == pytest.approx(pitch, abs=1e-9), (kind, mag)
    # S: yaw back to the travel direction, pitch level
    _, _, _, _, info = env.step(ArenaAction("S"))
    assert info["pose"]["yaw_deg"] == 0.0 and info["pose"]["pitch_deg"] == 0.0


def test_walking_backward_when_camera_faces_back_and_camera_follows_bends():
    env = ArenaEnv(straight_street())
    env.reset(options={"start_node": "a", "start_heading_deg": 0.0})
    run(env, [W("MEDIUM"), W("LARGE"), W(), W("SMALL")])  # y = 15.5 on b->c
    # yaw 90 is exactly 90 deg off the travel direction: still forward (cos >= 0 in the reference)
    _, _, _, _, info = env.step(ArenaAction("D", "LARGE"))
    _, _, _, _, info = env.step(W("SMALL"))
    assert xy(info)[1] == pytest.approx(17.0) and info["pose"]["travel_deg"] == 0.0
    # yaw 180: walking direction reverses onto c->b
    env.step(ArenaAction("D", "LARGE"))
    _, _, _, _, info = env.step(W("MEDIUM"))
    assert xy(info) == pytest.approx((0.0, 13.0), abs=1e-12)
    assert info["pose"]["edge"] == ["c", "b"] and info["pose"]["offset_m"] == pytest.approx(7.0)
    assert info["pose"]["travel_deg"] == 180.0 and info["pose"]["yaw_deg"] == 180.0
    # D MEDIUM -> yaw 240 (60 deg right of travel 180); through b (a bend-free pass) yaw keeps its offset
    env.step(ArenaAction("D", "MEDIUM"))
    _, _, _, _, info = env.step(W("LARGE"))
    assert xy(info) == pytest.approx((0.0, 6.0), abs=1e-12)
    assert info["pose"]["edge"] == ["b", "a"] and info["pose"]["yaw_deg"] == pytest.approx(240.0)


def test_camera_turns_with_the_street_at_a_bend():
    # an L-shaped street: a(0,0) -> b(0,10) -> c(10,10); b has one onward branch (a 90 deg right bend)
    city = city_from_xy({"a": (0, 0), "b": (0, 10), "c": (10, 10)}, [("a", "b"), ("b", "c")])
    env = ArenaEnv(city)
    env.reset(options={"start_node": "a", "start_heading_deg": 0.0, "start_yaw_deg": 350.0})
    _, _, _, _, info = env.step(W("LARGE"))
    _, _, _, _, info = env.step(W("MEDIUM"))  # 7 + 4 = 11: 1 m past the bend
    assert xy(info) == pytest.approx((1.0, 10.0), abs=1e-12)
    assert info["pose"]["travel_deg"] == 90.0
    assert info["pose"]["yaw_deg"] == pytest.approx(80.0)  # 10 deg left of travel, as before the bend


def test_t_junction_arrows_and_branch_mapping_both_rules():
    for rule, up_target in (("nearest", "w"), ("half-plane", None)):
        env = ArenaEnv(t_junction(), ArenaConfig(MotionConfig(branch_rule=rule)))
        obs, _ = env.reset(options={"start_node": "s", "start_heading_deg": 0.0})
        assert obs["arrows"] == []
        _, _, _, _, info = env.step(ArenaAction("RIGHT"))  # no arrows mid-street
        assert info["invalid_action"] and info["invalid_reason"] == "no_arrows"
        run(env, [W("LARGE"), W("LARGE")])
        obs, _, _, _, info = env.step(W("LARGE"))  # 6 m to j, 1 m dropped at the T
        assert info["blocked"] and info["invalid_reason"] == "intersection" and info["moved_m"] == pytest.approx(6.0)
        got = {a["target"]: (a["turn_deg"], a["keys"]) for a in obs["arrows"]}
        assert got["w"][0] == pytest.approx(-90.0) and got["e"][0] == pytest.approx(90.0)
        # W does not cross an intersection
        _, _, _, _, info = env.step(W("SMALL"))
        assert info["blocked"] and info["moved_m"] == 0.0
        if rule == "nearest":
            # UP is 90 deg from both arms: a tie, broken to the leftmost (w)
            assert got == {"w": (pytest.approx(-90.0), ["LEFT", "UP"]), "e": (pytest.approx(90.0), ["RIGHT"])}
        else:
            assert got == {"w": (pytest.approx(-90.0), ["LEFT"]), "e": (pytest.approx(90.0), ["RIGHT"])}
            _, _, _, _, info = env.step(ArenaAction("UP"))
            assert info["invalid_action"] and info["invalid_reason"] == "no_branch_for_key"
        snap = env.state
        _, _, _, _, info = env.step(ArenaAction("UP"))
        if up_target is None:
            assert env.state == snap and info["invalid_action"]
        else:
            assert info["branch"]["target"] == "w" and info["pose"]["travel_deg"] == 270.0
            assert info["pose"]["yaw_deg"] == 270.0 and info["displacement_m"] == 0.0
            continue
        _, _, _, _, info = env.step(ArenaAction("RIGHT"))
        assert info["branch"]["target"] == "e" and info["pose"]["edge"] == ["j", "e"]
        assert info["pose"]["travel_deg"] == 90.0 and info["pose"]["yaw_deg"] == 90.0
        obs, _, _, _, info = env.step(ArenaAction("LEFT"))  # arrows are gone once a branch is chosen
        assert obs["arrows"] == [] and info["invalid_reason"] == "no_arrows"
        _, _, _, _, info = env.step(W("SMALL"))
        assert xy(info) == pytest.approx((1.5, 0.0), abs=1e-12)
        assert info["counters"]["invalid_actions"] == 4  # RIGHT mid-street, UP twice (half-plane), LEFT


def test_straight_and_right_two_branches():
    # arriving at j along the bar from w: e straight on, s to the right
    for rule, left in (("nearest", "e"), ("half-plane", None)):
        env = ArenaEnv(t_junction(), ArenaConfig(MotionConfig(branch_rule=rule)))
        env.reset(options={"start_node": "w", "start_heading_deg": 90.0})
        obs = run(env, [W("LARGE"), W("LARGE"), W("LARGE")])[0]
        assert {a["target"]: a["keys"] for a in obs["arrows"]} == (
            {"e": ["LEFT", "UP"], "s": ["RIGHT"]} if rule == "nearest" else {"e": ["UP"], "s": ["RIGHT"]})
        _, _, _, _, info = env.step(ArenaAction("LEFT"))
        if left is None:
            assert info["invalid_action"]
        else:
            assert info["branch"]["target"] == "e" and info["branch"]["turn_deg"] == pytest.approx(0.0)


def test_cross_three_branches_and_looking_back_at_a_t():
    env = ArenaEnv(cross())
    env.reset(options={"start_node": "s", "start_heading_deg": 0.0})
    obs = run(env, [W("LARGE")] * 3)[0]
    assert {a["target"]: a["keys"] for a in obs["arrows"]} == {"w": ["LEFT"], "n": ["UP"], "e": ["RIGHT"]}
    # at the T junction, facing back (yaw 180) the keys are relative to the reversed walking direction
    env = ArenaEnv(t_junction())
    env.reset(options={"start_node": "s", "start_heading_deg": 0.0})
    run(env, [W("LARGE")] * 3 + [ArenaAction("D", "LARGE"), ArenaAction("D", "LARGE")])
    obs = env._obs()
    assert {a["target"]: a["keys"] for a in obs["arrows"]} == {"e": ["LEFT"], "s": ["UP"], "w": ["RIGHT"]}
    _, _, _, _, info = env.step(ArenaAction("UP"))
    assert info["branch"]["target"] == "s" and info["pose"]["travel_deg"] == 180.0 and info["pose"]["yaw_deg"] == 180.0


def test_five_way_star_keys_reach_at_most_three_branches():
    bearings = {"l2": 240.0, "l1": 315.0, "n": 0.0, "r1": 45.0, "r2": 120.0}
    nodes = {"o": (0.0, 0.0), "s": (0.0, -20.0)}
    nodes.update({k: (20 * math.sin(math.radians(b)), 20 * math.cos(math.radians(b))) for k, b in bearings.items()})
    city = city_from_xy(nodes, [("o", k) for k in ["s", *bearings]])
    env = ArenaEnv(city)
    env.reset(options={"start_node": "s", "start_heading_deg": 0.0})
    obs = run(env, [W("LARGE")] * 3)[0]
    arrows = obs["arrows"]
    assert [a["target"] for a in arrows] == ["l2", "l1", "n", "r1", "r2"]  # leftmost first
    assert [a["turn_deg"] for a in arrows] == pytest.approx([-120.0, -45.0, 0.0, 45.0, 120.0], abs=1e-9)
    # LEFT (-90): -120 is 30 deg away, -45 is 45 deg away -> l2; the 45 deg branches are unreachable
    assert [a["keys"] for a in arrows] == [["LEFT"], [], ["UP"], [], ["RIGHT"]]


def test_one_way_street_blocks_walking_back():
    env = ArenaEnv(block_loop())
    env.reset(options={"start_node": "s", "start_heading_deg": 0.0})
    env.step(W("MEDIUM"))
    run(env, [ArenaAction("D", "LARGE"), ArenaAction("D", "LARGE")])
    _, _, _, _, info = env.step(W("MEDIUM"))
    assert info["blocked"] and info["invalid_reason"] == "one_way" and xy(info) == pytest.approx((0.0, 4.0))


def test_parse_error_consumes_a_step_and_executes_nothing():
    env = ArenaEnv(straight_street())
    obs, _ = env.reset(options={"start_node": "a", "start_heading_deg": 0.0, "task_text": "find the shop"})
    env.step(W("MEDIUM"))
    before = env.state
    obs, r, term, trunc, info = env.step(ArenaAction.parse_error("json_decode_error"))
    assert env.state == before and not term and not trunc and r == 0.0
    assert info["parse_error"] and not info["executed"] and info["displacement_m"] == 0.0
    assert info["counters"] == {"steps": 2, "executed_actions": 1, "parse_errors": 1, "invalid_actions": 0,
                                "blocked_moves": 0, "answers": 0}
    assert obs["step"] == 2 and obs["text"]["recent_actions"] == ["W MEDIUM"]
    assert info["action"] == {"kind": "PARSE_ERROR", "magnitude": None, "answer": None, "error": "json_decode_error"}


def test_answer_ends_the_episode():
    env = ArenaEnv(straight_street())
    env.reset(options={"start_node": "a", "start_heading_deg": 0.0})
    _, _, term, trunc, info = env.step(ArenaAction("ANSWER", answer="x:1 y:2"))
    assert term and not trunc and info["stop_reason"] == "ANSWER" and info["answer"] == "x:1 y:2"
    with pytest.raises(RuntimeError):
        env.step(W())
    with pytest.raises(ValueError):
        ArenaAction("JUMP")
    with pytest.raises(ValueError):
        ArenaAction("W", "HUGE")
    env2 = ArenaEnv(straight_street())
    env2.reset(options={"start_node": "a"})
    with pytest.raises(TypeError):
        env2.step("W")
    with pytest.raises(ValueError):
        env2.reset(options={"start_node": "nowhere"})


def test_observation_text_memory_and_recent_window():
    env = ArenaEnv(straight_street(), ArenaConfig(recent_actions_window=3))
    ref = np.zeros((4, 4, 3), np.uint8)
    obs, _ = env.reset(options={"start_node": "a", "start_heading_deg": 0.0, "task_text": "count the cars",
                                "memory": "", "reference_images": [ref]})
    assert set(obs) == {"view", "map", "reference_images", "arrows", "text", "recent_actions", "step"}
    assert obs["view"] is None and obs["map"] is None and obs["reference_images"][0] is ref
    env.step(ArenaAction("A", "SMALL", memory="1. walked north"))
    env.step(ArenaAction("W", "LARGE"))
    env.step(ArenaAction.parse_error("bad"))
    env.step(ArenaAction("Q", None, memory="2. saw a shop"))
    obs, *_ = env.step(ArenaAction("W", "SMALL"))
    assert obs["text"] == {"task": "count the cars", "memory": "2. saw a shop",
                           "recent_actions": ["W LARGE", "Q", "W SMALL"]}
    assert [r["step"] for r in obs["recent_actions"]] == [2, 4, 5]
    assert obs["recent_actions"][0]["moved_m"] == pytest.approx(7.0)


def test_info_position_and_goal_distances():
    env = ArenaEnv(t_junction())
    _, info = env.reset(options={"start_node": "s", "start_heading_deg": 0.0, "goal_node": "e"})
    assert info["goal_distance_m"]["euclidean"] == pytest.approx(math.hypot(20, 20))
    assert info["goal_distance_m"]["graph"] == pytest.approx(40.0)
    start_ll = (info["pose"]["lat"], info["pose"]["lon"])
    _, _, _, _, info = env.step(W("LARGE"))
    # independent check of lat/lon: geodesic distance walked on the ellipsoid
    assert geodesic_distance_m(*start_ll, info["pose"]["lat"], info["pose"]["lon"]) == pytest.approx(7.0, abs=1e-3)
    assert info["goal_distance_m"]["euclidean"] == pytest.approx(math.hypot(20, 13))
    assert info["goal_distance_m"]["graph"] == pytest.approx(33.0)  # 13 m to j + 20 m to e
    # a goal given as a position: graph distance to its nearest node plus the residual
    env.reset(options={"start_node": "s", "start_heading_deg": 0.0, "goal_xy_m": (20.0, 3.0)})
    assert env.goal_node == "e"
    assert env.graph_goal_distance_m() == pytest.approx(43.0)
    lat, lon = FRAME.to_latlon(20.0, 3.0)
    env.reset(options={"start_node": "s", "start_heading_deg": 0.0, "goal_latlon": (lat, lon)})
    assert env.euclidean_goal_distance_m() == pytest.approx(math.hypot(20, 23), abs=1e-6)
    # unreachable: the block loop's goal cannot be reached against the one-way street
    env = ArenaEnv(block_loop())
    env.reset(options={"start_node": "s", "start_heading_deg": 0.0, "goal_node": "g"})
    assert env.graph_goal_distance_m() == pytest.approx(110.0)
    g = block_loop()
    g.graph.remove_edge("b", "g")
    env = ArenaEnv(g)
    env.reset(options={"start_node": "s", "start_heading_deg": 0.0, "goal_node": "g"})
    assert env.graph_goal_distance_m() == math.inf


def test_determinism_and_action_space():
    acts = [W("LARGE"), ArenaAction("D", "SMALL"), W(), ArenaAction("UP"), ArenaAction("E", "LARGE")]

    def trace():
        env = ArenaEnv(cross())
        env.reset(seed=3, options={"start_node": "s", "start_heading_deg": 0.0})
        return [(env.step(a)[4]["pose"]) for a in acts]

    assert trace() == trace()
    env = ArenaEnv(cross())
    env.reset(seed=7, options={"start_node": "s"})
    a1 = [env.action_space.sample() for _ in range(20)]
    env.reset(seed=7, options={"start_node": "s"})
    a2 = [env.action_space.sample() for _ in range(20)]
    assert a1 == a2 and all(env.action_space.contains(a) for a in a1)
    assert all(a.kind != ActionKind.PARSE_ERROR for a in a1)
    assert not env.action_space.contains("W") and Magnitude("SMALL") == Magnitude.SMALL
