"""The ``photo`` style's horizon, aerial perspective and rain (render/scene3d/photo_atmosphere.py, issue 24):
hand-worked haze factors, the skyline ring's rules, the sky's haze measured on the GPU against the Python twin,
determinism, and the rain drawn without streaks. Small hand-built scenes only (tests/test_render_styles.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from test_render_styles import small_scene
from urbanarena.render.scene3d import photo_atmosphere as PA
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.render.scene3d.renderer import RenderSettings

needs_gl = pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")


def test_haze_keep_by_hand():
    assert PA.HAZE_BETA_PER_M == 1.2e-3 and PA.HAZE_H_M == 100.0      # the figures the cases below use
    # level ray on the ground, 500 m: exp(-1.2e-3 * 500) = exp(-0.6)
    assert PA.haze_keep(500.0, 0.0, 0.0) == pytest.approx(0.548812, abs=1e-6)
    # level ray at eye height 1.6 m, 1 km: density exp(-0.016) = 0.984127 -> exp(-1.180952) = 0.306986
    assert PA.haze_keep(1000.0, 1.6, 1.6) == pytest.approx(0.306986, abs=1e-5)
    # from the ground to a point 100 m up, 1 km away: mean density (1 - e^-1) = 0.632121 -> exp(-0.758545)
    assert PA.haze_keep(1000.0, 0.0, 100.0) == pytest.approx(0.468343, abs=1e-5)
    # and back down (the mean is symmetric in the ends)
    assert PA.haze_keep(1000.0, 100.0, 0.0) == pytest.approx(0.468343, abs=1e-5)
    # rain's extinction ln(20) / 800 m on top, 800 m level on the ground: 0.05 * exp(-0.96) = 0.019144
    assert PA.haze_keep(800.0, 0.0, 0.0, math.log(20) / 800) == pytest.approx(0.019144, abs=1e-6)
    assert PA.haze_keep(0.0, 1.6, 1.6) == 1.0


def test_sky_haze_is_strongest_at_the_horizon_by_hand():
    # exp(-beta H / sin e) with beta H = 0.12: 30 degrees exp(-0.24), the zenith exp(-0.12), at and below 0: 0
    got = PA.sky_haze_keep([90.0, 30.0, 5.0, 0.0, -5.0])
    assert got[0] == pytest.approx(0.886920, abs=1e-6) and got[1] == pytest.approx(0.786628, abs=1e-6)
    assert got[2] == pytest.approx(math.exp(-0.12 / math.sin(math.radians(5.0))), abs=1e-9) and got[2] < 0.26
    assert got[3] == 0.0 and got[4] == 0.0


def test_rain_contrast_by_hand():
    img = np.array([[[0, 128, 255], [200, 200, 200]]], np.uint8)
    got = PA.rain_contrast(img, (0.5, 0.5, 0.5))
    # g = 127.5; 127.5 + 0.82 (v - 127.5): 0 -> 22.95 -> 23; 128 -> 127.91 -> 128; 255 -> 232.05 -> 232;
    # 200 -> 186.95 -> 187
    assert got.tolist() == [[[23, 128, 232], [187, 187, 187]]]


def test_skyline_ring_rules():
    scene = small_scene()
    blocks = PA.skyline_blocks(scene)
    assert blocks == PA.skyline_blocks(scene)                       # seeded: the same list
    assert blocks != PA.skyline_blocks(scene, seed=7)
    bx0, by0, bx1, by1 = scene.bounds()
    for x0, y0, x1, y1, h, tone in blocks:
        # outside the city's bounds grown by the inner margin, inside the ring's outer edge
        assert x1 <= bx0 - PA.RING_IN_M or x0 >= bx1 + PA.RING_IN_M or y1 <= by0 - PA.RING_IN_M \
            or y0 >= by1 + PA.RING_IN_M
        assert x0 >= bx0 - PA.RING_OUT_M and x1 <= bx1 + PA.RING_OUT_M
        assert y0 >= by0 - PA.RING_OUT_M and y1 <= by1 + PA.RING_OUT_M
        assert 0.55 * PA.CELL_M - 1e-9 <= x1 - x0 <= 0.85 * PA.CELL_M + 1e-9
        assert 14.0 <= h <= 48.0 and not (26.0 < h < 32.0) and 0 <= tone < len(PA.FACADE_TONES)
    # cells: the outer box's grid minus those touching the inner box, less about GAP_SHARE of them
    nx = int((bx1 - bx0 + 2 * PA.RING_OUT_M) // PA.CELL_M)
    ny = int((by1 - by0 + 2 * PA.RING_OUT_M) // PA.CELL_M)
    assert 0.7 * nx * ny * 0.5 < len(blocks) < nx * ny
    # a ground plane smaller than the ring clips it
    from dataclasses import replace

    clipped = PA.skyline_blocks(replace(scene, ground_extent=(bx0 - 100, by0 - 100, bx1 + 100, by1 + 100)))
    assert clipped and all(b[0] >= bx0 - 100 and b[2] <= bx1 + 100 for b in clipped)
    assert len(clipped) < len(blocks)


def test_skyline_windows_face_the_city():
    # a box due north of the centre: windows only on its south wall, 0.05 m in front of it
    tris = PA._windows(0.0, 100.0, 34.0, 130.0, 20.0, 17.0, 0.0)
    assert len(tris) and np.allclose(tris[..., 1], 100.0 - 0.05)
    # 34 m / 3.4 m = 10 columns, storeys 1..4 of int(19 / 3.2) = 5: 40 windows of 2 triangles
    assert len(tris) == 2 * 10 * 4
    assert PA._windows(0.0, 100.0, 34.0, 130.0, 20.0, 17.0, 115.0).shape == (0, 3, 3)   # centre inside: none


def test_patch_source_fails_loudly_on_changed_shaders():
    with pytest.raises(RuntimeError, match="fog_at"):
        PA.patch_source("float fog_at(vec3 p) { return 1.0; }")
    with pytest.raises(RuntimeError, match="sky lookup"):
        PA.patch_source("void main() {}", "sky_tex")


# ------------------------------------------------------------------------------------------------------ GPU
_CACHE: dict = {}


def _renderer(style, condition="clear"):
    from urbanarena.render.scene3d.renderer import SceneRenderer

    key = (style, condition)
    if key not in _CACHE:
        _CACHE[key] = SceneRenderer(small_scene(), RenderSettings.for_condition(condition, style=style))
    return _CACHE[key]


@needs_gl
def test_sky_haze_on_the_gpu_matches_the_twin():
    from urbanarena.render.scene3d.conditions import lighting
    from urbanarena.render.views import Camera

    # looking east, 45 degrees up, 40-degree field: only sky (elevations about 33-57 degrees)
    w, h, yaw, pitch, fov = 160, 90, 90.0, 45.0, 40.0
    real = _renderer("realistic").render_view(0.0, -4.0, yaw, pitch, fov, w, h).astype(np.float64)
    photo = _renderer("photo").render_view(0.0, -4.0, yaw, pitch, fov, w, h).astype(np.float64)
    basis = Camera(yaw, pitch, fov, w, h).basis()
    tx = math.tan(math.radians(fov) / 2)
    x = ((np.arange(w) + 0.5) / w * 2 - 1) * tx
    y = (1 - (np.arange(h) + 0.5) / h * 2) * tx * h / w
    X, Y = np.meshgrid(x, y)
    d = np.stack([X, Y, np.ones_like(X)], -1) @ basis     # GLSL reads the row-major bytes transposed
    elev = np.degrees(np.arcsin(d[..., 2] / np.linalg.norm(d, axis=-1)))
    assert 30.0 < elev.min() and elev.max() < 60.0
    keep = PA.sky_haze_keep(elev)[..., None]
    hz = 255.0 * np.asarray(lighting(RenderSettings(style="photo")).horizon)
    want = hz + (real - hz) * keep
    assert np.abs(photo - want).max() <= 1.5                            # 8-bit rounding of both images
    assert np.abs(photo - real).max() > 5                               # and the haze shows


@needs_gl
def test_photo_horizon_is_filled_deterministic_and_hazed():
    from urbanarena.render.scene3d.renderer import SceneRenderer

    view = (0.0, -4.0, 90.0, 0.0, 90.0, 320, 180)                     # east along the road, level
    real = _renderer("realistic").render_view(*view)
    photo = _renderer("photo").render_view(*view)
    again = SceneRenderer(small_scene(), RenderSettings(style="photo")).render_view(*view)
    assert np.array_equal(photo, again)                                # a second renderer: same pixels
    # just above the horizon (rows 70-89 of 180: up to about 10 degrees) the ring's blocks stand in the sky
    band = np.abs(photo[70:89].astype(int) - real[70:89].astype(int)).sum(axis=2)
    assert (band > 30).mean() > 0.3
    # the ID pass does not see the ring (background, like the sky): where the photo style's IDs differ, they are
    # its building details (cornices, parapets: tests/test_photo_building_detail.py), which report a building
    ids_r = _renderer("realistic").render_ids(*view)
    r_photo = _renderer("photo")
    ids_p = r_photo.render_ids(*view)
    differ = ids_r != ids_p
    assert differ.mean() < 0.05
    ks = np.unique(ids_p[differ]).tolist()
    assert 0 not in ks and all(r_photo.features[k - 1][0] == "building" for k in ks)


@needs_gl
def test_photo_rain_has_no_streaks_and_wet_ground(monkeypatch):
    from urbanarena.render.scene3d import weather

    calls = []
    monkeypatch.setattr(weather.WeatherPass, "draw_rain", lambda self, *a: calls.append(self.r.settings.style))
    view = (0.0, -4.0, 90.0, -10.0, 90.0, 320, 180)
    real = _CACHE.pop(("realistic", "rain"), None) or _renderer("realistic", "rain")
    real.render_view(*view)
    photo = _renderer("photo", "rain")
    a = photo.render_view(*view)
    assert calls == ["realistic"]                                      # the photo style drew no streaks
    assert np.array_equal(a, photo.render_view(*view))                 # deterministic (noise seeded)
    # the near ground (bottom rows) differs from the same overcast view without rain (wet, puddles, contrast)
    cloudy = _renderer("photo", "cloudy").render_view(*view)
    assert np.abs(a[150:].astype(int) - cloudy[150:].astype(int)).mean() > 5


# ------------------------------------------------------------------------------------- photo-haze-2: clear air
def test_clear_air_extinction_by_hand():
    # a 20 km meteorological optical range (5 % contrast): beta = ln 20 / 20000 = 2.995732 / 20000 per metre
    assert PA.CLEAR_HAZE_BETA_PER_M == pytest.approx(1.497866e-4, rel=1e-6)
    assert PA.haze_beta_per_m("clear") == PA.CLEAR_HAZE_BETA_PER_M
    for weather in ("cloudy", "rain", "fog"):                           # the hazy weathers keep their haze
        assert PA.haze_beta_per_m(weather) == 1.2e-3
    b = PA.CLEAR_HAZE_BETA_PER_M
    # a wall at eye height (1.6 m) 100 / 200 / 300 m off: m = exp(-0.016) = 0.984127; b m d = 0.0147409 /
    # 0.0294818 / 0.0442227; keep exp(-b m d) by its series to the 4th power
    for d, want in ((100.0, 0.985367), (200.0, 0.970949), (300.0, 0.956741)):
        assert PA.haze_keep(d, 1.6, 1.6, beta_per_m=b) == pytest.approx(want, abs=2e-6)
    # a real clear day keeps 0.97-0.99 at 100-200 m; the hazy weathers' old value kept 0.89 / 0.79
    assert PA.haze_keep(100.0, 1.6, 1.6) == pytest.approx(0.888611, abs=2e-6)   # exp(-0.1180952)
    # the GLSL carries the constant
    assert f"{b:.6e}" in PA.photo_fog_at(b) and f"{1.2e-3:.6e}" in PA.PHOTO_FOG_AT
    src = "float fog_at(vec3 p) {\n" + PA.REALISTIC_FOG_AT.split("{\n", 1)[1]
    assert f"{b:.6e}" in PA.patch_source(src, "", b)


def test_far_band_rules_by_hand():
    scene = small_scene()
    bx0, by0, bx1, by1 = scene.bounds()
    far = PA.far_blocks(scene)
    assert far == PA.far_blocks(scene) and far != PA.far_blocks(scene, seed=7)   # seeded
    ox0, oy0, ox1, oy1 = bx0 - 300.0, by0 - 300.0, bx1 + 300.0, by1 + 300.0      # the near ring's outer edge
    trees = 0
    for x0, y0, x1, y1, h, tone in far:
        assert bx0 - 1100.0 <= x0 < x1 <= bx1 + 1100.0 and by0 - 1100.0 <= y0 < y1 <= by1 + 1100.0
        assert x1 <= ox0 or x0 >= ox1 or y1 <= oy0 or y0 >= oy1                  # outside the near ring
        assert 75.0 - 1e-9 <= x1 - x0 <= 112.5 + 1e-9 and 75.0 - 1e-9 <= y1 - y0 <= 112.5 + 1e-9   # 60-90 % of 125
        if tone < 0:
            trees += 1
            assert 9.0 <= h <= 17.0
        else:
            assert 12.0 <= h <= 45.0 and tone < len(PA.FACADE_TONES)
    # cells: a 125 m grid over the bounds grown by 1100 m, less those touching the near ring's rectangle
    nx, ny = int((bx1 - bx0 + 2200.0) // 125.0), int((by1 - by0 + 2200.0) // 125.0)
    inner = sum(1 for j in range(ny) for i in range(nx)
                if bx0 - 1100 + (i + 1) * 125 > ox0 and bx0 - 1100 + i * 125 < ox1
                and by0 - 1100 + (j + 1) * 125 > oy0 and by0 - 1100 + j * 125 < oy1)
    cells = nx * ny - inner
    assert 0.8 * cells < len(far) <= cells                                       # 90 % filled, give or take
    assert 0.25 * len(far) < trees < 0.5 * len(far)                              # 35 of the 90 % are trees


def test_far_walls_facing_away_from_the_scene_are_left_out():
    bounds = (0.0, 0.0, 100.0, 100.0)
    # north of the scene, within its x range: the south wall (0) and both side walls (1: east, 3: west)
    assert PA.seen_walls(40.0, 500.0, 60.0, 520.0, bounds) == [0, 1, 3]
    # north-east, beyond both: only the south and west walls face the scene
    assert PA.seen_walls(400.0, 500.0, 420.0, 520.0, bounds) == [0, 3]
    # south-west: the north (2) and east (1) walls
    assert PA.seen_walls(-420.0, -520.0, -400.0, -500.0, bounds) == [1, 2]
    # the walls kept face the scene: their outward normals point towards its centre
    tris = PA._box(400.0, 500.0, 420.0, 520.0, 20.0)
    for k in PA.seen_walls(400.0, 500.0, 420.0, 520.0, bounds):
        n = np.cross(tris[2 * k, 1] - tris[2 * k, 0], tris[2 * k, 2] - tris[2 * k, 0])
        assert np.dot(n[:2], np.array([50.0, 50.0]) - tris[2 * k].mean(axis=0)[:2]) > 0


def test_far_ground_fills_the_ring_to_the_horizon():
    scene = small_scene()
    tris = PA.far_ground(scene)
    assert tris.shape == (8, 3, 3) and np.all(tris[..., 2] == 0.0)
    up = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])[:, 2]
    assert np.all(up > 0)                                                        # wound upward
    gx0, gy0, gx1, gy1 = PA.ground_box(scene)
    bx0, by0, bx1, by1 = scene.bounds()
    outer = (bx1 - bx0 + 8000.0) * (by1 - by0 + 8000.0)
    assert up.sum() / 2 == pytest.approx(outer - (gx1 - gx0) * (gy1 - gy0), rel=1e-9)   # area: the ring exactly


@needs_gl
def test_photo_fog_at_on_the_gpu_matches_the_twin():
    from urbanarena.render.scene3d.context import current, gl_context

    ctx = gl_context()
    b = PA.CLEAR_HAZE_BETA_PER_M
    w, h = 32, 8                                                        # distance 100 m per column, height 10 m per row
    fs = ("#version 330\nuniform vec3 eye;\nuniform float sigma;\nout vec4 f;\n" + PA.photo_fog_at(b)
          + "\nvoid main() { vec2 q = floor(gl_FragCoord.xy);\n"
            "  f = vec4(fog_at(eye + vec3(100.0 * (q.x + 1.0), 0.0, 10.0 * q.y)), 0.0, 0.0, 1.0); }\n")
    vs = "#version 330\nin vec2 p;\nvoid main() { gl_Position = vec4(p, 0.0, 1.0); }\n"
    with current(ctx):
        prog = ctx.program(vertex_shader=vs, fragment_shader=fs)
        prog["eye"].value = (0.0, 0.0, 1.6)
        prog["sigma"].value = 0.0
        vbo = ctx.buffer(np.array([-1, -1, 3, -1, -1, 3], "f4").tobytes())
        vao = ctx.vertex_array(prog, [(vbo, "2f", "p")])
        fbo = ctx.framebuffer([ctx.renderbuffer((w, h), 4, dtype="f4")])
        fbo.use()
        vao.render()
        got = np.frombuffer(fbo.read(components=4, dtype="f4"), "f4").reshape(h, w, 4)[..., 0]
        for o in (vao, vbo, fbo, prog):
            o.release()
    xs, ys = np.meshgrid(np.arange(w), np.arange(h))
    d = np.hypot(100.0 * (xs + 1.0), 10.0 * ys)
    want = PA.haze_keep(d, 1.6, 1.6 + 10.0 * ys, beta_per_m=b)
    assert np.abs(got - want).max() < 2e-4
    assert want[0, 9] == pytest.approx(math.exp(-b * math.exp(-0.016) * 1000.0), rel=1e-9)   # 1 km, level


@needs_gl
def test_clear_sky_air_is_clearer_than_cloudy():
    # the ring's blocks along a level view east: in clear air they differ more from the horizon colour
    from urbanarena.render.scene3d.conditions import lighting

    view = (0.0, -4.0, 90.0, 0.0, 90.0, 320, 180)
    clear = _renderer("photo").render_view(*view).astype(float)
    assert _renderer("photo").settings.weather == "clear"
    hz = 255.0 * np.asarray(lighting(RenderSettings(style="photo")).horizon)
    band = clear[80:89]
    assert np.abs(band - hz).sum(axis=2).mean() > 20                    # not washed out to the horizon colour
