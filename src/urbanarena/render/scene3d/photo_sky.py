"""The ``photo`` style's sky from a real HDRI and its image-based ambient light (issue 24 item 3).

Photo style only (and only while :data:`.photo_atmosphere.ENABLED`): ``flat`` and ``realistic`` never reach this
module. The maps are the six CC0 Poly Haven HDRIs (Greg Zaal) of the pinned Debian ``blender-data`` package
(equirectangular OpenEXR, 1024 x 512), read in float by :func:`.hdri.read_exr`.

* **Which map** (:func:`hdri_name`): a clear sky by day takes ``sunrise`` (the one daytime map whose upper
  hemisphere is open sky: ``city`` has towers up to about 50 degrees and a crane, ``courtyard`` a roof, ``forest``
  a canopy); dusk ``sunset``; night ``night``. Overcast weathers (``cloudy``, ``rain``, ``fog``) keep the
  procedural CIE overcast sky of the realistic style: the maps hold no overcast sky, and a desaturated clear sky
  would still show a sun's glow; their ambient light comes from that CIE sky (:func:`overcast_env`).
* **Preparing a map**: :mod:`.photo_sky_map` (the sun found, the objects standing in the sky masked and
  filled).
* **Turning** (:func:`sky_light`): the map is turned about the vertical so that its sun's azimuth is the
  scene's (:func:`.conditions.lighting`'s ``sun_dir``); night maps are not turned. The elevation cannot be
  matched by turning: ``sunrise``'s sun stands at 8.3 degrees while the day's scene sun stands at 40. The sky
  drawn keeps the map's sun disc only when its elevation is within :data:`SUN_SHOW_DEG` of the scene sun's (else
  the drawn sun would contradict the shadows).
* **Exposure** (consistent with the realistic pipeline's ``x^2`` linear light, exposure and ACES curve,
  :mod:`.realistic_shaders`): the map is scaled by ``g = (A_up + S_up)^2 pi / (E_up + E_sun sin e)``: ``E_up``
  the map's sky irradiance on an upward normal (its sun's disc filled out), ``E_sun`` its sun's normal
  irradiance (what the disc holds above the filled sky) as if it stood at the scene sun's elevation ``e``, and
  ``A_up = ambient * Y(amb_rgb)``, ``S_up = sun * sin e`` the scene's ambient and sun light on an upward normal:
  a white card facing up under the map's sky and sun would look as bright as under the scene's (``sunrise``: the
  sun's normal irradiance is 5.1 x the sky's horizontal one, 77 % of the light at 40 degrees);
  the sky pixel is ``sqrt(ACES(exposure * g * L))``, then the photo haze (below).
  Sampled on the GPU from a float texture (1024 x 256, the upper hemisphere) with mipmaps and ``textureGrad``
  (the longitude's derivative wrapped at the seam, so the seam column does not fall to the coarsest level).
* **Haze and reflections**: the sky's haze (:func:`.photo_atmosphere.sky_haze_keep`) runs into the map's own low
  sky in the same azimuth (blurred: :data:`HORIZON_LOD`), so a sunset stays warm towards the sun and the map's
  ground never shows; the lit programs' horizon colour (their haze) and zenith colour (reflected by glass and wet
  ground) are the map's own, tone-mapped and averaged over azimuth at elevations 1-4 and 75-90 degrees.
* **Grade** (:func:`grade_factors`): the clear day's drawn sky is scaled per channel and elevation so that its
  cloud-free bands 3-60 degrees up match the colours of the shared 360-degree photos' sky (:data:`SKY_PROFILE`); the
  ambient light is not graded (it keeps the map's physical light).
* **White balance** (:func:`white_balance`): the sky drawn and the ambient light are multiplied per channel by
  ``(Y(T) / T)^WB_STRENGTH``, ``T`` the linear light on an upward surface (the map's sky plus the scene's sun in
  its colour), as a camera's automatic white balance would, in part.
* **Ambient light**: the realistic ``amb_rgb * ambient * (1 - hemi + hemi n_z)`` is replaced, in every lit
  photo program (facades, ground, foliage and photo trees, the plain program of people, vehicles, street objects
  and the skyline ring), by ``A_up sqrt(E(n))`` per channel, ``E`` the 9-coefficient SH irradiance
  (:mod:`.sh_irradiance`) of the ambient environment: the prepared sky (sun removed) above the horizon and, below,
  ground bounce of uniform radiance ``GROUND_ALBEDO / pi`` times the ground's linear irradiance (sky plus the
  scene's sun, ``((A_up + sun sin e) / A_up)^2`` times the sky's), normalized so that ``Y(sqrt(E(up))) = 1``:
  an upward surface keeps the realistic ambient luminance, the direction and colour come from the sky. The
  square root takes the linear irradiance ratio to the pipeline's display-like light values (light multiplies
  display albedo and the tone mapper squares). The sun's aureole is clipped at :data:`AMBIENT_CLIP` x the
  median luminance and the colour pulled towards grey by :data:`AMBIENT_SATURATION`. The facade program evaluates
  it per vertex (:data:`FACADE_VS_ANCHOR`: walls are planar), the plain program per vertex as before, the others
  per fragment. The sun's direct light and shadows are unchanged.
* **Without the package** (not fetched or a map unreadable): one line on stderr (once per process) and the photo
  style's procedural sky and hemispherical ambient, the pixels of before.

Constants are ours (chosen by looking at the maps), not measured.
"""

from __future__ import annotations

import math
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from urbanarena.render.scene3d import sh_irradiance as SH
from urbanarena.render.scene3d.photo_sky_map import (AMBIENT_CLIP, LUMA, PreparedMap, fill_masked, mirror_fill,
                                                     object_mask, prepare)

PACKAGE = "blender-data"
#: bumped when the preparation or the shaders of this module change pixels (part of the photo render identity)
PHOTO_SKY_VERSION = "photo-sky-4"
#: time of day -> map (overcast weathers keep the procedural sky)
HDRI_FOR_TIME = {"day": "sunrise", "dusk": "sunset", "night": "night"}
OVERCAST_WEATHERS = ("cloudy", "rain", "fog")
SUN_SHOW_DEG = 10.0
#: the white balance is applied by this power (a camera's automatic white balance corrects only part of a
#: coloured light: at full strength the sunset map's blue sky turned grey-orange)
WB_STRENGTH = 0.5
#: elevation bands (degrees) of the map's horizon and zenith colours (:class:`SkyLight`)
HORIZON_BAND_DEG, ZENITH_BAND_DEG = (1.0, 4.0), (75.0, 90.0)
#: the sky's haze runs into the map's own sky at this elevation (degrees) in the same azimuth, read at this mip
#: level (1024 x 256 -> 64 x 16: 5.6-degree texels, so a blur of the low sky)
HORIZON_SAMPLE_DEG, HORIZON_LOD = 2.5, 4
GROUND_ALBEDO = 0.2
#: share of the irradiance's colour kept (a street's shaded walls also get light bounced off sunlit walls and
#: ground, which the map does not hold: without this they turn lavender under a blue sky)
AMBIENT_SATURATION = 0.5
#: the clear day's cloud-free sky by elevation band (degrees; display sRGB 0..255), as the shared consumer
#: 360-degree photos show it (``benchmarks/bench_sky_colour.py``: the bluish, cloud-free pixels of the four geovisio
#: panoramas in each band). The ``sunrise`` map, exposed for the scene, gives a paler, greyer sky (20-60 degrees:
#: (112, 149, 184) against the photos' (136, 189, 240)): the map's morning sky is not a midday one, and the camera
#: that took the photos renders skies saturated. :func:`grade_factors` fits the drawn sky to it per channel and band
#: (ours: the target is one set of photos, one camera).
SKY_PROFILE = {"day": (((3.0, 8.0), (185.2, 207.8, 228.9)), ((8.0, 14.0), (179.1, 212.7, 240.8)),
                       ((14.0, 20.0), (158.6, 206.4, 245.5)), ((20.0, 30.0), (136.2, 193.9, 243.8)),
                       ((30.0, 45.0), (146.6, 195.1, 240.3)), ((45.0, 60.0), (126.2, 182.2, 238.2)))}
#: the map texture's unit (the realistic sky's is 1, the trees' atlas 2 or above; .renderer)
SKY_UNIT = 1


@dataclass(frozen=True)
class SkyLight:
    """What a photo renderer needs from this module for one condition.

    Attributes:
        name: the map (``None``: the procedural overcast sky is drawn, only the ambient is image-based).
        texture: the sky drawn, ``(H, W, 3)`` float32 upper hemisphere (``None`` with ``name``).
        rot_rad: the map longitude added to a world azimuth. gain: ``g`` of the module docstring times the
        exposure. sh: ``(9, 3)`` irradiance coefficients normalized as in the module docstring. amb_up: ``A_up``.
        horizon, zenith: the map's display colours (0..1) averaged over azimuth at elevations 1-4 and 75-90
        degrees (:func:`band_colour`), which replace the condition's in the haze and the reflections (``None``
        with the procedural sky).
        cloud_cover, cloud_lit, cloud_base, sun_dir: the clouds drawn into the map's sky
        (:mod:`.photo_clouds`; cover 0: none) and the scene's unit sun direction (world).
    """

    name: str | None
    texture: np.ndarray | None
    rot_rad: float
    gain: float
    sh: np.ndarray
    amb_up: float
    horizon: tuple[float, float, float] | None = None
    zenith: tuple[float, float, float] | None = None
    cloud_cover: float = 0.0
    cloud_lit: tuple[float, float, float] = (0.0, 0.0, 0.0)
    cloud_base: tuple[float, float, float] = (0.0, 0.0, 0.0)
    sun_dir: tuple[float, float, float] = (0.0, 0.0, 1.0)


# ---------------------------------------------------------------------------------------------- the light
def overcast_env(zenith_rgb, height: int = 64, width: int = 128) -> np.ndarray:
    """The CIE standard overcast sky (:mod:`.conditions`: ``L(e) = L_z (1 + 2 sin e) / 3``) in the linear
    colour of ``zenith_rgb`` (display 0..1, squared), upper hemisphere ``(height, width, 3)``."""
    e = math.pi / 2 - (np.arange(height) + 0.5) * (math.pi / 2) / height
    lz = np.asarray(zenith_rgb, np.float64) ** 2
    return np.broadcast_to(((1 + 2 * np.sin(e)) / 3)[:, None, None] * lz, (height, width, 3)).copy()


def ambient_coeffs(sky_up: np.ndarray, rot_rad: float, amb_up: float, sun_up: float, sun_rgb) -> np.ndarray:
    """Normalized irradiance coefficients ``(9, 3)`` (module docstring) of the upper hemisphere ``sky_up``
    ``(H, W, 3)`` (linear), turned by ``rot_rad``, over ground bounce. ``amb_up``: the scene's ambient light on an
    upward normal; ``sun_up``: its sun's on one (``sun * sin(elevation)``, 0 without); ``sun_rgb``: display
    0..1."""
    h, w = sky_up.shape[:2]
    env = np.zeros((2 * h, w, 3))
    env[:h] = sky_up
    sky_sh = SH.irradiance_coeffs(SH.sh_project(env, rot_rad))
    e_up = SH.sh_irradiance(sky_sh, np.array([0.0, 0.0, 1.0]))            # the sky's, (3,)
    ratio = ((amb_up + sun_up) / max(amb_up, 1e-9)) ** 2                    # ground's linear light / the sky's
    sun_lin = np.asarray(sun_rgb, np.float64) ** 2
    sun_lin = sun_lin / max(float(sun_lin @ LUMA), 1e-9)
    ground = GROUND_ALBEDO / math.pi * (e_up + float(e_up @ LUMA) * (ratio - 1.0) * sun_lin)
    env[h:] = ground
    c = SH.irradiance_coeffs(SH.sh_project(env, rot_rad))
    grey = (c @ LUMA)[:, None] * np.ones((1, 3))
    c = grey + AMBIENT_SATURATION * (c - grey)        # E(n)'s colour pulled towards its grey, for every n
    top = np.sqrt(np.maximum(SH.sh_irradiance(c, np.array([0.0, 0.0, 1.0])), 0.0))
    return c / max(float(top @ LUMA), 1e-12) ** 2


def white_balance(sky_up: np.ndarray, amb_up: float, sun_up: float, sun_rgb) -> np.ndarray:
    """Per-channel factors ``(3,)`` of the camera's white balance (module docstring): ``(Y(T) / T)^WB_STRENGTH`` of
    the linear light ``T`` on an upward surface, the sky's irradiance (of ``sky_up``, upper hemisphere ``(H, W, 3)``) plus
    the scene's sun in the same units (``((amb_up + sun_up) / amb_up)^2 - 1`` times the sky's luminance, in the
    colour ``sun_rgb^2``)."""
    h, w = sky_up.shape[:2]
    env = np.zeros((2 * h, w, 3))
    env[:h] = sky_up
    e_up = SH.sh_irradiance(SH.irradiance_coeffs(SH.sh_project(env)), np.array([0.0, 0.0, 1.0]))
    ratio = ((amb_up + sun_up) / max(amb_up, 1e-9)) ** 2
    sun_lin = np.asarray(sun_rgb, np.float64) ** 2
    total = e_up + float(e_up @ LUMA) * (ratio - 1.0) * sun_lin / max(float(sun_lin @ LUMA), 1e-9)
    return (float(total @ LUMA) / np.maximum(total, 1e-12)) ** WB_STRENGTH


def sky_light(prepared: PreparedMap | None, settings, light) -> SkyLight:
    """The :class:`SkyLight` of a condition (``light``: :func:`.conditions.lighting` of ``settings``) from its
    prepared map (``None`` for the overcast weathers: the CIE sky's ambient only)."""
    from urbanarena.render.scene3d.realistic_shaders import EXPOSURE

    amb_up = float(light.ambient * (np.asarray(light.ambient_rgb) @ LUMA))
    sun_elev = math.degrees(math.asin(max(-1.0, min(1.0, light.sun_dir[2]))))
    sun_up = light.sun * max(math.sin(math.radians(sun_elev)), 0.0)
    if prepared is None:
        env = overcast_env(light.zenith)
        env = env * white_balance(env, amb_up, sun_up, light.sun_rgb)
        return SkyLight(None, None, 0.0, 0.0, ambient_coeffs(env, 0.0, amb_up, sun_up, light.sun_rgb), amb_up)
    rot = 0.0
    if prepared.sun_lon_deg is not None and light.sun > 0:
        scene_az = math.degrees(math.atan2(light.sun_dir[0], light.sun_dir[1]))
        rot = math.radians((prepared.sun_lon_deg - scene_az) % 360.0)
    far = prepared.sun_elev_deg is not None and abs(prepared.sun_elev_deg - sun_elev) > SUN_SHOW_DEG
    wb = white_balance(prepared.ambient, amb_up, sun_up, light.sun_rgb).astype(np.float32)
    shown = (prepared.shown_no_sun if far else prepared.shown) * wb
    ambient = prepared.ambient * wb
    sh = ambient_coeffs(ambient, rot, amb_up, sun_up, light.sun_rgb)
    sky = prepared.shown_no_sun * wb
    h, w = sky.shape[:2]
    env = np.zeros((2 * h, w, 3))
    env[:h] = sky
    e_up = float(SH.sh_irradiance(SH.irradiance_coeffs(SH.sh_project(env)), np.array([0.0, 0.0, 1.0])) @ LUMA)
    e_all = e_up + prepared.sun_normal * max(math.sin(math.radians(sun_elev)), 0.0)
    gain = EXPOSURE * (amb_up + sun_up) ** 2 * math.pi / max(e_all, 1e-12)
    shown = np.ascontiguousarray(shown, np.float32)
    from urbanarena.render.scene3d import photo_clouds as PC

    cover = float(PC.COVER.get(settings.time_of_day, 0.0)) if light.sun > 0 else 0.0
    profile = SKY_PROFILE.get(settings.time_of_day) if light.sun > 0 else None
    if profile is not None:
        probe = SkyLight(prepared.name, shown, rot, gain, sh, amb_up)
        shown = np.ascontiguousarray(shown * grade_factors(probe, profile).astype(np.float32), np.float32)
    rows = slice(int(shown.shape[0] * 1 / 3), int(shown.shape[0] * 7 / 9))     # elevations 20-60 degrees
    sky_lum = float((shown[rows].astype(np.float64) @ LUMA).mean()) * gain
    lit, base = PC.cloud_colours(amb_up, sun_up, light.sun_rgb, wb, EXPOSURE, sky_lum)
    return SkyLight(prepared.name, shown, rot, gain, sh, amb_up, band_colour(shown, gain, *HORIZON_BAND_DEG),
                    band_colour(shown, gain, *ZENITH_BAND_DEG), cover, lit, base,
                    tuple(float(v) for v in light.sun_dir))


def band_directions(lo_deg: float, hi_deg: float, n_elev: int = 24, n_az: int = 96) -> np.ndarray:
    """Unit directions ``(n_elev * n_az, 3)`` (world: x east, y north, z up) spread evenly over the solid angle
    between elevations ``lo_deg`` and ``hi_deg`` (even in ``sin e`` and in azimuth)."""
    s = np.linspace(math.sin(math.radians(lo_deg)), math.sin(math.radians(hi_deg)), n_elev + 1)
    s = (s[:-1] + s[1:]) / 2
    az = (np.arange(n_az) + 0.5) * 2 * math.pi / n_az
    c = np.sqrt(1 - s * s)
    return np.stack([np.outer(c, np.sin(az)), np.outer(c, np.cos(az)), np.outer(s, np.ones_like(az))],
                    axis=-1).reshape(-1, 3)


def row_factors(profile, k: np.ndarray, rows: int) -> np.ndarray:
    """Factors ``(rows, 1, 3)`` of an upper-hemisphere texture's rows (row ``i`` at elevation ``90 - (i + 0.5) 90 /
    rows`` degrees) from the per-band factors ``k`` ``(B, 3)`` of ``profile`` (:data:`SKY_PROFILE`): linear in
    elevation between the bands' middles, constant beyond the first and the last."""
    e = 90.0 - (np.arange(rows) + 0.5) * 90.0 / rows
    mids = np.array([(lo + hi) / 2 for (lo, hi), _ in profile])
    return np.stack([np.interp(e, mids, k[:, c]) for c in range(3)], -1)[:, None, :]


def grade_factors(sky: SkyLight, profile, iterations: int = 10) -> np.ndarray:
    """Row factors ``(H, 1, 3)`` for ``sky.texture`` ``(H, W, 3)`` so that the cloud-free sky drawn
    (:func:`sky_pixels`, haze included) averages each band's colour of ``profile`` (:data:`SKY_PROFILE`; solid-angle
    weighted), by fixed-point steps ``k_b <- k_b (target_b / drawn_b)^2`` per band and channel (the display is near
    the square root of linear light) with :func:`row_factors` between the bands."""
    dirs = [band_directions(lo, hi, 8, 96) for (lo, hi), _ in profile]
    t = np.array([rgb for _, rgb in profile], np.float64) / 255.0
    k = np.ones((len(profile), 3))
    h = sky.texture.shape[0]
    for _ in range(iterations):
        tex = (sky.texture * row_factors(profile, k, h)).astype(np.float32)
        probe = SkyLight(sky.name, tex, sky.rot_rad, sky.gain, sky.sh, sky.amb_up)
        got = np.array([sky_pixels(probe, d).mean(axis=0) for d in dirs])
        k = k * (t / np.maximum(got, 1e-6)) ** 2
    return row_factors(profile, k, h)


def tone(x: np.ndarray) -> np.ndarray:
    """The realistic pipeline's ACES fit and display square root of linear, exposed values (twin of
    :func:`sky_fs`'s last lines)."""
    x = np.maximum(np.asarray(x, np.float64), 0.0)
    return np.sqrt(np.clip((x * (2.51 * x + 0.03)) / (x * (2.43 * x + 0.59) + 0.14), 0.0, 1.0))


def band_colour(sky_up: np.ndarray, gain: float, lo_deg: float, hi_deg: float) -> tuple[float, float, float]:
    """Mean display colour (0..1, area-weighted) of the upper-hemisphere map ``sky_up`` ``(H, W, 3)`` between
    elevations ``lo_deg`` and ``hi_deg``, tone-mapped at ``gain``."""
    h = sky_up.shape[0]
    e = 90.0 - (np.arange(h) + 0.5) * 90.0 / h
    rows = (e >= lo_deg) & (e <= hi_deg)
    wgt = np.cos(np.radians(e[rows]))
    c = (tone(sky_up[rows].astype(np.float64) * gain).mean(axis=1) * wgt[:, None]).sum(axis=0) / wgt.sum()
    return tuple(float(v) for v in c)


# ------------------------------------------------------------------------------------------- loading, once
_LOCK = threading.Lock()
_PREPARED: dict[str, PreparedMap] = {}
_STATUS: dict[str, tuple[Path | None, str]] = {}


def hdri_name(settings) -> str | None:
    """The map of a condition (``None``: overcast weathers, the procedural sky; module docstring)."""
    if settings.weather in OVERCAST_WEATHERS:
        return None
    return HDRI_FOR_TIME.get(settings.time_of_day)


def hdri_dir(quiet: bool = False) -> Path | None:
    """The fetched maps' folder when the pinned package is installed and whole, else ``None`` after one line on
    stderr (once per process and home, unless ``quiet``). Never fetches."""
    from urbanarena import paths
    from urbanarena.render.assets import ensure_assets, package_by_name

    root = paths.assets_dir()
    with _LOCK:
        if str(root) not in _STATUS:
            pkg = package_by_name(PACKAGE)
            status = ensure_assets([pkg], root=root, fetch=False)
            if status.available:
                _STATUS[str(root)] = (root / pkg.key / "hdri", "")
            else:
                _STATUS[str(root)] = (None, f"photo sky unavailable ({status.message}); drawing the procedural "
                                            "sky and hemispherical ambient (run: urbanarena assets fetch)")
        got, message = _STATUS[str(root)]
        if message and not quiet:
            print(message, file=sys.stderr)
            _STATUS[str(root)] = (got, "")
        return got


def sky_for(settings, light, quiet: bool = False) -> SkyLight | None:
    """The photo sky of ``settings`` (``light`` its :func:`.conditions.lighting`), or ``None`` without the
    package or with an unreadable map (one line on stderr, once per process; the caller keeps the procedural
    sky)."""
    from urbanarena.render.scene3d.hdri import HdriError

    folder = hdri_dir(quiet)
    if folder is None:
        return None
    name = hdri_name(settings)
    if name is None:
        return sky_light(None, settings, light)
    path = folder / f"{name}.exr"
    with _LOCK:
        prepared = _PREPARED.get(str(path))
    if prepared is None:
        try:
            prepared = prepare(path)
        except HdriError as e:
            if not quiet:
                print(f"photo sky unavailable ({e}); drawing the procedural sky", file=sys.stderr)
            return None
        with _LOCK:
            _PREPARED[str(path)] = prepared
    return sky_light(prepared, settings, light)


# ------------------------------------------------------------------------------------------- GLSL and twins
#: the realistic ambient term (in .shaders.LIGHT_VS's light_of and .realistic_shaders.TONE's light_vis)
AMBIENT_OLD = "amb_rgb * (ambient * (1.0 - hemi + hemi * n.z))"
AMBIENT_NEW = "sh_ambient(n)"
#: the irradiance of the SH coefficients (twin of :func:`ambient_rgb`)
SH_GLSL = """
uniform vec3 sh_c[9];
uniform float sh_amb;
vec3 sh_ambient(vec3 n) {
    vec3 e = sh_c[0] + sh_c[1] * n.y + sh_c[2] * n.z + sh_c[3] * n.x + sh_c[4] * (n.x * n.y) + sh_c[5] * (n.y * n.z)
        + sh_c[6] * (3.0 * n.z * n.z - 1.0) + sh_c[7] * (n.x * n.z) + sh_c[8] * (n.x * n.x - n.y * n.y);
    return sh_amb * sqrt(max(e, vec3(0.0)));
}
"""
_LIGHT_HEADS = ("vec3 light_of(vec3 n) {", "vec3 light_vis(vec3 n, float vis) {")


def ambient_rgb(sky: SkyLight, n) -> np.ndarray:
    """The ambient light ``(..., 3)`` on unit normals ``n`` ``(..., 3)`` (twin of :data:`SH_GLSL`)."""
    return sky.amb_up * np.sqrt(np.maximum(SH.sh_irradiance(sky.sh, n), 0.0))


#: the facade program: walls are planar, so the SH ambient is evaluated per vertex (a varying) instead of per
#: fragment (the per-fragment sum cost the facades about 15 % of a frame on llvmpipe)
FACADE_VS_ANCHOR = "    v_normal = normalize(in_normal);\n"


def _swap(src: str, old: str, new: str, what: str) -> str:
    if old not in src:
        raise RuntimeError(f"photo sky: the {what} to patch was not found (shaders changed?)")
    return src.replace(old, new, 1)


def patch_source(src: str, program: str = "", stage: str = "fs") -> str:
    """A lit program's source (``stage`` ``vs`` or ``fs``) with the SH ambient in place of the hemispherical one,
    where the source has the realistic ambient term (the ``facade`` program: computed in its vertex shader,
    :data:`FACADE_VS_ANCHOR`); other sources unchanged.

    Raises:
        RuntimeError: the ambient term is there but its function's head (or the facade's anchor) is not (shaders
            edited without this module)."""
    if program == "facade" and stage == "vs":
        src = _swap(src, "void main() {", SH_GLSL + "out vec3 v_sh;\nvoid main() {", "facade vertex main")
        return _swap(src, FACADE_VS_ANCHOR, FACADE_VS_ANCHOR + "    v_sh = sh_ambient(v_normal);\n",
                     "facade normal")
    if AMBIENT_OLD not in src:
        return src
    heads = [h for h in _LIGHT_HEADS if h in src]
    if not heads:
        raise RuntimeError("photo sky: the ambient function to patch was not found (shaders changed?)")
    if program == "facade":
        return _swap(src, heads[0], "in vec3 v_sh;\n" + heads[0], "facade light").replace(AMBIENT_OLD, "v_sh")
    for h in heads:
        src = src.replace(h, SH_GLSL + h, 1)
    return src.replace(AMBIENT_OLD, AMBIENT_NEW)


def _haze_consts() -> tuple[float, str]:
    from urbanarena.render.scene3d.photo_atmosphere import HAZE_BETA_PER_M, HAZE_H_M

    return HAZE_BETA_PER_M * HAZE_H_M, f"{HAZE_BETA_PER_M * HAZE_H_M:.6e}"


#: the sky drawn per frame from the map (replaces the realistic ``sky_tex`` program; twin :func:`sky_pixels`)
def sky_fs() -> str:
    """Fragment source of the photo sky (module docstring)."""
    from urbanarena.render.scene3d.photo_clouds import CLOUD_GLSL

    _, k = _haze_consts()
    return f"""
#version 330
{CLOUD_GLSL}
uniform mat3 cam_basis;
uniform vec2 tan_half;
uniform sampler2D sky_tex;
uniform float hdri_rot;
uniform float hdri_gain;
uniform vec3 horizon;
in vec2 v_ndc;
out vec4 f_colour;
void main() {{
    vec3 d = normalize(cam_basis * vec3(v_ndc.x * tan_half.x, v_ndc.y * tan_half.y, 1.0));
    float s = d.z;
    float keep = s > 1e-4 ? exp(-{k} / max(s, 1e-4)) : 0.0;
    vec2 uv = vec2(fract((atan(d.x, d.y) + hdri_rot) / 6.28318531), 1.0 - asin(clamp(s, 0.0, 1.0)) / 1.57079633);
    vec2 dx = dFdx(uv), dy = dFdy(uv);
    dx.x -= floor(dx.x + 0.5);                 // the longitude wraps: no jump to the coarsest level at the seam
    dy.x -= floor(dy.x + 0.5);
    vec3 x = max(textureGrad(sky_tex, uv, dx, dy).rgb, vec3(0.0)) * hdri_gain;
    x = cloud_mix(x, d);
    x = clamp((x * (2.51 * x + 0.03)) / (x * (2.43 * x + 0.59) + 0.14), 0.0, 1.0);
    // the haze's colour: the map's own low sky in this azimuth, blurred (mip level HORIZON_LOD)
    vec3 h = max(textureLod(sky_tex, vec2(uv.x, {1.0 - HORIZON_SAMPLE_DEG / 90.0:.6f}), {HORIZON_LOD:.1f}).rgb,
                 vec3(0.0)) * hdri_gain;
    h = clamp((h * (2.51 * h + 0.03)) / (h * (2.43 * h + 0.59) + 0.14), 0.0, 1.0);
    f_colour = vec4(mix(sqrt(h), sqrt(x), keep), 1.0);
}}
"""


def _bilinear(tex: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """GL's LINEAR lookup at level 0 of ``tex`` ``(H, W, C)`` (row 0 at ``v = 0``), repeating in ``u``, clamped in
    ``v``."""
    h, w = tex.shape[:2]
    x, y = u * w - 0.5, v * h - 0.5
    x0, y0 = np.floor(x).astype(int), np.floor(y).astype(int)
    fx, fy = (x - x0)[..., None], (y - y0)[..., None]
    xa, xb = x0 % w, (x0 + 1) % w
    ya, yb = np.clip(y0, 0, h - 1), np.clip(y0 + 1, 0, h - 1)
    top = tex[ya, xa] * (1 - fx) + tex[ya, xb] * fx
    bot = tex[yb, xa] * (1 - fx) + tex[yb, xb] * fx
    return top * (1 - fy) + bot * fy


def mip_level(tex: np.ndarray, level: int) -> np.ndarray:
    """Mip level ``level`` of ``tex`` ``(H, W, C)`` (powers of two) by 2 x 2 box means, as GL builds them."""
    t = np.asarray(tex, np.float64)
    for _ in range(level):
        h, w = t.shape[:2]
        t = t.reshape(h // 2, 2, w // 2, 2, -1).mean(axis=(1, 3))
    return t


def sky_pixels(sky: SkyLight, d: np.ndarray, origin_xy=(0.0, 0.0)) -> np.ndarray:
    """The sky's display colour ``(..., 3)`` in 0..1 along unit directions ``d`` ``(..., 3)`` seen from the
    ground point ``origin_xy`` (metres; it shifts the clouds) (twin of :func:`sky_fs` where the map is
    magnified, i.e. read at its level 0): the map with its clouds (:func:`.photo_clouds.cloud_mix`)
    tone-mapped, hazed towards its own low sky in the same azimuth (:data:`HORIZON_LOD`,
    :data:`HORIZON_SAMPLE_DEG`) by :func:`.photo_atmosphere.sky_haze_keep`."""
    from urbanarena.render.scene3d.photo_atmosphere import sky_haze_keep
    from urbanarena.render.scene3d.photo_clouds import cloud_mix

    d = np.asarray(d, np.float64)
    s = d[..., 2]
    u = np.mod((np.arctan2(d[..., 0], d[..., 1]) + sky.rot_rad) / (2 * math.pi), 1.0)
    v = 1.0 - np.arcsin(np.clip(s, 0.0, 1.0)) / (math.pi / 2)
    x = cloud_mix(_bilinear(sky.texture.astype(np.float64), u, v) * sky.gain, d, sky.cloud_cover, sky.cloud_lit,
                  sky.cloud_base, sky.sun_dir, origin_xy)
    c = tone(x)
    low = mip_level(sky.texture, HORIZON_LOD)
    hz = tone(_bilinear(low, u, np.full_like(u, 1.0 - HORIZON_SAMPLE_DEG / 90.0)) * sky.gain)
    keep = sky_haze_keep(np.degrees(np.arcsin(np.clip(s, -1.0, 1.0))))[..., None]
    return hz + (c - hz) * keep


def identity() -> dict:
    """The photo sky's part of the render identity: version, package and the GLSL."""
    import hashlib

    from urbanarena.render.assets import package_by_name

    pkg = package_by_name(PACKAGE)
    src = sky_fs() + SH_GLSL + AMBIENT_OLD + AMBIENT_NEW + FACADE_VS_ANCHOR
    return {"version": PHOTO_SKY_VERSION, "package": pkg.name, "package_version": pkg.version,
            "sha256": pkg.sha256, "maps": dict(HDRI_FOR_TIME), "glsl": hashlib.sha256(src.encode()).hexdigest()[:12],
            "installed": hdri_dir(quiet=True) is not None}


# AMBIENT_CLIP, LUMA, PreparedMap, fill_masked, mirror_fill, object_mask and prepare are re-exported from
# .photo_sky_map
__all__ = ["AMBIENT_CLIP", "HDRI_FOR_TIME", "LUMA", "PreparedMap", "SkyLight", "ambient_coeffs", "ambient_rgb",
           "band_colour", "band_directions", "fill_masked", "grade_factors", "row_factors", "hdri_dir", "hdri_name", "identity", "mip_level", "mirror_fill",
           "object_mask", "overcast_env", "patch_source", "prepare", "sky_fs", "sky_for", "sky_light", "sky_pixels",
           "tone", "white_balance"]
