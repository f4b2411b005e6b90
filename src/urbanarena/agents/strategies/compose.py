"""Compose strategies around a graph agent: ``--strategy B1,R3`` -> :class:`StrategyAgent`.

Spec grammar: strategy ids separated by commas, each optionally with parameters in parentheses,
values as JSON numbers: ``B1``, ``B1(k=4,theta=0.7),R2(radius_m=30),R3``. At most one
backtracking strategy (B1, B2, B3); each id at most once. Order does not matter: the texts and
images are given in the canonical order of :data:`STRATEGIES` and the canonical spec
(:func:`canonical_spec`) is what configs record.

======  ======================================  ===========  ============================
id      strategy                                privileged   needs from the agent
======  ======================================  ===========  ============================
B1      confidence backtracking                 no           confidence per decision
B2      step-reward backtracking                yes          nothing (any graph agent)
B3      B1 + shortest-path hint                 yes          confidence, reads text
C1      topology cognitive graph                no           reads text
C2      relative-position map                   no           reads text
R1      topology retrieval, earlier rounds      no           reads text
R2      spatial retrieval, earlier rounds       no           reads text
R3      recent-trajectory window                no           reads text
M1      route map (map ablation)                yes          looks at images in its prompt
======  ======================================  ===========  ============================

Each strategy's module says what information it uses (:mod:`.backtracking`,
:mod:`.cognitive_map`, :mod:`.memory`, :mod:`.route_map`); ``describe()`` of each is recorded in the run's config
and in every stored row (``details.strategies``), together with ``details.privileged``.

How the wrapper acts (one env step per ``act``): it records the observation in the round's walk;
if a revert is under way it plays the next planned move back; otherwise a backtracking strategy
may fire and start a revert (see :mod:`.backtracking`); otherwise it gathers the texts of the
strategies and passes them to the agent through the text channel
(:func:`~urbanarena.agents.strategies.base.text_channel`), and their images through the image
channel (:func:`~urbanarena.agents.strategies.base.image_channel`), asks the agent, and records the
decision with its confidence. Everything the strategies did is in ``stats["strategy"]``:
``used`` (descriptions), ``privileged``, ``events`` (each firing: step, node, target, reason,
the triggering numbers, the revert's cost in steps and its outcome), ``texts`` (how many texts
each strategy gave), ``images`` (how many images each gave; only strategies that give images)
and ``hints`` (B3).
"""

from __future__ import annotations

import json
import operator
import re
from typing import Any, Callable

from urbanarena.agents.base import Agent, AgentContext
from urbanarena.agents.strategies.backtracking import (
    Backtracking, ConfidenceBacktracking, HintedBacktracking, Revert, StepRewardBacktracking,
)
from urbanarena.agents.strategies.base import (
    AGENT_STEP, NEEDS_CONFIDENCE, NEEDS_IMAGES, NEEDS_TEXT, REVERT_STEP, PlannedAction, RoundState, Step, Strategy,
    StrategyError, Walk, image_channel, reads_text, reports_confidence, sees_images, step_confidence, text_channel,
    walk_back_plan,
)
from urbanarena.agents.strategies.cognitive_map import RelativePositionMap, TopologyMap
from urbanarena.agents.strategies.memory import (
    JobMemory, RecentTrajectory, SpatialRetrieval, StrategyContext, TopologyRetrieval,
)
from urbanarena.agents.strategies.route_map import RouteMap
from urbanarena.env.graph_env import STOP
from urbanarena.env.motion.base import NavState
from urbanarena.env.protocols import get_protocol
from urbanarena.tasks.schema import Task

#: every strategy by id, in canonical order
STRATEGIES: dict[str, type[Strategy]] = {
    cls.id: cls for cls in (ConfidenceBacktracking, StepRewardBacktracking, HintedBacktracking, TopologyMap,
                            RelativePositionMap, TopologyRetrieval, SpatialRetrieval, RecentTrajectory, RouteMap)
}
_ITEM = re.compile(r"^\s*([A-Za-z][A-Za-z0-9]*)\s*(?:\((.*)\))?\s*$", re.S)
_NEED_WORDS = {NEEDS_CONFIDENCE: "reports a confidence score per decision", NEEDS_TEXT: "reads text in its prompt",
               NEEDS_IMAGES: "looks at images in its prompt"}


def _split_top(spec: str) -> list[str]:
    items, depth, cur = [], 0, ""
    for ch in spec:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise StrategyError(f"--strategy {spec!r}: unbalanced ')'")
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    if depth:
        raise StrategyError(f"--strategy {spec!r}: unbalanced '('")
    return items + [cur]


def parse_strategies(spec: str | None) -> list[Strategy]:
    """The strategies of a spec (module docstring), in canonical order; ``[]`` for ``None``/empty.

    Raises:
        StrategyError: unknown id, bad parameter or value, a repeated id, two backtracking strategies.
    """
    if spec is None or not str(spec).strip():
        return []
    out: dict[str, Strategy] = {}
    for item in _split_top(str(spec)):
        if not item.strip():
            raise StrategyError(f"--strategy {spec!r}: empty item")
        m = _ITEM.match(item)
        if m is None:
            raise StrategyError(f"--strategy {spec!r}: cannot read {item.strip()!r} (expected ID or ID(key=value,...))")
        sid = m.group(1).upper()
        cls = STRATEGIES.get(sid)
        if cls is None:
            raise StrategyError(f"--strategy: unknown strategy {m.group(1)!r}; known: {', '.join(STRATEGIES)}")
        if sid in out:
            raise StrategyError(f"--strategy {spec!r}: {sid} given twice")
        params: dict[str, Any] = {}
        for kv in (m.group(2) or "").split(","):
            if not kv.strip():
                continue
            k, sep, v = kv.partition("=")
            if not sep or not k.strip():
                raise StrategyError(f"--strategy: {sid} parameter {kv.strip()!r} is not key=value")
            try:
                params[k.strip()] = json.loads(v.strip())
            except json.JSONDecodeError:
                raise StrategyError(f"--strategy: {sid} parameter {k.strip()}={v.strip()!r} is not a number") from None
        out[sid] = cls(**params)
    back = [s.id for s in out.values() if isinstance(s, Backtracking)]
    if len(back) > 1:
        raise StrategyError(f"--strategy {spec!r}: at most one backtracking strategy ({', '.join(back)} given; "
                            "B3 already includes B1)")
    return [out[k] for k in STRATEGIES if k in out]


def canonical_spec(strategies: list[Strategy]) -> str:
    """``B1(k=3,theta=0.75),R3(n=3)``-style spec with every parameter, canonical order."""
    parts = []
    for s in strategies:
        ps = ",".join(f"{k}={json.dumps(v)}" for k, v in s.params.items())
        parts.append(f"{s.id}({ps})" if ps else s.id)
    return ",".join(parts)


def strategies_config(strategies: list[Strategy]) -> dict[str, Any] | None:
    """What run configs record (``None`` without strategies): ``{spec, items: [describe()...],
    privileged}`` (``privileged``: some strategy uses privileged information)."""
    if not strategies:
        return None
    return {"spec": canonical_spec(strategies), "items": [s.describe() for s in strategies],
            "privileged": any(s.privileged for s in strategies)}


def check_applicable(agent: Any, strategies: list[Strategy], agent_name: str | None = None) -> None:
    """Refuse strategies whose needs the agent does not meet.

    Raises:
        StrategyError: naming the strategy, the agent and what is missing.
    """
    name = agent_name or getattr(agent, "name", type(agent).__name__)
    have = {NEEDS_CONFIDENCE: reports_confidence(agent), NEEDS_TEXT: reads_text(agent),
            NEEDS_IMAGES: sees_images(agent)}
    for s in strategies:
        missing = [n for n in sorted(s.needs) if not have[n]]
        if missing:
            raise StrategyError(
                f"strategy {s.id} ({s.title}) needs an agent that {' and '.join(_NEED_WORDS[n] for n in missing)}; "
                f"agent {name!r} does not (B1, B3, the text strategies C1, C2, R1, R2, R3 and the route map M1 apply "
                "to vlm-cityseeker; B2 applies to every graph agent)")


class StrategyAgent(Agent):
    """A graph agent wrapped with strategies (module docstring).

    Args:
        inner: the agent.
        strategies: parsed strategies (:func:`parse_strategies`), or a spec string.
    Raises:
        StrategyError: a bad spec, or a strategy the agent cannot use (:func:`check_applicable`).
    """

    def __init__(self, inner: Agent, strategies: list[Strategy] | str):
        self.inner = inner
        self.strategies = parse_strategies(strategies) if isinstance(strategies, str) else list(strategies)
        check_applicable(inner, self.strategies)
        self.name = getattr(inner, "name", type(inner).__name__)
        self.privileged = bool(getattr(inner, "privileged", False)) or any(s.privileged for s in self.strategies)
        self.params = getattr(inner, "params", {})
        backs = [s for s in self.strategies if isinstance(s, Backtracking)]
        self.backtracking: Backtracking | None = backs[0] if backs else None
        self._record: dict[str, Any] = self._fresh_record()

    # ------------------------------------------------------------ Agent plumbing
    @property
    def stats(self) -> dict[str, Any]:  # type: ignore[override]
        return {**(getattr(self.inner, "stats", None) or {}), "strategy": self._record}

    @stats.setter
    def stats(self, value: dict[str, Any]) -> None:
        self.inner.stats = value

    def config(self) -> dict[str, Any]:
        return {**self.inner.config(), "strategies": canonical_spec(self.strategies)}

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()

    def _fresh_record(self) -> dict[str, Any]:
        return {"used": [s.describe() for s in self.strategies], "privileged": self.privileged,
                "round": 1, "events": [], "texts": {}, "hints": []}

    # ------------------------------------------------------------ episode
    def reset(self, task: Task, context: AgentContext) -> None:
        self.inner.reset(task, context)
        memory = getattr(context, "memory", None)
        if memory is None:
            memory = JobMemory(context.city, task_id=task.task_id, seed=context.seed, agent=self.name)
        self.round = int(getattr(context, "round", 1) or 1)
        self.memory = memory
        self.walk = Walk()
        self.state = RoundState(task=task, city=context.city, motion=context.motion, protocol_id=context.protocol_id,
                                per_stage=get_protocol(context.protocol_id).per_stage_scoring, walk=self.walk,
                                memory=memory, round=self.round)
        memory.label(task.start.node)
        for s in self.strategies:
            s.reset(self.state)
        self._plan: list[PlannedAction] = []
        self._revert: tuple[Revert, dict[str, Any]] | None = None
        self._record = self._fresh_record()
        self._record["round"] = self.round

    def act(self, observation: dict[str, Any]) -> int:
        self.walk.observe(observation)
        self.state.observation = observation
        node = self.walk.node
        self.memory.label(node)
        index = int(observation.get("step", len(self.walk.steps)))

        if self._revert is not None:
            action = self._continue_revert(node)
            if action is not None:
                self._take(index, node, action, REVERT_STEP, None, observation)
                return action
        if self.backtracking is not None:
            rev = self.backtracking.check(self.state)
            if rev is not None:
                action = self._start_revert(rev, index, node)
                if action is not None:
                    self._take(index, node, action, REVERT_STEP, None, observation)
                    return action

        texts = [t for t in (s.context_text(self.state) for s in self.strategies) if t]
        images = [im for s in self.strategies for im in (s.context_images(self.state) or [])]
        for s in self.strategies:
            self._record["texts"][s.id] = s.texts
            if s.images:
                self._record.setdefault("images", {})[s.id] = s.images
        hints = getattr(self.backtracking, "hints", None)
        if hints is not None:
            self._record["hints"] = list(hints)
        image_channel(self.inner, images)
        with text_channel(self.inner, "\n\n".join(texts)):
            action = self.inner.act(observation)
        conf = step_confidence(self.inner) if action != STOP else None
        step = self._take(index, node, action, AGENT_STEP, conf, observation)
        if self.backtracking is not None:
            self.backtracking.on_decision(self.state, step)
        return action

    # ------------------------------------------------------------ reverts
    def _take(self, index: int, node: str, action: Any, kind: str, conf: float | None,
              obs: dict[str, Any]) -> Step:
        """Record a step of the walk (and annotate the job memory)."""
        choices = obs.get("choices") or []
        try:
            a = operator.index(action)
        except TypeError:
            a = -2
        heading = choices[a].get("heading_deg") if 0 <= a < len(choices) else None
        step = Step(index=index, node=node, action=a, kind=kind, heading_deg=None if heading is None else float(heading),
                    confidence=conf)
        self.walk.steps.append(step)
        self.memory.note_step(self.round, index, kind, conf)
        return step

    def _start_revert(self, rev: Revert, index: int, node: str) -> int | None:
        event: dict[str, Any] = {"strategy": self.backtracking.id, "step": index, "at": node,  # type: ignore[union-attr]
                                 "target": rev.target, "reason": rev.reason, **rev.facts}
        self._record["events"].append(event)
        assert self.backtracking is not None
        if rev.target is None:
            event.update(outcome="no_target", cost_steps=0)
            self.backtracking.fired(self.state, rev)
            return None
        plan = walk_back_plan(self.state.motion, NavState(node, self.walk.heading_deg), rev.target, self.walk)
        self.backtracking.fired(self.state, rev)
        if plan is None:
            event.update(outcome="no_way_back", cost_steps=0)
            return None
        if not plan:
            event.update(outcome="already_there", cost_steps=0)
            self.backtracking.after_revert(self.state, rev)
            return None
        event.update(outcome="walking_back", cost_steps=len(plan), plan=[p.after for p in plan])
        self._plan = plan
        self._revert = (rev, event)
        return self._continue_revert(node)

    def _continue_revert(self, node: str) -> int | None:
        """The next move back, or ``None`` when the revert is over (arrived, or off plan)."""
        assert self._revert is not None
        rev, event = self._revert
        if self._plan and self._plan[0].before == node:
            return self._plan.pop(0).action
        self._revert = None
        if self._plan or node != rev.target:
            event["outcome"] = "aborted"  # the env did not move as planned (cannot happen with a pure motion model)
            self._plan = []
            return None
        event["outcome"] = "reverted"
        assert self.backtracking is not None
        self.backtracking.after_revert(self.state, rev)
        return None


def compose(agent: Agent, strategies: list[Strategy] | str | None) -> Agent:
    """``agent`` wrapped with ``strategies`` (the agent itself when there are none).

    Raises: :class:`StrategyError` (bad spec, or a strategy the agent cannot use).
    """
    parsed = parse_strategies(strategies) if isinstance(strategies, str) or strategies is None else list(strategies)
    if not parsed:
        return agent
    return StrategyAgent(agent, parsed)


def strategy_factory(factory: Callable[[], Agent], spec: str | None) -> Callable[[], Agent]:
    """A factory of fresh agents wrapped with fresh strategies parsed from ``spec`` (validated now)."""
    parse_strategies(spec)
    if not parse_strategies(spec):
        return factory
    return lambda: compose(factory(), spec)


__all__ = ["STRATEGIES", "StrategyAgent", "StrategyContext", "canonical_spec", "check_applicable", "compose",
           "parse_strategies", "strategies_config", "strategy_factory"]
