"""Property-based tests of the city importers (issue 18): mutated inputs (fuzz_util.py) must give a valid
city or a typed error naming the file (CityFormatError), never another exception, never a hang.

Inputs: CitySeeker (connections, questions, info CSV), Touchdown (nodes/links, plain and gzip), OSM XML,
frames (CSV manifest; EXIF GPS of the images), Panoramax (search results alone and through the pose-graph
build on an OSM grid) and saved city directories (graph.json.gz, city.json).

Each test runs FUZZ_EXAMPLES cases (default 150) under the derandomized "ci" profile (conftest.py); every
case has a 10 s limit (SIGALRM) and each test a pytest-timeout. ``pytest -s`` prints the outcome tally.
"""

from __future__ import annotations

import gzip
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzz_util import NASTY_STRINGS, Tally, tallies, check_outcome, damaged_bytes, dumps, fuzz_settings, mutated_json, \
    mutated_lines, valid_city
from test_cityseeker_badinput import edges, questions

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(600)


tally = pytest.fixture(scope="module")(tallies)


def _tally(tally, name: str) -> Tally:
    return tally.setdefault(name, Tally(name))


# ------------------------------------------------------------------ CitySeeker
def _info_rows() -> list[list[str]]:
    from test_cityseeker_badinput import HEAD, POS, WALK

    return [["filename", "lon", "lat", "year", "month", "heading", "walkable_headings"]] + [
        [n, f"{lon:.7f}", f"{lat:.7f}", "2019", "5", f"{HEAD[n]}", '"' + ";".join(str(h) for h in WALK[n]) + '"']
        for n, (lon, lat) in POS.items()]


INFO_ROWS = _info_rows()


@fuzz_settings()
@given(data=st.data())
def test_cityseeker_import_survives_mutations(tally, data):
    from urbanarena.world.importers.cityseeker import import_city

    which = data.draw(st.sampled_from(["connections", "questions", "both", "info"]))
    conn, qs = edges(), questions()
    if which in ("connections", "both"):
        conn = data.draw(mutated_json(conn))
    if which in ("questions", "both"):
        qs = data.draw(mutated_json(qs))
    conn_b = data.draw(damaged_bytes(dumps(conn)))
    q_b = data.draw(damaged_bytes(dumps(qs))) if which != "connections" else dumps(qs)
    gz = data.draw(st.booleans())
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "tiny1"
        d.mkdir()
        cp = d / ("connections.json.gz" if gz else "connections.json")
        cp.write_bytes(gzip.compress(conn_b) if gz else conn_b)
        (d / "question.json").write_bytes(q_b)
        info = d / "tiny1_info.csv"
        if which == "info" or data.draw(st.booleans()):  # node positions from an info CSV (mutated or not)
            rows = INFO_ROWS if which != "info" else None
            info.write_bytes(mutated_lines_plain(rows) if rows else data.draw(damaged_bytes(data.draw(
                mutated_lines(INFO_ROWS)))))
        out = check_outcome(lambda: import_city(d), [cp, d / "question.json", info], valid_city)
    _tally(tally, "cityseeker").add(out)


# ------------------------------------------------------------------ Touchdown
TD_NODES = [["a", "10", "40.7500", "-73.9900"], ["b", "100", "40.7501", "-73.9900"], ["c", "-20", "40.7501", "-73.9899"],
            ["d", "359", "40.7502", "-73.9899"]]
TD_LINKS = [["a", "0", "b"], ["b", "180", "a"], ["b", "90", "c"], ["c", "270", "b"], ["c", "0", "d"], ["d", "180", "c"]]


@fuzz_settings()
@given(data=st.data())
def test_touchdown_import_survives_mutations(tally, data):
    from urbanarena.world.importers.touchdown import import_city

    which = data.draw(st.sampled_from(["nodes", "links", "both"]))
    nodes = data.draw(mutated_lines(TD_NODES)) if which != "links" else mutated_lines_plain(TD_NODES)
    links = data.draw(mutated_lines(TD_LINKS)) if which != "nodes" else mutated_lines_plain(TD_LINKS)
    nodes, links = data.draw(damaged_bytes(nodes)), data.draw(damaged_bytes(links))
    gz = data.draw(st.sampled_from(["plain", "gzip", "gzip_truncated"]))
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        if gz == "plain":
            np_, lp = d / "nodes.txt", d / "links.txt"
            np_.write_bytes(nodes)
            lp.write_bytes(links)
        else:
            np_, lp = d / "nodes.txt.gz", d / "links.txt.gz"
            blob = gzip.compress(nodes)
            if gz == "gzip_truncated":
                blob = blob[: data.draw(st.integers(0, len(blob) - 1))]
            np_.write_bytes(blob)
            lp.write_bytes(gzip.compress(links))
        out = check_outcome(lambda: import_city(d), [np_, lp], valid_city)
    _tally(tally, "touchdown").add(out)


def mutated_lines_plain(rows) -> bytes:
    return ("\n".join(",".join(r) for r in rows) + "\n").encode()


# ------------------------------------------------------------------ OSM
OSM_BASE = (REPO / "tests" / "data" / "osm_build_tiny.osm").read_bytes()
OSM_VALUES = ["", "nan", "inf", "-inf", "1e308", "-1e308", "91", "-181", "0", "-1", "99999999999999999999",
              "18446744073709551617", "x", "1e-320", "60.17", "24.94", "101", "9999"] + NASTY_STRINGS[:12]


@st.composite
def mutated_osm(draw) -> bytes:
    root = ET.fromstring(OSM_BASE)
    for _ in range(draw(st.integers(1, 3))):
        elems = [e for e in root.iter() if e is not root]
        e = draw(st.sampled_from(elems))
        op = draw(st.sampled_from(["attr", "attr", "drop_attr", "drop_elem", "dup_elem", "ref"]))
        if op in ("attr", "drop_attr") and e.attrib:
            k = draw(st.sampled_from(sorted(e.attrib)))
            if op == "attr":
                e.set(k, draw(st.sampled_from(OSM_VALUES)).replace("\x00", "").replace("\ud800", ""))
            else:
                del e.attrib[k]
        elif op in ("drop_elem", "dup_elem", "ref"):
            parent = next(p for p in root.iter() if e in list(p))
            if op == "drop_elem":
                parent.remove(e)
            elif op == "dup_elem":
                parent.insert(list(parent).index(e), ET.fromstring(ET.tostring(e)))
            elif e.tag == "nd":
                e.set("ref", draw(st.sampled_from(["424242", "101", "102", "-5", "0"])))
    data = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return draw(damaged_bytes(data))


@fuzz_settings(120)
@given(blob=mutated_osm())
def test_osm_import_survives_mutations(tally, blob):
    from urbanarena.world.importers.osm import import_city

    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "tiny.osm"
        p.write_bytes(blob)
        out = check_outcome(lambda: import_city(p), [p], valid_city)
    _tally(tally, "osm").add(out)


# ------------------------------------------------------------------ frames (CSV manifest + images)
@pytest.fixture(scope="module")
def frame_dir(tmp_path_factory):
    from PIL import Image

    d = tmp_path_factory.mktemp("frames")
    for i in range(4):
        Image.fromarray(np.full((16, 32, 3), 40 * i, np.uint8)).save(d / f"f{i}.jpg", quality=80)
    return d


FRAME_ROWS = [["filename", "lat", "lon", "heading_deg", "trajectory"]] + [
    [f"f{i}.jpg", f"{60.17 + i * 0.0001:.6f}", "24.94", f"{10 * i}", "t1"] for i in range(4)]


@fuzz_settings(120)
@given(data=st.data())
def test_frames_manifest_survives_mutations(tally, frame_dir, data):
    from urbanarena.world.importers.frames import import_frames

    blob = data.draw(damaged_bytes(data.draw(mutated_lines(FRAME_ROWS))))
    with tempfile.TemporaryDirectory(dir=frame_dir) as tmp:
        m = Path(tmp).parent / f"manifest-{Path(tmp).name}.csv"
        try:
            m.write_bytes(blob)
            out = check_outcome(lambda: import_frames([], csv_path=m), [m] + sorted(frame_dir.glob("f*.jpg")), valid_city)
        finally:
            m.unlink(missing_ok=True)
    _tally(tally, "frames").add(out)


# ------------------------------------------------------------------ Panoramax STAC items
PMX_ITEM = {
    "type": "Feature", "id": "4f2c8a9e-0000-4000-8000-000000000001", "collection": "seq-1",
    "geometry": {"type": "Point", "coordinates": [24.9401, 60.1701]},
    "properties": {"datetime": "2024-05-01T10:00:00Z", "view:azimuth": 90.0, "license": "CC-BY-SA-4.0",
                   "pers:interior_orientation": {"field_of_view": 360, "camera_manufacturer": "GoPro",
                                                 "camera_model": "Max", "sensor_array_dimensions": [5760, 2880]}},
    "providers": [{"name": "someone", "roles": ["producer"]}],
    "assets": {"hd": {"href": "https://example.invalid/hd.jpg", "file:size": 1234,
                      "file:checksum": "1220" + "00" * 32}},
    "links": [{"rel": "self", "href": "https://example.invalid/items/1"}],
}


@fuzz_settings()
@given(item=mutated_json(PMX_ITEM))
def test_panoramax_items_survive_mutations(tally, item):
    """A search result is parsed into a Picture or refused as PanoramaxError (the instance is named); a parsed
    picture is then either usable or reported and skipped by validate_picture, never a crash."""
    from urbanarena.world.importers.panoramax.build import ISSUE_KINDS, validate_picture
    from urbanarena.world.importers.panoramax.client import PanoramaxError, parse_item

    api = "https://panoramax.example.invalid/api"
    try:
        from fuzz_util import case_time_limit

        with case_time_limit():
            pic = parse_item(item, api)
    except PanoramaxError as e:
        assert api in str(e)
        _tally(tally, "panoramax").add("PanoramaxError")
        return
    verdict = validate_picture(pic, check_image=False)
    assert verdict is None or verdict[0] in ISSUE_KINDS
    if verdict is None:
        assert np.isfinite([pic.lat, pic.lon, pic.heading_deg]).all()
    _tally(tally, "panoramax").add("usable" if verdict is None else verdict[0])


# ------------------------------------------------------------------ saved city directories
@pytest.fixture(scope="module")
def saved_graph(tmp_path_factory):
    from urbanarena.world.city_io import save_city
    from urbanarena.world.importers.cityseeker import import_city

    import json

    d = tmp_path_factory.mktemp("cs")
    (d / "connections.json").write_text(json.dumps(edges()))
    (d / "question.json").write_text(json.dumps(questions(), ensure_ascii=False))
    saved = save_city(import_city(d), tmp_path_factory.mktemp("saved") / "c")
    return saved, json.loads(gzip.decompress((saved / "graph.json.gz").read_bytes()))


@fuzz_settings(100)
@given(data=st.data())
def test_saved_city_load_survives_mutations(tally, saved_graph, data):
    import json
    import shutil

    from urbanarena.world.city_io import load_city

    saved, graph = saved_graph
    meta = json.loads((saved / "city.json").read_text())
    which = data.draw(st.sampled_from(["graph", "graph", "meta"]))
    blob = gzip.compress(dumps(graph))
    if which == "graph":
        blob = gzip.compress(data.draw(damaged_bytes(dumps(data.draw(mutated_json(graph))))))
        if data.draw(st.booleans()):
            blob = blob[: data.draw(st.integers(0, len(blob)))]
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "c"
        shutil.copytree(saved, d)
        (d / "graph.json.gz").write_bytes(blob)
        if which == "meta":
            (d / "city.json").write_bytes(data.draw(damaged_bytes(dumps(data.draw(mutated_json(meta))))))
        out = check_outcome(lambda: load_city(d, verify_hash=False), [d / "graph.json.gz", d / "city.json"], valid_city)
    _tally(tally, "saved city").add(out)


# ------------------------------------------------------------------ Panoramax pose graph on the OSM grid
@pytest.fixture(scope="module")
def pmx_scene():
    import panoramax_util as U

    from urbanarena.world.importers.osm import import_city

    osm = import_city(U.GRID_OSM, bbox=U.bbox())
    items = []
    for k in range(12):  # the southern grid line (y = -25 m), one picture every 6 m, camera facing east
        lat, lon = U.ll(-40 + 6 * k, -25)
        items.append({**PMX_ITEM, "id": f"s-{k:02d}", "collection": "seq-s",
                      "geometry": {"type": "Point", "coordinates": [lon, lat]},
                      "properties": {**PMX_ITEM["properties"], "view:azimuth": 90.0,
                                     "datetime": f"2024-05-01T10:00:{k:02d}Z"}})
    return osm, items


@fuzz_settings(100)
@given(data=st.data())
def test_panoramax_pose_graph_survives_mutated_pictures(tally, pmx_scene, data):
    """Mutated search results (positions, headings, ids, duplicates, dangling sequences) through parse_item and
    build_pose_graph: a valid city, or a CityFormatError naming the record ('pictures'), never another
    exception. Bad pictures are skipped with a warning, as the command does."""
    import warnings

    from fuzz_util import case_time_limit
    from urbanarena.errors import CityFormatError
    from urbanarena.world.importers.panoramax.build import build_pose_graph
    from urbanarena.world.importers.panoramax.client import PanoramaxError, parse_item

    osm, items = pmx_scene
    mutated = data.draw(mutated_json(items))
    pics = []
    for it in mutated if isinstance(mutated, list) else [mutated]:
        try:
            pics.append(parse_item(it, "https://pmx.invalid/api"))
        except PanoramaxError:
            pass
    try:
        with case_time_limit(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            city = build_pose_graph(pics, osm, spacing_m=5.0, check_images=False)
    except CityFormatError as e:
        assert e.record in ("pictures", "osm"), e
        out = "CityFormatError"
    else:
        valid_city(city)
        out = "ok"
    _tally(tally, "panoramax pose graph").add(out)


# ------------------------------------------------------------------ frames (EXIF GPS of the images)
EXIF_REF_TAGS = (1, 3, 16)  # GPSLatitudeRef, GPSLongitudeRef, GPSImgDirectionRef (ASCII)
EXIF_VALUE_TAGS = (2, 4, 17)  # GPSLatitude, GPSLongitude (degrees, minutes, seconds), GPSImgDirection
EXIF_REFS = ["N", "S", "E", "W", "T", "M", "X", "", "NN", "n", "\u00e9"]


def _exif_rationals():
    from PIL.TiffImagePlugin import IFDRational as r

    return st.sampled_from([
        (r(60), r(10), r(1)), (r(60), r(10, 0), r(1)), (r(0, 0),), (r(91), r(0), r(0)), (r(-5), r(0), r(0)),
        (r(1, 3), r(2, 7), r(10 ** 9, 1)), (r(60),), (r(1), r(2), r(3), r(4)), (r(2**31 - 1, 1), r(0), r(0)),
        (r(179), r(59), r(59)), (r(180), r(0), r(1)), r(90), r(0, 0), r(400), r(-1), r(359, 1), r(36000, 100)])


@fuzz_settings(100)
@given(data=st.data())
def test_frames_exif_survives_mutations(tally, data):
    """Three frames whose GPS IFD holds drawn tags (latitude/longitude and refs, image direction and ref; zero
    denominators, wrong arities, out-of-range values, unknown refs): a city, or a CityFormatError naming a
    frame or the folder."""
    from hypothesis import reject

    from frames_util import offset, write_frame

    from urbanarena.world.importers.frames import import_frames

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "seq"
        paths = []
        for k in range(3):
            lat, lon = offset(0.0, 4.0 * k)
            raw = {}
            for t in data.draw(st.lists(st.sampled_from(EXIF_REF_TAGS + EXIF_VALUE_TAGS), max_size=4, unique=True)):
                raw[t] = data.draw(st.sampled_from(EXIF_REFS) if t in EXIF_REF_TAGS else _exif_rationals())
            try:
                w = write_frame(d / f"{k:02d}.jpg", lat=lat, lon=lon, heading_deg=10.0 * k, raw_gps=raw)
            except Exception:  # noqa: BLE001 - Pillow cannot write that value: no input file to test
                reject()
            paths.append(w.path)
        out = check_outcome(lambda: import_frames([d]), [d] + paths, valid_city)
    _tally(tally, "frames EXIF").add(out)
