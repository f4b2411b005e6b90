"""Speed-ups of the scene renderer that must not change what it draws (issue 14's speed floors): the lamp loop's
pruning (lamps out of reach skipped), the sensor-noise tables, the ground drawn per material. Each is checked
against the computation it replaces."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.render.scene3d.renderer import RenderSettings
from urbanarena.render.scene3d.scene import Building, Road, Scene, StreetObject

PRUNING = ("    for (int i = first; i < n_lamps; i++) {\n"
           "        if (lamps[i].w > w_hi) break;\n")
FULL_LOOP = "    for (int i = 0; i < n_lamps; i++) {\n"


@pytest.fixture(scope="module")
def gl():
    reason = gl_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no headless OpenGL context here: {reason}")


def _lamp_street() -> Scene:
    """A 400 m street with a lamp every 7 m on both sides (more lamps than the shaders take) and a long building."""
    lamps = tuple(StreetObject(f"l{i}{side}", "street_lamp", -200.0 + 7.0 * i, 5.0 * side, 90.0 * side)
                  for i in range(58) for side in (-1, 1))
    return Scene("lamps", (Building("b", [(-150, 9), (150, 9), (150, 25), (-150, 25)], 15.0),), (), lamps,
                 (Road("r", [(-200, 0), (200, 0)], 7.0, 2.0),))


def test_lamp_pruning_draws_what_the_full_loop_draws(gl, monkeypatch):
    from urbanarena.render.scene3d import realistic_shaders as RS
    from urbanarena.render.scene3d import shaders
    from urbanarena.render.scene3d.renderer import SceneRenderer

    scene = _lamp_street()

    def renderer(style):
        # lamps 40x brighter: light from lamps near the edge of their reach shows in 8 bits
        r = SceneRenderer(scene, RenderSettings.for_condition("night", style=style))
        for prog in r._lit_programs:
            if "lamp_rgb" in prog:
                prog["lamp_rgb"].value = tuple(40.0 * c for c in prog["lamp_rgb"].value)
        return r

    poses = [(0.0, -2.0, 90.0, 0.0, 90.0, 160, 90, 1.7), (30.0, 2.0, 270.0, -20.0, 90.0, 160, 90, 1.7)]
    pruned = {}
    for style in ("flat", "realistic"):
        r = renderer(style)
        pruned[style] = [r.render_view(*p) for p in poses]
        r.release()
    # the same shaders with the loop over every lamp, none skipped
    n = 0
    for mod in (shaders, RS):
        for name, value in list(vars(mod).items()):
            if isinstance(value, str) and PRUNING in value:
                monkeypatch.setattr(mod, name, value.replace(PRUNING, FULL_LOOP))
                n += 1
    assert n >= 2  # at least LIGHT_FS and the flat programs built from it
    for style in ("flat", "realistic"):
        r = renderer(style)
        full = [r.render_view(*p) for p in poses]
        assert len(r.weather.lights) > 48  # more lamps than the shaders take: the nearest 48 are passed
        for a, b in zip(pruned[style], full):
            assert a.mean() > 5  # lit at all
            assert np.array_equal(a, b), style
        r.release()


def test_sensor_noise_tables_give_the_photon_transfer_formula():
    from urbanarena.render.scene3d.weather import NOISE_K, NOISE_READ, WeatherPass

    w = WeatherPass.__new__(WeatherPass)
    w.lighting = SimpleNamespace(sensor_gain=14.7)
    w.r = SimpleNamespace(settings=SimpleNamespace(rain_seed=3))
    rng = np.random.default_rng(5)
    for shape in ((36, 64, 3), (50, 50, 3), (36, 64, 3)):
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        g = 14.7
        v = img.astype(np.float32)
        sigma = np.sqrt(g * NOISE_K * v + (g * NOISE_READ) ** 2)
        z = np.random.default_rng([0x5E4502, 3, shape[0], shape[1]]).standard_normal(shape, dtype=np.float32)
        want = np.clip(np.rint(v + sigma * z), 0, 255).astype(np.uint8)
        assert np.array_equal(w.sensor_noise(img), want), shape


def test_ground_material_runs_follow_the_layer_colours():
    from urbanarena.render.scene3d.realistic_shaders import ground_material_runs

    asphalt, slabs, paint, other = (72, 74, 78), (168, 165, 158), (236, 236, 230), (10, 200, 10)
    tris = [asphalt, asphalt, slabs, other, paint, paint, paint, asphalt]
    colours = np.repeat(np.array(tris, np.float32) / 255.0, 3, axis=0)
    assert ground_material_runs(colours) == [(0, 6, 1), (6, 3, 2), (9, 3, 0), (12, 9, 4), (21, 3, 1)]
    # within the shader's tolerance (0.002 per channel) a colour still counts; beyond it, not
    near = colours.copy()
    near[:3] += 0.0015
    far = colours.copy()
    far[:3] += 0.003
    assert ground_material_runs(near)[0] == (0, 6, 1)
    assert ground_material_runs(far)[:2] == [(0, 3, 0), (3, 3, 1)]
    assert ground_material_runs(np.zeros((0, 3), np.float32)) == []


def test_lamp_loop_compiled_out_by_day_draws_the_same(gl, monkeypatch):
    from test_scene3d_cache import tiny_scene

    from urbanarena.render.scene3d import shaders
    from urbanarena.render.scene3d.renderer import SceneRenderer

    scene, pose = tiny_scene(), (5.0, -6.0, 0.0, 5.0, 90.0, 160, 90, 1.7)
    cases = [("cloudy", "flat"), ("rain", "flat"), ("clear", "realistic"), ("fog", "realistic")]

    def draw():
        out = []
        for cond, style in cases:
            r = SceneRenderer(scene, RenderSettings.for_condition(cond, style=style))
            out.append(r.render_view(*pose))
            r.release()
        return out

    assert "#define NO_LAMPS" in shaders.variant(shaders.PLAIN_FS, True, 48, lamps=False)
    compiled_out = draw()
    original = shaders.variant
    monkeypatch.setattr(shaders, "variant", lambda src, weather, max_lamps=48, lamps=True:
                        original(src, weather, max_lamps, True))
    with_loop = draw()
    for (cond, style), a, b in zip(cases, compiled_out, with_loop):
        assert np.array_equal(a, b), (cond, style)
