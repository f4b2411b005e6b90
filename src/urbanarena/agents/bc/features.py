"""Model inputs of the behaviour-cloning policy, from an env observation (numpy only, no torch).

``map_navigation`` (``Arena-v1``, ``observation="map"``): images = the current-location map and the
reference start/goal map stacked as 6 channels ``(6, H, W)`` in [0, 1] (``H = W = map_px``, 96);
vector (66 floats) = per branch key LEFT / RIGHT / UP ``[shown, sin, cos of the branch's compass
bearing, sin, cos of its turn]`` (15), one-hot of the last two executed actions over
:data:`urbanarena.gym.arena.ACTIONS` (2 x 25) and ``step / step_limit`` (1). The action mask is
``observation["action_mask"]``.

``urbanground`` (``Continuous-v1``, ``observation="map"``, ``action="discrete"``): images = the map-mode
image (zeros in first-person mode) ``(3, H, W)``; vector = ``[mode, sin, cos of the camera yaw,
step / step_limit]`` plus one-hot of the last two macros; mask the macro mask.

A blind policy gets the same vector and zero images (the same model without images).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

FEATURE_SETS = ("map_navigation", "urbanground")


def _angle(deg: float) -> tuple[float, float]:
    r = math.radians(float(deg))
    return math.sin(r), math.cos(r)


def _one_hot(idx: int, n: int) -> np.ndarray:
    v = np.zeros(n, np.float32)
    if 0 <= idx < n:
        v[idx] = 1.0
    return v


def featurize(kind: str, obs: dict[str, Any], step_limit: int, last_actions: tuple[int, int] = (-1, -1)
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(images (C, H, W) float32, vector float32, mask int8)`` of an encoded observation (module docstring).

    Raises: ``ValueError`` for an unknown ``kind``.
    """
    if kind == "map_navigation":
        from urbanarena.gym.arena import ACTIONS

        img = np.concatenate([obs["map"], obs["reference"]], axis=2).transpose(2, 0, 1).astype(np.float32) / 255.0
        vec = []
        for i in range(3):
            shown = float(obs["action_mask"][len(ACTIONS) - 4 + i])  # LEFT, RIGHT, UP precede ANSWER
            vec += [shown, *_angle(obs["arrows_bearing_deg"][i]), *_angle(obs["arrows_turn_deg"][i])]
        recent = [int(v) for v in obs["recent_actions"]][-2:]
        parts = [np.asarray(vec, np.float32), _one_hot(recent[0], len(ACTIONS)), _one_hot(recent[1], len(ACTIONS)),
                 np.asarray([float(obs["step"]) / float(step_limit)], np.float32)]
        return img, np.concatenate(parts), np.asarray(obs["action_mask"], np.int8)
    if kind == "urbanground":
        from urbanarena.gym.continuous import MACROS

        img = np.asarray(obs["map"]).transpose(2, 0, 1).astype(np.float32) / 255.0
        yaw = float(obs["state"][2])
        parts = [np.asarray([float(obs["mode"]), *_angle(yaw), float(obs["step"]) / float(step_limit)], np.float32),
                 _one_hot(last_actions[0], len(MACROS)), _one_hot(last_actions[1], len(MACROS))]
        return img, np.concatenate(parts), np.asarray(obs["action_mask"], np.int8)
    raise ValueError(f"unknown feature set {kind!r}; one of {', '.join(FEATURE_SETS)}")


__all__ = ["FEATURE_SETS", "featurize"]
