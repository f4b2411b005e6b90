"""Preparing the ``photo`` style's HDRI maps (:mod:`.photo_sky`): the sun found, the objects standing in the sky
masked and filled, the sun's disc and aureole taken out of the ambient light's map.

By :func:`prepare` (once per process and file, through :func:`.photo_sky.sky_for`):

* negative values (the DWA compression's ringing around the sun) clamped to 0; thin dark lines across the sky
  (power lines) closed away by a grey closing :data:`WIRE_CLOSE_PX` texels tall;
* the **sun**: the brightest texel of the upper hemisphere after a Gaussian blur of :data:`SUN_BLUR_PX` (maps with a
  sun: :data:`HAS_SUN`); its **disc** the texels within :data:`SUN_CORE_DEG`, its bright core those of them
  brighter than :data:`SUN_CORE_RATIO` x the median of the ring 4-8 degrees out;
* the **objects** standing in the sky (trees, buildings, pylons; :func:`object_mask`): texels whose
  log-luminance step to a neighbour exceeds :data:`EDGE_LOG_PER_PX`, grown by a texel, connected to the ground
  (the lower hemisphere); in each column everything below the highest such texel (spread over
  :data:`SKYLINE_SPREAD_PX` columns, smoothed over :data:`SKYLINE_SMOOTH_PX` so that it has no vertical steps,
  plus :data:`SKYLINE_MARGIN_PX`); isolated specks above (stars) stay sky;
* objects and the sun's disc **filled**: in maps with a sun, a texel whose mirror image about the sun's meridian
  is sky takes that texel (:func:`mirror_fill`), the others come from the sky around them by normalized
  convolution, first along their own elevation (:func:`fill_masked`), then smoothed;
* the map drawn keeps the sun's bright core (:mod:`.photo_sky` drops it when the scene's sun stands far from it);
  the ambient light's map does not, and its luminance is clipped at :data:`AMBIENT_CLIP` x its median (a map's low
  sun's aureole would otherwise light the walls facing it a second time), at half the resolution.

Constants are ours (chosen by looking at the maps), not measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from urbanarena.render.scene3d import sh_irradiance as SH

HAS_SUN = {"sunrise": True, "sunset": True, "city": True, "forest": True, "courtyard": True, "night": False}
SUN_BLUR_PX = 2.0
SUN_CORE_DEG, SUN_CORE_RATIO = 3.0, 4.0
EDGE_LOG_PER_PX = 0.12
SKYLINE_SPREAD_PX, SKYLINE_MARGIN_PX, SKYLINE_SMOOTH_PX = 10, 3, 6.0
FILL_MIN_WEIGHT = 0.3
FILL_ROW_SIGMA, FILL_SMOOTH_PX = 1.0, 4.0
WIRE_CLOSE_PX = 5
#: the ambient light's map: luminance clipped at this multiple of its median (the sun's aureole)
AMBIENT_CLIP = 4.0
#: sRGB / Rec. 709 luminance weights
LUMA = np.array([0.2126, 0.7152, 0.0722])


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


__all__ = ["AMBIENT_CLIP", "LUMA", "PreparedMap", "fill_masked", "mirror_fill", "object_mask", "prepare"]
