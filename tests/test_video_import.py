"""``city from-video``: sampling along a GPX track, blur and duplicate rejection, headings, joins, OSM annotations
(``--osm``) and bad inputs (issue 26 items 1-2).

Expected values are hand-worked: a track walked north at 5 m/s and a video at 10 fps put frame ``i`` at
``0.5 i`` metres along the track, so samples every 10 m are frames 0, 20, 40 ...; positions are recomputed with
pyproj's ``Geod.fwd`` from the track's first point; street names from the legs of the hand-written grid
``tests/data/panoramax_grid.osm``. What only a real capture would show (GPS noise, real motion blur, a camera not
facing forward) is not covered here.
"""

from __future__ import annotations

import csv
import math
from datetime import timedelta
from pathlib import Path

import pytest

pytest.importorskip("av", reason="reading videos needs PyAV (the 'video' extra; in '.[test]')")

import cv2  # noqa: E402
import networkx as nx  # noqa: E402
import typer  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from urbanarena.cli.frames_cmd import from_frames  # noqa: E402
from urbanarena.cli.video_cmd import from_video  # noqa: E402
from urbanarena.errors import CityFormatError  # noqa: E402
from urbanarena.world.city_io import load_city  # noqa: E402
from urbanarena.world.importers.video import import_video  # noqa: E402
from video_util import GEOD, LAT0, LON0, T0, frame, offset, polyline_track, write_gpx, write_video  # noqa: E402

GRID_OSM = Path(__file__).parent / "data" / "panoramax_grid.osm"
runner = CliRunner()
app = typer.Typer()
app.command("from-video")(from_video)
app.command("from-frames")(from_frames)

#: the loop around the south-east and north-east blocks of the grid, then 15 m again up its first leg
LOOP = [(0, -25), (0, 75), (50, 75), (50, -25), (0, -25), (0, -10)]
LEG_NAMES = ["Allée de la Gare", "Rue du Nord", "Allée Est", "Rue du Sud", "Allée de la Gare"]


def _straight(tmp_path, frames=None, n=100):
    """North 50 m in 10 s (5 m/s) from the origin; a 10 fps video starting with the track."""
    gpx = write_gpx(tmp_path / "t.gpx", [(LAT0, LON0, T0), (*offset(0, 50), T0 + timedelta(seconds=10))])
    video = write_video(tmp_path / "v.mp4", frames if frames is not None else [frame(i) for i in range(n)])
    return video, gpx


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def test_samples_every_n_metres_with_track_positions_and_headings(tmp_path):
    video, gpx = _straight(tmp_path)
    city = import_video(video, gpx, tmp_path / "city", spacing_m=10, licence="CC-BY-4.0", author="A. Tester")
    nodes = sorted(city.graph.nodes(data=True), key=lambda t: t[1]["frame_index"])
    assert [d["frame_index"] for _, d in nodes] == [0, 20, 40, 60, 80]
    _, _, length = GEOD.inv(LON0, LAT0, *reversed(offset(0, 50)))
    for _, d in nodes:
        i = d["frame_index"]
        s = length * i / 100  # arc length at t = i / 10 s of a 10 s track
        lon, lat, _ = GEOD.fwd(LON0, LAT0, 0.0, s)
        _, _, err = GEOD.inv(lon, lat, d["lon"], d["lat"])
        assert err < 1e-3
        assert min(d["heading_deg"], 360 - d["heading_deg"]) < 1e-6
        assert d["heading_source"] == "track"
        assert d["captured_at"] == (T0 + timedelta(seconds=i / 10)).isoformat().replace("+00:00", "Z")
        assert d["licence"] == "CC-BY-4.0" and d["author"] == "A. Tester"
    lengths = [e["length_m"] for _, _, e in city.graph.edges(data=True)]
    assert all(abs(x - 10.0) < 1e-3 for x in lengths)
    assert nx.is_weakly_connected(city.graph)
    saved = load_city(tmp_path / "city")
    assert saved.meta.imagery["source"] == "video"
    assert Path(saved.meta.imagery["root"]) == (tmp_path / "city" / "frames").resolve()
    assert sorted(p.name for p in (tmp_path / "city" / "frames").iterdir()) == [f"{k:06d}.jpg" for k in range(1, 6)]
    assert saved.meta.extra["video"]["samples"] == 5 and saved.meta.extra["video"]["frames_decoded"] == 100
    assert _leftovers(tmp_path) == []


def test_blurred_and_duplicate_frames_are_passed_over(tmp_path):
    frames = [frame(i) for i in range(100)]
    frames[20] = cv2.GaussianBlur(frames[20], (0, 0), 6)  # target 10 m: frame 21 (10.5 m) instead
    for i in range(38, 45):  # target 20 m: frames 40-44 repeat the last sample (frame 21): frame 45 instead
        frames[i] = frame(21)
    for i in range(60, 71):  # target 30 m: its whole window [30, 35] m is blurred: skipped
        frames[i] = cv2.GaussianBlur(frames[i], (0, 0), 6)
    video, gpx = _straight(tmp_path, frames)
    city = import_video(video, gpx, tmp_path / "city", spacing_m=10, blur_min_var=1000)
    assert sorted(d["frame_index"] for _, d in city.graph.nodes(data=True)) == [0, 21, 45, 80]
    rep = city.meta.extra["video"]
    assert (rep["skipped_blur"], rep["skipped_duplicate"], rep["skipped_no_frame"]) == (1, 0, 0)
    # with both checks off the same video gives the plain grid of samples
    city = import_video(video, gpx, tmp_path / "plain", spacing_m=10, blur_min_var=0, duplicate_max_diff=0)
    assert sorted(d["frame_index"] for _, d in city.graph.nodes(data=True)) == [0, 20, 40, 60, 80]


def test_time_offset_and_video_start_align_the_clocks(tmp_path):
    video, gpx = _straight(tmp_path)
    # the camera's clock is 3 s ahead of the GPS: video time 0 is track time 3 s (15 m)
    city = import_video(video, gpx, tmp_path / "c", spacing_m=10, time_offset_s=3.0)
    nodes = sorted(d["frame_index"] for _, d in city.graph.nodes(data=True))
    assert nodes == [0, 20, 40, 60]  # 15, 25, 35, 45 m; frame 70 ends the track at 50 m, frames 71-99 are after it
    assert city.meta.extra["video"]["after_track"] == 29
    city = import_video(video, gpx, tmp_path / "d", spacing_m=10, video_start="2021-07-29T11:16:42+02:00")
    # video time 0 is track time 2 s (10 m): samples at 10, 20, 30, 40, 50 m (frame 80 ends the track)
    assert sorted(d["frame_index"] for _, d in city.graph.nodes(data=True)) == [0, 20, 40, 60, 80]
    assert city.meta.extra["video"]["before_track"] == 0 and city.meta.extra["video"]["after_track"] == 19


def _nearest_node(city, lat, lon):
    best = None
    for n, d in city.graph.nodes(data=True):
        _, _, dist = GEOD.inv(lon, lat, d["lon"], d["lat"])
        if best is None or dist < best[0]:
            best = (dist, n)
    return best


def _leg_of(e: float, n: float) -> int | None:
    """Index of the LOOP leg (e, n) lies on, when more than 6 m from every corner."""
    if any(math.hypot(e - a, n - b) < 6 for a, b in LOOP[:5]):
        return None
    for k, ((a, b), (c, d)) in enumerate(zip(LOOP, LOOP[1:5])):
        if abs((c - a) * (n - b) - (d - b) * (e - a)) < 1e-6 * math.hypot(c - a, d - b) + 1e-3 and \
                min(a, c) - 1e-6 <= e <= max(a, c) + 1e-6 and min(b, d) - 1e-6 <= n <= max(b, d) + 1e-6:
            return k
    return None


def _loop_city(tmp_path, spacing_m=7.0, extra=()):
    pts, dur = polyline_track(LOOP, speed_mps=1.5)
    gpx = write_gpx(tmp_path / "loop.gpx", pts)
    video = write_video(tmp_path / "loop.mp4", [frame(i) for i in range(int(dur * 2) + 1)], fps=2)
    out = tmp_path / "loopcity"
    r = runner.invoke(app, ["from-video", str(video), "--gpx", str(gpx), "--out", str(out), "--spacing-m",
                            str(spacing_m), "--osm", str(GRID_OSM), "--licence", "CC-BY-4.0", "--author", "T", *extra])
    assert r.exit_code == 0, r.output
    return load_city(out), r.output


def _check_osm_join(city, track_positions):
    """Streets and POIs joined as a hand computation says (positions by pyproj; legs of the loop)."""
    ann = city.annotations
    names = {s.id: s.name for s in ann.streets}
    checked = 0
    for n, d in city.graph.nodes(data=True):
        leg = _leg_of(*track_positions[n])
        if leg is not None:
            assert names[d["street_id"]] == LEG_NAMES[leg], (n, track_positions[n])
            checked += 1
    assert checked >= 20
    for poi in list(ann.pois) + list(ann.standalone_pois):
        dist, node = _nearest_node(city, poi.front_lat, poi.front_lon)
        assert poi.node_id == node
        assert abs(poi.node_distance_m - dist) < 0.05
    for st in ann.streets:
        assert all(city.graph.nodes[n]["street_id"] == st.id for n in st.node_ids)


def test_loop_video_with_osm_is_one_city_where_place_families_generate(tmp_path):
    from urbanarena.tasks.generators.real_imagery import family_plan, is_real_imagery
    from urbanarena.tasks.generators.suite import generate_suite

    city, out = _loop_city(tmp_path, extra=("--confirm-object-annotation",))
    assert "join (merge)" in out
    assert nx.is_weakly_connected(city.graph)
    joins = city.meta.extra["joins"]
    assert [j["action"] for j in joins] == ["merge"] and joins[0]["distance_m"] < 4.0
    # positions along the loop from the arc length (hand-worked: legs of 100, 50, 100, 50, 15 m)
    pos = {}
    for n, d in city.graph.nodes(data=True):
        s = d["track_m"]
        for (a, b), (c, e) in zip(LOOP, LOOP[1:]):
            L = math.hypot(c - a, e - b)
            if s <= L + 1e-9:
                pos[n] = (a + (c - a) * s / L, b + (e - b) * s / L)
                break
            s -= L
    _check_osm_join(city, pos)
    assert "ODbL" in city.meta.licence and city.meta.source["osm"]["sha256"]
    assert is_real_imagery(city)
    plan = family_plan(city)
    assert not plan["landmark_image"]["buildable"] and plan["object_count"]["buildable"]
    res = generate_suite(city, per_family=3, seed=0)
    kinds = [t.extra["task_kind"] for t in res.task_file.tasks]
    for fam in ("localization", "landmark_language", "map_navigation", "relational", "object_count"):
        assert fam in kinds, (fam, res.report)
    assert "landmark_image" not in kinds


def test_frames_with_osm_on_real_frames(tmp_path, shared_dir):
    """from-frames --osm: re-projected copies of the real GeoVisio frame (yaw shifts) placed every 7 m along the
    loop by a CSV manifest, joined to the grid's annotations; and the four real frames themselves."""
    from PIL import Image

    from urbanarena.tasks.generators.suite import generate_suite

    geo = shared_dir / "data" / "panoramas" / "geovisio"
    if not (geo / "1.jpg").is_file():
        pytest.skip("../shared/data/panoramas/geovisio not found: real frames absent")
    d = tmp_path / "frames"
    d.mkdir()
    pos, rows, s = {}, [], 0.0
    total = sum(math.hypot(c - a, e - b) for (a, b), (c, e) in zip(LOOP, LOOP[1:]))
    k = 0
    while s <= total:
        rem = s
        for (a, b), (c, e) in zip(LOOP, LOOP[1:]):
            L = math.hypot(c - a, e - b)
            if rem <= L:
                xy = (a + (c - a) * rem / L, b + (e - b) * rem / L)
                break
            rem -= L
        name = f"{k:03d}.jpg"
        Image.fromarray(frame(k)).save(d / name, quality=90)
        lat, lon = offset(*xy)
        rows.append([name, f"{lat:.9f}", f"{lon:.9f}"])
        pos[name] = xy
        s += 7.0
        k += 1
    with open(d / "m.csv", "w", newline="") as f:
        csv.writer(f).writerows([["filename", "lat", "lon"], *rows])
    out = tmp_path / "fcity"
    r = runner.invoke(app, ["from-frames", "--csv", str(d / "m.csv"), "--out", str(out), "--osm", str(GRID_OSM)])
    assert r.exit_code == 0, r.output
    city = load_city(out)
    _check_osm_join(city, pos)
    kinds = [t.extra["task_kind"] for t in generate_suite(city, per_family=3, seed=0).task_file.tasks]
    for fam in ("localization", "landmark_language", "map_navigation", "relational"):
        assert fam in kinds
    assert "object_count" not in kinds  # not confirmed
    # the four real frames (x 0..1 m, y 0..7 m: on Allée de la Gare) with an explicit bbox
    out4 = tmp_path / "real4"
    r = runner.invoke(app, ["from-frames", *(str(geo / f"{i}.jpg") for i in range(1, 5)), "--out", str(out4),
                            "--osm", str(GRID_OSM),
                            "--bbox", "1.9185,49.0066,1.9199,49.0075"])
    assert r.exit_code == 0, r.output
    c4 = load_city(out4)
    names = {s.id: s.name for s in c4.annotations.streets}
    assert {names[d["street_id"]] for _, d in c4.graph.nodes(data=True)} == {"Allée de la Gare"}
    assert c4.meta.source["osm"]["bbox"] == [1.9185, 49.0066, 1.9199, 49.0075]


# ------------------------------------------------------------------ bad input
def _fails(tmp_path, args, *needles):
    out = tmp_path / "bad"
    r = runner.invoke(app, ["from-video", *map(str, args), "--out", str(out)])
    assert r.exit_code == 2, r.output
    for s in needles:
        assert s in r.output, (s, r.output)
    assert not out.exists() and _leftovers(tmp_path) == []
    return r.output


def test_bad_inputs_name_the_file_and_leave_nothing(tmp_path):
    video, gpx = _straight(tmp_path)
    _fails(tmp_path, [video], str(video), "no GPS track", "--gpx")
    # a track of the next day: no overlap; the message gives both spans and the offset that aligns them
    day2 = write_gpx(tmp_path / "day2.gpx", [(LAT0, LON0, T0 + timedelta(days=1)),
                                             (*offset(0, 50), T0 + timedelta(days=1, seconds=10))])
    _fails(tmp_path, [video, "--gpx", day2], str(video), "no overlap", "2021-07-29T09:16:40Z",
           "2021-07-30T09:16:40Z", "--time-offset-s +86400")
    trunc = tmp_path / "trunc.mp4"
    trunc.write_bytes(video.read_bytes()[: video.stat().st_size // 2])
    _fails(tmp_path, [trunc, "--gpx", gpx], str(trunc), "truncated")
    flat = write_video(tmp_path / "flat.mp4", [frame(i)[:, :160] for i in range(10)])
    _fails(tmp_path, [flat, "--gpx", gpx], str(flat), "160x128", "not a 2:1 equirectangular")
    one = write_gpx(tmp_path / "one.gpx", [(LAT0, LON0, T0)])
    _fails(tmp_path, [video, "--gpx", one], str(one), "2021-07-29T09:16:40Z", "at least 2")
    jump = write_gpx(tmp_path / "jump.gpx", [(LAT0, LON0, T0), (*offset(0, 5), T0 + timedelta(seconds=1)),
                                             (*offset(0, 2005), T0 + timedelta(seconds=2))])
    _fails(tmp_path, [video, "--gpx", jump], str(jump), "jump", "2021-07-29T09:16:41Z", "2000.0 m")
    nofix = write_gpx(tmp_path / "nofix.gpx", [(LAT0, LON0, T0), (0.0, 0.0, T0 + timedelta(seconds=1))])
    _fails(tmp_path, [video, "--gpx", nofix], str(nofix), "point 2", "no fix")
    ent = write_gpx(tmp_path / "ent.gpx", [(LAT0, LON0, T0), (*offset(0, 5), T0 + timedelta(seconds=1))],
                    extra='<!DOCTYPE gpx [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n')
    _fails(tmp_path, [video, "--gpx", ent], str(ent), "DOCTYPE")
    nostart = write_video(tmp_path / "nostart.mp4", [frame(i) for i in range(10)], start=None)
    _fails(tmp_path, [nostart, "--gpx", gpx], str(nostart), "creation_time", "--video-start")


def test_existing_city_dir_is_kept_unless_forced(tmp_path):
    video, gpx = _straight(tmp_path)
    out = tmp_path / "city"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    with pytest.raises(FileExistsError):
        import_video(video, gpx, out, spacing_m=10)
    assert (out / "keep.txt").is_file()
    # a failure after the work started leaves the old directory as it was
    with pytest.raises(CityFormatError):
        import_video(video, write_gpx(tmp_path / "one.gpx", [(LAT0, LON0, T0)]), out, spacing_m=10, overwrite=True)
    assert (out / "keep.txt").is_file() and _leftovers(tmp_path) == []
    import_video(video, gpx, out, spacing_m=10, overwrite=True)
    assert not (out / "keep.txt").exists() and (out / "city.json").is_file() and _leftovers(tmp_path) == []
