"""The ``photo`` style's worn street ground (issue 24; blind-sort tells "flat tiled paving", "uniform paving
texture", "uniform flat lawn", "game-like road markings"): procedural decals at true scale (metres) over the
photo ground of :mod:`.photo_materials`, :mod:`.photo_ground` and :mod:`.photo_paving`.

Photo style only: :func:`patch_ground` rewrites the photo ground program (called by
:func:`.photo_materials.patch_source`); ``flat`` and ``realistic`` never see it. With :data:`ENABLED` false the
photo ground is drawn as before this module, pixel for pixel. World ground coordinates ``p`` (metres, x east,
y north); ``aa`` the pixel's footprint on the ground (metres, :data:`.photo_ground.AA`).

**Scattered decals** (``pw_cell``, twin :func:`cell_decal`): the ground is cut into squares of a decal's cell
size; the hash ``h = rhash(cell, seed)`` decides: present where ``(h & 255) / 256 < prob``, centred at ``cell +
(0.2 + 0.6 (u, v)) cell_m`` (``u = (h >> 8 & 255) / 255``, ``v = (h >> 16 & 255) / 255``), so a decal of up to
``0.2 cell_m`` radius stays inside its cell; bits 24-31 size and kind it. A decal's edge is smoothed over ``aa``
and a decal smaller than a pixel keeps only its area's share (``min(1, r^2 / aa^2)``): no sparkle with distance.

* **Asphalt** (``pw_asphalt``, twin :func:`asphalt_wear`): *oil and rubber spots* (cells of :data:`OIL_CELL_M`,
  share :data:`OIL_P`; ellipses of 0.1-0.42 m, squashed 0.55-1, soft, darkening up to :data:`OIL_A`); *sealed
  cracks*: tar lines of half width :data:`CRACK_HW_M` along the 0.5 contour of a value noise of wavelength
  :data:`CRACK_M` roughened by one of 0.37 m; the distance to the contour in metres is ``|n - 0.5|`` over the
  noise's analytic gradient (``pw_vnoise_d``, twin :func:`vnoise_d`), so the line keeps its width, and it fades
  where ``|n - 0.5|`` passes :data:`CRACK_CAP` (no blobs at the noise's saddles); only where the photo
  ground's 23 m asphalt tone noise is above 0.38-0.5 (the realistic asphalt's cracks are dropped for these);
  *iron covers* (cells of :data:`LID_CELL_M`, share :data:`LID_P`): a manhole of 0.31 m radius (rim, a grid of
  raised bosses of 7 cm that fades out when a pixel spans over 1-2 cm) or, a quarter of them, a valve cap of
  0.11 m. The realistic damp blotches (its 1.7 m noise) get sharper edges (puddle stains, 12 % darker) and the
  same noise mottles the asphalt +-7 %.
* **Paving** (``pw_paving``, twin :func:`paving_wear`): *chewing-gum dots* (cells of :data:`GUM_CELL_M`, share
  :data:`GUM_P`, radius 7-19 mm, a quarter pale, the rest dark); *utility lids* (cells of :data:`PLID_CELL_M`,
  share :data:`PLID_P`): square lids of 0.2-0.35 m half size with a 3 cm iron frame over darker infill, or (a
  quarter) a round valve cap of 9 cm; *moss in the joints* (``pw_joint``, twin :func:`joint_rgb`): the joint
  colour of :mod:`.photo_paving` turns moss green where the stains' 1.4 m noise is high (damp places).
* **Kerb band** (``pw_kerb``, twin :func:`kerb_albedo`): dimmed and soiled (``0.62 + 0.25 n``, 0.9 m noise;
  it was one bright granite tone), and **drain gratings**: the ground only knows the band by its material, so a
  grating (iron, slots of :data:`SLOT_M` pitch fading out when a pixel spans 1-2.5 cm) fills the band within
  :data:`GRATE_HW_M` of the lines ``x = k GRATE_M`` and ``y = k GRATE_M``, on :data:`GRATE_P` of those lines'
  1.5 m pieces (``h21`` of the line index and the piece); a kerb crosses such a line every 8-11 m.
* **Road paint** (``pw_paint``, twin :func:`paint_wear`): grimed (``0.8 + 0.2 n``) and worn through to asphalt
  grey (up to half) where ``n``, the realistic paint's own wear octave, is high.
* **Lawn** (``pw_lawn``, twin :func:`lawn_wear`): darker, bluer clover patches (1.9 m noise) and trodden paths:
  a soil-coloured band :data:`PATH_HW_M` either side of the 0.5 contour of the lawn's 17 m dry-stretch noise
  (its width from a typical slope, :data:`GRAD` over the wavelength), in :data:`PATH_P` of the squares of
  :data:`PATH_CELL_M`.

Noises that the photo ground already computes (the asphalt tone, the stains, the dry stretches, the paint's wear)
are called with the same arguments, so the compiler computes them once. Constants are ours, chosen by eye
against the shared street photos.
"""

from __future__ import annotations

import hashlib

import numpy as np

from urbanarena.render.scene3d import photo_ground as PG
from urbanarena.render.scene3d.photo_ground import _smooth, h21_np, rhash_np, vnoise_np

#: switch (tests and the benchmark's A/B): false draws the photo ground exactly as before this module
ENABLED = True
#: bumped whenever this module's pixels change (part of the photo render identity)
WEAR_VERSION = "photo-ground-wear-1"
#: mean slope of a unit-wavelength value noise (noise units per wavelength), for contour widths
GRAD = 0.45
OIL_CELL_M, OIL_P, OIL_A = 2.2, 0.22, 0.45
CRACK_M, CRACK_HW_M, CRACK_A, CRACK_WIGGLE = 3.3, 0.02, 0.6, 0.05
#: the tar line fades where the noise strays this far from its contour (noise units): no blobs at saddles
CRACK_CAP = (0.004, 0.008)
LID_CELL_M, LID_P = 11.0, 0.4
IRON_RGB = (0.2, 0.19, 0.18)
#: drain gratings in the kerb band: line spacing (m), share of 1.5 m pieces, half length (m), slot pitch (m)
GRATE_M, GRATE_P, GRATE_HW_M, SLOT_M = 11.0, 0.5, 0.25, 0.045
GUM_CELL_M, GUM_P = 0.2, 0.16
PLID_CELL_M, PLID_P = 7.0, 0.35
JOINT_RGB, MOSS_RGB = (0.22, 0.21, 0.19), (0.15, 0.19, 0.08)
PATH_HW_M, PATH_RGB = 0.5, (0.34, 0.3, 0.22)
#: trodden paths only in a share of square cells (m)
PATH_CELL_M, PATH_P = 40.0, 0.35
CLOVER_RGB = (0.68, 0.8, 0.74)

#: the footprint expression the photo ground passes (metres per pixel)
AA = "(fwidth(p.x) + fwidth(p.y))"

GLSL = f"""
// photo ground wear (photo_ground_wear.py): decals at true scale on asphalt, paving, kerbs, paint and lawns
// one decal per cell of cell_m: xy the offset from its centre (m), z < prob where the cell holds one; h its hash
vec3 pw_cell(vec2 p, float cell_m, uint seed, out uint h) {{
    vec2 c = floor(p / cell_m);
    h = rhash(uvec3(uvec2(ivec2(c)), seed));
    vec2 ctr = (c + 0.2 + 0.6 * vec2(float((h >> 8u) & 255u), float((h >> 16u) & 255u)) / 255.0) * cell_m;
    return vec3(p - ctr, float(h & 255u) / 256.0);
}}
// coverage of a disc of radius r at distance d, edge smoothed over aa; under a pixel only its area's share
float pw_dot(float d, float r, float aa) {{
    return (1.0 - smoothstep(r - aa, r + aa, d)) * min(1.0, r * r / max(aa * aa, 1e-12));
}}
vec3 pw_iron(vec2 d, float r, float aa) {{          // an iron cover: rim and a grid of raised bosses
    float rim = 1.0 - smoothstep(0.03 - aa, 0.03 + aa, r - length(d));
    vec2 b = abs(fract(d / 0.07) - 0.5);
    float boss = (1.0 - smoothstep(0.25 - aa / 0.07, 0.25 + aa / 0.07, max(b.x, b.y))) * (1.0 - smoothstep(0.01, 0.02, aa));
    return vec3{IRON_RGB} * (1.0 + 0.45 * boss + 0.6 * rim);
}}
vec3 pw_vnoise_d(vec2 p, uint s) {{               // value noise (as vnoise) and its gradient per unit of p
    vec2 i = floor(p), f = fract(p);
    vec2 w = f * f * (3.0 - 2.0 * f), dw = 6.0 * f * (1.0 - f);
    float a = h21(i, s), b = h21(i + vec2(1.0, 0.0), s), c = h21(i + vec2(0.0, 1.0), s), d = h21(i + vec2(1.0, 1.0), s);
    return vec3(mix(mix(a, b, w.x), mix(c, d, w.x), w.y), dw * vec2(mix(b - a, d - c, w.y), mix(c - a, d - b, w.x)));
}}
vec3 pw_asphalt(vec3 a, vec2 p, float aa) {{
    uint h;
    vec3 o = pw_cell(p, {OIL_CELL_M:.3f}, 161u, h);
    float r = 0.1 + 0.32 * float(h >> 24u) / 255.0, sq = 0.55 + 0.45 * float((h >> 4u) & 15u) / 15.0;
    float oil = (o.z < {OIL_P:.4f} ? 1.0 : 0.0) * (1.0 - smoothstep(0.4 * r, r + aa, length(vec2(o.x, o.y / sq))));
    a *= 1.0 - {OIL_A:.4f} * oil;
    float zone = smoothstep(0.38, 0.5, vnoise(p / {PG.TONE_M:.3f}, 92u));   // the asphalt tone's noise (shared)
    vec3 nd = pw_vnoise_d(p / {CRACK_M:.3f}, 163u);
    float n = nd.x + {CRACK_WIGGLE:.4f} * (vnoise(p / 0.37, 164u) - 0.5);
    float dm = abs(n - 0.5) * {CRACK_M:.3f} / max(length(nd.yz), 1e-4);   // metres from the contour
    float line = zone * (1.0 - smoothstep({CRACK_HW_M:.4f} - aa, {CRACK_HW_M:.4f} + aa, dm)) * min(1.0, {2 * CRACK_HW_M:.4f} / max(aa, 1e-6))
                 * (1.0 - smoothstep({CRACK_CAP[0]:.4f}, {CRACK_CAP[1]:.4f}, abs(n - 0.5)));   // thins out at saddles
    a *= 1.0 - {CRACK_A:.4f} * line;
    vec3 l = pw_cell(p, {LID_CELL_M:.3f}, 165u, h);
    float lr = ((h >> 24u) & 3u) == 0u ? 0.11 : 0.31;
    float lid = (l.z < {LID_P:.4f} ? 1.0 : 0.0) * pw_dot(length(l.xy), lr, aa);
    return mix(a, pw_iron(l.xy, lr, aa), lid);
}}
vec3 pw_joint(vec2 p) {{
    return mix(vec3{JOINT_RGB}, vec3{MOSS_RGB}, smoothstep(0.5, 0.7, vnoise(p / {PG.STAIN_M:.3f}, 95u)));   // damp: moss
}}
vec3 pw_paving(vec3 a, vec2 p, float aa) {{
    uint h;
    vec3 g = pw_cell(p, {GUM_CELL_M:.4f}, 171u, h);
    float gr = 0.007 + 0.012 * float(h >> 24u) / 255.0;
    float gum = (g.z < {GUM_P:.4f} ? 1.0 : 0.0) * pw_dot(length(g.xy), gr, aa);
    a *= 1.0 + gum * (((h >> 28u) & 3u) == 0u ? 0.25 : -0.45);
    vec3 l = pw_cell(p, {PLID_CELL_M:.3f}, 173u, h);
    float s = 0.2 + 0.15 * float((h >> 24u) & 15u) / 15.0;
    bool round_cap = (h >> 30u) == 0u;
    float e = round_cap ? length(l.xy) - 0.09 : max(abs(l.x), abs(l.y)) - s;   // < 0 inside, m from the edge
    float lid = (l.z < {PLID_P:.4f} ? 1.0 : 0.0) * (1.0 - smoothstep(-aa, aa, e)) * (round_cap ? min(1.0, 0.0081 / max(aa * aa, 1e-12)) : 1.0);
    float frame = round_cap ? 1.0 : 1.0 - smoothstep(0.03 - aa, 0.03 + aa, -e);
    return mix(a, mix(a * 0.8, vec3{IRON_RGB} * 1.5, frame), lid);
}}
vec3 pw_kerb(vec3 a, vec2 p) {{
    float aa = {AA};
    a *= 0.62 + 0.25 * vnoise(p / 0.9, 191u);
    // drain gratings where the band crosses a line x = k GRATE_M or y = k GRATE_M, in GRATE_P of its 1.5 m pieces
    vec2 k = floor(p / {GRATE_M:.3f} + 0.5), d = abs(p - k * {GRATE_M:.3f});     // metres from the nearest lines
    float gx = h21(vec2(k.x, floor(p.y / 1.5)), 195u) < {GRATE_P:.4f} ? 1.0 : 0.0;
    float gy = h21(vec2(k.y, floor(p.x / 1.5)), 196u) < {GRATE_P:.4f} ? 1.0 : 0.0;
    float inx = gx * (1.0 - smoothstep({GRATE_HW_M:.3f} - aa, {GRATE_HW_M:.3f} + aa, d.x));
    float iny = gy * (1.0 - smoothstep({GRATE_HW_M:.3f} - aa, {GRATE_HW_M:.3f} + aa, d.y));
    vec2 sl = abs(fract(p / {SLOT_M:.3f}) - 0.5);                 // slots across the line's direction
    float fade = 1.0 - smoothstep(0.01, 0.025, aa);
    float sx = fade * (1.0 - smoothstep(0.25 - aa / {SLOT_M:.3f}, 0.25 + aa / {SLOT_M:.3f}, sl.x));
    float sy = fade * (1.0 - smoothstep(0.25 - aa / {SLOT_M:.3f}, 0.25 + aa / {SLOT_M:.3f}, sl.y));
    a = mix(a, vec3{IRON_RGB} * (1.2 - 0.9 * sx), inx);
    return mix(a, vec3{IRON_RGB} * (1.2 - 0.9 * sy), iny);
}}
vec3 pw_paint(vec3 a, vec2 p) {{
    float n = vnoise(p * 1.3, 15u);                 // the realistic paint's wear octave (shared)
    return mix(a * (0.8 + 0.2 * n), vec3(0.3, 0.305, 0.31), 0.5 * smoothstep(0.45, 0.75, n));
}}
vec3 pw_lawn(vec3 c, vec2 p, float aa) {{
    c *= mix(vec3(1.0), vec3{CLOVER_RGB}, smoothstep(0.58, 0.78, vnoise(p / 1.9, 181u)));
    float zone = h21(p / {PATH_CELL_M:.3f}, 182u) < {PATH_P:.4f} ? 1.0 : 0.0;
    float g = {GRAD / PG.DRY_M:.6f}, w = {PATH_HW_M:.4f} * g;     // along the dry stretches' noise (shared)
    float path = zone * (1.0 - smoothstep(0.6 * w, w + aa * g, abs(vnoise(p / {PG.DRY_M:.3f}, 97u) - 0.5)));
    return mix(c, vec3{PATH_RGB}, 0.8 * path);
}}
"""



def _swaps(grains: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    """``(old, new)`` texts of the photo ground program (after :data:`.photo_materials.GROUND_SWAPS`);
    ``grains``: the GLSL of the asphalt's and the paving's photo grain as :mod:`.photo_materials` writes them
    (passed in, so this module does not import that one, which imports it)."""
    from urbanarena.render.scene3d import photo_paving as PV

    asphalt = f"asphalt(p, fine) * {grains[0]} * {PG.ASPHALT_FACTOR}"
    paving = f"{PV.CALL} * {grains[1]} * photo_dirt(p, 81u) * {PG.STAINS_FACTOR}"
    return (
        (asphalt, f"pw_asphalt({asphalt}, p, {AA})"),
        (paving, f"pw_paving({paving}, p, {AA})"),
        (f"vec3{PV.JOINT_RGB}, {PV.JOINT_A:.4f} * joint", f"pw_joint(p), {PV.JOINT_A:.4f} * joint"),
        # the realistic asphalt's cracks give way to the tar lines; its damp blotches grow
        ("    return a * (1.0 - 0.25 * fine * worn * (1.0 - smoothstep(0.0, fwidth(cn), abs(cn))));", "    return a;"),
        ("    a *= 1.0 - 0.1 * smoothstep(0.6, 0.9, vnoise(p * 0.6 + 3.0, 8u));",
         "    float damp = vnoise(p * 0.6 + 3.0, 8u);\n    a *= (1.0 - 0.12 * smoothstep(0.66, 0.71, damp)) * (0.93 + 0.14 * damp);"),
        ("vec3 kerb(vec2 p) { return vec3(0.66, 0.65, 0.63) * (0.9 + 0.15 * h21(p * 3.0, 16u)); }",
         "vec3 kerb(vec2 p) { return pw_kerb(vec3(0.66, 0.65, 0.63) * (0.9 + 0.15 * h21(p * 3.0, 16u)), p); }"),
        ("pg_paint(paint(p), p, fine)", "pw_paint(pg_paint(paint(p), p, fine), p)"),
        ("    vec3 c = pg_grass(p, fine);\n", f"    vec3 c = pw_lawn(pg_grass(p, fine), p, {AA});\n"),
    )


def patch_ground(src: str, grains: tuple[str, str]) -> str:
    """The photo ground fragment source ``src`` with the wear (module docstring); ``src`` unchanged when
    :data:`ENABLED` is false. Each swap applies wherever its text occurs (a one-material program holds one).

    Raises:
        RuntimeError: none of the texts to replace is in ``src`` (the ground shaders changed without this
            module)."""
    if not ENABLED:
        return src
    anchor = "\n// photo ground (photo_ground.py)"   # before the paving, which calls pw_joint
    if anchor not in src:
        raise RuntimeError("photo ground wear: the photo ground functions were not found (shaders changed?)")
    src = src.replace(anchor, GLSL + anchor)
    hit = False
    for old, new in _swaps(grains):
        if old in src:
            src, hit = src.replace(old, new), True
    if not hit:
        raise RuntimeError("photo ground wear: no ground material call found (shaders changed?)")
    return src


def source_identity(grains: tuple[str, str]) -> str:
    """sha256 (12 hex) of the wear's GLSL, swaps (``grains`` as in :func:`patch_ground`) and version; ``"off"``
    when :data:`ENABLED` is false."""
    if not ENABLED:
        return "off"
    text = WEAR_VERSION + GLSL + "".join(a + b for a, b in _swaps(grains))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


# ------------------------------------------------------------------------------------------ the numpy twins
def cell_decal(p: np.ndarray, cell_m: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Twin of ``pw_cell``: ``(offset_m (..., 2) from the cell's decal centre, presence value (...) in [0, 1),
    hash (...) int64)`` at ground points ``p`` ``(..., 2)`` (m); the decal is there where the value is below its
    probability."""
    p = np.asarray(p, np.float64)
    c = np.floor(p / cell_m)
    ci = c.astype(np.int64)
    with np.errstate(over="ignore"):
        h = rhash_np(ci[..., 0], ci[..., 1], seed)
    ctr = (c + 0.2 + 0.6 * np.stack([(h >> 8) & 255, (h >> 16) & 255], -1) / 255.0) * cell_m
    return p - ctr, (h & 255) / 256.0, h


def dot_cover(d, r, aa: float) -> np.ndarray:
    """Twin of ``pw_dot``: a disc of radius ``r`` (m) at distance ``d`` (m), footprint ``aa`` (m)."""
    d, r = np.asarray(d, np.float64), np.asarray(r, np.float64)
    return (1.0 - _smooth(r - aa, r + aa, d)) * np.minimum(1.0, r * r / max(aa * aa, 1e-12))


def vnoise_d(p: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Twin of ``pw_vnoise_d``: the value noise at ``p`` ``(..., 2)`` (as :func:`.photo_ground.vnoise_np`) and its
    gradient ``(..., 2)`` per unit of ``p``."""
    p = np.asarray(p, np.float64)
    i = np.floor(p)
    f = p - i
    w, dw = f * f * (3.0 - 2.0 * f), 6.0 * f * (1.0 - f)
    a, b = h21_np(i, seed), h21_np(i + [1.0, 0.0], seed)
    c, d = h21_np(i + [0.0, 1.0], seed), h21_np(i + [1.0, 1.0], seed)
    wx, wy = w[..., 0], w[..., 1]
    v = (a + (b - a) * wx) * (1 - wy) + (c + (d - c) * wx) * wy
    g = np.stack([dw[..., 0] * ((b - a) + ((d - c) - (b - a)) * wy), dw[..., 1] * ((c - a) + ((d - b) - (c - a)) * wx)], -1)
    return v, g


def iron_rgb(d: np.ndarray, r, aa: float) -> np.ndarray:
    """Twin of ``pw_iron``: an iron cover's colour ``(..., 3)`` at offsets ``d`` ``(..., 2)`` (m) from its centre."""
    d = np.asarray(d, np.float64)
    rim = 1.0 - _smooth(0.03 - aa, 0.03 + aa, np.asarray(r) - np.linalg.norm(d, axis=-1))
    b = np.abs(np.mod(d / 0.07, 1.0) - 0.5)
    boss = (1.0 - _smooth(0.25 - aa / 0.07, 0.25 + aa / 0.07, b.max(-1))) * (1.0 - float(_smooth(0.01, 0.02, aa)))
    return np.asarray(IRON_RGB) * (1.0 + 0.45 * boss + 0.6 * rim)[..., None]


def _mix(a, b, t):
    return a + (b - a) * np.asarray(t, np.float64)[..., None]


def asphalt_wear(a: np.ndarray, p: np.ndarray, aa: float) -> np.ndarray:
    """Twin of ``pw_asphalt``: albedo ``a`` ``(..., 3)`` at ground points ``p`` ``(..., 2)`` (m), footprint
    ``aa`` (m), worn; float64 ``(..., 3)``."""
    p = np.asarray(p, np.float64)
    o, z, h = cell_decal(p, OIL_CELL_M, 161)
    r = 0.1 + 0.32 * (h >> 24) / 255.0
    sq = 0.55 + 0.45 * ((h >> 4) & 15) / 15.0
    oil = (z < OIL_P) * (1.0 - _smooth(0.4 * r, r + aa, np.hypot(o[..., 0], o[..., 1] / sq)))
    a = np.asarray(a, np.float64) * (1.0 - OIL_A * oil)[..., None]
    zone = _smooth(0.38, 0.5, vnoise_np(p / PG.TONE_M, 92))
    v, grad = vnoise_d(p / CRACK_M, 163)
    n = v + CRACK_WIGGLE * (vnoise_np(p / 0.37, 164) - 0.5)
    dm = np.abs(n - 0.5) * CRACK_M / np.maximum(np.linalg.norm(grad, axis=-1), 1e-4)
    line = (zone * (1.0 - _smooth(CRACK_HW_M - aa, CRACK_HW_M + aa, dm)) * min(1.0, 2 * CRACK_HW_M / max(aa, 1e-6))
            * (1.0 - _smooth(CRACK_CAP[0], CRACK_CAP[1], np.abs(n - 0.5))))
    a = a * (1.0 - CRACK_A * line)[..., None]
    l, z, h = cell_decal(p, LID_CELL_M, 165)
    lr = np.where((h >> 24) & 3 == 0, 0.11, 0.31)
    lid = (z < LID_P) * dot_cover(np.linalg.norm(l, axis=-1), lr, aa)
    return _mix(a, iron_rgb(l, lr, aa), lid)


def joint_rgb(p: np.ndarray) -> np.ndarray:
    """Twin of ``pw_joint``: the paving joints' colour ``(..., 3)`` at ``p`` ``(..., 2)`` (m)."""
    t = _smooth(0.5, 0.7, vnoise_np(np.asarray(p, np.float64) / PG.STAIN_M, 95))
    return _mix(np.asarray(JOINT_RGB, np.float64), np.asarray(MOSS_RGB, np.float64), t)


def paving_wear(a: np.ndarray, p: np.ndarray, aa: float) -> np.ndarray:
    """Twin of ``pw_paving``: paving albedo ``a`` ``(..., 3)`` at ``p`` ``(..., 2)`` (m) with gum dots and
    utility lids; float64 ``(..., 3)``."""
    p = np.asarray(p, np.float64)
    g, z, h = cell_decal(p, GUM_CELL_M, 171)
    gr = 0.007 + 0.012 * (h >> 24) / 255.0
    gum = (z < GUM_P) * dot_cover(np.linalg.norm(g, axis=-1), gr, aa)
    a = np.asarray(a, np.float64) * (1.0 + gum * np.where((h >> 28) & 3 == 0, 0.25, -0.45))[..., None]
    l, z, h = cell_decal(p, PLID_CELL_M, 173)
    s = 0.2 + 0.15 * ((h >> 24) & 15) / 15.0
    cap = (h >> 30) == 0
    e = np.where(cap, np.linalg.norm(l, axis=-1) - 0.09, np.abs(l).max(-1) - s)
    lid = (z < PLID_P) * (1.0 - _smooth(-aa, aa, e)) * np.where(cap, min(1.0, 0.0081 / max(aa * aa, 1e-12)), 1.0)
    frame = np.where(cap, 1.0, 1.0 - _smooth(0.03 - aa, 0.03 + aa, -e))
    return _mix(a, _mix(a * 0.8, np.asarray(IRON_RGB) * 1.5, frame), lid)


def kerb_factor(p: np.ndarray) -> np.ndarray:
    """``pw_kerb``'s soil factor on the kerb band's albedo at ``p`` ``(..., 2)`` (m), before the gratings."""
    return 0.62 + 0.25 * vnoise_np(np.asarray(p, np.float64) / 0.9, 191)


def grate_masks(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Whether the grating pieces of the lines ``x = k GRATE_M`` and ``y = k GRATE_M`` nearest to ``p``
    ``(..., 2)`` (m) are present (``pw_kerb``), as two float arrays of 0 and 1."""
    p = np.asarray(p, np.float64)
    k = np.floor(p / GRATE_M + 0.5)
    gx = h21_np(np.stack([k[..., 0], np.floor(p[..., 1] / 1.5)], -1), 195) < GRATE_P
    gy = h21_np(np.stack([k[..., 1], np.floor(p[..., 0] / 1.5)], -1), 196) < GRATE_P
    return gx.astype(np.float64), gy.astype(np.float64)


def kerb_albedo(a: np.ndarray, p: np.ndarray, aa: float) -> np.ndarray:
    """Twin of ``pw_kerb``: the kerb band's albedo ``a`` ``(..., 3)`` at ``p`` ``(..., 2)`` (m), footprint
    ``aa`` (m; the shader's ``fwidth(p.x) + fwidth(p.y)``), soiled, with drain gratings; float64 ``(..., 3)``."""
    p = np.asarray(p, np.float64)
    a = np.asarray(a, np.float64) * kerb_factor(p)[..., None]
    k = np.floor(p / GRATE_M + 0.5)
    d = np.abs(p - k * GRATE_M)
    gx, gy = grate_masks(p)
    inx = gx * (1.0 - _smooth(GRATE_HW_M - aa, GRATE_HW_M + aa, d[..., 0]))
    iny = gy * (1.0 - _smooth(GRATE_HW_M - aa, GRATE_HW_M + aa, d[..., 1]))
    sl = np.abs(np.mod(p / SLOT_M, 1.0) - 0.5)
    fade = 1.0 - float(_smooth(0.01, 0.025, aa))
    s = fade * (1.0 - _smooth(0.25 - aa / SLOT_M, 0.25 + aa / SLOT_M, sl))
    a = _mix(a, np.asarray(IRON_RGB) * (1.2 - 0.9 * s[..., 0])[..., None], inx)
    return _mix(a, np.asarray(IRON_RGB) * (1.2 - 0.9 * s[..., 1])[..., None], iny)


def paint_wear(a: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Twin of ``pw_paint``: road paint ``a`` ``(..., 3)`` grimed and worn through at ``p`` ``(..., 2)`` (m)."""
    p = np.asarray(p, np.float64)
    n = vnoise_np(p * 1.3, 15)
    a = np.asarray(a, np.float64) * (0.8 + 0.2 * n)[..., None]
    return _mix(a, np.array([0.3, 0.305, 0.31]), 0.5 * _smooth(0.45, 0.75, n))


def path_share(p: np.ndarray, aa: float) -> np.ndarray:
    """The trodden-path share of ``pw_lawn`` (before its 0.8 strength) at ``p`` ``(..., 2)`` (m)."""
    p = np.asarray(p, np.float64)
    zone = (h21_np(p / PATH_CELL_M, 182) < PATH_P).astype(np.float64)
    g = GRAD / PG.DRY_M
    w = PATH_HW_M * g
    return zone * (1.0 - _smooth(0.6 * w, w + aa * g, np.abs(vnoise_np(p / PG.DRY_M, 97) - 0.5)))


def lawn_wear(c: np.ndarray, p: np.ndarray, aa: float) -> np.ndarray:
    """Twin of ``pw_lawn``: lawn albedo ``c`` ``(..., 3)`` at ``p`` ``(..., 2)`` (m), footprint ``aa`` (m), with
    clover patches, trodden paths and mottle; float64 ``(..., 3)``."""
    p = np.asarray(p, np.float64)
    c = _mix(np.asarray(c, np.float64), np.asarray(CLOVER_RGB, np.float64) * np.asarray(c, np.float64),
             _smooth(0.58, 0.78, vnoise_np(p / 1.9, 181)))
    return _mix(c, np.asarray(PATH_RGB, np.float64), 0.8 * path_share(p, aa))


__all__ = ["AA", "ENABLED", "GLSL", "GRAD", "WEAR_VERSION", "asphalt_wear", "cell_decal", "dot_cover", "iron_rgb",
           "grate_masks", "joint_rgb", "kerb_albedo", "kerb_factor", "lawn_wear", "paint_wear", "patch_ground", "path_share", "paving_wear",
           "source_identity"]
