"""Train / val / test areas of the Helsinki extract, and a second area generated with no code change.

Needs the pinned Helsinki extract (skipped with the reason when unavailable).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import cKDTree

from generate_util import fixture_city, helsinki_area, helsinki_pbf_path
from urbanarena.agents.arena_oracle import ArenaOracleAgent, ArenaOracleSolver
from urbanarena.agents.vlm.arena_loop import run_arena_episode
from urbanarena.tasks.families.cityarena import CityArenaFamily
from urbanarena.tasks.generators import SplitError, check_split, city_area, generate_suite
from urbanarena.tasks.generators.splits import HELSINKI_AREAS
from urbanarena.world.geo import LocalFrame


@pytest.fixture(scope="module")
def areas(request, tmp_path_factory):
    pbf = str(helsinki_pbf_path(request, tmp_path_factory))
    return {s: helsinki_area(pbf, s) for s in ("test", "val", "train")}


def test_each_area_is_its_split(areas):
    for split, city in areas.items():
        assert city_area(city).split == split
        assert check_split(city, split) == split
    with pytest.raises(SplitError, match=r"'test' area.*24\.9352,60\.1720,24\.9534,60\.1791"):
        check_split(areas["test"], "train")
    with pytest.raises(SplitError, match="unknown split"):
        check_split(areas["test"], "holdout")
    with pytest.raises(SplitError, match="no known split area"):
        check_split(fixture_city(), "test")
    assert check_split(fixture_city(), None) is None


def test_areas_are_disjoint(areas):
    frame = LocalFrame(60.17, 24.945)
    pts = {}
    for split, city in areas.items():
        ll = np.array([city.latlon(n) for n in city.graph.nodes])
        x, y = frame.to_xy(ll[:, 0], ll[:, 1])
        pts[split] = np.column_stack([x, y])
        w, s, e, n = HELSINKI_AREAS[split]
        assert (ll[:, 0] >= s - 1e-7).all() and (ll[:, 0] <= n + 1e-7).all()
        assert (ll[:, 1] >= w - 1e-7).all() and (ll[:, 1] <= e + 1e-7).all()
    for a, b in (("test", "val"), ("test", "train"), ("val", "train")):
        d, _ = cKDTree(pts[b]).query(pts[a])
        assert d.min() >= 50.0, (a, b, d.min())  # no pose node (hence no street stretch) within 50 m
    ways = {s: {w for st in c.annotations.streets for w in st.way_ids} for s, c in areas.items()}
    assert not ways["train"] & ways["test"]  # training streets never share an OSM way with the test area


def test_second_area_generates_oracle_solvable_tasks(areas):
    city = areas["val"]
    res = generate_suite(city, per_family=4, seed=1, split="val", solver=ArenaOracleSolver(city))
    fams = res.report["families"]
    assert fams["landmark_image"]["unavailable"]  # no renderer given
    for kind in ("localization", "landmark_language", "map_navigation", "vln", "object_count", "relational"):
        assert fams[kind]["unavailable"] is None and fams[kind]["produced"] >= 3, (kind, fams[kind])
    fam = CityArenaFamily()
    nav = [t for t in res.task_file.tasks if t.extra["task_kind"] in ("landmark_language", "map_navigation", "vln")]
    assert len(nav) >= 9
    for t in nav:
        assert t.provenance["split"] == "val"
        r = run_arena_episode(city, ArenaOracleAgent(), t, seed=0, protocol_id="cityarena-v1",
                              validator=fam.make_validator(t, city, "cityarena-v1"))
        assert r["scored_success"] and r["steps"] <= fam.default_max_steps
