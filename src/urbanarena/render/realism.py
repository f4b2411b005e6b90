"""Image statistics that tell a rendered street from a photographed one (issue 14, "realism as a measured control").

Every statistic is computed on an RGB ``uint8`` image ``(H, W, 3)`` after a 5 x 5 Gaussian blur with
sigma 1.2 (``cv2.GaussianBlur``, borders reflected without repeating the edge pixel, OpenCV's default),
so that pixel noise does not count as structure:

* **flat share** -- the fraction of pixels whose 5 x 5 neighbourhood (centred; reflected borders) has a
  grey-level standard deviation (population, over the 25 values) below 1 grey level; grey is
  ``cv2.cvtColor(RGB2GRAY)`` of the blurred image (ITU-R BT.601 weights, rounded to ``uint8``);
* **edge density** -- the fraction of pixels that ``cv2.Canny(grey, 50, 150)`` marks as edges;
* **colour diversity** -- the number of distinct RGB colours of the blurred image quantised to 5 bits per
  channel (``value >> 3``), at most 32768.

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

    def as_dict(self) -> dict:
        return {"flat_share": self.flat_share, "edge_density": self.edge_density,
                "colour_diversity": self.colour_diversity}


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
    return RealismStats(flat, edges, colours)


def summarise(stats: Iterable[RealismStats]) -> dict:
    """``{"views": n, "median": {...}, "mean": {...}}`` over a set of views."""
    rows = list(stats)
    if not rows:
        return {"views": 0, "median": None, "mean": None}
    keys = ("flat_share", "edge_density", "colour_diversity")
    return {"views": len(rows),
            "median": {k: float(median(getattr(r, k) for r in rows)) for k in keys},
            "mean": {k: float(np.mean([getattr(r, k) for r in rows])) for k in keys}}


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
