"""Frames importer on synthetic frame sequences: trajectories, headings,
ordering, thinning, and joining trajectories at intersections.

Scenes are laid out in metres (east, north) around a centre point with
pyproj ``Geod.fwd``; expected azimuths and lengths come from pyproj
``Geod.inv`` on the exact positions the EXIF encodes (see ``frames_util``).
"""

from __future__ import annotations

from datetime import datetime, timedelta

import networkx as nx
import pytest
from frames_util import GEOD, offset, write_csv, write_frame, write_line

from urbanarena.errors import CityFormatError
from urbanarena.world.importers.frames import import_city, import_frames, thin


def _inv(g, u, v):
    a, b = g.nodes[u], g.nodes[v]
    az, _, d = GEOD.inv(a["lon"], a["lat"], b["lon"], b["lat"])
    return az % 360, d


def _ang(a, b):
    d = abs(a - b) % 360
    return min(d, 360 - d)


def _check_edges(g):
    """Every edge's azimuth/length equal pyproj's between its end nodes; every edge has its reverse."""
    for u, v, d in g.edges(data=True):
        az, dist = _inv(g, u, v)
        assert d["length_m"] == pytest.approx(dist, abs=1e-9)
        assert _ang(d["azimuth_deg"], az) < 1e-9
        assert g.has_edge(v, u)


def _cross(root, b_centre_north_m=0.8, a_xs=(-20, -10, 0, 10, 20), b_ys=(-20, -10, None, 10, 20)):
    """Trajectory 'we' west->east along y=0 (EXIF heading 90) and 'sn' south->north along x=0
    (no GPSImgDirection), B's middle frame ``b_centre_north_m`` north of A's middle frame."""
    a = write_line(root / "we", [(x, 0.0) for x in a_xs], headings=[90.0] * len(a_xs))
    b = write_line(root / "sn", [(0.0, b_centre_north_m if y is None else y) for y in b_ys])
    return a, b


def test_cross_merges_into_one_junction(tmp_path):
    _cross(tmp_path / "scene")
    city = import_city(tmp_path / "scene")
    g = city.graph
    assert [t["id"] for t in city.meta.extra["trajectories"]] == ["scene/sn", "scene/we"]
    # the middle frames we/f02 and sn/f02 are 0.8 m apart: merged into one junction node
    joins = city.meta.extra["joins"]
    assert len(joins) == 1
    j = joins[0]
    # trajectory order is folder order: 'sn' before 'we', so the kept junction is sn/f02
    assert j["action"] == "merge" and j["junction"] == "sn/f02.jpg" and j["crossing"] is True
    assert sorted(j["frames"]) == ["sn/f02.jpg", "we/f02.jpg"]
    lat_a, lon_a = offset(0, 0)
    lat_b, lon_b = offset(0, 0.8)
    assert j["distance_m"] == pytest.approx(GEOD.inv(lon_a, lat_a, lon_b, lat_b)[2], abs=1e-3)
    assert j["distance_m"] == pytest.approx(0.8, abs=1e-3)
    assert g.number_of_nodes() == 9 and "we/f02.jpg" not in g
    assert g.nodes["sn/f02.jpg"]["merged_frames"] == ["we/f02.jpg"]
    assert nx.is_strongly_connected(g)
    junction = "sn/f02.jpg"
    assert g.out_degree(junction) == 4 and g.in_degree(junction) == 4
    bearings = sorted(d["azimuth_deg"] for _, _, d in g.out_edges(junction, data=True))
    for got, want in zip(bearings, (0, 90, 180, 270)):
        assert _ang(got, want) < 5.0  # 10 m arms from a point 0.8 m off the crossing: within atan(0.8/10)
    assert dict(sorted(nx.utils.groups(dict(g.out_degree())).items())) == {
        1: {"sn/f00.jpg", "sn/f04.jpg", "we/f00.jpg", "we/f04.jpg"},
        2: {"sn/f01.jpg", "sn/f03.jpg", "we/f01.jpg", "we/f03.jpg"},
        4: {junction},
    }
    assert g.number_of_edges() == 16
    _check_edges(g)
    # re-attached edges keep their trajectory; headings: 'we' from EXIF, 'sn' from the course
    assert g.edges["we/f01.jpg", junction]["trajectory_id"] == "scene/we"
    assert g.nodes["we/f01.jpg"]["heading_deg"] == pytest.approx(90.0)
    assert g.nodes["sn/f01.jpg"]["heading_source"] == "course"


def test_cross_connect_mode_keeps_both_frames(tmp_path):
    _cross(tmp_path / "scene")
    city = import_city(tmp_path / "scene", merge=False)
    g = city.graph
    assert g.number_of_nodes() == 10
    (j,) = city.meta.extra["joins"]
    assert j["action"] == "connect"
    a, b = "sn/f02.jpg", "we/f02.jpg"
    assert g.edges[a, b]["edge_kind"] == "join" and g.edges[a, b]["trajectory_id"] is None
    assert g.out_degree(a) == 3 and g.out_degree(b) == 3
    assert g.number_of_edges() == 18 and nx.is_strongly_connected(g)
    _check_edges(g)


def test_sparse_crossing_connects_nearest_pair(tmp_path):
    """The paths cross between frames: no frame pair within the radius, so the
    nearest pair of the crossing segments is connected by join edges."""
    _cross(tmp_path / "s", a_xs=(-16, -6, 4, 14), b_ys=(-14, -4, 6, 16))
    city = import_city(tmp_path / "s", join_radius_m=4.0)
    g = city.graph
    (j,) = city.meta.extra["joins"]
    # candidates: A x=-6 or 4, B y=-4 or 6 -> nearest is (4,0)-(0,-4): 5.66 m > 4 m
    assert j["action"] == "connect" and j["crossing"] is True and j["min_gap_m"] == pytest.approx(0.0, abs=1e-9)
    assert sorted(j["nodes"]) == ["sn/f01.jpg", "we/f02.jpg"]
    a, b = sorted(j["nodes"])
    la, oa = offset(0, -4)
    lb, ob = offset(4, 0)
    assert g.edges[a, b]["length_m"] == pytest.approx(GEOD.inv(oa, la, ob, lb)[2], abs=1e-3)
    assert g.edges[a, b]["length_m"] == pytest.approx(32**0.5, abs=1e-2)
    assert g.number_of_nodes() == 8 and g.number_of_edges() == 14
    assert g.out_degree(a) == 3 and g.out_degree(b) == 3 and nx.is_strongly_connected(g)
    _check_edges(g)


def test_t_junction_and_parallel_streets(tmp_path):
    root = tmp_path / "t"
    write_line(root / "a_main", [(x, 0.0) for x in (-20, -10, 0, 10, 20)])
    write_line(root / "b_side", [(0.0, y) for y in (-32, -22, -12, -2)])  # ends 2 m short of the main street
    write_line(root / "c_far", [(x, 30.0) for x in (-20, -10, 0, 10, 20)])  # parallel, 30 m north: never joins
    city = import_city(root)
    g = city.graph
    (j,) = city.meta.extra["joins"]
    assert j["action"] == "merge" and j["junction"] == "a_main/f02.jpg" and j["crossing"] is False
    assert j["min_gap_m"] == pytest.approx(2.0, abs=1e-3)
    assert "b_side/f03.jpg" not in g and g.out_degree("a_main/f02.jpg") == 3
    comps = sorted(sorted(c) for c in nx.weakly_connected_components(g))
    assert len(comps) == 2 and comps[1] == [f"c_far/f0{k}.jpg" for k in range(5)]
    _check_edges(g)


def test_loop_closes_on_itself(tmp_path):
    # around a 20 m square, ending 1 m from the start
    pts = [(0, 0), (10, 0), (20, 0), (20, 10), (20, 20), (10, 20), (0, 20), (0, 10), (0, 1)]
    write_line(tmp_path / "loop", pts)
    city = import_city(tmp_path / "loop")
    g = city.graph
    (j,) = city.meta.extra["joins"]
    assert j["action"] == "merge" and j["junction"] == "f00.jpg" and j["frames"] == ["f00.jpg", "f08.jpg"]
    assert j["trajectories"] == ["loop", "loop"]
    assert g.number_of_nodes() == 8 and all(d == 2 for _, d in g.out_degree())
    assert nx.is_strongly_connected(g) and len(nx.find_cycle(g.to_undirected())) == 8
    _check_edges(g)


def test_course_headings_and_csv_override(tmp_path):
    d = tmp_path / "c"
    pts = [(0, 0), (10, 0), (10, 10), (20, 20)]
    ws = write_line(d, pts, headings=[None, 33.0, None, None])
    city = import_city(d)
    g = city.graph
    ids = [f"f0{k}.jpg" for k in range(4)]
    assert g.nodes[ids[1]]["heading_deg"] == pytest.approx(33.0) and g.nodes[ids[1]]["heading_source"] == "exif"
    for k in (0, 2):  # course to the next frame
        az, _, _ = GEOD.inv(ws[k].lon, ws[k].lat, ws[k + 1].lon, ws[k + 1].lat)
        assert g.nodes[ids[k]]["heading_source"] == "course"
        assert _ang(g.nodes[ids[k]]["heading_deg"], az % 360) < 1e-9
    # last frame: direction of travel on arrival = back azimuth at the last point + 180
    _, baz, _ = GEOD.inv(ws[2].lon, ws[2].lat, ws[3].lon, ws[3].lat)
    assert _ang(g.nodes[ids[3]]["heading_deg"], (baz + 180) % 360) < 1e-9
    assert _ang(g.nodes[ids[3]]["heading_deg"], 45.0) < 0.01
    # a CSV heading wins over EXIF; empty CSV cells fall back to EXIF position/heading
    m = write_csv(tmp_path / "m.csv", [[str(w.path), "", "", h] for w, h in zip(ws, ["", 200, "", -90])])
    c2 = import_city(m)
    assert c2.name == "m" and [t["id"] for t in c2.meta.extra["trajectories"]] == ["m"]
    n2 = c2.graph.nodes
    assert n2[ids[1]]["heading_deg"] == 200.0 and n2[ids[1]]["heading_source"] == "csv"
    assert n2[ids[3]]["heading_deg"] == 270.0  # -90 wrapped
    assert n2[ids[0]]["heading_deg"] == g.nodes[ids[0]]["heading_deg"]
    assert n2[ids[0]]["lat"] == ws[0].lat


def test_capture_order_rules(tmp_path):
    t0 = datetime(2024, 1, 1, 12, 0, 0)
    east = [(0, 0), (5, 0), (10, 0)]
    # file names disagree with the capture times: EXIF time decides
    for name, (e, n), dt in zip(["c.jpg", "a.jpg", "b.jpg"], east, [0, 2, 4]):
        write_frame(tmp_path / "timed" / name, *offset(e, n), taken=t0 + timedelta(seconds=dt))
    g = import_city(tmp_path / "timed").graph
    assert set(g.edges) == {("c.jpg", "a.jpg"), ("a.jpg", "c.jpg"), ("a.jpg", "b.jpg"), ("b.jpg", "a.jpg")}
    assert [g.nodes[n]["frame_index"] for n in ("c.jpg", "a.jpg", "b.jpg")] == [0, 1, 2]
    # one frame without a time: natural file-name order (f2 before f10)
    for name, (e, n), dt in zip(["f10.jpg", "f2.jpg", "f3.jpg"], [(10, 0), (0, 0), (5, 0)], [0, None, 4]):
        write_frame(tmp_path / "named" / name, *offset(e, n), taken=t0 + timedelta(seconds=dt) if dt is not None else None)
    city = import_city(tmp_path / "named")
    assert city.meta.extra["trajectories"][0]["order"] == "filename"
    assert set(city.graph.edges) == {("f2.jpg", "f3.jpg"), ("f3.jpg", "f2.jpg"), ("f3.jpg", "f10.jpg"), ("f10.jpg", "f3.jpg")}
    # CSV: row order, whatever names and times say
    m = write_csv(tmp_path / "m.csv", [[f"timed/{n}", "", "", ""] for n in ("b.jpg", "a.jpg", "c.jpg")])
    g3 = import_city(m).graph
    assert [g3.nodes[n]["frame_index"] for n in ("b.jpg", "a.jpg", "c.jpg")] == [0, 1, 2]


def test_thinning(tmp_path):
    ws = write_line(tmp_path / "th", [(float(x), 0.0) for x in range(11)])  # one frame per metre
    lats = [w.lat for w in ws]
    lons = [w.lon for w in ws]
    # by hand: keep 0, 3, 6, 9 (>= 2.5 m from the last kept); last frame 10 is 1 m from 9 -> 9 dropped, 10 kept
    assert thin(lats, lons, 2.5) == [0, 3, 6, 10]
    assert thin(lats, lons, 0.0) == list(range(11))
    assert thin(lats, lons, 100.0) == [0, 10]
    city = import_city(tmp_path / "th", spacing_m=2.5)
    g = city.graph
    assert list(g.nodes) == ["f00.jpg", "f03.jpg", "f06.jpg", "f10.jpg"]
    assert g.edges["f06.jpg", "f10.jpg"]["length_m"] == pytest.approx(4.0, abs=1e-4)  # EXIF keeps 1e-6 arc-s
    t = city.meta.extra["trajectories"][0]
    assert (t["frames"], t["nodes"]) == (11, 4) and t["length_m"] == pytest.approx(10.0, abs=1e-4)


def test_duplicate_positions_and_gaps(tmp_path):
    lat, lon = offset(0, 0)
    write_frame(tmp_path / "dup" / "f1.jpg", lat, lon, taken=datetime(2024, 1, 1, 0, 0, 0))
    write_frame(tmp_path / "dup" / "f2.jpg", lat, lon, taken=datetime(2024, 1, 1, 0, 0, 2))
    write_frame(tmp_path / "dup" / "f3.jpg", *offset(5, 0), taken=datetime(2024, 1, 1, 0, 0, 4))
    with pytest.raises(CityFormatError) as ei:
        import_city(tmp_path / "dup")
    assert ei.value.path.endswith("f2.jpg") and "duplicate position" in ei.value.reason and "f1.jpg" in ei.value.reason
    # thinning drops the repeated fix of a standing camera
    assert import_city(tmp_path / "dup", spacing_m=1.0).graph.number_of_nodes() == 2
    write_line(tmp_path / "gap", [(0, 0), (10, 0), (160, 0)])
    with pytest.raises(CityFormatError) as ei:
        import_city(tmp_path / "gap")
    assert ei.value.path.endswith("f02.jpg") and "150.0 m from the previous frame f01.jpg" in ei.value.reason
    assert import_city(tmp_path / "gap", max_gap_m=200).graph.number_of_nodes() == 3


def test_multiple_inputs_group_by_folder(tmp_path):
    a = write_line(tmp_path / "x" / "north", [(0, y) for y in (0, 10, 20)])
    b = write_line(tmp_path / "y" / "east", [(x, 10.5) for x in (-20, -9, 11, 21)])
    city = import_frames([w.path for w in a] + [tmp_path / "y"])
    assert [t["id"] for t in city.meta.extra["trajectories"]] == [f"{tmp_path.name}/x/north", f"{tmp_path.name}/y/east"]
    assert city.meta.imagery["root"] == str(tmp_path.resolve())
    assert "x/north/f01.jpg" in city.graph and "y/east/f01.jpg" in city.graph
    (j,) = city.meta.extra["joins"]
    # the east-west street passes 0.5 m from north/f01 (0, 10), between east/f01 (x=-9) and east/f02 (x=11):
    # nearest frame pair north/f01 - east/f01, 9.01 m > 4 m: connected
    assert j["action"] == "connect" and j["crossing"] is True
    assert sorted(j["nodes"]) == ["x/north/f01.jpg", "y/east/f01.jpg"]
    assert j["distance_m"] == pytest.approx((9**2 + 0.5**2) ** 0.5, abs=1e-2)
    assert len(b) == 4 and nx.is_strongly_connected(city.graph)


def test_png_and_webp_frames(tmp_path):
    from PIL import Image

    a = write_frame(tmp_path / "a.jpg", *offset(0, 0), heading_deg=10.0)
    b = write_frame(tmp_path / "b.jpg", *offset(0, 5), heading_deg=20.0)
    d = tmp_path / "mixed"
    d.mkdir()
    for w, fmt, name in ((a, "PNG", "a.png"), (b, "WEBP", "b.webp")):
        im = Image.open(w.path)
        im.save(d / name, fmt, exif=im.getexif())
    g = import_city(d).graph
    assert list(g.nodes) == ["a.png", "b.webp"]
    assert (g.nodes["a.png"]["lat"], g.nodes["b.webp"]["lat"]) == pytest.approx((a.lat, b.lat), abs=1e-12)
    assert (g.nodes["a.png"]["heading_deg"], g.nodes["b.webp"]["heading_deg"]) == (10.0, 20.0)
    assert g.edges["a.png", "b.webp"]["length_m"] == pytest.approx(5.0, abs=1e-4)
