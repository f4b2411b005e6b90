"""One episode: env + agent + scorer -> result dict (hand-worked cases)."""

from __future__ import annotations

import json
import math

import networkx as nx
import pytest

from runner_util import FailingAgent, ScriptedAgent, grid_city
from urbanarena.agents.baselines import RandomAgent
from urbanarena.runner.episode import EpisodeRunner, run_episode
from urbanarena.tasks.schema import CityRef, Goal, Start, Task


@pytest.fixture(scope="module")
def city():
    return grid_city(3)


def _task(city, start="r0c0", goal="r1c1"):
    return Task(
        task_id="toy/1", family="cityseeker", city=CityRef(name=city.name, content_hash=city.content_hash),
        start=Start(node=start, heading_deg=0.0), goals=[Goal(node=goal)], success_radius_m=50.0,
        reference_path=city.shortest_path(start, goal), category="basic_poi", difficulty="easy",
    )


@pytest.mark.parametrize("protocol,script", [("urbanarena-graph-v1", [0, 1]), ("cityseeker-v1", [0, 2])])
def test_scripted_episode_reaches_goal(city, protocol, script):
    # urbanarena-graph-v1 offers out-edge azimuths sorted: at r0c0 north (-> r1c0, ~0) then
    # east (-> r0c1, ~90); at r1c0 north r2c0, east r1c1, south r0c0.
    # cityseeker-v1 offers the raw walkable headings in stored order (grid_city: north,
    # south, east, west where present): at r1c0 north r2c0, south r0c0, east r1c1.
    task = _task(city)
    res = run_episode(task, city, lambda: ScriptedAgent(script), seed=0, protocol_id=protocol, max_steps=10,
                      agent_name="scripted", config_hash="abc")
    assert res["trajectory"] == ["r0c0", "r1c0", "r1c1"]
    assert res["actions"] == [*script, -1]
    assert res["stop_reason"] == "stop" and res["error"] is None
    assert res["steps"] == 3 and res["invalid_actions"] == 0
    assert res["protocol"] == protocol and res["family"] == "cityseeker"
    assert (res["task_id"], res["seed"], res["agent"], res["config_hash"]) == ("toy/1", 0, "scripted", "abc")
    assert res["category"] == "basic_poi" and res["difficulty"] == "easy"
    m = res["metrics"]
    assert m["tc_exact"] == 1.0 and m["tc_proximity_50m"] == 1.0
    assert m["goal_dist_m"] == 0.0 and m["avg_steps"] == 3.0
    # SPL = l / max(p, l): p = walked length of the two edges, l = networkx shortest length
    walked = city.graph.edges["r0c0", "r1c0"]["length_m"] + city.graph.edges["r1c0", "r1c1"]["length_m"]
    shortest = nx.dijkstra_path_length(city.graph, "r0c0", "r1c1", weight="length_m")
    assert m["spl"] == pytest.approx(shortest / max(walked, shortest), abs=1e-12)
    # headings: start heading, then azimuth of each edge taken
    assert res["headings"][0] == 0.0
    assert res["headings"][1] == pytest.approx(city.graph.edges["r0c0", "r1c0"]["azimuth_deg"])
    assert res["headings"][2] == pytest.approx(city.graph.edges["r1c0", "r1c1"]["azimuth_deg"])
    assert res["agent_stats"] == {"acts": 3}
    assert set(res["timings"]) == {"agent_s", "env_s", "score_s", "total_s"}
    assert res["timings"]["total_s"] >= res["timings"]["agent_s"]
    json.dumps(res, allow_nan=False)  # plain JSON


def test_step_limit_truncates(city):
    res = run_episode(_task(city), city, lambda: ScriptedAgent([0] * 20), 0, "urbanarena-graph-v1", max_steps=2)
    assert res["trajectory"] == ["r0c0", "r1c0", "r2c0"]
    assert res["stop_reason"] == "max_steps" and res["steps"] == 2
    assert res["metrics"]["tc_exact"] == 0.0


def test_invalid_action_is_counted_not_mapped(city):
    res = run_episode(_task(city), city, lambda: ScriptedAgent([7, 1]), 0, "urbanarena-graph-v1", max_steps=10)
    # index 7 is out of range at r0c0 (2 choices): stay, count it; then east -> r0c1
    assert res["trajectory"] == ["r0c0", "r0c0", "r0c1"]
    assert res["invalid_actions"] == 1 and res["actions"] == [7, 1, -1]


def test_agent_exception_is_recorded_not_raised(city):
    res = run_episode(_task(city), city, lambda: FailingAgent(fail_at=2), 3, "urbanarena-graph-v1", max_steps=10)
    assert res["stop_reason"] == "error"
    assert res["error"].startswith("RuntimeError: model API failed at step 2")
    assert res["trajectory"] == ["r0c0", "r1c0", "r2c0"] and res["steps"] == 2
    # the partial trajectory is scored: ended 1 row north + 1 column west of the goal
    assert res["metrics"]["tc_exact"] == 0.0
    assert res["metrics"]["goal_dist_m"] == pytest.approx(city.distance_m("r2c0", "r1c1"), rel=1e-9)
    res = run_episode(_task(city), city, lambda: FailingAgent(fail_at=-1), 3, "urbanarena-graph-v1", max_steps=10)
    assert res["stop_reason"] == "error" and "agent cannot start" in res["error"]
    assert res["trajectory"] == ["r0c0"] and res["steps"] == 0
    assert all(v is None or math.isfinite(v) for v in res["metrics"].values())


def test_factory_exception_is_recorded(city):
    def factory():
        raise ValueError("no API key")

    res = run_episode(_task(city), city, factory, 0, "urbanarena-graph-v1", max_steps=5)
    assert res["stop_reason"] == "error" and "ValueError: no API key" in res["error"]


def test_random_agent_is_seeded_and_runner_reuse_is_stateless(city):
    task = _task(city, goal="r2c2")
    runner = EpisodeRunner(city, RandomAgent, "random")
    trajs = {s: runner.run(task, s, "urbanarena-graph-v1", 15)["trajectory"] for s in range(8)}
    # a fresh runner, seeds in reverse order: same trajectories (no state leaks between episodes)
    again = EpisodeRunner(city, RandomAgent, "random")
    for s in reversed(range(8)):
        assert again.run(task, s, "urbanarena-graph-v1", 15)["trajectory"] == trajs[s]
    assert len({tuple(t) for t in trajs.values()}) > 1
    for t in trajs.values():
        assert len(t) == 16 and all(b in city.graph[a] for a, b in zip(t, t[1:]))


def test_zero_step_limit(city):
    res = run_episode(_task(city), city, lambda: ScriptedAgent([0]), 0, "urbanarena-graph-v1", max_steps=0)
    assert res["trajectory"] == ["r0c0"] and res["steps"] == 0 and res["stop_reason"] == "max_steps"
