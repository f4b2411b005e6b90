"""Aggregation of per-episode metrics: means, per-category and per-difficulty
breakdowns, and cluster-bootstrap 95 % confidence intervals.

What is resampled
-----------------
Episodes of the same task (one per seed) are correlated: a hard task is hard
for every seed. Treating them as independent understates the uncertainty, so
the confidence intervals come from a **cluster bootstrap over tasks** (Davison
& Hinkley 1997, sec. 3.8; Field & Welsh 2007): the tasks (clusters, identified
by ``cluster_key``) are drawn with replacement, each drawn task bringing *all*
of its episodes, and the statistic is recomputed on every resample.

For one metric key, let task ``t`` have ``c_t`` episodes with a value for that
key and ``s_t`` the sum of those values. The point estimate is the plain mean
over episodes, ``sum_t s_t / sum_t c_t``; the bootstrap resamples the pairs
``(s_t, c_t)`` jointly (``scipy.stats.bootstrap`` with ``paired=True``) and
recomputes that ratio of sums. Episodes whose value is ``None`` (or not
finite) do not count for that key; tasks with no value for the key are not
clusters for it.

Interval method: BCa (bias-corrected and accelerated; Efron 1987), scipy's
default, which corrects for the skew of rates near 0 or 100 %; if BCa yields
a non-finite end (it can on near-degenerate bootstrap distributions), the
percentile interval of the same resamples is used instead. Degenerate cases
give ``[v, v]`` without resampling: a single task (no between-task variation
can be estimated from one cluster, so this is *not* a claim of certainty), or
all tasks having the same mean (every resample gives ``v``).
"""

from __future__ import annotations

import inspect
import math
import warnings
import zlib
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

#: confidence level of every interval
CONFIDENCE_LEVEL = 0.95

_SCIPY_HAS_RNG = "rng" in inspect.signature(stats.bootstrap).parameters


def _ratio_of_sums(s: np.ndarray, c: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.sum(s, axis=axis) / np.sum(c, axis=axis)


def _value(row: Mapping[str, Any], key: str) -> float | None:
    v = row.get(key)
    if v is None or isinstance(v, str):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def cluster_sums(
    rows: Sequence[Mapping[str, Any]], key: str, cluster_key: str = "task_id"
) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster sums and counts of one metric key.

    Args:
        rows: per-episode dicts; each must hold ``cluster_key``.
        key: metric key; ``None`` / non-finite values are skipped.
        cluster_key: the row field naming the cluster (task).

    Returns:
        ``(sums, counts)``, float arrays of shape ``(n_clusters,)`` over the
        clusters with at least one value, in first-seen order.

    Raises:
        KeyError: a row lacks ``cluster_key``.
    """
    index: dict[Hashable, int] = {}
    sums: list[float] = []
    counts: list[float] = []
    for i, row in enumerate(rows):
        if cluster_key not in row:
            raise KeyError(f"episode row {i} has no {cluster_key!r} field (needed to cluster the bootstrap)")
        v = _value(row, key)
        if v is None:
            continue
        c = row[cluster_key]
        k = index.get(c)
        if k is None:
            index[c] = len(sums)
            sums.append(v)
            counts.append(1.0)
        else:
            sums[k] += v
            counts[k] += 1.0
    return np.asarray(sums, dtype=float), np.asarray(counts, dtype=float)


def cluster_bootstrap_ci(
    sums: np.ndarray,
    counts: np.ndarray,
    *,
    n_resamples: int = 2000,
    seed: int | Sequence[int] | np.random.Generator = 0,
    method: str = "BCa",
) -> tuple[float, float] | None:
    """95 % CI of ``sum(sums) / sum(counts)`` by resampling clusters with replacement.

    Args:
        sums: shape ``(n_clusters,)``, per-cluster sum of the metric.
        counts: shape ``(n_clusters,)``, per-cluster number of episodes (> 0).
        n_resamples: bootstrap resamples.
        seed: seed (int or sequence of ints, as ``numpy.random.default_rng``
            takes) or a ``numpy.random.Generator``.
        method: ``"BCa"`` (default) or ``"percentile"`` / ``"basic"``, as in
            ``scipy.stats.bootstrap``.

    Returns:
        ``(low, high)`` (finite floats, never NaN), ``(v, v)`` for a single
        cluster or when every cluster has the same mean ``v``, ``None`` when
        there are no clusters. See the module docstring for what is resampled.
    """
    s = np.asarray(sums, dtype=float)
    c = np.asarray(counts, dtype=float)
    if s.size == 0 or c.sum() <= 0:
        return None
    est = float(s.sum() / c.sum())
    per = s / c
    scale = max(1.0, float(np.max(np.abs(per))))
    if s.size == 1 or float(np.ptp(per)) <= 1e-12 * scale:
        return (est, est)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    kw: dict[str, Any] = {"rng": rng} if _SCIPY_HAS_RNG else {"random_state": rng}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        warnings.simplefilter("ignore", category=getattr(stats, "DegenerateDataWarning", RuntimeWarning))
        res = stats.bootstrap(
            (s, c),
            _ratio_of_sums,
            paired=True,
            vectorized=True,
            n_resamples=n_resamples,
            confidence_level=CONFIDENCE_LEVEL,
            method=method,
            **kw,
        )
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if not (math.isfinite(low) and math.isfinite(high)):
        dist = np.asarray(res.bootstrap_distribution, dtype=float)
        dist = dist[np.isfinite(dist)]
        if dist.size == 0:
            return (est, est)
        alpha = (1.0 - CONFIDENCE_LEVEL) / 2.0
        low, high = (float(x) for x in np.quantile(dist, [alpha, 1.0 - alpha]))
    return (low, high)


def _group_sort_key(g: Any) -> tuple:
    if isinstance(g, (int, float)) and not isinstance(g, bool):
        return (0, float(g), "")
    try:
        return (0, float(str(g)), str(g))
    except ValueError:
        return (1, 0.0, str(g))


def _block(
    rows: Sequence[Mapping[str, Any]],
    keys: Sequence[str],
    percent_keys: Collection[str],
    cluster_key: str,
    n_resamples: int,
    seed: int,
    group: str,
    method: str,
) -> dict[str, Any]:
    metrics: dict[str, float | None] = {}
    ci95: dict[str, list[float] | None] = {}
    counts: dict[str, int] = {}
    for key in keys:
        s, c = cluster_sums(rows, key, cluster_key)
        scale = 100.0 if key in percent_keys else 1.0
        n = int(c.sum())
        counts[key] = n
        if n == 0:
            metrics[key] = None
            ci95[key] = None
            continue
        metrics[key] = float(s.sum() / c.sum()) * scale
        # one stream per (seed, group, key): an interval does not depend on
        # which other keys or groups are summarised
        key_seed = [seed, zlib.crc32(group.encode()), zlib.crc32(key.encode())]
        ci = cluster_bootstrap_ci(s, c, n_resamples=n_resamples, seed=key_seed, method=method)
        ci95[key] = None if ci is None else [ci[0] * scale, ci[1] * scale]
    return {"episodes": len(rows), "metrics": metrics, "ci95": ci95, "counts": counts}


def _grouped(
    rows: Sequence[Mapping[str, Any]],
    field: str,
    **kw: Any,
) -> dict[str, dict[str, Any]]:
    groups: dict[Any, list[Mapping[str, Any]]] = {}
    for row in rows:
        g = row.get(field)
        if g is None:
            continue
        groups.setdefault(g, []).append(row)
    return {
        str(g): _block(groups[g], group=f"{field}={g}", **kw) for g in sorted(groups, key=_group_sort_key)
    }


def summarize(
    rows: Iterable[Mapping[str, Any]],
    keys: Sequence[str],
    percent_keys: Collection[str],
    cluster_key: str = "task_id",
    n_resamples: int = 2000,
    seed: int = 0,
    *,
    method: str = "BCa",
) -> dict[str, Any]:
    """Summarise per-episode metric rows: means and cluster-bootstrap 95 % CIs.

    Args:
        rows: per-episode dicts: metric key -> float | None, plus
            ``cluster_key`` (default ``task_id``), ``seed``, ``category``,
            ``difficulty``.
        keys: metric keys to report (e.g. :data:`METRIC_KEYS`).
        percent_keys: keys whose per-episode values are 0/1 or in [0, 1] and
            are reported x100 (means and CI ends).
        cluster_key: row field identifying the task; the bootstrap resamples
            these clusters (see the module docstring).
        n_resamples: bootstrap resamples per interval.
        seed: bootstrap seed; each interval draws from its own stream
            seeded by ``(seed, group, key)``, so the summary is reproducible
            and an interval does not change when other keys are added.
        method: bootstrap interval method (``"BCa"`` default, or
            ``"percentile"``).

    Returns:
        ``{"episodes": n, "metrics": {key: mean | None}, "ci95": {key:
        [low, high] | None}, "counts": {key: episodes with a value},
        "by_category": {cat: {same four keys}}, "by_difficulty": {...}}``.
        Means skip ``None`` (and non-finite) values per key; a key with no
        value gives ``None`` in ``metrics`` and ``ci95``. Rows without a
        category (difficulty) are left out of ``by_category``
        (``by_difficulty``), whose keys are the group values as strings,
        sorted numerically where they are numbers.

    Raises:
        KeyError: a row lacks ``cluster_key``.
    """
    rows = list(rows)
    kw: dict[str, Any] = {
        "keys": list(keys),
        "percent_keys": frozenset(percent_keys),
        "cluster_key": cluster_key,
        "n_resamples": n_resamples,
        "seed": int(seed),
        "method": method,
    }
    out = _block(rows, group="all", **kw)
    out["by_category"] = _grouped(rows, "category", **kw)
    out["by_difficulty"] = _grouped(rows, "difficulty", **kw)
    return out


def summarize_groups(
    rows: Iterable[Mapping[str, Any]],
    field: str,
    keys: Sequence[str],
    percent_keys: Collection[str],
    cluster_key: str = "task_id",
    n_resamples: int = 2000,
    seed: int = 0,
    *,
    method: str = "BCa",
) -> dict[str, dict[str, Any]]:
    """Like ``summarize(...)["by_category"]`` but grouped by any row ``field`` (e.g. ``task_kind``):
    ``{group: {"episodes", "metrics", "ci95", "counts"}}``, cluster bootstrap over tasks within each
    group, one random stream per ``(seed, field=group, key)``. Rows without ``field`` are left out."""
    return _grouped(list(rows), field, keys=list(keys), percent_keys=frozenset(percent_keys),
                    cluster_key=cluster_key, n_resamples=n_resamples, seed=int(seed), method=method)
