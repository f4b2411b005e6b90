"""CitySeeker-style need tasks on the hand-written fixture ``tests/data/osm_needs_fixture.osm``.

The fixture is a T of two streets with pose nodes every 10 m (its header lists the layout and the
hand-worked cases): ``M<x>`` = (x, 0) on Mainstreet, ``N<y>`` = (100, y) on Northstreet. Being a
tree, the graph distance between two nodes is the walk along the streets, computed here by hand
(:func:`walk_m`), independently of the generator's Dijkstra.
"""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from generate_util import DATA, fixture_city, node_at, to_fix
from urbanarena.cli.main import app
from urbanarena.cli.tasks_cmd import GraphOracleVerifier, tasks_app
from urbanarena.agents.oracle import OracleAgent
from urbanarena.runner.episode import EpisodeRunner
from urbanarena.tasks.generators.cityseeker_needs import (
    ALL_CATEGORIES,
    DIFFICULTY_STEPS,
    VERIFY_PROTOCOLS,
    generate_needs_suite,
    load_needs,
    need_route,
    satisfying_places,
)
from urbanarena.tasks.schema import load_task_file
from urbanarena.world.city_io import save_city

FIXTURE = str(DATA / "osm_needs_fixture.osm")


@pytest.fixture(scope="module")
def city():
    return fixture_city(FIXTURE)


@pytest.fixture(scope="module")
def needs():
    return {n.id: n for n in load_needs().needs}


def pos(city, node):
    """The node's fixture position rounded to the 10 m grid, as (x, y)."""
    x, y = to_fix(city, *city.xy(node))
    return (round(x / 10) * 10, round(y / 10) * 10)


def walk_m(a, b):
    """Walking distance on the T (hand rule): along Mainstreet, along Northstreet, or via (100, 0)."""
    (x1, y1), (x2, y2) = a, b
    if y1 == 0 and y2 == 0:
        return abs(x1 - x2)
    if x1 == 100 and x2 == 100:
        return abs(y1 - y2)
    if y1 == 0:
        return abs(x1 - 100) + y2
    return y1 + abs(x2 - 100)


#: hand-listed goal nodes of needs of the built-in mapping (fixture header)
GOALS = {
    "cafe": {(30, 0), (100, 60)},
    "thirsty": {(30, 0), (100, 60), (150, 0)},
    "accessible_cafe": {(30, 0)},
    "mcdonalds": {(60, 0)},
    "restroom": {(100, 30), (60, 0)},
    "cash": {(190, 0)},
    "bank": {(190, 0)},
    "hungry": {(60, 0), (140, 0)},
    "italian": {(140, 0)},
    "vegetarian": {(140, 0)},
    "outdoor_seating": {(30, 0)},
    "burger": {(60, 0)},
    "bus": {(0, 0)},
    "metro": {(100, 100)},
    "restaurant": {(140, 0)},
    "currency_exchange": {(190, 0)},
    "accessible_money": {(190, 0)},  # City Bank has wheelchair=yes
}  # every other need of the built-in mapping: no place in the fixture


def test_satisfying_places_hand_listed(city, needs):
    assert set(GOALS) <= set(needs)
    for need_id, need in needs.items():
        places, missing = satisfying_places(city, need)
        assert {pos(city, p.node) for p in places} == GOALS.get(need_id, set()), need_id
        assert missing == 0


def test_unnamed_toilets_are_not_a_place_and_tags_split_at_semicolons(city, needs):
    # the restroom need matches amenity=toilets, but the unnamed toilets at (170, 6) are no POI
    places, _ = satisfying_places(city, needs["restroom"])
    assert sorted(p.name or p.kind for p in places) == ["McDonald's", "Public WC"]
    # cuisine="pizza;italian" satisfies the italian need through its second value
    (p,) = satisfying_places(city, needs["italian"])[0]
    assert p.name == "Trattoria Due"


@pytest.mark.parametrize("need_id,start,goal,metres,steps,usable", [
    ("cafe", (200, 0), (100, 60), 160, 16, True),
    ("accessible_cafe", (200, 0), (30, 0), 170, 17, True),  # the nearer cafe at N60 has wheelchair=no
    ("thirsty", (200, 0), (150, 0), 50, 5, True),
    ("thirsty", (100, 0), (150, 0), 50, 5, True),  # N60 is 60 m: gap 10 m >= 5 m
    ("thirsty", (90, 0), None, 60, 6, False),  # M30 and M150 both 60 m: ambiguous
    ("thirsty", (100, 100), (100, 60), 40, 4, False),  # too close
    ("restroom", (200, 0), (100, 30), 130, 13, True),
    ("restroom", (0, 0), (60, 0), 60, 6, True),
    ("hungry", (100, 90), None, 130, 13, False),  # M60 and M140 tie from the whole of Northstreet
    ("cash", (0, 0), (190, 0), 190, 19, True),
    ("cafe", (30, 0), (30, 0), 0, 0, False),  # start is a goal node
])
def test_nearest_goal_hand_worked(city, needs, need_id, start, goal, metres, steps, usable):
    r = need_route(city, needs[need_id], node_at(city, *start))
    if goal is not None:
        assert pos(city, r.goal) == goal
    assert r.distance_m == pytest.approx(metres, abs=0.05)
    assert r.steps == steps and r.usable is usable
    assert len(r.route) == steps + 1 and r.route[0] == node_at(city, *start)


@pytest.fixture(scope="module")
def suite(city):
    return generate_needs_suite(city, per_category=3, seed=0, verify=GraphOracleVerifier(city),
                                verify_protocols=VERIFY_PROTOCOLS)


def test_suite_tasks_match_hand_rules(city, needs, suite):
    tasks = suite.task_file.tasks
    assert suite.name == "osm_needs_fixture-needs7-v1"
    assert [t.category for t in tasks] == [c for c in ALL_CATEGORIES for _ in range(3)]
    for t in tasks:
        assert t.family == "cityseeker" and t.success_radius_m == 50.0 and not t.privileged
        assert t.start.heading_deg == pytest.approx(city.node(t.start.node)["heading_deg"] % 360, abs=1e-6)
        at = pos(city, t.start.node)
        total = 0
        for j, (nid, goal) in enumerate(zip(t.extra["needs"], t.goals)):
            cand = GOALS[nid]
            assert {pos(city, n) for n in goal.category_nodes} == cand  # TC-C: every satisfying node
            d = sorted((walk_m(at, c), c) for c in cand)
            assert pos(city, goal.node) == d[0][1] and at not in cand
            assert len(d) == 1 or d[1][0] - d[0][0] >= 5  # unique nearest
            assert goal.label == needs[nid].label
            hops = round(d[0][0] / 10)
            assert t.extra["stage_steps"][j] == hops and hops >= 2
            if t.reference_stages:
                stage = t.reference_stages[j]
                assert pos(city, stage[0]) == at and stage[-1] == goal.node and len(stage) == hops + 1
            total += hops
            at = d[0][1]
        if len(t.goals) == 2:
            assert t.start.node not in t.goals[1].category_nodes
            assert t.goals[0].node not in t.goals[1].category_nodes
        assert 5 <= total <= 24 and t.extra["route_steps"] == total
        lo, hi = DIFFICULTY_STEPS[t.difficulty]
        assert lo <= total <= hi
        assert len(t.reference_path) == total + 1 and t.reference_path[-1] == t.goals[-1].node
        if len(t.goals) == 1:
            assert t.instruction in needs[t.extra["needs"][0]].instructions
        else:
            e1, e2 = (needs[n].errands for n in t.extra["needs"])
            assert any(tpl.format(first=a, second=b) == t.instruction
                       for tpl in load_needs().two_stop_templates for a in e1 for b in e2)


def test_report_states_shortfalls_and_unavailable_needs(suite):
    rep = suite.report
    assert rep["default_protocol"] == "cityseeker-v1" and rep["protocols"] == list(VERIFY_PROTOCOLS)
    cats = rep["categories"]
    # McDonald's (M60) is at most 14 steps from any node, so brand_specific has no hard task
    assert cats["brand_specific"]["candidates"]["hard"] == 0
    assert cats["brand_specific"]["shortfall"]["hard"]["missing"] == 1
    assert cats["brand_specific"]["produced"] == 3
    assert "no POI or street object" in cats["brand_specific"]["needs"]["starbucks"]["unavailable"]
    assert cats["transport_hub"]["needs"]["train"]["unavailable"]
    # hungry: places exist, every Northstreet start is a tie
    rej = cats["implicit_need"]["needs"]["hungry"]["rejected"]
    assert rej["nearest goal ambiguous (second within 5 m)"] >= 10


def test_every_task_solved_by_the_oracle_through_the_runner(city, suite):
    runner = EpisodeRunner(city, OracleAgent, "oracle")
    for t in suite.task_file.tasks:
        assert [v["solved"] for v in t.extra["oracle"]] == [True, True]
        for pid in VERIFY_PROTOCOLS:
            r = runner.run(t, 0, pid, 35)
            m = r["metrics"]
            assert r["stop_reason"] == "stop" and m["tc_exact"] == 1.0 and m["tc_category"] == 1.0, (t.task_id, pid)
            if pid == "urbanarena-graph-v1":  # walks the reference (both stages of two-stop tasks)
                assert m["spl"] == pytest.approx(1.0) and m["ndtw"] == pytest.approx(1.0)
                assert r["trajectory"] == t.reference_path


def test_two_stop_scored_per_stage(city, suite):
    """Under urbanarena-graph-v1 a walk straight to the stage-2 goal fails; under cityseeker-v1 it succeeds."""
    from urbanarena.tasks.families.base import Trajectory
    from urbanarena.tasks.families.cityseeker import CitySeekerFamily

    fam = CitySeekerFamily()
    two = [t for t in suite.task_file.tasks if t.category == "two_stop"]
    checked = 0
    for t in two:
        direct = city.shortest_path(t.start.node, t.goals[1].node)
        if t.goals[0].node in direct:
            continue
        traj = Trajectory(path=direct, actions=[0] * (len(direct) - 1) + [-1])
        assert fam.score(t, city, "urbanarena-graph-v1", traj)["tc_exact"] == 0.0
        assert fam.score(t, city, "cityseeker-v1", traj)["tc_exact"] == 1.0
        checked += 1
    assert checked >= 1


def test_deterministic_for_a_seed(city):
    a = generate_needs_suite(city, per_category=2, seed=5).task_file.model_dump_json()
    b = generate_needs_suite(city, per_category=2, seed=5).task_file.model_dump_json()
    c = generate_needs_suite(city, per_category=2, seed=6).task_file.model_dump_json()
    assert a == b and a != c


def test_category_without_places_is_reported_not_generated(city, tmp_path):
    m = {"format": "urbanarena-needs", "version": 1, "needs": [
        {"id": "cafe", "category": "basic_poi", "label": "cafe", "instructions": ["Coffee?"],
         "match": [{"tags": {"amenity": "cafe"}}]},
        {"id": "train", "category": "transport_hub", "label": "train", "instructions": ["Train!"],
         "match": [{"tags": {"railway": "station"}}]},
        # every named place: each node is within 4 steps of one, so no start is far enough
        {"id": "anything", "category": "latent_poi", "label": "anything", "instructions": ["Anything."],
         "match": [{"tags": {"name": "*"}}]},
    ]}
    p = tmp_path / "m.json"
    p.write_text(json.dumps(m))
    res = generate_needs_suite(city, per_category=2, seed=0, mapping=p)
    cats = res.report["categories"]
    assert cats["basic_poi"]["produced"] == 2
    assert cats["transport_hub"]["produced"] == 0
    assert "no POI or street object in this area satisfies any of its needs (train)" in cats["transport_hub"]["unavailable"]
    assert cats["latent_poi"]["produced"] == 0 and "no start node" in cats["latent_poi"]["unavailable"]
    assert cats["brand_specific"]["unavailable"] == "the mapping has no need of this category"
    assert "fewer than two needs with errands" in cats["two_stop"]["unavailable"]
    assert {t.category for t in res.task_file.tasks} == {"basic_poi"}
    # by hand: the farthest node from either cafe (M30, N60) within 5+ steps
    for t in res.task_file.tasks:
        assert math.isclose(min(walk_m(pos(city, t.start.node), g) for g in [(30, 0), (100, 60)]),
                            t.extra["route_steps"] * 10)


# --------------------------------------------------------------------------- CLI
@pytest.fixture(scope="module")
def city_dir(city, tmp_path_factory):
    d = tmp_path_factory.mktemp("needcity") / "fixture"
    save_city(city, d)
    return d


def test_cli_generate_then_run_oracle(city_dir, tmp_path):
    out = tmp_path / "needs.json"
    args = ["generate", "--city", str(city_dir), "--suite", "cityseeker", "--per-category", "2", "--seed", "3",
            "--out", str(out)]
    r = CliRunner().invoke(tasks_app, args)
    assert r.exit_code == 0, r.output
    assert "suite osm_needs_fixture-needs7-v1, 16 tasks" in r.output and "default protocol cityseeker-v1" in r.output
    first = out.read_bytes()
    assert CliRunner().invoke(tasks_app, args).exit_code == 0 and out.read_bytes() == first
    rep = json.loads((tmp_path / "needs.report.json").read_text())
    assert rep["verified"] and sum(c["produced"] for c in rep["categories"].values()) == 16
    tf = load_task_file(out)
    assert len(tf.tasks) == 16
    runner = CliRunner()
    for proto in (None, "urbanarena-graph-v1"):
        run_dir = tmp_path / f"run-{proto}"
        cmd = ["run", "--city", str(city_dir), "--tasks", str(out), "--agent", "oracle", "--out", str(run_dir)]
        if proto:
            cmd += ["--protocol", proto]
        res = runner.invoke(app, cmd)
        assert res.exit_code == 0, res.output
        s = json.loads(runner.invoke(app, ["summary", str(run_dir), "--json"]).output)
        assert s["protocol"] == (proto or "cityseeker-v1")
        assert s["episodes"] == 16 and s["metrics"]["tc_exact"] == pytest.approx(100.0)


@pytest.mark.parametrize("args,msg", [
    (["--per-category", "0"], "at least 1"),
    (["--families", "vln"], "--suite arena and urbanground only"),
    (["--mapping", "no-such-mapping.json"], "no-such-mapping.json"),
])
def test_cli_bad_input_exit_2(city_dir, tmp_path, args, msg):
    out = tmp_path / "x.json"
    r = CliRunner().invoke(tasks_app, ["generate", "--city", str(city_dir), "--suite", "cityseeker",
                                       "--out", str(out), *args])
    assert r.exit_code == 2 and "error:" in r.output and msg in r.output and not out.exists()


def test_batched_search_gives_the_same_suite(city, monkeypatch):
    """The generator searches from goal nodes in batches; one goal per batch must change nothing."""
    from urbanarena.tasks.generators import cityseeker_needs as cn

    whole = generate_needs_suite(city, per_category=3, seed=2).task_file.model_dump_json()
    monkeypatch.setattr(cn._Graph, "BATCH_ENTRIES", 1)
    assert generate_needs_suite(city, per_category=3, seed=2).task_file.model_dump_json() == whole


def test_city_without_annotations_is_refused():
    from conftest import make_city
    from urbanarena.errors import UrbanArenaError

    toy = make_city({"a": (60.0, 24.0), "b": (60.0001, 24.0)}, [("a", "b", 0.0, 11.1), ("b", "a", 180.0, 11.1)])
    with pytest.raises(UrbanArenaError, match="no POI annotations"):
        generate_needs_suite(toy, per_category=1)


def test_category_split_rotates_the_remainder():
    """Issue 25 item 11: generator version 2 stratifies small suites over the three bands."""
    from urbanarena.tasks.generators.needs_rules import category_split

    assert [category_split(1, k) for k in range(3)] == [{"easy": 1, "medium": 0, "hard": 0},
                                                        {"easy": 0, "medium": 1, "hard": 0},
                                                        {"easy": 0, "medium": 0, "hard": 1}]
    assert category_split(2, 1) == {"easy": 0, "medium": 1, "hard": 1}
    assert category_split(5, 2) == {"easy": 2, "medium": 1, "hard": 2}
    assert category_split(6, 4) == {"easy": 2, "medium": 2, "hard": 2}
    total = {d: sum(category_split(1, k)[d] for k in range(len(ALL_CATEGORIES))) for d in ("easy", "medium", "hard")}
    assert total == {"easy": 3, "medium": 3, "hard": 2}


def test_small_suites_have_a_hard_tier_and_print_coverage(city_dir, tmp_path):
    out = tmp_path / "needs.json"
    r = CliRunner().invoke(tasks_app, ["generate", "--city", str(city_dir), "--suite", "cityseeker", "--per-category",
                                       "1", "--seed", "0", "--out", str(out)])
    assert r.exit_code == 0, r.output
    tasks = load_task_file(out).tasks
    assert any(t.difficulty == "hard" for t in tasks)
    rep = json.loads((tmp_path / "needs.report.json").read_text())
    # where a category's band had candidates, it got its rotated band
    for k, (cat, cr) in enumerate(rep["categories"].items()):
        band = ("easy", "medium", "hard")[ALL_CATEGORIES.index(cat) % 3]
        if not cr.get("unavailable") and cr["candidates"][band]:
            assert cr["by_difficulty"][band] == 1, cat
    # the needs of the fixture mapping without a place here (hand-checked: no Starbucks, 7-Eleven or train station)
    cov = rep["coverage"]
    assert {"starbucks", "seven_eleven", "train"} <= set(cov["without_places"])
    assert len(cov["with_places"]) + len(cov["without_places"]) == cov["needs"]
    line = next(x for x in r.output.splitlines() if x.startswith("difficulty:"))
    assert "starbucks" in line and f"{len(cov['with_places'])} of {cov['needs']}" in line
    hard = sum(1 for t in tasks if t.difficulty == "hard")
    assert f"hard {hard}" in line
