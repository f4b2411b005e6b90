"""Fixtures for the continuous-environment tests (``tests/test_continuous_*.py``).

``passage_city()`` imports a tiny OSM file written here from metre coordinates
(x east, y north in :data:`generate_util.FIX_FRAME`, the frame of the hand-written
fixtures) with the project's OSM importer, so the tests see what the importer keeps::

     y=50            +--------+
     y=40   401 ~~~~~|~B2~~~~~|~~~~~ 402     Arcade: footway, covered=yes, under building B2 (20..40 x 36..50)
             |       +--------+       |
     y=20    |  bench 501 (10, 20)    |
             |       +--------+       |
     y=0    301 -- 302 ~~B1~~ 303 -- 304    302-303: footway, tunnel=building_passage through B1 (20..40 x -10..10)
             |       +--------+       |
     y=-25           +--------+              B3 (20..40 x -40..-25): solid, no way through
     y=-40           +--------+
            x=0  15  20    40  45    60     west path x=0 (301-401), east path x=60 (304-402)

Synthetic data written for this project (no OpenStreetMap content).
"""

from __future__ import annotations

import math
import tempfile
from functools import lru_cache
from pathlib import Path

from generate_util import FIX_FRAME, from_fix, to_fix  # noqa: F401  (re-exported for the tests)

NODES = {
    301: (0, 0), 302: (15, 0), 303: (45, 0), 304: (60, 0), 401: (0, 40), 402: (60, 40),
    601: (20, -10), 602: (40, -10), 603: (40, 10), 604: (20, 10),
    611: (20, 36), 612: (40, 36), 613: (40, 50), 614: (20, 50),
    621: (20, -40), 622: (40, -40), 623: (40, -25), 624: (20, -25),
}
NODE_TAGS = {501: ((10, 20), {"amenity": "bench"})}
WAYS = [
    (3001, [301, 302], {"highway": "footway"}),
    (3002, [302, 303], {"highway": "footway", "tunnel": "building_passage"}),
    (3003, [303, 304], {"highway": "footway"}),
    (3004, [304, 402], {"highway": "footway"}),
    (3005, [402, 401], {"highway": "footway", "covered": "yes", "name": "Arcade"}),
    (3006, [401, 301], {"highway": "footway"}),
    (3101, [601, 602, 603, 604, 601], {"building": "yes", "name": "B1"}),
    (3102, [611, 612, 613, 614, 611], {"building": "yes", "name": "B2"}),
    (3103, [621, 622, 623, 624, 621], {"building": "yes", "name": "B3"}),
]


def osm_xml(nodes: dict[int, tuple[float, float]], tagged: dict[int, tuple[tuple[float, float], dict]],
            ways: list[tuple[int, list[int], dict]]) -> str:
    """OSM XML for nodes given in fixture metres (converted with :data:`FIX_FRAME`)."""
    out = ['<?xml version="1.0" encoding="UTF-8"?>', '<osm version="0.6" generator="urbanarena tests">']
    for nid, (x, y) in nodes.items():
        lat, lon = FIX_FRAME.to_latlon(x, y)
        out.append(f'  <node id="{nid}" version="1" lat="{float(lat):.9f}" lon="{float(lon):.9f}"/>')
    for nid, ((x, y), tags) in tagged.items():
        lat, lon = FIX_FRAME.to_latlon(x, y)
        out.append(f'  <node id="{nid}" version="1" lat="{float(lat):.9f}" lon="{float(lon):.9f}">')
        out.extend(f'    <tag k="{k}" v="{v}"/>' for k, v in tags.items())
        out.append("  </node>")
    for wid, refs, tags in ways:
        out.append(f'  <way id="{wid}" version="1">')
        out.extend(f'    <nd ref="{r}"/>' for r in refs)
        out.extend(f'    <tag k="{k}" v="{v}"/>' for k, v in tags.items())
        out.append("  </way>")
    out.append("</osm>")
    return "\n".join(out) + "\n"


@lru_cache(maxsize=None)
def passage_city():
    """The passage fixture (module docstring), imported once per session."""
    from urbanarena.world.importers.osm import import_city

    d = Path(tempfile.mkdtemp(prefix="ua-continuous-"))
    p = d / "passage.osm"
    p.write_text(osm_xml(NODES, NODE_TAGS, WAYS), encoding="utf-8")
    return import_city(str(p), name="passage")


def fix_pose(city, info) -> tuple[float, float]:
    """The agent's position from a step's ``info`` in fixture metres."""
    return to_fix(city, info["pose"]["x_m"], info["pose"]["y_m"])


def bearing_deg(dx: float, dy: float) -> float:
    return math.degrees(math.atan2(dx, dy)) % 360.0
