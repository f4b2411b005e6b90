"""Stop rules as Gymnasium wrappers."""

from __future__ import annotations

import gymnasium as gym


class StepLimit(gym.Wrapper):
    """End the episode after ``max_steps`` actions (STOP does not count as a move
    but does count as an action taken).

    When the limit is reached without STOP the step returns ``truncated=True``
    and ``info["stop_reason"] = "max_steps"``. CitySeeker's default is 35.
    """

    def __init__(self, env: gym.Env, max_steps: int):
        super().__init__(env)
        if max_steps < 0:
            raise ValueError("max_steps must be >= 0")
        self.max_steps = int(max_steps)
        self._n = 0

    def reset(self, **kwargs):
        self._n = 0
        obs, info = self.env.reset(**kwargs)
        if self.max_steps == 0:
            info = dict(info, stop_reason="max_steps", truncated_at_reset=True)
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._n += 1
        if not terminated and self._n >= self.max_steps:
            truncated = True
            info = dict(info, stop_reason="max_steps")
        return obs, reward, terminated, truncated, info
