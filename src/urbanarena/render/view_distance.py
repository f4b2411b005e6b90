"""How far a picture is from the views an agent can take: the view-distance measure of ``landmark_image``
reference photos (issue 19, "image goals that are not text"; the measure and its threshold are ours).

Distance of two RGB pictures ``a`` and ``b`` (:func:`view_distance`): ``1 - SSIM`` of their grey levels
(ITU-R BT.601 luma) after both are resampled (``cv2.INTER_AREA``) to :data:`COMPARE_SIZE_PX` (80 x 60).
SSIM is Wang et al. 2004 exactly as scikit-image's ``structural_similarity(..., gaussian_weights=True,
sigma=1.5, use_sample_covariance=False, data_range=255)`` computes it (Gaussian window of sigma 1.5
truncated at 3.5 sigma, reflected borders, ``K1 = 0.01``, ``K2 = 0.03``, the mean over the picture
less a 5-pixel border): the local means and moments are OpenCV separable filters with the same
11-tap kernel and border (scikit-image's filter is ``scipy.ndimage.gaussian_filter``; hundreds of views
per goal node are compared, about 15x faster this way; the tests check the values against
scikit-image's function, a test dependency). It lies in ``[0, 2]``: 0 for identical
pictures, about 1 for unrelated ones (no structure in common), above 1 for anti-correlated ones. The
bottom :data:`IGNORED_BOTTOM_FRACTION` of both pictures (where reference photos carry their attribution
stamp) is left out. Working at 80 x 60 makes the measure about the layout of the picture -- facades,
street, sky line -- rather than about exact pixels, so small changes of materials or a few people
drawn into a panorama move it little.

The views an agent can take at a node (:func:`agent_view_grid`): under the arena protocols the camera
turns by 24, 30, 60 or 90 degrees (``A``/``D``, ``Q``/``E``; :mod:`urbanarena.env.arena_env`), so its
yaw and pitch move on a 6-degree lattice (the greatest common divisor) offset by the arrival heading,
which can be any bearing. The grid samples yaw every :data:`YAW_STEP_DEG` (6) degrees all round and
pitch from -30 to +30 degrees every 6 (beyond that a view shows mostly ground or sky, never a
storefront picture). Every view is cut from the node's panorama with the *reference's* camera (field of
view and aspect), the comparison most favourable to a match: a reference photo taken at the node with
the agent's camera would then be at distance ~0.

:func:`min_view_distance` is the smallest distance over those views; the ``landmark_image``
generator rejects a reference whose smallest distance to the views at its goal nodes is below
:data:`REFERENCE_MIN_DISTANCE` (docs/task-generation.md gives the measured distributions behind it).
"""

from __future__ import annotations

from typing import Iterable, Sequence

import cv2
import numpy as np

#: the measure's id, recorded with each check (``extra.reference_check.measure``)
MEASURE_ID = "1-ssim-grey-80x60"
#: pictures are compared at this size (width, height), pixels
COMPARE_SIZE_PX = (80, 60)
#: bottom share of the picture left out (the attribution stamp of reference photos)
IGNORED_BOTTOM_FRACTION = 0.1
#: yaw spacing of the agent's views, degrees (the arena's turn steps move on a 6-degree lattice)
YAW_STEP_DEG = 6.0
#: pitches of the agent's views, degrees (up positive)
PITCHES_DEG = tuple(float(p) for p in range(-30, 31, 6))
#: grid views refined around, and the refinement step (yaw and pitch), degrees
REFINE_BEST = 6
REFINE_STEP_DEG = 1.0
#: a reference photo closer than this to any view at its goal nodes is rejected (too easy: a pixel match)
REFERENCE_MIN_DISTANCE = 0.5


def _grey(img: np.ndarray, size: tuple[int, int] = COMPARE_SIZE_PX) -> np.ndarray:
    a = np.asarray(img)
    if a.ndim != 3 or a.shape[2] != 3 or a.dtype != np.uint8 or a.shape[0] < 2 or a.shape[1] < 2:
        raise ValueError(f"expected an RGB uint8 picture (H, W, 3), got {a.dtype} {a.shape}")
    g = cv2.cvtColor(np.ascontiguousarray(a), cv2.COLOR_RGB2GRAY)
    w, h = size
    g = cv2.resize(g, (w, h), interpolation=cv2.INTER_AREA)
    return g[: h - int(round(h * IGNORED_BOTTOM_FRACTION))]


def view_distance(a: np.ndarray, b: np.ndarray) -> float:
    """``1 - SSIM`` of two RGB ``uint8`` pictures (any sizes; module docstring), in ``[0, 2]``.

    Raises:
        ValueError: a picture is not RGB ``uint8`` ``(H, W, 3)`` of at least 2 x 2 pixels.
    """
    return float(_distances(_grey(a), _grey(b)[None])[0])


#: SSIM constants (Wang et al. 2004) and the Gaussian window (scikit-image's defaults with gaussian_weights)
_K1, _K2, _SIGMA, _TRUNCATE, _DATA_RANGE = 0.01, 0.03, 1.5, 3.5, 255.0


def ssim_stack(ref: np.ndarray, stack: np.ndarray) -> np.ndarray:
    """Mean SSIM of the grey picture ``ref`` ``(H, W)`` against every picture of ``stack`` ``(N, H, W)``
    (module docstring: scikit-image's definition, in single precision: within 1e-4 of it); returns
    ``(N,)`` floats."""
    x = np.asarray(ref, np.float32)[None]
    y = np.asarray(stack, np.float32)
    if y.ndim != 3 or y.shape[1:] != x.shape[1:]:
        raise ValueError(f"ssim_stack: stack {y.shape} does not match the reference {x.shape[1:]}")
    half = int(_TRUNCATE * _SIGMA + 0.5)  # 5: scipy's kernel radius
    k = np.exp(-0.5 * (np.arange(-half, half + 1) / _SIGMA) ** 2)
    k = (k / k.sum()).astype(np.float32)

    def blur(a: np.ndarray) -> np.ndarray:  # scipy's mode="reflect" is OpenCV's BORDER_REFLECT
        return np.stack([cv2.sepFilter2D(p, cv2.CV_32F, k, k, borderType=cv2.BORDER_REFLECT) for p in a])

    ux, uy = blur(x), blur(y)
    vx = blur(x * x) - ux * ux
    vy = blur(y * y) - uy * uy
    vxy = blur(x * y) - ux * uy
    c1, c2 = (_K1 * _DATA_RANGE) ** 2, (_K2 * _DATA_RANGE) ** 2
    s = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux * ux + uy * uy + c1) * (vx + vy + c2))
    return s[:, half:-half, half:-half].mean(axis=(1, 2), dtype=np.float64)


#: views compared per batch (keeps the temporaries in cache: about 3x faster than one batch of 660)
_CHUNK = 64


def _distances(g: np.ndarray, stack: np.ndarray) -> np.ndarray:
    return np.clip(1.0 - ssim_stack(g, stack), 0.0, 2.0)


def agent_view_grid(yaw_step_deg: float = YAW_STEP_DEG, pitches_deg: Sequence[float] = PITCHES_DEG,
                    ) -> list[tuple[float, float]]:
    """``(yaw_deg, pitch_deg)`` of the sampled agent views (module docstring): yaw ``0, step, ...`` below
    360 (compass), every pitch of ``pitches_deg``.

    Raises:
        ValueError: a step that is not in ``(0, 360]``.
    """
    if not 0.0 < yaw_step_deg <= 360.0:
        raise ValueError(f"yaw_step_deg must be in (0, 360], got {yaw_step_deg}")
    yaws = np.arange(0.0, 360.0 - 1e-9, float(yaw_step_deg))
    return [(float(y), float(p)) for p in pitches_deg for y in yaws]


def min_view_distance(reference: np.ndarray, views: Iterable[np.ndarray]) -> tuple[float, int]:
    """The smallest :func:`view_distance` from ``reference`` to ``views`` and the index of that view.

    Raises:
        ValueError: no views, or a picture that is not RGB ``uint8``.
    """
    views = list(views)
    if not views:
        raise ValueError("min_view_distance: no views to compare with")
    d = _stack_distances(_grey(reference), views)
    arg = int(np.argmin(d))
    return float(d[arg]), arg


def node_views(pano: np.ndarray, centre_bearing_deg: float, hfov_deg: float, width: int, height: int,
               grid: Sequence[tuple[float, float]] | None = None, cut_width: int = COMPARE_SIZE_PX[0],
               ) -> list[np.ndarray]:
    """Perspective views of an equirectangular ``pano`` (centre column facing ``centre_bearing_deg``) at
    every ``(compass yaw, pitch)`` of ``grid`` (default :func:`agent_view_grid`), with the camera
    ``hfov_deg`` and the aspect of ``width x height``; cut ``cut_width`` pixels wide (default
    :data:`COMPARE_SIZE_PX`'s width, the size they are compared at). Returns RGB ``uint8`` pictures."""
    from urbanarena.render.views import compass_view

    w = int(cut_width)
    h = max(2, int(round(w * height / width)))
    return [compass_view(pano, yaw, pitch, hfov_deg, w, h, centre_bearing_deg)
            for yaw, pitch in (grid if grid is not None else agent_view_grid())]


def min_node_distance(reference: np.ndarray, pano: np.ndarray, centre_bearing_deg: float, hfov_deg: float,
                      ) -> tuple[float, float, float]:
    """The smallest :func:`view_distance` from ``reference`` to the views an agent can take at the node
    of ``pano`` (module docstring), cut with the reference's field of view and aspect. A view between
    two grid yaws is reachable too (the arrival heading is any bearing), and SSIM at 80 x 60 falls off
    within a degree or two, so the search is coarse to fine: the distance at half the size (40 x 30,
    smooth over the grid's spacing) over :func:`agent_view_grid` picks the :data:`REFINE_BEST` best
    views, and the measure proper is taken around each, yaw and pitch within half a grid step by
    :data:`REFINE_STEP_DEG`. Returns ``(distance, yaw_deg, pitch_deg)`` of the closest view found.

    Raises:
        ValueError: a picture that is not RGB ``uint8``.
    """
    h, w = reference.shape[:2]
    grid = agent_view_grid()
    half_size = (COMPARE_SIZE_PX[0] // 2, COMPARE_SIZE_PX[1] // 2)
    small = shrink_panorama(pano, hfov_deg, half_size[0])
    coarse = _stack_distances(_grey(reference, half_size),
                              node_views(small, centre_bearing_deg, hfov_deg, w, h, grid, half_size[0]), half_size)
    seeds = [grid[i] for i in np.argsort(coarse, kind="stable")[:REFINE_BEST]]
    half = YAW_STEP_DEG / 2.0
    offs = np.arange(-half, half + 1e-9, REFINE_STEP_DEG)
    fine = sorted({(round((y + dy) % 360.0, 3), round(p + dp, 3)) for y, p in seeds for dy in offs for dp in offs})
    dist = _stack_distances(_grey(reference),
                            node_views(shrink_panorama(pano, hfov_deg), centre_bearing_deg, hfov_deg, w, h, fine))
    best = int(np.argmin(dist))
    return float(dist[best]), float(fine[best][0]), float(fine[best][1])


def shrink_panorama(pano: np.ndarray, hfov_deg: float, view_width: int = COMPARE_SIZE_PX[0]) -> np.ndarray:
    """``pano`` resampled (``cv2.INTER_AREA``) so that a view of ``hfov_deg`` spans about ``view_width``
    of its columns (views cut from it are then not aliased, as the reference shrunk with ``INTER_AREA``
    is not); unchanged when it is that small already."""
    pw = int(round(view_width * 360.0 / max(float(hfov_deg), 1.0)))
    pw += pw % 2
    if pano.shape[1] <= pw:
        return pano
    return cv2.resize(np.ascontiguousarray(pano), (pw, pw // 2), interpolation=cv2.INTER_AREA)


def _stack_distances(g: np.ndarray, views: Sequence[np.ndarray],
                     size: tuple[int, int] = COMPARE_SIZE_PX) -> np.ndarray:
    stack = np.stack([_grey(v, size) for v in views])
    return np.concatenate([_distances(g, stack[i:i + _CHUNK]) for i in range(0, len(stack), _CHUNK)])


__all__ = ["COMPARE_SIZE_PX", "IGNORED_BOTTOM_FRACTION", "MEASURE_ID", "PITCHES_DEG", "REFERENCE_MIN_DISTANCE",
           "YAW_STEP_DEG",
           "agent_view_grid", "min_node_distance", "min_view_distance", "node_views", "shrink_panorama", "ssim_stack",
           "view_distance"]
