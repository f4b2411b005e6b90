"""The ``photo`` style's sky visibility (:mod:`urbanarena.render.scene3d.photo_occlusion`): the open-sky fraction
of hand-worked layouts (a street canyon and a single wall against their formulas, an open square), the height
raster and the filling of building cells by hand, the factors' hand values, the GLSL on the GPU against the numpy
twins, and the patched ground and facade programs (they compile; switched off, nothing changes)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from urbanarena.render.scene3d import photo_occlusion as PO
from urbanarena.render.scene3d.context import gl_unavailable_reason

needs_gl = pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")


def _canyon(h_m: float, w_cells: int, length: int = 800, width: int = 200) -> tuple[np.ndarray, int]:
    """Two walls ``h_m`` high, 4 cells thick, ``w_cells`` cells (1 m) apart, running along ``y`` for ``length``
    cells (longer than twice the reach, so infinite for the rows in the middle); returns the grid and the
    first gap column."""
    g = np.zeros((length, width), np.float32)
    a = width // 2 - w_cells // 2
    g[:, a - 4:a] = h_m
    g[:, a + w_cells:a + w_cells + 4] = h_m
    return g, a


# ------------------------------------------------------------------------------------------ by formula
def test_open_square_sees_the_whole_sky():
    assert PO.open_sky(np.zeros((40, 60), np.float32), 1.0).min() == 1.0
    g, _ = _canyon(15.0, 10, 400, 100)
    assert PO.open_sky(g, 1.0, z_m=(15.0, 20.0)).min() == 1.0      # at or above every roof: nothing above


@pytest.mark.parametrize("h_m,w,z", [(15.0, 10, 0.0), (15.0, 10, 4.0), (8.0, 20, 0.0)])
def test_canyon_floor_is_cos_beta(h_m, w, z):
    """The middle of an infinite canyon (walls ``H`` high, ``W`` apart) at height ``z`` sees ``cos beta``,
    ``tan beta = 2 (H - z) / W`` (Oke), up to the 16 azimuths and the 160 m reach (grazing rays that pass the
    walls' ends see the sky)."""
    g, a = _canyon(h_m, w)
    s = PO.open_sky(g, 1.0, z_m=(z,))[0]
    mid = s[400, a + w // 2 - 1:a + w // 2 + 1].mean()            # the two cells either side of the axis
    want = 1.0 / math.sqrt(1.0 + (2.0 * (h_m - z) / w) ** 2)
    assert abs(mid - want) < 0.02, (mid, want)


def test_one_wall_hides_half_the_sky_at_its_foot():
    """Beside one infinite wall ``H`` high at distance ``d``: ``S = 1/2 + 1/2 / sqrt(1 + (H / d)^2)`` (the
    canyon's half-sum with the other side open)."""
    g = np.zeros((800, 200), np.float32)
    g[:, 96:100] = 12.0
    s = PO.open_sky(g, 1.0, z_m=(0.0,))[0]
    for col, tol in ((100, 0.05), (105, 0.015), (130, 0.015)):
        d = col + 0.5 - 100
        want = 0.5 + 0.5 / math.sqrt(1 + (12.0 / d) ** 2)
        assert abs(s[400, col] - want) < tol, (col, s[400, col], want)   # at 0.5 m the two azimuths along
        # the wall see none of it, where the continuous integral has it high on both sides of them


def test_in_front_of_a_wall_the_front_half_is_what_counts():
    """Half a metre in front of a long wall (the cell next to it) the wall hides the back half: on open ground
    ``2 S`` reaches 1 (the factor 1); across a canyon it is the sum over the 16 azimuths ``phi`` (from the wall's
    normal) of ``cos^2`` of the horizon, by hand: the own wall ``(H - z) |cos phi| / 0.5`` behind, the opposite
    one ``(H - z) cos phi / 9.5`` in front, nothing along the street. That is ``cos b``, ``tan b = (H - z) / W``,
    plus the two azimuths along the wall (the continuous integral's value is lower by about their share)."""
    g = np.zeros((800, 200), np.float32)
    g[:, 96:100] = 20.0
    s = PO.open_sky(g, 1.0, z_m=(2.0,))[0]
    assert 1.0 <= 2 * s[400, 100] < 1.2 and PO.wall_factor(s[400, 100]) == 1.0
    g, a = _canyon(15.0, 10)
    s = PO.open_sky(g, 1.0, z_m=(3.0,))[0]
    t = []
    for k in range(16):
        c = math.cos(2 * math.pi * k / 16)
        t.append(12.0 * -c / 0.5 if c < -1e-9 else 12.0 * c / 9.5 if c > 1e-9 else 0.0)
    want = 2 * sum(1 / (1 + x * x) for x in t) / 16
    assert abs(2 * s[400, a] - want) < 0.04, (2 * s[400, a], want)   # rays step by whole cells
    assert want - math.cos(math.atan(12.0 / 9.5)) < 2 * 2 / 16           # the continuous value, less two azimuths


# ------------------------------------------------------------------------------------------ by hand
def test_height_grid_and_filling_by_hand():
    b = SimpleNamespace(footprint=((0.0, 0.0), (10.0, 0.0), (10.0, 6.0), (0.0, 6.0)), height_m=7.0,
                        holes=(((4.0, 2.0), (6.0, 2.0), (6.0, 4.0), (4.0, 4.0)),))
    tall = SimpleNamespace(footprint=((8.0, 0.0), (12.0, 0.0), (12.0, 2.0), (8.0, 2.0)), height_m=20.0, holes=())
    g, origin = PO.height_grid([b, tall], 1.0, margin_m=3.0)
    assert origin == (-3.0, -3.0) and g.shape == (12, 18)
    assert (g == 7.0).sum() == 60 - 4 - 4 and (g == 20.0).sum() == 8     # the hole, the overlap to the taller
    assert g[3 + 3, 3 + 5] == 0.0                                         # the courtyard cell (5.5, 3.5)
    sky = np.arange(3 * 4, dtype=np.float32).reshape(1, 3, 4)
    inside = np.zeros((3, 4), bool)
    inside[:, 1:] = True
    inside[1, 3] = False
    out = PO.fill_inside(sky, inside)
    # the outside cells: column 0 and (1, 3); (0, 2) and (2, 2) are sqrt(2) from (1, 3) and 2 from column 0
    assert out[0, 0, 1] == sky[0, 0, 0] and out[0, 2, 1] == sky[0, 2, 0]
    assert out[0, 0, 2] == out[0, 2, 2] == out[0, 1, 2] == out[0, 1, 3] == sky[0, 1, 3]


def test_factors_by_hand():
    assert PO.ground_factor(1.0) == 1.0 and PO.wall_factor(1.0) == 1.0
    v = 1 - math.sqrt(1 - 0.8 ** 2)                                     # S = 0.4: the front's open share 0.8
    assert PO.wall_factor(0.4) == pytest.approx(math.sqrt(v + (1 - v) * PO.BOUNCE))
    assert PO.ground_factor(0.0) == pytest.approx(math.sqrt(PO.BOUNCE)) == PO.wall_factor(0.0)
    assert PO.wall_factor(0.5) == PO.wall_factor(0.6) == 1.0     # the own wall hides the back half, the front open
    b = math.radians(40.0)             # in front of a canyon wall: S = 1/2 cos b -> visibility 1 - sin b
    v = 1 - math.sin(b)
    assert PO.wall_factor(0.5 * math.cos(b)) == pytest.approx(math.sqrt(v + (1 - v) * PO.BOUNCE))
    assert PO.foot_fade(0.0) == pytest.approx(1 - PO.FOOT_K) and PO.foot_fade(PO.FOOT_M) == 1.0
    assert PO.foot_fade(PO.FOOT_M / 2) == pytest.approx(1 - PO.FOOT_K / 2)     # smoothstep's middle
    sky4 = np.array([0.2, 0.4, 0.6, 0.9])
    got = PO.level_mix(sky4, np.array([-1.0, 0.0, 2.0, 4.0, 8.0, 21.0, 30.0, 50.0]))
    assert np.allclose(got, [0.2, 0.2, 0.3, 0.4, 0.5, 0.75, 0.9, 0.9])


# ------------------------------------------------------------------------------------------ on the GPU
@needs_gl
def test_gpu_factors_are_the_twins():
    """``po_ground``, ``po_level`` and ``po_wall`` over a field that is linear in ``x`` (so GL's bilinear lookup
    is exact away from the edges) equal the twins at the same points."""
    from urbanarena.render.scene3d.context import current, gl_context

    nx, ny, cell = 64, 32, 1.0
    x = (np.arange(nx) + 0.5) * cell
    ramp = np.clip(x / (nx * cell), 0.0, 1.0)
    sky = np.zeros((ny, nx, 4), np.float32)
    for c, k in enumerate((0.6, 0.8, 0.9, 1.0)):
        sky[..., c] = (0.2 + 0.8 * k * ramp)[None, :]
    size = 32
    ctx = gl_context()
    with current(ctx):
        vs = "#version 330\nin vec2 in_ndc;\nvoid main() { gl_Position = vec4(in_ndc, 0.0, 1.0); }\n"
        fs = ("#version 330\n" + PO.GLSL + "out vec4 f;\nvoid main() {\n"
              "    vec2 q = gl_FragCoord.xy / 32.0;\n    vec2 p = vec2(8.0 + 44.0 * q.x, 16.0);\n"
              "    float z = 34.0 * q.y;\n    vec3 n = normalize(vec3(1.0, 0.6, 0.0));\n"
              "    f = vec4(po_ground(p), po_level(po_at(p), z), po_wall(vec3(p, z), n), 1.0);\n}\n")
        prog = ctx.program(vertex_shader=vs, fragment_shader=fs)
        tex = ctx.texture((nx, ny), 4, sky.tobytes(), dtype="f4")
        import moderngl

        tex.filter = (moderngl.LINEAR, moderngl.LINEAR)
        tex.use(PO.FIELD_UNIT)
        prog["po_field"].value = PO.FIELD_UNIT
        prog["po_box"].value = (0.0, 0.0, 1.0 / (nx * cell), 1.0 / (ny * cell))
        quad = ctx.buffer(np.array([-1, -1, 1, -1, 1, 1, -1, -1, 1, 1, -1, 1], "f4").tobytes())
        va = ctx.vertex_array(prog, [(quad, "2f", "in_ndc")])
        col = ctx.texture((size, size), 4, dtype="f4")
        fb = ctx.framebuffer([col])
        fb.use()
        ctx.viewport = (0, 0, size, size)
        va.render()
        gpu = np.frombuffer(fb.read(components=4, dtype="f4"), "f4").reshape(size, size, 4).copy()
        for o in (va, quad, prog, fb, col, tex):
            o.release()
    jj, ii = np.mgrid[0:size, 0:size]
    q = (ii + 0.5) / 32.0, (jj + 0.5) / 32.0
    px, z = 8.0 + 44.0 * q[0], 34.0 * q[1]
    n = np.array([1.0, 0.6]) / math.hypot(1.0, 0.6)

    def at(xm):
        r = np.clip(xm / (nx * cell), 0.0, 1.0)
        return np.stack([0.2 + 0.8 * k * r for k in (0.6, 0.8, 0.9, 1.0)], -1)

    assert np.abs(gpu[..., 0] - PO.ground_factor(at(px)[..., 0])).max() < 1e-4
    assert np.abs(gpu[..., 1] - PO.level_mix(at(px), z)).max() < 1e-4
    wall = PO.wall_factor(PO.level_mix(at(px + PO.WALL_OFFSET_M * n[0]), z)) * PO.foot_fade(z)
    assert np.abs(gpu[..., 2] - wall).max() < 1e-3 and (z < PO.FOOT_M).any()


@needs_gl
def test_patched_programs_compile_and_off_changes_nothing(monkeypatch):
    """Every photo ground program and the photo facade compile with the field; the ground's light and the
    facade's canyon line are the only texts swapped; switched off, the sources are returned unchanged."""
    from urbanarena.render.scene3d import photo_atmosphere as PA
    from urbanarena.render.scene3d import photo_facades as PF
    from urbanarena.render.scene3d import photo_materials as PM
    from urbanarena.render.scene3d import realistic_shaders as RS
    from urbanarena.render.scene3d.context import current, gl_context

    ctx = gl_context()
    sources = [PA.patch_source(PM.patch_source(RS.program_sources("ground", 8, m)[1], "ground"), "ground")
               for m in range(10)]
    facade = PF.patch_source(RS.program_sources("facade", 8)[1], "facade", sky_map=True)
    with current(ctx):
        for fs in sources:
            out = PO.patch_source(fs, "ground")
            assert out.count("po_ground(v_world.xy)") == 1 and PO.GROUND_OLD not in out
            ctx.program(vertex_shader=RS.program_sources("ground", 8)[0], fragment_shader=out).release()
        out = PO.patch_source(facade, "facade")
        assert "po_wall(v_world, n)" in out and "smoothstep(0.0, 14.0, z)" not in out
        ctx.program(vertex_shader=RS.program_sources("facade", 8)[0], fragment_shader=out).release()
    realistic_facade = RS.program_sources("facade", 8)[1]
    for name, fs in (("ground", sources[0]), ("facade", facade), ("foliage", RS.program_sources("foliage", 8)[1]),
                     ("facade", realistic_facade)):
        if fs is realistic_facade or name == "foliage":
            assert PO.patch_source(fs, name) == fs
        monkeypatch.setattr(PO, "ENABLED", False)
        assert PO.patch_source(fs, name) == fs
        monkeypatch.setattr(PO, "ENABLED", True)
    with pytest.raises(RuntimeError):
        PO.patch_source(facade.replace("smoothstep(0.0, 14.0, z)", "smoothstep(0.0, 12.0, z)"), "facade")


def test_photo_render_identity_names_the_field(monkeypatch):
    """The photo identity carries the field's version and GLSL hash; switched off, no key (main's identity)."""
    from urbanarena.render.scene3d.render_identity import _photo_identity

    got = _photo_identity()["occlusion"]
    assert got == PO.source_identity() and got["version"] == PO.OCCLUSION_VERSION and len(got["glsl"]) == 12
    monkeypatch.setattr(PO, "ENABLED", False)
    assert "occlusion" not in _photo_identity()
