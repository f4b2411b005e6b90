"""DTW, nDTW, SDTW, edit distance and SED.

Independent checks: dtw-python (``import dtw``, GPL, a test-only dependency)
with step pattern symmetric1, hand-worked DTW tables, and a breadth-first
search over single edits as a second Levenshtein implementation.
"""

from __future__ import annotations

import json
import math
import random
from collections import deque

import dtw as dtw_python  # dtw-python, GPL-3.0: test-only
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urbanarena.tasks.metrics.dtw import dtw_distance, edit_distance, ndtw, sdtw, sed


def reference_dtw(q: np.ndarray, r: np.ndarray) -> float:
    """DTW by dtw-python (Giorgino 2009), symmetric1 = the recurrence of Ilharco et al."""
    return float(dtw_python.dtw(q, r, dist_method="euclidean", step_pattern="symmetric1").distance)


# ---------------------------------------------------------------- hand-worked


def test_dtw_hand_worked_collinear():
    # Q = (0,0) (1,0) (2,0); R = (0,0) (2,0)
    # cost d(q_i, r_j):        accumulated D:
    #        r0  r1                   r0  r1
    #   q0    0   2              q0    0   2
    #   q1    1   1              q1    1   1 = 1 + min(2, 1, 0)
    #   q2    2   0              q2    3   1 = 0 + min(1, 3, 1)
    q = [(0.0, 0.0), (1.0, 0.0), (2.0, 0.0)]
    r = [(0.0, 0.0), (2.0, 0.0)]
    assert dtw_distance(q, r) == pytest.approx(1.0, abs=1e-12)
    assert dtw_distance(r, q) == pytest.approx(1.0, abs=1e-12)  # symmetric1 is symmetric
    # nDTW = exp(-DTW / (|R| d_th)) = exp(-1 / (2 * 1))
    assert ndtw(q, r, 1.0) == pytest.approx(math.exp(-0.5), abs=1e-12)
    # with |R| = 3 when the roles swap: exp(-1 / (3 * 1))
    assert ndtw(r, q, 1.0) == pytest.approx(math.exp(-1.0 / 3.0), abs=1e-12)


def test_dtw_hand_worked_corner_cut():
    # Q = (0,0) (3,4): the agent cuts the corner; R = (0,0) (0,4) (3,4)
    # cost:                     accumulated D:
    #        r0  r1  r2                r0  r1  r2
    #   q0    0   4   5           q0    0   4   9
    #   q1    5   3   0           q1    5   3   3 = 0 + min(9, 3, 4)
    # D[1,1] = 3 + min(D[0,1]=4, D[1,0]=5, D[0,0]=0) = 3
    q = np.array([[0.0, 0.0], [3.0, 4.0]])
    r = np.array([[0.0, 0.0], [0.0, 4.0], [3.0, 4.0]])
    assert dtw_distance(q, r) == pytest.approx(3.0, abs=1e-12)
    # d_th = 25 m (map2seq/Touchdown): exp(-3 / (3 * 25))
    assert ndtw(q, r, 25.0) == pytest.approx(math.exp(-3.0 / 75.0), abs=1e-12)
    assert sdtw(1.0, q, r, 25.0) == pytest.approx(math.exp(-3.0 / 75.0), abs=1e-12)
    assert sdtw(0.0, q, r, 25.0) == 0.0


def test_dtw_single_points_and_one_to_many():
    # one query point against two reference points: the only warping path
    # visits both cells: 0 + 5
    assert dtw_distance([(0.0, 0.0)], [(3.0, 4.0)]) == pytest.approx(5.0)
    assert dtw_distance([(0.0, 0.0)], [(0.0, 0.0), (3.0, 4.0)]) == pytest.approx(5.0)
    # a single (2,) point is accepted as one point
    assert dtw_distance(np.array([0.0, 0.0]), np.array([6.0, 8.0])) == pytest.approx(10.0)


def test_identical_paths_give_ndtw_one():
    path = np.array([[0.0, 0.0], [10.0, 0.0], [10.0, 15.0], [30.0, 15.0]])
    assert dtw_distance(path, path) == 0.0
    assert ndtw(path, path, 50.0) == 1.0
    # repeating a point (turning in place) costs nothing under symmetric1
    stutter = np.repeat(path, 2, axis=0)
    assert dtw_distance(stutter, path) == 0.0
    assert ndtw(stutter, path, 50.0) == 1.0


# ---------------------------------------------------------------- corner cases


def _all_finite(*xs: float) -> bool:
    return all(isinstance(x, float) and not math.isnan(x) for x in xs)


def test_corner_case_start_equals_goal_zero_length_reference():
    ref = np.array([[5.0, 5.0]])  # zero-length route: one point
    stay = np.array([[5.0, 5.0]])
    assert ndtw(stay, ref, 25.0) == 1.0
    assert sdtw(1.0, stay, ref, 25.0) == 1.0
    # wandering 10 m out and back: DTW = 0 + 10 + 0, |R| = 1
    wander = np.array([[5.0, 5.0], [15.0, 5.0], [5.0, 5.0]])
    assert dtw_distance(wander, ref) == pytest.approx(10.0)
    assert ndtw(wander, ref, 25.0) == pytest.approx(math.exp(-10.0 / 25.0))


def test_corner_case_empty_trajectory_and_empty_reference():
    ref = np.array([[0.0, 0.0], [10.0, 0.0]])
    empty = np.zeros((0, 2))
    assert dtw_distance(empty, ref) == math.inf
    assert dtw_distance(ref, empty) == math.inf
    assert dtw_distance([], []) == math.inf
    for q, r in [(empty, ref), (ref, empty), ([], [])]:
        assert ndtw(q, r, 25.0) == 0.0
        assert sdtw(1.0, q, r, 25.0) == 0.0
        assert _all_finite(ndtw(q, r, 25.0), sdtw(1.0, q, r, 25.0))


def test_corner_case_bad_threshold_and_nonfinite_coordinates_never_nan():
    q = np.array([[0.0, 0.0], [1.0, 1.0]])
    for d_th in (0.0, -5.0, float("nan")):
        assert ndtw(q, q, d_th) == 0.0
        assert sdtw(1.0, q, q, d_th) == 0.0
    bad = np.array([[0.0, 0.0], [float("nan"), 1.0]])
    assert ndtw(bad, q, 25.0) == 0.0
    assert sdtw(1.0, bad, q, 25.0) == 0.0


# ---------------------------------------------------------------- vs dtw-python


def test_dtw_equals_dtw_python_on_random_polylines():
    rng = np.random.default_rng(20190612)
    checked = 0
    for _ in range(300):
        n, m = (int(x) for x in rng.integers(1, 61, size=2))
        # random walks in metres, like street paths (steps of ~10-30 m)
        q = np.cumsum(rng.normal(0.0, 20.0, size=(n, 2)), axis=0) + rng.normal(0, 50, size=2)
        r = np.cumsum(rng.normal(0.0, 20.0, size=(m, 2)), axis=0)
        ours = dtw_distance(q, r)
        ref = reference_dtw(q, r)
        assert ours == pytest.approx(ref, rel=1e-9, abs=1e-9)
        d_th = float(rng.uniform(5.0, 100.0))
        expected_ndtw = math.exp(-ref / (m * d_th))
        assert ndtw(q, r, d_th) == pytest.approx(expected_ndtw, rel=1e-9, abs=1e-9)
        assert sdtw(1.0, q, r, d_th) == pytest.approx(expected_ndtw, rel=1e-9, abs=1e-9)
        assert 0.0 <= ndtw(q, r, d_th) <= 1.0
        checked += 1
    assert checked == 300


def test_dtw_equals_dtw_python_on_long_paths_60x60():
    rng = np.random.default_rng(60)
    q = np.cumsum(rng.normal(0, 15, size=(60, 2)), axis=0)
    r = np.cumsum(rng.normal(0, 15, size=(60, 2)), axis=0)
    assert dtw_distance(q, r) == pytest.approx(reference_dtw(q, r), rel=1e-9, abs=1e-9)


# integer grid coordinates produce many ties in the min() of the recurrence
_points = st.lists(
    st.tuples(st.integers(-5, 5), st.integers(-5, 5)).map(lambda p: (float(p[0]) * 10.0, float(p[1]) * 10.0)),
    min_size=1,
    max_size=12,
)


@settings(max_examples=150, deadline=None, database=None)
@given(q=_points, r=_points, d_th=st.floats(1.0, 100.0))
def test_dtw_equals_dtw_python_property(q, r, d_th):
    qa, ra = np.array(q), np.array(r)
    ref = reference_dtw(qa, ra)
    assert dtw_distance(qa, ra) == pytest.approx(ref, rel=1e-9, abs=1e-9)
    assert ndtw(qa, ra, d_th) == pytest.approx(math.exp(-ref / (len(r) * d_th)), rel=1e-9, abs=1e-9)


# ---------------------------------------------------------------- edit distance


def bfs_levenshtein(a: tuple, b: tuple) -> int:
    """Fewest single-item insert/delete/substitute edits turning a into b (BFS)."""
    alphabet = sorted(set(a) | set(b))
    cap = max(len(a), len(b)) + 1
    seen = {a: 0}
    todo = deque([a])
    while todo:
        s = todo.popleft()
        if s == b:
            return seen[s]
        nxt = []
        for i in range(len(s)):
            nxt.append(s[:i] + s[i + 1 :])
            nxt.extend(s[:i] + (x,) + s[i + 1 :] for x in alphabet)
        if len(s) < cap:
            for i in range(len(s) + 1):
                nxt.extend(s[:i] + (x,) + s[i:] for x in alphabet)
        for t in nxt:
            if t not in seen:
                seen[t] = seen[s] + 1
                todo.append(t)
    raise AssertionError("unreachable")


def test_edit_distance_hand_worked():
    assert edit_distance("kitten", "sitting") == 3  # k->s, e->i, +g
    assert edit_distance("flaw", "lawn") == 2  # -f, +n
    assert edit_distance("", "abc") == 3
    assert edit_distance([], []) == 0
    assert edit_distance(["n1", "n2", "n3"], ["n1", "n3"]) == 1
    assert edit_distance(["n1", "n2"], ["n3", "n4"]) == 2


def test_edit_distance_matches_bfs_over_edits():
    rnd = random.Random(5)
    for _ in range(80):
        a = tuple(rnd.choice("abc") for _ in range(rnd.randint(0, 4)))
        b = tuple(rnd.choice("abc") for _ in range(rnd.randint(0, 4)))
        assert edit_distance(a, b) == bfs_levenshtein(a, b), (a, b)


def test_edit_distance_transpositions_osa():
    # optimal string alignment (map2seq's pyxdameraulevenshtein): an adjacent swap is one edit
    assert edit_distance("ca", "ac") == 2
    assert edit_distance("ca", "ac", transpositions=True) == 1
    assert edit_distance("abcd", "acbd", transpositions=True) == 1
    # OSA never edits a swapped pair again: CA -> ABC is 3 under OSA
    # (unrestricted Damerau-Levenshtein would give 2: CA -> AC -> ABC)
    #         ""  a  b  c
    #    ""    0  1  2  3
    #    c     1  1  2  2
    #    a     2  1  2  3
    # a swap cell needs the pair "ca" to appear as "ac" at adjacent positions
    # of the target; in "abc" the a and c are not adjacent, so no swap applies
    assert edit_distance("ca", "abc", transpositions=True) == 3
    # transpositions never increase the distance
    rnd = random.Random(9)
    for _ in range(100):
        a = [rnd.choice("abc") for _ in range(rnd.randint(0, 6))]
        b = [rnd.choice("abc") for _ in range(rnd.randint(0, 6))]
        assert edit_distance(a, b, transpositions=True) <= edit_distance(a, b)


# ---------------------------------------------------------------- SED


def test_sed_hand_worked():
    ref = ["a", "b", "c"]
    # failure -> 0 whatever the path
    assert sed(0.0, ref, ref) == 0.0
    # turning in place repeats a node; repeats are dropped -> identical -> 1
    assert sed(1.0, ["a", "b", "b", "c"], ref) == 1.0
    # stop one node short, next to the goal (success by TC): lev 1, max 3
    assert sed(1.0, ["a", "b", "d"], ref) == pytest.approx(1 - 1 / 3)
    # one detour node: lev 1, max 4
    assert sed(1.0, ["a", "x", "b", "c"], ref) == pytest.approx(0.75)
    # swapped pair: Levenshtein 2 / 4, OSA 1 / 4
    assert sed(1.0, ["a", "c", "b", "d"], ["a", "b", "c", "d"]) == pytest.approx(0.5)
    assert sed(1.0, ["a", "c", "b", "d"], ["a", "b", "c", "d"], transpositions=True) == pytest.approx(0.75)


def test_sed_corner_cases_defined():
    assert sed(1.0, [], []) == 1.0  # both empty: S
    assert sed(1.0, [], ["a", "b"]) == 0.0  # empty trajectory: lev 2 / 2
    assert sed(0.0, [], []) == 0.0
    assert sed(1.0, ["a"], ["a"]) == 1.0  # start == goal, no move
    for v in (sed(1.0, [], []), sed(1.0, [], ["a"]), sed(0.0, [], [])):
        assert isinstance(v, float) and not math.isnan(v)


def test_metric_values_are_json_floats():
    q = np.array([[0.0, 0.0], [3.0, 4.0]])
    values = [dtw_distance(q, q), ndtw(q, q, 25.0), sdtw(1, q, q, 25.0), sed(1, "ab", "ab")]
    json.dumps(values, allow_nan=False)
    assert all(type(v) is float for v in values)



