"""Random baseline for the arena families (``cityarena`` tasks in :class:`~urbanarena.env.arena_env.ArenaEnv`).

A chance-level reference that reads no ground truth and no pixels; every
choice is drawn from the episode's seeded stream (``AgentContext.rng``, one
per task and seed).

* Localization (``exact_match``): answers a uniformly random cell
  ``x:N y:M`` of the 5x5 grid at the first step (expected score 1/25 = 4 %).
* Counting (``mean_relative_accuracy``): answers a uniform integer in
  ``[0, max_count]`` (default 15) at the first step.
* Questions answered with a name (relational: ``fuzzy_match`` or
  ``name_match``): a random agent knows no names; it answers ``unknown``
  (scores 0 unless the reference is literally that).
* Location tasks (``coordinate_match``: landmark search, map navigation,
  VLN): a random walk. Each step it answers (stops where it stands) with
  probability ``answer_prob`` (default 1/30); otherwise, where branch arrows
  are shown, it takes one of their keys uniformly; elsewhere it walks on
  (``W``) with probability 0.9 or turns the camera ``A``/``D`` ``LARGE``
  (reversing after two same-side turns, as a person would).

Registered as ``arena-random``; ``--agent random`` on arena tasks resolves to
it (:data:`urbanarena.agents.registry.ARENA_ALIASES`).
"""

from __future__ import annotations

from typing import Any

from urbanarena.agents.base import Agent, AgentContext
from urbanarena.env.arena_env import ActionKind, ArenaAction, Magnitude
from urbanarena.tasks.families.cityarena import CityArenaFamily
from urbanarena.tasks.schema import Task
from urbanarena.tasks.validators import COORDINATE_MATCH, EXACT_MATCH, MRA


class ArenaRandomAgent(Agent):
    """Chance-level arena agent (module docstring).

    Args:
        answer_prob: per-step probability of ANSWER on location tasks, in [0, 1].
        max_count: largest count guessed on counting tasks (>= 0).
        walk_prob: probability of ``W`` where no arrows are shown, in [0, 1].
    Raises:
        ValueError: parameters out of range.
    """

    name = "arena-random"
    action_style = "arena"
    #: looks at no image: the runner builds no camera observer for it
    uses_images = False

    def __init__(self, answer_prob: float = 1 / 30, max_count: int = 15, walk_prob: float = 0.9):
        if not (0.0 <= answer_prob <= 1.0 and 0.0 <= walk_prob <= 1.0) or int(max_count) < 0:
            raise ValueError("answer_prob and walk_prob must lie in [0, 1] and max_count must be >= 0")
        super().__init__(answer_prob=float(answer_prob), max_count=int(max_count), walk_prob=float(walk_prob))
        self.answer_prob = float(answer_prob)
        self.max_count = int(max_count)
        self.walk_prob = float(walk_prob)

    def reset(self, task: Task, context: AgentContext) -> None:
        self.rng = context.rng
        self.metric = CityArenaFamily.metric(task)
        self.grid_n = int(((task.extra or {}).get("grid") or {}).get("n", 5))

    def act(self, observation: dict[str, Any]) -> ArenaAction:  # type: ignore[override]
        if self.metric == EXACT_MATCH:
            x, y = (int(v) for v in self.rng.integers(self.grid_n, size=2))
            return ArenaAction(ActionKind.ANSWER, answer=f"x:{x} y:{y}")
        if self.metric == MRA:
            return ArenaAction(ActionKind.ANSWER, answer=str(int(self.rng.integers(self.max_count + 1))))
        if self.metric != COORDINATE_MATCH:
            return ArenaAction(ActionKind.ANSWER, answer="unknown")
        if self.rng.random() < self.answer_prob:
            return ArenaAction(ActionKind.ANSWER, answer="here")
        keys = sorted({k for a in observation.get("arrows") or [] for k in a.get("keys", [])})
        if keys:
            return ArenaAction(ActionKind(keys[int(self.rng.integers(len(keys)))]))
        if self.rng.random() < self.walk_prob:
            return ArenaAction(ActionKind.W)
        return ArenaAction(ActionKind.A if self.rng.random() < 0.5 else ActionKind.D, Magnitude.LARGE)


class ArenaStraightAgent(Agent):
    """Keep going straight in the arena (the graph ``straight`` baseline's rule): ``W LARGE`` where no arrows
    are shown; where they are, the branch whose turn is smallest (ties: the first listed key); ANSWER on the
    last step before the step limit (``answer_at_step``, default 50), so its final position is scored.
    Reads no ground truth and no pixels; deterministic. Registered as ``arena-straight``; ``--agent
    straight`` on arena tasks resolves to it."""

    name = "arena-straight"
    action_style = "arena"
    uses_images = False

    def __init__(self, answer_at_step: int = 50):
        if int(answer_at_step) < 1:
            raise ValueError("answer_at_step must be >= 1")
        super().__init__(answer_at_step=int(answer_at_step))
        self.answer_at_step = int(answer_at_step)

    def reset(self, task: Task, context: AgentContext) -> None:
        pass

    def act(self, observation: dict[str, Any]) -> ArenaAction:  # type: ignore[override]
        if int(observation.get("step", 0)) + 1 >= self.answer_at_step:
            return ArenaAction(ActionKind.ANSWER, answer="here")
        arrows = [a for a in observation.get("arrows") or [] if a.get("keys")]
        if arrows:
            best = min(arrows, key=lambda a: abs(float(a.get("turn_deg", 0.0))))
            return ArenaAction(ActionKind(best["keys"][0]))
        return ArenaAction(ActionKind.W, Magnitude.LARGE)
