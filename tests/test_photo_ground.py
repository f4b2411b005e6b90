"""The ``photo`` style's street ground (:mod:`urbanarena.render.scene3d.photo_ground`): its GLSL on the GPU against
the numpy twins, hand-worked repair patches (a cell's hash decides by hand), the value noise at its lattice points,
and the patched ground program (every material still compiles, the realistic checkerboard tone is gone)."""

from __future__ import annotations

import numpy as np
import pytest

from urbanarena.render.scene3d import photo_ground as PG
from urbanarena.render.scene3d import photo_materials as PM
from urbanarena.render.scene3d import photo_paving as PV
from urbanarena.render.scene3d.building_look import rhash
from urbanarena.render.scene3d.context import gl_unavailable_reason

needs_gl = pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")


def _gpu(expr: str, origin, step_m: float, size: int, aa: float = 0.0, glsl: str = "") -> np.ndarray:
    """``expr`` (GLSL, of ``p`` in metres and the uniform ``aa``) at the pixel centres ``origin + (i + 0.5, j +
    0.5) step_m`` of a ``size`` x ``size`` float framebuffer, ``(size, size, 4)``; ``glsl``: more functions,
    placed before the photo ground's (``test_photo_ground_wear`` passes the wear's)."""
    from urbanarena.render.scene3d import realistic_shaders as RS
    from urbanarena.render.scene3d.context import current, gl_context

    ctx = gl_context()
    with current(ctx):
        vs = "#version 330\nin vec2 in_ndc;\nvoid main() { gl_Position = vec4(in_ndc, 0.0, 1.0); }\n"
        fs = ("#version 330\n" + RS.NOISE.replace("float gridline", glsl + PG.GLSL + PV.GLSL + "float gridline")
              + "uniform vec2 origin;\nuniform float step_m;\nuniform float aa;\nout vec4 f;\n"
              + "void main() {\n    vec2 p = origin + gl_FragCoord.xy * step_m;\n"
              + f"    f = vec4({expr});\n}}\n")
        prog = ctx.program(vertex_shader=vs, fragment_shader=fs)
        for name, value in (("origin", tuple(float(v) for v in origin)), ("step_m", float(step_m)),
                            ("aa", float(aa))):
            if name in prog:
                prog[name].value = value
        quad = ctx.buffer(np.array([-1, -1, 1, -1, 1, 1, -1, -1, 1, 1, -1, 1], "f4").tobytes())
        va = ctx.vertex_array(prog, [(quad, "2f", "in_ndc")])
        col = ctx.texture((size, size), 4, dtype="f4")
        fb = ctx.framebuffer([col])
        fb.use()
        ctx.viewport = (0, 0, size, size)
        va.render()
        out = np.frombuffer(fb.read(components=4, dtype="f4"), "f4").reshape(size, size, 4).copy()
        for o in (va, quad, prog, fb, col):
            o.release()
    return out


def _grid(origin, step_m, size):
    jj, ii = np.mgrid[0:size, 0:size]
    return np.stack([origin[0] + (ii + 0.5) * step_m, origin[1] + (jj + 0.5) * step_m], -1)


# ------------------------------------------------------------------------------------------ by hand
def test_value_noise_at_lattice_points_is_the_hash():
    """At an integer point the value noise is the corner's hash (``h21``: the low 16 bits of ``rhash`` over
    65535), also at negative cells (two's complement, as the shader's ``uint(int)``)."""
    for (x, y), s in (((3, 7), 92), ((-4, 2), 95), ((-1, -1), 97)):
        want = (rhash(x & 0xFFFFFFFF, y & 0xFFFFFFFF, s) & 65535) / 65535.0
        assert PG.vnoise_np(np.array([float(x), float(y)]), s) == pytest.approx(want, abs=1e-12)
        assert PG.h21_np(np.array([x + 0.3, y + 0.9]), s) == pytest.approx(want, abs=1e-12)


def _cells(present: bool, n: int = 1):
    out = []
    for cx in range(-20, 20):
        for cy in range(-20, 20):
            if ((rhash(cx & 0xFFFFFFFF, cy & 0xFFFFFFFF, 91) & 255) / 256.0 < PG.PATCH_P) == present:
                out.append((cx, cy))
                if len(out) == n:
                    return out
    raise AssertionError("no such cell")


def test_repair_patch_by_hand():
    """A cell whose hash says "patch": at its rectangle's centre the factor is the patch tone times the
    large-scale tone; 0.5 m outside its edge (beyond the seam) the large-scale tone alone; on its edge the tar
    seam darkens it by SEAM_A (and half the tone); a cell without a patch has the large-scale tone everywhere."""
    (cx, cy), = _cells(True)
    h = rhash(cx & 0xFFFFFFFF, cy & 0xFFFFFFFF, 91)
    ctr = (np.array([cx, cy]) + 0.25 + 0.5 * np.array([(h >> 8) & 255, (h >> 16) & 255]) / 255.0) * PG.PATCH_CELL_M
    su = ((h >> 24) & 15) / 15.0
    half = np.array([0.8 + 1.2 * su, 0.5 + 1.0 * (h >> 28) / 15.0])
    tone = PG.PATCH_TONE[1] if su > 0.5 else PG.PATCH_TONE[0]
    present, c2, h2, t2 = PG.patch_of(cx, cy)
    assert present and np.allclose(c2, ctr) and np.allclose(h2, half) and t2 == tone
    # the rectangle stays inside its cell
    assert (ctr - half >= np.array([cx, cy]) * PG.PATCH_CELL_M).all()
    assert (ctr + half <= (np.array([cx, cy]) + 1) * PG.PATCH_CELL_M).all()

    def wash(p):
        return 1 - PG.TONE_A / 2 + PG.TONE_A * PG.vnoise_np(np.asarray(p) / PG.TONE_M, 92)

    aa = 0.01
    assert PG.asphalt_factor(ctr, aa) == pytest.approx(tone * wash(ctr), abs=1e-9)
    out = ctr + [half[0] + 0.5, 0.0]
    assert PG.asphalt_factor(out, aa) == pytest.approx(wash(out), abs=1e-9)
    edge = ctr + [half[0], 0.0]
    assert PG.asphalt_factor(edge, aa) == pytest.approx((1 + (tone - 1) * 0.5) * (1 - PG.SEAM_A) * wash(edge))
    (nx, ny), = _cells(False)
    q = (np.array([nx, ny]) + 0.5) * PG.PATCH_CELL_M
    assert PG.asphalt_factor(q, aa) == pytest.approx(wash(q), abs=1e-9)


def test_patches_cover_about_their_share_and_grass_stays_green():
    """Over 300 m squared of ground about PATCH_P of the cells hold a patch; the lawn's albedo stays
    green-dominant (green its largest channel) everywhere, with a spread in hue (not one carpet)."""
    p = _grid((-150.0, -150.0), PG.PATCH_CELL_M, 34)
    share = np.mean([PG.patch_of(int(cx), int(cy))[0] for cx, cy in np.floor(p.reshape(-1, 2) / PG.PATCH_CELL_M)])
    assert abs(share - PG.PATCH_P) < 0.08
    g = PG.grass_albedo(_grid((-40.0, -40.0), 0.31, 256), 1.0)
    litter = (g[..., 0] > g[..., 1])
    assert litter.mean() < 0.15                                 # leaves: a share of the lawn at most
    green = g[~litter]
    assert (green[:, 1] >= green[:, 2]).all()
    assert np.std(green[:, 0] / green[:, 1]) > 0.04            # dry and lush stretches (a carpet: 0)


# ------------------------------------------------------------------------------------------ on the GPU
@needs_gl
def test_gpu_asphalt_is_the_twin():
    """``pg_asphalt`` over 60 m x 60 m (several patches) equals :func:`asphalt_factor`; pixels within a
    footprint of a patch edge may differ by the float rounding of the edge distance."""
    origin, step, size = (-23.0, 11.0), 60.0 / 256, 256
    gpu = _gpu("pg_asphalt(p, aa), 0.0, 0.0, 1.0", origin, step, size, aa=step)[..., 0]
    p = _grid(origin, step, size)
    twin = PG.asphalt_factor(p, step)
    cells = {(int(a), int(b)) for a, b in np.floor(p[::16, ::16].reshape(-1, 2) / PG.PATCH_CELL_M)}
    assert sum(PG.patch_of(*c)[0] for c in cells) >= 2         # patches in view
    err = np.abs(gpu - twin)
    assert np.quantile(err, 0.995) < 2e-3 and err.max() < 0.05


@needs_gl
def test_gpu_paving_paint_and_grass_are_the_twins():
    """``pg_stains``, ``pg_paint``'s chip mask (paint white over black: the chip share is 1 - red) and
    ``pg_grass`` at full detail equal their twins."""
    origin, step, size = (5.5, -17.25), 0.05, 192
    p = _grid(origin, step, size)
    gpu = _gpu("pg_stains(p), pg_paint(vec3(1.0), p, 1.0).r, 0.0, 1.0", origin, step, size)
    assert np.abs(gpu[..., 0] - PG.stain_factor(p)).max() < 2e-3
    chip = PG.paint_chip(p, 1.0)
    assert chip.max() > 0.9 and chip.min() == 0.0
    white = 1.0 - 0.75 * chip * (1.0 - 0.27)
    assert np.abs(gpu[..., 1] - white).max() < 2e-3
    origin, step = (-31.0, 40.0), 0.2                           # grass: over 38 m (dry and lush stretches)
    p = _grid(origin, step, size)
    gpu = _gpu("pg_grass(p, 1.0), 1.0", origin, step, size)[..., :3]
    err = np.abs(gpu - PG.grass_albedo(p, 1.0)).max(-1)
    assert np.quantile(err, 0.995) < 2e-3                      # leaf speckles: h21 cell edges may round apart


@needs_gl
def test_patched_ground_programs_compile_and_drop_the_checkerboard():
    """Every one-material ground program and the all-materials one compile with the photo ground; the
    paving's per-slab tone is a fifth of the realistic one and the asphalt's round dark patches are gone."""
    from urbanarena.render.scene3d import realistic_shaders as RS
    from urbanarena.render.scene3d.context import current, gl_context

    ctx = gl_context()
    with current(ctx):
        for mat in range(0, 10):
            vs, fs = RS.program_sources("ground", 8, mat)
            fs = PM.patch_source(fs, "ground")
            assert "0.8 + 0.32 * tone" not in fs and "step(0.7, vnoise(p * 0.09" not in fs
            ctx.program(vertex_shader=vs, fragment_shader=fs).release()
    fs = PM.patch_source(RS.program_sources("ground", 8, 0)[1], "ground")
    # each call in its one-material branch and in the all-materials one: asphalt; paving, setts, track bed
    assert fs.count("pg_asphalt(p,") == 2 and fs.count("pg_stains(p)") == 6
