"""A camera model applied to the images an agent receives: what a real camera does to a rendered picture.

A renderer's image is razor sharp, noiseless, evenly exposed and never compressed; a street-level photo is
none of these. :class:`CameraModel` turns an RGB ``uint8`` image ``(H, W, 3)`` into what a given camera would
have delivered, in this order (each step off when its parameter is 0; the in-camera stages are functions of
:mod:`urbanarena.render.camera_isp`):

1. **exposure, white balance and tone** (one 256-entry table per channel): the camera's meter
   (``camera_isp.meter_linear``, the geometric mean of the linear luminance) and an automatic gain bringing it
   to ``auto_exposure_target``, clamped to ``[auto_exposure_min_ev, auto_exposure_max_ev]`` stops (night
   frames get brighter, up to the cap); a per-image exposure offset (``exposure_sd_ev``, stops, normal) and
   per-channel gains (``white_balance_sd``, relative, normal); all applied in linear light (sRGB decoded),
   clipped at white (highlights blow), re-encoded; then a black level that pulls the darkest percent down
   to ``auto_black_target`` (by at most ``auto_black_max``; display scale) and an S-shaped tone curve of
   strength ``tone_contrast``;
   then veiling glare (``camera_isp.veiling_glare``, with the exposure): the light the gain pushed above white,
   blurred by a Gaussian of ``glare_sigma_px`` and added back in linear light times ``glare_strength`` (halos
   round lit windows and lamps at night);
2. **lens**: a camera not held level: a roll and a pitch drawn per view (normal, ``tilt_sd_deg`` degrees each,
   clipped at :data:`TILT_MAX_DEG`), the view turned by them (``camera_isp.tilt_view``: exactly what the turned
   pinhole would see, zoomed by the least amount that keeps the frame full, about 3 % at 2 degrees of roll;
   its bilinear resampling softens by about 0.41 px on average, sqrt(1/6) for a uniform sub-pixel offset, which
   the softness below allows for);
   radial distortion: a point at undistorted radius ``r_u`` appears at ``r_d`` with
   ``r_u = r_d (1 - k1 r_d^2)`` (the first-order inverse of ``r_d = r_u (1 + k1 r_u^2)``; ``distortion_k1``;
   radii normalised to the half diagonal; negative = barrel: points move towards the centre) with lateral
   chromatic aberration (red and blue magnified by ``1 ± chromatic_aberration``), and vignetting, a
   ``cos^4``-like fall-off of strength ``vignetting`` at the corners;
3. **softness**: a Gaussian blur of ``blur_sigma_px`` pixels (optics, stitching and demosaicing);
4. **sensor noise**: signal-dependent Gaussian noise with variance ``(k read_noise)^2 + k shot_gain I``
   (``I`` the 0-255 value; ``k = sqrt(max(1, g))`` for an automatic gain ``g``, else 1: half the stops of a
   raised exposure come from a longer shutter, half from ISO, which amplifies the noise), luminance noise
   plus ``chroma_noise`` times as much per-channel noise (no chroma draws when 0), spatially correlated by a
   blur of ``noise_blur_sigma_px`` (demosaicing smears it);
5. **image processing** on the BT.601 luma and the chroma (RGB minus luma): chroma gain
   ``1 + saturation_boost``, then chroma magnitudes above ``chroma_knee_grey`` grey levels compressed by
   ``chroma_knee_slope`` (a camera's colour processing keeps strong colours inside its gamut: a boost that
   lifts dull colours must not turn lawns neon); edge-preserving luma noise reduction of range sigma ``k * denoise_grey`` grey
   levels, at most ``denoise_max_grey`` when that is set (flat areas lose their grain, fine low-contrast detail smears,
   edges stay; the cap keeps a metered-up frame from being smoothed into flat patches, "ours"); chroma smoothing by a
   Gaussian of ``k * chroma_denoise_sigma_px``; unsharp-mask sharpening of the luma (``sharpen_amount``,
   ``sharpen_sigma_px``, detail under ``sharpen_threshold_grey`` not amplified), which leaves the halos a
   camera's sharpening leaves on edges;
6. **compression**: JPEG at ``jpeg_quality`` with chroma subsampling ``jpeg_subsampling`` (Pillow's
   0 = 4:4:4, 1 = 4:2:2, 2 = 4:2:0), decoded back to pixels.

Every random draw comes from ``numpy.random.default_rng`` seeded by the SHA-256 of the view's **key** (the
caller's identity of the view: city hash, node, yaw, pitch, size...), so the same view gives the same
pixels on every run and machine, and two views get independent noise.

Presets (:data:`CAMERAS`, ours):

* ``clean``: the identity (images bit-identical to the renderer's; frozen suites v1-v4 were drawn so);
* ``consumer360`` (version 4; version 3 let its luma noise reduction grow with the gain, which smoothed
  dusk, rain and night frames into paint-like patches; version 2 had neither the glare nor the tilt): a
  consumer 360-degree camera's frame as the shared GoPro/Insta360-class photos show it, calibrated by ``benchmarks/bench_camera.py`` against ``../shared/data/panoramas`` (luminance
  percentiles, clipped share, grain per brightness band, edge width and overshoot, blockiness, JPEG quality
  from the quantisation tables): automatic exposure (target 0.26, -1.5 to +4 EV: night views are metered up,
  noisier, their lights blown, with a halo), a black level, a tone curve, stronger colour, no lens distortion in views cut
  from a stitched panorama (the stitcher removes it), slight softness, noise mostly removed again by the
  camera's noise reduction, sharpening halos, 4:2:2 JPEG at quality 93 (the frames are cut from a larger
  compressed panorama, so their blocks are below a view's pixel: the photos' cuts show none);
* ``phone``: a hand-held phone photo (landmark reference pictures): mild barrel distortion and
  vignetting, less noise, 4:2:0 JPEG at quality 85.

Protocol overlays that a paper defines (360CityArena's red branch arrows) are drawn *after* the camera, as
the paper's interface draws them over the video frame.
"""

from __future__ import annotations

import functools
import hashlib
import io
import math
from dataclasses import asdict, dataclass

import cv2
import numpy as np
from PIL import Image

from urbanarena.render import camera_isp as ISP


@dataclass(frozen=True)
class CameraModel:
    """One camera (module docstring); all parameters 0 = that step off."""

    name: str
    #: the preset's pixel version: bumped whenever its processing or parameters change what it delivers (part
    #: of :meth:`describe` and of run configs, :func:`camera_version_entry`); not a processing step
    version: int = 0
    auto_exposure_target: float = 0.0
    auto_exposure_min_ev: float = 0.0
    auto_exposure_max_ev: float = 0.0
    exposure_sd_ev: float = 0.0
    auto_black_target: float = 0.0
    auto_black_max: float = 0.0
    white_balance_sd: float = 0.0
    distortion_k1: float = 0.0
    chromatic_aberration: float = 0.0
    vignetting: float = 0.0
    tilt_sd_deg: float = 0.0
    glare_strength: float = 0.0
    glare_sigma_px: float = 0.0
    blur_sigma_px: float = 0.0
    read_noise: float = 0.0
    shot_gain: float = 0.0
    chroma_noise: float = 0.0
    noise_blur_sigma_px: float = 0.0
    tone_contrast: float = 0.0
    saturation_boost: float = 0.0
    chroma_knee_grey: float = 0.0
    chroma_knee_slope: float = 1.0
    denoise_grey: float = 0.0
    denoise_max_grey: float = 0.0
    chroma_denoise_sigma_px: float = 0.0
    sharpen_amount: float = 0.0
    sharpen_sigma_px: float = 0.0
    sharpen_threshold_grey: float = 0.0
    jpeg_quality: int = 0
    jpeg_subsampling: int = 0

    @property
    def is_identity(self) -> bool:
        return all(v == 0 for k, v in asdict(self).items()
                   if k not in ("name", "version", "chroma_knee_slope", "glare_sigma_px", "denoise_max_grey"))

    def describe(self) -> dict:
        """The parameters (JSON-able), for configs and cards."""
        return asdict(self)

    def apply(self, img: np.ndarray, key: str, hfov_deg: float = 90.0) -> np.ndarray:
        """What this camera delivers for ``img`` (RGB ``uint8`` ``(H, W, 3)``, a pinhole view ``hfov_deg`` wide:
        the tilt needs the focal length), deterministic in ``key``.

        Returns ``img`` itself for the identity camera, else a new array of the same shape.
        Raises: ValueError: not an ``(H, W, 3)`` uint8 image.
        """
        if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
            raise ValueError(f"camera {self.name}: expected an (H, W, 3) uint8 image, got {img.shape} {img.dtype}")
        if self.is_identity:
            return img
        rng = np.random.default_rng(int.from_bytes(hashlib.sha256(f"{self.name}|{key}".encode()).digest()[:8], "little"))
        g_noise = 1.0  # the analog gain the sensor noise is amplified by (auto exposure raising it)
        if (self.exposure_sd_ev or self.white_balance_sd or self.auto_exposure_target or self.tone_contrast
                or self.auto_black_max):
            gain = 2.0 ** float(rng.normal(0.0, self.exposure_sd_ev)) if self.exposure_sd_ev else 1.0
            wb = (1.0 + rng.normal(0.0, self.white_balance_sd, 3)).astype(np.float32) if self.white_balance_sd \
                else np.ones(3, np.float32)
            if self.auto_exposure_target:
                g_ae = ISP.auto_exposure_gain(ISP.meter_linear(img), self.auto_exposure_target,
                                              self.auto_exposure_min_ev, self.auto_exposure_max_ev)
                # half the stops from a longer exposure (no noise gain), half from ISO (noise sigma x sqrt(gain))
                gain, g_noise = gain * g_ae, math.sqrt(max(1.0, g_ae))
            # a pointwise map of each channel's 256 values (the same float32 arithmetic per value as on the image)
            black = 0.0
            if self.auto_black_max:
                black = ISP.auto_black(img, ISP.tone_lut(gain * wb, 0.0), self.auto_black_target, self.auto_black_max)
            lut = ISP.tone_lut(gain * wb, self.tone_contrast, black)
            x = cv2.LUT(img, lut.T.reshape(256, 1, 3).copy())
            if self.glare_strength:
                x = ISP.veiling_glare(x, ISP.clipped_excess(img, gain * wb), self.glare_strength,
                                      self.glare_sigma_px)
        else:
            x = img.astype(np.float32) / 255.0
        if self.tilt_sd_deg:
            roll, pitch = np.clip(rng.normal(0.0, self.tilt_sd_deg, 2), -TILT_MAX_DEG, TILT_MAX_DEG)
            x = ISP.tilt_view(x, hfov_deg, float(roll), float(pitch))
        if self.distortion_k1 or self.chromatic_aberration:
            x = _lens(x, self.distortion_k1, self.chromatic_aberration)
        if self.vignetting:
            x = x * _vignette(x.shape[0], x.shape[1], self.vignetting)[..., None]
        if self.blur_sigma_px:
            x = cv2.GaussianBlur(x, (0, 0), self.blur_sigma_px, borderType=cv2.BORDER_REFLECT)
        v = x * 255.0
        if self.read_noise or self.shot_gain:
            luma = v @ np.array([0.299, 0.587, 0.114], np.float32)
            sigma = np.sqrt((self.read_noise * g_noise) ** 2
                            + (self.shot_gain * g_noise) * np.clip(luma, 0.0, 255.0)).astype(np.float32)
            h, w = luma.shape
            n_l = rng.standard_normal((h, w), dtype=np.float32)
            # no chroma draws at all when chroma_noise is 0 (the luminance noise's draws stay the same)
            n_c = rng.standard_normal((h, w, 3), dtype=np.float32) * self.chroma_noise if self.chroma_noise else None
            if self.noise_blur_sigma_px:
                # smearing lowers the noise's sigma: rescale so the per-pixel sigma stays the stated one
                s = self.noise_blur_sigma_px
                n_l = cv2.GaussianBlur(n_l, (0, 0), s) * _blur_gain(s)
                if n_c is not None:
                    n_c = cv2.GaussianBlur(n_c, (0, 0), s) * _blur_gain(s)
            if n_c is None:
                v = v + (n_l * sigma)[..., None]
            else:
                v = v + (n_l[..., None] + n_c) * sigma[..., None]
        if self.saturation_boost or self.chroma_knee_grey or self.denoise_grey or self.chroma_denoise_sigma_px or self.sharpen_amount:
            v = self._process(v, g_noise)
        out = np.clip(np.rint(v), 0, 255).astype(np.uint8)
        if self.jpeg_quality:
            buf = io.BytesIO()
            Image.fromarray(out).save(buf, format="JPEG", quality=int(self.jpeg_quality),
                                      subsampling=int(self.jpeg_subsampling), optimize=False)
            out = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"), dtype=np.uint8).copy()
        return out

    def denoise_range_grey(self, g_noise: float) -> float:
        """The luma noise reduction's range sigma (grey levels) at noise gain ``g_noise`` (``>= 1``):
        ``denoise_grey * g_noise``, capped at ``denoise_max_grey`` when that is set (module docstring, step 5)."""
        r = self.denoise_grey * g_noise
        return min(r, self.denoise_max_grey) if self.denoise_max_grey else r

    def _process(self, v: np.ndarray, g_noise: float) -> np.ndarray:
        """The ISP's luma/chroma stages on ``v`` ``(H, W, 3)`` float32 grey levels: split into BT.601 luma and
        the RGB difference from it (chroma), luma noise reduction (range sigma ``denoise_grey`` times the square
        root of the noise gain ``g_noise``), chroma smoothing, luma sharpening; recombined."""
        y = v @ ISP.LUMA_601
        chroma = v - y[..., None]
        if self.saturation_boost:
            chroma *= np.float32(1.0 + self.saturation_boost)
        if self.chroma_knee_grey:
            chroma = ISP.compress_chroma(chroma, self.chroma_knee_grey, self.chroma_knee_slope)
        if self.denoise_grey:
            y = ISP.denoise_luma(y, self.denoise_range_grey(g_noise))
        if self.chroma_denoise_sigma_px:
            chroma = cv2.GaussianBlur(chroma, (0, 0), self.chroma_denoise_sigma_px * g_noise,
                                      borderType=cv2.BORDER_REFLECT_101)
        if self.sharpen_amount:
            y = ISP.unsharp_luma(y, self.sharpen_amount, self.sharpen_sigma_px, self.sharpen_threshold_grey)
        return y[..., None] + chroma


def _blur_gain(sigma: float) -> float:
    """Factor that restores unit variance to white noise blurred by a Gaussian of ``sigma`` pixels: the
    blurred noise's variance is the sum of the squared 2-D kernel, ``(sum k^2)^2`` for the separable 1-D
    kernel ``k``."""
    return _BLUR_GAINS.setdefault(round(sigma, 4), _measure_blur_gain(sigma))


_BLUR_GAINS: dict[float, float] = {}


def _measure_blur_gain(sigma: float) -> float:
    k = cv2.getGaussianKernel(int(2 * math.ceil(3 * sigma) + 1), sigma).ravel()
    return float(1.0 / math.sqrt(float((k ** 2).sum()) ** 2))


def _lens(x: np.ndarray, k1: float, ca: float) -> np.ndarray:
    """Radial distortion ``k1`` and lateral chromatic aberration ``ca`` (module docstring) by remapping."""
    maps = _lens_maps(x.shape[0], x.shape[1], k1, ca)
    out = np.empty_like(x)
    for c, (mx, my) in enumerate(maps):
        out[..., c] = cv2.remap(x[..., c], mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
    return out


@functools.lru_cache(maxsize=16)
def _lens_maps(h: int, w: int, k1: float, ca: float) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """Per channel (R, G, B) the ``cv2.remap`` source coordinates ``(mx, my)`` ``(h, w)`` float32 of
    :func:`_lens` (cached per size: the maps depend on nothing else)."""
    cx, cy = (w - 1) / 2.0, (h - 1) / 2.0
    half_diag = math.hypot(cx, cy)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    dx, dy = (xx - cx) / half_diag, (yy - cy) / half_diag
    r2 = dx * dx + dy * dy
    maps = []
    for scale in (1.0 + ca, 1.0, 1.0 - ca):
        f = (1.0 - k1 * r2) * scale  # where the output pixel's light came from (r_u / r_d), times the CA scale
        mx = (cx + dx * f * half_diag).astype(np.float32)
        my = (cy + dy * f * half_diag).astype(np.float32)
        mx.flags.writeable = my.flags.writeable = False
        maps.append((mx, my))
    return tuple(maps)


def _vignette(h: int, w: int, strength: float) -> np.ndarray:
    """``1`` at the centre falling to ``1 - strength`` at the corners (``cos^4`` of a pseudo angle)."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    r = np.hypot((xx - (w - 1) / 2.0) / ((w - 1) / 2.0), (yy - (h - 1) / 2.0) / ((h - 1) / 2.0)) / math.sqrt(2.0)
    theta = np.arctan(r * math.tan(math.radians(40.0)))
    fall = np.cos(theta) ** 4
    corner = math.cos(math.radians(40.0)) ** 4
    return (1.0 - strength * (1.0 - fall) / (1.0 - corner)).astype(np.float32)


#: a drawn roll or pitch is clipped to this many degrees
TILT_MAX_DEG = 4.0

#: the presets (module docstring); values of consumer360 from benchmarks/bench_camera.py
CAMERAS: dict[str, CameraModel] = {
    "clean": CameraModel("clean"),
    "consumer360": CameraModel("consumer360", version=4, auto_exposure_target=0.26, auto_exposure_min_ev=-1.5,
                               auto_exposure_max_ev=4.0, glare_strength=0.03, glare_sigma_px=12.0, tilt_sd_deg=1.2,
                               exposure_sd_ev=0.15, white_balance_sd=0.02,
                               auto_black_target=0.04, auto_black_max=0.12, tone_contrast=0.5,
                               saturation_boost=0.4, chroma_knee_grey=60.0, chroma_knee_slope=0.35,
                               chromatic_aberration=0.0008, blur_sigma_px=0.45, read_noise=1.0,
                               shot_gain=0.01, chroma_noise=0.0, noise_blur_sigma_px=0.6, denoise_grey=4.0,
                               denoise_max_grey=4.0, chroma_denoise_sigma_px=1.0, sharpen_amount=1.3,
                               sharpen_sigma_px=1.8, sharpen_threshold_grey=2.5, jpeg_quality=93, jpeg_subsampling=1),
    "phone": CameraModel("phone", exposure_sd_ev=0.2, white_balance_sd=0.03, distortion_k1=-0.04,
                         chromatic_aberration=0.0006, vignetting=0.22, blur_sigma_px=0.55, read_noise=0.9,
                         shot_gain=0.012, chroma_noise=0.3, noise_blur_sigma_px=0.6, jpeg_quality=85,
                         jpeg_subsampling=2),
}
#: the camera of each render style when none is asked for: the styles drawn before the camera model keep
#: their pixels (``clean``); the photographic style is seen through a 360 camera
DEFAULT_CAMERA_OF_STYLE = {"flat": "clean", "realistic": "clean", "photo": "consumer360"}
#: the camera of landmark reference photos when the views use a given camera (a reference is a hand-held
#: picture, not a frame of the agent's 360 camera)
REFERENCE_CAMERA_OF = {"clean": "clean", "consumer360": "phone", "phone": "phone"}


def camera_names() -> list[str]:
    return sorted(CAMERAS)


def get_camera(name: str) -> CameraModel:
    """The preset ``name``.

    Raises: ValueError: unknown name (the message lists the presets).
    """
    try:
        return CAMERAS[name]
    except KeyError:
        raise ValueError(f"unknown camera {name!r}; cameras: {', '.join(camera_names())}") from None


def camera_version_entry(name: str) -> dict:
    """What a run's config records of camera ``name``'s pixel version: ``{"camera_version": v}`` for a preset
    whose :attr:`CameraModel.version` is above 0 (its pixels changed since the camera model's first
    presets), else ``{}`` (``clean`` and ``phone``: configs recorded before versions keep their hashes).

    Raises: ValueError: unknown name."""
    v = get_camera(name).version
    return {"camera_version": int(v)} if v else {}


def default_camera(style: str | None) -> str:
    """The camera a style's views use when none is given (:data:`DEFAULT_CAMERA_OF_STYLE`; unknown: clean)."""
    return DEFAULT_CAMERA_OF_STYLE.get(str(style or "flat"), "clean")


def views_carry_attribution(camera: str) -> bool:
    """Whether first-person views and reference photos get the attribution stamp: only through the
    ``clean`` camera (the images of frozen suites v1-v4 carry it). A photographic camera's images carry
    none, as a street photo does not; the attribution stays in the metadata, on maps, in reports and
    cards (ODbL asks for it where the data is shown, which those do)."""
    return camera == "clean"


__all__ = ["CAMERAS", "DEFAULT_CAMERA_OF_STYLE", "REFERENCE_CAMERA_OF", "CameraModel", "camera_names",
           "camera_version_entry", "default_camera", "get_camera", "views_carry_attribution"]
