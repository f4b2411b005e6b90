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
    # the ID pass does not see the ring (background, like the sky)
    ids_r = _renderer("realistic").render_ids(*view)
    ids_p = _renderer("photo").render_ids(*view)
    assert np.array_equal(ids_r, ids_p)


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
