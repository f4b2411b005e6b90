"""``urbanarena city build``: OSM fixtures built into the cache through the CLI (counts hand-worked from
the fixtures' layouts), no-op rebuilds, ``--force``, ``--prerender`` and bad input (exit 2).

Hand counts, ``tests/data/osm_fixture.osm`` (layout and worked graph facts in its header):
pose nodes 82 and directed edges 168 (header: 84 edges of 10 m, both directions); decision points 4
((0,50), (50,0), (100,0), (100,100)); POIs 7 on buildings: Kahvila Aalto, Kirjakauppa Kivi,
Ravintola Sointu, Apteekki, Kukka, the Museo building and the unnamed convenience shop, so 6 named
(Patsas stands 35 m from any building: standalone; Toimisto is on level 2; unnamed parking is no
POI); street objects 13: trees 401-404, lamps 411-412, bench 421, vending machine 431, traffic sign
441, traffic signals on 104, the zebra crossing 102, bus stop 451, subway entrance 461; buildings 4
(1101-1104); blocks 2 ([0,100]x[0,100] and [100,200]x[0,100]). The bbox below spans
x in [-40, 260] and y in [-80, 160] fixture metres: 300 m x 240 m = 0.072 km².

``tests/data/osm_build_tiny.osm``: one 30 m street -> 4 pose nodes, 6 directed edges, 1 named POI,
2 objects, 1 building, 0 blocks (its header).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from urbanarena.cli.build_cmd import build
from urbanarena.world.geo import LocalFrame

DATA = Path(__file__).parent / "data"
FIXTURE = DATA / "osm_fixture.osm"
TINY = DATA / "osm_build_tiny.osm"
FIX_FRAME = LocalFrame(60.17, 24.94)

app = typer.Typer()
app.command()(build)


def cli(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


def bbox_of(x0: float, y0: float, x1: float, y1: float) -> str:
    """``W,S,E,N`` of a rectangle given in the fixtures' metres."""
    s, w = FIX_FRAME.to_latlon(x0, y0)
    n, e = FIX_FRAME.to_latlon(x1, y1)
    return f"{float(w):.7f},{float(s):.7f},{float(e):.7f},{float(n):.7f}"


def home() -> Path:
    import os

    return Path(os.environ["URBANARENA_HOME"])


def test_build_counts_match_the_hand_count_and_rebuild_is_a_no_op():
    bb = bbox_of(-40, -80, 260, 160)
    r = cli("--osm", FIXTURE, "--bbox", bb, "--name", "fx", "--json")
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["status"] == "built" and rep["stages"]["graph"] == "built" and rep["stages"]["maps"] == "built"
    c = rep["counts"]
    assert (c["pose_nodes"], c["edges"], c["decision_points"]) == (82, 168, 4)
    assert (c["pois"], c["named_pois"], c["standalone_pois"]) == (7, 6, 1)
    assert (c["objects"], c["buildings"], c["blocks"]) == (13, 4, 2)
    assert rep["area_km2"] == pytest.approx(300 * 240 / 1e6, abs=2e-4)
    d = home() / "cities" / "fx"
    assert Path(rep["directory"]) == d and (d / "city.json").is_file()
    for f in ("district_grid.png", "streets.png"):
        assert (d / "maps" / f).is_file()
    # the cached city is what --city fx loads
    from urbanarena.world.resolve import resolve_city

    city = resolve_city("fx")
    assert city.graph.number_of_nodes() == 82 and len(city.annotations.blocks) == 2
    mtime = (d / "graph.json.gz").stat().st_mtime_ns
    # rebuild: nothing is imported or rewritten
    r2 = cli("--osm", FIXTURE, "--bbox", bb, "--name", "fx")
    assert r2.exit_code == 0, r2.output
    assert "fx: cached from osm_fixture.osm" in r2.stdout
    assert "pose nodes 82, edges 168, decision points 4, POIs 7 (6 named), objects 13, buildings 4, blocks 2" in r2.stdout
    assert "graph+annotations" in r2.stdout and "cached" in r2.stdout and f"-> {d}" in r2.stdout
    assert (d / "graph.json.gz").stat().st_mtime_ns == mtime
    # --force rebuilds the same content
    r3 = cli("--osm", FIXTURE, "--bbox", bb, "--name", "fx", "--force", "--json")
    assert r3.exit_code == 0, r3.output
    rep3 = json.loads(r3.stdout)
    assert rep3["status"] == "rebuilt" and rep3["stages"]["maps"] == "built" and rep3["counts"] == rep["counts"]
    assert (d / "graph.json.gz").stat().st_mtime_ns != mtime
    assert resolve_city("fx").content_hash == city.content_hash
    # the same name from another bbox is refused without --force
    r4 = cli("--osm", FIXTURE, "--bbox", bbox_of(-10, -50, 110, 110), "--name", "fx")
    assert r4.exit_code == 2 and r4.stderr.startswith("error: a cached city named 'fx' already exists")


def test_prerender_writes_one_png_per_pose_node():
    from urbanarena.render.scene3d.context import gl_unavailable_reason

    reason = gl_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no headless OpenGL context here: {reason}")
    from urbanarena.render.scene3d.cache import read_png

    r = cli("--osm", TINY, "--name", "tiny", "--prerender", "--json")
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["counts"]["pose_nodes"] == 4 and rep["counts"]["edges"] == 6
    assert (rep["counts"]["named_pois"], rep["counts"]["objects"], rep["counts"]["buildings"]) == (1, 2, 1)
    p = rep["panoramas"]
    folder = Path(p["directory"])
    assert folder.parent == home() / "panoramas"
    pngs = sorted(folder.glob("*.png"))
    assert (p["total"], p["rendered"], p["cached"]) == (4, 4, 0) and len(pngs) == 4
    from urbanarena.world.resolve import resolve_city

    assert sorted(f.stem for f in pngs) == sorted(resolve_city("tiny").graph.nodes)
    img = read_png(pngs[0])
    assert img.shape == (1024, 2048, 3) and int(np.ptp(img)) > 100
    # again: everything cached; the observer of the loaded city reads the same folder
    r2 = cli("--osm", TINY, "--name", "tiny", "--prerender", "--json")
    p2 = json.loads(r2.stdout)["panoramas"]
    assert (p2["rendered"], p2["cached"], p2["directory"]) == (0, 4, p["directory"])
    from urbanarena.env.observers import panorama_observer_for
    from urbanarena.render.scene3d.styles import settings_for_style

    # city build renders in the commands' default style (realistic); the runner asks for the same
    obs = panorama_observer_for(resolve_city("tiny"), render_settings=settings_for_style())
    assert obs.store.dir == folder and obs.store.missing() == []


@pytest.mark.parametrize("args, message", [
    (["--osm", "missing.osm", "--name", "x"], "missing.osm: OSM file not found"),
    (["--osm", str(FIXTURE)], "--osm needs --name"),
    (["--osm", str(FIXTURE), "--name", "x", "--bbox", "24.94,60.17,24.95"], "expected four numbers W,S,E,N"),
    (["--osm", str(FIXTURE), "--name", "x", "--bbox", "24.95,60.17,24.94,60.18"], "empty bbox: need W < E and S < N"),
    (["--osm", str(FIXTURE), "--name", "x", "--bbox", "24.94,95,24.95,96"], "bbox out of range"),
    # inside the file's area, but only buildings there (building 1102 spans x 120..180, y 10..40)
    (["--osm", str(FIXTURE), "--name", "x", "--bbox", bbox_of(130, 15, 170, 35)], "no walkable streets inside the bbox"),
    (["paris"], "unknown city 'paris': built-in cities are helsinki"),
    (["--osm", str(FIXTURE), "--name", "bad/name"], "invalid city name 'bad/name'"),
    (["--osm", str(DATA), "--name", "x"], "OSM file not found"),
])
def test_bad_input_exits_2(args, message):
    r = cli(*args)
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith("error: ") and message in r.stderr
    assert not (home() / "cities" / "x").exists()
