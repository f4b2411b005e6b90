"""The ``photo`` style's window and shop variety (issue 24, tells "the same coloured-tile shop-window pattern in
several images", "box buildings with one repeated window texture", at night "plain rectangular lit windows on a
featureless wall").

Photo style only: string swaps on the facade source after :mod:`.photo_facades` (:func:`patch_source`), so ``flat``
and ``realistic`` never reach it. Per fragment, from integer hashes (same scene, same pixels).

* **Shops** (:func:`shop_rgb`, GLSL ``shop_rgb``): each shop (wall hash ``wh``) draws its own palette of three
  colours (hue, saturation 0.25-0.75, value 0.35-0.85 from ``rhash(wh, 211 + k, 7)``) for its goods, clothes and
  back wall, and its own shelf pitch (1.3-2.2 shelves per metre), goods width (2.5-7.5 per metre, rows staggered),
  goods heights and shelf colour, its pictures' spacing (a gallery or office: 0.35-0.9 a metre, their size and
  height per bay), so no two shops repeat one coloured-tile pattern.
* **Windows by day**: pot plants on the inner sill in 18 % of windows, the left sash of 6 % opened inward (the
  room seen without the glass's mirror).
* **Night** (:func:`night_mode`, GLSL ``night_mode``): a lit window's room is lit by a ceiling lamp (50 %: bright
  on the ceiling and near the lamp, falling off with distance), only from deep inside (30 %: a door to a lit room;
  the near floor and ceiling dark) or by a low table lamp at one side (20 %); curtains and blinds glow evenly.
  15 % of dark windows show a dim blue-grey glow (a screen, a hallway). A lit window lights its frame, sill and
  reveals a little (35 % of the glow times their colour).
"""

from __future__ import annotations

import math

from urbanarena.render.scene3d.building_look import _hf, rhash

WINDOWS_VERSION = "photo-windows-1"
M32 = 0xFFFFFFFF
#: night room lighting modes: ceiling lamp, lit only in depth, table lamp (cumulative shares)
NIGHT_MODES = (0.5, 0.8, 1.0)


def shop_rgb(k: int, wh: int) -> tuple[float, float, float]:
    """Colour ``k`` (0-2) of the palette of the shop on the wall of hash ``wh``: value times a mix of white and the
    hue's cosine rainbow ``0.5 + 0.5 cos(2 pi (hue + (0, 1/3, 2/3)))`` by the saturation."""
    hs = rhash(wh & M32, 211 + k, 7)
    hue, sat, val = _hf(hs, 0), 0.25 + 0.5 * _hf(hs, 8), 0.35 + 0.5 * _hf(hs, 16)
    rb = [0.5 + 0.5 * math.cos(6.28318531 * (hue + o)) for o in (0.0, 0.333, 0.667)]
    return tuple(val * (1.0 + sat * (c - 1.0)) for c in rb)


def night_mode(idx: int, storey: int, seed: int) -> int:
    """How a lit window's room is lit: 0 ceiling lamp, 1 only from deep inside, 2 a table lamp (module
    docstring)."""
    m = _hf(rhash(idx & M32, storey & M32, (seed ^ 5381) & M32), 0)
    return 0 if m < NIGHT_MODES[0] else (1 if m < NIGHT_MODES[1] else 2)


def night_shape(mode: int, q, win_w_m: float, win_h_m: float) -> float:
    """Relative light of a lit room at the point ``q = (x_m, y_m, depth_m)`` the view ray meets (window
    coordinates, depth behind the glass): mode 1 ``0.12 + 1.3 smoothstep(1.6, 3.4, depth)``; else a lamp at
    ``l`` (mode 0: ceiling centre ``(w / 2, h + 0.35, 1.75)``, mode 2: table lamp ``(0.15 w, -0.2, 1.1)``) gives
    ``base + 2.2 / (1 + 0.7 |q - l|^2)`` (base 0.45 and 0.2), the ceiling lamp's shade itself +2.5 within 12-20 cm."""
    if mode == 1:
        t = min(max((q[2] - 1.6) / 1.8, 0.0), 1.0)
        return 0.12 + 1.3 * t * t * (3 - 2 * t)
    lamp = (0.5 * win_w_m, win_h_m + 0.35, 1.75) if mode == 0 else (0.15 * win_w_m, -0.2, 1.1)
    d2 = sum((a - b) ** 2 for a, b in zip(q, lamp))
    f = 2.2 / (1.0 + 0.7 * d2)
    if mode != 0:
        return 0.2 + f
    t = min(max((math.sqrt(d2) - 0.12) / 0.08, 0.0), 1.0)
    return 0.45 + f + 2.5 * (1.0 - t * t * (3 - 2 * t))


FUNCS_GLSL = """
vec3 shop_rgb(uint k, uint wh) {
    uint hs = rhash(uvec3(wh, 211u + k, 7u));
    vec3 rb = 0.5 + 0.5 * cos(6.28318531 * (hf(hs, 0u) + vec3(0.0, 0.333, 0.667)));
    return (0.35 + 0.5 * hf(hs, 16u)) * (1.0 + (0.25 + 0.5 * hf(hs, 8u)) * (rb - 1.0));
}
int night_mode(float idx, uint fi, uint seed) {
    float m = hf(rhash(uvec3(uint(idx), fi, seed ^ 5381u)), 0u);
    return m < %.3f ? 0 : (m < %.3f ? 1 : 2);
}
// the shape of a lit room's light at the point the view ray meets (room coordinates: x, y as the window's, depth)
float night_shape(int mode, vec3 q, float win_w, float win_h) {
    if (mode == 1) return 0.12 + 1.3 * smoothstep(1.6, 3.4, q.z);
    vec3 l = mode == 0 ? vec3(0.5 * win_w, win_h + 0.35, 1.75) : vec3(win_w * 0.15, -0.2, 1.1);
    vec3 dl = q - l;
    float f = 2.2 / (1.0 + 0.7 * dot(dl, dl));
    return (mode == 0 ? 0.45 : 0.2) + f + (mode == 0 ? 2.5 * (1.0 - smoothstep(0.12, 0.2, length(dl))) : 0.0);
}
""" % NIGHT_MODES[:2]

SHOP_OLD = """            float shelf = step(0.8, fract(p.y * 1.6));
            float goods = h21(vec2(p.x * 4.0, floor(p.y * 1.6)), h);
            vec3 item = goods < 0.33 ? vec3(0.65, 0.3, 0.25) : (goods < 0.66 ? vec3(0.3, 0.38, 0.6) : vec3(0.85, 0.8, 0.68));
            item = mix(item, warm, 0.35 + 0.4 * h21(vec2(p.x * 11.0, p.y * 7.0), h));
            back = mix(item * (0.6 + 0.4 * step(0.3, fract(p.x * 4.0))), vec3(0.35, 0.27, 0.2), shelf);
"""
SHOP_NEW = """            uint hs0 = rhash(uvec3(wh, 211u, 9u));     // photo windows: this shop's shelves and goods
            float spf = 1.3 + 0.9 * hf(hs0, 0u), spw = 2.5 + 5.0 * hf(hs0, 8u);
            float fy = fract(p.y * spf), srow = floor(p.y * spf);
            float shelf = step(0.8, fy);
            float cx = floor(p.x * spw + 0.5 * srow);
            float goods = h21(vec2(cx, srow), h);
            vec3 item = shop_rgb(uint(goods * 2.999), wh) * (0.75 + 0.5 * fract(goods * 7.31));
            item = mix(item, warm, 0.2 + 0.3 * h21(vec2(p.x * 11.0, p.y * 7.0), h));
            float tall = 0.35 + 0.45 * fract(goods * 13.7);
            vec3 wallb = mix(vec3(0.8, 0.78, 0.74), shop_rgb(2u, wh), 0.3) * 0.7;
            item *= 0.6 + 0.4 * step(0.15, fract(p.x * spw + 0.5 * srow));
            back = mix(mix(wallb, item, step(fy, tall)), vec3(0.35, 0.27, 0.2) * (0.6 + 0.8 * hf(hs0, 16u)), shelf);
"""
CLOTH_OLD = "mix(vec3(0.7, 0.62, 0.55), vec3(0.5, 0.15, 0.2), g)"
CLOTH_NEW = "mix(shop_rgb(0u, wh), shop_rgb(1u, wh), g)"
GALLERY_OLD = """            back = vec3(0.86, 0.85, 0.82);
            vec2 fr = vec2(fract(p.x * 0.6), p.y);
            float pic = step(abs(fr.x - 0.5), 0.22) * step(abs(fr.y - 1.55), 0.3);
            back = mix(back, mix(vec3(0.3, 0.4, 0.55), vec3(0.7, 0.45, 0.3), h21(vec2(floor(p.x * 0.6), 2.0), h)), pic);
"""
GALLERY_NEW = """            back = mix(vec3(0.86, 0.85, 0.82), shop_rgb(2u, wh), 0.35);
            float gsp = 0.35 + 0.55 * hf(rhash(uvec3(wh, 211u, 9u)), 24u);     // pictures a metre, this shop's
            vec2 fr = vec2(fract(p.x * gsp), p.y);
            float pic = step(abs(fr.x - 0.5), 0.12 + 0.2 * hf(h, 3u)) * step(abs(fr.y - 1.45 - 0.25 * hf(h, 5u)), 0.15 + 0.25 * hf(h, 7u));
            back = mix(back, mix(shop_rgb(0u, wh), shop_rgb(1u, wh), h21(vec2(floor(p.x * gsp), 2.0), h)), pic);
"""
CAFE_OLD = "vec3(0.7, 0.58, 0.42), step(1.05, p.y)"
CAFE_NEW = "mix(vec3(0.7, 0.58, 0.42), shop_rgb(1u, wh), 0.5), step(1.05, p.y)"

#: pot plants and open sashes, after what hangs in the window (photo facades' glass)
PLANT_OLD = "        col = mix(col, gcol / max(blinds + curtain + net, 1.0), min(cover, 1.0));\n"
PLANT_NEW = PLANT_OLD + """        uint hq = rhash(uvec3(h, 17u, 29u));        // photo windows: pot plants on the sill, an open sash
        float leaves = vnoise(wp * 14.0, hq + 1u);
        float plant = step(hf(hq, 0u), 0.18) * step(wp.y, 0.3 + 0.18 * sin(wp.x * 9.0 + 6.28 * hf(hq, 16u))) * step(0.35, leaves);
        col = mix(col, mix(vec3(0.05, 0.1, 0.04), vec3(0.2, 0.3, 0.1), leaves), plant);
        gopen = step(0.94, hf(hq, 8u)) * step(x, 0.5);
"""
FRESNEL_OLD = "        fr = clamp(fresnel(view, pn, 0.100), 0.0, 1.0);\n    } else if (kind == 7) {"
FRESNEL_NEW = "        fr = clamp(fresnel(view, pn, 0.100), 0.0, 1.0) * (1.0 - 0.85 * gopen);\n        col *= 1.0 - 0.3 * gopen;\n" \
              "    } else if (kind == 7) {"
DECL_GLSL = "    float gopen = 0.0;\n"

NIGHT_OLD = """            c = max(c, window_glow * nlt * (0.25 + 1.1 * col) * (0.85 + 0.3 * wp.y / win_h));
        }
"""
NIGHT_NEW = """            // photo windows: the room lit by a ceiling lamp, from deep inside or by a table lamp
            vec2 rq;
            int rsf = facade_room_surface(wp, rray, win_h, rq);
            float rd = rsf == 0 ? 3.5 : (rq.y - wp.y) / (abs(rray.y) > 1e-4 ? rray.y : 1e-4);
            float shp = night_shape(night_mode(idx, fi, seed), vec3(rq, rd), win_w, win_h);
            shp = mix(shp, 1.0, min(cover, 1.0));
            c = max(c, window_glow * nlt * (0.25 + 1.1 * col) * shp);
            uint hdim = rhash(uvec3(uint(idx), fi, seed ^ 5381u));
            if (nlt.r == 0.0 && hf(hdim, 8u) < 0.15) c = max(c, window_glow * vec3(0.07, 0.08, 0.11) * (0.4 + col));
        }
"""
GLOW_GLSL = """    if (window_lit > 0.0 && !shopfront && (kind == 2 || kind == 3 || kind == 7))   // lit windows light their frames
        c += window_glow * facade_night(idx, fi, seed, window_lit) * col * 0.35;
"""


def patch_source(src: str) -> str:
    """The photo facade source (after :mod:`.photo_facades`' swaps) with this module's (module docstring).

    Raises:
        RuntimeError: a text to replace is missing (the shaders or the photo facades changed)."""
    def swap(s, old, new, what):
        if s.count(old) != 1:
            raise RuntimeError(f"photo windows: the {what} source to replace was not found once (shaders changed?)")
        return s.replace(old, new)

    src = swap(src, "void main() {", FUNCS_GLSL + "void main() {", "facade main")
    src = swap(src, "    vec3 col = albedo;\n", "    vec3 col = albedo;\n" + DECL_GLSL, "colour declaration")
    for old, new, what in ((SHOP_OLD, SHOP_NEW, "shop shelves"), (CLOTH_OLD, CLOTH_NEW, "clothes"),
                           (GALLERY_OLD, GALLERY_NEW, "gallery wall"), (CAFE_OLD, CAFE_NEW, "cafe wall"),
                           (PLANT_OLD, PLANT_NEW, "window covers"), (FRESNEL_OLD, FRESNEL_NEW, "pane Fresnel"),
                           (NIGHT_OLD, NIGHT_NEW, "lit rooms")):
        src = swap(src, old, new, what)
    anchor = "    if (kind == 1 || kind == 6) c = mix(c, refl, fr);\n"
    return swap(src, anchor, GLOW_GLSL + anchor, "pane mirror")


def source_text() -> str:
    """All GLSL this module inserts (part of the photo facades' identity)."""
    return (WINDOWS_VERSION + FUNCS_GLSL + SHOP_NEW + CLOTH_NEW + GALLERY_NEW + CAFE_NEW + PLANT_NEW + FRESNEL_NEW
            + DECL_GLSL + NIGHT_NEW + GLOW_GLSL)


__all__ = ["FUNCS_GLSL", "NIGHT_MODES", "WINDOWS_VERSION", "night_mode", "night_shape", "patch_source", "shop_rgb",
           "source_text"]
