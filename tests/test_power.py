"""Minimum detectable difference: the formula against hand numbers and a simulation of its power."""

import math

import numpy as np
import pytest

from urbanarena.tasks.metrics.power import mdd_table, minimum_detectable_difference, observed_mdd


def test_hand_values():
    # z_0.975 = 1.959964, z_0.8 = 0.841621 -> 2.801585; * 0.5 * sqrt(2/25) = 0.396203
    assert minimum_detectable_difference(25) == pytest.approx(2.801585 * 0.5 * math.sqrt(2 / 25), rel=1e-5)
    assert minimum_detectable_difference(100) == pytest.approx(0.198101, rel=1e-4)
    t = mdd_table({"mini": 25, "standard": 100, "full": 300}, 7)
    assert t["mini"]["tasks"] == 175 and t["mini"]["per_family"] == pytest.approx(39.62, abs=0.01)
    assert t["standard"]["overall"] == pytest.approx(100 * 2.801585 * 0.5 * math.sqrt(2 / 700), abs=0.01)
    assert t["full"]["per_family"] == pytest.approx(11.44, abs=0.01)
    with pytest.raises(ValueError):
        minimum_detectable_difference(0)
    with pytest.raises(ValueError):
        minimum_detectable_difference(10, alpha=1.5)


def test_observed_sd():
    # per-task means 0, 1, 0, 1: sample sd = sqrt(1/3)
    v = observed_mdd([0.0, 1.0, 0.0, 1.0])
    assert v == pytest.approx(100 * 2.801585 * math.sqrt(1 / 3) * math.sqrt(2 / 4), abs=0.01)
    assert observed_mdd([1.0]) is None


def test_power_by_simulation():
    """Two agents whose true success rates differ by the MDD at p = 0.5 +- MDD/2 are told apart by a two-sided
    z-test at alpha 0.05 in about 80 % of simulated suites of n = 300 tasks each."""
    n = 300
    d = minimum_detectable_difference(n)
    rng = np.random.default_rng(7)
    sims = 4000
    a = rng.binomial(n, 0.5 - d / 2, sims) / n
    b = rng.binomial(n, 0.5 + d / 2, sims) / n
    pooled = (a + b) / 2
    se = np.sqrt(2 * pooled * (1 - pooled) / n)
    power = float(np.mean(np.abs(b - a) / se > 1.959964))
    assert 0.76 <= power <= 0.84, power
