"""Gymnasium environment for node-to-node navigation on a city pose graph.

The env knows nothing about task families: ``reset`` takes the start pose and
goal nodes as plain values (the ``tasks`` layer builds them from a Task).

Actions: an ``int`` index into ``observation["choices"]``, or :data:`STOP`
(``-1``). An index outside the offered range is an *invalid action*: the agent
stays where it is, the step is consumed, ``info["invalid_action"]`` is True and
the episode's invalid-action counter grows (never silently mapped to another
action).
"""

from __future__ import annotations

import operator
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from urbanarena.env.motion.base import MotionModel, NavState
from urbanarena.world.city import City

STOP = -1
MAX_CHOICES = 64


class GraphNavEnv(gym.Env):
    """Navigation on a :class:`City` graph under one motion model (protocol).

    Observation (dict):
        ``node`` (str), ``heading_deg`` (float, degrees from north),
        ``choices`` (list of ``{"label", "heading_deg"}``), ``instruction``
        (str), ``step`` (int, actions taken so far).
    ``info`` (dict): ``node``, ``heading_deg``, ``step``, ``goal_dist_m``
        (straight-line metres from the current node to the final goal, or
        ``None``), ``invalid_action`` (bool), ``invalid_actions`` (count),
        ``stop_reason`` (``"stop"`` on STOP, else ``None``; wrappers set others).

    Reward is always 0.0: scoring is done by the task family's scorer on the
    finished trajectory.
    """

    metadata = {"render_modes": []}

    def __init__(self, city: City, motion: MotionModel):
        super().__init__()
        self.city = city
        self.motion = motion
        self.action_space = spaces.Discrete(MAX_CHOICES + 1, start=-1)
        self.observation_space = spaces.Dict(
            {
                "node": spaces.Text(256),
                "heading_deg": spaces.Box(0.0, 360.0, shape=(), dtype=float),
            }
        )
        self.state: NavState | None = None
        self.goal_nodes: list[str] = []
        self.instruction = ""
        self.path: list[str] = []
        self.headings: list[float] = []
        self.actions: list[int] = []
        self.invalid_actions = 0
        self.done = False

    @property
    def protocol_id(self) -> str:
        return self.motion.protocol_id

    # ---------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode.

        Args:
            options: ``start_node`` (required), ``start_heading_deg`` (default:
                the node's panorama heading, else 0), ``goal_nodes`` (list,
                final goal last), ``instruction`` (str).
        Raises:
            ValueError: missing or unknown start node.
        """
        super().reset(seed=seed)
        options = options or {}
        start = options.get("start_node")
        if start is None or start not in self.city:
            raise ValueError(f"reset needs a start_node in the city, got {start!r}")
        heading = options.get("start_heading_deg")
        if heading is None:
            heading = self.city.node(start).get("heading_deg") or 0.0
        self.state = self.motion.start_state(start, float(heading))
        self.goal_nodes = list(options.get("goal_nodes") or [])
        self.instruction = str(options.get("instruction") or "")
        self.path = [self.state.node]
        self.headings = [self.state.heading_deg]
        self.actions = []
        self.invalid_actions = 0
        self.done = False
        return self._obs(), self._info(False, None)

    def step(self, action: int):
        if self.state is None or self.done:
            raise RuntimeError("step() called before reset() or after the episode ended")
        invalid = False
        stop_reason = None
        terminated = False
        choices = self.motion.choices(self.state)
        try:
            a = None if isinstance(action, bool) else operator.index(action)
        except TypeError:
            a = None
        if a == STOP:
            terminated = True
            stop_reason = "stop"
        elif a is not None and 0 <= a < len(choices):
            self.state = self.motion.transition(self.state, a)
        else:
            invalid = True
            self.invalid_actions += 1
        self.actions.append(a if a is not None else -2)
        if not terminated:
            self.path.append(self.state.node)
            self.headings.append(self.state.heading_deg)
        self.done = terminated
        return self._obs(), 0.0, terminated, False, self._info(invalid, stop_reason)

    # --------------------------------------------------------------- helpers
    def _obs(self) -> dict[str, Any]:
        assert self.state is not None
        return {
            "node": self.state.node,
            "heading_deg": self.state.heading_deg,
            "choices": [{"label": c.label, "heading_deg": c.heading_deg} for c in self.motion.choices(self.state)],
            "instruction": self.instruction,
            "step": len(self.actions),
        }

    def _info(self, invalid: bool, stop_reason: str | None) -> dict[str, Any]:
        assert self.state is not None
        goal = self.goal_nodes[-1] if self.goal_nodes else None
        return {
            "node": self.state.node,
            "heading_deg": self.state.heading_deg,
            "step": len(self.actions),
            "goal_dist_m": self.city.distance_m(self.state.node, goal) if goal in self.city else None,
            "invalid_action": invalid,
            "invalid_actions": self.invalid_actions,
            "stop_reason": stop_reason,
        }
