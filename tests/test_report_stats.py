"""The report's statistics on hand-worked cases: Holm adjustment, the paired bootstrap test, Kendall tau
of agent rankings under a scaled success radius, rescoring from stored distances, and the failure-cause
rules on hand-made rows."""

import math

import numpy as np
import pytest

from urbanarena.report.episodes import counters, geometry, parse_expected_xy
from urbanarena.report.failures import breakdown, classify
from urbanarena.report.sensitivity import kendall_tau, mean_at_scale, rescore, sensitivity
from urbanarena.report.significance import holm
from urbanarena.tasks.metrics.paired import paired_bootstrap, per_task_scores


# ------------------------------------------------------------------ Holm
def test_holm_hand_worked():
    # m = 4; sorted 0.005, 0.01, 0.03, 0.04 -> 4*0.005 = 0.02, 3*0.01 = 0.03, 2*0.03 = 0.06,
    # 1*0.04 = 0.04 raised to the running max 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_holm_caps_at_one_skips_none_and_keeps_a_single_test():
    # m = 2 (None does not count): 2*0.3 = 0.6, then max(0.6, 1*0.7) = 0.7
    out = holm([0.7, None, 0.3])
    assert out[1] is None and out[0] == pytest.approx(0.7) and out[2] == pytest.approx(0.6)
    assert holm([0.6, 0.9]) == pytest.approx([1.0, 1.0])  # 2*0.6 capped at 1
    assert holm([0.02]) == pytest.approx([0.02])
    assert holm([]) == []
    with pytest.raises(ValueError):
        holm([1.5])


def test_holm_ties_and_rejections():
    # three equal p = 0.02: 3*0.02 = 0.06 for the first, the others raised to it
    assert holm([0.02, 0.02, 0.02]) == pytest.approx([0.06, 0.06, 0.06])
    # rejections at 0.05 for [0.001, 0.012, 0.04]: 0.003, 0.024, 0.04 -> all three
    adj = holm([0.04, 0.001, 0.012])
    assert adj == pytest.approx([0.04, 0.003, 0.024])


# ------------------------------------------------------------- bootstrap (two-sided, as the report uses it)
def _two(a, b, **kw):
    return paired_bootstrap(a, b, alternative="two-sided", **kw)


def test_paired_bootstrap_two_tasks_hand_worked():
    # d = [1, 0], D = 0.5. Resample means: 1 (p 1/4), 0.5 (1/2), 0 (1/4); |D* - 0.5| >= 0.5 for 0 and 1
    # -> p = 1/2 (up to Monte Carlo error)
    res = _two([1.0, 0.0], [0.0, 0.0], n_resamples=20000, seed=1)
    assert res.mean_diff == pytest.approx(0.5) and res.n == 2
    assert res.p_value == pytest.approx(0.5, abs=0.015)


def test_paired_bootstrap_degenerate_cases():
    same = _two([0.3, 0.7, 1.0], [0.3, 0.7, 1.0], n_resamples=999)
    assert same.mean_diff == 0.0 and same.p_value == 1.0
    shift = _two([1.0, 1.0, 1.0], [0.0, 0.0, 0.0], n_resamples=999)
    assert shift.mean_diff == 1.0 and shift.p_value == pytest.approx(1 / 1000)  # no resample reaches |D|
    assert shift.ci95 == (1.0, 1.0)
    with pytest.raises(ValueError):
        _two([], [])
    with pytest.raises(ValueError):
        _two([1.0], [1.0, 2.0])
    with pytest.raises(ValueError):
        _two([float("nan")], [1.0])


def test_paired_bootstrap_three_tasks_exact_enumeration():
    # d = [1, 0, 0]: D = 1/3; resample mean = k/3 with k ~ Binomial(3, 1/3);
    # |k/3 - 1/3| >= 1/3 for k = 0, 2, 3: P = (8 + 6 + 1) / 27 = 15/27
    res = _two([1.0, 0.0, 0.0], [0.0, 0.0, 0.0], n_resamples=30000, seed=3)
    assert res.p_value == pytest.approx(15 / 27, abs=0.012)


def test_paired_bootstrap_is_reproducible_with_sequence_seeds():
    rng = np.random.default_rng(0)
    a, b = rng.random(20), rng.random(20)
    assert _two(a, b, seed=[5, 7]) == _two(a, b, seed=[5, 7])
    assert _two(a, b, seed=[5, 7]) != _two(a, b, seed=[5, 8])
    # an int seed is the one-word sequence
    assert _two(a, b, seed=5) == _two(a, b, seed=[5])


def test_per_task_scores_skipping_missing():
    rows = [{"task_id": "a", "s": 1.0}, {"task_id": "a", "s": 0.0}, {"task_id": "b", "s": None},
            {"task_id": "c", "s": 0.5}]
    assert per_task_scores(rows, "s", missing_as=None) == {"a": 0.5, "c": 0.5}


# ---------------------------------------------------------- Kendall tau
def test_kendall_tau_hand_made():
    # base ranking a > b > c; scaled: b > a > c. Pairs: (a,b) discordant, (a,c), (b,c) concordant
    # -> tau = (2 - 1) / 3
    assert kendall_tau([50.0, 40.0, 30.0], [50.0, 60.0, 30.0]) == pytest.approx(1 / 3)
    assert kendall_tau([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == pytest.approx(-1.0)
    assert kendall_tau([1.0], [2.0]) is None
    assert kendall_tau([1.0, 1.0], [1.0, 2.0]) is None  # constant vector: undefined
    taus = sensitivity({0.75: {"a": 10.0, "b": 20.0, "c": 5.0}, 1.0: {"a": 30.0, "b": 20.0, "c": 5.0},
                        1.5: {"a": 30.0, "b": 20.0, "c": 5.0}})
    # at 0.75: b > a > c vs a > b > c -> one discordant pair of three
    assert taus[0.75] == pytest.approx(1 / 3) and taus[1.0] == pytest.approx(1.0) and taus[1.5] == pytest.approx(1.0)


def _arena_row(task, dist, thr, score, status="ANSWER", metric="coordinate_match", **kw):
    return {"task_id": task, "status": status, "evaluation_metric": metric, "distance_to_goal": dist,
            "validation_threshold": thr, "validation_available": 1, "evaluation_score": score, **kw}


def test_rescore_arena_and_graph_rows():
    r = _arena_row("t", 12.0, 10.0, 0.0)
    assert rescore(r, 1.0) == 0.0 and rescore(r, 1.25) == 1.0 and rescore(r, 1.2) == 0.0  # strict <
    ok = _arena_row("t", 8.0, 10.0, 1.0)
    assert rescore(ok, 0.75) == 0.0 and rescore(ok, 0.8) == 0.0 and rescore(ok, 0.81) == 1.0
    count = _arena_row("c", None, None, 0.5, metric="mean_relative_accuracy")
    assert rescore(count, 0.75) == 0.5 and rescore(count, 1.5) == 0.5
    missing = _arena_row("m", None, None, None, metric="fuzzy_match")
    assert rescore(missing, 1.0) == 0.0
    g = {"task_id": "g", "status": None, "goal_dist_m": 50.0}
    assert rescore(g, 1.0, 50.0) == 1.0 and rescore(g, 0.75, 50.0) == 0.0 and rescore(g, 1.0) is None
    rows = [r, ok, count]
    # (0 + 1 + 0.5) / 3 at 1.0, (1 + 1 + 0.5) / 3 at 1.5, (0 + 0 + 0.5) / 3 at 0.75
    assert mean_at_scale(rows, 1.0) == pytest.approx(50.0)
    assert mean_at_scale(rows, 1.5) == pytest.approx(250 / 3)
    assert mean_at_scale(rows, 0.75) == pytest.approx(50 / 3)
    assert mean_at_scale([g], 1.0, {}) is None


# ------------------------------------------------------- failure rules
def _nav_row(positions, expected="x:0.00 y:0.00", thr=10.0, status="ANSWER", scored=0, env=None, **kw):
    return {"task_id": "n", "status": status, "evaluation_metric": "coordinate_match", "expected": expected,
            "validation_threshold": thr, "validation_available": 1, "scored_success": scored,
            "act_requests": len(positions) - 1, "steps": len(positions) - 1, "actions": [],
            "details": {"positions": positions, "env_counters": env or {}},
            "metrics": {"validation": {"parsed": True}}, **kw}


def test_failure_rules_on_position_tasks():
    far = [[100.0, 0.0], [90.0, 0.0], [80.0, 0.0]]
    passed = [[30.0, 0.0], [5.0, 0.0], [40.0, 0.0]]
    g = geometry(_nav_row(passed))
    assert g.min_distance_m == pytest.approx(5.0) and g.final_distance_m == pytest.approx(40.0)
    assert classify(_nav_row(passed), g) == "Planning"
    assert classify(_nav_row(far), geometry(_nav_row(far))) == "Grounding"  # answered far away
    lim = _nav_row(far, status="STEP_LIMIT")
    assert classify(lim, geometry(lim)) == "Explore"
    bad = _nav_row(far, env={"parse_errors": 1, "invalid_actions": 0})  # 1 of 2 steps unusable = 50 %
    assert counters(bad)["unusable"] == 1 and classify(bad, geometry(bad)) == "Action"
    fine = _nav_row([[100.0, 0.0]] * 4, env={"parse_errors": 1})  # 1 of 3 steps: below the share
    assert classify(fine, geometry(fine)) == "Grounding"
    won = _nav_row([[3.0, 0.0]], scored=1)
    assert classify(won, geometry(won)) is None
    err = _nav_row(far, status="error", stop_reason="error")
    assert classify(err, geometry(err)) == "Error"
    assert parse_expected_xy("x:-25.00 y:0.01") == (-25.0, 0.01) and parse_expected_xy("x:1 y:2 z") is None


def _answer_row(metric, status="ANSWER", prediction=None, parsed=True, available=1):
    return {"task_id": "a", "status": status, "evaluation_metric": metric, "validation_available": available,
            "scored_success": 0, "act_requests": 1, "steps": 1, "actions": [], "details": {"env_counters": {}},
            "metrics": {"validation": {"parsed": parsed, "prediction": prediction}}}


def test_failure_rules_on_answer_tasks():
    assert classify(_answer_row("exact_match"), None) == "Grounding"
    assert classify(_answer_row("mean_relative_accuracy"), None) == "Perception"
    assert classify(_answer_row("name_match", prediction={"distance": 0.0, "distractors_read": ["Cafe B"]}),
                    None) == "Grounding"
    assert classify(_answer_row("name_match", prediction={"distance": 0.8, "distractors_read": []}),
                    None) == "Perception"
    assert classify(_answer_row("exact_match", parsed=False), None) == "Action"
    assert classify(_answer_row("mean_relative_accuracy", status="STAGNATION"), None) == "Explore"
    assert classify(_answer_row("fuzzy_match", available=0), None) == "Unjudged"
    b = breakdown([None, "Action", "Action", "Explore", None])
    assert b["episodes"] == 5 and b["successes"] == 2 and b["failures"] == 3
    assert b["counts"]["Action"] == 2 and b["counts"]["Explore"] == 1 and b["counts"]["Perception"] == 0


def test_graph_rows_need_city_and_task():
    row = {"task_id": "g", "status": None, "stop_reason": "stop", "tc_proximity_50m": 0.0, "steps": 2,
           "invalid_actions": 0, "actions": [0, -1], "trajectory": ["a", "b"]}
    assert geometry(row) is None and classify(row, None, "tc_proximity_50m") == "Unclassified"
    unparsable = {**row, "actions": [-2, -2, -1], "steps": 3}
    assert counters(unparsable)["parse_errors"] == 2 and classify(unparsable, None, "tc_proximity_50m") == "Action"
    assert math.isclose(counters({**row, "invalid_actions": 3})["invalid_actions"], 3)
