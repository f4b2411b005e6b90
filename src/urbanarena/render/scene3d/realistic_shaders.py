"""GLSL 3.30 of the ``realistic`` render style (:mod:`.styles`): facades, ground, sky, foliage, baked shade.

The realistic programs always compile the weather variant (``#define WEATHER``, :func:`.shaders.variant`),
so one set of uniforms -- set by :class:`~.weather.WeatherPass` from :func:`.conditions.lighting` -- drives
the clear day and every other condition alike. Lighting is evaluated per fragment::

    light = amb_rgb * ambient * (1 - hemi + hemi * n.z) + sun_rgb * sun * max(n . sun_dir, 0)

times the material's albedo, then **exposure and tone mapping**: the colour is taken to linear light
(``x^2.2``), scaled by ``exposure`` and mapped with Narkowicz's fit of the ACES filmic curve
``x (2.51 x + 0.03) / (x (2.43 x + 0.59) + 0.14)`` and back to display values (``x^(1/2.2)``).
**Atmospheric perspective**: :func:`fog_at` of :data:`.shaders.LIGHT_FS` (rational haze of ``fog_m`` times
the condition's Beer-Lambert extinction) towards the horizon colour.

Procedural materials (all at true scale, metres, from the facade coordinates ``(u_m, z_m, L_m, H_m)`` or
world ``x, y``; variation from an integer hash of the wall seed, so the same scene gives the same pixels):

* facades: the material is chosen per building from the seed (ours: 30 % brick, 30 % plaster, 15 % stone,
  15 % concrete panels, 10 % glass curtain wall on buildings over 12 m): brick 0.25 x 0.075 m courses in
  running bond with 10 mm mortar and per-brick tone; plaster with value-noise stains, vertical streaks
  under windows and rising damp near the ground; stone blocks 0.6 x 0.35 m; concrete panels 3.0 m x one
  storey with dark joints; glass curtain walls reflecting the sky (mirror of the view ray, sky gradient and
  clouds, Schlick Fresnel) behind a 1.5 m mullion grid.
* windows: per building width, spacing, height, frame colour and frame width; sills; a mullion and a
  transom; per window blinds, curtains or a dark room, with the sky reflected in the upper pane;
  ground-floor shopfronts are display windows with **depth** (interior mapping: the view ray is followed
  into a 4 m deep room whose back wall holds lit shelves), a door per bay, and a plinth.
* ground: asphalt with aggregate grain, patched repairs and wheel-track wear; paving slabs 0.5 m (sidewalks)
  with joints and per-slab tone; unpaved ground as grass or gravel by a noise mask; worn road paint;
  granite kerbs.
* sky: horizon-zenith gradient, a glow around the sun and two layers of value-noise clouds on a plane
  1.5 km up (coverage and shading from fbm); it depends on the direction only, so it is baked once per
  renderer into an equirectangular texture (:data:`SKY_TEX_W` x :data:`SKY_TEX_H`, elevations from
  :data:`SKY_LAT0` degrees up) that each frame samples.
* foliage: tree crowns whose fragments are cut out by a 3D leaf-cluster noise (alpha-tested, so branches
  of light show through) and shaded per cluster.
* shade: the baked ground shadows and contact occlusion (:mod:`.realistic`) multiply what lies under them.
"""

HASH = """
uint rhash(uvec3 p) {
    uint h = p.x * 1597334677u ^ p.y * 3812015801u ^ p.z * 2798796415u;
    h ^= h >> 15u; h *= 2246822519u; h ^= h >> 13u; h *= 3266489917u; h ^= h >> 16u;
    return h;
}
"""

NOISE = HASH + """
float h21(vec2 p, uint s) { return float(rhash(uvec3(uvec2(ivec2(floor(p))), s)) & 65535u) / 65535.0; }
float vnoise(vec2 p, uint s) {
    vec2 i = floor(p), f = fract(p);
    vec2 w = f * f * (3.0 - 2.0 * f);
    float a = h21(i, s), b = h21(i + vec2(1.0, 0.0), s), c = h21(i + vec2(0.0, 1.0), s), d = h21(i + vec2(1.0, 1.0), s);
    return mix(mix(a, b, w.x), mix(c, d, w.x), w.y);
}
float fbm3(vec2 p, uint s) {
    return (0.5 * vnoise(p, s) + 0.25 * vnoise(p * 2.03 + 17.1, s + 1u) + 0.125 * vnoise(p * 4.07 + 41.3, s + 2u)) / 0.875;
}
float h31(vec3 p, uint s) { return float(rhash(uvec3(uvec2(ivec2(floor(p.xy))), uint(int(floor(p.z)) + 4096) ^ (s * 65599u))) & 65535u) / 65535.0; }
float vnoise3(vec3 p, uint s) {
    vec3 i = floor(p), f = fract(p);
    vec3 w = f * f * (3.0 - 2.0 * f);
    float a = mix(mix(h31(i, s), h31(i + vec3(1, 0, 0), s), w.x), mix(h31(i + vec3(0, 1, 0), s), h31(i + vec3(1, 1, 0), s), w.x), w.y);
    float b = mix(mix(h31(i + vec3(0, 0, 1), s), h31(i + vec3(1, 0, 1), s), w.x), mix(h31(i + vec3(0, 1, 1), s), h31(i + vec3(1, 1, 1), s), w.x), w.y);
    return mix(a, b, w.z);
}
// antialiased line mask: 1 on a line of half-width hw around integer multiples of period in x
float gridline(float x, float period, float hw) {
    float d = abs(fract(x / period + 0.5) - 0.5) * period;
    float aa = max(fwidth(x), 1e-4);
    return 1.0 - smoothstep(hw - aa, hw + aa, d);
}
"""

TONE = """
uniform vec3 sun_dir;
uniform float ambient;
uniform float sun;
uniform vec3 sun_rgb;
uniform vec3 amb_rgb;
uniform float hemi;
uniform float exposure;
vec3 tonemap(vec3 c) {
    vec3 x = max(c, vec3(0.0));
    x = x * x * exposure;
    x = clamp((x * (2.51 * x + 0.03)) / (x * (2.43 * x + 0.59) + 0.14), 0.0, 1.0);
    return sqrt(x);
}
// vis: the share of the sun reaching the point (1 unshadowed; facades: the baked sun shadow map, .sun_shadow)
vec3 light_vis(vec3 n, float vis) {
    return amb_rgb * (ambient * (1.0 - hemi + hemi * n.z)) + sun_rgb * (sun * vis * max(dot(n, sun_dir), 0.0));
}
vec3 light_at(vec3 n) { return light_vis(n, 1.0); }
"""

SKY_COLOUR = """
uniform vec3 zenith;
uniform float overcast;
uniform float sun_glow;
uniform float sky_clear;
uniform float cloud_cover;
// sky seen along unit direction d (world): gradient, sun glow, clouds; used by the sky and by glass reflections
vec3 sky_colour(vec3 d, bool clouds) {
    float e = clamp(d.z, 0.0, 1.0);
    vec3 c = mix(horizon, zenith, e * (2.0 - e));
    vec3 oc = pow(pow(zenith, vec3(2.2)) * (1.0 + 2.0 * e) / 3.0, vec3(1.0 / 2.2));
    c = mix(c, oc, overcast);
    float sd = max(dot(d, sun_dir), 0.0);
    c += sun_rgb * (sun_glow + 0.18 * (1.0 - overcast)) * pow(sd, 12.0);
    if (clouds && d.z > 0.01) {
        vec2 p = d.xy / (d.z + 0.06) * 1.5;   // plane 1.5 km up, km
        float f = fbm3(p * 1.7, 11u) + 0.35 * vnoise(p * 9.0, 17u) - 0.17;
        float cov = smoothstep(0.66 - 0.45 * cloud_cover, 0.74 - 0.35 * cloud_cover, f);
        float shade = 0.72 + 0.28 * smoothstep(0.3, 0.9, fbm3(p * 3.1 + 5.0, 23u));
        vec3 cloud = mix(vec3(0.93, 0.94, 0.96), vec3(0.68, 0.71, 0.77), overcast) * shade;
        cloud += sun_rgb * 0.08 * pow(sd, 4.0);
        // clouds are lit by the sun: towards night they sink to a little above the sky behind them
        cloud = mix(c * (1.05 + 0.25 * shade) + 0.01, cloud, smoothstep(0.02, 0.3, 1.5 * sun * max(sun_dir.z + 0.1, 0.0)));
        c = mix(c, cloud, cov * smoothstep(0.01, 0.12, d.z) * (1.0 - 0.6 * overcast));
    }
    return c;
}
"""

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

GROUND_FS = """
#version 330
uniform vec3 horizon;
in vec3 v_albedo;
in vec3 v_world;
out vec4 f_colour;
""" + "LIGHT_FS_HERE" + NOISE + TONE + SKY_COLOUR + """
bool is(vec3 a, vec3 rgb) { return all(lessThan(abs(a - rgb / 255.0), vec3(0.002))); }
// the ground materials (vertex colour = the flat style's layer colour); GROUND_MAT k > 0 compiles material k
// alone (the renderer draws each run of one material with its own program), 0 all of them
vec3 asphalt(vec2 p, float fine) {
    float grain = h21(p * 33.0, 5u) - 0.5;
    float patches = step(0.7, vnoise(p * 0.09, 6u));
    float wear = fbm3(p * 0.35, 7u);
    vec3 a = vec3(0.29, 0.295, 0.305) * (0.82 + 0.32 * wear) * (1.0 - 0.18 * patches) * (1.0 + 0.22 * grain * fine);
    a *= 1.0 - 0.25 * smoothstep(0.72, 0.78, vnoise(p * 0.6 + 3.0, 8u));   // tar seams and oil
    // cracks: short, jagged contours of a warped noise, only in worn patches (long smooth contours read
    // as cables)
    float cn = vnoise(p * 0.9 + 0.22 * vnoise(p * 11.0, 19u), 18u) - 0.5;
    float worn = smoothstep(0.62, 0.7, vnoise(p * 0.21 + 11.0, 21u));
    return a * (1.0 - 0.25 * fine * worn * (1.0 - smoothstep(0.0, fwidth(cn), abs(cn))));
}
vec3 paving(vec2 p) {                         // slabs 0.5 m with joints
    vec2 q = p / 0.5;
    float tone = h21(q, 9u);
    vec3 a = vec3(0.63, 0.62, 0.59) * (0.8 + 0.32 * tone) * (0.9 + 0.16 * fbm3(p * 0.5, 10u));
    float joint = max(gridline(p.x, 0.5, 0.01), gridline(p.y, 0.5, 0.01));
    return mix(a, vec3(0.16, 0.16, 0.15), joint * 0.9);
}
vec3 unpaved(vec2 p, float fine) {            // unplanted ground: granite setts, gravel and compacted soil
    float m = fbm3(p * 0.06, 11u);
    float g = h21(p * 20.0, 12u) - 0.5;
    // granite setts 0.3 x 0.2 m in offset rows, dark joints
    float srow = floor(p.y / 0.2);
    float su = p.x / 0.3 + 0.5 * mod(srow, 2.0);
    vec3 setts = vec3(0.5, 0.48, 0.45) * (0.75 + 0.4 * h21(vec2(floor(su), srow), 14u)) * (1.0 + 0.3 * g * fine);
    float sj = max(gridline(p.y, 0.2, 0.012), gridline(su * 0.3, 0.3, 0.012));
    setts = mix(setts, vec3(0.2, 0.19, 0.18), sj * 0.85);
    vec3 soil = mix(vec3(0.42, 0.39, 0.34), vec3(0.5, 0.47, 0.42), vnoise(p * 0.9, 13u)) * (1.0 + 0.5 * g * fine);
    return mix(setts, soil, smoothstep(0.58, 0.66, m));
}
vec3 grass(vec2 p, float fine, float park) {  // mown lawn (OSM land cover): mottled, with worn and clover patches
    float m = fbm3(p * 0.35, 41u);
    float blade = h21(p * 45.0, 42u) - 0.5;
    vec3 c = mix(vec3(0.2, 0.27, 0.11), vec3(0.33, 0.37, 0.17), m) * (1.0 + 0.5 * blade * fine);
    c = mix(c, vec3(0.36, 0.33, 0.22), 0.6 * smoothstep(0.68, 0.8, vnoise(p * 0.5 + 3.0, 43u)));  // worn
    c *= 0.85 + 0.3 * vnoise(p * 6.0, 44u) * fine;
    if (park > 0.5) {                         // beds of shrubs and flowers in parks
        float bed = smoothstep(0.7, 0.73, vnoise(p * 0.12 + 9.0, 45u));
        vec3 shrub = vec3(0.12, 0.2, 0.08) * (0.6 + 0.8 * vnoise(p * 3.0, 46u));
        shrub = mix(shrub, vec3(0.7, 0.25, 0.3), step(0.86, h21(p * 6.0, 47u)) * fine);
        c = mix(c, shrub, bed);
    }
    return c;
}
vec3 planting(vec2 p, float fine) {           // shrub beds: leaf clumps over mulch
    float clump = vnoise(p * 1.6, 48u) * 0.6 + vnoise(p * 5.0, 49u) * 0.4;
    vec3 leaf = mix(vec3(0.1, 0.17, 0.07), vec3(0.24, 0.3, 0.12), vnoise(p * 2.5, 50u));
    return mix(vec3(0.24, 0.19, 0.14), leaf, smoothstep(0.35, 0.5, clump)) * (1.0 + 0.3 * (h21(p * 30.0, 51u) - 0.5) * fine);
}
vec3 trackbed(vec2 p, float fine) {           // embedded tram track bed: smoother, lighter concrete
    return vec3(0.44, 0.435, 0.42) * (0.88 + 0.2 * fbm3(p * 0.8, 52u)) * (1.0 + 0.14 * (h21(p * 28.0, 53u) - 0.5) * fine);
}
vec3 steel(vec2 p, vec3 a) { return a * (0.85 + 0.3 * vnoise(p * 2.0, 54u)); }  // rail heads, grooves
vec3 paint(vec2 p) {                          // road paint, worn
    float w = fbm3(p * 1.3, 15u);
    return mix(vec3(0.86, 0.86, 0.82), vec3(0.35, 0.36, 0.37), smoothstep(0.55, 0.8, w));
}
vec3 kerb(vec2 p) { return vec3(0.66, 0.65, 0.63) * (0.9 + 0.15 * h21(p * 3.0, 16u)); }
void main() {
    vec2 p = v_world.xy;
    vec3 a = v_albedo;
    float dist = length(v_world - eye);
    float fine = 1.0 - smoothstep(20.0, 60.0, dist);          // detail fades where it would alias
#if GROUND_MAT == 1
    a = asphalt(p, fine);
#elif GROUND_MAT == 2
    a = paving(p);
#elif GROUND_MAT == 3
    a = unpaved(p, fine);
#elif GROUND_MAT == 4
    a = paint(p);
#elif GROUND_MAT == 5
    a = kerb(p);
#elif GROUND_MAT == 6
    a = trackbed(p, fine);
#elif GROUND_MAT == 7
    a = steel(p, a);
#elif GROUND_MAT == 8
    a = grass(p, fine, step(81.0 / 255.0, a.r));
#elif GROUND_MAT == 9
    a = planting(p, fine);
#else
    if (is(a, vec3(72.0, 74.0, 78.0))) a = asphalt(p, fine);
    else if (is(a, vec3(168.0, 165.0, 158.0))) a = paving(p);
    else if (is(a, vec3(132.0, 128.0, 118.0))) a = unpaved(p, fine);
    else if (is(a, vec3(236.0, 236.0, 230.0))) a = paint(p);
    else if (is(a, vec3(186.0, 184.0, 178.0))) a = kerb(p);
    else if (is(a, vec3(120.0, 118.0, 112.0))) a = trackbed(p, fine);
    else if (is(a, vec3(150.0, 152.0, 156.0)) || is(a, vec3(40.0, 40.0, 42.0))) a = steel(p, a);
    else if (is(a, vec3(80.0, 110.0, 50.0)) || is(a, vec3(82.0, 112.0, 52.0))) a = grass(p, fine, step(81.0 / 255.0, a.r));
    else if (is(a, vec3(70.0, 84.0, 40.0))) a = planting(p, fine);
#endif
    vec3 n = vec3(0.0, 0.0, 1.0);
    vec3 c = a * (1.0 - 0.45 * wet) * (light_at(n) + lamp_light(v_world, n));
    vec3 v = normalize(eye - v_world);
    float fr = 0.02 + 0.98 * pow(1.0 - max(v.z, 0.0), 5.0);
    c = mix(c, mix(horizon, zenith, 0.25), wet * fr * 0.8);
    c = tonemap(c);
    f_colour = vec4(clamp(mix(horizon, c, fog_at(v_world)), 0.0, 1.0), 1.0);
}
"""

SKY_FS = """
#version 330
uniform mat3 cam_basis;
uniform vec2 tan_half;
uniform vec3 horizon;
in vec2 v_ndc;
out vec4 f_colour;
""" + NOISE + """
uniform vec3 sun_dir;
uniform vec3 sun_rgb;
uniform float sun;
""" + SKY_COLOUR + """
void main() {
    // baked once per renderer into an equirectangular texture (SKY_TEX_FS samples it): v_ndc spans
    // longitude -180..180 degrees (atan(x, y), from north) and elevation SKY_LAT0..90 degrees
    float lon = v_ndc.x * 3.14159265;
    float lat = radians(SKY_LAT0 + (v_ndc.y * 0.5 + 0.5) * (90.0 - SKY_LAT0));
    vec3 d = vec3(cos(lat) * sin(lon), cos(lat) * cos(lon), sin(lat));
    vec3 c = sky_colour(d, true);
    f_colour = vec4(clamp(mix(horizon, c, sky_clear), 0.0, 1.0), 1.0);
}
"""

# The sky drawn per frame: a lookup in the baked sky (the sky depends on the direction only)
SKY_TEX_FS = """
#version 330
uniform mat3 cam_basis;
uniform vec2 tan_half;
uniform sampler2D sky_tex;
in vec2 v_ndc;
out vec4 f_colour;
void main() {
    vec3 d = normalize(cam_basis * vec3(v_ndc.x * tan_half.x, v_ndc.y * tan_half.y, 1.0));
    float lon = atan(d.x, d.y);
    float lat = degrees(asin(clamp(d.z, -1.0, 1.0)));
    vec2 uv = vec2(lon / 6.28318531 + 0.5, (lat - SKY_LAT0) / (90.0 - SKY_LAT0));
    f_colour = vec4(texture(sky_tex, uv).rgb, 1.0);
}
"""

#: the baked sky: elevation SKY_LAT0 (degrees; the rare sky seen below the horizon takes the lowest row) to the
#: zenith, SKY_TEX_W x SKY_TEX_H texels (11.4 per degree, more than a 640 px, 90-degree view's 7.1 px)
SKY_LAT0, SKY_TEX_W, SKY_TEX_H = -30.0, 4096, 1366

FOLIAGE_FS = """
#version 330
uniform vec3 horizon;
in vec3 v_albedo;
in vec3 v_world;
in vec3 v_normal;
out vec4 f_colour;
""" + "LIGHT_FS_HERE" + NOISE + TONE + """
void main() {
    vec3 q = v_world * 2.2;
    float leaf = vnoise3(q, 31u) * 0.65 + vnoise3(q * 2.7, 32u) * 0.35;
    float rim = 1.0 - abs(dot(normalize(v_normal), normalize(eye - v_world)));
    if (leaf < 0.36 + 0.22 * rim) discard;                     // alpha cut-out: gaps between leaf clusters
    vec3 n = normalize(v_normal + 0.6 * (vec3(vnoise3(q * 1.3, 33u), vnoise3(q * 1.3, 34u), vnoise3(q * 1.3, 35u)) - 0.5));
    float occ = 0.55 + 0.45 * smoothstep(0.36, 0.8, leaf);    // inner leaves darker
    vec3 a = v_albedo * (0.75 + 0.5 * vnoise3(q * 4.0, 36u)) * occ;
    vec3 c = a * (light_at(n) + lamp_light(v_world, n));
    c = tonemap(c);
    f_colour = vec4(clamp(mix(horizon, c, fog_at(v_world)), 0.0, 1.0), 1.0);
}
"""

# Baked shade over the ground (meshes from .realistic): the vertex colour's red channel is the factor the
# ground below is multiplied by (blend ZERO, SRC_COLOR); it fades to 1 with the haze.
SHADE_FS = """
#version 330
in vec3 v_albedo;
in vec3 v_world;
out vec4 f_colour;
""" + "LIGHT_FS_HERE" + """
void main() {
    float k = mix(1.0, v_albedo.r, fog_at(v_world));
    f_colour = vec4(k, k, k, 1.0);
}
"""


#: the ground materials by the flat style's layer colour (vertex colour, 0-255): ``GROUND_MAT`` of each
GROUND_MATERIALS = {(72, 74, 78): 1, (168, 165, 158): 2, (132, 128, 118): 3, (236, 236, 230): 4, (186, 184, 178): 5,
                    (120, 118, 112): 6, (150, 152, 156): 7, (40, 40, 42): 7, (80, 110, 50): 8, (82, 112, 52): 8,
                    (70, 84, 40): 9}


def ground_material_runs(colours) -> list[tuple[int, int, int]]:
    """``(first vertex, vertex count, GROUND_MAT)`` of each run of consecutive ground triangles of one material
    (``colours``: ``(3 T, 3)`` vertex colours in 0-1; a colour outside :data:`GROUND_MATERIALS` gets 0, the
    program holding every material). Drawing the runs in order keeps the painter's order."""
    import numpy as np

    c = np.asarray(colours, dtype=np.float64)[::3]
    mat = np.zeros(len(c), np.int64)
    for rgb, k in GROUND_MATERIALS.items():   # the shader's test: every channel within 0.002 of rgb / 255
        mat[np.all(np.abs(c - np.asarray(rgb) / 255.0) < 0.002, axis=1)] = k
    if not len(mat):
        return []
    edges = np.flatnonzero(np.diff(mat)) + 1
    starts = np.concatenate([[0], edges])
    ends = np.concatenate([edges, [len(mat)]])
    return [(3 * int(a), 3 * int(b - a), int(mat[a])) for a, b in zip(starts, ends)]


def sign_fs() -> str:
    """The realistic sign fragment shader: the flat style's (:data:`.shaders.SIGN_FS`) plus see-through window
    lettering -- faces whose ``u`` is offset by 2 (:func:`.meshes.sign_meshes`) discard the dark glass around
    their letters (luminance below the letters' edge), so the shop inside shows between them."""
    from urbanarena.render.scene3d import shaders

    old = "    vec3 t = sample_aniso(v_uv);\n    vec3 c = t * (v_light"
    assert old in shaders.SIGN_FS
    new = """    bool glass = v_uv.x > 1.5;
    vec3 t = sample_aniso(glass ? v_uv - vec2(2.0, 0.0) : v_uv);
    if (glass) {   // lettering on glass: only the letters are paint
        float a = smoothstep(0.3, 0.5, dot(t, vec3(0.3, 0.55, 0.15)));
        if (a < 0.5) discard;
    }
    vec3 c = t * (v_light"""
    return shaders.SIGN_FS.replace(old, new)


def program_sources(name: str, max_lamps: int, ground_mat: int = 0, lamps: bool = True) -> tuple[str, str]:
    """``(vertex, fragment)`` source of a realistic program (``facade``, ``ground``, ``sky`` (the sky bake),
    ``sky_tex`` (the sky per frame), ``foliage``, ``shade``, ``sign``), weather variant with the lamp array of ``max_lamps``; ``ground_mat`` (the ground only): the one
    material compiled (:data:`GROUND_MATERIALS`; 0 all); ``lamps`` false: the lamp loop compiled out
    (:func:`.shaders.variant`)."""
    from urbanarena.render.scene3d import shaders

    # the ground, foliage and shade programs share the flat style's vertex shader (its weather variant:
    # v_albedo, v_world, v_normal), the sky programs its sky vertex shader
    vs, fs = {"facade": (FACADE_VS, FACADE_FS), "ground": (shaders.PLAIN_VS, GROUND_FS),
              "sky": (shaders.SKY_VS, SKY_FS), "sky_tex": (shaders.SKY_VS, SKY_TEX_FS),
              "foliage": (shaders.PLAIN_VS, FOLIAGE_FS), "shade": (shaders.PLAIN_VS, SHADE_FS),
              "sign": (shaders.SIGN_VS, sign_fs())}[name]
    fs = fs.replace("SKY_LAT0", f"{SKY_LAT0:.1f}")
    vs = vs.replace("STOREY_M0", f"{STOREY_M0:.3f}").replace("STOREY_STEP_M", f"{STOREY_STEP_M:.3f}")
    fs = fs.replace("LIGHT_FS_HERE", shaders.LIGHT_FS)
    if name == "ground":
        fs = fs.replace("#version 330\n", f"#version 330\n#define GROUND_MAT {int(ground_mat)}\n", 1)
    return shaders.variant(vs, True, max_lamps, lamps), shaders.variant(fs, True, max_lamps, lamps)


#: storey heights the facade packing encodes (:func:`.building_look.pack_facade_look`): code k >= 1 is
#: ``STOREY_M0 + STOREY_STEP_M (k - 1)`` metres, code 0 the renderer's ``floor_h_m``
STOREY_M0, STOREY_STEP_M = 2.6, 0.12

#: bumped when the realistic style's geometry (.realistic) changes pixels; shader changes are hashed
#: (renderer.realistic_identity)
REALISTIC_VERSION = "realistic-2"

#: exposure of the tone mapper and cloud cover of the sky by weather (ours; overcast skies draw the CIE
#: overcast gradient instead, see .conditions)
EXPOSURE = 1.55
CLOUD_COVER = {"clear": 0.45, "cloudy": 1.0, "rain": 1.0, "fog": 0.0}
#: the realistic style's haze distance is this share of ``RenderSettings.fog_m`` (atmospheric perspective)
HAZE_SHARE = 0.5


def style_uniforms(settings, light) -> dict:
    """Uniforms of the realistic programs on top of the condition's (``light``: :class:`~.conditions.Lighting`)."""
    fog_m = settings.fog_m * HAZE_SHARE
    return {"exposure": EXPOSURE, "cloud_cover": CLOUD_COVER.get(settings.weather, 0.45),
            "inv_fog2": 1.0 / (fog_m * fog_m)}
