"""``landmark_image`` on real pictures: references cut from other real pictures (issue 26 item 3).

Cities: ``city from-frames --osm`` on re-projected copies of the real GeoVisio frame (``tests/video_util.py``:
``1.jpg`` reduced and turned in yaw) placed every 7 m along a loop of the hand-written grid
``tests/data/panoramax_grid.osm``; and a Panoramax city from the fake STAC server (``tests/panoramax_fake.py``)
to which a later sequence of reference pictures is added. Reference pictures are more yaw-shifted copies placed
by hand around the goal POIs.

Hand-worked geometry (grid metres, x east, y north): Pharmacie Centrale (OSM node at (12, -7)) sits in the
south-east building (x 10..40, y -15..15); its street-facing facade is the west wall x = 10, so its facade point
is (10, -7) with the outward normal to the west (azimuth 270). Pose nodes of the loop lie on x = 0 at
y = -25 + 7k. For the references of the CSV (camera -> facade point):

* ``good``     (-5, -7):  15.0 m, 0 degrees off the normal, nearest node (0, -4) at 5.83 m: **chosen**;
* ``close``    (7, -7):   3.0 m: below 5 m;
* ``oblique``  (5, 20):   27.46 m, atan(27/5) = 79.5 degrees off the normal: above 60;
* ``behind``   (45, -7):  35 m, 180 degrees (behind the building);
* ``inside``   (-20, -7): 30 m, 0 degrees, but inside the south-west building (x -40..-10, y -15..15);
* ``occluded`` (-20, 18): 39.05 m, 39.8 degrees; the sight line crosses y = 15 at x = -16.4, inside the
  south-west building;
* ``at_node``  (-1, -4):  1 m from the node at (0, -4): below 2.5 m;
* ``goal_copy`` (-5, -9): valid geometry, but the file is the goal node's own picture (same SHA-256).

Café de la Gare (facade (10, 7), normal west) is seen by ``good`` at 20.5 m, 43.0 degrees off the normal; Marché
Vert and Banque du Nord (north facades at y = 65) have no picture north of them: no task, counted.

What the pixels cannot tell (a storefront hidden by a bus, a changed shop) is not checked here or in the
product: the tests check that it is recorded and that generation refuses without the confirmation.
"""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from video_util import frame, offset

GRID_OSM = Path(__file__).parent / "data" / "panoramax_grid.osm"
LOOP = [(0, -25), (0, 75), (50, 75), (50, -25), (0, -25), (0, -10)]
REFS = {"good": (-5, -7), "close": (7, -7), "oblique": (5, 20), "behind": (45, -7), "inside": (-20, -7),
        "occluded": (-20, 18), "at_node": (-1, -4), "goal_copy": (-5, -9)}
EXPECTED = {"close": "not 5-40 m from the facade point", "oblique": "more than 60 degrees off the facade's normal",
            "behind": "more than 60 degrees off the facade's normal", "inside": "inside an OSM building",
            "occluded": "the line of sight crosses an OSM building", "at_node": "closer than 2.5 m to a pose node",
            "goal_copy": "a pose node's own picture"}


def _geo(shared_dir):
    g = shared_dir / "data" / "panoramas" / "geovisio"
    if not (g / "1.jpg").is_file():
        pytest.skip("../shared/data/panoramas/geovisio not found: real frames absent")
    return g


def _along(s: float) -> tuple[float, float]:
    for (a, b), (c, e) in zip(LOOP, LOOP[1:]):
        L = math.hypot(c - a, e - b)
        if s <= L:
            return a + (c - a) * s / L, b + (e - b) * s / L
        s -= L
    raise ValueError(s)


@pytest.fixture(scope="module")
def loop(shared_dir, tmp_path_factory):
    """The frames city of the loop (module docstring) and the reference-picture CSV."""
    from urbanarena.cli.main import app
    from urbanarena.world.city_io import load_city

    _geo(shared_dir)
    root = tmp_path_factory.mktemp("realrefs")
    d = root / "frames"
    d.mkdir()
    total = sum(math.hypot(c - a, e - b) for (a, b), (c, e) in zip(LOOP, LOOP[1:]))
    rows, pos, k = [], {}, 0
    while 7.0 * k <= total:
        xy = _along(7.0 * k)
        name = f"{k:03d}.jpg"
        Image.fromarray(frame(k)).save(d / name, quality=90)
        lat, lon = offset(*xy)
        rows.append([name, f"{lat:.9f}", f"{lon:.9f}", "0"])
        pos[name] = xy
        k += 1
    with open(d / "m.csv", "w", newline="") as f:
        csv.writer(f).writerows([["filename", "lat", "lon", "heading"], *rows])
    r = CliRunner().invoke(app, ["city", "from-frames", "--csv", str(d / "m.csv"), "--out", str(root / "city"),
                                 "--osm", str(GRID_OSM)])
    assert r.exit_code == 0, r.output
    city = load_city(root / "city")
    # the goal node of Pharmacie Centrale: the node nearest its front point (0, -7) is (0, -4) = frame 3
    assert pos["003.jpg"] == (0.0, -4.0)
    rd = root / "refs"
    rd.mkdir()
    ref_rows = []
    for i, (name, xy) in enumerate(REFS.items()):
        if name == "goal_copy":
            shutil.copy(d / "003.jpg", rd / f"{name}.jpg")
        else:
            Image.fromarray(frame(100 + 5 * i)).save(rd / f"{name}.jpg", quality=90)
        lat, lon = offset(*xy)
        ref_rows.append([f"{name}.jpg", f"{lat:.9f}", f"{lon:.9f}", f"{(40 * i) % 360}", "CC-BY-4.0",
                         f"Ref Author {i}"])
    with open(rd / "refs.csv", "w", newline="") as f:
        csv.writer(f).writerows([["filename", "lat", "lon", "heading", "licence", "author"], *ref_rows])
    return {"root": root, "city": city, "pos": pos, "csv": rd / "refs.csv", "frames": d}


def _local(city, x, y):
    """Grid metres (around the grid origin) -> the city's local frame (centred on its own area), via lat/lon."""
    return tuple(float(v) for v in city.frame.to_xy(*offset(x, y)))


def _poi(city, name):
    return next(p for p in city.annotations.pois if p.name == name)


def test_each_rule_as_worked_by_hand(loop):
    from urbanarena.tasks.generators.real_references import ReferenceFinder, read_reference_pictures

    city = loop["city"]
    pics = {p.id: p for p in read_reference_pictures(loop["csv"])}
    assert set(pics) == {f"{n}.jpg" for n in REFS}
    assert pics["good.jpg"].licence == "CC-BY-4.0" and pics["good.jpg"].author == "Ref Author 0"
    finder = ReferenceFinder(city, pics.values(), confirmed=True)
    ph = _poi(city, "Pharmacie Centrale")
    assert ph.facade_xy == pytest.approx(_local(city, 10.0, -7.0), abs=0.05)
    assert city.annotations.facade(ph.facade_id).normal_deg == pytest.approx(270.0, abs=0.5)
    got = {n: finder.check(ph, pics[f"{n}.jpg"]) for n in REFS}
    for n, why in EXPECTED.items():
        assert got[n] == why, (n, got[n])
    good = got["good"]
    assert good["distance_m"] == pytest.approx(15.0, abs=0.05)
    assert good["incidence_deg"] == pytest.approx(0.0, abs=0.5)
    assert good["nearest_node_m"] == pytest.approx(math.hypot(5, 3), abs=0.05)
    assert good["bearing_deg"] == pytest.approx(90.0, abs=0.3)  # looking east at the facade
    cafe = finder.check(_poi(city, "Café de la Gare"), pics["good.jpg"])
    assert cafe["distance_m"] == pytest.approx(math.hypot(15, 14), abs=0.05)
    assert cafe["incidence_deg"] == pytest.approx(math.degrees(math.atan2(14, 15)), abs=0.5)
    # the occluded camera is fine geometrically but for the building: distance and angle as worked
    x, y = REFS["occluded"]
    assert math.hypot(x - 10, y + 7) == pytest.approx(39.05, abs=0.01) and math.hypot(x - 10, y + 7) <= 40
    assert math.degrees(math.atan2(25, 30)) < 60
    assert -40 < x + (10 - x) * (18 - 15) / 25 < -10  # where the ray crosses y = 15: inside the building
    # the city's own frames are refused as references: each node's by its file, a frame merged into a node at
    # the loop's join (not a node itself) by its position
    own = [finder.check(ph, p) for p in read_reference_pictures(loop["frames"] / "m.csv")]
    assert set(own) <= {"a pose node's own picture", "closer than 2.5 m to a pose node"}
    assert own.count("a pose node's own picture") == city.graph.number_of_nodes()


def test_suite_uses_the_chosen_pictures_counts_the_rest_and_the_oracle_solves(loop):
    py360convert = pytest.importorskip("py360convert")
    from urbanarena.agents.arena_oracle import ArenaOracleSolver
    from urbanarena.tasks.generators.real_references import ReferenceFinder, read_reference_pictures
    from urbanarena.tasks.generators.suite import generate_suite

    city = loop["city"]
    finder = ReferenceFinder(city, read_reference_pictures(loop["csv"]), confirmed=True)
    res = generate_suite(city, per_family=4, seed=0, kinds=("landmark_image",), solver=ArenaOracleSolver(city),
                         real_references=finder)
    fam = res.report["families"]["landmark_image"]
    tasks = res.task_file.tasks
    assert tasks and fam["produced"] == len(tasks), fam
    names = {p.id: p.name for p in city.annotations.pois}
    refs = fam["reference_pictures"]
    assert {names[i] for i in refs["pois_with_reference"]} == {"Pharmacie Centrale", "Café de la Gare"}
    assert {names[i] for i in refs["pois_without_reference"]} >= {"Marché Vert", "Banque du Nord"}
    assert fam["rejected"]["no real reference picture meets the rules (distance, angle, OSM occlusion, not a "
                           "pose node's)"] == len(refs["pois_without_reference"])
    node_files = set(city.graph.nodes)
    for t in tasks:
        view = t.extra["reference_view"]
        assert view["kind"] == "real_picture" and view["picture_id"] == "good.jpg"
        assert view["picture_id"] not in node_files and "path" not in view
        assert (view["licence"], view["author"], view["source"]) == ("CC-BY-4.0", "Ref Author 0", "reference_pictures")
        assert abs(view["poi_offset_deg"]) <= 30.0 and view["hfov_deg"] == 90.0
        assert t.extra["reference_check"]["visibility_in_pixels"] == "not checked"
        assert all(r["solved"] for r in t.extra["oracle"]), t.extra["oracle"]
        assert names[t.extra["poi_id"]] in ("Pharmacie Centrale", "Café de la Gare")
        # the image: the view cut from good.jpg towards the POI, as py360convert cuts it independently
        img = np.asarray(Image.open(io.BytesIO(res.assets[t.extra["reference_images"][0]])).convert("RGB"))
        assert img.shape == (480, 640, 3)
        pano = np.asarray(Image.open(loop["csv"].parent / "good.jpg").convert("RGB"))
        f_px = 320 / math.tan(math.radians(45))
        fov = (2 * math.degrees(math.atan(319.5 / f_px)), 2 * math.degrees(math.atan(239.5 / f_px)))
        u = (view["yaw_deg"] - view["picture_heading_deg"] + 180) % 360 - 180
        ref = py360convert.e2p(pano, fov, u, 0.0, (480, 640)).astype(np.float32)
        off = py360convert.e2p(pano, fov, u + 40.0, 0.0, (480, 640)).astype(np.float32)
        assert np.abs(img.astype(np.float32) - ref).mean() < 6.0
        assert np.abs(img.astype(np.float32) - off).mean() > np.abs(img.astype(np.float32) - ref).mean() + 10


def test_unconfirmed_is_refused_and_cli_prints_the_missing(loop, tmp_path):
    from urbanarena.cli.main import app
    from urbanarena.tasks.generators.real_references import (
        LandmarkReferencesUnconfirmed, ReferenceFinder, read_reference_pictures)
    from urbanarena.tasks.generators.suite import generate_suite

    city = loop["city"]
    with pytest.raises(LandmarkReferencesUnconfirmed, match="--confirm-landmark-references"):
        generate_suite(city, per_family=2, kinds=("landmark_image",),
                       real_references=ReferenceFinder(city, read_reference_pictures(loop["csv"])))
    base = ["tasks", "generate", "--city", str(loop["root"] / "city"), "--per-family", "2"]
    run = CliRunner().invoke
    r = run(app, [*base, "--families", "landmark_image", "--reference-pictures", str(loop["csv"]),
                  "--out", str(tmp_path / "a.json")])
    assert r.exit_code == 2 and "--confirm-landmark-references" in r.output and "pixels" in r.output, r.output
    assert not (tmp_path / "a.json").exists()
    r = run(app, [*base, "--families", "landmark_image", "--out", str(tmp_path / "b.json")])
    assert r.exit_code == 2 and "--confirm-landmark-references" in r.output, r.output
    r = run(app, [*base, "--families", "landmark_image", "--confirm-landmark-references", "--out",
                  str(tmp_path / "c.json")])
    assert r.exit_code == 2 and "needs --reference-pictures" in r.output, r.output
    # default families, nothing given: landmark_image reported unavailable with the reason, the rest generated
    r = run(app, [*base, "--families", "landmark_language,landmark_image", "--confirm-landmark-references",
                  "--reference-pictures", str(loop["csv"]), "--out", str(tmp_path / "d.json")])
    assert r.exit_code == 0, r.output
    assert "real reference pictures: 2 goal POIs with one" in r.output and "without (no task made)" in r.output
    tf = json.loads((tmp_path / "d.json").read_text())
    kinds = [t["extra"]["task_kind"] for t in tf["tasks"]]
    assert "landmark_image" in kinds and "landmark_language" in kinds
    for t in tf["tasks"]:
        if t["extra"]["task_kind"] == "landmark_image":
            assert (tmp_path / t["extra"]["reference_images"][0]).is_file()
            assert str(loop["root"]) not in json.dumps(t)  # no local path in the task file
    # a bad reference picture names the file and the CSV line, and nothing is written
    cases = {"noheading.csv": (f"{loop['csv'].parent / 'good.jpg'},49.0,1.9,\n", "good.jpg [noheading.csv line 2]",
                               "no heading"),
             "flat.csv": (f"{tmp_path / 'flat.jpg'},49.0,1.9,10\n", "flat.jpg [flat.csv line 2]", "not a 2:1")}
    Image.new("RGB", (64, 48)).save(tmp_path / "flat.jpg")
    for name, (row, where, why) in cases.items():
        (tmp_path / name).write_text("filename,lat,lon,heading\n" + row)
        r = run(app, [*base, "--families", "landmark_image", "--confirm-landmark-references",
                      "--reference-pictures", str(tmp_path / name), "--out", str(tmp_path / "e.json")])
        assert r.exit_code == 2 and where in r.output and why in r.output, r.output
        assert not (tmp_path / "e.json").exists()


def test_panoramax_stac_references(shared_dir, tmp_path):
    """A Panoramax city from the fake STAC server; afterwards a later sequence (another date, author and
    licence) is published around the Pharmacie: its picture 5 m in front of the street (15 m from the facade)
    becomes the reference, one 0.5 m from the street's pictures is refused, and none of the city's own
    pictures is ever chosen (they come back from every search)."""
    pytest.importorskip("pystac_client", reason="the Panoramax client needs pystac-client (extra 'panoramax')")
    import warnings

    import panoramax_util as U
    from panoramax_fake import FakePanoramax, FakePicture, heading_pano, jpeg_bytes
    from urbanarena.agents.arena_oracle import ArenaOracleSolver
    from urbanarena.tasks.generators.real_references import PanoramaxPictures, ReferenceFinder
    from urbanarena.tasks.generators.suite import generate_suite
    from urbanarena.world.importers.panoramax.build import build_city_from_panoramax
    from urbanarena.world.importers.panoramax.client import PanoramaxClient

    _geo(shared_dir)
    with FakePanoramax(U.synthetic_sequences() + U.real_sequence(shared_dir)) as srv:
        client = PanoramaxClient(srv.url, cache_dir=tmp_path / "cache", page_size=200, backoff_s=0.01)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            city = build_city_from_panoramax(U.bbox(), U.GRID_OSM, "pmxref", client=client, spacing_m=3.0)
        later = []
        for k, (pid, (x, y)) in enumerate({"ref-front": (-5.0, -7.0), "ref-street": (-0.5, -2.5)}.items()):
            la, lo = U.ll(x, y)
            later.append(FakePicture(pid, "seq-later", la, lo, 0.0, f"2025-06-01T09:00:0{k}Z",
                                     jpeg_bytes(heading_pano(0.0, 256, seed=k)), licence="CC-BY-4.0",
                                     author="Later Author"))
        srv.pictures = sorted(srv.pictures + later, key=lambda p: (p.collection, p.datetime, p.id))
        srv.by_id = {p.id: p for p in srv.pictures}
        node_pics = set()
        for _, d in city.graph.nodes(data=True):
            node_pics.add(d["picture_id"])
            node_pics.update(d.get("merged_pictures") or [])
        finder = ReferenceFinder(city, searcher=PanoramaxPictures(city, client), confirmed=True)
        ph = _poi(city, "Pharmacie Centrale")
        opts = finder.options(None, ph)
        assert opts and opts[0][0].id == "ref-front"
        assert "ref-street" not in {p.id for p, _ in opts} and not node_pics & {p.id for p, _ in opts}
        assert opts[0][1]["distance_m"] == pytest.approx(15.0, abs=0.1)
        assert finder.rejections["a pose node's own picture"] > 0
        assert finder.rejections["closer than 2.5 m to a pose node"] >= 1
        res = generate_suite(city, per_family=3, seed=1, kinds=("landmark_image",),
                             solver=ArenaOracleSolver(city), real_references=ReferenceFinder(
                                 city, searcher=PanoramaxPictures(city, client), confirmed=True))
    tasks = res.task_file.tasks
    assert tasks, res.report["families"]["landmark_image"]
    for t in tasks:
        v = t.extra["reference_view"]
        assert v["picture_id"] not in node_pics and v["source"] == "panoramax"
        assert all(r["solved"] for r in t.extra["oracle"])
        if v["picture_id"] == "ref-front":
            assert (v["licence"], v["author"], v["sequence_id"]) == ("CC-BY-4.0", "Later Author", "seq-later")
            assert v["source_url"].endswith("/items/ref-front") and len(v["sha256"]) == 64
    assert "ref-front" in {t.extra["reference_view"]["picture_id"] for t in tasks}
    assert res.report["families"]["landmark_image"]["reference_pictures"]["panoramax_searches"] >= 1
