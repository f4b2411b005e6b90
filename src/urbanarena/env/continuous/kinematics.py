"""Kinematics of move/sprint actions in simulated time.

A move of ``seconds`` at speed ``v`` (m/s) in direction ``dir`` (the camera
yaw plus 0 / +90 / 180 / -90 degrees for forward / right / backward / left) with
an optional ``yaw_rate`` ``w`` (deg/s, positive = turning right, i.e. clockwise)
and ``pitch_rate`` (deg/s, positive = up):

* yaw at time ``t`` into the action: ``yaw0 + w t``; pitch ``pitch0 + pitch_rate t``
  clamped to the pitch limits (a clamp is reported);
* without turning the path is the straight segment of length ``v * seconds``;
* with turning it is a circular arc of radius ``v / w`` (in radians per second).
  The action is cut into ``n = ceil(seconds / substep_s)`` equal sub-steps of
  ``dt``; each sub-step moves along the arc's chord: direction = the heading at the
  sub-step's middle, length ``v dt sin(w dt / 2) / (w dt / 2)``. The sub-step end
  points lie exactly on the arc (no integration drift); collisions are swept along
  the chords.

Every sub-step is one :meth:`~urbanarena.env.continuous.collision.WalkableSpace.move`
(swept, with the collision response). With ``"stop"`` the agent stays where the
first contact left it for the rest of the action while its yaw/pitch keep
turning. Durations are simulated seconds: nothing here reads a clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from urbanarena.env.continuous.collision import Hit, WalkableSpace
from urbanarena.world.geo import wrap_deg


@dataclass(frozen=True)
class MotionResult:
    """Outcome of :func:`integrate_move`.

    Attributes:
        samples: ``[(t_offset_s, x_m, y_m, yaw_deg, pitch_deg)]`` after the start, in time order; the last
            is at ``t_offset_s == seconds`` (the end of the action).
        x_m, y_m, yaw_deg, pitch_deg: the final pose.
        moved_m: length of the path actually walked.
        intended_m: ``speed * seconds`` (the length without obstacles).
        blocked: a wall contact happened.
        contacts: the contacts.
        pitch_limited: the pitch hit a limit (clamped).
    """

    samples: tuple[tuple[float, float, float, float, float], ...]
    x_m: float
    y_m: float
    yaw_deg: float
    pitch_deg: float
    moved_m: float
    intended_m: float
    blocked: bool
    contacts: tuple[Hit, ...]
    pitch_limited: bool


def _sinc(z: float) -> float:
    return 1.0 if abs(z) < 1e-12 else math.sin(z) / z


def integrate_move(space: WalkableSpace, x_m: float, y_m: float, yaw_deg: float, pitch_deg: float, *,
                   direction_offset_deg: float, speed_mps: float, seconds: float, yaw_rate_dps: float = 0.0,
                   pitch_rate_dps: float = 0.0, pitch_limits_deg: tuple[float, float] = (-89.0, 89.0),
                   substep_s: float = 0.1, mode: str = "slide") -> MotionResult:
    """Integrate one move/sprint (module docstring).

    Args:
        space: the walkable space (collisions).
        x_m, y_m, yaw_deg, pitch_deg: start pose.
        direction_offset_deg: 0 forward, 90 right, 180 backward, -90 left.
        speed_mps: metres per simulated second.
        seconds: simulated duration (> 0).
        yaw_rate_dps, pitch_rate_dps: degrees per simulated second.
        pitch_limits_deg: ``(min, max)`` absolute pitch.
        substep_s: longest sub-step of a turning move.
        mode: collision response, ``"slide"`` or ``"stop"``.
    Raises:
        ValueError: non-positive ``seconds`` or ``substep_s``, negative speed.
    """
    if not seconds > 0 or not substep_s > 0:
        raise ValueError("seconds and substep_s must be > 0")
    if speed_mps < 0:
        raise ValueError("speed_mps must be >= 0")
    lo, hi = pitch_limits_deg
    turning = yaw_rate_dps != 0.0
    n = max(1, math.ceil(seconds / substep_s - 1e-9)) if turning else 1
    dt = seconds / n
    w = math.radians(yaw_rate_dps)
    chord = speed_mps * dt * _sinc(w * dt / 2.0)
    pos = (float(x_m), float(y_m))
    samples: list[tuple[float, float, float, float, float]] = []
    contacts: list[Hit] = []
    moved = 0.0
    stopped = False
    pitch_limited = False

    def orient(t: float) -> tuple[float, float]:
        nonlocal pitch_limited
        p = pitch_deg + pitch_rate_dps * t
        pc = min(max(p, lo), hi)
        if pc != p:
            pitch_limited = True
        return wrap_deg(yaw_deg + yaw_rate_dps * t), pc

    for k in range(n):
        if stopped:
            break
        h = math.radians(yaw_deg + yaw_rate_dps * (k + 0.5) * dt + direction_offset_deg)
        delta = (chord * math.sin(h), chord * math.cos(h))
        out = space.move(pos, delta, mode)
        prev = pos
        for px, py, f in out.points:
            t = seconds if (k == n - 1 and f == 1.0) else (k + f) * dt
            moved += math.hypot(px - prev[0], py - prev[1])
            prev = (px, py)
            if samples and samples[-1][0] == t and (samples[-1][1], samples[-1][2]) == (px, py):
                continue
            samples.append((t, px, py, *orient(t)))
        pos = out.end
        contacts.extend(out.contacts)
        if out.blocked and mode == "stop":
            stopped = True
    if not samples or samples[-1][0] != seconds:
        samples.append((seconds, pos[0], pos[1], *orient(seconds)))
    else:  # make the final sample's time exactly `seconds` and its orientation the final one
        samples[-1] = (seconds, samples[-1][1], samples[-1][2], *orient(seconds))
    yaw_end, pitch_end = orient(seconds)
    return MotionResult(tuple(samples), pos[0], pos[1], yaw_end, pitch_end, moved, speed_mps * seconds,
                        bool(contacts), tuple(contacts), pitch_limited)


__all__ = ["MotionResult", "integrate_move"]
