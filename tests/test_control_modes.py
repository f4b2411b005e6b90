"""Control modes of the VLM agents (``--blind``, ``--no-map``, ``--oracle-perception``) and the
geometric oracle behind the last one (:func:`urbanarena.env.perception.features_in_view`).

Geometry fixture (local metres; the T junction of ``arena_util``: s(0,-20) - j(0,0), w(-20,0), e(20,0)):
one building ``b1``, the square x in [5, 15], y in [5, 15]; POIs "Kahvila Sävy" on its south wall
(facade point (10, 5)), "Kirjakauppa Ruusu" on its north wall ((10, 15)), a standalone "Kioski" at
(-8, -4); objects: a bench (-3, -5), a tree (-30, -20), a street lamp (0, 40), a traffic sign
(18, 10) whose sight line from s passes exactly through the building's corner (15, 5), a bin (12, 20)
behind the building. Hand-worked from s looking north (yaw 0, 90 degree field of view, 50 m):

=================  ===================  =======================  ====================================
feature            bearing (deg)        distance (m)             verdict
=================  ===================  =======================  ====================================
bench (-3, -5)     atan2(-3, 15) -11.31 sqrt(234) = 15.297       seen
Kioski (-8, -4)    atan2(-8, 16) -26.57 sqrt(320) = 17.889       seen
Kahvila Sävy       atan2(10, 25) 21.80  sqrt(725) = 26.926       seen (the line ends at its own wall)
sign (18, 10)      atan2(18, 30) 30.96  sqrt(1224) = 34.986      seen (grazes the corner: boundary only)
bin (12, 20)       16.70                41.76                    hidden: x = 12k, y = 40k - 20 is inside
                                                                 the square for k in [0.625, 0.875]
Kirjakauppa Ruusu  atan2(10, 35) 15.95  36.40                    hidden: inside for k in [5/7, 1)
tree (-30, -20)    270 (-90 relative)   30                       outside the field of view
lamp (0, 40)       0                    60                       out of range
=================  ===================  =======================  ====================================
"""

from __future__ import annotations

import json
import math
import sqlite3

import numpy as np
import pytest
from typer.testing import CliRunner

from arena_util import t_junction
from fakes import FakeOpenAIServer
from urbanarena.agents.controls import (
    NO_IMAGE_TEXT, NO_MAP_TEXT, ControlMode, describe_features,
)
from urbanarena.cli.main import app
from urbanarena.env.perception import NoAnnotationsError, features_in_view
from urbanarena.runner.config import EpisodeConfig
from urbanarena.world.annotations import POI, Annotations, Building, StreetObject
from urbanarena.world.city_io import save_city
from vlm_util import t_city

runner = CliRunner()


# ------------------------------------------------------------------ fixture
def fixture_annotations(city) -> Annotations:
    def ll(x, y):
        lat, lon = city.frame.to_latlon(x, y)
        return float(lat), float(lon)

    ring = [(5.0, 5.0), (15.0, 5.0), (15.0, 15.0), (5.0, 15.0)]  # counter-clockwise
    b1 = Building("b1", "w1", [[ring]], [[[ll(*p)[::-1] for p in ring]]], 12.0, "default")

    def poi(pid, name, kind, xy, facade_xy):
        lat, lon = ll(*xy)
        return POI(pid, pid, name, "amenity" if kind == "cafe" else "shop", kind, xy[0], xy[1], lat, lon,
                   building_id="b1" if facade_xy else None, facade_xy=facade_xy)

    def obj(oid, typ, xy):
        lat, lon = ll(*xy)
        return StreetObject(oid, oid, typ, xy[0], xy[1], lat, lon)

    ann = Annotations(city.frame.origin_lat, city.frame.origin_lon)
    ann.buildings = [b1]
    ann.pois = [poi("p_south", "Kahvila Sävy", "cafe", (10.0, 8.0), (10.0, 5.0)),
                poi("p_north", "Kirjakauppa Ruusu", "books", (10.0, 12.0), (10.0, 15.0))]
    ann.standalone_pois = [poi("p_free", "Kioski", "kiosk", (-8.0, -4.0), None)]
    ann.objects = [obj("o_bench", "bench", (-3.0, -5.0)), obj("o_tree", "tree", (-30.0, -20.0)),
                   obj("o_lamp", "street_lamp", (0.0, 40.0)), obj("o_sign", "traffic_sign", (18.0, 10.0)),
                   obj("o_bin", "vending_machine", (12.0, 20.0))]
    return ann


@pytest.fixture(scope="module")
def geo_city():
    city = t_junction()
    city.annotations = fixture_annotations(city)
    return city


# ------------------------------------------------------------------ features_in_view (hand-worked)
def test_features_in_view_from_s_looking_north(geo_city):
    got = features_in_view(geo_city, (0.0, -20.0, 0.0), 90.0, 50.0)
    assert [f.id for f in got] == ["o_bench", "p_free", "p_south", "o_sign"]
    want = {"o_bench": (-11.3099, 15.2971), "p_free": (-26.5651, 17.8885), "p_south": (21.8014, 26.9258),
            "o_sign": (30.9638, 34.9857)}
    for f in got:
        rel, dist = want[f.id]
        assert f.relative_deg == pytest.approx(rel, abs=1e-3) and f.distance_m == pytest.approx(dist, abs=1e-3)
        assert f.bearing_deg == pytest.approx(rel % 360.0, abs=1e-3)
    names = {f.id: (f.name, f.category) for f in got}
    assert names["p_south"] == ("Kahvila Sävy", "amenity=cafe") and names["o_bench"] == (None, "bench")


def test_features_in_view_all_round_and_other_poses(geo_city):
    # all round from s: the tree (30 m, due west) joins; the lamp stays out of range, the two behind the building hidden
    ids = [f.id for f in features_in_view(geo_city, (0.0, -20.0, 0.0), 360.0, 50.0)]
    assert ids == ["o_bench", "p_free", "p_south", "o_tree", "o_sign"]
    # a wider range lets the lamp in (60 m due north)
    assert "o_lamp" in [f.id for f in features_in_view(geo_city, (0.0, -20.0, 0.0), 90.0, 61.0)]
    # from j looking east: the cafe's facade (bearing atan2(10, 5) = 63.4) is seen; the sign (bearing 60.9) is
    # behind the building now: y = 10x/18 is inside the square for x in [9, 15]
    got = {f.id: f for f in features_in_view(geo_city, (0.0, 0.0, 90.0), 90.0, 50.0)}
    assert set(got) == {"p_south"} and got["p_south"].relative_deg == pytest.approx(63.4349 - 90.0, abs=1e-3)
    # a camera standing inside the building (a passage) ignores that building: the cafe's facade 5 m south
    got = [f.id for f in features_in_view(geo_city, {"x_m": 10.0, "y_m": 10.0, "yaw_deg": 180.0}, 90.0, 50.0)]
    assert got[0] == "p_south"


def test_features_in_view_bad_input(geo_city):
    with pytest.raises(ValueError):
        features_in_view(geo_city, (0, 0, 0), 0.0)
    with pytest.raises(ValueError):
        features_in_view(geo_city, (0, 0, 0), 90.0, -1.0)
    with pytest.raises(NoAnnotationsError):
        features_in_view(t_junction(), (0, 0, 0))


# ------------------------------------------------------------------ the mode value and the config hash
def test_control_mode_values_and_parts():
    assert ControlMode.from_value("blind") == ControlMode(blind=True)
    assert ControlMode.from_value("no-map+oracle-perception").label() == "no-map+oracle-perception"
    assert ControlMode.from_value(None).is_normal and ControlMode.from_value("normal").is_normal
    with pytest.raises(ValueError):
        ControlMode(blind=True, oracle_perception=True)
    with pytest.raises(ValueError):
        ControlMode.from_value("deaf")
    img = np.zeros((4, 4, 3), np.uint8)
    assert [p.text for p in ControlMode(blind=True).parts("map", img)] == [NO_IMAGE_TEXT]
    assert [p.text for p in ControlMode(no_map=True).parts("reference_map", img)] == [NO_MAP_TEXT]
    assert type(ControlMode(no_map=True).parts("view", img)[0]).__name__ == "Image"
    with pytest.raises(ValueError):  # oracle perception needs the env's features for the camera view
        ControlMode(oracle_perception=True).parts("view", None, None)
    text = describe_features([{"name": "Kioski", "category": "shop=kiosk", "relative_deg": -26.57, "distance_m": 17.89},
                              {"name": None, "category": "bench", "relative_deg": 0.2, "distance_m": 15.3}])
    assert text.splitlines()[1:] == ['- "Kioski" (shop=kiosk): 27 deg left, 17.9 m', "- bench: ahead, 15.3 m"]


def test_config_hash_separates_control_modes():
    base = dict(protocol_id="cityarena-v1", max_steps=50, agent_name="vlm-arena", agent_config={"name": "vlm-arena"},
                family="cityarena", city_hash="c" * 64)
    normal = EpisodeConfig(**base)
    assert "control" not in normal.as_dict()  # normal configs keep the hash they had before control modes
    hashes = {normal.hash}
    for mode in ("blind", "no-map", "oracle-perception", "blind+no-map"):
        cfg = EpisodeConfig(**base, control=ControlMode.from_value(mode).as_dict())
        assert cfg.as_dict()["control"]["label"] == mode
        hashes.add(cfg.hash)
    assert len(hashes) == 5


# ------------------------------------------------------------------ requests through the CLI (fake server)
PLANS = {
    "Localise yourself": ['{"thought": "t", "action": "ANSWER", "memory": "", "answer": "x:1 y:2"}'],
    "Walk to the east end": ['{"thought": "t", "action": "W", "memory": "", "answer": "LARGE"}'] * 3
    + ['{"thought": "t", "action": "ANSWER", "memory": "", "answer": "here"}'],
}


def script(body, n):
    system = body["messages"][0]["content"]
    key = next(k for k in PLANS if k in system)
    text = json.dumps(body["messages"][1:])
    step = int(text.split("This is step ")[1].split(".")[0])
    return PLANS[key][step - 1]


def parts_of(rec) -> list[tuple[str, str]]:
    """The user turn's parts as ``(kind, text)``; images as ``("image", "")``."""
    out = []
    for p in rec.body["messages"][-1]["content"]:
        out.append(("text", p["text"]) if p["type"] == "text" else ("image", ""))
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same two-task run (localization with a grid map; landmark search with the current-location map)
    in normal, --blind, --no-map and --oracle-perception mode, into one RUN_DIR."""
    root = tmp_path_factory.mktemp("controls")
    city = t_city(root)
    city.annotations = fixture_annotations(city)
    city_dir = save_city(city, root / "city")
    from PIL import Image as PILImage

    (root / "refs").mkdir()
    PILImage.fromarray(np.full((40, 50, 3), (10, 200, 30), np.uint8)).save(root / "refs" / "grid.png")
    ref = {"name": city.name, "content_hash": city.content_hash}
    tasks = {"format": "urbanarena-tasks", "schema_version": 1, "city": ref, "tasks": [
        {"task_id": "t/loc", "family": "cityarena", "city": ref, "start": {"node": "s", "heading_deg": 0},
         "instruction": "Localise yourself on the 5 x 5 grid map and answer as x:N y:M.",
         "answer": "x:1 y:2", "answer_metric": "exact_match", "difficulty": "easy", "category": "localization",
         "extra": {"task_kind": "localization", "reference_images": ["refs/grid.png"]}},
        {"task_id": "t/land", "family": "cityarena", "city": ref, "start": {"node": "s", "heading_deg": 0},
         "goals": [{"node": "j", "label": "the junction"}], "difficulty": "easy", "category": "landmark",
         "instruction": "Walk to the east end of the street, then answer.",
         "extra": {"task_kind": "landmark_language", "requires_current_location": True}}]}
    task_file = root / "tasks.json"
    task_file.write_text(json.dumps(tasks), encoding="utf-8")
    out = root / "run"
    logs = {}
    with FakeOpenAIServer(script) as srv:
        for mode, flags in (("normal", []), ("blind", ["--blind"]), ("no-map", ["--no-map"]),
                            ("oracle-perception", ["--oracle-perception"])):
            n0 = len(srv.log)
            r = runner.invoke(app, ["run", "--city", str(city_dir), "--tasks", str(task_file), "--agent", "vlm-arena",
                                    "--model", f"openai-compatible:{srv.base_url}:fake", "--cache", "off",
                                    "--out", str(out), *flags], catch_exceptions=False)
            assert r.exit_code == 0, r.output
            logs[mode] = list(srv.log)[n0:]
    return city, out, logs


def by_task(log):
    out = {}
    for rec in log:
        key = "t/loc" if "Localise yourself" in rec.body["messages"][0]["content"] else "t/land"
        out.setdefault(key, []).append(rec)
    return out


def test_blind_requests_carry_no_image_and_the_same_text(runs):
    _, _, logs = runs
    normal, blind = by_task(logs["normal"]), by_task(logs["blind"])
    assert {k: len(v) for k, v in blind.items()} == {"t/loc": 1, "t/land": 4}
    for task in normal:
        for a, b in zip(normal[task], blind[task], strict=True):
            assert b.images == [] and a.images  # the normal run did send pictures
            assert b.body["messages"][0] == a.body["messages"][0]  # system prompt
            want = [("text", NO_IMAGE_TEXT) if kind == "image" else (kind, t) for kind, t in parts_of(a)]
            assert parts_of(b) == want


def test_no_map_requests_carry_the_view_but_no_map(runs):
    _, _, logs = runs
    normal, nomap = by_task(logs["normal"]), by_task(logs["no-map"])
    for task in normal:
        for a, b in zip(normal[task], nomap[task], strict=True):
            # normal: the view then the map (grid map / current-location map); no-map: the view only
            assert [(i.width, i.height) for i in a.images][0] == (640, 360) and len(a.images) == 2
            assert [(i.width, i.height) for i in b.images] == [(640, 360)]
            pa = parts_of(a)
            second_image = [i for i, p in enumerate(pa) if p[0] == "image"][1]
            want = [("text", NO_MAP_TEXT) if i == second_image else p for i, p in enumerate(pa)]
            assert parts_of(b) == want


def test_oracle_perception_requests_list_the_features_and_carry_no_image(runs):
    _, out, logs = runs
    from urbanarena.world.city_io import load_city

    city = load_city(out.parent / "city")  # the runner's city: node metres come back from WGS84 (within 1e-9 m)
    x, y = city.xy("s")
    normal, oracle = by_task(logs["normal"]), by_task(logs["oracle-perception"])
    expected_at_s = describe_features([f.to_dict() for f in features_in_view(city, (x, y, 0.0), 90.0, 50.0)])
    for task in normal:
        for k, (a, b) in enumerate(zip(normal[task], oracle[task], strict=True)):
            assert b.images == []
            texts = [t for kind, t in parts_of(b)]
            assert NO_MAP_TEXT in texts
            if k < 2:  # the first two requests of t/land (and t/loc's only one) are taken at s: nearest node s
                assert expected_at_s in texts
    first = "\n".join(t for _, t in parts_of(oracle["t/loc"][0]))
    assert "Kahvila Sävy" in first and "Kioski" in first and "Kirjakauppa Ruusu" not in first


def test_modes_have_their_own_configs_in_one_store(runs):
    _, out, _ = runs
    con = sqlite3.connect(out / "episodes.sqlite")
    rows = con.execute("SELECT config_hash, COUNT(*) FROM episodes GROUP BY config_hash").fetchall()
    con.close()
    assert len(rows) == 4 and all(n == 2 for _, n in rows)
    r = runner.invoke(app, ["summary", str(out)])
    assert r.exit_code == 2 and "control=blind" in r.output and "control=oracle-perception" in r.output
    meta = json.loads((out / "run.json").read_text())
    assert "--oracle-perception" in meta["command"]
    [cfg] = meta["configs"].values()
    assert cfg["control"]["label"] == "oracle-perception" and cfg["agent"]["config"]["control"]["oracle_perception"]


def test_bad_control_flags_exit_2(runs, tmp_path):
    city, out, _ = runs
    city_dir = out.parent / "city"
    task_file = out.parent / "tasks.json"
    r = runner.invoke(app, ["run", "--city", str(city_dir), "--tasks", str(task_file), "--agent", "random",
                            "--out", str(tmp_path / "o"), "--blind"])
    assert r.exit_code == 2 and "apply to VLM agents" in r.output
    r = runner.invoke(app, ["run", "--city", str(city_dir), "--tasks", str(task_file), "--agent", "vlm-arena",
                            "--model", "openai-compatible:http://127.0.0.1:9/v1:fake", "--out", str(tmp_path / "o"),
                            "--blind", "--oracle-perception"])
    assert r.exit_code == 2 and "exclude each other" in r.output
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------ CitySeeker protocol, blind, graph-only city
def test_cityseeker_blind_runs_without_imagery(monkeypatch, tmp_path):
    from urbanarena.agents.vlm import CitySeekerVLMAgent
    from urbanarena.runner.episode import EpisodeRunner
    from vlm_util import OPENAI_KEY, cross_city, graph_task, phase_script, server, spec

    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    stop = lambda v: json.dumps({"observation": "o", "thoughts": "t", "action": v})  # noqa: E731
    choice = json.dumps({"thoughts": "t", "observation": {c: "v" for c in "ABCD"}, "action": "B", "score": 0.7})
    city = cross_city(tmp_path, panoramas=False)  # no imagery at all
    with server("openai", phase_script([stop(0), stop(0), stop(1)], [json.dumps(
            {"thoughts": "t", "observation": {"A": "v"}, "action": "A", "score": 0.9}), choice])) as srv:
        factory = lambda: CitySeekerVLMAgent(spec("openai", srv), control="blind", timeout_s=5)  # noqa: E731
        res = EpisodeRunner(city, factory, "vlm-cityseeker").run(graph_task(city), 0, "cityseeker-v1", 10)
    assert res["error"] is None and res["trajectory"] == ["s", "c", "e"]
    assert len(srv.log) == 5 and all(rec.images == [] for rec in srv.log)
    crops_request = parts_of(srv.log[3])
    labels = [t for kind, t in crops_request if t.startswith("Image ")]
    assert labels == ["Image A:", "Image B:", "Image C:", "Image D:"]
    assert sum(t == NO_IMAGE_TEXT for _, t in crops_request) == 4
    assert res["agent_stats"]["trace"][0]["stop"] == 0 and math.isfinite(res["agent_stats"]["scores"][1])


def test_dry_run_counts_no_image_under_blind_and_oracle_perception(runs):
    _, out, _ = runs
    base = ["run", "--city", str(out.parent / "city"), "--tasks", str(out.parent / "tasks.json"), "--agent", "vlm-arena",
            "--model", "openai-compatible:http://127.0.0.1:9/v1:fake", "--out", str(out.parent / "dry"), "--dry-run"]
    normal = runner.invoke(app, base)
    assert normal.exit_code == 0, normal.output
    for flag in ("--blind", "--oracle-perception"):
        r = runner.invoke(app, [*base, flag])
        assert r.exit_code == 0, r.output
        assert "(images 0)" in r.output and "(images 0)" not in normal.output
    assert not (out.parent / "dry").exists()
