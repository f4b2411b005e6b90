"""``urbanarena tasks generate`` on the hand-written fixture: files written, bad input refused (exit 2),
and the written suite run end to end by the arena oracle through ``urbanarena run``."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from generate_util import fixture_city
from urbanarena.cli.main import app
from urbanarena.cli.tasks_cmd import tasks_app
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.tasks.families.cityarena import CityArenaFamily
from urbanarena.tasks.schema import load_task_file
from urbanarena.world.city_io import save_city


@pytest.fixture(scope="module")
def city_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("gencity") / "fixture"
    save_city(fixture_city(), d)
    return d


def generate(*args):
    return CliRunner().invoke(tasks_app, ["generate", *args])


def test_generate_writes_suite_images_and_report(city_dir, tmp_path):
    out = tmp_path / "suites" / "fx.json"
    r = generate("--city", str(city_dir), "--suite", "arena", "--per-family", "3", "--seed", "4", "--out", str(out))
    assert r.exit_code == 0, r.output
    # landmark_image needs the 3D renderer for its reference photos (reported unavailable without GL)
    gl = gl_unavailable_reason() is None
    n = 21 if gl else 18
    assert f"suite osm_generate_fixture-arena7-v1, {n} tasks" in r.output
    if gl:
        assert "landmark_image     3/3" in r.output
    else:
        assert "landmark_image     unavailable: no reference-photo renderer" in r.output
    tf = load_task_file(out)
    assert len(tf.tasks) == n and tf.city.content_hash == fixture_city().content_hash
    for t in tf.tasks:
        CityArenaFamily.check_task(t, base_dir=out.parent)
        assert t.provenance["seed"] == 4 and t.provenance["suite"] == "osm_generate_fixture-arena7-v1"
    rep = json.loads((out.parent / "fx.report.json").read_text())
    assert rep["verified"] is True and rep["protocols"] == ["cityarena-v1", "urbanarena-v1"]
    nav = [t for t in tf.tasks
           if t.extra["task_kind"] in ("landmark_language", "landmark_image", "map_navigation", "vln")]
    assert len(nav) == (12 if gl else 9) and all(all(v["solved"] for v in t.extra["oracle"]) for t in nav)
    # the same command again writes the same bytes
    first = out.read_bytes()
    assert generate("--city", str(city_dir), "--per-family", "3", "--seed", "4", "--out", str(out)).exit_code == 0
    assert out.read_bytes() == first


@pytest.mark.parametrize("args,msg", [
    (["--split", "train"], "no known split area"),
    (["--suite", "other"], "known suites: arena"),
    (["--per-family", "0"], "at least 1"),
    (["--families", "localization,teleport"], "unknown teleport"),
])
def test_bad_input_exit_2(city_dir, tmp_path, args, msg):
    out = tmp_path / "x.json"
    r = generate("--city", str(city_dir), "--out", str(out), *args)
    assert r.exit_code == 2 and msg in r.output and not out.exists()


def test_unknown_city_exit_2(tmp_path):
    r = generate("--city", "no-such-city-xyz", "--out", str(tmp_path / "x.json"))
    assert r.exit_code == 2 and r.output.startswith("error:")


def test_suite_runs_with_the_arena_oracle(city_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("URBANARENA_HOME", str(tmp_path / "home"))
    out = tmp_path / "fx.json"
    assert generate("--city", str(city_dir), "--per-family", "2", "--seed", "2", "--out", str(out),
                    "--families", "localization,map_navigation,vln,object_count").exit_code == 0
    runner = CliRunner()
    r = runner.invoke(app, ["run", "--city", str(city_dir), "--tasks", str(out), "--agent",
                            "urbanarena.agents.arena_oracle:ArenaOracleAgent", "--out", str(tmp_path / "run")])
    assert r.exit_code == 0, r.output
    s = runner.invoke(app, ["summary", str(tmp_path / "run"), "--json"])
    summary = json.loads(s.output)
    assert summary["episodes"] == 8
    assert summary["metrics"]["evaluation_score"] == pytest.approx(100.0)
