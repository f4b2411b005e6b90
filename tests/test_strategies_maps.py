"""C1 / C2 / R3 texts for a hand-made walk on a 3 x 3 grid city, run through the real env."""

from __future__ import annotations

import pytest

from runner_util import grid_city
from strategies_util import TextReader, line_city, task_for
from urbanarena.agents.strategies import StrategyAgent
from urbanarena.agents.strategies.base import side_of
from urbanarena.runner.episode import EpisodeRunner
from urbanarena.world.geo import geodesic_azimuth_deg

# the walk: r0c0 -> r0c1 (east) -> r1c1 (north) -> r0c1 (south) -> r0c2 (east), then STOP
WALK = ["r0c1", "r1c1", "r0c1", "r0c2"]


def walk(spec, script=WALK, city=None, start="r0c0", goal="r2c2"):
    city = city or grid_city(3)
    task = task_for(city, start, goal)
    made = []

    def factory():
        made.append(TextReader([(n, None) for n in script]))
        return StrategyAgent(made[-1], spec)

    res = EpisodeRunner(city, factory, "reader").run_once(task, 0, "urbanarena-graph-v1", 20)
    return city, res, made[0]


def test_c1_topology_text_of_a_hand_made_walk():
    _, res, agent = walk("C1")
    assert res["trajectory"] == ["r0c0"] + WALK
    assert agent.texts[0].splitlines() == [
        "[Cognitive map] Places visited in this round and the moves between them (P0 = start; you are at P0):",
        "- P0 (start; 1 visit; you are here)"]
    assert agent.texts[4].splitlines() == [
        "[Cognitive map] Places visited in this round and the moves between them (P0 = start; you are at P3):",
        "- P0 (start; 1 visit): to P1 heading 90 deg",
        "- P1 (2 visits): to P2 heading 0 deg; to P3 heading 90 deg",
        "- P2 (1 visit): to P1 heading 180 deg",
        "- P3 (1 visit; you are here)"]


def test_c2_relative_positions_of_a_hand_made_walk():
    city, _, agent = walk("C2")
    assert agent.texts[0].splitlines()[1] == "- none yet (you are at the first place of this round)"
    lines = agent.texts[4].splitlines()
    assert lines[0] == ("[Relative positions] Places visited in this round as seen from here (P3; "
                        "you are heading 90 deg):")
    # independent numbers: geodesic distance (pyproj) and geodesic azimuth from r0c2 to each place
    exp = []
    for label, node in (("P0 (start)", "r0c0"), ("P1", "r0c1"), ("P2", "r1c1")):
        d = city.distance_m("r0c2", node)
        az = geodesic_azimuth_deg(*city.latlon("r0c2"), *city.latlon(node)) % 360
        exp.append((label, d, az))
    assert [round(d) for _, d, _ in exp] == [62, 31, 45] and [round(a) for *_, a in exp] == [270, 270, 317]
    assert lines[1:] == [f"- {lab}: {d:.0f} m at {int(round(a)) % 360} deg ({side_of(a, 90.0)})" for lab, d, a in exp]
    assert [side_of(a, 90.0) for *_, a in exp] == ["behind", "behind", "left"]


def test_r3_injects_exactly_the_last_n_steps():
    _, _, agent = walk("R3")
    assert agent.texts[0] == ""  # no step yet
    assert agent.texts[1].splitlines() == [
        "[Recent steps] Your last 1 step in this round (oldest first):",
        "- step 1: at P0 went heading 90 deg to P1"]
    assert agent.texts[4].splitlines() == [
        "[Recent steps] Your last 3 steps in this round (oldest first):",
        "- step 2: at P1 went heading 0 deg to P2",
        "- step 3: at P2 went heading 180 deg to P1",
        "- step 4: at P1 went heading 90 deg to P3"]
    _, _, agent = walk("R3(n=2)")
    assert agent.texts[4].splitlines()[1:] == [
        "- step 3: at P2 went heading 180 deg to P1",
        "- step 4: at P1 went heading 90 deg to P3"]


def test_texts_compose_in_canonical_order_and_r3_marks_walking_back():
    _, _, agent = walk("R3,C1")
    c1, r3 = agent.texts[4].split("\n\n")
    assert c1.startswith("[Cognitive map]") and r3.startswith("[Recent steps]")
    # B2 walks back C <- F; R3 then shows the three moves back
    city = line_city()
    _, res, agent = walk("B2,R3", script=["D", "E", "F"], city=city, start="C", goal="A")
    assert res["trajectory"] == list("CDEFEDC")
    assert agent.texts[3].splitlines() == [
        "[Recent steps] Your last 3 steps in this round (oldest first):",
        "- step 4: at P3 went heading 270 deg to P2 (walking back)",
        "- step 5: at P2 went heading 270 deg to P1 (walking back)",
        "- step 6: at P1 went heading 270 deg to P0 (walking back)"]


@pytest.mark.parametrize("bearing,forward,side", [(90, 0, "right"), (270, 0, "left"), (180, 0, "behind"),
                                                  (44, 0, "ahead"), (316, 0, "ahead"), (10, 350, "ahead"),
                                                  (135, 0, "behind"), (225, 0, "behind"), (100, 190, "left")])
def test_side_of(bearing, forward, side):
    assert side_of(bearing, forward) == side
