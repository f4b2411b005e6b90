"""CitySeeker importer on small hand-made inputs: a correct tiny city, then
malformed variants. Each bad case asserts the exception class, the file path
and the record (edge index, line, question) named in the message.

The tiny city (5 nodes, 10 directed edges) is generated here from chosen
WGS84 positions with the EPSG:3857 spherical formulas, so its edge vectors are
exactly consistent and the importer must recover every position::

    n1 -- n2 -- n3
          |
          n4 -- n5
"""

from __future__ import annotations

import copy
import gzip
import json
import math
from pathlib import Path

import pytest

from urbanarena.errors import CityFormatError, TaskFormatError
from urbanarena.tasks.families import get_family
from urbanarena.world.geo import geodesic_distance_m
from urbanarena.world.importers.cityseeker import import_city, read_questions

R = 6378137.0
POS = {  # lon, lat
    "n1.jpg": (114.18000, 22.30000),
    "n2.jpg": (114.18030, 22.30010),
    "n3.jpg": (114.18060, 22.30005),
    "n4.jpg": (114.18035, 22.29975),
    "n5.jpg": (114.18070, 22.29960),
}
HEAD = {"n1.jpg": 10.0, "n2.jpg": 95.5, "n3.jpg": 359.0, "n4.jpg": 181.0, "n5.jpg": 270.0}
WALK = {"n1.jpg": [70.0], "n2.jpg": [250.0, 100.0, 170.0], "n3.jpg": [-9.6], "n4.jpg": [350.0, 110.0], "n5.jpg": [290.0, 10.0]}
LINKS = [("n1.jpg", "n2.jpg"), ("n2.jpg", "n3.jpg"), ("n2.jpg", "n4.jpg"), ("n4.jpg", "n5.jpg")]


def merc(lon, lat):
    return R * math.radians(lon), R * math.log(math.tan(math.pi / 4 + math.radians(lat) / 2))


def edge(a, b):
    (xa, ya), (xb, yb) = merc(*POS[a]), merc(*POS[b])
    return {
        "start_filename": a, "start_heading": HEAD[a], "start_walkable_headings": list(WALK[a]),
        "end_filename": b, "end_heading": HEAD[b], "end_walkable_headings": list(WALK[b]),
        "edge_azimuth": math.degrees(math.atan2(xb - xa, yb - ya)) % 360.0,
        "edge_distance": math.hypot(xb - xa, yb - ya),
    }


def edges():
    out = []
    for a, b in LINKS:
        out += [edge(a, b), edge(b, a)]
    return out


def route(*names):
    return [{"filename": n, "latitude": POS[n][1], "longitude": POS[n][0]} for n in names]


def questions():
    one = {"folder": "bank", "question_idx": 7, "question": "Find a bank.", "idx": 0, "from": "n1.jpg", "to": "n3.jpg",
           "total_weight": edge("n1.jpg", "n2.jpg")["edge_distance"] + edge("n2.jpg", "n3.jpg")["edge_distance"],
           "total_steps": 3, "complete_route": route("n1.jpg", "n2.jpg", "n3.jpg"), "difficulty": "easy",
           "category": "question1", "city": "tiny1"}
    two = {"folder": "bank and clinic", "question_idx": 8, "question": "Find a bank and a clinic in order.", "idx": 0,
           "from": "n3.jpg", "to": "n2.jpg", "total_weight": 1.0, "total_steps": 2,
           "complete_route": route("n3.jpg", "n2.jpg", "n1.jpg", "n2.jpg"), "difficulty": "easy", "category": "question2",
           "city": "tiny1",
           "stage1_route": {"from": "n3.jpg", "to": "n1.jpg", "route": route("n3.jpg", "n2.jpg", "n1.jpg"), "service": "银行",
                            "steps": 2, "weight": 1.0},
           "stage2_route": {"from": "n1.jpg", "to": "n2.jpg", "route": route("n1.jpg", "n2.jpg"), "service": "医院诊所",
                            "steps": 1, "weight": 1.0}}
    return [one, two]


def write(d: Path, conn=None, qs=None, gz=False, info: str | None = None, conn_text: str | None = None,
          q_text: str | None = None) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    text = conn_text if conn_text is not None else json.dumps(edges() if conn is None else conn, indent=1)
    if gz:
        with gzip.open(d / "connections.json.gz", "wt") as f:
            f.write(text)
    else:
        (d / "connections.json").write_text(text)
    if q_text is not None:
        (d / "question.json").write_text(q_text)
    elif qs is not False:
        (d / "question.json").write_text(json.dumps(questions() if qs is None else qs, indent=1, ensure_ascii=False))
    if info is not None:
        (d / "Tiny_1_info.csv").write_text(info)
    return d


def info_csv(rows=None):
    lines = ["filename,lon,lat,year,month,heading,walkable_headings"]
    for n, (lon, lat) in POS.items():
        lines.append(f'{n},{lon},{lat},2019,5,{HEAD[n]},"{json.dumps(WALK[n])}"')
    return "\n".join(lines + (rows or [])) + "\n"


def bad(exc, fn, path: Path, *parts: str):
    """Assert ``fn()`` raises ``exc`` whose message names ``path`` and every part."""
    with pytest.raises(exc) as ei:
        fn()
    msg = str(ei.value)
    assert str(path) in msg, msg
    for p in parts:
        assert p in msg, msg
    return ei.value


# ------------------------------------------------------------------ good input
def test_tiny_city_reconstruction_is_exact(tmp_path):
    d = write(tmp_path / "Tiny_1")
    c = import_city(d)
    assert c.name == "tiny1"
    assert c.graph.number_of_nodes() == 5 and c.graph.number_of_edges() == 8
    # n4 and n5 appear in no route: their positions come from the edge vectors alone
    for n, (lon, lat) in POS.items():
        assert geodesic_distance_m(c.node(n)["lat"], c.node(n)["lon"], lat, lon) < 1e-4, n
    rec = c.meta.extra["reconstruction"]
    assert rec["anchors"] == 3 and rec["free_nodes"] == 2 and rec["residual_max_m"] < 1e-4
    # -9.6 is within the 15 deg tolerance: raw kept, normalised wrapped
    assert c.node("n3.jpg")["walkable_headings_raw"] == [-9.6]
    assert c.node("n3.jpg")["walkable_headings_deg"] == [pytest.approx(350.4)]
    assert c.node("n2.jpg")["walkable_headings_raw"] == [250.0, 100.0, 170.0]
    e = edge("n4.jpg", "n5.jpg")
    mid = (POS["n4.jpg"][1] + POS["n5.jpg"][1]) / 2
    assert c.graph.edges["n4.jpg", "n5.jpg"]["length_m"] == pytest.approx(e["edge_distance"] * math.cos(math.radians(mid)), rel=1e-9)
    assert c.meta.extra["walkable_count_ne_degree"] == 1  # n5: two headings, one edge
    assert c.meta.extra["unreachable_task_endpoints"] == []


def test_tiny_city_with_info_csv(tmp_path):
    d = write(tmp_path / "Tiny_1", qs=False, info=info_csv())
    c = import_city(d)
    assert c.name == "tiny_1"  # no question.json: directory name lowercased
    for n, (lon, lat) in POS.items():
        assert (c.node(n)["lon"], c.node(n)["lat"]) == (lon, lat)
        assert c.node(n)["capture_year"] == 2019
    assert c.meta.extra["reconstruction"]["residual_max_m"] < 1e-4


def test_tiny_tasks(tmp_path):
    d = write(tmp_path / "Tiny_1", gz=True)
    c = import_city(d)
    tasks = get_family("cityseeker").load_foreign(d, c)
    assert [t.task_id for t in tasks] == ["tiny1/7", "tiny1/8"]
    one, two = tasks
    assert one.category == "basic_poi" and two.category == "two_stop"
    assert one.start.heading_deg == 10.0 and two.start.heading_deg == 359.0
    assert [(g.node, g.label) for g in two.goals] == [("n1.jpg", "bank"), ("n2.jpg", "healthcare facility")]
    assert one.goals[0].category_nodes == ["n3.jpg", "n1.jpg"]  # every "bank" goal in the file
    assert two.goals[0].category_nodes == ["n3.jpg", "n1.jpg"] and two.goals[1].category_nodes == ["n2.jpg"]
    assert two.reference_stages == [["n3.jpg", "n2.jpg", "n1.jpg"], ["n1.jpg", "n2.jpg"]]


# ------------------------------------------------------------------- bad input
def _conn(d):
    return d / "connections.json"


def test_truncated_json(tmp_path):
    text = json.dumps(edges(), indent=1)
    cut = text[: len(text) // 2]
    d = write(tmp_path / "c", conn_text=cut)
    e = bad(CityFormatError, lambda: import_city(d), _conn(d), "invalid or truncated JSON")
    assert e.record.startswith(f"line {cut.count(chr(10)) + 1} ")  # error at the end of the cut text


def test_truncated_gzip(tmp_path):
    d = write(tmp_path / "c", gz=True)
    gzp = d / "connections.json.gz"
    gzp.write_bytes(gzp.read_bytes()[:200])
    bad(CityFormatError, lambda: import_city(d), gzp, "truncated gzip")


def test_empty_file(tmp_path):
    d = write(tmp_path / "c", conn_text="")
    bad(CityFormatError, lambda: import_city(d), _conn(d), "[line 1]", "empty file")


def test_not_a_list(tmp_path):
    d = write(tmp_path / "c", conn_text='{"edges": []}')
    bad(CityFormatError, lambda: import_city(d), _conn(d), "expected a JSON list")


def test_missing_field(tmp_path):
    es = edges()
    del es[2]["edge_distance"]
    d = write(tmp_path / "c", conn=es)
    bad(CityFormatError, lambda: import_city(d), _conn(d), "[edge 2]", "missing field(s): edge_distance")


def test_nan_distance(tmp_path):
    es = edges()
    es[1]["edge_distance"] = float("nan")  # json.dumps writes the NaN literal
    d = write(tmp_path / "c", conn=es)
    assert "NaN" in _conn(d).read_text()
    bad(CityFormatError, lambda: import_city(d), _conn(d), "[edge 1]", "edge_distance is not a finite number")


def test_infinite_azimuth_and_out_of_range_azimuth(tmp_path):
    es = edges()
    es[3]["edge_azimuth"] = float("inf")
    d = write(tmp_path / "a", conn=es)
    bad(CityFormatError, lambda: import_city(d), _conn(d), "[edge 3]", "edge_azimuth")
    es = edges()
    es[5]["edge_azimuth"] = 400.0
    d = write(tmp_path / "b", conn=es)
    bad(CityFormatError, lambda: import_city(d), _conn(d), "[edge 5]", "outside [0, 360]")


def test_duplicate_edge(tmp_path):
    es = edges()
    es.append(copy.deepcopy(es[4]))
    d = write(tmp_path / "c", conn=es)
    bad(CityFormatError, lambda: import_city(d), _conn(d), f"[edge {len(es) - 1}]", "duplicate edge n2.jpg -> n4.jpg", "first at edge 4")


def test_self_loop(tmp_path):
    es = edges()
    es[6]["end_filename"] = es[6]["start_filename"]
    d = write(tmp_path / "c", conn=es)
    bad(CityFormatError, lambda: import_city(d), _conn(d), "[edge 6]", "self-loop")


def test_walkable_heading_far_out_of_range(tmp_path):
    es = edges()
    es[0]["start_walkable_headings"] = [70.0, -40.0]
    d = write(tmp_path / "c", conn=es)
    bad(CityFormatError, lambda: import_city(d), _conn(d), "[edge 0]", "start_walkable_headings[1] = -40.0", "outside [0, 360)")


def test_panorama_heading_far_out_of_range(tmp_path):
    es = edges()
    es[0]["end_heading"] = 400.0
    d = write(tmp_path / "c", conn=es)
    bad(CityFormatError, lambda: import_city(d), _conn(d), "[edge 0]", "end_heading 400.0")


def test_walkable_headings_not_numbers(tmp_path):
    es = edges()
    es[2]["end_walkable_headings"] = [12.0, "north"]
    d = write(tmp_path / "c", conn=es)
    bad(CityFormatError, lambda: import_city(d), _conn(d), "[edge 2]", "end_walkable_headings[1]")


def test_records_disagree_on_a_node(tmp_path):
    es = edges()
    # edge 3 is n3 -> n2; n2 was first described by edge 0 (as its end)
    es[3]["end_walkable_headings"] = [100.0, 250.0, 170.0]
    d = write(tmp_path / "c", conn=es)
    bad(CityFormatError, lambda: import_city(d), _conn(d), "[edge 3]", "node n2.jpg", "disagree with edge 0")


def test_question_unknown_node(tmp_path):
    qs = questions()
    qs[0]["to"] = "ghost.jpg"
    qs[0]["complete_route"][-1]["filename"] = "ghost.jpg"
    d = write(tmp_path / "c", qs=qs)
    bad(CityFormatError, lambda: import_city(d), d / "question.json", "[question 0 (question_idx 7)]", "unknown node 'ghost.jpg'")


def test_question_nan_coordinate(tmp_path):
    qs = questions()
    qs[1]["stage1_route"]["route"][1]["latitude"] = float("nan")
    d = write(tmp_path / "c", qs=qs)
    q = d / "question.json"
    bad(CityFormatError, lambda: import_city(d), q, "[question 1 (question_idx 8)]", "stage1_route.route[1] latitude/longitude")
    bad(TaskFormatError, lambda: read_questions(q), q, "[question 1 (question_idx 8)]", "not a finite number")


def test_question_missing_field_and_bad_category(tmp_path):
    qs = questions()
    del qs[1]["from"]
    d = write(tmp_path / "a", qs=qs)
    q = d / "question.json"
    bad(TaskFormatError, lambda: read_questions(q), q, "[question 1 (question_idx 8)]", "missing field(s): from")
    qs = questions()
    qs[0]["category"] = "question3"
    d = write(tmp_path / "b", qs=qs)
    bad(TaskFormatError, lambda: read_questions(d), d / "question.json", "[question 0 (question_idx 7)]", "unknown category 'question3'")


def test_question_duplicate_idx(tmp_path):
    qs = questions()
    qs[1]["question_idx"] = 7
    d = write(tmp_path / "c", qs=qs)
    bad(TaskFormatError, lambda: read_questions(d), d / "question.json", "[question 1 (question_idx 7)]", "duplicate question_idx 7 (also question 0)")


def test_question_route_not_an_edge(tmp_path):
    qs = questions()
    qs[0]["complete_route"] = route("n1.jpg", "n3.jpg")  # n1 and n3 are not adjacent
    d = write(tmp_path / "c", qs=qs)
    bad(CityFormatError, lambda: import_city(d), d / "question.json", "[question 0 (question_idx 7)]", "route step n1.jpg -> n3.jpg")


def test_question_invalid_json(tmp_path):
    d = write(tmp_path / "c", q_text='[\n {"folder": "bank",\n  "question_idx": 7,,\n')
    q = d / "question.json"
    bad(TaskFormatError, lambda: read_questions(q), q, "[line 3 column")
    bad(CityFormatError, lambda: import_city(d), q, "[line 3 column")


def test_info_csv_wrong_column_count(tmp_path):
    text = info_csv().splitlines()
    text[3] = text[3] + ",extra"
    d = write(tmp_path / "c", info="\n".join(text) + "\n")
    bad(CityFormatError, lambda: import_city(d), d / "Tiny_1_info.csv", "[line 4]", "8 columns, expected 7")


def test_info_csv_bad_number(tmp_path):
    text = info_csv().splitlines()
    text[2] = text[2].replace("22.3001", "abc", 1)
    assert "abc" in text[2]
    d = write(tmp_path / "c", info="\n".join(text) + "\n")
    bad(CityFormatError, lambda: import_city(d), d / "Tiny_1_info.csv", "[line 3]", "column lat: not a number: 'abc'")


def test_info_csv_node_without_edges(tmp_path):
    d = write(tmp_path / "c", info=info_csv(['n9.jpg,114.1801,22.3002,2019,5,12.0,"[1.0]"']))
    bad(CityFormatError, lambda: import_city(d), d / "Tiny_1_info.csv", "[line 7]", "node n9.jpg has no edges")


def test_info_csv_missing_node(tmp_path):
    text = [l for l in info_csv().splitlines() if not l.startswith("n4.jpg")]
    d = write(tmp_path / "c", info="\n".join(text) + "\n")
    bad(CityFormatError, lambda: import_city(d), d / "Tiny_1_info.csv", "no row for node n4.jpg", "edge 4")


def test_unanchored_component(tmp_path):
    es = edges()
    extra = {"start_filename": "x1.jpg", "start_heading": 0.0, "start_walkable_headings": [90.0],
             "end_filename": "x2.jpg", "end_heading": 0.0, "end_walkable_headings": [270.0],
             "edge_azimuth": 90.0, "edge_distance": 10.0}
    back = dict(extra, start_filename="x2.jpg", end_filename="x1.jpg", start_walkable_headings=[270.0],
                end_walkable_headings=[90.0], edge_azimuth=270.0)
    d = write(tmp_path / "c", conn=es + [extra, back])
    c = import_city(d)  # an island no route touches is dropped and counted (issue 15), never fatal
    assert sorted(c.graph) == sorted(POS) and c.graph.number_of_edges() == len(es)
    assert c.meta.extra["dropped_islands"] == {"components": 1, "nodes": 2, "edges": 2, "examples": ["x1.jpg"]}


def test_no_coordinates_at_all(tmp_path):
    d = write(tmp_path / "c", qs=False)
    bad(CityFormatError, lambda: import_city(d), d, "no node coordinates")


def test_load_foreign_unknown_node(tmp_path):
    d = write(tmp_path / "c")
    c = import_city(d)
    qs = questions()
    qs[1]["stage2_route"]["route"][1]["filename"] = "zzz.jpg"
    qs[1]["stage2_route"]["to"] = "zzz.jpg"
    qs[1]["to"] = "zzz.jpg"
    qs[1]["complete_route"][-1]["filename"] = "zzz.jpg"
    other = tmp_path / "other_questions.json"
    other.write_text(json.dumps(qs))
    bad(TaskFormatError, lambda: get_family("cityseeker").load_foreign(other, c), other, "[question 1 (question_idx 8)]", "unknown node 'zzz.jpg'")
