"""Holm correction for testing several (family x model) differences at once.

The paired bootstrap test itself is :func:`urbanarena.tasks.metrics.paired.paired_bootstrap` (two-sided in
the report: tasks are the resampled unit, the data shifted to the null hypothesis, Efron & Tibshirani 1993,
sec. 16.4); this module adjusts its p-values across the report's tests.

Holm (1979), "A simple sequentially rejective multiple test procedure", Scand. J. Statist. 6: sort the
``m`` p-values ascending ``p_(1) <= ... <= p_(m)``; the adjusted value of the ``i``-th is
``max_{j <= i} min(1, (m - j + 1) p_(j))``; rejecting where the adjusted value is ``<= alpha``
controls the family-wise error rate at ``alpha``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


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


__all__ = ["holm"]
