"""Reading the map images a map-navigation agent is given (numpy + OpenCV; no privileged state).

The VLM agent of a ``map_navigation`` task sees two north-up street maps (``urbanarena.render.maps``):
the task's reference map (blue START disc, red GOAL disc, a scale bar) and, every step, the
current-location map (a red disc at the agent's position with a red triangle pointing along the camera
heading, a scale bar). The two maps are drawn over different extents, so their pixels do not line up.
These functions read them the way a person would (ours):

* :func:`marker_disc` finds a filled disc of one colour: the pixel of the colour mask farthest from
  the mask's border (a distance transform), so a label or the heading triangle next to the disc does
  not move it (the disc is wider than the label's strokes and the triangle's tip);
* :func:`agent_marker` gives the agent's disc centre and the heading (compass degrees) from the
  centre to the farthest marker pixel (the triangle's tip);
* :func:`scale_bar_m_per_px` reads the scale bar in the bottom-left corner: the bar's length in pixels
  (the longest run of dark pixels on a row) and its label, recognised by drawing each label the
  renderer can write (``1, 2, 5 x 10^k m``) with the same OpenCV font and keeping the best overlap;
* :class:`GoalTracker` registers the two maps by the start: at the first step the agent stands on the
  START marker, so the goal's offset in metres is the reference map's GOAL - START pixels times its
  scale; later, the agent's offset from its first position on the location map (times that map's
  scale) is subtracted. The result is the goal relative to the agent, east and north in metres.

Every reader returns ``None`` where the image does not show what it looks for (e.g. an all-zero
image, which is what the blind ablation gets).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: marker colours (RGB) of :class:`urbanarena.render.maps.MapStyle` (the map legend the prompt explains)
RED = (220, 30, 30)
BLUE = (30, 90, 230)
_FONT_SCALE = 0.35
_NICE = tuple(m * 10 ** k for k in range(0, 5) for m in (1, 2, 5))


def colour_mask(img: np.ndarray, rgb: tuple[int, int, int], tol: int = 60) -> np.ndarray:
    """``(H, W)`` uint8 mask (1 where every channel is within ``tol`` of ``rgb``, else 0)."""
    import cv2

    a = np.ascontiguousarray(np.asarray(img)[:, :, :3], dtype=np.uint8)
    lo = np.clip(np.asarray(rgb) - tol, 0, 255).astype(np.uint8)
    hi = np.clip(np.asarray(rgb) + tol, 0, 255).astype(np.uint8)
    return (cv2.inRange(a, lo, hi) > 0).astype(np.uint8)


def marker_disc(img: np.ndarray | None, rgb: tuple[int, int, int], min_radius_px: float = 3.0
                ) -> tuple[float, float] | None:
    """``(u, v)`` pixel centre of the widest blob of colour ``rgb`` (module docstring), or ``None`` when no
    blob is at least ``min_radius_px`` wide (no marker, a blank image)."""
    import cv2

    if img is None:
        return None
    m = colour_mask(img, rgb)
    if not m.any():
        return None
    d = cv2.distanceTransform(m, cv2.DIST_L2, 5)
    peak = float(d.max())
    if peak < min_radius_px:
        return None
    vs, us = np.nonzero(d >= peak - 0.5)  # the plateau of the disc's centre
    return float(us.mean()), float(vs.mean())


def agent_marker(img: np.ndarray | None) -> tuple[float, float, float] | None:
    """``(u, v, heading_deg)`` of the current-location map's agent marker (compass heading, 0 = north =
    image up, 90 = east), or ``None``."""
    c = marker_disc(img, RED)
    if c is None:
        return None
    return c[0], c[1], heading_at(img, c[0], c[1])


def heading_at(img: np.ndarray, u: float, v: float, max_r_px: float = 30.0,
               ignore: np.ndarray | None = None) -> float:
    """Compass heading (degrees) of the agent marker centred at pixel ``(u, v)``: from the centre to the
    farthest red pixel within ``max_r_px`` (the triangle's tip, 14 px out); 0 when none. ``ignore``: an
    ``(H, W)`` mask of red pixels that are not the marker's (other discs next to it)."""
    r = int(math.ceil(max_r_px))
    r0, c0 = max(0, int(v) - r), max(0, int(u) - r)
    m = colour_mask(np.asarray(img)[r0:int(v) + r + 1, c0:int(u) + r + 1], RED)
    if ignore is not None:
        m = m & (1 - np.asarray(ignore, np.uint8)[r0:int(v) + r + 1, c0:int(u) + r + 1])
    vs, us = np.nonzero(m)
    du, dv = us + c0 - u, vs + r0 - v
    r2 = du * du + dv * dv
    near = r2 <= max_r_px ** 2  # the marker only
    if not near.any():
        return 0.0
    du, dv, r2 = du[near], dv[near], r2[near]
    far = r2 >= r2.max() - 4.0
    tu, tv = float(du[far].mean()), float(dv[far].mean())
    return math.degrees(math.atan2(tu, -tv)) % 360.0


def _dark(img: np.ndarray) -> np.ndarray:
    return np.asarray(img)[:, :, :3].max(axis=2) < 90


def scale_bar_m_per_px(img: np.ndarray | None) -> float | None:
    """Metres per pixel of a map, read from its scale bar (module docstring), or ``None``."""
    import cv2

    if img is None:
        return None
    a = np.asarray(img)
    h, w = a.shape[:2]
    region = _dark(a[h // 2:, : w // 2])
    best = (0, 0, 0)  # run length, row, start column
    for r in range(region.shape[0]):
        row = region[r]
        if not row.any():
            continue
        # longest run of dark pixels on this row
        padded = np.concatenate([[0], row.astype(np.int8), [0]])
        edges = np.flatnonzero(np.diff(padded))
        starts, ends = edges[::2], edges[1::2]
        k = int(np.argmax(ends - starts))
        if ends[k] - starts[k] > best[0]:
            best = (int(ends[k] - starts[k]), r, int(starts[k]))
    length, r, c0 = best
    if length < 10:
        return None
    bar_px = length - 3  # a cv2.line of thickness 2 from x0 to x0 + L covers x0 - 1 .. x0 + L + 1
    y0 = h // 2 + r + 1  # the bar's centre row (the first of its two full rows is found)
    x0 = c0 + 1
    top, left = max(0, y0 - 12), x0 + bar_px + 1
    crop = a[top: y0 + 8, left: left + 64, :3]
    if crop.shape[0] < 12 or crop.shape[1] < 20:
        return None
    bg = np.median(crop.reshape(-1, 3), axis=0).astype(np.uint8)
    if float(bg.mean()) < 128.0:  # a scale bar is dark on a light map; a dark image has none
        return None
    crop = crop.astype(np.int16)
    scores = []
    for nice in _NICE:
        best_err = math.inf
        for dx in (2, 3, 4, 5, 6):  # the label starts 4 px after the bar's end (renderer), give or take
            for dy in (2, 3, 4):
                canvas = np.empty(crop.shape, np.uint8)
                canvas[:] = bg
                cv2.putText(canvas, f"{nice:g} m", (dx, y0 - top + dy), cv2.FONT_HERSHEY_SIMPLEX, _FONT_SCALE,
                            (20, 20, 20), 1, cv2.LINE_AA)
                best_err = min(best_err, float(np.abs(canvas.astype(np.int16) - crop).mean()))
        scores.append(-best_err)
    nice = _NICE[int(np.argmax(scores))]
    return float(nice) / float(bar_px)


@dataclass
class ReferenceReading:
    """What the reference map shows: START and GOAL pixel centres and the map's metres per pixel."""

    start_px: tuple[float, float]
    goal_px: tuple[float, float]
    m_per_px: float

    def goal_offset_m(self) -> tuple[float, float]:
        """GOAL - START, east and north metres."""
        return ((self.goal_px[0] - self.start_px[0]) * self.m_per_px,
                -(self.goal_px[1] - self.start_px[1]) * self.m_per_px)


def read_reference(img: np.ndarray | None) -> ReferenceReading | None:
    """The reference map's START, GOAL and scale, or ``None`` when any is missing."""
    s, g = marker_disc(img, BLUE), marker_disc(img, RED)
    m = scale_bar_m_per_px(img) if s is not None and g is not None else None
    if s is None or g is None or m is None:
        return None
    return ReferenceReading(s, g, m)


class GoalTracker:
    """The goal relative to the agent, from the two maps (module docstring); one per episode.

    ``update(location_map, reference_map)`` returns ``(east_m, north_m, heading_deg)`` or ``None`` when a
    map cannot be read. The reference map and the first step's agent position are read once.
    """

    def __init__(self) -> None:
        self.ref: ReferenceReading | None = None
        self._ref_read = False
        self.origin_px: tuple[float, float] | None = None
        self.loc_m_per_px: float | None = None

    def update(self, location_map: np.ndarray | None, reference_map: np.ndarray | None
               ) -> tuple[float, float, float] | None:
        if not self._ref_read:
            self.ref = read_reference(reference_map)
            self._ref_read = True
        a = agent_marker(location_map)
        if self.ref is None or a is None:
            return None
        if self.loc_m_per_px is None:
            self.loc_m_per_px = scale_bar_m_per_px(location_map)
            if self.loc_m_per_px is None:
                return None
        if self.origin_px is None:
            self.origin_px = (a[0], a[1])
        ge, gn = self.ref.goal_offset_m()
        ae = (a[0] - self.origin_px[0]) * self.loc_m_per_px
        an = -(a[1] - self.origin_px[1]) * self.loc_m_per_px
        return ge - ae, gn - an, a[2]


__all__ = ["BLUE", "GoalTracker", "RED", "ReferenceReading", "agent_marker", "colour_mask", "heading_at", "marker_disc",
           "read_reference", "scale_bar_m_per_px"]
