"""Point navigation metrics: TC-E, within-radius (TC-P), SPL (hand-worked cases)."""

from __future__ import annotations

import math

import pytest

from urbanarena.tasks.metrics import METRIC_KEYS, PERCENT_KEYS
from urbanarena.tasks.metrics.navigation import spl, tc_exact, within_radius


def _defined(v: object) -> bool:
    return isinstance(v, float) and not math.isnan(v)


def test_tc_exact():
    assert tc_exact("n7", "n7") == 1.0
    assert tc_exact("n7", "n8") == 0.0
    assert tc_exact(None, "n7") == 0.0  # empty trajectory
    assert tc_exact("n7", None) == 0.0  # task without a goal node
    assert tc_exact(None, None) == 0.0
    assert all(_defined(tc_exact(a, b)) for a, b in [("a", "a"), (None, None)])


def test_within_radius_is_inclusive_and_defined():
    assert within_radius(0.0, 50.0) == 1.0  # stopped on the goal
    assert within_radius(50.0, 50.0) == 1.0  # d <= r
    assert within_radius(50.000001, 50.0) == 0.0
    assert within_radius(39.9, 40.0) == 1.0
    assert within_radius(59.0, 40.0) == 0.0
    assert within_radius(59.0, 60.0) == 1.0
    # no final node / unreachable / garbage distance -> 0, never NaN
    for d in (None, math.inf, float("nan")):
        assert within_radius(d, 50.0) == 0.0


def test_spl_hand_worked_anderson_2018():
    # SPL_i = S_i * l_i / max(p_i, l_i), metres
    assert spl(1.0, 100.0, 150.0) == pytest.approx(2.0 / 3.0)  # 50 % detour
    assert spl(1.0, 120.0, 120.0) == 1.0  # shortest path taken
    assert spl(1.0, 100.0, 80.0) == 1.0  # p < l (radius success before the goal): capped at 1
    assert spl(0.0, 100.0, 100.0) == 0.0  # failure
    assert spl(1.0, 250.0, 1000.0) == pytest.approx(0.25)
    # mean over episodes, as in the paper: (2/3 + 1 + 0) / 3
    eps = [(1.0, 100.0, 150.0), (1.0, 50.0, 50.0), (0.0, 70.0, 10.0)]
    assert sum(spl(*e) for e in eps) / 3 == pytest.approx((2 / 3 + 1 + 0) / 3)


def test_spl_corner_cases_defined():
    # start == goal, no move: max(p, l) = 0 -> S
    assert spl(1.0, 0.0, 0.0) == 1.0
    assert spl(0.0, 0.0, 0.0) == 0.0
    # start == goal but wandered 40 m and came back: l / max(p, l) = 0 / 40
    assert spl(1.0, 0.0, 40.0) == 0.0
    # unreachable goal: l = inf
    assert spl(1.0, math.inf, 30.0) == 0.0
    assert spl(0.0, math.inf, 30.0) == 0.0
    # empty / broken trajectory length
    assert spl(1.0, 30.0, math.inf) == 0.0
    assert spl(1.0, 30.0, float("nan")) == 0.0
    assert spl(1.0, float("nan"), 30.0) == 0.0
    for args in [(1.0, 0.0, 0.0), (1.0, math.inf, 30.0), (1.0, 30.0, float("nan")), (1.0, 0.0, 40.0)]:
        assert _defined(spl(*args))


def test_metric_keys_cover_issue_summary_keys():
    # summary --json keys named in issue 2, section 9
    expected = {
        "tc_exact", "tc_proximity_40m", "tc_proximity_50m", "tc_proximity_60m", "tc_category", "spl",
        "goal_dist_m", "spd_cityseeker", "spd_m", "ndtw", "sdtw", "dtw_m", "avg_steps", "tc", "spd_hops", "sed",
    }  # fmt: skip
    assert set(METRIC_KEYS) == expected
    assert len(METRIC_KEYS) == len(expected)
    # rates are percent; distances and step counts are not
    assert PERCENT_KEYS <= expected
    assert {"goal_dist_m", "spd_cityseeker", "spd_m", "dtw_m", "avg_steps", "spd_hops"}.isdisjoint(PERCENT_KEYS)
    assert {"tc_exact", "tc_proximity_50m", "spl", "ndtw", "sdtw", "tc", "sed"} <= PERCENT_KEYS
