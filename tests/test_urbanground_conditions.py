"""UrbanGround by condition (issue 25 item 10): ``tasks generate --suite urbanground --condition all`` writes
every base task once under each of the five conditions with distinct ids and the base id kept; ``summary``
resamples base tasks and its by-condition table shows 95 % CIs; generator version 2's multi-stop tours fit
the 100-step limit and its pedestrian tasks find crossing walkers on a city larger than the core."""

from __future__ import annotations

import itertools
import json
import math
import sys
from pathlib import Path

import pytest
from rich.console import Console
from shapely.geometry import LineString, Point

sys.path.insert(0, str(Path(__file__).parent))
from generate_util import fixture_city, helsinki_area, helsinki_pbf_path  # noqa: E402
from test_report_html import invoke  # noqa: E402
from urbanarena.tasks.families.urbanground import PAPER_CONDITIONS, latlon_to_xy  # noqa: E402
from urbanarena.tasks.generators import urbanground as ug  # noqa: E402
from urbanarena.tasks.generators.urbanground_conditions import expand_conditions  # noqa: E402
from urbanarena.tasks.schema import load_task_file  # noqa: E402
from urbanarena.world.city_io import save_city  # noqa: E402

FIVE = ("clear", "dusk", "night", "cloudy", "rain")
SUBS = ["l1_orientation", "l2_short_range"]


@pytest.fixture(scope="module")
def city():
    return fixture_city()


def test_all_conditions_give_five_copies_per_base_task(city, tmp_path):
    assert PAPER_CONDITIONS == FIVE
    base = ug.generate_urbanground_suite(city, per_family=1, seed=3, subfamilies=SUBS)
    every = ug.generate_urbanground_suite(city, per_family=1, seed=3, subfamilies=SUBS, condition="all")
    b = base.task_file.tasks
    tasks = every.task_file.tasks
    assert len(b) == 2 and len(tasks) == 10
    assert every.report["condition"] == "all" and every.report["conditions"] == list(FIVE)
    assert every.report["base_tasks"] == 2 and every.report["families"]["l2_short_range"]["produced"] == 1
    ids = [t.task_id for t in tasks]
    assert len(set(ids)) == 10
    # base task by base task, the five conditions in order, id <base>@<condition>
    want = [f"{t.task_id}@{c}" for t in b for c in FIVE]
    assert ids == want
    for i, t in enumerate(tasks):
        src = b[i // 5]
        assert t.extra["base_task_id"] == src.task_id
        assert t.extra["dynamics"] == {"condition": FIVE[i % 5]}
        d, s = t.model_dump(), src.model_dump()
        for x in (d, s):
            x.pop("task_id")
            x["extra"].pop("dynamics", None)
        d["extra"].pop("base_task_id")
        assert d == s  # nothing else differs from the base task
    f = tmp_path / "all.json"
    every.task_file.save(f)
    back = load_task_file(f)  # the ids pass the schema, no duplicates
    assert [t.task_id for t in back.tasks] == want


def test_expansion_keeps_the_other_dynamics_and_leaves_the_input_alone(city):
    t = ug.generate_urbanground_suite(city, per_family=1, seed=3, subfamilies=["l2_short_range"]).task_file.tasks[0]
    t.extra["dynamics"] = {"pedestrians": {"count": 2, "speed_mps": 1.2}, "condition": "fog"}
    before = t.model_dump()
    out = expand_conditions([t], ("night", "rain"))
    assert [o.extra["dynamics"] for o in out] == [{"pedestrians": {"count": 2, "speed_mps": 1.2}, "condition": c}
                                                  for c in ("night", "rain")]
    assert t.model_dump() == before
    with pytest.raises(ValueError):
        expand_conditions([t], ("night", "night"))


def _rows(values: dict[str, tuple[int, ...]]):
    """Stored-row stand-ins: one episode per (base task, condition), sr from ``values[base][condition index]``."""
    rows = []
    for base, srs in values.items():
        for c, sr in zip(FIVE, srs):
            rows.append({"task_id": f"{base}@{c}", "seed": 0, "category": "l2_short_range", "difficulty": None,
                         "stop_reason": "terminate", "metrics": json.dumps({"sr": float(sr)}),
                         "details": json.dumps({"level": "L2", "condition": c, "base_task_id": base})})
    return rows


def test_summary_resamples_base_tasks_and_groups_by_condition(tmp_path):
    from urbanarena.runner.summary import _summarize_continuous

    # A succeeds under clear, night, rain; B under dusk, night, cloudy: both base tasks have mean 3/5, so a
    # bootstrap over base tasks has every resample at 60 % ([60, 60]); over the ten copies it would not
    rows = _rows({"A": (1, 0, 1, 0, 1), "B": (0, 1, 1, 1, 0)})
    chosen = {"config_hash": "h" * 16, "protocol": "urbanground-v1", "config": {}, "agent": "x",
              "family": "urbanground", "errors": 0}
    s = _summarize_continuous(tmp_path, chosen, rows, 500, 0)
    assert s["metrics"]["sr"] == pytest.approx(60.0) and s["ci95"]["sr"] == pytest.approx([60.0, 60.0])
    assert s["tasks"] == 10 and s["base_tasks"] == 2
    by = s["by_condition"]
    assert list(by) == sorted(FIVE) and all(g["episodes"] == 2 for g in by.values())
    assert by["night"]["metrics"]["sr"] == 100.0 and by["night"]["ci95"]["sr"] == [100.0, 100.0]
    assert by["clear"]["metrics"]["sr"] == 50.0
    lo, hi = by["clear"]["ci95"]["sr"]
    assert 0.0 <= lo <= 50.0 <= hi <= 100.0 and hi - lo > 0  # two base tasks that differ: a real interval
    # old rows (no base id) cluster by their own task id, as before
    old = [{**r, "details": json.dumps({"level": "L2", "condition": "clear"})} for r in _rows({"A": (1, 0, 1, 0, 1)})]
    s_old = _summarize_continuous(tmp_path, chosen, old, 500, 0)
    assert s_old["base_tasks"] == 5 and s_old["ci95"]["sr"] != [60.0, 60.0]


def test_cli_condition_table_shows_the_interval():
    from urbanarena.cli.main import _group_table

    groups = {"night": {"episodes": 4, "metrics": {"sr": 75.0, "pna": None}, "ci95": {"sr": [25.04, 100.0]}},
              "clear": {"episodes": 4, "metrics": {"sr": 50.0, "pna": 80.0}, "ci95": {"sr": None, "pna": [61.96, 93.0]}}}
    con = Console(width=200, record=True)
    con.print(_group_table("by condition", groups, "urbanground-v1", ["sr", "pna"], ci=True))
    text = con.export_text()
    assert "75.0 [25.0, 100.0]" in text and "80.0 [62.0, 93.0]" in text
    assert "mean [95% CI]" in text
    night = next(ln for ln in text.splitlines() if "night" in ln)
    assert "–" in night  # pna has no value
    con = Console(width=200, record=True)
    con.print(_group_table("by level", groups, "urbanground-v1", ["sr"]))
    assert "[" not in con.export_text().split("\n", 1)[1].replace("by level", "")  # other tables: means only


def test_cli_generates_runs_and_summarises_by_condition(city, tmp_path):
    city_dir = tmp_path / "city"
    save_city(city, city_dir)
    suite = tmp_path / "ug.json"
    r = invoke("tasks", "generate", "--city", city_dir, "--suite", "urbanground", "--families", "l2_short_range",
               "--per-family", 2, "--seed", 0, "--condition", "all", "--out", suite)
    assert r.exit_code == 0, r.output
    assert "10 tasks (2 base tasks x 5 conditions: clear, dusk, night, cloudy, rain)" in r.output
    tf = load_task_file(suite)
    assert len({t.task_id for t in tf.tasks}) == 10
    r = invoke("run", "--city", city_dir, "--tasks", suite, "--agent", "ug-oracle", "--out", tmp_path / "run")
    assert r.exit_code == 0, r.output
    r = invoke("summary", tmp_path / "run", "--json", "--resamples", 200)
    s = json.loads(r.output)
    assert sorted(s["by_condition"]) == sorted(FIVE) and all(g["episodes"] == 2 for g in s["by_condition"].values())
    assert s["base_tasks"] == 2 and s["tasks"] == 10
    r = invoke("summary", tmp_path / "run", "--resamples", 200)
    assert r.exit_code == 0 and "100.0 [100.0, 100.0]" in r.output  # the oracle solves all: every resample 100 %


# ------------------------------------------------------------------ generator version 2 (Helsinki core)
@pytest.fixture(scope="module")
def core(request, tmp_path_factory):
    return helsinki_area(str(helsinki_pbf_path(request, tmp_path_factory)), "test")


def _xy(city, pos):
    return latlon_to_xy(city, pos.lat, pos.lon)


def test_multi_stop_tours_fit_the_step_limit(core):
    from urbanarena.cli.tasks_cmd import UrbanGroundOracleVerifier

    res = ug.generate_urbanground_suite(core, per_family=3, seed=0, subfamilies=["l4_multi_stop"],
                                        verify=UrbanGroundOracleVerifier(core))  # the family's 100 steps
    fr = res.report["families"]["l4_multi_stop"]
    assert fr["produced"] == 3 and fr["verification_failures"] == 0, fr
    assert res.report["generator_version"] == 2
    from urbanarena.env.continuous.walk_network import WalkNetwork

    net = WalkNetwork.from_city(core)
    for t in res.task_file.tasks:
        s = _xy(core, t.start.position)
        gs = [_xy(core, g.position) for g in t.goals]
        assert len(gs) == 3
        tour = min(sum(net.network_distance_m(a, b) for a, b in zip([s, *o], o)) for o in itertools.permutations(gs))
        assert tour <= 250.0 and t.extra["tour_m"] == pytest.approx(tour, abs=0.02)
        assert all(net.network_distance_m(s, g) <= 120.0 + 0.5 and math.dist(s, g) >= 30.0 - 0.01 for g in gs)
        assert all(math.dist(a, b) >= 30.0 - 0.01 for a, b in itertools.combinations(gs, 2))


def test_pedestrian_walkers_cross_the_route_near_it(core):
    res = ug.generate_urbanground_suite(core, per_family=5, seed=0, subfamilies=["l5_pedestrians"])
    fr = res.report["families"]["l5_pedestrians"]
    assert fr["produced"] == 5 and "shortfall" not in fr
    from urbanarena.env.continuous.walk_network import WalkNetwork

    net = WalkNetwork.from_city(core)
    for t in res.task_file.tasks:
        route = LineString(net.shortest_walk(_xy(core, t.start.position), _xy(core, t.goals[0].position)))
        routes = t.extra["dynamics"]["pedestrians"]["routes"]
        assert 3 <= len(routes) <= 8
        for w in routes[1:]:
            line = LineString(w)
            assert 30.0 <= line.length <= 200.0 and line.distance(route) < 0.01
            # both ends (pose nodes snapped onto the network: within a metre) 10-60 m from the agent's route
            assert 9.0 <= route.distance(Point(w[0])) <= 61.0 and 9.0 <= route.distance(Point(w[-1])) <= 61.0


def test_a_shortfall_says_why(city):
    # the fixture has too few unique-name places near any start for three stops
    fr = ug.generate_urbanground_suite(city, per_family=2, seed=0, subfamilies=["l4_multi_stop"]).report["families"]
    fr = fr["l4_multi_stop"]
    assert fr["produced"] == 0 and fr["attempts"] == 400
    assert fr["rejected"] == {"fewer than 3 unique-name places >= 30 m apart within 120 m": 400}
    assert fr["shortfall"].endswith("(too few candidates here: 400 x fewer than 3 unique-name places >= 30 m apart "
                                    "within 120 m)")
