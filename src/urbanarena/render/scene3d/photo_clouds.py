"""Procedural cumulus clouds in the ``photo`` style's clear-day and dusk skies (issue 24: the real street photos
have white cumulus; the HDRI ``sunrise`` map is cloudless).

Photo style only, drawn by :func:`.photo_sky.sky_fs` into the map's sky before the tone curve (so the clouds go
through the same ACES curve and the same haze as the sky); night and the overcast weathers have none.

* **Layer**: a flat cloud layer :data:`LAYER_M` above the camera. A view direction ``d`` (unit, world: x east,
  y north, z up) meets it at ``origin + d.xy * LAYER_M / (d.z + CURVE)`` (metres; ``CURVE`` bends the plane
  down towards the horizon as the earth does, so the layer stays finite there), in noise units of
  :data:`FEATURE_M` plus the seed's offset :data:`SEED_OFFSET`. ``origin`` is the camera's ground position, so
  two places see the clouds shifted by their distance (parallax), not the same picture.
* **Density** (:func:`density`, twin of :data:`CLOUD_GLSL`'s ``cloud_fbm``): value noise on an integer lattice
  (a 32-bit integer hash, :func:`lattice_hash`, the same bits in GLSL and numpy), smoothstep-interpolated,
  :data:`OCTAVES` octaves (lacunarity 2.03, gain 0.5), normalized to 0..1, plus puffy edge detail
  (:func:`cloud_density`): :data:`DETAIL` times a billow noise (``|2 n - 1|``, rounded lobes; :func:`billow`) at
  :data:`DETAIL_SCALE` times the frequency, centred on 0. Coverage ``c = clamp((n - (1 - cover)) / SOFT, 0,
  1)``, thinned towards the horizon by ``smoothstep(HORIZON_FADE)`` of ``d.z``.
* **Light**: a second density sample :data:`SUN_STEP` noise units towards the sun (in the layer): where the
  cloud thins towards the sun its side is lit (``bright = clamp(0.55 + 4 (n - n_sun), 0, 1)``), and thick cores
  (``core = clamp((n - threshold) / 0.25, 0, 1)``) darken to the grey flat base
  (``bright (1 - CORE_SHADE core)``); colour ``mix(base, lit, bright)``, ``lit`` the light of a white card under the
  scene's sun and sky (:func:`cloud_colours`), ``base`` :data:`BASE_SHADE` of it, bluish. Near the sun the thin
  edges glow (forward scattering, ``(d . sun)^8``).
* **Composite**: ``x = mix(x, cloud, c * fade * OPACITY)`` in the sky's exposed linear light.

Constants are ours, chosen by looking at renders next to the street photos, not measured.
"""

from __future__ import annotations

import math

import numpy as np

#: height of the layer above the camera and the noise's feature size (metres); the horizon's bend
LAYER_M = 1500.0
FEATURE_M = 700.0
CURVE = 0.08
#: the seed: an offset of the noise (noise units), the same in every process
SEED_OFFSET = (37.25, -11.5)
OCTAVES = 4
LACUNARITY = 2.03
OCTAVE_SHIFT = (17.1, -9.7)
#: puffy edges: a billow noise (``|2 n - 1|``, rounded lobes) at :data:`DETAIL_SCALE` times the shape's frequency,
#: :data:`DETAIL_OCTAVES` octaves, added to the shape's density with weight :data:`DETAIL` (centred on 0)
DETAIL = 0.2
DETAIL_SCALE = 4.0
DETAIL_OCTAVES = 2
DETAIL_SHIFT = (5.3, 11.9)
#: share of the sky the clouds may cover (clear day, dusk) and the softness of their edges (noise units)
COVER = {"day": 0.42, "dusk": 0.34}
SOFT = 0.04
#: thinning towards the horizon: smoothstep of d.z between these
HORIZON_FADE = (0.02, 0.3)
SUN_STEP = 0.12
BASE_SHADE = 0.32
#: how much a thick core darkens towards the base colour (seen from below, a cumulus' belly is grey)
CORE_SHADE = 0.6
BASE_TINT = (0.86, 0.9, 1.0)
OPACITY = 0.96
#: the lit side is at least this many times the sky's luminance (:func:`cloud_colours`)
OVER_SKY = 1.6
#: the hash's multipliers (odd 32-bit constants)
_HX, _HY, _HM = 0x8DA6B343, 0xD8163841, 0x5BD1E995

CLOUD_GLSL = f"""
uniform float cloud_cover;
uniform vec3 cloud_lit;
uniform vec3 cloud_base;
uniform vec3 cloud_sun;
uniform vec2 cloud_origin;
uint cloud_hash(ivec2 p) {{
    uint h = (uint(p.x) * {_HX}u) ^ (uint(p.y) * {_HY}u);
    h ^= h >> 13;
    h *= {_HM}u;
    h ^= h >> 15;
    return h;
}}
float cloud_rnd(ivec2 p) {{ return float(cloud_hash(p) >> 8) * (1.0 / 16777216.0); }}
float cloud_vnoise(vec2 q) {{
    vec2 i = floor(q);
    vec2 f = q - i;
    vec2 u = f * f * (3.0 - 2.0 * f);
    ivec2 k = ivec2(i);
    float a = cloud_rnd(k), b = cloud_rnd(k + ivec2(1, 0)), c = cloud_rnd(k + ivec2(0, 1)),
          e = cloud_rnd(k + ivec2(1, 1));
    return mix(mix(a, b, u.x), mix(c, e, u.x), u.y);
}}
float cloud_fbm(vec2 q) {{
    float s = 0.0, a = 0.5;
    for (int o = 0; o < {OCTAVES}; o++) {{
        s += a * cloud_vnoise(q);
        q = q * {LACUNARITY} + vec2({OCTAVE_SHIFT[0]}, {OCTAVE_SHIFT[1]});
        a *= 0.5;
    }}
    return s / {1.0 - 0.5 ** OCTAVES:.6f};
}}
float cloud_billow(vec2 q) {{
    float s = 0.0, a = 0.5;
    for (int o = 0; o < {DETAIL_OCTAVES}; o++) {{
        s += a * abs(2.0 * cloud_vnoise(q) - 1.0);
        q = q * {LACUNARITY} + vec2({OCTAVE_SHIFT[0]}, {OCTAVE_SHIFT[1]});
        a *= 0.5;
    }}
    return s / {1.0 - 0.5 ** DETAIL_OCTAVES:.6f};
}}
float cloud_dens(vec2 q) {{
    return cloud_fbm(q) + {DETAIL} * (cloud_billow(q * {DETAIL_SCALE} + vec2({DETAIL_SHIFT[0]}, {DETAIL_SHIFT[1]}))
                                      - 0.5);
}}
vec3 cloud_mix(vec3 x, vec3 d) {{
    if (cloud_cover <= 0.0 || d.z <= {HORIZON_FADE[0]}) return x;
    vec2 q = (cloud_origin + d.xy * ({LAYER_M} / (d.z + {CURVE}))) / {FEATURE_M} + vec2({SEED_OFFSET[0]},
                                                                                         {SEED_OFFSET[1]});
    float n = cloud_dens(q);
    float thr = 1.0 - cloud_cover;
    float c = clamp((n - thr) / {SOFT}, 0.0, 1.0) * smoothstep({HORIZON_FADE[0]}, {HORIZON_FADE[1]}, d.z);
    if (c <= 0.0) return x;
    vec2 toward = length(cloud_sun.xy) > 1e-4 ? normalize(cloud_sun.xy) : vec2(0.0);
    float n_sun = cloud_dens(q + toward * {SUN_STEP});
    float core = clamp((n - thr) / 0.25, 0.0, 1.0);
    float bright = clamp(0.55 + 4.0 * (n - n_sun), 0.0, 1.0) * (1.0 - {CORE_SHADE} * core);
    vec3 col = mix(cloud_base, cloud_lit, bright)
        + cloud_lit * (0.6 * pow(max(dot(d, cloud_sun), 0.0), 8.0) * (1.0 - core));
    return mix(x, col, c * {OPACITY});
}}
"""


def lattice_hash(ix: np.ndarray, iy: np.ndarray) -> np.ndarray:
    """The 32-bit hash of integer lattice points (twin of ``cloud_hash``): ``(N,)`` uint32."""
    x = (np.asarray(ix, np.int64) & 0xFFFFFFFF).astype(np.uint64)
    y = (np.asarray(iy, np.int64) & 0xFFFFFFFF).astype(np.uint64)
    m = np.uint64(0xFFFFFFFF)
    h = ((x * np.uint64(_HX)) & m) ^ ((y * np.uint64(_HY)) & m)
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(_HM)) & m
    h ^= h >> np.uint64(15)
    return h.astype(np.uint32)


def _rnd(ix, iy) -> np.ndarray:
    return (lattice_hash(ix, iy) >> np.uint32(8)).astype(np.float64) / 16777216.0


def value_noise(q: np.ndarray) -> np.ndarray:
    """Value noise ``(...)`` in 0..1 at points ``q`` ``(..., 2)`` (twin of ``cloud_vnoise``)."""
    q = np.asarray(q, np.float64)
    i = np.floor(q)
    f = q - i
    u = f * f * (3.0 - 2.0 * f)
    kx, ky = i[..., 0].astype(np.int64), i[..., 1].astype(np.int64)
    a, b = _rnd(kx, ky), _rnd(kx + 1, ky)
    c, e = _rnd(kx, ky + 1), _rnd(kx + 1, ky + 1)
    top = a + (b - a) * u[..., 0]
    bot = c + (e - c) * u[..., 0]
    return top + (bot - top) * u[..., 1]


def density(q: np.ndarray) -> np.ndarray:
    """The normalized fractal sum ``(...)`` in 0..1 at noise points ``q`` ``(..., 2)`` (twin of
    ``cloud_fbm``)."""
    q = np.asarray(q, np.float64)
    s, a = np.zeros(q.shape[:-1]), 0.5
    for _ in range(OCTAVES):
        s = s + a * value_noise(q)
        q = q * LACUNARITY + np.asarray(OCTAVE_SHIFT)
        a *= 0.5
    return s / (1.0 - 0.5 ** OCTAVES)


def billow(q: np.ndarray) -> np.ndarray:
    """The billow sum ``(...)`` in 0..1 (``|2 n - 1|`` of value noise, :data:`DETAIL_OCTAVES` octaves) at noise points
    ``q`` ``(..., 2)`` (twin of ``cloud_billow``)."""
    q = np.asarray(q, np.float64)
    s, a = np.zeros(q.shape[:-1]), 0.5
    for _ in range(DETAIL_OCTAVES):
        s = s + a * np.abs(2.0 * value_noise(q) - 1.0)
        q = q * LACUNARITY + np.asarray(OCTAVE_SHIFT)
        a *= 0.5
    return s / (1.0 - 0.5 ** DETAIL_OCTAVES)


def cloud_density(q: np.ndarray) -> np.ndarray:
    """The cloud's density ``(...)`` at noise points ``q`` ``(..., 2)``: the shape (:func:`density`) plus the puffy
    edge detail (:func:`billow`, module docstring; twin of ``cloud_dens``)."""
    q = np.asarray(q, np.float64)
    return density(q) + DETAIL * (billow(q * DETAIL_SCALE + np.asarray(DETAIL_SHIFT)) - 0.5)


def layer_point(d: np.ndarray, origin_xy) -> np.ndarray:
    """Noise coordinates ``(..., 2)`` where unit directions ``d`` ``(..., 3)`` meet the layer (module
    docstring) seen from ``origin_xy`` (metres)."""
    d = np.asarray(d, np.float64)
    k = LAYER_M / (d[..., 2:3] + CURVE)
    return (np.asarray(origin_xy, np.float64) + d[..., :2] * k) / FEATURE_M + np.asarray(SEED_OFFSET)


def _smoothstep(e0: float, e1: float, x):
    t = np.clip((x - e0) / (e1 - e0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def cloud_mix(x: np.ndarray, d: np.ndarray, cover: float, lit, base, sun, origin_xy) -> np.ndarray:
    """The exposed linear sky ``x`` ``(..., 3)`` along unit directions ``d`` ``(..., 3)`` with the clouds
    composited (twin of ``cloud_mix``; module docstring). ``cover`` 0: unchanged."""
    x = np.asarray(x, np.float64)
    if cover <= 0.0:
        return x
    d = np.asarray(d, np.float64)
    sun = np.asarray(sun, np.float64)
    q = layer_point(d, origin_xy)
    n = cloud_density(q)
    thr = 1.0 - cover
    c = np.clip((n - thr) / SOFT, 0.0, 1.0) * _smoothstep(*HORIZON_FADE, d[..., 2])
    c = np.where(d[..., 2] <= HORIZON_FADE[0], 0.0, c)
    ln = math.hypot(sun[0], sun[1])
    toward = sun[:2] / ln if ln > 1e-4 else np.zeros(2)
    n_sun = cloud_density(q + toward * SUN_STEP)
    core = np.clip((n - thr) / 0.25, 0.0, 1.0)
    bright = (np.clip(0.55 + 4.0 * (n - n_sun), 0.0, 1.0) * (1.0 - CORE_SHADE * core))[..., None]
    lit, base = np.asarray(lit, np.float64), np.asarray(base, np.float64)
    glow = (0.6 * np.maximum(d @ sun, 0.0) ** 8 * (1.0 - core))[..., None]
    col = base + (lit - base) * bright + lit * glow
    return x + (col - x) * (c * OPACITY)[..., None]


def cloud_colours(amb_up: float, sun_up: float, sun_rgb, wb, exposure: float, sky_lum: float = 0.0
                  ) -> tuple[tuple, tuple]:
    """``(lit, base)`` exposed linear colours ``(3,)`` of the clouds: ``lit`` the light of a white card facing up
    under the scene's sky and sun (``exposure (amb_up + sun_up)^2``, the photo sky's own scale; at least
    :data:`OVER_SKY` times ``sky_lum``, the sky's own exposed luminance at mid elevations, so that low-sun
    clouds do not turn darker than the sky around them), tinted halfway to the sun's colour (``sun_rgb^2`` at
    luminance 1) and white-balanced by ``wb`` ``(3,)``; ``base`` :data:`BASE_SHADE` of its luminance in
    :data:`BASE_TINT`."""
    luma = np.array([0.2126, 0.7152, 0.0722])
    white = max(exposure * (amb_up + sun_up) ** 2, OVER_SKY * float(sky_lum))
    sun_lin = np.asarray(sun_rgb, np.float64) ** 2
    tint = 0.5 + 0.5 * sun_lin / max(float(sun_lin @ luma), 1e-9)
    lit = white * tint * np.asarray(wb, np.float64)
    base = BASE_SHADE * float(lit @ luma) * np.asarray(BASE_TINT)
    return tuple(float(v) for v in lit), tuple(float(v) for v in base)


__all__ = ["CLOUD_GLSL", "COVER", "cloud_colours", "cloud_mix", "density", "lattice_hash", "layer_point",
           "value_noise"]
