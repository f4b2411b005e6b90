"""UrbanGround metrics on hand-made trajectories (tasks/metrics/urbanground.py); every value is worked by hand."""

from __future__ import annotations

import math

import pytest

from urbanarena.env.continuous import WalkNetwork
from urbanarena.tasks.metrics import urbanground as ug
from urbanarena.world.annotations import Annotations, Street, StreetObject


def traj(points, checkpoint=None):
    """``points``: [(t_s, x, y)]."""
    return ug.Trajectory.from_arrays([p[0] for p in points], [(p[1], p[2]) for p in points], checkpoint)


def test_success_and_remaining_distance_ratio():
    assert ug.success((15.0, 0.0), (0.0, 0.0)) == 1.0  # exactly on the 15 m radius
    assert ug.success((9.0, 12.01), (0.0, 0.0)) == 0.0  # 15.008 m
    assert ug.success((1.0, 0.0), (0.0, 0.0), closure_violated=True) == 0.0
    # start (0, 0), goal (100, 0), final (30, 40): |(-70, 40)| = 80.62 of 100
    assert ug.remaining_distance_ratio((0, 0), (30, 40), (100, 0)) == pytest.approx(math.hypot(70, 40) / 100)
    assert ug.remaining_distance_ratio((5, 5), (5, 14), (5, 5)) == 0.0
    assert ug.remaining_distance_ratio((5, 5), (5, 25), (5, 5)) == 1.0


def test_pna_time_within_buffer():
    net = WalkNetwork([[(-100.0, 0.0), (100.0, 0.0)]])
    # north at 1 m/s from the line: inside the 3 m buffer for 3 of 10 s
    assert ug.pna(traj([(0, 0, 0), (10, 0, 10)]), net) == pytest.approx(0.3, abs=1e-9)
    # then 5 s standing at y = 10 (a map look, say): 3 of 15 s
    assert ug.pna(traj([(0, 0, 0), (10, 0, 10), (15, 0, 10)]), net) == pytest.approx(0.2, abs=1e-9)
    # crossing from y = -5 to y = 5: inside for |y| <= 3, 6 of 10 m -> 0.6 of the time
    assert ug.pna(traj([(0, 0, -5), (4, 0, 5)]), net) == pytest.approx(0.6, abs=1e-9)
    # speed does not matter, time does: 1 s inside at the start, then 9 s standing outside
    assert ug.pna(traj([(0, 0, 0), (0, 0, 0), (1, 0, 0), (1.5, 0, 10), (10, 0, 10)]), net) == pytest.approx(
        (1 + 0.5 * 0.3) / 10, abs=1e-9)
    assert ug.pna(traj([(0, 20, 5), (10, -20, 5)]), net, buffer_m=5.0) == pytest.approx(1.0)
    assert ug.pna(traj([(0, 0, 4)]), net) == 0.0 and ug.pna(traj([(0, 0, 2)]), net) == 1.0
    # plain polylines work too
    assert ug.pna(traj([(0, 0, 0), (10, 0, 10)]), [[(-100, 0), (100, 0)]]) == pytest.approx(0.3, abs=1e-9)


def test_pedestrian_lines_rebuild_sidewalks_and_crossings():
    """A residential street along y = 0, 8 m wide, sidewalk on its left (north): the pedestrian line runs at
    y = 4 + 1 = 5; the centreline is not one; a crossing at x = 50 spans y = -6 .. 6."""
    ann = Annotations(60.17, 24.94)
    ann.streets = [Street("s0", ["n0", "n1"], [(0.0, 0.0), (100.0, 0.0)], [(0, 0), (0, 0)], 100.0, "residential",
                          "Main", [1], True, 8.0, sidewalk_left=True, sidewalk_right=False),
                   Street("s1", ["n1", "n2"], [(100.0, 0.0), (100.0, 50.0)], [(0, 0), (0, 0)], 50.0, "footway",
                          None, [2], False, 2.0)]
    ann.objects = [StreetObject("o1", "1", "crossing", 50.0, 0.0, 0, 0, street_id="s0", street_azimuth_deg=90.0)]
    net = WalkNetwork.from_annotations(ann)
    assert net.distance_m(30.0, 5.0) == pytest.approx(0.0, abs=1e-9)
    assert net.distance_m(30.0, 0.0) == pytest.approx(5.0, abs=1e-9)  # the carriageway centre
    assert net.distance_m(30.0, -3.0) == pytest.approx(8.0, abs=1e-9)  # no sidewalk on the right
    assert net.distance_m(50.0, -5.0) == pytest.approx(0.0, abs=1e-9)  # on the crossing
    assert net.distance_m(50.0, -7.0) == pytest.approx(1.0, abs=1e-9)
    assert net.distance_m(100.0, 30.0) == pytest.approx(0.0, abs=1e-9)  # the footway itself
    # walking the centreline from x = 10 to x = 40 is off the network; along the sidewalk it is on it
    assert ug.pna(traj([(0, 10, 0), (30, 40, 0)]), net) == 0.0
    assert ug.pna(traj([(0, 10, 5), (30, 40, 5)]), net) == 1.0
    # the routing graph keeps the centrelines: network distance (20, 0) -> (100, 30) = 80 + 30
    assert net.network_distance_m((20.0, 3.0), (101.0, 30.0)) == pytest.approx(110.0)
    assert net.street_name_at(20.0, 3.0) == "Main" and net.street_name_at(20.0, 40.0) is None


def test_closures_and_spr():
    """A barrier x = 20 (y -10 .. 10); the agent walks east along y = 0 at 4 m/s from x = 0 at t = 0:
    it crosses x = 20 at t = 5 s."""
    t = traj([(0, 0, 0), (4, 16, 0), (6, 24, 0), (10, 40, 0)])
    barrier = [(20.0, -10.0), (20.0, 10.0)]
    early = ug.Closure(tuple(barrier), active_from_s=5.5)  # notice after the crossing: respected
    assert ug.closure_violations(t, [early]) == []
    assert ug.closure_respected(t, [early]) == 1.0
    late = ug.Closure(tuple(barrier), active_from_s=4.5)  # notice at x = 18: crossing at t = 5 is a violation
    v = ug.closure_violations(t, [late])
    assert len(v) == 1 and v[0].t_s == pytest.approx(5.0) and v[0].xy == pytest.approx((20.0, 0.0))
    zone = ug.Closure(((30, -5), (35, -5), (35, 5), (30, 5)), active_from_s=0.0, zone=True)
    v = ug.closure_violations(t, [early, zone])
    assert [(x.closure, x.t_s) for x in v] == [(1, pytest.approx(7.5))]  # enters x = 30 at t = 6 + 6/4
    # SR is forced to 0 even though the final position is at the goal
    m = ug.navigation_metrics(t, (40.0, 0.0), closures=[late])
    assert m["sr"] == 0.0 and m["closure_respected"] == 0.0 and m["closure_violations"] == 1
    assert ug.navigation_metrics(t, (40.0, 0.0), closures=[early])["sr"] == 1.0
    assert ug.navigation_metrics(t, (40.0, 0.0))["closure_respected"] is None
    assert ug.spr([1.0, 0.0, None, 1.0]) == pytest.approx(2 / 3) and ug.spr([None]) is None


def test_pedestrian_collisions_and_pcr():
    agent = traj([(0, 0, 0), (10, 0, 0)])  # standing at the origin for 10 s
    through = traj([(0, 10, 0), (10, -10, 0)])  # 2 m/s straight through it
    beside = traj([(0, 10, 0.6), (10, -10, 0.6)])  # passes 0.6 m away: no contact at 0.5 m
    twice = traj([(0, 5, 0), (5, -5, 0), (10, 5, 0)])  # through, back through
    late = traj([(20, 0, 0), (30, 0, 0)])  # never there at the same time
    assert ug.pedestrian_collisions(agent, [through]) == 1
    assert ug.pedestrian_collisions(agent, [beside]) == 0
    assert ug.pedestrian_collisions(agent, [beside], contact_m=0.61) == 1
    assert ug.pedestrian_collisions(agent, [twice]) == 2
    assert ug.pedestrian_collisions(agent, [late]) == 0
    assert ug.pedestrian_collisions(agent, [through, twice, beside]) == 3
    # both moving: agent east at 1 m/s along y = 0 from x = 0, pedestrian south at 1 m/s along x = 5 from y = 5:
    # at t = 5 both are at (5, 0); contact while |(t - 5) * (1, 1)| <= 0.5, one onset
    walker = traj([(0, 0, 0), (10, 10, 0)])
    assert ug.pedestrian_collisions(walker, [traj([(0, 5, 5), (10, 5, -5)])]) == 1
    assert ug.pedestrian_collisions(walker, [traj([(0, 5, 6), (10, 5, -4)])]) == 0  # 1 s behind: 0.707 m apart
    assert ug.pcr([0, 1, None, 2]) == pytest.approx(2 / 3) and ug.pcr([None]) is None


def test_mst_bound_on_a_triangle_and_route_efficiency():
    """Network: S(0,0) -> (0,40) -> Q(40,40) and S -> P(40,0); no edge P-Q. Network distances S-P 40, S-Q 80,
    P-Q 120 (via S): MST = 40 + 80 = 120. Straight lines: S-P 40, P-Q 40, S-Q 56.6: MST = 80."""
    net = WalkNetwork([[(0, 0), (0, 40), (40, 40)], [(0, 0), (40, 0)]])
    D = net.distance_matrix_m([(0, 0), (40, 0), (40, 40)])
    assert D.ravel().tolist() == pytest.approx([0, 40, 80, 40, 0, 120, 80, 120, 0])
    assert ug.mst_lower_bound_m((0, 0), [(40, 0), (40, 40)], net) == pytest.approx(120.0)
    assert ug.mst_lower_bound_m((0, 0), [(40, 0), (40, 40)]) == pytest.approx(80.0)
    # a walk S -> P -> S -> (0, 40) -> Q: 160 m; efficiency 120 / 160
    walk = traj([(0, 0, 0), (40, 40, 0), (80, 0, 0), (120, 0, 40), (160, 40, 40)])
    assert walk.path_length_m() == pytest.approx(160.0)
    assert ug.route_efficiency(120.0, walk.path_length_m()) == pytest.approx(0.75)
    assert ug.route_efficiency(0.0, 0.0) == 1.0 and ug.route_efficiency(10.0, 0.0) == 0.0
    assert ug.route_efficiency(math.inf, 50.0) == 0.0
    split = WalkNetwork([[(0, 0), (10, 0)], [(100, 0), (110, 0)]])
    assert ug.mst_lower_bound_m((0, 0), [(105, 0)], split) == math.inf


def test_schedule_arrivals_on_time_and_lateness():
    """East along y = 0 at 1 m/s for 100 s. Stop 1 (30, 0), stop 2 (80, 10), radius 15: stop 1 when x = 15
    (t = 15); stop 2 when (x - 80)^2 + 100 <= 225, x = 80 - sqrt(125) = 68.82 (t = 68.82)."""
    t = traj([(0, 0, 0), (100, 100, 0)])
    arr = ug.schedule_arrivals(t, [(30, 0), (80, 10)], radius_m=15)
    assert arr == pytest.approx([15.0, 80 - math.sqrt(125)])
    m = ug.schedule_metrics(arr, [20.0, 60.0])
    assert m["on_time"] == [True, False] and m["on_time_ratio"] == 0.5 and m["stops_reached"] == 2
    assert m["lateness_s"] == pytest.approx([0.0, 20 - math.sqrt(125)])
    assert m["mean_lateness_s"] == pytest.approx((20 - math.sqrt(125)) / 2)
    # order matters: (80, 0) first is reached at x = 75 (radius 5); (30, 0) is behind by then
    assert ug.schedule_arrivals(t, [(80, 0), (30, 0)], radius_m=5) == [75.0, None]
    m = ug.schedule_metrics([75.0, None], [70.0, None])
    assert m["on_time"] == [False, None] and m["on_time_ratio"] == 0.0 and m["lateness_s"] == [5.0, None]
    # two stops inside the same radius are reached at the same time; the start counts
    assert ug.schedule_arrivals(t, [(0, 3), (2, 0)], radius_m=5) == [0.0, 0.0]
    with pytest.raises(ValueError):
        ug.schedule_metrics([1.0], [1.0, 2.0])


def test_oracle_checkpoint_rescoring_and_endpoint_regression():
    """Along y = 0 past the goal (50, 0): checkpoints at x = 0, 20, 40, 55, 70, 100; a mid-move sample at
    x = 50 is not a checkpoint. Best checkpoint x = 55 (5 m): oracle SR 1; the final x = 100 is 50 m away."""
    pts = [(0, 0, 0), (10, 20, 0), (20, 40, 0), (25, 50, 0), (27.5, 55, 0), (35, 70, 0), (50, 100, 0)]
    cp = [True, True, True, False, True, True, True]
    t = traj(pts, cp)
    oc = ug.oracle_checkpoint(t, (50, 0))
    assert oc["index"] == 4 and oc["distance_m"] == pytest.approx(5.0) and oc["oracle_sr"] == 1.0
    assert oc["oracle_rdr"] == pytest.approx(5 / 50)
    er = ug.endpoint_regression(t, (50, 0))
    assert er == {"endpoint_regression_m": pytest.approx(45.0), "endpoint_regressed": 1.0}
    assert ug.success(t.final_xy, (50, 0)) == 0.0
    # a barrier at x = 45 active from the start: only checkpoints before crossing it count (x = 40, 10 m)
    cl = ug.Closure(((45, -5), (45, 5)))
    oc = ug.oracle_checkpoint(t, (50, 0), closures=[cl])
    assert oc["index"] == 2 and oc["distance_m"] == pytest.approx(10.0)
    assert ug.oracle_checkpoint(t, (50, 0), radius_m=8, closures=[cl])["oracle_sr"] == 0.0
    # stopping at the best point: no regression
    assert ug.endpoint_regression(traj(pts[:5], cp[:5]), (50, 0))["endpoint_regression_m"] == 0.0


def test_navigation_metrics_keys_and_bad_trajectories():
    t = traj([(0, 0, 0), (10, 10, 0)])
    m = ug.navigation_metrics(t, (12, 0), network=[[(0, 0), (20, 0)]], pedestrians=[])
    assert set(m) == set(ug.METRIC_KEYS)
    assert m["sr"] == 1.0 and m["pna"] == 1.0 and m["pcr"] == 0.0 and m["pedestrian_collisions"] == 0
    assert m["path_length_m"] == 10.0 and m["rdr"] == pytest.approx(2 / 12)
    for bad in ([], [(1, 0, 0), (0, 1, 0)], [(0, float("nan"), 0)]):
        with pytest.raises(ValueError):
            traj(bad)
