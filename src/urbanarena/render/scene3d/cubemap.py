"""Camera and cube-map geometry of the 3D renderer: view and projection matrices, cube face size and order, and the
cube-strip -> equirectangular panorama remap tables."""

from __future__ import annotations

import math
from functools import lru_cache

import cv2
import numpy as np

from urbanarena.render.views import Camera


def view_matrix(eye: np.ndarray, yaw_deg: float, pitch_deg: float) -> np.ndarray:
    """4x4 world -> OpenGL eye matrix (camera looks down -z; x right, y up) for the views.Camera basis."""
    b = Camera(yaw_deg, pitch_deg, 90.0, 1, 1).basis()  # rows right, up, forward
    R = np.stack([b[0], b[1], -b[2]])
    M = np.eye(4)
    M[:3, :3] = R
    M[:3, 3] = -R @ np.asarray(eye, dtype=np.float64)
    return M


def projection_matrix(hfov_deg: float, width: int, height: int, near: float, far: float) -> np.ndarray:
    """4x4 OpenGL perspective matrix with ``tan(hfov/2)`` spanning ``width/2`` pixels and square pixels."""
    fx = 1.0 / math.tan(math.radians(hfov_deg) / 2.0)
    fy = fx * width / height
    P = np.zeros((4, 4))
    P[0, 0], P[1, 1] = fx, fy
    P[2, 2] = (far + near) / (near - far)
    P[2, 3] = 2 * far * near / (near - far)
    P[3, 2] = -1.0
    return P


def cube_face_size(pano_width: int) -> int:
    """Cube face size ``S = ceil(W / pi)``: face focal length ``S/2`` equals the panorama's ``W / 2 pi`` px/rad."""
    return int(math.ceil(pano_width / math.pi))


#: Cube faces as (yaw offset from the panorama centre, pitch), degrees.
CUBE_FACES = ((0.0, 0.0), (90.0, 0.0), (180.0, 0.0), (270.0, 0.0), (0.0, 90.0), (0.0, -90.0))


@lru_cache(maxsize=4)
def equirect_maps(width: int, height: int, face: int, pad: int) -> tuple[np.ndarray, np.ndarray]:
    """Fixed-point ``cv2.remap`` maps from a ``6P x P`` face strip (``P = face + 2 pad``) to the panorama."""
    P = face + 2 * pad
    lon = (np.arange(width, dtype=np.float64) + 0.5) / width * 2 * np.pi - np.pi
    lat = np.pi / 2 - (np.arange(height, dtype=np.float64) + 0.5) / height * np.pi
    cl = np.cos(lat)[:, None]
    d = np.stack([np.sin(lon)[None, :] * cl, np.cos(lon)[None, :] * cl,
                  np.broadcast_to(np.sin(lat)[:, None], (height, width))], axis=-1)
    bases = np.stack([Camera(y, p, 90.0, 1, 1).basis() for y, p in CUBE_FACES])  # (6, 3, 3)
    fwd = bases[:, 2, :]
    k = np.argmax(d @ fwd.T, axis=-1)  # (H, W)
    B = bases[k]  # (H, W, 3, 3)
    c = np.einsum("hwij,hwj->hwi", B, d)
    f = face / 2.0
    cx = (P - 1) / 2.0
    mx = (cx + f * c[..., 0] / c[..., 2] + k * P).astype(np.float32)
    my = (cx - f * c[..., 1] / c[..., 2]).astype(np.float32)
    m1, m2 = cv2.convertMaps(mx, my, cv2.CV_16SC2)
    return m1, m2


__all__ = ["CUBE_FACES", "cube_face_size", "equirect_maps", "projection_matrix", "view_matrix"]
