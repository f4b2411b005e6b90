"""R1 / R2 retrieve the right earlier-round records (hand-made rounds in a job memory, and rounds
run by the runner), memory rows go to the run store with the episode row, and rounds are wired
through the runner (fresh agent per round, own rng stream per round, details per round)."""

from __future__ import annotations

import math

import pytest

from runner_util import grid_city
from strategies_util import TextReader, task_for
from urbanarena.agents.base import AgentContext
from urbanarena.agents.baselines import RandomAgent
from urbanarena.agents.strategies import JobMemory, StrategyAgent, StrategyContext
from urbanarena.agents.strategies.memory import spatial_retrieval, topology_retrieval
from urbanarena.env.protocols import make_motion
from urbanarena.runner.episode import EpisodeRunner
from urbanarena.runner.store import Store

E, W, N, S = 89.99994308157608, 270.0, 0.0, 180.0


def hand_memory():
    """Round 1: r0c0 -> r0c1 -> r0c2, step limit. Round 2: r0c0 -> r1c0 -> r1c1 -> r0c1, STOP.
    Round 3: r0c0 -> r2c0, step limit (must never be seen from round 3)."""
    city = grid_city(3)
    mem = JobMemory(city, config_hash="h", task_id="t", seed=4, agent="a")
    for n in ("r0c0", "r0c1", "r0c2", "r1c0", "r1c1", "r2c0"):
        mem.label(n)  # P0 .. P5 in this order
    mem.end_round(1, ["r0c0", "r0c1", "r0c2"], [1, 1], [0.0, E, E], "max_steps")
    mem.note_step(2, 2, "revert", None)
    mem.end_round(2, ["r0c0", "r1c0", "r1c1", "r0c1"], [0, 1, 0, -1], [0.0, N, E, S], "stop")
    mem.end_round(3, ["r0c0", "r1c0", "r2c0"], [0, 0], [0.0, N, N], "max_steps")
    return city, mem


def test_job_memory_rows_follow_the_env_record():
    _, mem = hand_memory()
    rows = mem.rows()
    assert len(rows) == 3 + 4 + 3
    r2 = [r for r in rows if r["round"] == 2]
    assert [(r["step"], r["node"], r["action"], r["next_node"], r["kind"]) for r in r2] == [
        (0, "r0c0", 0, "r1c0", "agent"), (1, "r1c0", 1, "r1c1", "agent"), (2, "r1c1", 0, "r0c1", "revert"),
        (3, "r0c1", -1, None, "agent")]
    assert {(r["config_hash"], r["task_id"], r["seed"], r["agent"]) for r in rows} == {("h", "t", 4, "a")}
    last1 = [r for r in rows if r["round"] == 1][-1]
    assert last1["action"] is None and last1["kind"] is None and last1["round_end"] == "max_steps"
    with pytest.raises(ValueError, match="round 2"):
        mem.end_round(2, ["r0c0"], [], [0.0], "stop")


def test_r1_topology_retrieval_returns_the_h_hop_subgraph_of_earlier_rounds():
    _, mem = hand_memory()
    got = topology_retrieval(mem, "r0c1", 3, hops=1)
    # within one move of r0c1 on the undirected move graph of rounds 1-2: r0c0, r0c2 (round 1), r1c1 (round 2)
    assert got["known"] and got["here"] == "P1"
    assert [(p["node"], p["hops"], p["visits"]) for p in got["places"]] == [
        ("r0c1", 0, 2), ("r0c0", 1, 2), ("r0c2", 1, 1), ("r1c1", 1, 1)]
    dec = {p["node"]: [(d["round"], d["step"], d["action"], d["next_node"], d["kind"]) for d in p["decisions"]]
           for p in got["places"]}
    assert dec == {"r0c1": [(1, 1, 1, "r0c2", "agent"), (2, 3, -1, None, "agent")],
                   "r0c0": [(1, 0, 1, "r0c1", "agent"), (2, 0, 0, "r1c0", "agent")],
                   "r0c2": [],  # round 1 ended there by the step limit: no decision
                   "r1c1": [(2, 2, 0, "r0c1", "revert")]}
    assert [(s["round"], s["end"], s["final_node"], s["steps"]) for s in got["rounds"]] == [
        (1, "max_steps", "r0c2", 2), (2, "stop", "r0c1", 4)]
    # two moves reach r1c0 as well; round 3's r2c0 is never retrieved from round 3
    got2 = topology_retrieval(mem, "r0c1", 3, hops=2)
    assert [p["node"] for p in got2["places"]] == ["r0c1", "r0c0", "r0c2", "r1c1", "r1c0"]
    assert "r2c0" not in {p["node"] for p in topology_retrieval(mem, "r1c0", 3, hops=5)["places"]}
    assert "r2c0" in {p["node"] for p in topology_retrieval(mem, "r1c0", 4, hops=1)["places"]}
    # from round 2 only round 1 is visible; a node not in that memory is not known
    assert [p["node"] for p in topology_retrieval(mem, "r0c1", 2, hops=1)["places"]] == ["r0c1", "r0c0", "r0c2"]
    assert topology_retrieval(mem, "r1c1", 2)["known"] is False


def test_r2_spatial_retrieval_returns_earlier_places_within_the_radius():
    city, mem = hand_memory()
    # independent distances: geodesic (pyproj) from r0c1
    d = {n: city.distance_m("r0c1", n) for n in ("r0c0", "r0c2", "r1c1", "r1c0", "r2c0")}
    assert d["r0c0"] < 35 and d["r1c1"] < 35 and 35 < d["r1c0"] < 50 < d["r2c0"]
    got = spatial_retrieval(mem, "r0c1", 3, radius_m=35.0)
    assert [p["node"] for p in got["places"]] == ["r0c1", "r0c0", "r0c2", "r1c1"]  # nearest first; tie by order
    for p in got["places"][1:]:
        assert p["distance_m"] == pytest.approx(d[p["node"]], abs=0.05)
    assert [p["visits"] for p in got["places"]] == [2, 2, 1, 1]
    assert got["places"][0]["bearing_deg"] is None and got["places"][3]["bearing_deg"] == pytest.approx(0.0, abs=0.01)
    got50 = spatial_retrieval(mem, "r0c1", 3)  # default 50 m
    assert got50["radius_m"] == 50.0 and [p["node"] for p in got50["places"]][-1] == "r1c0"
    assert "r2c0" not in {p["node"] for p in spatial_retrieval(mem, "r0c1", 3, radius_m=500.0)["places"]}
    assert [p["node"] for p in spatial_retrieval(mem, "r0c1", 2, radius_m=35.0)["places"]] == ["r0c1", "r0c0", "r0c2"]


def test_rounds_through_the_runner_give_r1_r2_the_earlier_round():
    city = grid_city(3)
    task = task_for(city, "r0c0", "r2c2")
    made = []

    def factory():
        made.append(TextReader([("r0c1", None), ("r0c2", None), (None, None)]))
        return StrategyAgent(made[-1], "R1,R2(radius_m=35)")

    runner = EpisodeRunner(city, factory, "reader", rounds=2, strategies="R1,R2(radius_m=35)")
    res = runner.run(task, 3, "urbanarena-graph-v1", 20, "cfg")
    assert len(made) == 2  # a fresh agent per round
    assert made[0].texts == ["", "", ""]  # round 1: nothing earlier
    r1, r2 = made[1].texts[0].split("\n\n")
    assert r1.splitlines() == [
        "[Memory: earlier rounds, places within 2 moves of here] You are at P0.",
        "- P0 (here; 1 visit): round 1 step 1 went heading 90 deg to P1",
        "- P1 (1 move away; 1 visit): round 1 step 2 went heading 90 deg to P2",
        "- P2 (2 moves away; 1 visit): round 1 step 3 stopped here",
        "Earlier rounds: round 1 stopped at P2 after 3 steps."]
    assert r2.splitlines() == [
        "[Memory: earlier rounds, places within 35 m of here] You are at P0, heading 90 deg.",
        "- P0 (here; 1 visit): round 1 step 1 went heading 90 deg to P1",
        "- P1 (31 m at 90 deg (ahead); 1 visit): round 1 step 2 went heading 90 deg to P2",
        "Earlier rounds: round 1 stopped at P2 after 3 steps."]
    d = res["details"]
    assert d["rounds"] == d["rounds_planned"] == 2 and d["privileged"] is False
    assert [s["id"] for s in d["strategies"]] == ["R1", "R2"]
    assert [p["trajectory"] for p in d["per_round"]] == [["r0c0", "r0c1", "r0c2"]] * 2
    assert res["trajectory"] == ["r0c0", "r0c1", "r0c2"] and res["agent_stats"]["strategy"]["round"] == 2
    assert [(m["round"], m["step"], m["node"]) for m in res["memory"]] == [
        (r, s, n) for r in (1, 2) for s, n in enumerate(["r0c0", "r0c1", "r0c2"])]
    assert {(m["config_hash"], m["task_id"], m["seed"]) for m in res["memory"]} == {("cfg", task.task_id, 3)}


def test_store_commits_memory_rows_with_the_episode_row(tmp_path):
    city = grid_city(3)
    task = task_for(city, "r0c0", "r2c2")
    runner = EpisodeRunner(city, lambda: StrategyAgent(RandomAgent(), "B2"), "random", rounds=3, strategies="B2")
    res = runner.run(task, 0, "urbanarena-graph-v1", 8, "cfg")
    with Store(tmp_path / "episodes.sqlite") as st:
        assert st.add(res)
        assert not st.add(res)  # same key: ignored, memory not duplicated
        mem = st.memory_rows()
        assert mem == res["memory"] and sorted({m["round"] for m in mem}) == [1, 2, 3]
        assert len(mem) == sum(len(p["trajectory"]) for p in res["details"]["per_round"])
        [row] = list(st.rows())
        assert row["details"]["privileged"] is True and row["details"]["strategies"][0]["id"] == "B2"
        assert st.add(res, replace=True)
        assert st.memory_rows() == mem  # replaced, not appended


def test_each_round_draws_its_own_rng_stream():
    city = grid_city(3)
    motion = make_motion("urbanarena-graph-v1", city, "heading")
    a = [AgentContext(city=city, motion=motion, seed=5, protocol_id="urbanarena-graph-v1").rng.random()]
    r1 = StrategyContext(city=city, motion=motion, seed=5, protocol_id="urbanarena-graph-v1", round=1).rng.random()
    r2 = StrategyContext(city=city, motion=motion, seed=5, protocol_id="urbanarena-graph-v1", round=2).rng.random()
    assert r1 == a[0] and r2 != r1 and not math.isnan(r2)
