"""Frozen suites (tasks/frozen.py) on the hand-written fixture city: freeze, materialize, hash checks that
detect another renderer's output, damaged files, the wrong city, and ``--tasks mini|default`` in a run."""

import gzip
import json
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from generate_util import fixture_city
from urbanarena.agents.arena_oracle import ArenaOracleSolver
from urbanarena.cli.main import app
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.tasks.frozen import FrozenSuiteError, freeze, frozen_for_city, load_frozen, user_dir
from urbanarena.tasks.frozen_materialize import describe_check, materialize
from urbanarena.world.city_io import load_city, save_city

pytestmark = pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")


@pytest.fixture(scope="module")
def frozen(tmp_path_factory):
    # the saved-and-loaded form, as every CLI command sees a city (an in-memory import differs from it by
    # ~1e-9 m in derived positions, enough to move an antialiased map pixel)
    city = load_city(save_city(fixture_city(), tmp_path_factory.mktemp("frozen_city") / "c"))
    d = tmp_path_factory.mktemp("frozen") / "suite"
    fs = freeze(city, d, sizes=("mini",), split=None, solver=ArenaOracleSolver(city))
    return city, fs


def test_manifest_and_materialize(frozen, tmp_path):
    city, fs = frozen
    m = fs.manifest
    entry = m["sizes"]["mini"]
    assert m["city"]["content_hash"] == city.content_hash and m["format_version"] == 1
    assert entry["suite_name"] == f"{city.name}-arena7-v1-mini"
    assert sum(entry["by_family"].values()) == entry["tasks"] and len(entry["by_family"]) == 7
    assert len(m["panorama_fingerprint"]) == 8
    kinds = {a["kind"] for a in entry["assets"].values()}
    assert kinds == {"grid_map", "start_goal_map", "reference_view"}
    path, check = materialize(fs, "mini", city, dest_root=tmp_path)
    data = json.loads(path.read_text())
    assert len(data["tasks"]) == entry["tasks"]
    assert all(t["task_id"].startswith(entry["suite_name"] + "/") for t in data["tasks"])
    assert check["matches"] and check["assets_checked"] == len(entry["assets"]) and check["panoramas_checked"] == 8
    assert describe_check(check) is None
    for rel in entry["assets"]:
        assert (path.parent / rel).is_file()
    # a second call reuses the materialized copy
    path2, check2 = materialize(fs, "mini", city, dest_root=tmp_path)
    assert path2 == path and check2 == check


def test_another_renderer_is_detected(frozen, tmp_path):
    """Reference photos drawn under other lighting (as another GL driver would draw different pixels) differ
    from the frozen hashes: every landmark_image asset is reported, and only those."""
    from urbanarena.render.scene3d.reference import render_reference

    city, fs = frozen

    def other(c, view):
        v = dict(view)
        v["lighting"] = {**(v.get("lighting") or {}), "sun_azimuth_deg": 10.0, "sun_elevation_deg": 12.0}
        img = render_reference(c, v).copy()
        # in rain the sun draws nothing (no direct light), and reference scheme 4 draws rain too: a corner 6 grey
        # levels darker (more than the coarse fingerprint's tolerance, tasks/frozen_tolerance.py) stands for
        # another driver's drawing, so every photo differs whatever its condition
        img[:60, :60] = np.clip(img[:60, :60].astype(int) - 6, 0, 255).astype(np.uint8)
        return img

    _, check = materialize(fs, "mini", city, dest_root=tmp_path, reference_renderer=other, check_panoramas=False)
    refs = sorted(r for r, a in fs.manifest["sizes"]["mini"]["assets"].items() if a["kind"] == "reference_view")
    assert sorted(check["assets_differ"]) == refs and not check["matches"]
    assert f"{len(refs)} of {check['assets_checked']} reference images" in describe_check(check)


def test_tampered_hash_and_damaged_file(frozen, tmp_path):
    city, fs = frozen
    d = tmp_path / "copy"
    shutil.copytree(fs.directory, d)
    m = json.loads((d / "manifest.json").read_text())
    rel = sorted(m["sizes"]["mini"]["assets"])[0]
    m["sizes"]["mini"]["assets"][rel]["pixel_sha256"] = "0" * 64
    del m["sizes"]["mini"]["assets"][rel]["pixel_coarse"]  # else the same blocks count as within tolerance
    (d / "manifest.json").write_text(json.dumps(m))
    _, check = materialize(load_frozen(d), "mini", city, dest_root=tmp_path / "m1", check_panoramas=False)
    assert check["assets_differ"] == [rel]
    blob = bytearray(gzip.decompress((d / "mini.json.gz").read_bytes()))
    blob[200] = ord("#") if blob[200] != ord("#") else ord("%")
    (d / "mini.json.gz").write_bytes(gzip.compress(bytes(blob)))
    with pytest.raises(FrozenSuiteError, match="mini.json.gz: task file sha256 differs"):
        materialize(load_frozen(d), "mini", city, dest_root=tmp_path / "m2")
    with pytest.raises(FrozenSuiteError, match="no size 'full'"):
        materialize(fs, "full", city, dest_root=tmp_path / "m3")


def test_wrong_city(frozen, tmp_path, monkeypatch):
    import copy

    city, fs = frozen
    monkeypatch.setenv("URBANARENA_HOME", str(tmp_path / "home"))
    with pytest.raises(FrozenSuiteError, match="no frozen task suite for city"):
        frozen_for_city(city)  # not installed in this home
    shutil.copytree(fs.directory, user_dir() / fs.name)
    moved = copy.deepcopy(city)
    n = sorted(moved.graph.nodes)[0]
    moved.graph.nodes[n]["lat"] += 1e-6
    moved.__dict__.pop("content_hash", None)  # a cached property: recompute for the edited copy
    assert moved.content_hash != city.content_hash
    with pytest.raises(FrozenSuiteError, match="was built on city .* with content hash"):
        frozen_for_city(moved)
    with pytest.raises(FrozenSuiteError, match="is for city hash"):
        materialize(fs, "mini", moved, dest_root=tmp_path)


def test_run_with_tasks_mini_and_default(frozen, tmp_path, monkeypatch):
    city, fs = frozen
    monkeypatch.setenv("URBANARENA_HOME", str(tmp_path / "home"))
    shutil.copytree(fs.directory, user_dir() / fs.name)
    assert frozen_for_city(city).name == fs.name
    city_dir = tmp_path / "city"
    save_city(city, city_dir)
    runner = CliRunner()
    r = runner.invoke(app, ["run", "--city", str(city_dir), "--tasks", "mini", "--agent", "oracle",
                            "--out", str(tmp_path / "run")])
    assert r.exit_code == 0, r.output
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    chk = meta["tasks"]["suite_check"]
    assert chk["matches"] is True, {k: v for k, v in chk.items() if "renderer" not in k}
    s = json.loads(runner.invoke(app, ["summary", str(tmp_path / "run"), "--json"]).output)
    assert s["tasks"] == fs.manifest["sizes"]["mini"]["tasks"]
    assert s["metrics"]["evaluation_score"] == pytest.approx(100.0)
    assert set(s["by_family"]) == set(fs.manifest["sizes"]["mini"]["by_family"])
    # default = the frozen mini suite: same tasks, already stored -> nothing new runs
    r = runner.invoke(app, ["run", "--city", str(city_dir), "--tasks", "default", "--agent", "oracle",
                            "--out", str(tmp_path / "run")])
    assert r.exit_code == 0 and "0 episodes run" in r.output, r.output


def test_newest_suite_is_the_default_and_older_ones_resolve_by_name(frozen, tmp_path, monkeypatch):
    """Two suites frozen on the same city: ``mini`` takes the highest version; ``<suite>-<size>`` names one."""
    from urbanarena.tasks.frozen import suite_version
    from urbanarena.tasks.resolve import resolve_task_set

    city, fs = frozen
    monkeypatch.setenv("URBANARENA_HOME", str(tmp_path / "home"))
    shutil.copytree(fs.directory, user_dir() / fs.name)
    newer = fs.name.rsplit("-v", 1)[0] + "-v12"  # 12 > 9: versions compare as numbers, not strings
    shutil.copytree(fs.directory, user_dir() / newer)
    m = json.loads((user_dir() / newer / "manifest.json").read_text())
    m["suite"] = newer
    (user_dir() / newer / "manifest.json").write_text(json.dumps(m))
    nine = fs.name.rsplit("-v", 1)[0] + "-v9"
    shutil.copytree(user_dir() / newer, user_dir() / nine)
    m["suite"] = nine
    (user_dir() / nine / "manifest.json").write_text(json.dumps(m))
    assert suite_version(newer) == 12 and suite_version("no-version") == 0
    assert frozen_for_city(city).name == newer
    assert frozen_for_city(city, name=fs.name).name == fs.name
    with pytest.raises(FrozenSuiteError, match="no frozen suite 'nope-v3'"):
        frozen_for_city(city, name="nope-v3")
    ts = resolve_task_set(f"{fs.name}-mini", city)
    assert len(ts.tasks) == fs.manifest["sizes"]["mini"]["tasks"] and ts.suite_check["matches"]
    assert ts.suite_check["frozen_suite"] == fs.name


def test_redraw_images_repins_pixels_and_keeps_task_files(frozen, tmp_path):
    """``tasks freeze --redraw-images``: a suite whose stored hashes no longer match this renderer (simulated by
    tampering one image hash and one fingerprint) gets the hashes of a fresh draw back, task files untouched,
    the reason recorded; a suite already matching reports 0 changes."""
    city, fs = frozen
    d = tmp_path / "copy"
    shutil.copytree(fs.directory, d)
    m = json.loads((d / "manifest.json").read_text())
    rel = sorted(m["sizes"]["mini"]["assets"])[0]
    good = m["sizes"]["mini"]["assets"][rel]["pixel_sha256"]
    node = sorted(m["panorama_fingerprint"])[0]
    good_pano = m["panorama_fingerprint"][node]
    m["sizes"]["mini"]["assets"][rel]["pixel_sha256"] = "0" * 64
    m["panorama_fingerprint"][node] = "1" * 64
    for k in ("coarse_fingerprint", "panorama_coarse"):  # a manifest frozen before the coarse fingerprints
        m.pop(k)
    for a in m["sizes"]["mini"]["assets"].values():
        a.pop("pixel_coarse")
    (d / "manifest.json").write_text(json.dumps(m))
    gz = (d / "mini.json.gz").read_bytes()
    city_dir = save_city(city, tmp_path / "city")
    r = CliRunner().invoke(app, ["tasks", "freeze", "--city", str(city_dir), "--out", str(d),
                                 "--redraw-images", "look changed"])
    assert r.exit_code == 0, r.output
    assert "1 images and 1 fingerprint panoramas changed" in r.output
    fs2 = load_frozen(d)
    assert fs2.manifest["sizes"]["mini"]["assets"][rel]["pixel_sha256"] == good
    assert fs2.manifest["panorama_fingerprint"][node] == good_pano
    # the redraw stores the coarse fingerprints (tasks/frozen_tolerance.py), the same as the freeze drew
    assert fs2.manifest["panorama_coarse"] == fs.manifest["panorama_coarse"]
    assert fs2.manifest["sizes"]["mini"]["assets"][rel]["pixel_coarse"] == fs.manifest["sizes"]["mini"]["assets"][
        rel]["pixel_coarse"]
    assert fs2.manifest["images_redrawn"][-1]["reason"] == "look changed"
    assert (d / "mini.json.gz").read_bytes() == gz
    _, check = materialize(fs2, "mini", city, dest_root=tmp_path / "m")
    assert check["matches"]
    r = CliRunner().invoke(app, ["tasks", "freeze", "--city", str(city_dir), "--out", str(d),
                                 "--redraw-images", "again"])
    assert r.exit_code == 0 and "0 images and 0 fingerprint panoramas changed" in r.output
    r = CliRunner().invoke(app, ["tasks", "freeze", "--city", str(city_dir), "--redraw-images", "x"])
    assert r.exit_code == 2 and "needs --out" in r.output


def test_frozen_references_show_their_goal(frozen):
    """A suite frozen now holds reference scheme 4: every landmark photo carries a passing goal-share check
    with its shares at the thresholds (freeze refuses it otherwise)."""
    from urbanarena.render.scene3d.goal_share import MIN_SIGN_SHARE, MIN_STOREFRONT_SHARE

    city, fs = frozen
    tasks = json.loads(gzip.open(fs.directory / "mini.json.gz").read())["tasks"]
    refs = [t for t in tasks if t["extra"]["task_kind"] == "landmark_image"]
    assert refs
    for t in refs:
        assert t["extra"]["reference_view"]["scheme"] == 4
        gs = t["extra"]["reference_check"]["goal_share"]
        assert gs["passed"] is True
        assert gs["sign"]["share"] >= MIN_SIGN_SHARE and gs["storefront"]["share"] >= MIN_STOREFRONT_SHARE
        assert gs["sign"]["visible_px"] > 0
