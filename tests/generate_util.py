"""Helpers for the task-generator tests (``tests/test_generate_*.py``).

The hand-written fixture ``tests/data/osm_generate_fixture.osm`` is laid out in
metres around (60.17 N, 24.94 E); its header lists the hand-counted ground
truth. Cities and suites are built once per test session (cached here), the
Helsinki core from the pinned extract (skipped with the reason when it cannot
be had).
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import pytest

from urbanarena.world.geo import LocalFrame

DATA = Path(__file__).parent / "data"
GEN_FIXTURE = DATA / "osm_generate_fixture.osm"
OLD_FIXTURE = DATA / "osm_fixture.osm"
FIX_FRAME = LocalFrame(60.17, 24.94)  # the frame the fixtures' metre layouts were written in


@lru_cache(maxsize=None)
def fixture_city(path: str = str(GEN_FIXTURE)):
    from urbanarena.world.importers.osm import import_city

    return import_city(path)


def to_fix(city, x_m: float, y_m: float) -> tuple[float, float]:
    """A city-frame point in the fixture's metres."""
    lat, lon = city.frame.to_latlon(x_m, y_m)
    x, y = FIX_FRAME.to_xy(lat, lon)
    return float(x), float(y)


def from_fix(city, x: float, y: float) -> tuple[float, float]:
    """A fixture-metre point in the city's frame."""
    lat, lon = FIX_FRAME.to_latlon(x, y)
    cx, cy = city.frame.to_xy(lat, lon)
    return float(cx), float(cy)


def node_at(city, x: float, y: float, tol: float = 0.05) -> str:
    hits = [n for n in city.graph.nodes if math.dist(to_fix(city, *city.xy(n)), (x, y)) < tol]
    assert len(hits) == 1, (x, y, hits)
    return hits[0]


def helsinki_pbf_path(request, tmp_path_factory) -> Path:
    """The pinned Helsinki extract (pytest's cache folder keeps it between runs); skips when unavailable."""
    from urbanarena.world import default_city as dc

    cache_plugin = getattr(request.config, "cache", None)
    cache = cache_plugin.mkdir("urbanarena-osm") if cache_plugin is not None else tmp_path_factory.mktemp("urbanarena-osm")
    try:
        return dc.helsinki_pbf(cache_dir=cache)
    except dc.DefaultCityUnavailableError as e:
        pytest.skip(f"Helsinki OSM extract not available here: {e}")


@lru_cache(maxsize=None)
def helsinki_area(pbf: str, split: str):
    """A Helsinki city of one split, built once per session: ``val`` and ``train`` their whole areas
    (``helsinki-val``, ``helsinki-train``), ``test`` the core ``helsinki-core`` (0.28 km², inside the test
    area: the city of the frozen suites v1/v2, small enough for CI; :func:`helsinki_whole` is the default city)."""
    from urbanarena.tasks.generators.splits import HELSINKI_AREAS
    from urbanarena.world.default_city import CORE_CITY_NAME, HELSINKI_CORE_BBOX
    from urbanarena.world.importers.osm import import_city

    if split == "test":
        return import_city(pbf, bbox=HELSINKI_CORE_BBOX, name=CORE_CITY_NAME)
    return import_city(pbf, bbox=HELSINKI_AREAS[split], name=f"helsinki-{split}")


@lru_cache(maxsize=None)
def helsinki_whole(pbf: str):
    """The default city ``helsinki`` (the whole extract, 1.69 km², about 5,300 pose nodes), built once per session."""
    from urbanarena.world.default_city import DEFAULT_CITY_NAME, HELSINKI_FILE_BBOX
    from urbanarena.world.importers.osm import import_city

    return import_city(pbf, bbox=HELSINKI_FILE_BBOX, name=DEFAULT_CITY_NAME)


@lru_cache(maxsize=None)
def core_suite(pbf: str, per_family: int = 25, seed: int = 0):
    """The ``mini`` suite of the core with the arena oracle as solver (built once per session)."""
    from urbanarena.agents.arena_oracle import ArenaOracleSolver
    from urbanarena.tasks.generators import generate_suite

    city = helsinki_area(pbf, "test")
    return generate_suite(city, per_family=per_family, seed=seed, solver=ArenaOracleSolver(city))


def saved_city_home(request, tmp_path_factory, bbox, name: str):
    """A temporary ``URBANARENA_HOME`` holding the Helsinki extract cropped to ``bbox``, saved as ``name``."""
    from urbanarena.world.importers.osm import import_city
    from urbanarena.world.resolve import save_named

    pbf = helsinki_pbf_path(request, tmp_path_factory)
    h = tmp_path_factory.mktemp(f"{name}_home")
    mp = pytest.MonkeyPatch()
    mp.setenv("URBANARENA_HOME", str(h))
    try:
        save_named(import_city(pbf, bbox=bbox, name=name), name)
    finally:
        mp.undo()
    return h


def oracle_solves_frozen_mini(run_dir: Path, n_tasks: int = 175) -> dict:
    """``urbanarena run --city helsinki --tasks mini --agent oracle --workers 2`` into ``run_dir`` (in the current
    ``URBANARENA_HOME``): asserts exit 0 and that the oracle solved each of the ``n_tasks`` episodes without an
    invalid action; returns the run's ``run.json``."""
    import json
    import sqlite3

    from typer.testing import CliRunner

    from urbanarena.cli.main import app

    r = CliRunner().invoke(app, ["run", "--city", "helsinki", "--tasks", "mini", "--agent", "oracle", "--workers", "2",
                                 "--out", str(run_dir)])
    assert r.exit_code == 0, r.output
    rows = sqlite3.connect(Path(run_dir) / "episodes.sqlite").execute(
        "select task_id, evaluation_score, invalid_actions, stop_reason from episodes").fetchall()
    assert len(rows) == n_tasks
    bad = [row for row in rows if row[1] != 1.0 or row[2] != 0 or row[3] != "ANSWER"]
    assert not bad, bad[:5]
    return json.loads((Path(run_dir) / "run.json").read_text())
