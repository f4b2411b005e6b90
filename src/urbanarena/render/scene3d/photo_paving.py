"""The ``photo`` style's paving slabs (issue 24; blind-sort tell "uniform tiled paving"): laid, worn slabs instead of
one perfect 0.5 m grid.

Photo style only: ``pp_paving`` replaces the realistic ``paving`` call in the ground program through
:data:`.photo_materials.GROUND_SWAPS` (the photo grain, dirt and stains still multiply it); ``flat`` and
``realistic`` never see it. World ground coordinates ``p`` (metres, x east, y north); ``aa`` is the pixel's
footprint on the ground (metres, :data:`.photo_ground.AA`).

* **Fields** of :data:`FIELD_M` square (world-aligned cells) are each laid in one pattern, from the field's hash
  ``fh = rhash(field, 111)``: ``k = (fh & 255) / 255``; ``k < 0.5`` square slabs of :data:`SQUARE_M`; ``k < 0.8``
  running bond of :data:`BOND_M` (long side along x, every other row shifted half a slab); else the same along y.
  Each field's stone batch differs in tone by up to :data:`FIELD_TONE` (from ``fh >> 8``).
* **Slabs** (hash ``sh = rhash(slab, 112) ^ fh``): tone ``1 - SLAB_TONE / 2 + SLAB_TONE t`` (``t`` the low 10
  bits over 1023); a few odd slabs (``o`` = bits 10-17 over 255): ``o < NEW_P`` a newer, lighter replacement
  (:data:`NEW_TONE`), else ``o < NEW_P + DARK_P`` a stained, darker one (:data:`DARK_TONE`).
* **Joints**: dark sand and dirt (:data:`JOINT_RGB`, mixed by :data:`JOINT_A`) within a half width of
  ``JOINT_M (0.7 + 0.6 n)`` of a slab's edge, ``n`` a value noise of wavelength 0.33 m (uneven joints), the edge
  smoothed over ``aa``: with distance the lines melt into the slab tone instead of aliasing.
* **Cracks**: a slab whose bits 18-25 are below :data:`CRACK_LIMIT` (7 %) carries one straight crack through a
  point near its middle at an angle from bits 26-31; a dark line of half width :data:`CRACK_M` (smoothed over
  ``aa``), depth :data:`CRACK_A`.

Twin :func:`paving_albedo` (numpy). Constants are ours, chosen by eye against the shared street photos.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

from urbanarena.render.scene3d.photo_ground import _smooth, rhash_np, vnoise_np

#: bumped whenever the paving's pixels change (part of the photo materials' identity)
PAVING_VERSION = "photo-paving-1"
FIELD_M = 23.0
SQUARE_M = (0.5, 0.5)
BOND_M = (0.6, 0.3)
BASE_RGB = (0.6, 0.59, 0.565)
FIELD_TONE = 0.08
SLAB_TONE = 0.1
NEW_P, NEW_TONE = 0.04, 1.16
DARK_P, DARK_TONE = 0.06, 0.8
JOINT_M, JOINT_A, JOINT_RGB = 0.006, 0.65, (0.22, 0.21, 0.19)
JOINT_NOISE_M = 0.33
CRACK_LIMIT, CRACK_M, CRACK_A = 18, 0.003, 0.55

GLSL = f"""
// photo paving (photo_paving.py): fields of slabs in one pattern, per-slab tone, odd slabs, uneven joints, cracks
vec3 pp_paving(vec2 p, float aa) {{
    ivec2 fc = ivec2(floor(p / {FIELD_M:.3f}));
    uint fh = rhash(uvec3(uvec2(fc), 111u));
    float k = float(fh & 255u) / 255.0;
    vec2 s = k < 0.5 ? vec2({SQUARE_M[0]:.4f}, {SQUARE_M[1]:.4f})
           : (k < 0.8 ? vec2({BOND_M[0]:.4f}, {BOND_M[1]:.4f}) : vec2({BOND_M[1]:.4f}, {BOND_M[0]:.4f}));
    vec2 q = p / s;
    if (k >= 0.5 && k < 0.8) q.x += 0.5 * mod(floor(q.y), 2.0);
    if (k >= 0.8) q.y += 0.5 * mod(floor(q.x), 2.0);
    vec2 slab = floor(q);
    uint sh = rhash(uvec3(uvec2(ivec2(slab)), 112u)) ^ fh;
    float t = float(sh & 1023u) / 1023.0;
    float o = float((sh >> 10u) & 255u) / 255.0;
    float ft = {1 - FIELD_TONE / 2:.4f} + {FIELD_TONE:.4f} * float((fh >> 8u) & 255u) / 255.0;
    vec3 a = vec3{BASE_RGB} * ft * ({1 - SLAB_TONE / 2:.4f} + {SLAB_TONE:.4f} * t);
    a *= o < {NEW_P:.4f} ? {NEW_TONE:.4f} : (o < {NEW_P + DARK_P:.4f} ? {DARK_TONE:.4f} : 1.0);
    vec2 f = (q - slab) * s;
    vec2 e = min(f, s - f);
    float jw = {JOINT_M:.4f} * (0.7 + 0.6 * vnoise(p / {JOINT_NOISE_M:.3f}, 113u));
    float joint = 1.0 - smoothstep(jw - aa, jw + aa, min(e.x, e.y));
    a = mix(a, vec3{JOINT_RGB}, {JOINT_A:.4f} * joint);
    if (((sh >> 18u) & 255u) < {CRACK_LIMIT}u) {{
        float ang = float(sh >> 26u) / 63.0 * 3.14159265;
        uint ch = rhash(uvec3(uvec2(ivec2(slab)), 114u));
        vec2 c = s * (0.3 + 0.4 * vec2(float(ch & 255u), float((ch >> 8u) & 255u)) / 255.0);
        float dl = abs(dot(f - c, vec2(-sin(ang), cos(ang))));
        a *= 1.0 - {CRACK_A:.4f} * (1.0 - smoothstep({CRACK_M:.4f} - aa, {CRACK_M:.4f} + aa, dl));
    }}
    return a;
}}
"""

#: the call the photo ground uses in place of the realistic ``paving(p)``
CALL = "pp_paving(p, (fwidth(p.x) + fwidth(p.y)))"


def source_identity() -> str:
    """sha256 (12 hex) of the paving's GLSL, call and version."""
    return hashlib.sha256((PAVING_VERSION + GLSL + CALL).encode()).hexdigest()[:12]


def field_pattern(p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(fh, slab_size_m (..., 2), k)`` of the fields holding ground points ``p`` ``(..., 2)`` (module
    docstring)."""
    p = np.asarray(p, np.float64)
    fc = np.floor(p / FIELD_M).astype(np.int64)
    with np.errstate(over="ignore"):
        fh = rhash_np(fc[..., 0], fc[..., 1], 111)
    k = (fh & 255) / 255.0
    s = np.where((k < 0.5)[..., None], SQUARE_M, np.where((k < 0.8)[..., None], BOND_M, BOND_M[::-1]))
    return fh, s, k


def slab_coords(p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(slab (..., 2) integer cell, f (..., 2) position inside the slab in metres, s (..., 2) slab size, fh)``
    at ground points ``p`` ``(..., 2)``."""
    p = np.asarray(p, np.float64)
    fh, s, k = field_pattern(p)
    q = p / s
    q[..., 0] += np.where((k >= 0.5) & (k < 0.8), 0.5 * np.mod(np.floor(q[..., 1]), 2.0), 0.0)
    q[..., 1] += np.where(k >= 0.8, 0.5 * np.mod(np.floor(q[..., 0]), 2.0), 0.0)
    slab = np.floor(q)
    return slab, (q - slab) * s, s, fh


def paving_albedo(p: np.ndarray, aa: float) -> np.ndarray:
    """Twin of ``pp_paving``: the paving's albedo ``(..., 3)`` at ground points ``p`` ``(..., 2)`` (m) with pixel
    footprint ``aa`` (m, > 0); float64."""
    p = np.asarray(p, np.float64)
    slab, f, s, fh = slab_coords(p)
    si = slab.astype(np.int64)
    with np.errstate(over="ignore"):
        sh = rhash_np(si[..., 0], si[..., 1], 112) ^ fh
        ch = rhash_np(si[..., 0], si[..., 1], 114)
    t = (sh & 1023) / 1023.0
    o = ((sh >> 10) & 255) / 255.0
    ft = 1 - FIELD_TONE / 2 + FIELD_TONE * ((fh >> 8) & 255) / 255.0
    a = np.asarray(BASE_RGB) * (ft * (1 - SLAB_TONE / 2 + SLAB_TONE * t))[..., None]
    odd = np.where(o < NEW_P, NEW_TONE, np.where(o < NEW_P + DARK_P, DARK_TONE, 1.0))
    a = a * odd[..., None]
    e = np.minimum(f, s - f)
    jw = JOINT_M * (0.7 + 0.6 * vnoise_np(p / JOINT_NOISE_M, 113))
    joint = 1.0 - _smooth(jw - aa, jw + aa, e.min(-1))
    a = a + (np.asarray(JOINT_RGB) - a) * (JOINT_A * joint)[..., None]
    cracked = ((sh >> 18) & 255) < CRACK_LIMIT
    ang = (sh >> 26) / 63.0 * math.pi
    c = s * (0.3 + 0.4 * np.stack([ch & 255, (ch >> 8) & 255], -1) / 255.0)
    dl = np.abs(((f - c) * np.stack([-np.sin(ang), np.cos(ang)], -1)).sum(-1))
    crack = 1.0 - _smooth(CRACK_M - aa, CRACK_M + aa, dl)
    return a * (1.0 - CRACK_A * crack * cracked)[..., None]


__all__ = ["CALL", "CRACK_LIMIT", "FIELD_M", "GLSL", "PAVING_VERSION", "field_pattern", "paving_albedo",
           "slab_coords", "source_identity"]
