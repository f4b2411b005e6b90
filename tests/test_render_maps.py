"""Map images: marker at the right pixel (hand-worked scale), grid cells and labels' axis
convention, start/goal colours, attribution band, cached background."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import make_city
from urbanarena.render.maps import Extent, MapRenderer, MapStyle, ascii_text, map_renderer_for


def square_city(attribution=None):
    # four nodes roughly on a 100 m square; positions are overwritten with exact local metres
    nodes = {"sw": (0.0, 0.0), "se": (0.0, 0.0009), "ne": (0.0009, 0.0009), "nw": (0.0009, 0.0)}
    edges = [("sw", "se", 90.0, 100.0), ("se", "ne", 0.0, 100.0), ("ne", "nw", 270.0, 100.0), ("nw", "sw", 180.0, 100.0)]
    c = make_city(nodes, edges, name="square")
    for n, (x, y) in {"sw": (0, 0), "se": (100, 0), "ne": (100, 100), "nw": (0, 100)}.items():
        c.node(n)["x_m"], c.node(n)["y_m"] = float(x), float(y)
    c.meta.attribution = attribution
    return c


def red(img):
    return (img[..., 0] > 180) & (img[..., 1] < 80) & (img[..., 2] < 80)


def blue(img):
    return (img[..., 2] > 180) & (img[..., 0] < 80)


def test_world_to_px_hand_worked():
    # extent 0..100 m square on a 220x220 canvas with 10 px padding: 2 px per metre,
    # the extent's top-left corner at continuous (10, 10); pixel centres at integers.
    m = MapRenderer(square_city(), 220, 220, extent=Extent(0, 0, 100, 100), attribution="", style=MapStyle(pad_px=10))
    assert m.scale == pytest.approx(2.0)
    u, v = m.world_to_px(25.0, 75.0)
    assert (float(u), float(v)) == pytest.approx((10 + 50 - 0.5, 10 + 50 - 0.5))
    x, y = m.px_to_world(u, v)
    assert (float(x), float(y)) == pytest.approx((25.0, 75.0))


@pytest.mark.parametrize("heading", [0.0, 90.0, 225.0])
def test_agent_marker_at_position_pointing_along_heading(heading):
    style = MapStyle(agent_radius_px=5, agent_tip_px=14, street=(200, 200, 200), scale_bar=False, pad_px=10)
    m = MapRenderer(square_city(), 220, 220, extent=Extent(0, 0, 100, 100), attribution="", style=style)
    img = m.location_map(25.0, 75.0, heading)
    u0, v0 = 59.5, 59.5  # hand-worked above
    mask = red(img)
    vs, us = np.nonzero(mask)
    d = np.hypot(us - u0, vs - v0)
    assert d.max() == pytest.approx(14.0, abs=1.5)  # farthest red pixel is the tip
    far = np.argmax(d)
    ang = np.degrees(np.arctan2(us[far] - u0, -(vs[far] - v0))) % 360.0  # compass angle on a north-up map
    assert min(abs(ang - heading), 360 - abs(ang - heading)) < 6.0
    # behind the position the marker extends only the disc radius
    a = np.radians(heading)
    back = (u0 - np.sin(a) * 9, v0 + np.cos(a) * 9)
    assert not mask[int(round(back[1])), int(round(back[0]))]
    assert mask[60, 60] and mask[59, 59]


def test_background_cached_and_unchanged_by_markers():
    m = MapRenderer(square_city(), 200, 150)
    bg = m.background()
    assert m.background() is bg and not bg.flags.writeable
    before = bg.copy()
    m.location_map(50.0, 50.0, 30.0)
    assert np.array_equal(m.background(), before)
    assert map_renderer_for(square_city(), 200, 150) is map_renderer_for(square_city(), 200, 150)


def test_streets_drawn_between_nodes():
    style = MapStyle(street=(0, 200, 0), street_px=1, scale_bar=False)
    m = MapRenderer(square_city(), 220, 220, extent=Extent(-10, -10, 110, 110), attribution="", style=style)
    bg = m.background()
    u, v = m.world_to_px(50.0, 0.0)  # middle of the south street
    assert bg[int(round(float(v))), int(round(float(u)))][1] > 120
    u, v = m.world_to_px(50.0, 50.0)  # middle of the block: no street
    assert tuple(bg[int(round(float(v))), int(round(float(u)))]) == style.background


def test_grid_cells_axis_convention():
    m = MapRenderer(square_city(), 300, 300, extent=Extent(0, 0, 100, 100), attribution="")
    # issue 4: x columns from the west, y rows from the north
    assert m.grid_cell(1.0, 99.0) == (0, 0)  # north-west corner
    assert m.grid_cell(99.0, 99.0) == (4, 0)  # north-east
    assert m.grid_cell(1.0, 1.0) == (0, 4)  # south-west
    assert m.grid_cell(45.0, 61.0) == (2, 1)  # 39 m below the north edge: second row
    assert m.grid_cell(100.0, 0.0) == (4, 4)  # east/south boundary belongs to the last cell
    assert m.grid_cell(-0.1, 50.0) is None
    assert m.grid_cell(50.0, 50.0, n=2) == (1, 1)


def test_grid_map_labels_are_in_their_cells():
    """Label text is drawn inside the cells (which label goes in which cell is checked against
    the issue's axis convention in tests/test_generate_localization.py)."""
    style = MapStyle(street=(235, 235, 235), scale_bar=False)
    m = MapRenderer(square_city(), 500, 500, extent=Extent(0, 0, 100, 100), attribution="", style=style)
    g = m.grid_map()
    dark = (g.sum(axis=2) < 150)
    cell_px = 100.0 / 5 * m.scale
    for gx, gy in [(0, 4), (4, 0), (2, 2)]:
        u0, v0 = m.world_to_px(gx * 20.0, (gy + 1) * 20.0)  # top-left corner of the cell
        u0, v0 = int(float(u0)) + 3, int(float(v0)) + 3
        inner = dark[v0: v0 + int(cell_px) - 6, u0: u0 + int(cell_px) - 6]
        assert inner.sum() > 30  # text present
    assert not np.array_equal(g, m.background())
    assert m.grid_map() is not m.grid_map()  # copies


def test_start_goal_colours():
    m = MapRenderer(square_city(), 220, 220, extent=Extent(0, 0, 100, 100), attribution="",
                    style=MapStyle(scale_bar=False))
    img = m.start_goal_map((10.0, 10.0), (90.0, 90.0))
    su, sv = m.world_to_px(10.0, 10.0)
    gu, gv = m.world_to_px(90.0, 90.0)
    assert blue(img)[int(round(float(sv))), int(round(float(su)))]
    assert red(img)[int(round(float(gv))), int(round(float(gu)))]
    assert not red(img)[int(round(float(sv))), int(round(float(su)))]


def test_attribution_band():
    text = "Map data \u00a9 OpenStreetMap contributors, ODbL 1.0"
    with_attr = MapRenderer(square_city(attribution=text), 320, 200)
    without = MapRenderer(square_city(attribution=None), 320, 200)
    assert with_attr.attribution == "Map data (c) OpenStreetMap contributors, ODbL 1.0"
    assert with_attr.attribution_band_px > 0 and without.attribution_band_px == 0
    band = with_attr.background()[200 - with_attr.attribution_band_px:]
    assert (band.sum(axis=2) < 300).sum() > 50  # text pixels
    long = MapRenderer(square_city(attribution="word " * 80), 320, 240)
    assert len(long._attr_lines) > 2  # wrapped, not cut
    assert ascii_text("Z\u00fcrich \u2013 caf\u00e9") == "Zurich - cafe"
