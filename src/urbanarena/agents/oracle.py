"""Oracle: a privileged agent that knows the goal and plans on the protocol's
motion model, then acts only through ``env.step`` with legal action indices
(never teleports).

Planning is A* over motion-model states (node, heading) with cost
(metres walked, actions taken) in lexicographic order; the heuristic is 0.98 x
the straight-line local-frame distance (admissible for edge lengths measured
along the ground). Modes (``follow``):

* ``"shortest"`` — metric-shortest legal route to each goal.
* ``"reference"`` — replay the task's reference path node by node (each hop
  planned legally, e.g. turns then FORWARD under Touchdown rules).
* ``"auto"`` (default) — per stage, replay the reference route when it is a
  shortest path (length within 1e-6 relative of the shortest) that the
  protocol can walk hop by hop, else the shortest legal route; so an oracle
  and a shortest-path reference cannot split on ties.

Goals: under a protocol with per-stage scoring every stage goal is visited in
order; otherwise only the final goal is targeted (as the protocol only checks
the final node). When no legal route exists the oracle stops at once and
records ``stats["no_legal_path"] = True`` with the unreachable target. A
reference node the protocol cannot reach is skipped (the oracle heads for the
stage goal instead; ``stats["reference_abandoned"]`` counts it).
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Any

from urbanarena.agents.base import Agent, AgentContext
from urbanarena.env.graph_env import STOP
from urbanarena.env.motion.base import MotionModel, NavState
from urbanarena.env.protocols import get_protocol
from urbanarena.tasks.schema import Task

_REL_TOL = 1e-6


def plan_to(motion: MotionModel, start: NavState, target: str, max_expansions: int = 2_000_000) -> list[int] | None:
    """Legal action indices that take ``start`` to any state at node ``target``.

    Returns ``[]`` if already there, ``None`` if no legal route exists.
    Cost: (sum of ``length_m`` of edges moved along, number of actions).
    """
    if start.node == target:
        return []
    if target not in motion.city or not motion.can_enter(target):
        return None
    city = motion.city
    tx, ty = city.xy(target)

    def h(node: str) -> float:
        x, y = city.xy(node)
        return 0.98 * math.hypot(x - tx, y - ty)

    counter = itertools.count()
    best: dict[NavState, tuple[float, int]] = {start: (0.0, 0)}
    parent: dict[NavState, tuple[NavState, int]] = {}
    heap = [(h(start.node), 0, next(counter), 0.0, start)]
    expansions = 0
    while heap:
        _, steps, _, g, st = heapq.heappop(heap)
        if best.get(st, (math.inf, 0)) < (g, steps):
            continue
        if st.node == target:
            actions = []
            cur = st
            while cur != start:
                prev, a = parent[cur]
                actions.append(a)
                cur = prev
            return actions[::-1]
        expansions += 1
        if expansions > max_expansions:
            return None
        for i in range(len(motion.choices(st))):
            nxt = motion.transition(st, i)
            if nxt == st:
                continue
            step_len = 0.0 if nxt.node == st.node else float(city.graph.edges[st.node, nxt.node]["length_m"])
            cand = (g + step_len, steps + 1)
            if cand < best.get(nxt, (math.inf, 0)):
                best[nxt] = cand
                parent[nxt] = (st, i)
                heapq.heappush(heap, (cand[0] + h(nxt.node), cand[1], next(counter), cand[0], nxt))
    return None


def hop_actions(motion: MotionModel, state: NavState, nxt: str) -> tuple[list[int], NavState] | None:
    """Actions that move from ``state`` to the adjacent node ``nxt`` in one move,
    turning in place first if the protocol needs it (breadth-first over the
    states at the current node). ``None`` if the protocol offers no such move.
    Returns the actions and the state on arrival."""
    frontier = [(state, [])]
    seen = {state}
    while frontier:
        st, acts = frontier.pop(0)
        for i in range(len(motion.choices(st))):
            nx_ = motion.transition(st, i)
            if nx_.node == nxt:
                return acts + [i], nx_
            if nx_.node == st.node and nx_ not in seen:
                seen.add(nx_)
                frontier.append((nx_, acts + [i]))
    return None


def _legal_route(motion: MotionModel, state: NavState, route: list[str]) -> NavState | None:
    """Final state if ``route`` (starting at ``state.node``) can be walked hop by hop, else ``None``."""
    for nxt in route[1:]:
        if nxt == state.node:
            continue
        hop = hop_actions(motion, state, nxt)
        if hop is None:
            return None
        state = hop[1]
    return state


def _is_path(city, path: list[str]) -> bool:
    return len(path) >= 1 and all(n in city for n in path) and all(
        a == b or city.graph.has_edge(a, b) for a, b in zip(path, path[1:])
    )


class OracleAgent(Agent):
    """Privileged oracle (see module docstring). Parameters: ``follow`` in
    ``{"auto", "shortest", "reference"}``."""

    name = "oracle"
    privileged = True

    def __init__(self, follow: str = "auto"):
        if follow not in ("auto", "shortest", "reference"):
            raise ValueError(f"follow must be auto, shortest or reference, not {follow!r}")
        super().__init__(follow=follow)
        self.follow = follow

    def reset(self, task: Task, context: AgentContext) -> None:
        self.motion = context.motion
        self.city = context.city
        self.stats = {"no_legal_path": False}
        per_stage = get_protocol(context.protocol_id).per_stage_scoring
        goals = [g.node for g in task.goals if g.node is not None]
        if not per_stage:
            goals = goals[-1:]
        if per_stage and task.reference_stages and len(task.reference_stages) == len(goals):
            refs: list[list[str] | None] = list(task.reference_stages)
        elif len(goals) == 1 and task.reference_path:
            refs = [task.reference_path]
        else:
            refs = [None] * len(goals)
        # waypoints: nodes to pass in order
        self.waypoints: list[str] = []
        self.goal_marks: set[int] = set()  # indices (in the original list) of stage goals
        prev = task.start.node
        state: NavState | None = self.motion.start_state(
            task.start.node, task.start.heading_deg if task.start.heading_deg is not None
            else (self.city.node(task.start.node).get("heading_deg") or 0.0))
        for goal, ref in zip(goals, refs):
            if self.follow == "shortest" or ref is None:
                ref = None
            elif not (_is_path(self.city, ref) and ref[0] == prev and ref[-1] == goal):
                ref = None
            elif self.follow == "auto":
                shortest = self.city.shortest_path_length_m(prev, goal, cache=False)
                if not abs(self.city.path_length_m(ref) - shortest) <= _REL_TOL * max(1.0, shortest):
                    ref = None
                elif state is None or (state := _legal_route(self.motion, state, ref)) is None:
                    ref = None  # the protocol cannot walk this route: plan legally instead
            if ref is None:
                state = None  # later stages start from wherever planning ends
            self.waypoints.extend(ref[1:] if ref is not None else [goal])
            self.goal_marks.add(len(self.waypoints) - 1)
            prev = goal
        self.plan: list[int] = []
        self._next = 0

    def act(self, observation: dict[str, Any]) -> int:
        cur = NavState(observation["node"], float(observation["heading_deg"]))
        if self.plan:
            return self.plan.pop(0)
        while True:
            while self._next < len(self.waypoints) and self.waypoints[self._next] == cur.node:
                self._next += 1
            if self._next >= len(self.waypoints):
                return STOP
            target = self.waypoints[self._next]
            actions = plan_to(self.motion, cur, target)
            if actions is not None:
                self.plan = actions
                return self.plan.pop(0)
            if self._next in self.goal_marks:
                self.stats["no_legal_path"] = True
                self.stats["unreachable_target"] = target
                self._next = len(self.waypoints)
                return STOP
            # a reference node the protocol cannot reach: head for the stage goal instead
            self.stats["reference_abandoned"] = self.stats.get("reference_abandoned", 0) + 1
            self._next = min(i for i in self.goal_marks if i > self._next)
