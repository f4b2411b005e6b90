"""``urbanarena/Graph-v1``: node-to-node navigation on the pose graph (CitySeeker-style tasks), Gymnasium.

``gymnasium.make("urbanarena/Graph-v1", city="helsinki", split="train")`` wraps
:class:`~urbanarena.env.graph_env.GraphNavEnv` (in its protocol's motion model, with the family's step
limit as :class:`~urbanarena.env.wrappers.StepLimit`) around tasks of a graph family drawn from the
split's city: by default the CitySeeker-style implicit-need suite generated there
(:mod:`urbanarena.tasks.generators.cityseeker_needs`, family ``cityseeker``, protocol ``cityseeker-v1``,
35 steps); ``tasks=`` takes any task file of a graph family (``cityseeker``, ``map2seq``).

Action: ``Discrete(MAX_CHOICES + 1)``: ``i < MAX_CHOICES`` takes the ``i``-th offered choice
(``GraphNavEnv`` observation ``choices``, in the protocol's order), ``MAX_CHOICES`` is STOP.
``observation["action_mask"]`` is 1 for the offered choices and STOP; an unmasked index is the env's
invalid action (counted, the agent stays).

Observation (``Dict``): ``text`` (``Text(4096)``, the instruction), ``heading_deg`` (``Box(0, 360, (),
float64)``), ``choices_heading_deg`` (``Box(-360, 720, (MAX_CHOICES,), float64)``: each offered
choice's heading as the protocol lists it, 0 past the last), ``action_mask`` (``Box(0, 1,
(MAX_CHOICES + 1,), int8)``), ``step`` (``Box(0, max_steps, (), int64)``). Only ``observation="text"``:
graph mode has no image observation here.

Reward: ``sparse``: on the last step CitySeeker's success, ``tc_proximity_50m`` of the family's scorer
(final node within 50 m of the goal; ``info["score"]`` holds all the metrics of ``urbanarena run``);
``shaped`` (ours): plus, per step, the shortest-path metres to the final goal gained divided by
``progress_scale_m`` (10 m) minus ``step_cost`` (0.01).
"""

from __future__ import annotations

from typing import Any, Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from urbanarena.env.graph_env import MAX_CHOICES, STOP, GraphNavEnv
from urbanarena.gym.common import (
    CHARSET, MAX_TEXT, REWARDS, GymConfigError, check_choice, discrete_action, encode_text, init_task_source, progress_reward,
    vector_info,
)
from urbanarena.tasks.schema import Task
from urbanarena.world.city import City

GRAPH_FAMILIES = ("cityseeker", "map2seq")
SUCCESS_KEY = "tc_proximity_50m"


def encode_graph_observation(raw: dict[str, Any], max_steps: int) -> dict[str, Any]:
    """The ``Graph-v1`` observation (module docstring) of a ``GraphNavEnv`` observation."""
    choices = raw.get("choices") or []
    heads = np.zeros(MAX_CHOICES, np.float64)
    mask = np.zeros(MAX_CHOICES + 1, np.int8)
    for i, c in enumerate(choices[:MAX_CHOICES]):
        heads[i] = float(c["heading_deg"])
        mask[i] = 1
    mask[MAX_CHOICES] = 1
    return {
        "text": encode_text(raw.get("instruction", ""))[0],
        "heading_deg": np.asarray(float(raw.get("heading_deg") or 0.0) % 360.0, dtype=np.float64),
        "choices_heading_deg": heads,
        "action_mask": mask,
        "step": np.asarray(min(int(raw.get("step", 0)), int(max_steps)), dtype=np.int64),
    }


def graph_action(action: int) -> int:
    """The ``GraphNavEnv`` action of a ``Graph-v1`` action (``MAX_CHOICES`` -> STOP).

    Raises:
        GymActionError: ``action`` is not a member of ``Discrete(MAX_CHOICES + 1)`` (a float, a bool, -1, ...).
    """
    a = discrete_action(action, MAX_CHOICES + 1, "urbanarena/Graph-v1")
    return STOP if a == MAX_CHOICES else a


def gym_graph_action(env_action: int) -> int:
    """The ``Graph-v1`` action of a stored ``GraphNavEnv`` action (STOP -> ``MAX_CHOICES``)."""
    return MAX_CHOICES if int(env_action) == STOP else int(env_action)


class GraphTaskEnv(gym.Env):
    """Registered as ``urbanarena/Graph-v1`` (module docstring).

    Args:
        city, split, tasks, n_tasks, task_seed: as ``Arena-v1``; n_tasks counts tasks per category.
        family: ``cityseeker`` (default; generated) or ``map2seq`` (give ``tasks``).
        protocol: default the family's; max_steps: default the family's.
    """

    metadata = {"render_modes": []}

    def __init__(self, city: str | City = "helsinki", split: str | None = "train", family: str = "cityseeker",
                 protocol: str | None = None, observation: str = "text", reward: str = "sparse",
                 tasks: str | Sequence[Task] | None = None, n_tasks: int = 3, task_seed: int = 0,
                 max_steps: int | None = None, progress_scale_m: float = 10.0, step_cost: float = 0.01):
        super().__init__()
        from urbanarena.env.protocols import make_motion
        from urbanarena.env.wrappers import StepLimit
        from urbanarena.tasks.families import get_family

        check_choice("family", family, GRAPH_FAMILIES)
        check_choice("observation", observation, ("text",))
        check_choice("reward", reward, REWARDS)
        self.family = get_family(family)
        self.protocol_id = protocol or self.family.default_protocol
        self.reward_kind = reward
        self.max_steps = int(max_steps if max_steps is not None else self.family.default_max_steps)
        self.progress_scale_m, self.step_cost = float(progress_scale_m), float(step_cost)
        if tasks is None and family != "cityseeker":
            raise GymConfigError(f"family={family!r}: give tasks=FILE (only cityseeker tasks are generated here)")
        init_task_source(self, city, split, tasks, lambda t: t.family == family, mode="graph", family=family,
                         n_tasks=n_tasks, task_seed=task_seed)
        self.base = GraphNavEnv(self.city, make_motion(self.protocol_id, self.city, self.family.action_style))
        self.env = StepLimit(self.base, self.max_steps)
        self.observation_space = spaces.Dict({
            "text": spaces.Text(MAX_TEXT, min_length=0, charset=CHARSET),
            "heading_deg": spaces.Box(0.0, 360.0, shape=(), dtype=np.float64),
            "choices_heading_deg": spaces.Box(-360.0, 720.0, shape=(MAX_CHOICES,), dtype=np.float64),
            "action_mask": spaces.Box(0, 1, shape=(MAX_CHOICES + 1,), dtype=np.int8),
            "step": spaces.Box(0, self.max_steps, shape=(), dtype=np.int64),
        })
        self.action_space = spaces.Discrete(MAX_CHOICES + 1)

    def _generate(self, city: City, out) -> None:
        from urbanarena.tasks.generators.cityseeker_needs import generate_needs_suite, save_needs_suite

        save_needs_suite(generate_needs_suite(city, per_category=self._n_gen, seed=self._seed_gen,
                                              split=self._split, max_steps=self.max_steps), out)

    def _goal_dist(self) -> float | None:
        goal = self.base.goal_nodes[-1] if self.base.goal_nodes else None
        if goal is None or self.base.state is None:
            return None
        return self._dists.get(self.base.state.node, float("inf"))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Draw a task (``options``: ``task`` or ``task_id`` picks one) and start its episode."""
        super().reset(seed=seed)
        self.task = self.source.pick(self.np_random, options)
        raw, info = self.env.reset(seed=seed, options=self.family.env_options(self.task))
        goal = self.base.goal_nodes[-1] if self.base.goal_nodes else None
        self._dists = self.city.distances_to(goal) if goal is not None else {}
        self._dist = self._goal_dist()
        self._done = False
        self.score = None
        self.raw_obs = raw
        self.last_info = info
        return encode_graph_observation(raw, self.max_steps), dict(vector_info(info), task_id=self.task.task_id)

    def step(self, action):
        if self._done or self.task is None:
            raise RuntimeError("step() called before reset() or after the episode ended")
        raw, _, terminated, truncated, info = self.env.step(graph_action(action))
        reward = 0.0
        if self.reward_kind == "shaped":
            d = self._goal_dist()
            reward += progress_reward(self._dist, d, self.progress_scale_m) - self.step_cost
            self._dist = d
        if terminated or truncated:
            from urbanarena.tasks.families.base import Trajectory

            self._done = True
            stop = info.get("stop_reason") or ("stop" if terminated else "max_steps")
            traj = Trajectory(path=list(self.base.path), actions=list(self.base.actions), stop_reason=stop,
                              invalid_actions=int(self.base.invalid_actions))
            self.score = self.family.score(self.task, self.city, self.protocol_id, traj)
            reward += float(self.score.get(SUCCESS_KEY) or 0.0)
            info = dict(info, score=self.score)
        self.last_info = info
        out = dict(vector_info(info), task_id=self.task.task_id)
        self.raw_obs = raw
        return encode_graph_observation(raw, self.max_steps), reward, bool(terminated), bool(truncated), out


__all__ = ["GRAPH_FAMILIES", "GraphTaskEnv", "SUCCESS_KEY", "encode_graph_observation", "graph_action",
           "gym_graph_action"]
