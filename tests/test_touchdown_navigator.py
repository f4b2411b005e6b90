"""Touchdown action protocol (``touchdown-v1`` / ``urbanarena-graph-v1`` turn style).

Hand-worked transitions on a tiny cross-shaped graph, and a check against a
literal transcription of the reference navigator's rules (lil-lab/touchdown
``base_navigator.py``) on the real graph, built from the raw links file
independently of the importer.
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest

from urbanarena.env import STOP, GraphNavEnv, make_motion
from urbanarena.env.motion.base import NavState
from urbanarena.env.motion.turn_hop import FORWARD, LEFT, RIGHT, TouchdownHop
from urbanarena.world.importers.touchdown import import_city

D = 0.00009  # ~10 m of latitude
DLON = 0.000118  # ~10 m of longitude at 40 N

# A cross: centre C, arms N1-N2, E1-E2, S1-S2, W1-W2; the arm ends (N2, E2, S2,
# W2) have one link each (dead ends). C's links are listed E, N, S, W so that a
# tie between 88 (E) and 2 (N) goes to 88 (file order).
CROSS_NODES = {
    "C": (40.0, -74.0), "N1": (40.0 + D, -74.0), "N2": (40.0 + 2 * D, -74.0),
    "E1": (40.0, -74.0 + DLON), "E2": (40.0, -74.0 + 2 * DLON),
    "S1": (40.0 - D, -74.0), "S2": (40.0 - 2 * D, -74.0),
    "W1": (40.0, -74.0 - DLON), "W2": (40.0, -74.0 - 2 * DLON),
}
CROSS_LINKS = [
    ("C", 88, "E1"), ("C", 2, "N1"), ("C", 181, "S1"), ("C", 275, "W1"),
    ("N1", 182, "C"), ("N1", 355, "N2"), ("N2", 175, "N1"),
    ("E1", 268, "C"), ("E1", 90, "E2"), ("E2", 270, "E1"),
    ("S1", 1, "C"), ("S1", 180, "S2"), ("S2", 0, "S1"),
    ("W1", 95, "C"), ("W1", 270, "W2"), ("W2", 90, "W1"),
]


def cross_city(tmp_path: Path, links=CROSS_LINKS):
    d = tmp_path / "cross"
    d.mkdir(parents=True, exist_ok=True)
    (d / "nodes.txt").write_text("".join(f"{n},0,{lat},{lon}\n" for n, (lat, lon) in CROSS_NODES.items()))
    (d / "links.txt").write_text("".join(f"{a},{h},{b}\n" for a, h, b in links))
    return import_city(d)


@pytest.fixture
def cross(tmp_path):
    return cross_city(tmp_path)


def S(node, h):
    return NavState(node, float(h))


def test_protocol_ids_and_choices(cross):
    faithful = make_motion("touchdown-v1", cross, "turn")
    ours = make_motion("urbanarena-graph-v1", cross, "turn")
    assert isinstance(faithful, TouchdownHop) and faithful.protocol_id == "touchdown-v1"
    assert isinstance(ours, TouchdownHop) and ours.protocol_id == "urbanarena-graph-v1"
    assert [c.label for c in faithful.choices(S("C", 2))] == ["FORWARD", "LEFT", "RIGHT"]
    assert (FORWARD, LEFT, RIGHT) == (0, 1, 2)


def test_forward_moves_and_picks_nearest_heading_at_next_node(cross):
    hop = TouchdownHop(cross)
    # at N1 the link headings are 182 and 355: circular distance to 2 is 180 and 7
    assert hop.transition(S("C", 2), FORWARD) == S("N1", 355)
    # back: at C the headings 88, 2, 181, 275 are 94, 180, 1, 93 from 182
    assert hop.transition(S("N1", 182), FORWARD) == S("C", 181)
    # at S1 the headings 1 and 180 are 180 and 1 from 181
    assert hop.transition(S("C", 181), FORWARD) == S("S1", 180)


def test_left_right_pick_nearest_other_heading_counter_clockwise_or_clockwise(cross):
    hop = TouchdownHop(cross)
    # from 2: counter-clockwise distances 88->274, 181->181, 275->87; clockwise 86, 179, 273
    assert hop.transition(S("C", 2), LEFT) == S("C", 275)
    assert hop.transition(S("C", 2), RIGHT) == S("C", 88)
    # from 88: ccw 2->86, 181->267, 275->173; cw 181->93, 275->187, 2->274
    assert hop.transition(S("C", 88), LEFT) == S("C", 2)
    assert hop.transition(S("C", 88), RIGHT) == S("C", 181)
    # at N1 (two links) both turns go to the other heading
    assert hop.transition(S("N1", 355), LEFT) == S("N1", 182)
    assert hop.transition(S("N1", 355), RIGHT) == S("N1", 182)
    # four LEFTs come back round
    st = S("C", 2)
    seen = []
    for _ in range(4):
        st = hop.transition(st, LEFT)
        seen.append(st.heading_deg)
    assert seen == [275.0, 181.0, 88.0, 2.0]


def test_start_heading_that_is_not_a_link_heading(cross, tmp_path):
    hop = TouchdownHop(cross)
    st = hop.start_state("C", 45.9)  # int() truncation, as map2seq's int(start_heading)
    assert st == S("C", 45)
    # FORWARD: 45 is no link heading -> stay put, snap to the nearest heading;
    # 88 and 2 are both 43 away: the first in links-file order (88) wins
    assert hop.transition(st, FORWARD) == S("C", 88)
    # LEFT: ccw 45->2 is 43; RIGHT: cw 45->88 is 43
    assert hop.transition(st, LEFT) == S("C", 2)
    assert hop.transition(st, RIGHT) == S("C", 88)
    # same graph with C's links listed N before E: the tie now goes to 2
    reordered = [CROSS_LINKS[1], CROSS_LINKS[0]] + CROSS_LINKS[2:]
    hop2 = TouchdownHop(cross_city(tmp_path / "re", reordered))
    assert hop2.transition(S("C", 45), FORWARD) == S("C", 2)
    assert hop.start_state("C", 360.0) == S("C", 0) and hop.start_state("C", -90.0) == S("C", 270)


def test_dead_ends_refused_under_touchdown_v1_entered_under_graph_v1(cross):
    faithful = TouchdownHop(cross, enter_dead_ends=False)
    ours = TouchdownHop(cross, enter_dead_ends=True)
    # N2 has a single link: touchdown-v1 refuses to enter it, state unchanged
    assert faithful.transition(S("N1", 355), FORWARD) == S("N1", 355)
    # urbanarena-graph-v1 enters it, facing its only link (back to N1)
    assert ours.transition(S("N1", 355), FORWARD) == S("N2", 175)
    # an agent starting at a dead end facing its link can leave (N1 has 2 links)
    assert faithful.transition(S("N2", 175), FORWARD) == S("N1", 182)
    # ... but facing anything else it is stuck: every action recomputes a state
    # at N2 itself, which has < 2 neighbours, so the reference refuses it
    for a in (FORWARD, LEFT, RIGHT):
        assert faithful.transition(S("N2", 10), a) == S("N2", 10)
    assert ours.transition(S("N2", 10), FORWARD) == S("N2", 175)
    assert ours.transition(S("N2", 10), LEFT) == S("N2", 175)
    # with a single heading there is no other heading to turn to
    assert ours.transition(S("N2", 175), LEFT) == S("N2", 175)


def test_takeable_edges_and_reachable_states(cross):
    faithful = TouchdownHop(cross, enter_dead_ends=False)
    ours = TouchdownHop(cross, enter_dead_ends=True)
    all_edges = set(cross.graph.edges)
    assert len(all_edges) == 16
    into_dead_ends = {("N1", "N2"), ("E1", "E2"), ("S1", "S2"), ("W1", "W2")}
    assert faithful.takeable_edges() == all_edges - into_dead_ends
    assert ours.takeable_edges() == all_edges
    # from a stuck start nothing is reachable or takeable under touchdown-v1
    assert faithful.reachable_states([S("N2", 10)]) == {S("N2", 10)}
    assert faithful.takeable_edges(seeds=[S("N2", 10)]) == set()
    # from the centre every link heading of every non-dead-end node is reachable
    states = faithful.reachable_states([S("C", 2)])
    assert {s.node for s in states} == {"C", "N1", "E1", "S1", "W1"}
    assert ours.takeable_edges(seeds=[S("C", 2)]) == all_edges
    # can_enter agrees with the takeable edges
    for hop in (faithful, ours):
        targets = {v for _, v in hop.takeable_edges()}
        assert {n for n in cross.graph if hop.can_enter(n)} == targets
    assert not faithful.can_enter("N2") and ours.can_enter("N2")


def test_env_steps_through_the_protocol(cross):
    env = GraphNavEnv(cross, make_motion("touchdown-v1", cross, "turn"))
    obs, info = env.reset(options={"start_node": "C", "start_heading_deg": 2, "goal_nodes": ["N1"]})
    assert [c["label"] for c in obs["choices"]] == ["FORWARD", "LEFT", "RIGHT"]
    assert all(c["heading_deg"] is None for c in obs["choices"])
    obs, *_ = env.step(0)
    assert (obs["node"], obs["heading_deg"]) == ("N1", 355.0)
    obs, *_ = env.step(0)  # refused: N2 is a dead end
    assert (obs["node"], obs["heading_deg"]) == ("N1", 355.0)
    obs, *_ = env.step(1)
    assert obs["heading_deg"] == 182.0
    obs, _, term, _, info = env.step(STOP)
    assert term and info["stop_reason"] == "stop"
    assert env.path == ["C", "N1", "N1", "N1"] and env.actions == [0, 0, 1, -1]
    assert env.protocol_id == "touchdown-v1"


# --------------------------------------------------------------------------- real graph


class ReferenceNavigator:
    """A literal transcription of the rules of Touchdown's ``BaseNavigator``:
    ``neighbors`` is a dict {int heading: end panoid} filled in links-file
    order; ``step`` computes the next state and refuses it when the next node
    has fewer than two neighbours (``refuse=False`` drops that check)."""

    def __init__(self, links_gz: Path, refuse: bool = True):
        self.neighbors: dict[str, dict[int, str]] = {}
        with gzip.open(links_gz, "rt") as f:
            for line in f:
                a, h, b = line.strip().split(",")
                self.neighbors.setdefault(a, {})[int(h)] = b
                self.neighbors.setdefault(b, {})
        self.refuse = refuse

    def nearest(self, cur: int, node: str, go: str) -> int:
        best, best_h = float("inf"), None
        for h in self.neighbors[node].keys():
            if h == cur and go != "forward":
                continue
            if go == "forward":
                d = 180 - abs(abs(h - cur) - 180)
            elif go == "left":
                d = (cur - h) % 360
            else:
                d = (h - cur) % 360
            if d < best:
                best, best_h = d, h
        return cur if best_h is None else best_h

    def step(self, state: tuple[str, int], go: str) -> tuple[str, int]:
        node, cur = state
        nxt = self.neighbors[node].get(cur, node) if go == "forward" else node
        new = (nxt, self.nearest(cur, nxt, go))
        if self.refuse and len(self.neighbors[nxt]) < 2:
            return state
        return new


@pytest.mark.shared
@pytest.mark.parametrize("dead_ends", [False, True], ids=["touchdown-v1", "urbanarena-graph-v1"])
def test_matches_reference_rules_on_real_graph(touchdown_city, shared_dir, dead_ends):
    ref = ReferenceNavigator(shared_dir / "data" / "touchdown" / "links.txt.gz", refuse=not dead_ends)
    hop = TouchdownHop(touchdown_city, enter_dead_ends=dead_ends)
    rng = random.Random(7)
    nodes = sorted(ref.neighbors)
    names = {FORWARD: "forward", LEFT: "left", RIGHT: "right"}
    checked = 0
    # single transitions from random states (link headings and arbitrary ones)
    for _ in range(20000):
        n = rng.choice(nodes)
        h = rng.choice(list(ref.neighbors[n])) if rng.random() < 0.7 else rng.randrange(360)
        a = rng.choice((FORWARD, LEFT, RIGHT))
        got = hop.transition(NavState(n, float(h)), a)
        assert (got.node, int(got.heading_deg)) == ref.step((n, h), names[a]), (n, h, a)
        checked += 1
    # random walks of 60 actions
    for _ in range(300):
        n = rng.choice(nodes)
        st = NavState(n, float(rng.randrange(360)))
        rs = (st.node, int(st.heading_deg))
        for _ in range(60):
            a = rng.choice((FORWARD, FORWARD, LEFT, RIGHT))
            st = hop.transition(st, a)
            rs = ref.step(rs, names[a])
            assert (st.node, int(st.heading_deg)) == rs
            checked += 1
    assert checked == 20000 + 300 * 60
