"""Small synthetic cities, task files and test agents for the runner/store/CLI
tests (importable by worker processes: put this directory on PYTHONPATH)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from urbanarena.agents.base import Agent, AgentContext
from urbanarena.agents.baselines import RandomAgent
from urbanarena.tasks.schema import CityRef, Goal, Start, Task, TaskFile
from urbanarena.world.city import City, CityMeta
from urbanarena.world.city_io import save_city
from urbanarena.world.geo import geodesic_azimuth_deg, geodesic_distance_m

LAT0, LON0 = 22.30, 114.17
STEP_DEG = 0.0003  # about 33 m north-south, 31 m east-west at this latitude


def grid_city(n: int = 5, name: str = "grid") -> City:
    """``n x n`` street grid near Hong Kong; node ``"r{row}c{col}"``; 4-neighbour
    edges both ways with geodesic azimuth/length; walkable headings = the
    out-edge azimuths (so every edge is takeable under ``cityseeker-v1`` too)."""
    g = nx.DiGraph()
    pos = {f"r{r}c{c}": (LAT0 + r * STEP_DEG, LON0 + c * STEP_DEG) for r in range(n) for c in range(n)}
    for node, (lat, lon) in pos.items():
        g.add_node(node, lat=lat, lon=lon, heading_deg=0.0)
    for r in range(n):
        for c in range(n):
            a = f"r{r}c{c}"
            for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                rr, cc = r + dr, c + dc
                if 0 <= rr < n and 0 <= cc < n:
                    b = f"r{rr}c{cc}"
                    (la, oa), (lb, ob) = pos[a], pos[b]
                    g.add_edge(a, b, azimuth_deg=geodesic_azimuth_deg(la, oa, lb, ob), length_m=geodesic_distance_m(la, oa, lb, ob))
    for node in g:
        hs = [d["azimuth_deg"] for _, _, d in g.out_edges(node, data=True)]
        g.nodes[node]["walkable_headings_raw"] = hs
        g.nodes[node]["walkable_headings_deg"] = hs
    return City(g, CityMeta(name=name, licence="CC0-1.0"))


def grid_tasks(city: City, n_tasks: int, seed: int = 7) -> TaskFile:
    """``n_tasks`` cityseeker-family tasks between random distinct nodes, with
    shortest reference paths; categories/difficulties cycle through fixed values."""
    rng = np.random.default_rng(seed)
    nodes = sorted(city.graph)
    cats = ["basic_poi", "transport_hub", "latent_poi"]
    diffs = ["easy", "medium", "hard"]
    ref = CityRef(name=city.name, content_hash=city.content_hash)
    tasks = []
    for i in range(n_tasks):
        s, gl = rng.choice(len(nodes), size=2, replace=False)
        start, goal = nodes[int(s)], nodes[int(gl)]
        tasks.append(Task(
            task_id=f"{city.name}/{i}", family="cityseeker", city=ref,
            start=Start(node=start, heading_deg=0.0), goals=[Goal(node=goal, label=cats[i % 3])],
            success_radius_m=50.0, instruction=f"go to {goal}",
            reference_path=city.shortest_path(start, goal), category=cats[i % 3], difficulty=diffs[i % 3],
        ))
    return TaskFile(city=ref, tasks=tasks)


def write_inputs(root: Path, n: int = 5, n_tasks: int = 12) -> tuple[Path, Path, City, TaskFile]:
    """Save a grid city and its task file under ``root``; returns (city_dir, task_file, city, taskfile)."""
    city = grid_city(n)
    city_dir = save_city(city, root / "city")
    tf = grid_tasks(city, n_tasks)
    task_path = tf.save(root / "tasks.json")
    return city_dir, task_path, city, tf


class SlowRandomAgent(RandomAgent):
    """The random baseline with a fixed wall-clock delay per action (an API-bound
    agent stand-in, so a run lasts long enough to be killed mid-way)."""

    name = "slow-random"

    def __init__(self, delay_s: float = 0.002, stop_prob: float = 0.0):
        super().__init__(stop_prob=stop_prob)
        self.params["delay_s"] = float(delay_s)
        self.delay_s = float(delay_s)

    def act(self, observation: dict[str, Any]) -> int:
        time.sleep(self.delay_s)
        return super().act(observation)


class ScriptedAgent(Agent):
    """Plays a fixed list of action indices, then STOP."""

    name = "scripted"

    def __init__(self, actions: list[int]):
        super().__init__(actions=list(actions))
        self.actions = list(actions)

    def reset(self, task: Task, context: AgentContext) -> None:
        self.i = 0
        self.stats = {"acts": 0}

    def act(self, observation: dict[str, Any]) -> int:
        self.stats["acts"] += 1
        if self.i >= len(self.actions):
            return -1
        a = self.actions[self.i]
        self.i += 1
        return a


class FailingAgent(Agent):
    """Moves with choice 0 and raises ``RuntimeError`` at its ``fail_at``-th act (0-based);
    ``fail_at=-1`` raises in ``reset``."""

    name = "failing"

    def __init__(self, fail_at: int = 2):
        super().__init__(fail_at=fail_at)
        self.fail_at = fail_at

    def reset(self, task: Task, context: AgentContext) -> None:
        if self.fail_at == -1:
            raise RuntimeError("agent cannot start")
        self.n = 0

    def act(self, observation: dict[str, Any]) -> int:
        if self.n == self.fail_at:
            raise RuntimeError(f"model API failed at step {self.n}")
        self.n += 1
        return 0
