"""Tagged facade colours muted to paint in the photo style (:mod:`urbanarena.render.scene3d.photo_paint`)."""

import colorsys
from dataclasses import dataclass

import numpy as np

from urbanarena.render.scene3d.building_look import FACADE_PACK
from urbanarena.render.scene3d.mesh_primitives import MeshData
from urbanarena.render.scene3d.photo_paint import DARKEN, KNEE, SLOPE, mute_paint, with_paint


def test_pure_colours_by_hand():
    # red: s = 1, over = 0.6, s' = 0.4 + 0.35 * 0.6 = 0.61, v' = 1 - 0.3 = 0.7, the others 0.7 * 0.39 = 0.273
    out = mute_paint(np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]]))
    assert np.allclose(out[0], [0.7, 0.273, 0.273], atol=1e-6)
    assert np.allclose(out[1], [0.7, 0.7, 0.273], atol=1e-6)


def test_greys_and_muted_colours_unchanged():
    c = np.array([[0.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.8, 0.7, 0.6], [0.3, 0.25, 0.2]], np.float32)
    assert np.array_equal(mute_paint(c), c)


def test_hue_kept_against_colorsys():
    rng = np.random.default_rng(3)
    c = rng.uniform(0.0, 1.0, (200, 3))
    out = mute_paint(c)
    for rgb, got in zip(c, out):
        h, s, v = colorsys.rgb_to_hsv(*rgb)
        if s > KNEE:
            s, v = KNEE + SLOPE * (s - KNEE), v * (1.0 - DARKEN * (s - KNEE) / (1.0 - KNEE))
        assert np.allclose(got, colorsys.hsv_to_rgb(h, s, v), atol=1e-5)


@dataclass
class _Meshes:
    facades: MeshData


def test_only_tagged_facades_change_and_the_input_is_kept():
    n = 6
    red = np.tile([[1.0, 0.0, 0.0]], (n, 1)).astype(np.float32)
    tagged = np.array([1, 1, 1, 0, 0, 0])
    shop = ((tagged << FACADE_PACK["tagged_shift"]) + (5 << 1)).astype(np.float32)
    f = MeshData(np.zeros((n, 3), np.float32), np.zeros((n, 3), np.float32), red.copy(), shop=shop)
    m = _Meshes(f)
    out = with_paint(m)
    assert np.allclose(out.facades.colours[:3], [0.7, 0.273, 0.273], atol=1e-6)
    assert np.array_equal(out.facades.colours[3:], red[3:])
    assert np.array_equal(f.colours, red) and m.facades is f   # not changed in place
    assert with_paint(_Meshes(MeshData(f.positions, f.normals, red, shop=np.zeros(n, np.float32)))).facades.colours is red
