"""Small synthetic cities for the arena tests, laid out in local metres.

Every city is built from node positions ``{id: (x_m east, y_m north)}`` and
street segments; edge azimuths and lengths are computed here from the layout
(``atan2(dx, dy)`` and ``hypot``), so tests can hand-work metres and degrees.
"""

from __future__ import annotations

import math

import networkx as nx

from urbanarena.world.city import City, CityMeta
from urbanarena.world.geo import LocalFrame, wrap_deg

FRAME = LocalFrame(35.0, 139.0)


def city_from_xy(nodes: dict[str, tuple[float, float]], streets: list[tuple[str, str]], *,
                 one_way: list[tuple[str, str]] = (), name: str = "synthetic") -> City:
    """City with two-way ``streets`` (both directions) and ``one_way`` edges (u -> v only)."""
    g = nx.DiGraph()
    for n, (x, y) in nodes.items():
        lat, lon = FRAME.to_latlon(x, y)
        g.add_node(n, lat=float(lat), lon=float(lon), x_m=float(x), y_m=float(y), heading_deg=None,
                   walkable_headings_raw=None, walkable_headings_deg=None)

    def add(u, v):
        (xu, yu), (xv, yv) = nodes[u], nodes[v]
        g.add_edge(u, v, azimuth_deg=wrap_deg(math.degrees(math.atan2(xv - xu, yv - yu))),
                   length_m=math.hypot(xv - xu, yv - yu))

    for u, v in streets:
        add(u, v)
        add(v, u)
    for u, v in one_way:
        add(u, v)
    return City(g, CityMeta(name=name), frame=FRAME)


def straight_street() -> City:
    """a(0,0) - b(0,10) - c(0,20) - d(0,30): one street running north, 10 m between nodes."""
    return city_from_xy({"a": (0, 0), "b": (0, 10), "c": (0, 20), "d": (0, 30)}, [("a", "b"), ("b", "c"), ("c", "d")])


def t_junction() -> City:
    """Stem s(0,-20) - j(0,0); bar w(-20,0) - j - e(20,0). Walking north from s reaches the T at j."""
    return city_from_xy({"s": (0, -20), "j": (0, 0), "w": (-20, 0), "e": (20, 0)}, [("s", "j"), ("j", "w"), ("j", "e")])


def cross() -> City:
    """4-way cross at c(0,0): arms s(0,-20), n(0,20), w(-20,0), e(20,0)."""
    return city_from_xy({"c": (0, 0), "s": (0, -20), "n": (0, 20), "w": (-20, 0), "e": (20, 0)},
                        [("c", "s"), ("c", "n"), ("c", "w"), ("c", "e")])


def block_loop() -> City:
    """A one-way block loop: s(0,0) -> a(0,40) -> b(30,40) -> g(30,0) -> s.

    The goal g lies 30 m east of s, but the only way there goes north, east and
    south (110 m): walking north increases the straight-line distance to g at
    every step while the path distance shrinks.
    """
    return city_from_xy({"s": (0, 0), "a": (0, 40), "b": (30, 40), "g": (30, 0)}, [],
                        one_way=[("s", "a"), ("a", "b"), ("b", "g"), ("g", "s")])
