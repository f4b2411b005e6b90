"""Sign legibility under a render condition: the method of ``tests/test_legibility.py`` as functions.

Used by ``tests/test_weather_legibility.py`` and ``benchmarks/bench_weather_legibility.py`` to
compare OCR legibility across weather and time of day (:mod:`.conditions`).

* Sample (:func:`legibility_sample`): the named POIs in SHA-256-of-id order whose 10 m square-on
  camera (``SignPlacement.viewpoint(10)``) and at least one of the 20 m / +-45 degree cameras stand
  outside every building footprint -- the eligibility rule of the issue-4 legibility test, so the
  first ``n`` are the first ``n`` POIs of that test's sample.
* View: 640x360, 90 degrees, eye 1.7 m, aimed at the sign centre, rendered with the condition's
  renderer; OCR reads the sign's neighbourhood -- the ID-pass bounding box of the sign plus 24 px
  (the ID pass does not depend on the condition) -- scaled by 736 / 360 as rapidocr's detector
  would scale the whole view (:func:`sign_crop`).
* Read: :func:`urbanarena.world.text_match.name_is_read` (normalised edit distance <= 0.2).
"""

from __future__ import annotations

import hashlib
import math
from typing import Callable, Sequence

import numpy as np

from urbanarena.world.text_match import name_is_read

VIEW_W, VIEW_H, VIEW_HFOV_DEG, EYE_M = 640, 360, 90.0, 1.7
#: rapidocr's detector scales a 640x360 view so its short side is 736 px
DET_SCALE = 736 / 360
PAD_PX = 24


def legibility_sample(scene, placements: Sequence, n: int) -> list[tuple[object, object]]:
    """The first ``n`` eligible ``(Poi, SignPlacement)`` of ``scene`` (module docstring), in SHA-256-of-id order.

    Args:
        scene: a :class:`~.scene.Scene`; placements: its sign placements (``SceneMeshes.placements``).
    """
    from shapely.geometry import Point, Polygon
    from shapely.strtree import STRtree

    walls = STRtree([Polygon(b.footprint, b.holes) for b in scene.buildings])

    def outside(x: float, y: float) -> bool:
        return len(walls.query(Point(x, y), predicate="intersects")) == 0

    placed = {s.poi_id: s for s in placements}
    out = []
    for p in sorted(scene.pois, key=lambda p: hashlib.sha256(p.id.encode()).hexdigest()):
        if len(out) == n:
            break
        s = placed.get(p.id)
        if s is None:
            continue
        x, y, _ = s.viewpoint(10.0)
        if outside(x, y) and any(outside(*s.viewpoint(20.0, off)[:2]) for off in (45.0, -45.0)):
            out.append((p, s))
    return out


def square_pose(placement, distance_m: float = 10.0) -> tuple[float, float, float, float]:
    """``(x_m, y_m, yaw_deg, pitch_deg)`` of the camera ``distance_m`` in front of a sign, aimed at its centre."""
    x, y, yaw = placement.viewpoint(distance_m)
    return x, y, yaw, math.degrees(math.atan2(placement.centre[2] - EYE_M, distance_m))


def sign_crop(img: np.ndarray, mask: np.ndarray, pad_px: int = PAD_PX, scale: float = DET_SCALE) -> np.ndarray:
    """The part of ``img`` ``(H, W, 3)`` around ``mask`` ``(H, W)`` bool (its bounding box + ``pad_px``, clipped;
    the whole image when the mask is empty), resized by ``scale`` (bilinear)."""
    import cv2

    rows, cols = np.nonzero(mask)
    if len(rows):
        r0, c0 = max(0, rows.min() - pad_px), max(0, cols.min() - pad_px)
        img = img[r0:rows.max() + 1 + pad_px, c0:cols.max() + 1 + pad_px]
    return cv2.resize(np.ascontiguousarray(img), None, fx=scale, fy=scale, interpolation=cv2.INTER_LINEAR)


def read_signs(renderer, vis, ocr: Callable[[np.ndarray], Sequence[str]], sample, distance_m: float = 10.0
               ) -> list[tuple[str, bool, list[str]]]:
    """For each ``(Poi, SignPlacement)`` of ``sample``: ``(name, read, OCR lines)`` from ``renderer``'s square view.

    Args:
        renderer: the :class:`~.renderer.SceneRenderer` of the condition.
        vis: a :class:`~.visibility.VisibilityPass` of the same scene (crops; any settings).
        ocr: image -> text lines.
    """
    out = []
    for p, s in sample:
        x, y, yaw, pitch = square_pose(s, distance_m)
        img = renderer.render_view(x, y, yaw, pitch, VIEW_HFOV_DEG, VIEW_W, VIEW_H, EYE_M)
        mask = vis.mask(("poi", p.id), x, y, EYE_M, yaw, pitch, VIEW_HFOV_DEG, VIEW_W, VIEW_H)
        lines = list(ocr(sign_crop(img, mask)))
        out.append((p.name, name_is_read(p.name, lines), lines))
    return out


def rapidocr_reader() -> Callable[[np.ndarray], list[str]]:
    """rapidocr configured as in the legibility test (detector rescaling off: :func:`sign_crop` scales).

    Raises:
        ImportError: rapidocr / onnxruntime not installed (the ``ocr`` extra).
    """
    from rapidocr import RapidOCR

    engine = RapidOCR(params={"Global.log_level": "warning", "Det.limit_type": "max", "Det.limit_side_len": 4000})
    return lambda img: list(engine(img).txts or ())


__all__ = ["DET_SCALE", "legibility_sample", "rapidocr_reader", "read_signs", "sign_crop", "square_pose"]
