"""OSM importer on the hand-written fixture ``tests/data/osm_fixture.osm``.

Every expected number below is worked out by hand from the layout drawn in the
fixture's header comment (positions in metres around 60.17 N, 24.94 E).
"""

from __future__ import annotations

import math
from pathlib import Path

import networkx as nx
import pytest

from urbanarena.world.city_io import load_city, save_city
from urbanarena.world.geo import LocalFrame, angle_diff_deg
from urbanarena.world.importers.osm import ATTRIBUTION, LICENCE, import_city

FIXTURE = Path(__file__).parent / "data" / "osm_fixture.osm"
FIX_FRAME = LocalFrame(60.17, 24.94)  # the frame the fixture's metre layout was written in


@pytest.fixture(scope="module")
def city():
    return import_city(FIXTURE)


def fx(city, x_m: float, y_m: float) -> tuple[float, float]:
    """A city-frame point in the fixture's metres."""
    lat, lon = city.frame.to_latlon(x_m, y_m)
    x, y = FIX_FRAME.to_xy(lat, lon)
    return float(x), float(y)


def node_at(city, x: float, y: float, tol: float = 0.05) -> str:
    hits = [n for n in city.graph.nodes if math.dist(fx(city, *city.xy(n)), (x, y)) < tol]
    assert len(hits) == 1, (x, y, hits)
    return hits[0]


def test_graph_counts_hand_worked(city):
    rep = city.meta.extra["osm_import"]
    # 11 streets: 4 of 50 m (5 edges), 6 of 100 m (10 edges: 5 carriageway + Parkpath), 1 of 40 m (4)
    assert city.graph.number_of_nodes() == 82
    assert city.graph.number_of_edges() == 168
    assert rep["streets"] == 11
    assert rep["network_length_m"] == pytest.approx(840.0, abs=0.2)
    # every edge in both directions (no pedestrian one-ways in the fixture)
    assert all(city.graph.has_edge(v, u) for u, v in city.graph.edges)


def test_decision_points_and_dead_end(city):
    kinds = nx.get_node_attributes(city.graph, "node_kind")
    dps = sorted((round(x), round(y)) for n, k in kinds.items() if k == "decision_point" for x, y in [fx(city, *city.xy(n))])
    assert dps == [(0, 50), (50, 0), (100, 0), (100, 100)]
    dead = [fx(city, *city.xy(n)) for n, k in kinds.items() if k == "dead_end"]
    assert len(dead) == 1 and dead[0] == pytest.approx((100, -40), abs=0.05)
    # the corners are ordinary (degree-2) pose nodes
    for corner in [(0, 0), (0, 100), (200, 0), (200, 100)]:
        n = node_at(city, *corner)
        assert kinds[n] == "street" and not city.node(n)["decision_point"]
    # degree of (100, 0): Mainstreet both ways, Midstreet, Southlane
    assert city.graph.out_degree(node_at(city, 100, 0)) == 4


def test_node_spacing_and_azimuths(city):
    for u, v, d in city.graph.edges(data=True):
        assert d["length_m"] == pytest.approx(10.0, abs=0.05)
        # straight edges: length equals the geodesic chord
        assert city.distance_m(u, v) == pytest.approx(d["length_m"], abs=0.05)
    a, b = node_at(city, 120, 0), node_at(city, 130, 0)
    assert city.graph.edges[a, b]["azimuth_deg"] == pytest.approx(90.0, abs=0.01)
    assert city.graph.edges[b, a]["azimuth_deg"] == pytest.approx(270.0, abs=0.01)
    c, d = node_at(city, 0, 20), node_at(city, 0, 30)
    assert angle_diff_deg(city.graph.edges[c, d]["azimuth_deg"], 0.0) < 0.01


def test_headings_follow_the_street(city):
    # interior nodes face along their way: Mainstreet west->east, Weststreet south->north, Northstreet west->east
    assert city.node(node_at(city, 130, 0))["heading_deg"] == pytest.approx(90.0, abs=0.05)
    assert angle_diff_deg(city.node(node_at(city, 0, 30))["heading_deg"], 0.0) < 0.05
    assert city.node(node_at(city, 150, 100))["heading_deg"] == pytest.approx(90.0, abs=0.05)
    # Parkpath (50,6)->(50,50)->(0,50): north on its first leg, west on the second
    assert angle_diff_deg(city.node(node_at(city, 50, 30))["heading_deg"], 0.0) < 0.05
    assert city.node(node_at(city, 20, 50))["heading_deg"] == pytest.approx(270.0, abs=0.05)
    # decision point (100,0): its best-ranked street is Midstreet (tertiary), heading north
    assert angle_diff_deg(city.node(node_at(city, 100, 0))["heading_deg"], 0.0) < 0.05
    for n, d in city.graph.nodes(data=True):
        outs = sorted(e["azimuth_deg"] for _, _, e in city.graph.out_edges(n, data=True))
        assert d["walkable_headings_deg"] == outs


def test_one_component_after_pruning(city):
    assert nx.number_strongly_connected_components(city.graph) == 1
    pruned = city.meta.extra["osm_import"]["pruned"]
    # the isolated 30 m footway 115-116: 3 edges of 10 m, 4 nodes
    assert pruned == {"components_dropped": 1, "nodes_dropped": 4, "edges_dropped": 6,
                      "length_dropped_m": 30.0, "largest_dropped_nodes": 4}


def test_excluded_ways_by_reason(city):
    assert city.meta.extra["osm_import"]["ways_excluded_by_reason"] == {
        "access=private": 1, "area": 1, "highway=motorway": 1}
    # nothing of the motorway (y = -60) or the private service road (x > 200 at y = 50) is in the graph
    ys = [fx(city, *city.xy(n))[1] for n in city.graph.nodes]
    xs = [fx(city, *city.xy(n))[0] for n in city.graph.nodes]
    assert min(ys) == pytest.approx(-40, abs=0.05) and max(xs) == pytest.approx(200, abs=0.05)


def test_sidewalks_fold_into_their_street(city):
    rep = city.meta.extra["osm_import"]
    assert rep["sidewalk_ways"] == 2 and rep["sidewalks_folded"] == 2 and rep["sidewalks_partly_folded"] == 0
    assert rep["sidewalk_length_folded_m"] == pytest.approx(160.0, abs=2.0)
    assert rep["spurs_removed"] == 2  # the crossing's halves between sidewalk and road
    assert rep["connectors_added"] == 1  # Parkpath's end (50, 6) -> Mainstreet (50, 0)
    # no pose node lies on a sidewalk (y = +-6 between x = 10 and 90) except the connector's path north
    for n in city.graph.nodes:
        x, y = fx(city, *city.xy(n))
        assert not (abs(abs(y) - 6) < 0.5 and 10 <= x <= 90)
    streets = city.annotations.streets
    main = [s for s in streets if s.name == "Mainstreet"]
    assert len(main) == 3 and all(s.sidewalk_left and s.sidewalk_right for s in main)
    assert not any(s.sidewalk_left or s.sidewalk_right for s in streets if s.name != "Mainstreet")
    park = [s for s in streets if s.name == "Parkpath"]
    assert len(park) == 1 and park[0].length_m == pytest.approx(100.0, abs=0.05)
    assert fx(city, *park[0].xy[0]) == pytest.approx((50, 0), abs=0.05)


def test_building_heights(city):
    b = {x.id: x for x in city.annotations.buildings}
    assert (b["w1101"].height_m, b["w1101"].height_source) == (21.5, "height")
    assert (b["w1102"].height_m, b["w1102"].height_source) == (15.0, "levels")
    assert (b["w1103"].height_m, b["w1103"].height_source) == (12.0, "default")
    assert (b["w1104"].height_m, b["w1104"].height_source) == (9.0, "levels")
    # footprints: 30 x 20, 60 x 30, 60 x 30, 20 x 28 m
    areas = {k: v.shape().area for k, v in b.items()}
    assert areas == pytest.approx({"w1101": 600.0, "w1102": 1800.0, "w1103": 1800.0, "w1104": 560.0}, rel=1e-3)


def test_street_facing_facades(city):
    b = {x.id: x for x in city.annotations.buildings}
    facing = {bid: sorted(round(f.normal_deg) % 360 for f in x.facades if f.street_facing) for bid, x in b.items()}
    # 1102's north wall looks at 1103 (20 m away) before any street; 1103's south wall looks at 1102;
    # 1104's east wall sees nothing within 40 m
    assert facing["w1101"] == [0, 90, 180, 270]
    assert facing["w1102"] == [90, 180, 270]
    assert facing["w1103"] == [0, 90, 270]
    assert facing["w1104"] == [0, 180, 270]


EXPECTED_POIS = {
    # name: (building, facade outward normal, facade point, front point, nearest pose node, category, kind)
    "Kahvila Aalto": ("w1101", 180, (27, 10), (27, 0), (30, 0), "amenity", "cafe"),
    "Kirjakauppa Kivi": ("w1101", 270, (10, 23), (0, 23), (0, 20), "shop", "books"),
    "Ravintola Sointu": ("w1102", 180, (150, 10), (150, 0), (150, 0), "amenity", "restaurant"),
    "Kukka": ("w1102", 180, (130, 10), (130, 0), (130, 0), "shop", "florist"),
    "Apteekki": ("w1102", 90, (180, 30), (200, 30), (200, 30), "shop", "chemist"),
    "Museo": ("w1104", 270, (10, 76), (0, 76), (0, 80), "tourism", "museum"),
}


def test_poi_facade_attachment_hand_worked(city):
    ann = city.annotations
    named = {p.name: p for p in ann.pois if p.name}
    assert set(named) == set(EXPECTED_POIS)
    for name, (bid, normal, fpt, front, node, cat, kind) in EXPECTED_POIS.items():
        p = named[name]
        assert (p.category, p.kind) == (cat, kind)
        assert p.building_id == bid
        f = ann.facade(p.facade_id)
        assert f.building_id == bid and round(f.normal_deg) % 360 == normal and f.street_facing
        assert fx(city, *p.facade_xy) == pytest.approx(fpt, abs=0.05)
        assert fx(city, *p.front_xy) == pytest.approx(front, abs=0.05)
        assert p.front_method == "normal"
        assert fx(city, *city.xy(p.node_id)) == pytest.approx(node, abs=0.05)
        assert p.node_distance_m == pytest.approx(math.dist(front, node), abs=0.05)
        lat, lon = city.frame.to_latlon(*p.front_xy)
        assert (p.front_lat, p.front_lon) == pytest.approx((lat, lon), abs=1e-9)
    # Kukka and Sointu share 1102's south facade; exterior rings run counter-clockwise, so the south wall
    # goes west -> east and Kukka (x = 130) has the smaller offset, 20 m before Sointu (x = 150)
    assert named["Kukka"].facade_id == named["Ravintola Sointu"].facade_id
    assert named["Ravintola Sointu"].facade_offset_m - named["Kukka"].facade_offset_m == pytest.approx(20.0, abs=0.05)
    # both sit left of Mainstreet's direction (north of an eastbound street): negative lateral offset
    assert named["Kukka"].lateral_m == pytest.approx(-10.0, abs=0.05)


def test_every_named_poi_attached(city):
    ann = city.annotations
    nodes = set(city.graph.nodes)
    for p in ann.pois:
        if p.name:
            assert p.building_id is not None and p.facade_id is not None
            assert p.node_id in nodes and p.front_xy is not None
    # the unnamed shop in 1103 is attached too (north wall, towards Northstreet)
    unnamed = [p for p in ann.pois if not p.name]
    assert len(unnamed) == 1 and unnamed[0].building_id == "w1103"
    assert fx(city, *unnamed[0].front_xy) == pytest.approx((150, 100), abs=0.05)
    # the artwork 35 m from any building is standalone; the level-2 office and the unnamed parking are no POIs
    assert [p.name for p in ann.standalone_pois] == ["Patsas"]
    assert ann.standalone_pois[0].node_id in nodes
    assert city.meta.extra["osm_import"]["pois_skipped_indoor"] == 1
    assert all(p.name != "Toimisto" and p.kind != "parking" for p in ann.pois)


def test_street_objects(city):
    counts = city.annotations.counts()["objects_by_type"]
    assert counts == {"tree": 4, "street_lamp": 2, "vending_machine": 1, "bench": 1, "traffic_signals": 1,
                      "traffic_sign": 1, "crossing": 1, "bus_stop": 1, "subway_entrance": 1}
    objs = {o.id: o for o in city.annotations.objects}
    # trees south of Mainstreet (right of its eastbound direction), 8 m off its centreline
    for t in ("n401", "n402", "n403"):
        assert objs[t].lateral_m == pytest.approx(8.0, abs=0.05)
        assert objs[t].street_azimuth_deg == pytest.approx(90.0, abs=0.05)
    assert objs["n102"].type == "crossing" and abs(objs["n102"].lateral_m) < 0.05
    assert fx(city, *city.xy(objs["n451"].node_id)) == pytest.approx((150, 0), abs=0.05)
    assert objs["n451"].name == "Keskusta" and objs["n461"].name == "Metro"


def test_blocks(city):
    blocks = city.annotations.blocks
    assert len(blocks) == 2
    assert [b.area_m2 for b in blocks] == pytest.approx([10000.0, 10000.0], rel=1e-3)
    by_bldg = {tuple(sorted(b.building_ids)): b for b in blocks}
    assert set(by_bldg) == {("w1101", "w1104"), ("w1102", "w1103")}
    west = by_bldg[("w1101", "w1104")]
    assert sorted(west.poi_ids) == ["n501", "n502", "w1104"]
    assert len(city.annotations.walkable_areas) == 1 and city.annotations.walkable_areas[0]["name"] == "Tori"


def test_spacing_parameter_hand_worked():
    # spacing 25 m: 50 m streets -> 2 edges, 100 m -> 4, 40 m -> 2: 34 edges, 9 ends + 23 interior nodes
    c = import_city(FIXTURE, spacing_m=25)
    assert (c.graph.number_of_nodes(), c.graph.number_of_edges()) == (32, 68)
    assert all(d["length_m"] in (pytest.approx(25.0, abs=0.05), pytest.approx(20.0, abs=0.05))
               for _, _, d in c.graph.edges(data=True))


def test_bbox_crop_keeps_the_west_block():
    # crop to x in [-10, 110], y in [-50, 110] (fixture metres): the east half is cut at x = 110
    lat0, lon0 = FIX_FRAME.to_latlon(-10, -50)
    lat1, lon1 = FIX_FRAME.to_latlon(110, 110)
    c = import_city(FIXTURE, bbox=(lon0, lat0, lon1, lat1))
    xs = [fx(c, *c.xy(n))[0] for n in c.graph.nodes]
    assert max(xs) == pytest.approx(110.0, abs=0.05)
    assert len(c.annotations.blocks) == 1  # the east block is no longer enclosed
    # 1102 and 1103 (x >= 120) lie outside but within the 50 m context margin: kept for rendering, not core
    assert {b.id for b in c.annotations.buildings if b.in_core} == {"w1101", "w1104"}
    assert {b.id for b in c.annotations.buildings if not b.in_core} == {"w1102", "w1103"}
    assert {p.name for p in c.annotations.pois} == {"Kahvila Aalto", "Kirjakauppa Kivi", "Museo"}
    assert c.meta.extra["osm_import"]["bbox_cut_points"] == 2  # Mainstreet and Northstreet


def test_metadata_and_round_trip(city, tmp_path):
    assert city.meta.licence == LICENCE == "ODbL-1.0"
    assert city.meta.attribution == ATTRIBUTION == "© OpenStreetMap contributors"
    assert city.meta.source["kind"] == "osm" and city.meta.source["files"] == ["osm_fixture.osm"]
    save_city(city, tmp_path / "c")
    back = load_city(tmp_path / "c")
    assert back.content_hash == city.content_hash
    assert back.annotations.content_hash == city.annotations.content_hash
    assert back.annotations.to_dict() == city.annotations.to_dict()
    assert back.annotations.poi("n501").name == "Kahvila Aalto"
