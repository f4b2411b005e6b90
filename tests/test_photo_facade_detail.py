"""The ``photo`` style's projecting sills and wall grime (:mod:`urbanarena.render.scene3d.photo_facade_detail`):
the sill's shadow, contact shade and faces by hand and on the GPU against their Python twins, the grime's twin on
the GPU and its per-building strength; the patch reaches only the photo facade program."""

from __future__ import annotations

import numpy as np
import pytest

from test_photo_facades import _gpu, needs_gl
from urbanarena.render.scene3d import photo_facade_detail as PFD
from urbanarena.render.scene3d import photo_facades as PF
from urbanarena.render.scene3d import realistic_glsl as RG

W = 1.2          # window glass width (m); the sill spans x in [-0.1, 1.3], its underside at y = -0.12


# ------------------------------------------------------------------------------------------------ by hand
def test_sill_sun_by_hand():
    # sun straight in front at 45 degrees (s = (0, 1), s_n = 1): the 6 cm sill shades 6 cm of wall under it
    assert PFD.sill_sun((0.6, -0.12 - 0.03), W, (0.0, 1.0), 1.0) == 0.0     # 3 cm under: reaches it at t = 3 cm
    assert PFD.sill_sun((0.6, -0.12 - 0.09), W, (0.0, 1.0), 1.0) == 1.0     # 9 cm under: passes in front of it
    assert PFD.sill_sun((0.6, -0.12 - 0.06), W, (0.0, 1.0), 1.0) == pytest.approx(0.5)   # on the shadow's edge
    # a higher sun (s_z / s_n = 2): the shadow twice as tall, 12 cm
    assert PFD.sill_sun((0.6, -0.12 - 0.10), W, (0.0, 2.0), 1.0) == 0.0
    assert PFD.sill_sun((0.6, -0.12 - 0.14), W, (0.0, 2.0), 1.0) == 1.0
    # from the side (s_t / s_n = 1): a point 4 cm under, left of the sill's end, is shaded through the shift of 4 cm
    assert PFD.sill_sun((-0.12, -0.16), W, (1.0, 1.0), 1.0) == 0.0           # traced to x = -0.08: under the sill
    assert PFD.sill_sun((-0.16, -0.16), W, (1.0, 1.0), 1.0) == 1.0           # traced to x = -0.12: beyond its end
    assert PFD.sill_sun((0.6, -0.15), W, (0.0, 1.0), -0.3) == 1.0            # sun behind the wall: no cast shadow
    assert PFD.sill_sun((0.6, -0.10), W, (0.0, 1.0), 1.0) == 1.0             # on the sill itself


def test_sill_contact_and_face_by_hand():
    assert PFD.sill_contact((0.6, -0.12 - 1e-7), W) == pytest.approx(1.0 - PFD.SILL_AO)   # right under it
    assert PFD.sill_contact((0.6, -0.12 - 0.03), W) == pytest.approx(1.0 - PFD.SILL_AO * 0.5)
    assert PFD.sill_contact((0.6, -0.12 - 0.1), W) == 1.0
    assert PFD.sill_contact((1.5, -0.13), W) == 1.0                                    # beside it
    # looking up at 0.5 m per metre of depth: the underside covers the band's lowest 3 cm
    assert PFD.sill_face(-0.10, 0.5, 0.05) == 1 and PFD.sill_face(-0.08, 0.5, 0.05) == 0
    # looking down at 1 m per metre: the top covers its highest 6 cm (of a band -0.12 .. -0.05)
    assert PFD.sill_face(-0.10, -1.0, 0.05) == 2 and PFD.sill_face(-0.115, -1.0, 0.05) == 0
    assert PFD.sill_face(-0.1, 0.0, 0.05) == 0                                         # straight on: the front


def test_grime_splash_soot_and_per_wall():
    u = np.linspace(0.0, 20.0, 401)
    g = PFD.grime(u[:, None], np.array([0.02, 0.9, 5.0, 11.3])[None, :], 12.0, 0x9E3779B9)
    assert np.all(g > 0.5) and np.all(g <= 1.0)
    assert np.all(g[:, 0] < g[:, 1])                   # the foot darker than 0.9 m up (splash zone at most 0.52 m)
    assert np.allclose(g[:, 2], 1.0)                   # mid-wall clean (soot reaches 2.56 m at most under 11.4 m)
    assert g[:, 3].mean() < 0.97 and g[:, 3].std() > 0.005   # under the roof edge darker, in streaks
    # strength per wall: a = 0.4 + 1.2 hf(wh, 4); two walls of different hashes darken the foot differently
    feet = {wh: float(PFD.grime(u, 0.0, 12.0, wh).mean()) for wh in (0x10, 0xF0)}
    assert feet[0x10] == pytest.approx(1.0 - 0.22 * (0.4 + 1.2 * 1 / 255))
    assert feet[0xF0] == pytest.approx(1.0 - 0.22 * (0.4 + 1.2 * 15 / 255))
    assert np.array_equal(PFD.grime(u, 0.3, 12.0, 77), PFD.grime(u, 0.3, 12.0, 77))    # deterministic


def test_patch_only_the_photo_facade_program():
    from urbanarena.render.scene3d import realistic_shaders as RS

    vs, fs = RS.program_sources("facade", 48)
    out = PF.patch_source(fs, "facade")
    assert "facade_sill_sun(sq" in out and "facade_grime(u, z, H, wh)" in out
    assert PF.patch_source(fs, "ground") == fs          # other programs untouched
    with pytest.raises(RuntimeError):
        PFD.patch_source("void main() {}")               # a source without the texts to replace is refused
    assert PF.source_identity()["version"] == "photo-facades-4"


# ------------------------------------------------------------------------------------------------ the GPU
FUNCS = RG.NOISE[len(RG.HASH):] + PFD.FUNCS_GLSL
SILL_PTS = [(0.6, -0.15, 0.0, 1.0), (0.6, -0.21, 0.0, 1.0), (-0.12, -0.16, 1.0, 1.0), (-0.16, -0.16, 1.0, 1.0),
            (0.3, -0.2, -0.5, 2.0), (1.25, -0.14, 0.7, 0.4), (0.6, -0.15, 0.0, 1.0), (0.6, -0.1, 0.0, 1.0)]
SILL_SN = [1.0, 1.0, 1.0, 1.0, 0.8, 0.6, -0.3, 1.0]


@needs_gl
def test_gpu_sill_functions_are_the_twins():
    rows_a = SILL_PTS
    rows_b = [(sn, 0.0, 0.0, 0.0) for sn in SILL_SN]
    out = _gpu(f"    f = vec4(facade_sill_sun(a[i].xy, {W}, a[i].zw, b[i].x), facade_sill_contact(a[i].xy, {W}),\n"
               "             float(facade_sill_face(a[i].y, a[i].z, 0.05)), 0.0);\n", {"a": rows_a, "b": rows_b},
               len(SILL_PTS), funcs=FUNCS)
    for k, ((x, y, st, sz), sn) in enumerate(zip(SILL_PTS, SILL_SN)):
        assert out[k, 0] == pytest.approx(PFD.sill_sun((x, y), W, (st, sz), sn), abs=1e-5), k
        assert out[k, 1] == pytest.approx(PFD.sill_contact((x, y), W), abs=1e-5), k
        assert out[k, 2] == PFD.sill_face(y, st, 0.05), k
    assert {round(float(v), 3) for v in out[:, 0]} >= {0.0, 1.0}          # shaded and lit cases both met


@needs_gl
def test_gpu_grime_is_the_twin():
    pts = [(u, z) for u in (0.1, 3.7, 12.25) for z in (0.0, 0.2, 0.45, 9.0, 10.9)]      # 15: one uniform array
    for wh in (0x1234567, 0x9E3779B9):
        out = _gpu(f"    f = vec4(facade_grime(a[i].x, a[i].y, 11.5, {wh}u));\n",
                   {"a": [(u, z, 0, 0) for u, z in pts]}, len(pts), funcs=FUNCS)[:, 0]
        want = [float(PFD.grime(u, z, 11.5, wh)) for u, z in pts]
        assert np.allclose(out, want, atol=2e-5), wh
