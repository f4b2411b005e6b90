"""In-camera processing stages of :mod:`urbanarena.render.camera_model` (issue 24, item 4): what a consumer
camera's image signal processor does between the sensor and the file, so that a render reads as a camera's
frame and not as a picture with a noise filter laid over it.

Every function here is pure and deterministic (no random draws); values are floats on the 0-1 (display,
sRGB-encoded) or 0-255 (grey level) scale named in each docstring:

* :func:`meter_linear` -- the camera's exposure meter: the log-average (geometric mean) of the linear
  luminance ``L = 0.2126 R + 0.7152 G + 0.0722 B`` (sRGB decoded), ``exp(mean(log(L + METER_EPS)))``, over
  every :data:`METER_STEP_PX`-th pixel of each :data:`METER_STEP_PX`-th row;
* :func:`auto_exposure_gain` -- the gain that brings that meter to a target, clamped to the camera's range
  of stops (a camera cannot raise its gain without limit: night frames stay darker than day ones);
* :func:`tone_lut` -- one 256-entry table per channel: decode, gain (exposure times white balance) in linear
  light, clip (highlights blow), encode, then the tone curve ``y = (1 - c) x + c x^2 (3 - 2 x)`` (an S
  curve through 0, 1/2 and 1, slope ``1 + c/2`` at mid grey);
* :func:`auto_black` -- the black level: how far the image's darkest percent sits above a target (renders
  lifted by haze get deeper shadows, as a camera's tone processing gives them), capped;
* :func:`denoise_luma` -- edge-preserving noise reduction of the luma (``cv2.bilateralFilter``, diameter
  :data:`DENOISE_DIAMETER_PX`, spatial sigma :data:`DENOISE_SPACE_SIGMA_PX`): flat areas lose their
  grain and fine low-contrast texture (the smeared look of in-camera noise reduction), edges stay;
* :func:`compress_chroma` -- a soft knee on the chroma's length: strong colours are held in (the colour boost
  lifts dull colours, not already saturated ones);
* :func:`clipped_excess`, :func:`veiling_glare` -- light scattered in the lens: the light an exposure pushes
  above white (known before the clip: the render times the exposure's gain), box-averaged to half size,
  blurred by a Gaussian and added back in linear light with a small strength (the tail of the lens's spread
  function): lit windows and lamps at night, metered up by several stops, glow as in a consumer camera's
  night frame; a day view, with little above white, is left nearly as it is (ours);
* :func:`tilt_map`, :func:`tilt_view` -- a camera that is not held level: the view turned by a small pitch and
  roll (exactly a homography for a pinhole turned about its centre), zoomed just enough to keep the frame
  full;
* :func:`unsharp_luma` -- unsharp masking ``y = x + a (x - G_sigma * x)`` (Gaussian ``G``, reflected
  borders): the halo (overshoot) a camera's sharpening leaves on both sides of an edge.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

#: the meter samples every 4th pixel of every 4th row
METER_STEP_PX = 4
#: added to the linear luminance before the logarithm (so black pixels do not send the meter to zero)
METER_EPS = 1e-4
#: the shadow percentile the auto black level looks at
BLACK_PERCENTILE = 1.0
#: the luma noise reduction's neighbourhood: diameter (pixels) and spatial sigma (pixels)
DENOISE_DIAMETER_PX = 5
DENOISE_SPACE_SIGMA_PX = 1.5
#: BT.601 luma weights (what JPEG's YCbCr uses)
LUMA_601 = np.array([0.299, 0.587, 0.114], np.float32)
_LINEAR_LUMA_709 = np.array([0.2126, 0.7152, 0.0722], np.float32)


def srgb_to_linear(x: np.ndarray) -> np.ndarray:
    """sRGB decoding of values in [0, 1] (any shape; float32 out)."""
    return np.where(x <= 0.04045, x / 12.92, ((x + 0.055) / 1.055) ** 2.4).astype(np.float32)


def linear_to_srgb(x: np.ndarray) -> np.ndarray:
    """sRGB encoding of linear values in [0, 1] (any shape; float32 out)."""
    return np.where(x <= 0.0031308, x * 12.92, 1.055 * np.power(x, 1 / 2.4) - 0.055).astype(np.float32)


_DECODE_U8 = srgb_to_linear(np.arange(256, dtype=np.float32) / 255.0)


def meter_linear(img: np.ndarray) -> float:
    """The exposure meter of an RGB ``uint8`` image ``(H, W, 3)`` (module docstring): the geometric mean of
    the linear luminance of the sampled pixels, in (0, 1]; a constant image of linear luminance ``L``
    meters ``L + METER_EPS`` (to within float rounding)."""
    sub = img[::METER_STEP_PX, ::METER_STEP_PX]
    lum = _DECODE_U8[sub] @ _LINEAR_LUMA_709
    return float(np.exp(np.mean(np.log(lum.astype(np.float64) + METER_EPS))))


def auto_exposure_gain(meter: float, target: float, min_ev: float, max_ev: float) -> float:
    """Linear gain ``target / meter`` clamped to ``[2^min_ev, 2^max_ev]`` (stops; ``min_ev <= 0 <= max_ev``).

    Raises: ValueError: ``meter`` or ``target`` not positive, or ``min_ev > max_ev``."""
    if not (meter > 0 and target > 0) or min_ev > max_ev:
        raise ValueError(f"auto exposure: meter {meter}, target {target}, range [{min_ev}, {max_ev}] EV")
    ev = min(max(math.log2(target / meter), min_ev), max_ev)
    return float(2.0 ** ev)


def compress_chroma(chroma: np.ndarray, knee_grey: float, slope: float) -> np.ndarray:
    """Chroma vectors ``(H, W, 3)`` (RGB minus luma, grey levels) whose length ``m`` exceeds ``knee_grey`` shortened
    to ``knee_grey + slope (m - knee_grey)``, direction kept (hue unchanged); shorter ones unchanged. float32.

    Raises: ValueError: ``knee_grey`` not positive or ``slope`` outside [0, 1]."""
    if not knee_grey > 0 or not 0.0 <= slope <= 1.0:
        raise ValueError(f"chroma knee {knee_grey}, slope {slope}")
    m = np.sqrt((chroma.astype(np.float32) ** 2).sum(axis=-1, keepdims=True))
    over = m > knee_grey
    scale = np.where(over, (knee_grey + slope * (m - knee_grey)) / np.maximum(m, 1e-6), 1.0)
    return (chroma * scale).astype(np.float32)


def tone_lut(gains: np.ndarray, contrast: float, black: float = 0.0) -> np.ndarray:
    """The per-channel tables ``(3, 256)`` float32 on the 0-1 display scale (module docstring) for linear
    gains ``gains`` ``(3,)`` (exposure times white balance), then the black level ``black`` (display values
    ``y -> max(y - black, 0) / (1 - black)``, ``0 <= black < 1``; 0 = none) and the S-curve of strength
    ``contrast`` (0 = none)."""
    x = np.arange(256, dtype=np.float32) / 255.0
    lin = srgb_to_linear(x)[None, :] * np.asarray(gains, np.float32)[:, None]
    y = linear_to_srgb(np.clip(lin, 0.0, 1.0))
    if black:
        y = (np.maximum(y - np.float32(black), 0.0) / np.float32(1.0 - black)).astype(np.float32)
    if contrast:
        y = ((1.0 - contrast) * y + contrast * y * y * (3.0 - 2.0 * y)).astype(np.float32)
    return y


def auto_black(img: np.ndarray, lut: np.ndarray, target: float, max_black: float) -> float:
    """The black level (display scale) that brings the darkest :data:`BLACK_PERCENTILE` % of an image's BT.601
    luma down to ``target``: the sampled pixels (every :data:`METER_STEP_PX`-th of every
    :data:`METER_STEP_PX`-th row) of ``img`` (RGB ``uint8``) mapped through ``lut`` (``(3, 256)``, before any
    black level), the percentile ``q`` of their luma, and ``min(max(q - target, 0), max_black)`` (a hazy,
    lifted render gets deeper shadows; an image that has them keeps its levels)."""
    sub = img[::METER_STEP_PX, ::METER_STEP_PX]
    luma = lut[0][sub[..., 0]] * LUMA_601[0] + lut[1][sub[..., 1]] * LUMA_601[1] + lut[2][sub[..., 2]] * LUMA_601[2]
    q = float(np.percentile(luma, BLACK_PERCENTILE))
    return float(min(max(q - target, 0.0), max_black))


def denoise_luma(y: np.ndarray, sigma_grey: float) -> np.ndarray:
    """Bilateral noise reduction of a luma plane ``(H, W)`` float32 in grey levels (0-255) with range sigma
    ``sigma_grey`` grey levels (module docstring for the neighbourhood)."""
    return cv2.bilateralFilter(y, DENOISE_DIAMETER_PX, float(sigma_grey), DENOISE_SPACE_SIGMA_PX,
                               borderType=cv2.BORDER_REFLECT_101)


def clipped_excess(img: np.ndarray, gains: np.ndarray) -> np.ndarray:
    """The light above the sensor's white that an exposure with linear ``gains`` ``(3,)`` (exposure times white
    balance) throws away: ``max(decode(img) gains - 1, 0)`` per channel, ``(H, W, 3)`` float32 in linear units of
    white (a window at night metered up by 4 stops can be several whites over; a day's sky is not)."""
    return np.maximum(_DECODE_U8[img] * np.asarray(gains, np.float32) - np.float32(1.0), 0.0)


def veiling_glare(x: np.ndarray, excess: np.ndarray, strength: float, sigma_px: float) -> np.ndarray:
    """``x`` ``(H, W, 3)`` float32 display values (0-1) with ``strength`` times the Gaussian halo (``sigma_px``
    pixels at full size) of ``excess`` (``(H, W, 3)`` linear light above white, :func:`clipped_excess`) added in
    linear light: ``encode(min(decode(x) + strength G * excess, 1))``. Only blown light sheds a halo, in its own
    colour, so lit windows and lamps at night glow and a day view without blown sources is left as it is. The
    halo is computed at half size (area-averaged down, bilinear up; its sum is kept to within the resampling's
    edge effects); with no excess the image comes back unchanged (the same array).

    Raises: ValueError: ``strength`` negative or ``sigma_px`` not positive."""
    if strength < 0 or not sigma_px > 0:
        raise ValueError(f"glare: strength {strength}, sigma {sigma_px} px")
    if not strength or not excess.any():
        return x
    h, w = x.shape[:2]
    small = cv2.resize(excess, (max(1, w // 2), max(1, h // 2)), interpolation=cv2.INTER_AREA)
    halo = cv2.GaussianBlur(small, (0, 0), sigma_px / 2.0, borderType=cv2.BORDER_REFLECT_101)
    halo = cv2.resize(halo, (w, h), interpolation=cv2.INTER_LINEAR)
    lin = srgb_to_linear(np.clip(x, 0.0, 1.0)) + np.float32(strength) * halo
    return linear_to_srgb(np.minimum(lin, 1.0))


def tilt_map(width: int, height: int, hfov_deg: float, roll_deg: float, pitch_deg: float) -> tuple[np.ndarray, float]:
    """``(M, zoom)``: the 3 x 3 map from an output pixel to the level view's pixel (``cv2.warpPerspective`` with
    ``WARP_INVERSE_MAP``) of a pinhole camera (square pixels, ``hfov_deg`` across ``width``, centre
    ``((W-1)/2, (H-1)/2)``; axes right, down, forward) turned by ``pitch_deg`` (up positive) and then rolled by
    ``roll_deg`` (clockwise positive, as the horizon then tilts anticlockwise in the frame) and zoomed by the least
    ``zoom >= 1`` (steps of 0.002) that keeps the four corners inside the level view, so no pixel comes from
    outside it: ``M = K R diag(1/zoom, 1/zoom, 1) K^-1``-like, ``R`` the rotation. A rotation about the centre
    of projection is exactly a homography, so this is the view the tilted camera would have rendered (less the
    zoom's narrower field).

    Raises: ValueError: a size below 2 px, ``hfov_deg`` outside (0, 180) or a tilt over 10 degrees."""
    if width < 2 or height < 2 or not 0 < hfov_deg < 180 or max(abs(roll_deg), abs(pitch_deg)) > 10:
        raise ValueError(f"tilt: {width}x{height}, hfov {hfov_deg}, roll {roll_deg}, pitch {pitch_deg}")
    f = (width / 2.0) / math.tan(math.radians(hfov_deg) / 2.0)
    cx, cy = (width - 1) / 2.0, (height - 1) / 2.0
    K = np.array([[f, 0.0, cx], [0.0, f, cy], [0.0, 0.0, 1.0]])
    p, r = math.radians(pitch_deg), math.radians(roll_deg)
    # pitch up: the forward axis turns towards -y (up in the image); roll: about the forward axis
    Rp = np.array([[1.0, 0.0, 0.0], [0.0, math.cos(p), -math.sin(p)], [0.0, math.sin(p), math.cos(p)]])
    Rr = np.array([[math.cos(r), -math.sin(r), 0.0], [math.sin(r), math.cos(r), 0.0], [0.0, 0.0, 1.0]])
    R = Rp @ Rr
    corners = np.array([[0.0, 0.0, 1.0], [width - 1.0, 0.0, 1.0], [0.0, height - 1.0, 1.0],
                        [width - 1.0, height - 1.0, 1.0]]).T
    zoom = 1.0
    while True:
        Kz = np.array([[f * zoom, 0.0, cx], [0.0, f * zoom, cy], [0.0, 0.0, 1.0]])
        M = K @ R @ np.linalg.inv(Kz)
        q = M @ corners
        q = q[:2] / q[2]
        if (q[0].min() >= 0 and q[0].max() <= width - 1 and q[1].min() >= 0 and q[1].max() <= height - 1) \
                or zoom > 1.5:
            return M, zoom
        zoom += 0.002


def tilt_view(x: np.ndarray, hfov_deg: float, roll_deg: float, pitch_deg: float) -> np.ndarray:
    """``x`` ``(H, W, C)`` float32 as the camera turned by ``roll_deg`` / ``pitch_deg`` (:func:`tilt_map`) would
    have seen it: bilinear resampling, every output pixel from inside ``x``."""
    h, w = x.shape[:2]
    M, _ = tilt_map(w, h, hfov_deg, roll_deg, pitch_deg)
    return cv2.warpPerspective(x, M, (w, h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                               borderMode=cv2.BORDER_REPLICATE)


def unsharp_luma(y: np.ndarray, amount: float, sigma_px: float, threshold: float = 0.0) -> np.ndarray:
    """Unsharp mask of a plane ``(H, W)`` float32 (grey levels; not clipped): ``y + amount * core(y - G_sigma * y)``
    with the coring ``core(d) = sign(d) max(|d| - threshold, 0)`` (detail below ``threshold`` grey levels,
    most of it noise, is not amplified)."""
    blur = cv2.GaussianBlur(y, (0, 0), sigma_px, borderType=cv2.BORDER_REFLECT_101)
    d = y - blur
    if threshold:
        d = np.sign(d) * np.maximum(np.abs(d) - threshold, 0.0)
    return (y + amount * d).astype(np.float32)


__all__ = ["BLACK_PERCENTILE", "DENOISE_DIAMETER_PX", "DENOISE_SPACE_SIGMA_PX", "LUMA_601", "METER_EPS",
           "METER_STEP_PX", "auto_black", "auto_exposure_gain", "compress_chroma", "denoise_luma", "linear_to_srgb", "meter_linear",
           "clipped_excess", "srgb_to_linear", "tilt_map", "tilt_view", "tone_lut", "unsharp_luma", "veiling_glare"]
