"""The camera model (render/camera_model.py): identity, determinism, and each step against a hand-worked or
second-implementation value."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from urbanarena.render.camera_model import CAMERAS, CameraModel, default_camera, get_camera, views_carry_attribution


def _img(seed=0, h=120, w=200):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def test_clean_is_the_identity_and_defaults_keep_old_styles_clean():
    img = _img()
    assert CAMERAS["clean"].apply(img, "k") is img
    assert default_camera("flat") == default_camera("realistic") == "clean"
    assert default_camera("photo") == "consumer360"
    assert views_carry_attribution("clean") and not views_carry_attribution("consumer360")
    with pytest.raises(ValueError, match="consumer360"):
        get_camera("gopro")


def test_same_key_same_pixels_other_key_other_noise():
    cam = CAMERAS["consumer360"]
    img = np.full((90, 160, 3), 120, np.uint8)
    a, b, c = cam.apply(img, "node1|0"), cam.apply(img, "node1|0"), cam.apply(img, "node2|0")
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert a.shape == img.shape and a.dtype == np.uint8


@pytest.mark.parametrize("read, shot, level, blur", [(2.0, 0.0, 128, 0.0), (0.0, 0.05, 200, 0.0), (2.0, 0.0, 128, 0.6),
                                                     (0.75, 0.01, 100, 0.6)])
def test_noise_sigma_is_the_stated_one(read, shot, level, blur):
    """Luminance noise only (chroma 0): per-pixel sigma sqrt(read^2 + shot * I), also after the smear."""
    cam = CameraModel("t", read_noise=read, shot_gain=shot, noise_blur_sigma_px=blur)
    out = cam.apply(np.full((400, 400, 3), level, np.uint8), "x").astype(float)
    want = math.sqrt(read ** 2 + shot * level)
    got = out[20:-20, 20:-20, 1].std()
    # rounding to integers adds 1/12 of variance
    assert got == pytest.approx(math.sqrt(want ** 2 + 1 / 12), rel=0.06)


def test_vignetting_corner_falls_by_the_strength():
    cam = CameraModel("t", vignetting=0.3)
    out = cam.apply(np.full((201, 301, 3), 200, np.uint8), "x").astype(float)
    assert out[100, 150, 0] == 200
    assert out[0, 0, 0] == pytest.approx(200 * 0.7, abs=1.0)
    assert out[0, 150, 0] > out[0, 0, 0]


def test_barrel_distortion_moves_a_point_to_the_hand_worked_radius():
    h, w = 201, 401
    cx, cy = 200.0, 100.0
    half_diag = math.hypot(cx, cy)
    img = np.zeros((h, w, 3), np.uint8)
    ru = 0.8  # the dot's undistorted radius (along the x axis), as a share of the half diagonal
    x0 = int(round(cx + ru * half_diag))
    img[98:103, x0 - 2:x0 + 3] = 255
    out = CameraModel("t", distortion_k1=-0.1).apply(img, "x")
    cols = np.nonzero(out[100, :, 0] > 100)[0]
    got = cols.mean()
    # r_u = r_d (1 - k1 r_d^2) with k1 = -0.1: r_d (1 + 0.1 r_d^2) = 0.8, solved by bisection
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mid * (1 + 0.1 * mid * mid) < ru else (lo, mid)
    assert got == pytest.approx(cx + lo * half_diag, abs=1.0)
    assert got < x0  # barrel: towards the centre


def test_jpeg_step_matches_opencv_encoder_at_the_same_quality_and_subsampling():
    img = cv2.GaussianBlur(_img(3, 240, 320), (0, 0), 2.0)
    out = CameraModel("t", jpeg_quality=90, jpeg_subsampling=1).apply(img, "x")
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(img, cv2.COLOR_RGB2BGR),
                           [cv2.IMWRITE_JPEG_QUALITY, 90, cv2.IMWRITE_JPEG_SAMPLING_FACTOR,
                            cv2.IMWRITE_JPEG_SAMPLING_FACTOR_422])
    ref = cv2.cvtColor(cv2.imdecode(buf, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
    assert ok and np.abs(out.astype(int) - ref.astype(int)).mean() < 0.6
    assert np.abs(out.astype(int) - img.astype(int)).mean() > 0.3  # it did compress


def test_exposure_is_a_gain_in_linear_light():
    cam = CameraModel("t", exposure_sd_ev=0.5)
    img = np.full((8, 8, 3), 100, np.uint8)
    out = cam.apply(img, "k").astype(float)
    rng = np.random.default_rng(int.from_bytes(__import__("hashlib").sha256(b"t|k").digest()[:8], "little"))
    gain = 2.0 ** rng.normal(0.0, 0.5)
    lin = ((100 / 255 + 0.055) / 1.055) ** 2.4 * gain
    lin = min(lin, 1.0)
    want = 255 * (1.055 * lin ** (1 / 2.4) - 0.055)
    assert out[0, 0, 0] == pytest.approx(want, abs=1.0)


def test_observer_applies_the_camera_before_the_arrows(tmp_path):
    """Through consumer360 the view is no longer the panorama's flat grey, the same pose gives the same pixels,
    and the protocol's red arrows are drawn after the camera: their solid pixels equal the clean observer's."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from arena_util import t_junction
    from test_arena_observers import with_panoramas
    from urbanarena.env.arena_env import ArenaAction, ArenaEnv
    from urbanarena.env.observers import PanoramaObserver, panorama_observer_for

    city = with_panoramas(t_junction(), tmp_path, {})
    store = panorama_observer_for(city).store
    clean = PanoramaObserver(store, width=160, height=90)
    cam = PanoramaObserver(store, width=160, height=90, camera=CAMERAS["consumer360"])
    assert panorama_observer_for(city, camera="consumer360").camera is CAMERAS["consumer360"]
    assert panorama_observer_for(city).camera is None  # imagery cities: their pictures already came through a camera
    env = ArenaEnv(city, observer=clean)
    env.reset(options={"start_node": "s", "start_heading_deg": 0.0})
    for a in (ArenaAction("W", "LARGE"),) * 3 + (ArenaAction("D", "MEDIUM"),):
        env.step(a)
    pose = env.pose(env.state)
    a, b, c = clean(city, pose), cam(city, pose), cam(city, pose)
    assert np.array_equal(b, c)
    solid = np.all(a == (230, 20, 20), axis=2)
    assert solid.sum() > 30 and np.array_equal(a[solid], b[solid])
    grey = ~np.any(np.abs(a.astype(int) - 128) > 0, axis=2)
    assert grey.sum() > 1000 and b[grey].astype(float).std() > 0.8  # noise where the panorama was flat grey


def test_arena_view_settings_record_the_camera_only_when_not_clean():
    from urbanarena.runner.arena import ArenaViewSettings

    assert "camera" not in ArenaViewSettings(render_style="realistic").as_dict()
    d = ArenaViewSettings(render_style="realistic", camera="consumer360").as_dict()
    assert d["camera"] == "consumer360"
    assert ArenaViewSettings.from_stored(d).camera == "consumer360"
    assert ArenaViewSettings.from_stored({"render_style": "realistic"}).camera == "clean"
    with pytest.raises(ValueError, match="unknown camera"):
        ArenaViewSettings(camera="nope")
