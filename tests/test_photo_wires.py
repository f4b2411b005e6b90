"""Tram overhead wires and poles of the photo style (:mod:`urbanarena.render.scene3d.photo_wires`): the plan by
hand on a straight street, and the GL lines' opacity (the wire's width in pixels) against the formula."""

from __future__ import annotations

import numpy as np
import pytest

from urbanarena.render.scene3d import photo_wires as W
from urbanarena.render.scene3d.scene import Building, RailLine, Road, Scene


def _street(extra_rails=(), buildings=()):
    road = Road("r", ((0.0, 0.0), (100.0, 0.0)), width_m=10.0, sidewalk_m=3.0)
    rails = (RailLine("t1", ((0.0, 0.0), (100.0, 0.0))), *extra_rails)
    return Scene(roads=(road,), rails=rails, buildings=tuple(buildings))


def test_no_tram_no_wires():
    plan = W.plan_wires(Scene(roads=(Road("r", ((0.0, 0.0), (50.0, 0.0)), width_m=8.0),)))
    assert all(len(v) == 0 for v in plan.values())


def test_a_straight_street_by_hand():
    plan = W.plan_wires(_street())
    # supports at 0, 32, 64, 96 m and the end at 100 m: four contact-wire pieces at 5.8 m, staggered +-0.2 m
    c = plan["contact"]
    assert c.shape == (4, 2, 3) and np.allclose(c[..., 2], W.CONTACT_Z_M)
    assert np.allclose(c[:, 0, 0], [0, 32, 64, 96]) and np.allclose(c[:, 1, 0], [32, 64, 96, 100])
    assert np.allclose(c[0, :, 1], [0.2, -0.2]) and np.allclose(c[1, :, 1], [-0.2, 0.2])
    # spans from 16 m on: at 32, 64 and 96 m, kerb to kerb (5 + 0.6 m out), 6.6 m at the poles, 6.25 m mid-way
    s = plan["span"].reshape(3, W.SPAN_PIECES, 2, 3)
    assert np.allclose(s[:, 0, 0, 0], [32, 64, 96])
    assert np.allclose(np.abs(s[:, 0, 0, 1]), 5.6) and np.allclose(s[:, 0, 0, 1], -s[:, -1, 1, 1])
    assert np.allclose(s[:, 0, 0, 2], 6.6) and np.allclose(s[:, W.SPAN_PIECES // 2, 0, 2], 6.6 - 0.35)
    poles = sorted(map(tuple, np.round(plan["poles"], 6)))
    assert poles == sorted((x, y) for x in (32.0, 64.0, 96.0) for y in (5.6, -5.6))


def test_a_second_track_shares_the_spans_and_a_wall_takes_a_pole():
    second = RailLine("t2", ((0.0, 3.0), (100.0, 3.0)))
    wall = Building("b", ((60.0, 5.0), (70.0, 5.0), (70.0, 15.0), (60.0, 15.0)), height_m=12.0)
    plan = W.plan_wires(_street((second,), (wall,)))
    assert len(plan["contact"]) == 8                                   # each track its own contact wire
    assert len(plan["span"]) == 3 * W.SPAN_PIECES                      # but one span every 32 m
    assert (64.0, 5.6) not in set(map(tuple, np.round(plan["poles"], 6)))   # the span is anchored in the wall
    assert len(plan["poles"]) == 5


def test_wire_vertices_carry_their_diameters():
    v = W.wire_vertices(W.plan_wires(_street()))
    assert v.shape == ((4 + 3 * W.SPAN_PIECES) * 2, 4)
    assert np.allclose(v[:8, 3], W.CONTACT_D_M) and np.allclose(v[8:, 3], W.SPAN_D_M)


def test_pole_mesh_is_one_tapered_pole_a_foot():
    m = W.pole_mesh(np.array([[1.0, 2.0], [10.0, 2.0]]))
    assert m.n_triangles == 2 * (8 * 2 + 8)    # 8 side quads (2 triangles) and an 8-triangle cap each
    assert np.isclose(m.positions[:, 2].max(), W.POLE_H_M) and np.isclose(m.positions[:, 2].min(), 0.0)


def _needs_gl():
    from urbanarena.render.scene3d.context import gl_unavailable_reason

    r = gl_unavailable_reason()
    if r is not None:
        pytest.skip(f"no OpenGL: {r}")


def test_gl_lines_take_the_wires_width_in_pixels_as_opacity():
    """Level wires across the view at 8 m (1 m above the eye) and at 40 m (at eye height), over white: each
    darkens its own row by its opacity ``d f / w`` (f = 160 px for 320 px across 90 degrees), towards the wire's
    colour."""
    _needs_gl()
    from urbanarena.render.scene3d.context import current, gl_context
    from urbanarena.render.scene3d.cubemap import projection_matrix, view_matrix

    ctx = gl_context()
    import moderngl

    class R:   # what WirePass needs of a renderer
        pass

    r = R()
    r.ctx, r._mgl, kept = ctx, moderngl, []
    r._keep = lambda o: (kept.append(o), o)[1]
    w, h = 320, 160
    with current(ctx):
        plan = {"contact": np.array([[[-30.0, 8.0, 2.7], [30.0, 8.0, 2.7]], [[-60.0, 40.0, 1.7], [60.0, 40.0, 1.7]]]),
                "span": np.zeros((0, 2, 3))}
        wp = W.WirePass(r, plan)
        fbo = ctx.simple_framebuffer((w, h), components=4)
        fbo.use()
        fbo.clear(1.0, 1.0, 1.0, 1.0, depth=1.0)
        ctx.enable(moderngl.DEPTH_TEST)
        P = projection_matrix(90.0, w, h, 0.1, 1000.0)
        V = view_matrix(np.array([0.0, 0.0, 1.7]), 0.0, 0.0)   # looking north from the origin, eye 1.7 m
        wp.draw(fbo, (P @ V).T.astype("f4").tobytes(), P, h)
        img = np.frombuffer(fbo.read(components=3), np.uint8).reshape(h, w, 3)[::-1].astype(float) / 255.0
        fbo.release()
    col = img[:, w // 2, 0]
    # rows: the horizon at 79.5, the near wire 160 * 1 / 8 = 20 px above it
    near, far = col[55:65].min(), col[75:85].min()
    for got, dist in ((near, 8.0), (far, 40.0)):
        a = W.CONTACT_D_M * 160.0 / dist     # 0.28 and 0.056
        assert np.isclose(1.0 - got, a * (1.0 - W.WIRE_RGB[0]), atol=0.006)
    assert (col < 0.999).sum() == 2          # one row each, the rest untouched


def test_a_pole_never_stands_on_a_track_or_in_a_carriageway():
    # a second track along the kerb line (5.6 m out) where the kerb poles would stand: they move outwards in
    # 0.5 m steps until 2.2 m clear of it, i.e. to 5.6 + 2.5 = 8.1 m
    kerb = RailLine("t3", ((0.0, 5.6), (100.0, 5.6)))
    plan = W.plan_wires(_street((kerb,)))
    ys = np.round(plan["poles"][:, 1], 6)
    assert set(ys) == {8.1, -5.6}
