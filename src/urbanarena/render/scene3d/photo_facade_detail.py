"""The ``photo`` style's projecting window sills and wall grime (issue 24, tells "windows have no depth", "walls
evenly clean from the pavement to the roof").

Photo style only: string swaps on the facade source inside :func:`.photo_facades.patch_source` (entered once,
:func:`patch_source`), so ``flat`` and ``realistic`` never reach it. Functions of their own (``facade_sill_*``,
``facade_grime``) so that other photo patches keep clear of them. Window coordinates as in :mod:`.photo_facades`:
``x`` metres along the wall from the window's left glass edge, ``y`` metres up from its bottom; the realistic
window grid puts the sill at ``y`` in ``[-0.12, -fw]``, ``x`` in ``[-0.1, w + 0.1]`` (``w`` the glass width).

* **Sill shadow** (:func:`sill_sun`, GLSL ``facade_sill_sun``): the sill projects :data:`SILL_PROJ_M` out of the
  wall (ours: a stone or sheet-metal sill of 5-8 cm reads as 6 cm at street distances). A wall point ``q`` below it
  is in its shadow when the ray towards the sun, ``q + t (s_t, s_z) / s_n`` at ``t`` metres in front of the wall
  (``s_t = sun . t``, ``s_z`` the sun's height component, ``s_n = sun . n``), reaches the sill's underside
  (``y = -0.12``) at ``t = (-0.12 - q_y) s_n / s_z <= SILL_PROJ_M`` with its ``x`` inside the sill; soft over
  +-1 cm of the nearest edge. No shadow when the sun is behind the wall or below the horizon: the band under a
  sill is then only the contact shade (:func:`sill_contact`: ``1 - SILL_AO (1 - smoothstep(0, 0.06, d))`` for a
  point ``d`` metres under the sill and inside its width).
* **Sill faces** (:func:`sill_face`, GLSL ``facade_sill_face``): seen from below (in-plane step ``r_y`` > 0 per
  metre of depth, :mod:`.photo_facades`' recess), the sill's underside covers the lowest ``r_y SILL_PROJ_M``
  metres of its band (one parallax offset, no loop): face 1, unlit by the sun and :data:`UNDERSIDE` of the sky;
  seen from above its top covers the highest ``-r_y SILL_PROJ_M``: face 2, catching the sky (:data:`TOP_GAIN`);
  else face 0, its front.
* **Grime** (:func:`grime`, GLSL ``facade_grime``): an albedo factor per wall fragment, strength ``a`` per wall
  (``0.4 + 1.2 hf(wh, 4)`` of the wall hash, so neighbouring buildings differ): the splash zone at the foot, darker
  up to :data:`SPLASH_M` (times ``0.7-1.3`` along the wall, a ragged edge of value noise of 0.6 m), ``1 - 0.22 a
  (1 - smoothstep(0, e, z))``; soot and run-off under the roof edge, ``1 - 0.28 a k (1 - smoothstep(0, SOOT_M s,
  H - 0.6 - z))`` with ``s`` 0.4-1.6 along the wall (noise of 1.4 m) and ``k`` 0.35-1 in vertical streaks (noise
  of 0.25 m across, 4 m down); glass curtain walls and shopfront glass are left clean.

Cost: about forty arithmetic operations and four value-noise lookups per wall fragment (measured with the facades in
docs/renderer.md).
"""

from __future__ import annotations

import hashlib

import numpy as np

from urbanarena.render.scene3d.building_look import _hf
from urbanarena.render.scene3d.photo_ground import vnoise_np

DETAIL_VERSION = "photo-facade-detail-1"
#: how far a sill stands out of the wall (m) and its band in window coordinates (m; the realistic grid's)
SILL_PROJ_M = 0.06
SILL_LO_M, SILL_OVER_M = -0.12, 0.1
#: contact shade under a sill at most, the underside's share of the sky, the top's gain
SILL_AO, UNDERSIDE, TOP_GAIN = 0.35, 0.45, 1.15
#: splash zone height (m) and soot band height under the cornice (m) at the building's mean strength
SPLASH_M, SOOT_M = 0.4, 1.6


# ------------------------------------------------------------------------------------------ the Python twins
def _smoothstep(a: float, b: float, x):
    t = np.clip((np.asarray(x, np.float64) - a) / (b - a), 0.0, 1.0)
    return t * t * (3 - 2 * t)


def sill_sun(q, w_m: float, s, s_n: float) -> float:
    """Share of the sun reaching the wall point ``q = (x, y)`` (window coordinates, m) under the sill of a window
    ``w_m`` wide: 0 in the sill's shadow, 1 outside, soft over +-1 cm; ``s = (sun . t, sun_z)``, ``s_n = sun . n``
    (module docstring). 1 for points on or above the sill's underside and when ``s_n <= 0`` or ``s_z <= 0``."""
    x, y = float(q[0]), float(q[1])
    if s_n <= 0 or s[1] <= 0 or y >= SILL_LO_M:
        return 1.0
    t = (SILL_LO_M - y) * s_n / s[1]
    xs = x + s[0] / s_n * t
    e = min(xs + SILL_OVER_M, w_m + SILL_OVER_M - xs, SILL_PROJ_M - t)
    return float(1.0 - _smoothstep(-0.01, 0.01, e))


def sill_contact(q, w_m: float) -> float:
    """Contact shade of the wall point ``q`` just under a sill: ``1 - SILL_AO (1 - smoothstep(0, 0.06, d))`` with
    ``d`` metres below the sill, within its width (else 1)."""
    x, y = float(q[0]), float(q[1])
    if y >= SILL_LO_M or x < -SILL_OVER_M or x > w_m + SILL_OVER_M:
        return 1.0
    return float(1.0 - SILL_AO * (1.0 - _smoothstep(0.0, 0.06, SILL_LO_M - y)))


def sill_face(y_m: float, r_y: float, fw_m: float) -> int:
    """Which face of the sill a fragment of its band at ``y_m`` (window coordinates) shows: 1 the underside (seen
    from below: within ``r_y SILL_PROJ_M`` of the band's bottom), 2 the top (seen from above: within ``-r_y
    SILL_PROJ_M`` of its top ``-fw_m``), else 0 the front."""
    if r_y > 0 and y_m < SILL_LO_M + r_y * SILL_PROJ_M:
        return 1
    if r_y < 0 and y_m > -fw_m + r_y * SILL_PROJ_M:
        return 2
    return 0


def grime(u_m, z_m, h_m: float, wh: int):
    """Albedo factor of wall grime at ``(u_m, z_m)`` (arrays, m along the wall and up) on a wall ``h_m`` high with
    the wall hash ``wh`` (module docstring); float64 of the broadcast shape."""
    u, z = np.broadcast_arrays(np.asarray(u_m, np.float64), np.asarray(z_m, np.float64))
    a = 0.4 + 1.2 * _hf(wh, 4)
    zero = np.zeros_like(u)
    edge = SPLASH_M * (0.7 + 0.6 * vnoise_np(np.stack([u / 0.6, zero], -1), (wh + 21) & 0xFFFFFFFF))
    g = 1.0 - 0.22 * a * (1.0 - _smoothstep(0.0, 1.0, z / edge))
    reach = SOOT_M * (0.4 + 1.2 * vnoise_np(np.stack([u / 1.4, zero + 0.5], -1), (wh + 22) & 0xFFFFFFFF))
    streak = 0.35 + 0.65 * vnoise_np(np.stack([u / 0.25, z / 4.0], -1), (wh + 23) & 0xFFFFFFFF)
    return g * (1.0 - 0.28 * a * streak * (1.0 - _smoothstep(0.0, 1.0, (h_m - 0.6 - z) / reach)))


# ------------------------------------------------------------------------------------------------ the GLSL
#: functions inserted before the facade's ``main`` (twins above); need ``rhash``, ``hf`` and ``vnoise``
FUNCS_GLSL = f"""
// sun share of wall point q (window coordinates, m) under the sill of a window w wide; s = (sun.t, sun.z), s_n = sun.n
float facade_sill_sun(vec2 q, float w, vec2 s, float s_n) {{
    if (s_n <= 0.0 || s.y <= 0.0 || q.y >= {SILL_LO_M:.3f}) return 1.0;
    float t = ({SILL_LO_M:.3f} - q.y) * s_n / s.y;
    float xs = q.x + s.x / s_n * t;
    float e = min(min(xs + {SILL_OVER_M:.3f}, w + {SILL_OVER_M:.3f} - xs), {SILL_PROJ_M:.3f} - t);
    return 1.0 - smoothstep(-0.01, 0.01, e);
}}
float facade_sill_contact(vec2 q, float w) {{
    if (q.y >= {SILL_LO_M:.3f} || q.x < -{SILL_OVER_M:.3f} || q.x > w + {SILL_OVER_M:.3f}) return 1.0;
    return 1.0 - {SILL_AO:.3f} * (1.0 - smoothstep(0.0, 0.06, {SILL_LO_M:.3f} - q.y));
}}
// the sill face a fragment of its band shows: 1 underside (seen from below), 2 top (from above), 0 front
int facade_sill_face(float y, float ry, float fw) {{
    if (ry > 0.0 && y < {SILL_LO_M:.3f} + ry * {SILL_PROJ_M:.3f}) return 1;
    if (ry < 0.0 && y > -fw + ry * {SILL_PROJ_M:.3f}) return 2;
    return 0;
}}
// albedo factor of grime: splash zone at the foot, soot and run-off streaks under the roof edge (per wall)
float facade_grime(float u, float z, float H, uint wh) {{
    float a = 0.4 + 1.2 * hf(wh, 4u);
    float edge = {SPLASH_M:.3f} * (0.7 + 0.6 * vnoise(vec2(u / 0.6, 0.0), wh + 21u));
    float g = 1.0 - 0.22 * a * (1.0 - smoothstep(0.0, 1.0, z / edge));
    float reach = {SOOT_M:.3f} * (0.4 + 1.2 * vnoise(vec2(u / 1.4, 0.5), wh + 22u));
    float streak = 0.35 + 0.65 * vnoise(vec2(u / 0.25, z / 4.0), wh + 23u);
    return g * (1.0 - 0.28 * a * streak * (1.0 - smoothstep(0.0, 1.0, (H - 0.6 - z) / reach)));
}}
"""

#: grime after the photo facades' weathering (their contact shade under the cornice is its last line)
GRIME_OLD = "    albedo *= 0.8 + 0.2 * smoothstep(0.0, 0.5, H - 0.6 - z);    // contact shade under the cornice\n"
GRIME_NEW = GRIME_OLD + "    if (v_glass < 0.5) albedo *= facade_grime(u, z, H, wh);   // photo detail: splash zone, soot\n"

#: after the window classification of a storey (lv, bottom, k, win_* in scope): a wall fragment under a sill gets
#: its shadow and contact shade, a sill fragment its face
SILL_OLD = "        if (kind == 0 && v_cell.x > 2.0 && abs(lv) < 0.1 && v_course < 0.5) col = albedo * 1.12;  // string course\n"
SILL_NEW = SILL_OLD + """        if ((kind == 0 || kind == 3) && g + (k + 1.0) * floor_h <= H - 0.5 + 1e-3) {   // photo detail: the sill
            float sd_n = floor((L - 0.6) / win_s), sd_loc = u - 0.5 * (L - sd_n * win_s);
            float sd_ci = floor(sd_loc / win_s);
            vec2 sq = vec2(sd_loc - sd_ci * win_s - 0.5 * (win_s - win_w), lv - bottom);
            if (sd_ci >= 0.0 && sd_ci < sd_n) {
                vec3 sd_t = vec3(-n.y, n.x, 0.0);
                if (kind == 0) {
                    rvis = facade_sill_sun(sq, win_w, vec2(dot(sun_dir, sd_t), sun_dir.z), dot(sun_dir, n));
                    sill_ao = facade_sill_contact(sq, win_w);
                } else {
                    int sf = facade_sill_face(sq.y, view.z / max(-dot(view, n), 0.05), fw);
                    if (sf == 1) { rvis = 0.0; sill_ao = %(under).3f; }
                    if (sf == 2) { nl = vec3(0.0, 0.0, 1.0); sill_ao = %(top).3f; }
                }
            }
        }
""" % {"under": UNDERSIDE, "top": TOP_GAIN}

#: the sill factor declared with the photo facades' recess variables
DECL_OLD = "    float rvis = 1.0, rao = 1.0, fr = 0.0, cover = 0.0;\n"
DECL_NEW = DECL_OLD + "    float sill_ao = 1.0;\n"
#: and applied to the colour before the light (the photo facades' reveal factor line)
APPLY_OLD = "    if (kind == 1 || kind == 2) col *= rao;\n"
APPLY_NEW = APPLY_OLD + "    col *= sill_ao;\n"


def patch_source(src: str) -> str:
    """The photo facade fragment source (inside :func:`.photo_facades.patch_source`, after its own swaps) with the
    sills and the grime (module docstring).

    Raises:
        RuntimeError: a text to replace is missing (the facade shaders were edited without this module)."""
    for old, new, what in ((GRIME_OLD, GRIME_NEW, "cornice contact shade"), (SILL_OLD, SILL_NEW, "string course"),
                           (DECL_OLD, DECL_NEW, "recess variables"), (APPLY_OLD, APPLY_NEW, "reveal factor"),
                           ("void main() {", FUNCS_GLSL + "void main() {", "facade main")):
        if src.count(old) != 1:
            raise RuntimeError(f"photo facade detail: the {what} source to replace was not found once")
        src = src.replace(old, new)
    return src


def source_text() -> str:
    """This module's GLSL and swaps (hashed into the photo facades' identity)."""
    return DETAIL_VERSION + FUNCS_GLSL + GRIME_NEW + SILL_NEW + DECL_NEW + APPLY_NEW


def source_identity() -> str:
    """sha256 (12 hex) of :func:`source_text`."""
    return hashlib.sha256(source_text().encode()).hexdigest()[:12]


__all__ = ["DETAIL_VERSION", "FUNCS_GLSL", "SILL_PROJ_M", "grime", "patch_source", "sill_contact", "sill_face",
           "sill_sun", "source_identity", "source_text"]
