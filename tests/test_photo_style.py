"""The ``photo`` render style's first step (issue 24 item 2): textured models for the population, their shadows,
the fallback to ``realistic`` without fetched assets, determinism. Hand-made models and packages only (a fake
.deb served from 127.0.0.1, tests/assets_util.py): no network, no real assets needed."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest

import assets_util as A
from test_render_styles import small_scene
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.render.scene3d.photo_models import (ModelFormatError, _sample, bake_colours, cluster_decimate,
                                                    load_model, read_mtl, read_obj)
from urbanarena.render.scene3d.population import DEFAULT_POPULATION_OF_STYLE, Placement, Snapshot
from urbanarena.render.scene3d.renderer import RenderSettings

needs_gl = pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")


# ----------------------------------------------------------------------------------------------- reader
def test_obj_reader_fans_polygons_and_reads_negative_indices(tmp_path):
    (tmp_path / "q.obj").write_text("mtllib q.mtl\nv 0 0 0\nv 2 0 0\nv 2 3 0\nv 0 3 0\nvt 0 0\nvt 1 0\nvt 1 1\n"
                                    "usemtl a\nf 1/1 2/2 3/3 4\nusemtl b\nf -4 -3 -2\n")
    P, UV, mats, libs = read_obj(tmp_path / "q.obj")
    # the quad fans into (1,2,3), (1,3,4); "-4 -3 -2" is (1,2,3) again
    assert P.shape == (3, 3, 3) and mats == ["a", "a", "b"] and libs == ["q.mtl"]
    assert P[1].tolist() == [[0, 0, 0], [2, 3, 0], [0, 3, 0]]
    assert P[2].tolist() == P[0].tolist()
    assert UV[0].tolist() == [[0, 0], [1, 0], [1, 1]]
    assert np.isnan(UV[1, 2]).all() and np.isnan(UV[2]).all()   # corners without vt


def test_malformed_obj_and_mtl_name_file_and_line(tmp_path):
    (tmp_path / "bad.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n")
    with pytest.raises(ModelFormatError, match=r"bad\.obj:4"):
        read_obj(tmp_path / "bad.obj")
    (tmp_path / "bad2.obj").write_text("v 0 zero 0\n")
    with pytest.raises(ModelFormatError, match=r"bad2\.obj:1"):
        read_obj(tmp_path / "bad2.obj")
    (tmp_path / "bad.mtl").write_text("newmtl a\nKd 1 x 1\n")
    with pytest.raises(ModelFormatError, match=r"bad\.mtl:2"):
        read_mtl(tmp_path / "bad.mtl")
    with pytest.raises(ModelFormatError, match="missing.obj"):
        read_obj(tmp_path / "missing.obj")


def test_texture_sampling_and_baking_by_hand(tmp_path):
    tex = np.array(A.PIXELS, np.float32).reshape(2, 2, 3) / 255.0   # rows: (red, green), (blue, white)
    # texel centres: u = 0.25 / 0.75, v (up) = 0.75 for the top row, 0.25 for the bottom row
    got = _sample(tex, np.array([[0.25, 0.75], [0.75, 0.75], [0.25, 0.25], [0.75, 0.25], [0.5, 0.75]]))
    assert np.allclose(got[:4], tex.reshape(4, 3))
    assert np.allclose(got[4], (tex[0, 0] + tex[0, 1]) / 2)            # halfway between red and green
    (tmp_path / "t.png").write_bytes(A.png_bytes())
    mats = read_mtl(_write(tmp_path / "t.mtl", "newmtl t\nKd 0.5 1 1\nmap_Kd t.png\n"
                                  "newmtl plain\nKd 0.1 0.2 0.3\n"))
    uv = np.array([[[0.25, 0.75]] * 3, [[0.0, 0.0]] * 3])            # all corners on the red texel; no texture
    col, paint = bake_colours(uv, ["t", "plain"], mats)
    assert np.allclose(col[0], [[200 / 255 * 0.5, 10 / 255, 10 / 255]] * 3, atol=1e-6)
    assert np.allclose(col[1], [[0.1, 0.2, 0.3]] * 3) and not paint.any()


def _write(path, text):
    path.write_text(text)
    return path


def test_cluster_decimation_drops_collapsed_triangles():
    # a 1 x 1 square of two triangles plus a sliver whose corners all fall into one 0.5 cell
    pos = np.array([[[0, 0, 0], [1, 0, 0], [1, 1, 0]], [[0, 0, 0], [1, 1, 0], [0, 1, 0]],
                    [[0.1, 0.1, 0], [0.2, 0.1, 0], [0.1, 0.2, 0]]], np.float64)
    cols = np.arange(27, dtype=np.float32).reshape(3, 3, 3) / 27
    p, n, c, _ = cluster_decimate(pos, cols, np.zeros((3, 3), np.float32), 0.5)
    assert len(p) == 6                                            # the sliver collapsed
    assert np.allclose(c, cols[:2].reshape(-1, 3))                # kept triangles keep their corner colours
    assert np.allclose(np.abs(n[:, 2]), 1.0)                     # the plane's normal


def test_model_is_turned_scaled_and_cached(tmp_path):
    # a 2 (x) x 6 (y, up) x 4 (z, front) box corner fan in "cm": height 6 -> 1; front +z -> local +y
    (tmp_path / "m.obj").write_text("v 0 0 0\nv 2 0 0\nv 2 6 0\nv 0 0 4\nv 0 6 4\nf 1 2 3\nf 1 4 5\n")
    m = load_model(tmp_path / "m.obj", "height", 0.0, cache_dir=tmp_path / "cache")
    assert m.size == (2.0, 4.0, 6.0)
    lo, hi = m.positions.min(axis=0), m.positions.max(axis=0)
    assert np.allclose(lo, [-1 / 6, -2 / 6, 0.0]) and np.allclose(hi, [1 / 6, 2 / 6, 1.0])
    # the corner at model (0, 0, 4): x -> -x (right), z (front) -> forward: local (+1/6, +2/6, 0)
    assert np.isclose(np.linalg.norm(m.positions - [1 / 6, 2 / 6, 0.0], axis=1), 0, atol=1e-6).any()
    files = list((tmp_path / "cache").glob("m-*.npz"))
    assert len(files) == 1
    again = load_model(tmp_path / "m.obj", "height", 0.0, cache_dir=tmp_path / "cache")
    assert np.array_equal(again.positions, m.positions) and again.size == m.size


# ----------------------------------------------------------------------------------------------- shadows
def test_shade_mesh_has_the_hand_computed_areas():
    from urbanarena.render.scene3d.population_photo import CONTACT_GROW, CONTACT_K, CONTACT_SIDES, shade_mesh

    # a 1 x 1 x 1 m placement facing north; sun due south 45 degrees up: its shadow runs 1 m north, so the
    # hull of the footprint and the top's shadow is 1 x 2 = 2 m2
    p = Placement("x", "parked_car", 10.0, 20.0, 0.0, 1.0, 1.0, 1.0, (0, 0, 0), "road:r")
    e = math.radians(45.0)
    mesh = shade_mesh([p], (0.0, -math.cos(e), math.sin(e)), 0.6)
    T = mesh.positions.reshape(-1, 3, 3).astype(np.float64)
    k = mesh.colours.reshape(-1, 3, 3)[:, :, 0]
    area = 0.5 * np.abs(np.cross(T[:, 1] - T[:, 0], T[:, 2] - T[:, 0])[:, 2])
    sun = np.all(np.isclose(k, 0.6), axis=1)
    assert math.isclose(area[sun].sum(), 2.0, rel_tol=1e-6)
    assert T[sun][..., 1].min() == pytest.approx(19.5) and T[sun][..., 1].max() == pytest.approx(21.5)
    blob = ~sun
    a = b = CONTACT_GROW * 0.5
    assert math.isclose(area[blob].sum(), CONTACT_SIDES / 2 * math.sin(2 * math.pi / CONTACT_SIDES) * a * b,
                        rel_tol=1e-5)  # float32 positions
    assert np.isclose(k[blob][:, 0], CONTACT_K).all() and np.isclose(k[blob][:, 1:], 1.0).all()
    # a person of the same box: the top is 0.6 of the footprint (y 20.7-21.3, x 9.7-10.3 after the 1 m shift):
    # the hull is the 1 x 1 foot plus a trapezoid of widths 1 and 0.6 over 0.8 m: 1 + 0.64 m2
    person = Placement("y", "pedestrian", 10.0, 20.0, 0.0, 1.0, 1.0, 1.0, (0, 0, 0), "road:r")
    pm = shade_mesh([person], (0.0, -math.cos(e), math.sin(e)), 0.6)
    T2 = pm.positions.reshape(-1, 3, 3).astype(np.float64)
    sun2 = np.all(np.isclose(pm.colours.reshape(-1, 3, 3)[:, :, 0], 0.6), axis=1)
    area2 = 0.5 * np.abs(np.cross(T2[:, 1] - T2[:, 0], T2[:, 2] - T2[:, 0])[:, 2])
    assert math.isclose(area2[sun2].sum(), 1.64, rel_tol=1e-5)
    assert T2[sun2][..., 1].max() == pytest.approx(21.3, abs=1e-5)
    # no sun (night): the contact blob only
    night = shade_mesh([p], (0.0, 0.0, -1.0), 0.6)
    assert night.n_triangles == CONTACT_SIDES
    # several at once: placement by placement, each its blob then its sun shadow (the order the ground is
    # multiplied in), the same triangles as one at a time
    both = shade_mesh([p, person], (0.0, -math.cos(e), math.sin(e)), 0.6)
    assert both.n_triangles == mesh.n_triangles + pm.n_triangles
    np.testing.assert_array_equal(both.positions, np.concatenate([mesh.positions, pm.positions]))
    np.testing.assert_array_equal(both.colours, np.concatenate([mesh.colours, pm.colours]))
    assert shade_mesh([], (0.0, 0.0, 1.0), 0.6).n_triangles == 0


# ----------------------------------------------------------------------------------------------- models
@pytest.fixture(scope="module")
def fake_models(tmp_path_factory):
    """The fake package's tiny person (tests/assets_util.py: a textured tetrahedron) fetched from 127.0.0.1."""
    from urbanarena.render.assets import ensure_assets
    from urbanarena.render.scene3d.population_photo import PhotoCatalogue, load_photo_models

    tmp = tmp_path_factory.mktemp("photo-assets")
    deb = A.build_deb(tmp)
    with A.Server({"/fake.deb": deb.read_bytes()}) as srv:
        pkg = A.deb_package(srv.url("/fake.deb"), deb)
        st = ensure_assets([pkg], root=tmp / "assets", use_clients=False)
    assert st.available, st.message
    cat = PhotoCatalogue(adults=("people/man/man.obj",), children=(), cars=(), vans=(), bicycles=())
    return load_photo_models(tmp / "assets" / pkg.key, cat, cache_dir=tmp / "models")


PERSON = Placement("p1", "pedestrian", 0.5, 4.0, 180.0, 0.35, 0.5, 1.75, (0, 0, 0), "road:r1", 0, 12345)
CAR = Placement("c1", "parked_car", -4.0, 2.5, 90.0, 4.4, 1.8, 1.5, (150, 28, 30), "road:r1", 1, 4)


def test_model_choice_is_seeded_and_falls_back_to_boxes(fake_models):
    from urbanarena.render.scene3d.population_photo import PhotoModels, model_for, photo_placements_mesh

    assert model_for(PERSON, fake_models) is fake_models.adults[0] and len(fake_models.adults[0]) == 4   # levels
    assert model_for(CAR, fake_models) is None                         # no car in the fake catalogue: boxes
    two = PhotoModels(fake_models.adults * 2, (), (), (), "two")
    # the pick is sha256("person:<variant>") mod the pool, the same in every process (a second implementation)
    for v in (1, 2, 12345, 99):
        want = int.from_bytes(hashlib.sha256(f"person:{v}".encode()).digest()[:8], "big") % 2
        p = Placement("p", "pedestrian", 0, 0, 0, 0.35, 0.5, 1.7, (0, 0, 0), "a", 0, v)
        assert model_for(p, two) is two.adults[want]
    mesh = photo_placements_mesh([CAR, PERSON], fake_models)
    feats = set(np.unique(mesh.feature).tolist())
    assert feats == {1.0, 2.0}                                        # car (boxes) 1, person (model) 2
    person = mesh.positions[mesh.feature == 2.0]
    assert person[:, 2].max() == pytest.approx(1.75, abs=1e-5) and person[:, 2].min() == pytest.approx(0.0)


def _render(style, models, snap, renderer_cache={}):
    from urbanarena.render.scene3d.population_draw import PopulationObjects
    from urbanarena.render.scene3d.renderer import SceneRenderer

    from urbanarena.render.scene3d import photo_atmosphere

    key = (style, photo_atmosphere.ENABLED)
    r = renderer_cache.get(key)
    if r is None:
        r = renderer_cache[key] = SceneRenderer(small_scene(), RenderSettings(style=style, population="snapshot"))
    objs = PopulationObjects(snap, models)
    img = r.render_view(0.0, -4.0, 0.0, -5.0, 90.0, 320, 180, dynamic=objs)
    ids = r.render_ids(0.0, -4.0, 0.0, -5.0, 90.0, 320, 180, dynamic=objs)
    return img, ids - len(r.features)


@pytest.fixture
def no_photo_air(monkeypatch):
    """The photo style without its haze, skyline and rain (tests/test_photo_atmosphere.py covers those) and its
    building details (tests/test_photo_building_detail.py), so that only the population's pixels differ from the
    realistic style's."""
    from urbanarena.render.scene3d import photo_atmosphere, photo_building_detail

    monkeypatch.setattr(photo_atmosphere, "ENABLED", False)
    monkeypatch.setattr(photo_building_detail, "ENABLED", False)


@needs_gl
def test_photo_person_differs_from_the_box_and_is_deterministic(fake_models, no_photo_air):
    snap = Snapshot("n", 0.0, -4.0, (PERSON,))
    real, real_ids = _render("realistic", None, snap)
    photo, photo_ids = _render("photo", fake_models, snap)
    again, _ = _render("photo", fake_models, snap)
    assert np.array_equal(photo, again)                                 # same inputs, same pixels
    box, tet = real_ids == 1, photo_ids == 1
    assert box.sum() > 50 and tet.sum() > 50
    assert (box ^ tet).sum() > 0.2 * box.sum()                          # another shape
    diff = np.abs(photo.astype(int) - real.astype(int)).sum(axis=2)
    assert (diff[tet] > 30).mean() > 0.5                                # the model's own colours
    # away from the person and its shadows (left third of the view) nothing changed
    assert np.array_equal(photo[:, :100], real[:, :100])


@needs_gl
def test_photo_without_models_draws_realistic_pixels(no_photo_air):
    snap = Snapshot("n", 0.0, -4.0, (PERSON, CAR))
    real, _ = _render("realistic", None, snap)
    photo, _ = _render("photo", None, snap)
    assert np.array_equal(real, photo)


def test_photo_without_assets_falls_back_in_one_line(tmp_path, monkeypatch, capsys):
    from urbanarena.render.assets import fetch as F
    from urbanarena.render.scene3d import population_photo
    from urbanarena.render.scene3d.styles import settings_for_style

    monkeypatch.setenv("URBANARENA_HOME", str(tmp_path))
    monkeypatch.setattr(population_photo, "_LOADED", {})

    def no_download(*a, **k):
        raise AssertionError("the photo style must not download")

    monkeypatch.setattr(F, "fetch_package", no_download)
    assert population_photo.photo_models(quiet=True) is None              # (the render identity asks quietly)
    assert capsys.readouterr().err == ""
    s = settings_for_style("photo")
    assert s.style == "realistic" and s.population == "snapshot"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "photo assets unavailable" in err[0] and "'realistic'" in err[0]
    assert settings_for_style("photo").style == "realistic"            # said once per process
    assert capsys.readouterr().err == ""


def test_photo_settings_identity():
    photo, real = RenderSettings(style="photo"), RenderSettings(style="realistic")
    assert photo.is_realistic and photo.key() != real.key()
    assert DEFAULT_POPULATION_OF_STYLE["photo"] == "snapshot"
    with pytest.raises(ValueError, match="photo"):
        RenderSettings(style="photograph")


def test_far_placements_draw_coarser_levels(tmp_path):
    from urbanarena.render.scene3d.population_photo import LOD_FROM_M, PhotoCatalogue, load_photo_models, \
        photo_placements_mesh

    # a 1 x 2 "cm" vertical sheet of 40 x 80 squares (6400 triangles), as a person model
    n, m = 40, 80
    lines = [f"v {i / n:.4f} {2 * j / m:.4f} 0" for j in range(m + 1) for i in range(n + 1)]
    for j in range(m):
        for i in range(n):
            a = j * (n + 1) + i + 1
            lines.append(f"f {a} {a + 1} {a + n + 2} {a + n + 1}")
    (tmp_path / "people" / "s").mkdir(parents=True)
    (tmp_path / "people" / "s" / "s.obj").write_text("\n".join(lines) + "\n")
    models = load_photo_models(tmp_path, PhotoCatalogue(adults=("people/s/s.obj",), children=(), cars=(), vans=(),
                                                                bicycles=()))
    counts = [lvl.n_triangles for lvl in models.adults[0]]
    assert counts[0] <= 2 * n * m
    assert counts[0] > counts[1] > counts[2] > counts[3] > 0
    tri = []
    for d in (LOD_FROM_M[0] - 1, LOD_FROM_M[0] + 1, LOD_FROM_M[1] + 1, LOD_FROM_M[2] + 1):
        p = Placement("p", "pedestrian", d, 0.0, 0.0, 0.35, 0.5, 1.7, (0, 0, 0), "a", 0, 3)
        tri.append(photo_placements_mesh([p], models, camera_xy=(0.0, 0.0)).n_triangles)
    assert tri == counts
