"""Procedural cumulus and cirrus in the ``photo`` style's clear-day and dusk skies (issue 24: the real street photos
have fair-weather cumulus; the HDRI ``sunrise`` map is cloudless; the fifth blind sort called the flat noise layer
of before a "painted skybox").

Photo style only, drawn by :func:`.photo_sky.sky_fs` into the map's sky before the tone curve (so the clouds go
through the same ACES curve and the same haze as the sky); night and the overcast weathers have none.

* **Heaps** (a height field marched through a slab): the cumulus stand on a flat base :data:`LAYER_M` above the
  camera and reach up to :data:`DEPTH_M` above it. A view direction ``d`` (unit, world: x east, y north, z up)
  meets the altitude ``LAYER_M + z`` at ``origin + d.xy (LAYER_M + z) / (d.z + CURVE)`` (metres; ``CURVE`` bends
  the layer down towards the horizon as the earth does, so it stays finite there), in noise units of
  :data:`FEATURE_M` plus the seed's offset :data:`SEED_OFFSET` (:func:`layer_point`). ``origin`` is the camera's
  ground position (parallax). A column at noise point ``q`` holds cloud up to the height fraction ``f`` where
  ``S(q) - thr > RANGE f^2`` (``S`` the shape's fractal value noise, :func:`density`, ``thr = 1 - cover``): a flat
  base where ``S`` crosses the threshold and a rounded (parabolic) dome above it, taller where ``S`` is higher.
  The ray is sampled at :data:`MARCH` altitudes ``f_k = k / MARCH`` (``k = 0 ..``); the margins
  ``e_k = S(q_k) - thr - RANGE f_k^2`` (positive: inside) give the first hit, refined linearly between the last
  outside and the first inside sample (``f``, the hit's height fraction, 0 for the base) and the opacity
  ``a = clamp((max_k e_k + w B(q_h) - w / 2) / soft, 0, 1)``: ``B`` a billow noise (``|2 n - 1|``, rounded lobes;
  :func:`billow`) at :data:`DETAIL_SCALE` times the shape's frequency at the hit point ``q_h``, weight ``w`` =
  :data:`DETAIL` (less towards the horizon), ``soft = SOFT (1 + FAR_SOFT / (d.z + CURVE))`` wider far away (soft
  fringes, no aliasing). Looking up one sees the flat bases; towards the horizon the rays cross the slab over a
  long way, so the heaps show their sides and tops, small, flattened and crowded.
* **Light**: the base (``f = 0``) is grey, a little lighter at its thin edges; sides and tops (``f`` towards
  :data:`TOP_F`) take the sun's side light ``clamp(SIDE_MID + SUN_GAIN (S(q_h) - S(q_h + SUN_STEP sun.xy)), 0, 1)``
  (the column falls away towards the sun: a face turned to it); the billow lobes shade the surface
  (``LOBE (B - 1/2)``: cauliflower; :data:`LOBE_BASE` of it on the base); colour ``mix(base, lit, bright)``,
  ``lit`` the light of a white card under the scene's sun and sky (:func:`cloud_colours`), ``base`` darker and
  grey-blue. Near the sun thin fringes glow (forward scattering, ``(d . sun)^8``).
* **Cirrus**: a thin, streaky veil at :data:`CIRRUS_M` (value noise stretched :data:`CIRRUS_STRETCH` times along
  x, :data:`CIRRUS_OCTAVES` octaves), opacity up to :data:`CIRRUS_OPACITY`, in the lit colour, behind the heaps.
* **Composite**: ``x = mix(x, colour, opacity * smoothstep(HORIZON_FADE, d.z))`` in the sky's exposed linear light,
  the cirrus first.

The GLSL (:data:`CLOUD_GLSL`) and the numpy twin (:func:`cloud_mix`) compute the same values (the lattice hash in
32-bit integers in both). Constants are ours, chosen by looking at renders next to the street photos, not measured.
"""

from __future__ import annotations

import math

import numpy as np

#: base altitude of the heaps above the camera, their greatest height above it, the noise's feature size (metres)
LAYER_M = 1500.0
DEPTH_M = 900.0
FEATURE_M = 900.0
CURVE = 0.08
#: samples along the ray through the slab (altitude fractions k / MARCH) and the longest step between two of them
#: (noise units; towards the horizon the heaps are flattened to keep the steps within it, as the samples would
#: otherwise skip over whole heaps and show them as separate plates)
MARCH = 4
STEP_MAX = 0.09
#: the shape's value of S above the threshold where a heap reaches the full DEPTH_M (noise units of S)
RANGE = 0.16
#: the seed: an offset of the noise (noise units), the same in every process
SEED_OFFSET = (37.25, -11.5)
OCTAVES = 2
LACUNARITY = 2.03
OCTAVE_SHIFT = (17.1, -9.7)
#: puffy detail: a billow noise at DETAIL_SCALE times the shape's frequency, DETAIL_OCTAVES octaves, weight DETAIL
DETAIL = 0.18
DETAIL_SCALE = 5.0
DETAIL_OCTAVES = 3
DETAIL_SHIFT = (5.3, 11.9)
#: share of the sky the clouds may cover (clear day, dusk) and the softness of their edges (units of S)
COVER = {"day": 0.4, "dusk": 0.34}
SOFT = 0.015
FAR_SOFT = 0.05
#: the opacity's fade at the horizon (smoothstep of d.z) and the detail's (its weight falls to DETAIL_FAR of DETAIL)
HORIZON_FADE = (0.0, 0.06)
DETAIL_FADE = (0.02, 0.25)
DETAIL_FAR = 0.45
#: lighting: the side light where the column is level (SIDE_MID; tops face the sky and a high sun), the sun
#: sample's step (noise units), its gain, the height fraction of full side light, the lobes'
#: shading, the base's brightness at its core and at its thin edges
SIDE_MID = 0.85
SUN_STEP = 0.1
SUN_GAIN = 8.0
TOP_F = 0.3
LOBE = 1.4
#: share of the lobes' shading on the flat base (seen from below a cumulus' belly is smooth)
LOBE_BASE = 0.35
BASE_CORE, BASE_EDGE = 0.1, 0.45
BASE_SHADE = 0.27
BASE_TINT = (0.84, 0.9, 1.0)
OPACITY = 0.97
#: the base is at least BASE_OVER_SKY times the sky's luminance (at dusk a base of BASE_SHADE of the lit colour
#: turned a dirty brown against the bright sky)
BASE_OVER_SKY = 0.75
#: the lit side is at least this many times the sky's luminance (:func:`cloud_colours`), and the tops' light over
#: a white card facing up (a face turned to the clear day's sun, 40 degrees up, gets about 1.4 times the card's)
OVER_SKY = 1.6
LIT_GAIN = 1.45
#: the cirrus veil: altitude and feature size (metres), stretch, octaves, cover, opacity, its own seed offset
CIRRUS_M = 8000.0
CIRRUS_FEATURE_M = 6000.0
CIRRUS_STRETCH = 2.5
CIRRUS_OCTAVES = 2
CIRRUS_COVER = 0.4
CIRRUS_OPACITY = 0.22
CIRRUS_SHIFT = (-23.5, 41.25)
#: the hash's multipliers (odd 32-bit constants)
_HX, _HY, _HM = 0x8DA6B343, 0xD8163841, 0x5BD1E995


def _f(v: float) -> str:
    """A GLSL float literal of ``v`` (Python's shortest round-trip form: always with a point or an exponent)."""
    return repr(float(v))


def _fbm_glsl(name: str, octaves: int, body: str) -> str:
    return f"""float {name}(vec2 q) {{
    float s = 0.0, a = 0.5;
    for (int o = 0; o < {octaves}; o++) {{
        s += a * {body};
        q = q * {_f(LACUNARITY)} + vec2({_f(OCTAVE_SHIFT[0])}, {_f(OCTAVE_SHIFT[1])});
        a *= 0.5;
    }}
    return s / {1.0 - 0.5 ** octaves:.8f};
}}
"""


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
{_fbm_glsl("cloud_fbm", OCTAVES, "cloud_vnoise(q)")}
{_fbm_glsl("cloud_billow", DETAIL_OCTAVES, "abs(2.0 * cloud_vnoise(q) - 1.0)")}
{_fbm_glsl("cloud_cirrus_fbm", CIRRUS_OCTAVES, "cloud_vnoise(q)")}
vec3 cloud_mix(vec3 x, vec3 d) {{
    if (cloud_cover <= 0.0 || d.z <= {_f(HORIZON_FADE[0])}) return x;
    float fade = smoothstep({_f(HORIZON_FADE[0])}, {_f(HORIZON_FADE[1])}, d.z);
    float inv = 1.0 / (d.z + {_f(CURVE)});
    // the cirrus veil, behind the heaps
    vec2 qc = (cloud_origin + d.xy * ({_f(CIRRUS_M)} * inv)) / {_f(CIRRUS_FEATURE_M)};
    float v = cloud_cirrus_fbm(vec2(qc.x / {_f(CIRRUS_STRETCH)}, qc.y) + vec2({_f(CIRRUS_SHIFT[0])},
                                                                               {_f(CIRRUS_SHIFT[1])}));
    float veil = clamp((v - {_f(1.0 - CIRRUS_COVER)}) / 0.25, 0.0, 1.0) * {_f(CIRRUS_OPACITY)} * fade;
    x = mix(x, cloud_lit, veil);
    // the heaps: the ray through the slab
    vec2 q0 = (cloud_origin + d.xy * ({_f(LAYER_M)} * inv)) / {_f(FEATURE_M)} + vec2({_f(SEED_OFFSET[0])},
                                                                                         {_f(SEED_OFFSET[1])});
    float step_len = length(d.xy) * ({_f(DEPTH_M / MARCH / FEATURE_M)} * inv);
    vec2 dq = d.xy * ({_f(DEPTH_M / MARCH / FEATURE_M)} * inv * min(1.0, {_f(STEP_MAX)} / max(step_len, 1e-6)));
    float thr = 1.0 - cloud_cover;
    float e_prev = -1.0, s_prev = 0.0, e_max = -1.0, f_hit = -1.0, s_hit = 0.0;
    vec2 q_hit = q0, q_max = q0;
    for (int k = 0; k < {MARCH}; k++) {{
        vec2 qk = q0 + dq * float(k);
        float sk = cloud_fbm(qk);
        float fk = float(k) / {_f(MARCH)};
        float ek = sk - thr - {_f(RANGE)} * fk * fk;
        if (ek > e_max) {{ e_max = ek; q_max = qk; }}
        if (f_hit < 0.0 && ek > 0.0) {{
            float t = k == 0 ? 0.0 : e_prev / (e_prev - ek);
            f_hit = (float(k) - 1.0 + t) / {_f(MARCH)};
            if (k == 0) f_hit = 0.0;
            q_hit = k == 0 ? qk : qk - dq * (1.0 - t);
            s_hit = k == 0 ? sk : mix(s_prev, sk, t);
        }}
        e_prev = ek;
        s_prev = sk;
    }}
    float w = {_f(DETAIL)} * ({_f(DETAIL_FAR)} + {_f(1.0 - DETAIL_FAR)} * smoothstep({_f(DETAIL_FADE[0])},
                                                                                  {_f(DETAIL_FADE[1])}, d.z));
    if (e_max + 0.5 * w <= 0.0) return x;
    if (f_hit < 0.0) {{ q_hit = q_max; s_hit = e_max + thr; f_hit = 0.0; }}
    float b = cloud_billow(q_hit * {_f(DETAIL_SCALE)} + vec2({_f(DETAIL_SHIFT[0])}, {_f(DETAIL_SHIFT[1])}));
    float soft = {_f(SOFT)} * (1.0 + {_f(FAR_SOFT)} * inv);
    float a = clamp((e_max + w * (b - 0.5)) / soft, 0.0, 1.0) * fade * {_f(OPACITY)};
    if (a <= 0.0) return x;
    vec2 toward = length(cloud_sun.xy) > 1e-4 ? normalize(cloud_sun.xy) : vec2(0.0);
    float s_sun = cloud_fbm(q_hit + toward * {_f(SUN_STEP)});
    float side = clamp({_f(SIDE_MID)} + {_f(SUN_GAIN)} * (s_hit - s_sun), 0.0, 1.0);
    float core = clamp(e_max / {_f(RANGE)}, 0.0, 1.0);
    float under = mix({_f(BASE_EDGE)}, {_f(BASE_CORE)}, core);
    float up = smoothstep(0.0, {_f(TOP_F)}, f_hit);
    float bright = mix(under, side, up) + {_f(LOBE)} * ({_f(LOBE_BASE)} + {_f(1.0 - LOBE_BASE)} * up) * (b - 0.5);
    bright = clamp(bright, 0.0, 1.0);
    vec3 col = mix(cloud_base, cloud_lit, bright)
        + cloud_lit * (0.6 * pow(max(dot(d, cloud_sun), 0.0), 8.0) * (1.0 - core));
    return mix(x, col, a);
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


def _fractal(q: np.ndarray, octaves: int, billowy: bool) -> np.ndarray:
    q = np.asarray(q, np.float64)
    s, a = np.zeros(q.shape[:-1]), 0.5
    for _ in range(octaves):
        n = value_noise(q)
        s = s + a * (np.abs(2.0 * n - 1.0) if billowy else n)
        q = q * LACUNARITY + np.asarray(OCTAVE_SHIFT)
        a *= 0.5
    return s / (1.0 - 0.5 ** octaves)


def density(q: np.ndarray, octaves: int | None = None) -> np.ndarray:
    """The normalized fractal sum ``S`` ``(...)`` in 0..1 of :data:`OCTAVES` (or ``octaves``) octaves of value noise
    at noise points ``q`` ``(..., 2)`` (twin of ``cloud_fbm``; ``cloud_cirrus_fbm`` with
    :data:`CIRRUS_OCTAVES`)."""
    return _fractal(q, OCTAVES if octaves is None else octaves, False)


def billow(q: np.ndarray) -> np.ndarray:
    """The billow sum ``B`` ``(...)`` in 0..1 (``|2 n - 1|`` of value noise, :data:`DETAIL_OCTAVES` octaves) at noise
    points ``q`` ``(..., 2)`` (twin of ``cloud_billow``)."""
    return _fractal(q, DETAIL_OCTAVES, True)


def layer_point(d: np.ndarray, origin_xy, altitude_m: float = LAYER_M) -> np.ndarray:
    """Noise coordinates ``(..., 2)`` where unit directions ``d`` ``(..., 3)`` meet the altitude ``altitude_m``
    above the camera (module docstring) seen from ``origin_xy`` (metres), seed offset included."""
    d = np.asarray(d, np.float64)
    k = altitude_m / (d[..., 2:3] + CURVE)
    return (np.asarray(origin_xy, np.float64) + d[..., :2] * k) / FEATURE_M + np.asarray(SEED_OFFSET)


def _smoothstep(e0: float, e1: float, x):
    t = np.clip((x - e0) / (e1 - e0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def march(d: np.ndarray, origin_xy, cover: float) -> dict:
    """The ray through the heaps' slab (module docstring) along unit directions ``d`` ``(..., 3)`` from
    ``origin_xy`` (metres): ``{"e_max", "q_max", "f_hit", "q_hit", "s_hit", "hit"}``, arrays ``(...)`` (points
    ``(..., 2)``); ``hit`` False where no sample is inside (then ``f_hit`` is -1)."""
    d = np.asarray(d, np.float64)
    inv = 1.0 / (d[..., 2] + CURVE)
    q0 = layer_point(d, origin_xy)
    step_len = np.hypot(d[..., 0], d[..., 1]) * (DEPTH_M / MARCH / FEATURE_M * inv)
    scale = DEPTH_M / MARCH / FEATURE_M * inv * np.minimum(1.0, STEP_MAX / np.maximum(step_len, 1e-6))
    dq = d[..., :2] * scale[..., None]
    thr = 1.0 - cover
    shape = d.shape[:-1]
    e_prev, s_prev = np.full(shape, -1.0), np.zeros(shape)
    e_max, f_hit, s_hit = np.full(shape, -1.0), np.full(shape, -1.0), np.zeros(shape)
    q_hit, q_max = q0.copy(), q0.copy()
    for k in range(MARCH):
        qk = q0 + dq * k
        sk = density(qk)
        fk = k / MARCH
        ek = sk - thr - RANGE * fk * fk
        up = ek > e_max
        e_max = np.where(up, ek, e_max)
        q_max = np.where(up[..., None], qk, q_max)
        new = (f_hit < 0.0) & (ek > 0.0)
        if k == 0:
            f_new, q_new, s_new = np.zeros(shape), qk, sk
        else:
            t = e_prev / np.where(new, e_prev - ek, 1.0)
            f_new = (k - 1.0 + t) / MARCH
            q_new = qk - dq * (1.0 - t)[..., None]
            s_new = s_prev + (sk - s_prev) * t
        f_hit = np.where(new, f_new, f_hit)
        q_hit = np.where(new[..., None], q_new, q_hit)
        s_hit = np.where(new, s_new, s_hit)
        e_prev, s_prev = ek, sk
    return {"e_max": e_max, "q_max": q_max, "f_hit": f_hit, "q_hit": q_hit, "s_hit": s_hit, "hit": f_hit >= 0.0}


def cirrus_veil(d: np.ndarray, origin_xy) -> np.ndarray:
    """The cirrus veil's opacity ``(...)`` (before the horizon fade) along unit directions ``d`` ``(..., 3)``
    (module docstring)."""
    d = np.asarray(d, np.float64)
    inv = 1.0 / (d[..., 2] + CURVE)
    qc = (np.asarray(origin_xy, np.float64) + d[..., :2] * (CIRRUS_M * inv)[..., None]) / CIRRUS_FEATURE_M
    qs = np.stack([qc[..., 0] / CIRRUS_STRETCH, qc[..., 1]], -1) + np.asarray(CIRRUS_SHIFT)
    v = density(qs, CIRRUS_OCTAVES)
    return np.clip((v - (1.0 - CIRRUS_COVER)) / 0.25, 0.0, 1.0) * CIRRUS_OPACITY


def cloud_mix(x: np.ndarray, d: np.ndarray, cover: float, lit, base, sun, origin_xy) -> np.ndarray:
    """The exposed linear sky ``x`` ``(..., 3)`` along unit directions ``d`` ``(..., 3)`` with the cirrus and the
    heaps composited (twin of ``cloud_mix``; module docstring). ``cover`` 0: unchanged."""
    x = np.asarray(x, np.float64)
    if cover <= 0.0:
        return x
    d = np.asarray(d, np.float64)
    sun = np.asarray(sun, np.float64)
    lit, base = np.asarray(lit, np.float64), np.asarray(base, np.float64)
    z = d[..., 2]
    sky = z > HORIZON_FADE[0]
    fade = _smoothstep(*HORIZON_FADE, z)
    inv = 1.0 / (z + CURVE)
    veil = np.where(sky, cirrus_veil(d, origin_xy) * fade, 0.0)[..., None]
    xc = x + (lit - x) * veil
    m = march(d, origin_xy, cover)
    w = DETAIL * (DETAIL_FAR + (1.0 - DETAIL_FAR) * _smoothstep(*DETAIL_FADE, z))
    q_hit = np.where(m["hit"][..., None], m["q_hit"], m["q_max"])
    s_hit = np.where(m["hit"], m["s_hit"], m["e_max"] + 1.0 - cover)
    f_hit = np.where(m["hit"], m["f_hit"], 0.0)
    b = billow(q_hit * DETAIL_SCALE + np.asarray(DETAIL_SHIFT))
    soft = SOFT * (1.0 + FAR_SOFT * inv)
    a = np.clip((m["e_max"] + w * (b - 0.5)) / soft, 0.0, 1.0) * fade * OPACITY
    a = np.where(m["e_max"] + 0.5 * w <= 0.0, 0.0, a)
    ln = math.hypot(sun[0], sun[1])
    toward = sun[:2] / ln if ln > 1e-4 else np.zeros(2)
    s_sun = density(q_hit + toward * SUN_STEP)
    side = np.clip(SIDE_MID + SUN_GAIN * (s_hit - s_sun), 0.0, 1.0)
    core = np.clip(m["e_max"] / RANGE, 0.0, 1.0)
    under = BASE_EDGE + (BASE_CORE - BASE_EDGE) * core
    up = _smoothstep(0.0, TOP_F, f_hit)
    bright = np.clip(under + (side - under) * up + LOBE * (LOBE_BASE + (1.0 - LOBE_BASE) * up) * (b - 0.5), 0.0, 1.0)
    glow = 0.6 * np.maximum(d @ sun, 0.0) ** 8 * (1.0 - core)
    col = base + (lit - base) * bright[..., None] + lit * glow[..., None]
    out = xc + (col - xc) * a[..., None]
    return np.where(sky[..., None], out, x)


def cloud_colours(amb_up: float, sun_up: float, sun_rgb, wb, exposure: float, sky_lum: float = 0.0
                  ) -> tuple[tuple, tuple]:
    """``(lit, base)`` exposed linear colours ``(3,)`` of the clouds: ``lit`` the light of a white card facing up
    under the scene's sky and sun times :data:`LIT_GAIN` (``LIT_GAIN exposure (amb_up + sun_up)^2``, the photo sky's
    own scale; at least
    :data:`OVER_SKY` times ``sky_lum``, the sky's own exposed luminance at mid elevations, so that low-sun
    clouds do not turn darker than the sky around them), tinted halfway to the sun's colour (``sun_rgb^2`` at
    luminance 1) and white-balanced by ``wb`` ``(3,)``; ``base`` :data:`BASE_SHADE` of its luminance (at least
    :data:`BASE_OVER_SKY` times ``sky_lum``) in :data:`BASE_TINT`."""
    luma = np.array([0.2126, 0.7152, 0.0722])
    white = max(LIT_GAIN * exposure * (amb_up + sun_up) ** 2, OVER_SKY * float(sky_lum))
    sun_lin = np.asarray(sun_rgb, np.float64) ** 2
    tint = 0.5 + 0.5 * sun_lin / max(float(sun_lin @ luma), 1e-9)
    lit = white * tint * np.asarray(wb, np.float64)
    base = max(BASE_SHADE * float(lit @ luma), BASE_OVER_SKY * float(sky_lum)) * np.asarray(BASE_TINT)
    return tuple(float(v) for v in lit), tuple(float(v) for v in base)


__all__ = ["CLOUD_GLSL", "COVER", "billow", "cirrus_veil", "cloud_colours", "cloud_mix", "density", "lattice_hash",
           "layer_point", "march", "value_noise"]
