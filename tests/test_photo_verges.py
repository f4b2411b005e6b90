"""The ``photo`` style's grass verges and leafier hedges and bushes (:mod:`.photo_verges`, :mod:`.photo_verges_mesh`,
the templates of :mod:`.photo_greenery_mesh`): the band and the mats' places worked out by hand on a straight
street, verges only on free ground and never on a hedge piece, the far/detail split, template extents and UV windows
by hand, seeded determinism, the photo render identity, and the flat and realistic styles untouched. Hand-made
scenes and a hand-made atlas only (the one check of the fetched leaf photos skips without them)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from test_photo_greenery import FAKE_KIT, street_scene
from test_render_styles import small_scene
from urbanarena.render.scene3d import photo_clutter as PC
from urbanarena.render.scene3d import photo_greenery as PG
from urbanarena.render.scene3d import photo_greenery_mesh as PGM
from urbanarena.render.scene3d import photo_placement as PP
from urbanarena.render.scene3d import photo_verges as PV
from urbanarena.render.scene3d import photo_verges_mesh as PVM
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.render.scene3d.renderer import RenderSettings
from urbanarena.render.scene3d.scene import Road

needs_gl = pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")


# ---------------------------------------------------------------------------------------------------- plan
def test_hash_u_is_fixed_uniform_and_broadcasts():
    k = np.arange(20000)
    a, b = PV.hash_u(5, np.int64(1), k), PV.hash_u(5, np.int64(1), k)
    assert np.array_equal(a, b) and a.shape == (20000,)
    assert ((a >= 0) & (a < 1)).all() and abs(a.mean() - 0.5) < 0.01 and abs((a < 0.3).mean() - 0.3) < 0.015
    assert not np.array_equal(a, PV.hash_u(6, np.int64(1), k))      # the seed matters
    assert not np.array_equal(a, PV.hash_u(5, np.int64(2), k))      # so does every integer
    assert np.corrcoef(a[:-1], a[1:])[0, 1] < 0.03                    # neighbours are unrelated


def test_verge_band_by_hand():
    # a 6 m carriageway with 2 m sidewalks: 3 + 2 + 0.08 = 5.08 m out, 1.3 m wide
    assert PV.verge_band_m(Road("r", [(0, 0), (1, 0)], 6.0, 2.0)) == pytest.approx((5.08, 6.38))
    # a 2 m footway (no sidewalk): from 1 + 0.08 m
    assert PV.verge_band_m(Road("f", [(0, 0), (1, 0)], 2.0, 0.0, "footway")) == pytest.approx((1.08, 2.38))


def test_verges_by_hand_on_a_straight_street():
    scene = street_scene()
    plan, again = PV.plan_verges(scene), PV.plan_verges(scene)
    assert all(np.array_equal(plan[k], again[k]) for k in plan)
    grass, mats, flowers = plan["grass"], plan["mat"], plan["flower"]
    assert len(grass) > 50 and len(mats) > 10 and len(flowers) > 3
    street = np.abs(grass[:, 0] - 20) > 5                               # away from the footway at x = 20
    # two rows at 5.08 + 0.325 and + 0.975 m, jittered across by at most 0.3 of a row (0.195 m)
    y = np.abs(grass[street, 1])
    assert (y >= 5.405 - 0.196).all() and (y <= 6.055 + 0.196).all()
    assert ((np.abs(y - 5.405) < 0.2) | (np.abs(y - 6.055) < 0.2)).all()
    # mats: on the band's middle line (5.73 m out), every 0.65 m along (the first row's samples at s = 0, 0.65 ..)
    ms = mats[np.abs(mats[:, 0] - 20) > 5]
    assert np.allclose(np.abs(ms[:, 1]), 5.73)
    assert np.allclose(((ms[:, 0] + 60) / 0.65) % 1.0 * (1 - ((ms[:, 0] + 60) / 0.65) % 1.0), 0, atol=1e-6)
    assert np.allclose(ms[:, 2], 0.0)                                   # turned along the street (+x)
    # sizes and shares
    assert ((grass[:, 2] >= 0.5) & (grass[:, 2] <= 0.8)).all()
    assert ((grass[:, 3] >= 0.45) & (grass[:, 3] <= 1.15)).all()
    assert set(np.unique(flowers[:, 4])) <= {0.0, 1.0, 2.0} and set(np.unique(grass[:, 5])) <= {0.0, 1.0}
    # free ground: nothing within the walk lines' clearance, nothing on the sidewalk or in the building
    g = PP.FreeGround(scene)
    for xy, r in ((grass[:, :2], PV.TUFT_R_M), (mats[:, :2], PV.MAT_R_M)):
        assert not g.near_lines(xy, PP.CLEAR_M).any() and g.free(xy, r).all()
    # never on a hedge piece: every tuft is at least 0.2 m from every hedge cell (the piece edge, less the jitter)
    hedges = PG.plan_greenery(scene)["hedge"]
    if len(hedges):
        d = np.hypot(*(grass[:, None, :2] - hedges[None, :, :2]).transpose(2, 0, 1))
        assert d.min() > 0.2


def test_lawn_edge_by_hand():
    from shapely.geometry import Point, Polygon

    from urbanarena.render.scene3d.scene import LandArea, Scene

    square = [(0, 0), (20, 0), (20, 20), (0, 20)]
    scene = Scene(name="lawn", land_areas=(LandArea("lawn1", tuple(square), kind="grass"),
                                           LandArea("bed", ((40, 0), (50, 0), (50, 10)), kind="planting")))
    plan = PV.plan_verges(scene)
    grass = plan["grass"]
    # 80 m of outline sampled every 0.65 m from s = 0: 124 candidates, none in the planting bed; those jittered
    # along past a corner (only those within 0.26 m of one can be: s = 0, 20.15, 59.8, 79.95) are left out
    assert len(np.arange(0.0, 80.0 + 1e-9, 0.65)) == 124 and 124 - 4 <= len(grass) <= 124
    assert len(plan["mat"]) == 0
    poly = Polygon(square)
    d = np.array([poly.exterior.distance(Point(x, y)) for x, y in grass[:, :2]])
    inside = np.array([poly.contains(Point(x, y)) for x, y in grass[:, :2]])
    # 0.35 m inside; a tuft jittered along past a corner is nearer the other side
    assert inside.all() and (d <= 0.35 + 1e-9).all() and (np.abs(d - 0.35) < 1e-9).mean() > 0.9
    assert np.array_equal(grass, PV.plan_verges(scene)["grass"])


def test_far_share_over_a_long_street():
    from urbanarena.render.scene3d.scene import Scene

    scene = Scene(name="long", roads=(Road("r", [(-600, 0), (600, 0)], 6.0, 2.0),))
    grass = PV.plan_verges(scene)["grass"]
    assert len(grass) > 1000
    assert abs(grass[:, 5].mean() - PV.FAR_SHARE) < 0.05
    # a piece carries a verge with 1 - 0.22 (not a hedge) times 0.55: about 43 % of the street's two sides
    # (2 sides x 2 rows x 1200 m / 0.65 m = 7385 samples)
    share = len(grass) / (2 * 2 * 1200 / 0.65)
    assert 0.3 < share < 0.56


# --------------------------------------------------------------------------------------------- templates
def test_crop_uv_by_hand():
    uv = np.array([(2 * 3 + 0.0, 0.0), (2 * 3 + 1.0, 1.0), (2 * 3 + 0.5, 0.5)])
    got = PGM.crop_uv(uv, (0.25, 0.75, 0.1, 0.7))
    assert np.allclose(got, [(6.25, 0.1), (6.75, 0.7), (6.5, 0.4)])


def test_templates_by_hand():
    t = PVM.grass_tuft(0)
    assert t.n_triangles == 6 + 2 * PVM.SPLAYED and t.positions[:, 2].min() == pytest.approx(-0.04, abs=1e-6)
    # the splayed card (0.8 of the width, 0.5 rad up): its top corners 0.8 cos 0.5 out and 0.4 aside, 0.8 sin 0.5
    # (less the 0.03 it starts below the ground) up
    assert PVM.SPLAYED == 1 and PVM.SPLAY_SIZE == 0.8 and PVM.SPLAY_RAD == 0.5
    low = t.positions[18:]
    assert np.hypot(low[:, 0], low[:, 1]).max() == pytest.approx(np.hypot(0.8 * math.cos(0.5), 0.4), abs=1e-6)
    assert low[:, 2].max() == pytest.approx(0.8 * math.sin(0.5) - 0.03, abs=1e-6)
    assert t.positions[:, 2].max() <= 1.0
    s = t.uv[:, 0] - 2 * PGM.PINE
    s0, s1, v0, v1 = PVM.GRASS_WINDOW
    assert (s >= s0 - 1e-6).all() and (s <= s1 + 1e-6).all() and (t.uv[:, 1] >= v0 - 1e-6).all()
    assert (t.uv[:, 1] <= v1 + 1e-6).all()
    # base corners in shade: tint * (0.45 + 0.55 * 0) at z <= 0
    low = t.positions[:, 2] <= 0
    assert np.allclose(t.colours[low], np.asarray(PVM.GRASS_TINT[0]) * 0.45, atol=1e-6)
    assert PVM.grass_tuft(2).uv[:, 0].min() >= 2 * PGM.ASH
    m = PVM.mat()
    assert m.n_triangles == 2 and np.allclose(m.positions[:, 2], PVM.MAT_Z_M)
    assert np.allclose(np.abs(m.positions[:, :2]), 0.5) and np.allclose(m.normals, (0, 0, 1))
    r0, r1, c0, c1 = PVM.MAT_WINDOW_PX
    assert np.allclose(sorted(set(np.round(m.uv[:, 0], 6))), [2 * PGM.OAK + c0 / 256, 2 * PGM.OAK + c1 / 256])
    assert np.allclose(sorted(set(np.round(m.uv[:, 1], 6))), [1 - r1 / 256, 1 - r0 / 256])
    f = PVM.flower(1)
    assert f.n_triangles == 6 and (f.uv[:, 0] >= 2 * PGM.ASPEN).all() and (f.positions[:, 2] > 0.3).all()
    h = PGM.hedge_cell(0)
    # the core's two long sides and top (6 triangles), the soil quad (2), 5 + 5 side cards, 2 over the top, 2 sprigs
    assert h.n_triangles == 6 + 2 + 2 * 14
    assert h.positions[:, 2].max() > 0.95                       # sprigs stand out of the 0.8 m core: ragged top
    assert PGM.bush(0).n_triangles == 5 * 2 + 8 + 22 * 2     # the core's five faces, an 8-sided soil fan, 22 cards
    assert np.array_equal(PGM.hedge_cell(1).positions, PGM.hedge_cell(1).positions)


def test_verge_mesh_split_by_hand():
    plan = {"grass": np.array([(0, 0, 0.5, 0.6, 0.0, 1.0), (3, 0, 0.5, 0.6, 1.0, 0.0)]),
            "flower": np.array([(1, 1, 0.4, 0.0, 2.0)]), "mat": np.array([(5, 5, math.pi / 2)])}
    far, det = PVM.verge_mesh(plan)
    assert far.n_triangles == 6 and det.n_triangles == 8 + 6 + 2    # the mat and the splayed cards near-only
    # the mat turned a quarter: along (0.85 m) now runs along y, across (1.3 m) along x
    mp = det.positions[np.isclose(det.positions[:, 2], PVM.MAT_Z_M) & (np.abs(det.positions[:, 0] - 5) < 1)]
    assert np.allclose(np.ptp(mp[:, 0]), PV.MAT_ACROSS_M) and np.allclose(np.ptp(mp[:, 1]), PV.MAT_ALONG_M)
    # the far tuft stands at x = 0 scaled to 0.6 m high; the detail one at x = 3
    assert np.abs(det.positions[:, 0] - 3).min() < 0.5 and far.positions[:, 2].max() <= 0.6 + 1e-6


def test_mat_window_is_opaque_in_the_fetched_oak_photo():
    from urbanarena import paths
    from urbanarena.render.assets import package_by_name
    from urbanarena.render.scene3d import trees_photo as TP

    folder = paths.assets_dir() / package_by_name(TP.PACKAGE).key
    if not (folder / TP.LEAF_FILES[0]).is_file():
        pytest.skip("ez-tree leaves not fetched")
    atlas = TP.build_atlas(folder)
    r0, r1, c0, c1 = PVM.MAT_WINDOW_PX
    assert (atlas[r0:r1, PGM.OAK * TP.CELL_PX + c0:PGM.OAK * TP.CELL_PX + c1, 3] >= 128).all()


# --------------------------------------------------------------------------------------------- rendering
def test_photo_identity_names_the_verges(monkeypatch):
    from urbanarena.render.scene3d.render_identity import _photo_identity

    on = _photo_identity()["greenery"]
    assert on == PG.GREENERY_VERSION
    monkeypatch.setattr(PG, "VERGES", False)
    assert _photo_identity()["greenery"] != on


@needs_gl
def test_flat_and_realistic_never_draw_verges(monkeypatch):
    from urbanarena.render.scene3d.renderer import SceneRenderer

    def boom(*a, **k):
        raise AssertionError("only the photo style draws verges")

    monkeypatch.setattr(PG, "verge_arrays", boom)
    monkeypatch.setattr(PG, "verges_for", boom)
    for style in ("flat", "realistic"):
        SceneRenderer(small_scene(), RenderSettings(style=style)).render_view(0.0, -4.0, 0.0, 0.0, 90.0, 64, 36)


@needs_gl
def test_photo_verges_draw_near_and_are_deterministic(monkeypatch):
    from test_photo_trees import _card_kit

    from urbanarena.render.scene3d import photo_atmosphere
    from urbanarena.render.scene3d import trees_photo as TP
    from urbanarena.render.scene3d.renderer import SceneRenderer

    kit = _card_kit(np.full((TP.CELL_PX, TP.CELL_PX), 255, np.uint8))
    monkeypatch.setattr(TP, "photo_trees", lambda quiet=False: kit)
    monkeypatch.setattr(photo_atmosphere, "ENABLED", False)
    monkeypatch.setattr(PC, "photo_clutter", lambda quiet=False: FAKE_KIT)
    scene = small_scene()
    arrays = PG.verge_arrays(scene)
    assert [(t, d) for _, t, d in arrays] == [(PV.MID_TILE_M, PV.MID_DISTANCE_M),
                                              (PV.DETAIL_TILE_M, PV.DETAIL_DISTANCE_M)]

    def view(x=0.0):
        r = SceneRenderer(scene, RenderSettings(style="photo"))
        return r.render_view(x, -4.0, 0.0, -5.0, 90.0, 160, 90), r   # facing the verge 11 m off (y = 6.6..7.9)

    (on, r), (again, _) = view(), view()
    assert np.array_equal(on, again)
    # the mid and detail arrays are drawn in their own tiles, to their own distances
    dists = [d for _, d, _ in r._near_vaos]
    assert PV.MID_DISTANCE_M in dists and PV.DETAIL_DISTANCE_M in dists
    monkeypatch.setattr(PG, "VERGES", False)
    assert PG.verge_arrays(scene) == []
    off, r_off = view()
    assert not np.array_equal(on, off) and len(r_off._near_vaos) == len(r._near_vaos) - 2
