"""map2seq scoring: hand-worked TC/SPD/SED/nDTW cases on a tiny graph, corner
cases, and TC/SPD/SED on the real graph against a transcription of map2seq's
own evaluation formulas (``vln/env.py`` ``_eva_metrics``: an ``nx.Graph`` built
from the raw links file, ``nx.all_neighbors``, ``nx.dijkstra_path_length``,
optimal-string-alignment edit distance)."""

from __future__ import annotations

import gzip
import json
import math

import networkx as nx
import pytest

from test_touchdown_navigator import CROSS_LINKS, CROSS_NODES
from urbanarena.agents.base import Agent
from urbanarena.agents.baselines import RandomAgent
from urbanarena.agents.oracle import OracleAgent
from urbanarena.env import STOP
from urbanarena.errors import ProtocolError
from urbanarena.runner.episode import EpisodeRunner
from urbanarena.tasks.families import get_family
from urbanarena.tasks.families.base import Trajectory
from urbanarena.tasks.metrics import METRIC_KEYS
from urbanarena.tasks.schema import CityRef, Goal, Start, Task
from urbanarena.world.importers.touchdown import import_city

FAMILY = get_family("map2seq")


@pytest.fixture
def city(tmp_path):
    """The cross of test_touchdown_navigator plus a separate two-node island X-Y."""
    nodes = dict(CROSS_NODES, X=(40.01, -74.0), Y=(40.0101, -74.0))
    (tmp_path / "nodes.txt").write_text("".join(f"{n},0,{la},{lo}\n" for n, (la, lo) in nodes.items()))
    links = CROSS_LINKS + [("X", 0, "Y"), ("Y", 180, "X")]
    (tmp_path / "links.txt").write_text("".join(f"{a},{h},{b}\n" for a, h, b in links))
    return import_city(tmp_path)


def task(route, goal=None, start=None):
    return Task(
        task_id="t", family="map2seq", city=CityRef(name="touchdown"),
        start=Start(node=start or (route[0] if route else "S1"), heading_deg=1.0),
        goals=[Goal(node=goal or route[-1])], reference_path=list(route), success_radius_m=25.0,
    )


def score(city, t, path, steps=None, proto="touchdown-v1"):
    actions = [0] * (steps if steps is not None else max(len(path) - 1, 0)) + [-1]
    return FAMILY.score(t, city, proto, Trajectory(path=list(path), actions=actions, stop_reason="stop"))


def L(city, a, b):
    return city.graph.edges[a, b]["length_m"]


def xy_dist(city, a, b):
    (xa, ya), (xb, yb) = city.xy(a), city.xy(b)
    return math.hypot(xa - xb, ya - yb)


def test_exact_route(city):
    m = score(city, task(["S1", "C", "N1"]), ["S1", "C", "N1"])
    assert set(m) == set(METRIC_KEYS)
    assert m["tc"] == m["tc_exact"] == 1.0
    assert m["spd_hops"] == 0.0 and m["spd_m"] == 0.0 and m["goal_dist_m"] == 0.0
    assert m["sed"] == 1.0 and m["ndtw"] == 1.0 and m["sdtw"] == 1.0 and m["dtw_m"] == 0.0
    assert m["spl"] == pytest.approx(1.0, abs=1e-12)
    assert m["avg_steps"] == 3.0
    assert m["tc_category"] is None and m["spd_cityseeker"] is None


def test_stop_next_to_goal_is_success(city):
    # stop at C, one link short of N1: TC counts the goal's neighbours
    m = score(city, task(["S1", "C", "N1"]), ["S1", "C"])
    assert m["tc"] == 1.0 and m["tc_exact"] == 0.0
    assert m["spd_hops"] == 1.0 and m["spd_m"] == pytest.approx(L(city, "C", "N1"))
    # SED: one deletion out of max(2, 3) -> 1 - 1/3
    assert m["sed"] == pytest.approx(2 / 3)
    # SPL: success with a path (S1-C) shorter than the shortest S1-C-N1 -> 1
    assert m["spl"] == 1.0
    # DTW: the extra reference point N1 is matched to C: cost d(C, N1)
    assert m["dtw_m"] == pytest.approx(xy_dist(city, "C", "N1"), rel=1e-9)
    assert m["ndtw"] == pytest.approx(math.exp(-xy_dist(city, "C", "N1") / (3 * 25.0)), rel=1e-12)
    assert m["sdtw"] == m["ndtw"]
    assert m["goal_dist_m"] == pytest.approx(city.distance_m("C", "N1"))
    assert m["tc_proximity_40m"] == m["tc_proximity_50m"] == m["tc_proximity_60m"] == 1.0


def test_wrong_turn_fails(city):
    m = score(city, task(["S1", "C", "N1"]), ["S1", "C", "E1"])
    assert m["tc"] == 0.0 and m["tc_exact"] == 0.0
    # E1 - C - N1 on the undirected graph
    assert m["spd_hops"] == 2.0
    assert m["spd_m"] == pytest.approx(L(city, "E1", "C") + L(city, "C", "N1"))
    assert m["sed"] == 0.0 and m["spl"] == 0.0 and m["sdtw"] == 0.0
    d = xy_dist(city, "E1", "N1")  # the only mismatched pair on the diagonal alignment
    assert m["dtw_m"] == pytest.approx(d, rel=1e-9)
    assert m["ndtw"] == pytest.approx(math.exp(-d / 75.0), rel=1e-12)


def test_turning_in_place_is_not_a_move(city):
    m = score(city, task(["S1", "C", "N1"]), ["S1", "S1", "C", "C", "C", "N1"])
    assert m["sed"] == 1.0 and m["ndtw"] == 1.0 and m["avg_steps"] == 6.0
    assert m["spl"] == pytest.approx(1.0, abs=1e-12)


def test_sed_uses_optimal_string_alignment_like_map2seq(city):
    # a swapped pair is one edit (pyxdameraulevenshtein), not two (Levenshtein)
    m = score(city, task(["S1", "C", "N1"]), ["C", "S1", "N1"])
    assert m["tc"] == 1.0
    assert m["sed"] == pytest.approx(1 - 1 / 3)


def test_corner_cases(city):
    # start == goal, one-node reference: SPL = success, nDTW on one point
    m = score(city, task(["C"]), ["C"], steps=0)
    assert m["tc"] == 1.0 and m["spl"] == 1.0 and m["ndtw"] == 1.0 and m["sed"] == 1.0 and m["spd_hops"] == 0.0
    # empty trajectory: read as standing at the start (S1, two hops from N1)
    m = score(city, task(["S1", "C", "N1"]), [], steps=0)
    assert m["tc"] == 0.0 and m["spd_hops"] == 2.0 and m["avg_steps"] == 1.0
    assert 0.0 < m["ndtw"] < 1.0
    # goal on another island: unreachable -> spd None, never NaN
    m = score(city, task(["S1", "C"], goal="X"), ["S1", "C"])
    assert m["tc"] == 0.0 and m["spd_hops"] is None and m["spd_m"] is None and m["spl"] == 0.0
    for k, v in m.items():
        assert v is None or math.isfinite(v), k
    # empty reference path: replaced by the shortest route S1-C-N1
    m = score(city, task([], goal="N1", start="S1"), ["S1", "C", "N1"])
    assert m["ndtw"] == 1.0 and m["sed"] == 1.0
    with pytest.raises(ProtocolError):
        score(city, task(["C"]), ["C"], proto="no-such-protocol")


# --------------------------------------------------------------------------- real graph


def osa(a, b):
    """Optimal string alignment distance (restricted Damerau-Levenshtein), the
    textbook dynamic programme, as pyxdameraulevenshtein computes it."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


class DetourAgent(Agent):
    """Test agent giving varied outcomes: ``"detour"`` takes 1-8 random actions,
    then follows a shortest legal route to the goal; ``"early"`` replays the
    reference route but stops after 30-45 actions (before, at or near the goal)."""

    name = "detour"

    def __init__(self, mode: str):
        super().__init__(mode=mode)
        self.mode = mode

    def reset(self, task, context):
        self.oracle = OracleAgent(follow="shortest" if self.mode == "detour" else "reference")
        self.oracle.reset(task, context)
        self.rng = context.rng
        self.k = int(self.rng.integers(1, 9) if self.mode == "detour" else self.rng.integers(30, 46))
        self.n = 0

    def act(self, obs):
        self.n += 1
        if self.mode == "detour" and self.n <= self.k:
            return int(self.rng.integers(3))
        if self.mode == "early" and self.n > self.k:
            return STOP
        return self.oracle.act(obs)


@pytest.mark.shared
def test_tc_spd_sed_match_map2seq_formulas_on_real_graph(touchdown_city, shared_dir):
    # map2seq's load_nav_graph: an undirected nx.Graph of every link
    g = nx.Graph()
    with gzip.open(shared_dir / "data" / "touchdown" / "links.txt.gz", "rt") as f:
        for line in f:
            a, _, b = line.strip().split(",")
            g.add_edge(a, b)
    path = shared_dir / "data" / "map2seq" / "map2seq_seen_dev.jsonl.gz"
    tasks = FAMILY.load_foreign(path, touchdown_city)[:150]
    runners = [
        EpisodeRunner(touchdown_city, lambda: RandomAgent(stop_prob=0.05), "random"),
        EpisodeRunner(touchdown_city, lambda: DetourAgent("detour"), "detour"),
        EpisodeRunner(touchdown_city, lambda: DetourAgent("early"), "early"),
    ]
    n_success = n_imperfect = 0
    for i, t in enumerate(tasks):
        res = runners[i % 3].run(t, i, "touchdown-v1", FAMILY.default_max_steps)
        m = res["metrics"]
        # map2seq's trajectory: a node is appended only when it changes
        traj = [res["trajectory"][0]]
        for n in res["trajectory"][1:]:
            if n != traj[-1]:
                traj.append(n)
        gt = t.reference_path
        success = 1.0 if traj[-1] in list(nx.all_neighbors(g, gt[-1])) + [gt[-1]] else 0.0
        assert m["tc"] == success
        assert m["spd_hops"] == nx.dijkstra_path_length(g, traj[-1], gt[-1])
        ed = 1 - osa(traj, gt) / max(len(traj), len(gt))
        assert m["sed"] == pytest.approx(success * ed, abs=1e-12)
        assert m["avg_steps"] == len(res["actions"]) <= FAMILY.default_max_steps
        n_success += int(success)
        n_imperfect += int(success and 0 < ed < 1)
    # the check must have seen both outcomes (and imperfect successes) to mean anything
    assert 20 < n_success < len(tasks) - 20
    assert n_imperfect > 10
