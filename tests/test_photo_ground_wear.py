"""The ``photo`` style's worn ground (:mod:`urbanarena.render.scene3d.photo_ground_wear`): decal placement by hand
(a cell's hash decides, worked out here from ``rhash``), the decals' coverage rules by hand, the GLSL on the GPU
against the numpy twins, the patched ground programs (every one-material program and the all-materials one
compile with the wear in), the switch, and the render identity."""

from __future__ import annotations

import numpy as np
import pytest

from urbanarena.render.scene3d import photo_ground as PG
from urbanarena.render.scene3d import photo_ground_wear as PW
from urbanarena.render.scene3d import photo_paving as PV
from urbanarena.render.scene3d.building_look import rhash
from urbanarena.render.scene3d.context import gl_unavailable_reason
from test_photo_ground import _gpu as ground_gpu, _grid  # noqa: F401 (the grid of pixel centres)

needs_gl = pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")


def _gpu(expr: str, origin, step_m: float, size: int, aa: float = 0.0) -> np.ndarray:
    """``expr`` on the GPU with the wear's GLSL (``test_photo_ground._gpu``), ``(size, size, 4)``."""
    return ground_gpu(expr, origin, step_m, size, aa, glsl=PW.GLSL)


def _cell(cell_m, seed, prob, want=lambda h: True):
    """The first cell (scanning x then y from -30) that holds a decal of ``seed`` and passes ``want(h)``:
    ``(cx, cy, h)``, the hash from the facades' Python ``rhash``."""
    for cx in range(-30, 30):
        for cy in range(-30, 30):
            h = rhash(cx & 0xFFFFFFFF, cy & 0xFFFFFFFF, seed)
            if (h & 255) / 256.0 < prob and want(h):
                return cx, cy, h
    raise AssertionError("no such cell")


# ------------------------------------------------------------------------------------------ by hand
def test_decal_centre_stays_inside_its_cell_by_hand():
    """A cell's decal centre is ``cell + (0.2 + 0.6 (u, v)) cell_m`` with ``u, v`` bytes 1 and 2 of its hash;
    the twin's offset at that centre is zero and its presence value is the low byte over 256."""
    cx, cy, h = _cell(PW.LID_CELL_M, 165, PW.LID_P)
    ctr = np.array([cx + 0.2 + 0.6 * ((h >> 8) & 255) / 255.0, cy + 0.2 + 0.6 * ((h >> 16) & 255) / 255.0]) * PW.LID_CELL_M
    off, z, h2 = PW.cell_decal(ctr, PW.LID_CELL_M, 165)
    assert np.allclose(off, 0.0, atol=1e-9) and z == (h & 255) / 256.0 and int(h2) == h
    assert (ctr - 0.2 * PW.LID_CELL_M >= np.array([cx, cy]) * PW.LID_CELL_M - 1e-9).all()
    assert (ctr + 0.2 * PW.LID_CELL_M <= (np.array([cx, cy]) + 1) * PW.LID_CELL_M + 1e-9).all()


def test_dot_cover_by_hand():
    """A disc's coverage: 1 at its centre, 0.5 on its rim, 0 beyond rim + footprint; a disc of radius 1 cm seen
    with a 4 cm footprint keeps (1/4)^2 of its centre's coverage (its area share, no sparkle)."""
    assert PW.dot_cover(0.0, 0.3, 0.01) == pytest.approx(1.0)
    assert PW.dot_cover(0.3, 0.3, 0.01) == pytest.approx(0.5)
    assert PW.dot_cover(0.32, 0.3, 0.01) == 0.0
    centre = 1.0 - float(PG._smooth(0.01 - 0.04, 0.05, 0.0))
    assert PW.dot_cover(0.0, 0.01, 0.04) == pytest.approx(centre / 16.0)


def test_manhole_by_hand():
    """At a manhole's centre (a lid cell whose bits 24-25 are not 0) the asphalt becomes the iron colour; the
    centre is a boss gap or boss by the grid (offset 0: ``fract(0) - 0.5`` = -0.5, outside a boss), no rim: the
    iron's plain colour. 0.5 m from the centre, outside the 0.31 m cover, the lid leaves the asphalt alone."""
    cx, cy, h = _cell(PW.LID_CELL_M, 165, PW.LID_P, lambda h: (h >> 24) & 3 != 0)
    ctr = np.array([cx + 0.2 + 0.6 * ((h >> 8) & 255) / 255.0, cy + 0.2 + 0.6 * ((h >> 16) & 255) / 255.0]) * PW.LID_CELL_M
    a = np.array([0.3, 0.3, 0.3])
    got = PW.asphalt_wear(a, ctr, 0.001)
    assert np.allclose(got, PW.IRON_RGB, atol=1e-9)
    side = ctr + [0.0, 0.5]
    plain = PW.asphalt_wear(a, side, 0.001)
    # without the lid: the oil and tar factors alone, the same as the twin at a lid-free footprint of that point
    off, z, hh = PW.cell_decal(side, PW.LID_CELL_M, 165)
    assert np.linalg.norm(off) == pytest.approx(0.5)
    assert (plain <= a + 1e-12).all() and np.allclose(plain / a, plain[0] / a[0])   # grey factors only


def test_gum_share_and_lawn_paths():
    """Over 20 m x 20 m of paving the gum dots darken or lighten about GUM_P of the cells at their centres (the
    twin's per-cell presence), pale ones a quarter; the lawn's path share is 0 far from the 0.5 contour and
    reaches 1 on it inside a path zone."""
    p = _grid((-10.0, -10.0), PW.GUM_CELL_M, 96)
    _, z, h = PW.cell_decal(p, PW.GUM_CELL_M, 171)
    assert abs((z < PW.GUM_P).mean() - PW.GUM_P) < 0.02
    pale = ((h >> 28) & 3 == 0)[z < PW.GUM_P].mean()
    assert abs(pale - 0.25) < 0.08
    q = _grid((-200.0, -200.0), 0.5, 800).reshape(-1, 2)
    share = PW.path_share(q, 0.01)
    assert share.max() > 0.99 and np.median(share) == 0.0
    n = PG.vnoise_np(q / PG.DRY_M, 97)
    assert (share[np.abs(n - 0.5) > 0.05] == 0.0).all()


def test_paint_and_kerb_stay_in_range():
    """The kerb's soil factor lies in [0.62, 0.87]; worn paint never brightens the paint and never drops under
    the asphalt grey it shows through (mixed at most 55 %)."""
    p = _grid((3.0, -7.0), 0.07, 128)
    k = PW.kerb_factor(p)
    assert k.min() >= 0.62 and k.max() <= 0.87 and k.std() > 0.02
    w = PW.paint_wear(np.full(p.shape[:-1] + (3,), 0.86), p)
    assert (w <= 0.86 + 1e-12).all() and w.min() >= 0.8 * 0.86 * 0.5 + 0.3 * 0.5 - 1e-9


# ------------------------------------------------------------------------------------------ on the GPU
@needs_gl
def test_gpu_asphalt_and_paving_are_the_twins():
    """``pw_asphalt`` over 40 m (oil spots, tar lines, covers in view) and ``pw_paving`` over 12 m at 5 cm
    pixels and over 3 m at 1 cm (gum dots, lids) equal their twins; pixels on a decal's edge may differ by the
    float rounding of the distance."""
    origin, step, size = (-20.0, 33.0), 40.0 / 256, 256
    p = _grid(origin, step, size)
    a = np.full(p.shape[:-1] + (3,), 0.3)
    gpu = _gpu("pw_asphalt(vec3(0.3), p, aa), 1.0", origin, step, size, aa=step)[..., :3]
    twin = PW.asphalt_wear(a, p, step)
    assert (np.abs(twin - 0.3).max(-1) > 0.01).mean() > 0.01          # decals in view
    err = np.abs(gpu - twin).max(-1)
    assert np.quantile(err, 0.995) < 2e-3 and err.max() < 0.05
    for origin, step in (((4.0, -9.0), 0.05), ((-31.5, 12.25), 0.012)):
        p = _grid(origin, step, size)
        gpu = _gpu("pw_paving(vec3(0.5), p, aa), 1.0", origin, step, size, aa=step)[..., :3]
        twin = PW.paving_wear(np.full(p.shape[:-1] + (3,), 0.5), p, step)
        assert (np.abs(twin - 0.5).max(-1) > 0.01).any()
        err = np.abs(gpu - twin).max(-1)
        assert np.quantile(err, 0.995) < 2e-3 and err.max() < 0.1


@needs_gl
def test_gpu_joint_kerb_paint_and_lawn_are_the_twins():
    """``pw_joint``, ``pw_kerb`` (on white), ``pw_paint`` and ``pw_lawn`` equal their twins over 50 m."""
    origin, step, size = (-7.0, 21.0), 50.0 / 192, 192
    p = _grid(origin, step, size)
    gpu = _gpu("pw_joint(p), 1.0", origin, step, size)
    assert np.abs(gpu[..., :3] - PW.joint_rgb(p)).max() < 2e-3
    for origin, step in (((-7.0, 21.0), 50.0 / 192), ((10.2, -0.6), 0.006)):    # far, and near with slots
        p = _grid(origin, step, size)
        gpu = _gpu("pw_kerb(vec3(0.7), p), 1.0", origin, step, size)[..., :3]
        twin = PW.kerb_albedo(np.full(p.shape[:-1] + (3,), 0.7), p, 2 * step)   # fwidth(p.x) + fwidth(p.y)
        err = np.abs(gpu - twin).max(-1)
        assert np.quantile(err, 0.995) < 2e-3 and err.max() < 0.1
    gpu = _gpu("pw_paint(vec3(0.86), p), 1.0", origin, step, size)[..., :3]
    assert np.abs(gpu - PW.paint_wear(np.full(p.shape[:-1] + (3,), 0.86), p)).max() < 2e-3
    gpu = _gpu("pw_lawn(vec3(0.2, 0.3, 0.1), p, aa), 1.0", origin, step, size, aa=0.03)[..., :3]
    twin = PW.lawn_wear(np.broadcast_to([0.2, 0.3, 0.1], p.shape[:-1] + (3,)), p, 0.03)
    assert np.abs(gpu - twin).max() < 2e-3


# ------------------------------------------------------------------------------------------ the program
def test_patch_ground_reaches_every_material_and_switches_off(monkeypatch):
    """Patched photo ground programs: the all-materials one calls every wear function; each one-material program
    (asphalt 1, paving 2, paint 4, kerb 5, grass 8) calls its own; with the switch off the source is the photo
    ground of before; the identity names the switch."""
    from urbanarena.render.scene3d import photo_materials as PM
    from urbanarena.render.scene3d import realistic_shaders as RS

    src = PM.patch_source(RS.program_sources("ground", 8, 0)[1], "ground")
    for fn in ("pw_asphalt(", "pw_paving(", "pw_joint(", "pw_kerb(", "pw_paint(", "pw_lawn("):
        assert src.count(fn) >= 2, fn                     # defined and called
    assert "fwidth(cn)" not in src                        # the realistic cracks gave way to the tar lines
    for k, fn in ((1, "pw_asphalt(asphalt"), (2, "pw_paving(pp_paving"), (4, "pw_paint(pg_paint"),
                  (5, "pw_kerb(vec3"), (8, "pw_lawn(pg_grass")):
        assert fn in PM.patch_source(RS.program_sources("ground", 8, k)[1], "ground"), k
    ident = PM.source_identity()
    monkeypatch.setattr(PW, "ENABLED", False)
    off = PM.patch_source(RS.program_sources("ground", 8, 0)[1], "ground")
    assert "pw_" not in off and PM.source_identity() != ident


@needs_gl
def test_patched_ground_programs_compile():
    """Every one-material photo ground program and the all-materials one compile and link with the wear."""
    from urbanarena.render.scene3d import photo_materials as PM
    from urbanarena.render.scene3d import realistic_shaders as RS
    from urbanarena.render.scene3d.context import current, gl_context

    ctx = gl_context()
    with current(ctx):
        for k in range(10):
            vs, fs = RS.program_sources("ground", 8, k)
            prog = ctx.program(vertex_shader=vs, fragment_shader=PM.patch_source(fs, "ground"))
            prog.release()


def test_noise_gradient_by_finite_differences():
    """``vnoise_d``'s gradient is the value noise's slope: central differences of 1e-6 agree to 1e-5, and its
    value is :func:`.photo_ground.vnoise_np`'s."""
    p = _grid((-3.3, 5.1), 0.137, 24).reshape(-1, 2)
    v, g = PW.vnoise_d(p, 163)
    assert np.allclose(v, PG.vnoise_np(p, 163), atol=1e-12)
    e = 1e-6
    for k in range(2):
        d = np.zeros(2)
        d[k] = e
        fd = (PG.vnoise_np(p + d, 163) - PG.vnoise_np(p - d, 163)) / (2 * e)
        assert np.allclose(g[:, k], fd, atol=1e-5)


def test_drain_grating_by_hand():
    """On a line ``x = k GRATE_M`` whose 1.5 m piece is drawn, the kerb band is iron: at a slot's centre (``x``
    a multiple of SLOT_M plus half: ``fract - 0.5`` = 0) dark, ``IRON (1.2 - 0.9)``, between slots
    (``x`` a multiple of SLOT_M) ``1.2 IRON``; 0.5 m off the line (beyond the half length) only the soil factor;
    the share of drawn pieces is about GRATE_P."""
    k, y = next((k, j * 1.5 + 0.75) for k in range(1, 60) for j in range(-20, 20)
                if (rhash(k, j & 0xFFFFFFFF, 195) & 65535) / 65535.0 < PW.GRATE_P
                and abs((j * 1.5 + 0.75) - round((j * 1.5 + 0.75) / PW.GRATE_M) * PW.GRATE_M) > 0.5)   # no y-line
    a = np.array([0.7, 0.7, 0.7])
    x_slot = np.floor(k * PW.GRATE_M / PW.SLOT_M) * PW.SLOT_M + 0.5 * PW.SLOT_M
    got = PW.kerb_albedo(a, np.array([x_slot, y]), 0.001)
    assert np.allclose(got, np.asarray(PW.IRON_RGB) * 0.3, atol=1e-9)
    x_bar = np.floor(k * PW.GRATE_M / PW.SLOT_M) * PW.SLOT_M
    got = PW.kerb_albedo(a, np.array([x_bar, y]), 0.001)
    assert np.allclose(got, np.asarray(PW.IRON_RGB) * 1.2, atol=1e-9)
    off = np.array([k * PW.GRATE_M + 0.5, y])
    assert np.allclose(PW.kerb_albedo(a, off, 0.001), a * PW.kerb_factor(off), atol=1e-12)
    q = _grid((0.0, 0.0), 1.5, 200)
    q[..., 0] = np.round(q[..., 0] / PW.GRATE_M) * PW.GRATE_M
    assert abs(PW.grate_masks(q)[0].mean() - PW.GRATE_P) < 0.05
