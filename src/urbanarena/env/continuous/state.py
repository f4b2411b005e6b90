"""Pose and trajectory records of the continuous environment.

Conventions: positions in the city's local frame (metres, x east, y north) and
WGS84 degrees; ``yaw_deg`` is the camera's compass bearing, degrees clockwise
from true north in [0, 360); ``pitch_deg`` is positive up. Times are
**simulated** seconds since the episode's reset (never wall-clock time).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ContinuousPose:
    """The agent's pose: what an observer needs to draw its view.

    Attributes:
        x_m, y_m: local metres (x east, y north).
        yaw_deg: compass bearing of the view centre, [0, 360).
        pitch_deg: degrees, positive up.
        lat, lon: WGS84 degrees of ``(x_m, y_m)``.
    """

    x_m: float
    y_m: float
    yaw_deg: float
    pitch_deg: float
    lat: float
    lon: float

    def to_dict(self) -> dict[str, Any]:
        return {"x_m": self.x_m, "y_m": self.y_m, "yaw_deg": self.yaw_deg, "pitch_deg": self.pitch_deg,
                "lat": self.lat, "lon": self.lon}


@dataclass(frozen=True)
class Sample:
    """One point of the recorded trajectory.

    Between consecutive samples the agent moves in a straight line at constant
    speed (the environment records a sample at every change of direction: each
    sub-step of a turning move, each wall contact, the end of each action), so a
    list of samples describes the motion exactly.

    Attributes:
        t_s: simulated seconds since reset.
        x_m, y_m: local metres.
        yaw_deg, pitch_deg: camera orientation at ``t_s``.
        step: the step (model request) whose action produced the sample (0 = the reset).
        checkpoint: the sample ends a step: a point where the agent could have terminated.
    """

    t_s: float
    x_m: float
    y_m: float
    yaw_deg: float
    pitch_deg: float
    step: int
    checkpoint: bool

    def to_dict(self) -> dict[str, Any]:
        return {"t_s": self.t_s, "x_m": self.x_m, "y_m": self.y_m, "yaw_deg": self.yaw_deg,
                "pitch_deg": self.pitch_deg, "step": self.step, "checkpoint": self.checkpoint}


__all__ = ["ContinuousPose", "Sample"]
