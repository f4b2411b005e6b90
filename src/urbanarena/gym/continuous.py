"""``urbanarena/Continuous-v1``: UrbanGround ladder tasks in continuous first-person mode (Gymnasium).

``gymnasium.make("urbanarena/Continuous-v1", city="helsinki", split="train", family="l2_short_range",
observation="text", action="json")`` wraps :class:`~urbanarena.env.continuous.ContinuousEnv` around
tasks of one UrbanGround sub-family (:data:`urbanarena.tasks.families.urbanground.SUBFAMILIES`) drawn
from the split's city (:class:`urbanarena.gym.common.TaskSource`), under ``urbanground-v1`` with the
family's step limit (100).

Action (``action``):

* ``json`` (default): ``Text(512)``, one UrbanGround action as JSON text (``{"action": "move", "dir":
  "forward", "seconds": 2}``; ``docs/continuous.md``), exactly what a model replies. Text that is not a
  JSON object is executed as ``parse_error`` (nothing happens, the step is consumed and counted).
* ``discrete`` (ours): ``Discrete(len(MACROS))``, an index into :data:`MACROS` (0-10: walk forward 1 / 2 s,
  turn -90 / -45 / -15 / +15 / +45 / +90 degrees, open and close the map, terminate; 11: sprint forward
  2 s, appended later so the first eleven keep their indices).
  ``observation["action_mask"]`` is 1 for the macros of the current mode (first person: walk, sprint, turn,
  open_map, terminate; map: close_map, terminate).

Observation (``Dict``):

* ``text``: ``Text(4096)``, the task text; ``mode``: ``Discrete(2)`` (0 first person, 1 map);
* ``state``: ``Box((5,), float64)``, UrbanGround's ``/state`` numbers ``[lat, lon, yaw_deg, pitch_deg,
  time_s]`` (the text state the VLM agent reads);
* ``step``: ``Box(0, max_steps, (), int64)``; ``action_mask``: ``Box(0, 1, (len(MACROS),), int8)``;
* with ``rgb`` / ``rgb+map``: ``view``, ``Box(0, 255, (H, W, 3), uint8)`` first-person render (the
  runner's 640 x 360, 90 degrees, resized to ``image_size``; zeros in map mode);
* with ``map`` / ``rgb+map``: ``map``, the map-mode image (zeros in first-person mode), at ``map_size``.

Reward (``reward``):

* ``sparse``: on the last step the episode's ``sr`` from the family's scorer
  (:meth:`~urbanarena.tasks.families.urbanground.UrbanGroundFamily.score_env_episode`: within 15 m of
  the goal, no restricted zone or active closure entered; ``choice`` tasks: the answer is right),
  0 before. ``info["score"]`` holds every metric, as ``urbanarena run`` stores them.
* ``shaped`` (ours): sparse plus, per step, the straight-line metres to the goal gained divided by
  ``progress_scale_m`` (10 m), minus ``step_cost`` (0.01), minus ``collision_cost`` (0.05) for a move
  blocked by an obstacle or pedestrian.

Episode end: by the task's :class:`~urbanarena.env.continuous.ending.EpisodeEnd`
(:meth:`~urbanarena.tasks.families.urbanground.UrbanGroundFamily.episode_end`), the rules ``urbanarena run``
ends its continuous episodes by, so the same actions end at the same step with the same
``info["stop_reason"]``: terminated on ``terminate``, on ``closure_violation`` and when the task's
exploration window has passed in simulated time (``time_window``: L1 active exploration, 60 s; no answer);
truncated after ``max_steps`` steps (``max_steps``).
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from urbanarena.gym.common import (
    CHARSET, MAX_TEXT, OBSERVATIONS, REWARDS, GymConfigError, ImageTaskEnv, discrete_action, check_choice, encode_text, fit_image,
    init_task_source, progress_reward, text_action,
)
from urbanarena.tasks.schema import Task
from urbanarena.world.city import City

#: the discrete macro actions (``action="discrete"``), UrbanGround JSON
MACROS: tuple[dict[str, Any], ...] = (
    {"action": "move", "dir": "forward", "seconds": 1.0},
    {"action": "move", "dir": "forward", "seconds": 2.0},
    *({"action": "look", "yaw": float(y), "pitch": 0.0} for y in (-90, -45, -15, 15, 45, 90)),
    {"action": "open_map"},
    {"action": "close_map"},
    {"action": "terminate"},
    # appended after the first eleven (their indices are kept): sprint 2 s (6 m; the l2_constrained bc policy)
    {"action": "sprint", "dir": "forward", "seconds": 2.0},
)
_MAP_MACROS = frozenset({"close_map", "terminate"})
ACTION_KINDS = ("json", "discrete")
#: bounds of ``state`` ``[lat, lon, yaw_deg, pitch_deg, time_s]`` (time: at most 10^7 simulated seconds)
STATE_LOW = (-90.0, -180.0, 0.0, -90.0, 0.0)
STATE_HIGH = (90.0, 180.0, 360.0, 90.0, 1e7)
MAX_ACTION_TEXT = 512
VIEW_PX = (640, 360)


def macro_mask(mode: str) -> np.ndarray:
    """Per :data:`MACROS` entry 1 when it belongs to ``mode`` (``first_person`` or ``map``)."""
    in_map = mode == "map"
    return np.array([int((m["action"] in _MAP_MACROS) if in_map else m["action"] != "close_map") for m in MACROS],
                    np.int8)


def encode_continuous_observation(raw: dict[str, Any], observation: str, image_size: tuple[int, int],
                                  map_size: tuple[int, int], max_steps: int) -> dict[str, Any]:
    """The ``Continuous-v1`` observation (module docstring) of a ``ContinuousEnv`` observation ``raw``."""
    text = raw.get("text") or {}
    st = text.get("state") or {}
    out: dict[str, Any] = {
        "text": encode_text(text.get("task", ""))[0],
        "mode": int(raw.get("mode") == "map"),
        "state": np.array([float(st.get(k) or 0.0) for k in ("lat", "lon", "yaw_deg", "pitch_deg", "time_s")],
                          np.float64),
        "step": np.asarray(min(int(raw.get("step", 0)), int(max_steps)), dtype=np.int64),
        "action_mask": macro_mask(str(raw.get("mode"))),
    }
    if "rgb" in observation:
        out["view"] = fit_image(raw.get("view"), image_size)
    if "map" in observation:
        out["map"] = fit_image(raw.get("map"), map_size)
    return out


class ContinuousTaskEnv(ImageTaskEnv, gym.Env):
    """Registered as ``urbanarena/Continuous-v1`` (module docstring).

    Args:
        city, split, tasks, n_tasks, task_seed: as ``Arena-v1`` (:class:`~urbanarena.gym.arena.ArenaTaskEnv`).
        family: an UrbanGround sub-family (``l2_short_range`` ...).
        observation: ``text``, ``rgb``, ``map`` or ``rgb+map``; action: ``json`` or ``discrete``.
        reward: ``sparse`` or ``shaped``; max_steps: default the family's (100).
    Raises:
        GymConfigError: a keyword outside its values.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}
    encode = staticmethod(encode_continuous_observation)

    def __init__(self, city: str | City = "helsinki", split: str | None = "train", family: str = "l2_short_range",
                 protocol: str = "urbanground-v1", observation: str = "text", reward: str = "sparse",
                 action: str = "json", tasks: str | Sequence[Task] | None = None, n_tasks: int = 20,
                 task_seed: int = 0, max_steps: int | None = None, image_size: tuple[int, int] = (160, 90),
                 map_size: tuple[int, int] = (160, 90), progress_scale_m: float = 10.0, step_cost: float = 0.01,
                 collision_cost: float = 0.05, render_mode: str | None = None):
        super().__init__()
        from urbanarena.env.continuous import ContinuousEnv
        from urbanarena.tasks.families.urbanground import SUBFAMILIES, UrbanGroundFamily

        check_choice("family", family, tuple(SUBFAMILIES))
        check_choice("observation", observation, OBSERVATIONS)
        check_choice("reward", reward, REWARDS)
        check_choice("action", action, ACTION_KINDS)
        self.family = UrbanGroundFamily()
        self.family.check_protocol(protocol)
        self.subfamily, self.protocol_id = family, protocol
        self.observation_kind, self.reward_kind, self.action_kind = observation, reward, action
        self.render_mode = render_mode
        self.max_steps = int(max_steps if max_steps is not None else UrbanGroundFamily.default_max_steps)
        if self.max_steps < 1:
            raise GymConfigError(f"max_steps must be >= 1, got {max_steps!r}")
        self.image_size = tuple(int(v) for v in image_size)
        self.map_size = tuple(int(v) for v in map_size)
        self.progress_scale_m, self.step_cost, self.collision_cost = (float(progress_scale_m), float(step_cost),
                                                                      float(collision_cost))
        init_task_source(self, city, split, tasks, lambda t: t.category == family, mode="continuous", family=family,
                         n_tasks=n_tasks, task_seed=task_seed)
        self.env = ContinuousEnv(self.city)
        self._observers: dict[str | None, Any] = {}
        obs = {
            "text": spaces.Text(MAX_TEXT, min_length=0, charset=CHARSET),
            "mode": spaces.Discrete(2),
            "state": spaces.Box(np.array(STATE_LOW), np.array(STATE_HIGH), dtype=np.float64),
            "step": spaces.Box(0, self.max_steps, shape=(), dtype=np.int64),
            "action_mask": spaces.Box(0, 1, shape=(len(MACROS),), dtype=np.int8),
        }
        if "rgb" in observation:
            obs["view"] = spaces.Box(0, 255, shape=(self.image_size[1], self.image_size[0], 3), dtype=np.uint8)
        if "map" in observation:
            obs["map"] = spaces.Box(0, 255, shape=(self.map_size[1], self.map_size[0], 3), dtype=np.uint8)
        self.observation_space = spaces.Dict(obs)
        self.action_space = (spaces.Text(MAX_ACTION_TEXT, min_length=0, charset=CHARSET) if action == "json"
                             else spaces.Discrete(len(MACROS)))

    def _generate(self, city: City, out) -> None:
        from urbanarena.tasks.generators.urbanground import generate_urbanground_suite, save_urbanground_suite

        save_urbanground_suite(generate_urbanground_suite(city, per_family=self._n_gen, seed=self._seed_gen,
                                                          subfamilies=(self.subfamily,)), out)

    def observer(self, condition: str | None):
        if condition not in self._observers:
            from urbanarena.env.continuous import SceneViewObserver

            self._observers[condition] = SceneViewObserver(self.city, width=VIEW_PX[0], height=VIEW_PX[1],
                                                           condition=condition)
        return self._observers[condition]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Draw a task (``options``: ``task`` or ``task_id`` picks one) and start its episode."""
        super().reset(seed=seed)
        task = self.source.pick(self.np_random, options)
        self.task = task
        spec = (task.extra or {}).get("dynamics")
        dyn = None
        if spec:
            from urbanarena.env.continuous.dynamics import DynamicWorld

            dyn = DynamicWorld.from_spec(self.city, spec, self.env.network)
        self.env.observer = (self.observer(dyn.spec.condition if dyn is not None else None)
                             if "rgb" in self.observation_kind else None)
        opts = self.family.env_options(task, self.city)
        opts["dynamics"] = dyn
        raw, info = self.env.reset(seed=seed, options=opts)
        self.ends = self.family.episode_end(task, self.max_steps)
        self._done = False
        self.score = None
        self._dist = self.env.goal_distance_m()
        return self._obs(raw), self._info(info)

    def decode_action(self, action) -> dict[str, Any]:
        """The UrbanGround action dict a gym action stands for (module docstring)."""
        if self.action_kind == "discrete":
            return dict(MACROS[discrete_action(action, len(MACROS), "urbanarena/Continuous-v1")])
        text_action(action, MAX_ACTION_TEXT, "urbanarena/Continuous-v1 (action='json')")
        try:
            d = json.loads(action)
        except ValueError as e:
            return {"action": "parse_error", "error": f"not JSON: {e}"}
        except RecursionError:  # unreachable within MAX_ACTION_TEXT characters; kept as a second guard
            return {"action": "parse_error", "error": "not JSON: nested too deeply"}
        if not isinstance(d, dict):
            return {"action": "parse_error", "error": f"not a JSON object: {type(d).__name__}"}
        return d

    def step(self, action):
        if self._done or self.task is None:
            raise RuntimeError("step() called before reset() or after the episode ended")
        act = self.decode_action(action)
        raw, _, _, _, info = self.env.step(act)
        reason = self.ends.after_step(self.env, info)  # the runner's rule (module docstring)
        if reason is not None:
            info = dict(info, stop_reason=reason)
        truncated = self.ends.truncated(reason)
        terminated = reason is not None and not truncated
        reward = 0.0
        if self.reward_kind == "shaped":
            d = self.env.goal_distance_m()
            reward += progress_reward(self._dist, d, self.progress_scale_m) - self.step_cost
            reward -= self.collision_cost * bool(info.get("blocked"))
            self._dist = d
        if terminated or truncated:
            self._done = True
            answer = self.ends.answer(reason, act)  # as the runner: the ending action's answer
            self.score, _, _ = self.family.score_env_episode(self.task, self.city, self.protocol_id, self.env,
                                                             answer=answer)
            reward += float(self.score.get("sr") or 0.0)
            info = dict(info, score=self.score)
        out = self._info(info)
        return self._obs(raw), reward, bool(terminated), bool(truncated), out





__all__ = ["ACTION_KINDS", "ContinuousTaskEnv", "MACROS", "encode_continuous_observation", "macro_mask"]
