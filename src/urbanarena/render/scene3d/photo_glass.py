"""The ``photo`` style's glass curtain walls (issue 24, tells "untextured glass wall", "box buildings with one
repeated window texture"): a tall glass facade drawn as a grid of real panes instead of one tinted plane.

Photo style only: entered through :func:`.photo_facades.patch_source` (the facade program), so ``flat`` and
``realistic`` never reach it. Everything per fragment from the facade coordinates (``u_m`` along the wall, ``z_m``
up, wall length ``L_m``, storey height ``fh_m``) and integer hashes of the wall hash ``wh`` (same scene, same
pixels). ``gh = rhash(wh, 101, 3)`` holds the building's choices.

* **Grid** (:func:`glass_cell`, GLSL ``glass_cell``): mullions every ``L / round(L / pw0)`` metres (``pw0`` =
  1.2-1.8 m, so the wall holds whole panes), transoms at each floor slab and at the top of an opaque **spandrel**
  band (0.6-1.1 m over the slab, back-painted glass); the aluminium profiles are ``mw`` = 5-9 cm wide. Parts:
  0 profile, 1 spandrel, 2 vision glass.
* **Panes**: each pane's normal tilted by up to :data:`PANE_TILT_RAD` (hash of column and storey) plus a pillow
  bow (:data:`PILLOW_RAD` at the pane's edges), so the mirrored HDRI sky and street break up pane by pane; the
  coating's tint per building (blue-green, green, bronze or neutral), ±6 % per pane, dirt (its amount per pane)
  towards each pane's foot; Schlick Fresnel from a per-building F0 of :data:`F0_RANGE` (coated glass).
* **Offices behind** (:func:`office_surface`, GLSL ``glass_office``): interior mapping from the pane point: a
  suspended ceiling :data:`CEILING_DROP_M` below the next slab with light panels, the floor, a partition screen
  1.2 m high at 2-4 m and a back wall at 5-11 m, chosen per bay (4-7 panes of a storey: one tenant); roller blinds
  per pane in some bays.
* **Night** (:func:`bay_light`, GLSL ``glass_bay_light``): a bay is lit with probability ``1.2 window_lit x
  storey share (0.4-1.6)``; cool white (60 %) or neutral light at 0.5-1.1, each pane 0.7-1.3 of it; unlit bays
  keep a dim 3 % glow. By day
  about half the bays have their ceiling lights on.
"""

from __future__ import annotations

import math

import numpy as np

from urbanarena.render.scene3d.building_look import _hf, rhash

GLASS_VERSION = "photo-glass-1"
#: per-pane tilt (radians, at most, per axis) and pillow bow at the pane edges (radians)
PANE_TILT_RAD, PILLOW_RAD = 0.022, 0.03
#: Schlick F0 of the coated glass (per building, from .. to)
F0_RANGE = (0.15, 0.35)
CEILING_DROP_M = 0.4
COATINGS = ((0.72, 0.88, 0.95), (0.78, 0.92, 0.82), (0.95, 0.84, 0.7), (0.86, 0.88, 0.9))
M32 = 0xFFFFFFFF


def glass_params(wh: int) -> tuple[float, float, float]:
    """``(pane width target pw0_m, spandrel height_m, profile width mw_m)`` of the wall hash ``wh``."""
    gh = rhash(wh & M32, 101, 3)
    return 1.2 + 0.6 * _hf(gh, 0), 0.6 + 0.5 * _hf(gh, 8), 0.05 + 0.04 * _hf(gh, 16)


def glass_cell(u_m: float, z_m: float, L_m: float, fh_m: float, wh: int) -> tuple[int, int, int, float, float]:
    """Where a wall point lies in the curtain-wall grid: ``(part, column, storey, x_m, y_m)``; part 0 a profile
    (mullion or transom), 1 the spandrel, 2 vision glass; ``x_m``/``y_m`` from the pane column's left edge and the
    storey's floor (module docstring)."""
    pw0, spand, mw = glass_params(wh)
    ncol = max(math.floor(L_m / pw0 + 0.5), 1.0)
    pw = L_m / ncol
    c = math.floor(u_m / pw)
    x = u_m - c * pw
    k = math.floor(z_m / fh_m)
    y = z_m - k * fh_m
    e = min(x, pw - x)
    ey = min(y, abs(y - spand), fh_m - y)
    part = 0 if (e < 0.5 * mw or ey < 0.5 * mw) else (1 if y < spand else 2)
    return part, int(c), int(k), x, y


def bay_of(column: int, wh: int) -> int:
    """The bay (one tenant's run of 4-7 panes) of pane column ``column``."""
    gh = rhash(wh & M32, 101, 3)
    return math.floor(column / (4.0 + math.floor(3.99 * _hf(gh, 24))))


def bay_light(column: int, storey: int, wh: int, lit: float) -> tuple[float, float, float]:
    """Night light of the bay of ``column`` on ``storey`` (``lit`` the condition's window share): RGB factor of the
    window glow; a dim ``(0.03, 0.03, 0.03)`` when dark."""
    hb = rhash(bay_of(column, wh) & M32, storey & M32, (wh ^ 0x5BD1) & M32)
    share = 1.2 * lit * (0.4 + 1.2 * _hf(rhash(storey & M32, wh & M32, 59), 0))
    if not _hf(hb, 0) < share:
        return 0.03, 0.03, 0.03
    tint = (0.85, 0.95, 1.1) if _hf(hb, 8) < 0.6 else (1.0, 0.96, 0.88)
    b = 0.5 + 0.6 * _hf(hb, 16)
    return tuple(c * b for c in tint)


def office_surface(g, r, fh_m: float, partition_m: float, back_m: float) -> tuple[int, np.ndarray, float]:
    """What a ray from the pane point ``g`` (``(x_m, y_m)`` as :func:`glass_cell`) with in-plane step ``r`` per
    metre of depth meets first: ``(surface, point (2,), depth_m)`` with surface 0 the back wall at ``back_m``,
    1 the floor (``y = 0``), 2 the ceiling (``y = fh_m - CEILING_DROP_M``), 3 the partition screen (1.2 m high at
    ``partition_m``)."""
    g, r = np.asarray(g, np.float64), np.asarray(r, np.float64)
    yc = fh_m - CEILING_DROP_M
    d = back_m
    s = 0
    if r[1] < -1e-6:
        df = -g[1] / r[1]
        if df < d:
            d, s = df, 1
    elif r[1] > 1e-6:
        dc = (yc - g[1]) / r[1]
        if dc < d:
            d, s = dc, 2
    if partition_m < d and g[1] + r[1] * partition_m < 1.2:
        d, s = partition_m, 3
    return s, g + r * d, float(d)


def _v3(c) -> str:
    return "vec3(" + ", ".join(f"{x:.4f}" for x in c) + ")"


#: functions inserted before the facade's ``main`` (twins above); need ``rhash``, ``hf``, ``vnoise``
FUNCS_GLSL = f"""
// curtain wall: (column, storey, x, y) of a wall point, part 0 profile, 1 spandrel, 2 vision glass
vec4 glass_cell(float u, float z, float L, float fh, uint wh, out int part) {{
    uint gh = rhash(uvec3(wh, 101u, 3u));
    float pw0 = 1.2 + 0.6 * hf(gh, 0u), spand = 0.6 + 0.5 * hf(gh, 8u), mw = 0.05 + 0.04 * hf(gh, 16u);
    float ncol = max(floor(L / pw0 + 0.5), 1.0);
    float pw = L / ncol;
    float c = floor(u / pw), x = u - c * pw;
    float k = floor(z / fh), y = z - k * fh;
    float e = min(x, pw - x), ey = min(min(y, abs(y - spand)), fh - y);
    part = (e < 0.5 * mw || ey < 0.5 * mw) ? 0 : (y < spand ? 1 : 2);
    return vec4(c, k, x, y);
}}
float glass_bay(float c, uint wh) {{
    uint gh = rhash(uvec3(wh, 101u, 3u));
    return floor(c / (4.0 + floor(3.99 * hf(gh, 24u))));
}}
vec3 glass_bay_light(float c, uint k, uint wh, float lit) {{
    uint hb = rhash(uvec3(uint(glass_bay(c, wh)), k, wh ^ 23505u));
    float share = 1.2 * lit * (0.4 + 1.2 * hf(rhash(uvec3(k, wh, 59u)), 0u));
    if (!(hf(hb, 0u) < share)) return vec3(0.03);
    vec3 tint = hf(hb, 8u) < 0.6 ? vec3(0.85, 0.95, 1.1) : vec3(1.0, 0.96, 0.88);
    return tint * (0.5 + 0.6 * hf(hb, 16u));
}}
// the office behind a pane: surface 0 back wall, 1 floor, 2 ceiling, 3 partition screen; p the point, d its depth
int glass_office_surface(vec2 g, vec2 r, float fh, float part_m, float back_m, out vec2 p, out float d) {{
    float yc = fh - {CEILING_DROP_M:.2f};
    d = back_m;
    int s = 0;
    if (r.y < -1e-6) {{ float df = -g.y / r.y; if (df < d) {{ d = df; s = 1; }} }}
    else if (r.y > 1e-6) {{ float dc = (yc - g.y) / r.y; if (dc < d) {{ d = dc; s = 2; }} }}
    if (part_m < d && g.y + r.y * part_m < 1.2) {{ d = part_m; s = 3; }}
    p = g + r * d;
    return s;
}}
// its colour (rgb) and the ceiling lights' emission (a); hb the bay's hash, lamps 1 when its lights are on
vec4 glass_office(vec2 g, vec2 r, float fh, uint hb, float lamps) {{
    vec2 p;
    float d;
    int s = glass_office_surface(g, r, fh, 2.0 + 2.0 * hf(hb, 20u), 5.0 + 6.0 * hf(hb, 24u), p, d);
    vec3 wallc = mix(vec3(0.8, 0.8, 0.78), vec3(0.62, 0.66, 0.7), hf(hb, 4u));
    vec3 c = wallc;
    float e = 0.0;
    if (s == 2) {{      // ceiling tiles, light panels 1.2 x 0.6 m in a 1.8 x 2.4 m grid
        vec2 q = vec2(fract(p.x / 1.8 + 0.3 * hf(hb, 12u)), fract(d / 2.4));
        float lamp = step(0.2, q.x) * step(q.x, 0.55) * step(0.35, q.y) * step(q.y, 0.6);
        c = vec3(0.78) * (0.94 + 0.06 * step(0.04, min(fract(p.x / 0.6), fract(d / 0.6))));
        e = lamp * lamps;
    }} else if (s == 1) {{
        c = mix(vec3(0.25, 0.26, 0.28), vec3(0.45, 0.38, 0.3), hf(hb, 28u));
    }} else if (s == 3) {{
        c = mix(vec3(0.3, 0.32, 0.36), vec3(0.55, 0.5, 0.42), hf(hb, 2u)) * (0.8 + 0.2 * step(0.1, fract(p.x / 1.6)));
    }} else {{
        float desk = step(p.y, 0.75) * step(0.68, p.y);
        float shelf = step(p.y, 1.9) * step(0.2, fract(p.x / 3.0 + hf(hb, 6u))) * step(fract(p.x / 3.0 + hf(hb, 6u)), 0.6);
        c = mix(c, vec3(0.3, 0.28, 0.26), max(desk, 0.7 * shelf * step(0.5, hf(hb, 10u))));
    }}
    // the far room is darker than the pane's edge of the floor, the ceiling lit near its panels
    c *= 1.0 - 0.45 * smoothstep(1.0, 9.0, d);
    return vec4(c, e);
}}
"""

#: the curtain wall's colour, pane normal and Fresnel (in the glass chain of :mod:`.photo_facades`)
CELL_GLSL = f"""    if (kind == 5) {{              // photo glass: profiles, spandrels, panes with offices behind
        int gpart;
        vec4 gc = glass_cell(u, z, L, floor_h, wh, gpart);
        uint gh = rhash(uvec3(wh, 101u, 3u));
        uint gt = rhash(uvec3(wh, 103u, 5u));
        vec3 coat = {_v3(COATINGS[0])};
        float cp = hf(gt, 0u);
        if (cp > 0.4) coat = cp < 0.6 ? {_v3(COATINGS[1])} : (cp < 0.8 ? {_v3(COATINGS[2])} : {_v3(COATINGS[3])});
        vec3 prof = hf(gt, 8u) < 0.5 ? vec3(0.55, 0.57, 0.58) : (hf(gt, 8u) < 0.8 ? vec3(0.16, 0.16, 0.17) : vec3(0.3, 0.26, 0.22));
        gpane = float(gpart);
        fi = uint(gc.y + 1.0);
        idx = gc.x;
        if (gpart == 0) {{
            col = prof * (0.9 + 0.2 * hf(rhash(uvec3(uint(gc.x), uint(gc.y), wh)), 0u));
        }} else {{
            uint hp = rhash(uvec3(uint(gc.x), uint(gc.y) * 2u + uint(gpart), wh ^ 911u));
            vec3 tw = vec3(-n.y, n.x, 0.0);
            float spand = 0.6 + 0.5 * hf(gh, 8u);
            float pw = L / max(floor(L / (1.2 + 0.6 * hf(gh, 0u)) + 0.5), 1.0);
            float y0 = gpart == 1 ? 0.0 : spand, y1 = gpart == 1 ? spand : floor_h;
            vec2 pc = vec2(gc.z / pw - 0.5, (gc.w - y0) / (y1 - y0) - 0.5);     // -0.5..0.5 across the pane
            pn = normalize(n + ({PANE_TILT_RAD:.4f} * (2.0 * hf(hp, 0u) - 1.0) + {2.0 * PILLOW_RAD:.4f} * pc.x) * tw
                             + ({PANE_TILT_RAD:.4f} * (2.0 * hf(hp, 8u) - 1.0) + {2.0 * PILLOW_RAD:.4f} * pc.y) * vec3(0.0, 0.0, 1.0));
            float f0 = {F0_RANGE[0]:.3f} + {F0_RANGE[1] - F0_RANGE[0]:.3f} * hf(gt, 16u);
            fr = clamp(fresnel(view, pn, f0), 0.0, 1.0);
            gtint = coat * (0.94 + 0.12 * hf(hp, 16u));
            float dirt = (1.0 - smoothstep(0.0, 0.5, gc.w - y0)) * (0.3 + 0.7 * hf(hp, 4u)) * (0.8 + 0.2 * sin(9.0 * gc.z));
            gtint *= 1.0 - 0.25 * dirt;
            fr *= 1.0 - 0.3 * dirt;
            if (gpart == 1) {{
                col = mix(vec3(0.09, 0.1, 0.11), coat * 0.25, hf(gt, 24u)) * (1.0 + 0.2 * dirt);
            }} else {{
                uint hb = rhash(uvec3(uint(glass_bay(gc.x, wh)), uint(gc.y), wh ^ 23505u));
                glit = glass_bay_light(gc.x, uint(gc.y), wh, window_lit);
                glit *= 0.7 + 0.6 * hf(hp, 28u);          // rooms of a bay lit a little differently
                float lamps = window_lit > 0.001 ? step(0.1, glit.r) : step(0.5, hf(hb, 30u));   // by day half the bays
                vec2 rr5 = vec2(dot(view, tw), view.z) / max(-dot(view, n), 0.05);
                vec4 off = glass_office(gc.zw, rr5, floor_h, hb, lamps);
                float blind = step(0.6, hf(hb, 14u)) * step(1.0 - (gc.w - spand) / (floor_h - spand), hf(hp, 24u) * 0.9);
                col = mix(off.rgb, mix(vec3(0.78, 0.78, 0.76), vec3(0.3, 0.3, 0.32), step(0.7, hf(hb, 18u))), blind);
                glamp = off.a * (1.0 - blind);
                col *= coat;
            }}
        }}
    }} else """

#: declarations (after the photo facades' own)
DECL_GLSL = "    float gpane = -1.0, glamp = 0.0;\n    vec3 gtint = vec3(1.0), glit = vec3(0.0);\n"

#: lighting of the curtain wall (replaces the realistic "mirrored sky" line)
LIGHT_OLD = "    if (kind == 5) c = max(c, albedo * 0.9);    // mirrored sky is not lit by the sun again\n"
LIGHT_GLSL = """    if (kind == 5 && gpane > 1.5) {         // the office: daylight through the glass and its own lights
        c = col * (0.3 * ambient + 0.07) + gtint * glamp * vec3(0.9, 0.92, 0.95) * (0.5 + window_glow);
        c = max(c, window_glow * glit * (0.35 + 1.1 * col) + window_glow * glit * glamp * 1.4);
    }
"""
MIRROR_GLSL = "    if (gpane > 0.5) c = mix(c, refl * gtint, fr);      // the mirror: computed with the windows'\n"


def source_text() -> str:
    """All GLSL this module inserts (part of the photo facades' identity)."""
    return GLASS_VERSION + FUNCS_GLSL + CELL_GLSL + DECL_GLSL + LIGHT_GLSL + MIRROR_GLSL


__all__ = ["COATINGS", "F0_RANGE", "FUNCS_GLSL", "GLASS_VERSION", "PANE_TILT_RAD", "PILLOW_RAD", "bay_light",
           "bay_of", "glass_cell", "glass_params", "office_surface", "source_text"]
