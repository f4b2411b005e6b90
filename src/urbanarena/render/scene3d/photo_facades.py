"""The ``photo`` style's facades (issue 24, tells "box buildings with flat light", "repeating window and facade
textures", "at night an even grid of lit windows"): windows as holes in a thick wall, glass that mirrors the
photographed sky, rooms behind it, weathering and a shade line under the eaves.

Photo style only, with its atmosphere (:mod:`.photo_atmosphere` ``ENABLED``): the realistic facade program's
source is patched (:func:`patch_source`), so ``flat`` and ``realistic`` never reach this module and their pixels
stay as they were. Everything per fragment, from the
facade coordinates (``u_m`` along the wall, ``z_m`` up) and integer hashes of the wall seed (same scene, same
pixels); local frame of a wall: ``t = (-n_y, n_x, 0)`` along ``u``, ``z`` up, ``n`` out of the wall.

* **Recess** (:func:`recess_hit`, GLSL ``facade_recess``): a window (its frame included: ``[-fw, w + fw] x
  [-fw, h + fw]`` in window coordinates, metres from its lower left glass corner) is a hole :data:`RECESS_M`
  (per wall, 0.12-0.22 m) deep. A view ray entering the hole at ``p`` with in-plane step ``r = (view . t, view_z) /
  (-view . n)`` per metre of depth reaches the frame-and-glass plane at ``p + D r`` when that lies in the hole,
  else the reveal first: a jamb (normal ``+-t``), the head (normal ``-z``) or the sill (normal ``+z``), at depth
  ``min over axes of (edge - p) / r``. The frame and glass are drawn where the ray meets their plane (so they
  slide behind the wall edge with the view angle) and the reveals take the wall material, darkened with depth.
* **Shadow in the recess** (:func:`recess_sun`, GLSL ``facade_recess_sun``): a point at depth ``d`` in the hole
  is sunlit when the ray towards the sun leaves through the hole: ``q + d s / s_n`` inside it (``s = (sun . t,
  sun_z)``, ``s_n = sun . n``; soft over 2 cm); no sun reaches the recess when ``s_n <= 0``. So the lintel and a
  jamb cast a shade band on the glass on the side away from the sun.
* **Glass** (:func:`reflect_uv`): each pane tilted by up to :data:`PANE_TILT` (hash of the window and sash) so
  neighbouring windows mirror different parts of the sky; the mirror ray samples the photo sky's HDRI map (the
  map's uv of :func:`.photo_sky.sky_fs`, blurred at mip level :data:`REFLECT_LOD`) above the horizon, and the street
  and the buildings opposite below a skyline: the mirror ray's azimuth cut into buildings (six a radian, edges
  wavy), each with a flat roof line at ``z`` 0.08-0.45 of the ray and a tone of :data:`STREET_SHARE` to 0.35 more of
  the low sky, darker window rows and columns; Schlick Fresnel from :data:`GLASS_F0` (double glazing)
  mixes the mirror over the room. Without the map (photo sky unavailable) the horizon-zenith gradient.
* **Rooms** (:func:`room_surface`, GLSL ``facade_room``): behind the glass a :data:`ROOM_DEPTH_M` deep room
  (interior mapping): the ray meets the floor 0.9 m below the sill, the ceiling 0.45 m above the head or the back
  wall, whose colour, furniture band and a picture are chosen per window. In front of it per window: blinds at a
  hashed height, side curtains (with folds) in one of :data:`CURTAIN_RGB`, net curtains over the lower part, or
  nothing.
* **Night** (:func:`night_light`, GLSL ``facade_night``): a window is lit when its flat (two or three
  neighbouring windows of a storey) is, with probability ``window_lit x wall share (0.3-1.7) x storey share
  (0.5-1.5)``, and then 85 % of the flat's windows; the flat's light warm, neutral or cool (:data:`NIGHT_TINTS`)
  at a brightness of 0.35-1.25; curtains and blinds glow in their own colour.
* **Weathering**: a low-frequency tone drift across each wall (wavelength about 10 m; brighter patches warmer), dark streaks
  running down from the sills (:data:`SILL_STREAK_M` long, strength per window), a darker plinth on plaster and
  panel walls, and under the cornice an overhang shadow (0.3 m overhang: ``0.3 sun_z / s_n`` metres tall) and
  contact shade.

Glass curtain walls (panes, spandrels, offices behind) are :mod:`.photo_glass`'s; the shops' own palettes, pot
plants, open sashes and the lit rooms' light at night :mod:`.photo_windows`'; projecting sills (their shadow and
faces) and grime (splash zone, soot under the roof edge) :mod:`.photo_facade_detail`'s (all entered from
:func:`patch_source`).

Cost: a few dozen arithmetic operations on wall fragments and one texture lookup on glass (measured in
docs/renderer.md).
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

from urbanarena.render.scene3d import photo_facade_detail as PFD
from urbanarena.render.scene3d import photo_glass as PGL
from urbanarena.render.scene3d import photo_windows as PW

#: bumped whenever this module changes the pixels of the photo facades (photo render identity)
FACADES_VERSION = "photo-facades-4"
#: window recess depth range (m, per wall)
RECESS_M = (0.12, 0.22)
#: pane tilt (radians, at most, per axis) and Schlick F0 of the glass
PANE_TILT, GLASS_F0 = 0.035, 0.1
#: mip level of the HDRI map the windows mirror (slightly wavy float glass), share of the low sky that the street
#: and the buildings opposite mirror below the horizon
REFLECT_LOD, STREET_SHARE = 2.0, 0.4
ROOM_DEPTH_M = 3.5
SILL_STREAK_M = 1.6
CURTAIN_RGB = ((0.78, 0.74, 0.64), (0.55, 0.24, 0.2), (0.42, 0.45, 0.52), (0.62, 0.6, 0.45), (0.85, 0.85, 0.83))
NIGHT_TINTS = ((1.05, 0.88, 0.7), (1.0, 0.97, 0.92), (0.78, 0.88, 1.12))
#: texture unit of the sky map (the photo sky's own, :data:`.photo_sky.SKY_UNIT`)
SKY_UNIT = 1

M32 = 0xFFFFFFFF


# ------------------------------------------------------------------------------------------ the Python twin
def recess_hit(p, r, lo, hi, depth_m: float) -> tuple[np.ndarray, float, int]:
    """Where a ray entering a window hole meets it: ``(point (2,), depth_m, face)``; ``p`` the entry point in
    window coordinates (m), ``r`` the in-plane step per metre of depth, ``lo``/``hi`` the hole's corners, face 0 the
    frame-and-glass plane at ``depth_m``, 1 a jamb, 2 the head, 3 the sill (module docstring)."""
    p, r, lo, hi = (np.asarray(v, np.float64) for v in (p, r, lo, hi))
    q = p + r * depth_m
    if np.all(q >= lo) and np.all(q <= hi):
        return q, float(depth_m), 0
    lim = np.where(r > 0, hi, lo)
    t = np.where(np.abs(r) > 1e-6, (lim - p) / np.where(np.abs(r) > 1e-6, r, 1.0), 1e9)
    d = float(min(max(min(t[0], t[1]), 0.0), depth_m))
    face = 1 if t[0] < t[1] else (2 if r[1] > 0 else 3)
    return p + r * d, d, face


def _smoothstep(a, b, x):
    t = np.clip((x - a) / (b - a), 0.0, 1.0)
    return t * t * (3 - 2 * t)


def recess_sun(q, d_m: float, s, s_n: float, lo, hi) -> float:
    """Share of the sun reaching a point ``q`` (window coordinates, m) at depth ``d_m`` in the hole ``lo``-``hi``
    (``s`` the sun's in-plane components, ``s_n`` its component along the wall normal): the point traced back to
    the wall plane towards the sun, smoothstep over -1..+1 cm of its distance inside the hole; 0 when
    ``s_n <= 0``."""
    if s_n <= 0:
        return 0.0
    b = np.asarray(q, np.float64) + np.asarray(s, np.float64) * (d_m / s_n)
    e = np.minimum(b - np.asarray(lo, np.float64), np.asarray(hi, np.float64) - b)
    return float(_smoothstep(-0.01, 0.01, min(e[0], e[1])))


def reflect_uv(d, rot_rad: float) -> tuple[float, float]:
    """The HDRI map's ``(u, v)`` of a unit direction ``d`` (upper hemisphere; :func:`.photo_sky.sky_fs`'s)."""
    d = np.asarray(d, np.float64)
    u = ((math.atan2(d[0], d[1]) + rot_rad) / (2 * math.pi)) % 1.0
    return u, 1.0 - math.asin(min(max(d[2], 0.0), 1.0)) / (math.pi / 2)


def room_surface(g, r, win_h_m: float) -> tuple[int, np.ndarray]:
    """Which room surface a ray from the glass point ``g`` (window coordinates, m) with in-plane step ``r`` per
    metre of depth meets: ``(0 back wall, 1 floor, 2 ceiling; point (2,) on it)``: the back wall at
    :data:`ROOM_DEPTH_M`, unless the floor (0.9 m below the sill) or the ceiling (0.45 m above the head) comes
    first."""
    g, r = np.asarray(g, np.float64), np.asarray(r, np.float64)
    p = g + r * ROOM_DEPTH_M
    if p[1] < -0.9:
        return 1, g + r * ((-0.9 - g[1]) / r[1])
    if p[1] > win_h_m + 0.45:
        return 2, g + r * ((win_h_m + 0.45 - g[1]) / r[1])
    return 0, p


def _rhash(x: int, y: int, z: int) -> int:
    from urbanarena.render.scene3d.building_look import rhash

    return rhash(x & M32, y & M32, z & M32)


def _hf(h: int, shift: int) -> float:
    return float(np.float32((h >> shift) & 255) / np.float32(255.0))


def night_light(idx: int, storey: int, seed: int, lit: float) -> tuple[float, float, float]:
    """The light of window ``idx`` of storey ``storey`` on the wall of ``seed`` at night (``lit`` the condition's
    share of lit windows): RGB factor times the condition's window glow, ``(0, 0, 0)`` when dark (module
    docstring)."""
    hb = _rhash(seed, 31, 7)
    share = lit * (0.3 + 1.4 * _hf(hb, 0)) * (0.5 + _hf(_rhash(storey, seed, 37), 0))
    flat = math.floor(idx / (2.0 + math.floor(2.0 * _hf(hb, 8))))
    hflat = _rhash(flat, storey, seed ^ 40503)
    if not (_hf(hflat, 0) < share and _hf(_rhash(idx, storey, seed ^ 77), 0) < 0.85):
        return 0.0, 0.0, 0.0
    t = _hf(hflat, 8)
    tint = NIGHT_TINTS[0] if t < 0.6 else (NIGHT_TINTS[1] if t < 0.85 else NIGHT_TINTS[2])
    b = 0.35 + 0.9 * _hf(hflat, 16)
    return tuple(c * b for c in tint)


# ------------------------------------------------------------------------------------------------ the GLSL
def _v3(c) -> str:
    return "vec3(" + ", ".join(f"{x:.4f}" for x in c) + ")"


#: functions inserted before the facade's ``main`` (twins above); need ``rhash`` and ``hf``
FUNCS_GLSL = f"""
// window hole [lo, hi] (window coordinates, m) depth_m deep; ray entering at p, in-plane step r per metre of depth:
// (hit point, depth, face) with face 0 the frame-and-glass plane, 1 a jamb, 2 the head, 3 the sill
vec4 facade_recess(vec2 p, vec2 r, vec2 lo, vec2 hi, float depth_m) {{
    vec2 q = p + r * depth_m;
    if (q.x >= lo.x && q.y >= lo.y && q.x <= hi.x && q.y <= hi.y) return vec4(q, depth_m, 0.0);
    vec2 lim = vec2(r.x > 0.0 ? hi.x : lo.x, r.y > 0.0 ? hi.y : lo.y);
    float tx = abs(r.x) > 1e-6 ? (lim.x - p.x) / r.x : 1e9;
    float ty = abs(r.y) > 1e-6 ? (lim.y - p.y) / r.y : 1e9;
    float d = clamp(min(tx, ty), 0.0, depth_m);
    return vec4(p + r * d, d, tx < ty ? 1.0 : (r.y > 0.0 ? 2.0 : 3.0));
}}
// share of the sun reaching q at depth d_m in the hole: traced back to the wall plane towards the sun
float facade_recess_sun(vec2 q, float d_m, vec2 s, float s_n, vec2 lo, vec2 hi) {{
    if (s_n <= 0.0) return 0.0;
    vec2 b = q + s * (d_m / s_n);
    vec2 e = min(b - lo, hi - b);
    return smoothstep(-0.01, 0.01, min(e.x, e.y));
}}
// the room behind a window: the ray from glass point g (step r per metre of depth) meets the back wall
// {ROOM_DEPTH_M} m deep, the floor 0.9 m below the sill or the ceiling 0.45 m above the head; h the window's hash
// which surface: 0 back wall, 1 floor, 2 ceiling; p the point on it (window coordinates; x, y on the back wall)
int facade_room_surface(vec2 g, vec2 r, float win_h, out vec2 p) {{
    p = g + r * {ROOM_DEPTH_M:.2f};
    if (p.y < -0.9) {{ p = g + r * ((-0.9 - g.y) / r.y); return 1; }}
    if (p.y > win_h + 0.45) {{ p = g + r * ((win_h + 0.45 - g.y) / r.y); return 2; }}
    return 0;
}}
vec3 facade_room(vec2 g, vec2 r, float win_h, uint h) {{
    vec2 p;
    int s = facade_room_surface(g, r, win_h, p);
    vec3 wallc = mix(vec3(0.82, 0.8, 0.74), hf(h, 12u) < 0.5 ? vec3(0.7, 0.74, 0.68) : vec3(0.8, 0.68, 0.55), hf(h, 20u));
    if (s == 1) return mix(vec3(0.3, 0.22, 0.15), vec3(0.45, 0.42, 0.38), hf(h, 28u)) * (0.5 + 0.5 * smoothstep(0.0, 2.5, abs(r.y) * 4.0));
    if (s == 2) return wallc * 0.8;
    float furn = step(p.y, -0.2 + 0.7 * hf(h, 4u)) * step(abs(p.x - 0.5 * win_h - hf(h, 6u)), 0.4 + 0.8 * hf(h, 10u));
    vec3 c = mix(wallc, mix(vec3(0.16, 0.13, 0.11), vec3(0.35, 0.3, 0.36), hf(h, 14u)), furn);
    float pic = step(abs(p.x - 0.3 - 1.2 * hf(h, 18u)), 0.25) * step(abs(p.y - win_h * 0.6), 0.2) * step(0.45, hf(h, 22u));
    c = mix(c, vec3(0.3, 0.35, 0.42) + 0.3 * hf(h, 26u), pic);
    return c * 0.55;
}}
// night: the light of window idx of storey fi (RGB factor of window_glow; 0 dark): lit by flats of 2-3 windows
vec3 facade_night(float idx, uint fi, uint seed, float lit) {{
    uint hb = rhash(uvec3(seed, 31u, 7u));
    float share = lit * (0.3 + 1.4 * hf(hb, 0u)) * (0.5 + hf(rhash(uvec3(fi, seed, 37u)), 0u));
    float flat_ = floor(idx / (2.0 + floor(2.0 * hf(hb, 8u))));
    uint hflat = rhash(uvec3(uint(flat_), fi, seed ^ 40503u));
    if (!(hf(hflat, 0u) < share && hf(rhash(uvec3(uint(idx), fi, seed ^ 77u)), 0u) < 0.85)) return vec3(0.0);
    float t = hf(hflat, 8u);
    vec3 tint = t < 0.6 ? {_v3(NIGHT_TINTS[0])} : (t < 0.85 ? {_v3(NIGHT_TINTS[1])} : {_v3(NIGHT_TINTS[2])});
    return tint * (0.35 + 0.9 * hf(hflat, 16u));
}}
"""

SKY_MAP_GLSL = """
uniform sampler2D sky_tex;
uniform float hdri_rot;
uniform float hdri_gain;
"""


def mirror_glsl(sky_map: bool) -> str:
    """GLSL ``vec3 facade_mirror(vec3 rd)``: what a pane mirrors along the unit direction ``rd``, in the facade's
    values before tone mapping (``tonemap`` squares them and scales by ``exposure``, the photo sky maps the map's
    ``x hdri_gain`` directly, so the sky is ``sqrt(x hdri_gain / exposure)``); ``sky_map``: from the HDRI map, else
    the horizon-zenith gradient. Needs ``vnoise`` and, with the map, :data:`SKY_MAP_GLSL`."""
    if sky_map:
        sample = f"""    vec2 suv = vec2(fract((atan(rd.x, rd.y) + hdri_rot) / 6.28318531), 1.0 - asin(clamp(rd.z, 0.0, 1.0)) / 1.57079633);
    vec3 skyc = sqrt(max(textureLod(sky_tex, suv, {REFLECT_LOD:.1f}).rgb, vec3(0.0)) * hdri_gain / exposure);
    vec3 lowc = sqrt(max(textureLod(sky_tex, vec2(suv.x, 0.97), {REFLECT_LOD + 3:.1f}).rgb, vec3(0.0)) * hdri_gain / exposure);
"""
    else:
        sample = """    vec3 skyc = mix(horizon, zenith, clamp(rd.z, 0.0, 1.0)) * 0.8;
    vec3 lowc = horizon * 0.8;
"""
    return ("vec3 facade_mirror(vec3 rd) {\n" + sample
            + "    float az = atan(rd.x, rd.y);\n"
            + "    float bi = floor(az * 6.0 + 0.7 * vnoise(vec2(az * 2.0, 0.0), 63u));   // a building across the street\n"
            + "    float sk = 0.08 + 0.37 * h21(vec2(bi, 1.0), 62u);              // its flat roof line\n"
            + f"    float opp = {STREET_SHARE:.3f} + 0.35 * h21(vec2(bi, 2.0), 61u);   // its facade's tone\n"
            + "    opp *= 1.0 - 0.3 * step(0.45, fract(rd.z * 22.0)) * step(0.35, fract(az * 45.0)) * step(0.03, sk - rd.z);  // windows\n"
            + "    return mix(lowc * opp, skyc, smoothstep(sk - 0.01, sk + 0.01, rd.z));\n}\n")


# the wall: weathering after the realistic rising damp (u, z, L, H, albedo, wh and v_* in scope)
WEATHER_OLD = "    albedo *= 0.72 + 0.28 * smoothstep(0.0, 1.2, z);        // rising damp and contact occlusion\n"
WEATHER_NEW = WEATHER_OLD + f"""    // photo facades: colour drift across the wall, streaks under the sills, plinth, shade under the cornice
    float drift = vnoise(vec2(u, z) * 0.1, wh + 5u) - 0.5;     // brighter patches a little warmer
    if (v_glass < 0.5) albedo *= (1.0 + 0.16 * drift) * vec3(1.0 + 0.06 * drift, 1.0, 1.0 - 0.06 * drift);
    float pf_g = (H > ground_h + 1.0) ? ground_h : 0.0;
    float pf_k = floor((z - pf_g) / v_fh), pf_lv = z - pf_g - pf_k * v_fh;
    float pf_bot = (pf_g > 0.0 || pf_k > 0.0) ? 0.85 : 1.0;
    float pf_n = floor((L - 0.6) / v_win.y), pf_loc = u - 0.5 * (L - pf_n * v_win.y);
    float pf_ci = floor(pf_loc / v_win.y), pf_x = pf_loc - pf_ci * v_win.y - 0.5 * (v_win.y - v_win.x);
    float pf_below = pf_lv < pf_bot - 0.12 ? pf_bot - 0.12 - pf_lv : v_fh + 0.85 - 0.12 - pf_lv;
    float pf_streak = (pf_ci >= 0.0 && pf_ci < pf_n && pf_x > -0.06 && pf_x < v_win.x + 0.06 && z > pf_g + 0.5
        && !(v_shop > 0.5 && z < ground_h) && z < H - 1.2) ? 1.0 - smoothstep(0.0, {SILL_STREAK_M:.2f}, pf_below) : 0.0;
    float pf_amt = hf(rhash(uvec3(uint(pf_ci + 1.0), uint(pf_k + 2.0), wh)), 0u);
    pf_streak *= pf_amt * pf_amt * (0.4 + 0.6 * vnoise(vec2(pf_x * 7.0, pf_below * 0.6), wh + 9u));
    if (v_glass < 0.5) albedo *= 1.0 - 0.3 * pf_streak;
    float plinth_m = 0.35 + 0.3 * hf(wh, 24u);
    if (v_glass < 0.5 && v_cell.x > 0.5 && z < plinth_m && !(v_shop > 0.5 && H > ground_h + 1.0))
        albedo = mix(albedo, vec3(0.4, 0.39, 0.37) * (0.9 + 0.2 * hf(wh, 16u)), 0.65);
    albedo *= 0.8 + 0.2 * smoothstep(0.0, 0.5, H - 0.6 - z);    // contact shade under the cornice
"""

#: the window classification of upper storeys, followed by the recess
RECESS_OLD = """            kind = window_at(u, L, lv, bottom, bottom + win_h, win_s, win_w, fw, idx, wp);
            fi = uint(k + 1.0);
"""
RECESS_NEW = RECESS_OLD + f"""            if (kind == 1 || kind == 2) {{       // photo facades: the window is a hole in a thick wall
                vec3 tw = vec3(-n.y, n.x, 0.0);
                vec2 rr = vec2(dot(view, tw), view.z) / max(-dot(view, n), 0.05);
                float depth_m = {RECESS_M[0]:.3f} + {RECESS_M[1] - RECESS_M[0]:.3f} * hf(wh, 28u);
                vec2 lo = vec2(-fw), hi = vec2(win_w + fw, win_h + fw);
                vec4 hit = facade_recess(wp, rr, lo, hi, depth_m);
                float sn = dot(sun_dir, n);
                rvis = facade_recess_sun(hit.xy, hit.z, vec2(dot(sun_dir, tw), sun_dir.z), sn, lo, hi);
                if (hit.w < 0.5) {{
                    kind = window_at(u + hit.x - wp.x, L, lv + hit.y - wp.y, bottom, bottom + win_h, win_s, win_w, fw, idx, wp);
                    if (kind != 1 && kind != 2) kind = 2;
                    vec2 e = min(hit.xy - lo, hi - hit.xy);
                    rao = 0.72 + 0.28 * smoothstep(0.0, 0.12, min(e.x, e.y));
                    rray = rr;
                }} else {{
                    kind = 7;
                    nl = hit.w < 1.5 ? (rr.x > 0.0 ? -tw : tw) : (hit.w < 2.5 ? vec3(0.0, 0.0, -1.0) : vec3(0.0, 0.0, 1.0));
                    rao = (0.9 - 0.35 * hit.z / depth_m) * (hit.w > 1.5 && hit.w < 2.5 ? 0.75 : 1.0);
                }}
            }}
"""

DECL_OLD = "    vec3 col = albedo;\n"
DECL_NEW = DECL_OLD + "    vec3 nl = n, refl = vec3(0.0), gcol = vec3(0.0);\n    vec2 rray = vec2(0.0);\n    vec3 pn = n;\n" \
                      "    float rvis = 1.0, rao = 1.0, fr = 0.0, cover = 0.0;\n"

#: the cornice band gets the overhang's shadow
CORNICE_OLD = "        col = albedo * 0.8;       // cornice band (the cornice itself is geometry)\n"
CORNICE_NEW = CORNICE_OLD + """        float sn_c = dot(sun_dir, n);
        rvis = sn_c > 0.0 ? step(0.3 * sun_dir.z / max(sn_c, 0.05), z - H + 0.6) : 1.0;
"""


def _glass() -> str:
    curt = " : ".join(f"(ci == {k}u ? {_v3(c)}" for k, c in enumerate(CURTAIN_RGB[:-1])) + f" : {_v3(CURTAIN_RGB[-1])}" \
        + ")" * (len(CURTAIN_RGB) - 1)
    return f"""    if (kind == 1) {{              // photo facades: the room, what hangs in the window, the mirrored sky
        float t = wp.y / win_h;
        float x = wp.x / win_w;
        float pick = hf(h, 0u);
        col = facade_room(wp, rray, win_h, h);
        uint ci = (h >> 9u) % {len(CURTAIN_RGB)}u;
        vec3 cc = {curt};
        float blinds = step(pick, 0.22) * step(1.0 - (0.15 + 0.85 * hf(h, 16u)), t);
        float cw = 0.15 + 0.22 * hf(h, 16u);
        float curtain = step(0.22, pick) * step(pick, 0.5) * max(step(x, cw), step(1.0 - cw, x));
        float net = step(0.5, pick) * step(pick, 0.66) * step(t, 0.45 + 0.5 * hf(h, 24u));
        float fold = 0.8 + 0.2 * sin(wp.x * 43.0 + 6.0 * hf(h, 20u));
        gcol = mix(vec3(0.82, 0.8, 0.74), vec3(0.5, 0.5, 0.48), step(0.55, fract(wp.y * 16.0))) * blinds
             + cc * fold * curtain + vec3(0.86, 0.86, 0.84) * fold * net;
        cover = max(blinds, curtain) + 0.75 * net;
        col = mix(col, gcol / max(blinds + curtain + net, 1.0), min(cover, 1.0));
        // the pane, tilted per window and sash, mirrors the sky above the horizon and the street below it
        uint hp = rhash(uvec3(h, t > 0.7 ? 3u : 5u, 11u));
        vec3 tw = vec3(-n.y, n.x, 0.0);
        pn = normalize(n + {PANE_TILT:.4f} * ((2.0 * hf(hp, 0u) - 1.0) * tw + (2.0 * hf(hp, 8u) - 1.0) * vec3(0.0, 0.0, 1.0)));
        fr = clamp(fresnel(view, pn, {GLASS_F0:.3f}), 0.0, 1.0);
    }} else if (kind == 7) {{       // the reveal: wall material, darker deep in the hole
        col = albedo * 0.92 * rao;
"""


GLASS_OLD_HEAD = "    if (kind == 1) {              // window glass: blinds, curtains or a dark room; the sky in its upper part\n"
GLASS_OLD_TAIL = "        col *= 0.75 + 0.25 * smoothstep(0.0, 0.15, win_h - wp.y);\n"

#: display windows mirror like the panes above (each pane gently warped: large float glass is not flat)
SHOP_OLD = "        col = mix(room, skyr * 0.85, clamp(0.6 * fresnel(view, n, 0.04) + 0.08, 0.0, 0.7));\n"
SHOP_NEW = f"""        col = room;
        vec3 tws = vec3(-n.y, n.x, 0.0);
        float wob = 0.5 * sin(2.3 * u + 1.7 * z + 6.28 * hf(h, 12u));   // large panes are gently warped
        pn = normalize(n + {PANE_TILT:.4f} * (2.0 * hf(h, 4u) - 1.0 + 1.5 * wob) * tws);
        fr = clamp(fresnel(view, pn, {GLASS_F0:.3f}) + 0.05, 0.0, 1.0);
"""
#: the ambient light of walls grows with the sky they see: in a street canyon less near the ground
CANYON_M = 14.0
CANYON_NEW = f"""    float canyon = 0.72 + 0.28 * smoothstep(0.0, {CANYON_M:.1f}, z);
    c -= col * (1.0 - 0.2 * wet) * (1.0 - canyon) * light_vis(nl, 0.0);
"""

#: by day a room behind a window, and a shop's interior (lit by its own lamps), seen from the street through the
#: exposure the street sets: indoor light is a few per cent of daylight, so rooms read dark and shops dim (ours;
#: photo-facades-3 had 0.6 and 1.0, and the sixth blind sort's views showed pale, evenly lit shop interiors)
ROOM_DAYLIGHT = 0.32
SHOP_DAYLIGHT = 0.45

LIGHT_OLD = ("    vec3 c = col * (1.0 - 0.2 * wet) * (light_vis(n, dot(n, sun_dir) > 0.0 ? sun_vis() : 1.0) + "
             "lamp_light(v_world, n));\n")
LIGHT_NEW = """    if (kind == 1 || kind == 6 || gpane > 0.5) refl = facade_mirror(reflect(view, pn));   // once for all panes
    if (kind == 1 || kind == 2) col *= rao;
    vec3 c = col * (1.0 - 0.2 * wet) * (light_vis(nl, (dot(n, sun_dir) > 0.0 ? sun_vis() : 1.0) * rvis) + lamp_light(v_world, nl));
""" + CANYON_NEW + f"""    if (kind == 1) c *= {ROOM_DAYLIGHT:.2f};                                  // the room behind glass: dimmer than the street
"""

SHOP_LIGHT_OLD = "    if (kind == 6) c = col * (0.9 * ambient + 0.35);              // a shop is lit from inside\n"
SHOP_LIGHT_NEW = f"    if (kind == 6) c = col * (0.9 * ambient + 0.35) * {SHOP_DAYLIGHT:.2f};   // lit inside, dimmer than the street\n"

NIGHT_OLD = """        if (float(h2 & 1023u) / 1024.0 < lit) {
            vec3 glow = window_glow * (0.7 + 0.3 * hf(h2, 10u));
            c = kind == 6 ? max(c, col * glow * 2.2) : max(c, glow * (0.6 + 0.5 * col));  // lit rooms keep their content
        }
    }
"""
NIGHT_NEW = """        if (kind == 6 && float(h2 & 1023u) / 1024.0 < lit) {
            vec3 glow = window_glow * (0.7 + 0.3 * hf(h2, 10u));
            c = max(c, col * glow * 2.2);
        }
        if (kind == 1 && (window_lit > 0.0 || shop_lit > 0.0)) {   // photo facades: lit by flats, warm, neutral or
            vec3 nlt = facade_night(idx, fi, seed, lit);          // cool, curtains glowing (nothing lit by day)
            c = max(c, window_glow * nlt * (0.25 + 1.1 * col) * (0.85 + 0.3 * wp.y / win_h));
        }
    }
    if (kind == 1 || kind == 6) c = mix(c, refl, fr);
"""


def patch_source(src: str, program: str = "", sky_map: bool = False) -> str:
    """The realistic ``facade`` fragment source (after :func:`.photo_materials.patch_source`, if any) made photo
    (module docstring); other programs' sources and the vertex stage returned unchanged. ``sky_map``: the photo
    sky's HDRI map is bound (:data:`SKY_UNIT`, uniforms ``sky_tex``, ``hdri_rot``, ``hdri_gain``) and mirrored.

    Raises:
        RuntimeError: a realistic text to replace is missing (the shaders were edited without this module)."""
    if program != "facade" or "float window_at(" not in src and "int window_at(" not in src:
        return src

    def swap(s, old, new, what):
        if s.count(old) != 1:
            raise RuntimeError(f"photo facades: the {what} source to replace was not found once (shaders changed?)")
        return s.replace(old, new)

    head = "uniform vec3 window_glow;\n"
    src = swap(src, head, head + (SKY_MAP_GLSL if sky_map else ""), "facade uniforms")
    src = swap(src, "void main() {", FUNCS_GLSL + PGL.FUNCS_GLSL + mirror_glsl(sky_map) + "void main() {", "facade main")
    src = swap(src, WEATHER_OLD, WEATHER_NEW, "rising damp")
    src = swap(src, DECL_OLD, DECL_NEW + PGL.DECL_GLSL, "colour declaration")
    src = swap(src, CORNICE_OLD, CORNICE_NEW, "cornice band")
    src = swap(src, RECESS_OLD, RECESS_NEW, "window classification")
    a = src.find(GLASS_OLD_HEAD)
    b = src.find(GLASS_OLD_TAIL, a)
    if a < 0 or b < 0:
        raise RuntimeError("photo facades: the window glass source to replace was not found (shaders changed?)")
    src = src[:a] + PGL.CELL_GLSL + _glass().lstrip() + src[b + len(GLASS_OLD_TAIL):]
    src = swap(src, SHOP_OLD, SHOP_NEW, "display window")
    src = swap(src, LIGHT_OLD, LIGHT_NEW, "facade lighting")
    src = swap(src, SHOP_LIGHT_OLD, SHOP_LIGHT_NEW, "shop lighting")
    src = swap(src, PGL.LIGHT_OLD, PGL.LIGHT_GLSL, "curtain wall lighting")
    src = swap(src, NIGHT_OLD, NIGHT_NEW + PGL.MIRROR_GLSL, "lit windows")
    src = PW.patch_source(src)       # shops' own palettes, pot plants, open sashes, lit rooms at night
    return PFD.patch_source(src)     # projecting sills, splash zone and soot (.photo_facade_detail)


def set_sky_uniforms(prog, sky) -> None:
    """Point the facade program ``prog`` (patched with ``sky_map``) at the photo sky's map: its unit
    :data:`SKY_UNIT`, longitude turn and gain from ``sky`` (:class:`.photo_sky.SkyLight`)."""
    for name, value in (("sky_tex", SKY_UNIT), ("hdri_rot", float(sky.rot_rad)), ("hdri_gain", float(sky.gain))):
        if name in prog:
            prog[name].value = value


def source_identity() -> dict:
    """Version and sha256 (12 hex) of this module's GLSL (part of the photo render identity)."""
    text = (FUNCS_GLSL + WEATHER_NEW + RECESS_NEW + DECL_NEW + CORNICE_NEW + _glass() + mirror_glsl(True)
            + mirror_glsl(False) + SHOP_NEW + LIGHT_NEW + SHOP_LIGHT_NEW + NIGHT_NEW + SKY_MAP_GLSL + PGL.source_text()
            + PW.source_text() + PFD.source_text())
    return {"version": FACADES_VERSION, "glsl": hashlib.sha256(text.encode()).hexdigest()[:12]}


__all__ = ["CURTAIN_RGB", "FACADES_VERSION", "FUNCS_GLSL", "GLASS_F0", "NIGHT_TINTS", "PANE_TILT", "RECESS_M",
           "ROOM_DEPTH_M", "SKY_UNIT", "night_light", "patch_source", "recess_hit", "recess_sun", "reflect_uv",
           "room_surface", "set_sky_uniforms", "source_identity"]
