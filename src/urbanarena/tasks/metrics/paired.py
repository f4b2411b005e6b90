"""Paired comparison of two agents on the same tasks: bootstrap confidence interval and p-value of the
mean per-task difference.

Given per-task scores ``a_t`` and ``b_t`` of two agents on the same tasks (each the mean over that
task's seeds), the differences ``d_t = a_t - b_t`` are the unit of resampling: pairing removes the
between-task variation both agents share (a hard task is hard for both).

* **Estimate**: ``mean(d)``.
* **Confidence interval**: BCa bootstrap of the mean of ``d`` (``scipy.stats.bootstrap``, Efron
  1987); the percentile interval of the same resamples when BCa gives a non-finite end; ``[v, v]``
  when every ``d_t`` is the same value ``v`` (no variation to resample).
* **p-value**: the bootstrap test of a mean with the data translated to the null hypothesis (Efron &
  Tibshirani, *An Introduction to the Bootstrap*, 1993, sec. 16.4, algorithm 16.2): ``d0 = d -
  mean(d)`` has mean 0, as the null ``E[d] = 0`` requires; ``B`` resamples of ``d0`` give bootstrap
  means ``m*_1 .. m*_B`` and, for ``alternative="greater"`` (``a`` better than ``b``),
  ``p = (1 + #{m*_i >= mean(d)}) / (B + 1)`` (the ``+1`` counts the observed sample itself, so
  ``p`` is never 0; Davison & Hinkley 1997, eq. 4.11); ``"less"`` mirrors it and ``"two-sided"``
  uses ``|m*_i| >= |mean(d)|``. When every ``d_t`` is 0 there is no evidence either way and
  ``p = 1``.

Resampling is reproducible (``seed``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

ALTERNATIVES = ("greater", "less", "two-sided")


@dataclass(frozen=True)
class PairedResult:
    """Outcome of :func:`paired_bootstrap`.

    Attributes:
        n: number of paired tasks.
        mean_a, mean_b: mean per-task scores of the two agents.
        mean_diff: ``mean(a - b)``.
        ci95: ``(low, high)`` confidence interval of ``mean_diff`` (level ``confidence_level``).
        p_value: bootstrap p-value for ``alternative`` (module docstring).
        alternative: ``"greater"``, ``"less"`` or ``"two-sided"``.
        n_resamples: bootstrap resamples ``B``.
        confidence_level: of ``ci95``.
    """

    n: int
    mean_a: float
    mean_b: float
    mean_diff: float
    ci95: tuple[float, float]
    p_value: float
    alternative: str
    n_resamples: int
    confidence_level: float

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ci95"] = list(self.ci95)
        return d


def paired_bootstrap(a: Sequence[float], b: Sequence[float], *, n_resamples: int = 10_000,
                     seed: int | Sequence[int] = 0,
                     alternative: str = "greater", confidence_level: float = 0.95) -> PairedResult:
    """Paired bootstrap comparison of per-task scores ``a`` and ``b`` (module docstring).

    Args:
        a, b: per-task scores of the two agents, same tasks in the same order (finite numbers).
        n_resamples: bootstrap resamples (>= 100).
        seed: seed of the resampling (an int, or a sequence of ints such as ``[run_seed, family_hash]``).
        alternative: ``"greater"`` (``a`` better), ``"less"`` or ``"two-sided"``.
        confidence_level: of the interval, in (0, 1).
    Raises:
        ValueError: different lengths, no pair, a non-finite score, or a bad argument.
    """
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"a and b must be 1-D sequences of the same length, got {x.shape} and {y.shape}")
    if x.size == 0:
        raise ValueError("no paired tasks")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("scores must be finite numbers")
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {', '.join(ALTERNATIVES)}, got {alternative!r}")
    if int(n_resamples) < 100:
        raise ValueError(f"n_resamples must be >= 100, got {n_resamples}")
    if not 0.0 < float(confidence_level) < 1.0:
        raise ValueError(f"confidence_level must lie in (0, 1), got {confidence_level}")
    B = int(n_resamples)
    d = x - y
    obs = float(d.mean())
    seed_words = [int(v) for v in seed] if isinstance(seed, Sequence) else [int(seed)]
    rng = np.random.default_rng(seed if not isinstance(seed, Sequence) else seed_words)
    if np.all(d == d[0]):
        ci = (obs, obs)
    else:
        res = stats.bootstrap((d,), np.mean, n_resamples=B, confidence_level=confidence_level, method="BCa",
                              vectorized=True, random_state=np.random.default_rng([*seed_words, 1]))
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if not (math.isfinite(lo) and math.isfinite(hi)):
            q = (1.0 - confidence_level) / 2.0
            lo, hi = (float(v) for v in np.quantile(res.bootstrap_distribution, [q, 1.0 - q]))
        ci = (lo, hi)
    if np.all(d == 0.0):
        p = 1.0
    else:
        d0 = d - obs
        idx = rng.integers(0, d.size, size=(B, d.size))
        means = d0[idx].mean(axis=1)
        tol = 1e-12 * max(1.0, abs(obs))  # resampled means equal to the observed one count as "as extreme"
        if alternative == "greater":
            hits = int(np.count_nonzero(means >= obs - tol))
        elif alternative == "less":
            hits = int(np.count_nonzero(means <= obs + tol))
        else:
            hits = int(np.count_nonzero(np.abs(means) >= abs(obs) - tol))
        p = (1 + hits) / (B + 1)
    return PairedResult(int(d.size), float(x.mean()), float(y.mean()), obs, ci, float(p), alternative, B,
                        float(confidence_level))


def per_task_scores(rows: Iterable[Mapping[str, Any]], key: str = "evaluation_score",
                    task_key: str = "task_id", missing_as: float | None = 0.0) -> dict[str, float]:
    """Mean of ``key`` per task over its episodes (seeds).

    Args:
        rows: episode rows (store rows or dicts) holding ``task_key`` and ``key``.
        key: the score column.
        missing_as: value used for a ``None`` score (``evaluation_score`` is ``None`` for an ANSWER
            without a validator verdict, which counts 0 in a run mean); ``None`` skips such episodes.
    Returns: ``{task_id: mean score}``.
    """
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for r in rows:
        v = r.get(key)
        if v is None:
            if missing_as is None:
                continue
            v = missing_as
        sums[str(r[task_key])] += float(v)
        counts[str(r[task_key])] += 1
    return {t: sums[t] / counts[t] for t in sums}


def pair_scores(a: Mapping[str, float], b: Mapping[str, float]) -> tuple[list[str], list[float], list[float]]:
    """The tasks both score maps hold (sorted) and their scores in that order.

    Raises:
        ValueError: no task in common.
    """
    common = sorted(set(a) & set(b))
    if not common:
        raise ValueError("the two runs have no task in common")
    return common, [float(a[t]) for t in common], [float(b[t]) for t in common]


__all__ = ["ALTERNATIVES", "PairedResult", "pair_scores", "paired_bootstrap", "per_task_scores"]
