"""The core's two frozen suites (issue 14; the core ``helsinki-core`` was the default city then): ``helsinki-arena7-v2`` for the realistic render style and
``helsinki-arena7-v1`` for the flat one. Same city and tasks; each style's run resolves its own suite and its images
and fingerprint panoramas redraw bit for bit here (the renderer the suites were frozen on)."""

import gzip
import json
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from test_frozen_helsinki import home  # noqa: F401  (the core built once into a temporary home)
from urbanarena.cli.main import app
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.tasks.frozen import PACKAGE_DIR, frozen_for_city, load_frozen

V1, V2 = PACKAGE_DIR / "helsinki-arena7-v1", PACKAGE_DIR / "helsinki-arena7-v2"


def _tasks(fs, size):
    blob = gzip.decompress((fs.directory / fs.manifest["sizes"][size]["file"]).read_bytes())
    return json.loads(blob)["tasks"]


def _strip(task: dict, suite: str) -> str:
    """A task's JSON with its suite name taken out (ids and asset paths carry it) and without the city's name (a
    re-freeze on ``helsinki-core`` names the core so; the content hash pins the city)."""
    task = {**task, "city": {**task["city"], "name": None}}
    return json.dumps(task, sort_keys=True).replace(suite, "SUITE")


def test_v2_is_the_realistic_twin_of_v1():
    v1, v2 = load_frozen(V1), load_frozen(V2)
    assert v1.render_style == "flat" and v2.render_style == "realistic"
    assert v2.name == "helsinki-arena7-v2" and v2.city_hash == v1.city_hash
    assert v2.manifest["renderer"]["settings"]["style"] == "realistic"
    city = SimpleNamespace(name="helsinki-core", content_hash=v1.city_hash)
    assert frozen_for_city(city, "realistic").name == v2.name
    assert frozen_for_city(city, "flat").name == v1.name
    assert frozen_for_city(city).name == v2.name  # the default style is realistic
    for size in ("mini", "standard", "full"):
        a, b = v1.manifest["sizes"][size], v2.manifest["sizes"][size]
        assert a["by_family"] == b["by_family"] and a["tasks"] == b["tasks"]
        # the same tasks: equal once the suite name is taken out
        t1 = [_strip(t, f"helsinki-arena7-v1-{size}") for t in _tasks(v1, size)]
        t2 = [_strip(t, f"helsinki-arena7-v2-{size}") for t in _tasks(v2, size)]
        assert t1 == t2
        # other pixels: every landmark photo differs between the styles
        refs = [k for k, v in a["assets"].items() if v["kind"] == "reference_view"]
        assert refs
        for k in refs:
            k2 = k.replace("-v1-", "-v2-")
            assert b["assets"][k2]["params"] == a["assets"][k]["params"]
            assert b["assets"][k2]["pixel_sha256"] != a["assets"][k]["pixel_sha256"]
    assert set(v1.manifest["panorama_fingerprint"]) == set(v2.manifest["panorama_fingerprint"])
    assert not set(v1.manifest["panorama_fingerprint"].values()) & set(v2.manifest["panorama_fingerprint"].values())


@pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")
@pytest.mark.acceptance  # runs and verifies two whole frozen suites (39 s): CI runs it in its acceptance step
@pytest.mark.parametrize("style,suite", [("flat", "helsinki-arena7-v1"), ("realistic", "helsinki-arena7-v2")])
def test_each_style_runs_and_verifies_its_suite(home, monkeypatch, tmp_path, style, suite):
    monkeypatch.setenv("URBANARENA_HOME", str(home))
    run_dir = tmp_path / f"oracle-{style}"
    r = CliRunner().invoke(app, ["run", "--city", "helsinki-core", "--tasks", "mini", "--agent", "oracle", "--workers", "2",
                                 "--render-style", style, "--out", str(run_dir)])
    assert r.exit_code == 0, r.output
    meta = json.loads((run_dir / "run.json").read_text())
    check = meta["tasks"]["suite_check"]
    assert check["frozen_suite"] == suite and check["render_style"] == style
    assert check["matches"] is True, {k: v for k, v in check.items() if "renderer" not in k}
    assert check["panoramas_checked"] == 8
    s = CliRunner().invoke(app, ["summary", str(run_dir), "--json"])
    summary = json.loads(s.output)
    assert summary["render_style"] == style and summary["metrics"]["evaluation_score"] == pytest.approx(100.0)
