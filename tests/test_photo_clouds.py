"""The photo style's procedural cumulus and cirrus (render/scene3d/photo_clouds.py): the lattice hash against a
second implementation in Python integers, the value noise and the billow detail at lattice points and cell centres by
hand, the layer's geometry, the march through the heaps' slab and a flat base's shading by hand, and the clouds drawn
on the GPU against the numpy twin in a few directions (low towards the horizon too)."""

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
    """One billow octave at a lattice point is ``|2 r - 1|`` of the corner's value; two octaves at the origin by
    hand (the second at ``2.03 q + shift``)."""
    r = lambda x, y: (_hash_by_hand(x, y) >> 8) / 2 ** 24
    monkeypatch.setattr(PC, "DETAIL_OCTAVES", 1)
    assert PC.billow(np.array([7.0, -3.0])) == pytest.approx(abs(2 * r(7, -3) - 1))
    monkeypatch.setattr(PC, "DETAIL_OCTAVES", 2)
    second = PC.value_noise(np.array([17.1, -9.7]))
    want = (0.5 * abs(2 * r(0, 0) - 1) + 0.25 * abs(2 * second - 1)) / 0.75
    assert PC.billow(np.array([0.0, 0.0])) == pytest.approx(want)
    monkeypatch.setattr(PC, "DETAIL_OCTAVES", 3)
    b = PC.billow(np.random.default_rng(2).uniform(-50, 50, (2000, 2)))
    assert b.min() >= 0.0 and b.max() <= 1.0


def test_layer_point_by_hand():
    # straight up from the origin: the seed offset; 45 degrees east from (700, 0) at the base and 900 m higher
    assert PC.layer_point(np.array([0.0, 0.0, 1.0]), (0.0, 0.0)) == pytest.approx(PC.SEED_OFFSET)
    s = math.sqrt(0.5)
    for alt in (1500.0, 2400.0):
        want = ((700.0 + s * alt / (s + 0.08)) / PC.FEATURE_M + PC.SEED_OFFSET[0], PC.SEED_OFFSET[1])
        assert PC.layer_point(np.array([s, 0.0, s]), (700.0, 0.0), alt) == pytest.approx(want)


def test_march_finds_the_heap_side_by_hand(monkeypatch):
    """A shape rising eastwards, ``S = 0.5 + 2 (q.x - x0)`` with ``x0`` 1.5 steps east of the base point, seen 45
    degrees up towards the east (cover 0.5): the step is capped at STEP_MAX = 0.09, so the margins are
    ``e_k = 0.18 (k - 1.5) - 0.16 (k / 4)^2`` = -0.27, -0.1, 0.05, 0.18: the ray enters between samples 1 and 2
    (``t = 0.1 / 0.15``), at height fraction ``(1 + 2/3) / 4``, 0.15 noise units east of the base point, where the
    interpolated shape is 0.41 + 0.18 (2/3)."""
    assert (PC.MARCH, PC.STEP_MAX, PC.RANGE) == (4, 0.09, 0.16)
    s = math.sqrt(0.5)
    d = np.array([s, 0.0, s])
    q0 = PC.layer_point(d, (0.0, 0.0))
    x0 = q0[0] + 1.5 * 0.09
    monkeypatch.setattr(PC, "density", lambda q, octaves=None: 0.5 + 2.0 * (np.asarray(q)[..., 0] - x0))
    m = PC.march(d, (0.0, 0.0), 0.5)
    assert bool(m["hit"]) and float(m["f_hit"]) == pytest.approx(5.0 / 12.0)
    assert m["q_hit"] == pytest.approx([q0[0] + 0.15, q0[1]])
    assert float(m["s_hit"]) == pytest.approx(0.41 + 0.18 * 2.0 / 3.0)
    assert float(m["e_max"]) == pytest.approx(0.18) and m["q_max"] == pytest.approx([q0[0] + 0.27, q0[1]])
    up = PC.march(np.array([0.0, 0.0, 1.0]), (0.0, 0.0), 0.5)      # straight up: every sample at the base point
    assert float(up["f_hit"]) == 0.0 or not bool(up["hit"])


def test_flat_base_overhead_by_hand(monkeypatch):
    """Straight up under a level shape 0.05 above the threshold (cover 0.5, billow 1/2, sun 37 degrees from the
    zenith): a base hit (height fraction 0) at full opacity, shaded ``under = BASE_EDGE + (BASE_CORE - BASE_EDGE)
    0.05 / RANGE``, the forward glow ``0.6 0.8^8 (1 - core)``; the cirrus (shape 0.55 below its threshold 0.6)
    is absent."""
    monkeypatch.setattr(PC, "density", lambda q, octaves=None: np.full(np.asarray(q).shape[:-1], 0.55))
    monkeypatch.setattr(PC, "billow", lambda q: np.full(np.asarray(q).shape[:-1], 0.5))
    lit, base, sun = np.array([2.0, 1.8, 1.6]), np.array([0.4, 0.45, 0.5]), np.array([0.6, 0.0, 0.8])
    x = np.array([[0.2, 0.3, 0.6]])
    got = PC.cloud_mix(x, np.array([[0.0, 0.0, 1.0]]), 0.5, lit, base, sun, (0.0, 0.0))[0]
    core = 0.05 / 0.16
    under = 0.45 + (0.1 - 0.45) * core
    col = base + (lit - base) * under + lit * 0.6 * 0.8 ** 8 * (1 - core)
    assert (PC.BASE_EDGE, PC.BASE_CORE, PC.OPACITY) == (0.45, 0.1, 0.97)
    assert got == pytest.approx(x[0] + (col - x[0]) * 0.97)


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
    for x_m, y_m, yaw, pitch in ((0.0, -4.0, 90.0, 45.0), (0.0, -4.0, 30.0, 75.0), (0.0, 0.0, 250.0, 75.0),
                                   (0.0, 0.0, 270.0, 16.0)):
        w, h, fov = 96, 64, 40.0
        img = r.render_view(x_m, y_m, yaw, pitch, fov, w, h).astype(np.float64)
        basis = Camera(yaw, pitch, fov, w, h).basis()
        tx = math.tan(math.radians(fov) / 2)
        X, Y = np.meshgrid(((np.arange(w) + 0.5) / w * 2 - 1) * tx, (1 - (np.arange(h) + 0.5) / h * 2) * tx * h / w)
        d = np.stack([X, Y, np.ones_like(X)], -1) @ basis
        d /= np.linalg.norm(d, axis=-1, keepdims=True)
        want = 255.0 * PS.sky_pixels(sky, d, (x_m, y_m))
        # the low view has the scene and, below 10 degrees, the photo style's distant skyline (not in the ID pass)
        open_sky = (r.render_ids(x_m, y_m, yaw, pitch, fov, w, h) == 0) & (d[..., 2] > math.sin(math.radians(10.0)))
        assert open_sky.mean() > 0.5
        assert np.abs(img - want)[open_sky].max() <= 2.0
        from dataclasses import replace

        clear = 255.0 * PS.sky_pixels(replace(sky, cloud_cover=0.0), d, (x_m, y_m))
        cloudy = (np.abs(want - clear).max(axis=-1) > 10)[open_sky]
        shares.append(cloudy.mean())
    assert min(shares) > 0.02 and max(shares) < 0.98 and max(shares) > 0.1    # clouds and blue sky in each view
