"""The photo style's procedural cumulus (render/scene3d/photo_clouds.py): the lattice hash against a second
implementation in Python integers, the value noise and the billow detail at lattice points and cell centres by hand, the layer's
geometry by hand, and the clouds drawn on the GPU against the numpy twin in a few directions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from test_photo_sky import _prepared, _renderer, needs_gl
from urbanarena.render.scene3d import photo_clouds as PC
from urbanarena.render.scene3d import photo_sky as PS


def _hash_by_hand(x: int, y: int) -> int:
    m = 2 ** 32
    h = ((x % m) * 0x8DA6B343 % m) ^ ((y % m) * 0xD8163841 % m)
    h ^= h >> 13
    h = h * 0x5BD1E995 % m
    return h ^ (h >> 15)


def test_lattice_hash_matches_python_integers():
    pts = [(0, 0), (1, 0), (0, 1), (-1, 2), (123456, -98765), (2 ** 31 - 1, -(2 ** 31))]
    got = PC.lattice_hash(np.array([p[0] for p in pts]), np.array([p[1] for p in pts]))
    assert got.tolist() == [_hash_by_hand(*p) for p in pts]


def test_value_noise_by_hand():
    r = lambda x, y: (_hash_by_hand(x, y) >> 8) / 2 ** 24
    assert PC.value_noise(np.array([3.0, -2.0])) == pytest.approx(r(3, -2))          # a lattice point
    # the cell centre: smoothstep(0.5) = 0.5, the mean of the four corners
    want = (r(3, -2) + r(4, -2) + r(3, -1) + r(4, -1)) / 4
    assert PC.value_noise(np.array([3.5, -1.5])) == pytest.approx(want)
    # a quarter along x on the lower edge: u = 0.25^2 (3 - 0.5) = 0.15625
    assert PC.value_noise(np.array([3.25, -2.0])) == pytest.approx(r(3, -2) + 0.15625 * (r(4, -2) - r(3, -2)))
    n = PC.density(np.random.default_rng(1).uniform(-50, 50, (2000, 2)))
    assert n.min() >= 0.0 and n.max() <= 1.0 and 0.35 < n.mean() < 0.65


def test_billow_detail_by_hand(monkeypatch):
    """One billow octave at a lattice point is ``|2 r - 1|`` of the corner's value; the density adds the detail,
    centred on 0, at DETAIL_SCALE times the shape's frequency."""
    r = lambda x, y: (_hash_by_hand(x, y) >> 8) / 2 ** 24
    monkeypatch.setattr(PC, "DETAIL_OCTAVES", 1)
    assert PC.billow(np.array([7.0, -3.0])) == pytest.approx(abs(2 * r(7, -3) - 1))
    q = np.array([0.75, 2.5])                     # the detail's point: 4 q + (5.3, 11.9) = (8.3, 21.9)
    assert PC.DETAIL_SCALE == 4.0 and PC.DETAIL_SHIFT == (5.3, 11.9)
    want = PC.density(q) + PC.DETAIL * (PC.billow(np.array([8.3, 21.9])) - 0.5)
    assert PC.cloud_density(q) == pytest.approx(want)
    b = PC.billow(np.random.default_rng(2).uniform(-50, 50, (2000, 2)))
    assert b.min() >= 0.0 and b.max() <= 1.0


def test_layer_point_by_hand():
    # straight up from the origin: the seed offset; 45 degrees east from (700, 0): 1500 / (0.7071 + 0.08)
    assert PC.layer_point(np.array([0.0, 0.0, 1.0]), (0.0, 0.0)) == pytest.approx(PC.SEED_OFFSET)
    s = math.sqrt(0.5)
    want = ((700.0 + s * 1500.0 / (s + 0.08)) / 700.0 + PC.SEED_OFFSET[0], PC.SEED_OFFSET[1])
    assert PC.layer_point(np.array([s, 0.0, s]), (700.0, 0.0)) == pytest.approx(want)


def test_no_cover_no_clouds_and_below_the_fade_nothing():
    x = np.full((2, 3), 0.3)
    d = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    assert np.array_equal(PC.cloud_mix(x, d, 0.0, (1, 1, 1), (0.5, 0.5, 0.5), (0, 0.6, 0.8), (0, 0)), x)
    got = PC.cloud_mix(x, d, 1.0, (1, 1, 1), (0.5, 0.5, 0.5), (0, 0.6, 0.8), (0, 0))
    assert np.array_equal(got[1], x[1])                                # the horizon itself: no cloud


@needs_gl
def test_clouds_on_the_gpu_match_the_twin(monkeypatch):
    from urbanarena.render.views import Camera

    r = _renderer(monkeypatch, _prepared())
    sky = r._photo_sky
    assert sky.cloud_cover == PC.COVER["day"]
    shares = []
    for x_m, y_m, yaw, pitch in ((0.0, -4.0, 90.0, 45.0), (0.0, -4.0, 30.0, 75.0), (0.0, 0.0, 250.0, 75.0)):
        w, h, fov = 96, 64, 40.0
        img = r.render_view(x_m, y_m, yaw, pitch, fov, w, h).astype(np.float64)
        basis = Camera(yaw, pitch, fov, w, h).basis()
        tx = math.tan(math.radians(fov) / 2)
        X, Y = np.meshgrid(((np.arange(w) + 0.5) / w * 2 - 1) * tx, (1 - (np.arange(h) + 0.5) / h * 2) * tx * h / w)
        d = np.stack([X, Y, np.ones_like(X)], -1) @ basis
        d /= np.linalg.norm(d, axis=-1, keepdims=True)
        want = 255.0 * PS.sky_pixels(sky, d, (x_m, y_m))
        assert np.abs(img - want).max() <= 2.0
        from dataclasses import replace

        clear = 255.0 * PS.sky_pixels(replace(sky, cloud_cover=0.0), d, (x_m, y_m))
        cloudy = np.abs(want - clear).max(axis=-1) > 10
        shares.append(cloudy.mean())
    assert min(shares) > 0.02 and max(shares) < 0.98 and max(shares) > 0.1    # clouds and blue sky in each view
