"""M1 — route map (CitySeeker's map ablation): the same tasks with a map that shows the route.

CitySeeker's appendix gives the agent a map with the route to the goal and finds that it trades
path following for task completion. M1 reproduces that as a strategy, so it composes with any
agent that looks at images in its prompt (``--strategy M1``, also with others: ``B1,M1,R3``)
and runs on exactly the same tasks; a run with it has its own config hash and is marked
privileged (the route is ground truth).

The map (one per act, RGB ``(size_px, size_px, 3)``), drawn with :mod:`urbanarena.render.maps`
(:class:`~urbanarena.render.maps.MapRenderer`: streets, scale bar, the city's attribution,
e.g. "© OpenStreetMap contributors"; north up):

* the extent: the route's bounding box grown by ``margin_m`` metres on each side (square
  pixels; fixed for the round);
* the route: the metric shortest path (``length_m``, :meth:`~urbanarena.world.city.City.shortest_path`)
  from the start through every goal in order (two-stop tasks: start -> goal 1 -> goal 2),
  a :data:`ROUTE_RGB` polyline;
* markers: the start (blue disc, ``S``), each goal (red disc, ``G``; ``G1``, ``G2`` for two
  stops);
* the agent: an orange disc with a heading triangle at its current node, pointing along its
  travel heading (what the agent itself knows of its pose).

The image reaches the agent through its image channel (:func:`~urbanarena.agents.strategies.base.image_channel`:
``set_strategy_images([(label, image)])`` before the act); the CitySeeker VLM agent appends it
with the label :data:`MAP_LABEL` to both requests of the step.
"""

from __future__ import annotations

import math
from typing import Any

import cv2
import numpy as np

from urbanarena.agents.strategies.base import NEEDS_IMAGES, RoundState, Strategy, StrategyError
from urbanarena.render.maps import BLUE, RED, Extent, MapRenderer, MapStyle

#: colour of the route line (RGB): magenta, used nowhere else on the map
ROUTE_RGB = (200, 0, 200)
#: colour of the agent's marker (RGB)
AGENT_RGB = (255, 140, 0)
MAP_LABEL = ("Map of your route (north up): the magenta line is the shortest route from the start (blue S) to the "
             "goal (red G); the orange marker is you, its point shows the direction you are heading.")
MAP_LABEL_TWO_STOPS = ("Map of your route (north up): the magenta line is the shortest route from the start (blue S) "
                       "to the first stop (red G1) and on to the second (red G2); the orange marker is you, its point "
                       "shows the direction you are heading.")


def route_nodes(city: Any, start: str, goals: list[str]) -> list[str]:
    """The metric shortest route from ``start`` through ``goals`` in order (node ids, legs joined;
    an unreachable leg is left out and the next leg starts at its goal)."""
    route = [start]
    at = start
    for g in goals:
        leg = city.shortest_path(at, g)
        if leg is not None:
            route += leg[1:] if route[-1] == leg[0] else leg
        at = g
    return route


class RouteMap(Strategy):
    """M1 (module docstring).

    Parameters: ``size_px`` (512): map width and height in pixels (>= 64); ``margin_m`` (40):
    metres added around the route's bounding box.
    """

    id = "M1"
    title = "route map (map ablation)"
    family = "map"
    uses = ("ground-truth shortest route from the start through the goal(s), drawn on a street map with the start "
            "and goal markers",
            "the agent's own position and travel heading, marked on that map")
    privileged = True
    needs = frozenset({NEEDS_IMAGES})
    defaults = {"size_px": 512, "margin_m": 40}

    def validate(self) -> None:
        v = self.params["size_px"]
        if isinstance(v, bool) or not isinstance(v, int) or v < 64:
            raise StrategyError(f"strategy {self.id}: size_px must be an integer >= 64, got {v!r}")
        m = self.params["margin_m"]
        if isinstance(m, bool) or not isinstance(m, (int, float)) or not math.isfinite(m) or m < 0:
            raise StrategyError(f"strategy {self.id}: margin_m must be a number >= 0, got {m!r}")
        self.params["margin_m"] = float(m)

    def reset(self, state: RoundState) -> None:
        super().reset(state)
        city, task = state.city, state.task
        goals = [g.node for g in task.goals if g.node is not None]
        self.route = route_nodes(city, task.start.node, goals)
        pts = [city.xy(n) for n in dict.fromkeys(self.route + goals)]
        m = self.params["margin_m"]
        xs, ys = [float(p[0]) for p in pts], [float(p[1]) for p in pts]
        extent = Extent(min(xs) - m, min(ys) - m, max(xs) + m, max(ys) + m)
        size = int(self.params["size_px"])
        self.renderer = MapRenderer(city, size, size, extent, style=MapStyle(agent=AGENT_RGB))
        self.label = MAP_LABEL_TWO_STOPS if len(goals) > 1 else MAP_LABEL
        img = self.renderer.background().copy()
        u, v = self.renderer.world_to_px([city.xy(n)[0] for n in self.route], [city.xy(n)[1] for n in self.route])
        line = np.round(np.stack([u, v], axis=-1) * 16.0).astype(np.int32)
        width = max(3, size // 128)
        cv2.polylines(img, [line], False, ROUTE_RGB, width, cv2.LINE_AA, shift=4)
        self._marker(img, task.start.node, BLUE, "S")
        for i, g in enumerate(goals):
            self._marker(img, g, RED, "G" if len(goals) == 1 else f"G{i + 1}")
        img.setflags(write=False)
        self.base = img

    def _marker(self, img: np.ndarray, node: str, colour: tuple[int, int, int], label: str) -> None:
        x, y = self.renderer.city.xy(node)
        u, v = (float(a) for a in self.renderer.world_to_px(x, y))
        r = self.renderer.style.marker_radius_px
        centre = (int(round(u * 16)), int(round(v * 16)))
        cv2.circle(img, centre, (r + 2) * 16, (255, 255, 255), -1, cv2.LINE_AA, shift=4)
        cv2.circle(img, centre, r * 16, colour, -1, cv2.LINE_AA, shift=4)
        org = (int(round(u + r + 3)), int(round(v + 5)))
        font = cv2.FONT_HERSHEY_SIMPLEX
        cv2.putText(img, label, org, font, 0.5, (255, 255, 255), 3, cv2.LINE_AA)
        cv2.putText(img, label, org, font, 0.5, colour, 1, cv2.LINE_AA)

    def map_image(self, node: str, heading_deg: float) -> np.ndarray:
        """The route map with the agent at ``node`` facing ``heading_deg`` (RGB uint8, a new array)."""
        img = self.base.copy()
        x, y = self.renderer.city.xy(node)
        self.renderer.draw_agent(img, float(x), float(y), float(heading_deg))
        return img

    def context_images(self, state: RoundState) -> list[tuple[str, np.ndarray]] | None:
        self.images += 1
        return [(self.label, self.map_image(state.walk.node, state.walk.heading_deg))]


__all__ = ["AGENT_RGB", "MAP_LABEL", "MAP_LABEL_TWO_STOPS", "ROUTE_RGB", "RouteMap", "route_nodes"]
