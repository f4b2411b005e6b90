"""Localization ground truth: the 5 x 5 grid axes of issue 4 (x = column from the west, y = row from the
north, 0-based), hand-worked on the hand-written fixture, and the drawn grid labels read back."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from generate_util import GEN_FIXTURE, FIX_FRAME, fixture_city, from_fix, node_at
from urbanarena.agents.arena_oracle import verify_arena_task
from urbanarena.render.maps import Extent, MapRenderer
from urbanarena.tasks.generators import localization
from urbanarena.tasks.generators.common import district_extent, make_context
from urbanarena.world.importers.osm import import_city


def answers(city) -> dict[str, tuple[str, str]]:
    pool = localization.generate(make_context(city, 0), {})
    return {c.key: (c.fields["answer"], c.difficulty) for cs in pool.by_difficulty.values() for c in cs}


def test_cells_hand_worked_without_bbox():
    # no bbox: the map extent is the node bounding box + 5 % per side: fixture x -10..210, y -110..110,
    # cells 44 m; columns from x = -10, rows from y = +110 downwards
    city = fixture_city()
    got = answers(city)
    assert got[node_at(city, 0, 100)][0] == "x:0 y:0"  # north-west corner
    assert got[node_at(city, 200, -100)][0] == "x:4 y:4"  # south-east corner
    assert got[node_at(city, 200, 60)][0] == "x:4 y:1"  # (210/44, 50/44) -> col 4, row 1 (south-up would say y:3)
    # (100, -30): 8 m from the line y = -22 (< 12 m: not easy), Echo Optics' front point (80, 0) 36 m away
    # (<= 50 m: not hard) -> medium
    assert got[node_at(city, 100, -30)] == ("x:2 y:3", "medium")
    # (30, 0): 4 m from the grid line x = 34 (< 6 m) -> hard
    assert got[node_at(city, 30, 0)] == ("x:0 y:2", "hard")


def test_cells_with_import_bbox_and_line_margin():
    # bbox from fixture metres (-20,-120)..(220,120): extent = the bbox, cells 48 m
    la0, lo0 = FIX_FRAME.to_latlon(-20.0, -120.0)
    la1, lo1 = FIX_FRAME.to_latlon(220.0, 120.0)
    city = import_city(GEN_FIXTURE, bbox=(lo0, la0, lo1, la1))
    e = district_extent(city)
    assert from_fix(city, -20, -120) == pytest.approx((e.xmin, e.ymin), abs=0.05)
    assert from_fix(city, 220, 120) == pytest.approx((e.xmax, e.ymax), abs=0.05)
    got = answers(city)
    assert got[node_at(city, 200, 60)][0] == "x:4 y:1"  # (220/48, 60/48)
    assert got[node_at(city, 100, -30)][0] == "x:2 y:3"  # (120/48 = 2.5, 150/48 = 3.1)
    # (30, 0) is 2 m from the grid line x = 28: too close to call, not used
    assert node_at(city, 30, 0) not in got
    assert node_at(city, 40, 0) in got


def _label_score(img: np.ndarray, text: str) -> float:
    """Best normalised correlation of ``text`` rendered by OpenCV's Hershey font over a few scales."""
    gray = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
    best = -1.0
    for scale in np.arange(0.3, 0.61, 0.05):
        (w, h), base = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, float(scale), 1)
        tpl = np.full((h + base + 6, w + 6), 255, np.uint8)
        cv2.putText(tpl, text, (3, h + 3), cv2.FONT_HERSHEY_SIMPLEX, float(scale), 0, 1, cv2.LINE_AA)
        if tpl.shape[0] > gray.shape[0] or tpl.shape[1] > gray.shape[1]:
            continue
        best = max(best, float(cv2.matchTemplate(gray, tpl, cv2.TM_CCOEFF_NORMED).max()))
    return best


@pytest.mark.parametrize("cell", [(0, 0), (4, 0), (0, 4), (3, 1)])
def test_grid_map_labels_follow_the_issue_axes(cell):
    """The label read in the cell at column gx (from the west) and row gy (from the north) is 'x:gx y:gy'."""
    city = fixture_city()
    m = MapRenderer(city, 640, 640, extent=Extent(0, 0, 500, 500), attribution="")
    img = m.grid_map(5)
    gx, gy = cell
    u0, v0 = m.world_to_px(gx * 100.0, 500.0 - gy * 100.0)  # the cell's north-west corner
    u1, v1 = m.world_to_px((gx + 1) * 100.0, 500.0 - (gy + 1) * 100.0)
    crop = img[int(v0) + 2:int(v1) - 1, int(u0) + 2:int(u1) - 1]
    scores = {f"x:{a} y:{b}": _label_score(crop, f"x:{a} y:{b}") for a in range(5) for b in range(5)}
    assert max(scores, key=scores.get) == f"x:{gx} y:{gy}"
    assert m.grid_cell(gx * 100.0 + 50.0, 500.0 - gy * 100.0 - 50.0) == (gx, gy)


def test_oracle_answers_the_cell():
    city = fixture_city()
    pool = localization.generate(make_context(city, 1), {})
    t = pool.by_difficulty["easy" if pool.by_difficulty["easy"] else "medium"][0].build("loc/1")
    assert t.answer_metric == "exact_match"
    res = verify_arena_task(city, t, protocols=("cityarena-v1",))
    assert res[0].solved and res[0].steps == 1
