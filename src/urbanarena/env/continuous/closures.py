"""Road closures of the dynamic city (UrbanGround's ConstrainedNav / DynamicClosureNav semantics).

A closure is a polyline ``line_xy_m`` (local metres) -- UrbanGround's
``restrictedZones``: "a closure line through waypoints", crossed when a movement
segment meets it -- optionally widened to a closed zone of half-width
``half_width_m`` around the line (flat ends: a blocked street segment). Its
**notice** is delivered in the first observation whose simulated time is at or
after ``notice_after_s`` (0: in the reset observation, i.e. disclosed up front as
ConstrainedNav; 30 s is DynamicClosureNav's delay). From that observation's time
on -- not from ``notice_after_s`` itself, as UrbanGround enforces the closure only
once the notice was delivered -- meeting the closure geometry is a **violation**:
the episode ends at once (``stop_reason = "closure_violation"``) and fails
(``sr`` = 0 via :func:`urbanarena.tasks.metrics.urbanground.closure_violations`,
which the environment's ``active_from_s`` reproduces exactly). Before the notice,
walking through it is allowed and not a violation.

Physical barriers. By default (``physical = false``) a closure is *not* an
obstacle: as in UrbanGround, the agent can walk through it and fail, which is what
SPR measures. The barrier is drawn (red/white fence, first-person view and map)
from the notice on -- UrbanGround: "a road closure has just appeared on the map".
With ``physical = true`` the fence stands from ``t = 0``: it is drawn from the
start and blocks motion like a wall (the line buffered by half the fence's 0.1 m
thickness, or the zone; grown by the agent's radius and never cut by passages);
the notice still comes at ``notice_after_s``, and a violation is then impossible
(the episode's ``closure_respected`` is 1 by construction).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import shapely
from shapely.geometry import LineString, Point, Polygon

from urbanarena.env.continuous.spec_record import check_record
from urbanarena.errors import TaskFormatError
from urbanarena.render.scene3d.dynamic import BARRIER_THICKNESS_M


def _num(v: Any, record: str, field: str, lo: float | None = None) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise TaskFormatError(None, record, f"{field} must be a number, got {v!r}") from None
    if not math.isfinite(x) or (lo is not None and x < lo):
        raise TaskFormatError(None, record, f"{field} must be a finite number >= {lo}, got {v!r}")
    return x


def parse_points(v: Any, record: str, field: str, min_points: int = 2) -> tuple[tuple[float, float], ...]:
    """``[[x, y], ...]`` -> tuple of float pairs (finite), at least ``min_points`` of them with two distinct.

    Raises:
        TaskFormatError: malformed list (naming ``record`` and ``field``).
    """
    if not isinstance(v, (list, tuple)) or len(v) < min_points:
        raise TaskFormatError(None, record, f"{field} must be a list of at least {min_points} [x, y] points")
    out = []
    for k, p in enumerate(v):
        if not isinstance(p, (list, tuple)) or len(p) != 2:
            raise TaskFormatError(None, record, f"{field}[{k}] must be an [x, y] pair, got {p!r}")
        out.append((_num(p[0], record, f"{field}[{k}][0]"), _num(p[1], record, f"{field}[{k}][1]")))
    if min_points >= 2 and len(set(out)) < 2:
        raise TaskFormatError(None, record, f"{field} needs two distinct points")
    return tuple(out)


@dataclass(frozen=True)
class ClosureSpec:
    """One road closure (module docstring).

    Attributes:
        id: identifier (unique within a task).
        line_xy_m: the closure line ``((x_m, y_m), ...)``, local metres, >= 2 points.
        half_width_m: 0 (default): the line itself; > 0: the zone within this distance of the line.
        notice_after_s: simulated seconds after reset from which the notice is delivered (>= 0).
        physical: the barrier stands and blocks motion from ``t = 0``.
        label: name used in the notice (default: ``id``).
    """

    id: str
    line_xy_m: tuple[tuple[float, float], ...]
    half_width_m: float = 0.0
    notice_after_s: float = 0.0
    physical: bool = False
    label: str | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], record: str = "closure") -> "ClosureSpec":
        """Parse ``{"id", "line_xy_m", "half_width_m"?, "notice_after_s"?, "physical"?, "label"?}``.

        Raises:
            TaskFormatError: missing/unknown keys, bad numbers or points.
        """
        check_record(d, record, "a closure", "closure",
                     {"id", "line_xy_m", "half_width_m", "notice_after_s", "physical", "label"})
        if not isinstance(d.get("id"), str) or not d["id"]:
            raise TaskFormatError(None, record, "a closure needs a non-empty string id")
        phys = d.get("physical", False)
        if not isinstance(phys, bool):
            raise TaskFormatError(None, record, f"physical must be true or false, got {phys!r}")
        label = d.get("label")
        if label is not None and not isinstance(label, str):
            raise TaskFormatError(None, record, f"label must be a string, got {label!r}")
        return cls(d["id"], parse_points(d.get("line_xy_m"), record, "line_xy_m"),
                   _num(d.get("half_width_m", 0.0), record, "half_width_m", 0.0),
                   _num(d.get("notice_after_s", 0.0), record, "notice_after_s", 0.0), phys, label)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "line_xy_m": [list(p) for p in self.line_xy_m],
                               "half_width_m": self.half_width_m, "notice_after_s": self.notice_after_s,
                               "physical": self.physical}
        if self.label is not None:
            out["label"] = self.label
        return out

    @property
    def zone(self) -> bool:
        """A closed zone (``half_width_m > 0``) rather than a line."""
        return self.half_width_m > 0

    def geometry(self):
        """The closed geometry: the LineString, or (zone) the line buffered by ``half_width_m`` with flat ends."""
        ln = LineString(self.line_xy_m)
        if not self.zone:
            return ln
        return ln.buffer(self.half_width_m, cap_style="flat", join_style="mitre")

    def metric_coords(self) -> tuple[tuple[float, float], ...]:
        """Coordinates for :class:`urbanarena.tasks.metrics.urbanground.Closure`: the line, or the zone's
        exterior ring (``zone=True``)."""
        if not self.zone:
            return self.line_xy_m
        g = self.geometry()
        if not isinstance(g, Polygon):  # a self-overlapping line: keep its largest part
            g = max(shapely.get_parts(g), key=lambda p: p.area)
        return tuple((float(x), float(y)) for x, y in g.exterior.coords)

    def barrier_lines(self) -> list[tuple[tuple[float, float], ...]]:
        """Where the fence stands: along the line, or around the zone's outline."""
        if not self.zone:
            return [self.line_xy_m]
        return [self.metric_coords()]

    def obstacle(self):
        """The physical barrier's footprint (before growing by the agent's radius): the zone, or the line
        buffered by half the fence thickness (flat ends)."""
        if self.zone:
            return self.geometry()
        return LineString(self.line_xy_m).buffer(BARRIER_THICKNESS_M / 2.0, cap_style="flat", join_style="mitre")


def first_crossing(t_s: np.ndarray, xy_m: np.ndarray, geom, active_from_s: float
                   ) -> tuple[float, tuple[float, float]] | None:
    """First time and point at which a piecewise-linear path meets ``geom`` at or after ``active_from_s``.

    The rule of :func:`urbanarena.tasks.metrics.urbanground.closure_violations` (a segment, or its part
    after ``active_from_s``, that meets the geometry; a standing point that lies on it), written here
    because the environment may not import the task layer.

    Args:
        t_s: ``(K,)`` non-decreasing simulated seconds; xy_m: ``(K, 2)`` positions (straight lines at
            constant speed between samples).
    Returns: ``(t_s, (x_m, y_m))`` or ``None``.
    """
    t = np.asarray(t_s, float)
    xy = np.asarray(xy_m, float).reshape(-1, 2)
    if len(t) == 1:
        if t[0] >= active_from_s and geom.intersects(Point(*xy[0])):
            return float(t[0]), (float(xy[0, 0]), float(xy[0, 1]))
        return None
    for i in range(len(t) - 1):
        t0, t1 = float(t[i]), float(t[i + 1])
        if t1 < active_from_s:
            continue
        if t0 < active_from_s:
            f = (active_from_s - t0) / (t1 - t0) if t1 > t0 else 1.0
            a = xy[i] + f * (xy[i + 1] - xy[i])
        else:
            a = xy[i]
        b = xy[i + 1]
        ta = max(t0, active_from_s)
        L = math.hypot(*(b - a))
        if L == 0.0:
            if geom.intersects(Point(*a)):
                return ta, (float(a[0]), float(a[1]))
            continue
        inter = LineString([a, b]).intersection(geom)
        if inter.is_empty:
            continue
        f = Point(*a).distance(inter) / L
        p = a + f * (b - a)
        return ta + f * (t1 - ta), (float(p[0]), float(p[1]))
    return None


def notice_text(closures: Sequence[ClosureSpec], frame) -> str:
    """The closure notice shown in the observation text (lat/lon waypoints, as UrbanGround lists them).

    Args:
        closures: the closures announced now; frame: the city's :class:`~urbanarena.world.geo.LocalFrame`.
    """
    lines = []
    for c in closures:
        pts = "; ".join(f"({float(la):.6f}, {float(lo):.6f})" for la, lo in
                        (frame.to_latlon(x, y) for x, y in c.line_xy_m))
        kind = f"closed zone within {c.half_width_m:g} m of the line" if c.zone else "closure line"
        lines.append(f"- {c.label or c.id}: {kind} through waypoints [{pts}]")
    return ("NOTICE: road closure. The following segment(s) are closed and are shown on the map; they must "
            "not be crossed for the rest of this task (crossing one from now on fails the task):\n"
            + "\n".join(lines))


__all__ = ["ClosureSpec", "first_crossing", "notice_text", "parse_points"]
