"""Issue 27 item 6: a run whose frozen reference images this machine draws differently is refused, not warned.

The fixture city's mini suite is frozen here, then one image hash in a copy of its manifest is replaced (as a
newer OpenCV would draw that map differently): ``run --tasks mini`` exits 2 naming the file and writes nothing
into RUN_DIR; ``--accept-redrawn-images`` (or the environment variable) runs it and records the acceptance."""

import json
import shutil

import pytest
from typer.testing import CliRunner

from generate_util import fixture_city
from urbanarena.agents.arena_oracle import ArenaOracleSolver
from urbanarena.cli.main import app
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.tasks.frozen import freeze, user_dir
from urbanarena.tasks.frozen_check import (
    ACCEPT_ENV, SuiteImagesDifferError, enforce_frozen_images, likely_reason,
)
from urbanarena.world.city_io import load_city, save_city

pytestmark = pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")


def _check(files, renderer=None, reference=None):
    return {"suite": "s-mini", "assets_checked": 9, "assets_differ": list(files), "panoramas_differ": [],
            "renderer": renderer, "reference_renderer": reference or {}, "matches": not files}


def test_enforce_names_files_reason_and_override(monkeypatch):
    monkeypatch.delenv(ACCEPT_ENV, raising=False)
    files = [f"maps/m{i}.png" for i in range(7)]
    ref = {"opencv": "5.0.0", "gl": {"GL_RENDERER": "llvmpipe (LLVM 15.0.6, 256 bits)"}}
    here = {"opencv": "5.1.0", "gl": {"GL_RENDERER": "NVIDIA H200"}}
    with pytest.raises(SuiteImagesDifferError) as e:
        enforce_frozen_images(_check(files, here, ref))
    msg = str(e.value)
    assert "7 of 9 reference images" in msg and "maps/m0.png" in msg and "maps/m4.png" in msg
    assert "maps/m5.png" not in msg and "and 2 more" in msg
    assert "OpenCV 5.1.0 here, 5.0.0 in the manifest" in msg and "NVIDIA H200" in msg
    assert "--accept-redrawn-images" in msg and "\n" not in msg  # the CLI prints the first line only
    ok = enforce_frozen_images(_check(files, here, ref), accept=True)
    assert ok["accepted_redrawn_images"] is True
    monkeypatch.setenv(ACCEPT_ENV, "1")
    assert enforce_frozen_images(_check(files, here, ref))["accepted_redrawn_images"] is True
    # nothing differs, or only the views (fingerprint panoramas): passed on untouched
    same = _check([])
    same["panoramas_differ"] = ["n1"]
    monkeypatch.delenv(ACCEPT_ENV)
    assert enforce_frozen_images(same) is same and "accepted_redrawn_images" not in same
    assert enforce_frozen_images(None) is None


def test_reason_reads_this_machines_opencv_when_no_panorama_was_drawn():
    import cv2

    assert likely_reason(_check(["a.png"], None, {"opencv": "0.0.1"})) == \
        f"OpenCV {cv2.__version__} here, 0.0.1 in the manifest"
    assert "no difference" in likely_reason(_check(["a.png"], None, {"opencv": cv2.__version__}))


@pytest.fixture(scope="module")
def tampered(tmp_path_factory):
    city = load_city(save_city(fixture_city(), tmp_path_factory.mktemp("refuse_city") / "c"))
    d = tmp_path_factory.mktemp("refuse") / "suite"
    fs = freeze(city, d, sizes=("mini",), split=None, solver=ArenaOracleSolver(city))
    m = json.loads((d / "manifest.json").read_text())
    rel = sorted(r for r, a in m["sizes"]["mini"]["assets"].items() if a["kind"] == "grid_map")[0]
    m["sizes"]["mini"]["assets"][rel]["pixel_sha256"] = "0" * 64
    del m["sizes"]["mini"]["assets"][rel]["pixel_coarse"]  # a real difference, not one within tolerance
    (d / "manifest.json").write_text(json.dumps(m))
    return city, fs, rel


def test_run_is_refused_then_accepted(tampered, tmp_path, monkeypatch):
    city, fs, rel = tampered
    monkeypatch.setenv("URBANARENA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(ACCEPT_ENV, "0")  # "0" refuses; and the flag's setting is undone after the test
    shutil.copytree(fs.directory, user_dir() / fs.name)
    city_dir = save_city(city, tmp_path / "city")
    run_dir = tmp_path / "run"
    runner = CliRunner()
    r = runner.invoke(app, ["run", "--city", str(city_dir), "--tasks", "mini", "--agent", "oracle",
                            "--out", str(run_dir)])
    assert r.exit_code == 2, r.output
    assert "1 of" in r.output and rel in r.output and "--accept-redrawn-images" in r.output
    assert not run_dir.exists() or not any(run_dir.iterdir())
    r = runner.invoke(app, ["run", "--city", str(city_dir), "--tasks", "mini", "--agent", "oracle",
                            "--out", str(run_dir), "--accept-redrawn-images"])
    assert r.exit_code == 0, r.output
    chk = json.loads((run_dir / "run.json").read_text())["tasks"]["suite_check"]
    assert chk["accepted_redrawn_images"] is True and chk["assets_differ"] == [rel] and chk["matches"] is False
    assert "accepted" in r.output
