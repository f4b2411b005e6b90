"""Image statistics that tell a rendered street from a photographed one (issue 14, "realism as a measured control").

Every statistic is computed on an RGB ``uint8`` image ``(H, W, 3)`` after a 5 x 5 Gaussian blur with
sigma 1.2 (``cv2.GaussianBlur``, borders reflected without repeating the edge pixel, OpenCV's default),
so that pixel noise does not count as structure:

* **flat share** -- the fraction of pixels whose 5 x 5 neighbourhood (centred; reflected borders) has a
  grey-level standard deviation (population, over the 25 values) below 1 grey level; grey is
  ``cv2.cvtColor(RGB2GRAY)`` of the blurred image (ITU-R BT.601 weights, rounded to ``uint8``);
* **edge density** -- the fraction of pixels that ``cv2.Canny(grey, 50, 150)`` marks as edges;
* **colour diversity** -- the number of distinct RGB colours of the blurred image quantised to 5 bits per
  channel (``value >> 3``), at most 32768;
* **spectral slope** (issue 24; computed on the *unblurred* grey image) -- the slope of a least-squares line
  through ``log10`` power against ``log10`` frequency of the radially averaged power spectrum, the grey
  image (float, mean removed) windowed by a 2-D Hann window, over radial frequencies from
  :data:`SLOPE_F_MIN` to :data:`SLOPE_F_MAX` cycles per pixel in 24 log-spaced bins (ours). Natural images
  fall near -2 (power ~ 1/f^2); flat-shaded renders are steeper or carry aliasing peaks.

Two camera measures for calibrating :mod:`urbanarena.render.camera_model` (``benchmarks/bench_camera.py``):
:func:`noise_sigma` (the residual of plane fits in the flattest tenth of 8x8 tiles) and :func:`jpeg_quality_estimate` (the IJG quality whose scaled standard
luminance table is closest to a JPEG file's first quantisation table).

Which views (ours; issue 14 fixes the view, not the sample): 640 x 360 perspective views with a 90-degree
horizontal field of view, level, at yaws 0/90/180/270 degrees -- for rendered cities at pose nodes (eye 1.7 m),
for photos cut from equirectangular panoramas with :func:`urbanarena.render.views.perspective_view` (yaw
relative to the photo's centre column).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Iterable

import cv2
import numpy as np

#: the view every statistic is measured on (issue 14)
VIEW_WIDTH, VIEW_HEIGHT, VIEW_HFOV_DEG = 640, 360, 90.0
VIEW_YAWS_DEG = (0.0, 90.0, 180.0, 270.0)
BLUR_KSIZE, BLUR_SIGMA = 5, 1.2
FLAT_STD_GREY = 1.0
CANNY_LOW, CANNY_HIGH = 50, 150
#: issue 14's targets for the realistic style's median view
TARGET_FLAT_SHARE_MAX, TARGET_EDGE_DENSITY_MIN = 0.40, 0.055


@dataclass(frozen=True)
class RealismStats:
    """The statistics of one image (module docstring): ``flat_share`` and ``edge_density`` in [0, 1],
    ``colour_diversity`` a count of 5-bit colours."""

    flat_share: float
    edge_density: float
    colour_diversity: int
    spectral_slope: float = float("nan")

    def as_dict(self) -> dict:
        return {"flat_share": self.flat_share, "edge_density": self.edge_density,
                "colour_diversity": self.colour_diversity, "spectral_slope": self.spectral_slope}


def blurred(img: np.ndarray) -> np.ndarray:
    """The 5 x 5, sigma 1.2 Gaussian blur every statistic starts from (same shape and dtype)."""
    a = np.asarray(img)
    if a.ndim != 3 or a.shape[2] != 3 or a.dtype != np.uint8:
        raise ValueError(f"expected an RGB uint8 image (H, W, 3), got {a.dtype} {a.shape}")
    return cv2.GaussianBlur(np.ascontiguousarray(a), (BLUR_KSIZE, BLUR_KSIZE), BLUR_SIGMA)


def local_std(grey: np.ndarray, size: int = 5) -> np.ndarray:
    """Population standard deviation of each pixel's ``size x size`` neighbourhood (reflected borders)."""
    g = grey.astype(np.float64)
    m = cv2.boxFilter(g, -1, (size, size), normalize=True, borderType=cv2.BORDER_REFLECT_101)
    m2 = cv2.boxFilter(g * g, -1, (size, size), normalize=True, borderType=cv2.BORDER_REFLECT_101)
    return np.sqrt(np.maximum(m2 - m * m, 0.0))


def realism_stats(img: np.ndarray) -> RealismStats:
    """Flat share, edge density and colour diversity of an RGB ``uint8`` image (module docstring).

    Raises:
        ValueError: not an ``(H, W, 3)`` ``uint8`` array.
    """
    b = blurred(img)
    grey = cv2.cvtColor(b, cv2.COLOR_RGB2GRAY)
    flat = float(np.mean(local_std(grey) < FLAT_STD_GREY))
    edges = float(np.mean(cv2.Canny(grey, CANNY_LOW, CANNY_HIGH) > 0))
    q = (b >> 3).astype(np.int32)
    colours = int(np.unique(q[..., 0] << 10 | q[..., 1] << 5 | q[..., 2]).size)
    return RealismStats(flat, edges, colours, spectral_slope(cv2.cvtColor(np.ascontiguousarray(img), cv2.COLOR_RGB2GRAY)))


#: frequency band of the spectral slope fit, cycles per pixel (ours)
SLOPE_F_MIN, SLOPE_F_MAX = 0.01, 0.25


def spectral_slope(grey: np.ndarray) -> float:
    """Slope of the radially averaged power spectrum of a grey image ``(H, W)`` in log-log (module docstring)."""
    g = np.asarray(grey, dtype=np.float64)
    g = g - g.mean()
    h, w = g.shape
    g = g * np.outer(np.hanning(h), np.hanning(w))
    power = np.abs(np.fft.fftshift(np.fft.fft2(g))) ** 2
    fy = np.fft.fftshift(np.fft.fftfreq(h))[:, None]
    fx = np.fft.fftshift(np.fft.fftfreq(w))[None, :]
    f = np.hypot(fy, fx)
    edges = np.logspace(np.log10(SLOPE_F_MIN), np.log10(SLOPE_F_MAX), 25)
    idx = np.digitize(f.ravel(), edges) - 1
    ok = (idx >= 0) & (idx < 24)
    sums = np.bincount(idx[ok], weights=power.ravel()[ok], minlength=24)
    counts = np.bincount(idx[ok], minlength=24)
    centres = np.sqrt(edges[:-1] * edges[1:])
    keep = (counts > 0) & (sums > 0)
    if keep.sum() < 3:
        return float("nan")
    slope, _ = np.polyfit(np.log10(centres[keep]), np.log10(sums[keep] / counts[keep]), 1)
    return float(slope)


def noise_sigma(grey: np.ndarray, block: int = 8) -> float:
    """Noise of a grey image ``(H, W)`` where it is flat: the image cut into ``block x block`` tiles, a plane
    fitted to each tile by least squares (gradients are not noise), the standard deviation of each tile's
    residual, and the 10th percentile of those over tiles whose mean is above 20 (not black). Ours; texture
    raises it, so it is measured on the flattest tenth of the picture (sky, walls, road). For pure white noise
    of sigma ``s`` it reads about ``0.85 s`` (the 10th percentile of the tiles' spread): a measure for
    comparing pictures with each other, not an unbiased estimate."""
    g = np.asarray(grey, dtype=np.float64)
    b = int(block)
    h, w = (g.shape[0] // b) * b, (g.shape[1] // b) * b
    tiles = g[:h, :w].reshape(h // b, b, w // b, b).transpose(0, 2, 1, 3).reshape(-1, b * b)
    yy, xx = np.mgrid[0:b, 0:b]
    a = np.stack([np.ones(b * b), yy.ravel(), xx.ravel()], 1)
    coef, *_ = np.linalg.lstsq(a, tiles.T, rcond=None)
    sd = (tiles - (a @ coef).T).std(1)[tiles.mean(1) > 20]
    return float(np.percentile(sd, 10)) if sd.size else float("nan")


#: the standard JPEG luminance quantisation table (ITU-T T.81 Annex K), natural (row-major) order
_STD_LUMA = np.array([16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56,
                      14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
                      49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99], np.float64)


def ijg_table(quality: int) -> np.ndarray:
    """The IJG (libjpeg) luminance table at ``quality`` 1..100 (scale 5000/q below 50, 200 - 2q above)."""
    q = max(1, min(100, int(quality)))
    scale = 5000 / q if q < 50 else 200 - 2 * q
    return np.clip(np.floor((_STD_LUMA * scale + 50) / 100), 1, 255)


def jpeg_quality_estimate(path: str | Path) -> int | None:
    """The IJG quality whose luminance table is nearest (least squares) to the file's first quantisation
    table; ``None`` for a file without one (not a JPEG). Pillow gives the table in natural order."""
    from PIL import Image

    with Image.open(path) as im:
        tables = getattr(im, "quantization", None)
        if not tables:
            return None
        t = np.array(tables[min(tables)], np.float64)
    return int(min(range(1, 101), key=lambda q: float(((ijg_table(q) - t) ** 2).sum())))


def summarise(stats: Iterable[RealismStats]) -> dict:
    """``{"views": n, "median": {...}, "mean": {...}}`` over a set of views (``spectral_slope`` over the views
    that have one, left out when none has)."""
    rows = list(stats)
    if not rows:
        return {"views": 0, "median": None, "mean": None}
    keys = ["flat_share", "edge_density", "colour_diversity"]
    if any(np.isfinite(r.spectral_slope) for r in rows):
        keys.append("spectral_slope")

    def vals(k: str) -> list[float]:
        return [float(getattr(r, k)) for r in rows if np.isfinite(float(getattr(r, k)))]

    return {"views": len(rows), "median": {k: float(median(vals(k))) for k in keys},
            "mean": {k: float(np.mean(vals(k))) for k in keys}}


def photo_views(path: str | Path) -> list[np.ndarray]:
    """The four measured views (:data:`VIEW_YAWS_DEG` from the centre column) of an equirectangular photo.

    Raises:
        ImageFormatError: the file cannot be decoded or is not 2:1.
    """
    from urbanarena.errors import ImageFormatError
    from urbanarena.render.views import perspective_view

    p = Path(path)
    arr = cv2.imdecode(np.fromfile(p, dtype=np.uint8), cv2.IMREAD_COLOR)
    if arr is None:
        raise ImageFormatError(p, None, "cannot decode the photo")
    h, w = arr.shape[:2]
    if abs(w - 2 * h) > 2:
        raise ImageFormatError(p, None, f"not an equirectangular (2:1) panorama: {w}x{h}")
    pano = np.ascontiguousarray(arr[..., ::-1])
    return [perspective_view(pano, yaw, 0.0, VIEW_HFOV_DEG, VIEW_WIDTH, VIEW_HEIGHT) for yaw in VIEW_YAWS_DEG]


def default_photos(shared: str | Path | None = None) -> list[Path]:
    """The real equirectangular photos shipped in the shared data (``<shared>/panoramas/**/*.jpg`` except
    ``bad/``), sorted; ``[]`` when the folder is absent. ``shared`` defaults to ``$URBANARENA_SHARED_DATA``,
    else the checkout's ``../shared/data``."""
    import os

    if shared is None:
        env = os.environ.get("URBANARENA_SHARED_DATA")
        shared = Path(env) if env else Path(__file__).resolve().parents[3].parent / "shared" / "data"
    root = Path(shared) / "panoramas"
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*.jpg") if "bad" not in p.relative_to(root).parts)


def sample_nodes(node_ids: Iterable[str], n: int) -> list[str]:
    """``n`` node ids in SHA-256-of-id order (a fixed, spread-out sample; ours)."""
    return sorted(node_ids, key=lambda k: hashlib.sha256(k.encode()).hexdigest())[:n]


__all__ = [
    "RealismStats", "blurred", "local_std", "realism_stats", "summarise", "photo_views", "default_photos",
    "sample_nodes", "VIEW_WIDTH", "VIEW_HEIGHT", "VIEW_HFOV_DEG", "VIEW_YAWS_DEG",
    "TARGET_FLAT_SHARE_MAX", "TARGET_EDGE_DENSITY_MIN",
]
