"""Red branch arrows drawn on a perspective view at their true bearing.

Each branch (a direction the agent can choose at a decision point) is drawn as
a flat arrow lying on the ground plane, pointing away from the camera along
the branch's compass bearing, projected through the same pinhole camera as
the view (:class:`urbanarena.render.views.Camera`). The camera stands
``camera_height_m`` above flat ground. At pitch 0 a ground line along bearing
``b`` projects onto the single image column ``u = cx + f tan(b - yaw)``, so
an arrow's axis (and its tip) lies on that column.

Placement: the arrow's near end is on the ground at the depression angle
``near_frac`` of the way from the top of the visible ground (the horizon, or
the top edge when looking down) to the bottom edge of the view (angles
measured on the central column), its tip ``length_factor`` times farther
away; its width is ``width_factor`` times the near distance. This keeps
arrows in the lower part of the view whatever the field of view or pitch.

An arrow is drawn only when its bearing lies inside the horizontal field of
view and the ground near it is visible (looking up too far hides the ground:
the arrow is then reported as not drawn with the reason). Labels (``LEFT``,
``UP``, ``A`` ...) are written next to the arrow's near end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import cv2
import numpy as np

from urbanarena.render.views import Camera
from urbanarena.world.geo import wrap_deg

RED = (230, 20, 20)
WHITE = (255, 255, 255)
BLACK = (0, 0, 0)


@dataclass(frozen=True)
class Branch:
    """A branch to draw: compass bearing (degrees clockwise from north) and its label."""

    bearing_deg: float
    label: str


@dataclass(frozen=True)
class ArrowPlacement:
    """Where (and whether) a branch arrow was drawn.

    Attributes:
        tip_px: ``(u, v)`` pixel coordinate of the arrow tip (integers at pixel
            centres) or ``None`` when not drawn.
        base_px: ``(u, v)`` of the centre of the arrow's near end, or ``None``.
        reason: ``""`` when drawn, else why not (``"outside view"``, ``"ground not visible"``).
    """

    branch: Branch
    drawn: bool
    tip_px: tuple[float, float] | None
    base_px: tuple[float, float] | None
    reason: str = ""


def _signed(d: float) -> float:
    d = wrap_deg(d)
    return d - 360.0 if d >= 180.0 else d


def draw_branch_arrows(
    view: np.ndarray,
    camera_yaw_deg: float,
    pitch_deg: float,
    hfov_deg: float,
    branches: Sequence[Branch | tuple[float, str]],
    *,
    camera_height_m: float = 2.5,
    near_frac: float = 0.55,
    length_factor: float = 1.9,
    width_factor: float = 0.38,
    color: tuple[int, int, int] = RED,
    outline: tuple[int, int, int] | None = WHITE,
    inplace: bool = False,
) -> tuple[np.ndarray, list[ArrowPlacement]]:
    """Draw red ground-plane arrows for ``branches`` on a view.

    Args:
        view: ``(H, W, 3)`` RGB ``uint8`` view cut at (``camera_yaw_deg``,
            ``pitch_deg``, ``hfov_deg``).
        camera_yaw_deg: compass yaw of the view (degrees clockwise from north).
        pitch_deg: pitch of the view (degrees, up positive).
        branches: :class:`Branch` or ``(bearing_deg, label)`` pairs.
        camera_height_m: camera height above the ground plane, metres.
        color: RGB fill colour (default red).
        outline: RGB outline colour or ``None``.
        inplace: draw into ``view`` instead of a copy.
    Returns:
        ``(image, placements)`` — the drawn image and one :class:`ArrowPlacement` per branch (same order).
    """
    img = view if inplace else view.copy()
    h, w = img.shape[:2]
    cam = Camera(camera_yaw_deg, pitch_deg, hfov_deg, w, h)
    half_vfov = math.degrees(math.atan((h / 2.0) / cam.f))
    # depression (below horizontal) of the near end, on the central column
    bottom_dep = min(half_vfov - pitch_deg, 89.0)
    top_dep = max(-pitch_deg - half_vfov, 0.0)
    near_dep = top_dep + near_frac * (bottom_dep - top_dep)
    placements: list[ArrowPlacement] = []
    font = cv2.FONT_HERSHEY_SIMPLEX
    scale = max(0.4, h / 720.0)
    thick = max(1, int(round(h / 360.0)))
    for br in branches:
        b = br if isinstance(br, Branch) else Branch(float(br[0]), str(br[1]))
        rel = _signed(b.bearing_deg - camera_yaw_deg)
        if abs(rel) >= hfov_deg / 2.0:
            placements.append(ArrowPlacement(b, False, None, None, "outside view"))
            continue
        if bottom_dep <= 1.0 or near_dep <= 1.0:
            placements.append(ArrowPlacement(b, False, None, None, "ground not visible"))
            continue
        d0 = camera_height_m / math.tan(math.radians(near_dep))
        d1 = d0 * length_factor
        half_w = 0.5 * width_factor * d0
        a = math.radians(b.bearing_deg)
        fwd = np.array([math.sin(a), math.cos(a), 0.0])
        side = np.array([math.cos(a), -math.sin(a), 0.0])
        down = np.array([0.0, 0.0, -camera_height_m])
        dh = d0 + 0.62 * (d1 - d0)  # start of the head
        pts = np.array([
            fwd * d0 - side * half_w * 0.5,
            fwd * dh - side * half_w * 0.5,
            fwd * dh - side * half_w * 1.2,
            fwd * d1,
            fwd * dh + side * half_w * 1.2,
            fwd * dh + side * half_w * 0.5,
            fwd * d0 + side * half_w * 0.5,
        ]) + down
        uv, front = cam.project(pts)
        if not bool(np.all(front)):
            placements.append(ArrowPlacement(b, False, None, None, "ground not visible"))
            continue
        poly = np.round(uv * 16.0).astype(np.int32)  # 4 fractional bits for sub-pixel accuracy
        if outline is not None:
            cv2.polylines(img, [poly], True, outline, thickness=thick + 2, lineType=cv2.LINE_AA, shift=4)
        cv2.fillPoly(img, [poly], color, lineType=cv2.LINE_AA, shift=4)
        base_uv, _ = cam.project((fwd * d0 + down)[None, :])
        tip = (float(uv[3, 0]), float(uv[3, 1]))
        base = (float(base_uv[0, 0]), float(base_uv[0, 1]))
        if b.label:
            (tw, th), _ = cv2.getTextSize(b.label, font, scale, thick)
            tx = int(round(base[0] - tw / 2))
            ty = int(round(base[1] + th + 6 * scale))
            tx = min(max(tx, 2), max(2, w - tw - 2))
            ty = min(max(ty, th + 2), h - 3)
            cv2.putText(img, b.label, (tx, ty), font, scale, BLACK, thick + 2, cv2.LINE_AA)
            cv2.putText(img, b.label, (tx, ty), font, scale, WHITE, thick, cv2.LINE_AA)
        placements.append(ArrowPlacement(b, True, tip, base))
    return img, placements


def relative_labels(bearings_deg: Sequence[float], travel_deg: float, straight_tol_deg: float = 30.0) -> list[str]:
    """360CityArena-style labels: ``UP`` within ``straight_tol_deg`` of the travel direction,
    else ``LEFT``/``RIGHT`` by the sign of the turn (clockwise = right). Duplicates get a suffix (``LEFT2``)."""
    labels: list[str] = []
    seen: dict[str, int] = {}
    for b in bearings_deg:
        t = _signed(b - travel_deg)
        lab = "UP" if abs(t) <= straight_tol_deg else ("RIGHT" if t > 0 else "LEFT")
        seen[lab] = seen.get(lab, 0) + 1
        labels.append(lab if seen[lab] == 1 else f"{lab}{seen[lab]}")
    return labels


def letter_labels(n: int) -> list[str]:
    """``A, B, C, ...`` (CitySeeker-style choice labels), ``n <= 26``."""
    if n > 26:
        raise ValueError("at most 26 letter labels")
    return [chr(ord("A") + i) for i in range(n)]
