"""Model inputs of the UrbanGround behaviour-cloning policy (``l2_constrained``; numpy + OpenCV, no torch).

The policy sees what the VLM agent of ``urbanground`` tasks sees: the ``ContinuousEnv`` observation
(the runner's and ``urbanarena/Continuous-v1``'s): the map-mode image while the map is open, and the
text state (``lat``, ``lon``, ``yaw_deg``, ``mode``). It never looks at the first-person view.

**Observation loop** (:meth:`GroundNavFeaturizer.perception_action`, scripted, ours): the policy's
network chooses only first-person moves; the map is opened by a fixed rule:

* at the first step ``open_map``; in map mode the image is read (:func:`~urbanarena.agents.bc.groundmap.read_ground_map`);
  when it shows no goal, ``map_zoom`` by 2 (at most twice, to 600 m half-size), then ``close_map``;
* later, ``open_map`` again once the agent stands more than :data:`REOPEN_M` (100 m) from where it
  last read a map (map mode keeps the last zoom).

Between readings the agent's position relative to the last map comes from the text state's latitude
and longitude (a local tangent plane on the WGS84 ellipsoid, :func:`latlon_offset_m`) and its heading
from ``yaw_deg``.

**Vector** (:data:`N_GROUND` floats; zeros where the map was never read, always for the blind ablation):

* goal ``[read, d / 100, min(d, 30) / 15, cos, sin of its bearing relative to the heading]``;
* zone ``[seen, min(dz, 60) / 30, cos, sin, dz < 16 m]``;
* walking cost to the goal over the map as drawn (:func:`~urbanarena.agents.bc.groundmap.walk_cost_field`):
  ``[reachable]`` and, for 12 directions every 30 degrees from the heading, the cost saved per metre by
  a step of 5 m that way (``(c(here) - c(there)) / 5``, clipped to +-2; -2 into the unreachable); and for
  3, 6, 10 and 15 m, among 72 directions (every 5 degrees) the one of least cost: ``[cos, sin`` of its bearing
  relative to the heading, ``cost saved per metre]`` (the way the drawn map says to walk);
* free space: per the same 12 directions the metres to the first building pixel (at most 20) / 20;
* ``[the agent is on the last map]``;
* from the text state: the metres moved by the last step / 2.8 and ``[the last move made less than 40 % of
  its length]``; one-hot of the last two policy actions (:data:`POLICY_MACROS`) and ``step / step_limit``.

The blind ablation is the same featurizer, loop and network with every image replaced by zeros.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from urbanarena.agents.bc.groundmap import GroundMapReading, read_ground_map

#: indices into :data:`urbanarena.gym.continuous.MACROS` the network chooses from (walk 1 / 2 s, sprint 2 s,
#: the six turns, terminate); the map macros belong to the observation loop
POLICY_MACROS = (0, 1, 11, 2, 3, 4, 5, 6, 7, 10)
REOPEN_M = 100.0
MAX_ZOOMS = 2
N_DIRS = 12
PROBE_M = 5.0
WALK_2S_M = 2.8
#: radii (metres) and number of directions of the steepest-descent probes of the walking cost
DESCENT_M = (3.0, 6.0, 10.0, 15.0)
N_FINE = 72
N_FROM_IMAGES = 5 + 5 + 1 + N_DIRS + 3 * len(DESCENT_M) + N_DIRS + 1
N_GROUND = N_FROM_IMAGES + 2 + 2 * len(POLICY_MACROS) + 1

_A = 6378137.0
_E2 = 6.69437999014e-3


def latlon_offset_m(lat0: float, lon0: float, lat: float, lon: float) -> tuple[float, float]:
    """East/north metres of ``(lat, lon)`` from ``(lat0, lon0)`` (degrees, WGS84) on the tangent plane at the
    first point (meridional and prime-vertical radii; under 0.1 % off within 1 km)."""
    phi = math.radians(lat0)
    s = 1.0 - _E2 * math.sin(phi) ** 2
    m = _A * (1.0 - _E2) / s ** 1.5
    n = _A / math.sqrt(s)
    return math.radians(lon - lon0) * n * math.cos(phi), math.radians(lat - lat0) * m


def _wrap180(deg: float) -> float:
    return (deg + 180.0) % 360.0 - 180.0


def _one_hot(idx: int, n: int) -> np.ndarray:
    v = np.zeros(n, np.float32)
    if 0 <= idx < n:
        v[idx] = 1.0
    return v


class GroundNavFeaturizer:
    """Per-episode observation loop and ``(vector float32, mask int8)`` features (module docstring).

    Args: ``step_limit`` (600), ``blind`` (images replaced by zeros). Call :meth:`reset` per episode,
    :meth:`perception_action` before every step (a scripted map action, or ``None``), then, when it is
    ``None``, the featurizer itself; :meth:`record` the policy action taken (index into
    :data:`POLICY_MACROS`)."""

    def __init__(self, step_limit: int, blind: bool = False):
        self.step_limit = int(step_limit)
        self.blind = bool(blind)
        self.reset()

    def reset(self) -> None:
        self.origin: tuple[float, float] | None = None  # lat, lon of the first state
        self.reading: GroundMapReading | None = None
        self.read_at: tuple[float, float] | None = None  # east/north of the agent when the map was read
        self.opened_at: tuple[float, float] | None = None
        self.zooms = 0
        self.recent = [-1, -1]
        self.last_pos: tuple[float, float] | None = None
        self.last_move_m: float | None = None  # intended metres of the last policy move

    # ------------------------------------------------------------ state
    def position(self, raw: dict[str, Any]) -> tuple[float, float, float]:
        """``(east_m, north_m, yaw_deg)`` of the agent from the text state, from the episode's first state."""
        st = (raw.get("text") or {}).get("state") or {}
        lat, lon = float(st.get("lat") or 0.0), float(st.get("lon") or 0.0)
        if self.origin is None:
            self.origin = (lat, lon)
        e, n = latlon_offset_m(self.origin[0], self.origin[1], lat, lon)
        return e, n, float(st.get("yaw_deg") or 0.0)

    def perception_action(self, raw: dict[str, Any]) -> dict[str, Any] | None:
        """The scripted map action for this step (module docstring), or ``None`` when the policy acts."""
        e, n, _ = self.position(raw)
        if raw.get("mode") == "map":
            img = raw.get("map")
            if self.blind and img is not None:
                img = np.zeros_like(np.asarray(img))
            r = read_ground_map(img)
            if r is not None and (r.goal_px is not None or self.reading is None or self.reading.goal_px is None):
                self.reading, self.read_at = r, (e, n)
            if (r is None or r.goal_px is None) and self.zooms < MAX_ZOOMS:
                self.zooms += 1
                return {"action": "map_zoom", "factor": 2.0}
            return {"action": "close_map"}
        if self.opened_at is None or math.hypot(e - self.opened_at[0], n - self.opened_at[1]) > REOPEN_M:
            self.opened_at = (e, n)
            self.zooms = 0
            return {"action": "open_map"}
        return None

    def record(self, policy_index: int, raw: dict[str, Any]) -> None:
        """Note the policy action taken from ``raw`` (for the recent-action and progress features)."""
        from urbanarena.gym.continuous import MACROS

        e, n, _ = self.position(raw)
        self.recent = [self.recent[1], int(policy_index)]
        m = MACROS[POLICY_MACROS[int(policy_index)]]
        self.last_pos = (e, n)
        self.last_move_m = (1.4 if m["action"] == "move" else 3.0) * float(m["seconds"]) if "seconds" in m else None

    # ------------------------------------------------------------ features
    def __call__(self, raw: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        e, n, yaw = self.position(raw)
        goal = [0.0] * 5
        zone = [0.0] * 5
        field = [0.0] * (1 + N_DIRS)
        fine = [0.0] * (3 * len(DESCENT_M))
        rays = [0.0] * N_DIRS
        on_map = 0.0
        r = self.reading
        if r is not None and self.read_at is not None:
            here = r.px_of(e - self.read_at[0], n - self.read_at[1])
            on_map = float(r.inside(here))
            if r.goal_px is not None:
                ge, gn = r.offset_m(r.goal_px)
                de, dn = ge - (e - self.read_at[0]), gn - (n - self.read_at[1])
                d = math.hypot(de, dn)
                rel = math.radians(_wrap180(math.degrees(math.atan2(de, dn)) - yaw))
                goal = [1.0, d / 100.0, min(d, 30.0) / 15.0, math.cos(rel), math.sin(rel)]
            if r.zone_px is not None:
                ze, zn = r.offset_m(r.zone_px)
                de, dn = ze - (e - self.read_at[0]), zn - (n - self.read_at[1])
                dz = math.hypot(de, dn)
                rel = math.radians(_wrap180(math.degrees(math.atan2(de, dn)) - yaw))
                zone = [1.0, min(dz, 60.0) / 30.0, math.cos(rel), math.sin(rel), float(dz < 16.0)]
            c0 = r.cost_at(here)
            if r.cost is not None and math.isfinite(c0):
                field = [1.0]
                for k in range(N_DIRS):
                    b = math.radians(yaw + 30.0 * k)
                    there = (here[0] + math.sin(b) * PROBE_M / r.m_per_px, here[1] - math.cos(b) * PROBE_M / r.m_per_px)
                    c1 = r.cost_at(there)
                    field.append(float(np.clip((c0 - c1) / PROBE_M, -2.0, 2.0)) if math.isfinite(c1) else -2.0)
                fine = []
                rel = np.radians(np.arange(N_FINE) * (360.0 / N_FINE))
                for rad in DESCENT_M:
                    b = math.radians(yaw) + rel
                    cs = r.costs_at(here[0] + np.sin(b) * rad / r.m_per_px, here[1] - np.cos(b) * rad / r.m_per_px)
                    k = int(np.argmin(cs))
                    drop = float(np.clip((c0 - cs[k]) / rad, -2.0, 2.0)) if math.isfinite(cs[k]) else -2.0
                    fine += [math.cos(rel[k]), math.sin(rel[k]), drop]
            if on_map:
                rays = [r.free_ray_m(here, yaw + 30.0 * k) / 20.0 for k in range(N_DIRS)]
        moved, blocked = 0.0, 0.0
        if self.last_pos is not None:
            dm = math.hypot(e - self.last_pos[0], n - self.last_pos[1])
            if self.last_move_m is not None:
                moved = dm / WALK_2S_M
                blocked = float(dm < 0.4 * self.last_move_m)
        k = len(POLICY_MACROS)
        parts = [np.asarray(goal + zone + field + fine + rays + [on_map, moved, blocked], np.float32),
                 _one_hot(self.recent[0], k), _one_hot(self.recent[1], k),
                 np.asarray([min(float(raw.get("step", 0)), self.step_limit) / self.step_limit], np.float32)]
        return np.concatenate(parts), np.ones(k, np.int8)


#: positions in the vector of the features read from the images (zero for the blind ablation)
FROM_IMAGES = tuple(range(N_FROM_IMAGES))

__all__ = ["FROM_IMAGES", "GroundNavFeaturizer", "N_GROUND", "POLICY_MACROS", "REOPEN_M", "latlon_offset_m"]
