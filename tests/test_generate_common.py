"""Calibrated selection and difficulty split of the task generators (hand-worked small pools)."""

from __future__ import annotations

import numpy as np

from urbanarena.tasks.generators.common import Candidate, objective, select_calibrated, split_counts


def cand(i: int, value: float, group: str | None = None) -> Candidate:
    return Candidate(kind="k", difficulty="easy", key=f"c{i}", group=group or f"g{i}", stats={"v": value}, fields={})


def test_split_counts():
    assert split_counts(25) == {"easy": 9, "medium": 8, "hard": 8}
    assert split_counts(100) == {"easy": 34, "medium": 33, "hard": 33}
    assert split_counts(2) == {"easy": 1, "medium": 1, "hard": 0}


def test_selection_reaches_a_reachable_mean():
    # values 1..20; 5 of them with mean 4.0 exist (e.g. 2+3+4+5+6), far below the pool mean 10.5
    pool = [cand(i, float(i)) for i in range(1, 21)]
    sel = select_calibrated(pool, 5, {"v": 4.0}, np.random.default_rng(0))
    assert len(sel) == 5 and len({c.key for c in sel}) == 5
    assert abs(np.mean([c.stats["v"] for c in sel]) - 4.0) < 0.05
    assert objective(sel, {"v": 4.0}) < 1e-3
    # same seed, same choice
    again = select_calibrated(pool, 5, {"v": 4.0}, np.random.default_rng(0))
    assert [c.key for c in again] == [c.key for c in sel]


def test_selection_respects_groups_and_size():
    # two groups only: at most one per group -> two candidates, however many are asked for
    pool = [cand(i, float(i), group="a" if i % 2 else "b") for i in range(10)]
    sel = select_calibrated(pool, 5, {"v": 3.0}, np.random.default_rng(1))
    assert len(sel) == 2 and {c.group for c in sel} == {"a", "b"}
    assert select_calibrated(pool, 0, {"v": 3.0}, np.random.default_rng(1)) == []
    # without targets: a plain seeded sample
    plain = select_calibrated([cand(i, 0.0) for i in range(10)], 4, {}, np.random.default_rng(2))
    assert len(plain) == 4 and len({c.key for c in plain}) == 4
