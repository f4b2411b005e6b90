"""The ``photo`` style's paving slabs (:mod:`urbanarena.render.scene3d.photo_paving`): a field's pattern and a
slab's tone from their hashes by hand, joints and cracks by hand, the shares of patterns and cracked slabs, and the
GLSL on the GPU against the numpy twin."""

from __future__ import annotations

import math

import numpy as np
import pytest

from test_photo_ground import _gpu, _grid, needs_gl
from urbanarena.render.scene3d import photo_paving as PV
from urbanarena.render.scene3d.building_look import rhash

M = 0xFFFFFFFF


def _field_of_kind(want) -> tuple[int, int, int]:
    """A field ``(fx, fy, fh)`` whose pattern number ``k`` satisfies ``want``."""
    for fx in range(-30, 30):
        for fy in range(-30, 30):
            fh = rhash(fx & M, fy & M, 111)
            if want((fh & 255) / 255.0):
                return fx, fy, fh
    raise AssertionError("no such field")


def test_square_slab_tone_and_joint_by_hand():
    """In a field of square slabs, a point in the middle of slab (i, j) has the base colour times the field's and
    the slab's tones from their hashes (times the odd slab's factor); at a slab's edge the joint colour is mixed
    in at JOINT_A."""
    fx, fy, fh = _field_of_kind(lambda k: k < 0.5)
    size = PV.SQUARE_M[0]
    i, j = int(math.floor(fx * PV.FIELD_M / size)) + 7, int(math.floor(fy * PV.FIELD_M / size)) + 5
    for di in range(40):                                     # a slab without a crack: the tone alone
        sh = rhash((i + di) & M, j & M, 112) ^ fh
        if ((sh >> 18) & 255) >= PV.CRACK_LIMIT:
            i += di
            break
    p = np.array([(i + 0.5) * size, (j + 0.5) * size])
    t, o = (sh & 1023) / 1023.0, ((sh >> 10) & 255) / 255.0
    ft = 1 - PV.FIELD_TONE / 2 + PV.FIELD_TONE * ((fh >> 8) & 255) / 255.0
    odd = PV.NEW_TONE if o < PV.NEW_P else (PV.DARK_TONE if o < PV.NEW_P + PV.DARK_P else 1.0)
    want = np.array(PV.BASE_RGB) * ft * (1 - PV.SLAB_TONE / 2 + PV.SLAB_TONE * t) * odd
    assert PV.paving_albedo(p, 0.001) == pytest.approx(want, abs=1e-9)
    edge = np.array([i * size, (j + 0.5) * size])            # on the joint line: the full joint mix
    a = PV.paving_albedo(edge + [1e-6, 0.0], 1e-4)
    assert a == pytest.approx(want + (np.array(PV.JOINT_RGB) - want) * PV.JOINT_A, abs=1e-6)


def test_running_bond_shifts_every_other_row():
    """In a running-bond field along x, two points a slab's length apart straddle one joint; the rows above are
    shifted half a slab: the slab cell of the point 0.1 m right of a joint in row r is the cell left of the joint
    plus one, and in row r + 1 the same x lies mid-slab."""
    fx, fy, _ = _field_of_kind(lambda k: 0.5 <= k < 0.8)
    lx, ly = PV.BOND_M
    row = int(math.floor(fy * PV.FIELD_M / ly)) + 4
    if row % 2:
        row += 1                                             # an even row: no shift
    x0 = (int(math.floor(fx * PV.FIELD_M / lx)) + 3) * lx
    slab, f, s, _ = PV.slab_coords(np.array([[x0 + 0.1, (row + 0.5) * ly], [x0 + 0.1, (row + 1.5) * ly]]))
    assert s[0] == pytest.approx([lx, ly])
    assert f[0, 0] == pytest.approx(0.1) and f[1, 0] == pytest.approx(0.1 + lx / 2)


def test_pattern_and_crack_shares():
    """Over many fields about half are square slabs and 0.3 / 0.2 running bond either way; about CRACK_LIMIT / 256
    of the slabs carry a crack, darker along its line."""
    p = _grid((-2000.0, -2000.0), PV.FIELD_M, 160)
    _, _, k = PV.field_pattern(p)
    assert abs((k < 0.5).mean() - 0.5) < 0.04 and abs(((k >= 0.5) & (k < 0.8)).mean() - 0.3) < 0.04
    q = _grid((3.0, -70.0), 0.25, 400)
    slab, _, _, fh = PV.slab_coords(q)
    si = slab.astype(np.int64)
    from urbanarena.render.scene3d.photo_ground import rhash_np

    sh = rhash_np(si[..., 0], si[..., 1], 112) ^ fh
    assert abs((((sh >> 18) & 255) < PV.CRACK_LIMIT).mean() - PV.CRACK_LIMIT / 256) < 0.02


@needs_gl
def test_gpu_paving_is_the_twin():
    """``pp_paving`` over 30 m (fields of two or more patterns) equals :func:`paving_albedo` at a footprint of one
    pixel; pixels on a slab or field edge may round to the other side."""
    origin, step, size = (PV.FIELD_M * 2 - 15.0, -PV.FIELD_M - 14.0), 30.0 / 256, 256
    gpu = _gpu("pp_paving(p, aa), 1.0", origin, step, size, aa=step)[..., :3]
    p = _grid(origin, step, size)
    twin = PV.paving_albedo(p, step)
    _, _, k = PV.field_pattern(p)
    assert len({(a < 0.5, a < 0.8) for a in k.ravel()}) >= 2
    err = np.abs(gpu - twin).max(-1)
    assert np.quantile(err, 0.99) < 3e-3
