"""Irradiance from an environment map by 9-coefficient spherical harmonics (Ramamoorthi & Hanrahan 2001, "An
Efficient Representation for Irradiance Environment Maps"), in numpy; the ``photo`` style's ambient light
(:mod:`.photo_sky`).

Directions are world unit vectors (x east, y north, z up). An **equirectangular map** ``(H, W, C)`` has row ``r``
(0 = top) at elevation ``e = pi/2 - (r + 0.5) pi / H`` and column ``c`` at map longitude
``phi = 2 pi (c + 0.5) / W``; the map is turned by ``rot_rad``: the column at ``phi`` is seen at compass azimuth
``a = phi - rot_rad`` (clockwise from north), ``d = (sin a cos e, cos a cos e, sin e)``, and each texel covers the
solid angle ``cos e (pi / H) (2 pi / W)`` sr.

:func:`sh_project` gives the radiance coefficients ``L_lm = sum L(d) Y_lm(d) dw`` (real SH, bands 0-2, in the
order ``(0,0) (1,-1) (1,0) (1,1) (2,-2) (2,-1) (2,0) (2,1) (2,2)``), :func:`irradiance_coeffs` the coefficients
``c_k`` of the irradiance ``E(n) = sum_k c_k P_k(n)`` over the polynomials :data:`POLY` ``1, y, z, x, xy, yz,
3z^2 - 1, xz, x^2 - y^2`` (``c_k = A_l K_k L_k``, ``A_0 = pi``, ``A_1 = 2 pi / 3``, ``A_2 = pi / 4``; ``K_k`` the
basis constants), and :func:`sh_irradiance` evaluates it (the GLSL twin is :data:`.photo_sky.SH_GLSL`). A
constant map of radiance ``L`` gives ``E = pi L`` for every normal.
"""

from __future__ import annotations

import math

import numpy as np

#: constants K_k of the real SH basis Y_k(d) = K_k P_k(d)
K = np.array([0.5 * math.sqrt(1 / math.pi),
              math.sqrt(3 / (4 * math.pi)), math.sqrt(3 / (4 * math.pi)), math.sqrt(3 / (4 * math.pi)),
              0.5 * math.sqrt(15 / math.pi), 0.5 * math.sqrt(15 / math.pi), 0.25 * math.sqrt(5 / math.pi),
              0.5 * math.sqrt(15 / math.pi), 0.25 * math.sqrt(15 / math.pi)])
#: the cosine lobe's band factors A_l of each coefficient
A = np.array([math.pi] + [2 * math.pi / 3] * 3 + [math.pi / 4] * 5)
POLY = ("1", "y", "z", "x", "xy", "yz", "3z^2-1", "xz", "x^2-y^2")


def poly(d: np.ndarray) -> np.ndarray:
    """The polynomials :data:`POLY` of unit directions ``d`` ``(..., 3)``: ``(..., 9)``."""
    x, y, z = d[..., 0], d[..., 1], d[..., 2]
    return np.stack([np.ones_like(x), y, z, x, x * y, y * z, 3 * z * z - 1, x * z, x * x - y * y], axis=-1)


def sh_basis(d: np.ndarray) -> np.ndarray:
    """Real SH basis ``Y_k(d)`` of unit directions ``d`` ``(..., 3)``: ``(..., 9)``."""
    return poly(d) * K


def equirect_directions(height: int, width: int, rot_rad: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """``(d, dw)``: unit directions ``(height, width, 3)`` of the texel centres and each row's solid angle
    ``(height,)`` in sr (module docstring's convention)."""
    e = math.pi / 2 - (np.arange(height) + 0.5) * math.pi / height
    a = 2 * math.pi * (np.arange(width) + 0.5) / width - rot_rad
    ce = np.cos(e)[:, None]
    d = np.stack([np.sin(a)[None, :] * ce, np.cos(a)[None, :] * ce, np.broadcast_to(np.sin(e)[:, None],
                                                                                     (height, width))], axis=-1)
    return d, np.cos(e) * (math.pi / height) * (2 * math.pi / width)


def sh_project(env: np.ndarray, rot_rad: float = 0.0) -> np.ndarray:
    """Radiance coefficients ``L_k`` ``(9, C)`` of the equirectangular map ``env`` ``(H, W, C)`` turned by
    ``rot_rad`` (module docstring), by the midpoint rule over its texels."""
    env = np.asarray(env, np.float64)
    if env.ndim == 2:
        env = env[..., None]
    h, w = env.shape[:2]
    d, dw = equirect_directions(h, w, rot_rad)
    y = sh_basis(d) * dw[:, None, None]                       # (H, W, 9)
    return np.einsum("hwk,hwc->kc", y, env)


def irradiance_coeffs(radiance_sh: np.ndarray) -> np.ndarray:
    """``c_k`` ``(9, C)`` of ``E(n) = sum_k c_k P_k(n)`` from the radiance coefficients ``(9, C)``."""
    return np.asarray(radiance_sh, np.float64) * (A * K)[:, None]


def sh_irradiance(coeffs: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Irradiance ``(..., C)`` on unit normals ``n`` ``(..., 3)`` from :func:`irradiance_coeffs`'s ``(9, C)``."""
    return poly(np.asarray(n, np.float64)) @ np.asarray(coeffs, np.float64)


__all__ = ["equirect_directions", "irradiance_coeffs", "poly", "sh_basis", "sh_irradiance", "sh_project"]
