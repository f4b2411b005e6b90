"""A camera model applied to the images an agent receives: what a real camera does to a rendered picture.

A renderer's image is razor sharp, noiseless, evenly exposed and never compressed; a street-level photo is
none of these. :class:`CameraModel` turns an RGB ``uint8`` image ``(H, W, 3)`` into what a given camera would
have delivered, in this order (each step off when its parameter is 0):

1. **exposure and white balance**: a per-image exposure offset (``exposure_sd_ev``, stops, normal) and
   per-channel gains (``white_balance_sd``, relative, normal), applied in linear light (sRGB decoded);
2. **lens**: radial distortion: a point at undistorted radius ``r_u`` appears at ``r_d`` with
   ``r_u = r_d (1 - k1 r_d^2)`` (the first-order inverse of ``r_d = r_u (1 + k1 r_u^2)``; ``distortion_k1``;
   radii normalised to the half diagonal; negative = barrel: points move towards the centre) with lateral chromatic aberration (red and blue magnified by
   ``1 ± chromatic_aberration``), and vignetting, a ``cos^4``-like fall-off of strength ``vignetting``
   at the corners;
3. **softness**: a Gaussian blur of ``blur_sigma_px`` pixels (optics, stitching and demosaicing);
4. **sensor noise**: signal-dependent Gaussian noise with variance ``read_noise^2 + shot_gain * I`` (``I``
   the 0-255 value), luminance noise plus ``chroma_noise`` times as much per-channel noise, spatially
   correlated by a blur of ``noise_blur_sigma_px`` (demosaicing and in-camera denoising smear it);
5. **compression**: JPEG at ``jpeg_quality`` with chroma subsampling ``jpeg_subsampling`` (Pillow's
   0 = 4:4:4, 1 = 4:2:2, 2 = 4:2:0), decoded back to pixels.

Every random draw comes from ``numpy.random.default_rng`` seeded by the SHA-256 of the view's **key** (the
caller's identity of the view: city hash, node, yaw, pitch, size...), so the same view gives the same
pixels on every run and machine, and two views get independent noise.

Presets (:data:`CAMERAS`, ours):

* ``clean``: the identity (images bit-identical to the renderer's; frozen suites v1-v4 were drawn so);
* ``consumer360``: a consumer 360-degree camera's frame as the shared GoPro/Insta360-class photos show
  it, calibrated by ``benchmarks/bench_camera.py`` against ``../shared/data/panoramas`` (noise sigma in
  flat regions, 10-90 % edge width, JPEG quality estimated from the quantisation tables): no lens
  distortion in views cut from a stitched panorama (the stitcher removes it), slight softness, noise,
  exposure and white-balance variation, 4:2:2 JPEG at quality 90;
* ``phone``: a hand-held phone photo (landmark reference pictures): mild barrel distortion and
  vignetting, less noise, 4:2:0 JPEG at quality 85.

Protocol overlays that a paper defines (360CityArena's red branch arrows) are drawn *after* the camera, as
the paper's interface draws them over the video frame.
"""

from __future__ import annotations

import hashlib
import io
import math
from dataclasses import asdict, dataclass

import cv2
import numpy as np
from PIL import Image


@dataclass(frozen=True)
class CameraModel:
    """One camera (module docstring); all parameters 0 = that step off."""

    name: str
    exposure_sd_ev: float = 0.0
    white_balance_sd: float = 0.0
    distortion_k1: float = 0.0
    chromatic_aberration: float = 0.0
    vignetting: float = 0.0
    blur_sigma_px: float = 0.0
    read_noise: float = 0.0
    shot_gain: float = 0.0
    chroma_noise: float = 0.0
    noise_blur_sigma_px: float = 0.0
    jpeg_quality: int = 0
    jpeg_subsampling: int = 0

    @property
    def is_identity(self) -> bool:
        return all(v == 0 for k, v in asdict(self).items() if k != "name")

    def describe(self) -> dict:
        """The parameters (JSON-able), for configs and cards."""
        return asdict(self)

    def apply(self, img: np.ndarray, key: str) -> np.ndarray:
        """What this camera delivers for ``img`` (RGB ``uint8`` ``(H, W, 3)``), deterministic in ``key``.

        Returns ``img`` itself for the identity camera, else a new array of the same shape.
        Raises: ValueError: not an ``(H, W, 3)`` uint8 image.
        """
        if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
            raise ValueError(f"camera {self.name}: expected an (H, W, 3) uint8 image, got {img.shape} {img.dtype}")
        if self.is_identity:
            return img
        rng = np.random.default_rng(int.from_bytes(hashlib.sha256(f"{self.name}|{key}".encode()).digest()[:8], "little"))
        x = img.astype(np.float32) / 255.0
        if self.exposure_sd_ev or self.white_balance_sd:
            lin = _srgb_to_linear(x)
            gain = 2.0 ** float(rng.normal(0.0, self.exposure_sd_ev)) if self.exposure_sd_ev else 1.0
            wb = (1.0 + rng.normal(0.0, self.white_balance_sd, 3)).astype(np.float32) if self.white_balance_sd \
                else np.ones(3, np.float32)
            x = _linear_to_srgb(np.clip(lin * (gain * wb), 0.0, 1.0))
        if self.distortion_k1 or self.chromatic_aberration:
            x = _lens(x, self.distortion_k1, self.chromatic_aberration)
        if self.vignetting:
            x = x * _vignette(x.shape[0], x.shape[1], self.vignetting)[..., None]
        if self.blur_sigma_px:
            x = cv2.GaussianBlur(x, (0, 0), self.blur_sigma_px, borderType=cv2.BORDER_REFLECT)
        v = x * 255.0
        if self.read_noise or self.shot_gain:
            luma = v @ np.array([0.299, 0.587, 0.114], np.float32)
            sigma = np.sqrt(self.read_noise ** 2 + self.shot_gain * np.clip(luma, 0.0, 255.0)).astype(np.float32)
            h, w = luma.shape
            n_l = rng.standard_normal((h, w), dtype=np.float32)
            n_c = rng.standard_normal((h, w, 3), dtype=np.float32) * self.chroma_noise
            if self.noise_blur_sigma_px:
                # smearing lowers the noise's sigma: rescale so the per-pixel sigma stays the stated one
                s = self.noise_blur_sigma_px
                n_l = cv2.GaussianBlur(n_l, (0, 0), s) * _blur_gain(s)
                n_c = cv2.GaussianBlur(n_c, (0, 0), s) * _blur_gain(s)
            v = v + (n_l[..., None] + n_c) * sigma[..., None]
        out = np.clip(np.rint(v), 0, 255).astype(np.uint8)
        if self.jpeg_quality:
            buf = io.BytesIO()
            Image.fromarray(out).save(buf, format="JPEG", quality=int(self.jpeg_quality),
                                      subsampling=int(self.jpeg_subsampling), optimize=False)
            out = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"), dtype=np.uint8).copy()
        return out


def _srgb_to_linear(x: np.ndarray) -> np.ndarray:
    return np.where(x <= 0.04045, x / 12.92, ((x + 0.055) / 1.055) ** 2.4).astype(np.float32)


def _linear_to_srgb(x: np.ndarray) -> np.ndarray:
    return np.where(x <= 0.0031308, x * 12.92, 1.055 * np.power(x, 1 / 2.4) - 0.055).astype(np.float32)


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
    h, w = x.shape[:2]
    cx, cy = (w - 1) / 2.0, (h - 1) / 2.0
    half_diag = math.hypot(cx, cy)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    dx, dy = (xx - cx) / half_diag, (yy - cy) / half_diag
    r2 = dx * dx + dy * dy
    out = np.empty_like(x)
    for c, scale in enumerate((1.0 + ca, 1.0, 1.0 - ca)):
        f = (1.0 - k1 * r2) * scale  # where the output pixel's light came from (r_u / r_d), times the CA scale
        mx = (cx + dx * f * half_diag).astype(np.float32)
        my = (cy + dy * f * half_diag).astype(np.float32)
        out[..., c] = cv2.remap(x[..., c], mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
    return out


def _vignette(h: int, w: int, strength: float) -> np.ndarray:
    """``1`` at the centre falling to ``1 - strength`` at the corners (``cos^4`` of a pseudo angle)."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    r = np.hypot((xx - (w - 1) / 2.0) / ((w - 1) / 2.0), (yy - (h - 1) / 2.0) / ((h - 1) / 2.0)) / math.sqrt(2.0)
    theta = np.arctan(r * math.tan(math.radians(40.0)))
    fall = np.cos(theta) ** 4
    corner = math.cos(math.radians(40.0)) ** 4
    return (1.0 - strength * (1.0 - fall) / (1.0 - corner)).astype(np.float32)


#: the presets (module docstring); values of consumer360 from benchmarks/bench_camera.py
CAMERAS: dict[str, CameraModel] = {
    "clean": CameraModel("clean"),
    "consumer360": CameraModel("consumer360", exposure_sd_ev=0.15, white_balance_sd=0.02, chromatic_aberration=0.0008,
                               blur_sigma_px=0.8, read_noise=0.75, shot_gain=0.01, chroma_noise=0.35,
                               noise_blur_sigma_px=0.6, jpeg_quality=90, jpeg_subsampling=1),
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
           "default_camera", "get_camera", "views_carry_attribution"]
