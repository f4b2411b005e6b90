"""The ``photo`` style's leaf look and plant tones (:mod:`.photo_leaf_look`, :mod:`.photo_plant_tone`, the hedge and
bush templates of :mod:`.photo_greenery_mesh`): the leaf grade and the translucency weight worked by hand, the
GLSL's constants the Python ones and its GPU output the numpy twin's, the card tones, depth shade and soil
polygons by hand, and the templates' dark gaps. Hand-made cells only (no fetched assets needed)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from urbanarena.render.scene3d import photo_greenery_mesh as PGM
from urbanarena.render.scene3d import photo_leaf_look as PL
from urbanarena.render.scene3d import photo_plant_tone as PT


# ----------------------------------------------------------------------------------------------- leaf grade
def test_grade_leaf_cell_by_hand():
    cell = np.array([[[0.2, 0.6, 0.2, 1.0], [0.4, 0.8, 0.4, 1.0], [0.9, 0.1, 0.1, 0.2]]])
    got = PL.grade_leaf_cell(cell)
    la = 0.2126 * 0.2 + 0.7152 * 0.6 + 0.0722 * 0.2          # 0.48608
    lb = 0.2126 * 0.4 + 0.7152 * 0.8 + 0.0722 * 0.4          # 0.68608
    m = (la + lb) / 2                                         # 0.58608: the opaque texels' mean
    k = 1 - PL.DESATURATE
    want_a = np.array([la + k * (0.2 - la), la + k * (0.6 - la), la + k * (0.2 - la)]) * (la / m) ** PL.CONTRAST
    want_b = np.array([lb + k * (0.4 - lb), lb + k * (0.8 - lb), lb + k * (0.4 - lb)]) * (lb / m) ** PL.CONTRAST
    assert la == pytest.approx(0.48608) and lb == pytest.approx(0.68608)
    assert np.allclose(got[0, 0, :3], want_a) and np.allclose(got[0, 1, :3], np.clip(want_b, 0, 1))
    assert got[0, 0, 1] < 0.6 and got[0, 1, 1] > got[0, 0, 1]     # the dark leaf darker, the lit one stays lit
    assert np.array_equal(got[0, 2], cell[0, 2]) and np.array_equal(got[..., 3], cell[..., 3])


def test_grade_keeps_a_grey_cell_and_an_empty_one():
    grey = np.full((2, 2, 4), 0.5)
    assert np.allclose(PL.grade_leaf_cell(grey), grey)        # no chroma, every texel at the mean
    empty = np.zeros((2, 2, 4))
    assert np.array_equal(PL.grade_leaf_cell(empty), empty)


# ---------------------------------------------------------------------------------------------- translucency
def test_translucency_by_hand():
    s = np.array([0.0, 0.6, 0.8])
    assert PL.translucency(-s, s, -s) == pytest.approx(1.0)      # into the sun, through a leaf whose back faces it
    assert PL.translucency(s, s, -s) == pytest.approx(0.0)       # the sun behind the viewer
    assert PL.translucency(-s, s, s) == pytest.approx(0.35)      # into the sun, the leaf's lit face to it
    v = np.array([0.0, -math.sqrt(0.5), -math.sqrt(0.5)])       # 45 degrees off: -v.s = 0.6 * 0.7071 + 0.8 * 0.7071
    through = (0.6 + 0.8) * math.sqrt(0.5)
    assert PL.translucency(v, s, np.array([1.0, 0.0, 0.0])) == pytest.approx(through ** 2 * 0.35)


def test_translucency_glsl_matches_the_twin():
    src = PL.TRANSLUCENCY_GLSL
    nums = [float(x) for x in re.findall(r"vec3\(([0-9.]+), ([0-9.]+), ([0-9.]+)\)", src)[0]]
    assert np.allclose(nums, PL.TRANS_RGB, atol=1e-4)
    assert f"{PL.TRANSLUCENCY:.4f}" in src and "through * through * (0.35 + 0.65 * back)" in src
    from urbanarena.render.scene3d.trees_photo import program_sources

    fs = program_sources(8)[1]
    assert "vec3 leaf_glow(vec3 p, vec3 n)" in fs and "+ leaf_glow(v_world, n))" in fs


# ----------------------------------------------------------------------------------------------- plant tones
def test_card_tone_by_hand():
    assert np.allclose(PT.card_tone(0.05, 0.0), np.asarray(PT.YELLOW_RGB) * 0.8)
    assert np.allclose(PT.card_tone(PT.YELLOW_SHARE + 0.01, 1.0), np.asarray(PT.DARK_RGB) * 1.1)
    assert np.allclose(PT.card_tone(0.9, 0.5), [0.95, 0.95, 0.95])
    assert PT.depth_shade(0.0) == PT.DEPTH_LO and PT.depth_shade(2.0) == 1.0
    assert PT.depth_shade(0.5) == pytest.approx(PT.DEPTH_LO + (1 - PT.DEPTH_LO) * 0.5)


def _area(P) -> float:
    p = np.asarray(P, np.float64).reshape(-1, 3, 3)
    return float(0.5 * np.abs(np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])[:, 2]).sum())


def test_soil_polygons_by_hand():
    P, N, C, UV = PT.soil_disc(0.42, 0.42, 8, PGM.OAK_BARK)
    assert len(P) == 24 and np.allclose(np.asarray(P)[:, 2], PT.SOIL_Z_M) and np.allclose(N, (0, 0, 1))
    assert _area(P) == pytest.approx(0.5 * 8 * 0.42 ** 2 * math.sin(math.pi / 4))   # a regular octagon
    u = np.asarray(UV)[:, 0]
    assert (u >= 2 * PGM.OAK_BARK).all() and (u <= 2 * PGM.OAK_BARK + 1).all() and np.allclose(C, PT.SOIL_RGB)
    P, *_ = PT.soil_disc(0.5, 0.62, 4, PGM.OAK_BARK)
    assert len(P) == 6 and _area(P) == pytest.approx(1.0 * 1.24)


# -------------------------------------------------------------------------------------------------- templates
def test_hedge_cards_leave_the_core_to_show_and_vary():
    h = PGM.hedge_cell(0)
    cards = h.n_triangles - 8                                  # the core's 6 triangles and the soil quad's 2
    assert cards == 2 * (2 * PGM.HEDGE_SIDE_CARDS + 4)
    # a long side's cards: their area against the core's 1 x 0.8 m face (about once over, so gaps show it dark)
    p = h.positions.reshape(-1, 6, 3)[4:]                      # cards: after the core (3 quads) and the soil (1)
    side = p[:PGM.HEDGE_SIDE_CARDS]
    a = sum(float(np.linalg.norm(np.cross(c[1] - c[0], c[2] - c[0]))) for c in side)
    assert 1.0 < a / 0.8 < 3.0
    # colours per card differ in hue (yellowing and old leaves), not brightness alone
    col = h.colours.reshape(-1, 6, 3)[4:, 0]
    ratio = col[:, 2] / col[:, 1]
    assert ratio.max() - ratio.min() > 0.2
    # normals scattered: the cards of one side do not all face the same way
    n = h.normals.reshape(-1, 6, 3)[4:4 + PGM.HEDGE_SIDE_CARDS, 0]
    assert np.ptp(n[:, 0]) > 0.2


def test_templates_are_seeded():
    for f in (PGM.hedge_cell, PGM.bush, PGM.tuft):
        a, b = f(1), f(1)
        assert np.array_equal(a.positions, b.positions) and np.array_equal(a.colours, b.colours)


# ------------------------------------------------------------------------------------------- GPU and twin
def _unit_rows(rng, k: int) -> np.ndarray:
    v = rng.normal(size=(k, 3))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_translucency_glsl_is_the_twin_on_the_gpu():
    """``leaf_glow`` evaluated by the GPU (one pixel a case, a float framebuffer) equals the numpy twin times the
    constants, for 64 random leaf positions, normals, eyes and suns (half of them looking into the sun)."""
    from urbanarena.render.scene3d.context import current, gl_context, gl_unavailable_reason

    if gl_unavailable_reason() is not None:
        pytest.skip(f"no OpenGL: {gl_unavailable_reason()}")
    rng = np.random.default_rng(5)
    k = 64
    s = _unit_rows(rng, k)
    p = rng.normal(size=(k, 3)) * 5.0
    to_eye = _unit_rows(rng, k)
    to_eye[: k // 2] = -s[: k // 2] + 0.3 * _unit_rows(rng, k // 2)       # half look roughly into the sun
    to_eye /= np.linalg.norm(to_eye, axis=1, keepdims=True)
    eye = p + 7.0 * to_eye
    n = _unit_rows(rng, k)
    sun, sun_rgb = 0.8, np.array([1.0, 0.9, 0.7])
    twin = PL.translucency(to_eye, s, n)[:, None] * np.asarray(PL.TRANS_RGB) * sun_rgb * sun * PL.TRANSLUCENCY
    assert (twin.max(axis=1) > 0.05).sum() >= 10 and (twin.max(axis=1) == 0).sum() >= 10   # both kinds of case
    vs = "#version 330\nin vec2 in_ndc;\nvoid main() { gl_Position = vec4(in_ndc, 0.0, 1.0); }\n"
    fs = ("#version 330\nuniform vec3 eye;\nuniform vec3 sun_dir;\nuniform float sun;\nuniform vec3 sun_rgb;\n"
          + PL.TRANSLUCENCY_GLSL + "uniform vec3 p;\nuniform vec3 nrm;\nout vec4 f;\n"
          + "void main() { f = vec4(leaf_glow(p, nrm), 1.0); }\n")
    ctx = gl_context()
    got = np.zeros((k, 3))
    with current(ctx):
        prog = ctx.program(vertex_shader=vs, fragment_shader=fs)
        quad = ctx.buffer(np.array([-1, -1, 1, -1, 1, 1, -1, -1, 1, 1, -1, 1], "f4").tobytes())
        va = ctx.vertex_array(prog, [(quad, "2f", "in_ndc")])
        col = ctx.texture((1, 1), 4, dtype="f4")
        fb = ctx.framebuffer([col])
        fb.use()
        ctx.viewport = (0, 0, 1, 1)
        prog["sun"].value = sun
        prog["sun_rgb"].value = tuple(sun_rgb)
        for i in range(k):
            prog["eye"].value, prog["sun_dir"].value = tuple(eye[i]), tuple(s[i])
            prog["p"].value, prog["nrm"].value = tuple(p[i]), tuple(n[i])
            va.render()
            got[i] = np.frombuffer(fb.read(components=4, dtype="f4"), "f4")[:3]
        for o in (va, quad, prog, fb, col):
            o.release()
    assert np.abs(got - twin).max() < 1e-4
