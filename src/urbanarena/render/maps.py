"""Top-down map images of a city's pose graph (local x east / y north metres, north up).

Maps drawn here:

* :meth:`MapRenderer.location_map` — the current-location map: the street
  graph with the agent's marker (a red disc at its position and a red
  triangle pointing along its heading);
* :meth:`MapRenderer.grid_map` — the ``n x n`` (default 5 x 5) labelled grid
  reference map; cell labels ``x:N y:M``;
* :meth:`MapRenderer.start_goal_map` — start (blue) and goal (red) markers.

Geometry: the map shows an :class:`Extent` (metres in the city's local frame)
scaled uniformly (same metres per pixel on both axes), centred in the canvas
above an attribution band (when the city has attribution text). Pixel
coordinates follow the view convention: integers at pixel centres, so a
world point ``(x_m, y_m)`` is drawn at::

    u = ox + (x_m - xmin) * s - 0.5
    v = oy + (ymax - y_m) * s - 0.5

with ``s`` pixels per metre and ``(ox, oy)`` the top-left corner of the
extent on the canvas (continuous coordinates).

Grid axis convention (issue 4, as 360CityArena's localization data): the
extent is cut into ``n`` equal columns and ``n`` equal rows (in metres),
0-based; ``x`` counts columns from the west (left, ``x:0``) to the east; ``y``
counts rows from the **north (top, ``y:0``) to the south**, as the map is read.
:meth:`MapRenderer.grid_cell` gives the cell of a position (points on the
east/south boundary belong to the last cell); task generators must use it so
the ground truth and the drawn labels agree.

The static background (streets, grid, legend, attribution) is drawn once per
renderer and cached; each call copies it and draws the markers (well under a
millisecond at 640x360). Drawing uses OpenCV; text is ASCII (non-ASCII
characters in the attribution are transliterated, e.g. the copyright sign to
``(c)``).
"""

from __future__ import annotations

import math
import threading
import unicodedata
from dataclasses import dataclass
from typing import Iterable

import cv2
import numpy as np

from urbanarena.world.city import City

BLUE = (30, 90, 230)
RED = (220, 20, 20)


@dataclass(frozen=True)
class Extent:
    """Axis-aligned rectangle in local metres (x east, y north)."""

    xmin: float
    ymin: float
    xmax: float
    ymax: float

    def __post_init__(self):
        if not (self.xmax > self.xmin and self.ymax > self.ymin):
            raise ValueError(f"empty extent {self}")

    @property
    def width_m(self) -> float:
        return self.xmax - self.xmin

    @property
    def height_m(self) -> float:
        return self.ymax - self.ymin

    @classmethod
    def of_points(cls, xs: Iterable[float], ys: Iterable[float], margin_frac: float = 0.05,
                  min_size_m: float = 20.0) -> "Extent":
        """Bounding box of points grown by ``margin_frac`` of its size on each side (at least ``min_size_m`` wide/high)."""
        xs, ys = np.asarray(list(xs), float), np.asarray(list(ys), float)
        if xs.size == 0:
            raise ValueError("no points")
        x0, x1, y0, y1 = xs.min(), xs.max(), ys.min(), ys.max()
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        w = max((x1 - x0) * (1 + 2 * margin_frac), min_size_m)
        h = max((y1 - y0) * (1 + 2 * margin_frac), min_size_m)
        return cls(cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)

    @classmethod
    def of_city(cls, city: City, margin_frac: float = 0.05, min_size_m: float = 20.0) -> "Extent":
        """Bounding box of the city's nodes (see :meth:`of_points`)."""
        g = city.graph
        return cls.of_points((d["x_m"] for _, d in g.nodes(data=True)), (d["y_m"] for _, d in g.nodes(data=True)),
                             margin_frac, min_size_m)

    @classmethod
    def around(cls, x_m: float, y_m: float, radius_m: float) -> "Extent":
        """Square of half-size ``radius_m`` centred on ``(x_m, y_m)``."""
        return cls(x_m - radius_m, y_m - radius_m, x_m + radius_m, y_m + radius_m)


@dataclass(frozen=True)
class MapStyle:
    """Colours (RGB) and sizes (pixels) of map drawings."""

    background: tuple[int, int, int] = (245, 243, 238)
    street: tuple[int, int, int] = (150, 150, 150)
    street_px: int = 2
    node: tuple[int, int, int] | None = None
    node_px: int = 1
    grid: tuple[int, int, int] = (60, 60, 60)
    text: tuple[int, int, int] = (20, 20, 20)
    agent: tuple[int, int, int] = RED
    agent_radius_px: int = 6
    agent_tip_px: int = 14
    start: tuple[int, int, int] = BLUE
    goal: tuple[int, int, int] = RED
    marker_radius_px: int = 7
    pad_px: int = 6
    attribution_scale: float = 0.33
    scale_bar: bool = True


def ascii_text(text: str) -> str:
    """Transliterate to printable ASCII for OpenCV's Hershey fonts (``(c)`` for the copyright sign)."""
    text = text.replace("\u00a9", "(c)").replace("\u2013", "-").replace("\u2014", "-")
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return "".join(ch if 32 <= ord(ch) < 127 else " " for ch in text)


def _wrap_lines(text: str, font, scale: float, thick: int, max_w: int) -> list[str]:
    words, lines, cur = text.split(), [], ""
    for wd in words:
        cand = f"{cur} {wd}".strip()
        if cv2.getTextSize(cand, font, scale, thick)[0][0] <= max_w or not cur:
            cur = cand
        else:
            lines.append(cur)
            cur = wd
    if cur:
        lines.append(cur)
    return lines


class MapRenderer:
    """Draws map images of a city over a fixed extent; the static background is cached.

    Args:
        city: the city (node ``x_m``/``y_m`` and edges are drawn).
        width, height: image size in pixels.
        extent: area shown (default: the city's node bounding box + 5 %).
        attribution: text printed at the bottom; default ``city.meta.attribution``
            (pass ``""`` to omit).
        style: :class:`MapStyle`.
    """

    def __init__(self, city: City, width: int = 640, height: int = 360, extent: Extent | None = None,
                 attribution: str | None = None, style: MapStyle | None = None):
        if width < 16 or height < 16:
            raise ValueError("map size must be at least 16x16 pixels")
        self.city = city
        self.width, self.height = int(width), int(height)
        self.extent = extent or Extent.of_city(city)
        self.style = style or MapStyle()
        attr = city.meta.attribution if attribution is None else attribution
        self.attribution = ascii_text(attr or "")
        self._font = cv2.FONT_HERSHEY_SIMPLEX
        self._attr_lines = (_wrap_lines(self.attribution, self._font, self.style.attribution_scale, 1,
                                        self.width - 2 * self.style.pad_px) if self.attribution else [])
        line_h = cv2.getTextSize("Ag", self._font, self.style.attribution_scale, 1)[0][1] + 4
        self.attribution_band_px = (len(self._attr_lines) * line_h + 4) if self._attr_lines else 0
        self._line_h = line_h
        pad = self.style.pad_px
        avail_w = self.width - 2 * pad
        avail_h = self.height - 2 * pad - self.attribution_band_px
        if avail_h < 8:
            raise ValueError("map too small for its attribution text; enlarge it or pass attribution=''")
        e = self.extent
        #: pixels per metre
        self.scale = min(avail_w / e.width_m, avail_h / e.height_m)
        self.ox = pad + (avail_w - e.width_m * self.scale) / 2.0
        self.oy = pad + (avail_h - e.height_m * self.scale) / 2.0
        self._lock = threading.Lock()
        self._bg: np.ndarray | None = None
        self._grid_bg: dict[int, np.ndarray] = {}

    # ---------------------------------------------------------- geometry
    def world_to_px(self, x_m, y_m):
        """Local metres -> pixel coordinates ``(u, v)`` (integers at pixel centres). Arrays allowed."""
        e = self.extent
        u = self.ox + (np.asarray(x_m, float) - e.xmin) * self.scale - 0.5
        v = self.oy + (e.ymax - np.asarray(y_m, float)) * self.scale - 0.5
        return u, v

    def px_to_world(self, u, v):
        """Pixel coordinates -> local metres ``(x_m, y_m)``."""
        e = self.extent
        x = (np.asarray(u, float) + 0.5 - self.ox) / self.scale + e.xmin
        y = e.ymax - (np.asarray(v, float) + 0.5 - self.oy) / self.scale
        return x, y

    def grid_cell(self, x_m: float, y_m: float, n: int = 5) -> tuple[int, int] | None:
        """Grid cell ``(gx, gy)`` of a position (x columns from the west, y rows from the north), or ``None`` outside the extent."""
        e = self.extent
        fx = (x_m - e.xmin) / e.width_m
        fy = (e.ymax - y_m) / e.height_m
        if not (0.0 <= fx <= 1.0 and 0.0 <= fy <= 1.0):
            return None
        return min(int(fx * n), n - 1), min(int(fy * n), n - 1)

    # ------------------------------------------------------- backgrounds
    def _fixed(self, u, v) -> np.ndarray:
        """Pixel coords -> OpenCV fixed-point (4 fractional bits) for ``shift=4`` drawing."""
        return np.round((np.stack([u, v], axis=-1) + 0.0) * 16.0).astype(np.int32)

    def _draw_background(self) -> np.ndarray:
        st = self.style
        img = np.empty((self.height, self.width, 3), np.uint8)
        img[:] = st.background
        g = self.city.graph
        seen = set()
        segs = []
        for a, b in g.edges:
            key = (a, b) if a <= b else (b, a)
            if key in seen:
                continue
            seen.add(key)
            segs.append(key)
        if segs:
            xa = np.array([g.nodes[a]["x_m"] for a, _ in segs])
            ya = np.array([g.nodes[a]["y_m"] for a, _ in segs])
            xb = np.array([g.nodes[b]["x_m"] for _, b in segs])
            yb = np.array([g.nodes[b]["y_m"] for _, b in segs])
            ua, va = self.world_to_px(xa, ya)
            ub, vb = self.world_to_px(xb, yb)
            pa, pb = self._fixed(ua, va), self._fixed(ub, vb)
            polys = list(np.stack([pa, pb], axis=1))
            cv2.polylines(img, polys, False, st.street, st.street_px, cv2.LINE_AA, shift=4)
        if st.node is not None:
            xs = np.array([d["x_m"] for _, d in g.nodes(data=True)])
            ys = np.array([d["y_m"] for _, d in g.nodes(data=True)])
            us, vs = self.world_to_px(xs, ys)
            for p in self._fixed(us, vs):
                cv2.circle(img, (int(p[0]), int(p[1])), st.node_px * 16, st.node, -1, cv2.LINE_AA, shift=4)
        if st.scale_bar:
            self._draw_scale_bar(img)
        self._draw_attribution(img)
        return img

    def _draw_scale_bar(self, img: np.ndarray) -> None:
        target_px = self.width / 5.0
        metres = target_px / self.scale
        nice = 10 ** math.floor(math.log10(metres))
        for m in (5, 2, 1):
            if m * nice <= metres:
                nice *= m
                break
        length = int(round(nice * self.scale))
        x0 = self.style.pad_px + 4
        y0 = self.height - self.attribution_band_px - self.style.pad_px - 4
        cv2.line(img, (x0, y0), (x0 + length, y0), self.style.text, 2)
        for xx in (x0, x0 + length):
            cv2.line(img, (xx, y0 - 4), (xx, y0), self.style.text, 2)
        label = f"{nice:g} m"
        cv2.putText(img, label, (x0 + length + 4, y0 + 3), self._font, 0.35, self.style.text, 1, cv2.LINE_AA)

    def _draw_attribution(self, img: np.ndarray) -> None:
        if not self._attr_lines:
            return
        top = self.height - self.attribution_band_px
        img[top:] = (255, 255, 255)
        y = top + 2
        for line in self._attr_lines:
            y += self._line_h
            cv2.putText(img, line, (self.style.pad_px, y - 3), self._font, self.style.attribution_scale,
                        self.style.text, 1, cv2.LINE_AA)

    def background(self) -> np.ndarray:
        """The cached static map (streets, scale bar, attribution); read-only ``(H, W, 3)`` RGB."""
        with self._lock:
            if self._bg is None:
                bg = self._draw_background()
                bg.setflags(write=False)
                self._bg = bg
            return self._bg

    def _grid_background(self, n: int) -> np.ndarray:
        with self._lock:
            cached = self._grid_bg.get(n)
        if cached is not None:
            return cached
        img = self.background().copy()
        e, st = self.extent, self.style
        xs = [e.xmin + e.width_m * i / n for i in range(n + 1)]
        ys = [e.ymin + e.height_m * j / n for j in range(n + 1)]
        for x in xs:
            (u0, v0), (u1, v1) = self.world_to_px(x, e.ymin), self.world_to_px(x, e.ymax)
            cv2.line(img, (int(round(float(u0))), int(round(float(v0)))), (int(round(float(u1))), int(round(float(v1)))),
                     st.grid, 1)
        for y in ys:
            (u0, v0), (u1, v1) = self.world_to_px(e.xmin, y), self.world_to_px(e.xmax, y)
            cv2.line(img, (int(round(float(u0))), int(round(float(v0)))), (int(round(float(u1))), int(round(float(v1)))),
                     st.grid, 1)
        cell_px = min(e.width_m, e.height_m) / n * self.scale
        scale = max(0.3, min(0.6, cell_px / 140.0))
        for gx in range(n):
            for gy in range(n):
                label = f"x:{gx} y:{gy}"
                cxm = e.xmin + e.width_m * (gx + 0.5) / n
                cym = e.ymax - e.height_m * (gy + 0.5) / n  # rows counted from the north
                u, v = self.world_to_px(cxm, cym)
                (tw, th), _ = cv2.getTextSize(label, self._font, scale, 1)
                org = (int(round(float(u) - tw / 2)), int(round(float(v) + th / 2)))
                cv2.putText(img, label, org, self._font, scale, (255, 255, 255), 3, cv2.LINE_AA)
                cv2.putText(img, label, org, self._font, scale, st.text, 1, cv2.LINE_AA)
        img.setflags(write=False)
        with self._lock:
            self._grid_bg[n] = img
        return img

    # ------------------------------------------------------------- maps
    def draw_agent(self, img: np.ndarray, x_m: float, y_m: float, heading_deg: float) -> None:
        """Draw the agent marker in place: disc of ``agent_radius_px`` at the position and a
        triangle whose tip is ``agent_tip_px`` from the position along ``heading_deg`` (compass)."""
        st = self.style
        u, v = self.world_to_px(x_m, y_m)
        u, v = float(u), float(v)
        a = math.radians(heading_deg)
        du, dv = math.sin(a), -math.cos(a)  # north = up on the image
        pu, pv = dv * -1.0, du  # perpendicular (to the right of travel): (cos a, sin a)
        r = st.agent_radius_px
        tip = (u + du * st.agent_tip_px, v + dv * st.agent_tip_px)
        bl = (u + pu * r * 0.9, v + pv * r * 0.9)
        br = (u - pu * r * 0.9, v - pv * r * 0.9)
        tri = np.round(np.array([tip, bl, br]) * 16.0).astype(np.int32)
        cv2.fillPoly(img, [tri], st.agent, cv2.LINE_AA, shift=4)
        cv2.circle(img, (int(round(u * 16)), int(round(v * 16))), r * 16, st.agent, -1, cv2.LINE_AA, shift=4)

    def location_map(self, x_m: float, y_m: float, heading_deg: float) -> np.ndarray:
        """Current-location map: background + agent marker at ``(x_m, y_m)`` facing ``heading_deg``."""
        img = self.background().copy()
        self.draw_agent(img, x_m, y_m, heading_deg)
        return img

    def grid_map(self, n: int = 5) -> np.ndarray:
        """``n x n`` labelled grid reference map (``x:N y:M``; axes in the module docstring). Returns a copy."""
        if n < 1 or n > 26:
            raise ValueError("n must be in 1..26")
        return self._grid_background(n).copy()

    def _marker(self, img: np.ndarray, x_m: float, y_m: float, color, label: str) -> None:
        st = self.style
        u, v = self.world_to_px(x_m, y_m)
        u, v = float(u), float(v)
        r = st.marker_radius_px
        cv2.circle(img, (int(round(u * 16)), int(round(v * 16))), (r + 2) * 16, (255, 255, 255), -1, cv2.LINE_AA, shift=4)
        cv2.circle(img, (int(round(u * 16)), int(round(v * 16))), r * 16, color, -1, cv2.LINE_AA, shift=4)
        if label:
            cv2.putText(img, label, (int(round(u + r + 4)), int(round(v + 4))), self._font, 0.45, (255, 255, 255), 3,
                        cv2.LINE_AA)
            cv2.putText(img, label, (int(round(u + r + 4)), int(round(v + 4))), self._font, 0.45, color, 1, cv2.LINE_AA)

    def start_goal_map(self, start_xy: tuple[float, float], goal_xy: tuple[float, float],
                       labels: tuple[str, str] = ("START", "GOAL")) -> np.ndarray:
        """Reference map with the start (blue disc) and goal (red disc) markers, labelled."""
        img = self.background().copy()
        self._marker(img, start_xy[0], start_xy[1], self.style.start, labels[0])
        self._marker(img, goal_xy[0], goal_xy[1], self.style.goal, labels[1])
        return img


_RENDERERS: dict[tuple, MapRenderer] = {}
_RENDERERS_LOCK = threading.Lock()


def map_renderer_for(city: City, width: int = 640, height: int = 360, extent: Extent | None = None) -> MapRenderer:
    """A shared :class:`MapRenderer` per (city content, size, extent), so backgrounds are drawn once per process.

    Keeps at most 32 renderers (oldest dropped).
    """
    key = (city.content_hash, city.name, width, height, extent, city.meta.attribution)
    with _RENDERERS_LOCK:
        r = _RENDERERS.get(key)
        if r is None:
            r = MapRenderer(city, width, height, extent)
            _RENDERERS[key] = r
            while len(_RENDERERS) > 32:
                _RENDERERS.pop(next(iter(_RENDERERS)))
        return r
