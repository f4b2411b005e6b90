"""CitySeeker scorer: hand-worked cases on a tiny synthetic city.

Nodes are placed at exact local metres (x east, y north) around
22.3 N 114.18 E (the local frame is an azimuthal equidistant projection, so
straight-line distances between these nodes equal the planar ones to well
under a micrometre)::

            E(60,45)
               |
    A(0,0)--B(30,0)--C(60,0)-----------D(115,0)
               |
            F(60,-45)     (F -> C one way only: F cannot be reached)

Edges both ways A-B 30 m, B-C 30 m, C-D 55 m, C-E 45 m; F->C 45 m.
Every expected value below is worked out by hand from these coordinates.
"""

from __future__ import annotations

import math

import networkx as nx
import pytest

from urbanarena.errors import ProtocolError
from urbanarena.tasks.families import get_family
from urbanarena.tasks.families.base import Trajectory
from urbanarena.tasks.families.cityseeker import CitySeekerFamily
from urbanarena.tasks.metrics import METRIC_KEYS
from urbanarena.tasks.schema import CityRef, Goal, Start, Task
from urbanarena.world.city import City, CityMeta
from urbanarena.world.geo import LocalFrame

LAT0, LON0 = 22.3, 114.18
XY = {"A": (0, 0), "B": (30, 0), "C": (60, 0), "D": (115, 0), "E": (60, 45), "F": (60, -45)}
R_EARTH = 6378137.0  # EPSG:3857 sphere radius
CS, GRAPH = "cityseeker-v1", "urbanarena-graph-v1"


def _az(a, b):
    (xa, ya), (xb, yb) = XY[a], XY[b]
    return math.degrees(math.atan2(xb - xa, yb - ya)) % 360.0


def _d(a, b):
    return math.dist(XY[a], XY[b])


@pytest.fixture(scope="module")
def city():
    frame = LocalFrame(LAT0, LON0)
    g = nx.DiGraph()
    for n, (x, y) in XY.items():
        lat, lon = frame.to_latlon(x, y)
        g.add_node(n, lat=float(lat), lon=float(lon), heading_deg=0.0, walkable_headings_raw=None, walkable_headings_deg=None)
    for a, b in [("A", "B"), ("B", "C"), ("C", "D"), ("C", "E")]:
        g.add_edge(a, b, azimuth_deg=_az(a, b), length_m=_d(a, b))
        g.add_edge(b, a, azimuth_deg=_az(b, a), length_m=_d(a, b))
    g.add_edge("F", "C", azimuth_deg=_az("F", "C"), length_m=_d("F", "C"))
    return City(g, CityMeta(name="toy"), frame=frame)


def one_stop(start="A", goal="E", ref=("A", "B", "C", "E"), cats=("E", "D")):
    return Task(task_id="toy/1", family="cityseeker", city=CityRef(name="toy"), start=Start(node=start, heading_deg=0.0),
                goals=[Goal(node=goal, label="cafe", category_nodes=list(cats))], success_radius_m=50,
                reference_path=list(ref))


def two_stop():
    return Task(task_id="toy/2", family="cityseeker", city=CityRef(name="toy"), start=Start(node="A", heading_deg=0.0),
                goals=[Goal(node="D", label="bank", category_nodes=["D"]),
                       Goal(node="E", label="shopping mall", category_nodes=["E", "B"])],
                success_radius_m=50, reference_path=["A", "B", "C", "D", "C", "E"],
                reference_stages=[["A", "B", "C", "D"], ["D", "C", "E"]], category="two_stop")


def run(path, stop=True):
    """Trajectory that moved along ``path`` and (optionally) ended with STOP."""
    return Trajectory(path=list(path), actions=[0] * max(len(path) - 1, 0) + ([-1] if stop else []))


def score(city, task, traj, protocol=CS):
    s = get_family("cityseeker").score(task, city, protocol, traj)
    assert set(s) == set(METRIC_KEYS)
    assert s["tc"] is None and s["spd_hops"] is None and s["sed"] is None
    for k, v in s.items():
        assert v is None or math.isfinite(v), k
    return s


def mercator_dist(city, a, b):
    """EPSG:3857 distance by the spherical formulas x = R*lon, y = R*ln(tan(pi/4 + lat/2))."""
    def xy(n):
        lat, lon = city.latlon(n)
        return R_EARTH * math.radians(lon), R_EARTH * math.log(math.tan(math.pi / 4 + math.radians(lat) / 2))
    (xa, ya), (xb, yb) = xy(a), xy(b)
    return math.hypot(xa - xb, ya - yb)


def test_family_attributes():
    f = get_family("cityseeker")
    assert isinstance(f, CitySeekerFamily)
    assert (f.action_style, f.default_protocol, f.default_max_steps, f.foreign_format) == ("heading", "cityseeker-v1", 35, "cityseeker")


def test_geometry_is_what_the_hand_values_assume(city):
    for a in XY:
        for b in XY:
            assert city.distance_m(a, b) == pytest.approx(_d(a, b), abs=1e-6)


def test_reaching_the_goal(city):
    s = score(city, one_stop(), run("ABCE"))
    assert s["tc_exact"] == s["tc_proximity_40m"] == s["tc_proximity_50m"] == s["tc_proximity_60m"] == s["tc_category"] == 1.0
    assert s["spl"] == pytest.approx(1.0)  # shortest A->E = 30+30+45 = 105 m = walked
    assert s["ndtw"] == pytest.approx(1.0) and s["sdtw"] == pytest.approx(1.0) and s["dtw_m"] == pytest.approx(0.0, abs=1e-6)
    assert s["goal_dist_m"] == 0.0 and s["spd_m"] == 0.0 and s["spd_cityseeker"] == 0.0
    assert s["avg_steps"] == 4.0  # 3 moves + STOP


def test_stopping_45m_short(city):
    # stops at C: 45 m from E -> TC-P 50/60 but not 40; C is not a "cafe" node
    s = score(city, one_stop(), run("ABC"))
    assert (s["tc_exact"], s["tc_proximity_40m"], s["tc_proximity_50m"], s["tc_proximity_60m"], s["tc_category"]) == (0, 0, 1, 1, 0)
    # success (50 m): SPL = 1 * 105 / max(60, 105) = 1
    assert s["spl"] == pytest.approx(1.0)
    assert s["goal_dist_m"] == pytest.approx(45.0, abs=1e-6)
    assert s["spd_m"] == pytest.approx(45.0)  # C -> E edge
    assert s["spd_cityseeker"] == pytest.approx(mercator_dist(city, "C", "E"), rel=1e-9)
    assert s["spd_cityseeker"] == pytest.approx(45.0 / math.cos(math.radians(LAT0)), rel=1e-2)  # ellipsoid vs sphere: about 0.5 %
    # DTW of [A,B,C] against [A,B,C,E]: A-A, B-B, C-C, C-E -> 45 m; nDTW = exp(-45 / (4 * 50))
    assert s["dtw_m"] == pytest.approx(45.0, abs=1e-6)
    assert s["ndtw"] == pytest.approx(math.exp(-45.0 / 200.0), abs=1e-9)
    assert s["sdtw"] == pytest.approx(s["ndtw"])


def test_category_without_proximity(city):
    # ends at D (a node of the same target type) 71.06 m from E: TC-C only
    s = score(city, one_stop(), run("ABCD"))
    d_de = math.hypot(55, 45)
    assert (s["tc_exact"], s["tc_proximity_40m"], s["tc_proximity_50m"], s["tc_proximity_60m"], s["tc_category"]) == (0, 0, 0, 0, 1)
    assert s["goal_dist_m"] == pytest.approx(d_de, abs=1e-6)
    assert s["spd_m"] == pytest.approx(55 + 45)  # D->C->E
    assert s["spl"] == 0.0 and s["sdtw"] == 0.0
    # DTW ends with (D, E): 0 + 0 + 0 + |DE|
    assert s["dtw_m"] == pytest.approx(d_de, abs=1e-6)
    assert s["ndtw"] == pytest.approx(math.exp(-d_de / 200.0), abs=1e-9)


def test_detour_spl_and_repeated_nodes(city):
    # A B C D C E: walked 30+30+55+55+45 = 215 m, shortest 105 m; a repeated node (turn in place) adds nothing
    s = score(city, one_stop(), run("AABCDCEE"))
    assert s["tc_exact"] == 1.0
    assert s["spl"] == pytest.approx(105 / 215)
    assert s["avg_steps"] == 8.0
    # DTW of [A,B,C,D,C,E] vs [A,B,C,E]: best warping pairs D with C (55) -> 55 m
    assert s["dtw_m"] == pytest.approx(55.0, abs=1e-6)
    assert s["ndtw"] == pytest.approx(math.exp(-55.0 / 200.0), abs=1e-9)


def test_two_stop_per_stage_vs_final_only(city):
    t = two_stop()
    skip_d = run("ABCE")  # goes straight to the stage-2 goal, never visits D (stage 1)
    cs = score(city, t, skip_d, CS)
    assert (cs["tc_exact"], cs["tc_proximity_40m"], cs["tc_proximity_50m"], cs["tc_proximity_60m"], cs["tc_category"]) == (1, 1, 1, 1, 1)
    assert cs["spl"] == pytest.approx(1.0)  # final-only: l = shortest A->E = 105 m = walked
    gr = score(city, t, skip_d, GRAPH)
    # stage 1 (D): nearest visited node is C at 55 m -> only TC-P@60 passes stage 1; D's category never visited
    assert (gr["tc_exact"], gr["tc_proximity_40m"], gr["tc_proximity_50m"], gr["tc_proximity_60m"], gr["tc_category"]) == (0, 0, 0, 1, 0)
    assert gr["spl"] == 0.0 and gr["sdtw"] == 0.0
    assert gr["goal_dist_m"] == 0.0 and gr["spd_m"] == 0.0

    full = run("ABCDCE")
    gr = score(city, t, full, GRAPH)
    assert (gr["tc_exact"], gr["tc_proximity_40m"], gr["tc_category"]) == (1, 1, 1)
    # per stage: l = d(A,D) + d(D,E) = 115 + 100 = 215 = walked
    assert gr["spl"] == pytest.approx(1.0)
    assert gr["ndtw"] == pytest.approx(1.0)
    cs = score(city, t, full, CS)
    assert cs["tc_exact"] == 1.0 and cs["spl"] == pytest.approx(105 / 215)

    # stage order: D then back to B (a stage-2 category node) -> TC-C per stage, not TC-E
    back = run("ABCDCB")
    gr = score(city, t, back, GRAPH)
    assert (gr["tc_exact"], gr["tc_category"]) == (0, 1)
    # ends at D: stage 1 reached, but D is not a stage-2 category node
    gr = score(city, t, run("ABCD"), GRAPH)
    assert (gr["tc_exact"], gr["tc_category"]) == (0, 0)
    cs = score(city, t, run("ABCD"), CS)
    assert (cs["tc_exact"], cs["tc_category"]) == (0, 0)


def test_corner_cases(city):
    # empty trajectory: read as standing at the start (A), 75 m from E
    s = score(city, one_stop(), Trajectory(path=[], actions=[]))
    assert (s["tc_exact"], s["tc_proximity_60m"], s["spl"], s["sdtw"]) == (0, 0, 0, 0)
    assert s["goal_dist_m"] == pytest.approx(75.0, abs=1e-6)
    assert s["spd_m"] == pytest.approx(105.0)
    assert s["dtw_m"] == pytest.approx(0 + 30 + 60 + 75, abs=1e-6)  # A against every reference point
    assert s["ndtw"] == pytest.approx(math.exp(-165.0 / 200.0), abs=1e-9)
    assert s["avg_steps"] == 0.0

    # start == goal, immediate STOP: l = p = 0 -> SPL = success = 1
    s = score(city, one_stop(start="E", goal="E", ref=("E",)), run("E"))
    assert (s["tc_exact"], s["tc_proximity_40m"], s["spl"], s["ndtw"], s["sdtw"]) == (1, 1, 1, 1, 1)
    assert s["goal_dist_m"] == 0.0 and s["spd_m"] == 0.0 and s["avg_steps"] == 1.0

    # unreachable goal F (only F -> C exists): C is 45 m away, so TC-P@50 succeeds, but SPL = 0 and spd_m is None
    s = score(city, one_stop(goal="F", ref=("A", "B", "C"), cats=("F",)), run("ABC"))
    assert (s["tc_exact"], s["tc_proximity_40m"], s["tc_proximity_50m"]) == (0, 0, 1)
    assert s["spl"] == 0.0
    assert s["spd_m"] is None
    assert s["goal_dist_m"] == pytest.approx(45.0, abs=1e-6)

    # empty reference path: the shortest path A-B-C-E stands in
    s = score(city, one_stop(ref=()), run("ABCE"))
    assert s["ndtw"] == pytest.approx(1.0) and s["dtw_m"] == pytest.approx(0.0, abs=1e-6)

    # no category list: TC-C falls back to the goal node itself
    t = one_stop()
    t.goals[0].category_nodes = None
    assert score(city, t, run("ABCD"))["tc_category"] == 0.0
    assert score(city, t, run("ABCE"))["tc_category"] == 1.0

    # a task without goals scores 0, never raises
    t = one_stop()
    t.goals = []
    s = score(city, t, run("AB"))
    assert s["tc_exact"] == 0.0 and s["spl"] == 0.0 and s["goal_dist_m"] is None

    with pytest.raises(ProtocolError):
        get_family("cityseeker").score(one_stop(), city, "no-such-protocol", run("AB"))
