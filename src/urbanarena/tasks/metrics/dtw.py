"""Dynamic time warping metrics for trajectories.

Sources: Ilharco, Jain, Ku, Ie, Baldridge 2019, "General Evaluation for
Instruction Conditioned Navigation using Dynamic Time Warping" (nDTW and
SDTW, sec. 3); Chen et al. 2019, "Touchdown" (SED, sec. 5).

Points are local metric coordinates, arrays of shape ``(N, 2)`` in metres.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def dtw_distance(query_xy: np.ndarray, ref_xy: np.ndarray) -> float:
    """DTW cost (metres) between a query and a reference polyline.

    Recurrence (step pattern "symmetric1"): ``D[i, j] = d(q_i, r_j) +
    min(D[i-1, j], D[i, j-1], D[i-1, j-1])`` with ``D[0, 0] = d(q_0, r_0)``
    and Euclidean ``d``. Returns ``math.inf`` if either sequence is empty.
    """
    q = np.asarray(query_xy, dtype=float).reshape(-1, 2)
    r = np.asarray(ref_xy, dtype=float).reshape(-1, 2)
    n, m = len(q), len(r)
    if n == 0 or m == 0:
        return math.inf
    cost = np.sqrt(((q[:, None, :] - r[None, :, :]) ** 2).sum(-1))
    acc = np.full((n + 1, m + 1), np.inf)
    acc[0, 0] = 0.0
    for i in range(1, n + 1):
        row_prev = acc[i - 1]
        row = acc[i]
        c = cost[i - 1]
        for j in range(1, m + 1):
            best = row_prev[j]
            if row[j - 1] < best:
                best = row[j - 1]
            if row_prev[j - 1] < best:
                best = row_prev[j - 1]
            row[j] = c[j - 1] + best
    return float(acc[n, m])


def ndtw(query_xy: np.ndarray, ref_xy: np.ndarray, d_th_m: float) -> float:
    """Normalised DTW in [0, 1]: ``exp(-DTW(R, Q) / (|R| * d_th))``.

    Ilharco et al. 2019, eq. 3. ``|R|`` is the number of reference points and
    ``d_th`` the success threshold distance in metres. Empty query or reference
    -> 0.0.
    """
    r = np.asarray(ref_xy, dtype=float).reshape(-1, 2)
    d = dtw_distance(query_xy, r)
    if not math.isfinite(d) or len(r) == 0 or d_th_m <= 0:
        return 0.0
    return float(math.exp(-d / (len(r) * d_th_m)))


def sdtw(success: float, query_xy: np.ndarray, ref_xy: np.ndarray, d_th_m: float) -> float:
    """Success-weighted DTW: ``SDTW = S * nDTW`` (Ilharco et al. 2019, eq. 4)."""
    return float(success) * ndtw(query_xy, ref_xy, d_th_m) if success else 0.0


def edit_distance(a: Sequence, b: Sequence) -> int:
    """Levenshtein distance between two sequences (unit insert/delete/substitute)."""
    a, b = list(a), list(b)
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y))
        prev = cur
    return prev[-1]


def sed(success: float, path: Sequence, reference: Sequence) -> float:
    """Success-weighted edit distance (Touchdown, Chen et al. 2019, sec. 5).

    ``SED = S * (1 - lev(P, R) / max(|P|, |R|))`` over node sequences with
    consecutive repeats removed (turning in place is not a move). Both empty
    -> ``S``.
    """
    if not success:
        return 0.0
    p = _dedup(path)
    r = _dedup(reference)
    denom = max(len(p), len(r))
    if denom == 0:
        return float(success)
    return float(success) * (1.0 - edit_distance(p, r) / denom)


def _dedup(seq: Sequence) -> list:
    out: list = []
    for x in seq:
        if not out or out[-1] != x:
            out.append(x)
    return out
