"""The CitySeeker-style need suite on the Helsinki default core (pinned OSM extract; skipped when unavailable).

Goals are re-derived with networkx Dijkstra (independently of the generator's scipy search); every
task is run by the graph oracle through the runner under both protocols; random and forward are
scored with cluster-bootstrap CIs (the numbers are printed with ``-s``).
"""

from __future__ import annotations

import networkx as nx
import pytest

from generate_util import helsinki_area, helsinki_pbf_path
from urbanarena.agents.baselines import ForwardAgent, RandomAgent
from urbanarena.agents.oracle import OracleAgent
from urbanarena.cli.tasks_cmd import GraphOracleVerifier
from urbanarena.runner.episode import EpisodeRunner
from urbanarena.tasks.generators.cityseeker_needs import (
    ALL_CATEGORIES,
    AMBIGUITY_GAP_M,
    DIFFICULTY_STEPS,
    VERIFY_PROTOCOLS,
    generate_needs_suite,
    load_needs,
)
from urbanarena.tasks.metrics import METRIC_KEYS
from urbanarena.tasks.metrics.aggregate import summarize

PER_CATEGORY = 3


@pytest.fixture(scope="module")
def core(request, tmp_path_factory):
    return helsinki_area(str(helsinki_pbf_path(request, tmp_path_factory)), "test")


@pytest.fixture(scope="module")
def suite(core):
    return generate_needs_suite(core, per_category=PER_CATEGORY, seed=0, verify=GraphOracleVerifier(core),
                                verify_protocols=VERIFY_PROTOCOLS)


def test_every_category_covered(suite):
    rep = suite.report
    assert suite.name == "helsinki-core-needs7-v1"  # named after the city (the core)
    for cat in ALL_CATEGORIES:
        c = rep["categories"][cat]
        assert c["unavailable"] is None and c["produced"] == PER_CATEGORY, (cat, c)
        assert c["verification_failures"] == {}
    tasks = suite.task_file.tasks
    assert len(tasks) == PER_CATEGORY * len(ALL_CATEGORIES) and len({t.task_id for t in tasks}) == len(tasks)
    assert {t.difficulty for t in tasks} == {"easy", "medium", "hard"}
    # a need with no place is reported as such, and only then
    for cat, c in rep["categories"].items():
        if cat == "two_stop":
            continue
        for nid, n in c["needs"].items():
            assert (n["places"] == 0) == (n["unavailable"] is not None and "no POI" in n["unavailable"]), nid


def test_goals_rederived_with_networkx(core, suite):
    g = core.graph
    ann = core.annotations
    place_nodes = {p.node_id for p in list(ann.pois) + list(ann.standalone_pois)} | {o.node_id for o in ann.objects}
    for t in suite.task_file.tasks:
        at = t.start.node
        total = 0
        for j, goal in enumerate(t.goals):
            cats = set(goal.category_nodes)
            assert goal.node in cats and cats <= place_nodes and at not in cats
            dist, paths = nx.single_source_dijkstra(g, at, weight="length_m")
            ranked = sorted((dist[n], n) for n in cats if n in dist)
            assert ranked[0][1] == goal.node, t.task_id
            assert len(ranked) == 1 or ranked[1][0] - ranked[0][0] >= AMBIGUITY_GAP_M
            hops = len(paths[goal.node]) - 1
            assert hops == t.extra["stage_steps"][j]
            if t.reference_stages:
                assert core.path_length_m(t.reference_stages[j]) == pytest.approx(ranked[0][0], rel=1e-9)
            total += hops
            at = goal.node
        lo, hi = DIFFICULTY_STEPS[t.difficulty]
        assert 5 <= total <= 24 and lo <= total <= hi
        assert core.path_length_m(t.reference_path) == pytest.approx(t.extra["route_length_m"], abs=1e-3)
        needs = {n.id: n for n in load_needs().needs}
        assert [needs[n].label for n in t.extra["needs"]] == [gl.label for gl in t.goals]


def test_oracle_solves_every_task_under_both_protocols(core, suite):
    runner = EpisodeRunner(core, OracleAgent, "oracle")
    for pid in VERIFY_PROTOCOLS:
        rows = [runner.run(t, 0, pid, 35) for t in suite.task_file.tasks]
        assert all(r["stop_reason"] == "stop" for r in rows)
        assert [r["metrics"]["tc_exact"] for r in rows] == [1.0] * len(rows), pid
        if pid == "urbanarena-graph-v1":
            assert all(r["metrics"]["spl"] == pytest.approx(1.0) for r in rows)


def _rows(core, tasks, factory, name, seeds):
    runner = EpisodeRunner(core, factory, name)
    out = []
    for t in tasks:
        for s in seeds:
            r = runner.run(t, s, "cityseeker-v1", 35)
            out.append({**r["metrics"], "task_id": t.task_id, "seed": s, "category": t.category,
                        "difficulty": t.difficulty, "trajectory": r["trajectory"]})
    return out


def test_random_and_forward_scored_with_cis(core, suite):
    tasks = suite.task_file.tasks
    rates = [k for k in METRIC_KEYS if k.startswith("tc_") and k != "tc"] + ["spl", "ndtw", "sdtw"]
    rnd = _rows(core, tasks, RandomAgent, "random", range(5))
    fwd = _rows(core, tasks, ForwardAgent, "forward", range(2))
    # forward never uses its seed: both seeds walk the same trajectories
    assert [r["trajectory"] for r in fwd if r["seed"] == 0] == [r["trajectory"] for r in fwd if r["seed"] == 1]
    for name, rows in (("random", rnd), ("forward", fwd)):
        s = summarize(rows, ["tc_exact", "tc_proximity_50m", "tc_category", "spl", "goal_dist_m", "avg_steps"],
                      rates, n_resamples=500)
        m, ci = s["metrics"], s["ci95"]
        print(f"\n{name}: " + ", ".join(f"{k} {m[k]:.2f} [{ci[k][0]:.2f}, {ci[k][1]:.2f}]" for k in m))
        for k in m:
            assert ci[k][0] <= m[k] + 1e-9 and m[k] <= ci[k][1] + 1e-9
        # a blind walk of 35 steps rarely ends on the goal node; never stopping, it uses every step
        assert m["tc_exact"] <= m["tc_category"] <= 50.0
        assert m["avg_steps"] == pytest.approx(35.0)
        assert m["goal_dist_m"] > 30.0


def test_cityseeker_v1_can_take_every_edge_of_the_osm_core(core):
    """Why both protocols reach every goal here: an OSM city's walkable headings are its out-edge
    azimuths, so CitySeeker's nearest-azimuth rule (no wrap) maps each heading to its own edge."""
    from urbanarena.env.motion.base import NavState
    from urbanarena.env.protocols import make_motion

    motion = make_motion("cityseeker-v1", core, "heading")
    untakeable = 0
    for n in core.graph.nodes:
        st = NavState(n, 0.0)
        reached = {motion.transition(st, i).node for i in range(len(motion.choices(st)))}
        untakeable += len(set(core.graph.successors(n)) - reached)
    assert untakeable == 0
