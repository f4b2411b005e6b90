"""The photo style's building details (render/scene3d/photo_building_detail.py): the stepped cornice on a square
footprint worked by hand (offsets, mitred corners, outward normals, nothing inside the wall), determinism, the
feature index, and the ID pass of a rendered view (a cornice pixel reports its building)."""

from __future__ import annotations

import numpy as np
import pytest
from shapely.geometry import Point, Polygon

from test_render_styles import small_scene
from urbanarena.render.scene3d import photo_building_detail as D
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.render.scene3d.mesh_primitives import MeshBuilder
from urbanarena.render.scene3d.scene import Building, Scene

needs_gl = pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")

SQUARE = [(0, 0), (10, 0), (10, 10), (0, 10)]


def _office(h=15.0, fp=SQUARE, **kw):
    # "office": not residential, so no balconies; flat roof (taller than the seeded pitched roofs' 16 m below)
    return Building("sq", fp, h, kind="office", roof_shape="flat", material="plaster", **kw)


def test_ring_mitres_and_offsets_of_a_square_by_hand():
    ring = D.building_rings(_office(fp=[(0, 0), (0, 10), (10, 10), (10, 0)]))[0]   # clockwise in: turned round
    x, y = ring[:, 0], ring[:, 1]
    assert 0.5 * (x * np.roll(y, -1) - np.roll(x, -1) * y).sum() == 100.0   # shoelace: counter-clockwise
    assert sorted(map(tuple, ring.tolist())) == [(0, 0), (0, 10), (10, 0), (10, 10)]
    ring = np.array(SQUARE, float)
    # edge 0 runs east along y = 0: outward normal (dy, -dx) = (0, -1); edge 3 runs south along x = 0: (-1, 0)
    assert D.edge_normals(ring).tolist() == [[0, -1], [1, 0], [0, 1], [-1, 0]]
    # corner (0, 0): (n3 + n0) / (1 + n3.n0) = (-1, -1)
    assert D.mitres(ring).tolist() == [[-1, -1], [1, -1], [1, 1], [-1, 1]]
    assert np.allclose(D.offset_ring(ring, 0.4), [[-0.4, -0.4], [10.4, -0.4], [10.4, 10.4], [-0.4, 10.4]])
    assert np.allclose(D.offset_ring(ring, -0.25), [[0.25, 0.25], [9.75, 0.25], [9.75, 9.75], [0.25, 9.75]])
    assert not D.folds(ring, -0.25) and not D.folds(ring, 0.5)
    strip = np.array([(0, 0), (10, 0), (10, 0.4), (0, 0.4)], float)      # 0.4 m wide: a 0.25 m inset crosses over
    assert D.folds(strip, -0.25) and not D.folds(strip, 0.1)


def test_cornice_profile_and_its_faces_by_hand():
    b = _office()
    steps = D.cornice_profile(b)
    corona = D.CORONA_M[0] + (D.CORONA_M[1] - D.CORONA_M[0]) * D.stable_unit("sq", "photo-corona")
    assert 0.3 < corona <= 0.5
    # fascia 14.0-14.25 m a quarter out, bed moulding 14.25-14.5 m at 0.55, corona 14.5-15 m
    assert np.allclose(steps, [(14.0, 14.25, 0.25 * corona), (14.25, 14.5, 0.55 * corona), (14.5, 15.0, corona)])
    parts = D.profile_quads(np.array(SQUARE, float), steps)
    # per step an underside (the projection grows upwards) and a front, then the top back to the wall: 7 bands
    assert len(parts) == 7 and all(q.shape == (4, 4, 3) for q, _ in parts)
    (q0, n0), (q1, n1) = parts[0], parts[1]
    assert np.allclose(n0, [0, 0, -1]) and np.allclose(q0[..., 2], 14.0)       # underside of the fascia
    d = 0.25 * corona
    # the fascia's south face: y = -d from x = -d to 10 + d (mitred corners), 14.0 to 14.25 m, facing south
    assert np.allclose(q1[0], [[-d, -d, 14.0], [10 + d, -d, 14.0], [10 + d, -d, 14.25], [-d, -d, 14.25]])
    assert np.allclose(n1[0], [0, -1, 0])
    top_q, top_n = parts[-1]
    assert np.allclose(top_n, [0, 0, 1]) and np.allclose(top_q[..., 2], 15.0)
    assert np.allclose(top_q[0, :, :2], [[0, 0], [10, 0], [10 + corona, -corona], [-corona, -corona]])
    # fronts face away from the building, undersides down, the top up
    for q, n in parts:
        if abs(n[0, 2]) < 0.5:
            assert (np.einsum("ij,ij->i", n[:, :2], q.mean(axis=1)[:, :2] - 5.0) > 0).all()


def test_nothing_inside_the_wall_and_every_vertex_in_the_building():
    for b in (_office(), _office(h=20.0, fp=[(0, 0), (20, 0), (20, 8), (8, 8), (8, 20), (0, 20)]),
              Building("res", [(0, 0), (30, 0), (30, 12), (0, 12)], 18.0, kind="apartments", material="plaster")):
        mb = MeshBuilder()
        D.building_detail(b, False, 7, mb)
        m = mb.build()
        assert m.n_triangles > 0 and (m.feature == 7).all()
        inside = Polygon(b.footprint).buffer(-1e-6)
        below_roof = m.positions[:, 2] < b.height_m - 1e-6
        assert not any(inside.contains(Point(p[:2])) for p in m.positions[below_roof])
        assert m.positions[:, 2].min() >= 0.0
        assert m.positions[:, 2].max() <= b.height_m + 3.0                 # parapet and roof boxes
        assert np.allclose(np.linalg.norm(m.normals, axis=1), 1.0, atol=1e-5)


def test_balconies_on_residential_walls_only_and_deterministic():
    res = Building("res", [(0, 0), (30, 0), (30, 12), (0, 12)], 18.0, kind="apartments", material="plaster")
    assert D.is_residential(res, shop=False)
    assert not D.is_residential(_office(h=18.0), shop=False)
    assert not D.is_residential(Building("low", SQUARE, 9.0, kind="apartments"), shop=False)
    (slabs, _), (rails, _) = D.balconies(res, 3.2, 3.6)
    assert len(slabs) > 0 and len(rails) > 0
    q = np.concatenate([q for q, _ in slabs])
    # slabs stand out of the wall, at most BALCONY_DEPTH_M, storey floors from 3.6 + 3.2 m (the first storey
    # above the ground floor) up to one storey under the cornice
    fp = Polygon(res.footprint)
    assert max(fp.exterior.distance(Point(p[:2])) for p in q.reshape(-1, 3)) <= D.BALCONY_DEPTH_M + 1e-6
    assert q[..., 2].min() >= 3.6 + 3.2 - D.BALCONY_SLAB_M - 1e-6 and q[..., 2].max() <= 18.0 - 1.0
    again = D.balconies(res, 3.2, 3.6)
    assert all(np.array_equal(a, b) for (pa, _), (pb, _) in zip(D.balconies(res, 3.2, 3.6), again)
               for (a, _), (b, _) in zip(pa, pb))


def test_glass_walls_follow_the_facade_programs_pick():
    from urbanarena.render.scene3d.building_look import _hf, rhash, wall_seed

    assert D.wall_is_glass(Building("g", SQUARE, 5.0, material="glass"), 0)         # tagged glass at any height
    assert not D.wall_is_glass(Building("g", SQUARE, 30.0, material="brick"), 0)
    # untagged: the seeded pick of the wall, glass from 0.9 up on buildings at least 12 m tall
    picks = {i: _hf(rhash(wall_seed("sq", i), 3, 5), 0) for i in range(4)}
    untagged = Building("sq", SQUARE, 20.0)
    assert [D.wall_is_glass(untagged, i) for i in range(4)] == [picks[i] >= 0.9 for i in range(4)]
    assert not any(D.wall_is_glass(Building("sq", SQUARE, 11.0), i) for i in range(4))
    glass = Building("g", SQUARE, 20.0, material="glass")
    assert D.glass_share(glass) == 1.0 and D.cornice_profile(glass) == [(19.7, 20.0, D.COPING[2])]


def test_detail_mesh_is_deterministic_and_carries_each_buildings_feature():
    scene = small_scene()
    features = tuple(("building", b.id) for b in scene.buildings)
    (far, near), (far2, near2) = D.detail_meshes(scene, features, set()), D.detail_meshes(scene, features, set())
    for x, y in ((far, far2), (near, near2)):
        assert np.array_equal(x.positions, y.positions) and np.array_equal(x.colours, y.colours)
    # the far part stands at the roof line (cornice 1 m under it at most, parapet and roof boxes over it), the near
    # part under it (plinths, downpipes, balconies)
    tops = {k: bld.height_m for k, bld in enumerate(scene.buildings, 1)}
    assert all(p[2] >= tops[int(f)] - 1.0 - 1e-5 for p, f in zip(far.positions, far.feature))
    assert all(p[2] <= tops[int(f)] - 1.0 + 1e-5 for p, f in zip(near.positions, near.feature))
    a = far
    for k, bld in enumerate(scene.buildings, 1):
        fp = Polygon(bld.footprint)
        sel = a.feature == k
        assert sel.any()
        # every vertex of building k's details is within 1.2 m of its footprint (balconies 1.1 m deep)
        assert max(fp.distance(Point(p[:2])) for p in a.positions[sel]) < 1.2


def test_photo_content_has_the_details_only_when_enabled(monkeypatch):
    from urbanarena.render.scene3d.meshes import build_scene_meshes
    from urbanarena.render.scene3d.photo_content import add_photo_content

    scene = small_scene()
    m = build_scene_meshes(scene, style="realistic")
    monkeypatch.setattr(D, "ENABLED", False)
    c_off = add_photo_content(m, scene)
    monkeypatch.setattr(D, "ENABLED", True)
    c_on = add_photo_content(m, scene)
    off, on = c_off.meshes, c_on.meshes
    far, near = D.detail_meshes(scene, m.features, {s.building_id for s in m.placements if s.building_id},
                                facades=m.facades)
    assert on.solids.n_triangles == off.solids.n_triangles                # the scene's meshes untouched
    assert c_off.building_detail == []
    (m_far, d_far), (m_near, d_near) = c_on.building_detail
    assert (d_far, d_near) == (D.FAR_M, D.NEAR_M) and D.NEAR_M < D.FAR_M
    assert m_far.n_triangles == far.n_triangles > 0 and m_near.n_triangles == near.n_triangles > 0
    assert np.array_equal(m_far.positions, far.positions) and np.array_equal(m_near.positions, near.positions)


@needs_gl
def test_cornice_pixels_report_their_building_in_the_id_pass(monkeypatch):
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    scene = Scene(name="one", buildings=(_office(h=15.0, fp=[(-10, 10), (10, 10), (10, 20), (-10, 20)]),))
    view = (0.0, 0.0, 0.0, 35.0, 60.0, 240, 160)    # looking north and up at the south wall's top (y = 10, 15 m)
    monkeypatch.setattr(D, "ENABLED", False)
    bare = SceneRenderer(scene, RenderSettings(style="photo"))
    monkeypatch.setattr(D, "ENABLED", True)
    full = SceneRenderer(scene, RenderSettings(style="photo"))
    ids0, ids1 = bare.render_ids(*view), full.render_ids(*view)
    assert full.features == (("building", "sq"),)
    grown = (ids0 == 0) & (ids1 != 0)          # sky before: cornice, parapet or a roof box now
    assert grown.sum() > 100
    assert set(np.unique(ids1[ids0 != ids1]).tolist()) == {1}
    img0, img1 = bare.render_view(*view), full.render_view(*view)
    assert np.abs(img1[grown].astype(int) - img0[grown].astype(int)).sum(axis=1).mean() > 20   # drawn, too


def test_photo_identity_names_the_building_details(monkeypatch):
    from urbanarena.render.scene3d.render_identity import _photo_identity

    assert _photo_identity()["buildings"] == D.DETAIL_VERSION
    monkeypatch.setattr(D, "ENABLED", False)
    assert _photo_identity()["buildings"] is None


@needs_gl
def test_balcony_undersides_report_their_building_in_the_id_pass(monkeypatch):
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    res = Building("res", [(0, 0), (30, 0), (30, 12), (0, 12)], 18.0, kind="apartments", material="plaster")
    (slabs, _), _ = D.balconies(res, 3.2, 3.6)
    under, n_under = slabs[1][0][1], slabs[1][1][1]      # the first balcony's (top, underside) pair
    assert n_under.tolist() == [0, 0, -1]
    cx, cy = under[:, :2].mean(axis=0)
    scene = Scene(name="res", buildings=(res,))
    fp = Polygon(res.footprint)
    on_wall = fp.exterior.interpolate(fp.exterior.project(Point(cx, cy)))
    yaw = float(np.degrees(np.arctan2(cx - on_wall.x, cy - on_wall.y)))   # away from the wall
    view = (float(cx), float(cy), yaw, 88.0, 30.0, 64, 64)   # under it, looking up, tilted away from the wall
    monkeypatch.setattr(D, "ENABLED", False)
    bare = SceneRenderer(scene, RenderSettings(style="photo")).render_ids(*view)
    monkeypatch.setattr(D, "ENABLED", True)
    r = SceneRenderer(scene, RenderSettings(style="photo"))
    assert [d for _, d in r.building_detail_vaos] == [D.FAR_M, D.NEAR_M]
    full = r.render_ids(*view)
    assert bare[32, 32] == 0 and full[32, 32] == 1          # sky before, the balcony (building 1) now


def test_cornice_colour_and_shaded_undersides():
    b = _office()
    mb = MeshBuilder()
    D.building_detail(b, False, 1, mb)
    m = mb.build()
    wall = D.wall_rgb(b)
    tone = D.CORNICE_TONES[D.stable_index("sq", len(D.CORNICE_TONES), "photo-cornice-tone")]
    cor = np.clip(wall * tone, 0.0, D.CORNICE_MAX)
    fronts = (np.abs(m.normals[:, 2]) < 0.5) & (m.positions[:, 2] > b.height_m - 1.0 + 1e-6) \
        & (m.positions[:, 2] < b.height_m - 1e-6)
    under = (m.normals[:, 2] < -0.5) & (m.positions[:, 2] > b.height_m - 1.0 - 1e-6)
    assert fronts.any() and under.any()
    assert np.allclose(m.colours[fronts], cor, atol=1e-6)
    assert np.allclose(m.colours[under], cor * D.SOFFIT_SHADE, atol=1e-6)
    # no face looks up from over STREET_EYE_MAX_M (the cornice's top, roof box tops): only the plinth's top does
    ups = m.normals[:, 2] > 0.5
    assert ups.any() and m.positions[ups, 2].max() <= D.STREET_EYE_MAX_M
