"""Turn-style motion (Touchdown): FORWARD / LEFT / RIGHT on a heading-keyed graph.

Reference: Touchdown's navigator (``lil-lab/touchdown``, ``base_navigator.py``,
Chen et al. 2019) and its verbatim copy in map2seq's VLN code
(``raphael-sch/map2seq_vln``, ``vln/base_navigator.py``, Schumann & Riezler
2021/2022). Both behave identically; this module re-implements that behaviour.

The reference graph keys a node's neighbours by the integer link heading
(``neighbors[heading] = end_node``, in links-file order). A state is
``(panoid, heading)`` with an integer heading. One step:

``FORWARD``
    If the current heading is a link heading of the current node, the next node
    is that link's end; otherwise ("weird node, stay put") the next node is the
    current node. The next heading is the link heading of the *next* node
    nearest to the current heading by circular difference
    ``180 - ||h - cur| - 180|`` (the current heading itself is allowed). So a
    FORWARD from a heading that is not a link heading only snaps the heading
    to the nearest link heading, without moving.
``LEFT`` / ``RIGHT``
    Stay at the node; the next heading is the link heading nearest
    counter-clockwise, ``(cur - h) mod 360``, resp. clockwise,
    ``(h - cur) mod 360``, excluding the current heading itself. With no other
    heading the heading is unchanged.
Ties (equal differences) go to the first heading in links-file order (the
reference iterates ``neighbors.keys()`` with a strict ``<``). This model reads
that order from the node's ``walkable_headings_raw`` (the Touchdown importer
keeps file order there, which survives save/load); other cities fall back to
edge insertion order with ``link_heading`` or the rounded ``azimuth_deg``.

Refusal (``touchdown-v1``): after computing the next state the reference
checks ``len(neighbors[next_panoid]) < 2`` and, if so, does nothing ("stay
still when running into the boundary of the graph"). The check applies to
every action, so at a node with fewer than two outgoing links LEFT/RIGHT and
a heading-snapping FORWARD are refused too; such a node is never entered, and
an agent that *starts* there can only leave by FORWARD along the link it
already faces. ``urbanarena-graph-v1`` (``enter_dead_ends=True``) drops the
check; a node with one link is entered facing back along it.

Start heading: map2seq's env starts at ``(route_panoids[0],
int(start_heading))`` (``vln/env.py``, ``OutdoorVlnBatch.reset``), Touchdown's
example at an integer heading. :meth:`TouchdownHop.start_state` truncates
with ``int()`` likewise, then wraps into [0, 360) (the reference does not wrap;
all released start headings lie in [0, 360) so this changes nothing there).
In every released map2seq dev/test record the start heading is exactly the
heading of the route's first link, so the first FORWARD already follows the
route.

map2seq's trajectory for scoring (``trajs``) appends a node only when the
node changes, and its metrics (``vln/env.py``, ``_eva_metrics``) are: TC =
stop node is the goal or one of its neighbours in the undirected, unweighted
``nx.Graph`` of all links; SPD = ``nx.dijkstra_path_length`` on that graph
(hops); SED = ``1 - dl(traj, route) / max(len)`` with pyxDamerauLevenshtein's
(optimal string alignment) distance, times success. The step budget is
``--max_route_len 55`` actions (``vln/main.py``). Those are implemented by
:mod:`urbanarena.tasks.families.map2seq`.
"""

from __future__ import annotations

from collections import deque
from typing import Iterable

from urbanarena.env.motion.base import Choice, MotionModel, NavState
from urbanarena.world.city import City

FORWARD, LEFT, RIGHT = 0, 1, 2
_CHOICES = [Choice("FORWARD"), Choice("LEFT"), Choice("RIGHT")]


class TouchdownHop(MotionModel):
    """Touchdown's navigator as a motion model (see module docstring).

    Args:
        city: the city; link headings come from edge ``link_heading`` (else
            ``round(azimuth_deg) % 360``), their order from the node's
            ``walkable_headings_raw``.
        enter_dead_ends: ``False`` -> ``touchdown-v1`` (faithful: refuse to move
            into a node with fewer than two outgoing links); ``True`` ->
            ``urbanarena-graph-v1`` (any node may be entered).

    Choices: ``0`` FORWARD, ``1`` LEFT, ``2`` RIGHT (STOP is the env's ``-1``).
    State headings are integer degrees stored as floats.
    """

    def __init__(self, city: City, enter_dead_ends: bool = False):
        super().__init__(city)
        self.enter_dead_ends = bool(enter_dead_ends)
        self.protocol_id = "urbanarena-graph-v1" if self.enter_dead_ends else "touchdown-v1"
        # node -> (links in reference order, {heading: end node})
        self._links: dict[str, tuple[list[tuple[int, str]], dict[int, str]]] = {}

    # ------------------------------------------------------------ graph view
    def links(self, node: str) -> list[tuple[int, str]]:
        """``[(link_heading, end_node)]`` of ``node`` in the reference's iteration order."""
        return self._entry(node)[0]

    def _entry(self, node: str) -> tuple[list[tuple[int, str]], dict[int, str]]:
        hit = self._links.get(node)
        if hit is not None:
            return hit
        by_heading: dict[int, str] = {}
        for v, d in self.city.graph.succ[node].items():
            h = d.get("link_heading")
            if h is None:
                h = int(round(float(d["azimuth_deg"]))) % 360
            by_heading[int(h)] = v  # later duplicates overwrite, as the reference dict does
        order = self.city.node(node).get("walkable_headings_raw")
        if (
            order is not None
            and len(order) == len(by_heading)
            and all(float(h).is_integer() for h in order)
            and set(int(h) for h in order) == set(by_heading)
        ):
            links = [(int(h), by_heading[int(h)]) for h in order]
        else:
            links = list(by_heading.items())
        hit = (links, by_heading)
        self._links[node] = hit
        return hit

    # ------------------------------------------------------------ protocol
    def start_state(self, node: str, heading_deg: float) -> NavState:
        """``(node, int(heading_deg) mod 360)``: truncation as map2seq's ``int(start_heading)``."""
        return NavState(node, float(int(heading_deg) % 360))

    def choices(self, state: NavState) -> list[Choice]:
        return _CHOICES

    def transition(self, state: NavState, index: int) -> NavState:
        """One reference-navigator step (module docstring); a refused or
        no-op step returns ``state`` itself. The state heading is truncated to
        an integer as the reference keys headings by ``int``.

        Raises:
            IndexError: ``index`` not in (FORWARD, LEFT, RIGHT).
        """
        if index not in (FORWARD, LEFT, RIGHT):
            raise IndexError(f"choice {index} out of range for FORWARD/LEFT/RIGHT")
        nxt = self._step(state.node, int(state.heading_deg), index)
        return state if nxt is None else NavState(nxt[0], float(nxt[1]))

    def _step(self, node: str, cur: int, index: int) -> tuple[str, int] | None:
        """Core of :meth:`transition` on plain values; ``None`` = state unchanged."""
        cache = self._links
        entry = cache.get(node) or self._entry(node)
        nxt = entry[1].get(cur, node) if index == FORWARD else node
        links = entry[0] if nxt == node else (cache.get(nxt) or self._entry(nxt))[0]
        if not self.enter_dead_ends and len(links) < 2:
            return None  # the reference refuses any move into a node with < 2 neighbours
        best_h, best = cur, 361
        if index == FORWARD:
            for h, _ in links:
                d = 180 - abs(abs(h - cur) - 180)
                if d < best:
                    best, best_h = d, h
        elif index == LEFT:
            for h, _ in links:
                if h != cur:
                    d = (cur - h) % 360
                    if d < best:
                        best, best_h = d, h
        else:
            for h, _ in links:
                if h != cur:
                    d = (h - cur) % 360
                    if d < best:
                        best, best_h = d, h
        if nxt == node and best_h == cur:
            return None
        return nxt, best_h

    # ------------------------------------------------------------ analysis
    def can_enter(self, node: str) -> bool:
        """Whether any action from any state can move the agent *into* ``node``:
        ``False`` under ``touchdown-v1`` for a node with fewer than two outgoing
        links (and for a node without incoming links under either protocol).
        Planners can use it to reject an unreachable target without searching."""
        if not self.city.graph.in_degree(node):
            return False
        return self.enter_dead_ends or len(self.links(node)) >= 2

    def reachable_states(self, seeds: Iterable[NavState]) -> set[NavState]:
        """All states reachable from ``seeds`` by any action sequence (breadth-first)."""
        return {NavState(n, float(h)) for n, h in self._closure(seeds)}

    def _closure(self, seeds: Iterable[NavState]) -> set[tuple[str, int]]:
        seen: set[tuple[str, int]] = set()
        queue: deque[tuple[str, int]] = deque()
        for s in seeds:
            t = (s.node, int(s.heading_deg) % 360)
            if t not in seen:
                seen.add(t)
                queue.append(t)
        step = self._step
        while queue:
            node, h = queue.popleft()
            for i in (FORWARD, LEFT, RIGHT):
                t = step(node, h, i)
                if t is not None and t not in seen:
                    seen.add(t)
                    queue.append(t)
        return seen

    def takeable_edges(self, seeds: Iterable[NavState] | None = None) -> set[tuple[str, str]]:
        """Directed edges some reachable state moves along with FORWARD.

        Args:
            seeds: start states; default every ``(node, h)`` for each link
                heading ``h`` of the node plus ``(node, panorama heading)`` —
                a task may start anywhere facing any heading, and any other
                start heading leads (by FORWARD/LEFT/RIGHT) only to states
                facing a link heading.
        The search is a breadth-first closure of :meth:`transition` over
        ``(node, heading)`` states. Under ``touchdown-v1`` with the default
        seeds this is exactly the edges into nodes with at least two outgoing
        links; under ``urbanarena-graph-v1`` every edge whose heading is not
        shadowed by a duplicate.
        """
        if seeds is None:
            seeds = [NavState(n, float(h)) for n in self.city.graph for h, _ in self.links(n)]
            seeds += [NavState(n, float(d.get("heading_deg") or 0.0)) for n, d in self.city.graph.nodes(data=True)]
        out: set[tuple[str, str]] = set()
        for node, h in self._closure(seeds):
            t = self._step(node, h, FORWARD)
            if t is not None and t[0] != node:
                out.add((node, t[0]))
        return out
