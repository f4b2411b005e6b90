"""Significance of a difference between two agents: a paired bootstrap test over common tasks, and the
Holm correction for testing several (family x model) differences at once.

Paired bootstrap (Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993, sec. 16.4, the
bootstrap test of a mean under the null hypothesis by shifting the data to mean zero): with per-task
differences ``d_t = a_t - b_t`` (``a_t``, ``b_t`` the two agents' mean scores on task ``t`` over their
seeds) and observed mean ``D = mean(d)``, draw ``B`` resamples of the ``n`` tasks with replacement,
compute each resample's mean ``D*_b``, and take the two-sided p-value

    p = (1 + #{b : |D*_b - D| >= |D|}) / (B + 1)

(``D*_b - D`` is the resample mean of the shifted differences ``d - D``, whose population mean is 0:
the null hypothesis). The ``+1`` terms (Davison & Hinkley 1997, eq. 4.11) keep ``p`` above 0.
Tasks are the resampled unit, so the seeds of one task are never treated as independent. The 95 %
interval of the difference is the percentile interval of the ``D*_b``.

Holm (1979), "A simple sequentially rejective multiple test procedure", Scand. J. Statist. 6: sort the
``m`` p-values ascending ``p_(1) <= ... <= p_(m)``; the adjusted value of the ``i``-th is
``max_{j <= i} min(1, (m - j + 1) p_(j))``; rejecting where the adjusted value is ``<= alpha``
controls the family-wise error rate at ``alpha``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def paired_bootstrap(a: Sequence[float], b: Sequence[float], *, n_resamples: int = 10000,
                     seed: int | Sequence[int] = 0, chunk: int = 2000) -> dict[str, Any]:
    """Paired bootstrap test of ``mean(a - b) == 0`` (module docstring).

    Args:
        a, b: per-task scores of the two agents, shape ``(n,)`` each, the same task at the same index
            (finite floats; e.g. evaluation score in [0, 1] averaged over seeds).
        n_resamples: bootstrap resamples ``B`` (>= 1).
        seed: seed of ``numpy.random.default_rng``.
        chunk: resamples drawn per batch (memory: ``chunk x n`` indices).
    Returns: ``{"n_tasks", "diff" (observed mean of a - b, score units), "ci95" ([low, high] percentile
        interval of the resampled means), "p_value", "n_resamples"}``; with no tasks ``diff``,
        ``ci95`` and ``p_value`` are ``None``.
    Raises:
        ValueError: ``a`` and ``b`` differ in length, hold a non-finite value, or ``n_resamples < 1``.
    """
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"paired samples must be 1-D of equal length, got shapes {x.shape} and {y.shape}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("paired samples hold a non-finite value")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    n = x.size
    if n == 0:
        return {"n_tasks": 0, "diff": None, "ci95": None, "p_value": None, "n_resamples": n_resamples}
    d = x - y
    obs = float(d.mean())
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples, dtype=float)
    done = 0
    while done < n_resamples:
        k = min(chunk, n_resamples - done)
        idx = rng.integers(0, n, size=(k, n))
        means[done:done + k] = d[idx].mean(axis=1)
        done += k
    # tolerance: resample means equal to |D| up to rounding count as "as extreme"
    tol = 1e-12 * max(1.0, abs(obs))
    extreme = int(np.count_nonzero(np.abs(means - obs) >= abs(obs) - tol))
    p = (1 + extreme) / (n_resamples + 1)
    low, high = (float(v) for v in np.quantile(means, [0.025, 0.975]))
    return {"n_tasks": int(n), "diff": obs, "ci95": [low, high], "p_value": float(min(1.0, p)),
            "n_resamples": int(n_resamples)}


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values (module docstring), in the input order; ``None`` entries (tests that
    could not be run) stay ``None`` and do not count in ``m``.

    Raises:
        ValueError: a p-value outside [0, 1] or NaN.
    """
    idx = [i for i, p in enumerate(p_values) if p is not None]
    for i in idx:
        p = p_values[i]
        if not (isinstance(p, (int, float)) and 0.0 <= float(p) <= 1.0) or math.isnan(float(p)):
            raise ValueError(f"p-value {p!r} at position {i} is not in [0, 1]")
    m = len(idx)
    order = sorted(idx, key=lambda i: (float(p_values[i]), i))
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):  # rank j-1 (0-based)
        adj = min(1.0, (m - rank) * float(p_values[i]))
        running = max(running, adj)
        out[i] = running
    return out


def per_task_means(rows: Sequence[Mapping[str, Any]], key: str) -> dict[str, float]:
    """``{task_id: mean of row[key] over the task's rows}`` (rows whose value is ``None`` skipped; tasks
    without any value left out)."""
    acc: dict[str, list[float]] = {}
    for r in rows:
        v = r.get(key)
        if v is None:
            continue
        acc.setdefault(str(r["task_id"]), []).append(float(v))
    return {t: sum(v) / len(v) for t, v in acc.items()}


__all__ = ["holm", "paired_bootstrap", "per_task_means"]
