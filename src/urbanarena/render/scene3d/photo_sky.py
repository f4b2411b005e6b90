"""The ``photo`` style's sky from a real HDRI and its image-based ambient light (issue 24 item 3).

Photo style only (and only while :data:`.photo_atmosphere.ENABLED`): ``flat`` and ``realistic`` never reach this
module. The maps are the six CC0 Poly Haven HDRIs (Greg Zaal) of the pinned Debian ``blender-data`` package
(equirectangular OpenEXR, 1024 x 512), read in float by :func:`.hdri.read_exr`.

* **Which map** (:func:`hdri_name`): a clear sky by day takes ``sunrise`` (the one daytime map whose upper
  hemisphere is open sky: ``city`` has towers up to about 50 degrees and a crane, ``courtyard`` a roof, ``forest``
  a canopy); dusk ``sunset``; night ``night``. Overcast weathers (``cloudy``, ``rain``, ``fog``) keep the
  procedural CIE overcast sky of the realistic style: the maps hold no overcast sky, and a desaturated clear sky
  would still show a sun's glow; their ambient light comes from that CIE sky (:func:`overcast_env`).
* **Preparing a map** (:func:`prepare`, once per process and file): negative values (the DWA compression's
  ringing around the sun) clamped to 0; the **sun** found as the brightest texel of the upper hemisphere after a
  Gaussian blur of :data:`SUN_BLUR_PX` (maps with a sun: :data:`HAS_SUN`); the **objects** standing in the sky
  (trees, buildings, pylons) masked: texels whose log-luminance gradient exceeds :data:`EDGE_LOG_PER_PX`,
  grown by a texel, that are connected to the ground (the lower hemisphere); in each column everything below the
  highest such texel (spread over :data:`SKYLINE_SPREAD_PX` columns, smoothed over :data:`SKYLINE_SMOOTH_PX` so
  that it has no vertical steps, plus :data:`SKYLINE_MARGIN_PX`) is taken as object; isolated specks above (stars)
  stay sky. In maps with a sun, a masked texel whose mirror image about the sun's meridian is sky takes that
  texel (:func:`mirror_fill`); the others are **filled** from the sky around them by normalized convolution at
  growing Gaussian widths, first along their own elevation (:func:`fill_masked`), then smoothed. The **sun's core** (texels within
  :data:`SUN_CORE_DEG` of the sun brighter than :data:`SUN_CORE_RATIO` x the median of the ring 4-8 degrees
  out) is filled the same way in the ambient map; the shown map keeps it unless the map's sun stands more than
  :data:`SUN_SHOW_DEG` away from the scene's sun elevation (then the drawn sun would contradict the shadows).
* **Turning** (:func:`sky_light`): the map is turned about the vertical so that its sun's azimuth is the
  scene's (:func:`.conditions.lighting`'s ``sun_dir``); night maps are not turned. The elevation cannot be
  matched by turning: ``sunrise``'s sun stands at 8.3 degrees while the day's scene sun stands at 40.
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
  median luminance and the colour pulled towards grey by :data:`AMBIENT_SATURATION`. The sun's direct light and
  shadows are unchanged.
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

PACKAGE = "blender-data"
#: bumped when the preparation or the shaders of this module change pixels (part of the photo render identity)
PHOTO_SKY_VERSION = "photo-sky-1"
#: time of day -> map (overcast weathers keep the procedural sky)
HDRI_FOR_TIME = {"day": "sunrise", "dusk": "sunset", "night": "night"}
OVERCAST_WEATHERS = ("cloudy", "rain", "fog")
HAS_SUN = {"sunrise": True, "sunset": True, "city": True, "forest": True, "courtyard": True, "night": False}
SUN_BLUR_PX = 2.0
SUN_CORE_DEG, SUN_CORE_RATIO, SUN_SHOW_DEG = 3.0, 4.0, 10.0
EDGE_LOG_PER_PX = 0.12
SKYLINE_SPREAD_PX, SKYLINE_MARGIN_PX, SKYLINE_SMOOTH_PX = 10, 3, 6.0
FILL_MIN_WEIGHT = 0.3
FILL_ROW_SIGMA, FILL_SMOOTH_PX = 1.0, 4.0
WIRE_CLOSE_PX = 5
#: the white balance is applied by this power (a camera's automatic white balance corrects only part of a
#: coloured light: at full strength the sunset map's blue sky turned grey-orange)
WB_STRENGTH = 0.5
#: elevation bands (degrees) of the map's horizon and zenith colours (:class:`SkyLight`)
HORIZON_BAND_DEG, ZENITH_BAND_DEG = (1.0, 4.0), (75.0, 90.0)
#: the sky's haze runs into the map's own sky at this elevation (degrees) in the same azimuth, read at this mip
#: level (1024 x 256 -> 64 x 16: 5.6-degree texels, so a blur of the low sky)
HORIZON_SAMPLE_DEG, HORIZON_LOD = 2.5, 4
GROUND_ALBEDO = 0.2
#: the ambient map's luminance is clipped at this multiple of its median (the sun's aureole; module docstring)
AMBIENT_CLIP = 4.0
#: share of the irradiance's colour kept (a street's shaded walls also get light bounced off sunlit walls and
#: ground, which the map does not hold: without this they turn lavender under a blue sky)
AMBIENT_SATURATION = 0.5
#: sRGB / Rec. 709 luminance weights
LUMA = np.array([0.2126, 0.7152, 0.0722])
#: the map texture's unit (the realistic sky's is 1, the trees' atlas 2 or above; .renderer)
SKY_UNIT = 1


@dataclass(frozen=True)
class PreparedMap:
    """A prepared map (module docstring), upper hemisphere only, float32 linear RGB ``(H/2, W, 3)``.

    Attributes:
        name: the map's name (file stem). shown: the sky drawn (objects filled, sun kept). shown_no_sun: the
        same with the sun's core filled. ambient: the sky of the ambient light (objects and sun's core filled,
        the aureole clipped, at half the resolution).
        sun_elev_deg, sun_lon_deg: the sun's elevation and map longitude (``2 pi (c + 0.5) / W``; ``None``
        without a sun). object_share: share of upper-hemisphere texels masked as objects. sun_normal: the sun's
        normal irradiance (its disc's radiance above the filled sky, integrated; map units).
    """

    name: str
    shown: np.ndarray
    shown_no_sun: np.ndarray
    ambient: np.ndarray
    sun_elev_deg: float | None
    sun_lon_deg: float | None
    object_share: float
    sun_normal: float = 0.0


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
    """

    name: str | None
    texture: np.ndarray | None
    rot_rad: float
    gain: float
    sh: np.ndarray
    amb_up: float
    horizon: tuple[float, float, float] | None = None
    zenith: tuple[float, float, float] | None = None


# ------------------------------------------------------------------------------------------- preparing a map
def _blur(img: np.ndarray, sigma) -> np.ndarray:
    """Gaussian blur of a map ``(H, W[, C])`` (``sigma``: texels, or ``(along elevation, along longitude)``):
    wraps in longitude, clamps in elevation."""
    from scipy.ndimage import gaussian_filter

    sy, sx = (sigma, sigma) if np.isscalar(sigma) else sigma
    mode = ("nearest", "wrap") + ("nearest",) * (img.ndim - 2)
    return gaussian_filter(img, (sy, sx) + (0,) * (img.ndim - 2), mode=mode)


def _blur_coarse(img: np.ndarray, sy: float, sx: float) -> np.ndarray:
    """:func:`_blur` at ``(sy, sx)``, a wide ``sx`` computed on the map shrunk along longitude by ``f = sx / 4`` (a
    power of two; block means) and enlarged back linearly: the same smooth result at a small share of the cost."""
    import cv2

    f = 1
    while f * 8 <= sx and img.shape[1] % (2 * f) == 0:
        f *= 2
    if f == 1:
        return _blur(img, (sy, sx))
    h, w = img.shape[:2]
    small = img.reshape(h, w // f, f, *img.shape[2:]).mean(axis=2)
    out = cv2.resize(_blur(small, (sy, sx / f)).astype(np.float32), (w, h), interpolation=cv2.INTER_LINEAR)
    return out.reshape(img.shape)


def fill_masked(img: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``img`` ``(H, W, C)`` with the ``mask``-ed texels replaced by normalized convolution of the rest, first along
    the texel's own elevation (Gaussian widths 1, 2, 4 ... 16 texels in longitude, :data:`FILL_ROW_SIGMA` in
    elevation; a sky changes much more with elevation than with azimuth), then, for texels with no sky at their
    elevation, isotropically (4 ... 64 texels); each from the finest width whose weight reaches
    :data:`FILL_MIN_WEIGHT`; then smoothed over :data:`FILL_SMOOTH_PX` texels inside the mask (the sky beside it
    blends in at its rim)."""
    known = (~mask).astype(np.float32)
    out = img.astype(np.float32).copy()
    todo = mask.copy()
    passes = [(FILL_ROW_SIGMA, s) for s in (1, 2, 4, 8, 16)] + [(s, s) for s in (4, 8, 16, 32, 64)]
    for i, (sy, sx) in enumerate(passes):
        if not todo.any():
            break
        w = _blur_coarse(known, sy, sx)
        num = _blur_coarse(out * known[..., None], sy, sx)
        ok = todo & (w >= (FILL_MIN_WEIGHT if i < len(passes) - 1 else 1e-9))
        out[ok] = num[ok] / w[ok][:, None]
        todo &= ~ok
    smooth = _blur(out, FILL_SMOOTH_PX)
    out[mask] = smooth[mask]
    return out


def _angle_to(h: int, w: int, elev_deg: float, lon_deg: float) -> np.ndarray:
    """Angle (degrees) of each texel of an ``(h, w)`` equirectangular map from the direction ``(elev, lon)``."""
    d, _ = SH.equirect_directions(h, w)
    e, a = math.radians(elev_deg), math.radians(lon_deg)
    s = np.array([math.sin(a) * math.cos(e), math.cos(a) * math.cos(e), math.sin(e)])
    return np.degrees(np.arccos(np.clip(d @ s, -1.0, 1.0)))


def object_mask(rgb: np.ndarray, keep_out: np.ndarray | None = None) -> np.ndarray:
    """Objects standing in the sky of the full map ``rgb`` ``(H, W, 3)``, for its upper hemisphere ``(H/2, W)``
    bool (module docstring); ``keep_out`` ``(H, W)``: texels never taken as edges (the sun's core)."""
    from scipy.ndimage import binary_dilation, gaussian_filter1d, label, maximum_filter1d

    h, w = rgb.shape[:2]
    lg = np.log(np.maximum(rgb @ LUMA, 1e-6))
    gy = np.abs(np.diff(lg, axis=0, append=lg[-1:]))
    gx = np.abs(lg - np.roll(lg, -1, axis=1))
    edge = np.maximum(gx, gy) > EDGE_LOG_PER_PX
    if keep_out is not None:
        edge &= ~keep_out
    edge = binary_dilation(edge, iterations=1)
    edge[h // 2:] = True                                   # the ground: everything below the horizon
    lab, _ = label(edge, structure=np.ones((3, 3), bool))
    ground = lab == lab[-1, 0]
    top = np.where(ground[: h // 2].any(axis=0), ground[: h // 2].argmax(axis=0), h // 2)
    top = -maximum_filter1d(-top, 2 * SKYLINE_SPREAD_PX + 1, mode="wrap")   # spread: the highest nearby
    # no vertical steps in the skyline (they showed as edges in the fill): the lower of it and its smoothed self
    reach = 2 * int(math.ceil(3 * SKYLINE_SMOOTH_PX)) + 1
    lowest = -maximum_filter1d(-top, reach, mode="wrap")   # so that the blurred skyline stays above the objects
    smooth = gaussian_filter1d(lowest.astype(np.float64), SKYLINE_SMOOTH_PX, mode="wrap")
    top = np.maximum(np.minimum(top, np.rint(smooth)).astype(int) - SKYLINE_MARGIN_PX, 0)
    return np.arange(h // 2)[:, None] >= top[None, :]


def mirror_fill(img: np.ndarray, mask: np.ndarray, sun_lon_deg: float) -> tuple[np.ndarray, np.ndarray]:
    """``(img, mask)`` with each masked texel of the map ``img`` ``(H, W, C)`` taken from its mirror image about the
    sun's meridian (map longitude ``2 sun_lon - lon``, same elevation) where that one is sky, and unmasked (a clear
    sky's radiance is close to symmetric about the solar meridian, as in the Perez and CIE sky models); the rest
    stays masked for :func:`fill_masked`."""
    w = img.shape[1]
    cols = np.arange(w)
    mirror = np.rint(2.0 * sun_lon_deg / 360.0 * w - 1.0 - cols).astype(int) % w   # texel centres (c + 0.5)
    take = mask & ~mask[:, mirror]
    out = img.copy()
    out[take] = img[:, mirror][take]
    return out, mask & ~take


def _half(img: np.ndarray) -> np.ndarray:
    """``img`` ``(H, W, C)`` shrunk by 2 x 2 block means (the ambient light's SH need no more)."""
    h, w = img.shape[:2]
    return img[: h - h % 2, : w - w % 2].reshape(h // 2, 2, w // 2, 2, -1).mean(axis=(1, 3))


def prepare(path: str | Path) -> PreparedMap:
    """The prepared map of the HDRI file ``path`` (module docstring).

    Raises:
        HdriError: the file cannot be read (:func:`.hdri.read_exr`)."""
    from urbanarena.render.scene3d.hdri import read_exr

    p = Path(path)
    rgb = np.nan_to_num(read_exr(p).astype(np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    np.maximum(rgb, 0.0, out=rgb)
    h, w = rgb.shape[:2]
    from scipy.ndimage import grey_closing

    # thin dark lines across the sky (power lines: `sunrise` has a dozen arcs up to 35 degrees) and the DWA
    # ringing around the sun closed away: a grey closing along elevation bridges dark features under 5 texels
    up = np.stack([grey_closing(rgb[: h // 2, :, k], size=(WIRE_CLOSE_PX, 1), mode="nearest") for k in range(3)], -1)
    name = p.stem
    sun_elev = sun_lon = None
    disc = bright = np.zeros((h // 2, w), bool)
    if HAS_SUN.get(name, True):
        lum = _blur(up @ LUMA, SUN_BLUR_PX)
        r, c = np.unravel_index(int(np.argmax(lum)), lum.shape)
        sun_elev = 90.0 - (r + 0.5) * 180.0 / h
        sun_lon = 360.0 * (c + 0.5) / w
        ang = _angle_to(h, w, sun_elev, sun_lon)[: h // 2]
        ring = (ang > 4.0) & (ang < 8.0)
        ref = float(np.median((up @ LUMA)[ring])) if ring.any() else 0.0
        disc = ang < SUN_CORE_DEG
        bright = disc & ((up @ LUMA) > SUN_CORE_RATIO * ref)
    keep_out = None
    if sun_elev is not None:
        keep_out = np.zeros((h, w), bool)
        keep_out[: h // 2] = ang < SUN_CORE_DEG + 1.0
    objects = object_mask(rgb, keep_out=keep_out)
    hole = objects | disc                            # the sun's disc too: its ringing and its light
    if sun_lon is not None:                          # a clear sky is nearly symmetric about the sun's meridian
        up, hole = mirror_fill(up, hole, sun_lon)
    filled = fill_masked(up, hole)
    shown = filled.copy()
    shown[bright & ~objects] = up[bright & ~objects]   # the sun's bright core back in the sky drawn
    lum = filled @ LUMA
    cap = AMBIENT_CLIP * float(np.median(lum))
    ambient = filled * np.minimum(1.0, cap / np.maximum(lum, 1e-12))[..., None]   # the aureole clipped
    sun_n = 0.0
    if sun_elev is not None:   # the sun's normal irradiance: what its disc holds above the filled sky
        _, dw = SH.equirect_directions(h, w)
        sun_n = float(((np.maximum(rgb[: h // 2] - filled, 0.0) @ LUMA) * disc * dw[: h // 2, None]).sum())
    return PreparedMap(name, shown.astype(np.float32), filled.astype(np.float32), _half(ambient).astype(np.float32),
                       sun_elev, sun_lon, float(objects.mean()), sun_n)


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
    return SkyLight(prepared.name, shown, rot, gain, sh, amb_up, band_colour(shown, gain, *HORIZON_BAND_DEG),
                    band_colour(shown, gain, *ZENITH_BAND_DEG))


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
    _, k = _haze_consts()
    return f"""
#version 330
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


def sky_pixels(sky: SkyLight, d: np.ndarray) -> np.ndarray:
    """The sky's display colour ``(..., 3)`` in 0..1 along unit directions ``d`` ``(..., 3)`` (twin of
    :func:`sky_fs` where the map is magnified, i.e. read at its level 0): the map tone-mapped, hazed towards its
    own low sky in the same azimuth (:data:`HORIZON_LOD`, :data:`HORIZON_SAMPLE_DEG`) by
    :func:`.photo_atmosphere.sky_haze_keep`."""
    from urbanarena.render.scene3d.photo_atmosphere import sky_haze_keep

    d = np.asarray(d, np.float64)
    s = d[..., 2]
    u = np.mod((np.arctan2(d[..., 0], d[..., 1]) + sky.rot_rad) / (2 * math.pi), 1.0)
    v = 1.0 - np.arcsin(np.clip(s, 0.0, 1.0)) / (math.pi / 2)
    c = tone(_bilinear(sky.texture.astype(np.float64), u, v) * sky.gain)
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


__all__ = ["HDRI_FOR_TIME", "PreparedMap", "SkyLight", "ambient_coeffs", "ambient_rgb", "fill_masked",
           "hdri_dir", "hdri_name", "identity", "object_mask", "overcast_env", "patch_source", "prepare",
           "sky_fs", "sky_for", "sky_light", "sky_pixels"]
