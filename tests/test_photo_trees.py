"""The ``photo`` style's trees (:mod:`urbanarena.render.scene3d.trees_photo`): the atlas and its coverage-preserving
mips by hand, a leaf card's geometry, a card's alpha-tested coverage against a hand projection, species choice,
determinism, the fallback to the realistic trees, and photo vs realistic on a small scene. Hand-made textures
only (no fetched assets needed)."""

from __future__ import annotations

import math
import numpy as np
import pytest
from PIL import Image

from test_render_styles import small_scene
from urbanarena.render.scene3d import trees_photo as TP
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.render.scene3d.mesh_primitives import MeshData
from urbanarena.render.scene3d.renderer import RenderSettings
from urbanarena.render.scene3d.scene import Scene, StreetObject

needs_gl = pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")


# ------------------------------------------------------------------------------------------ atlas and mips
def test_fill_transparent_takes_the_opaque_mean():
    cell = np.zeros((2, 2, 4), np.float32)
    cell[0, 0] = (0.2, 0.4, 0.6, 1.0)
    cell[0, 1] = (0.4, 0.6, 0.8, 0.6)
    cell[1, 0] = (0.9, 0.0, 0.9, 0.1)                     # transparent: takes the mean (0.3, 0.5, 0.7)
    out = TP.fill_transparent(cell)
    assert np.allclose(out[1, 0], (0.3, 0.5, 0.7, 0.1)) and np.allclose(out[1, 1, :3], (0.3, 0.5, 0.7))
    assert np.allclose(out[0], cell[0])


def test_coverage_mips_keep_the_leaf_coverage_by_hand():
    c = 4                                                 # a 4-pixel cell per atlas cell
    atlas = np.zeros((c, TP.N_CELLS * c, 4), np.uint8)
    # leaf cell 0: its four 2x2 blocks hold 1, 2, 3 and 0 opaque texels -> level-1 alphas 0.25, 0.5, 0.75, 0
    opaque = [(0, 0), (0, 2), (1, 2), (2, 0), (2, 1), (3, 0)]
    for r, col in opaque:
        atlas[r, col, 3] = 255
    atlas[:, 4 * c:, :3] = 100                            # bark cells: opaque, never rescaled
    atlas[:, 4 * c:, 3] = 255
    atlas[0, 4 * c, :3] = 200
    mips = TP.coverage_mips(atlas, levels=2)
    assert mips[0] is atlas and mips[1].shape == (2, TP.N_CELLS * 2, 4)
    # level-0 coverage 6/16 = 0.375; the 0.625 quantile of (0, 0.25, 0.5, 0.75) (linear) is 0.25 + 0.875 * 0.25
    t = 0.25 + 0.875 * 0.25
    a = mips[1][:, 0:2, 3].astype(float) / 255
    want = np.array([[0.25, 0.5], [0.75, 0.0]]) * 0.5 / t
    assert np.allclose(a, want, atol=1 / 255)
    assert (a >= 0.5).mean() == 0.5                       # 2 of 4 texels, the nearest to 0.375 one can get
    bark = mips[1][:, 8:10]
    assert bark[0, 0, 0] == round((200 + 100 * 3) / 4) and (bark[..., 3] == 255).all()


def _write_fake_package(folder, leaf_alpha):
    """Leaf PNGs whose alpha is ``leaf_alpha`` (a 64x64 array) and opaque bark JPEGs."""
    (folder / "leaves").mkdir(parents=True)
    (folder / "bark").mkdir()
    rgba = np.zeros((64, 64, 4), np.uint8)
    rgba[..., :3] = (40, 140, 30)
    rgba[..., 3] = leaf_alpha
    for rel in TP.LEAF_FILES:
        Image.fromarray(rgba, "RGBA").save(folder / rel)
    for rel in TP.BARK_FILES:
        Image.new("RGB", (32, 32), (110, 80, 60)).save(folder / rel)


def test_missing_texture_is_named(tmp_path):
    _write_fake_package(tmp_path, np.full((64, 64), 255, np.uint8))
    (tmp_path / TP.BARK_FILES[2]).unlink()
    with pytest.raises(TP.TreeAssetError, match="birch_color_1k.jpg"):
        TP.build_atlas(tmp_path)
    (tmp_path / TP.BARK_FILES[2]).write_bytes(b"not a jpeg")
    with pytest.raises(TP.TreeAssetError, match="birch_color_1k.jpg"):
        TP.build_atlas(tmp_path)


# ------------------------------------------------------------------------------------------ geometry
def test_card_corners_and_uv_by_hand():
    q, uv = TP.card((1.0, 2.0, 3.0), (0.0, 0.0, 1.0), (1.0, 0.0, 0.0), 2.0, cell=3)
    want = [(0, 2, 3), (2, 2, 3), (2, 2, 5), (0, 2, 3), (2, 2, 5), (0, 2, 5)]
    assert np.allclose(q, want)
    assert np.allclose(uv[:, 0], [6.002, 6.998, 6.998, 6.002, 6.998, 6.002])   # cell 3: u in 6..7
    assert np.allclose(uv[:, 1], [0.002, 0.002, 0.998, 0.002, 0.998, 0.998])


def test_templates_are_seeded_and_species_vary():
    a = TP.tree_template(TP.SPECIES[0], 0)
    b = TP.tree_template(TP.SPECIES[0], 0)
    c = TP.tree_template(TP.SPECIES[0], 1)
    assert np.array_equal(a.positions, b.positions) and not np.array_equal(a.positions, c.positions)
    sp = TP.SPECIES[0]
    # trunk (7 sides), five branches (5 sides), two triangles per card
    assert a.n_triangles == 7 * 2 + 5 * 5 * 2 + sp.cards * 2
    cells = np.floor(a.uv[:, 0] / 2).astype(int)
    assert set(cells) == {sp.leaf_cell, sp.bark_cell}
    got = np.bincount([TP.species_of(f"node/{i}") for i in range(2000)], minlength=4) / 2000
    assert np.allclose(got, TP.SPECIES_WEIGHTS, atol=0.04)


def _card_kit(leaf_alpha_cell: np.ndarray) -> TP.TreeKit:
    """A kit whose every template is one 2 m card standing at the origin from z = 0.7 m, facing -y, in leaf cell 0
    whose alpha is ``leaf_alpha_cell`` (CELL_PX square, 0..255)."""
    atlas = np.zeros((TP.CELL_PX, TP.N_CELLS * TP.CELL_PX, 4), np.uint8)
    atlas[..., :3] = (200, 30, 30)
    atlas[:, :TP.CELL_PX, 3] = leaf_alpha_cell
    q, uv = TP.card((0.0, 0.0, 0.7), (0.0, 0.0, 1.0), (1.0, 0.0, 0.0), 2.0, cell=0)
    f32 = np.float32
    m = MeshData(q.astype(f32), np.tile(np.array([0, -1, 0], f32), (6, 1)), np.ones((6, 3), f32), uv=uv.astype(f32))
    return TP.TreeKit(atlas, TP.coverage_mips(atlas), tuple((m,) * TP.VARIANTS for _ in TP.SPECIES), "card")


def _one_tree_scene(oid="tree/1") -> Scene:
    return Scene(name="card", objects=(StreetObject(oid, "tree", 0.0, 0.0),), ground_extent=(-40, -40, 40, 40))


def _render(scene, style, kit, monkeypatch, settings=None):
    from urbanarena.render.scene3d.renderer import SceneRenderer

    monkeypatch.setattr(TP, "photo_trees", lambda quiet=False: kit)
    r = SceneRenderer(scene, settings or RenderSettings(style=style))
    return r.render_view(0.0, -10.0, 0.0, 0.0, 90.0, 640, 360)


@needs_gl
def test_alpha_tested_card_covers_its_opaque_half(monkeypatch):
    """The card's left half is opaque: the pixels it changes are the projection of that half (hand pinhole:
    f = 320 px for a 90-degree, 640-pixel view), within a pixel along its rim."""
    from urbanarena.render.scene3d.palette import stable_unit

    half = np.zeros((TP.CELL_PX, TP.CELL_PX), np.uint8)
    half[:, :TP.CELL_PX // 2] = 255
    scene = _one_tree_scene()
    empty = _render(scene, "photo", _card_kit(np.zeros_like(half)), monkeypatch)
    drawn = _render(scene, "photo", _card_kit(half), monkeypatch)
    changed = np.abs(drawn.astype(int) - empty.astype(int)).max(axis=2) > 24
    s = 0.8 + 0.4 * stable_unit("tree/1", "tree-size")
    a = 2 * math.pi * stable_unit("tree/1", "photo-tree-turn")
    ca, sa = math.cos(a), math.sin(a)
    corners = [(-1.0, 0.7), (0.0, 0.7), (0.0, 2.7), (-1.0, 2.7)]      # the left half: across -1..0, up 0.7..2.7
    uvs = []
    for x, z in corners:
        wx, wy, wz = ca * x * s, sa * x * s, z * s
        depth = wy + 10.0
        uvs.append((320 + 320 * wx / depth, 180 - 320 * (wz - 1.7) / depth))
    u, v = np.array(uvs).T
    area = 0.5 * abs(np.dot(u, np.roll(v, 1)) - np.dot(v, np.roll(u, 1)))
    rim = sum(math.dist(uvs[i], uvs[(i + 1) % 4]) for i in range(4))
    assert area > 500
    assert abs(changed.sum() - area) <= 0.5 * rim + 4, (changed.sum(), area, rim)
    assert (drawn[changed][:, 0] > drawn[changed][:, 1]).all()       # the atlas's red, lit


@needs_gl
def test_photo_trees_are_deterministic_and_differ_from_realistic(tmp_path, monkeypatch):
    _write_fake_package(tmp_path, np.where(np.arange(64)[None, :] % 16 < 10, 255, 0).astype(np.uint8)
                        * np.ones((64, 1), np.uint8))
    kit = TP.load_tree_kit(tmp_path)
    scene = small_scene()
    trees = TP.tree_mesh(scene.objects, {}, kit)
    assert trees.n_triangles > 0 and trees.uv.shape == (len(trees.positions), 2)
    from urbanarena.render.scene3d import photo_atmosphere

    monkeypatch.setattr(photo_atmosphere, "ENABLED", False)   # the trees alone differ from realistic
    from urbanarena.render.scene3d import photo_building_detail, photo_clutter, photo_greenery

    monkeypatch.setattr(photo_greenery, "ENABLED", False)     # (tests/test_photo_greenery.py)
    monkeypatch.setattr(photo_clutter, "ENABLED", False)
    monkeypatch.setattr(photo_building_detail, "ENABLED", False)   # (tests/test_photo_building_detail.py)
    real = _render(scene, "realistic", None, monkeypatch)
    photo = _render(scene, "photo", kit, monkeypatch)
    again = _render(scene, "photo", kit, monkeypatch)
    assert np.array_equal(photo, again)
    diff = np.abs(photo.astype(int) - real.astype(int)).max(axis=2) > 12
    # the only tree, t1, stands at (-17, 7.5), 17.5 m ahead: its crown (about 2 m wide) projects near the left
    # edge (u = 320 - 320 * 17 / 17.5 = 9 px); the right half of the view (the lamp at x = 0 included) is unchanged
    cols = np.nonzero(diff.any(axis=0))[0]
    assert diff.sum() > 500 and cols.max() < 320, (diff.sum(), cols.min(), cols.max())


@needs_gl
def test_photo_without_tree_assets_draws_realistic_trees(monkeypatch):
    scene = small_scene()
    from urbanarena.render.scene3d import photo_atmosphere

    monkeypatch.setattr(photo_atmosphere, "ENABLED", False)   # haze, skyline, rain: tests/test_photo_atmosphere.py
    from urbanarena.render.scene3d import photo_building_detail

    monkeypatch.setattr(photo_building_detail, "ENABLED", False)   # cornices etc.: test_photo_building_detail.py
    real = _render(scene, "realistic", None, monkeypatch)
    photo = _render(scene, "photo", None, monkeypatch)
    assert np.array_equal(real, photo)


def test_photo_trees_fall_back_in_one_line(tmp_path, monkeypatch, capsys):
    from urbanarena.render.assets import fetch as F

    monkeypatch.setenv("URBANARENA_HOME", str(tmp_path))
    monkeypatch.setattr(TP, "_LOADED", {})

    def no_download(*a, **k):
        raise AssertionError("the photo style must not download")

    monkeypatch.setattr(F, "fetch_package", no_download)
    assert TP.photo_trees(quiet=True) is None and capsys.readouterr().err == ""
    assert TP.photo_trees() is None
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "photo trees unavailable" in err[0] and "realistic trees" in err[0]
    assert TP.photo_trees() is None and capsys.readouterr().err == ""     # said once per process


def test_with_photo_trees_takes_the_trunks_out():
    from urbanarena.render.scene3d.meshes import build_scene_meshes

    scene = small_scene()
    kit = _card_kit(np.full((TP.CELL_PX, TP.CELL_PX), 255, np.uint8))
    m = build_scene_meshes(scene, style="realistic")
    got = TP.with_photo_trees(m, scene, kit)
    k = 1 + [f for f in m.features].index(("object", "t1"))
    assert (m.objects.feature == k).any() and not (got.objects.feature == k).any()
    assert got.objects.n_triangles == m.objects.n_triangles - int((m.objects.feature == k).sum()) // 3
    assert got.foliage.n_triangles == 2 and set(got.foliage.feature.tolist()) == {float(k)}
    assert np.array_equal(got.ground.positions, m.ground.positions)
