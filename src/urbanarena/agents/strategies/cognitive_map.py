"""Cognitive-map strategies: C1 topology graph, C2 relative-position map (text for the agent).

Both describe the current round only, from the agent's own walk, before every decision. Places
are labelled ``P0`` (the start), ``P1``, ... in order of first visit over the job (every round
starts at ``P0``; labels stay the same across rounds, so they match the memory strategies').

C1 — topology cognitive graph (not privileged). The places visited this round and the moves
    between them: one line per place in order of first visit with its number of visits
    (arrivals; staying put is not a new visit) and the distinct moves made from it in order of
    first use, each with the travel heading observed on arrival and how often it was made::

        [Cognitive map] Places visited in this round and the moves between them (P0 = start; you are at P2):
        - P0 (start; 1 visit): to P1 heading 90 deg
        - P1 (2 visits): to P2 heading 0 deg; to P0 heading 270 deg
        - P2 (1 visit; you are here)

C2 — relative-position map (not privileged: path integration of the agent's own moves, exact).
    Straight-line distance (metres, in the city's local east/north frame) and compass bearing
    from the current place to every other place visited this round, and the bearing's side
    relative to the travel direction (:func:`~urbanarena.agents.strategies.base.side_of`)::

        [Relative positions] Places visited in this round as seen from here (P2; you are heading 0 deg):
        - P0 (start): 44 m at 225 deg (behind)
        - P1: 31 m at 180 deg (behind)
"""

from __future__ import annotations

import math
from typing import Any

from urbanarena.agents.strategies.base import NEEDS_TEXT, RoundState, Strategy, bearing_deg, fmt_deg, side_of


def topology(state: RoundState) -> dict[str, Any]:
    """C1's graph: ``{"here": label, "places": [{label, node, visits}], "moves": [{from, to,
    heading_deg, count}]}``, places in order of first visit this round, moves in order of first use."""
    walk = state.walk
    visits = walk.visits()
    places = [{"label": state.label(n), "node": n, "visits": int(visits[n])} for n in walk.first_visit_order()]
    moves: dict[tuple[str, str], dict[str, Any]] = {}
    for s in walk.moves():
        key = (s.node, str(s.next_node))
        if key in moves:
            moves[key]["count"] += 1
        else:
            moves[key] = {"from": state.label(s.node), "to": state.label(str(s.next_node)),
                          "heading_deg": s.arrival_heading_deg, "count": 1}
    return {"here": state.label(walk.node), "places": places, "moves": list(moves.values())}


def relative_positions(state: RoundState) -> list[dict[str, Any]]:
    """C2's map: ``[{label, node, distance_m, bearing_deg, side}]`` of every place visited this
    round except the current one, in order of first visit (local-frame metres; bearing degrees
    clockwise from north)."""
    here = state.walk.node
    hx, hy = state.city.xy(here)
    out = []
    for n in state.walk.first_visit_order():
        if n == here:
            continue
        x, y = state.city.xy(n)
        dx, dy = float(x) - float(hx), float(y) - float(hy)
        b = bearing_deg(dx, dy)
        out.append({"label": state.label(n), "node": n, "distance_m": math.hypot(dx, dy), "bearing_deg": b,
                    "side": side_of(b, state.walk.heading_deg)})
    return out


def _visits(n: int) -> str:
    return f"{n} visit" + ("" if n == 1 else "s")


class TopologyMap(Strategy):
    """C1 (module docstring)."""

    id = "C1"
    title = "topology cognitive graph"
    family = "cognitive_map"
    uses = ("the agent's own trajectory this round: places visited, moves between them, travel headings",)
    needs = frozenset({NEEDS_TEXT})

    def context_text(self, state: RoundState) -> str | None:
        topo = topology(state)
        by_from: dict[str, list[str]] = {}
        for m in topo["moves"]:
            h = f" heading {fmt_deg(m['heading_deg'])}" if m["heading_deg"] is not None else ""
            times = f" ({m['count']} times)" if m["count"] > 1 else ""
            by_from.setdefault(m["from"], []).append(f"to {m['to']}{h}{times}")
        lines = [f"[Cognitive map] Places visited in this round and the moves between them (P0 = start; "
                 f"you are at {topo['here']}):"]
        for p in topo["places"]:
            tags = (["start"] if p["label"] == "P0" else []) + [_visits(p["visits"])]
            if p["label"] == topo["here"]:
                tags.append("you are here")
            moves = "; ".join(by_from.get(p["label"], []))
            lines.append(f"- {p['label']} ({'; '.join(tags)})" + (f": {moves}" if moves else ""))
        self.texts += 1
        return "\n".join(lines)


class RelativePositionMap(Strategy):
    """C2 (module docstring)."""

    id = "C2"
    title = "relative-position map"
    family = "cognitive_map"
    uses = ("the agent's own trajectory this round with path-integrated positions: distance and bearing of "
            "each visited place from here",)
    needs = frozenset({NEEDS_TEXT})

    def context_text(self, state: RoundState) -> str | None:
        rel = relative_positions(state)
        lines = [f"[Relative positions] Places visited in this round as seen from here "
                 f"({state.label(state.walk.node)}; you are heading {fmt_deg(state.walk.heading_deg)}):"]
        if not rel:
            lines.append("- none yet (you are at the first place of this round)")
        for r in rel:
            tag = " (start)" if r["label"] == "P0" else ""
            lines.append(f"- {r['label']}{tag}: {r['distance_m']:.0f} m at {fmt_deg(r['bearing_deg'])} ({r['side']})")
        self.texts += 1
        return "\n".join(lines)


__all__ = ["RelativePositionMap", "TopologyMap", "relative_positions", "topology"]
