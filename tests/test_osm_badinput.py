"""Bad input to the OSM importer: every failure is a CityFormatError naming the file."""

from __future__ import annotations

import shutil
from pathlib import Path

import osmium
import pytest

from urbanarena.errors import CityFormatError
from urbanarena.world.geo import LocalFrame
from urbanarena.world.importers.osm import import_city, source_files

FIXTURE = Path(__file__).parent / "data" / "osm_fixture.osm"
FIX_FRAME = LocalFrame(60.17, 24.94)


def bbox_m(x0, y0, x1, y1):
    """A (W, S, E, N) bbox from fixture metres."""
    lat0, lon0 = FIX_FRAME.to_latlon(x0, y0)
    lat1, lon1 = FIX_FRAME.to_latlon(x1, y1)
    return (lon0, lat0, lon1, lat1)


def expect_error(path: Path, match: str, **kw) -> CityFormatError:
    with pytest.raises(CityFormatError, match=match) as ei:
        import_city(path, **kw)
    assert ei.value.path == str(path)
    assert str(path) in str(ei.value)
    return ei.value


def test_garbage_xml_names_file_and_line(tmp_path):
    p = tmp_path / "garbage.osm"
    p.write_text("this is not xml at all\n")
    e = expect_error(p, "cannot read OSM data")
    assert e.record == "line 1"


def test_truncated_xml(tmp_path):
    text = FIXTURE.read_text()
    cut = text.index('<way id="1003"') + 25  # inside an element: unclosed token
    p = tmp_path / "cut.osm"
    p.write_text(text[:cut])
    e = expect_error(p, "XML parsing error")
    assert e.record == f"line {text[:cut].count(chr(10)) + 1}"


def test_xml_missing_closing_root(tmp_path):
    text = FIXTURE.read_text()
    p = tmp_path / "noclose.osm"
    p.write_text(text[: text.rindex("</osm>")])
    expect_error(p, "cannot read OSM data")


def test_empty_files(tmp_path):
    p = tmp_path / "empty.osm"
    p.write_text("")
    expect_error(p, "cannot read OSM data")
    q = tmp_path / "nothing.osm"
    q.write_text('<?xml version="1.0"?>\n<osm version="0.6"></osm>\n')
    expect_error(q, "no OSM objects")


def _fixture_pbf(tmp_path: Path) -> Path:
    out = tmp_path / "fixture.osm.pbf"
    w = osmium.SimpleWriter(str(out))
    try:
        for o in osmium.FileProcessor(str(FIXTURE)):
            w.add(o)
    finally:
        w.close()
    return out


def test_pbf_reads_like_xml_and_truncated_pbf_fails(tmp_path):
    pbf = _fixture_pbf(tmp_path)
    c = import_city(pbf)
    assert (c.graph.number_of_nodes(), c.graph.number_of_edges()) == (82, 168)
    data = pbf.read_bytes()
    bad = tmp_path / "truncated.osm.pbf"
    bad.write_bytes(data[: len(data) // 2])
    expect_error(bad, "PBF error")
    junk = tmp_path / "junk.osm.pbf"
    junk.write_bytes(bytes(range(256)) * 8)
    expect_error(junk, "cannot read OSM data")


def test_missing_file_and_unknown_suffix(tmp_path):
    with pytest.raises(CityFormatError, match="not found") as ei:
        import_city(tmp_path / "nope.osm")
    assert "nope.osm" in str(ei.value)
    other = tmp_path / "city.txt"
    shutil.copy(FIXTURE, other)
    expect_error(other, "unknown OSM file type")
    with pytest.raises(CityFormatError):
        source_files(tmp_path)


@pytest.mark.parametrize("bbox, match", [
    ((24.95, 60.17, 24.94, 60.18), "empty bbox"),  # W > E
    ((24.94, 60.17, 24.94, 60.18), "empty bbox"),  # zero width
    ((24.94, 60.17, 24.95, float("nan")), "finite"),
    ((24.94, 60.17, 200.0, 60.18), "out of range"),
    (("a", 1, 2, 3), "four numbers"),
    ((1, 2, 3), "four numbers"),
])
def test_bad_bbox(bbox, match):
    e = expect_error(FIXTURE, match, bbox=bbox)
    assert e.record.startswith("bbox")


def test_bbox_without_data():
    e = expect_error(FIXTURE, "no OSM data inside the bbox", bbox=(0.0, 0.0, 0.01, 0.01))
    assert e.record.startswith("bbox 0.0000000,0.0000000")


def test_bbox_without_streets():
    # inside the pedestrian square Tori (an area, not a street), 10 m from Northstreet's corridor at most
    expect_error(FIXTURE, "no walkable streets inside the bbox", bbox=bbox_m(125, 115, 175, 135))


def test_file_without_walkable_streets(tmp_path):
    p = tmp_path / "motorway.osm"
    p.write_text(
        '<?xml version="1.0"?>\n<osm version="0.6">\n'
        '  <node id="1" lat="60.17" lon="24.94"/>\n  <node id="2" lat="60.17" lon="24.95"/>\n'
        '  <way id="10"><nd ref="1"/><nd ref="2"/><tag k="highway" v="motorway"/></way>\n</osm>\n')
    expect_error(p, "no walkable streets in the file")


def test_way_with_missing_nodes_is_split(tmp_path):
    # way 10 references node 3 which is absent (an extract boundary): the way is cut there, not bridged
    p = tmp_path / "gap.osm"
    frame = LocalFrame(60.17, 24.94)
    pts = {1: (0, 0), 2: (40, 0), 4: (100, 0), 5: (140, 0)}
    nodes = "".join(
        f'  <node id="{i}" lat="{frame.to_latlon(x, y)[0]:.7f}" lon="{frame.to_latlon(x, y)[1]:.7f}"/>\n'
        for i, (x, y) in pts.items())
    p.write_text('<?xml version="1.0"?>\n<osm version="0.6">\n' + nodes +
                 '  <way id="10"><nd ref="1"/><nd ref="2"/><nd ref="3"/><nd ref="4"/><nd ref="5"/>'
                 '<tag k="highway" v="residential"/></way>\n</osm>\n')
    c = import_city(p)
    # two 40 m pieces; the pruning keeps one (4 edges of 10 m, 5 nodes) and reports the other
    assert c.graph.number_of_nodes() == 5
    assert c.meta.extra["osm_import"]["pruned"]["components_dropped"] == 1
