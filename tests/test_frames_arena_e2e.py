"""End to end on the real frames city: ``urbanarena city from-frames`` on the GoPro MAX frames
``../shared/data/panoramas/geovisio/1..4.jpg`` (5760 x 2880, MIT, one ~7.3 m trajectory), a hand-written
``cityarena`` task file, ``urbanarena run --agent vlm-arena`` against a scripted fake OpenAI-compatible
server (real ``openai`` SDK), then ``summary --json`` and ``export --format cityarena-csv``.

Expected values are worked here from the frames' own EXIF (GPS position, ``GPSImgDirection``) with pyproj
geodesics, independently of the importer and the env:

* ``geo/nav`` (map navigation, frame 1 -> frame 4, coordinate_match with a 1 m radius so the walk matters;
  the 20 m default would accept the start, 7.3 m away): start at 1.jpg facing the course to 2.jpg (yaw
  = azimuth 1->2). Replies: D MEDIUM (yaw +60), W MEDIUM (4 m: passes 2.jpg, where the body and camera turn
  by (az 2->3 - az 1->2), and stops 4 - d12 m along 2->3, past its middle: the view comes from 3.jpg),
  A MEDIUM (yaw -60), E SMALL (pitch -30), W LARGE (the rest of 2->3, a turn at 3.jpg, 3->4, then the dead
  end stops it at 4.jpg), Q MEDIUM (pitch +30), ANSWER. Final position = frame 4, distance 0 < 1 m: score 1.
* ``geo/count`` (counting, MRA): start at 4.jpg facing back to 3.jpg; expected ``3``, answered ``4`` (a bare
  number: under ``cityarena-v1`` a count is one number literal, as 360CityArena's validator reads it):
  relative error 1/3 is below 1 - theta for theta in {0.50, 0.55, 0.60, 0.65} only, so MRA = 0.4.

Every camera view the server received (decoded from the request's JPEG) is compared with a cut made
independently by ``py360convert.e2p`` from the full-resolution photo at the same angles (mapping as in
``test_render_views``: ``u_deg`` = compass yaw - GPSImgDirection, ``v_deg`` = pitch, fov through the outer
pixel centres): per-channel means within 1.5 grey levels and 8 x 8-block means within 2.5 levels on
average, while a cut 30 degrees off differs by more than 20 levels. The env renders from panoramas decoded
at the width matching the view (2012 px, ``env/observers.py``), so this also checks that the reduced
decode keeps the view.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import math
import re
from fractions import Fraction
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image
from pyproj import Geod

from fakes import FakeOpenAIServer
from test_run_vlm_arena import body_texts, db_rows, invoke
from urbanarena.world.city_io import load_city
from vlm_util import reply

GEOD = Geod(ellps="WGS84")
FRAMES = ("1.jpg", "2.jpg", "3.jpg", "4.jpg")
W, H, HFOV = 640, 360, 90.0
NAV_TEXT = "Walk to the end of the path shown on the map, then answer."
COUNT_TEXT = "How many parked cars can you see? Answer with a number."
PLANS = {
    NAV_TEXT: [reply("D", "MEDIUM"), reply("W", "MEDIUM"), reply("A", "MEDIUM"), reply("E", "SMALL"),
               reply("W", "LARGE"), reply("Q", "MEDIUM"), reply("ANSWER", "I reached the end of the path")],
    COUNT_TEXT: [reply("ANSWER", "4")],
}


def script(body, n):
    system = body["messages"][0]["content"]
    key = next(k for k in PLANS if k in system)
    step = int(re.search(r"This is step (\d+)\.", "\n".join(body_texts(body))).group(1))
    return PLANS[key][step - 1]


def exif(path: Path) -> tuple[float, float, float]:
    """(lat, lon, GPSImgDirection) straight from the file's GPS IFD."""
    gps = Image.open(path).getexif().get_ifd(0x8825)
    lat = sum(float(x) / 60**i for i, x in enumerate(gps[2])) * (-1 if gps[1] == "S" else 1)
    lon = sum(float(x) / 60**i for i, x in enumerate(gps[4])) * (-1 if gps[3] == "W" else 1)
    return lat, lon, float(gps[17])


def wrap180(a: float) -> float:
    return (a + 180.0) % 360.0 - 180.0


def received_images(body) -> list[np.ndarray]:
    """The images of a recorded OpenAI request, decoded to RGB arrays."""
    out = []
    for m in body["messages"]:
        for p in m["content"] if isinstance(m["content"], list) else []:
            if p.get("type") == "image_url":
                data = base64.b64decode(p["image_url"]["url"].split(";base64,", 1)[1])
                out.append(np.asarray(Image.open(io.BytesIO(data)).convert("RGB")))
    return out


def block_means(img: np.ndarray) -> np.ndarray:
    return cv2.resize(img.astype(np.float32), (W // 8, H // 8), interpolation=cv2.INTER_AREA)


@pytest.fixture(scope="module")
def geo(shared_dir):
    d = shared_dir / "data" / "panoramas" / "geovisio"
    if not all((d / f).is_file() for f in FRAMES):
        pytest.skip("../shared/data/panoramas/geovisio/1..4.jpg not found: real data absent")
    return d


@pytest.fixture(scope="module")
def truth(geo):
    """Hand-worked geometry from EXIF: headings, course azimuths and distances between consecutive frames."""
    fix = {f: exif(geo / f) for f in FRAMES}
    az, dist = {}, {}
    for a, b in zip(FRAMES, FRAMES[1:]):
        fwd, back, d = GEOD.inv(fix[a][1], fix[a][0], fix[b][1], fix[b][0])
        az[a, b], az[b, a], dist[a, b] = fwd % 360.0, back % 360.0, d
    return {"fix": fix, "az": az, "dist": dist}


@pytest.fixture(scope="module")
def photos(geo):
    """Full-resolution RGB decodes of the photos the views come from (decoded once: ~0.3 s each)."""
    return {f: cv2.cvtColor(cv2.imread(str(geo / f)), cv2.COLOR_BGR2RGB) for f in ("1.jpg", "3.jpg", "4.jpg")}


@pytest.fixture(scope="module")
def run(geo, truth, tmp_path_factory, monkeypatch_module):
    root = tmp_path_factory.mktemp("frames_e2e")
    r = invoke("city", "from-frames", *[geo / f for f in FRAMES], "--out", root / "city", "--licence", "MIT",
               "--no-verify-pixels")
    assert r.exit_code == 0, r.output
    city = load_city(root / "city")
    ref = {"name": city.name, "content_hash": city.content_hash}
    az = truth["az"]
    tasks = [
        {"task_id": "geo/nav", "family": "cityarena", "city": ref, "difficulty": "easy", "category": "navigation",
         "start": {"node": "1.jpg", "heading_deg": az["1.jpg", "2.jpg"]},
         "goals": [{"node": "4.jpg", "label": "frame 4"}], "success_radius_m": 1.0, "instruction": NAV_TEXT,
         "extra": {"task_kind": "map_navigation", "requires_current_location": True, "map_id": "geovisio"}},
        {"task_id": "geo/count", "family": "cityarena", "city": ref, "difficulty": "easy", "category": "counting",
         "start": {"node": "4.jpg", "heading_deg": az["4.jpg", "3.jpg"]}, "answer": "3", "instruction": COUNT_TEXT,
         "extra": {"task_kind": "object_count"}},
    ]
    task_file = root / "tasks.json"
    task_file.write_text(json.dumps({"format": "urbanarena-tasks", "schema_version": 1, "city": ref, "tasks": tasks}))
    out = root / "run"
    with FakeOpenAIServer(script) as srv:
        r = invoke("run", "--city", root / "city", "--tasks", task_file, "--agent", "vlm-arena",
                   "--model", f"openai-compatible:{srv.base_url}:fake", "--out", out)
        log = list(srv.log)
    assert r.exit_code == 0, r.output
    return root, out, log


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    for k in ("OPENAI_COMPATIBLE_API_KEY", "OPENAI_API_KEY"):
        mp.delenv(k, raising=False)
    yield mp
    mp.undo()


def expected_views(truth) -> dict[str, list[tuple[str, float, float]]]:
    """(panorama frame, compass yaw, pitch) of the view in each request, worked from EXIF (module docstring)."""
    az, d = truth["az"], truth["dist"]
    y0 = az["1.jpg", "2.jpg"]
    turn2 = wrap180(az["2.jpg", "3.jpg"] - az["1.jpg", "2.jpg"])
    turn3 = wrap180(az["3.jpg", "4.jpg"] - az["2.jpg", "3.jpg"])
    offset = 4.0 - d["1.jpg", "2.jpg"]
    assert d["1.jpg", "2.jpg"] < 4.0 < d["1.jpg", "2.jpg"] + d["2.jpg", "3.jpg"] and offset > d["2.jpg", "3.jpg"] / 2
    y1 = y0 + 60.0
    y2 = y1 + turn2
    y3 = y2 - 60.0
    nav = [("1.jpg", y0, 0.0), ("1.jpg", y1, 0.0), ("3.jpg", y2, 0.0), ("3.jpg", y3, 0.0), ("3.jpg", y3, -30.0),
           ("4.jpg", y3 + turn3, -30.0), ("4.jpg", y3 + turn3, 30.0)]
    return {NAV_TEXT: nav, COUNT_TEXT: [("4.jpg", az["4.jpg", "3.jpg"], 0.0)]}


def test_episodes_end_where_the_exif_says(run, truth):
    _, out, _ = run
    rows = {x["task_id"]: x for x in db_rows(out)}
    nav, count = rows["geo/nav"], rows["geo/count"]
    d = truth["dist"]
    assert json.loads(nav["actions"]) == ["D MEDIUM", "W MEDIUM", "A MEDIUM", "E SMALL", "W LARGE", "Q MEDIUM",
                                          "ANSWER: I reached the end of the path"]
    details = json.loads(nav["details"])
    poses = details["poses"]
    # after W MEDIUM: on 2->3, 4 m - d12 from 2.jpg, its view from 3.jpg; after W LARGE: stopped at the dead end
    assert poses[1]["edge"] == ["2.jpg", "3.jpg"] and poses[1]["nearest_node"] == "3.jpg"
    assert poses[1]["offset_m"] == pytest.approx(4.0 - d["1.jpg", "2.jpg"], abs=1e-6)
    assert poses[4]["node"] == "4.jpg" and poses[4]["edge"] is None
    walked = d["1.jpg", "2.jpg"] + d["2.jpg", "3.jpg"] + d["3.jpg", "4.jpg"]
    assert details["env_counters"]["blocked_moves"] == 1 and 7.0 < walked < 7.5  # 4 m + the 3.35 m left < 7 m
    lat4, lon4, _ = truth["fix"]["4.jpg"]
    assert details["final_position"]["lat"] == pytest.approx(lat4, abs=1e-9)
    assert details["final_position"]["lon"] == pytest.approx(lon4, abs=1e-9)
    assert nav["status"] == "ANSWER" and nav["evaluation_metric"] == "coordinate_match"
    assert nav["distance_to_goal"] == pytest.approx(0.0, abs=1e-6) and nav["validation_threshold"] == 1.0
    assert (nav["evaluation_score"], nav["is_correct"], nav["scored_success"]) == (1.0, 1, 1)
    assert nav["task_type"] == "MapNavigation" and nav["steps"] == nav["llm_request_count"] == 7
    assert json.loads(nav["trajectory"]) == ["1.jpg", "1.jpg", "3.jpg", "3.jpg", "3.jpg", "4.jpg", "4.jpg", "4.jpg"]
    # counting: MRA 0.4 by hand (module docstring), not exactly right
    assert count["evaluation_metric"] == "mean_relative_accuracy" and count["user_answer"] == "4"
    assert (count["evaluation_score"], count["is_correct"], count["scored_success"]) == (0.4, 0, 0)
    mra = sum(1 for k in range(10) if Fraction(1, 3) < 1 - Fraction(50 + 5 * k, 100)) / 10
    assert count["evaluation_score"] == mra and count["task_type"] == "Counting"


def test_the_model_saw_perspective_cuts_of_the_real_photos(run, truth, photos):
    _, _, log = run
    py360convert = pytest.importorskip("py360convert")
    views = expected_views(truth)
    heading = {f: truth["fix"][f][2] for f in FRAMES}  # GPSImgDirection = bearing of the image centre column
    f_px = (W / 2) / math.tan(math.radians(HFOV) / 2)
    fov = (2 * math.degrees(math.atan((W - 1) / 2 / f_px)), 2 * math.degrees(math.atan((H - 1) / 2 / f_px)))
    seen = {NAV_TEXT: 0, COUNT_TEXT: 0}
    for rec in log:
        key = next(k for k in PLANS if k in rec.body["messages"][0]["content"])
        step = int(re.search(r"This is step (\d+)\.", "\n".join(body_texts(rec.body))).group(1))
        seen[key] += 1
        imgs = received_images(rec.body)
        sizes = [(im.shape[1], im.shape[0]) for im in imgs]
        assert sizes == [(W, H), (640, 640)]  # cityarena-v1: the location map goes with every kind but localization
        assert [(i.width, i.height, i.format) for i in rec.images] == [(w, h, "JPEG") for w, h in sizes]
        frame, yaw, pitch = views[key][step - 1]
        u = wrap180(yaw - heading[frame])
        ref = py360convert.e2p(photos[frame], fov, u, pitch, (H, W)).astype(np.float32)
        got = imgs[0].astype(np.float32)
        mean_diff = np.abs(got.reshape(-1, 3).mean(0) - ref.reshape(-1, 3).mean(0))
        block_mae = float(np.abs(block_means(got) - block_means(ref)).mean())
        assert mean_diff.max() < 1.5 and block_mae < 2.5, (key, step, frame, u, pitch, mean_diff, block_mae)
        off = py360convert.e2p(photos[frame], fov, wrap180(u + 30.0), pitch, (H, W)).astype(np.float32)
        assert float(np.abs(block_means(got) - block_means(off)).mean()) > 20.0
    assert seen == {NAV_TEXT: 7, COUNT_TEXT: 1}


def test_summary_and_cityarena_export(run, tmp_path):
    root, out, _ = run
    r = invoke("summary", out, "--json", "--resamples", 50)
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    assert s["episodes"] == 2 and s["family"] == "cityarena" and s["missing_scores"] == 0
    assert s["metrics"]["evaluation_score"] == pytest.approx(70.0)  # (1.0 + 0.4) / 2
    assert s["metrics"]["scored_success"] == pytest.approx(50.0) and s["metrics"]["steps"] == pytest.approx(4.0)
    assert s["fuzzy"]["answers"] == 0
    csv_path = tmp_path / "results.csv"
    r = invoke("export", out, "--format", "cityarena-csv", "--out", csv_path)
    assert r.exit_code == 0, r.output
    with open(csv_path, newline="") as f:
        recs = {x["task_id"]: x for x in csv.DictReader(f)}
    city = json.loads(invoke("city", "info", root / "city", "--json").stdout)
    assert city["nodes"] == 4
    nav = recs["geo/nav"]
    assert nav["task_type"] == "MapNavigation" and nav["map_id"] == "geovisio" and nav["status"] == "ANSWER"
    assert nav["scored_success"] == "true" and float(nav["evaluation_score"]) == 1.0 and nav["steps"] == "7"
    assert nav["final_segment_path"] == "4.jpg" and nav["landmark"] == "frame 4"
    assert recs["geo/count"]["evaluation_metric"] == "mean_relative_accuracy"
    assert float(recs["geo/count"]["evaluation_score"]) == 0.4 and recs["geo/count"]["is_correct"] == "false"
    assert str(root) not in csv_path.read_text()


def test_observer_decodes_at_the_view_matched_width(geo, tmp_path):
    """Default: 640 px at 90 degrees -> ceil(2 pi 320) = 2011 -> 2012 px (even); ``max_width=None``: full size."""
    from urbanarena.env.observers import panorama_observer_for
    from urbanarena.world.importers.frames import import_frames

    city = import_frames([geo / f for f in FRAMES[:2]], verify_pixels=False)
    obs = panorama_observer_for(city)
    assert obs.store.max_width == 2012 and obs.store.get("1.jpg").shape == (1006, 2012, 3)
    full = panorama_observer_for(city, max_width=None)
    assert full.store.max_width is None and full.store.get("1.jpg").shape == (2880, 5760, 3)


def test_view_matched_width_on_a_synthetic_panorama(tmp_path):
    """No real data needed: a 4096 x 2048 panorama is decoded at the view-matched width unless told otherwise.

    Hand-worked widths: 640 px at 90 deg: f = 320, ceil(2 pi 320) = ceil(2010.6) = 2011 -> 2012 (even);
    640 px at 60 deg: f = 320 / tan(30 deg) = 554.26, ceil(2 pi 554.26) = ceil(3482.5) = 3483 -> 3484;
    320 px at 30 deg: f = 160 / tan(15 deg) = 597.13, ceil(3751.9) = 3752. The views of a reduced and a
    full-size store agree (block means within 2 levels) for a smooth panorama.
    """
    from arena_util import straight_street
    from urbanarena.env.observers import panorama_observer_for, view_matched_width
    from urbanarena.env.arena_env import ArenaPose
    from urbanarena.world.imagery import attach_panorama_folder

    assert (view_matched_width(90.0, 640), view_matched_width(60.0, 640), view_matched_width(30.0, 320)) == (
        2012, 3484, 3752)
    yy, xx = np.mgrid[0:2048, 0:4096]
    pano = np.stack([xx * 255 // 4095, yy * 255 // 2047, (xx // 512 % 2) * 200 + 20], axis=-1).astype(np.uint8)
    city = straight_street()
    for n in city.graph.nodes:
        city.graph.nodes[n]["heading_deg"] = 0.0
    Image.fromarray(pano).save(tmp_path / "a.png", compress_level=1)
    city = attach_panorama_folder(city, tmp_path, files={n: "a.png" for n in city.graph.nodes})
    default = panorama_observer_for(city)
    assert default.store.get("a").shape == (1006, 2012, 3)
    assert panorama_observer_for(city, hfov_deg=60.0).store.get("a").shape == (1742, 3484, 3)
    assert panorama_observer_for(city, hfov_deg=30.0, width=320, height=180).store.get("a").shape == (1876, 3752, 3)
    assert panorama_observer_for(city, width=2048, height=1024).store.get("a").shape == (2048, 4096, 3)  # never enlarged
    full = panorama_observer_for(city, max_width=None)
    assert full.store.get("a").shape == (2048, 4096, 3)
    assert panorama_observer_for(city, max_width=1000).store.get("a").shape == (500, 1000, 3)
    with pytest.raises(ValueError):
        panorama_observer_for(city, max_width="full")
    pose = ArenaPose(0.0, 0.0, 0.0, 0.0, 40.0, 10.0, 40.0, "a", None, 0.0, "a", ())
    a, b = default(city, pose).astype(np.float32), full(city, pose).astype(np.float32)
    assert a.shape == b.shape == (360, 640, 3)
    assert float(np.abs(block_means(a) - block_means(b)).mean()) < 2.0
