"""Minimum detectable difference (MDD) of a suite size: how far apart two agents' mean scores must be
before a comparison at that size can tell them apart.

Formula (two-sided two-sample z-test of means, normal approximation; e.g.
Cohen, *Statistical Power Analysis for the Behavioral Sciences*, 2nd ed. 1988,
ch. 2; applied to benchmark sizes by Card et al., "With Little Power Comes
Great Responsibility", EMNLP 2020, sec. 2)::

    MDD = (z_{1 - alpha/2} + z_{power}) * sd * sqrt(2 / n)

for two runs of ``n`` tasks each whose per-task scores have standard
deviation ``sd``, compared without pairing. ``sd = 0.5`` is the largest a
score in [0, 1] can have (a 0/1 score at 50 % success), so the default is
the worst case and depends only on ``n``: with ``alpha = 0.05`` and power
0.8, ``2.8016 * 0.5 * sqrt(2 / n)``: 39.6 points at 25 tasks, 19.8 at 100,
11.4 at 300, 15.0 at 175 and 7.5 at 700. Comparing two agents on the *same*
tasks (paired) can only do better when their per-task scores are positively
correlated; the unpaired number is the conservative one a reader can rely on.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping

from scipy.stats import norm

#: worst-case standard deviation of a per-task score in [0, 1]
WORST_CASE_SD = 0.5


def minimum_detectable_difference(n_tasks: int, sd: float = WORST_CASE_SD, alpha: float = 0.05,
                                  power: float = 0.8) -> float:
    """MDD (module docstring) in score units (x100 for points).

    Args:
        n_tasks: tasks per run (> 0).
        sd: standard deviation of the per-task score (>= 0; default the [0, 1] worst case 0.5).
        alpha: two-sided significance level in (0, 1).
        power: probability of detecting a true difference of this size, in (0, 1).
    Raises:
        ValueError: arguments out of range.
    """
    if n_tasks < 1:
        raise ValueError(f"n_tasks must be >= 1, got {n_tasks}")
    if not (sd >= 0 and math.isfinite(sd)):
        raise ValueError(f"sd must be a finite number >= 0, got {sd}")
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError(f"alpha and power must lie in (0, 1), got {alpha}, {power}")
    return float((norm.ppf(1 - alpha / 2) + norm.ppf(power)) * sd * math.sqrt(2.0 / n_tasks))


def mdd_table(sizes: Mapping[str, int], n_families: int, alpha: float = 0.05, power: float = 0.8,
              sd: float = WORST_CASE_SD) -> dict[str, dict[str, float | int]]:
    """Per named suite size (``{"mini": 25, ...}``, tasks per family): the worst-case MDD in points
    (x100) for one family (``per_family``) and for the suite's overall mean over ``n_families``
    families of that size (``overall``), with the task counts."""
    out: dict[str, dict[str, float | int]] = {}
    for name, per_family in sizes.items():
        total = per_family * n_families
        out[name] = {"tasks_per_family": per_family, "tasks": total,
                     "per_family": round(100 * minimum_detectable_difference(per_family, sd, alpha, power), 2),
                     "overall": round(100 * minimum_detectable_difference(total, sd, alpha, power), 2)}
    return out


def observed_mdd(task_means: Iterable[float], alpha: float = 0.05, power: float = 0.8) -> float | None:
    """MDD in points (x100) at this run's own size and spread: ``sd`` = the sample standard deviation
    (ddof 1) of the per-task mean scores. ``None`` with fewer than two tasks. A run whose tasks all
    score alike gives 0 here: use the worst case (:func:`mdd_table`) to plan comparisons."""
    xs = [float(v) for v in task_means]
    if len(xs) < 2:
        return None
    m = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))
    return round(100 * minimum_detectable_difference(len(xs), sd, alpha, power), 2)


__all__ = ["WORST_CASE_SD", "mdd_table", "minimum_detectable_difference", "observed_mdd"]
