"""The ``photo`` style's facades (:mod:`urbanarena.render.scene3d.photo_facades`): the window recess, the sun in
the recess, the room behind the glass and the lit flats at night by hand and on the GPU against their Python
twins; the patch touches only the facade program; the realistic style never reaches the module; photo walls
change while the sky and ground stay, deterministically."""

from __future__ import annotations

import numpy as np
import pytest

from test_render_styles import small_scene
from urbanarena.render.scene3d import photo_facades as PF
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.render.scene3d.renderer import RenderSettings

needs_gl = pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")

LO, HI = (-0.05, -0.05), (1.25, 1.55)     # a 1.2 x 1.5 m window with a 5 cm frame


# ------------------------------------------------------------------------------------------------ by hand
def test_recess_hit_by_hand():
    q, d, face = PF.recess_hit((0.5, 0.5), (0.0, 0.0), LO, HI, 0.15)       # straight in: the glass plane
    assert face == 0 and d == 0.15 and np.allclose(q, (0.5, 0.5))
    q, d, face = PF.recess_hit((1.2, 0.7), (1.0, 0.0), LO, HI, 0.15)       # 45 deg to the right: right jamb
    assert face == 1 and d == pytest.approx(0.05) and np.allclose(q, (1.25, 0.7))
    q, d, face = PF.recess_hit((0.6, 1.5), (0.2, 1.0), LO, HI, 0.15)       # looking up: the head, 5 cm in
    assert face == 2 and d == pytest.approx(0.05) and np.allclose(q, (0.61, 1.55))
    q, d, face = PF.recess_hit((0.6, 0.0), (0.0, -0.5), LO, HI, 0.15)      # looking down: the sill, 10 cm in
    assert face == 3 and d == pytest.approx(0.1) and np.allclose(q, (0.6, -0.05))
    q, d, face = PF.recess_hit((1.2, 1.5), (0.5, 0.0), LO, HI, 0.15)       # 5 cm from the jamb at 0.5/m: 0.1 m
    assert face == 1 and d == pytest.approx(0.1)


def test_recess_sun_by_hand():
    # sun 45 degrees up, straight in front (s = (0, 1), s_n = 1): a point 15 cm deep is traced 15 cm up
    assert PF.recess_sun((0.6, 0.5), 0.15, (0.0, 1.0), 1.0, LO, HI) == 1.0       # lands 0.65 m up: inside
    assert PF.recess_sun((0.6, 1.5), 0.15, (0.0, 1.0), 1.0, LO, HI) == 0.0       # lands 1.65: above the head
    assert PF.recess_sun((0.6, 1.55 - 0.15), 0.15, (0.0, 1.0), 1.0, LO, HI) == pytest.approx(0.5)  # on the edge
    assert PF.recess_sun((0.6, 0.5), 0.15, (0.0, 1.0), -0.2, LO, HI) == 0.0      # sun behind the wall


def test_room_surface_by_hand():
    s, p = PF.room_surface((0.5, 0.5), (0.0, 0.0), 1.5)
    assert s == 0 and np.allclose(p, (0.5, 0.5))
    s, p = PF.room_surface((0.5, 0.5), (0.0, -0.5), 1.5)      # down 0.5 / m: the floor 1.4 m below at 2.8 m
    assert s == 1 and np.allclose(p, (0.5, -0.9))
    s, p = PF.room_surface((0.5, 1.0), (0.3, 0.5), 1.5)       # up: the ceiling 1.95 m at 1.9 m deep
    assert s == 2 and np.allclose(p, (0.5 + 0.3 * 1.9, 1.95))


def test_reflect_uv_by_hand():
    assert PF.reflect_uv((0.0, 1.0, 0.0), 0.0) == pytest.approx((0.0, 1.0))              # north, horizontal
    assert PF.reflect_uv((1.0, 0.0, 0.0), 0.0) == pytest.approx((0.25, 1.0))             # east
    assert PF.reflect_uv((0.0, 0.0, 1.0), 0.0)[1] == pytest.approx(0.0)                  # zenith
    assert PF.reflect_uv((0.0, 1.0, 0.0), np.pi)[0] == pytest.approx(0.5)                # map turned half way


def test_night_light_varies_by_wall_and_storey_and_lights_flats():
    lit = 0.35
    on = np.array([[[max(PF.night_light(i, fi, seed, lit)) > 0 for i in range(8)] for fi in range(6)]
                   for seed in range(200)])                # (wall, storey, window)
    walls = on.mean(axis=(1, 2))
    assert 0.2 < on.mean() < 0.5                          # about the condition's share on average
    # an even grid (every window lit with one probability) would spread the walls' shares by its binomial
    # deviation sqrt(p (1 - p) / 48), about 0.07 here
    assert walls.std() > 1.5 * np.sqrt(on.mean() * (1 - on.mean()) / 48)
    assert walls.min() < 0.15 and walls.max() > 0.55      # dark walls and bright ones
    # flats: a lit window's neighbour in its storey is lit more often than a window at large
    pairs = on[:, :, 0::2] & on[:, :, 1::2]
    assert pairs.sum() / on[:, :, 0::2].sum() > 1.5 * on.mean()
    assert max(PF.night_light(3, 2, 5, 0.0)) == 0.0      # day: nothing lit
    tints = {tuple(np.round(np.array(PF.night_light(i, fi, s, 1.0)) / max(max(PF.night_light(i, fi, s, 1.0)), 1e-9), 3))
             for s in range(40) for fi in range(4) for i in range(6) if max(PF.night_light(i, fi, s, 1.0)) > 0}
    assert len(tints) == 3                                # warm, neutral and cool flats


# ------------------------------------------------------------------------------------------------ the GPU
def _gpu(main: str, uniforms: dict, n: int, funcs: str | None = None) -> np.ndarray:
    """Run ``main`` (GLSL body writing ``vec4 f``; case ``i = int(gl_FragCoord.x)``) over ``n`` fragments, with
    the facade functions (``funcs``: others instead; ``test_photo_glass`` passes the glass and windows')."""
    from urbanarena.render.scene3d import realistic_shaders as RS
    from urbanarena.render.scene3d.context import current, gl_context

    ctx = gl_context()
    with current(ctx):
        vs = "#version 330\nin vec2 in_ndc;\nvoid main() { gl_Position = vec4(in_ndc, 0.0, 1.0); }\n"
        fs = ("#version 330\n" + RS.HASH + "float hf(uint h, uint shift) { return float((h >> shift) & 255u) / 255.0; }\n"
              + (PF.FUNCS_GLSL if funcs is None else funcs) + "uniform vec4 a[16];\nuniform vec4 b[16];\nout vec4 f;\n"
              + "void main() {\n    int i = int(gl_FragCoord.x);\n" + main + "}\n")
        prog = ctx.program(vertex_shader=vs, fragment_shader=fs)
        for name, rows in uniforms.items():
            arr = np.zeros((16, 4), "f4")
            arr[:len(rows)] = rows
            prog[name].write(arr.tobytes()[: 16 * prog[name].array_length])
        quad = ctx.buffer(np.array([-1, -1, 1, -1, 1, 1, -1, -1, 1, 1, -1, 1], "f4").tobytes())
        va = ctx.vertex_array(prog, [(quad, "2f", "in_ndc")])
        col = ctx.texture((n, 1), 4, dtype="f4")
        fb = ctx.framebuffer([col])
        fb.use()
        ctx.viewport = (0, 0, n, 1)
        va.render()
        out = np.frombuffer(fb.read(components=4, dtype="f4"), "f4").reshape(n, 4).copy()
        for o in (va, quad, prog, fb, col):
            o.release()
    return out


RAYS = [(0.5, 0.5, 0.0, 0.0), (1.2, 0.7, 1.0, 0.0), (0.6, 1.5, 0.2, 1.0), (0.6, 0.0, 0.0, -0.5), (0.1, 0.3, -0.7, 0.4),
        (1.0, 1.0, 0.3, 0.6), (0.0, 1.52, -0.3, 0.3), (0.9, 0.2, 0.25, -0.25)]


@needs_gl
def test_gpu_recess_is_the_twin():
    out = _gpu(f"    vec4 h = facade_recess(a[i].xy, a[i].zw, vec2{LO}, vec2{HI}, 0.15);\n"
               "    f = h;\n", {"a": RAYS}, len(RAYS))
    for k, (px, py, rx, ry) in enumerate(RAYS):
        q, d, face = PF.recess_hit((px, py), (rx, ry), LO, HI, 0.15)
        assert out[k, 3] == face, k
        assert np.allclose(out[k, :3], [*q, d], atol=1e-5), k


SUNS = [(0.6, 0.5, 0.15, 0.0), (0.6, 1.5, 0.15, 0.0), (0.6, 1.4, 0.15, 0.0), (0.2, 0.8, 0.1, 0.0), (1.2, 0.8, 0.18, 0.0),
        (0.6, 0.5, 0.15, 1.0)]
SUN_DIRS = [(0.0, 1.0, 1.0, 0.0), (0.0, 1.0, 1.0, 0.0), (0.0, 1.0, 1.0, 0.0), (-0.8, 0.3, 0.5, 0.0),
            (0.8, 0.3, 0.5, 0.0), (0.0, 1.0, -0.2, 0.0)]


@needs_gl
def test_gpu_recess_sun_is_the_twin():
    out = _gpu(f"    f = vec4(facade_recess_sun(a[i].xy, a[i].z, b[i].xy, b[i].z, vec2{LO}, vec2{HI}));\n",
               {"a": SUNS, "b": SUN_DIRS}, len(SUNS))
    want = [PF.recess_sun(s[:2], s[2], d[:2], d[2], LO, HI) for s, d in zip(SUNS, SUN_DIRS)]
    assert np.allclose(out[:, 0], want, atol=1e-5)
    assert want[0] == 1.0 and want[1] == 0.0 and want[5] == 0.0 and 0 < want[2] < 1   # lit, shaded, behind, edge


ROOMS = [(0.5, 0.5, 0.0, 0.0), (0.5, 0.5, 0.0, -0.5), (0.5, 1.0, 0.3, 0.5), (0.2, 1.2, -0.4, 0.05), (1.0, 0.1, 0.2, -0.2)]


@needs_gl
def test_gpu_room_surface_is_the_twin():
    out = _gpu("    vec2 p;\n    int s = facade_room_surface(a[i].xy, a[i].zw, 1.5, p);\n    f = vec4(p, float(s), 0.0);\n",
               {"a": ROOMS}, len(ROOMS))
    for k, r in enumerate(ROOMS):
        s, p = PF.room_surface(r[:2], r[2:], 1.5)
        assert out[k, 2] == s and np.allclose(out[k, :2], p, atol=1e-5), k


@needs_gl
def test_gpu_night_light_is_the_twin():
    cases = [(i, fi, seed, lit) for i, fi, seed, lit in
             [(0, 1, 11, 0.35), (1, 1, 11, 0.35), (5, 3, 977, 0.35), (2, 0, 30000, 0.8), (7, 9, 4242, 0.35),
              (3, 2, 5, 0.0), (4, 4, 123, 1.0), (6, 1, 777, 1.0), (1, 2, 31, 0.6), (0, 0, 0, 1.0), (9, 5, 12345, 0.9),
              (2, 7, 2024, 0.5)]]
    out = _gpu("    f = vec4(facade_night(a[i].x, uint(a[i].y), uint(a[i].z), a[i].w), 1.0);\n", {"a": cases}, len(cases))
    want = np.array([PF.night_light(*c) for c in cases])
    assert np.allclose(out[:, :3], want, atol=1e-5)
    assert (want.max(axis=1) > 0).sum() >= 3 and (want.max(axis=1) == 0).sum() >= 2   # the cases hold both


# ------------------------------------------------------------------------------------------------ the patch
def test_patch_touches_only_the_facade_program():
    from urbanarena.render.scene3d import realistic_shaders as RS

    for name in ("ground", "sky", "sky_tex", "foliage", "shade", "sign"):
        vs, fs = RS.program_sources(name, 8)
        assert PF.patch_source(fs, name) == fs and PF.patch_source(vs, name) == vs
    vs, fs = RS.program_sources("facade", 8)
    assert PF.patch_source(vs, "facade") == vs
    for sky in (False, True):
        out = PF.patch_source(fs, "facade", sky_map=sky)
        assert out != fs and "facade_recess(" in out and ("sky_tex" in out) == sky
    with pytest.raises(RuntimeError, match="photo facades"):
        PF.patch_source(fs.replace("    vec3 col = albedo;\n", "    vec3 col = albedo * 1.0;\n"), "facade")


def test_rooms_and_shops_are_dimmer_than_the_street_by_day():
    """photo-facades-4: a room behind glass and a shop's lamp-lit interior are darker than the wall lit by the
    sky; the realistic text (a shop as bright as the street) is replaced once, the room's 0.6 gone."""
    from urbanarena.render.scene3d import realistic_shaders as RS

    assert 0.0 < PF.ROOM_DAYLIGHT < PF.SHOP_DAYLIGHT < 0.6
    fs = RS.program_sources("facade", 8)[1]
    assert fs.count(PF.SHOP_LIGHT_OLD) == 1
    out = PF.patch_source(fs, "facade")
    assert PF.SHOP_LIGHT_OLD not in out and out.count(f"* {PF.SHOP_DAYLIGHT:.2f};") == 1
    assert f"if (kind == 1) c *= {PF.ROOM_DAYLIGHT:.2f};" in out and "if (kind == 1) c *= 0.6;" not in out


def _render(scene, style, monkeypatch, view=(0.0, -4.0, 20.0, -5.0, 90.0, 320, 180), settings=None):
    from urbanarena.render.scene3d import photo_atmosphere
    from urbanarena.render.scene3d import photo_materials as PM
    from urbanarena.render.scene3d.renderer import SceneRenderer

    monkeypatch.setattr(photo_atmosphere, "ENABLED", True)    # the photo facades come with the photo atmosphere
    monkeypatch.setattr(PM, "photo_materials", lambda quiet=False: None)
    return SceneRenderer(scene, settings or RenderSettings(style=style)).render_view(*view)


@needs_gl
def test_realistic_never_reaches_photo_facades(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("the realistic style patched its facades")

    scene = small_scene()
    real = _render(scene, "realistic", monkeypatch)
    monkeypatch.setattr(PF, "patch_source", boom)
    assert np.array_equal(_render(scene, "realistic", monkeypatch), real)
    night = RenderSettings(style="realistic", time_of_day="night")
    _render(scene, "realistic", monkeypatch, settings=night)     # every condition: never called


@needs_gl
def test_photo_walls_change_sky_and_ground_stay_and_are_deterministic(monkeypatch):
    """Against the photo style without the facade patch (same haze, sky and ground)."""
    scene = small_scene()
    photo = _render(scene, "photo", monkeypatch)
    again = _render(scene, "photo", monkeypatch)
    assert np.array_equal(photo, again)
    monkeypatch.setattr(PF, "patch_source", lambda src, program="", sky_map=False: src)
    plain = _render(scene, "photo", monkeypatch)
    diff = np.abs(photo.astype(int) - plain.astype(int)).max(axis=2)
    # as test_photo_materials: b1's wall (windows in it) fills the view down to row 96 left of column 272, the sky
    # and the skyline ring right of its end, pavement and road below
    assert (plain[:10, 290:, 2].astype(int) > plain[:10, 290:, 0]).all()      # sky there
    assert (diff[:40, 290:] == 0).all() and (diff[110:] == 0).all()          # the sky and the ground: untouched
    assert (diff[5:90, :280] > 2).mean() > 0.1           # the wall: drift, streaks, recessed windows


def test_photo_render_identity_names_the_facades():
    from urbanarena.render.scene3d.render_identity import _photo_identity

    got = _photo_identity()["facades"]
    assert got == PF.source_identity() and got["version"] == PF.FACADES_VERSION and len(got["glsl"]) == 12
