"""Pedestrians of the dynamic city: deterministic walkers on the walkable network, in simulated time.

Motion. Pedestrian ``i`` walks its route (a polyline of arc length ``L_i``,
local metres) back and forth at constant speed ``v`` (m/s): its arc position at
simulated time ``t`` is ``s = (o_i + v t) mod 2 L_i`` folded to ``u = s`` when
``s <= L_i`` else ``2 L_i - s`` (out along the route, then back); ``o_i`` is its
offset (0 for routes given in the spec: at ``t = 0`` it stands at the route's
first point walking towards the second). Position and heading are pure
functions of ``t`` (:meth:`PedestrianSet.positions`): nothing depends on the
agent, the wall clock or the order of queries. Between the times at which
``u`` reaches a route vertex or a turning point, motion is a straight line at
constant speed, so :meth:`PedestrianSet.track` returns exact piecewise-linear
trajectories (the input of the PCR metric,
``urbanarena.tasks.metrics.urbanground.Trajectory.from_arrays(t, xy)``).

Generated routes (spec ``routes: null``): from a seeded ``numpy`` generator,
each pedestrian picks a start vertex of the walk network's routing graph
(:class:`~urbanarena.env.continuous.walk_network.WalkNetwork`; vertices sorted,
optionally those within ``area_radius_m`` of ``center_xy_m``), then an end vertex
uniformly among those at network distance within ``route_length_m`` ``[lo, hi]``
(Dijkstra with cutoff ``hi``); the route is the shortest walk between them, the
offset uniform in ``[0, 2 L)``. Pedestrians ignore obstacles and each other
(they stay on network lines, which are walkable by construction).

Collisions with the agent. A pedestrian is a disc of ``radius_m`` (0.25 m); the
agent's centre and a pedestrian's are in **contact** at distance
``<= contact_m = agent_radius + radius`` (0.5 m, the metric's ``CONTACT_M``).

* **Counting** (:func:`contact_onsets`): a collision is the onset of a contact,
  solved exactly on the merged time grid of both piecewise-linear motions (the
  squared distance is a quadratic in time on each interval) -- the rule of
  ``urbanground.pedestrian_collisions``, so the environment's running count
  equals the metric's. A pedestrian that walks into a standing agent counts.
* **Blocking** (:func:`first_block`): the agent cannot walk into a pedestrian.
  Its motion stops at the first time when its centre is within
  ``contact_m - 1e-6`` m of a pedestrian (1 micrometre inside the contact disc,
  so the metric sees the contact) **while moving towards it** (agent velocity
  . (pedestrian - agent) > 0); the rest of the move is dropped (turning goes on),
  as the ``"stop"`` collision response. Moving away from a pedestrian it touches is
  always possible. Pedestrians do not yield: one may walk through a standing
  agent (each such contact counts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import networkx as nx
import numpy as np

PEDESTRIAN_RADIUS_M = 0.25
STOP_EPS_M = 1e-6


@dataclass(frozen=True)
class _Route:
    xy: np.ndarray        # (n, 2)
    cum: np.ndarray       # (n,) arc length at each vertex
    length_m: float


def _route(points) -> _Route:
    xy = np.asarray(points, float).reshape(-1, 2)
    keep = [0] + [k for k in range(1, len(xy)) if np.hypot(*(xy[k] - xy[k - 1])) > 1e-12]
    xy = xy[keep]
    seg = np.hypot(*np.diff(xy, axis=0).T) if len(xy) > 1 else np.zeros(0)
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    return _Route(xy, cum, float(cum[-1]))


class PedestrianSet:
    """Deterministic walkers (module docstring).

    Args:
        routes: polylines ``[[x, y], ...]`` (local metres), one per pedestrian; a one-point route stands still.
        speed_mps: walking speed, one value or one per pedestrian (>= 0).
        offsets_m: arc offset ``o_i`` per pedestrian (default 0).
        radius_m: pedestrian disc radius.
    Raises:
        ValueError: empty route, negative speed, mismatched lengths.
    """

    def __init__(self, routes: Sequence[Any], speed_mps: float | Sequence[float] = 1.2,
                 offsets_m: Sequence[float] | None = None, radius_m: float = PEDESTRIAN_RADIUS_M):
        self.routes = [_route(r) for r in routes]
        if any(len(r.xy) == 0 for r in self.routes):
            raise ValueError("a pedestrian route needs at least one point")
        n = len(self.routes)
        sp = np.broadcast_to(np.asarray(speed_mps, float), (n,)).copy() if n else np.zeros(0)
        if np.any(~np.isfinite(sp)) or np.any(sp < 0):
            raise ValueError("pedestrian speeds must be finite and >= 0")
        self.speed_mps = sp
        off = np.zeros(n) if offsets_m is None else np.asarray(offsets_m, float).reshape(-1)
        if len(off) != n:
            raise ValueError("one offset per pedestrian is needed")
        self.offsets_m = off
        self.radius_m = float(radius_m)

    def __len__(self) -> int:
        return len(self.routes)

    # ------------------------------------------------------------ motion
    def _arc(self, i: int, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Folded arc position ``u`` and direction (+1 out, -1 back) of pedestrian ``i`` at times ``t``."""
        r = self.routes[i]
        L = r.length_m
        if L <= 0 or self.speed_mps[i] == 0:
            u = np.full(np.shape(t), min(max(self.offsets_m[i], 0.0), L)) if L > 0 else np.zeros(np.shape(t))
            return u, np.ones(np.shape(t))
        s = np.mod(self.offsets_m[i] + self.speed_mps[i] * np.asarray(t, float), 2 * L)
        back = s > L
        return np.where(back, 2 * L - s, s), np.where(back, -1.0, 1.0)

    def _point(self, i: int, u: np.ndarray) -> np.ndarray:
        r = self.routes[i]
        if len(r.xy) == 1:
            return np.broadcast_to(r.xy[0], (len(u), 2)).copy()
        return np.stack([np.interp(u, r.cum, r.xy[:, 0]), np.interp(u, r.cum, r.xy[:, 1])], axis=1)

    def positions(self, t_s: float) -> np.ndarray:
        """``(N, 2)`` positions (local metres) at simulated time ``t_s``."""
        out = np.zeros((len(self), 2))
        for i in range(len(self)):
            u, _ = self._arc(i, np.array([t_s]))
            out[i] = self._point(i, u)[0]
        return out

    def headings_deg(self, t_s: float) -> np.ndarray:
        """``(N,)`` compass bearings of the walking direction at ``t_s`` (standing: the route's first direction)."""
        out = np.zeros(len(self))
        for i, r in enumerate(self.routes):
            if len(r.xy) < 2:
                continue
            u, d = self._arc(i, np.array([t_s]))
            k = int(np.clip(np.searchsorted(r.cum, u[0], side="right" if d[0] > 0 else "left") - 1, 0,
                            len(r.xy) - 2))
            dx, dy = (r.xy[k + 1] - r.xy[k]) * d[0]
            out[i] = math.degrees(math.atan2(dx, dy)) % 360.0
        return out

    def breakpoints(self, i: int, t0_s: float, t1_s: float) -> np.ndarray:
        """Times in ``(t0_s, t1_s)`` at which pedestrian ``i`` reaches a route vertex or turns (sorted)."""
        r = self.routes[i]
        L, v = r.length_m, float(self.speed_mps[i])
        if L <= 0 or v == 0 or t1_s <= t0_s:
            return np.zeros(0)
        arcs = np.unique(np.concatenate([r.cum, 2 * L - r.cum[:-1]]))
        period = 2 * L / v
        base = (arcs - self.offsets_m[i]) / v
        m0 = np.ceil((t0_s - base) / period)
        m1 = np.floor((t1_s - base) / period)
        ts = [b + m * period for b, a, c in zip(base, m0, m1) for m in np.arange(a, c + 1)]
        ts = np.array([x for x in ts if t0_s < x < t1_s])
        return np.unique(ts)

    def track(self, i: int, t0_s: float, t1_s: float) -> tuple[np.ndarray, np.ndarray]:
        """Exact piecewise-linear trajectory of pedestrian ``i`` on ``[t0_s, t1_s]``: ``(t (K,), xy (K, 2))``."""
        t = np.concatenate([[t0_s], self.breakpoints(i, t0_s, t1_s), [t1_s]]) if t1_s > t0_s else np.array([t0_s])
        u, _ = self._arc(i, t)
        return t, self._point(i, u)

    def tracks(self, t1_s: float, t0_s: float = 0.0) -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`track` of every pedestrian on ``[t0_s, t1_s]``."""
        return [self.track(i, t0_s, t1_s) for i in range(len(self))]

    # ------------------------------------------------------------ generation
    @classmethod
    def generate(cls, network, count: int, seed: int, speed_mps: float = 1.2,
                 center_xy_m: tuple[float, float] | None = None, area_radius_m: float | None = None,
                 route_length_m: tuple[float, float] = (40.0, 200.0),
                 radius_m: float = PEDESTRIAN_RADIUS_M) -> "PedestrianSet":
        """``count`` pedestrians on random routes of the walk network (module docstring).

        Raises:
            ValueError: no start vertex in the area, or a start with no end vertex in ``route_length_m``
                after 50 tries.
        """
        rng = np.random.default_rng(int(seed))
        g = network.graph
        nodes = np.array(sorted(g.nodes), dtype=np.int64)
        if center_xy_m is not None and area_radius_m is not None:
            d = np.hypot(*(network.node_xy[nodes] - np.asarray(center_xy_m, float)).T)
            nodes = nodes[d <= area_radius_m]
        if len(nodes) == 0:
            raise ValueError("no walk-network vertex in the pedestrians' area")
        lo, hi = float(route_length_m[0]), float(route_length_m[1])
        routes, offsets = [], []
        for _ in range(int(count)):
            for _try in range(50):
                a = int(nodes[rng.integers(len(nodes))])
                dist = nx.single_source_dijkstra_path_length(g, a, cutoff=hi, weight="length_m")
                ends = sorted(n for n, dd in dist.items() if lo <= dd <= hi)
                if ends:
                    b = ends[int(rng.integers(len(ends)))]
                    path = nx.dijkstra_path(g, a, b, weight="length_m")
                    pts = network.node_xy[path]
                    routes.append(pts)
                    offsets.append(float(rng.uniform(0.0, 2.0 * dist[b])))
                    break
            else:
                raise ValueError(f"no pedestrian route of {lo:g}-{hi:g} m found after 50 tries")
        return cls(routes, speed_mps, offsets, radius_m)


# ---------------------------------------------------------------- contact geometry
def contact_interval(r0: np.ndarray, r1: np.ndarray, radius_m: float) -> tuple[float, float] | None:
    """Sub-interval ``[s0, s1]`` of [0, 1] where ``|r0 + s (r1 - r0)| <= radius_m``, or ``None``.

    Args:
        r0, r1: ``(2,)`` relative positions (local metres) at the ends of a straight piece of motion.
        radius_m: contact distance, metres.
    Returns: the clamped roots of the quadratic ``|r0 + s (r1 - r0)|^2 = radius_m^2`` in ``s`` (closed-form
        quadratic formula), ``(0, 1)`` for a piece without relative motion that starts inside, ``None`` when
        the piece never comes within ``radius_m``. Shared by the environment's contact rules and the metrics
        of :mod:`urbanarena.tasks.metrics.urbanground` (pedestrian collisions, stop arrivals).
    """
    R = float(radius_m)
    dv = r1 - r0
    a = float(dv @ dv)
    b = 2.0 * float(r0 @ dv)
    c = float(r0 @ r0) - R * R
    if a == 0.0:
        return (0.0, 1.0) if c <= 0 else None
    disc = b * b - 4 * a * c
    if disc < 0:
        return None
    sq = math.sqrt(disc)
    lo, hi = max(0.0, (-b - sq) / (2 * a)), min(1.0, (-b + sq) / (2 * a))
    return (lo, hi) if lo <= hi else None


def _grid(at: np.ndarray, pt: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return np.unique(np.concatenate([[lo, hi], at[(at > lo) & (at < hi)], pt[(pt > lo) & (pt < hi)]]))


def _interp(t: np.ndarray, xy: np.ndarray, q: np.ndarray) -> np.ndarray:
    return np.stack([np.interp(q, t, xy[:, 0]), np.interp(q, t, xy[:, 1])], axis=1)


def contact_onsets(agent_t: np.ndarray, agent_xy: np.ndarray, ped_t: np.ndarray, ped_xy: np.ndarray,
                   contact_m: float, prev_inside: bool = False) -> tuple[list[float], bool]:
    """Onsets of contact (distance ``<= contact_m``) between two piecewise-linear motions on their common span.

    Args:
        agent_t, agent_xy: ``(K,)``, ``(K, 2)``; ped_t, ped_xy: the pedestrian's (local metres, seconds).
        prev_inside: in contact just before the span (an earlier step ended in contact): a contact at the
            span's start is then no new onset.
    Returns: ``(onset times, in contact at the span's end)``.
    """
    lo, hi = max(agent_t[0], ped_t[0]), min(agent_t[-1], ped_t[-1])
    if hi < lo:
        return [], prev_inside
    grid = _grid(agent_t, ped_t, lo, hi)
    rel = _interp(agent_t, agent_xy, grid) - _interp(ped_t, ped_xy, grid)
    out: list[float] = []
    if len(grid) == 1:
        inside = float(np.hypot(*rel[0])) <= contact_m
        if inside and not prev_inside:
            out.append(float(grid[0]))
        return out, inside
    inside = prev_inside
    for k in range(len(grid) - 1):
        cs = contact_interval(rel[k], rel[k + 1], contact_m)
        if cs is not None and (cs[0] > 0.0 or not inside):
            out.append(float(grid[k] + cs[0] * (grid[k + 1] - grid[k])))
        inside = cs is not None and cs[1] >= 1.0
    return out, inside


def first_block(agent_t: np.ndarray, agent_xy: np.ndarray, ped_t: np.ndarray, ped_xy: np.ndarray,
                radius_m: float) -> float | None:
    """First time at which the agent is within ``radius_m`` of the pedestrian while moving towards it
    (agent velocity . (pedestrian - agent) > 0), or ``None`` (module docstring: blocking)."""
    lo, hi = max(agent_t[0], ped_t[0]), min(agent_t[-1], ped_t[-1])
    if hi <= lo:
        return None
    grid = _grid(agent_t, ped_t, lo, hi)
    a = _interp(agent_t, agent_xy, grid)
    rel = a - _interp(ped_t, ped_xy, grid)
    for k in range(len(grid) - 1):
        dt = grid[k + 1] - grid[k]
        va = a[k + 1] - a[k]  # agent displacement over the interval (velocity x dt)
        if dt <= 0 or not va.any():
            continue
        cs = contact_interval(rel[k], rel[k + 1], radius_m)
        if cs is None:
            continue
        # towards: g(s) = va . rel(s) < 0, linear in s
        g0, g1 = float(va @ rel[k]), float(va @ rel[k + 1])
        if g0 < 0 and g1 < 0:
            glo, ghi = 0.0, 1.0
        elif g0 < 0 <= g1:
            glo, ghi = 0.0, g0 / (g0 - g1)
        elif g1 < 0 <= g0:
            glo, ghi = (g0 / (g0 - g1) if g0 != g1 else 0.0), 1.0
        else:
            continue
        s_lo, s_hi = max(cs[0], glo), min(cs[1], ghi)
        if s_lo <= s_hi and (s_lo < s_hi or g0 < 0 or g1 < 0):
            return float(grid[k] + s_lo * dt)
    return None


__all__ = ["PEDESTRIAN_RADIUS_M", "STOP_EPS_M", "PedestrianSet", "contact_interval", "contact_onsets", "first_block"]
