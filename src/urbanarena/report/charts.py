"""Figures of the HTML report, drawn with matplotlib's Agg backend (no display, no pyplot state) and
returned as base64 PNG text for ``<img src="data:image/png;base64,...">``, so the report is one file.

* :func:`difficulty_chart` — grouped bars: success per difficulty, one bar per run, 95 % CI whiskers;
* :func:`trajectory_map` — one episode over the city's street graph (local metres, x east, y north,
  north up, equal scale): streets grey, path blue, start green, end black, goal red with its success
  radius; the city's attribution text (``© OpenStreetMap contributors`` for OSM cities) in the corner.
  Continuous (UrbanGround) episodes add their other goal points / stops (red circles with the radius),
  road closures (red lines with a white core, as the environment's map draws them; zones as red
  polygons) and restricted zones (hatched orange polygons).
"""

from __future__ import annotations

import base64
import io
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.patches import Circle, Polygon

#: difficulty order on the x axis (others follow alphabetically)
DIFFICULTY_ORDER = ("easy", "medium", "hard")


def _png_b64(fig: Figure, dpi: int = 96) -> str:
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return base64.b64encode(buf.getvalue()).decode("ascii")


def order_difficulties(names: Sequence[str]) -> list[str]:
    """Difficulties in :data:`DIFFICULTY_ORDER`, the rest sorted after them."""
    known = [d for d in DIFFICULTY_ORDER if d in names]
    return known + sorted(n for n in set(names) if n not in DIFFICULTY_ORDER)


def difficulty_chart(values: Mapping[str, Mapping[str, tuple[float | None, list[float] | None]]], *,
                     ylabel: str, title: str) -> str:
    """Grouped bar chart as base64 PNG.

    Args:
        values: ``{run label: {difficulty: (mean, [ci low, ci high] | None)}}``, means in percent.
        ylabel, title: axis label and title.
    """
    diffs = order_difficulties(sorted({d for v in values.values() for d in v}))
    labels = list(values)
    fig = Figure(figsize=(7.0, 3.6))
    ax = fig.add_subplot(1, 1, 1)
    n = max(1, len(labels))
    width = 0.8 / n
    for i, lab in enumerate(labels):
        xs, ys, lo, hi = [], [], [], []
        for j, d in enumerate(diffs):
            mean, ci = values[lab].get(d, (None, None))
            if mean is None:
                continue
            xs.append(j - 0.4 + width * (i + 0.5))
            ys.append(mean)
            lo.append(mean - ci[0] if ci else 0.0)
            hi.append(ci[1] - mean if ci else 0.0)
        ax.bar(xs, ys, width=width * 0.95, label=lab, yerr=[lo, hi], capsize=3)
    ax.set_xticks(range(len(diffs)), diffs)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 105)
    ax.set_title(title, fontsize=10)
    # the legend sits to the right of the axes, so no bar (an oracle's 100 % hard bar) is ever under it
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    return _png_b64(fig)


def trajectory_map(city: Any, path_xy: Sequence[tuple[float, float]], *, goal_xy: tuple[float, float] | None = None,
                   radius_m: float | None = None, title: str = "", attribution: str | None = None,
                   pad_m: float = 40.0, other_goals_xy: Sequence[tuple[float, float]] = (),
                   closures: Sequence[tuple[Sequence[tuple[float, float]], bool]] = (),
                   zones: Sequence[Sequence[tuple[float, float]]] = ()) -> str:
    """One episode over the street graph as base64 PNG (module docstring).

    Args:
        city: the run's city (its node ``x_m``/``y_m`` and edges are drawn).
        path_xy: the positions walked, city-frame metres, start first (at least one).
        goal_xy, radius_m: the goal point and success radius (metres), when known.
        title: figure title; attribution: text drawn bottom right (the city's attribution).
        pad_m: margin around the path and goal, metres.
        other_goals_xy: further goal points / stops (metres), drawn like the goal with ``radius_m``.
        closures: ``(coords, zone)`` road closures (metres): lines, or polygons when ``zone``.
        zones: restricted-zone rings (metres).
    Raises:
        ValueError: an empty path.
    """
    if not path_xy:
        raise ValueError("trajectory_map needs at least one position")
    pts = [tuple(map(float, p)) for p in path_xy]
    others = [tuple(map(float, g)) for g in other_goals_xy]
    xs = [p[0] for p in pts] + ([goal_xy[0]] if goal_xy else []) + [g[0] for g in others]
    ys = [p[1] for p in pts] + ([goal_xy[1]] if goal_xy else []) + [g[1] for g in others]
    r = float(radius_m or 0.0)
    cx, cy = (min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2
    half = max(max(xs) - min(xs), max(ys) - min(ys)) / 2 + pad_m + r  # a square extent: equal scale, no distortion
    xmin, xmax, ymin, ymax = cx - half, cx + half, cy - half, cy + half
    segs = []
    g = city.graph
    for u, v in g.edges():
        (x1, y1), (x2, y2) = city.xy(u), city.xy(v)
        if max(x1, x2) < xmin or min(x1, x2) > xmax or max(y1, y2) < ymin or min(y1, y2) > ymax:
            continue
        segs.append([(x1, y1), (x2, y2)])
    fig = Figure(figsize=(4.2, 4.2))
    ax = fig.add_subplot(1, 1, 1)
    ax.add_collection(LineCollection(segs, colors="#bbbbbb", linewidths=1.0, zorder=1))
    for k, ring in enumerate(zones):
        ax.add_patch(Polygon([tuple(p) for p in ring], closed=True, facecolor="#ff990033", edgecolor="#cc6600",
                             hatch="//", linewidth=0.8, zorder=2, label="restricted zone" if k == 0 else None))
    for k, (coords, is_zone) in enumerate(closures):
        pts_c = [tuple(map(float, p)) for p in coords]
        lab = "closure" if k == 0 else None
        if is_zone and len(pts_c) >= 3:
            ax.add_patch(Polygon(pts_c, closed=True, facecolor="#ff000033", edgecolor="#cc0000", linewidth=1.2,
                                 zorder=2, label=lab))
        elif len(pts_c) >= 2:
            cx_, cy_ = [p[0] for p in pts_c], [p[1] for p in pts_c]
            ax.plot(cx_, cy_, color="#cc0000", linewidth=4.0, zorder=2, solid_capstyle="butt", label=lab)
            ax.plot(cx_, cy_, color="white", linewidth=1.5, zorder=2, solid_capstyle="butt")
    for g in others:
        if r > 0:
            ax.add_patch(Circle(g, r, facecolor="#ff000011", edgecolor="#cc0000", linewidth=0.6, linestyle="--",
                                zorder=2))
        ax.plot([g[0]], [g[1]], marker="*", color="#ff6666", markersize=9, zorder=5)
    if goal_xy is not None:
        if r > 0:
            ax.add_patch(Circle(goal_xy, r, facecolor="#ff000022", edgecolor="#cc0000", linewidth=0.8, zorder=2))
        ax.plot([goal_xy[0]], [goal_xy[1]], marker="*", color="#cc0000", markersize=12, zorder=5, label="goal")
    ax.plot(xs[:len(pts)], ys[:len(pts)], color="#1f5fbf", linewidth=1.8, zorder=3, label="path")
    ax.plot([pts[0][0]], [pts[0][1]], marker="o", color="#1a9641", markersize=7, zorder=4, label="start")
    ax.plot([pts[-1][0]], [pts[-1][1]], marker="X", color="black", markersize=7, zorder=4, label="end")
    ax.set_xlim(xmin, xmax)
    ax.set_ylim(ymin, ymax)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel("x east (m)", fontsize=7)
    ax.set_ylabel("y north (m)", fontsize=7)
    ax.tick_params(labelsize=6)
    ax.legend(fontsize=6, loc="upper left")
    if title:
        ax.set_title("\n".join(textwrap.wrap(title, 64)), fontsize=7)
    if attribution:
        fig.text(0.99, 0.01, attribution, ha="right", va="bottom", fontsize=6, color="#333333")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return _png_b64(fig)


__all__ = ["DIFFICULTY_ORDER", "difficulty_chart", "order_difficulties", "trajectory_map"]
