"""Hand-built cities, tasks and scripted agents for the strategy tests (tests/test_strategies_*.py)."""

from __future__ import annotations

from typing import Any

from conftest import make_city
from urbanarena.agents.base import Agent, AgentContext
from urbanarena.env.graph_env import STOP
from urbanarena.env.motion.base import NavState
from urbanarena.tasks.schema import CityRef, Goal, Start, Task
from urbanarena.world.geo import geodesic_distance_m

LAT = 22.30
LON0 = 114.17
DLON = 0.0003  # ~30.9 m east-west at this latitude
DLAT = 0.0003  # ~33.4 m north-south


def line_city(names: str = "ABCDEF", north_of_a: bool = False):
    """Nodes ``A, B, ...`` on a west-east line ~31 m apart (edges both ways, azimuth 90/270); with
    ``north_of_a`` also ``N`` ~33 m north of ``A`` (edges A<->N, azimuth 0/180)."""
    nodes = {n: (LAT, LON0 + i * DLON) for i, n in enumerate(names)}
    if north_of_a:
        nodes["N"] = (LAT + DLAT, LON0)
    edges = []
    for a, b in zip(names, names[1:]):
        d = geodesic_distance_m(*nodes[a], *nodes[b])
        edges += [(a, b, 90.0, d), (b, a, 270.0, d)]
    if north_of_a:
        d = geodesic_distance_m(*nodes["A"], *nodes["N"])
        edges += [("A", "N", 0.0, d), ("N", "A", 180.0, d)]
    return make_city(nodes, edges, name="line")


def task_for(city, start: str, goal: str, task_id: str = "t/0") -> Task:
    ref = CityRef(name=city.name, content_hash=city.content_hash)
    return Task(task_id=task_id, family="cityseeker", city=ref, start=Start(node=start, heading_deg=90.0),
                goals=[Goal(node=goal, label="x")], success_radius_m=50.0, instruction=f"go to {goal}",
                reference_path=city.shortest_path(start, goal), category="basic_poi", difficulty="easy")


class ScriptedNodeAgent(Agent):
    """Walks a script of ``(next_node, confidence)`` pairs: at each decision it takes the offered
    choice whose transition leads to ``next_node`` (``None`` -> STOP; an int -> that raw action,
    e.g. an invalid index). Reports its confidence and records every strategy text it is given
    (``texts``: one entry per decision, ``""`` when none)."""

    name = "scripted-node"
    reports_confidence = True

    def __init__(self, script: list[tuple[Any, float | None]]):
        super().__init__(script=[list(s) for s in script])
        self.script = list(script)

    def reset(self, task: Task, context: AgentContext) -> None:
        self.motion = context.motion
        self.i = 0
        self.last_confidence = None
        self.texts: list[str] = []
        self.pending = ""
        self.decided_at: list[str] = []
        self.stats = {"decisions": 0}

    def set_strategy_context(self, text: str) -> None:
        self.pending = text

    def act(self, observation: dict[str, Any]) -> int:
        self.texts.append(self.pending)
        self.pending = ""
        self.decided_at.append(observation["node"])
        self.stats["decisions"] += 1
        if self.i >= len(self.script):
            self.last_confidence = None
            return STOP
        target, conf = self.script[self.i]
        self.i += 1
        self.last_confidence = conf
        if target is None:
            return STOP
        if isinstance(target, int):
            return target
        st = NavState(observation["node"], float(observation["heading_deg"]))
        for i in range(len(observation["choices"])):
            if self.motion.transition(st, i).node == target:
                return i
        raise AssertionError(f"no choice from {observation['node']} leads to {target}")


class TextReader(ScriptedNodeAgent):
    """A scripted agent that reads strategy text but reports no confidence."""

    name = "text-reader"
    reports_confidence = False
