"""The photo style's culling (render/scene3d/tiles.py): boxes against a hand-worked frustum, the ground's ordered
chunks (which calls, in which order), the tile order of a mesh, and that skipping the ground's chunks outside the
frustum leaves every pixel as drawing the ground whole."""

from __future__ import annotations

import numpy as np
import pytest

from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.render.scene3d.cubemap import projection_matrix, view_matrix
from urbanarena.render.scene3d.mesh_primitives import MeshData
from urbanarena.render.scene3d.tiles import CHUNK_SLACK_M, OrderedChunks, boxes_outside, frustum_planes

needs_gl = pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")


def planes_north(hfov_deg=90.0, width=640, height=360):
    """Camera at (0, 0, 1.7) looking due north (+y), level: right is +x."""
    P = projection_matrix(hfov_deg, width, height, 0.5, 1000.0)
    V = view_matrix(np.array([0.0, 0.0, 1.7]), 0.0, 0.0)
    return frustum_planes(P @ V)


def box(x, y, half=1.0, z0=0.0, z1=2.0):
    return np.array([[x - half, y - half, z0]]), np.array([[x + half, y + half, z1]])


def test_boxes_against_a_90_degree_view_north():
    pl = planes_north()
    # the view's side planes are x = +-y (45 degrees either side of north); near 0.5 m, far 1000 m
    cases = {(0.0, 50.0): False,    # straight ahead
             (0.0, -50.0): True,    # behind
             (48.0, 50.0): False,   # its left edge x = 47 < y = 49..51: inside the right plane
             (60.0, 50.0): True,    # x 59..61 > y 49..51: wholly right of the view
             (-60.0, 50.0): True,   # wholly left
             (0.0, 1200.0): True}   # beyond the far plane
    for (x, y), out in cases.items():
        lo, hi = box(x, y)
        assert bool(boxes_outside(lo, hi, pl)[0]) is out, (x, y)
    # the vertical extent: 16:9 at 90 degrees horizontal -> half height tan = 9/16; at 40 m ahead the top edge
    # is 1.7 + 22.5 m up: a box from 25 to 30 m high is above the view, one from 20 to 30 m is not
    assert boxes_outside(*box(0.0, 40.0, 1.0, 25.0, 30.0), pl)[0]
    assert not boxes_outside(*box(0.0, 40.0, 1.0, 20.0, 30.0), pl)[0]


def test_slack_keeps_boxes_just_outside():
    pl = planes_north()
    # a box 0.3 m behind the camera's near-side planes: x from 50.3 + ... -> use the right plane x = y:
    # a 0-size box at (50 + d, 50): distance outside the plane x - y = 0 is d / sqrt(2)
    for d_m, out in ((0.3, False), (2.0, True)):
        p = np.array([[50.0 + d_m * np.sqrt(2.0), 50.0, 1.7]])
        assert bool(boxes_outside(p, p, pl, CHUNK_SLACK_M)[0]) is out
        assert bool(boxes_outside(p, p, pl)[0]) is True


class Recorder:
    def __init__(self, name, log):
        self.name, self.log = name, log

    def render(self, mode, vertices, first):
        self.log.append((self.name, first, vertices))


def tri_at(x, y):
    return np.array([[x, y, 0.0], [x + 1, y, 0.0], [x, y + 1, 0.0]])


def test_ordered_chunks_skip_only_chunks_outside_and_keep_the_order():
    # 6 triangles, chunks of 2: chunk 0 ahead (y 50), chunk 1 behind (y -50), chunk 2 ahead again;
    # runs: a = triangles 0..3, b = triangles 4..5
    ys = [50, 50, -50, -50, 60, 60]
    pos = np.concatenate([tri_at(0.0, y) for y in ys])
    log = []
    a, b = Recorder("a", log), Recorder("b", log)
    oc = OrderedChunks([(a, 0, 12), (b, 12, 6)], pos, chunk_tris=2)
    assert oc.first.tolist() == [0, 6, 12] and oc.count.tolist() == [6, 6, 6]
    oc.render(planes_north())
    assert log == [("a", 0, 6), ("b", 12, 6)]
    # all ahead: consecutive chunks of one run merge into one call, a new run starts a new one
    log.clear()
    pos2 = np.concatenate([tri_at(0.0, 50.0) for _ in ys])
    OrderedChunks([(a, 0, 12), (b, 12, 6)], pos2, chunk_tris=2).render(planes_north())
    assert log == [("a", 0, 12), ("b", 12, 6)]
    # a run whose length is not a multiple of the chunk: the last chunk is shorter
    oc3 = OrderedChunks([(a, 0, 9)], pos2[:9], chunk_tris=2)
    assert oc3.count.tolist() == [6, 3]


def test_tile_order_groups_triangles_by_centroid_tile():
    # triangles with centroids in tiles (10 m): (1, 0), (0, 0), (1, 0), (0, 1)
    pos = np.concatenate([tri_at(x, y) for x, y in ((12.0, 1.0), (1.0, 1.0), (15.0, 5.0), (2.0, 13.0))])
    m = MeshData(pos.astype(np.float32), np.zeros_like(pos, np.float32), np.zeros_like(pos, np.float32))
    idx, first, count, lo, hi = m.tile_order(10.0)
    # lexsorted by (kx, ky): (0,0) tri 1, (0,1) tri 3, (1,0) tris 0 and 2 (stable)
    assert (idx[::3] // 3).tolist() == [1, 3, 0, 2]
    assert first.tolist() == [0, 3, 6] and count.tolist() == [3, 3, 6]
    np.testing.assert_array_equal(lo[2], [12.0, 1.0, 0.0])
    np.testing.assert_array_equal(hi[2], [16.0, 6.0, 0.0])
    tiled = m.tiles(10.0)[0]
    np.testing.assert_array_equal(tiled.positions, m.positions[idx])


@needs_gl
def test_photo_ground_chunks_change_no_pixel():
    from test_render_styles import small_scene
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    r = SceneRenderer(small_scene(), RenderSettings(style="photo"))
    try:
        assert r._ground_chunks is not None
        # chunks of one triangle, so that views skip some: the test sees the culling at work
        r._ground_chunks = OrderedChunks(r.ground_runs, r.meshes.ground.positions, chunk_tris=1)
        views = [(0.0, 0.0, yaw, pitch) for yaw in (0.0, 90.0, 200.0) for pitch in (0.0, -30.0)]
        total = int(r._ground_chunks.count.sum())
        drawn = []
        for x, y, yaw, pitch in views:
            P = projection_matrix(90.0, 160, 90, r.settings.near_m, r.settings.far_m)
            V = view_matrix(np.array([x, y, 1.7]), yaw, pitch)
            drawn.append(sum(c for _, _, c in r._ground_chunks.draws(frustum_planes(P @ V))))
        assert min(drawn) < total
        chunked = [r.render_view(x, y, yaw, pitch, 90.0, 160, 90) for x, y, yaw, pitch in views]
        r._ground_chunks = None
        whole = [r.render_view(x, y, yaw, pitch, 90.0, 160, 90) for x, y, yaw, pitch in views]
        for a, b in zip(chunked, whole):
            np.testing.assert_array_equal(a, b)
    finally:
        r.release()


def test_runs_with_a_draw_distance_drop_far_chunks_only():
    # two runs of one chunk each, both 50 m ahead (the nearest box point is 50 m from the eye, 1.7 m up:
    # sqrt(50^2 + 1.7^2) = 50.03 m); run "b" has a 40 m draw distance, "a" none
    pos = np.concatenate([tri_at(0.0, 50.0), tri_at(0.0, 50.0)])
    log = []
    oc = OrderedChunks([(Recorder("a", log), 0, 3), (Recorder("b", log), 3, 3)], pos, chunk_tris=1,
                       max_dist_m=[None, 40.0])
    oc.render(planes_north(), np.array([0.0, 0.0, 1.7]))
    assert log == [("a", 0, 3)]
    log.clear()
    oc.render(planes_north())   # no eye: no distance test
    assert log == [("a", 0, 3), ("b", 3, 3)]
    log.clear()
    near = OrderedChunks([(Recorder("b", log), 0, 3)], pos[:3], chunk_tris=1, max_dist_m=[50.1])
    near.render(planes_north(), np.array([0.0, 0.0, 1.7]))
    assert log == [("b", 0, 3)]


def test_ground_detail_distances_by_material_and_in_the_identity(monkeypatch):
    from urbanarena.render.scene3d import photo_atmosphere as PA
    from urbanarena.render.scene3d.render_identity import _photo_identity

    monkeypatch.setattr(PA, "GROUND_DETAIL_M", {5: 120.0, 7: 60.0})
    assert PA.ground_detail_distances([(0, 3, 1), (3, 6, 5), (9, 3, 7), (12, 3, 0)]) == [None, 120.0, 60.0, None]
    a = _photo_identity()["ground_detail_m"]
    monkeypatch.setattr(PA, "GROUND_DETAIL_M", {5: 100.0, 7: 60.0})
    assert _photo_identity()["ground_detail_m"] != a


def test_sky_rows_by_hand():
    import math

    from urbanarena.render.scene3d.photo_atmosphere import sky_rows

    big = (-1e4, -1e4, 1e4, 1e4)
    eye = np.array([0.0, 0.0, 1.7])
    # level 640 x 360, 90 degrees: f = 320; a row's ray at the outer column has depression tan = yv / sqrt(tx^2 + 1)
    # with tx = 319.5 / 320; d = min(1e4, 0.9 * 3000) = 2700 m: ground-only from yv >= (1.5 * 1.7 / 2700 +
    # tan 0.5 deg) * sqrt(tx^2 + 1), i.e. row v >= 179.5 + 320 yv
    tx = 319.5 / 320.0
    yv = (1.5 * 1.7 / 2700.0 + math.tan(math.radians(0.5))) * math.sqrt(tx * tx + 1.0)
    first = math.ceil(179.5 + 320.0 * yv)
    assert sky_rows(eye, 30.0, 0.0, 90.0, 640, 360, big, 3000.0) == first + 2 == 186
    # the same but 10 m from the box's east side: d = 10 m, the cut moves down
    near_edge = (-1e4, -1e4, 10.0, 1e4)
    yv10 = (1.5 * 1.7 / 10.0 + math.tan(math.radians(0.5))) * math.sqrt(tx * tx + 1.0)
    assert sky_rows(eye, 30.0, 0.0, 90.0, 640, 360, near_edge, 3000.0) == math.ceil(179.5 + 320.0 * yv10) + 2
    # straight down: every row is ground-only (2 rows kept); straight up or off the box: the sky everywhere
    assert sky_rows(eye, 0.0, -90.0, 90.0, 64, 64, big, 3000.0) == 2
    assert sky_rows(eye, 0.0, 90.0, 90.0, 64, 64, big, 3000.0) == 64
    assert sky_rows(np.array([2e4, 0.0, 1.7]), 0.0, -90.0, 90.0, 64, 64, big, 3000.0) == 64


@needs_gl
def test_photo_sky_cut_changes_no_pixel():
    from test_render_styles import small_scene
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    r = SceneRenderer(small_scene(), RenderSettings(style="photo"))
    try:
        box = r._ground_box
        assert box is not None
        poses = [(0.0, 0.0, yaw, pitch) for yaw in (0.0, 135.0) for pitch in (0.0, -30.0, 20.0)]
        cut = [r.render_view(x, y, yaw, pitch, 90.0, 160, 90) for x, y, yaw, pitch in poses]
        pano = r.render_panorama(0.0, 0.0, width=128)
        r._ground_box = (0.0, 0.0, 0.0, 0.0)   # the eye off the box: the sky shaded everywhere
        whole = [r.render_view(x, y, yaw, pitch, 90.0, 160, 90) for x, y, yaw, pitch in poses]
        np.testing.assert_array_equal(r.render_panorama(0.0, 0.0, width=128), pano)
        for a, b in zip(cut, whole):
            np.testing.assert_array_equal(a, b)
    finally:
        r.release()
