"""Memory strategies (R1 topology retrieval, R2 spatial retrieval over earlier rounds; R3 recent
steps of this round) and the job memory they read.

Rounds. ``urbanarena run --rounds n`` runs each (task, seed) job n times in sequence, rounds
``1 .. n``; the memory is scoped to the job (nothing is shared between jobs, so jobs stay
independent and resumable). After every round the runner writes the round's walk into the
job's :class:`JobMemory` (one row per position of the trajectory, from the env's own record);
the agent of round ``r`` is a fresh agent that retrieves from rounds ``< r``.

Storage. :class:`JobMemory` is an SQLite database (``:memory:`` while the job runs) with the
table :data:`MEMORY_DDL` (``strategy_memory``); R1 and R2 query it with SQL. When the job is
finished its rows travel with the result and the driver commits them to the same table in the
run store (``RUN_DIR/episodes.sqlite``) in the transaction that stores the job's episode row, so
a job's memory is stored exactly when its episode is (no external graph database).

``strategy_memory`` — one row per (config_hash, task_id, seed, agent, round, step):

===========  =======  ==========================================================================
column       type     meaning
===========  =======  ==========================================================================
config_hash  TEXT     config hash of the job (key)
task_id      TEXT     task id (key)
seed         INTEGER  episode seed (key)
agent        TEXT     agent name (key)
round        INTEGER  round number, 1-based (key)
step         INTEGER  position in the round's trajectory, 0-based = env step of the action (key)
node         TEXT     node id at that position
x_m, y_m     REAL     the node's local east/north position, metres (city frame)
action       INTEGER  action taken there (-1 STOP, other negatives invalid); NULL at the final
                      position of a round that did not end by STOP
kind         TEXT     ``agent`` or ``revert`` (a backtracking strategy walking back); NULL with
                      no action
confidence   REAL     the agent's confidence of the decision, when it reports one
heading_deg  REAL     travel heading after the move, degrees (NULL when it did not move)
next_node    TEXT     node the action led to (itself after a stay; NULL for STOP/final)
round_end    TEXT     how the round ended: ``stop``, ``max_steps`` or ``error``
===========  =======  ==========================================================================

R1 — topology-based retrieval over earlier rounds (not privileged). The graph of moves of the
    earlier rounds of this job (undirected); if the current node is in it, the places within
    ``hops`` moves (default 2) with their visit counts (arrivals), every decision taken there
    (round, step, heading, where it led, whether it was a walk back) and how each earlier round
    ended (stopped / ran out of steps, where, after how many steps).
R2 — spatial retrieval over earlier rounds (not privileged: the agent's own path-integrated
    positions, which all rounds share since every round starts at the same place). The places
    of earlier rounds within ``radius_m`` (default 50 m, straight line in the local frame) of the
    current node, nearest first, with distance, bearing, visits and decisions.
R3 — recent-trajectory window (not privileged). The last ``n`` steps (default 3) of the current
    round, oldest first: step number, place, what was done and where it led.

The outcomes the memory gives are only what the agent itself observed (where each action led,
whether a round ended by its own stop or by the step limit); no success feedback is given.
"""

from __future__ import annotations

import math
import sqlite3
import zlib
from collections import deque
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from urbanarena.agents.base import AgentContext
from urbanarena.agents.strategies.base import (
    AGENT_STEP, NEEDS_TEXT, REVERT_STEP, RoundState, Strategy, Step, _positive_float, _positive_int, bearing_deg,
    fmt_deg, side_of,
)
from urbanarena.env.graph_env import STOP

MEMORY_TABLE = "strategy_memory"
MEMORY_COLUMNS: tuple[str, ...] = (
    "config_hash", "task_id", "seed", "agent", "round", "step", "node", "x_m", "y_m", "action", "kind",
    "confidence", "heading_deg", "next_node", "round_end",
)
MEMORY_KEY = ("config_hash", "task_id", "seed", "agent")
MEMORY_DDL = f"""CREATE TABLE IF NOT EXISTS {MEMORY_TABLE} (
    config_hash TEXT NOT NULL,
    task_id TEXT NOT NULL,
    seed INTEGER NOT NULL,
    agent TEXT NOT NULL,
    round INTEGER NOT NULL,
    step INTEGER NOT NULL,
    node TEXT NOT NULL,
    x_m REAL NOT NULL,
    y_m REAL NOT NULL,
    action INTEGER,
    kind TEXT,
    confidence REAL,
    heading_deg REAL,
    next_node TEXT,
    round_end TEXT,
    PRIMARY KEY (config_hash, task_id, seed, agent, round, step)
)"""


class JobMemory:
    """The memory of one job (module docstring): an SQLite ``:memory:`` database plus the place
    labels of the job (``P0`` = the first node labelled, the start).

    Args:
        city: the city (node positions).
        config_hash, task_id, seed, agent: the job's key (filled into every row).
    """

    def __init__(self, city: Any, *, config_hash: str = "", task_id: str = "", seed: int = 0, agent: str = ""):
        self.city = city
        self.key = {"config_hash": config_hash, "task_id": task_id, "seed": int(seed), "agent": agent}
        self.conn = sqlite3.connect(":memory:")
        self.conn.execute(MEMORY_DDL)
        self._labels: dict[str, str] = {}
        self._notes: dict[tuple[int, int], tuple[str, float | None]] = {}
        self.rounds_done: list[int] = []

    # ------------------------------------------------------------ labels / notes
    def label(self, node: str) -> str:
        """``P<k>``: the node's place label, assigned in order of first request."""
        lab = self._labels.get(node)
        if lab is None:
            lab = self._labels[node] = f"P{len(self._labels)}"
        return lab

    def note_step(self, round_: int, step: int, kind: str, confidence: float | None) -> None:
        """Annotate the action at ``step`` of ``round_`` (its kind and the agent's confidence)."""
        self._notes[(int(round_), int(step))] = (kind, confidence)

    # ------------------------------------------------------------ writing
    def end_round(self, round_: int, path: Sequence[str], actions: Sequence[int], headings: Sequence[float],
                  stop_reason: str | None) -> int:
        """Write a finished round from the env's record (``trajectory``, ``actions``, ``headings``
        of the episode result). Returns the number of rows written.

        Raises: ``ValueError`` when the round was written already or the record is inconsistent.
        """
        round_ = int(round_)
        if round_ in self.rounds_done:
            raise ValueError(f"round {round_} is in the job memory already")
        if not (len(actions) <= len(path) <= len(actions) + 1) or len(headings) != len(path):
            raise ValueError(f"round {round_}: {len(path)} positions, {len(headings)} headings, {len(actions)} actions")
        rows = []
        for i, node in enumerate(path):
            action = int(actions[i]) if i < len(actions) else None
            nxt = path[i + 1] if i + 1 < len(path) else None
            kind, conf = self._notes.get((round_, i), (AGENT_STEP, None)) if action is not None else (None, None)
            x, y = self.city.xy(node)
            rows.append({**self.key, "round": round_, "step": i, "node": node, "x_m": float(x), "y_m": float(y),
                         "action": action, "kind": kind, "confidence": conf,
                         "heading_deg": float(headings[i + 1]) if nxt is not None and nxt != node else None,
                         "next_node": nxt, "round_end": stop_reason})
        self.conn.executemany(
            f"INSERT INTO {MEMORY_TABLE} ({', '.join(MEMORY_COLUMNS)}) VALUES ({', '.join('?' * len(MEMORY_COLUMNS))})",
            [[r[c] for c in MEMORY_COLUMNS] for r in rows])
        self.rounds_done.append(round_)
        return len(rows)

    # ------------------------------------------------------------ reading
    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cur = self.conn.execute(sql, list(args))
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def rows(self) -> list[dict[str, Any]]:
        """Every row, ordered by (round, step) (what the driver stores)."""
        return self._query(f"SELECT {', '.join(MEMORY_COLUMNS)} FROM {MEMORY_TABLE} ORDER BY round, step")

    def earlier(self, round_: int) -> list[dict[str, Any]]:
        """Rows of rounds before ``round_``, ordered by (round, step)."""
        return self._query(f"SELECT {', '.join(MEMORY_COLUMNS)} FROM {MEMORY_TABLE} WHERE round < ? "
                           "ORDER BY round, step", (int(round_),))

    def within(self, round_: int, x_m: float, y_m: float, radius_m: float) -> list[dict[str, Any]]:
        """Rows of rounds before ``round_`` whose node lies within ``radius_m`` of ``(x_m, y_m)``
        (local frame, straight line), ordered by (round, step)."""
        return self._query(
            f"SELECT {', '.join(MEMORY_COLUMNS)} FROM {MEMORY_TABLE} WHERE round < ? AND "
            "(x_m - ?) * (x_m - ?) + (y_m - ?) * (y_m - ?) <= ? * ? ORDER BY round, step",
            (int(round_), x_m, x_m, y_m, y_m, radius_m, radius_m))

    def close(self) -> None:
        self.conn.close()


@dataclass
class StrategyContext(AgentContext):
    """:class:`~urbanarena.agents.base.AgentContext` of one round of a job.

    Attributes:
        round: round number, 1-based. memory: the job's :class:`JobMemory` (``None``: the
            wrapper keeps a private one for a single round).
    The agent's ``rng`` of round 1 is the plain context's; round ``r > 1`` draws from
    ``default_rng([seed, crc32(task_id), r])``, so every round has its own reproducible stream.
    """

    round: int = 1
    memory: JobMemory | None = None

    def __post_init__(self):
        super().__post_init__()
        if int(self.round) > 1:
            self.rng = np.random.default_rng([int(self.seed), zlib.crc32(self.task_id.encode()), int(self.round)])


# ----------------------------------------------------------------- retrieval
def _visit_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Arrivals per node over rows ordered by (round, step) (a stay is not a new visit)."""
    out: dict[str, int] = {}
    prev: tuple[int, str] | None = None
    for r in rows:
        cur = (r["round"], r["node"])
        if cur != prev:
            out[r["node"]] = out.get(r["node"], 0) + 1
        prev = cur
    return out


def _decisions(rows: list[dict[str, Any]], node: str, memory: JobMemory) -> list[dict[str, Any]]:
    return [{"round": r["round"], "step": r["step"], "action": r["action"], "kind": r["kind"],
             "heading_deg": r["heading_deg"], "next_node": r["next_node"],
             "next_label": memory.label(r["next_node"]) if r["next_node"] is not None else None}
            for r in rows if r["node"] == node and r["action"] is not None]


def round_summaries(rows: list[dict[str, Any]], memory: JobMemory) -> list[dict[str, Any]]:
    """How each round in ``rows`` ended: ``[{round, end, final_node, final_label, steps}]``."""
    out: dict[int, dict[str, Any]] = {}
    for r in rows:
        s = out.setdefault(r["round"], {"round": r["round"], "end": r["round_end"], "steps": 0})
        s["final_node"] = r["node"]
        s["steps"] += r["action"] is not None
    for s in out.values():
        s["final_label"] = memory.label(s["final_node"])
    return [out[k] for k in sorted(out)]


def topology_retrieval(memory: JobMemory, node: str, round_: int, hops: int = 2) -> dict[str, Any]:
    """R1: ``{"here", "known", "places": [{node, label, hops, visits, decisions}], "rounds"}`` —
    the places of earlier rounds within ``hops`` moves of ``node`` on the (undirected) graph of
    their moves, nearest first (ties in order of first appearance), each with its visit count and
    decisions; ``known`` is False (and ``places`` empty) when ``node`` is not in that graph."""
    rows = memory.earlier(round_)
    here = {"here": memory.label(node), "rounds": round_summaries(rows, memory)}
    order = list(dict.fromkeys(r["node"] for r in rows))
    if node not in order:
        return {**here, "known": False, "places": []}
    adj: dict[str, set[str]] = {}
    for r in rows:
        if r["next_node"] is not None and r["next_node"] != r["node"]:
            adj.setdefault(r["node"], set()).add(r["next_node"])
            adj.setdefault(r["next_node"], set()).add(r["node"])
    dist = {node: 0}
    queue = deque([node])
    while queue:
        n = queue.popleft()
        if dist[n] >= hops:
            continue
        for m in adj.get(n, ()):
            if m not in dist:
                dist[m] = dist[n] + 1
                queue.append(m)
    visits = _visit_counts(rows)
    places = [{"node": n, "label": memory.label(n), "hops": dist[n], "visits": visits.get(n, 0),
               "decisions": _decisions(rows, n, memory)}
              for n in sorted(dist, key=lambda n: (dist[n], order.index(n)))]
    return {**here, "known": True, "places": places}


def spatial_retrieval(memory: JobMemory, node: str, round_: int, radius_m: float = 50.0) -> dict[str, Any]:
    """R2: ``{"here", "radius_m", "places": [{node, label, distance_m, bearing_deg, visits,
    decisions}], "rounds"}`` — places of earlier rounds within ``radius_m`` of ``node`` (SQL on
    the stored local positions), nearest first to the millimetre (ties in order of first appearance)."""
    x, y = (float(v) for v in memory.city.xy(node))
    near = memory.within(round_, x, y, radius_m)
    rows = memory.earlier(round_)
    visits = _visit_counts(near)
    order = list(dict.fromkeys(r["node"] for r in near))
    pos = {r["node"]: (r["x_m"], r["y_m"]) for r in near}
    places = []
    for n in order:
        dx, dy = pos[n][0] - x, pos[n][1] - y
        places.append({"node": n, "label": memory.label(n), "distance_m": math.hypot(dx, dy),
                       "bearing_deg": bearing_deg(dx, dy) if (dx or dy) else None, "visits": visits[n],
                       "decisions": _decisions(near, n, memory)})
    places.sort(key=lambda p: (round(p["distance_m"], 3), order.index(p["node"])))
    return {"here": memory.label(node), "radius_m": float(radius_m), "places": places,
            "rounds": round_summaries(rows, memory)}


# ----------------------------------------------------------------- text
def _decision_text(d: dict[str, Any]) -> str:
    a = d["action"]
    if a == STOP:
        what = "stopped here"
    elif d["next_node"] is not None and d["next_label"] is not None and d["heading_deg"] is not None:
        what = f"went heading {fmt_deg(d['heading_deg'])} to {d['next_label']}"
    elif a is not None and a >= 0:
        what = "stayed here"
    else:
        what = "gave an unusable answer and stayed"
    if d["kind"] == REVERT_STEP:
        what += " (walking back)"
    return f"round {d['round']} step {d['step'] + 1} {what}"


_ENDS = {"stop": "stopped at {p}", "max_steps": "ran out of steps at {p}", "error": "ended with an error at {p}"}


def _rounds_text(rounds: list[dict[str, Any]]) -> str:
    parts = [f"round {s['round']} " + _ENDS.get(str(s["end"]), "ended at {p}").format(p=s["final_label"])
             + f" after {s['steps']} steps" for s in rounds]
    return "Earlier rounds: " + "; ".join(parts) + "."


def _place_line(place: dict, where: str) -> str:
    """``- LABEL (WHERE; N visits): decision; decision`` for one retrieved place (R1 and R2)."""
    dec = "; ".join(_decision_text(d) for d in place["decisions"])
    return (f"- {place['label']} ({where}; {place['visits']} visit{'s' if place['visits'] != 1 else ''})"
            + (f": {dec}" if dec else ""))


class TopologyRetrieval(Strategy):
    """R1 (module docstring)."""

    id = "R1"
    title = "topology-based memory retrieval over earlier rounds"
    family = "memory"
    uses = ("memory of the earlier rounds of this job (run store): places within h moves of here, visit counts, "
            "past decisions and where they led, how each round ended",)
    needs = frozenset({NEEDS_TEXT})
    defaults = {"hops": 2}

    def validate(self) -> None:
        _positive_int(self, "hops")

    def context_text(self, state: RoundState) -> str | None:
        if state.round <= 1:
            return None
        got = topology_retrieval(state.memory, state.walk.node, state.round, self.params["hops"])
        lines = [f"[Memory: earlier rounds, places within {self.params['hops']} moves of here] "
                 f"You are at {got['here']}."]
        if not got["known"]:
            lines.append(f"- You were not at {got['here']} in an earlier round.")
        for p in got["places"]:
            where = "here" if p["hops"] == 0 else f"{p['hops']} move{'s' if p['hops'] > 1 else ''} away"
            lines.append(_place_line(p, where))
        if got["rounds"]:
            lines.append(_rounds_text(got["rounds"]))
        self.texts += 1
        return "\n".join(lines)


class SpatialRetrieval(Strategy):
    """R2 (module docstring)."""

    id = "R2"
    title = "spatial memory retrieval over earlier rounds"
    family = "memory"
    uses = ("memory of the earlier rounds of this job (run store): places within radius_m of here (own "
            "path-integrated positions), visit counts, past decisions and where they led, how each round ended",)
    needs = frozenset({NEEDS_TEXT})
    defaults = {"radius_m": 50.0}

    def validate(self) -> None:
        _positive_float(self, "radius_m")

    def context_text(self, state: RoundState) -> str | None:
        if state.round <= 1:
            return None
        got = spatial_retrieval(state.memory, state.walk.node, state.round, self.params["radius_m"])
        lines = [f"[Memory: earlier rounds, places within {self.params['radius_m']:.0f} m of here] "
                 f"You are at {got['here']}, heading {fmt_deg(state.walk.heading_deg)}."]
        if not got["places"]:
            lines.append("- No place of an earlier round is this close.")
        for p in got["places"]:
            if p["bearing_deg"] is None:
                where = "here"
            else:
                where = (f"{p['distance_m']:.0f} m at {fmt_deg(p['bearing_deg'])} "
                         f"({side_of(p['bearing_deg'], state.walk.heading_deg)})")
            lines.append(_place_line(p, where))
        if got["rounds"]:
            lines.append(_rounds_text(got["rounds"]))
        self.texts += 1
        return "\n".join(lines)


def recent_steps(state: RoundState, n: int = 3) -> list[Step]:
    """R3: the last ``n`` steps of the current round (oldest first)."""
    return list(state.walk.steps[-n:]) if n > 0 else []


def step_text(state: RoundState, s: Step) -> str:
    """One step as R3 shows it: ``step 4: at P3 went heading 90 deg to P4``."""
    if s.action == STOP:
        what = "stopped"
    elif s.moved:
        h = f" heading {fmt_deg(s.arrival_heading_deg)}" if s.arrival_heading_deg is not None else ""
        what = f"went{h} to {state.label(str(s.next_node))}"
    elif s.action >= 0:
        what = "stayed"
    else:
        what = "gave an unusable answer and stayed"
    if s.kind == REVERT_STEP:
        what += " (walking back)"
    return f"step {s.index + 1}: at {state.label(s.node)} {what}"


class RecentTrajectory(Strategy):
    """R3 (module docstring)."""

    id = "R3"
    title = "recent-trajectory window of the current round"
    family = "memory"
    uses = ("the last n steps of the agent's own trajectory this round",)
    needs = frozenset({NEEDS_TEXT})
    defaults = {"n": 3}

    def validate(self) -> None:
        _positive_int(self, "n")

    def context_text(self, state: RoundState) -> str | None:
        steps = recent_steps(state, self.params["n"])
        if not steps:
            return None
        lines = [f"[Recent steps] Your last {len(steps)} step{'s' if len(steps) != 1 else ''} in this round "
                 "(oldest first):"] + [f"- {step_text(state, s)}" for s in steps]
        self.texts += 1
        return "\n".join(lines)


__all__ = ["JobMemory", "MEMORY_COLUMNS", "MEMORY_DDL", "MEMORY_KEY", "MEMORY_TABLE", "RecentTrajectory",
           "SpatialRetrieval", "StrategyContext", "TopologyRetrieval", "recent_steps", "round_summaries",
           "spatial_retrieval", "step_text", "topology_retrieval"]
