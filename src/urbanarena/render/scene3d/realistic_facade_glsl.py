"""GLSL of the ``realistic`` facade program (:mod:`.realistic_shaders`): the vertex shader, which unpacks the
building's look (:func:`.building_look.pack_facade_look`), and the fragment shader of walls, windows, shopfronts
and glass curtain walls; the materials and their rules are described in :mod:`.realistic_shaders`. The photo
style patches these sources by string swaps (:mod:`.photo_materials`, :mod:`.photo_facades`)."""

from urbanarena.render.scene3d.realistic_glsl import HASH, NOISE, TONE

FACADE_VS = """
#version 330
uniform mat4 mvp;
uniform mat4 sun_mvp;
uniform float floor_h;
in vec3 in_pos;
in vec3 in_normal;
in vec3 in_colour;
in vec4 in_facade;
in float in_shop;
out vec3 v_world;
out vec3 v_normal;
out vec4 v_facade;
flat out float v_shop;    // 1: shopfront ground floor
flat out uint v_seed;     // wall seed
flat out float v_fh;      // storey height (m)
flat out uint v_wh;
flat out vec3 v_albedo;   // material colour
flat out vec4 v_cell;     // cell width, height (m), bond offset per row, joint half-width (m)
flat out vec4 v_amp;      // per-cell tone amplitude, noise amplitude, noise scale u, noise scale z (1/m)
flat out vec3 v_joint;    // joint colour
flat out float v_glass;   // 1: glass curtain wall
flat out vec4 v_win;      // window width, spacing, height, frame width (m)
flat out vec3 v_frame;
flat out float v_course;
out vec4 v_sun;           // position in the sun shadow map's clip space (offset 0.25 m along the normal)
""" + HASH + """
float hf(uint h, uint shift) { return float((h >> shift) & 255u) / 255.0; }
void main() {
    v_world = in_pos;
    v_normal = normalize(in_normal);
    v_facade = in_facade;
    // in_shop packs (building_look.FACADE_PACK) shop | seed << 1 | material << 16 | tagged colour << 19 | storey << 20
    uint pk = uint(in_shop + 0.5);
    v_shop = float(pk & 1u);
    uint seed = (pk >> 1u) & 32767u;
    uint mat = (pk >> 16u) & 7u;
    bool tagged = ((pk >> 19u) & 1u) == 1u;
    uint storey = (pk >> 20u) & 15u;
    float fh = storey == 0u ? floor_h : STOREY_M0 + STOREY_STEP_M * float(storey - 1u);
    v_seed = seed;
    v_fh = fh;
    // per-wall constants (the same at the wall's six vertices): material, window grid, frame colour
    uint bh = rhash(uvec3(seed >> 4u, 7u, 1u));
    uint wh = rhash(uvec3(seed, 3u, 5u));
    v_wh = wh;
    float mpick = hf(wh, 0u), t = hf(wh, 8u);
    // an OSM building:material overrides the seeded pick (1 brick, 2 plaster, 3 stone, 4 concrete, 5 glass,
    // 6 wood, 7 metal)
    if (mat == 1u) mpick = 0.15; else if (mat == 2u) mpick = 0.45; else if (mat == 3u) mpick = 0.7;
    else if (mat == 4u) mpick = 0.8; else if (mat == 5u) mpick = 0.95;
    v_glass = 0.0;
    if (mat == 6u) {              // wooden boards 0.15 m, vertical
        v_albedo = mix(vec3(0.45, 0.16, 0.12), vec3(0.55, 0.45, 0.32), t);
        v_cell = vec4(0.15, 1e4, 0.0, 0.006); v_amp = vec4(0.18, 0.2, 3.0, 0.4); v_joint = v_albedo * 0.55;
    } else if (mat == 7u) {       // metal cladding, 0.9 m standing seams
        v_albedo = mix(vec3(0.5, 0.52, 0.54), vec3(0.62, 0.63, 0.64), t);
        v_cell = vec4(0.9, 1e4, 0.0, 0.012); v_amp = vec4(0.06, 0.1, 0.5, 0.5); v_joint = v_albedo * 0.6;
    } else if (mpick < 0.3) {     // brick, running bond
        v_albedo = mix(vec3(0.55, 0.27, 0.2), vec3(0.62, 0.45, 0.33), t);
        v_cell = vec4(0.25, 0.075, 0.5, 0.005); v_amp = vec4(0.3, 0.12, 2.0, 2.0); v_joint = vec3(0.68, 0.66, 0.62);
    } else if (mpick < 0.6) {     // plaster: stains and streaks, no joints
        v_albedo = in_colour;
        v_cell = vec4(1e4, 1e4, 0.0, 0.0); v_amp = vec4(0.0, 0.32, 0.6, 0.22); v_joint = in_colour;
    } else if (mpick < 0.75) {    // stone blocks
        v_albedo = mix(vec3(0.62, 0.58, 0.52), vec3(0.72, 0.7, 0.66), t);
        v_cell = vec4(0.6, 0.35, 0.37, 0.008); v_amp = vec4(0.22, 0.14, 4.0, 4.0); v_joint = v_albedo * 0.55;
    } else {                      // concrete panels (and the frame of glass curtain walls)
        v_albedo = mix(vec3(0.6, 0.6, 0.58), in_colour, 0.35);
        v_cell = vec4(3.0, fh, 0.0, 0.012); v_amp = vec4(0.08, 0.2, 0.9, 0.9); v_joint = v_albedo * 0.45;
        if (mpick >= 0.9 && (in_facade.w >= 12.0 || mat == 5u)) {
            v_glass = 1.0;
            v_albedo = mix(vec3(0.12, 0.2, 0.24), vec3(0.18, 0.2, 0.16), hf(wh, 16u));
            v_cell = vec4(1.5, fh, 0.0, 0.04); v_amp = vec4(0.1, 0.0, 1.0, 1.0); v_joint = vec3(0.3, 0.32, 0.34);
        }
    }
    if (tagged && v_glass < 0.5) {  // building:colour: the material takes the mapped colour
        v_albedo = mix(v_albedo, in_colour, 0.75);
        v_joint = mix(v_joint, in_colour * 0.7, 0.5);
    }
    float win_w = 1.0 + 0.6 * hf(bh, 0u);
    v_win = vec4(win_w, max(win_w + 0.9 + 0.9 * hf(bh, 8u), 2.2), 1.3 + 0.45 * hf(bh, 16u), 0.05 + 0.05 * hf(bh, 24u));
    uint fh2 = rhash(uvec3(bh, 9u, 9u));
    v_frame = hf(fh2, 0u) < 0.5 ? vec3(0.9, 0.9, 0.87) : (hf(fh2, 0u) < 0.8 ? vec3(0.22, 0.2, 0.18) : vec3(0.35, 0.22, 0.15));
    v_course = hf(bh, 4u);
    v_sun = sun_mvp * vec4(in_pos + 0.25 * normalize(in_normal), 1.0);
    gl_Position = mvp * vec4(in_pos, 1.0);
}
"""

FACADE_FS = """
#version 330
in vec3 v_world;
in vec3 v_normal;
in vec4 v_facade;
flat in float v_shop;
flat in uint v_seed;
flat in float v_fh;
flat in uint v_wh;
flat in vec3 v_albedo;
flat in vec4 v_cell;
flat in vec4 v_amp;
flat in vec3 v_joint;
flat in float v_glass;
flat in vec4 v_win;
flat in vec3 v_frame;
flat in float v_course;
in vec4 v_sun;
uniform sampler2DShadow sun_shadow;
uniform float shadow_on;
out vec4 f_colour;
uniform float ground_h;
uniform vec3 horizon;
uniform vec3 zenith;
uniform float window_lit;
uniform float shop_lit;
uniform vec3 window_glow;
""" + "LIGHT_FS_HERE" + NOISE + TONE + """
float hf(uint h, uint shift) { return float((h >> shift) & 255u) / 255.0; }
// window grid of a storey: 0 wall, 1 glass, 2 frame, 3 sill; idx window number; wpos position in the window
int window_at(float u, float L, float lv, float bottom, float top, float spacing, float width, float fw,
              out float idx, out vec2 wpos) {
    idx = 0.0; wpos = vec2(0.0);
    float n = floor((L - 0.6) / spacing);
    if (n < 1.0) return 0;
    float margin = 0.5 * (L - n * spacing);
    float local = u - margin;
    idx = floor(local / spacing);
    if (idx < 0.0 || idx >= n) return 0;
    float pos = local - idx * spacing - 0.5 * (spacing - width);
    if (lv > bottom - 0.12 && lv < bottom - fw && pos > -0.1 && pos < width + 0.1) return 3;
    if (lv < bottom - fw || lv > top + fw || pos < -fw || pos > width + fw) return 0;
    wpos = vec2(pos, lv - bottom);
    if (pos < 0.0 || pos > width || lv < bottom || lv > top) return 2;
    float mull = abs(pos - 0.5 * width), trans = abs(lv - bottom - 0.7 * (top - bottom));
    if (mull < 0.5 * fw || trans < 0.5 * fw) return 2;
    return 1;
}
// share of the sun reaching the fragment: the baked sun shadow map (.sun_shadow), bilinear PCF
float sun_vis() {
    if (shadow_on < 0.5) return 1.0;
    vec3 q = v_sun.xyz / v_sun.w * 0.5 + 0.5;
    if (q.x <= 0.0 || q.y <= 0.0 || q.x >= 1.0 || q.y >= 1.0 || q.z >= 1.0) return 1.0;
    return texture(sun_shadow, vec3(q.xy, q.z - 0.0005));   // linear filtering: 2 x 2 PCF in one lookup
}
float fresnel(vec3 view, vec3 n, float f0) {
    float g = 1.0 - abs(dot(view, n));
    return f0 + (1.0 - f0) * g * g * g * g * g;
}
void main() {
    float u = v_facade.x, z = v_facade.y, L = v_facade.z, H = v_facade.w;
    float shop = v_shop;
    uint seed = v_seed;
    float floor_h = v_fh;
    uint wh = v_wh;
    vec3 n = normalize(v_normal);
    vec3 view = normalize(v_world - eye);
    vec3 skyr = mix(horizon, zenith, abs(reflect(view, n).z));   // sky seen in a reflection
    // wall material: cells (bricks, blocks, panels) with a tone each, joints, value noise (stains)
    float row = floor(z / v_cell.y);
    float cu = u / v_cell.x + fract(row * v_cell.z);
    float tone = h21(vec2(floor(cu), row), wh);
    float stain = vnoise(vec2(u * v_amp.z, z * v_amp.w), wh);
    vec3 albedo = v_albedo * (1.0 + v_amp.x * (tone - 0.5)) * (1.0 + v_amp.y * (stain - 0.5));
    float joint = max(gridline(z, v_cell.y, v_cell.w), gridline(cu * v_cell.x, v_cell.x, v_cell.w));
    albedo = mix(albedo, v_joint, joint * 0.85);
    if (v_glass > 0.5) {          // curtain wall: tinted glass mirroring the sky
        albedo = mix(albedo, skyr * 0.9, clamp(0.45 + fresnel(view, n, 0.08), 0.0, 1.0) * (1.0 - joint));
    }
    albedo *= 0.72 + 0.28 * smoothstep(0.0, 1.2, z);        // rising damp and contact occlusion
    float pipe = min(abs(u - 0.35), abs(u - L + 0.35));        // drainpipes at the wall ends
    if (L > 6.0 && pipe < 0.06 && v_glass < 0.5) albedo = vec3(0.32, 0.33, 0.34) * (0.7 + 0.6 * (1.0 - pipe / 0.06));
    float win_w = v_win.x, win_s = v_win.y, win_h = v_win.z, fw = v_win.w;
    int kind = 0;
    float idx = 0.0;
    vec2 wp = vec2(0.0);
    uint fi = 0u;
    vec3 col = albedo;
    bool shopfront = shop > 0.5 && z < ground_h && H > ground_h + 1.0;
    if (v_glass > 0.5) {
        kind = 5;
    } else if (z > H - 0.6) {
        col = albedo * 0.8;       // cornice band (the cornice itself is geometry)
    } else if (shopfront) {
        if (z > 0.45 && z < 2.75 && u > 0.4 && u < L - 0.4) {
            float m = mod(u - 0.4, 2.5);
            idx = floor((u - 0.4) / 2.5);
            if (m < 0.12 || (z > 2.35 && z < 2.45)) { kind = 2; }
            else { kind = 6; wp = vec2(m - 0.12, z - 0.45); }
        } else if (z <= 0.45) col = albedo * 0.6;  // plinth
    } else {
        float g = (H > ground_h + 1.0) ? ground_h : 0.0;
        float k = floor((z - g) / floor_h);
        float lv = z - g - k * floor_h;
        float bottom = (g > 0.0 || k > 0.0) ? 0.85 : 1.0;
        if (z < ground_h && H > ground_h + 1.0) { lv = z; bottom = 1.0; k = -1.0; }
        if (g + (k + 1.0) * floor_h <= H - 0.5 + 1e-3) {
            kind = window_at(u, L, lv, bottom, bottom + win_h, win_s, win_w, fw, idx, wp);
            fi = uint(k + 1.0);
        }
        if (kind == 0 && v_cell.x > 2.0 && abs(lv) < 0.1 && v_course < 0.5) col = albedo * 1.12;  // string course
    }
    uint h = rhash(uvec3(uint(idx), fi, seed));
    if (kind == 1) {              // window glass: blinds, curtains or a dark room; the sky in its upper part
        float t = wp.y / win_h;
        float x = wp.x / win_w;
        float pick = hf(h, 0u);
        vec3 room = mix(vec3(0.08, 0.09, 0.1), vec3(0.22, 0.2, 0.18), hf(h, 8u));
        float blinds = step(pick, 0.3) * step(1.0 - (0.3 + 0.7 * hf(h, 16u)), t);
        room = mix(room, mix(vec3(0.78, 0.76, 0.7), vec3(0.55, 0.55, 0.53), step(0.5, fract(wp.y * 18.0))), blinds);
        float cw = 0.18 + 0.2 * hf(h, 16u);
        float curtain = step(0.3, pick) * step(pick, 0.6) * max(step(x, cw), step(1.0 - cw, x));
        room = mix(room, mix(vec3(0.75, 0.7, 0.6), vec3(0.55, 0.25, 0.22), hf(h, 24u)), curtain);
        col = mix(room, skyr * 0.8, clamp(0.25 + fresnel(view, n, 0.04) + 0.25 * t, 0.0, 0.85));
        // reveal: the window sits 0.15 m deep; its head shades the upper glass
        col *= 0.75 + 0.25 * smoothstep(0.0, 0.15, win_h - wp.y);
    } else if (kind == 2) {
        col = shopfront ? v_frame * 0.6 : v_frame;
    } else if (kind == 3) {
        col = mix(albedo, vec3(0.8, 0.79, 0.76), 0.7);
    } else if (kind == 6) {       // display window with depth: the view ray followed into a 4 m deep shop
        vec3 t3 = vec3(-n.y, n.x, 0.0);
        vec3 d = vec3(dot(view, t3), view.z, max(-dot(view, n), 1e-3));
        vec2 size = vec2(2.38, 2.3);
        float kb = 4.0 / d.z;
        float kx = d.x > 0.0 ? (size.x - wp.x) / d.x : (d.x < 0.0 ? -wp.x / d.x : 1e9);
        float ky = d.y > 0.0 ? (3.0 - wp.y) / d.y : (d.y < 0.0 ? -(wp.y + 0.45) / d.y : 1e9);
        float kk = min(kb, min(kx, ky));
        vec2 p = wp + d.xy * kk;
        vec3 warm = mix(vec3(0.5, 0.45, 0.38), vec3(0.4, 0.42, 0.46), hf(h, 0u));
        // the shop's interior (one per wall): 0 shelves of goods, 1 clothes on rails, 2 cafe (counter,
        // pendant lamps, menu boards), 3 gallery / office (pale walls, framed pictures, a desk)
        int inter = int(hf(wh, 20u) * 3.999);
        vec3 back;
        if (inter == 0) {
            float shelf = step(0.8, fract(p.y * 1.6));
            float goods = h21(vec2(p.x * 4.0, floor(p.y * 1.6)), h);
            vec3 item = goods < 0.33 ? vec3(0.65, 0.3, 0.25) : (goods < 0.66 ? vec3(0.3, 0.38, 0.6) : vec3(0.85, 0.8, 0.68));
            item = mix(item, warm, 0.35 + 0.4 * h21(vec2(p.x * 11.0, p.y * 7.0), h));
            back = mix(item * (0.6 + 0.4 * step(0.3, fract(p.x * 4.0))), vec3(0.35, 0.27, 0.2), shelf);
        } else if (inter == 1) {
            float g = h21(vec2(floor(p.x * 7.0), 0.0), h);
            vec3 cloth = mix(vec3(0.15, 0.15, 0.18), mix(vec3(0.7, 0.62, 0.55), vec3(0.5, 0.15, 0.2), g), step(0.35, g));
            float hang = step(0.6, p.y) * step(p.y, 1.75 - 0.35 * h21(vec2(floor(p.x * 7.0), 1.0), h));
            back = mix(vec3(0.82, 0.8, 0.76), cloth * (0.8 + 0.2 * step(0.1, fract(p.x * 7.0))), hang);
            back = mix(back, vec3(0.2), step(abs(p.y - 1.78), 0.02));
        } else if (inter == 2) {
            back = mix(vec3(0.45, 0.3, 0.2), vec3(0.7, 0.58, 0.42), step(1.05, p.y));       // counter, wall
            float board = step(abs(p.y - 1.75), 0.28) * step(abs(fract(p.x * 0.5) - 0.5), 0.3);
            float chalk = step(0.55, fract(p.y * 14.0)) * step(0.35, h21(vec2(floor(p.x * 6.0), floor(p.y * 14.0)), h));
            back = mix(back, vec3(0.12, 0.13, 0.12) + 0.45 * chalk, board);
            float lamp = length(vec2(fract(p.x * 0.7) - 0.5, (p.y - 2.3) * 1.4));
            back = mix(back, vec3(1.0, 0.85, 0.55), 1.0 - smoothstep(0.06, 0.1, lamp));
        } else {
            back = vec3(0.86, 0.85, 0.82);
            vec2 fr = vec2(fract(p.x * 0.6), p.y);
            float pic = step(abs(fr.x - 0.5), 0.22) * step(abs(fr.y - 1.55), 0.3);
            back = mix(back, mix(vec3(0.3, 0.4, 0.55), vec3(0.7, 0.45, 0.3), h21(vec2(floor(p.x * 0.6), 2.0), h)), pic);
            back = mix(back, vec3(0.3, 0.28, 0.26), step(p.y, 0.75) * step(abs(fract(p.x * 0.4) - 0.5), 0.3));
        }
        vec3 side = warm * 0.6;
        vec3 flo = d.y < 0.0 ? vec3(0.2, 0.17, 0.14) : vec3(0.95, 0.93, 0.85) * step(0.5, fract(p.x * 0.8));
        vec3 room = kk == kb ? back : (kk == kx ? side : flo);
        room *= 0.75;
        col = mix(room, skyr * 0.85, clamp(0.6 * fresnel(view, n, 0.04) + 0.08, 0.0, 0.7));
    }
    vec3 c = col * (1.0 - 0.2 * wet) * (light_vis(n, dot(n, sun_dir) > 0.0 ? sun_vis() : 1.0) + lamp_light(v_world, n));
    if (kind == 6) c = col * (0.9 * ambient + 0.35);              // a shop is lit from inside
    if (kind == 5) c = max(c, albedo * 0.9);    // mirrored sky is not lit by the sun again
    if (kind == 1 || kind == 6) {
        float lit = (fi == 0u && shop > 0.5) ? shop_lit : window_lit;
        uint h2 = rhash(uvec3(uint(idx) + 7919u, fi + 104729u, seed ^ 2654435769u));
        if (float(h2 & 1023u) / 1024.0 < lit) {
            vec3 glow = window_glow * (0.7 + 0.3 * hf(h2, 10u));
            c = kind == 6 ? max(c, col * glow * 2.2) : max(c, glow * (0.6 + 0.5 * col));  // lit rooms keep their content
        }
    }
    c = tonemap(c);
    f_colour = vec4(clamp(mix(horizon, c, fog_at(v_world)), 0.0, 1.0), 1.0);
}
"""
