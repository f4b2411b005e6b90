"""Perspective views: geometry against hand-worked angles and an independent rotation
(scipy), seam wrap, RGB order through PNG/JPEG, and agreement with py360convert."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from urbanarena.render.encode import decode_image, encode_image
from urbanarena.render.views import ViewRenderer, compass_view, perspective_view, vertical_fov_deg

PW, PH = 2048, 1024


def angle_pano(w: int = PW, h: int = PH) -> np.ndarray:
    """float32 panorama whose pixel (i, j) stores (sin lon, cos lon, lat/90) of its centre:
    lon = 360 (i + 0.5) / W - 180 (clockwise from the centre column), lat = 90 - 180 (j + 0.5) / H."""
    lon = np.radians(360.0 * (np.arange(w) + 0.5) / w - 180.0)
    lat = 90.0 - 180.0 * (np.arange(h) + 0.5) / h
    img = np.empty((h, w, 3), np.float32)
    img[..., 0] = np.sin(lon)[None, :]
    img[..., 1] = np.cos(lon)[None, :]
    img[..., 2] = (lat / 90.0)[:, None]
    return img


def decode_angles(px: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lon, lat) in degrees from angle_pano samples; lon in (-180, 180]."""
    return np.degrees(np.arctan2(px[..., 0], px[..., 1])), px[..., 2] * 90.0


def expected_angles(yaw, pitch, hfov, w, h, us, vs):
    """Independent camera model: pixel (u, v) -> ray in camera axes (x right, y up, z forward)
    with f = (w/2)/tan(hfov/2) and principal point ((w-1)/2, (h-1)/2); camera axes -> world
    (E, N, U) at yaw=pitch=0 is x->E, y->U, z->N; then pitch about E (extrinsic) and yaw
    clockwise about U, composed with scipy's Rotation."""
    f = (w / 2) / math.tan(math.radians(hfov) / 2)
    us, vs = np.asarray(us, float), np.asarray(vs, float)
    cam = np.stack([(us - (w - 1) / 2) / f, -(vs - (h - 1) / 2) / f, np.ones_like(us)], -1)
    world0 = cam[..., [0, 2, 1]]  # (E, N, U)
    rot = Rotation.from_euler("xz", [pitch, -yaw], degrees=True)
    d = rot.apply(world0.reshape(-1, 3)).reshape(world0.shape)
    lon = np.degrees(np.arctan2(d[..., 0], d[..., 1]))
    lat = np.degrees(np.arctan2(d[..., 2], np.hypot(d[..., 0], d[..., 1])))
    return lon, lat


def lon_err(a, b):
    return np.abs((np.asarray(a) - np.asarray(b) + 180.0) % 360.0 - 180.0)


@pytest.fixture(scope="module")
def apano():
    return angle_pano()


@pytest.mark.parametrize("yaw,pitch", [(0.0, 0.0), (37.5, 12.0), (-120.0, -30.0), (179.9, 60.0), (200.0, -75.0)])
def test_centre_pixel_looks_exactly_at_yaw_pitch(apano, yaw, pitch):
    w, h = 321, 181  # odd sizes: pixel (160, 90) is the exact image centre
    v = perspective_view(apano, yaw, pitch, 75.0, w, h)
    lon, lat = decode_angles(v[90, 160])
    assert lon_err(lon, yaw) < 0.01
    assert abs(lat - pitch) < 0.01


def test_even_size_centre_is_between_the_four_central_pixels(apano):
    w, h = 320, 180
    v = perspective_view(apano, 10.0, 0.0, 90.0, w, h)
    lon_l, _ = decode_angles(v[90, 159])
    lon_r, _ = decode_angles(v[90, 160])
    _, lat_t = decode_angles(v[89, 160])
    _, lat_b = decode_angles(v[90, 160])
    # symmetric about yaw 10 / pitch 0: half a pixel each side (f = 160 px)
    half_px_deg = math.degrees(math.atan(0.5 / 160.0))
    assert lon_err(lon_l, 10.0 - half_px_deg) < 0.01 and lon_err(lon_r, 10.0 + half_px_deg) < 0.01
    assert abs(lat_t - half_px_deg) < 0.01 and abs(lat_b + half_px_deg) < 0.01


def test_border_pixels_hand_worked(apano):
    # hfov 90, width 641: f = 320.5 px; pixel-centre of column 0 is 320 px left of the axis:
    # atan(320/320.5) = 44.9553 deg; row 0 is 180 px above: atan(180/320.5) = 29.3163 deg.
    w, h = 641, 361
    v = perspective_view(apano, 0.0, 0.0, 90.0, w, h)
    lon0, lat_mid = decode_angles(v[180, 0])
    lon_last, _ = decode_angles(v[180, w - 1])
    _, lat_top = decode_angles(v[0, 320])
    _, lat_bot = decode_angles(v[h - 1, 320])
    assert lon_err(lon0, -44.9553) < 0.01
    assert lon_err(lon_last, 44.9553) < 0.01
    assert abs(lat_mid) < 0.01
    assert abs(lat_top - 29.3163) < 0.01 and abs(lat_bot + 29.3163) < 0.01
    assert vertical_fov_deg(90.0, 640, 360) == pytest.approx(2 * math.degrees(math.atan(180 / 320)))


@pytest.mark.parametrize("yaw,pitch,hfov", [(25.0, 20.0, 90.0), (-150.0, -45.0, 60.0), (90.0, 70.0, 100.0)])
def test_whole_view_matches_independent_rotation(apano, yaw, pitch, hfov):
    w, h = 160, 90
    v = perspective_view(apano, yaw, pitch, hfov, w, h)
    vs, us = np.mgrid[0:h, 0:w]
    exp_lon, exp_lat = expected_angles(yaw, pitch, hfov, w, h, us, vs)
    lon, lat = decode_angles(v)
    ok = np.abs(exp_lat) < 85.0  # near the poles longitude is ill-conditioned and y is clamped
    assert ok.mean() > 0.9
    assert np.max(lon_err(lon, exp_lon)[ok]) < 0.02
    assert np.max(np.abs(lat - exp_lat)) < 0.05


def test_yaw_wraps_and_seam_is_seamless():
    rng = np.random.default_rng(1)
    pano = cv2.GaussianBlur(rng.integers(0, 256, (PH // 4, PW // 4, 3), dtype=np.uint8), (5, 5), 0)
    a = perspective_view(pano, 30.0, 5.0, 80.0, 200, 120)
    assert np.array_equal(a, perspective_view(pano, 390.0, 5.0, 80.0, 200, 120))
    assert np.array_equal(a, perspective_view(pano, -330.0, 5.0, 80.0, 200, 120))
    # looking at the seam (yaw 180) == looking at the centre of the panorama rolled by half a turn
    seam = perspective_view(pano, 180.0, 0.0, 90.0, 200, 120).astype(int)
    rolled = perspective_view(np.roll(pano, pano.shape[1] // 2, axis=1), 0.0, 0.0, 90.0, 200, 120).astype(int)
    assert np.abs(seam - rolled).max() <= 1
    assert np.abs(seam - rolled).mean() < 0.05


def test_seam_continuity_on_angle_panorama(apano):
    v = perspective_view(apano, 180.0, 0.0, 60.0, 301, 101)
    lon, _ = decode_angles(v[50])
    steps = lon_err(lon[1:], lon[:-1])
    assert steps.max() < 0.5  # ~0.2 deg per pixel, no jump at the seam
    assert lon_err(lon[150], 180.0) < 0.01


def test_compass_view_uses_centre_bearing(apano):
    # centre column faces heading + offset = 100 - 90 = 10 deg; camera at compass 40 = 30 deg right of centre
    v = compass_view(apano, 40.0, 0.0, 60.0, 101, 51, heading_deg=100.0, yaw_offset_deg=-90.0)
    lon, lat = decode_angles(v[25, 50])
    assert lon_err(lon, 30.0) < 0.01 and abs(lat) < 0.01


def test_red_panorama_stays_red_through_png_and_jpeg():
    pano = np.zeros((256, 512, 3), np.uint8)
    pano[..., 0] = 255
    view = perspective_view(pano, 33.0, -10.0, 90.0, 640, 360)
    assert np.array_equal(np.unique(view.reshape(-1, 3), axis=0), [[255, 0, 0]])
    png = decode_image(encode_image(view, "png").data)
    assert np.array_equal(png, view)
    jpg = decode_image(encode_image(view, "jpeg", jpeg_quality=90).data)
    assert jpg[..., 0].min() >= 245 and jpg[..., 1].max() <= 10 and jpg[..., 2].max() <= 10


def test_grid_cache_reused_across_yaw():
    r = ViewRenderer(max_grids=4)
    pano = np.zeros((64, 128, 3), np.uint8)
    r.view(pano, 0.0, 0.0, 90.0, 32, 16)
    r.view(pano, 123.0, 0.0, 90.0, 32, 16)  # same pitch/hfov/size: grid hit
    r.view(pano, 0.0, 10.0, 90.0, 32, 16)  # new pitch: miss
    s = r.grid_stats
    assert (s.hits, s.misses, s.items) == (1, 2, 2)


@pytest.mark.parametrize("kwargs", [dict(hfov_deg=0.0), dict(hfov_deg=180.0), dict(pitch_deg=91.0), dict(width=0)])
def test_bad_arguments(kwargs):
    args = dict(yaw_deg=0.0, pitch_deg=0.0, hfov_deg=90.0, width=64, height=32)
    args.update(kwargs)
    with pytest.raises(ValueError):
        perspective_view(np.zeros((32, 64, 3), np.uint8), **args)
    with pytest.raises(ValueError, match="2:1"):
        perspective_view(np.zeros((32, 40, 3), np.uint8))


@pytest.mark.shared
def test_geovisio_cut_matches_py360convert(shared_dir):
    """Our view vs py360convert.e2p (test-only reference, MIT) on a real GoPro panorama.

    Mapping of conventions (py360convert 1.0.x, checked in its code and by this test):
    * yaw: py360convert's ``u_deg`` is positive to the right, like our yaw (clockwise from the
      image centre column); its ``v_deg`` is positive up, like our pitch. The test also checks
      that the opposite yaw sign does *not* match.
    * field of view: py360convert places the *centres* of the first and last pixels at
      +-tan(fov/2) (``linspace(-tan, tan, n)``) and takes the vertical fov separately, while our
      hfov spans the outer pixel *edges* with square pixels. So for our (hfov, w, h) with
      f = (w/2)/tan(hfov/2), py360convert gets fov = (2 atan(((w-1)/2)/f), 2 atan(((h-1)/2)/f)).
    * equirectangular pixel centres: both use x = (lon/2pi + 0.5) W - 0.5 (pixel centres at
      i + 0.5), so no shift is needed there.
    """
    py360convert = pytest.importorskip("py360convert")
    path = shared_dir / "data" / "panoramas" / "geovisio" / "1.jpg"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    pano = cv2.cvtColor(cv2.imread(str(path)), cv2.COLOR_BGR2RGB)
    for yaw, pitch, hfov, w, h in [(30.0, 10.0, 90.0, 640, 360), (-100.0, -20.0, 60.0, 401, 301), (170.0, 5.0, 100.0, 320, 240)]:
        ours = perspective_view(pano, yaw, pitch, hfov, w, h)
        f = (w / 2) / math.tan(math.radians(hfov) / 2)
        fov = (2 * math.degrees(math.atan((w - 1) / 2 / f)), 2 * math.degrees(math.atan((h - 1) / 2 / f)))
        ref = py360convert.e2p(pano, fov, yaw, pitch, (h, w))
        g_ours = cv2.cvtColor(ours, cv2.COLOR_RGB2GRAY).astype(float)
        mae = np.abs(g_ours - cv2.cvtColor(ref, cv2.COLOR_RGB2GRAY).astype(float)).mean()
        assert mae < 1.0, (yaw, pitch, hfov, mae)
        wrong = py360convert.e2p(pano, fov, -yaw, pitch, (h, w))
        assert np.abs(g_ours - cv2.cvtColor(wrong, cv2.COLOR_RGB2GRAY).astype(float)).mean() > 10.0


def test_matching_pano_width_hand_worked():
    from urbanarena.render.views import matching_pano_width

    assert matching_pano_width(90.0, 640) == 2011  # f = 320 px, 2 pi 320 = 2010.6
    assert matching_pano_width(60.0, 512) == math.ceil(2 * math.pi * 256 / math.tan(math.radians(30)))


def test_camera_pixel_direction_round_trip():
    from urbanarena.render.views import Camera

    cam = Camera(250.0, -20.0, 80.0, 400, 300)
    assert cam.pixel_of_direction(250.0, -20.0) == pytest.approx((199.5, 149.5))
    for u, v in [(0.0, 0.0), (399.0, 150.0), (123.4, 287.9)]:
        yaw, pitch = cam.direction_of_pixel(u, v)
        exp_lon, exp_lat = expected_angles(250.0, -20.0, 80.0, 400, 300, [u], [v])
        assert lon_err(yaw, exp_lon[0]) < 1e-9 and abs(pitch - exp_lat[0]) < 1e-9
        assert cam.pixel_of_direction(yaw, pitch) == pytest.approx((u, v))
    assert cam.pixel_of_direction(70.0, 20.0) is None  # straight behind
