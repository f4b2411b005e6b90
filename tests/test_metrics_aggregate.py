"""Aggregation with cluster-bootstrap CIs.

A plain numpy loop that resamples task indices with the same RNG would not be
an independent check, so the intervals are tested by their statistical
properties: containment of the mean, coverage of a known mean in repeated
simulations, width against an analytic cluster standard error and against a
naive episode-level bootstrap, degenerate cases, and percent scaling. Means are
checked on a hand-worked table.
"""

from __future__ import annotations

import inspect
import json
import math

import numpy as np
import pytest
from scipy import stats

from urbanarena.tasks.metrics import METRIC_KEYS, PERCENT_KEYS
from urbanarena.tasks.metrics.aggregate import cluster_bootstrap_ci, cluster_sums, summarize


_RNG_KW = "rng" if "rng" in inspect.signature(stats.bootstrap).parameters else "random_state"


def _row(task, seed, category, difficulty, **metrics):
    return {"task_id": task, "seed": seed, "category": category, "difficulty": difficulty, **metrics}


# Hand-worked table (tc_exact is 0/1, spl in [0, 1], goal_dist_m in metres):
# task  cat diff seed tc_exact goal_dist_m spl
# t1    A   1    0    1        10          None
# t1    A   1    1    0        20          None
# t2    A   2    0    1        40          0.5
# t3    B   1    0    0        5           0.25
# t3    B   1    1    0        5           None
# t3    B   1    2    1        5           1.0
HAND = [
    _row("t1", 0, "A", 1, tc_exact=1.0, goal_dist_m=10.0, spl=None, sed=None),
    _row("t1", 1, "A", 1, tc_exact=0.0, goal_dist_m=20.0, spl=None, sed=None),
    _row("t2", 0, "A", 2, tc_exact=1.0, goal_dist_m=40.0, spl=0.5, sed=None),
    _row("t3", 0, "B", 1, tc_exact=0.0, goal_dist_m=5.0, spl=0.25, sed=None),
    _row("t3", 1, "B", 1, tc_exact=0.0, goal_dist_m=5.0, spl=None, sed=None),
    _row("t3", 2, "B", 1, tc_exact=1.0, goal_dist_m=5.0, spl=1.0, sed=None),
]
HAND_KEYS = ["tc_exact", "goal_dist_m", "spl", "sed"]
HAND_PCT = {"tc_exact", "spl", "sed"}


def _walk_numbers(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _walk_numbers(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _walk_numbers(v)
    elif isinstance(obj, float):
        yield obj


def test_hand_worked_means_overall_category_difficulty():
    out = summarize(HAND, HAND_KEYS, HAND_PCT, n_resamples=500)
    assert out["episodes"] == 6
    m = out["metrics"]
    # episode-weighted: 3 successes / 6 episodes (a task-weighted mean would be 61.1 %)
    assert m["tc_exact"] == pytest.approx(50.0)
    assert m["goal_dist_m"] == pytest.approx(85.0 / 6.0)  # (10+20+40+5+5+5)/6, not x100
    assert m["spl"] == pytest.approx(100.0 * 1.75 / 3.0)  # None skipped: (0.5+0.25+1.0)/3
    assert m["sed"] is None and out["ci95"]["sed"] is None  # all None -> null
    assert out["counts"] == {"tc_exact": 6, "goal_dist_m": 6, "spl": 3, "sed": 0}

    cat = out["by_category"]
    assert list(cat) == ["A", "B"]
    assert cat["A"]["episodes"] == 3 and cat["B"]["episodes"] == 3
    assert cat["A"]["metrics"]["tc_exact"] == pytest.approx(200.0 / 3.0)
    assert cat["A"]["metrics"]["goal_dist_m"] == pytest.approx(70.0 / 3.0)
    assert cat["A"]["metrics"]["spl"] == pytest.approx(50.0)
    assert cat["B"]["metrics"]["tc_exact"] == pytest.approx(100.0 / 3.0)
    assert cat["B"]["metrics"]["goal_dist_m"] == pytest.approx(5.0)
    assert cat["B"]["metrics"]["spl"] == pytest.approx(62.5)
    # degenerate intervals: spl of A has one task (t2); goal_dist_m of B is all 5;
    # spl of B has one task (t3)
    assert cat["A"]["ci95"]["spl"] == [50.0, 50.0]
    assert cat["B"]["ci95"]["goal_dist_m"] == [5.0, 5.0]
    assert cat["B"]["ci95"]["spl"] == [62.5, 62.5]

    diff = out["by_difficulty"]
    assert list(diff) == ["1", "2"]
    assert diff["1"]["episodes"] == 5  # t1 + t3
    assert diff["1"]["metrics"]["tc_exact"] == pytest.approx(40.0)
    assert diff["1"]["metrics"]["goal_dist_m"] == pytest.approx(9.0)  # (10+20+15)/5
    assert diff["1"]["metrics"]["spl"] == pytest.approx(62.5)  # (0.25+1.0)/2
    assert diff["2"]["episodes"] == 1
    assert diff["2"]["metrics"]["tc_exact"] == 100.0
    assert diff["2"]["ci95"]["tc_exact"] == [100.0, 100.0]

    # never NaN, JSON-clean
    json.dumps(out, allow_nan=False)
    assert all(not math.isnan(x) for x in _walk_numbers(out))


def test_cluster_sums_groups_seeds_by_task():
    s, c = cluster_sums(HAND, "spl")
    # clusters with a value: t2 (0.5, 1 episode), t3 (0.25 + 1.0, 2 episodes); t1 has none
    assert s.tolist() == [0.5, 1.25]
    assert c.tolist() == [1.0, 2.0]
    with pytest.raises(KeyError, match="task_id"):
        cluster_sums([{"spl": 1.0}], "spl")


def test_difficulty_groups_sort_numerically_and_skip_missing():
    rows = [_row(f"t{d}", 0, None, d, tc=1.0) for d in (10, 2, 33)] + [_row("tx", 0, None, None, tc=0.0)]
    out = summarize(rows, ["tc"], {"tc"}, n_resamples=200)
    assert list(out["by_difficulty"]) == ["2", "10", "33"]
    assert out["by_category"] == {}
    assert out["metrics"]["tc"] == pytest.approx(75.0)


def _clustered_rates(rng, n_tasks, n_seeds, a=0.5, b=1.5):
    """Binary outcomes with a per-task success probability ~ Beta(a, b) (mean a/(a+b))."""
    p = rng.beta(a, b, size=n_tasks)
    return (rng.random((n_tasks, n_seeds)) < p[:, None]).astype(float)


def _rows_from(y, grouped=True):
    return [
        _row(f"t{t}", s, f"c{t % 3}" if grouped else None, 1 + t % 2 if grouped else None, tc_exact=float(y[t, s]))
        for t in range(y.shape[0])
        for s in range(y.shape[1])
    ]


def test_ci_contains_mean_and_is_reproducible():
    rng = np.random.default_rng(3)
    for _ in range(5):
        rows = _rows_from(_clustered_rates(rng, 25, 4))
        out = summarize(rows, ["tc_exact"], {"tc_exact"}, n_resamples=1000, seed=11)
        lo, hi = out["ci95"]["tc_exact"]
        assert lo < out["metrics"]["tc_exact"] < hi
        for g in list(out["by_category"].values()) + list(out["by_difficulty"].values()):
            glo, ghi = g["ci95"]["tc_exact"]
            assert glo <= g["metrics"]["tc_exact"] <= ghi
        again = summarize(rows, ["tc_exact", "spl"], {"tc_exact"}, n_resamples=1000, seed=11)
        # same seed -> same interval, even with another key summarised alongside
        assert again["ci95"]["tc_exact"] == out["ci95"]["tc_exact"]


def test_percent_scaling_of_means_and_intervals():
    rng = np.random.default_rng(4)
    rows = _rows_from(_clustered_rates(rng, 20, 3))
    pct = summarize(rows, ["tc_exact"], {"tc_exact"}, n_resamples=500, seed=1)
    raw = summarize(rows, ["tc_exact"], set(), n_resamples=500, seed=1)
    assert pct["metrics"]["tc_exact"] == pytest.approx(100.0 * raw["metrics"]["tc_exact"], rel=1e-12)
    assert pct["ci95"]["tc_exact"] == pytest.approx([100.0 * x for x in raw["ci95"]["tc_exact"]], rel=1e-12)
    assert 0.0 <= raw["ci95"]["tc_exact"][0] <= raw["ci95"]["tc_exact"][1] <= 1.0


def test_degenerate_cases():
    # one task, several seeds with different values: no between-task variation -> [v, v]
    one = [_row("only", s, "A", 1, spl=v) for s, v in enumerate([0.2, 0.4, 0.9])]
    out = summarize(one, ["spl"], {"spl"})
    assert out["metrics"]["spl"] == pytest.approx(50.0)
    assert out["ci95"]["spl"] == [pytest.approx(50.0), pytest.approx(50.0)]
    # every value equal over many tasks -> [v, v]
    flat = [_row(f"t{t}", s, "A", 1, goal_dist_m=12.5) for t in range(30) for s in range(3)]
    assert summarize(flat, ["goal_dist_m"], set())["ci95"]["goal_dist_m"] == [12.5, 12.5]
    # tasks whose means are all equal (0/1 within each task): every resample gives 0.5
    half = [_row(f"t{t}", s, "A", 1, tc=float(s)) for t in range(10) for s in range(2)]
    assert summarize(half, ["tc"], {"tc"})["ci95"]["tc"] == [50.0, 50.0]
    # all zero rate (e.g. TC-E of a random agent on a small suite)
    zero = [_row(f"t{t}", s, "A", 1, tc_exact=0.0) for t in range(8) for s in range(5)]
    assert summarize(zero, ["tc_exact"], {"tc_exact"})["ci95"]["tc_exact"] == [0.0, 0.0]
    # a single success among many tasks: a finite, non-degenerate interval
    rare = [_row(f"t{t}", 0, "A", 1, tc_exact=float(t == 0)) for t in range(40)]
    lo, hi = summarize(rare, ["tc_exact"], {"tc_exact"})["ci95"]["tc_exact"]
    assert 0.0 <= lo <= 2.5 <= hi and math.isfinite(hi) and hi > lo
    # empty input
    empty = summarize([], list(METRIC_KEYS), PERCENT_KEYS)
    assert empty["episodes"] == 0
    assert all(v is None for v in empty["metrics"].values())
    assert all(v is None for v in empty["ci95"].values())
    assert cluster_bootstrap_ci(np.array([]), np.array([])) is None


def test_nan_and_inf_values_count_as_missing():
    rows = [
        _row("t1", 0, "A", 1, spd_m=10.0),
        _row("t2", 0, "A", 1, spd_m=float("nan")),
        _row("t3", 0, "A", 1, spd_m=math.inf),
        _row("t4", 0, "A", 1, spd_m=30.0),
    ]
    out = summarize(rows, ["spd_m"], set(), n_resamples=300)
    assert out["metrics"]["spd_m"] == pytest.approx(20.0)
    assert out["counts"]["spd_m"] == 2
    json.dumps(out, allow_nan=False)


def test_width_matches_analytic_cluster_standard_error():
    # Equal cluster sizes: the ratio of sums is the mean of the T task means, so the
    # cluster bootstrap SE is sd(task means) * sqrt((T-1)/T) / sqrt(T). A percentile
    # interval's half-width must be about 1.96 of that; an episode-level resampling
    # would be about half as wide here (within-task correlation 1/3, 10 seeds).
    rng = np.random.default_rng(8)
    y = _clustered_rates(rng, 60, 10)
    task_means = y.mean(axis=1)
    t = len(task_means)
    se = task_means.std(ddof=1) * math.sqrt((t - 1) / t) / math.sqrt(t)
    out = summarize(_rows_from(y, grouped=False), ["tc_exact"], set(), n_resamples=6000, seed=2, method="percentile")
    lo, hi = out["ci95"]["tc_exact"]
    assert (hi - lo) / 2 == pytest.approx(stats.norm.ppf(0.975) * se, rel=0.1)


def test_coverage_of_known_mean_and_wider_than_naive_bootstrap():
    # Simulated suites of 40 tasks x 10 seeds; per-task success p ~ Beta(0.5, 1.5),
    # so the true mean rate is 0.25 and seeds of a task are correlated (ICC 1/3).
    # Over 400 suites the cluster CI must cover 0.25 about 95 % of the time
    # (a 3000-suite run gave 0.949); bounds are ~3.5 binomial SEs (0.011).
    # The naive percentile bootstrap over episodes (first 150 suites) ignores the
    # clustering and covers far less (~0.65 expected: its SE is ~1/2 of the true one).
    rng = np.random.default_rng(2024)
    n_sim, n_naive, true_mean = 400, 150, 0.25
    cover = cover_naive = 0
    ratio = []
    for k in range(n_sim):
        y = _clustered_rates(rng, 40, 10)
        out = summarize(_rows_from(y, grouped=False), ["tc_exact"], set(), n_resamples=999, seed=k)
        lo, hi = out["ci95"]["tc_exact"]
        cover += lo <= true_mean <= hi
        if k < n_naive:
            naive = stats.bootstrap(
                (y.ravel(),), np.mean, n_resamples=999, method="percentile", vectorized=True,
                **{_RNG_KW: np.random.default_rng(10_000 + k)},
            ).confidence_interval  # fmt: skip
            cover_naive += naive.low <= true_mean <= naive.high
            ratio.append((hi - lo) / (naive.high - naive.low))
    coverage, coverage_naive = cover / n_sim, cover_naive / n_naive
    print(f"coverage cluster {coverage:.3f} naive {coverage_naive:.3f} width ratio {np.median(ratio):.2f}")
    assert 0.91 <= coverage <= 0.99, coverage
    assert coverage_naive < 0.80, coverage_naive
    # clustered data: the cluster CI is wider (design effect 1 + 9/3 = 4 -> ~2x)
    assert float(np.median(ratio)) > 1.5, np.median(ratio)


def test_full_metric_keys_summary_is_clean():
    rng = np.random.default_rng(0)
    rows = []
    for t in range(177):
        for s in range(10):
            r = {k: None for k in METRIC_KEYS}
            r.update(task_id=f"t{t}", seed=s, category=f"q{t % 8}", difficulty=int(2 + t % 12))
            r["tc_exact"] = float(rng.random() < 0.02)
            r["tc_proximity_50m"] = float(rng.random() < 0.13)
            r["goal_dist_m"] = float(rng.gamma(2.0, 150.0))
            r["ndtw"] = float(rng.random())
            rows.append(r)
    out = summarize(rows, METRIC_KEYS, PERCENT_KEYS)  # speed: benchmarks/, not asserted here
    assert out["episodes"] == 1770
    assert out["metrics"]["tc"] is None and out["ci95"]["spd_hops"] is None
    assert set(out["metrics"]) == set(METRIC_KEYS) == set(out["ci95"])
    assert len(out["by_category"]) == 8 and len(out["by_difficulty"]) == 12
    json.dumps(out, allow_nan=False)
