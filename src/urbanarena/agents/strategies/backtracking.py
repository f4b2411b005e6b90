"""Backtracking strategies: B1 confidence backtracking, B2 step-reward backtracking, B3 B1 + hint.

A backtracking strategy watches the round; when it *fires* at the start of an act it names a
node to go back to, and the wrapper (:class:`~urbanarena.agents.strategies.compose.StrategyAgent`)
walks there with legal actions along edges already walked this round
(:func:`~urbanarena.agents.strategies.base.walk_back_plan`). Every move back is an env step: it
counts in ``steps``, in the trajectory and against the step limit (the revert costs the steps it
takes). When no way back exists along walked edges, or the agent already stands there, nothing
moves and the event is recorded. A strategy can fire again after a revert (each firing restarts
its window), unlike CitySeeker's reference code, which disabled backtracking after its first use.

B1 — confidence backtracking (not privileged; needs the agent's confidence per decision).
    The *branch* is the agent's decisions that had a confidence, in order, with the decisions of
    abandoned branches cut out. At the start of an act, when the branch holds at least ``k``
    decisions made since the last revert and the mean confidence of the last ``k`` is below
    ``theta``, B1 reverts to the node of the most recent decision on the branch whose confidence
    was ``>= theta`` (that decision and the later ones are cut: the agent decides there again).
    Without such a decision it does not move and restarts its window. Defaults ``k = 3``,
    ``theta = 0.75`` (CitySeeker). Decisions without a confidence (unusable replies) do not count.
    When the agent reads text, the first decision after a revert gets a note (non-privileged):
    why it walked back and the heading it took from there before.
B2 — step-reward backtracking (privileged: ground-truth distance to the goal).
    ``d(n)`` is the hop distance from node ``n`` to the goal on the city graph (directed edges,
    breadth-first; unreachable = infinity); the goal is the next stage goal not yet reached under
    per-stage scoring, else the final goal. A step of the agent *rises* when
    ``d(after) >= d(before)`` (non-decreasing; staying put rises). When the last ``k`` agent
    steps since the last revert all rose, B2 reverts to the node where the first of them was
    taken. Default ``k = 3``. Needs nothing from the agent, so it runs with any graph agent
    (random, forward, straight, oracle, VLM).
B3 — B1 plus a hint (privileged: the shortest legal route to the goal).
    As B1; after a revert the agent's next decision gets a hint naming the choice (option letter
    and heading) that starts the shortest legal route from there to the goal
    (:func:`urbanarena.agents.oracle.plan_to` on the protocol's motion model). Needs the agent's
    confidence and text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from urbanarena.agents.strategies.base import (
    AGENT_STEP, NEEDS_CONFIDENCE, NEEDS_TEXT, RoundState, Step, Strategy, _positive_float, _positive_int, fmt_deg,
)
from urbanarena.env.motion.base import NavState


@dataclass
class Revert:
    """A firing: go back to ``target`` (``None``: no node to go back to) for ``reason``;
    ``facts`` are the numbers that triggered it (recorded with the event)."""

    target: str | None
    reason: str
    facts: dict[str, Any] = field(default_factory=dict)
    branch_index: int | None = None


class Backtracking(Strategy):
    """Base of the backtracking strategies (module docstring)."""

    family = "backtracking"

    def check(self, state: RoundState) -> Revert | None:
        """Whether to fire at the start of this act."""
        return None

    def fired(self, state: RoundState, revert: Revert) -> None:
        """Bookkeeping once a firing is acted on (the window restarts)."""
        self.firings += 1

    def on_decision(self, state: RoundState, step: Step) -> None:
        """Called after each decision of the agent."""

    def after_revert(self, state: RoundState, revert: Revert) -> None:
        """Called when the walk back reached the target."""


class ConfidenceBacktracking(Backtracking):
    """B1 (module docstring)."""

    id = "B1"
    title = "confidence backtracking"
    uses = ("the agent's confidence score of each decision",
            "the agent's own trajectory (walks back along edges it walked)")
    privileged = False
    needs = frozenset({NEEDS_CONFIDENCE})
    defaults = {"k": 3, "theta": 0.75}

    def validate(self) -> None:
        _positive_int(self, "k")
        _positive_float(self, "theta", upper=1.0)

    def reset(self, state: RoundState) -> None:
        super().reset(state)
        self.branch: list[tuple[int, str, float, float | None]] = []  # (step index, node, confidence, heading)
        self.window_start = 0
        self.note: str | None = None
        self._pending_note: tuple[Revert, tuple[int, str, float, float | None]] | None = None

    def on_decision(self, state: RoundState, step: Step) -> None:
        if step.kind == AGENT_STEP and step.confidence is not None:
            self.branch.append((step.index, step.node, float(step.confidence), step.heading_deg))

    def check(self, state: RoundState) -> Revert | None:
        k, theta = self.params["k"], self.params["theta"]
        recent = self.branch[self.window_start:]
        if len(recent) < k:
            return None
        window = [c for _, _, c, _ in recent[-k:]]
        mean = sum(window) / k
        if not mean < theta:
            return None
        facts = {"confidences": window, "mean": mean, "theta": theta}
        for j in range(len(self.branch) - 1, -1, -1):
            if self.branch[j][2] >= theta:
                facts["target_step"] = self.branch[j][0]
                facts["target_confidence"] = self.branch[j][2]
                return Revert(self.branch[j][1], "low confidence", facts, branch_index=j)
        return Revert(None, "low confidence, no confident node", facts)

    def fired(self, state: RoundState, revert: Revert) -> None:
        super().fired(state, revert)
        if revert.branch_index is not None:
            before = self.branch[revert.branch_index]
            self.branch = self.branch[:revert.branch_index]
            self._pending_note = (revert, before)
        else:
            self._pending_note = None
        self.window_start = len(self.branch)

    def after_revert(self, state: RoundState, revert: Revert) -> None:
        pending = self._pending_note
        if pending is None:
            return
        rev, (_, node, conf, heading) = pending
        went = f" Last time here you went {fmt_deg(heading)} (confidence {conf:.2f})." if heading is not None else ""
        self.note = (f"[Backtracking] You walked back to this place ({state.label(node)}) because your last "
                     f"{self.params['k']} choices had low confidence (mean {rev.facts['mean']:.2f}, below "
                     f"{self.params['theta']:.2f}).{went}")

    def context_text(self, state: RoundState) -> str | None:
        note, self.note = self.note, None
        if note:
            self.texts += 1
        return note


class StepRewardBacktracking(Backtracking):
    """B2 (module docstring)."""

    id = "B2"
    title = "step-reward backtracking"
    uses = ("ground-truth hop distance from each visited node to the goal on the city graph",
            "the agent's own trajectory (walks back along edges it walked)")
    privileged = True
    needs = frozenset()
    defaults = {"k": 3}

    def validate(self) -> None:
        _positive_int(self, "k")

    def reset(self, state: RoundState) -> None:
        super().reset(state)
        self.start = 0

    @staticmethod
    def hop_distance(state: RoundState, node: str) -> float:
        """Hop distance from ``node`` to the current goal (infinity when unreachable or no goal)."""
        goal = state.goal_node()
        if goal is None or goal not in state.city:
            return math.inf
        return float(state.city.distances_to(goal, weight=None).get(node, math.inf))

    def check(self, state: RoundState) -> Revert | None:
        k = self.params["k"]
        steps = [s for s in state.walk.steps[self.start:] if s.kind == AGENT_STEP and s.next_node is not None]
        if len(steps) < k:
            return None
        last = steps[-k:]
        hops = [self.hop_distance(state, last[0].node)] + [self.hop_distance(state, s.next_node) for s in last]
        if not all(b >= a for a, b in zip(hops, hops[1:])):
            return None
        facts = {"hops": [h if math.isfinite(h) else None for h in hops], "goal": state.goal_node(),
                 "target_step": last[0].index}
        return Revert(last[0].node, "hop distance to the goal did not decrease", facts)

    def fired(self, state: RoundState, revert: Revert) -> None:
        super().fired(state, revert)
        self.start = len(state.walk.steps)


class HintedBacktracking(ConfidenceBacktracking):
    """B3 (module docstring)."""

    id = "B3"
    title = "confidence backtracking with a shortest-path hint"
    uses = ConfidenceBacktracking.uses + ("ground-truth shortest legal route from the revert node to the goal",)
    privileged = True
    needs = frozenset({NEEDS_CONFIDENCE, NEEDS_TEXT})

    def reset(self, state: RoundState) -> None:
        super().reset(state)
        self.hint_pending = False
        self.hints: list[dict[str, Any]] = []

    def after_revert(self, state: RoundState, revert: Revert) -> None:
        super().after_revert(state, revert)
        self.hint_pending = True

    def hint(self, state: RoundState) -> dict[str, Any] | None:
        """The choice starting the shortest legal route to the goal from here: ``{index, option,
        heading_deg, goal}``, or ``None`` when there is no route (or the agent is at the goal)."""
        from urbanarena.agents.oracle import plan_to
        from urbanarena.render.overlays import letter_labels

        goal = state.goal_node()
        obs = state.observation
        choices = list(obs.get("choices") or [])
        if goal is None or not choices or len(choices) > 26:
            return None
        plan = plan_to(state.motion, NavState(str(obs["node"]), float(obs["heading_deg"])), goal)
        if not plan:
            return None
        i = plan[0]
        h = choices[i].get("heading_deg")
        return {"index": i, "option": letter_labels(len(choices))[i], "heading_deg": h, "label": choices[i].get("label"),
                "goal": goal}

    def context_text(self, state: RoundState) -> str | None:
        note = super().context_text(state)
        if not self.hint_pending:
            return note
        self.hint_pending = False
        h = self.hint(state)
        self.hints.append({"step": int(state.observation.get("step", 0)), **(h or {"index": None})})
        if h is None:
            return note
        where = fmt_deg(h["heading_deg"]) if h["heading_deg"] is not None else str(h["label"])
        text = (f"[Hint] From here, the shortest way to the destination starts with option {h['option']} "
                f"(heading {where}).")
        self.texts += 1
        return f"{note}\n{text}" if note else text


__all__ = ["Backtracking", "ConfidenceBacktracking", "HintedBacktracking", "Revert", "StepRewardBacktracking"]
