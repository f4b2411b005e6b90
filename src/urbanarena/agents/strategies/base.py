"""Shared pieces of the navigation strategies (:mod:`urbanarena.agents.strategies`).

* :class:`Step` / :class:`Walk` — the current round as the agent lived it: every env step (the
  agent's decisions and the moves a backtracking strategy made for it), the nodes visited in order
  and the travel headings observed on arrival. Built from the observations alone.
* :class:`RoundState` — what a strategy may look at during one act (task, city, motion model,
  walk, job memory, round number); privileged strategies read the goal from it.
* :class:`Strategy` — the interface: an id (``B1``), the information it uses (``uses``), whether
  that information is privileged (ground truth the agent could not observe), what it needs from
  the agent (``needs``: ``"confidence"``, ``"text"``) and its parameters.
* :func:`walk_back_plan` — the legal actions that walk back to an earlier node along edges
  already walked this round (each is an env step: the revert costs the steps it takes).
* agent capabilities: :func:`reports_confidence` / :func:`step_confidence` (the confidence of
  the agent's last choice, in [0, 1]), :func:`reads_text` / :func:`text_channel` (how a
  strategy's text reaches the agent's prompt) and :func:`sees_images` / :func:`image_channel`
  (how a strategy's images, M1's route map, reach it).

Text channel. An agent reads strategy text when it has a ``set_strategy_context(text)`` method
(called before each ``act`` with the text, ``""`` when there is none), or when it is the
CitySeeker VLM agent (:class:`~urbanarena.agents.vlm.cityseeker.CitySeekerVLMAgent`): its
``question`` (the ``Request:`` line of both its prompts) is extended for that act with a blank
line and the text, then restored. Confidence: an agent reports it with a ``reports_confidence =
True`` attribute and a ``last_confidence`` attribute (``None`` when its last act had none); the
CitySeeker VLM agent reports the ``score`` of its choice reply (its trace record of the step).

Image channel. An agent sees strategy images when it has a ``set_strategy_images(images)``
method (the CitySeeker VLM agent has one): it is called before each ``act`` with
``[(label, RGB uint8 (H, W, 3))]`` (``[]`` when there is none) and shows them in that act's prompt.
"""

from __future__ import annotations

import math
from abc import ABC
from collections import Counter, deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterator

from urbanarena.env.graph_env import STOP
from urbanarena.env.motion.base import MotionModel, NavState
from urbanarena.errors import UrbanArenaError

#: what a strategy may need from the agent
NEEDS_CONFIDENCE = "confidence"
NEEDS_TEXT = "text"
NEEDS_IMAGES = "images"
#: step kinds
AGENT_STEP, REVERT_STEP = "agent", "revert"


class StrategyError(UrbanArenaError, ValueError):
    """A bad ``--strategy`` spec, or a strategy the agent cannot use (the message names both)."""


@dataclass
class Step:
    """One env step of a round.

    Attributes:
        index: env step number (0-based: the number of actions taken before it).
        node: node where the action was taken.
        action: the action (choice index, :data:`~urbanarena.env.graph_env.STOP`, or an
            invalid index such as ``-2``).
        kind: ``"agent"`` (the agent's decision) or ``"revert"`` (a backtracking strategy
            walking back).
        heading_deg: compass heading of the chosen choice (degrees from north), ``None`` for
            STOP, an invalid index or a choice without heading.
        confidence: the agent's confidence in this decision, [0, 1], when it reports one.
        next_node: node the step led to (the node itself after an invalid action or a turn in
            place); ``None`` for STOP and while the next observation has not arrived.
        arrival_heading_deg: travel heading observed after the step, degrees.
    """

    index: int
    node: str
    action: int
    kind: str
    heading_deg: float | None = None
    confidence: float | None = None
    next_node: str | None = None
    arrival_heading_deg: float | None = None

    @property
    def moved(self) -> bool:
        return self.next_node is not None and self.next_node != self.node


class Walk:
    """The current round as observed: ``path`` (node of every observation, start first; one per
    act, so an invalid action repeats the node), ``headings`` (travel heading of each, degrees)
    and ``steps`` (:class:`Step`, one per act)."""

    def __init__(self) -> None:
        self.path: list[str] = []
        self.headings: list[float] = []
        self.steps: list[Step] = []

    def observe(self, observation: dict[str, Any]) -> None:
        """Record the observation an act starts from (closes the previous step)."""
        node = str(observation["node"])
        heading = float(observation.get("heading_deg") or 0.0)
        if self.steps and self.steps[-1].next_node is None and self.steps[-1].action != STOP:
            self.steps[-1].next_node = node
            self.steps[-1].arrival_heading_deg = heading
        self.path.append(node)
        self.headings.append(heading)

    @property
    def node(self) -> str:
        return self.path[-1]

    @property
    def heading_deg(self) -> float:
        return self.headings[-1]

    def moves(self) -> list[Step]:
        """Steps that moved to another node, in order."""
        return [s for s in self.steps if s.moved]

    def visits(self) -> Counter:
        """``{node: arrivals}``: occurrences in the path with consecutive repeats (stays) merged."""
        out: Counter = Counter()
        prev = None
        for n in self.path:
            if n != prev:
                out[n] += 1
            prev = n
        return out

    def first_visit_order(self) -> list[str]:
        return list(dict.fromkeys(self.path))


@dataclass
class RoundState:
    """What strategies may read during one act (privileged ones: ``goal_node``; the others only
    the walk, the memory and the observation).

    Attributes:
        task: the task. city: the city. motion: the protocol's motion model.
        protocol_id: protocol id. per_stage: the protocol scores two-stop tasks per stage.
        walk: the current round. memory: the job memory
            (:class:`~urbanarena.agents.strategies.memory.JobMemory`).
        round: round number, 1-based. observation: the current observation.
    """

    task: Any
    city: Any
    motion: MotionModel
    protocol_id: str
    per_stage: bool
    walk: Walk
    memory: Any
    round: int = 1
    observation: dict[str, Any] = field(default_factory=dict)

    def goal_node(self) -> str | None:
        """The goal the agent is heading for now (privileged): under per-stage scoring the first
        stage goal not yet reached in order along the walk, else the final goal."""
        goals = [g.node for g in self.task.goals if g.node is not None]
        if not goals:
            return None
        if not self.per_stage:
            return goals[-1]
        stage = 0
        for n in self.walk.path:
            if stage < len(goals) - 1 and n == goals[stage]:
                stage += 1
        return goals[stage]

    def label(self, node: str) -> str:
        """The place label of ``node`` (``P0`` = start; see the job memory)."""
        return self.memory.label(node)


class Strategy(ABC):
    """A navigation strategy (module docstring).

    Class attributes:
        id: short id (``B1``). title: one line. family: ``backtracking``, ``cognitive_map``,
            ``memory``.
        uses: the information the strategy uses, one phrase each (recorded with every run).
        privileged: whether any of it is ground truth the agent could not observe.
        needs: capabilities the agent must have (:data:`NEEDS_CONFIDENCE`, :data:`NEEDS_TEXT`,
            :data:`NEEDS_IMAGES`).
        defaults: parameters and their defaults.
    Raises:
        StrategyError: unknown parameter or a bad value.
    """

    id: ClassVar[str] = ""
    title: ClassVar[str] = ""
    family: ClassVar[str] = ""
    uses: ClassVar[tuple[str, ...]] = ()
    privileged: ClassVar[bool] = False
    needs: ClassVar[frozenset[str]] = frozenset()
    defaults: ClassVar[dict[str, Any]] = {}

    def __init__(self, **params: Any):
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            known = ", ".join(self.defaults) or "none"
            raise StrategyError(f"strategy {self.id}: unknown parameter(s) {', '.join(unknown)} (known: {known})")
        self.params = {**self.defaults, **params}
        self.validate()
        self.firings = 0
        self.texts = 0
        self.images = 0

    def validate(self) -> None:
        """Check ``self.params`` (raise :class:`StrategyError`)."""

    def describe(self) -> dict[str, Any]:
        """``{id, title, family, params, uses, privileged, needs}`` (JSON-able; enters the config hash)."""
        return {"id": self.id, "title": self.title, "family": self.family, "params": dict(self.params),
                "uses": list(self.uses), "privileged": bool(self.privileged), "needs": sorted(self.needs)}

    def reset(self, state: RoundState) -> None:
        """Start a round."""
        self.firings = 0
        self.texts = 0
        self.images = 0

    def context_text(self, state: RoundState) -> str | None:
        """Text for the agent before its decision at ``state.walk.node`` (``None``: none)."""
        return None

    def context_images(self, state: RoundState) -> list[tuple[str, Any]] | None:
        """Images ``[(label, RGB uint8 (H, W, 3))]`` for the agent before its decision (``None``: none)."""
        return None


def _positive_int(strategy: Strategy, key: str) -> None:
    v = strategy.params[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise StrategyError(f"strategy {strategy.id}: {key} must be an integer >= 1, got {v!r}")


def _positive_float(strategy: Strategy, key: str, upper: float | None = None) -> None:
    v = strategy.params[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0 or (
            upper is not None and v > upper):
        rng = f"in (0, {upper}]" if upper is not None else "> 0"
        raise StrategyError(f"strategy {strategy.id}: {key} must be a number {rng}, got {v!r}")
    strategy.params[key] = float(v)


# ----------------------------------------------------------------- walking back
@dataclass(frozen=True)
class PlannedAction:
    """One action of a revert: take ``action`` at ``before`` (node); it leads to ``after``."""

    action: int
    before: str
    after: str


def walk_back_plan(motion: MotionModel, state: NavState, target: str, walk: Walk) -> list[PlannedAction] | None:
    """The fewest legal actions from ``state`` to ``target`` along edges walked this round.

    Only edges the walk moved along, in either direction, are used (the agent retraces its own
    steps; no map knowledge); each hop is made with the protocol's actions
    (:func:`urbanarena.agents.oracle.hop_actions`: turns in place first where the protocol needs
    them), so an edge whose reverse the protocol cannot take is not used. Breadth-first over
    motion states, neighbours in order of first traversal.

    Returns: the actions (``[]`` when already at ``target``), or ``None`` when no such way back
    exists.
    """
    from urbanarena.agents.oracle import hop_actions

    if state.node == target:
        return []
    adj: dict[str, list[str]] = {}
    for s in walk.moves():
        for a, b in ((s.node, s.next_node), (s.next_node, s.node)):
            lst = adj.setdefault(a, [])  # type: ignore[arg-type]
            if b not in lst:
                lst.append(b)  # type: ignore[arg-type]
    seen = {state.node}
    queue: deque[tuple[NavState, list[PlannedAction]]] = deque([(state, [])])
    while queue:
        st, plan = queue.popleft()
        for nb in adj.get(st.node, []):
            if nb in seen:
                continue
            hop = hop_actions(motion, st, nb)
            if hop is None:
                continue
            acts, arrived = hop
            steps = [PlannedAction(a, st.node, st.node) for a in acts[:-1]] + [PlannedAction(acts[-1], st.node, nb)]
            if nb == target:
                return plan + steps
            seen.add(nb)
            queue.append((arrived, plan + steps))
    return None


# ----------------------------------------------------------------- agent capabilities
def _is_cityseeker_vlm(agent: Any) -> bool:
    from urbanarena.agents.vlm.cityseeker import CitySeekerVLMAgent

    return isinstance(agent, CitySeekerVLMAgent)


def reports_confidence(agent: Any) -> bool:
    """Whether ``agent`` reports a confidence per decision (module docstring)."""
    return bool(getattr(agent, "reports_confidence", False)) or _is_cityseeker_vlm(agent)


def step_confidence(agent: Any) -> float | None:
    """Confidence of the agent's last decision, [0, 1], or ``None`` when it gave none (a stop,
    an unusable reply, an agent that reports none)."""
    if getattr(agent, "reports_confidence", False):
        v = getattr(agent, "last_confidence", None)
    elif _is_cityseeker_vlm(agent):
        trace = (getattr(agent, "stats", None) or {}).get("trace") or []
        v = trace[-1].get("score") if trace else None
    else:
        return None
    if v is None or isinstance(v, bool):
        return None
    v = float(v)
    return min(1.0, max(0.0, v)) if math.isfinite(v) else None


def reads_text(agent: Any) -> bool:
    """Whether strategy text reaches ``agent`` (module docstring)."""
    return callable(getattr(agent, "set_strategy_context", None)) or _is_cityseeker_vlm(agent)


@contextmanager
def text_channel(agent: Any, text: str) -> Iterator[None]:
    """Give ``text`` to ``agent`` for one act (module docstring); restores the agent afterwards."""
    setter = getattr(agent, "set_strategy_context", None)
    if callable(setter):
        setter(text)
        yield
        return
    if text and _is_cityseeker_vlm(agent):
        base = agent.question
        agent.question = f"{base}\n\n{text}"
        try:
            yield
        finally:
            agent.question = base
        return
    yield


def sees_images(agent: Any) -> bool:
    """Whether strategy images reach ``agent`` (module docstring: a ``set_strategy_images`` method)."""
    return callable(getattr(agent, "set_strategy_images", None))


def image_channel(agent: Any, images: list[tuple[str, Any]]) -> None:
    """Give ``images`` to ``agent`` for its next act (module docstring); nothing for an agent without the channel."""
    setter = getattr(agent, "set_strategy_images", None)
    if callable(setter):
        setter(list(images))


# ----------------------------------------------------------------- text helpers
def fmt_deg(v: float) -> str:
    """A heading as text: ``90 deg`` (rounded to whole degrees, 360 -> 0)."""
    return f"{int(round(float(v))) % 360} deg"


def side_of(bearing_deg: float, forward_deg: float) -> str:
    """``ahead`` / ``right`` / ``behind`` / ``left``: the 90-degree sector of a bearing relative to
    the travel direction (sectors centred on each; boundaries go to ahead/behind)."""
    rel = (float(bearing_deg) - float(forward_deg) + 540.0) % 360.0 - 180.0
    if abs(rel) <= 45.0:
        return "ahead"
    if abs(rel) >= 135.0:
        return "behind"
    return "right" if rel > 0 else "left"


def bearing_deg(dx_m: float, dy_m: float) -> float:
    """Compass bearing of the vector (east ``dx_m``, north ``dy_m``), degrees clockwise from
    north in [0, 360)."""
    b = math.degrees(math.atan2(dx_m, dy_m)) % 360.0
    return 0.0 if b >= 360.0 else b  # a tiny negative angle wraps to 360.0 in floating point


__all__ = ["AGENT_STEP", "NEEDS_CONFIDENCE", "NEEDS_IMAGES", "NEEDS_TEXT", "PlannedAction", "REVERT_STEP", "RoundState", "Step",
           "Strategy", "StrategyError", "Walk", "bearing_deg", "fmt_deg", "reads_text", "reports_confidence",
           "sees_images", "side_of", "step_confidence", "text_channel", "image_channel", "walk_back_plan"]
