"""Perspective views cut from equirectangular panoramas.

Conventions
-----------
Panorama (``W x H``, ``W = 2H``): continuous image coordinates ``(x, y)`` with
pixel ``(i, j)`` covering ``[i, i+1) x [j, j+1)``, i.e. its centre at
``(i + 0.5, j + 0.5)``. Longitude (degrees, clockwise = to the right) and
latitude (degrees, up positive) of a continuous point are::

    lon = 360 * x / W - 180        (0 at the centre column x = W/2)
    lat = 90 - 180 * y / H         (0 at the horizon row y = H/2)

OpenCV's ``remap`` addresses pixel centres by integers, so the sampling
coordinate of ``(lon, lat)`` is ``(x - 0.5, y - 0.5)``.

Camera (pinhole, square pixels, no roll): horizontal field of view
``hfov_deg`` spans the *outer edges* of the ``width`` pixels, so the focal
length is ``f = (width / 2) / tan(hfov / 2)`` pixels and the vertical field
of view is ``2 atan((height / 2) / f)``. Output pixel ``(u, v)`` (column,
row; integers at pixel centres) has the camera ray::

    x_c = (u - (width - 1) / 2) / f      (right)
    y_c = -(v - (height - 1) / 2) / f    (up)
    z_c = 1                              (forward)

so the image centre — pixel ``((width-1)/2, (height-1)/2)``, an exact pixel
when both sizes are odd, the meeting point of the four central pixels when
they are even — looks exactly at ``(yaw, pitch)``. The camera is turned by
``pitch`` about its right axis (up positive), then by ``yaw`` about the
vertical axis (clockwise positive). Its right axis stays horizontal.

Two entry points:

* :func:`perspective_view` — ``yaw_deg`` relative to the image's centre
  column, clockwise (the standalone ``urbanarena view`` command);
* :func:`compass_view` — ``camera_yaw_deg`` an absolute compass bearing
  (degrees clockwise from true north), given the panorama's centre-column
  bearing (``heading_deg + yaw_offset_deg``, see :mod:`urbanarena.world.imagery`).

Yaw is a rotation about the vertical axis, which in an equirectangular image
is a pure horizontal shift: sampling grids are cached per (panorama size,
hfov, output size, pitch) and yaw only adds ``W * yaw / 360`` to the x map.
The x coordinate wraps (``BORDER_WRAP``) so views are seamless across the
image's left/right seam; y is clamped to the first/last row at the poles.
Interpolation is bilinear by default. Channel order is untouched (RGB in, RGB
out); ``uint8`` and ``float32`` images are supported.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Sequence

import cv2
import numpy as np

from urbanarena.world.geo import wrap_deg

_INTERP = {"linear": cv2.INTER_LINEAR, "cubic": cv2.INTER_CUBIC, "nearest": cv2.INTER_NEAREST}


def focal_length_px(hfov_deg: float, width: int) -> float:
    """Focal length in pixels: ``(width / 2) / tan(hfov / 2)`` (hfov spans the outer pixel edges)."""
    if not (0.0 < hfov_deg < 180.0):
        raise ValueError(f"hfov_deg must be in (0, 180), got {hfov_deg}")
    return (width / 2.0) / math.tan(math.radians(hfov_deg) / 2.0)


def matching_pano_width(hfov_deg: float, width: int) -> int:
    """Panorama width (pixels) whose resolution equals the view's at its centre: ``ceil(2 pi f)``.

    A panorama much wider than this is sampled sparsely (aliasing, and slower
    ``remap`` from cache misses); pass it as ``max_width`` to the panorama store.
    For a 640 px, 90 degree view: f = 320 px -> 2011 px.
    """
    return int(math.ceil(2.0 * math.pi * focal_length_px(hfov_deg, width)))


def vertical_fov_deg(hfov_deg: float, width: int, height: int) -> float:
    """Vertical field of view (degrees) of a ``width x height`` view with square pixels."""
    return math.degrees(2.0 * math.atan((height / 2.0) / focal_length_px(hfov_deg, width)))


@dataclass(frozen=True)
class Camera:
    """A pinhole camera pointing at (``yaw_deg``, ``pitch_deg``) — see the module docstring.

    ``yaw_deg`` is measured clockwise from the frame's reference direction
    (true north for compass yaw, the image centre column for panorama-relative
    yaw). World vectors are ``(right-of-reference, reference, up)`` — i.e.
    (east, north, up) for compass yaw.
    """

    yaw_deg: float
    pitch_deg: float
    hfov_deg: float
    width: int
    height: int

    @property
    def f(self) -> float:
        """Focal length, pixels."""
        return focal_length_px(self.hfov_deg, self.width)

    @property
    def cx(self) -> float:
        return (self.width - 1) / 2.0

    @property
    def cy(self) -> float:
        return (self.height - 1) / 2.0

    def basis(self) -> np.ndarray:
        """3x3 array whose rows are the camera's right, up and forward unit vectors in world coordinates."""
        psi = math.radians(self.yaw_deg)
        th = math.radians(self.pitch_deg)
        sp, cp, st, ct = math.sin(psi), math.cos(psi), math.sin(th), math.cos(th)
        right = (cp, -sp, 0.0)
        up = (-sp * st, -cp * st, ct)
        fwd = (sp * ct, cp * ct, st)
        return np.array([right, up, fwd], dtype=np.float64)

    def project(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Project world points/directions ``(..., 3)`` to pixel coordinates.

        Returns:
            ``(uv, in_front)``: ``uv`` ``(..., 2)`` float pixel coordinates
            (integers at pixel centres; NaN where the point is behind the
            camera) and the boolean mask ``in_front`` (``z_c > 0``).
        """
        pc = np.asarray(points, dtype=np.float64) @ self.basis().T
        z = pc[..., 2]
        front = z > 1e-9
        with np.errstate(divide="ignore", invalid="ignore"):
            u = self.cx + self.f * pc[..., 0] / z
            v = self.cy - self.f * pc[..., 1] / z
        uv = np.stack([u, v], axis=-1)
        uv[~front] = np.nan
        return uv, front

    def direction_of_pixel(self, u: float, v: float) -> tuple[float, float]:
        """``(yaw_deg, pitch_deg)`` of the ray through pixel coordinate ``(u, v)``; yaw in [0, 360)."""
        ray = np.array([(u - self.cx) / self.f, -(v - self.cy) / self.f, 1.0])
        d = ray @ self.basis()
        return wrap_deg(math.degrees(math.atan2(d[0], d[1]))), math.degrees(math.atan2(d[2], math.hypot(d[0], d[1])))

    def pixel_of_direction(self, yaw_deg: float, pitch_deg: float) -> tuple[float, float] | None:
        """Pixel coordinate ``(u, v)`` where direction (``yaw_deg``, ``pitch_deg``) appears, or ``None`` if behind."""
        a, e = math.radians(yaw_deg), math.radians(pitch_deg)
        uv, front = self.project(np.array([math.sin(a) * math.cos(e), math.cos(a) * math.cos(e), math.sin(e)]))
        return (float(uv[0]), float(uv[1])) if bool(front) else None


@dataclass
class GridStats:
    """Counters of the sampling-grid cache."""

    hits: int = 0
    misses: int = 0
    items: int = 0


class ViewRenderer:
    """Cuts perspective views with ``cv2.remap`` and caches the sampling grids.

    Args:
        max_grids: number of (panorama size, hfov, output size, pitch) grids
            kept (LRU). A 640x360 grid takes 1.8 MB.
        interpolation: ``"linear"`` (default), ``"cubic"`` or ``"nearest"``.
    """

    def __init__(self, max_grids: int = 64, interpolation: str = "linear"):
        if interpolation not in _INTERP:
            raise ValueError(f"interpolation must be one of {sorted(_INTERP)}")
        self.interpolation = interpolation
        self.max_grids = max_grids
        self._grids: OrderedDict[tuple, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()
        self._stats = GridStats()

    # -------------------------------------------------------------- grids
    @staticmethod
    def _base_grid(pano_w: int, pano_h: int, pitch_deg: float, hfov_deg: float, width: int, height: int):
        cam = Camera(0.0, pitch_deg, hfov_deg, width, height)
        f = cam.f
        xs = (np.arange(width, dtype=np.float64) - cam.cx) / f
        ys = -(np.arange(height, dtype=np.float64) - cam.cy) / f
        b = cam.basis()  # rows: right, up, forward (world: right-of-centre, centre, up)
        # world ray = x * right + y * up + 1 * forward, separable in x and y
        X = xs[None, :] * b[0, 0] + ys[:, None] * b[1, 0] + b[2, 0]
        Y = xs[None, :] * b[0, 1] + ys[:, None] * b[1, 1] + b[2, 1]
        Z = xs[None, :] * b[0, 2] + ys[:, None] * b[1, 2] + b[2, 2]
        lon = np.arctan2(X, Y)  # radians, clockwise from the centre column
        lat = np.arctan2(Z, np.hypot(X, Y))
        mx = (lon / (2.0 * np.pi) + 0.5) * pano_w - 0.5
        my = (0.5 - lat / np.pi) * pano_h - 0.5
        np.clip(my, 0.0, pano_h - 1.0, out=my)
        return mx.astype(np.float32), my.astype(np.float32)

    def _grid(self, pano_w: int, pano_h: int, pitch_deg: float, hfov_deg: float, width: int, height: int):
        key = (pano_w, pano_h, float(pitch_deg), float(hfov_deg), width, height)
        with self._lock:
            g = self._grids.get(key)
            if g is not None:
                self._grids.move_to_end(key)
                self._stats.hits += 1
                return g
            self._stats.misses += 1
        g = self._base_grid(pano_w, pano_h, pitch_deg, hfov_deg, width, height)
        with self._lock:
            self._grids[key] = g
            while len(self._grids) > self.max_grids:
                self._grids.popitem(last=False)
        return g

    def maps(self, pano_w: int, pano_h: int, yaw_deg: float, pitch_deg: float, hfov_deg: float,
             width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
        """``cv2.remap`` sampling maps ``(map_x, map_y)`` (float32, ``(height, width)``) for a view.

        ``map_x`` lies in ``[-0.5, W - 0.5)``: sample it with ``BORDER_WRAP`` so the
        seam columns interpolate across the left/right edge.
        """
        _check_view_args(pitch_deg, hfov_deg, width, height, yaw_deg)
        mx0, my = self._grid(pano_w, pano_h, pitch_deg, hfov_deg, width, height)
        shift = np.float32(wrap_deg(yaw_deg) / 360.0 * pano_w)
        mx = mx0 + shift
        # bring x back into [-0.5, W - 0.5): remap's in-bounds fast path; only the seam columns wrap
        np.subtract(mx, np.float32(pano_w), out=mx, where=mx >= pano_w - 0.5)
        return mx, my

    @property
    def grid_stats(self) -> GridStats:
        with self._lock:
            return GridStats(self._stats.hits, self._stats.misses, len(self._grids))

    # --------------------------------------------------------------- views
    def view(self, pano: np.ndarray, yaw_deg: float, pitch_deg: float, hfov_deg: float,
             width: int, height: int) -> np.ndarray:
        """Perspective view; ``yaw_deg`` clockwise from the panorama's centre column, ``pitch_deg`` up.

        Args:
            pano: ``(H, W, C)`` (or ``(H, W)``) ``uint8``/``float32`` equirectangular image.
            hfov_deg: horizontal field of view in (0, 180) degrees.
            width, height: output size in pixels.
        Returns:
            ``(height, width, C)`` array of the same dtype and channel order.
        Raises:
            ValueError: bad angles/sizes or a panorama that is not 2:1.
        """
        ph, pw = pano.shape[:2]
        if ph < 2 or abs(pw - 2 * ph) > 1:
            raise ValueError(f"panorama must be 2:1 equirectangular, got {pw}x{ph}")
        mx, my = self.maps(pw, ph, yaw_deg, pitch_deg, hfov_deg, width, height)
        interp = _INTERP[self.interpolation]
        if interp != cv2.INTER_NEAREST:
            m1, m2 = cv2.convertMaps(mx, my, cv2.CV_16SC2)
            return cv2.remap(pano, m1, m2, interp, borderMode=cv2.BORDER_WRAP)
        return cv2.remap(pano, mx, my, interp, borderMode=cv2.BORDER_WRAP)

    def compass_view(self, pano: np.ndarray, camera_yaw_deg: float, pitch_deg: float, hfov_deg: float,
                     width: int, height: int, centre_bearing_deg: float) -> np.ndarray:
        """Perspective view at an absolute compass yaw.

        Args:
            camera_yaw_deg: degrees clockwise from true north.
            centre_bearing_deg: compass bearing of the panorama's centre column
                (``heading_deg + yaw_offset_deg`` of the node).
        """
        return self.view(pano, camera_yaw_deg - centre_bearing_deg, pitch_deg, hfov_deg, width, height)


def _check_view_args(pitch_deg: float, hfov_deg: float, width: int, height: int, yaw_deg: float = 0.0) -> None:
    if not math.isfinite(yaw_deg):
        raise ValueError(f"yaw_deg must be a finite number of degrees, got {yaw_deg}")
    if not (isinstance(width, (int, np.integer)) and isinstance(height, (int, np.integer))) or width < 1 or height < 1:
        raise ValueError(f"view size must be positive integers, got {width}x{height}")
    if not (0.0 < hfov_deg < 180.0):
        raise ValueError(f"hfov_deg must be in (0, 180), got {hfov_deg}")
    if not (-90.0 <= pitch_deg <= 90.0) or not math.isfinite(pitch_deg):
        raise ValueError(f"pitch_deg must be in [-90, 90], got {pitch_deg}")


#: Module-wide renderer used by the functions below (grids shared across calls).
DEFAULT_RENDERER = ViewRenderer()


def perspective_view(pano: np.ndarray, yaw_deg: float = 0.0, pitch_deg: float = 0.0, hfov_deg: float = 90.0,
                     width: int = 640, height: int = 360) -> np.ndarray:
    """Perspective view with ``yaw_deg`` clockwise from the image's centre column and ``pitch_deg`` up.

    See :meth:`ViewRenderer.view` and the module docstring for conventions.
    """
    return DEFAULT_RENDERER.view(pano, yaw_deg, pitch_deg, hfov_deg, width, height)


def compass_view(pano: np.ndarray, camera_yaw_deg: float, pitch_deg: float, hfov_deg: float, width: int,
                 height: int, heading_deg: float, yaw_offset_deg: float = 0.0) -> np.ndarray:
    """Perspective view at compass yaw ``camera_yaw_deg`` from a panorama whose centre column
    faces ``heading_deg + yaw_offset_deg`` (degrees clockwise from true north)."""
    return DEFAULT_RENDERER.compass_view(pano, camera_yaw_deg, pitch_deg, hfov_deg, width, height,
                                         heading_deg + yaw_offset_deg)


def node_view(store, node: str, camera_yaw_deg: float, pitch_deg: float = 0.0, hfov_deg: float = 90.0,
              width: int = 640, height: int = 360, renderer: ViewRenderer | None = None) -> np.ndarray:
    """View from ``node``'s panorama in a :class:`~urbanarena.render.panorama_store.PanoramaStore`
    at compass yaw ``camera_yaw_deg``."""
    r = renderer or DEFAULT_RENDERER
    return r.compass_view(store.get(node), camera_yaw_deg, pitch_deg, hfov_deg, width, height,
                          store.centre_bearing_deg(node))


def parse_size(text: str) -> tuple[int, int]:
    """Parse ``"WxH"`` (e.g. ``"640x360"``) into ``(width, height)``. Raises ``ValueError``."""
    parts = text.lower().replace("×", "x").split("x")
    if len(parts) != 2:
        raise ValueError(f"size must look like WIDTHxHEIGHT, got {text!r}")
    try:
        w, h = int(parts[0]), int(parts[1])
    except ValueError as e:
        raise ValueError(f"size must look like WIDTHxHEIGHT, got {text!r}") from e
    if w < 1 or h < 1 or w > 16384 or h > 16384:
        raise ValueError(f"size out of range (1..16384): {text!r}")
    return w, h


def bearings_in_view(bearings_deg: Sequence[float], camera_yaw_deg: float, hfov_deg: float) -> list[bool]:
    """For each compass bearing, whether it lies strictly inside the view's horizontal field of view."""
    half = hfov_deg / 2.0
    out = []
    for b in bearings_deg:
        d = wrap_deg(b - camera_yaw_deg)
        d = d - 360.0 if d >= 180.0 else d
        out.append(abs(d) < half)
    return out
