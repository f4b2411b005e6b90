"""Regressions from a fresh-eyes break test of the UrbanGround ladder and the CitySeeker suite (issues 5, 6).

City: the hand-written needs fixture (``tests/data/osm_needs_fixture.osm``: Mainstreet y = 0 from x = 0
to 200, Northstreet x = 100 from y = 0 to 100). Each bug found is pinned here:

* hand-edited urbanground task files were accepted and failed mid-run (``<memory>`` instead of the file
  name, or scoring errors) or ran silently wrong (unknown sub-family, answer ``E``, negative deadline, a
  start 100 km away that made the oracle try a 34 GiB grid): now refused up front, naming file and record;
* a continuous task with a start position but no pose node was refused as "graph navigation";
* ``urbanarena summary`` of an urbanground run crashed (``KeyError: 'mdd'``) and printed empty tables;
* a continuous agent (``ug-oracle``) on graph tasks ran every episode as an agent error with exit 0;
* ``tasks generate --suite urbanground`` ignored ``--split`` and took ``--families ,`` as "all".
"""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from generate_util import DATA, fixture_city, from_fix, node_at

from urbanarena.cli.main import app
from urbanarena.tasks.families.urbanground import SUBFAMILIES
from urbanarena.tasks.schema import CityRef, Goal, Position, Start, Task, TaskFile

FIX = DATA / "osm_needs_fixture.osm"
runner = CliRunner()


@pytest.fixture(scope="module")
def city():
    return fixture_city(str(FIX))


def pos(city, x, y) -> Position:
    lat, lon = city.frame.to_latlon(*from_fix(city, x, y))
    return Position(lat=float(lat), lon=float(lon))


def ug_task(city, tid, sub, start, goals=(), **kw) -> Task:
    level, kind = SUBFAMILIES[sub]
    extra = {"level": level, "kind": kind, **kw.pop("extra", {})}
    node = min(city.graph.nodes, key=lambda n: np.hypot(*np.subtract(city.xy(n), from_fix(city, *start))))
    return Task(task_id=tid, family="urbanground", city=CityRef(name=city.name, content_hash=city.content_hash),
                start=Start(node=node, position=pos(city, *start), heading_deg=90.0),
                goals=[Goal(position=pos(city, *g), label=f"g{i}") for i, g in enumerate(goals)],
                success_radius_m=15.0, category=sub, extra=extra, **kw)


def good_tasks(city) -> list[Task]:
    opts = ["Cafe Uno", "City Bank", "Corner Shop", "Nord Cafe"]
    closure = {"closures": [{"id": "c1", "line_xy_m": [list(from_fix(city, 150, 40)), list(from_fix(city, 150, 60))],
                             "notice_after_s": 0.0}]}
    return [
        ug_task(city, "fx/q1", "l1_visual_recognition", (30, 0), answer="A", extra={"options": opts}),
        ug_task(city, "fx/n1", "l2_short_range", (0, 0), [(60, 0)]),
        ug_task(city, "fx/s1", "l4_time_window", (0, 0), [(50, 0), (150, 0)], extra={"deadlines_s": [60.0, 200.0]}),
        ug_task(city, "fx/c1", "l5_road_closure", (0, 0), [(70, 0)], extra={"dynamics": closure}),
    ]


def write(city, tmp_path, tasks, name="tasks.json"):
    f = tmp_path / name
    TaskFile(city=CityRef(name=city.name, content_hash=city.content_hash), tasks=tasks).save(f)
    return f


def run_cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def _set(path, value):
    def f(t):
        obj = t
        for k in path[:-1]:
            obj = obj[k]
        obj[path[-1]] = value
    return f


# (task index in good_tasks, mutation of its JSON, expected message fragment)
BAD = {
    "closure_1_point": (3, _set(["extra", "dynamics", "closures", 0, "line_xy_m"], [[0.0, 0.0]]),
                        r"extra\.dynamics\.closures\[0\]: line_xy_m must be a list of at least 2"),
    "closure_negative_notice": (3, _set(["extra", "dynamics", "closures", 0, "notice_after_s"], -5),
                                r"notice_after_s must be a finite number >= 0"),
    "unknown_condition": (1, _set(["extra", "dynamics"], {"condition": "storm"}),
                          r"extra\.dynamics\.condition: condition 'storm'"),
    "negative_deadline": (2, _set(["extra", "deadlines_s"], [-1.0, 200.0]), r"extra\.deadlines_s must list"),
    "deadline_count": (2, _set(["extra", "deadlines_s"], [60.0]), r"one number of seconds >= 0 per goal \(2\)"),
    "unknown_subfamily": (1, _set(["category"], "l9_flying"), r"category \(the sub-family\) must be one of .*'l9_flying'"),
    "level_mismatch": (1, _set(["extra", "level"], "L9"), r"extra\.level 'L9' does not fit sub-family 'l2_short_range'"),
    "unknown_kind": (1, _set(["extra", "kind"], "dance"), r"extra\.kind 'dance' is not one of"),
    "answer_not_an_option": (0, _set(["answer"], "E"), r"answer must be the letter of an option \(A, B, C, D\)"),
    "no_options": (0, _set(["extra", "options"], None), r"extra\.options must be a list of 2 to 4"),
    "zone_two_points": (1, _set(["extra", "restricted_zones"], [[[60.17, 24.94], [60.171, 24.94]]]),
                        r"extra\.restricted_zones\[0\] must be a polygon of at least 3"),
    "goal_without_position": (1, _set(["goals", 0, "position"], None), r"goals\[0\] needs a position"),
    "navigation_without_goal": (1, _set(["goals"], []), r"a navigation task \(l2_short_range\) needs at least one goal"),
    "start_far_away": (1, _set(["start", "position"], {"lat": 61.0, "lon": 25.0}),
                       r"start position \(61\.0, 25\.0\) lies outside city"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_urbanground_task_file_refused_up_front(city, tmp_path, case):
    idx, mutate, match = BAD[case]
    good = write(city, tmp_path, good_tasks(city), "good.json")
    raw = json.loads(good.read_text())
    t = copy.deepcopy(raw["tasks"][idx])
    mutate(t)
    raw["tasks"] = [raw["tasks"][k] for k in range(len(raw["tasks"])) if k != idx] + [t]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(raw))
    out = tmp_path / "run"
    r = run_cli("run", "--city", f"osm:{FIX}", "--tasks", bad, "--agent", "oracle", "--out", out)
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error:") and "Traceback" not in r.output
    last = len(raw["tasks"]) - 1
    assert f"{bad} [task {last} ({t['task_id']})]" in r.output  # the file and the record
    assert re.search(match, r.output), r.output
    assert not out.exists()  # refused before RUN_DIR


def test_good_file_runs_and_summary_text_has_ladder_tables(city, tmp_path):
    f = write(city, tmp_path, good_tasks(city))
    out = tmp_path / "run"
    r = run_cli("run", "--city", f"osm:{FIX}", "--tasks", f, "--agent", "oracle", "--out", out)
    assert r.exit_code == 0, r.output
    r = run_cli("summary", out, "--resamples", 50)
    assert r.exit_code == 0, r.output  # was KeyError: 'mdd'
    text = r.output
    assert "by family" in text and "by level" in text and "SR" in text and "PNA" in text
    # the oracle solves all four: SR 100.0 in every sub-family and level row
    rows = [ln for ln in text.splitlines() if re.match(r"^\W*(l\d_\w+|L\d)\s", ln)]
    assert len(rows) == 4 + 4, text  # 4 sub-families, 4 levels (L1, L2, L4, L5)
    cells = [[c.strip() for c in ln.split("│")[1:-1]] for ln in rows]  # group, n, SR, PNA, ...
    assert {c[0] for c in cells} == {
        "l1_visual_recognition", "l2_short_range", "l4_time_window", "l5_road_closure", "L1", "L2", "L4", "L5"}
    assert all(c[1] == "1" and c[2] == "100.0" for c in cells), text


def test_continuous_start_position_without_node(city, tmp_path):
    t = ug_task(city, "fx/p1", "l2_short_range", (0, 0), [(60, 0)])
    t = t.model_copy(update={"start": Start(node=None, position=t.start.position, heading_deg=90.0)})
    f = write(city, tmp_path, [t])
    out = tmp_path / "run"
    r = run_cli("run", "--city", f"osm:{FIX}", "--tasks", f, "--agent", "oracle", "--out", out)
    assert r.exit_code == 0, r.output  # was: "graph navigation needs a start node"
    s = json.loads(run_cli("summary", out, "--json", "--resamples", 20).output)
    assert s["metrics"]["sr"] == 100.0


def test_continuous_agent_refused_on_graph_tasks(city, tmp_path):
    start, goal = node_at(city, 0, 0), node_at(city, 60, 0)
    t = Task(task_id="fx/g1", family="cityseeker", city=CityRef(name=city.name, content_hash=city.content_hash),
             start=Start(node=start, heading_deg=90.0), goals=[Goal(node=goal)], instruction="Find McDonald's.")
    f = write(city, tmp_path, [t])
    for agent in ("ug-oracle", "ug-random"):
        out = tmp_path / agent
        r = run_cli("run", "--city", f"osm:{FIX}", "--tasks", f, "--agent", agent, "--out", out)
        assert r.exit_code == 2, r.output  # was: exit 0 with every episode an agent error
        assert r.output.startswith(f"error: agent '{agent}' acts in continuous mode; 'cityseeker' tasks are graph")
        assert not out.exists()


@pytest.mark.parametrize("args, match", [
    (["--split", "val"], "--split applies to --suite arena and cityseeker"),
    (["--families", ","], "--families ',': no sub-family named"),
])
def test_generate_urbanground_options(tmp_path, args, match):
    out = tmp_path / "ug.json"
    r = run_cli("tasks", "generate", "--city", "no-such-city", "--suite", "urbanground", "--per-family", 1,
                "--out", out, *args)
    assert r.exit_code == 2 and r.output.startswith("error:") and match in r.output, r.output
    assert not out.exists()


def test_generate_cityseeker_families_message(tmp_path):
    r = run_cli("tasks", "generate", "--city", "no-such-city", "--suite", "cityseeker", "--families", "basic_poi",
                "--out", tmp_path / "x.json")
    assert r.exit_code == 2 and "--families applies to --suite arena and urbanground only" in r.output
