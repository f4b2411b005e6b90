"""Annotation model: heights, facades, blocks, storage; and the sidewalk rules on small hand-made maps."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest
from shapely.geometry import LineString

from conftest import make_city
from urbanarena.errors import CityFormatError
from urbanarena.world import annotations as A
from urbanarena.world.city_io import load_city, save_city
from urbanarena.world.geo import LocalFrame
from urbanarena.world.importers.osm import classify_way, import_city

FIXTURE = Path(__file__).parent / "data" / "osm_fixture.osm"


@pytest.mark.parametrize("value, metres", [
    ("12", 12.0), ("12.5 m", 12.5), ("12,5", 12.5), ("40'", 40 * 0.3048), ("40 ft", 40 * 0.3048),
    ("10'6\"", (10 * 12 + 6) * 0.0254), ("12;15", 12.0), ("abc", None), ("-3", None), (None, None), ("", None),
])
def test_parse_length(value, metres):
    got = A.parse_length_m(value)
    assert got == (pytest.approx(metres) if metres is not None else None)


def test_building_height_rules():
    assert A.building_height({"height": "18", "building:levels": "3"})[:2] == (18.0, "height")
    assert A.building_height({"height": "0", "building:levels": "4"})[:2] == (12.0, "levels")
    assert A.building_height({"height": "tall", "building:levels": "2.5"})[:2] == (7.5, "levels")
    assert A.building_height({"building": "yes"})[:2] == (A.DEFAULT_BUILDING_HEIGHT_M, "default")
    assert A.building_height({"building:levels": "5", "building:min_level": "2"}) == (15.0, "levels", 5.0, 6.0)
    assert A.building_height({"height": "20", "min_height": "4 m"})[3] == 4.0


def test_facades_merge_collinear_edges_and_point_outward():
    # a 20 x 10 rectangle given clockwise with an extra vertex in the middle of its south side
    ring = [(0, 0), (0, 10), (20, 10), (20, 0), (10, 0)]
    fs = A.make_facades("b", [ring])
    assert len(fs) == 4
    by_normal = {round(f.normal_deg) % 360: f for f in fs}
    assert set(by_normal) == {0, 90, 180, 270}
    assert by_normal[180].length_m == pytest.approx(20.0)  # the merged south wall
    assert by_normal[90].length_m == pytest.approx(10.0)
    # counter-clockwise: the south wall runs west -> east, outside on its right
    assert by_normal[180].p0 == (0.0, 0.0) and by_normal[180].p1 == (20.0, 0.0)
    assert [f.id for f in fs] == [f"b:{k}" for k in range(4)]


def test_facades_of_an_l_shape():
    ring = [(0, 0), (20, 0), (20, 10), (10, 10), (10, 20), (0, 20)]
    fs = A.make_facades("L", [ring])
    assert len(fs) == 6
    assert sum(f.length_m for f in fs) == pytest.approx(80.0)
    # the inner corner walls face north (0) and east (90)
    inner = [f for f in fs if f.p0 == (20.0, 10.0)]
    assert len(inner) == 1 and round(inner[0].normal_deg) == 0


def test_city_blocks_grid_and_slivers():
    # 3 vertical and 3 horizontal 100 m streets 50 m apart: a 2 x 2 grid of blocks of 2500 m2
    lines = [LineString([(x, 0), (x, 100)]) for x in (0, 50, 100)] + [LineString([(0, y), (100, y)]) for y in (0, 50, 100)]
    polys = A.city_blocks(lines)
    assert len(polys) == 4 and all(p.area == pytest.approx(2500.0) for p in polys)
    # order: north to south, west to east
    assert [tuple(round(c) for c in p.centroid.coords[0]) for p in polys] == [(25, 75), (75, 75), (25, 25), (75, 25)]
    # a 4 m wide, 100 m long strip between two parallel streets (a dual carriageway) is no block
    strip = [LineString([(0, 0), (100, 0)]), LineString([(0, 4), (100, 4)]), LineString([(0, 0), (0, 4)]),
             LineString([(100, 0), (100, 4)])]
    assert A.city_blocks(strip) == []


def test_classify_way_rules():
    assert classify_way({"highway": "residential"}) == "street"
    assert classify_way({"highway": "footway"}) == "path"
    assert classify_way({"highway": "cycleway"}) == "highway=cycleway"
    assert classify_way({"highway": "cycleway", "foot": "designated"}) == "path"
    assert classify_way({"highway": "motorway"}) == "highway=motorway"
    assert classify_way({"highway": "service", "access": "private"}) == "access=private"
    assert classify_way({"highway": "service", "access": "private", "foot": "yes"}) == "street"
    assert classify_way({"highway": "footway", "foot": "no"}) == "foot=no"
    assert classify_way({"highway": "pedestrian", "area": "yes"}) == "area"
    assert classify_way({"highway": "footway", "tunnel": "yes"}) == "tunnel"
    assert classify_way({"highway": "footway", "tunnel": "building_passage"}) == "path"
    assert classify_way({"highway": "corridor"}) == "highway=corridor"
    assert classify_way({"highway": "platform"}) == "highway=platform"


def _osm(tmp_path: Path, nodes: dict[int, tuple[float, float]], ways: list[tuple[int, list[int], dict]]) -> Path:
    frame = LocalFrame(60.17, 24.94)
    out = ['<?xml version="1.0"?>', '<osm version="0.6">']
    for i, (x, y) in nodes.items():
        lat, lon = frame.to_latlon(x, y)
        out.append(f'  <node id="{i}" lat="{lat:.7f}" lon="{lon:.7f}"/>')
    for wid, refs, tags in ways:
        out.append(f'  <way id="{wid}">' + "".join(f'<nd ref="{r}"/>' for r in refs)
                   + "".join(f'<tag k="{k}" v="{v}"/>' for k, v in tags.items()) + "</way>")
    out.append("</osm>")
    p = tmp_path / "map.osm"
    p.write_text("\n".join(out))
    return p


def test_partly_folded_sidewalk(tmp_path):
    # street (0,0)-(100,0); a sidewalk 5 m north of it from x=0 to 60 that then turns north into a park up to y=60.
    # The 60 m along the street fold into it; the 55 m leg stays and is connected at (60,0) by a 5 m connector.
    p = _osm(tmp_path, {1: (0, 0), 2: (100, 0), 11: (0, 5), 12: (60, 5), 13: (60, 60)},
             [(1, [1, 2], {"highway": "residential"}),
              (2, [11, 12, 13], {"highway": "footway", "footway": "sidewalk"})])
    c = import_city(p)
    rep = c.meta.extra["osm_import"]
    assert (rep["sidewalks_folded"], rep["sidewalks_partly_folded"], rep["sidewalk_pieces_kept"]) == (0, 1, 1)
    assert rep["connectors_added"] == 1
    # streets: (0,0)-(60,0) 60 m -> 6 edges, (60,0)-(100,0) 40 m -> 4, (60,0)-(60,5)-(60,60) 60 m -> 6
    assert c.graph.number_of_nodes() == 17 and c.graph.number_of_edges() == 32
    lengths = sorted(round(s.length_m, 1) for s in c.annotations.streets)
    assert lengths == [40.0, 60.0, 60.0]
    street = [s for s in c.annotations.streets if s.highway == "residential"]
    assert all(s.sidewalk_left and not s.sidewalk_right for s in street)  # north of an eastbound street


def test_sidewalk_not_parallel_is_kept(tmp_path):
    # a footway=sidewalk that crosses the street's corridor at a right angle is not folded
    p = _osm(tmp_path, {1: (0, 0), 2: (100, 0), 11: (50, 0), 12: (50, 40)},
             [(1, [1, 11, 2], {"highway": "residential"}),
              (2, [11, 12], {"highway": "footway", "footway": "sidewalk"})])
    c = import_city(p)
    rep = c.meta.extra["osm_import"]
    assert rep["sidewalks_folded"] == rep["sidewalks_partly_folded"] == 0
    assert c.graph.number_of_nodes() == 15  # 10 + 4 interior + the (50,40) end


def test_foot_oneway(tmp_path):
    p = _osm(tmp_path, {1: (0, 0), 2: (30, 0), 3: (30, 30), 4: (0, 30)},
             [(1, [1, 2, 3], {"highway": "footway"}),
              (2, [3, 4, 1], {"highway": "footway", "oneway": "yes"})])
    c = import_city(p)
    # the loop: 60 m both ways (6 edges each way), the one-way 60 m leg only forwards: 12 + 6 = 18 edges
    assert c.graph.number_of_edges() == 18
    import networkx as nx
    assert nx.number_strongly_connected_components(c.graph) == 1


def test_saved_city_without_annotations_still_loads(tmp_path):
    city = make_city({"A": (0, 0), "B": (0, 0.0001)}, [("A", "B", 0.0, 11.0), ("B", "A", 180.0, 11.0)])
    save_city(city, tmp_path / "c")
    assert not (tmp_path / "c" / A.ANNOTATIONS_FILE).exists()
    meta = json.loads((tmp_path / "c" / "city.json").read_text())
    assert "annotations_hash" not in meta
    assert load_city(tmp_path / "c").annotations is None


def test_annotations_tampering_and_damage(tmp_path):
    city = import_city(FIXTURE)
    d = save_city(city, tmp_path / "c")
    f = d / A.ANNOTATIONS_FILE
    data = json.loads(gzip.decompress(f.read_bytes()))
    data["pois"][0]["name"] = "Changed"
    f.write_bytes(gzip.compress(json.dumps(data).encode()))
    with pytest.raises(CityFormatError, match="annotations_hash"):
        load_city(d)
    data["pois"][0]["bogus"] = 1
    f.write_bytes(gzip.compress(json.dumps(data).encode()))
    with pytest.raises(CityFormatError, match=r"pois\[0\]"):
        load_city(d)
    f.write_bytes(gzip.compress(b'{"format": "urbanarena-annotations", "format_version": 99}'))
    with pytest.raises(CityFormatError, match="version"):
        load_city(d)
    f.write_bytes(gzip.compress(json.dumps(data).encode())[:50])
    with pytest.raises(CityFormatError, match="unreadable"):
        load_city(d)
    f.unlink()
    with pytest.raises(CityFormatError, match="missing"):
        load_city(d)
    # saving a city without annotations over it removes nothing it should keep, and leaves no stale file
    city.annotations = None
    save_city(city, d)
    assert load_city(d).annotations is None


def test_annotation_lookups():
    city = import_city(FIXTURE)
    ann = city.annotations
    assert ann.building("w1102").height_m == 15.0
    assert ann.poi("n507").name == "Patsas"  # standalone POIs are found too
    assert ann.facade("w1101:0").building_id == "w1101"
    assert len(ann.objects_of_type("tree")) == 4
    s = ann.street(ann.poi("n503").street_id)
    assert s.name == "Mainstreet" and math.isclose(s.length_m, 100.0, abs_tol=0.05)
    with pytest.raises(KeyError):
        ann.building("nope")
