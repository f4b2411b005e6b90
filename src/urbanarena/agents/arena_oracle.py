"""Arena oracle: a privileged agent for ``cityarena`` tasks that acts only through ``ArenaEnv.step``.

It knows the task's ground truth. Question tasks (``exact_match``,
``mean_relative_accuracy``, ``fuzzy_match``: localization, counting,
relational) are answered at once with ``task.answer``. Location tasks
(``coordinate_match``: landmark search, map navigation, VLN) are planned on
the arena's own motion rules (:class:`~urbanarena.env.motion.trajectory.TrajectoryMotion`,
with the protocol's branch rule) and executed as legal :class:`ArenaAction`
values: W walks, branch keys where arrows are shown, camera turns to reverse,
and a final ``ANSWER`` once the agent stands strictly inside the success radius
(minus a safety margin).

Planning (:func:`plan_to_goal`) is an A* search over *stop states*: the agent
standing free at a node, camera aligned with its walking direction. From a
stop state the moves are

* a branch key (``LEFT``/``UP``/``RIGHT``, only while arrows are shown; the
  key's branch under the protocol's rule), then walking that branch;
* a plain walk when exactly one onward branch exists (no arrows);
* a reversal: camera ``D LARGE`` twice (180 degrees; the walking direction
  flips because the camera looks more than 90 degrees away from the travel
  direction, :meth:`TrajectoryMotion.walking_deg`), cost 2 steps.

A walk runs until the motion model stops it (a node with two or more
branches, or a dead end); it costs ``ceil(distance / LARGE)`` ``W LARGE``
steps. Where the walk passes through the goal disc, the search also considers
stopping inside it: the fewest W steps whose distances (SMALL / default /
MEDIUM / LARGE, 1.5 / 3 / 4 / 7 m) sum into an interval of arc length where
the position is inside the disc, plus the ANSWER step. Cost = steps (model
requests); ties broken by metres walked. The heuristic
``ceil(max(0, d - r') / LARGE) + 1`` (``d`` the straight-line distance to the
goal, ``r'`` the radius minus the margin) is admissible because one step moves
at most ``LARGE`` metres in a straight line. The plan is exact: the motion
model is deterministic, and the agent re-simulates each action, checking the
pose the env reports (``record_outcome``); a divergence is recorded in
``stats["diverged"]`` and the agent then answers at once.

:func:`verify_arena_task` runs the oracle through the real env and its stop
rules (step limit, stagnation, away-from-goal) under one or more protocols:
what the task generator uses to prove every navigation task solvable.
"""

from __future__ import annotations

import heapq
import itertools
import math
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Sequence

from urbanarena.agents.base import Agent, AgentContext
from urbanarena.env.arena_env import ActionKind, ArenaAction, Magnitude
from urbanarena.env.motion.trajectory import KEY_ORDER, TrajectoryMotion, TrajState
from urbanarena.tasks.families.cityarena import CityArenaFamily
from urbanarena.tasks.schema import Task
from urbanarena.tasks.validators import COORDINATE_MATCH
from urbanarena.world.city import City
from urbanarena.world.geo import wrap_deg

#: metres kept inside the success radius when choosing where to stop (float safety)
DEFAULT_MARGIN_M = 0.5


@dataclass(frozen=True)
class ArenaPlan:
    """A planned episode.

    Attributes:
        actions: the actions in order, ending with ``ANSWER``.
        walked_m: metres walked along the graph.
        branch_choices: branch keys pressed (decision points where the agent chose).
        reversals: camera reversals (two ``D LARGE`` each).
        final_xy: predicted final position, local metres.
        final_distance_m: its straight-line distance to the goal.
    """

    actions: tuple[ArenaAction, ...]
    walked_m: float
    branch_choices: int
    reversals: int
    final_xy: tuple[float, float]
    final_distance_m: float

    @property
    def steps(self) -> int:
        """Model requests the plan consumes (ANSWER included)."""
        return len(self.actions)


@dataclass
class _Segment:
    """A walk from a stop state along one branch to the next stop (cached per first edge)."""

    edges: list[tuple[str, str, float]]  # (u, v, length_m)
    length_m: float
    end_key: tuple[str, float]  # (stop node, walking direction there)
    centre: tuple[float, float]  # bounding circle of the walked polyline (quick rejection)
    reach_m: float


@dataclass
class _Move:
    """One move from a stop state: an optional branch key, then a walk (``segment``), or a reversal."""

    prefix: tuple[ArenaAction, ...]
    segment: _Segment | None
    next_key: tuple[str, float]
    choices: int = 0
    reversals: int = 0


def _magnitudes(motion: TrajectoryMotion) -> list[tuple[Magnitude | None, float]]:
    c = motion.config
    out = [(Magnitude(k), float(v)) for k, v in c.move_m.items()] + [(None, float(c.move_default_m))]
    return sorted(out, key=lambda mv: mv[1])


def _fewest_steps(lo: float, hi: float, mags: list[tuple[Magnitude | None, float]],
                  extra_steps: int = 2) -> list[Magnitude | None] | None:
    """Fewest W magnitudes whose distances sum into ``[lo, hi]`` (metres), largest first; ``None`` if
    none within ``extra_steps`` more than the lower bound ``ceil(lo / big)``.

    With ``k`` steps every sum is ``k * big - deficits`` where each step's deficit is
    ``big - m`` for its magnitude ``m``.
    """
    big_mag, big = mags[-1]
    if hi < lo or hi <= 0:
        return None
    k = max(1, math.ceil(lo / big - 1e-12))
    k_max = k + extra_steps
    others = [(m, big - v) for m, v in mags[:-1] if big - v > 0]
    while k <= k_max:
        dmin, dmax = k * big - hi, k * big - lo  # total deficit must lie in [dmin, dmax]
        best: tuple[int, ...] | None = None
        ranges = [range(0, min(k, int(max(dmax, 0) // d) + 1) + 1) for _, d in others]
        for counts in itertools.product(*ranges):
            if sum(counts) > k:
                continue
            tot = sum(c * d for c, (_, d) in zip(counts, others))
            if dmin - 1e-9 <= tot <= dmax + 1e-9 and (best is None or sum(counts) < sum(best)):
                best = counts
        if best is not None:
            seq: list[Magnitude | None] = [big_mag] * (k - sum(best))
            for c, (m, _) in zip(best, others):
                seq += [m] * c
            return seq
        k += 1
    return None


def _disc_intervals(seg: _Segment, city: City, goal: tuple[float, float], r: float) -> list[tuple[float, float]]:
    """Arc-length intervals ``[a0, a1]`` of a segment where the position is strictly within ``r`` of ``goal``.

    Positions interpolate each edge's chord linearly by ``offset / length_m``
    (as :meth:`TrajectoryMotion.position_xy`).
    """
    out: list[tuple[float, float]] = []
    a = 0.0
    gx, gy = goal
    for u, v, L in seg.edges:
        x0, y0 = city.xy(u)
        x1, y1 = city.xy(v)
        dx, dy = x1 - x0, y1 - y0
        ex, ey = x0 - gx, y0 - gy
        qa = dx * dx + dy * dy
        qb = 2 * (ex * dx + ey * dy)
        qc = ex * ex + ey * ey - r * r
        if qa <= 1e-12:
            if qc < 0:
                out.append((a, a + L))
        else:
            disc = qb * qb - 4 * qa * qc
            if disc > 0:
                sq = math.sqrt(disc)
                t0, t1 = max((-qb - sq) / (2 * qa), 0.0), min((-qb + sq) / (2 * qa), 1.0)
                if t1 > t0:
                    out.append((a + t0 * L, a + t1 * L))
        a += L
    merged: list[tuple[float, float]] = []
    for iv in out:
        if merged and iv[0] <= merged[-1][1] + 1e-9:
            merged[-1] = (merged[-1][0], max(merged[-1][1], iv[1]))
        else:
            merged.append(iv)
    return merged


class MoveGraph:
    """The stop states of a city under one :class:`TrajectoryMotion` and the moves between them
    (goal-independent, built lazily and cached; see the module docstring)."""

    def __init__(self, motion: TrajectoryMotion):
        self.motion = motion
        self.city = motion.city
        self.big_mag, self.big = _magnitudes(motion)[-1]
        self.turn_mag = Magnitude.LARGE
        self.turn_deg = float(motion.config.turn_deg["LARGE"])
        self._segs: dict[tuple[str, str], _Segment] = {}
        self._moves: dict[tuple[str, float], list[_Move]] = {}

    @staticmethod
    def key(node: str, walking_deg: float) -> tuple[str, float]:
        # exact floats: a rounded direction can flip a key's choice under the half-plane rule
        return node, wrap_deg(walking_deg)

    def segment(self, u: str, v: str, bearing: float) -> _Segment:
        seg = self._segs.get((u, v))
        if seg is None:
            s1 = TrajState(u, v, 0.0, wrap_deg(bearing), wrap_deg(bearing), 0.0)
            out = self.motion.walk(s1, 1e12)
            path = [u] + list(out.nodes_passed)  # nodes_passed: every node reached, v first, the stop last
            edges = [(a, b, self.motion.edge_length_m(a, b)) for a, b in zip(path, path[1:])]
            pts = [self.city.xy(n) for n in path]
            cx = (min(p[0] for p in pts) + max(p[0] for p in pts)) / 2
            cy = (min(p[1] for p in pts) + max(p[1] for p in pts)) / 2
            reach = max(math.hypot(p[0] - cx, p[1] - cy) for p in pts)
            seg = _Segment(edges, float(out.moved_m), self.key(out.state.u, self.motion.walking_deg(out.state)),
                           (cx, cy), reach)
            self._segs[(u, v)] = seg
        return seg

    def moves(self, key: tuple[str, float]) -> list[_Move]:
        cached = self._moves.get(key)
        if cached is not None:
            return cached
        node, walk = key
        m = self.motion
        state = TrajState(node, None, 0.0, walk, walk, 0.0)
        out: list[_Move] = []
        arrows = m.arrows(state)
        if arrows:
            seen: set[str] = set()
            for k in KEY_ORDER:
                res = m.choose(state, k)
                if res.invalid or res.branch is None or res.branch.target in seen:
                    continue
                seen.add(res.branch.target)
                seg = self.segment(node, res.branch.target, res.branch.bearing_deg)
                out.append(_Move((ArenaAction(ActionKind(k)),), seg, seg.end_key, choices=1))
        else:
            br = m.branches_at(node, walk)
            if len(br) == 1:
                seg = self.segment(node, br[0].target, br[0].bearing_deg)
                out.append(_Move((), seg, seg.end_key))
        turns = max(1, math.ceil(180.0 / self.turn_deg - 1e-9))
        if turns * self.turn_deg > 90.0:  # the camera ends more than 90 degrees from travel: walking flips
            rev = m.walking_deg(TrajState(node, None, 0.0, walk, wrap_deg(walk + turns * self.turn_deg), 0.0))
            out.append(_Move((ArenaAction(ActionKind.D, self.turn_mag),) * turns, None, self.key(node, rev),
                             reversals=1))
        self._moves[key] = out
        return out


_MOVE_GRAPHS: "OrderedDict[tuple, tuple[weakref.ref, MoveGraph]]" = OrderedDict()


def move_graph(motion: TrajectoryMotion) -> MoveGraph:
    """The cached :class:`MoveGraph` of ``motion``'s city and configuration (a few kept per process)."""
    key = (id(motion.city), motion.city.content_hash, repr(sorted(motion.config.as_dict().items())))
    hit = _MOVE_GRAPHS.get(key)
    if hit is not None and hit[0]() is motion.city:
        _MOVE_GRAPHS.move_to_end(key)
        mg = hit[1]
        mg.motion = motion
        return mg
    mg = MoveGraph(motion)
    _MOVE_GRAPHS[key] = (weakref.ref(motion.city), mg)
    while len(_MOVE_GRAPHS) > 8:
        _MOVE_GRAPHS.popitem(last=False)
    return mg


class _Planner:
    def __init__(self, motion: TrajectoryMotion, goal_xy: tuple[float, float], radius_m: float, margin_m: float):
        self.graph = move_graph(motion)
        self.motion = motion
        self.city = motion.city
        self.goal = (float(goal_xy[0]), float(goal_xy[1]))
        self.r = float(radius_m) - float(margin_m)
        self.mags = _magnitudes(motion)
        self.big = self.mags[-1][1]
        self._mag_m = {m: v for m, v in self.mags}

    def dist(self, xy: tuple[float, float]) -> float:
        return math.hypot(xy[0] - self.goal[0], xy[1] - self.goal[1])

    def h(self, node: str) -> int:
        d = self.dist(self.city.xy(node))
        return math.ceil(max(0.0, d - self.r) / self.big - 1e-12) + 1

    def plan(self, start: TrajState, answer: str, max_expansions: int = 200_000) -> ArenaPlan | None:
        if start.v is not None:
            raise ValueError("plan_to_goal starts from a free state at a node")
        start_key = MoveGraph.key(start.u, self.motion.walking_deg(start))
        counter = itertools.count()
        best: dict[Any, tuple[int, float]] = {start_key: (0, 0.0)}
        parent: dict[Any, tuple[Any, tuple[ArenaAction, ...], int, int]] = {}
        heap: list[tuple[int, int, float, int, Any]] = [(self.h(start.u), 0, 0.0, next(counter), start_key)]
        expansions = 0
        while heap:
            _, g, walked, _, key = heapq.heappop(heap)
            if key[0] == "__goal__":
                return self._rebuild(key, parent, start_key, walked, answer)
            if best.get(key, (math.inf, math.inf)) < (g, walked):
                continue
            expansions += 1
            if expansions > max_expansions:
                return None
            node = key[0]
            if self.dist(self.city.xy(node)) < self.r:
                self._push_goal(heap, counter, parent, key, g + 1, walked, (), 0)
                continue
            for mv in self.graph.moves(key):
                seg = mv.segment
                if seg is not None:
                    if self.dist(seg.centre) - seg.reach_m < self.r:
                        for lo, hi in _disc_intervals(seg, self.city, self.goal, self.r):
                            seq = _fewest_steps(max(lo, 1e-6), hi, self.mags)
                            if seq is not None:
                                acts = mv.prefix + tuple(ArenaAction(ActionKind.W, m) for m in seq)
                                self._push_goal(heap, counter, parent, key, g + len(acts) + 1,
                                                walked + sum(self._mag_m[m] for m in seq), acts, mv.choices)
                                break
                    n_w = max(1, math.ceil(seg.length_m / self.big - 1e-9))
                    acts = mv.prefix + (ArenaAction(ActionKind.W, self.graph.big_mag),) * n_w
                    self._relax(heap, counter, best, parent, key, mv.next_key, g + len(acts), walked + seg.length_m,
                                acts, mv.choices, 0)
                else:
                    self._relax(heap, counter, best, parent, key, mv.next_key, g + len(mv.prefix), walked, mv.prefix,
                                0, mv.reversals)
        return None

    def _relax(self, heap, counter, best, parent, key, nkey, g, walked, acts, choices, reversals) -> None:
        if (g, walked) < best.get(nkey, (math.inf, math.inf)):
            best[nkey] = (g, walked)
            parent[nkey] = (key, acts, choices, reversals)
            heapq.heappush(heap, (g + self.h(nkey[0]), g, walked, next(counter), nkey))

    def _push_goal(self, heap, counter, parent, key, g, walked, acts, choices) -> None:
        gkey = ("__goal__", next(counter))
        parent[gkey] = (key, acts, choices, 0)
        heapq.heappush(heap, (g, g, walked, next(counter), gkey))

    def _rebuild(self, gkey, parent, start_key, walked, answer) -> ArenaPlan:
        chain = []
        k = gkey
        while k != start_key:
            prev, acts, choices, reversals = parent[k]
            chain.append((acts, choices, reversals))
            k = prev
        chain.reverse()
        actions: list[ArenaAction] = []
        for acts, _, _ in chain:
            actions += acts
        actions.append(ArenaAction(ActionKind.ANSWER, answer=answer))
        return ArenaPlan(tuple(actions), walked, sum(c[1] for c in chain), sum(c[2] for c in chain),
                         (math.nan, math.nan), math.nan)


def simulate(motion: TrajectoryMotion, start: TrajState, actions: Sequence[ArenaAction]) -> list[TrajState]:
    """States after each action (start first), by the motion rules alone (ANSWER/PARSE_ERROR change nothing)."""
    c = motion.config
    states = [start]
    s = start
    for a in actions:
        if a.kind == ActionKind.W:
            s = motion.walk(s, c.move_m[a.magnitude.value] if a.magnitude is not None else c.move_default_m).state
        elif a.kind in (ActionKind.A, ActionKind.D, ActionKind.Q, ActionKind.E):
            deg = c.turn_deg[a.magnitude.value] if a.magnitude is not None else c.turn_default_deg
            s = motion.look(s, a.kind.value, deg)
        elif a.kind == ActionKind.S:
            s = motion.reset_view(s)
        elif a.kind in (ActionKind.LEFT, ActionKind.RIGHT, ActionKind.UP):
            out = motion.choose(s, a.kind.value)
            if out.invalid:
                raise ValueError(f"planned branch key {a.kind.value} is invalid at {s}")
            s = out.state
        states.append(s)
    return states


def plan_to_goal(motion: TrajectoryMotion, start: TrajState, goal_xy: tuple[float, float], radius_m: float, *,
                 margin_m: float = DEFAULT_MARGIN_M, answer: str = "I have arrived.",
                 max_expansions: int = 200_000) -> ArenaPlan | None:
    """Fewest-step legal plan that ends strictly within ``radius_m - margin_m`` of ``goal_xy`` with ANSWER.

    Args:
        motion: the episode's motion rules (the env's :class:`TrajectoryMotion`).
        start: the start state, free at a node (an ``S`` first resets a camera that does
            not look along the travel direction).
        goal_xy: goal position, local metres (x east, y north).
        radius_m: success radius, metres (coordinate_match is strict ``<``).
        margin_m: metres kept inside the radius.
        answer: the ANSWER text.
    Returns: an :class:`ArenaPlan` (its final position checked by re-simulation),
        or ``None`` when no legal plan exists within ``max_expansions`` stop states.
    Algorithm: module docstring.
    """
    planner = _Planner(motion, goal_xy, radius_m, margin_m)
    prefix: list[ArenaAction] = []
    s0 = start
    if start.yaw_deg != start.travel_deg or start.pitch_deg != 0.0:
        prefix = [ArenaAction(ActionKind.S)]  # camera back to the travel direction, pitch level
        s0 = motion.reset_view(start)
    plan = planner.plan(s0, answer, max_expansions=max_expansions)
    if plan is None:
        return None
    actions = prefix + list(plan.actions)
    final = simulate(motion, start, actions)[-1]
    xy = motion.position_xy(final)
    d = math.hypot(xy[0] - goal_xy[0], xy[1] - goal_xy[1])
    if not d < radius_m:
        raise AssertionError(f"arena plan ends {d:.2f} m from the goal (radius {radius_m} m): planner bug")
    return ArenaPlan(tuple(actions), plan.walked_m, plan.branch_choices, plan.reversals, xy, d)


def start_state(city: City, task: Task) -> TrajState:
    """The state :meth:`ArenaEnv.reset` starts ``task`` in (same heading rule: the task's start
    heading, else the node's ``heading_deg``, else its first out-edge azimuth, else 0)."""
    node = task.start.node
    heading = task.start.heading_deg
    if heading is None:
        heading = city.node(node).get("heading_deg")
    if heading is None:
        outs = city.out_edges(node)
        heading = outs[0][1]["azimuth_deg"] if outs else 0.0
    h = wrap_deg(float(heading))
    return TrajState(node, None, 0.0, h, h, 0.0)


class ArenaOracleAgent(Agent):
    """Privileged oracle for ``cityarena`` tasks (module docstring). Returns :class:`ArenaAction` values.

    Parameters: ``margin_m`` (metres kept inside the success radius, default 0.5).
    ``stats``: ``planned_steps``, ``branch_choices``, ``reversals``,
    ``walked_m``, ``no_legal_path``, ``diverged``.
    """

    name = "arena-oracle"
    privileged = True
    #: the env this agent acts in (``ArenaEnv``), for callers that check
    action_style = "arena"

    def __init__(self, margin_m: float = DEFAULT_MARGIN_M, **params: Any):
        super().__init__(margin_m=margin_m, **params)
        self.margin_m = float(margin_m)
        self._queue: list[ArenaAction] = []
        self._motion: TrajectoryMotion | None = None
        self._expected: list[TrajState] = []

    def reset(self, task: Task, context: AgentContext) -> None:
        motion = context.motion
        if not isinstance(motion, TrajectoryMotion):
            raise TypeError("arena-oracle acts in the arena (ArenaEnv); its context needs the TrajectoryMotion")
        self._motion = motion
        self.stats = {"planned_steps": 0, "branch_choices": 0, "reversals": 0, "walked_m": 0.0,
                      "no_legal_path": False, "diverged": False}
        metric = CityArenaFamily.metric(task)
        start = start_state(context.city, task)
        if metric != COORDINATE_MATCH:
            self._queue = [ArenaAction(ActionKind.ANSWER, answer=str(task.answer))]
            self._expected = [start, start]
            self.stats["planned_steps"] = 1
            return
        goal = CityArenaFamily.goal_xy_m(task, context.city)
        radius = CityArenaFamily.radius_m(task, context.protocol_id)
        plan = plan_to_goal(motion, start, goal, radius, margin_m=self.margin_m) if goal is not None else None
        if plan is None:
            self.stats["no_legal_path"] = True
            self._queue = [ArenaAction(ActionKind.ANSWER, answer="")]
            self._expected = [start, start]
            return
        self._queue = list(plan.actions)
        self._expected = simulate(motion, start, plan.actions)
        self.stats.update(planned_steps=plan.steps, branch_choices=plan.branch_choices, reversals=plan.reversals,
                          walked_m=round(plan.walked_m, 3))

    def act(self, observation: dict[str, Any]) -> ArenaAction:  # type: ignore[override]
        if not self._queue:
            return ArenaAction(ActionKind.ANSWER, answer="")
        return self._queue.pop(0)

    def record_outcome(self, info: dict[str, Any]) -> None:
        """Check the env's pose against the plan; on a divergence answer at once (``stats["diverged"]``)."""
        step = int((info.get("counters") or {}).get("steps", 0))
        pose = info.get("pose") or {}
        if self._motion is None or step >= len(self._expected) or "x_m" not in pose:
            return
        x, y = self._motion.position_xy(self._expected[step])
        if math.hypot(x - pose["x_m"], y - pose["y_m"]) > 1e-6:
            self.stats["diverged"] = True
            self._queue = [ArenaAction(ActionKind.ANSWER, answer="")]


@dataclass
class Verification:
    """Oracle outcome of one task under one protocol.

    Attributes: ``solved`` (ended with ANSWER and validated correct; for
    fuzzy_match without a judge, the offline string match), ``steps`` (requests
    consumed), ``status`` (stop reason), ``distance_m`` (final distance to the
    goal for location tasks), ``max_steps`` (the limit it ran under).
    """

    protocol: str
    solved: bool
    steps: int
    status: str
    max_steps: int
    distance_m: float | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"protocol": self.protocol, "solved": self.solved, "steps": self.steps, "status": self.status,
                "max_steps": self.max_steps, "distance_m": self.distance_m}


def verify_arena_task(city: City, task: Task, protocols: Sequence[str] = ("cityarena-v1", "urbanarena-v1"),
                      max_steps: int | None = None) -> list[Verification]:
    """Run the arena oracle on ``task`` through the real env (no images) under each protocol.

    Args:
        max_steps: step limit (default: the family's, 50).
    Returns: one :class:`Verification` per protocol.
    """
    from urbanarena.agents.vlm.arena_loop import run_arena_episode

    fam = CityArenaFamily()
    limit = int(max_steps if max_steps is not None else fam.default_max_steps)
    out = []
    for pid in protocols:
        validator = fam.make_validator(task, city, pid)
        res = run_arena_episode(city, ArenaOracleAgent(), task, seed=0, protocol_id=pid, max_steps=limit,
                                validator=validator)
        val = res.get("validation") or {}
        if res.get("validation_available"):
            solved = bool(res.get("scored_success"))
        else:  # fuzzy_match without a judge: the offline normalised string match
            solved = res.get("stop_reason") == "ANSWER" and val.get("offline_score") == 1.0
        gd = res.get("goal_distance_m") or {}
        out.append(Verification(pid, solved, int(res["steps"]), str(res["stop_reason"]), limit,
                                gd.get("euclidean") if isinstance(gd.get("euclidean"), float) else None,
                                {"agent_stats": res.get("agent_stats")}))
    return out




class ArenaOracleSolver:
    """The oracle as the task generator's solver (``urbanarena.tasks.generators.suite``).

    Args:
        city: the city tasks are generated on.
        protocols: arena protocols every navigation task must be solvable under.
        max_steps: the step limit (default: the ``cityarena`` family's, 50).
    """

    def __init__(self, city: City, protocols: Sequence[str] = ("cityarena-v1", "urbanarena-v1"),
                 max_steps: int | None = None):
        from urbanarena.env.stop_rules import arena_config_for

        self.city = city
        self.protocols = tuple(protocols)
        self.max_steps = int(max_steps if max_steps is not None else CityArenaFamily.default_max_steps)
        self._motions = {pid: TrajectoryMotion(city, arena_config_for(pid).motion) for pid in self.protocols}

    def plan_steps(self, task: Task) -> int | None:
        """The most requests the oracle's plan needs over the protocols (``None``: no legal plan)."""
        goal = CityArenaFamily.goal_xy_m(task, self.city)
        if goal is None:
            return None
        worst = 0
        for pid, motion in self._motions.items():
            plan = plan_to_goal(motion, start_state(self.city, task), goal, CityArenaFamily.radius_m(task, pid))
            if plan is None:
                return None
            worst = max(worst, plan.steps)
        return worst

    def verify(self, task: Task) -> list[dict[str, Any]]:
        """:func:`verify_arena_task` under every protocol, as dicts."""
        return [v.to_dict() for v in verify_arena_task(self.city, task, self.protocols, self.max_steps)]


__all__ = ["ArenaOracleAgent", "ArenaOracleSolver", "ArenaPlan", "MoveGraph", "Verification", "move_graph",
           "plan_to_goal", "simulate", "start_state", "verify_arena_task"]
