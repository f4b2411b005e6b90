"""Candidate tasks of ``cityseeker_needs`` (one-stop and two-stop) and the seeded selection per category and
difficulty."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from urbanarena.tasks.generators.common import DIFFICULTIES
from urbanarena.tasks.generators.needs_rules import AMBIGUITY_GAP_M, MAX_ROUTE_STEPS, MIN_ROUTE_STEPS, MIN_STAGE_STEPS, NO_ROUTE, difficulty_of
from urbanarena.tasks.generators.needs_routes import _NeedTable


# --------------------------------------------------------------------------- candidates
@dataclass(frozen=True)
class _Candidate:
    group: str  # need id, or "A+B" for two-stop
    needs: tuple[str, ...]
    start: int
    goals: tuple[int, ...]
    stage_hops: tuple[int, ...]
    difficulty: str

    @property
    def key(self) -> tuple[str, int]:
        return (self.group, self.start)

    @property
    def steps(self) -> int:
        return int(sum(self.stage_hops))


_DIFF_CODE = {d: i for i, d in enumerate(DIFFICULTIES)}


@dataclass
class _Pool:
    """The candidates of one group (a need, or an ordered need pair) as arrays over start nodes."""

    group: str
    needs: tuple[str, ...]
    starts: np.ndarray  # (M,) start node indices, ascending
    goals: np.ndarray  # (M, k) goal node index per stage
    hops: np.ndarray  # (M, k) route steps per stage
    used: np.ndarray = None  # (M,) bool

    def __post_init__(self):
        total = self.hops.sum(axis=1)
        self.diff = np.array([_DIFF_CODE.get(difficulty_of(int(h)) or "", -1) for h in total], dtype=np.int64)
        if self.used is None:
            self.used = np.zeros(len(self.starts), dtype=bool)

    def count(self, d: str) -> int:
        return int((self.diff == _DIFF_CODE[d]).sum())

    def candidate(self, i: int) -> _Candidate:
        return _Candidate(self.group, self.needs, int(self.starts[i]), tuple(int(x) for x in self.goals[i]),
                          tuple(int(x) for x in self.hops[i]), DIFFICULTIES[int(self.diff[i])])


def _reject(rej: dict[str, int], reason: str, n: int) -> None:
    if n:
        rej[reason] = rej.get(reason, 0) + int(n)


def _one_stop(tab: _NeedTable) -> tuple[_Pool | None, dict[str, int]]:
    rej: dict[str, int] = {}
    reach = tab.nearest >= 0
    _reject(rej, NO_ROUTE, int((~reach).sum()))
    _reject(rej, "start is a goal node", int(tab.is_target.sum()))
    live = reach & ~tab.is_target
    _reject(rej, f"nearest goal ambiguous (second within {AMBIGUITY_GAP_M:g} m)", int((live & ~tab.gap_ok).sum()))
    live &= tab.gap_ok
    short = live & (tab.hops >= 0) & (tab.hops < MIN_ROUTE_STEPS)
    long_ = live & ((tab.hops < 0) | (tab.hops > MAX_ROUTE_STEPS))
    _reject(rej, f"route under {MIN_ROUTE_STEPS} steps", int(short.sum()))
    _reject(rej, f"route over {MAX_ROUTE_STEPS} steps", int(long_.sum()))
    v = np.nonzero(live & ~short & ~long_)[0]
    if not len(v):
        return None, rej
    return _Pool(tab.need.id, (tab.need.id,), v, tab.nearest[v][:, None], tab.hops[v][:, None]), rej


def _two_stop(a: _NeedTable, b: _NeedTable) -> tuple[_Pool | None, dict[str, int]]:
    rej: dict[str, int] = {}
    s_ok = (a.nearest >= 0) & ~a.is_target & a.gap_ok & (a.hops >= MIN_STAGE_STEPS)
    _reject(rej, f"stage 1: no unique nearest goal at least {MIN_STAGE_STEPS} steps away", int((~s_ok).sum()))
    _reject(rej, "start is a stage-2 goal node", int((s_ok & b.is_target).sum()))
    s_ok &= ~b.is_target
    g1 = np.where(s_ok, a.nearest, 0)
    st2 = (b.nearest[g1] >= 0) & ~b.is_target[g1] & b.gap_ok[g1] & (b.hops[g1] >= MIN_STAGE_STEPS)
    _reject(rej, f"stage 2: first goal is a stage-2 place, or no unique nearest goal at least {MIN_STAGE_STEPS} "
                 "steps away", int((s_ok & ~st2).sum()))
    ok = s_ok & st2
    total = np.where(ok, a.hops + b.hops[g1], -1)
    out_range = ok & ((total < MIN_ROUTE_STEPS) | (total > MAX_ROUTE_STEPS))
    _reject(rej, f"total route outside {MIN_ROUTE_STEPS}-{MAX_ROUTE_STEPS} steps", int(out_range.sum()))
    v = np.nonzero(ok & ~out_range)[0]
    if not len(v):
        return None, rej
    goals = np.stack([g1[v], b.nearest[g1[v]]], axis=1)
    hops = np.stack([a.hops[v], b.hops[g1[v]]], axis=1)
    return _Pool(f"{a.need.id}+{b.need.id}", (a.need.id, b.need.id), v, goals, hops), rej


# --------------------------------------------------------------------------- selection
def _select(pools: dict[str, _Pool], wanted: dict[str, int], rng: np.random.Generator,
            verify_one: Callable[[_Candidate], bool]) -> tuple[list[_Candidate], dict[str, int]]:
    """Round-robin over the groups (seeded order) per difficulty, then fill the total from the other
    bands; each pick prefers the least-used goal of its group and a start unused in the category,
    random among equals; candidates that fail ``verify_one`` are dropped and replaced.
    Returns (chosen, shortfall per difficulty before filling)."""
    order = sorted(pools)
    order = [order[i] for i in rng.permutation(len(order))] if order else []
    used_starts = np.zeros(0, dtype=np.int64)
    goal_use: dict[tuple[str, tuple[int, ...]], int] = {}
    chosen: list[_Candidate] = []
    turn = 0

    def pick(codes: Sequence[int]) -> _Candidate | None:
        nonlocal turn
        for _ in range(len(order)):
            pool = pools[order[turn % len(order)]]
            turn += 1
            while True:
                idx = np.nonzero(np.isin(pool.diff, codes) & ~pool.used)[0]
                if not len(idx):
                    break
                g_use = np.array([goal_use.get((pool.group, tuple(int(x) for x in pool.goals[i])), 0) for i in idx])
                s_use = np.isin(pool.starts[idx], used_starts).astype(np.int64)
                score = g_use * 2 + s_use
                top = idx[score == score.min()]
                i = int(top[int(rng.integers(len(top)))])
                pool.used[i] = True
                c = pool.candidate(i)
                if verify_one(c):
                    return c
        return None

    def take(c: _Candidate) -> None:
        nonlocal used_starts
        chosen.append(c)
        used_starts = np.append(used_starts, c.start)
        goal_use[(c.group, c.goals)] = goal_use.get((c.group, c.goals), 0) + 1

    shortfall: dict[str, int] = {}
    for d in DIFFICULTIES:
        got = 0
        while got < wanted[d] and order:
            c = pick([_DIFF_CODE[d]])
            if c is None:
                break
            take(c)
            got += 1
        if got < wanted[d]:
            shortfall[d] = wanted[d] - got
    total = sum(wanted.values())
    while len(chosen) < total and order:
        c = pick(list(_DIFF_CODE.values()))
        if c is None:
            break
        take(c)
    chosen.sort(key=lambda c: _DIFF_CODE[c.difficulty])  # stable: pick order within a band
    return chosen, shortfall
