"""B1 / B2 / B3 triggers on hand-made traces in hand-built cities, run through the real env
(GraphNavEnv + StepLimit via EpisodeRunner): which node they revert to, that the walk back is made
of env steps (it costs steps and counts against the step limit), that B1 fires again after a
revert, and B3's hint."""

from __future__ import annotations

import networkx as nx
import pytest

from strategies_util import ScriptedNodeAgent, line_city, task_for
from urbanarena.agents.strategies import StrategyAgent, parse_strategies
from urbanarena.runner.episode import EpisodeRunner

PROTO = "urbanarena-graph-v1"


def run(city, task, script, spec, max_steps=40):
    made = []

    def factory():
        inner = ScriptedNodeAgent(script)
        made.append(inner)
        return StrategyAgent(inner, spec)

    res = EpisodeRunner(city, factory, "scripted").run_once(task, 0, PROTO, max_steps)
    return res, made[0], res["agent_stats"]["strategy"]["events"]


def test_b1_fires_after_three_low_confidence_steps_and_walks_back_to_the_last_confident_node():
    city = line_city()
    task = task_for(city, "A", "F")
    script = [("B", 1.0), ("C", 0.7), ("D", 0.7), ("E", 0.7), (None, 0.9)]
    res, agent, events = run(city, task, script, "B1")
    # decisions at A (1.0), B, C, D (0.7 each): at D the last three average 0.8 (no firing); at E they
    # are the three low-confidence steps, mean 0.7 < 0.75 -> back to A, the last node decided with >= 0.75
    assert res["trajectory"] == list("ABCDEDCBA")
    assert agent.decided_at == list("ABCDA")  # the walk back is not the agent's: it is asked again only at A
    assert res["steps"] == 9 and res["stop_reason"] == "stop"  # 4 moves out + 4 moves back + STOP
    [ev] = events
    assert (ev["strategy"], ev["at"], ev["target"], ev["outcome"], ev["cost_steps"]) == ("B1", "E", "A", "reverted", 4)
    assert ev["confidences"] == [0.7, 0.7, 0.7] and ev["mean"] == pytest.approx(0.7)
    # the moves back are legal env steps along the walked edges (azimuth 270 = west)
    assert res["headings"][5:] == [270.0, 270.0, 270.0, 270.0]


def test_b1_reverts_to_the_most_recent_confident_node_even_inside_the_window():
    city = line_city()
    task = task_for(city, "A", "F")
    # A 0.9, B 0.9, C 0.3 -> at D: last three mean 0.7 < 0.75; the most recent decision >= 0.75 is B's
    script = [("B", 0.9), ("C", 0.9), ("D", 0.3), (None, 1.0)]
    res, agent, events = run(city, task, script, "B1")
    assert res["trajectory"] == list("ABCDCB")
    assert [(e["at"], e["target"], e["cost_steps"]) for e in events] == [("D", "B", 2)]


def test_b1_does_not_fire_at_or_above_theta_and_fires_again_after_a_revert():
    city = line_city()
    task = task_for(city, "A", "F")
    res, _, events = run(city, task, [("B", 0.75), ("C", 0.75), ("D", 0.75), ("E", 0.75), (None, 0.75)], "B1")
    assert events == [] and res["trajectory"] == list("ABCDE")  # mean == theta is not below it
    # second firing: after reverting to B (its decision cut from the branch), three more low decisions
    # send the agent back to A, the next confident decision left on the branch
    script = [("B", 0.9), ("C", 0.9), ("D", 0.3),  # -> at D: back to B
              ("C", 0.4), ("D", 0.4), ("E", 0.4),  # three new decisions -> at E: mean 0.4: back to A
              (None, 1.0)]
    res, agent, events = run(city, task, script, "B1")
    assert [(e["at"], e["target"], e["outcome"], e["cost_steps"]) for e in events] == [
        ("D", "B", "reverted", 2), ("E", "A", "reverted", 4)]
    assert res["trajectory"] == list("ABCD") + list("CB") + list("CDE") + list("DCBA")
    assert agent.decided_at == list("ABC") + list("BCD") + ["A"]
    # custom parameters: k=2, theta=0.6 -> fires after two decisions averaging below 0.6
    res, _, events = run(city, task, [("B", 0.9), ("C", 0.5), ("D", 0.5), (None, 1.0)], "B1(k=2,theta=0.6)")
    assert [(e["at"], e["target"]) for e in events] == [("D", "A")]


def test_b1_revert_costs_steps_against_the_step_limit():
    city = line_city()
    task = task_for(city, "A", "F")
    script = [("B", 1.0), ("C", 0.7), ("D", 0.7), ("E", 0.7), (None, 0.9)]
    res, _, events = run(city, task, script, "B1", max_steps=6)
    # 4 moves out, then the limit allows only 2 of the 4 moves back
    assert res["trajectory"] == list("ABCDEDC") and res["stop_reason"] == "max_steps" and res["steps"] == 6
    assert events[0]["outcome"] == "walking_back" and events[0]["cost_steps"] == 4


def test_b1_without_a_confident_node_does_not_move():
    city = line_city()
    task = task_for(city, "A", "F")
    res, _, events = run(city, task, [("B", 0.5), ("C", 0.5), ("D", 0.5), (None, 0.5)], "B1")
    assert res["trajectory"] == list("ABCD")
    assert [(e["at"], e["target"], e["outcome"]) for e in events] == [("D", None, "no_target")]


def hops_to(city, goal):
    return nx.single_source_shortest_path_length(city.graph.reverse(copy=True), goal)


def test_b2_fires_on_three_non_decreasing_hop_distances():
    city = line_city()
    task = task_for(city, "C", "A")  # goal at the west end; walking east increases the hop distance
    d = hops_to(city, "A")
    assert [d[n] for n in "CDEF"] == [2, 3, 4, 5]
    res, agent, events = run(city, task, [("D", None), ("E", None), ("F", None), (None, None)], "B2")
    assert res["trajectory"] == list("CDEFEDC")
    [ev] = events
    assert (ev["at"], ev["target"], ev["cost_steps"], ev["outcome"]) == ("F", "C", 3, "reverted")
    assert ev["hops"] == [2, 3, 4, 5]
    # staying put counts as not decreasing (>=): an invalid action, then two steps east
    res, _, events = run(city, task, [(9, None), ("D", None), ("E", None), (None, None)], "B2")
    assert res["invalid_actions"] == 1
    assert res["trajectory"] == list("CCDEDC") and [(e["at"], e["target"], e["hops"]) for e in events] == [
        ("E", "C", [2, 2, 3, 4])]
    # one decreasing step in the window: no firing
    res, _, events = run(city, task, [("D", None), ("C", None), ("D", None), ("E", None), (None, None)], "B2")
    assert events == [] and res["trajectory"] == list("CDCDE")


def test_b3_adds_the_shortest_path_hint_after_reverting():
    city = line_city("ABCDE", north_of_a=True)
    task = task_for(city, "A", "N")
    script = [("B", 1.0), ("C", 0.7), ("D", 0.7), ("E", 0.7), ("N", 0.9)]
    res, agent, events = run(city, task, script, "B3")
    assert res["trajectory"] == list("ABCDEDCBA") + ["N"]
    assert [(e["target"], e["outcome"]) for e in events] == [("A", "reverted")]
    # independent expectation: the first hop of the shortest path A -> N, as the option letter of the
    # choices at A (urbanarena-graph-v1 offers the out-edges sorted by azimuth: 0 = N, 90 = B)
    first = nx.shortest_path(city.graph, "A", "N", weight="length_m")[1]
    azimuths = sorted((d["azimuth_deg"], v) for _, v, d in city.graph.out_edges("A", data=True))
    option = "ABCDEFGH"[[v for _, v in azimuths].index(first)]
    heading = int(city.graph.edges["A", first]["azimuth_deg"])
    hint = agent.texts[4]
    assert agent.decided_at[4] == "A"
    assert hint.splitlines() == [
        "[Backtracking] You walked back to this place (P0) because your last 3 choices had low confidence "
        "(mean 0.70, below 0.75). Last time here you went 90 deg (confidence 1.00).",
        f"[Hint] From here, the shortest way to the destination starts with option {option} (heading {heading} deg).",
    ]
    assert agent.texts[:4] == ["", "", "", ""]  # no text before the revert
    # B1 gives the same note without the (privileged) hint
    res, agent, _ = run(city, task, script, "B1")
    assert agent.texts[4].splitlines() == hint.splitlines()[:1]
    assert [parse_strategies(b)[0].privileged for b in ("B1", "B2", "B3")] == [False, True, True]
