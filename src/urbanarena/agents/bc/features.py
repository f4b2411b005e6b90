"""Model inputs of the behaviour-cloning policy, from what the VLM agent is given (numpy + OpenCV, no torch).

``map_navigation`` (:class:`MapNavFeaturizer`, one per episode): the ``ArenaEnv`` observation the runner
and ``Arena-v1`` share (``map``: the current-location map, ``reference_images[0]``: the start/goal map,
``arrows``, ``recent_actions``, ``step``). The maps are read by :mod:`urbanarena.agents.bc.mapread`
(the goal relative to the agent in metres and the agent's heading); the vector (:data:`N_MAP_NAV`
floats) is

* goal, from the images (zeros when the maps cannot be read, always for the blind ablation): ``[read,
  d / 100, min(d, 40) / 20, cos, sin of the goal's bearing relative to the heading, the metres of goal
  distance gained by the last step / 7]`` with ``d`` the goal distance in metres;
* per branch key LEFT / RIGHT / UP: from the images ``[cos, sin of the branch's bearing relative to the
  goal's bearing]``, and from the arrows ``[shown, sin, cos of the branch's compass bearing, sin, cos of
  its turn]`` (7 x 3);
* one-hot of the last two executed actions over :data:`urbanarena.gym.arena.ACTIONS` (2 x 25) and
  ``step / step_limit``.

The action mask is :func:`urbanarena.gym.arena.action_mask` (branch keys only while their arrow shows).
The blind ablation is the same featurizer and network with every image replaced by zeros, so it keeps
the arrows, the recent actions and the step and loses the goal.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from urbanarena.agents.bc.mapread import GoalTracker

FEATURE_SETS = ("map_navigation",)
#: metres of the largest arena step (W LARGE), the scale of the progress feature
STEP_M = 7.0


def _angle(deg: float) -> tuple[float, float]:
    r = math.radians(float(deg))
    return math.sin(r), math.cos(r)


def _one_hot(idx: int, n: int) -> np.ndarray:
    v = np.zeros(n, np.float32)
    if 0 <= idx < n:
        v[idx] = 1.0
    return v


def _zeros_like(img):
    return None if img is None else np.zeros_like(np.asarray(img))


class MapNavFeaturizer:
    """``(vector float32, mask int8)`` per step of a map-navigation episode (module docstring).

    Args: ``step_limit`` (the protocol's, 50), ``blind`` (images replaced by zeros).
    Call :meth:`reset` at each episode's start (the goal tracker and the last distance are per episode).
    """

    def __init__(self, step_limit: int, blind: bool = False):
        self.step_limit = int(step_limit)
        self.blind = bool(blind)
        self.reset()

    def reset(self) -> None:
        self.tracker = GoalTracker()
        self._last_d: float | None = None

    def goal(self, raw: dict[str, Any]) -> tuple[float, float, float] | None:
        """``(east_m, north_m, heading_deg)`` of the goal relative to the agent, or ``None``."""
        loc = raw.get("map")
        refs = raw.get("reference_images") or []
        ref = refs[0] if refs else None
        if self.blind:
            loc, ref = _zeros_like(loc), _zeros_like(ref)
        return self.tracker.update(loc, ref)

    def __call__(self, raw: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        from urbanarena.gym.arena import ACTIONS, encode_arena_observation

        obs = encode_arena_observation(raw, "text", (1, 1), (1, 1), self.step_limit)
        g = self.goal(raw)
        head = [0.0] * 6
        rel = [(0.0, 0.0)] * 3
        if g is not None:
            east, north, heading = g
            d = math.hypot(east, north)
            bearing = math.degrees(math.atan2(east, north)) if d > 1e-6 else heading
            gained = 0.0 if self._last_d is None else (self._last_d - d) / STEP_M
            self._last_d = d
            s, c = _angle(bearing - heading)
            head = [1.0, d / 100.0, min(d, 40.0) / 20.0, c, s, float(np.clip(gained, -2.0, 2.0))]
            rel = [_angle(float(obs["arrows_bearing_deg"][i]) - bearing)[::-1] for i in range(3)]  # (cos, sin)
        vec = list(head)
        for i in range(3):
            shown = float(obs["action_mask"][len(ACTIONS) - 4 + i])  # LEFT, RIGHT, UP precede ANSWER
            cr, sr = rel[i] if shown else (0.0, 0.0)
            vec += [cr, sr, shown, *_angle(obs["arrows_bearing_deg"][i]), *_angle(obs["arrows_turn_deg"][i])]
        recent = [int(v) for v in obs["recent_actions"]][-2:]
        parts = [np.asarray(vec, np.float32), _one_hot(recent[0], len(ACTIONS)), _one_hot(recent[1], len(ACTIONS)),
                 np.asarray([float(obs["step"]) / float(self.step_limit)], np.float32)]
        return np.concatenate(parts), np.asarray(obs["action_mask"], np.int8)


#: length of the map-navigation vector
N_MAP_NAV = 6 + 7 * 3 + 2 * 25 + 1


def make_featurizer(kind: str, step_limit: int, blind: bool = False):
    """The featurizer of a feature set. Raises ``ValueError`` for an unknown ``kind``."""
    if kind == "map_navigation":
        return MapNavFeaturizer(step_limit, blind)
    raise ValueError(f"unknown feature set {kind!r}; one of {', '.join(FEATURE_SETS)}")


__all__ = ["FEATURE_SETS", "MapNavFeaturizer", "N_MAP_NAV", "make_featurizer"]
