"""The ``photo`` style's wall and ground materials (:mod:`urbanarena.render.scene3d.photo_materials`): the layers by
hand (relative luminance, seamless wrap, brick faces of a drawn wall), the stochastic lookup on the GPU against
its Python twin and at one hand-worked position, the period of plain tiling broken, the licence manifest of the
pinned package's files (a hand-made wheel served from 127.0.0.1), photo vs realistic walls and ground,
determinism and the one-line fallback. Hand-made photos only (no fetched assets needed)."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from dataclasses import replace

import numpy as np
import pytest
from PIL import Image

import assets_util as A
from test_render_styles import small_scene
from urbanarena.render.scene3d import photo_materials as PM
from urbanarena.render.scene3d.building_look import rhash
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.render.scene3d.renderer import RenderSettings

needs_gl = pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")


# ------------------------------------------------------------------------------------------ hand-made photos
def drawn_brick_wall() -> tuple[np.ndarray, int]:
    """A 512 x 512 'photo' of standing bricks (30 x 100 px, grey 90, one lighter brick of 120) in mortar (200):
    columns every 40 px from x = 10, rows every 110 px from y = 20 (offset 55 px in odd columns); returns it
    and the number of bricks wholly inside (not touching the border)."""
    img = np.full((512, 512), 200.0)
    inside = 0
    for c in range(13):
        x0 = 10 + 40 * c
        for r in range(-1, 5):
            y0 = 20 + 110 * r + (55 if c % 2 else 0)
            y1, x1 = y0 + 100, x0 + 30
            img[max(y0, 0):min(y1, 512), max(x0, 0):min(x1, 512)] = 120.0 if (c, r) == (2, 1) else 90.0
            inside += y0 > 0 and x0 > 0 and y1 < 512 and x1 < 512
    return img, inside


def smooth_noise(seed: int, n: int = 512) -> np.ndarray:
    """Tileable band-limited noise (random phases below 24 cycles per image), values about 60-200."""
    rng = np.random.default_rng(seed)
    f = np.fft.fftfreq(n) * n
    keep = (np.abs(f)[:, None] < 24) & (np.abs(f)[None, :] < 24)
    spec = (rng.normal(size=(n, n)) + 1j * rng.normal(size=(n, n))) * keep
    x = np.real(np.fft.ifft2(spec))
    return 130 + 35 * x / x.std()


def write_photos(folder) -> None:
    (folder / "materials").mkdir(parents=True, exist_ok=True)
    wall, _ = drawn_brick_wall()
    for name, img in (("brick", wall), ("gravel", smooth_noise(1)), ("grass", smooth_noise(2))):
        Image.fromarray(np.clip(img, 0, 255).astype(np.uint8), "L").save(folder / PM.FILES[name])


# ------------------------------------------------------------------------------------------ layers by hand
def test_rhash_np_is_the_scalar_hash():
    xs = np.array([0, 1, 5, -3, 123456, 2**31 + 7])
    ys = np.array([0, 2, 2, 9, -1, 3])
    got = PM.rhash_np(xs, ys, 71)
    assert [int(v) for v in got] == [rhash(int(x) & PM.M32, int(y) & PM.M32, 71) for x, y in zip(xs, ys)]


def test_relative_luminance_by_hand():
    img = np.full((4, 4), 64.0)
    img[0, 0] = 96.0                           # mean 66, so 96 -> 128 * 96 / 66 = 186.2 -> 186; 64 -> 124.1 -> 124
    out = PM.relative(img)
    assert out.dtype == np.uint8 and out[0, 0] == 186 and (out.ravel()[1:] == 124).all()
    assert (PM.relative(np.full((2, 2), 10.0)) == 128).all()
    assert PM.relative(np.array([[0.0, 1000.0]]))[0, 1] == 255            # clipped


def test_make_tileable_wraps_without_a_seam_and_keeps_the_middle():
    rng = np.random.default_rng(5)
    a = np.cumsum(np.cumsum(rng.normal(size=(64, 64)), 0), 1)    # a rough ramp: its edges do not meet
    t = PM.make_tileable(a)
    interior = np.abs(np.diff(t, axis=1)).mean()
    seam_before = np.abs(a[:, 0] - a[:, -1]).mean()
    seam_after = np.abs(t[:, 0] - t[:, -1]).mean()
    assert seam_before > 5 * interior and seam_after < 2.5 * interior
    # at the centre the window is sin^2(pi 32.5 / 64)^2 = 0.9988: the blend is the image itself there
    w = np.sin(np.pi * 32.5 / 64) ** 4
    want = a.mean() + (w * (a[32, 32] - a.mean()) + (1 - w) * (a[0, 0] - a.mean())) / np.hypot(w, 1 - w)
    assert t[32, 32] == pytest.approx(want) and abs(t.mean() - a.mean()) < 0.05 * a.std()


def test_brick_faces_of_a_drawn_wall():
    wall, inside = drawn_brick_wall()
    faces = PM.brick_faces(wall)
    assert len(faces) == inside
    # inset: round(0.1 * 100) = 10 rows off each end, round(0.25 * 30) = 8 columns off each side, then turned
    assert {f.shape for f in faces} == {(30 - 16, 100 - 20)}
    assert sorted({float(f.mean()) for f in faces}) == [90.0, 120.0]
    atlas = PM.brick_atlas(faces)
    cw, ch = PM.TEX_PX // PM.BRICK_COLS, PM.TEX_PX // PM.BRICK_ROWS
    assert atlas.shape == (512, 512) and (cw, ch) == (128, 32)
    assert np.allclose(atlas[:ch, :cw], 90.0) and atlas.min() >= 90.0 and atlas.max() <= 120.0
    with pytest.raises(PM.MaterialAssetError, match="no whole bricks"):
        PM.brick_atlas([])


def test_contrast_gains_by_hand():
    # 2 x 2 blocks of 100 / 200 (std 50) plus a +-20 pixel checker inside each block (gone at level 1):
    # level 0 std sqrt(50^2 + 20^2), level 1 std 50, level 2 one texel
    block = np.kron(np.array([[100.0, 200.0], [200.0, 100.0]]), np.ones((2, 2)))
    layer = block + 20.0 * np.array([[1, -1, 1, -1], [-1, 1, -1, 1]] * 2)
    g = PM.contrast_gains(layer, keep=0.99, levels=4)
    assert g[0] == 1.0 and g[1] == pytest.approx(np.sqrt(2900.0) * 0.99 / 50.0) and g[2] == g[3] == 1.0
    assert PM.contrast_gains(layer, keep=0.5, levels=2)[1] == 1.0          # never lowers a level's contrast


def test_gain_line_by_hand():
    assert PM.gain_fit(np.array([1.0, 1.0, 2.0, 4.0, 8.0])) == pytest.approx((1.0, 1.0))   # log2: 1, 2, 3 at 2, 3, 4
    assert PM.gain_fit(np.ones(10)) == (PM.MIP_LEVELS, 0.0)                              # never raised
    assert PM.gain_fit(np.array([1.0, 1.0, 1.0, 2.0])) == pytest.approx((2.0, 1.0))       # one level: through it


def test_missing_or_wrong_photo_is_named(tmp_path):
    write_photos(tmp_path)
    (tmp_path / PM.FILES["grass"]).unlink()
    with pytest.raises(PM.MaterialAssetError, match="grass.png"):
        PM.build_layers(tmp_path)
    Image.new("L", (256, 256)).save(tmp_path / PM.FILES["grass"])
    with pytest.raises(PM.MaterialAssetError, match="256x256 pixels"):
        PM.build_layers(tmp_path)


# ------------------------------------------------------------------------------------------ the lookup
def _gpu_ratio(layers, gains, layer, origin, step_q, size, seed=71):
    """``photo_ratio`` of the shader at the pixel centres ``origin + (i + 0.5, j + 0.5) step_q`` of a
    ``size`` x ``size`` float framebuffer."""
    import moderngl

    from urbanarena.render.scene3d import realistic_shaders as RS
    from urbanarena.render.scene3d.context import current, gl_context

    ctx = gl_context()
    with current(ctx):
        n = layers.shape[0]
        tex = ctx.texture_array((layers.shape[2], layers.shape[1], n), 1, layers.tobytes(), alignment=1)
        tex.build_mipmaps()
        tex.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
        vs = "#version 330\nin vec2 in_ndc;\nvoid main() { gl_Position = vec4(in_ndc, 0.0, 1.0); }\n"
        fs = ("#version 330\n" + RS.NOISE.replace("float gridline", PM.LOOKUP_GLSL + "float gridline")
              + "uniform vec2 origin;\nuniform float step_q;\nuniform float layer;\nout vec4 f;\n"
              + "void main() {\n    vec2 q = origin + gl_FragCoord.xy * step_q;\n"
              + f"    f = vec4(photo_ratio(layer, q, {seed}u), 0.0, 0.0, 1.0);\n}}\n")
        prog = ctx.program(vertex_shader=vs, fragment_shader=fs)
        prog["photo_mat"].value = 5
        prog["photo_gain"].write(np.ascontiguousarray(gains, "f4").tobytes())
        prog["origin"].value = tuple(float(v) for v in origin)
        prog["step_q"].value = float(step_q)
        prog["layer"].value = float(layer)
        quad = ctx.buffer(np.array([-1, -1, 1, -1, 1, 1, -1, -1, 1, 1, -1, 1], "f4").tobytes())
        va = ctx.vertex_array(prog, [(quad, "2f", "in_ndc")])
        col = ctx.texture((size, size), 4, dtype="f4")
        fb = ctx.framebuffer([col])
        fb.use()
        ctx.viewport = (0, 0, size, size)
        tex.use(5)
        va.render()
        out = np.frombuffer(fb.read(components=4, dtype="f4"), "f4").reshape(size, size, 4)[..., 0].copy()
        for o in (va, quad, prog, fb, col, tex):
            o.release()
    return out


@needs_gl
def test_gpu_lookup_is_the_twin():
    """Half a texel per pixel (mip level 0, bilinear): the shader's stochastic lookup is the Python twin's."""
    layers = np.stack([PM.relative(smooth_noise(s)) for s in (3, 4, 5)])
    kit = PM.kit_from_layers(layers)
    origin, step, size = np.array([3.25, -1.5]), 1.0 / 1024, 192   # 0.19 tiles: across triangle-grid edges
    gpu = _gpu_ratio(layers, kit.gain_lines, 1, origin, step, size)
    jj, ii = np.mgrid[0:size, 0:size]
    q = np.stack([origin[0] + (ii + 0.5) * step, origin[1] + (jj + 0.5) * step], -1)
    twin = PM.stochastic_ratio(layers[1], q, 71)
    assert twin.std() > 0.1
    assert np.abs(gpu - twin).max() < 0.02 and np.abs(gpu - twin).mean() < 0.004


@needs_gl
def test_gpu_lookup_at_a_hand_worked_position():
    """Next to a vertex of the triangle grid its weight is all but 1: at skewed (5.001, 2.001) the cell's vertex
    (5, 2) has barycentric weight 0.998 (sharpened: 1 - 2e-9). Its hash gives the offset and turn; on the ramp
    layer ``(i + j) mod 256`` bilinear filtering returns ``x + y`` of the texel position."""
    ramp = ((np.arange(512)[None, :] + np.arange(512)[:, None]) % 256).astype(np.uint8)
    layers = np.stack([ramp, ramp, ramp])
    gy = 2.001 / 1.15470054
    q = np.array([5.001 + 0.57735027 * gy, gy]) / PM.HEX_K
    h = rhash(5, 2, 71)
    o = np.array([(h & 1023) / 1024, ((h >> 10) & 1023) / 1024])
    k = (h >> 20) & 3
    uv = {0: q, 1: np.array([-q[1], q[0]]), 2: -q, 3: np.array([q[1], -q[0]])}[k] + o
    x, y = (uv % 1.0) * 512 - 0.5                          # texel position (REPEAT wrapping)
    assert 0 <= x < 511 and 0 <= y < 511 and (np.floor(x) + np.floor(y)) % 256 < 254   # no wrap of the ramp
    want = ((x + y) % 256) / PM.MEAN_LEVEL
    no_gain = np.array([[PM.MIP_LEVELS, 0.0]] * 3, np.float32)
    gpu = _gpu_ratio(layers, no_gain, 0, q - 0.5 / 1024, 1.0 / 1024, 1)[0, 0]
    assert gpu == pytest.approx(want, abs=1.5 / 255)
    assert PM.stochastic_ratio(ramp, q[None], 71)[0] == pytest.approx(want, abs=1e-6)


def test_stochastic_tiling_breaks_the_period():
    """Autocorrelation at one tile's shift (32 samples a tile, 12 x 12 tiles): 1 for plain tiling (the same
    texels again), far lower for the stochastic tiling; computed with numpy's corrcoef on the twin's values."""
    layer = PM.relative(smooth_noise(7))
    n = 12 * 32
    jj, ii = np.mgrid[0:n, 0:n]
    q = np.stack([(ii + 0.5) / 32, (jj + 0.5) / 32], -1)

    def corr(img):
        return np.corrcoef(img[:, :-32].ravel(), img[:, 32:].ravel())[0, 1]

    plain, stoch = PM.plain_ratio(layer, q), PM.stochastic_ratio(layer, q, 71)
    assert corr(plain) > 0.999 and corr(stoch) < 0.25
    assert abs(stoch.std() / plain.std() - 1) < 0.2           # the blend keeps the photo's contrast
    again = PM.stochastic_ratio(layer, q, 71)
    assert np.array_equal(stoch, again) and not np.allclose(stoch, PM.stochastic_ratio(layer, q, 72))


def test_patch_source_touches_only_walls_and_ground():
    from urbanarena.render.scene3d import realistic_shaders as RS

    for name in ("sky", "sky_tex", "foliage", "shade", "sign"):
        fs = RS.program_sources(name, 8)[1]
        assert PM.patch_source(fs, name) == fs
    fs = PM.patch_source(RS.program_sources("ground", 8, 1)[1], "ground")
    # asphalt, paving, setts and grass, in the one-material branches and in the all-materials one
    assert fs.count("photo_grain(") == 8 + 1 and "0.22 * grain * fine" not in fs   # + its definition
    assert "photo_mat" in PM.patch_source(RS.program_sources("facade", 8)[1], "facade")
    with pytest.raises(RuntimeError, match="facade albedo"):
        PM.patch_source(RS.program_sources("facade", 8)[1].replace("v_amp.x * (tone", "v_amp.x*(tone"), "facade")


# ------------------------------------------------------------------------------------------ the package
def fake_wheel(tmp_path):
    """A wheel with the pinned scikit-image members (hand-made photos) and the registry entry serving it."""
    from urbanarena.render.assets.registry import SCIKIT_IMAGE

    photos = tmp_path / "photos"
    write_photos(photos)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name in ("brick", "gravel", "grass"):
            z.write(photos / PM.FILES[name], f"skimage/data/{name}.png")
        z.writestr("skimage/data/_fetchers.py", "# brick(): CC0Textures, CC0\n")
        z.writestr("skimage/data/camera.png", b"not listed")
        z.writestr("scikit_image-0.26.0.dist-info/LICENSE.txt", "BSD-3-Clause\n")
    data = buf.getvalue()
    return data, lambda url: replace(SCIKIT_IMAGE, url=url, sha256=hashlib.sha256(data).hexdigest(),
                                     size_bytes=len(data))


def test_every_material_file_has_its_licence_in_the_manifest(tmp_path):
    from urbanarena.render.assets import fetch as F

    data, entry = fake_wheel(tmp_path)
    with A.Server({"/ski.whl": data}) as srv:
        pkg = entry(srv.url("/ski.whl"))
        rep = F.fetch_package(pkg, root=tmp_path / "assets", use_clients=False)
    rows = {r["file"]: r for r in json.loads((tmp_path / "assets" / "licences.json").read_text())["files"]}
    key = pkg.key
    assert key == "scikit-image-0.26.0" and rep.files == 5
    for name in ("brick", "gravel", "grass"):
        r = rows[f"{key}/materials/{name}.png"]
        assert r["licence"] == "CC0-1.0" and r["package"] == "scikit-image" and r["authors"]
    assert rows[f"{key}/_fetchers.py"]["licence"] == rows[f"{key}/LICENSE.txt"]["licence"] == "BSD-3-Clause"
    assert set(rows) == {f"{key}/{f}" for f in ("materials/brick.png", "materials/gravel.png",
                                                "materials/grass.png", "_fetchers.py", "LICENSE.txt")}
    kit = PM.load_material_kit(rep.directory)
    assert kit.layers.shape == (3, 512, 512) and kit.bricks == drawn_brick_wall()[1]
    assert kit.identity == PM.load_material_kit(rep.directory).identity


def _render(scene, style, kit, monkeypatch, view=(0.0, -4.0, 20.0, -5.0, 90.0, 320, 180)):
    from urbanarena.render.scene3d import photo_atmosphere, photo_building_detail
    from urbanarena.render.scene3d.renderer import SceneRenderer

    monkeypatch.setattr(photo_atmosphere, "ENABLED", False)   # haze, skyline, rain: test_photo_atmosphere.py
    monkeypatch.setattr(photo_building_detail, "ENABLED", False)   # cornices etc.: test_photo_building_detail.py
    monkeypatch.setattr(PM, "photo_materials", lambda quiet=False: kit)
    return SceneRenderer(scene, RenderSettings(style=style)).render_view(*view)


@needs_gl
def test_photo_walls_and_ground_differ_from_realistic_and_are_deterministic(tmp_path, monkeypatch):
    write_photos(tmp_path)
    kit = PM.load_material_kit(tmp_path)
    scene = small_scene()
    real = _render(scene, "realistic", None, monkeypatch)
    plain_photo = _render(scene, "photo", None, monkeypatch)
    photo = _render(scene, "photo", kit, monkeypatch)
    again = _render(scene, "photo", kit, monkeypatch)
    assert np.array_equal(real, plain_photo)                  # without the materials: the realistic pixels
    assert np.array_equal(photo, again)
    diff = np.abs(photo.astype(int) - real.astype(int)).max(axis=2)
    # looking 20 degrees right of north, 5 down: building b1's plaster wall (y = 10, windows in it) fills the
    # view down to row 96 but for the sky right of its end, which is untouched; the pavement and road below
    sky = (real[:3].astype(int).sum(axis=2) > 3 * 150) & (real[:3, :, 2] > real[:3, :, 0])
    assert sky.any() and (diff[:3][sky] == 0).all()
    assert (diff[5:60, :280] > 4).mean() > 0.12               # wall (measured 0.2: grain, streaks; not windows)
    assert (diff[100:] > 4).mean() > 0.5                      # ground (measured 0.72)


def test_photo_materials_fall_back_in_one_line(tmp_path, monkeypatch, capsys):
    from urbanarena.render.assets import fetch as F

    monkeypatch.setenv("URBANARENA_HOME", str(tmp_path))
    monkeypatch.setattr(PM, "_LOADED", {})

    def no_download(*a, **k):
        raise AssertionError("the photo style must not download")

    monkeypatch.setattr(F, "fetch_package", no_download)
    assert PM.photo_materials(quiet=True) is None and capsys.readouterr().err == ""
    assert PM.photo_materials() is None
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "photo materials unavailable" in err[0] and "realistic walls and ground" in err[0]
    assert PM.photo_materials() is None and capsys.readouterr().err == ""     # said once per process
