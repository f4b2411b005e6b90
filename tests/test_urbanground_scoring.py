"""UrbanGround ladder scoring on hand-made trajectories and a tiny run's summary (hand-computed values).

City: the hand-written needs fixture (``tests/data/osm_needs_fixture.osm``: Mainstreet y = 0 from x = 0
to 200, Northstreet x = 100 from y = 0 to 100; a tree network, no sidewalk tags, so the pedestrian lines
are the centrelines).
"""

from __future__ import annotations

import numpy as np
import pytest

from generate_util import DATA, fixture_city, from_fix

from urbanarena.runner.driver import RunRequest, execute, prepare
from urbanarena.runner.summary import summarize_run
from urbanarena.tasks.families.urbanground import UrbanGroundFamily
from urbanarena.tasks.metrics import urbanground as ug
from urbanarena.tasks.schema import CityRef, Goal, Position, Start, Task, TaskFile

FIX = DATA / "osm_needs_fixture.osm"
FAM = UrbanGroundFamily()


@pytest.fixture(scope="module")
def city():
    return fixture_city(str(FIX))


def pos(city, x, y) -> Position:
    lat, lon = city.frame.to_latlon(*from_fix(city, x, y))
    return Position(lat=float(lat), lon=float(lon))


def task(city, tid, sub, start, goals=(), heading=90.0, **kw) -> Task:
    from urbanarena.tasks.families.urbanground import SUBFAMILIES

    level, kind = SUBFAMILIES[sub]
    extra = {"level": level, "kind": kind, **kw.pop("extra", {})}
    return Task(task_id=tid, family="urbanground", city=CityRef(name=city.name, content_hash=city.content_hash),
                start=Start(node=min(city.graph.nodes, key=lambda n: np.hypot(*np.subtract(city.xy(n), from_fix(city, *start)))),
                            position=pos(city, *start), heading_deg=heading),
                goals=[Goal(position=pos(city, *g), label=f"g{i}") for i, g in enumerate(goals)],
                success_radius_m=15.0, category=sub, extra=extra, **kw)


def straight(city, pts, times) -> ug.Trajectory:
    return ug.Trajectory.from_arrays(times, np.array([from_fix(city, *p) for p in pts]))


def ring_ll(city, xs, ys):
    out = []
    for x, y in [(xs[0], ys[0]), (xs[1], ys[0]), (xs[1], ys[1]), (xs[0], ys[1])]:
        p = pos(city, x, y)
        out.append([p.lat, p.lon])
    return out


def test_zone_and_closure_violations_fail(city):
    walk = straight(city, [(0, 0), (200, 0)], [0, 100])  # 2 m/s along Mainstreet, through x = 100 at t = 50
    t_in = task(city, "z1", "l2_constrained", (0, 0), [(200, 0)],
                extra={"restricted_zones": [ring_ll(city, (90, 110), (-10, 10))]})
    t_out = task(city, "z2", "l2_constrained", (0, 0), [(200, 0)],
                 extra={"restricted_zones": [ring_ll(city, (90, 110), (30, 50))]})
    m = FAM.score_trajectory(t_in, city, "urbanground-v1", walk)
    assert (m["sr"], m["zone_respected"]) == (0.0, 0.0) and m["final_distance_m"] == pytest.approx(0.0, abs=1e-6)
    m = FAM.score_trajectory(t_out, city, "urbanground-v1", walk)
    assert (m["sr"], m["zone_respected"]) == (1.0, 1.0)
    # a closure across Mainstreet at x = 150, crossed at t = 75 s
    line = (from_fix(city, 150, -5), from_fix(city, 150, 5))
    nav = task(city, "c", "l5_road_closure", (0, 0), [(200, 0)])
    m = FAM.score_trajectory(nav, city, "urbanground-v1", walk, closures=[ug.Closure(line, 50.0)])
    assert (m["sr"], m["spr"], m["closure_violations"]) == (0.0, 0.0, 1.0)
    m = FAM.score_trajectory(nav, city, "urbanground-v1", walk, closures=[ug.Closure(line, 80.0)])  # before notice
    assert (m["sr"], m["spr"]) == (1.0, 1.0)
    # a pedestrian standing 0.3 m off the line at x = 100: one contact
    ped = straight(city, [(100, 0.3), (100, 0.3)], [0, 100])
    m = FAM.score_trajectory(nav, city, "urbanground-v1", walk, pedestrians=[ped])
    assert (m["pedestrian_collisions"], m["pcr"]) == (1.0, 1.0)


def test_choice_schedule_and_multi_stop(city):
    c = task(city, "q", "l1_visual_recognition", (30, 0), answer="B",
             extra={"options": ["Cafe Uno", "City Bank", "Corner Shop", "Nord Cafe"]})
    stay = straight(city, [(30, 0)], [0])
    for ans, ok in (("b", 1.0), ("B)", 1.0), ("City Bank", 1.0), ("C", 0.0), (None, 0.0), ("Bank", 0.0)):
        assert FAM.score_trajectory(c, city, "urbanground-v1", stay, answer=ans)["sr"] == ok, ans
    walk = straight(city, [(0, 0), (200, 0)], [0, 100])
    sched = task(city, "s", "l4_time_window", (0, 0), [(50, 0), (150, 0)], extra={"deadlines_s": [30.0, 60.0]})
    m = FAM.score_trajectory(sched, city, "urbanground-v1", walk)
    # within 15 m of x = 50 at x = 35 (t = 17.5 s, on time), of x = 150 at x = 135 (t = 67.5 s, 7.5 s late)
    assert (m["on_time_ratio"], m["mean_lateness_s"], m["stops_reached"], m["sr"]) == (0.5, pytest.approx(3.75), 2.0, 0.0)
    multi = task(city, "m", "l4_multi_stop", (0, 0), [(200, 0), (100, 0)])
    m = FAM.score_trajectory(multi, city, "urbanground-v1", walk)
    # network MST over (0,0), (100,0), (200,0) = 200 m; path 200 m
    assert (m["sr"], m["stops_reached"]) == (1.0, 2.0) and m["route_efficiency"] == pytest.approx(1.0, abs=1e-4)  # 7-decimal fixture coordinates
    assert m["pna"] == pytest.approx(1.0)  # on the centreline all the time


def test_tiny_run_summary(city, tmp_path):
    opts = ["Cafe Uno", "City Bank", "Corner Shop", "Nord Cafe"]
    closure = {"closures": [{"id": "c1", "line_xy_m": [list(from_fix(city, 150, 40)), list(from_fix(city, 150, 60))],
                             "notice_after_s": 0.0}]}
    tasks = [
        task(city, "fx/q1", "l1_visual_recognition", (30, 0), answer="A", extra={"options": opts}),
        task(city, "fx/q2", "l1_visual_recognition", (30, 0), answer="B", extra={"options": opts}),  # wrong key
        task(city, "fx/n1", "l2_short_range", (0, 0), [(60, 0)]),
        task(city, "fx/c1", "l5_road_closure", (0, 0), [(70, 0)], extra={"dynamics": closure}),
    ]
    f = tmp_path / "tasks.json"
    TaskFile(city=CityRef(name=city.name, content_hash=city.content_hash), tasks=tasks).save(f)
    req = RunRequest(city=f"osm:{FIX}", tasks=str(f), agent="oracle", out=tmp_path / "run")
    p = prepare(req)
    assert p.request.agent == "ug-oracle"  # --agent oracle on urbanground tasks
    out = execute(p)
    assert out.run == 4 and out.errors == 0
    again = execute(prepare(req))
    assert again.run == 0 and again.skipped == 4  # resume
    s = summarize_run(tmp_path / "run")
    m = s["metrics"]
    assert m["sr"] == pytest.approx(75.0) and m["answer_correct"] == pytest.approx(50.0)
    assert m["spr"] == pytest.approx(100.0) and m["pcr"] is None and m["pna"] == pytest.approx(100.0)
    assert {k: v["metrics"]["sr"] for k, v in s["by_family"].items()} == {
        "l1_visual_recognition": 50.0, "l2_short_range": 100.0, "l5_road_closure": 100.0}
    assert s["by_level"]["L1"]["episodes"] == 2 and s["protocol"] == "urbanground-v1"
