"""``urbanarena demo``: builds the default city (the whole extract) into an empty home, runs its frozen mini suite
(v3) with the baselines and writes the report (a limited run to keep the test short); on the core, v1 (flat)."""

import json

import pytest
from typer.testing import CliRunner

from generate_util import helsinki_pbf_path
from urbanarena.cli.main import app
from urbanarena.render.scene3d.context import gl_unavailable_reason


@pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")
@pytest.mark.acceptance
def test_demo_builds_runs_and_reports(request, tmp_path_factory, tmp_path, monkeypatch):
    pbf = helsinki_pbf_path(request, tmp_path_factory)
    monkeypatch.setenv("URBANARENA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("URBANARENA_HELSINKI_PBF", str(pbf))
    out = tmp_path / "demo"
    r = CliRunner().invoke(app, ["demo", "--agents", "oracle,random", "--limit", "30", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "helsinki-arena7-v4-mini" in r.output and "© OpenStreetMap contributors" in r.output
    data = json.loads((out / "report.json").read_text())
    assert set(data["agents"]) == {"oracle", "random"}
    # the first 30 tasks of the frozen mini suite: 25 localization + 5 landmark_language
    assert {k: v["tasks"] for k, v in data["agents"]["oracle"]["by_family"].items()} == {
        "localization": 25, "landmark_language": 5}
    assert all(f["mean"] == 100.0 for f in data["agents"]["oracle"]["by_family"].values())
    md = (out / "report.md").read_text()
    assert "| localization (25) |" in md and "not comparable" in md
    assert data["suite_check"]["suite"] == "helsinki-arena7-v4-mini"  # the whole city's suite (realistic)
    # a second demo resumes: nothing new runs
    r2 = CliRunner().invoke(app, ["demo", "--agents", "oracle", "--limit", "30", "--out", str(out)])
    assert r2.exit_code == 0 and "0 run, 30 already stored" in r2.output, r2.output
    # the core in the flat style runs the v1 suite (the demo builds the built-in core too)
    flat = tmp_path / "demo-flat"
    r3 = CliRunner().invoke(app, ["demo", "--agents", "oracle", "--limit", "5", "--render-style", "flat",
                                  "--city", "helsinki-core", "--out", str(flat)])
    assert r3.exit_code == 0 and "helsinki-arena7-v1-mini" in r3.output, r3.output


def test_demo_checks_every_agent_name_before_building_or_running(tmp_path, monkeypatch):
    monkeypatch.setenv("URBANARENA_HOME", str(tmp_path / "home"))
    out = tmp_path / "demo"
    r = CliRunner().invoke(app, ["demo", "--agents", "oracle,orcale", "--out", str(out)])
    assert r.exit_code == 2 and "unknown agent 'orcale'" in r.stderr
    assert not out.exists() and not (tmp_path / "home").exists()  # nothing built, nothing run
