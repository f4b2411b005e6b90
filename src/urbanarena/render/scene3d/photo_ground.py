"""The ``photo`` style's street ground beyond the photographed grain (issue 24; blind-sort tell "repeating tiled
paving, cobbles, brick and asphalt, and blotchy uniform grass"): procedural variation at metre scales and above,
layered over :mod:`.photo_materials`' stochastically tiled photos, where a repeat or a uniform carpet shows.

Photo style only: these functions enter the ground program through :func:`.photo_materials.patch_source`;
``flat`` and ``realistic`` never see them.

* **Asphalt** (GLSL ``pg_asphalt``, twin :func:`asphalt_factor`): a tone that drifts over tens of metres
  (``1 - TONE_A / 2 + TONE_A n(p / TONE_M)``) and **repair patches**: the ground is cut into square cells of
  :data:`PATCH_CELL_M`; a cell holds a patch with probability :data:`PATCH_P` (from the hash
  ``h = rhash(cell, 91)``: ``(h & 255) / 256 < PATCH_P``), a rectangle centred at ``cell + (0.25 + 0.5 (u, v))
  PATCH_CELL_M`` (``u = (h >> 8 & 255) / 255``, ``v = (h >> 16 & 255) / 255``) of half sizes ``(0.8 + 1.2 u', 0.5
  + 1.0 v')`` m (``u' = (h >> 24 & 15) / 15``, ``v' = (h >> 28) / 15``), so it stays inside its cell. Inside, the
  albedo is multiplied by ``PATCH_TONE[u' > 0.5]`` (newer, darker asphalt, or older, greyer); along its edge a
  dark seam of sealing tar (:data:`SEAM_M` half width, depth :data:`SEAM_A`). Edges are smoothed over the
  caller's footprint ``aa`` (metres per pixel) so they do not alias with distance. The realistic asphalt's round
  dark blotches (which read as puddles) are softened and its round patches are dropped for these.
* **Paint** (``pg_paint``, twin :func:`paint_chip`): road paint chipped where a value noise of wavelength
  :data:`CHIP_M` exceeds :data:`CHIP_T`, showing the asphalt underneath; faded with distance (``fine``).
* **Paving, setts and track beds** (``pg_stains``, twin :func:`stain_factor`): metre-scale stains (darker where a
  noise of wavelength :data:`STAIN_M` exceeds :data:`STAIN_T`, up to :data:`STAIN_A`) over the photo materials' dirt
  wash; the slabs' own per-slab tone of the realistic style (the checkerboard the sort named) is cut to a fifth (the
  setts' to a third) and its 2 m fbm tone dropped (the photo materials' 7 m dirt does that), joints lighter; the
  track beds' fbm tone one octave.
* **Grass** (``pg_grass``, twin :func:`grass_albedo`): the lawn's colour at three scales -- dry, yellowed
  stretches over :data:`DRY_M`, lusher and paler areas over :data:`LUSH_M`, tufts of :data:`TUFT_M` (shaded by
  ``fine``) -- and fallen leaves (speckles of 0.14 m in the lushest, shadiest-looking stretches). The
  realistic grass keeps its worn patches and park beds.

Cost: a value noise or two per ground fragment on top of the photo grain, paid for by fbm octaves of the realistic
asphalt and paving dropped (the asphalt's wear one octave instead of three, the paving's 2 m tone gone). Constants
are ours, chosen by eye on first-person views of the default city against the real photos of the shared panoramas.
"""

from __future__ import annotations

import hashlib

import numpy as np

from urbanarena.render.scene3d.building_look import M32, rhash

def rhash_np(x, y, z) -> np.ndarray:
    """The shaders' ``rhash(uvec3)`` (:data:`.realistic_shaders.HASH`) on arrays (any ints; taken mod 2^32): the
    facades' :func:`.building_look.rhash` on int64 arrays (their wrap-around keeps the low 32 bits it masks)."""
    return rhash(*(np.asarray(v, np.int64) & M32 for v in (x, y, z)))


#: bumped whenever this module's shading changes pixels (part of the photo materials' identity)
GROUND_VERSION = "photo-ground-1"
#: asphalt repair patches: cell size (m), probability per cell, tone inside (new/dark, old/grey), seam
PATCH_CELL_M, PATCH_P = 9.0, 0.35
PATCH_TONE = (0.8, 1.12)
SEAM_M, SEAM_A = 0.05, 0.45
#: large-scale asphalt tone: wavelength (m) and amplitude
TONE_M, TONE_A = 23.0, 0.2
#: paint chipping: noise wavelength (m) and threshold
CHIP_M, CHIP_T = 0.07, 0.8
#: paving stains: wavelength (m), depth, and the noise range over which they set in (sparse: few round spots)
STAIN_M, STAIN_A = 1.4, 0.25
STAIN_T = (0.72, 0.95)
#: grass scales (m): dry stretches, lush/pale areas (the lushest with fallen leaves), tufts
DRY_M, LUSH_M, TUFT_M = 17.0, 4.3, 0.37
GRASS_LUSH = (0.15, 0.22, 0.08)
GRASS_PALE = (0.3, 0.33, 0.14)
GRASS_DRY = (0.43, 0.4, 0.23)
LEAF = (0.42, 0.3, 0.14)

GLSL = f"""
// photo ground (photo_ground.py): asphalt repair patches and tone, chipped paint, paving stains, grass
float pg_asphalt(vec2 p, float aa) {{
    vec2 c = floor(p / {PATCH_CELL_M:.3f});
    uint h = rhash(uvec3(uvec2(ivec2(c)), 91u));
    float present = float(h & 255u) / 256.0 < {PATCH_P:.4f} ? 1.0 : 0.0;
    vec2 ctr = (c + 0.25 + 0.5 * vec2(float((h >> 8u) & 255u), float((h >> 16u) & 255u)) / 255.0) * {PATCH_CELL_M:.3f};
    float su = float((h >> 24u) & 15u) / 15.0, sv = float(h >> 28u) / 15.0;
    vec2 d = abs(p - ctr) - vec2(0.8 + 1.2 * su, 0.5 + 1.0 * sv);
    float e = max(d.x, d.y);                        // < 0 inside the patch, metres from its edge
    float inside = present * (1.0 - smoothstep(-aa, aa, e));
    float seam = present * (1.0 - smoothstep({SEAM_M:.4f}, {SEAM_M:.4f} + aa, abs(e)));
    float tone = su > 0.5 ? {PATCH_TONE[1]:.4f} : {PATCH_TONE[0]:.4f};
    return mix(1.0, tone, inside) * (1.0 - {SEAM_A:.4f} * seam)
           * ({1 - TONE_A / 2:.4f} + {TONE_A:.4f} * vnoise(p / {TONE_M:.3f}, 92u));
}}
vec3 pg_paint(vec3 a, vec2 p, float fine) {{
    float chip = fine * smoothstep({CHIP_T:.4f}, {CHIP_T + 0.06:.4f}, vnoise(p / {CHIP_M:.4f}, 93u));
    return mix(a, vec3(0.27, 0.275, 0.285), 0.75 * chip);
}}
float pg_stains(vec2 p) {{
    return 1.0 - {STAIN_A:.4f} * smoothstep({STAIN_T[0]:.4f}, {STAIN_T[1]:.4f}, vnoise(p / {STAIN_M:.3f}, 95u));
}}
vec3 pg_grass(vec2 p, float fine) {{
    float dry = smoothstep(0.4, 0.85, vnoise(p / {DRY_M:.3f}, 97u));
    float lush = vnoise(p / {LUSH_M:.3f}, 98u);
    vec3 c = mix(vec3{GRASS_LUSH}, vec3{GRASS_PALE}, lush);
    c = mix(c, vec3{GRASS_DRY}, 0.7 * dry);
    c *= 1.0 + 0.45 * fine * (vnoise(p / {TUFT_M:.4f}, 99u) - 0.5);
    float litter = (1.0 - smoothstep(0.0, 0.25, lush)) * step(0.75, h21(p * 7.0, 101u));   // in the lushest patches
    return mix(c, vec3{LEAF}, litter * fine);
}}
"""

#: realistic ground source -> photo, each replaced wherever it occurs (the one-material programs and the all
#: materials one); used by :data:`.photo_materials.GROUND_SWAPS` after the photo grain is in
ASPHALT_SWAPS = (
    ("    float patches = step(0.7, vnoise(p * 0.09, 6u));\n", "    float patches = 0.0;\n"),
    ("    a *= 1.0 - 0.25 * smoothstep(0.72, 0.78, vnoise(p * 0.6 + 3.0, 8u));",
     "    a *= 1.0 - 0.1 * smoothstep(0.6, 0.9, vnoise(p * 0.6 + 3.0, 8u));"),
    ("    vec3 a = vec3(0.63, 0.62, 0.59) * (0.8 + 0.32 * tone)",
     "    vec3 a = vec3(0.6, 0.59, 0.565) * (0.95 + 0.064 * tone)"),
    ("(0.75 + 0.4 * h21(vec2(floor(su), srow), 14u))", "(0.9 + 0.13 * h21(vec2(floor(su), srow), 14u))"),
    ("    return mix(a, vec3(0.16, 0.16, 0.15), joint * 0.9);",
     "    return mix(a, vec3(0.2, 0.2, 0.19), joint * 0.6);"),
    ("* (0.9 + 0.16 * fbm3(p * 0.5, 10u))", ""),
    ("    float wear = fbm3(p * 0.35, 7u);\n", "    float wear = vnoise(p * 0.35, 7u);\n"),
    ("(0.88 + 0.2 * fbm3(p * 0.8, 52u))", "(0.88 + 0.2 * vnoise(p * 0.8, 52u))"),
    ("    vec3 c = mix(vec3(0.2, 0.27, 0.11), vec3(0.33, 0.37, 0.17), m) * (1.0 + 0.5 * blade * fine);\n",
     "    vec3 c = pg_grass(p, fine);\n"),
    ("    c *= 0.85 + 0.3 * vnoise(p * 6.0, 44u) * fine;\n", ""),
    ("    a = paint(p);\n", "    a = pg_paint(paint(p), p, fine);\n"),
    ("else if (is(a, vec3(236.0, 236.0, 230.0))) a = paint(p);",
     "else if (is(a, vec3(236.0, 236.0, 230.0))) a = pg_paint(paint(p), p, fine);"),
)

#: the footprint argument of ``pg_asphalt``: metres per pixel on the ground
AA = "(fwidth(p.x) + fwidth(p.y))"
#: the factors the photo materials multiply into the material calls
ASPHALT_FACTOR = f"pg_asphalt(p, {AA})"
STAINS_FACTOR = "pg_stains(p)"


def source_identity() -> str:
    """sha256 (12 hex) of this module's GLSL, swaps and version."""
    text = GROUND_VERSION + GLSL + "".join(a + b for a, b in ASPHALT_SWAPS) + ASPHALT_FACTOR + STAINS_FACTOR
    return hashlib.sha256(text.encode()).hexdigest()[:12]


# ------------------------------------------------------------------------------------------ the Python twins
def h21_np(p: np.ndarray, seed: int) -> np.ndarray:
    """The shaders' ``h21`` (hash of the integer cell of ``p`` ``(..., 2)``) in [0, 1]; float64."""
    c = np.floor(np.asarray(p, np.float64)).astype(np.int64)
    with np.errstate(over="ignore"):       # (0-d operands warn where arrays wrap silently; both wrap)
        return (rhash_np(c[..., 0], c[..., 1], seed) & 65535) / 65535.0


def vnoise_np(p: np.ndarray, seed: int) -> np.ndarray:
    """The shaders' ``vnoise``: value noise of unit wavelength, smoothstep-interpolated corner hashes; float64,
    ``p.shape[:-1]``."""
    p = np.asarray(p, np.float64)
    i = np.floor(p)
    f = p - i
    w = f * f * (3.0 - 2.0 * f)
    a, b = h21_np(i, seed), h21_np(i + [1.0, 0.0], seed)
    c, d = h21_np(i + [0.0, 1.0], seed), h21_np(i + [1.0, 1.0], seed)
    wx, wy = w[..., 0], w[..., 1]
    return (a + (b - a) * wx) * (1 - wy) + (c + (d - c) * wx) * wy


def _smooth(e0, e1, x):
    t = np.clip((np.asarray(x, np.float64) - e0) / (e1 - e0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def patch_of(cell_x: int, cell_y: int) -> tuple[bool, np.ndarray, np.ndarray, float]:
    """The repair patch of one cell (module docstring): ``(present, centre_m (2,), half_size_m (2,), tone)``."""
    h = int(rhash_np(np.array([cell_x]), np.array([cell_y]), 91)[0])
    present = (h & 255) / 256.0 < PATCH_P
    ctr = (np.array([cell_x, cell_y], np.float64) + 0.25
           + 0.5 * np.array([(h >> 8) & 255, (h >> 16) & 255]) / 255.0) * PATCH_CELL_M
    su, sv = ((h >> 24) & 15) / 15.0, (h >> 28) / 15.0
    return present, ctr, np.array([0.8 + 1.2 * su, 0.5 + 1.0 * sv]), PATCH_TONE[1] if su > 0.5 else PATCH_TONE[0]


def asphalt_factor(p: np.ndarray, aa: float) -> np.ndarray:
    """Twin of ``pg_asphalt``: the albedo factor at ground points ``p`` ``(..., 2)`` (m) with footprint ``aa``
    (m, > 0); float64, ``p.shape[:-1]``."""
    p = np.asarray(p, np.float64)
    c = np.floor(p / PATCH_CELL_M).astype(np.int64)
    with np.errstate(over="ignore"):
        h = rhash_np(c[..., 0], c[..., 1], 91)
    present = ((h & 255) / 256.0 < PATCH_P).astype(np.float64)
    ctr = (c + 0.25 + 0.5 * np.stack([(h >> 8) & 255, (h >> 16) & 255], -1) / 255.0) * PATCH_CELL_M
    su, sv = ((h >> 24) & 15) / 15.0, (h >> 28) / 15.0
    d = np.abs(p - ctr) - np.stack([0.8 + 1.2 * su, 0.5 + 1.0 * sv], -1)
    e = d.max(-1)
    inside = present * (1.0 - _smooth(-aa, aa, e))
    seam = present * (1.0 - _smooth(SEAM_M, SEAM_M + aa, np.abs(e)))
    tone = np.where(su > 0.5, PATCH_TONE[1], PATCH_TONE[0])
    return ((1.0 + (tone - 1.0) * inside) * (1.0 - SEAM_A * seam)
            * (1 - TONE_A / 2 + TONE_A * vnoise_np(p / TONE_M, 92)))


def paint_chip(p: np.ndarray, fine: float) -> np.ndarray:
    """Twin of ``pg_paint``'s chip mask (share of the paint gone) at ``p`` ``(..., 2)``; float64."""
    return fine * _smooth(CHIP_T, CHIP_T + 0.06, vnoise_np(np.asarray(p, np.float64) / CHIP_M, 93))


def stain_factor(p: np.ndarray) -> np.ndarray:
    """Twin of ``pg_stains``: the paving's albedo factor at ``p`` ``(..., 2)`` (m); float64."""
    p = np.asarray(p, np.float64)
    return 1.0 - STAIN_A * _smooth(STAIN_T[0], STAIN_T[1], vnoise_np(p / STAIN_M, 95))


def grass_albedo(p: np.ndarray, fine: float) -> np.ndarray:
    """Twin of ``pg_grass``: the lawn's albedo ``(..., 3)`` at ``p`` ``(..., 2)`` (m), detail ``fine`` in [0, 1]."""
    p = np.asarray(p, np.float64)
    dry = _smooth(0.4, 0.85, vnoise_np(p / DRY_M, 97))[..., None]
    n = vnoise_np(p / LUSH_M, 98)
    lush = n[..., None]
    c = np.array(GRASS_LUSH) + (np.array(GRASS_PALE) - GRASS_LUSH) * lush
    c = c + (np.array(GRASS_DRY) - c) * 0.7 * dry
    c = c * (1.0 + 0.45 * fine * (vnoise_np(p / TUFT_M, 99)[..., None] - 0.5))
    litter = ((1.0 - _smooth(0.0, 0.25, n)) * (h21_np(p * 7.0, 101) >= 0.75))[..., None]
    return c + (np.array(LEAF) - c) * litter * fine


__all__ = ["ASPHALT_FACTOR", "ASPHALT_SWAPS", "GLSL", "GROUND_VERSION", "PATCH_CELL_M", "PATCH_P", "PATCH_TONE",
           "STAINS_FACTOR", "asphalt_factor", "grass_albedo", "h21_np", "paint_chip", "patch_of", "source_identity",
           "stain_factor", "vnoise_np"]
