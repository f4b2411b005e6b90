"""The agent interface every policy implements (baselines, oracles, VLM agents and the behaviour-cloning policy)."""

from __future__ import annotations

import zlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from urbanarena.env.motion.base import MotionModel
from urbanarena.tasks.schema import Task
from urbanarena.world.city import City


@dataclass
class AgentContext:
    """What an agent is handed at the start of an episode.

    Attributes:
        city: the city (graph-only agents may read the node/edge attributes
            visible in observations; only privileged agents may plan on it).
        motion: the protocol's motion model (privileged agents such as the
            oracle plan with :meth:`MotionModel.transition`; they still act
            only through ``env.step``).
        seed: episode seed.
        protocol_id: protocol of the episode.
        task_id: id of the task; ``rng`` is seeded from ``(seed, crc32(task_id))``
            so each (task, seed) pair draws its own reproducible stream.
        render_settings: the run's :class:`~urbanarena.render.scene3d.render_settings.RenderSettings` for agents that
            render their own views of a rendered (OSM) city (the VLM CitySeeker agent); ``None``: the renderer's
            default (the ``flat`` style). Set by the runner from ``--render-style``.
    """

    city: City
    motion: MotionModel
    seed: int
    protocol_id: str
    task_id: str = ""
    render_settings: Any = None
    rng: np.random.Generator = field(init=False)

    def __post_init__(self):
        self.rng = np.random.default_rng([int(self.seed), zlib.crc32(self.task_id.encode())])


class Agent(ABC):
    """A policy: ``reset`` once per episode, then ``act`` once per step.

    ``act`` returns an ``int`` index into ``observation["choices"]`` or
    :data:`urbanarena.env.STOP` (``-1``). ``config()`` returns everything that
    changes the agent's behaviour; it enters the run's config hash.
    ``privileged`` is True for agents that use ground truth (oracle).
    ``stats`` counts what the agent wants stored with the episode (requests,
    tokens, parse errors ...).
    """

    name: str = "agent"
    privileged: bool = False

    def __init__(self, **params: Any):
        self.params = params
        self.stats: dict[str, Any] = {}

    def config(self) -> dict[str, Any]:
        return {"name": self.name, **self.params}

    @abstractmethod
    def reset(self, task: Task, context: AgentContext) -> None:
        """Prepare for a new episode."""

    @abstractmethod
    def act(self, observation: dict[str, Any]) -> int:
        """Choose the next action."""
