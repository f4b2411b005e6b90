"""Task-family interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from urbanarena.errors import UrbanArenaError
from urbanarena.tasks.schema import Task
from urbanarena.world.city import City


@dataclass
class Trajectory:
    """What an episode did, as the scorer sees it.

    Attributes:
        path: node ids after each action, starting with the start node
            (``len(path) == number of non-STOP actions + 1``; turning in
            place repeats a node).
        actions: action indices taken (``-1`` = STOP, ``-2`` = unparseable).
        stop_reason: ``"stop"``, ``"max_steps"``, ...
        invalid_actions: count of invalid actions.
    """

    path: list[str]
    actions: list[int] = field(default_factory=list)
    stop_reason: str | None = None
    invalid_actions: int = 0

    @property
    def steps(self) -> int:
        """Number of actions taken (STOP included)."""
        return len(self.actions)


class TaskFamily(ABC):
    """One task family: how its tasks become env episodes and how they are scored.

    Class attributes:
        name: family id used in task files (``Task.family``).
        action_style: ``"heading"`` or ``"turn"`` (see ``env.protocols``).
        default_protocol: protocol id used when the user gives none.
        default_max_steps: step limit used when the user gives none.
        foreign_format: the ``KIND`` of ``--tasks KIND:PATH`` this family
            imports, or ``None``.
    """

    name: str = ""
    action_style: str = "heading"
    default_protocol: str = "urbanarena-graph-v1"
    default_max_steps: int = 50
    foreign_format: str | None = None

    @property
    def needs_goal_node(self) -> bool:
        """Whether every task needs a goal with a node: graph navigation (``heading``/``turn``) is scored by
        reaching it, so a task without one could only ever fail. Arena and continuous families check their
        goals per task kind in their own ``check_task``."""
        return self.action_style in ("heading", "turn")

    def env_options(self, task: Task) -> dict[str, Any]:
        """Options for ``GraphNavEnv.reset``: start node/heading, goal nodes, instruction."""
        return {
            "start_node": task.start.node,
            "start_heading_deg": task.start.heading_deg,
            "goal_nodes": [g.node for g in task.goals if g.node is not None],
            "instruction": task.instruction,
        }

    def load_foreign(self, path: Path, city: City) -> list[Task]:
        """Import tasks from the family's foreign format (``--tasks KIND:PATH``)."""
        raise UrbanArenaError(f"task family {self.name!r} has no foreign task format")

    @abstractmethod
    def score(self, task: Task, city: City, protocol_id: str, traj: Trajectory) -> dict[str, float | None]:
        """Per-episode metrics keyed as :data:`urbanarena.tasks.metrics.METRIC_KEYS`
        (``None`` where a metric does not apply). Rates are 0/1 here; the
        summary turns them into percent."""
