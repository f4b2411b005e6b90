"""The ``photo`` style's curtain walls, shops and window variety (:mod:`urbanarena.render.scene3d.photo_glass`,
:mod:`urbanarena.render.scene3d.photo_windows`): the pane grid, the offices behind the panes, the lit bays, the
shops' palettes and the lit rooms' light by hand and on the GPU against their Python twins; the patch keeps to the
facade program and changes the photo render identity."""

from __future__ import annotations

import math

import numpy as np
import pytest

from urbanarena.render.scene3d import photo_glass as PGL
from urbanarena.render.scene3d import photo_windows as PW
from urbanarena.render.scene3d.building_look import _hf, rhash
from urbanarena.render.scene3d.context import gl_unavailable_reason
from test_photo_facades import _gpu as facades_gpu

needs_gl = pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")


# ------------------------------------------------------------------------------------------------ by hand
def test_glass_cell_by_hand():
    wh = 12345
    pw0, spand, mw = PGL.glass_params(wh)
    gh = rhash(wh, 101, 3)
    assert pw0 == pytest.approx(1.2 + 0.6 * _hf(gh, 0)) and 1.2 <= pw0 <= 1.8 and 0.6 <= spand <= 1.1
    L, fh = 30.0, 3.5
    ncol = math.floor(L / pw0 + 0.5)
    pw = L / ncol                                         # whole panes along the wall
    part, c, k, x, y = PGL.glass_cell(2.5 * pw, 2 * fh + spand + 1.0, L, fh, wh)   # middle of a pane, storey 2
    assert (part, c, k) == (2, 2, 2) and x == pytest.approx(0.5 * pw) and y == pytest.approx(spand + 1.0)
    assert PGL.glass_cell(3 * pw + 0.2 * mw, 5.0, L, fh, wh)[0] == 0           # on a mullion
    assert PGL.glass_cell(1.5 * pw, fh + 0.2 * mw, L, fh, wh)[0] == 0          # on the slab's transom
    assert PGL.glass_cell(1.5 * pw, fh + spand + 0.2 * mw, L, fh, wh)[0] == 0  # the spandrel's transom
    assert PGL.glass_cell(1.5 * pw, fh + 0.5 * spand, L, fh, wh)[0] == 1       # the spandrel
    assert PGL.glass_cell(0.5, 1.8, 0.9, fh, wh)[1] == 0                      # a short wall: one pane


def test_office_surface_by_hand():
    fh = 3.5
    s, p, d = PGL.office_surface((0.6, 2.0), (0.0, 0.0), fh, 3.0, 8.0)      # straight in, above the screen
    assert s == 0 and d == 8.0 and np.allclose(p, (0.6, 2.0))
    s, p, d = PGL.office_surface((0.6, 2.0), (0.1, 0.5), fh, 3.0, 8.0)      # up: the ceiling 1.1 m up at 2.2 m
    assert s == 2 and d == pytest.approx(2.2) and np.allclose(p, (0.82, 3.1))
    s, p, d = PGL.office_surface((0.6, 2.0), (0.0, -1.0), fh, 3.0, 8.0)     # steeply down: the floor at 2 m
    assert s == 1 and d == pytest.approx(2.0)
    s, p, d = PGL.office_surface((0.6, 1.5), (0.0, -0.2), fh, 3.0, 8.0)     # gently down: the screen at 3 m, 0.9 m
    assert s == 3 and d == 3.0 and p[1] == pytest.approx(0.9)


def test_bay_light_lights_whole_bays_and_some_storeys():
    lit = 0.35
    on = np.array([[[PGL.bay_light(c, k, wh, lit)[0] > 0.05 for c in range(24)] for k in range(8)]
                   for wh in range(60)])
    assert 0.15 < on.mean() < 0.7
    for wh in range(60):                                  # every pane of a bay alike
        for c in range(24):
            same = [c2 for c2 in range(24) if PGL.bay_of(c2, wh) == PGL.bay_of(c, wh)]
            assert all((on[wh, :, c2] == on[wh, :, c]).all() for c2 in same)
    assert all(4 <= sum(PGL.bay_of(c, wh) == 1 for c in range(40)) <= 7 for wh in range(30))  # 4-7 panes a bay
    assert PGL.bay_light(3, 2, 77, 0.0) == (0.03, 0.03, 0.03)                   # by day: the dim glow only


def test_shop_palettes_differ_per_shop():
    pals = np.array([[PW.shop_rgb(k, wh) for k in range(3)] for wh in range(50)])
    assert pals.min() >= 0.0 and pals.max() <= 0.85 + 1e-9
    # the hand case: hue 0 is red, 1/3 green (cos rainbow), value times (1 + sat (rainbow - 1))
    hs = rhash(7, 211, 7)
    hue, sat, val = _hf(hs, 0), 0.25 + 0.5 * _hf(hs, 8), 0.35 + 0.5 * _hf(hs, 16)
    want = [val * (1 + sat * (0.5 + 0.5 * math.cos(2 * math.pi * (hue + o)) - 1)) for o in (0, 0.333, 0.667)]
    assert np.allclose(PW.shop_rgb(0, 7), want, atol=1e-6)
    flat = pals.reshape(50, 9)
    dists = np.linalg.norm(flat[:, None] - flat[None], axis=2)[np.triu_indices(50, 1)]
    assert dists.min() > 0.02 and np.median(dists) > 0.2     # no two shops share one palette


def test_night_modes_and_shapes_by_hand():
    modes = [PW.night_mode(i, k, s) for i in range(10) for k in range(6) for s in range(30)]
    shares = np.bincount(modes, minlength=3) / len(modes)
    assert np.allclose(shares, (0.5, 0.3, 0.2), atol=0.05)
    w, h = 1.2, 1.5
    assert PW.night_shape(1, (0.6, 0.5, 0.5), w, h) == pytest.approx(0.12)     # a near floor: dark
    assert PW.night_shape(1, (0.6, 0.5, 3.5), w, h) == pytest.approx(1.42)     # the far wall: lit
    lamp = (0.6, 1.85, 1.75)
    assert PW.night_shape(0, lamp, w, h) == pytest.approx(0.45 + 2.2 + 2.5)     # on the lamp's shade
    assert PW.night_shape(0, (0.6, 1.85, 3.5), w, h) == pytest.approx(0.45 + 2.2 / (1 + 0.7 * 1.75 ** 2))
    assert PW.night_shape(2, (0.18, -0.2, 1.1), w, h) == pytest.approx(0.2 + 2.2)


# ------------------------------------------------------------------------------------------------ the GPU
def _gpu(main: str, uniforms: dict, n: int) -> np.ndarray:
    """Run ``main`` over ``n`` fragments with the glass and windows' GLSL (``test_photo_facades._gpu``)."""
    return facades_gpu(main, uniforms, n, funcs=PGL.FUNCS_GLSL + PW.FUNCS_GLSL)


CELLS = [(5.3, 9.7, 30.0, 12345), (0.02, 1.0, 30.0, 12345), (14.1, 3.52, 22.5, 777), (7.7, 4.3, 22.5, 777),
         (3.0, 0.3, 9.0, 4242), (8.95, 13.0, 9.0, 4242), (11.4, 7.2, 40.0, 31), (0.4, 1.9, 0.9, 5)]


@needs_gl
def test_gpu_glass_cell_is_the_twin():
    out = _gpu("    int part;\n    vec4 g = glass_cell(a[i].x, a[i].y, a[i].z, 3.5, uint(a[i].w), part);\n"
               "    f = vec4(float(part) * 100.0 + g.x, g.y, g.z, g.w);\n", {"a": CELLS}, len(CELLS))
    parts = set()
    for k, (u, z, L, wh) in enumerate(CELLS):
        part, c, st, x, y = PGL.glass_cell(u, z, L, 3.5, wh)
        parts.add(part)
        assert np.allclose(out[k], [part * 100 + c, st, x, y], atol=1e-4), k
    assert parts == {0, 1, 2}                              # the cases hold every part


@needs_gl
def test_gpu_office_surface_is_the_twin():
    rays = [(0.6, 2.0, 0.0, 0.0), (0.6, 2.0, 0.1, 0.5), (0.6, 2.0, 0.0, -1.0), (0.6, 1.5, 0.0, -0.2),
            (1.1, 2.9, -0.3, 0.05), (0.2, 1.3, 0.4, -0.05)]
    out = _gpu("    vec2 p;\n    float d;\n    int s = glass_office_surface(a[i].xy, a[i].zw, 3.5, 3.0, 8.0, p, d);\n"
               "    f = vec4(p, d, float(s));\n", {"a": rays}, len(rays))
    for k, r in enumerate(rays):
        s, p, d = PGL.office_surface(r[:2], r[2:], 3.5, 3.0, 8.0)
        assert out[k, 3] == s and np.allclose(out[k, :3], [*p, d], atol=1e-4), k


@needs_gl
def test_gpu_bay_light_is_the_twin():
    cases = [(c, k, wh, lit) for c, k, wh, lit in [(0, 1, 11, 0.35), (3, 1, 11, 0.35), (9, 4, 977, 0.35),
             (2, 0, 30000, 0.8), (17, 9, 4242, 0.35), (3, 2, 5, 0.0), (4, 4, 123, 1.0), (6, 1, 777, 1.0),
             (12, 2, 31, 0.6), (0, 0, 0, 1.0), (30, 5, 12345, 0.9), (2, 7, 2024, 0.5)]]
    out = _gpu("    f = vec4(glass_bay_light(a[i].x, uint(a[i].y), uint(a[i].z), a[i].w), 1.0);\n", {"a": cases}, len(cases))
    want = np.array([PGL.bay_light(*c) for c in cases])
    assert np.allclose(out[:, :3], want, atol=1e-5)
    assert (want[:, 0] > 0.05).sum() >= 3 and (want[:, 0] < 0.05).sum() >= 2


@needs_gl
def test_gpu_shop_palette_and_night_mode_are_the_twins():
    cases = [(k, wh, i, fi) for k, wh, i, fi in [(0, 7, 0, 1), (1, 7, 3, 2), (2, 7, 5, 0), (0, 1999, 9, 4),
             (1, 30000, 1, 1), (2, 424242, 7, 6), (0, 88, 2, 3), (1, 5, 4, 2)]]
    out = _gpu("    f = vec4(shop_rgb(uint(a[i].x), uint(a[i].y)), float(night_mode(a[i].z, uint(a[i].w), uint(a[i].y))));\n",
               {"a": cases}, len(cases))
    for k, (c, wh, i, fi) in enumerate(cases):
        assert np.allclose(out[k, :3], PW.shop_rgb(c, wh), atol=2e-4), k   # cos in float32 on the GPU
        assert out[k, 3] == PW.night_mode(i, fi, wh), k


@needs_gl
def test_gpu_night_shape_is_the_twin():
    cases = [(1, 0.6, 0.5, 0.5), (1, 0.6, 0.5, 2.4), (0, 0.6, 1.85, 1.75), (0, 0.6, 1.85, 3.5), (0, 0.1, -0.9, 2.2),
             (2, 0.18, -0.2, 1.1), (2, 1.0, 1.0, 3.5), (0, 0.65, 1.7, 1.8)]
    out = _gpu("    f = vec4(night_shape(int(a[i].x), a[i].yzw, 1.2, 1.5));\n", {"a": cases}, len(cases))
    want = [PW.night_shape(int(c[0]), c[1:], 1.2, 1.5) for c in cases]
    assert np.allclose(out[:, 0], want, atol=1e-4)


# ------------------------------------------------------------------------------------------------ the patch
def test_patch_adds_glass_and_windows_to_the_facade_only():
    from urbanarena.render.scene3d import photo_facades as PF
    from urbanarena.render.scene3d import realistic_shaders as RS

    vs, fs = RS.program_sources("facade", 8)
    out = PF.patch_source(fs, "facade", sky_map=True)
    for name in ("glass_cell(", "glass_office(", "shop_rgb(", "night_shape(", "gopen"):
        assert name in out, name
    assert "goods < 0.33 ? vec3(0.65, 0.3, 0.25)" not in out          # the one shop palette is gone
    assert PGL.LIGHT_OLD not in out
    with pytest.raises(RuntimeError, match="photo windows"):
        PW.patch_source(out)                                             # applied twice: its anchors are gone
    ident = PF.source_identity()
    assert ident["version"] == PF.FACADES_VERSION == "photo-facades-4"
