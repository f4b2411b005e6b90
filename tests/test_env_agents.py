"""Env, protocols and baseline/oracle agents on small hand-built cities."""

from __future__ import annotations

import pytest

from conftest import make_city
from urbanarena.agents.base import AgentContext
from urbanarena.agents.baselines import ForwardAgent, RandomAgent, StraightAgent
from urbanarena.agents.oracle import OracleAgent, plan_to
from urbanarena.env import STOP, GraphNavEnv, StepLimit, make_motion
from urbanarena.env.motion.heading_hop import CitySeekerHop, EdgeHop
from urbanarena.env.motion.base import NavState
from urbanarena.errors import ProtocolError
from urbanarena.tasks.schema import CityRef, Goal, Start, Task
from urbanarena.world.geo import geodesic_distance_m, geodesic_azimuth_deg

D = 0.0001  # degrees, about 11 m


def grid_city(n=3, **node_attrs):
    """n x n grid, row r col c at lat r*D, lon c*D, 4-neighbour edges both ways."""
    nodes = {f"{r}{c}": (r * D, c * D) for r in range(n) for c in range(n)}
    edges = []
    for a, (la, oa) in nodes.items():
        for b, (lb, ob) in nodes.items():
            if abs(la - lb) + abs(oa - ob) == pytest.approx(D) and a != b:
                edges.append((a, b, geodesic_azimuth_deg(la, oa, lb, ob), geodesic_distance_m(la, oa, lb, ob)))
    return make_city(nodes, edges, **node_attrs)


def task(start, goals, ref=(), heading=0.0, stages=None):
    return Task(
        task_id="t", family="cityseeker", city=CityRef(name="toy"), start=Start(node=start, heading_deg=heading),
        goals=[Goal(node=g) for g in goals], reference_path=list(ref), reference_stages=stages, success_radius_m=50,
    )


def test_cityseeker_hop_nearest_without_wrap_vs_edge_hop():
    # node A has edges at azimuth 5 (to B) and 200 (to C); raw walkable headings [350, 190].
    city = make_city(
        {"A": (0, 0), "B": (D, 0), "C": (-D, 0)},
        [("A", "B", 5.0, 10.0), ("A", "C", 200.0, 10.0), ("B", "A", 185.0, 10.0), ("C", "A", 20.0, 10.0)],
        walkable_headings_raw={"A": [350.0, 190.0]},
    )
    faithful = CitySeekerHop(city)
    st = NavState("A", 0.0)
    assert [c.heading_deg for c in faithful.choices(st)] == [350.0, 190.0]
    # |5-350| = 345 > |200-350| = 150: no wrap -> heading 350 leads to C, as does 190.
    assert faithful.transition(st, 0).node == "C"
    assert faithful.transition(st, 1).node == "C"
    assert ("A", "B") not in faithful.takeable_edges()
    wrapped = CitySeekerHop(city, wrap=True)
    # with wrap, 350 is 15 deg from 5 -> B
    assert wrapped.transition(st, 0).node == "B"
    edge = EdgeHop(city)
    assert [c.heading_deg for c in edge.choices(st)] == [5.0, 200.0]
    assert edge.takeable_edges() == set(city.graph.edges)
    moved = edge.transition(st, 1)
    assert moved == NavState("C", 200.0)


def test_unknown_protocol_and_style():
    city = grid_city(2)
    with pytest.raises(ProtocolError, match="unknown protocol"):
        make_motion("nope-v9", city, "heading")
    with pytest.raises(ProtocolError, match="no 'heading'-style"):
        make_motion("touchdown-v1", city, "heading")


def test_env_invalid_action_stop_and_step_limit():
    city = grid_city(3)
    env = StepLimit(GraphNavEnv(city, EdgeHop(city)), max_steps=3)
    obs, info = env.reset(options={"start_node": "00", "goal_nodes": ["22"]})
    assert obs["node"] == "00" and len(obs["choices"]) == 2  # north and east
    assert info["goal_dist_m"] == pytest.approx(geodesic_distance_m(0, 0, 2 * D, 2 * D))
    obs, _, term, trunc, info = env.step(7)  # out of range: counted, no move
    assert info["invalid_action"] and info["invalid_actions"] == 1 and obs["node"] == "00"
    obs, _, term, trunc, info = env.step("garbage")
    assert info["invalid_actions"] == 2 and not term and not trunc
    obs, _, term, trunc, info = env.step(0)  # azimuth 0 = north -> node 10
    assert obs["node"] == "10" and trunc and info["stop_reason"] == "max_steps"
    assert env.unwrapped.path == ["00", "00", "00", "10"]
    assert env.unwrapped.actions == [7, -2, 0]
    env.reset(options={"start_node": "00"})
    _, _, term, trunc, info = env.step(STOP)
    assert term and not trunc and info["stop_reason"] == "stop"
    with pytest.raises(RuntimeError):
        env.step(0)
    with pytest.raises(ValueError):
        env.reset(options={"start_node": "zz"})


def run(city, motion, agent, t, seed=0, max_steps=20):
    env = StepLimit(GraphNavEnv(city, motion), max_steps)
    agent.reset(t, AgentContext(city, motion, seed, motion.protocol_id, task_id=t.task_id))
    obs, info = env.reset(options={"start_node": t.start.node, "start_heading_deg": t.start.heading_deg, "goal_nodes": [g.node for g in t.goals]})
    while True:
        obs, _, term, trunc, info = env.step(agent.act(obs))
        if term or trunc:
            return env.unwrapped, info


def test_oracle_shortest_and_stage_order():
    city = grid_city(3)
    motion = EdgeHop(city)
    env, info = run(city, motion, OracleAgent("shortest"), task("00", ["22"]))
    assert info["stop_reason"] == "stop" and env.path[-1] == "22"
    assert city.path_length_m(env.path) == pytest.approx(city.shortest_path_length_m("00", "22"))
    assert len(env.path) == 5  # 4 hops + start
    # two stages under urbanarena-graph-v1: must pass 02 first
    env, _ = run(city, motion, OracleAgent(), task("00", ["02", "20"]))
    assert env.path.index("02") < len(env.path) - 1 and env.path[-1] == "20"
    # reference replay follows a longer reference exactly
    ref = ["00", "01", "11", "10", "20"]
    env, _ = run(city, motion, OracleAgent("reference"), task("00", ["20"], ref=ref))
    assert env.path == ref
    # auto does not follow a non-shortest reference
    env, _ = run(city, motion, OracleAgent("auto"), task("00", ["20"], ref=ref))
    assert env.path == ["00", "10", "20"]


def test_oracle_reports_no_legal_path():
    # under cityseeker-v1 A->B is untakeable (see first test): the oracle stops and says so
    city = make_city(
        {"A": (0, 0), "B": (D, 0), "C": (-D, 0)},
        [("A", "B", 5.0, 10.0), ("A", "C", 200.0, 10.0), ("B", "A", 185.0, 10.0), ("C", "A", 20.0, 10.0)],
        walkable_headings_raw={"A": [350.0, 190.0], "C": [20.0], "B": [185.0]},
    )
    motion = make_motion("cityseeker-v1", city, "heading")
    assert plan_to(motion, NavState("A", 0.0), "B") is None
    oracle = OracleAgent()
    env, info = run(city, motion, oracle, task("A", ["B"]))
    assert info["stop_reason"] == "stop" and env.path == ["A"]
    assert oracle.stats["no_legal_path"] and oracle.stats["unreachable_target"] == "B"


def test_baselines():
    city = grid_city(3)
    motion = EdgeHop(city)
    t = task("11", ["22"])
    a, b = RandomAgent(), RandomAgent()
    e1, _ = run(city, motion, a, t, seed=3)
    p1 = list(e1.path)
    e2, _ = run(city, motion, b, t, seed=3)
    assert e2.path == p1 and len(p1) == 21
    e3, _ = run(city, motion, RandomAgent(), t, seed=4)
    assert e3.path != p1  # different seed, different walk (20 random hops on a 3x3 grid)
    # forward: first listed choice = smallest azimuth: from 11 that is north (0 deg) -> 21, then stuck going
    # 21's smallest azimuth is 90 (east) -> 22, then 180 (south) -> 12 ...
    e4, _ = run(city, motion, ForwardAgent(), t, max_steps=3)
    assert e4.path == ["11", "21", "22", "12"]
    # straight: keeps heading east from 10 -> 11 -> 12, then at the border the nearest to 90 is north/south tie -> first listed (0 = north)
    e5, _ = run(city, motion, StraightAgent(), task("10", ["12"], heading=90.0), max_steps=3)
    assert e5.path == ["10", "11", "12", "22"]
