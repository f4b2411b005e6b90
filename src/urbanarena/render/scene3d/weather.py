"""The weather / time-of-day pass of :class:`~urbanarena.render.scene3d.renderer.SceneRenderer`.

Built by the renderer when its settings are not the clear day (:mod:`.conditions` describes the
conditions and the lighting model). It sets the uniforms of the ``WEATHER`` shader variant
(:func:`.shaders.variant`), picks the street lamps that light each view and draws the rain streaks.

Street lamps: the light of a ``street_lamp`` object sits under the centre of its head, read from the
scene's object mesh (the vertices in :data:`.meshes.LAMP_HEAD_RGB` of each lamp's feature index, so it
follows the mesh exactly), at :data:`.meshes.LAMP_LIGHT_Z_M`. Each view passes the
:data:`.conditions.MAX_LAMPS` lamps nearest to the camera within :data:`LAMP_SELECT_M` (ties by
position), so lamps farther than that do not light what the camera sees there (at night, beyond
150 m, what little shows is dark and hazy). The choice depends on the camera position only, so
the six cube faces of a panorama share it.
"""

from __future__ import annotations

import math

import numpy as np

from urbanarena.render.scene3d import shaders
from urbanarena.render.scene3d.conditions import LAMP_RANGE_M, MAX_LAMPS, RAIN_LAYERS_M, lighting
from urbanarena.render.scene3d.meshes import DISPLAY_RGB, LAMP_HEAD_RGB, LAMP_LIGHT_Z_M

#: lamps farther than this from the camera are not passed to the shaders (metres)
LAMP_SELECT_M = 150.0
#: horizontal spacing of rain streak columns at their layer (metres), probability a cell holds one
RAIN_SPACING_M, RAIN_DENSITY = 0.3, 0.35
#: streak length (a drop falling ~7 m/s during a 1/60 s exposure) and width (drop + blur), metres
RAIN_STREAK_LEN_M, RAIN_STREAK_WIDTH_M = 0.12, 0.004
#: horizontal drift of a streak per unit of fall (wind of about 8.5 degrees from the vertical)
RAIN_SLANT = 0.15
RAIN_ALPHA = 0.5
#: photon-transfer noise model at gain 1 (8-bit levels): shot-noise slope K and read noise
NOISE_K, NOISE_READ = 0.05, 0.5


def lamp_lights(meshes) -> np.ndarray:
    """``(L, 3)`` float64 light positions (local metres) of the street lamps in ``meshes`` (a
    :class:`~.meshes.SceneMeshes`): per lamp feature, the mean x, y of its head's vertices and
    :data:`~.meshes.LAMP_LIGHT_Z_M`; sorted by feature index (scene order)."""
    m = meshes.objects
    if m.n_triangles == 0 or m.feature is None:
        return np.zeros((0, 3))
    key = np.asarray(LAMP_HEAD_RGB, np.float64) / 255.0
    hit = np.all(np.abs(m.colours.astype(np.float64) - key) < 2e-3, axis=1)
    feats = m.feature[hit].astype(np.int64)
    if not len(feats):
        return np.zeros((0, 3))
    pos = m.positions[hit].astype(np.float64)
    ids, inv = np.unique(feats, return_inverse=True)
    n = np.bincount(inv).astype(np.float64)
    x = np.bincount(inv, weights=pos[:, 0]) / n
    y = np.bincount(inv, weights=pos[:, 1]) / n
    return np.column_stack([x, y, np.full(len(ids), LAMP_LIGHT_Z_M)])


def nearest_lamps(lights: np.ndarray, eye: np.ndarray, k: int = MAX_LAMPS,
                  max_dist_m: float = LAMP_SELECT_M) -> np.ndarray:
    """The ``k`` lights nearest to ``eye`` (horizontal distance, then x, then y: deterministic) within
    ``max_dist_m``, ``(<= k, 3)``."""
    if not len(lights):
        return lights
    d = np.hypot(lights[:, 0] - eye[0], lights[:, 1] - eye[1])
    order = np.lexsort((lights[:, 1], lights[:, 0], d))
    order = order[d[order] <= max_dist_m][:k]
    return lights[order]


class WeatherPass:
    """Uniforms, lamp selection and rain of one renderer (module docstring)."""

    def __init__(self, renderer):
        self.r = renderer
        self.lighting = L = lighting(renderer.settings)
        self.lights = lamp_lights(renderer.meshes) if L.lamps > 0 else np.zeros((0, 3))
        night = L.lamps > 0
        values = {
            "sun_dir": L.sun_dir, "sun": L.sun, "sun_rgb": L.sun_rgb, "ambient": L.ambient, "amb_rgb": L.ambient_rgb,
            "hemi": L.hemi, "horizon": L.horizon, "zenith": L.zenith, "inv_fog2": L.inv_fog2, "sigma": L.sigma_per_m,
            "lamp_rgb": tuple(c * L.lamps for c in L.lamp_rgb), "lamp_range": LAMP_RANGE_M, "wet": L.wet,
            "n_lamps": 0,
            "lamp_glow": (1.0, 0.95, 0.85) if night else (0.0, 0.0, 0.0),
            "display_glow": tuple(0.85 * c / 255.0 for c in DISPLAY_RGB) if night else (0.0, 0.0, 0.0),
            "window_lit": L.window_lit, "shop_lit": L.shop_lit,
            "window_glow": (L.window_glow * 1.0, L.window_glow * 0.8, L.window_glow * 0.52),
            "sign_ambient": L.sign_ambient, "sign_floor": L.sign_floor, "sign_lit": L.sign_lit,
            "sign_glow": (L.sign_glow, L.sign_glow * 0.97, L.sign_glow * 0.92),
            "overcast": L.overcast, "sun_glow": L.sun_glow, "sky_clear": L.sky_clear,
        }
        for prog in (*renderer._lit_programs, renderer.prog_sky):
            for name, value in values.items():
                if name in prog:
                    prog[name].value = value
        self.rain = None
        if L.rain:
            ctx = renderer.ctx
            prog = renderer._keep(ctx.program(vertex_shader=shaders.SKY_VS, fragment_shader=shaders.RAIN_FS))
            quad = np.array([-1, -1, 1, -1, 1, 1, -1, -1, 1, 1, -1, 1], dtype="f4")
            vao = renderer._keep(ctx.vertex_array(prog, [(renderer._keep(ctx.buffer(quad.tobytes())), "2f", "in_ndc")]))
            hz = np.asarray(L.horizon)
            prog["streak_rgb"].value = tuple(float(c) for c in 0.4 * hz + 0.6 * np.array([0.92, 0.94, 0.96]))
            prog["alpha"].value = RAIN_ALPHA
            prog["density"].value = RAIN_DENSITY
            prog["slant"].value = RAIN_SLANT
            self.rain = (prog, vao)

    def set_lamps(self, eye: np.ndarray) -> None:
        """Pass the lamps lighting a view from ``eye`` to the lit programs."""
        if self.lighting.lamps <= 0:
            return
        sel = nearest_lamps(self.lights, eye)
        arr = np.zeros((MAX_LAMPS, 4), np.float32)
        arr[:len(sel), :3] = sel
        arr[:len(sel), 3] = np.hypot(sel[:, 0] - eye[0], sel[:, 1] - eye[1])  # ascending (nearest_lamps)
        data = arr.tobytes()
        for prog in self.r._lit_programs:
            if "lamps" in prog:
                prog["lamps"].write(data)
            if "n_lamps" in prog:
                prog["n_lamps"].value = len(sel)

    def sensor_noise(self, img: np.ndarray) -> np.ndarray:
        """``img`` ``(H, W, 3)`` uint8 with camera noise: per pixel and channel a normal deviate of variance
        ``G K v + (G r)^2`` (photon-transfer model: shot noise proportional to the level ``v``, read noise
        ``r``, both amplified by the gain ``G`` = ``Lighting.sensor_gain``; ``K`` = :data:`NOISE_K`, ``r`` =
        :data:`NOISE_READ`), rounded and clipped. Deterministic: the generator is seeded with
        ``rain_seed`` and the image size (PCG64), so the same settings give the same pixels."""
        sigma, z = self._noise_tables(img.shape)
        out = img.astype(np.float32)
        out += sigma[img] * z   # the same float32 operations as v + sqrt(...) * z, per level from a table
        np.rint(out, out=out)
        np.clip(out, 0, 255, out=out)
        return out.astype(np.uint8)

    def _noise_tables(self, shape: tuple) -> tuple[np.ndarray, np.ndarray]:
        """``(sigma per 8-bit level (256,), standard normal deviates of shape)``: the deviates depend on the
        settings and the image size only, so they are drawn once per size (at most four sizes kept)."""
        cache = self.__dict__.setdefault("_noise", {})
        got = cache.get(shape)
        if got is None:
            g = self.lighting.sensor_gain
            v = np.arange(256, dtype=np.float32)
            sigma = np.sqrt(g * NOISE_K * v + (g * NOISE_READ) ** 2)
            rng = np.random.default_rng([0x5E4502, int(self.r.settings.rain_seed) & 0xFFFFFFFF, shape[0], shape[1]])
            got = (sigma, rng.standard_normal(shape, dtype=np.float32))
            if len(cache) >= 4:
                cache.pop(next(iter(cache)))
            cache[shape] = got
        return got

    def draw_rain(self, basis: np.ndarray, hfov_deg: float, width: int, height: int, P: np.ndarray) -> None:
        """Blend the rain-streak layers over the bound framebuffer (depth-tested, no depth writes)."""
        if self.rain is None:
            return
        mgl = self.r._mgl
        ctx = self.r.ctx
        prog, vao = self.rain
        tx = math.tan(math.radians(hfov_deg) / 2)
        prog["cam_basis"].write(basis.astype("f4").tobytes())
        prog["tan_half"].value = (tx, tx * height / width)
        prog["width_px"].value = float(width)
        prog["depth_ab"].value = (float(P[2, 2]), float(P[2, 3]))
        fbo = ctx.fbo
        ctx.enable(mgl.BLEND)
        ctx.blend_func = mgl.SRC_ALPHA, mgl.ONE_MINUS_SRC_ALPHA
        ctx.depth_func = "<"
        fbo.depth_mask = False
        seed = int(self.r.settings.rain_seed)
        for i, layer in enumerate(RAIN_LAYERS_M):
            prog["layer_m"].value = layer
            prog["cells"].value = float(max(8, round(2 * math.pi * layer / RAIN_SPACING_M)))
            prog["len_rad"].value = RAIN_STREAK_LEN_M / layer
            prog["width_rad"].value = RAIN_STREAK_WIDTH_M / layer
            prog["seed"].value = (seed * len(RAIN_LAYERS_M) + i) & 0xFFFFFFFF
            vao.render(mgl.TRIANGLES)
        fbo.depth_mask = True
        ctx.disable(mgl.BLEND)


__all__ = ["LAMP_SELECT_M", "WeatherPass", "lamp_lights", "nearest_lamps"]
