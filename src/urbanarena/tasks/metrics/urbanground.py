"""UrbanGround metrics, computed from the recorded trajectory (local metres, simulated seconds).

Sources. UrbanGround: Ju et al. 2026, "UrbanGround: From Local Perception to
Spatial Agency in a Real-Scale City" (arXiv 2608.27456) and its released evaluator
(github.com/UrbanGround/UrbanGround, ``AgentEvaluation/tasks/``: ``metrics.py``,
``base.py``, ``dynamic_closure_nav``, ``schedule_window_nav``). The paper's text
was not available to us; where a definition below comes from the released code
it says so, and where neither the code nor the issue fixes it, it says "ours".

Input: a :class:`Trajectory` -- times ``t_s`` (N,), positions ``xy_m`` (N, 2) and
a ``checkpoint`` flag per sample (the sample ends a step, where the agent could
have terminated). Between consecutive samples the agent moves in a straight line
at constant speed, as :class:`urbanarena.env.continuous.state.Sample` records
guarantee; every formula below integrates that piecewise-linear motion exactly
(no sampling error).

Metrics (per episode; rates are 0/1 or in [0, 1], summaries report them x100):

``sr`` -- success (:func:`success`)
    ``1`` when the final position lies within ``radius_m`` (15 m) of the goal and
    no active closure was crossed, else ``0``. The 15 m arrival radius and
    ``distance <= radius`` are UrbanGround's (``TaskEpisodeConfig.arrival_radius_meters``,
    ``compute_navigation_metrics``); "crossing a closure after the notice is an
    immediate, unconditional failure" is its DynamicClosureNav rule. Distances here
    are planar metres in the city's local frame (UrbanGround: haversine; the two
    differ by < 0.1 % over a city).
``pna`` -- pedestrian-network adherence (:func:`pna`)
    ``sum_i dt_i * f_i / sum_i dt_i`` over the intervals ``i`` between samples, where
    ``f_i`` is the fraction of the interval's straight segment inside the buffer of
    radius ``buffer_m`` (3 m) around the pedestrian lines
    (:class:`~urbanarena.env.continuous.walk_network.WalkNetwork`; ``f_i`` = 1 or 0
    when the agent stands still). At constant speed the fraction of length equals the
    fraction of time, so this is the fraction of action time spent within the
    buffer. UrbanGround's ``sidewalk_time_ratio`` is the same idea computed per action
    from the simulator's ``on_sidewalk`` flag after the action; the 3 m buffer is
    ours (it covers a 2 m sidewalk drawn around the rebuilt sidewalk line with
    margin, and a footway's width).
``closure_respected`` / SPR -- (:func:`closure_violations`, :func:`spr`)
    A closure is a line (a barrier across a street) or a polygon (a closed zone)
    active from ``active_from_s`` (the simulated time of the closure notice). A
    violation is a trajectory segment, or the part of it after ``active_from_s``,
    that meets the closure geometry. ``closure_respected`` = 1 when there is none (per
    episode with closures; ``None`` without); SPR = the mean of ``closure_respected``
    over the episodes that have closures (issue 6: "fraction of closure episodes
    that respect the closure").
``pedestrian_collisions`` / PCR -- (:func:`pedestrian_collisions`, :func:`pcr`)
    A collision is the onset of a contact: the distance between the agent's centre
    and a pedestrian's centre (both moving piecewise-linearly) drops to
    ``contact_m`` or less (default 0.5 m: agent radius 0.25 m + pedestrian 0.25 m).
    On each interval of the merged time grid the squared distance is a convex
    quadratic in time, so contact sets are solved exactly. ``pcr`` per episode = 1
    when at least one collision happened; PCR = the mean over the episodes that have
    pedestrians (ours; UrbanGround's simulator counts ``pedestrian_collisions`` in
    its state).
``rdr`` -- remaining-distance ratio (:func:`remaining_distance_ratio`)
    ``|final - goal| / |start - goal|``; when start and goal coincide, 0 if the
    final position is within the radius, else 1 (UrbanGround's
    ``compute_navigation_metrics``, straight-line distances).
``route_efficiency`` -- (:func:`mst_lower_bound_m`, :func:`route_efficiency`)
    ``MST / path length``: ``MST`` is the weight of the minimum spanning tree over
    the start and the required stops with **network distances** along the walk
    network's routing graph (``networkx.minimum_spanning_tree``); every walk that
    visits all stops contains a spanning tree of them, so no such walk is shorter
    on the network. UrbanGround's ``mst_route_length_meters`` uses straight-line
    distances; the network metric is issue 6's. Continuous agents may cut corners
    off the network, so the ratio can exceed 1 (not capped). Path length 0: 1 when
    ``MST == 0`` else 0; unreachable stops (infinite MST): 0.
``on_time_ratio``, ``lateness_s`` -- scheduling (:func:`schedule_arrivals`, :func:`schedule_metrics`)
    Stops are visited in the given order: the arrival at stop ``k`` is the first time
    after the arrival at stop ``k - 1`` when the agent is within ``radius_m`` of it
    (UrbanGround ScheduleWindowNav: in-order arrival within the arrival radius).
    ``on_time``: reached with ``arrival <= deadline + grace_s`` (grace 0 s: our
    deadlines are exact simulated seconds; UrbanGround allows 60 s because its
    deadlines are parsed from text to the minute). ``on_time_ratio`` = on-time stops /
    stops with a deadline; ``lateness_s`` per reached stop = ``max(0, arrival -
    deadline)`` (UrbanGround's ``lateness_seconds``), ``None`` for unreached stops;
    ``mean_lateness_s`` over reached stops with deadlines (ours).
``oracle_sr``, ``oracle_rdr`` -- oracle checkpoint rescoring (:func:`oracle_checkpoint`)
    The episode rescored as if the agent had terminated at its best checkpoint: the
    checkpoint (a sample ending a step, the reset included) nearest to the goal among
    those reached before the first closure violation (the earliest on ties);
    ``oracle_sr`` = that distance <= radius (like VLN's oracle success, Anderson et
    al. 2018, but over the points where a stop was possible). Ours: issue 6 names the
    metric ("best reachable checkpoint along the trajectory").
``endpoint_regression_m``, ``endpoint_regressed`` -- (:func:`endpoint_regression`)
    ``max(0, d_final - d_best)`` with ``d_best`` the oracle checkpoint's distance to
    the goal: how far the agent drifted away after its best point;
    ``endpoint_regressed`` = 1 when the oracle checkpoint succeeds but the final
    position does not (the agent got there and left). Ours.

Corner cases have defined values (never NaN): empty durations, a single sample,
start == goal, unreachable stops.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import networkx as nx
import numpy as np
import shapely
from shapely.geometry import LineString, Point, Polygon

from urbanarena.env.continuous.pedestrians import contact_interval

ARRIVAL_RADIUS_M = 15.0
PNA_BUFFER_M = 3.0
CONTACT_M = 0.5

#: per-episode keys of :func:`navigation_metrics`
METRIC_KEYS: tuple[str, ...] = (
    "sr", "final_distance_m", "rdr", "path_length_m", "pna", "closure_respected", "closure_violations",
    "pedestrian_collisions", "pcr", "oracle_sr", "oracle_rdr", "endpoint_regression_m", "endpoint_regressed",
)
#: keys reported in percent (x100) by summaries
PERCENT_KEYS: frozenset[str] = frozenset({"sr", "pna", "closure_respected", "pcr", "oracle_sr", "endpoint_regressed",
                                          "on_time_ratio"})


# --------------------------------------------------------------------------- trajectory
@dataclass(frozen=True)
class Trajectory:
    """A piecewise-linear timed trajectory (module docstring).

    Attributes:
        t_s: ``(N,)`` simulated seconds, non-decreasing.
        xy_m: ``(N, 2)`` local metres.
        checkpoint: ``(N,)`` bool, the sample ends a step.
    Raises:
        ValueError: no sample, mismatched shapes, non-finite values, decreasing times.
    """

    t_s: np.ndarray
    xy_m: np.ndarray
    checkpoint: np.ndarray

    def __post_init__(self):
        t = np.asarray(self.t_s, float).reshape(-1)
        xy = np.asarray(self.xy_m, float).reshape(-1, 2)
        cp = np.asarray(self.checkpoint, bool).reshape(-1)
        if len(t) == 0 or len(t) != len(xy) or len(t) != len(cp):
            raise ValueError("a trajectory needs N >= 1 samples with matching t_s, xy_m and checkpoint")
        if not (np.isfinite(t).all() and np.isfinite(xy).all()):
            raise ValueError("trajectory values must be finite")
        if np.any(np.diff(t) < 0):
            raise ValueError("trajectory times must not decrease")
        object.__setattr__(self, "t_s", t)
        object.__setattr__(self, "xy_m", xy)
        object.__setattr__(self, "checkpoint", cp)

    @classmethod
    def from_arrays(cls, t_s, xy_m, checkpoint=None) -> "Trajectory":
        """From arrays; ``checkpoint`` defaults to every sample."""
        t = np.asarray(t_s, float).reshape(-1)
        return cls(t, xy_m, np.ones(len(t), bool) if checkpoint is None else checkpoint)

    @classmethod
    def from_samples(cls, samples: Iterable[Any]) -> "Trajectory":
        """From :class:`~urbanarena.env.continuous.state.Sample` objects or dicts with ``t_s``, ``x_m``,
        ``y_m`` and ``checkpoint``."""
        t, xy, cp = [], [], []
        for s in samples:
            g = s.get if isinstance(s, dict) else (lambda k, _s=s: getattr(_s, k))
            t.append(float(g("t_s")))
            xy.append((float(g("x_m")), float(g("y_m"))))
            cp.append(bool(g("checkpoint")))
        return cls(np.array(t), np.array(xy).reshape(-1, 2), np.array(cp, bool))

    @property
    def final_xy(self) -> tuple[float, float]:
        return float(self.xy_m[-1, 0]), float(self.xy_m[-1, 1])

    @property
    def start_xy(self) -> tuple[float, float]:
        return float(self.xy_m[0, 0]), float(self.xy_m[0, 1])

    def path_length_m(self) -> float:
        """Sum of the straight pieces' lengths, metres."""
        if len(self.xy_m) < 2:
            return 0.0
        return float(np.hypot(*np.diff(self.xy_m, axis=0).T).sum())

    def position_at(self, t_s: float) -> tuple[float, float]:
        """Linear interpolation of the position at ``t_s`` (clamped to the recorded span)."""
        t = self.t_s
        if t_s <= t[0]:
            return self.start_xy
        if t_s >= t[-1]:
            return self.final_xy
        i = int(np.searchsorted(t, t_s, side="right")) - 1
        dt = t[i + 1] - t[i]
        f = 0.0 if dt == 0 else (t_s - t[i]) / dt
        p = self.xy_m[i] + f * (self.xy_m[i + 1] - self.xy_m[i])
        return float(p[0]), float(p[1])


def _dist(a, b) -> float:
    return math.hypot(float(a[0]) - float(b[0]), float(a[1]) - float(b[1]))


# --------------------------------------------------------------------------- SR, RDR
def success(final_xy, goal_xy, radius_m: float = ARRIVAL_RADIUS_M, closure_violated: bool = False) -> float:
    """``1.0`` when ``|final - goal| <= radius_m`` and no closure was violated, else ``0.0`` (module docstring)."""
    if closure_violated:
        return 0.0
    return 1.0 if _dist(final_xy, goal_xy) <= radius_m else 0.0


def remaining_distance_ratio(start_xy, final_xy, goal_xy, radius_m: float = ARRIVAL_RADIUS_M) -> float:
    """``|final - goal| / |start - goal|``; start == goal: 0 within ``radius_m``, else 1 (UrbanGround)."""
    d0 = _dist(start_xy, goal_xy)
    d1 = _dist(final_xy, goal_xy)
    if d0 > 0:
        return d1 / d0
    return 0.0 if d1 <= radius_m else 1.0


# --------------------------------------------------------------------------- PNA
def _buffer_of(network, buffer_m: float):
    if hasattr(network, "buffer") and hasattr(network, "pedestrian_geometry"):
        return network.buffer(buffer_m)
    geom = network if isinstance(network, shapely.Geometry) else shapely.MultiLineString(
        [LineString(ln) for ln in network])
    return geom.buffer(buffer_m, quad_segs=16)


def pna(traj: Trajectory, network, buffer_m: float = PNA_BUFFER_M) -> float:
    """Fraction of action time within ``buffer_m`` of the pedestrian lines (module docstring).

    Args:
        traj: the trajectory.
        network: a :class:`~urbanarena.env.continuous.walk_network.WalkNetwork` (its pedestrian lines),
            a shapely line geometry, or a list of polylines (local metres).
        buffer_m: buffer radius, metres.
    Returns: in [0, 1]. A trajectory without elapsed time: 1.0 when its start lies in the buffer, else 0.0.
    """
    buf = _buffer_of(network, buffer_m)
    t, xy = traj.t_s, traj.xy_m
    dt = np.diff(t)
    total = float(dt.sum()) if len(dt) else 0.0
    if total <= 0:
        return 1.0 if buf.intersects(Point(*xy[0])) else 0.0
    inside = 0.0
    for i in np.nonzero(dt > 0)[0]:
        a, b = xy[i], xy[i + 1]
        L = math.hypot(*(b - a))
        if L == 0.0:
            frac = 1.0 if buf.intersects(Point(*a)) else 0.0
        else:
            frac = min(1.0, buf.intersection(LineString([a, b])).length / L)
        inside += float(dt[i]) * frac
    return inside / total


# --------------------------------------------------------------------------- closures
@dataclass(frozen=True)
class Closure:
    """A road closure: ``coords`` of a line (barrier) or, with ``zone=True``, a polygon ring (closed zone),
    local metres; active from ``active_from_s`` simulated seconds (the notice)."""

    coords: tuple[tuple[float, float], ...]
    active_from_s: float = 0.0
    zone: bool = False

    def geometry(self):
        return Polygon(self.coords) if self.zone else LineString(self.coords)


@dataclass(frozen=True)
class ClosureViolation:
    """The first crossing of closure ``closure`` (index) at simulated time ``t_s`` and position ``xy``."""

    closure: int
    t_s: float
    xy: tuple[float, float]


def closure_violations(traj: Trajectory, closures: Sequence[Closure]) -> list[ClosureViolation]:
    """The first violation of each closure, in time order (module docstring; empty when none)."""
    out: list[ClosureViolation] = []
    t, xy = traj.t_s, traj.xy_m
    for k, cl in enumerate(closures):
        g = cl.geometry()
        if len(t) == 1:
            if t[0] >= cl.active_from_s and g.intersects(Point(*xy[0])):
                out.append(ClosureViolation(k, float(t[0]), (float(xy[0, 0]), float(xy[0, 1]))))
            continue
        for i in range(len(t) - 1):
            t0, t1 = float(t[i]), float(t[i + 1])
            if t1 < cl.active_from_s:
                continue
            a = np.array(traj.position_at(max(t0, cl.active_from_s)) if t0 < cl.active_from_s else xy[i])
            b = xy[i + 1]
            ta = max(t0, cl.active_from_s)
            L = math.hypot(*(b - a))
            if L == 0.0:
                if g.intersects(Point(*a)):
                    out.append(ClosureViolation(k, ta, (float(a[0]), float(a[1]))))
                    break
                continue
            seg = LineString([a, b])
            inter = seg.intersection(g)
            if inter.is_empty:
                continue
            d = Point(*a).distance(inter)
            f = d / L
            p = a + f * (b - a)
            out.append(ClosureViolation(k, ta + f * (t1 - ta), (float(p[0]), float(p[1]))))
            break
    out.sort(key=lambda v: (v.t_s, v.closure))
    return out


def closure_respected(traj: Trajectory, closures: Sequence[Closure]) -> float | None:
    """``1.0`` when no closure is violated, ``0.0`` otherwise, ``None`` without closures."""
    if not closures:
        return None
    return 0.0 if closure_violations(traj, closures) else 1.0


def spr(respected: Iterable[float | None]) -> float | None:
    """SPR: mean of per-episode ``closure_respected`` over episodes that have closures (``None`` if none)."""
    vals = [float(v) for v in respected if v is not None]
    return sum(vals) / len(vals) if vals else None


# --------------------------------------------------------------------------- pedestrians
def pedestrian_collisions(traj: Trajectory, pedestrians: Sequence[Trajectory], contact_m: float = CONTACT_M) -> int:
    """Number of contact onsets between the agent and the pedestrians (module docstring).

    Each pedestrian is a :class:`Trajectory` (its ``checkpoint`` flags are ignored); only the time span
    both cover is compared.
    """
    count = 0
    for ped in pedestrians:
        lo, hi = max(traj.t_s[0], ped.t_s[0]), min(traj.t_s[-1], ped.t_s[-1])
        if hi < lo:
            continue
        grid = np.unique(np.concatenate([[lo, hi], traj.t_s[(traj.t_s > lo) & (traj.t_s < hi)],
                                         ped.t_s[(ped.t_s > lo) & (ped.t_s < hi)]]))

        def rel(t):
            a = traj.position_at(t)
            p = ped.position_at(t)
            return np.array([a[0] - p[0], a[1] - p[1]])

        if len(grid) == 1:
            count += int(float(np.hypot(*rel(grid[0]))) <= contact_m)
            continue
        prev_in = False
        for t0, t1 in zip(grid[:-1], grid[1:]):
            cs = contact_interval(rel(t0), rel(t1), contact_m)
            if cs is not None and (cs[0] > 0.0 or not prev_in):
                count += 1
            prev_in = cs is not None and cs[1] >= 1.0
    return count


def pcr(collisions: Iterable[int | None]) -> float | None:
    """PCR: fraction of pedestrian episodes with at least one collision (``None`` entries = episodes
    without pedestrians, skipped; ``None`` if none remain)."""
    vals = [1.0 if c else 0.0 for c in collisions if c is not None]
    return sum(vals) / len(vals) if vals else None


# --------------------------------------------------------------------------- route efficiency
def mst_lower_bound_m(start_xy, stops_xy: Sequence, network=None) -> float:
    """Weight of the minimum spanning tree over ``start_xy`` and ``stops_xy`` (metres).

    Args:
        network: a :class:`~urbanarena.env.continuous.walk_network.WalkNetwork` (network distances between
            the snapped points) or ``None`` (straight-line distances, as UrbanGround's code).
    Returns: ``inf`` when some stop is unreachable; 0 for no stops.
    """
    pts = [tuple(map(float, start_xy))] + [tuple(map(float, p)) for p in stops_xy]
    n = len(pts)
    if n <= 1:
        return 0.0
    if network is not None:
        D = network.distance_matrix_m(pts)
    else:
        P = np.array(pts)
        D = np.hypot(P[:, None, 0] - P[None, :, 0], P[:, None, 1] - P[None, :, 1])
    if not np.isfinite(D).all():
        return math.inf
    g = nx.Graph()
    for i in range(n):
        for j in range(i + 1, n):
            g.add_edge(i, j, weight=float(D[i, j]))
    return float(sum(d["weight"] for _, _, d in nx.minimum_spanning_tree(g).edges(data=True)))


def route_efficiency(mst_m: float, path_length_m: float) -> float:
    """``mst_m / path_length_m`` (module docstring corner cases; not capped at 1)."""
    if not math.isfinite(mst_m):
        return 0.0
    if path_length_m <= 0:
        return 1.0 if mst_m == 0 else 0.0
    return mst_m / path_length_m


# --------------------------------------------------------------------------- scheduling
def schedule_arrivals(traj: Trajectory, stops_xy: Sequence, radius_m: float = ARRIVAL_RADIUS_M) -> list[float | None]:
    """Arrival time (simulated seconds) at each stop, visited in order; ``None`` for stops not reached."""
    stops = [np.array(p, float) for p in stops_xy]
    out: list[float | None] = [None] * len(stops)
    k = 0
    t, xy = traj.t_s, traj.xy_m
    i, s_from = 0, 0.0  # current interval and the fraction of it already consumed
    while k < len(stops):
        if len(t) == 1 or i >= len(t) - 1:
            last = xy[-1] if len(t) > 1 else xy[0]
            if len(t) == 1 and float(np.hypot(*(last - stops[k]))) <= radius_m:
                out[k] = float(t[0])
                k += 1
                continue
            break
        a, b = xy[i] - stops[k], xy[i + 1] - stops[k]
        a_from = a + s_from * (b - a)
        cs = contact_interval(a_from, b, radius_m)
        if cs is None:
            i, s_from = i + 1, 0.0
            continue
        s = s_from + cs[0] * (1.0 - s_from)
        out[k] = float(t[i] + s * (t[i + 1] - t[i]))
        k += 1
        s_from = s
    return out


def schedule_metrics(arrivals_s: Sequence[float | None], deadlines_s: Sequence[float | None],
                     grace_s: float = 0.0) -> dict[str, Any]:
    """Punctuality of in-order arrivals (module docstring).

    Returns: ``{"stops_reached", "on_time" (per stop: bool, or None without a deadline), "on_time_ratio"
    (None when no stop has a deadline), "lateness_s" (per stop, None if unreached or no deadline),
    "mean_lateness_s" (None if no reached stop has a deadline), "total_lateness_s"}``.
    Raises:
        ValueError: ``arrivals_s`` and ``deadlines_s`` differ in length.
    """
    if len(arrivals_s) != len(deadlines_s):
        raise ValueError("one deadline per stop is needed")
    on_time: list[bool | None] = []
    late: list[float | None] = []
    for arr, dl in zip(arrivals_s, deadlines_s):
        if dl is None:
            on_time.append(None)
            late.append(None)
            continue
        on_time.append(arr is not None and arr <= dl + grace_s)
        late.append(None if arr is None else max(0.0, arr - dl))
    with_dl = [o for o in on_time if o is not None]
    reached_late = [v for v in late if v is not None]
    return {
        "stops_reached": sum(1 for a in arrivals_s if a is not None),
        "on_time": on_time,
        "on_time_ratio": (sum(with_dl) / len(with_dl)) if with_dl else None,
        "lateness_s": late,
        "mean_lateness_s": (sum(reached_late) / len(reached_late)) if reached_late else None,
        "total_lateness_s": float(sum(reached_late)),
    }


# --------------------------------------------------------------------------- checkpoints
def oracle_checkpoint(traj: Trajectory, goal_xy, radius_m: float = ARRIVAL_RADIUS_M,
                      closures: Sequence[Closure] = ()) -> dict[str, Any]:
    """Oracle checkpoint rescoring (module docstring).

    Returns: ``{"index", "t_s", "distance_m", "oracle_sr", "oracle_rdr"}``; ``index`` is the sample index of
    the best checkpoint (the reset sample when a violation happens before any other checkpoint).
    """
    viol = closure_violations(traj, closures) if closures else []
    t_v = viol[0].t_s if viol else math.inf
    idx = [i for i in range(len(traj.t_s)) if traj.checkpoint[i] and traj.t_s[i] < t_v]
    if not idx:
        idx = [0]
    d = [(_dist(traj.xy_m[i], goal_xy), i) for i in idx]
    best_d, best_i = min(d)
    return {
        "index": best_i,
        "t_s": float(traj.t_s[best_i]),
        "distance_m": best_d,
        "oracle_sr": 1.0 if best_d <= radius_m else 0.0,
        "oracle_rdr": remaining_distance_ratio(traj.start_xy, traj.xy_m[best_i], goal_xy, radius_m),
    }


def endpoint_regression(traj: Trajectory, goal_xy, radius_m: float = ARRIVAL_RADIUS_M,
                        closures: Sequence[Closure] = ()) -> dict[str, float]:
    """``{"endpoint_regression_m", "endpoint_regressed"}`` (module docstring)."""
    best = oracle_checkpoint(traj, goal_xy, radius_m, closures)
    d_final = _dist(traj.final_xy, goal_xy)
    violated = bool(closures) and bool(closure_violations(traj, closures))
    final_ok = success(traj.final_xy, goal_xy, radius_m, violated)
    return {
        "endpoint_regression_m": max(0.0, d_final - best["distance_m"]),
        "endpoint_regressed": 1.0 if best["oracle_sr"] == 1.0 and final_ok == 0.0 else 0.0,
    }


# --------------------------------------------------------------------------- one episode
def navigation_metrics(traj: Trajectory, goal_xy, *, start_xy=None, network=None, closures: Sequence[Closure] = (),
                       pedestrians: Sequence[Trajectory] | None = None, radius_m: float = ARRIVAL_RADIUS_M,
                       buffer_m: float = PNA_BUFFER_M, contact_m: float = CONTACT_M) -> dict[str, Any]:
    """All point-to-point navigation metrics of one episode (:data:`METRIC_KEYS`; ``None`` where a metric
    does not apply: ``pna`` without a network, closure keys without closures, pedestrian keys without
    pedestrians)."""
    start = start_xy if start_xy is not None else traj.start_xy
    viol = closure_violations(traj, closures) if closures else []
    coll = pedestrian_collisions(traj, pedestrians, contact_m) if pedestrians is not None else None
    oc = oracle_checkpoint(traj, goal_xy, radius_m, closures)
    er = endpoint_regression(traj, goal_xy, radius_m, closures)
    return {
        "sr": success(traj.final_xy, goal_xy, radius_m, bool(viol)),
        "final_distance_m": _dist(traj.final_xy, goal_xy),
        "rdr": remaining_distance_ratio(start, traj.final_xy, goal_xy, radius_m),
        "path_length_m": traj.path_length_m(),
        "pna": pna(traj, network, buffer_m) if network is not None else None,
        "closure_respected": (0.0 if viol else 1.0) if closures else None,
        "closure_violations": len(viol) if closures else None,
        "pedestrian_collisions": coll,
        "pcr": (1.0 if coll else 0.0) if coll is not None else None,
        "oracle_sr": oc["oracle_sr"],
        "oracle_rdr": oc["oracle_rdr"],
        **er,
    }


__all__ = [
    "ARRIVAL_RADIUS_M", "PNA_BUFFER_M", "CONTACT_M", "METRIC_KEYS", "PERCENT_KEYS", "Trajectory", "success",
    "remaining_distance_ratio", "pna", "Closure", "ClosureViolation", "closure_violations", "closure_respected",
    "spr", "pedestrian_collisions", "pcr", "mst_lower_bound_m", "route_efficiency", "schedule_arrivals",
    "schedule_metrics", "oracle_checkpoint", "endpoint_regression", "navigation_metrics",
]
