"""Realism statistics (issue 14) on hand-made images; every expected value is worked out by hand below."""

from __future__ import annotations

import numpy as np
import pytest

from urbanarena.render.realism import local_std, realism_stats, sample_nodes, summarise, RealismStats


def grey(img2d: np.ndarray) -> np.ndarray:
    return np.repeat(np.asarray(img2d, np.uint8)[..., None], 3, axis=2)


def test_constant_image_is_all_flat_no_edges_one_colour():
    s = realism_stats(grey(np.full((40, 60), 120)))
    assert s.flat_share == 1.0 and s.edge_density == 0.0 and s.colour_diversity == 1


def test_vertical_step_edge():
    # 64 x 64, columns 0..31 black, 32..63 white. The 5-tap Gaussian (sigma 1.2) has weights
    # w0 = 1, w1 = exp(-1/2.88) = 0.7066, w2 = exp(-4/2.88) = 0.2494, normalised by 2.9121:
    # 0.3434, 0.2427, 0.0857. Blurred columns: 29 -> 0, 30 -> 255 * 0.0857 = 21.8, 31 -> 255 * 0.3283 = 83.7,
    # 32 -> 171.3, 33 -> 233.2, 34 -> 255. A pixel's 5x5 window is non-constant when it reaches column 30..33,
    # i.e. for columns 28..35; column 28's window (26..30) holds one column at 22: std = sqrt(22^2/5 - 4.4^2)
    # = 8.8 >= 1, so all 8 columns are non-flat: flat share = 56 / 64.
    img = np.zeros((64, 64), np.uint8)
    img[:, 32:] = 255
    s = realism_stats(grey(img))
    assert s.flat_share == pytest.approx(56 / 64)
    # Canny keeps one edge pixel per row (non-maximum suppression across the step): 64 / 4096
    assert s.edge_density == pytest.approx(64 / 4096)
    # grey levels 0, 22, 84, 171, 233, 255 -> 5-bit codes 0, 2, 10, 21, 29, 31: six colours
    assert s.colour_diversity == 6


def test_faint_ramp_is_flat_steep_ramp_is_not():
    # a horizontal ramp of slope g grey levels per pixel survives the blur (linear) and has a 5x5 window std
    # of g * sqrt(2) (columns -2..2: variance 2); g = 0.5 -> 0.71 < 1 (flat), g = 1 -> 1.41 (not flat).
    # Borders are reflected, so the two outermost columns each side differ; we look at the interior.
    x = np.arange(200, dtype=np.float64)
    for g, flat in ((0.5, True), (1.0, False)):
        img = np.repeat((10 + g * x)[None, :], 20, axis=0)
        sd = local_std(img)
        assert sd[5:-5, 5:-5] == pytest.approx(np.full((10, 190), g * np.sqrt(2)), abs=1e-9)
        assert bool(np.all(sd[5:-5, 5:-5] < 1.0)) == flat


def test_colour_diversity_counts_5_bit_colours():
    # 16 x 16 blocks of 8 px: pure colours, each block's interior is untouched by the blur (radius 2),
    # and the blurred borders between blocks add mixtures; the interiors alone give 4 colours
    img = np.zeros((32, 32, 3), np.uint8)
    img[:16, :16] = (255, 0, 0)
    img[:16, 16:] = (0, 255, 0)
    img[16:, :16] = (0, 0, 255)
    img[16:, 16:] = (255, 255, 255)
    s = realism_stats(img)
    assert s.colour_diversity > 4
    flat = realism_stats(np.full((32, 32, 3), (8, 16, 31), np.uint8))  # 5-bit (1, 2, 3): one colour
    assert flat.colour_diversity == 1


def test_bad_input_raises():
    with pytest.raises(ValueError):
        realism_stats(np.zeros((10, 10), np.uint8))
    with pytest.raises(ValueError):
        realism_stats(np.zeros((10, 10, 3), np.float32))


def test_summary_medians_and_sample_order():
    rows = [RealismStats(0.1, 0.02, 10), RealismStats(0.5, 0.06, 30), RealismStats(0.3, 0.04, 20)]
    s = summarise(rows)
    assert s["views"] == 3 and s["median"] == {"flat_share": 0.3, "edge_density": 0.04, "colour_diversity": 20.0}
    assert summarise([])["median"] is None
    sl = summarise([RealismStats(0.1, 0.02, 10, -2.0), RealismStats(0.5, 0.06, 30, float("nan")),
                    RealismStats(0.3, 0.04, 20, -3.0)])
    assert sl["median"]["spectral_slope"] == -2.5 and sl["mean"]["spectral_slope"] == -2.5


def test_spectral_slope_of_synthetic_power_laws():
    """Noise shaped to power ~ 1/f^a (amplitude f^(-a/2)) has slope -a over the fitted band."""
    from urbanarena.render.realism import spectral_slope

    rng = np.random.default_rng(0)
    n = 512
    f = np.hypot(*np.meshgrid(np.fft.fftfreq(n), np.fft.fftfreq(n)))
    f[0, 0] = 1.0
    for a in (2.0, 3.0):
        spec = (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))) * f ** (-a / 2)
        img = np.real(np.fft.ifft2(spec))
        assert spectral_slope(img) == pytest.approx(-a, abs=0.15)


def test_noise_sigma_on_a_noisy_gradient():
    from urbanarena.render.realism import noise_sigma

    rng = np.random.default_rng(1)
    ramp = np.add.outer(np.linspace(40, 200, 256), np.linspace(0, 30, 256))  # planes: not noise
    assert noise_sigma(ramp + rng.normal(0, 2.0, ramp.shape)) == pytest.approx(2.0 * 0.85, rel=0.15)
    assert noise_sigma(ramp) < 1e-6
    ids = [f"n{i:03d}" for i in range(50)]
    assert sample_nodes(ids, 5) == sample_nodes(list(reversed(ids)), 5)  # order-free, deterministic
    assert len(set(sample_nodes(ids, 5))) == 5
