"""Motion-model interface shared by every graph protocol."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from urbanarena.world.city import City


@dataclass(frozen=True)
class NavState:
    """Agent state on a graph.

    Attributes:
        node: current node id.
        heading_deg: current heading, degrees clockwise from true north. For
            heading-choice protocols it is the travel direction (azimuth of the
            last edge taken, or the start heading); for Touchdown it is the
            integer link heading the agent faces.
    """

    node: str
    heading_deg: float


@dataclass(frozen=True)
class Choice:
    """One action offered at a state.

    Attributes:
        label: text shown to the agent (``"FORWARD"``, or a heading like ``"34.4"``).
        heading_deg: bearing the choice points at (degrees from north) when it
            is a heading, else ``None``.
    """

    label: str
    heading_deg: float | None = None


class MotionModel(ABC):
    """Maps (state, action index) to the next state on one city.

    Subclasses are pure: :meth:`transition` never mutates anything, so planners
    (the oracle) can search over it. ``protocol_id`` names the protocol whose
    action rule the model implements.
    """

    protocol_id: str = ""

    def __init__(self, city: City):
        self.city = city

    @abstractmethod
    def choices(self, state: NavState) -> list[Choice]:
        """The actions offered at ``state`` (the agent answers with an index)."""

    @abstractmethod
    def transition(self, state: NavState, index: int) -> NavState:
        """State after taking choice ``index`` (``0 <= index < len(choices)``).

        A choice that cannot move (a refused move) returns ``state`` unchanged.
        """

    def start_state(self, node: str, heading_deg: float) -> NavState:
        """Initial state for a task starting at ``node`` facing ``heading_deg``."""
        return NavState(node, float(heading_deg))

    def can_enter(self, node: str) -> bool:
        """Whether some action from some state could move the agent into ``node``.

        A cheap necessary condition planners use to reject hopeless targets
        without searching the whole state space. Default: the node has an
        incoming edge. Protocols that refuse some nodes override it.
        """
        return self.city.graph.in_degree(node) > 0

    def takeable_edges(self) -> set[tuple[str, str]]:
        """Directed edges that at least one action at their source node moves along.

        Default: enumerate :meth:`choices` from the state facing each node's
        panorama heading; heading-independent protocols get an exact answer.
        Protocols whose choices depend on the heading override this.
        """
        out: set[tuple[str, str]] = set()
        for n, d in self.city.graph.nodes(data=True):
            st = NavState(n, float(d.get("heading_deg") or 0.0))
            for i in range(len(self.choices(st))):
                nxt = self.transition(st, i)
                if nxt.node != n:
                    out.add((n, nxt.node))
        return out
