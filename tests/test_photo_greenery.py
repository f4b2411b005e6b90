"""The ``photo`` style's seeded greenery and street clutter (:mod:`.photo_placement`, :mod:`.photo_greenery`,
:mod:`.photo_clutter`): line sampling, free and kerb ground and greedy spacing by hand, a tagged bench at its node
facing the street, seeded placements deterministic and off the walk lines (distances worked out by hand on a
straight street), instancing by hand, the render identity, and the flat and realistic styles untouched. Hand-made
models and cards only (no fetched assets needed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from test_render_styles import small_scene
from urbanarena.render.scene3d import photo_clutter as PC
from urbanarena.render.scene3d import photo_greenery as PG
from urbanarena.render.scene3d import photo_placement as PP
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.render.scene3d.mesh_primitives import MeshData
from urbanarena.render.scene3d.photo_greenery_mesh import instance
from urbanarena.render.scene3d.photo_models import Model
from urbanarena.render.scene3d.renderer import RenderSettings
from urbanarena.render.scene3d.scene import Building, Road, Scene, StreetObject

needs_gl = pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")


def street_scene(objects=()) -> Scene:
    """A 6 m carriageway along x (y = 0) with 2 m sidewalks (walking surface |y| <= 5), a building at y 10..20,
    a 2 m footway crossing at x = 20 from y = -30 to -8 (off the street)."""
    return Scene(name="street", buildings=(Building("b", [(-5, 10), (5, 10), (5, 20), (-5, 20)], 10.0),),
                 objects=tuple(objects),
                 roads=(Road("r", [(-60, 0), (60, 0)], 6.0, 2.0), Road("f", [(20, -30), (20, -8)], 2.0, 0.0,
                                                                       "footway")))


# ----------------------------------------------------------------------------------------------- placement
def test_line_samples_by_hand():
    got = PP.line_samples([(0, 0), (10, 0)], 2.5, 1.0)
    assert np.allclose(got[:, :2], [(0, 1), (2.5, 1), (5, 1), (7.5, 1), (10, 1)])     # left of +x is +y
    assert np.allclose(got[:, 2], 0.0) and np.allclose(got[:, 3], [0, 2.5, 5, 7.5, 10])
    # an L: s = 0, 3 on the first leg, s = 6 two metres up the second (heading +y), shifted 1 m to the right
    got = PP.line_samples([(0, 0), (4, 0), (4, 4)], 3.0, -1.0)
    assert np.allclose(got[:, :2], [(0, -1), (3, -1), (5, 2)])
    assert np.allclose(got[:, 2], [0, 0, math.pi / 2])
    assert PP.line_samples([(1, 1), (1, 1)], 1.0).shape == (0, 4)


def test_free_and_kerb_ground_by_hand():
    g = PP.FreeGround(street_scene())
    # free: 2 m off the sidewalk, 3 m off the building, 7 m off the street's line
    assert g.free(np.array([[0.0, 7.0]]), 0.5).tolist() == [True]
    assert g.free(np.array([[0.0, 5.3]]), 0.5).tolist() == [False]        # the sidewalk within 0.3 m
    assert g.free(np.array([[0.0, 9.8]]), 0.5).tolist() == [False]        # the building within 0.2 m
    assert g.free(np.array([[21.4, -20.0]]), 0.1).tolist() == [False]     # 1.4 m from the footway's line
    # kerb: on the sidewalk, 0.55 m off the carriageway, 3.55 m from the line
    assert g.kerb_ok(np.array([[0.0, 3.55], [0.0, -3.55]]), 0.4).tolist() == [True, True]
    assert g.kerb_ok(np.array([[0.0, 3.2]]), 0.4).tolist() == [False]     # carriageway within 0.2 m
    assert g.kerb_ok(np.array([[0.0, 7.0]]), 0.4).tolist() == [False]     # not on a walking surface


def test_spaced_is_greedy_by_hand():
    pts = np.array([(0, 0), (1, 0), (3, 0)], float)
    assert PP.spaced(pts, 2.0).tolist() == [True, False, True]
    assert PP.spaced(pts, 2.0, np.array([(3.5, 0.0)])).tolist() == [True, False, False]


def _fake_model() -> Model:
    """Unit height: one triangle whose first corner is at the front (+y 0.5), the others at the back."""
    p = np.array([(0, 0.5, 0), (-0.5, -0.5, 0), (0.5, -0.5, 1)], np.float32)
    n = np.tile(np.array([0, 0, 1], np.float32), (3, 1))
    return Model(p, n, np.full((3, 3), 0.5, np.float32), np.zeros(3, np.float32), (1.0, 1.0, 1.0), "fake")


FAKE_KIT = {k: ((_fake_model(), 0.8),) for k in PC.KINDS}


def test_tagged_bench_stands_at_its_node_facing_the_street():
    scene = street_scene([StreetObject("bench1", "bench", 10.0, 6.5)])
    g = PP.FreeGround(scene)
    assert PC.bench_heading(scene.objects[0], g) == pytest.approx(180.0)     # the line y = 0 is due south
    m = PC.clutter_mesh(scene, FAKE_KIT, {"bench1": 7}, g)
    mine = m.feature == 7
    assert mine.sum() == 3
    p = m.positions[mine]
    # scaled to 0.8 m, turned to face south: the front corner (0, 0.5) goes to (10, 6.5 - 0.4)
    assert np.allclose(p, [(10, 6.1, 0), (10.4, 6.9, 0), (9.6, 6.9, 0.8)], atol=1e-5)


def test_seeded_clutter_is_deterministic_and_off_the_walk_lines():
    scene = street_scene()
    a, b = PC.plan_clutter(scene), PC.plan_clutter(scene)
    assert a == b and len(a) > 0
    for kind, x, y, heading, key in a:
        # on the sidewalk 0.55 m in from the kerb (|y| = 3 + 0.55); bicycles spread along the kerb
        assert abs(abs(y) - 3.55) < 1e-9, (kind, x, y)
        assert -60 <= x <= 60 and kind in PC.KINDS
    xy = np.array([(x, y) for _, x, y, _, _ in a])
    assert not PP.FreeGround(scene).near_lines(xy, PP.CLEAR_M + 0.4).any()


def test_seeded_greenery_is_deterministic_and_off_the_walk_lines():
    scene = street_scene([StreetObject("t", "tree", 0.0, -7.15)])
    a, b = PG.plan_greenery(scene), PG.plan_greenery(scene)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    hedges = a["hedge"]
    # hedge cells stand 3 + 2 + 0.55 m off the street's line, on its two sides
    assert len(hedges) and np.allclose(np.abs(hedges[hedges[:, 0] < 15, 1]), 5.55)
    assert ((hedges[:, 3] >= 0.8) & (hedges[:, 3] <= 1.7)).all()
    g = PP.FreeGround(scene)
    for kind in ("tree", "hedge", "bush", "tuft"):
        xy = a[kind][:, :2]
        if len(xy):
            assert not g.near_lines(xy, PP.CLEAR_M).any(), kind
    trees = np.concatenate([a["tree"], [(0.0, -7.15)]])
    d = np.hypot(*(trees[:, None, :] - trees[None, :, :]).transpose(2, 0, 1)) + np.eye(len(trees)) * 99
    assert d.min() >= PG.TREE_SPACING_M
    # the street's trees stand 5.55 + 1.6 m out (the footway's 1 + 0.9 + 1.6 m either side of x = 20)
    street = a["tree"][np.abs(a["tree"][:, 0] - 20) > 5]
    assert len(street) and np.allclose(np.abs(street[:, 1]), 7.15)


def test_instance_by_hand():
    tri = MeshData(np.array([(1, 0, 0), (0, 1, 0), (0, 0, 1)], np.float32), np.tile(np.float32([1, 0, 0]), (3, 1)),
                   np.ones((3, 3), np.float32), uv=np.zeros((3, 2), np.float32))
    m = instance(tri, np.array([[10.0, 0.0]]), np.array([math.pi / 2]), np.array([[2.0, 1.0, 3.0]]), np.array([0.5]))
    # scale (2, 1, 3), then a quarter turn counter-clockwise: (x, y) -> (-y, x), then +10 in x
    assert np.allclose(m.positions, [(10, 2, 0), (9, 0, 0), (10, 0, 3)], atol=1e-6)
    assert np.allclose(m.normals[0], (0, 1, 0), atol=1e-6) and np.allclose(m.colours, 0.5)
    assert (m.feature == 0).all() and m.uv.shape == (3, 2)


def test_photo_identity_names_greenery_and_clutter(monkeypatch):
    from urbanarena.render.scene3d.render_identity import _photo_identity

    ident = _photo_identity()
    assert ident["greenery"] == PG.GREENERY_VERSION
    monkeypatch.setattr(PG, "ENABLED", False)
    assert _photo_identity()["greenery"] is None


# --------------------------------------------------------------------------------------------- rendering
@needs_gl
def test_flat_and_realistic_never_draw_greenery_or_clutter(monkeypatch):
    from urbanarena.render.scene3d.renderer import SceneRenderer

    def boom(*a, **k):
        raise AssertionError("only the photo style draws greenery and clutter")

    monkeypatch.setattr(PG, "with_greenery", boom)
    monkeypatch.setattr(PC, "with_clutter", boom)
    monkeypatch.setattr(PC, "photo_clutter", boom)
    for style in ("flat", "realistic"):
        SceneRenderer(small_scene(), RenderSettings(style=style)).render_view(0.0, -4.0, 0.0, 0.0, 90.0, 64, 36)


@needs_gl
def test_photo_greenery_draws_and_is_deterministic(monkeypatch):
    from test_photo_trees import _card_kit

    from urbanarena.render.scene3d import photo_atmosphere
    from urbanarena.render.scene3d import trees_photo as TP
    from urbanarena.render.scene3d.renderer import SceneRenderer

    kit = _card_kit(np.full((TP.CELL_PX, TP.CELL_PX), 255, np.uint8))
    monkeypatch.setattr(TP, "photo_trees", lambda quiet=False: kit)
    monkeypatch.setattr(photo_atmosphere, "ENABLED", False)
    monkeypatch.setattr(PC, "photo_clutter", lambda quiet=False: FAKE_KIT)
    scene = small_scene()

    def view():
        return SceneRenderer(scene, RenderSettings(style="photo")).render_view(0.0, -4.0, 90.0, -5.0, 90.0, 160, 90)

    on, again = view(), view()
    monkeypatch.setattr(PG, "ENABLED", False)
    monkeypatch.setattr(PC, "ENABLED", False)
    off = view()
    assert np.array_equal(on, again) and not np.array_equal(on, off)


def test_kerb_weeds_grow_in_patches_off_the_exact_line():
    """A 1.02 km street, two sides, a kerb and a back line each: 600 slots a line. Expected share of slots with
    a tuft ``0.35 * 0.7 + 0.65 * 0.08 = 0.297``; each within 0.05 m of its line (0.22 m from the kerb, or 0.15 m
    inside the 3 m sidewalk's back edge), and grouped: the 12 m stretches' counts spread wider than independent
    draws would (variance over mean above 1.5; a binomial's is below 1)."""
    road = Road("long", [(0.0, 0.0), (1020.0, 0.0)], 8.0, 3.0)
    plan = PG.plan_greenery(Scene(name="long", roads=(road,)))
    t = plan["tuft"]
    y = np.abs(t[:, 1])
    kerb, back = np.abs(y - 4.22) <= 0.05 + 1e-9, np.abs(y - 6.85) <= 0.05 + 1e-9
    assert (kerb | back).all()
    share = len(t) / (4 * 600)
    assert 0.22 < share < 0.38
    assert (t[:, 2] >= 0.16 - 1e-9).all() and (t[:, 2] <= 0.42 + 1e-9).all()
    counts = np.bincount((t[:, 0] // 12.0).astype(int) * 4 + (y > 5).astype(int) * 2 + (t[:, 1] > 0), minlength=4 * 85)
    assert counts.var() / counts.mean() > 1.5
