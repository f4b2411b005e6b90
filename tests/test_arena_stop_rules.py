"""Stop-rule wrappers (STEP_LIMIT, STAGNATION, AWAY_FROM_GOAL) and the arena protocol entries."""

from __future__ import annotations

import math

import pytest

from arena_util import block_loop, straight_street, t_junction
from urbanarena.env.arena_env import ArenaAction, ArenaEnv
from urbanarena.env.protocols import PROTOCOLS, get_protocol
from urbanarena.env.stop_rules import (
    AwayFromGoalRule,
    StagnationRule,
    StepLimitRule,
    arena_config_for,
    make_arena_env,
)
from urbanarena.errors import ProtocolError

W = lambda m=None: ArenaAction("W", m)  # noqa: E731
PARSE = ArenaAction.parse_error("unparsable")


def play(env, actions):
    """Step until the episode ends or the actions run out; return (n_steps, last info, terminated, truncated)."""
    n, info, term, trunc = 0, None, False, False
    for a in actions:
        _, _, term, trunc, info = env.step(a)
        n += 1
        if term or trunc:
            break
    return n, info, term, trunc


# ------------------------------------------------------------------ STEP_LIMIT
def test_step_limit_counts_every_request_including_parse_errors():
    env = make_arena_env(straight_street(), "urbanarena-v1")
    env.reset(options={"start_node": "a", "start_heading_deg": 0.0})
    n, info, term, trunc = play(env, [PARSE] * 60)
    assert (n, term, trunc) == (50, False, True)
    assert info["stop_reason"] == "STEP_LIMIT" and info["stop_reason_detail"] == "step_limit=50"
    assert info["counters"]["parse_errors"] == 50 and info["counters"]["executed_actions"] == 0
    assert info["stop_privileged"] is False
    with pytest.raises(RuntimeError):
        env.step(W())


def test_answer_on_the_last_step_wins_and_custom_limit():
    env = make_arena_env(straight_street(), "urbanarena-v1", max_steps=3)
    env.reset(options={"start_node": "a", "start_heading_deg": 0.0})
    n, info, term, trunc = play(env, [ArenaAction("A"), PARSE, ArenaAction("ANSWER", answer="7")])
    assert (n, term, trunc) == (3, True, False) and info["stop_reason"] == "ANSWER"
    env.reset(options={"start_node": "a", "start_heading_deg": 0.0})
    n, info, term, trunc = play(env, [ArenaAction("A"), PARSE, W(), W()])
    assert (n, trunc, info["stop_reason"]) == (3, True, "STEP_LIMIT")
    assert info["stop_rule_counters"]["STEP_LIMIT"] == 3
    with pytest.raises(ValueError):
        StepLimitRule(ArenaEnv(straight_street()), 0)


# ------------------------------------------------------------------ STAGNATION
def test_stagnation_same_action_twenty_times_without_moving():
    env = make_arena_env(straight_street(), "urbanarena-v1")
    env.reset(options={"start_node": "b", "start_heading_deg": 0.0})
    # magnitudes differ but the action kind is the same (the reference compares tokens)
    acts = [ArenaAction("A", ["SMALL", "LARGE", None][i % 3]) for i in range(30)]
    n, info, _, trunc = play(env, acts)
    assert (n, trunc, info["stop_reason"]) == (20, True, "STAGNATION")
    assert info["stop_rule_counters"]["STAGNATION"] == 20
    assert "A executed 20 consecutive times" in info["stop_reason_detail"]


def test_parse_errors_are_never_repeats_and_break_the_run():
    env = make_arena_env(straight_street(), "urbanarena-v1", max_steps=100)
    env.reset(options={"start_node": "b", "start_heading_deg": 0.0})
    acts = [ArenaAction("D")] * 19 + [PARSE] + [ArenaAction("D")] * 19 + [PARSE] * 5 + [ArenaAction("D")] * 20
    n, info, _, trunc = play(env, acts)
    assert n == 19 + 1 + 19 + 5 + 20 and info["stop_reason"] == "STAGNATION"
    assert info["counters"]["parse_errors"] == 6


def test_stagnation_resets_on_movement_and_on_another_action():
    env = make_arena_env(straight_street(), "urbanarena-v1")
    env.reset(options={"start_node": "b", "start_heading_deg": 0.0})
    a = ArenaAction("A")
    acts = [a] * 19 + [W("SMALL")] + [a] * 19 + [ArenaAction("Q")] + [a] * 9
    n, info, term, trunc = play(env, acts)
    assert n == len(acts) and not trunc and info["stop_reason"] is None
    assert info["stop_rule_counters"]["STAGNATION"] == 9


def test_blocked_w_and_invalid_branch_keys_stagnate():
    env = make_arena_env(straight_street(), "urbanarena-v1")
    env.reset(options={"start_node": "c", "start_heading_deg": 0.0})
    # W LARGE: 10 m to the dead end d in two steps (7 + 3), then blocked repeats without moving.
    # The first W that ends on d moved 3 m (no repeat); 20 blocked Ws follow.
    n, info, _, trunc = play(env, [W("LARGE")] * 40)
    assert (n, info["stop_reason"]) == (2 + 20, "STAGNATION")
    assert info["counters"]["blocked_moves"] == 21
    env.reset(options={"start_node": "b", "start_heading_deg": 0.0})
    n, info, _, _ = play(env, [ArenaAction("LEFT")] * 25)
    assert (n, info["stop_reason"], info["counters"]["invalid_actions"]) == (20, "STAGNATION", 20)


# -------------------------------------------------------------- AWAY_FROM_GOAL
def loop_options():
    return {"start_node": "s", "start_heading_deg": 0.0, "goal_node": "g"}


def test_detour_around_a_block_stops_under_cityarena_but_not_urbanarena():
    # Euclidean distance to g grows on every 7 m step north: 30.81, 33.11, 36.62, 41.04, 46.10 m
    expected = [math.hypot(30, 7 * k) for k in range(1, 6)]
    assert all(b - a > 0.05 for a, b in zip([30.0] + expected, expected))
    env = make_arena_env(block_loop(), "cityarena-v1", task_kind="map_navigation")
    env.reset(options=loop_options())
    n, info, term, trunc = play(env, [W("LARGE")] * 15)
    assert (n, trunc, info["stop_reason"]) == (5, True, "AWAY_FROM_GOAL")
    assert info["stop_privileged"] is True
    assert info["goal_distance_m"]["euclidean"] == pytest.approx(expected[-1])
    assert info["stop_reason_detail"].endswith("euclidean distance=46.10 m")
    # urbanarena-v1: the path distance shrinks by 7 m a step (110, 103, ..., 5): never stopped
    env = make_arena_env(block_loop(), "urbanarena-v1", task_kind="map_navigation")
    env.reset(options=loop_options())
    n, info, term, trunc = play(env, [W("LARGE")] * 15)
    assert (n, term, trunc) == (15, False, False)
    assert info["goal_distance_m"]["graph"] == pytest.approx(5.0)
    assert (info["pose"]["x_m"], info["pose"]["y_m"]) == pytest.approx((30.0, 5.0))
    assert info["stop_rule_counters"]["AWAY_FROM_GOAL"] == 0


def test_away_from_goal_only_for_map_navigation():
    env = make_arena_env(block_loop(), "cityarena-v1", task_kind="landmark_search_language")
    env.reset(options=loop_options())
    n, info, _, trunc = play(env, [W("LARGE")] * 8)
    assert n == 8 and not trunc and "AWAY_FROM_GOAL" not in info["stop_rule_counters"]
    env = make_arena_env(block_loop(), "cityarena-v1")  # task kind unknown: not applied
    env.reset(options=loop_options())
    assert play(env, [W("LARGE")] * 6)[0] == 6


def test_walking_away_on_the_graph_stops_urbanarena_and_turns_count_differently():
    # from b walking south towards the dead end a; goal d: both distances grow 1.5 m a step
    opts = {"start_node": "b", "start_heading_deg": 180.0, "goal_node": "d"}
    acts = [W("SMALL"), W("SMALL"), ArenaAction("A", "SMALL")] + [W("SMALL")] * 5
    env = make_arena_env(straight_street(), "urbanarena-v1", task_kind="map_navigation")
    env.reset(options=opts)
    n, info, _, trunc = play(env, acts)
    # "moves": the camera turn is skipped, so the 5th move (step 6) stops it
    assert (n, info["stop_reason"]) == (6, "AWAY_FROM_GOAL")
    assert info["goal_distance_m"]["graph"] == pytest.approx(20 + 7.5)  # 7.5 m walked, 20 m from b to d
    env = make_arena_env(straight_street(), "cityarena-v1", task_kind="map_navigation")
    env.reset(options=opts)
    n, info, _, trunc = play(env, acts)
    # "requests": the turn resets the count (1, 2, 0, 1, 2, 3, 4, 5) -> step 8; the last W ends on a (10 m)
    assert (n, info["stop_reason"]) == (8, "AWAY_FROM_GOAL")
    assert info["goal_distance_m"]["euclidean"] == pytest.approx(30.0)


def test_parse_errors_reset_away_count_only_under_requests():
    opts = {"start_node": "b", "start_heading_deg": 180.0, "goal_node": "d"}
    acts = [W("SMALL")] * 4 + [PARSE] + [W("SMALL")] * 2
    for proto, expect in (("urbanarena-v1", (6, "AWAY_FROM_GOAL")), ("cityarena-v1", (7, None))):
        env = make_arena_env(straight_street(), proto, task_kind="map_navigation")
        env.reset(options=opts)
        n, info, _, _ = play(env, acts)
        assert (n, info["stop_reason"]) == expect, proto


def test_rule_validation_and_no_goal():
    base = ArenaEnv(straight_street())
    with pytest.raises(ValueError):
        AwayFromGoalRule(base, distance="manhattan")
    with pytest.raises(ValueError):
        AwayFromGoalRule(base, counts="seconds")
    with pytest.raises(ValueError):
        StagnationRule(base, limit=0)
    env = AwayFromGoalRule(ArenaEnv(straight_street()), "euclidean", "requests", limit=1)
    env.reset(options={"start_node": "a", "start_heading_deg": 0.0})  # no goal: the rule stays silent
    assert play(env, [W("LARGE")] * 3)[0] == 3


def test_inner_rule_wins_when_two_fire_on_the_same_step():
    # 20 identical blocked Ws at a dead end while the step limit is also reached on step 20
    env = make_arena_env(straight_street(), "urbanarena-v1", max_steps=20)
    env.reset(options={"start_node": "d", "start_heading_deg": 0.0})
    n, info, _, _ = play(env, [W()] * 25)
    assert n == 20 and info["stop_reason"] == "STEP_LIMIT"
    assert info["stop_rule_counters"] == {"STEP_LIMIT": 20, "STAGNATION": 20}


# ------------------------------------------------------------------ protocols
def test_arena_protocol_entries():
    assert list(PROTOCOLS)[:3] == ["cityseeker-v1", "touchdown-v1", "urbanarena-graph-v1"]
    ca, ua = get_protocol("cityarena-v1"), get_protocol("urbanarena-v1")
    assert ca.faithful_to == "360CityArena" and ua.faithful_to is None
    assert (ca.params["away_from_goal_distance"], ua.params["away_from_goal_distance"]) == ("euclidean", "graph")
    assert (ca.params["parse_failure"], ca.params["max_reasks"]) == ("re-request", 3)
    assert (ua.params["parse_failure"], ua.params["max_reasks"]) == ("corrective-re-ask", 2)
    assert ca.params["generation"] == {"temperature": 1.0, "max_output_tokens": 8192}
    assert arena_config_for("cityarena-v1").motion.branch_rule == "nearest"
    assert arena_config_for("urbanarena-v1").motion.branch_rule == "half-plane"
    with pytest.raises(ProtocolError):
        make_arena_env(t_junction(), "cityseeker-v1")
    env = make_arena_env(t_junction(), "urbanarena-v1", task_kind="map_navigation")
    assert isinstance(env.unwrapped, ArenaEnv)


# ------------------------------------- cityarena-v1: the reference's timing (issue 25)
# agent_server.early_stopping checks each request before its action runs, on the
# position sent with it; STEP_LIMIT counts parsed replies only; a firing rule replaces
# the request's action with ANSWER (not executed).
def test_reference_stagnation_needs_a_21st_identical_request():
    env = make_arena_env(straight_street(), "cityarena-v1")
    env.reset(options={"start_node": "b", "start_heading_deg": 0.0})
    # the probe: 20 x A then D does not stop under the reference
    n, info, term, trunc = play(env, [ArenaAction("A")] * 20 + [ArenaAction("D")])
    assert (n, term, trunc, info["stop_reason"]) == (21, False, False, None)
    env.reset(options={"start_node": "b", "start_heading_deg": 0.0})
    n, info, term, trunc = play(env, [ArenaAction("A")] * 30)
    # requests 2..21 each repeat the previous token at an unchanged position: 20 on request 21
    assert (n, trunc, info["stop_reason"]) == (21, True, "STAGNATION")
    assert info["action_replaced"] is True and not info["answer"]
    # 20 As ran; the 21st was replaced by the (executed) empty ANSWER
    assert info["counters"]["executed_actions"] == 21 and info["counters"]["answers"] == 1
    assert info["stop_rule_counters"]["STAGNATION"] == 20
    # ours (urbanarena-v1) stops after the 20th
    env = make_arena_env(straight_street(), "urbanarena-v1")
    env.reset(options={"start_node": "b", "start_heading_deg": 0.0})
    n, info, _, _ = play(env, [ArenaAction("A")] * 20 + [ArenaAction("D")])
    assert (n, info["stop_reason"]) == (20, "STAGNATION")


def test_reference_step_limit_counts_parsed_replies_and_replaces_the_50th():
    env = make_arena_env(straight_street(), "cityarena-v1")
    env.reset(options={"start_node": "b", "start_heading_deg": 0.0})
    # alternate A and D so stagnation never fires; 10 parse errors do not count
    acts = [PARSE] * 10 + [ArenaAction("AD"[i % 2]) for i in range(60)]
    n, info, term, trunc = play(env, acts)
    assert (n, term, trunc, info["stop_reason"]) == (60, False, True, "STEP_LIMIT")
    # 49 turns ran, the 50th parsed reply became the empty ANSWER
    assert info["counters"]["executed_actions"] == 50 and info["counters"]["answers"] == 1
    assert info["counters"]["parse_errors"] == 10
    assert info["stop_rule_counters"]["STEP_LIMIT"] == 50
    # an ANSWER as the 50th parsed reply is the agent's answer
    env.reset(options={"start_node": "b", "start_heading_deg": 0.0})
    acts = [ArenaAction("AD"[i % 2]) for i in range(49)] + [ArenaAction("ANSWER", answer="7")]
    n, info, term, _ = play(env, acts)
    assert (n, term, info["stop_reason"], info["answer"]) == (50, True, "ANSWER", "7")


def test_reference_step_limit_checked_before_stagnation():
    # 25 blocked Ws at a dead end, limit 21: on request 21 both rules fire; the reference checks
    # the step limit first
    env = make_arena_env(straight_street(), "cityarena-v1", max_steps=21)
    env.reset(options={"start_node": "d", "start_heading_deg": 0.0})
    n, info, _, _ = play(env, [W()] * 25)
    assert (n, info["stop_reason"]) == (21, "STEP_LIMIT")
    assert info["counters"]["executed_actions"] == 21 and info["counters"]["answers"] == 1
