"""The ``photo`` style's HDRI sky and image-based ambient light (render/scene3d/photo_sky.py, photo_sky_map.py,
hdri.py, sh_irradiance.py; issue 24 item 3): the EXR reader against a file written with the OpenEXR package, the SH
projection against scipy's spherical harmonics on another quadrature, the SH irradiance against brute-force
integration of the cosine lobe, a constant map by hand, the object mask and fill on a hand-made map, the sky pixel
drawn on the GPU against the Python twin, determinism, and the fallback without the package."""

from __future__ import annotations

import math

import numpy as np
import pytest

from test_render_styles import small_scene
from urbanarena.render.scene3d import photo_sky as PS
from urbanarena.render.scene3d import photo_sky_map as PM
from urbanarena.render.scene3d import sh_irradiance as SH
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.render.scene3d.hdri import HdriError, read_exr
from urbanarena.render.scene3d.renderer import RenderSettings

needs_gl = pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")


# ------------------------------------------------------------------------------------------------ the reader
def test_read_exr_gives_the_written_values_back_exactly(tmp_path):
    import OpenEXR

    rgb = (np.arange(3 * 5 * 3, dtype=np.float32).reshape(3, 5, 3) - 7.0) * np.float32(0.37)
    rgb[1, 2] = (3.25e4, -1.5e-3, 1e-6)                     # a sun, DWA-like ringing, a tiny value
    path = tmp_path / "tiny.exr"
    header = {"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage}
    planes = {c: np.ascontiguousarray(rgb[..., i]) for i, c in enumerate("RGB")}   # the bindings need contiguous
    with OpenEXR.File(header, planes) as f:
        f.write(str(path))
    got = read_exr(path)
    assert got.dtype == np.float32 and got.shape == (3, 5, 3)
    assert np.array_equal(got, rgb)
    half = rgb.astype(np.float16)                           # half channels widen exactly
    with OpenEXR.File(header, {"RGB": half}) as f:
        f.write(str(tmp_path / "half.exr"))
    assert np.array_equal(read_exr(tmp_path / "half.exr"), half.astype(np.float32))


def test_read_exr_names_the_bad_file(tmp_path):
    import OpenEXR

    bad = tmp_path / "sunset.exr"
    bad.write_bytes(b"not an exr at all" * 8)
    with pytest.raises(HdriError, match="sunset.exr"):
        read_exr(bad)
    with pytest.raises(HdriError, match="missing.exr"):
        read_exr(tmp_path / "missing.exr")
    with OpenEXR.File({"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage},
                      {"Z": np.ones((2, 2), np.float32)}) as f:
        f.write(str(tmp_path / "depth.exr"))
    with pytest.raises(HdriError, match=r"depth.exr: no R, G, B"):
        read_exr(tmp_path / "depth.exr")


# ------------------------------------------------------------------------------------------ SH, by hand and twice
def test_constant_map_gives_pi_l_by_hand():
    """Radiance 2 everywhere: ``L_00 = 2 * 4 pi * Y_00`` and ``E = pi * L_00 * Y_00 = 2 pi`` for every normal."""
    env = np.full((128, 256, 1), 2.0)
    rad = SH.sh_project(env, 0.7)
    assert rad[0, 0] == pytest.approx(2.0 * 4 * math.pi * 0.5 / math.sqrt(math.pi), rel=2e-4)
    assert np.abs(rad[1:]).max() < 1e-3                  # midpoint rule on 128 rows: (2,0) is off by 4e-4
    n = np.array([[0, 0, 1], [1, 0, 0], [0, -1, 0], [0.6, 0, -0.8], [0, 0, -1]], float)
    assert SH.sh_irradiance(SH.irradiance_coeffs(rad), n)[:, 0] == pytest.approx([2 * math.pi] * 5, rel=2e-4)


def _test_radiance(d):
    x, y, z = d[..., 0], d[..., 1], d[..., 2]
    return 1.0 + 0.5 * z + 0.3 * x * y - 0.2 * (3 * z * z - 1) + 0.15 * np.exp(2 * x)   # smooth, not band-limited


def test_sh_projection_matches_scipy_spherical_harmonics():
    """Second implementation: scipy's complex ``Y_l^m`` made real, Gauss-Legendre in ``cos theta`` x 256 azimuths,
    against :func:`sh_project` of the same radiance on a 256 x 512 equirectangular map turned by 0.4 rad."""
    from scipy.special import sph_harm_y

    rot = 0.4
    d, _ = SH.equirect_directions(256, 512, rot)
    ours = SH.sh_project(_test_radiance(d)[..., None], rot)[:, 0]
    ct, wt = np.polynomial.legendre.leggauss(96)
    theta = np.arccos(ct)[:, None]
    phi = (np.arange(256) + 0.5) * 2 * math.pi / 256
    phi = phi[None, :]
    dirs = np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.broadcast_to(np.cos(theta),
                                                                                           (96, 256))], -1)
    w = wt[:, None] * (2 * math.pi / 256)
    f = _test_radiance(dirs)
    theirs = []
    for l_, m in ((0, 0), (1, -1), (1, 0), (1, 1), (2, -2), (2, -1), (2, 0), (2, 1), (2, 2)):
        y = sph_harm_y(l_, abs(m), theta, phi)
        real = y.real if m == 0 else math.sqrt(2) * (-1) ** m * (y.imag if m < 0 else y.real)
        theirs.append(float((f * real * w).sum()))
    assert np.allclose(ours, theirs, rtol=2e-3, atol=2e-4), (ours, theirs)


def test_sh_irradiance_matches_brute_force_cosine_integral():
    """A band-limited map (bands 0-2): the SH irradiance is exact, so it matches ``sum L(d) max(n.d, 0) dw`` to the
    quadrature's accuracy; a sharp map (bright cap, dark ground) within the 9-term approximation's error."""
    d, dw = SH.equirect_directions(192, 384, 1.1)
    x, y, z = d[..., 0], d[..., 1], d[..., 2]
    normals = np.array([[0, 0, 1], [1, 0, 0], [0, 1, 0], [-0.6, 0.0, 0.8], [0.3, -0.9, -0.3], [0, 0, -1]], float)
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)

    def brute(env):
        return np.array([(env * np.maximum(d @ n, 0.0) * dw[:, None]).sum() for n in normals])

    smooth = 2.0 + 0.8 * z + 0.5 * x - 0.3 * x * y + 0.25 * (x * x - y * y)
    sh = SH.irradiance_coeffs(SH.sh_project(smooth[..., None], 1.1))
    assert SH.sh_irradiance(sh, normals)[:, 0] == pytest.approx(brute(smooth), rel=1e-3)
    sky = np.where(z > 0, 1.0 + 3.0 * (d @ np.array([0.0, 0.6, 0.8]) > 0.9), 0.1)
    sh = SH.irradiance_coeffs(SH.sh_project(sky[..., None], 1.1))
    want = brute(sky)
    assert np.abs(SH.sh_irradiance(sh, normals)[:, 0] - want).max() < 0.12 * want.max()


# ---------------------------------------------------------------------------------------- preparing a map
def _hand_map(h=64, w=128):
    """A smooth sky (brighter towards the horizon, bluish), a dark block standing on the horizon across columns
    40-59 up to row 20 (elevation 33.75 degrees), a single bright star at row 5, column 100, and grey ground."""
    e = 90.0 - (np.arange(h) + 0.5) * 180.0 / h
    sky = np.empty((h, w, 3))
    sky[:] = (1.0 + 0.5 * (1 - np.sin(np.radians(np.clip(e, 0, 90)))))[:, None, None] * np.array([0.6, 0.8, 1.0])
    sky[h // 2:] = 0.2
    smooth = sky.copy()
    sky[20:h // 2, 40:60] = 0.05
    sky[5, 100] = 9.0
    return sky, smooth


def test_object_mask_takes_the_block_not_the_star():
    sky, _ = _hand_map(w=256)
    mask = PM.object_mask(sky)
    assert mask.shape == (32, 256)
    top = np.where(mask.any(axis=0), mask.argmax(axis=0), 32)
    assert (mask == (np.arange(32)[:, None] >= top[None, :])).all()   # everything below a column's top
    # by hand: an edge is marked on the texel before a jump (row 19 above the block's row 20; row 31 above the
    # ground), grown by one texel (18; 30), then lowered by the margin
    m = PM.SKYLINE_MARGIN_PX
    assert (top[40:60] == 18 - m).all()                               # the block, from above its top down
    reach = PM.SKYLINE_SPREAD_PX + int(6 * PM.SKYLINE_SMOOTH_PX) + 2  # spread, smoothing (+-3 sigma twice), growth
    far = np.r_[60 + reach:256 - (reach - 40)]                        # (the longitude wraps)
    assert len(far) > 100 and (top[far] == 30 - m).all()              # elsewhere only the horizon's edge
    assert (np.abs(np.diff(top)) <= 1).all()                          # no vertical steps in the skyline
    assert not mask[5, 100]                                           # the star is not connected to the ground


def test_fill_restores_a_smooth_sky_under_the_block():
    sky, smooth = _hand_map()
    mask = np.zeros((32, 128), bool)
    mask[18:, 38:62] = True
    filled = PM.fill_masked(sky[:32], mask)
    assert np.array_equal(filled[~mask], sky[:32][~mask].astype(np.float32))   # known texels untouched
    err = np.abs(filled[mask] - smooth[:32][mask]) / smooth[:32][mask]
    assert err.max() < 0.12 and err.mean() < 0.05                     # the gradient continues under the block


def test_mirror_fill_takes_the_texel_across_the_sun_meridian_by_hand():
    """Sun at map longitude 90 degrees on a 36-column map (10-degree texels, centres at 5, 15, ... 355): the
    column at 125 degrees (index 12) mirrors to 55 degrees (index 5); a masked texel takes its mirror's value
    when that one is sky, and stays masked when both are masked."""
    img = np.tile(np.arange(36, dtype=np.float32)[None, :, None], (4, 1, 3))
    mask = np.zeros((4, 36), bool)
    mask[2:, 12] = True                                               # an object at 125 degrees, rows 2-3
    mask[3, 5] = True                                                 # its mirror is masked in row 3
    out, left = PM.mirror_fill(img, mask, 90.0)
    assert out[2, 12, 0] == 5.0                                       # from 55 degrees
    assert left[3, 12] and left[3, 5] and not left[2, 12]             # both masked: left for fill_masked
    assert np.array_equal(out[~mask], img[~mask])
    # the wrap: sun at 10 degrees, the column at 345 degrees (index 34) mirrors to 35 degrees (index 3)
    mask = np.zeros((4, 36), bool)
    mask[0, 34] = True
    assert PM.mirror_fill(img, mask, 10.0)[0][0, 34, 0] == 3.0


def _prepared(h=128, w=256, sun=(20.0, 90.0)):
    """A :class:`PreparedMap` of a hand-made sky whose colour varies with the map longitude (period 60 degrees)
    and elevation, with a sun at ``sun`` (elevation, map longitude in degrees)."""
    e = np.radians(90.0 - (np.arange(h // 2) + 0.5) * 180.0 / h)[:, None]
    lon = np.radians(360.0 * (np.arange(w) + 0.5) / w)[None, :]
    sky = np.stack([0.5 + 0.3 * np.sin(6 * lon) * np.cos(e), 0.7 + 0.2 * np.sin(e) + 0 * lon,
                    0.9 + 0.3 * np.cos(6 * lon + 1.0) * np.cos(e)], -1).astype(np.float32)
    return PM.PreparedMap("hand", sky, sky, sky[::2, ::2].copy(), sun[0], sun[1], 0.0)


def test_map_is_turned_to_the_scene_sun():
    """The map longitude of the map's sun is seen at the scene sun's azimuth: ``rot = lon_sun - az_scene``."""
    from urbanarena.render.scene3d.conditions import lighting

    settings = RenderSettings(style="photo", sun_azimuth_deg=200.0)
    sky = PS.sky_light(_prepared(sun=(20.0, 90.0)), settings, lighting(settings))
    assert math.degrees(sky.rot_rad) == pytest.approx((90.0 - 200.0) % 360.0)
    # a world direction at azimuth 200 degrees reads the map's column at longitude 90 degrees
    a = math.radians(200.0)
    d = np.array([math.sin(a), math.cos(a), 0.0])
    u = (math.atan2(d[0], d[1]) + sky.rot_rad) / (2 * math.pi) % 1.0
    assert u * 360.0 == pytest.approx(90.0)
    # the ambient is normalized: an upward surface keeps the scene's ambient luminance
    assert float(PS.ambient_rgb(sky, np.array([0.0, 0.0, 1.0])) @ PS.LUMA) == pytest.approx(sky.amb_up, rel=0.02)


def test_overcast_weathers_keep_the_procedural_sky_with_ci_e_ambient():
    from urbanarena.render.scene3d.conditions import lighting

    for cond in ("cloudy", "rain", "fog", "rain+night"):
        s = RenderSettings.for_condition(cond, style="photo")
        assert PS.hdri_name(s) is None
        sky = PS.sky_light(None, s, lighting(s))
        assert sky.texture is None
        up, side = PS.ambient_rgb(sky, np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]))
        assert float(up @ PS.LUMA) == pytest.approx(sky.amb_up, rel=0.02) and (side < up).all()
    assert [PS.hdri_name(RenderSettings.for_condition(c)) for c in ("clear", "dusk", "night")] == \
        ["sunrise", "sunset", "night"]


# -------------------------------------------------------------------------------------------------- on the GPU
def _renderer(monkeypatch, prepared, condition="clear"):
    from urbanarena.render.scene3d.conditions import lighting
    from urbanarena.render.scene3d.renderer import SceneRenderer

    monkeypatch.setattr(PS, "sky_for", lambda s, light, quiet=False: PS.sky_light(prepared, s, lighting(s)))
    return SceneRenderer(small_scene(), RenderSettings.for_condition(condition, style="photo"))


@needs_gl
def test_sky_pixels_on_the_gpu_match_the_twin(monkeypatch):
    from urbanarena.render.scene3d.conditions import lighting
    from urbanarena.render.views import Camera

    r = _renderer(monkeypatch, _prepared())
    sky = r._photo_sky
    w, h, yaw, pitch, fov = 160, 90, 90.0, 45.0, 40.0                  # only sky, elevations about 33-57 degrees
    img = r.render_view(0.0, -4.0, yaw, pitch, fov, w, h).astype(np.float64)
    basis = Camera(yaw, pitch, fov, w, h).basis()
    tx = math.tan(math.radians(fov) / 2)
    x = ((np.arange(w) + 0.5) / w * 2 - 1) * tx
    y = (1 - (np.arange(h) + 0.5) / h * 2) * tx * h / w
    X, Y = np.meshgrid(x, y)
    d = np.stack([X, Y, np.ones_like(X)], -1) @ basis
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    assert sky.horizon is not None and sky.horizon != lighting(r.settings).horizon   # the map's own colours
    want = 255.0 * PS.sky_pixels(sky, d, (0.0, -4.0))               # seen from the camera (its clouds)
    assert np.abs(img - want).max() <= 2.0                             # 8-bit rounding, float texture filtering
    from dataclasses import replace

    turned = 255.0 * PS.sky_pixels(replace(sky, rot_rad=sky.rot_rad + math.pi / 6), d, (0.0, -4.0))
    assert np.abs(img - turned).max() > 10                             # a 30-degree turn shows


@needs_gl
def test_photo_sky_is_deterministic_and_lights_the_scene(monkeypatch):
    from urbanarena.render.scene3d import renderer as R

    view = (0.0, -4.0, 90.0, 0.0, 90.0, 320, 180)
    a = _renderer(monkeypatch, _prepared()).render_view(*view)
    b = _renderer(monkeypatch, _prepared()).render_view(*view)
    assert np.array_equal(a, b)                                        # a second renderer: the same pixels
    monkeypatch.setattr(PS, "sky_for", lambda *a, **k: None)
    before = R.SceneRenderer(small_scene(), RenderSettings(style="photo")).render_view(*view)
    diff = np.abs(a.astype(int) - before.astype(int)).max(axis=2)
    assert (diff[:60] > 8).mean() > 0.3                                # the sky (upper third) changed
    assert (diff[150:] > 0).mean() > 0.3                               # and the ground's ambient light


def test_without_the_package_one_line_and_no_sky(tmp_path, monkeypatch, capsys):
    from urbanarena.render.assets import fetch as F
    from urbanarena.render.scene3d.conditions import lighting

    monkeypatch.setenv("URBANARENA_HOME", str(tmp_path))
    monkeypatch.setattr(PS, "_STATUS", {})

    def no_download(*a, **k):
        raise AssertionError("the photo style must not download")

    monkeypatch.setattr(F, "fetch_package", no_download)
    s = RenderSettings(style="photo")
    assert PS.sky_for(s, lighting(s), quiet=True) is None and capsys.readouterr().err == ""
    assert PS.sky_for(s, lighting(s)) is None
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "photo sky unavailable" in err[0] and "procedural sky" in err[0]
    assert PS.sky_for(s, lighting(s)) is None and capsys.readouterr().err == ""      # said once per process


def test_a_damaged_map_falls_back_naming_it(tmp_path, monkeypatch, capsys):
    from urbanarena.render.scene3d.conditions import lighting

    (tmp_path / "sunrise.exr").write_bytes(b"damaged")
    monkeypatch.setattr(PS, "hdri_dir", lambda quiet=False: tmp_path)
    s = RenderSettings(style="photo")
    assert PS.sky_for(s, lighting(s)) is None
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "sunrise.exr" in err[0] and "procedural sky" in err[0]


@needs_gl
def test_photo_without_the_package_draws_the_procedural_sky(monkeypatch):
    """No package (the tests' isolated home): the realistic sky program and no SH uniforms -- the photo pixels of
    before (tests/test_photo_atmosphere.py checks them against the realistic sky and its haze)."""
    from urbanarena.render.scene3d.renderer import SceneRenderer

    r = SceneRenderer(small_scene(), RenderSettings(style="photo"))
    assert r._photo_sky is None
    assert "hdri_gain" not in r.prog_sky_draw and all("sh_c" not in p for p in r._lit_programs)


def test_patch_source_fails_loudly_on_changed_shaders():
    from urbanarena.render.scene3d import shaders
    from urbanarena.render.scene3d.realistic_shaders import program_sources

    assert "sh_ambient(n)" in PS.patch_source(shaders.PLAIN_VS, "", "vs")
    assert PS.patch_source("void main() {}") == "void main() {}"
    with pytest.raises(RuntimeError, match="ambient function"):
        PS.patch_source("vec3 f(vec3 n) { return " + PS.AMBIENT_OLD + "; }")
    # the facade: evaluated per vertex (walls are planar), read per fragment
    vs, fs = program_sources("facade", 4)
    pvs, pfs = PS.patch_source(vs, "facade", "vs"), PS.patch_source(fs, "facade", "fs")
    assert "v_sh = sh_ambient(v_normal);" in pvs and "out vec3 v_sh;" in pvs
    assert "in vec3 v_sh;" in pfs and PS.AMBIENT_OLD not in pfs and "sh_ambient(" not in pfs
    with pytest.raises(RuntimeError, match="facade normal"):
        PS.patch_source(vs.replace(PS.FACADE_VS_ANCHOR, ""), "facade", "vs")


@needs_gl
def test_clear_day_sky_drawn_matches_the_photos_colour(monkeypatch):
    """The clear day's cloud-free sky, drawn on the GPU into a panorama, averages the photos' colour in each
    elevation band of :data:`SKY_PROFILE` (measured by ``benchmarks/bench_sky_colour.py``), solid-angle weighted;
    a condition without a profile (dusk) is not graded."""
    from urbanarena.render.scene3d import photo_clouds as PC

    from urbanarena.render.scene3d import photo_atmosphere as PA

    monkeypatch.setattr(PC, "COVER", {})                               # no clouds: the sky's own colour
    monkeypatch.setattr(PA, "FAR_OUT_M", PA.RING_OUT_M)               # no far skyline band: the eye stands in it
    r = _renderer(monkeypatch, _prepared())
    # 400 m out of the small scene: its buildings and the near skyline ring stand below 14 degrees there
    pano = r.render_panorama(0.0, -400.0, width=2048).astype(np.float64)
    h = pano.shape[0]
    e = 90.0 - (np.arange(h) + 0.5) * 180.0 / h
    ungraded = PS.SkyLight("hand", _prepared().shown, r._photo_sky.rot_rad, r._photo_sky.gain, r._photo_sky.sh,
                           r._photo_sky.amb_up)
    far = 0.0
    for (lo, hi), rgb in PS.SKY_PROFILE["day"]:
        twin = 255.0 * PS.sky_pixels(r._photo_sky, PS.band_directions(lo, hi)).mean(axis=0)
        assert np.abs(twin - np.asarray(rgb)).max() < 7.0, (lo, hi, twin, rgb)   # the fit between the bands
        if lo >= 14.0:
            rows = (e >= lo) & (e <= hi)
            wgt = np.cos(np.radians(e[rows]))
            got = (pano[rows].mean(axis=1) * wgt[:, None]).sum(axis=0) / wgt.sum()
            # the panorama's cube-face resampling; the exact GPU-twin match is test_sky_pixels_on_the_gpu_...
            assert np.abs(got - np.asarray(rgb)).max() < 10.0, (lo, hi, got, rgb)
        before = 255.0 * PS.sky_pixels(ungraded, PS.band_directions(lo, hi)).mean(axis=0)
        far = max(far, float(np.abs(before - np.asarray(rgb)).max()))
    assert far > 10.0                                                  # the hand map's own sky is far from it
    from urbanarena.render.scene3d.conditions import lighting

    s = RenderSettings.for_condition("dusk", style="photo")
    dusk = PS.sky_light(_prepared(), s, lighting(s))
    assert np.array_equal(dusk.texture, _prepared().shown * PS.white_balance(
        _prepared().ambient, dusk.amb_up, lighting(s).sun * max(lighting(s).sun_dir[2], 0.0),
        lighting(s).sun_rgb).astype(np.float32))


def test_row_factors_by_hand():
    """Between two bands' middles the factor is linear in elevation; beyond them constant."""
    prof = (((10.0, 20.0), (0, 0, 0)), ((30.0, 50.0), (0, 0, 0)))     # middles 15 and 40 degrees
    k = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    f = PS.row_factors(prof, k, 90)                                   # row i at 89.5 - i degrees
    assert f.shape == (90, 1, 3)
    assert f[50, 0] == pytest.approx([1.0 + 2.0 * 24.5 / 25, 2.0, 3.0 - 2.0 * 24.5 / 25])   # 39.5 deg
    assert f[49, 0] == pytest.approx([3.0, 2.0, 1.0])                                       # 40.5: beyond
    assert f[0, 0] == pytest.approx([3.0, 2.0, 1.0]) and f[89, 0] == pytest.approx([1.0, 2.0, 3.0])
    assert f[62, 0] == pytest.approx([1.0 + 2.0 * 12.5 / 25, 2.0, 3.0 - 2.0 * 12.5 / 25])   # 27.5 deg
