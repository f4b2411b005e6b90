"""The photo style's multi-draw submission (render/scene3d/tiles.py ``IndirectDraws``) and its ground detail rule
(photo_atmosphere ``GROUND_DETAIL_M``/``GROUND_CHUNK_TRIS``, ``SKYLINE_CULL_BACK``): the commands by hand, the
same ranges in the same order as one call per range, the same pixels on the GPU, the skyline's winding."""

from __future__ import annotations

import numpy as np
import pytest

from test_photo_culling import Recorder, needs_gl, planes_north, tri_at
from urbanarena.render.scene3d.tiles import IndirectDraws, OrderedChunks, TiledVertexArray


class IndirectLog:
    """Stands in for :class:`IndirectDraws`: logs ``(vertex array name, [(first, count), ...])`` per call."""

    def __init__(self, log):
        self.log = log

    def draw(self, vao, first, count):
        self.log.append((vao.name, [(int(f), int(c)) for f, c in zip(first, count)]))


def test_commands_by_hand():
    cmd = IndirectDraws.commands(np.array([0, 9, 30]), np.array([6, 3, 12]))
    assert cmd.dtype == np.uint32 and cmd.shape == (3, 5)
    # moderngl strides a command 20 bytes: count, instances (1), first, two unused words
    assert cmd.tolist() == [[6, 1, 0, 0, 0], [3, 1, 9, 0, 0], [12, 1, 30, 0, 0]]


def tiled(name, log, front_to_back):
    # 4 tiles of 1 triangle (3 vertices) each, at y = 50, -50, 20, 80 (the camera at the origin looks north):
    # tile 1 is behind the camera; nearest first: tile 2 (20 m), tile 0 (50 m), tile 3 (80 m)
    ys = [50.0, -50.0, 20.0, 80.0]
    lo = np.array([[-1.0, y - 1.0, 0.0] for y in ys])
    hi = np.array([[1.0, y + 1.0, 2.0] for y in ys])
    return TiledVertexArray(Recorder(name, log), np.array([0, 3, 6, 9]), np.array([3, 3, 3, 3]), lo, hi,
                            front_to_back=front_to_back)


@pytest.mark.parametrize("front_to_back", [False, True])
def test_tiled_array_submits_the_same_ranges_in_the_same_order(front_to_back):
    eye = np.array([0.0, 0.0, 1.7])
    calls = []
    t = tiled("a", calls, front_to_back)
    t.render(planes_north(), eye)
    multi = []
    t.indirect = IndirectLog(multi)
    t.render(planes_north(), eye)
    # by hand: storage order keeps tiles 0, 2, 3 -> ranges (0, 3) and (6, 6) (tiles 2 and 3 adjacent);
    # nearest first: 2, 0, 3 -> (6, 3), (0, 3), (9, 3) (no two consecutive in both orders)
    want = [(6, 3), (0, 3), (9, 3)] if front_to_back else [(0, 3), (6, 6)]
    assert [(f, c) for _, f, c in calls] == want
    assert multi == [("a", want)]


def test_ordered_chunks_one_multi_draw_per_vertex_array_in_a_row():
    # runs: a (2 triangles), b (1), a again (1): the ground's material programs can repeat a vertex array
    pos = np.concatenate([tri_at(0.0, 50.0) for _ in range(4)])
    log = []
    a, b = Recorder("a", log), Recorder("b", log)
    oc = OrderedChunks([(a, 0, 6), (b, 6, 3), (a, 9, 3)], pos, chunk_tris=1)
    oc.render(planes_north())
    assert log == [("a", 0, 6), ("b", 6, 3), ("a", 9, 3)]
    multi = []
    oc.indirect = IndirectLog(multi)
    oc.render(planes_north())
    assert multi == [("a", [(0, 6)]), ("b", [(6, 3)]), ("a", [(9, 3)])]
    # a skipped chunk between two of one run: two ranges in one call
    pos2 = np.concatenate([tri_at(0.0, 50.0), tri_at(0.0, -50.0), tri_at(0.0, 60.0)])
    oc2 = OrderedChunks([(a, 0, 9)], pos2, chunk_tris=1)
    oc2.indirect = IndirectLog(multi := [])
    oc2.render(planes_north())
    assert multi == [("a", [(0, 3), (6, 3)])]


def test_ground_detail_by_material_and_the_chunks_and_skyline_switch_in_the_identity(monkeypatch):
    from urbanarena.render.scene3d import photo_atmosphere as PA
    from urbanarena.render.scene3d.realistic_shaders import GROUND_MATERIALS
    from urbanarena.render.scene3d.render_identity import _photo_identity

    # materials by the realistic layer colours: kerb 5, rail head and groove 7 limited; stripe white 4 and the rest
    # not (the held-back option, docs/renderer.md "Speed, second round")
    assert GROUND_MATERIALS[(236, 236, 230)] == 4 and GROUND_MATERIALS[(186, 184, 178)] == 5
    assert PA.ground_detail_distances([(0, 3, 4), (3, 3, 5), (6, 3, 7), (9, 3, 1), (12, 3, 6), (15, 3, 8)]) == \
        [120.0, 120.0, 120.0, None, None, None]
    # the white paint's case for 120 m: a 4 m crosswalk stripe, eye 1.7 m up, 320 px focal length:
    # 320 * 4 * 1.7 / 120^2 = 0.151 px tall
    assert abs(320.0 * 4.0 * 1.7 / 120.0 ** 2 - 0.151) < 1e-3
    a = _photo_identity()
    assert a["ground_chunk_tris"] == PA.GROUND_CHUNK_TRIS and a["skyline_cull_back"] is PA.SKYLINE_CULL_BACK
    monkeypatch.setattr(PA, "GROUND_CHUNK_TRIS", 64 if PA.GROUND_CHUNK_TRIS != 64 else 16)
    monkeypatch.setattr(PA, "SKYLINE_CULL_BACK", not PA.SKYLINE_CULL_BACK)
    b = _photo_identity()
    assert b["ground_chunk_tris"] != a["ground_chunk_tris"] and b["skyline_cull_back"] != a["skyline_cull_back"]


@needs_gl
def test_multi_draw_changes_no_pixel():
    from test_render_styles import small_scene
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    r = SceneRenderer(small_scene(), RenderSettings(style="photo"))
    try:
        arrays = [t for t in (r.vao_facades, r.vao_solids, r.vao_skyline, r.vao_objects, r.vao_foliage,
                              r._ground_chunks, *(t for t, _, _ in r._near_vaos), *(t for _, t in r.sign_vaos))
                  if t is not None]
        assert arrays and all(isinstance(t.indirect, IndirectDraws) for t in arrays)
        views = [(0.0, 0.0, yaw, pitch) for yaw in (0.0, 90.0, 200.0) for pitch in (0.0, -30.0)]
        multi = [r.render_view(x, y, yaw, pitch, 90.0, 160, 90) for x, y, yaw, pitch in views]
        indirect = arrays[0].indirect
        for t in arrays:
            t.indirect = None
        single = [r.render_view(x, y, yaw, pitch, 90.0, 160, 90) for x, y, yaw, pitch in views]
        for t in arrays:
            t.indirect = indirect
        for a, b in zip(multi, single):
            np.testing.assert_array_equal(a, b)
    finally:
        r.release()


@needs_gl
def test_flat_and_realistic_submit_one_call_per_range():
    from test_render_styles import small_scene
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    for style in ("flat", "realistic"):
        r = SceneRenderer(small_scene(), RenderSettings(style=style))
        try:
            assert all(getattr(t, "indirect", None) is None for t in (r.vao_facades, r.vao_solids, r.vao_objects)
                       if t is not None)
        finally:
            r.release()


def test_skyline_faces_wind_outward_and_windows_keep_their_old_normals(monkeypatch):
    from urbanarena.render.scene3d import photo_atmosphere as PA

    # a 10 x 10 m, 20 m tall box north-east of the centre (0, 0): its south and west walls face the centre
    walls = PA._box(10.0, 10.0, 20.0, 20.0, 20.0)[:8]
    mid = np.array([15.0, 15.0])
    for t in walls:   # counter-clockwise seen from outside: the winding's normal points away from the box
        n = np.cross(t[1] - t[0], t[2] - t[0])
        assert np.dot(n[:2], t.mean(axis=0)[:2] - mid) > 0
    win = PA._windows(10.0, 10.0, 20.0, 20.0, 20.0, 0.0, 0.0)
    assert len(win)
    for t in win:   # on the south (y = 9.95) or west (x = 9.95) wall, wound to face -y or -x: towards the centre
        n = np.cross(t[1] - t[0], t[2] - t[0])
        assert (n[0] < 0 and abs(n[1]) < 1e-9) or (n[1] < 0 and abs(n[0]) < 1e-9)

    class Scene:   # one block's worth of scene for skyline_mesh: only bounds and ground_extent are read
        ground_extent = None

        @staticmethod
        def bounds():
            return (0.0, 0.0, 5.0, 5.0)

    monkeypatch.setattr(PA, "skyline_blocks", lambda scene, seed=0: [(10.0, 10.0, 20.0, 20.0, 20.0, 0)])
    monkeypatch.setattr(PA, "far_blocks", lambda scene, seed=0: [])
    m = PA.skyline_mesh(Scene())
    # 10 box triangles, then the windows: their normals are the opposite of their winding's (the pixels they had)
    wn = m.normals.reshape(-1, 3, 3)[10:10 + len(win), 0]
    # then the far ground's 8 triangles (photo-haze-2), facing up
    np.testing.assert_allclose(m.normals.reshape(-1, 3, 3)[10 + len(win):, 0], np.tile([0.0, 0.0, 1.0], (8, 1)),
                               atol=1e-6)
    cross = np.cross(win[:, 1] - win[:, 0], win[:, 2] - win[:, 0])
    np.testing.assert_allclose(wn, -cross / np.linalg.norm(cross, axis=1, keepdims=True), atol=1e-6)
