"""Map mode of the continuous environment: a north-up 2D map the agent can pan, zoom and click.

The map shows a square area of half-size ``half_m`` metres around a centre
point (local metres), drawn by :class:`~urbanarena.render.maps.MapRenderer`
(streets, scale bar, the city's attribution) with building footprints blended in,
the agent's marker (red disc + triangle along its yaw), task markers (labelled
discs) and the selected point (a blue cross). The square fills the canvas
height; a wider canvas shows more to the east and west.

State changes (all in simulated time; the environment charges their duration):

* ``open`` centres the map on the agent; the zoom (``half_m``) is kept from the
  previous opening (first opening: ``default_half_m``, 150 m);
* ``pan(east, north)`` moves the centre by those metres;
* ``zoom(factor)`` multiplies ``half_m`` by ``factor`` (UrbanGround: values below 1
  move closer, above 1 farther), clamped to ``[min_half_m, max_half_m]``
  (10 m .. 5 km; the clamp is reported);
* ``select(x, y)`` picks the world point under the normalised image coordinates
  ``(x, y)`` (0..1, ``y = 0`` at the top; UrbanGround's ``map_select``): the
  pixel-centre convention of :mod:`urbanarena.render.maps` gives the continuous
  pixel position ``u = x W - 0.5``, ``v = y H - 0.5`` and the point
  ``MapRenderer.px_to_world(u, v)`` of the current view.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Sequence

import cv2
import numpy as np

from urbanarena.render.maps import Extent, MapRenderer, MapStyle

BUILDING_RGB = (206, 199, 188)
SELECT_RGB = (30, 90, 230)


class FootprintMapRenderer(MapRenderer):
    """:class:`MapRenderer` whose cached background also shows building footprints (blended 60 % over the
    streets, so passages under buildings stay visible); scale bar and attribution are drawn on top."""

    def __init__(self, city, width: int = 640, height: int = 360, extent: Extent | None = None,
                 attribution: str | None = None, style: MapStyle | None = None,
                 footprints_xy: Sequence[np.ndarray] = ()):
        self._footprints = list(footprints_xy)
        super().__init__(city, width, height, extent, attribution, style)

    def _draw_background(self) -> np.ndarray:
        img = super()._draw_background()
        if self._footprints:
            over = img.copy()
            polys = []
            for ring in self._footprints:
                u, v = self.world_to_px(ring[:, 0], ring[:, 1])
                polys.append(self._fixed(u, v))
            cv2.fillPoly(over, polys, BUILDING_RGB, cv2.LINE_AA, shift=4)
            img = cv2.addWeighted(over, 0.6, img, 0.4, 0.0)
            if self.style.scale_bar:
                self._draw_scale_bar(img)
            self._draw_attribution(img)
        return img


@dataclass(frozen=True)
class MapMarker:
    """A labelled point drawn on the map (e.g. a task's goal): local metres and an RGB colour."""

    label: str
    x_m: float
    y_m: float
    rgb: tuple[int, int, int] = (220, 20, 20)


class MapView:
    """The map-mode state and its images (module docstring).

    Args:
        city: the city (its pose graph streets and, when annotated, building footprints are drawn).
        width, height: image size, pixels.
        default_half_m, min_half_m, max_half_m: half-size of the shown square and its limits, metres.
    Raises:
        ValueError: inconsistent limits.
    """

    def __init__(self, city, width: int = 640, height: int = 360, default_half_m: float = 150.0,
                 min_half_m: float = 10.0, max_half_m: float = 5000.0):
        if not 0 < min_half_m <= default_half_m <= max_half_m:
            raise ValueError("need 0 < min_half_m <= default_half_m <= max_half_m")
        self.city = city
        self.width, self.height = int(width), int(height)
        self.min_half_m, self.max_half_m = float(min_half_m), float(max_half_m)
        self.default_half_m = float(default_half_m)
        ann = getattr(city, "annotations", None)
        fps: list[np.ndarray] = []
        if ann is not None:
            for b in ann.buildings:
                for poly in b.polygons_xy:
                    if poly and len(poly[0]) >= 3:
                        fps.append(np.asarray(poly[0], float))
        self._footprints = fps
        self._renderers: OrderedDict[tuple[float, float, float], FootprintMapRenderer] = OrderedDict()
        self.reset()

    def reset(self) -> None:
        """Forget the view (centre, zoom and selection)."""
        self.center_xy: tuple[float, float] = (0.0, 0.0)
        self.half_m = self.default_half_m
        self.selected_xy: tuple[float, float] | None = None

    # ------------------------------------------------------------ state
    def extent(self) -> Extent:
        return Extent.around(self.center_xy[0], self.center_xy[1], self.half_m)

    def renderer(self) -> FootprintMapRenderer:
        """The map renderer of the current view (a few are cached)."""
        key = (self.center_xy[0], self.center_xy[1], self.half_m)
        r = self._renderers.get(key)
        if r is None:
            r = FootprintMapRenderer(self.city, self.width, self.height, self.extent(), footprints_xy=self._footprints)
            self._renderers[key] = r
            while len(self._renderers) > 8:
                self._renderers.popitem(last=False)
        else:
            self._renderers.move_to_end(key)
        return r

    def open(self, x_m: float, y_m: float) -> None:
        """Centre the map on the agent at ``(x_m, y_m)`` (zoom kept)."""
        self.center_xy = (float(x_m), float(y_m))

    def pan(self, east_m: float, north_m: float) -> None:
        """Move the centre by ``east_m``/``north_m`` metres."""
        self.center_xy = (self.center_xy[0] + float(east_m), self.center_xy[1] + float(north_m))

    def zoom(self, factor: float) -> tuple[float, float]:
        """Multiply the half-size by ``factor``; returns ``(wanted_half_m, used_half_m)`` (they differ when clamped)."""
        want = self.half_m * float(factor)
        self.half_m = min(max(want, self.min_half_m), self.max_half_m)
        return want, self.half_m

    def image_to_world(self, x: float, y: float) -> tuple[float, float]:
        """World point (local metres) under normalised image coordinates ``(x, y)`` (module docstring)."""
        u = float(x) * self.width - 0.5
        v = float(y) * self.height - 0.5
        wx, wy = self.renderer().px_to_world(u, v)
        return float(wx), float(wy)

    def world_to_image(self, x_m: float, y_m: float) -> tuple[float, float]:
        """Normalised image coordinates of a world point (inverse of :meth:`image_to_world`)."""
        u, v = self.renderer().world_to_px(x_m, y_m)
        return (float(u) + 0.5) / self.width, (float(v) + 0.5) / self.height

    def select(self, x: float, y: float) -> tuple[float, float]:
        """Select the world point under ``(x, y)``; returns it."""
        self.selected_xy = self.image_to_world(x, y)
        return self.selected_xy

    def state_dict(self) -> dict[str, Any]:
        lat, lon = self.city.frame.to_latlon(*self.center_xy)
        out: dict[str, Any] = {"center_x_m": self.center_xy[0], "center_y_m": self.center_xy[1],
                               "center_lat": float(lat), "center_lon": float(lon), "half_m": self.half_m,
                               "metres_per_px": 1.0 / self.renderer().scale, "selected": None}
        if self.selected_xy is not None:
            slat, slon = self.city.frame.to_latlon(*self.selected_xy)
            out["selected"] = {"x_m": self.selected_xy[0], "y_m": self.selected_xy[1], "lat": float(slat),
                               "lon": float(slon)}
        return out

    # ------------------------------------------------------------ image
    def image(self, agent_xy: tuple[float, float], agent_yaw_deg: float,
              markers: Sequence[MapMarker] = ()) -> np.ndarray:
        """The map image ``(height, width, 3)`` RGB uint8: background, markers, selection, agent."""
        r = self.renderer()
        img = r.background().copy()
        for m in markers:
            r._marker(img, m.x_m, m.y_m, m.rgb, m.label)
        if self.selected_xy is not None:
            u, v = r.world_to_px(*self.selected_xy)
            cv2.drawMarker(img, (int(round(float(u))), int(round(float(v)))), SELECT_RGB, cv2.MARKER_TILTED_CROSS,
                           16, 2, cv2.LINE_AA)
        r.draw_agent(img, agent_xy[0], agent_xy[1], agent_yaw_deg)
        return img


__all__ = ["FootprintMapRenderer", "MapMarker", "MapView"]
