"""Acceptance on the shipped frozen suites of the core (``helsinki-arena7-v1``; the default city until issue 19,
now ``helsinki-core``): the core built here under its new name has the frozen content hash, and the oracle scores 100 % on every task of the ``mini`` and ``standard``
suites acting only through legal env actions (``--tasks mini`` / ``--tasks standard`` through the CLI)."""

import json
import sqlite3

import pytest
from typer.testing import CliRunner

from generate_util import saved_city_home
from urbanarena.cli.main import app
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.tasks.frozen import PACKAGE_DIR, load_frozen

SUITE = PACKAGE_DIR / "helsinki-arena7-v1"


@pytest.fixture(scope="module")
def home(request, tmp_path_factory):
    from urbanarena.world.default_city import HELSINKI_CORE_BBOX

    return saved_city_home(request, tmp_path_factory, HELSINKI_CORE_BBOX, "helsinki-core")


def test_frozen_suite_is_for_this_build(home, monkeypatch):
    monkeypatch.setenv("URBANARENA_HOME", str(home))
    from urbanarena.world.resolve import resolve_city

    fs = load_frozen(SUITE)
    city = resolve_city("helsinki-core")
    assert fs.city_hash == city.content_hash, "the importer changed: re-freeze with `urbanarena tasks freeze`"
    assert fs.manifest["city"]["name"] == "helsinki-core"  # the suite names the city it runs on
    sizes = fs.manifest["sizes"]
    assert sizes["mini"]["tasks"] == 175 and set(sizes["mini"]["by_family"].values()) == {25}
    assert sizes["standard"]["tasks"] >= 690


@pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")
@pytest.mark.acceptance  # the oracle over a whole frozen suite (mini: 24 s): CI runs it in its acceptance step
@pytest.mark.parametrize("size", ["mini", "standard"])
def test_oracle_solves_every_frozen_task(home, monkeypatch, tmp_path, size):
    monkeypatch.setenv("URBANARENA_HOME", str(home))
    fs = load_frozen(SUITE)
    run_dir = tmp_path / f"oracle-{size}"
    r = CliRunner().invoke(app, ["run", "--city", "helsinki-core", "--tasks", size, "--agent", "oracle", "--workers", "2",
                                 "--out", str(run_dir)])
    assert r.exit_code == 0, r.output
    con = sqlite3.connect(run_dir / "episodes.sqlite")
    rows = con.execute("select task_id, evaluation_score, invalid_actions, stop_reason from episodes").fetchall()
    assert len(rows) == fs.manifest["sizes"][size]["tasks"]
    bad = [r for r in rows if r[1] != 1.0 or r[2] != 0 or r[3] != "ANSWER"]
    assert not bad, bad[:5]
    check = json.loads((run_dir / "run.json").read_text())["tasks"]["suite_check"]
    assert check["assets_checked"] == len(fs.manifest["sizes"][size]["assets"])
    print(f"{size}: render check matches the frozen hashes: {check['matches']} "
          f"(differ: {len(check['assets_differ'])} images, {len(check['panoramas_differ'])} panoramas)")
