"""Baseline policies: random, forward, straight.

All act only on the observation (no privileged information).
"""

from __future__ import annotations

from typing import Any

from urbanarena.agents.base import Agent, AgentContext
from urbanarena.env.graph_env import STOP
from urbanarena.tasks.schema import Task
from urbanarena.world.geo import angle_diff_deg


class RandomAgent(Agent):
    """Uniformly random choice among the offered actions, never STOP (CitySeeker's
    "Random Choice" baseline). With ``stop_prob > 0`` it stops with that
    probability at each step instead. Seeded per (task, seed) via the context rng.

    At a node that offers no choice at all the only legal action is STOP.
    """

    name = "random"

    def __init__(self, stop_prob: float = 0.0):
        super().__init__(stop_prob=float(stop_prob))
        self.stop_prob = float(stop_prob)

    def reset(self, task: Task, context: AgentContext) -> None:
        self.rng = context.rng

    def act(self, observation: dict[str, Any]) -> int:
        n = len(observation["choices"])
        if n == 0:
            return STOP
        if self.stop_prob > 0 and self.rng.random() < self.stop_prob:
            return STOP
        return int(self.rng.integers(n))


class ForwardAgent(Agent):
    """Always the first offered choice (CitySeeker's "Forward Direction" baseline:
    ``walkable_headings[0]`` as listed under ``cityseeker-v1``). Never stops."""

    name = "forward"

    def reset(self, task: Task, context: AgentContext) -> None:
        pass

    def act(self, observation: dict[str, Any]) -> int:
        return 0 if observation["choices"] else STOP


class StraightAgent(Agent):
    """Keep going straight: the heading choice nearest (circular difference) to the
    current travel direction ``observation["heading_deg"]``; for turn-style
    protocols the ``FORWARD`` choice. Never stops. Ties go to the first listed."""

    name = "straight"

    def reset(self, task: Task, context: AgentContext) -> None:
        pass

    def act(self, observation: dict[str, Any]) -> int:
        choices = observation["choices"]
        if not choices:
            return STOP
        headed = [(i, c["heading_deg"]) for i, c in enumerate(choices) if c.get("heading_deg") is not None]
        if headed:
            cur = observation["heading_deg"]
            return min(headed, key=lambda t: (angle_diff_deg(t[1], cur), t[0]))[0]
        for i, c in enumerate(choices):
            if c["label"].upper() == "FORWARD":
                return i
        return 0
