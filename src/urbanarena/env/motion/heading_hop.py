"""Heading-choice motion (CitySeeker-style): pick a heading, hop one edge.

Two protocols:

* ``cityseeker-v1`` (:class:`CitySeekerHop`) — CitySeeker's published client
  rule: the offered headings are the node's raw ``walkable_headings`` in their
  original order; choosing heading ``h`` moves along the outgoing edge whose
  ``edge_azimuth`` minimises the plain absolute difference ``|azimuth - h|``
  (no 360° wrap-around; ties go to the first edge in file order). Some edges
  can never be taken under this rule.
* ``urbanarena-graph-v1`` (:class:`EdgeHop`) — the offered headings are the
  azimuths of the node's outgoing edges (sorted by azimuth) and a choice moves
  along exactly that edge, so every edge can be taken.

After a move the state's heading is the azimuth of the edge taken (the
travel direction).
"""

from __future__ import annotations

from urbanarena.env.motion.base import Choice, MotionModel, NavState
from urbanarena.world.city import City


def _fmt(h: float) -> str:
    return f"{h:.1f}"


class CitySeekerHop(MotionModel):
    """``cityseeker-v1``: raw walkable headings, nearest edge azimuth without wrap.

    Edge order for ties is the city's edge insertion order (file order for
    the CitySeeker importer). Nodes without ``walkable_headings_raw`` offer
    their outgoing edge azimuths instead.
    """

    protocol_id = "cityseeker-v1"

    def __init__(self, city: City, wrap: bool = False):
        super().__init__(city)
        self.wrap = wrap
        self._cache: dict[str, tuple[list[Choice], list[str]]] = {}

    def _resolve(self, node: str) -> tuple[list[Choice], list[str]]:
        hit = self._cache.get(node)
        if hit is not None:
            return hit
        edges = [(v, d["azimuth_deg"]) for _, v, d in self.city.graph.out_edges(node, data=True)]
        raw = self.city.node(node).get("walkable_headings_raw")
        if raw is None:
            raw = sorted(az for _, az in edges)
        choices, targets = [], []
        for h in raw:
            choices.append(Choice(_fmt(h), float(h)))
            if not edges:
                targets.append(node)
                continue
            if self.wrap:
                from urbanarena.world.geo import angle_diff_deg

                best = min(edges, key=lambda e: angle_diff_deg(e[1], h))
            else:
                best = min(edges, key=lambda e: abs(e[1] - h))
            targets.append(best[0])
        hit = (choices, targets)
        self._cache[node] = hit
        return hit

    def choices(self, state: NavState) -> list[Choice]:
        return self._resolve(state.node)[0]

    def transition(self, state: NavState, index: int) -> NavState:
        target = self._resolve(state.node)[1][index]
        if target == state.node:
            return state
        return NavState(target, float(self.city.graph.edges[state.node, target]["azimuth_deg"]))


class EdgeHop(MotionModel):
    """``urbanarena-graph-v1`` heading style: one choice per outgoing edge, sorted by azimuth."""

    protocol_id = "urbanarena-graph-v1"

    def choices(self, state: NavState) -> list[Choice]:
        return [Choice(_fmt(d["azimuth_deg"]), float(d["azimuth_deg"])) for _, d in self.city.out_edges(state.node)]

    def transition(self, state: NavState, index: int) -> NavState:
        v, d = self.city.out_edges(state.node)[index]
        return NavState(v, float(d["azimuth_deg"]))
