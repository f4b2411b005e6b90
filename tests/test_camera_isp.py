"""The in-camera stages of the camera model (render/camera_isp.py, issue 24 item 4): each against a hand-worked value
or an independent numpy computation; the consumer360 camera's night metering and determinism."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from urbanarena.render import camera_isp as ISP
from urbanarena.render.camera_model import CAMERAS, CameraModel, camera_version_entry


def _decode(v: float) -> float:
    """sRGB decoding of one 0-255 value, by the formula (scalar, float64)."""
    c = v / 255.0
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _encode(lin: float) -> float:
    """sRGB encoding to the 0-255 scale (scalar, float64)."""
    return 255.0 * (lin * 12.92 if lin <= 0.0031308 else 1.055 * lin ** (1 / 2.4) - 0.055)


def test_meter_of_a_constant_image_is_its_linear_luminance():
    img = np.zeros((40, 60, 3), np.uint8)
    img[...] = (200, 100, 50)
    want = 0.2126 * _decode(200) + 0.7152 * _decode(100) + 0.0722 * _decode(50) + ISP.METER_EPS
    assert ISP.meter_linear(img) == pytest.approx(want, rel=1e-5)


def test_meter_is_the_geometric_mean_of_two_halves():
    img = np.zeros((40, 64, 3), np.uint8)
    img[:, :32] = 40
    img[:, 32:] = 220
    la, lb = _decode(40) + ISP.METER_EPS, _decode(220) + ISP.METER_EPS
    assert ISP.meter_linear(img) == pytest.approx(math.sqrt(la * lb), rel=1e-5)


@pytest.mark.parametrize("meter, want", [(0.09, 2.0), (0.01, 8.0), (0.72, 2 ** -1.5), (0.18, 1.0)])
def test_auto_exposure_gain_is_target_over_meter_within_the_range(meter, want):
    # target 0.18, range -1.5..+3 EV: 0.18/0.09 = 2; 0.18/0.01 = 18 capped at 8; 0.18/0.72 = 1/4 capped at 2^-1.5
    assert ISP.auto_exposure_gain(meter, 0.18, -1.5, 3.0) == pytest.approx(want, rel=1e-9)
    with pytest.raises(ValueError):
        ISP.auto_exposure_gain(0.0, 0.18, -1.0, 1.0)


@pytest.mark.parametrize("level", [20, 120, 240])
def test_auto_exposure_of_a_constant_image_meters_it_to_the_target_or_the_cap(level):
    """No noise: the output is the sRGB encoding of decode(level) * gain, clipped at white."""
    cam = CameraModel("t", auto_exposure_target=0.2, auto_exposure_min_ev=-1.0, auto_exposure_max_ev=3.0)
    out = cam.apply(np.full((16, 16, 3), level, np.uint8), "k")
    lin = _decode(level)
    gain = min(max(0.2 / (lin + ISP.METER_EPS), 2 ** -1.0), 2 ** 3.0)
    assert out[0, 0, 1] == pytest.approx(_encode(min(lin * gain, 1.0)), abs=0.51)
    assert len(np.unique(out)) == 1


def test_tone_curve_is_the_hand_worked_s_curve():
    lut = ISP.tone_lut(np.ones(3), 0.5)
    for v in (0, 64, 128, 200, 255):
        x = v / 255.0
        assert lut[1, v] == pytest.approx(0.5 * x + 0.5 * x * x * (3 - 2 * x), abs=1e-6)
    assert lut[0, 64] < 64 / 255 < 192 / 255 < lut[0, 192]  # darker shadows, brighter highlights


def test_auto_black_pulls_the_darkest_percent_to_the_target():
    img = np.full((80, 80, 3), 200, np.uint8)
    img[:, :40] = 60
    ident = ISP.tone_lut(np.ones(3), 0.0)
    b = ISP.auto_black(img, ident, 0.04, 0.5)
    assert b == pytest.approx(60 / 255 - 0.04, abs=1e-6)
    assert ISP.auto_black(img, ident, 0.04, 0.1) == pytest.approx(0.1)  # capped
    assert ISP.auto_black(img, ident, 0.3, 0.5) == 0.0                 # already dark enough
    cam = CameraModel("t", auto_black_target=0.04, auto_black_max=0.5)
    out = cam.apply(img, "k").astype(float)
    assert out[0, 0, 0] == pytest.approx(255 * 0.04 / (1 - b), abs=0.51)
    assert out[0, 79, 0] == pytest.approx(255 * (200 / 255 - b) / (1 - b), abs=0.51)


def test_saturation_is_a_chroma_gain_about_the_bt601_luma():
    img = np.zeros((8, 8, 3), np.uint8)
    img[...] = (200, 100, 50)
    out = CameraModel("t", saturation_boost=0.5).apply(img, "k").astype(float)
    luma = 0.299 * 200 + 0.587 * 100 + 0.114 * 50
    want = [min(255.0, max(0.0, luma + 1.5 * (c - luma))) for c in (200, 100, 50)]
    assert out[3, 3] == pytest.approx(want, abs=0.51)


def _step_response(lo: float, hi: float, sigma: float, amount: float, threshold: float, n: int = 40) -> np.ndarray:
    """An independent twin of the unsharp mask on a 1-D step (lo for i < n/2, hi from n/2): a sampled Gaussian of
    radius 6 sigma, normalised, the step's blur by direct summation, then the cored detail."""
    r = int(math.ceil(6 * sigma))
    k = np.exp(-np.arange(-r, r + 1) ** 2 / (2 * sigma * sigma))
    k /= k.sum()
    x = np.where(np.arange(n) < n // 2, lo, hi).astype(float)
    pad = np.concatenate([np.full(r, lo), x, np.full(r, hi)])
    blur = np.array([np.dot(k, pad[i:i + 2 * r + 1]) for i in range(n)])
    d = x - blur
    d = np.sign(d) * np.maximum(np.abs(d) - threshold, 0.0)
    return x + amount * d


@pytest.mark.parametrize("amount, sigma, threshold", [(1.0, 1.2, 0.0), (1.6, 1.2, 2.5), (0.8, 2.0, 0.0)])
def test_a_step_edge_gets_the_hand_worked_overshoot(amount, sigma, threshold):
    """Sharpening alone: a 60 -> 160 step's halo (overshoot above 160, undershoot below 60) equals the twin's."""
    img = np.full((30, 40, 3), 60, np.uint8)
    img[:, 20:] = 160
    out = CameraModel("t", sharpen_amount=amount, sharpen_sigma_px=sigma, sharpen_threshold_grey=threshold
                      ).apply(img, "k").astype(float)
    twin = _step_response(60.0, 160.0, sigma, amount, threshold)
    row = out[15, :, 1]
    assert row.max() - 160 == pytest.approx(twin.max() - 160, abs=0.6)
    assert 60 - row.min() == pytest.approx(60 - twin.min(), abs=0.6)
    assert row.max() > 165  # a visible halo
    assert row[0] == 60 and row[-1] == 160  # far from the edge nothing changes


def test_noise_reduction_smooths_flat_noise_and_keeps_an_edge():
    rng = np.random.default_rng(1)
    y = np.full((120, 120), 100.0, np.float32)
    y[:, 60:] = 180.0
    noisy = y + rng.normal(0.0, 2.0, y.shape).astype(np.float32)
    out = ISP.denoise_luma(noisy, 6.0)
    assert out[10:-10, 10:50].std() < 0.6 * noisy[10:-10, 10:50].std()
    assert out[10:-10, 57:59].mean() == pytest.approx(100.0, abs=1.0)   # the dark side next to the edge
    assert out[10:-10, 61:63].mean() == pytest.approx(180.0, abs=1.0)   # the bright side
    assert np.array_equal(ISP.denoise_luma(noisy, 6.0), out)


def test_noise_grows_with_the_auto_exposure_gain():
    """Gain forced to 4 (range 2..2 EV): the luma noise sigma is read * sqrt(4) around encode(4 decode(level))."""
    level = 40
    cam = CameraModel("t", auto_exposure_target=0.18, auto_exposure_min_ev=2.0, auto_exposure_max_ev=2.0,
                      read_noise=1.5)
    out = cam.apply(np.full((400, 400, 3), level, np.uint8), "x").astype(float)
    mean = _encode(min(_decode(level) * 4.0, 1.0))
    assert out[..., 1].mean() == pytest.approx(mean, abs=0.2)
    assert out[..., 1].std() == pytest.approx(math.sqrt((1.5 * 2.0) ** 2 + 1 / 12), rel=0.06)


def test_consumer360_meters_a_night_view_up_and_is_deterministic_per_view():
    cam = CAMERAS["consumer360"]
    rng = np.random.default_rng(3)
    night = np.clip(rng.normal(8, 3, (180, 320, 3)), 0, 255).astype(np.uint8)
    night[20:30, 100:110] = (255, 230, 160)  # a street light
    a, b, c = cam.apply(night, "n1|0"), cam.apply(night, "n1|0"), cam.apply(night, "n2|0")
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert a.mean() > 4 * night.mean()                        # metered up (not near-black)
    assert (a.min(axis=2) >= 245).sum() >= 36                  # the light blows out (the tilt moves it a little)
    assert a.std() > night.std()                               # and the frame is noisier


def test_versions_enter_run_configs_only_for_versioned_cameras():
    assert camera_version_entry("consumer360") == {"camera_version": CAMERAS["consumer360"].version} \
        and CAMERAS["consumer360"].version >= 2
    assert camera_version_entry("clean") == {} and camera_version_entry("phone") == {}
    assert CAMERAS["consumer360"].describe()["version"] == CAMERAS["consumer360"].version
    # the phone keeps the stages it had before version 2 (its reference photos' pixels stay)
    phone = CAMERAS["phone"].describe()
    for k in ("auto_exposure_target", "auto_black_max", "tone_contrast", "saturation_boost", "denoise_grey",
              "chroma_denoise_sigma_px", "sharpen_amount"):
        assert phone[k] == 0
    from urbanarena.runner.arena import ArenaViewSettings

    d = ArenaViewSettings(render_style="realistic", camera="consumer360").as_dict()
    assert d["camera_version"] == CAMERAS["consumer360"].version
    assert ArenaViewSettings.from_stored(d) == ArenaViewSettings(render_style="realistic", camera="consumer360")
    assert "camera_version" not in ArenaViewSettings(render_style="realistic", camera="phone").as_dict()


def test_compress_chroma_by_hand():
    """A chroma vector of length 100 grey levels past a knee of 60 with slope 0.5 becomes 80 long, same direction;
    one of length 30 is unchanged; a bad knee or slope is refused."""
    c = np.zeros((1, 2, 3), np.float32)
    c[0, 0] = (60.0, 0.0, -80.0)            # length 100
    c[0, 1] = (18.0, -24.0, 0.0)            # length 30
    out = ISP.compress_chroma(c, 60.0, 0.5)
    assert out[0, 0] == pytest.approx([48.0, 0.0, -64.0], abs=1e-4)    # 0.8 of it
    assert out[0, 1] == pytest.approx([18.0, -24.0, 0.0], abs=1e-6)
    for knee, slope in ((0.0, 0.5), (60.0, 1.5)):
        with pytest.raises(ValueError):
            ISP.compress_chroma(c, knee, slope)


def test_consumer360_holds_a_neon_green_in_and_leaves_grey_alone():
    """Through the consumer360 camera (no noise draws matter for the means) a flat neon green keeps a chroma far
    below the plain 1.4 boost, while a flat grey (its chroma only the view's white balance, under the knee) comes
    out exactly as without the knee."""
    from urbanarena.render.camera_model import get_camera

    cam = get_camera("consumer360")
    assert cam.chroma_knee_grey > 0 and 0 < cam.chroma_knee_slope < 1
    green = np.zeros((90, 160, 3), np.uint8)
    green[...] = (60, 170, 40)
    out = cam.apply(green, "g|0").astype(np.float64).reshape(-1, 3).mean(axis=0)
    boosted = dataclasses.replace(cam, chroma_knee_grey=0.0).apply(green, "g|0").astype(np.float64)
    boosted = boosted.reshape(-1, 3).mean(axis=0)
    chroma = lambda v: float(np.linalg.norm(v - v @ np.array([0.299, 0.587, 0.114])))
    assert chroma(out) < 0.8 * chroma(boosted)
    grey = np.full((90, 160, 3), 120, np.uint8)
    assert np.array_equal(cam.apply(grey, "g|0"), dataclasses.replace(cam, chroma_knee_grey=0.0).apply(grey, "g|0"))


def test_clipped_excess_by_hand():
    img = np.array([[[255, 0, 128]]], np.uint8)
    # white times 4 is 3 whites over; black none; 128 decodes to 0.2159, times 4 = 0.8638, under white
    got = ISP.clipped_excess(img, np.array([4.0, 4.0, 4.0]))
    assert np.allclose(got[0, 0], [3.0, 0.0, 0.0], atol=1e-6)
    assert not ISP.clipped_excess(img, np.array([1.0, 1.0, 1.0])).any()
    assert np.isclose(ISP.clipped_excess(img, np.array([1.0, 1.0, 8.0]))[0, 0, 2], 8 * _decode(128) - 1, atol=1e-5)


def test_glare_without_excess_leaves_the_image_alone():
    x = np.full((40, 60, 3), 0.8, np.float32)
    assert ISP.veiling_glare(x, np.zeros_like(x), 0.05, 6.0) is x


def _gauss_halo(e: np.ndarray, sigma_px: float) -> np.ndarray:
    """An independent full-resolution Gaussian blur (scipy) of one channel, for comparison."""
    from scipy.ndimage import gaussian_filter

    return gaussian_filter(e.astype(np.float64), sigma_px, mode="mirror")


def test_glare_is_a_halo_of_the_excess_added_in_linear_light():
    # a 6 x 6 window 3 whites over in red, 1.5 in green, 0 in blue, on a black wall (display 0)
    x = np.zeros((120, 160, 3), np.float32)
    x[57:63, 77:83] = 1.0
    excess = np.zeros_like(x)
    excess[57:63, 77:83] = (3.0, 1.5, 0.0)
    out = ISP.veiling_glare(x, excess, 0.05, 8.0)
    lin_added = ISP.srgb_to_linear(out) - ISP.srgb_to_linear(x)
    outside = np.ones((120, 160), bool)
    outside[57:63, 77:83] = False
    want = np.zeros((120, 160)); want[57:63, 77:83] = 3.0
    want = 0.05 * _gauss_halo(want, 8.0)                           # the rule at full resolution, red channel
    assert np.abs(lin_added[..., 0] - want)[outside].max() < 0.05 * want.max()
    assert np.isclose(lin_added[..., 0][outside].sum(), want[outside].sum(), rtol=0.05)
    assert np.allclose(lin_added[..., 1], 0.5 * lin_added[..., 0], atol=1e-6) and not lin_added[..., 2].any()
    assert np.allclose(out[57:63, 77:83], 1.0, atol=1e-6)         # the window stays white, not over
    assert lin_added[60, 92, 0] > 0.3 * lin_added[60, 84, 0] > 0  # 12 px from the centre: still a glow
    assert lin_added[60, 150, 0] < 1e-4                            # 70 px: none


def test_consumer360_glare_only_where_light_is_blown():
    cam = CAMERAS["consumer360"]
    assert cam.glare_strength > 0
    off = dataclasses.replace(cam, glare_strength=0.0)
    # a dim night scene with one bright window: the meter lifts it by the maximum, the window blows and glows
    img = np.full((90, 160, 3), 6, np.uint8)
    img[40:50, 75:85] = (230, 200, 140)
    on_img, off_img = cam.apply(img, "k"), off.apply(img, "k")
    ring = (slice(38, 52), slice(88, 96))                          # just right of the window
    assert on_img[ring].astype(float).mean() > off_img[ring].astype(float).mean() + 5
    # a mid-grey day scene: nothing blown, the same pixels
    day = np.full((90, 160, 3), 120, np.uint8)
    assert np.array_equal(cam.apply(day, "k"), off.apply(day, "k"))


def test_glare_arguments_checked():
    x = np.zeros((8, 8, 3), np.float32)
    for bad in ((-0.1, 4.0), (0.1, 0.0)):
        with pytest.raises(ValueError):
            ISP.veiling_glare(x, x, *bad)


def _ray_to_level_pixel(u, v, w, h, hfov_deg, roll_deg, pitch_deg, zoom):
    """Independently: the level view's pixel that the turned camera's pixel (u, v) sees, by turning its ray
    with Rodrigues' formula (axes right, down, forward; pitch up about the right axis, then roll about the
    forward axis)."""
    f = (w / 2.0) / math.tan(math.radians(hfov_deg) / 2.0)
    cx, cy = (w - 1) / 2.0, (h - 1) / 2.0
    d = np.array([(u - cx) / (f * zoom), (v - cy) / (f * zoom), 1.0])

    def turn(vec, axis, ang):
        axis = np.asarray(axis, float)
        return vec * math.cos(ang) + np.cross(axis, vec) * math.sin(ang) + axis * axis.dot(vec) * (1 - math.cos(ang))

    d = turn(d, (0.0, 0.0, 1.0), math.radians(roll_deg))      # roll first (in the turned camera's frame)
    d = turn(d, (1.0, 0.0, 0.0), math.radians(pitch_deg))     # then pitch up: forward towards -y
    return cx + f * d[0] / d[2], cy + f * d[1] / d[2]


@pytest.mark.parametrize("roll,pitch", [(0.0, 0.0), (2.0, 0.0), (0.0, -3.0), (-1.5, 2.5)])
def test_tilt_map_matches_turned_rays(roll, pitch):
    w, h = 640, 360
    M, zoom = ISP.tilt_map(w, h, 90.0, roll, pitch)
    assert zoom >= 1.0 and (zoom == 1.0) == (roll == 0.0 and pitch == 0.0)
    for u, v in ((0, 0), (639, 0), (319.5, 179.5), (100, 300), (639, 359)):
        q = M @ np.array([u, v, 1.0])
        want = _ray_to_level_pixel(u, v, w, h, 90.0, roll, pitch, zoom)
        assert np.allclose(q[:2] / q[2], want, atol=1e-6)
        assert 0 <= q[0] / q[2] <= w - 1 and 0 <= q[1] / q[2] <= h - 1   # every pixel from inside the view


def test_tilt_by_hand_pitch_moves_the_centre_and_roll_tilts_the_horizon():
    # 90 degrees across 640 px: f = 320; pitching up 3 degrees shows at the centre what was 320 tan 3 = 16.77 px
    # above it (zoom aside: the centre ray is the axis, unaffected by the zoom)
    M, _ = ISP.tilt_map(640, 360, 90.0, 0.0, 3.0)
    q = M @ np.array([319.5, 179.5, 1.0])
    assert np.isclose(q[1] / q[2], 179.5 - 320 * math.tan(math.radians(3.0)), atol=1e-6)
    # a level horizon (a bright upper half) rolled by 2 degrees: it rises to the right by 2 degrees' slope
    img = np.zeros((360, 640, 3), np.float32)
    img[:180] = 1.0
    out = ISP.tilt_view(img, 90.0, 2.0, 0.0)
    edge = [float(np.argmin(out[:, c, 0] > 0.5)) for c in (120, 520)]
    assert np.isclose((edge[0] - edge[1]) / 400.0, math.tan(math.radians(2.0)), atol=0.01)


def test_consumer360_tilts_each_view_its_own_way_and_keeps_its_frame_full():
    cam = CAMERAS["consumer360"]
    assert cam.tilt_sd_deg > 0
    img = np.zeros((180, 320, 3), np.uint8)
    img[:90] = 200
    a, b = cam.apply(img, "view-a"), cam.apply(img, "view-b")
    assert np.array_equal(a, cam.apply(img, "view-a"))   # deterministic in the key
    rows = lambda x: [int(np.argmin(x[:, c, 1] > 100)) for c in (40, 280)]
    assert rows(a) != rows(b)                             # different views, different horizons
    assert np.array_equal(CAMERAS["phone"].apply(img, "k"), CAMERAS["phone"].apply(img, "k"))


def test_noise_reduction_range_is_capped_so_metered_up_frames_keep_their_texture():
    """consumer360 v4: the luma noise reduction's range sigma no longer grows with the noise gain (v3: 4 x k,
    16 grey levels at k = 4, flattened a 6-level texture into patches); by hand: min(4 k, 4)."""
    cam = CAMERAS["consumer360"]
    assert cam.denoise_range_grey(1.0) == 4.0 and cam.denoise_range_grey(4.0) == 4.0
    uncapped = dataclasses.replace(cam, denoise_max_grey=0.0)
    assert uncapped.denoise_range_grey(4.0) == 16.0
    assert dataclasses.replace(cam, denoise_max_grey=10.0).denoise_range_grey(2.0) == 8.0
    # a wall texture of +-6 grey levels in 4-pixel blocks: the capped filter keeps most of it, v3's flattens it
    yy, xx = np.mgrid[0:96, 0:96]
    tex = (110.0 + 6.0 * np.sign(np.sin(xx * np.pi / 4) * np.sin(yy * np.pi / 4))).astype(np.float32)
    kept = ISP.denoise_luma(tex, cam.denoise_range_grey(4.0)).std() / tex.std()
    flat = ISP.denoise_luma(tex, uncapped.denoise_range_grey(4.0)).std() / tex.std()
    assert kept > 0.75 and flat < 0.6
