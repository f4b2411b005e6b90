"""End to end on real data (CitySeeker HongKong_6 in ../shared): import through
the CITY grammar (cached), run the deterministic forward baseline on all 177
tasks with 2 workers, and read the summary. Published/re-run reference:
forward gives exactly 17/177 = 9.60 % TC-P@50 m and spd_cityseeker 100.6 +- 1
(CitySeeker published 100.8 over 8 cities)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from urbanarena import paths
from urbanarena.cli.main import app

pytestmark = pytest.mark.shared

runner = CliRunner()


def test_forward_on_hongkong6(shared_dir, tmp_path):
    d = shared_dir / "data" / "cityseeker" / "HongKong_6"
    city = f"cityseeker:{d}"
    r = runner.invoke(app, ["city", "info", city, "--json"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    info = json.loads(r.stdout)
    assert (info["nodes"], info["edges"], info["components"]) == (3601, 7926, 1)  # shared/README.md
    lon0, lat0, lon1, lat1 = info["bbox"]
    assert 113.8 < lon0 < lon1 < 114.5 and 22.1 < lat0 < lat1 < 22.6  # Hong Kong
    (entry,) = list(paths.imports_dir().iterdir())  # imported once, cached

    out = tmp_path / "fwd"
    r = runner.invoke(app, ["run", "--city", city, "--tasks", f"cityseeker:{d / 'question.json'}", "--agent", "forward",
                            "--seeds", "1", "--workers", "2", "--out", str(out)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "177 episodes run" in r.stdout
    assert list(paths.imports_dir().iterdir()) == [entry]  # the run reused the cache
    r = runner.invoke(app, ["summary", str(out), "--json", "--resamples", "200"], catch_exceptions=False)
    s = json.loads(r.stdout)
    assert s["protocol"] == "cityseeker-v1" and s["episodes"] == 177
    assert s["metrics"]["tc_proximity_50m"] == pytest.approx(100 * 17 / 177, abs=1e-9)
    assert abs(s["metrics"]["spd_cityseeker"] - 100.6) <= 1.0
    assert s["metrics"]["tc_exact"] <= 2.0
    assert s["metrics"]["avg_steps"] == 35.0
    assert set(s["by_category"]) >= {"two_stop", "basic_poi"}
    assert sum(g["episodes"] for g in s["by_difficulty"].values()) == 177
