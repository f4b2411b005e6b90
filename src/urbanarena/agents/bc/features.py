"""Model inputs of the behaviour-cloning policy, from an env observation (numpy only, no torch).

``map_navigation`` (``Arena-v1``, ``observation="map"``): images ``(9, H, W)`` in [0, 1] (``H = W =
map_px``, 64): the current-location map and the reference start/goal map resized (6 channels), then
the current-location map cropped at full resolution (640 px: ``H x W`` pixels, about 110 m) around the
agent marker (3 channels; :func:`marker_centre` finds the marker's red pixels, so the crop shows the
marker's heading triangle and the streets around it; the reference map is drawn over another extent,
so it is not cropped);
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


def marker_centre(img: np.ndarray | None) -> tuple[int, int] | None:
    """``(row, col)`` centroid of the pure-red pixels (R > 200, G and B < 80: the agent marker of the
    current-location map, ``urbanarena.render.maps.MapStyle.agent``), or ``None`` when there are none."""
    if img is None:
        return None
    a = np.asarray(img)
    hit = (a[:, :, 0] > 200) & (a[:, :, 1] < 80) & (a[:, :, 2] < 80)
    if not hit.any():
        return None
    rows, cols = np.nonzero(hit)
    return int(round(rows.mean())), int(round(cols.mean()))


def crop_at(img: np.ndarray | None, centre: tuple[int, int] | None, size: int) -> np.ndarray:
    """A ``size x size`` RGB crop of ``img`` centred at ``centre`` (zero padded; zeros without either)."""
    out = np.zeros((size, size, 3), np.uint8)
    if img is None or centre is None:
        return out
    a = np.asarray(img)[:, :, :3]
    r0, c0 = centre[0] - size // 2, centre[1] - size // 2
    rs, cs = max(0, r0), max(0, c0)
    re, ce = min(a.shape[0], r0 + size), min(a.shape[1], c0 + size)
    if rs < re and cs < ce:
        out[rs - r0:re - r0, cs - c0:ce - c0] = a[rs:re, cs:ce]
    return out


def featurize(kind: str, obs: dict[str, Any], step_limit: int, last_actions: tuple[int, int] = (-1, -1),
              raw: dict[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(images (C, H, W) float32, vector float32, mask int8)`` of an encoded observation ``obs`` and, for
    map navigation, the env's raw observation ``raw`` (full-resolution maps for the crops; module docstring).

    Raises: ``ValueError`` for an unknown ``kind``.
    """
    if kind == "map_navigation":
        from urbanarena.gym.arena import ACTIONS

        size = int(obs["map"].shape[0])
        raw = raw or {}
        crop = crop_at(raw.get("map"), marker_centre(raw.get("map")), size)
        img = np.concatenate([obs["map"], obs["reference"], crop], axis=2).transpose(2, 0, 1).astype(np.float32)
        img /= 255.0
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
