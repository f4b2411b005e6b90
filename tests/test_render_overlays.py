"""Branch arrows: drawn at their true bearing (pixel tests against the pinhole formula)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from urbanarena.render.overlays import Branch, draw_branch_arrows, letter_labels, relative_labels

W, H = 640, 360


def red_mask(img):
    return (img[..., 0] > 200) & (img[..., 1] < 80) & (img[..., 2] < 80)


def blank():
    return np.full((H, W, 3), 100, np.uint8)


@pytest.mark.parametrize("rel", [-30.0, 0.0, 20.0, 40.0])
def test_arrow_tip_on_the_bearing_column_at_pitch_zero(rel):
    """At pitch 0 every ground point along bearing yaw+rel projects onto column
    u = (W-1)/2 + f tan(rel), f = (W/2)/tan(hfov/2) (hand formula): the tip (topmost red pixel)
    sits on that column."""
    yaw, hfov = 200.0, 100.0
    img, pl = draw_branch_arrows(blank(), yaw, 0.0, hfov, [Branch(yaw + rel, "")], outline=None)
    f = (W / 2) / math.tan(math.radians(hfov / 2))
    u_exp = (W - 1) / 2 + f * math.tan(math.radians(rel))
    assert pl[0].drawn
    m = red_mask(img)
    rows = np.where(m.any(axis=1))[0]
    top = rows.min()
    cols = np.where(m[top])[0]
    assert cols.min() - 1 <= u_exp <= cols.max() + 1 and cols.size < 10  # the tip run holds the column
    assert pl[0].tip_px[0] == pytest.approx(u_exp, abs=1e-6)
    # a very thin arrow is a vertical segment on that column: each red row is centred on it
    thin, _ = draw_branch_arrows(blank(), yaw, 0.0, hfov, [Branch(yaw + rel, "")], outline=None, width_factor=0.02)
    tm = red_mask(thin)
    row_ids = np.where(tm.any(axis=1))[0]
    assert row_ids.size > 20
    centres = np.array([np.nonzero(tm[r])[0].mean() for r in row_ids[2:-2]])  # skip the slanted end rows
    assert np.abs(centres - u_exp).max() <= 1.0
    # the arrow lies below the horizon row (cy) and points away: the tip is its highest point
    assert top > (H - 1) / 2
    assert abs(pl[0].base_px[0] - u_exp) < 1e-6 and pl[0].base_px[1] > pl[0].tip_px[1]


def test_two_arrows_left_and_right_of_centre():
    img, pl = draw_branch_arrows(blank(), 0.0, 0.0, 90.0, [(330.0, "LEFT"), (30.0, "RIGHT")], outline=None)
    m = red_mask(img)
    f = 320.0
    for p, sign in zip(pl, (-1, 1)):
        assert p.drawn
        u = 319.5 + sign * f * math.tan(math.radians(30))
        assert abs(p.tip_px[0] - u) < 1e-6
        assert m[int(round(p.tip_px[1])) + 3, int(round(u))]  # red just below the tip
    assert not m[:, 300:340].any()  # nothing drawn straight ahead


def test_arrows_outside_view_or_with_ground_hidden_are_not_drawn():
    img, pl = draw_branch_arrows(blank(), 90.0, 0.0, 60.0, [(150.0, "A"), (270.0, "B"), (95.0, "C")], outline=None)
    assert [p.drawn for p in pl] == [False, False, True]
    assert pl[0].reason == "outside view" and pl[1].reason == "outside view"
    # looking up 60 deg with a 34 deg vertical half-fov: the ground is out of sight
    img2, pl2 = draw_branch_arrows(blank(), 90.0, 60.0, 60.0, [(90.0, "UP")], outline=None)
    assert not pl2[0].drawn and pl2[0].reason == "ground not visible"
    assert not red_mask(img2).any()


def test_arrow_visible_when_looking_down():
    img, pl = draw_branch_arrows(blank(), 0.0, -60.0, 90.0, [(0.0, "UP")], outline=None)
    assert pl[0].drawn
    m = red_mask(img)
    assert m.sum() > 500
    u, v = pl[0].tip_px
    assert 0 <= u < W and 0 <= v < H


def test_input_not_modified_and_labels():
    src = blank()
    img, _ = draw_branch_arrows(src, 0.0, 0.0, 90.0, [(0.0, "UP")])
    assert (src == 100).all() and not (img == 100).all()
    assert relative_labels([90.0, 10.0, 275.0, 250.0], travel_deg=0.0) == ["RIGHT", "UP", "LEFT", "LEFT2"]
    assert relative_labels([350.0], travel_deg=20.0, straight_tol_deg=30.0) == ["UP"]
    assert letter_labels(3) == ["A", "B", "C"]

