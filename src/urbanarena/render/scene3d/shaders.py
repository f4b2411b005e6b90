"""GLSL 3.30 shaders of the scene renderer.

Lighting: a sun (directional, ``sun_dir`` pointing *towards* the sun) plus
hemisphere ambient, evaluated per vertex (all faces are flat, tree crowns are
smooth-shaded)::

    light = ambient * (0.8 + 0.2 * n.z) + sun * max(dot(n, sun_dir), 0)

Distance fog towards the horizon sky colour uses the rational falloff
``f = 1 / (1 + d^2 / fog_m^2)`` of the Euclidean distance ``d`` to the eye
(rotation invariant, so cube faces agree at their seams), ``mix(horizon, c, f)``;
per vertex for objects and facades (their triangles are short next to
``fog_m``), per fragment for the ground (its triangles are long).
Sign faces are lit more evenly (``sign_ambient``) like backlit box signs so
names stay legible on walls facing away from the sun; their texture is sampled
with a hand-made anisotropic filter (up to 4 trilinear taps along the major
axis of the pixel footprint, level of detail from the major axis / taps),
because the driver's anisotropic filtering is ~50x slower on llvmpipe.

Facade windows are procedural (fragment shader), from the wall coordinates
``(u_m, z_m, wall_length_m, height_m)``: a ground floor of ``ground_h`` metres
(shopfront glazing with mullions on buildings carrying POIs, ordinary windows
otherwise), then floors of ``floor_h`` metres with windows 1.2 m wide and
1.5 m tall every 2.6 m, centred on the wall; no windows within 0.6 m of the
roof line (a darker cornice band) or on walls shorter than 2.6 m. The window
glass tone varies per window through an integer hash of (window, floor, wall
seed) (identical on every GL implementation that follows the spec for ``uint``
arithmetic). The per-vertex ``shop`` attribute (flat) packs ``shop + 2 * seed``
with an integer wall seed below 2**20, exact in float32.
"""

LIGHT_VS = """
uniform vec3 sun_dir;
uniform float ambient;
uniform float sun;
uniform vec3 eye;
uniform float inv_fog2;
#ifdef WEATHER
uniform vec3 sun_rgb;
uniform vec3 amb_rgb;
uniform float hemi;
vec3 light_of(vec3 n) {
    return amb_rgb * (ambient * (1.0 - hemi + hemi * n.z)) + sun_rgb * (sun * max(dot(n, sun_dir), 0.0));
}
#else
float light_of(vec3 n) {
    return ambient * (0.8 + 0.2 * n.z) + sun * max(dot(n, sun_dir), 0.0);
}
float fog_of(vec3 p) {
    vec3 d = p - eye;
    return 1.0 / (1.0 + dot(d, d) * inv_fog2);
}
#endif
"""

# Weather variant, fragment side (compiled only with ``#define WEATHER``; conditions.py): per-fragment
# extinction (exponential fog over the base haze), street-lamp point lights, wet darkening.
LIGHT_FS = """
#ifdef WEATHER
uniform vec3 eye;
uniform float inv_fog2;
uniform float sigma;
uniform vec4 lamps[MAX_LAMPS];  // xyz: light centre (local metres), w: horizontal distance from the eye (ascending)
uniform int n_lamps;
uniform vec3 lamp_rgb;          // colour * I0
uniform float lamp_range;
uniform float wet;
float fog_at(vec3 p) {
    vec3 d = p - eye;
    float dd = dot(d, d);
    return exp(-sigma * sqrt(dd)) / (1.0 + dd * inv_fog2);
}
// street-light distribution of the angle g from the nadir: I0 min(1 / cos^3 g, 2.5), zero beyond 85 deg
float lamp_intensity(float cos_g) {
    float c = max(cos_g, 0.05);
    float i = min(1.0 / (c * c * c), 2.5);
    return i * smoothstep(0.1736, 0.5, cos_g);  // cos 80 deg, cos 60 deg
}
vec3 lamp_light(vec3 p, vec3 n) {
#ifdef NO_LAMPS
    return vec3(0.0);   // a condition without street lights (the loop would add nothing)
#else
    vec3 acc = vec3(0.0);
    float r2 = lamp_range * lamp_range;
    // lamps are sorted by horizontal distance w from the eye; one whose w differs from the fragment's by
    // more than the reach (plus a metre of margin) is out of reach (triangle inequality), so the loop starts at
    // the first lamp not too near and stops past the far ones, without changing any sum
    float dp = length(p.xy - eye.xy);
    float w_lo = dp - lamp_range - 1.0, w_hi = dp + lamp_range + 1.0;
    int first = 0, last = n_lamps;   // binary search: the first lamp with w >= w_lo
    while (first < last) {
        int mid = (first + last) / 2;
        if (lamps[mid].w < w_lo) first = mid + 1; else last = mid;
    }
    for (int i = first; i < n_lamps; i++) {
        if (lamps[i].w > w_hi) break;
        vec3 L = lamps[i].xyz - p;
        float d2 = dot(L, L);
        if (d2 >= r2) continue;
        float inv_d = inversesqrt(max(d2, 1e-4));
        vec3 l = L * inv_d;
        float cosi = dot(n, l);
        if (cosi <= 0.0) continue;
        float q = d2 / r2;
        float win = (1.0 - q * q);
        acc += vec3(lamp_intensity(l.z) * cosi * win * win / max(d2, 0.25));
    }
    return lamp_rgb * acc;
#endif
}
#endif
"""

PLAIN_VS = """
#version 330
uniform mat4 mvp;
in vec3 in_pos;
in vec3 in_normal;
in vec3 in_colour;
out vec3 v_colour;
#ifdef WEATHER
out vec3 v_albedo;
out vec3 v_world;
out vec3 v_normal;
#else
out float v_fog;
#endif
""" + LIGHT_VS + """
void main() {
#ifdef WEATHER
    vec3 n = normalize(in_normal);
    v_colour = light_of(n);
    v_albedo = in_colour;
    v_world = in_pos;
    v_normal = n;
#else
    v_colour = in_colour * light_of(normalize(in_normal));
    v_fog = fog_of(in_pos);
#endif
    gl_Position = mvp * vec4(in_pos, 1.0);
}
"""

PLAIN_FS = """
#version 330
uniform vec3 horizon;
in vec3 v_colour;
#ifdef WEATHER
in vec3 v_albedo;
in vec3 v_world;
in vec3 v_normal;
uniform vec3 lamp_glow;     // emission of lamp heads (0 by day)
uniform vec3 display_glow;  // emission of vending-machine displays
""" + LIGHT_FS + """
#else
in float v_fog;
#endif
out vec4 f_colour;
void main() {
#ifdef WEATHER
    vec3 n = normalize(v_normal);
    vec3 c = v_albedo * (1.0 - 0.2 * wet) * (v_colour + lamp_light(v_world, n));
    // emissive materials by colour key (meshes.LAMP_HEAD_RGB, meshes.DISPLAY_RGB)
    if (all(lessThan(abs(v_albedo - vec3(250.0, 238.0, 190.0) / 255.0), vec3(0.002)))) c = max(c, lamp_glow);
    if (all(lessThan(abs(v_albedo - vec3(235.0, 240.0, 245.0) / 255.0), vec3(0.002)))) c = max(c, display_glow);
    f_colour = vec4(clamp(mix(horizon, c, fog_at(v_world)), 0.0, 1.0), 1.0);
#else
    f_colour = vec4(clamp(mix(horizon, v_colour, v_fog), 0.0, 1.0), 1.0);
#endif
}
"""

GROUND_VS = """
#version 330
uniform mat4 mvp;
in vec3 in_pos;
in vec3 in_normal;
in vec3 in_colour;
out vec3 v_colour;
out vec3 v_world;
#ifdef WEATHER
out vec3 v_albedo;
#endif
""" + LIGHT_VS + """
void main() {
#ifdef WEATHER
    v_colour = light_of(normalize(in_normal));
    v_albedo = in_colour;
#else
    v_colour = in_colour * light_of(normalize(in_normal));
#endif
    v_world = in_pos;
    gl_Position = mvp * vec4(in_pos, 1.0);
}
"""

GROUND_FS = """
#version 330
uniform vec3 horizon;
#ifdef WEATHER
uniform vec3 zenith;
in vec3 v_albedo;
""" + LIGHT_FS + """
#else
uniform vec3 eye;
uniform float inv_fog2;
#endif
in vec3 v_colour;
in vec3 v_world;
out vec4 f_colour;
void main() {
#ifdef WEATHER
    // wet ground: darker albedo plus the sky mirrored with Schlick's Fresnel term, F0 = 0.02 (water)
    vec3 c = v_albedo * (1.0 - 0.45 * wet) * (v_colour + lamp_light(v_world, vec3(0.0, 0.0, 1.0)));
    vec3 v = normalize(eye - v_world);
    float fr = 0.02 + 0.98 * pow(1.0 - max(v.z, 0.0), 5.0);
    c = mix(c, mix(horizon, zenith, 0.25), wet * fr * 0.8);
    f_colour = vec4(clamp(mix(horizon, c, fog_at(v_world)), 0.0, 1.0), 1.0);
#else
    vec3 d = v_world - eye;
    float f = 1.0 / (1.0 + dot(d, d) * inv_fog2);
    f_colour = vec4(clamp(mix(horizon, v_colour, f), 0.0, 1.0), 1.0);
#endif
}
"""

FACADE_VS = """
#version 330
uniform mat4 mvp;
in vec3 in_pos;
in vec3 in_normal;
in vec3 in_colour;
in vec4 in_facade;
in float in_shop;
out vec3 v_colour;
#ifdef WEATHER
out vec3 v_light;
out vec3 v_world;
out vec3 v_normal;
#else
out float v_light;
out float v_fog;
#endif
out vec4 v_facade;
flat out float v_shop;
""" + LIGHT_VS + """
void main() {
    v_colour = in_colour;
    v_light = light_of(normalize(in_normal));
#ifdef WEATHER
    v_world = in_pos;
    v_normal = normalize(in_normal);
#else
    v_fog = fog_of(in_pos);
#endif
    v_facade = in_facade;
    v_shop = in_shop;
    gl_Position = mvp * vec4(in_pos, 1.0);
}
"""

FACADE_FS = """
#version 330
in vec3 v_colour;
#ifdef WEATHER
in vec3 v_light;
in vec3 v_world;
in vec3 v_normal;
uniform float window_lit;   // fraction of upper-floor windows lit
uniform float shop_lit;     // fraction of shop windows lit
uniform vec3 window_glow;   // emission of a lit window
""" + LIGHT_FS + """
#else
in float v_light;
in float v_fog;
#endif
in vec4 v_facade;
flat in float v_shop;
out vec4 f_colour;
uniform float floor_h;
uniform float ground_h;
uniform vec3 horizon;
uint ihash(uint a, uint b, uint c) {
    uint h = a * 73856093u ^ b * 19349663u ^ c * 83492791u;
    h ^= h >> 13u; h *= 1274126177u; h ^= h >> 16u;
    return h;
}
// 0 = wall, 1 = glass, 2 = frame; idx = window number along the wall
int window_at(float u, float L, float lv, float bottom, float top, float spacing, float width, out float idx) {
    idx = 0.0;
    if (lv < bottom - 0.08 || lv > top + 0.08) return 0;
    float n = floor((L - 0.6) / spacing);
    if (n < 1.0) return 0;
    float margin = 0.5 * (L - n * spacing);
    float local = u - margin;
    idx = floor(local / spacing);
    if (idx < 0.0 || idx >= n) return 0;
    float pos = local - idx * spacing;
    float a = 0.5 * (spacing - width);
    if (pos < a - 0.08 || pos > a + width + 0.08) return 0;
    if (pos < a || pos > a + width || lv < bottom || lv > top) return 2;
    return 1;
}
void main() {
    float u = v_facade.x, z = v_facade.y, L = v_facade.z, H = v_facade.w;
    float shop = mod(v_shop, 2.0);
    uint seed = uint(floor(v_shop / 2.0));
    vec3 albedo = v_colour;
    int kind = 0;
    float idx = 0.0;
    uint fi = 0u;
    if (z > H - 0.6) {
        albedo *= 0.82;  // cornice band
    } else if (z < ground_h && H > ground_h + 1.0) {
        if (shop > 0.5) {
            // shopfront: glazing 0.45..2.75 m, mullions every 2.5 m, solid 0.4 m at wall ends
            if (z > 0.45 && z < 2.75 && u > 0.4 && u < L - 0.4) {
                float m = mod(u - 0.4, 2.5);
                kind = (m < 0.18) ? 2 : 1;
                idx = floor((u - 0.4) / 2.5);
            }
            if (z <= 0.45) albedo *= 0.7;  // plinth
        } else {
            kind = window_at(u, L, z, 1.0, 2.4, 2.6, 1.2, idx);
        }
    } else {
        float g = (H > ground_h + 1.0) ? ground_h : 0.0;
        float k = floor((z - g) / floor_h);
        float lv = z - g - k * floor_h;
        if (g + (k + 1.0) * floor_h <= H - 0.5 + 1e-3) {
            kind = window_at(u, L, lv, 0.85, 2.35, 2.6, 1.2, idx);
            fi = uint(k) + 1u;
        }
    }
    if (kind == 1) {
        uint h = ihash(uint(idx), fi, seed);
        float t = float(h & 255u) / 255.0;
        albedo = mix(vec3(0.16, 0.2, 0.26), vec3(0.42, 0.5, 0.58), t * t);
    } else if (kind == 2) {
        albedo = vec3(0.9, 0.9, 0.87);
    }
#ifdef WEATHER
    vec3 c = albedo * (1.0 - 0.2 * wet) * (v_light + lamp_light(v_world, normalize(v_normal)));
    if (kind == 1) {
        float lit = (fi == 0u && shop > 0.5) ? shop_lit : window_lit;
        uint h2 = ihash(uint(idx) + 7919u, fi + 104729u, seed ^ 2654435769u);
        if (float(h2 & 1023u) / 1024.0 < lit) c = max(c, window_glow * (0.7 + 0.3 * float((h2 >> 10u) & 255u) / 255.0));
    }
    f_colour = vec4(clamp(mix(horizon, c, fog_at(v_world)), 0.0, 1.0), 1.0);
#else
    f_colour = vec4(clamp(mix(horizon, albedo * v_light, v_fog), 0.0, 1.0), 1.0);
#endif
}
"""

SIGN_VS = """
#version 330
uniform mat4 mvp;
uniform float sign_ambient;
in vec3 in_pos;
in vec3 in_normal;
in vec2 in_uv;
out vec2 v_uv;
#ifdef WEATHER
in float in_feature;   // the sign's feature index (meshes): which signs are lit
flat out uint v_sign;
out vec3 v_light;
out vec3 v_world;
out vec3 v_normal;
#else
out float v_light;
out float v_fog;
#endif
""" + LIGHT_VS + """
void main() {
    v_uv = in_uv;
#ifdef WEATHER
    v_sign = uint(in_feature + 0.5);
    v_light = min(sign_ambient * amb_rgb + 0.25 * sun * sun_rgb * max(dot(normalize(in_normal), sun_dir), 0.0),
                  vec3(1.05));
    v_world = in_pos;
    v_normal = normalize(in_normal);
#else
    v_light = min(sign_ambient + 0.25 * sun * max(dot(normalize(in_normal), sun_dir), 0.0), 1.05);
    v_fog = fog_of(in_pos);
#endif
    gl_Position = mvp * vec4(in_pos, 1.0);
}
"""

SIGN_FS = """
#version 330
uniform sampler2D atlas;
uniform vec3 horizon;
in vec2 v_uv;
#ifdef WEATHER
in vec3 v_light;
in vec3 v_world;
in vec3 v_normal;
flat in uint v_sign;
uniform vec3 sign_glow;    // light-box emission (colour * strength)
uniform float sign_floor;  // fraction of the light the dark parts let through
uniform float sign_lit;    // fraction of signs lit
bool sign_is_lit(uint k) {
    uint h = k * 2654435761u ^ 1013904223u;
    h ^= h >> 15u; h *= 2246822519u; h ^= h >> 13u;
    return float(h & 1023u) / 1024.0 < sign_lit;
}
""" + LIGHT_FS + """
#else
in float v_light;
in float v_fog;
#endif
out vec4 f_colour;
// Anisotropic filtering by hand: up to 4 trilinear taps along the footprint's major axis.
// (Mesa llvmpipe's built-in anisotropic filtering costs ~50x more.)
vec3 sample_aniso(vec2 uv) {
    vec2 size = vec2(textureSize(atlas, 0));
    vec2 dx = dFdx(uv) * size, dy = dFdy(uv) * size;
    float lx = length(dx), ly = length(dy);
    float lmaj = max(lx, ly), lmin = max(min(lx, ly), 1e-6);
    vec2 major = (lx >= ly ? dFdx(uv) : dFdy(uv));
    float n = clamp(ceil(lmaj / lmin), 1.0, 4.0);
    float lod = log2(max(lmaj / n, 1e-6));
    vec3 acc = vec3(0.0);
    for (int i = 0; i < 4; i++) {
        if (float(i) >= n) break;
        acc += textureLod(atlas, uv + major * ((float(i) + 0.5) / n - 0.5), lod).rgb;
    }
    return acc / n;
}
void main() {
#ifdef WEATHER
    vec3 t = sample_aniso(v_uv);
    vec3 c = t * (v_light + lamp_light(v_world, normalize(v_normal)));
    if (sign_is_lit(v_sign)) c += sign_glow * (sign_floor + (1.0 - sign_floor) * t);
    f_colour = vec4(clamp(mix(horizon, c, fog_at(v_world)), 0.0, 1.0), 1.0);
#else
    f_colour = vec4(clamp(mix(horizon, sample_aniso(v_uv) * v_light, v_fog), 0.0, 1.0), 1.0);
#endif
}
"""

SKY_VS = """
#version 330
in vec2 in_ndc;
out vec2 v_ndc;
void main() {
    v_ndc = in_ndc;
    gl_Position = vec4(in_ndc, 1.0, 1.0);  // at the far plane: drawn last, only where nothing else was
}
"""

SKY_FS = """
#version 330
uniform mat3 cam_basis;   // columns: right, up, forward (world)
uniform vec2 tan_half;    // tan(hfov/2), tan(vfov/2)
uniform vec3 horizon;
uniform vec3 zenith;
#ifdef WEATHER
uniform float overcast;   // 1: CIE overcast gradient
uniform vec3 sun_dir;
uniform vec3 sun_rgb;
uniform float sun_glow;
uniform float sky_clear;  // how much of the sky shows through the fog
#endif
in vec2 v_ndc;
out vec4 f_colour;
void main() {
    vec3 d = cam_basis * vec3(v_ndc.x * tan_half.x, v_ndc.y * tan_half.y, 1.0);
    float e = clamp(d.z * inversesqrt(dot(d, d)), 0.0, 1.0);  // sine of the elevation
    vec3 c = mix(horizon, zenith, e * (2.0 - e));
#ifdef WEATHER
    // CIE standard overcast sky: L = Lz (1 + 2 sin e) / 3 in linear light
    vec3 oc = pow(pow(zenith, vec3(2.2)) * (1.0 + 2.0 * e) / 3.0, vec3(1.0 / 2.2));
    c = mix(c, oc, overcast);
    c += sun_rgb * sun_glow * pow(max(dot(normalize(d), sun_dir), 0.0), 12.0);
    c = clamp(mix(horizon, c, sky_clear), 0.0, 1.0);
#endif
    f_colour = vec4(c, 1.0);
}
"""

# ID pass (urbanarena.render.scene3d.visibility): the same positions through the same ``mvp`` as the
# lit programs, each fragment written as its feature index k (0 = none) in flat colour, 24 bits:
# (k & 255, (k >> 8) & 255, (k >> 16) & 255) / 255 -- exact in an 8-bit UNORM target (k / 255 rounds
# back to k). No lighting, fog, texture or blending.
ID_VS = """
#version 330
uniform mat4 mvp;
in vec3 in_pos;
in float in_feature;
flat out uint v_id;
void main() {
    v_id = uint(in_feature + 0.5);
    gl_Position = mvp * vec4(in_pos, 1.0);
}
"""

ID_FS = """
#version 330
flat in uint v_id;
out vec4 f_colour;
void main() {
    f_colour = vec4(float(v_id & 255u), float((v_id >> 8u) & 255u), float((v_id >> 16u) & 255u), 255.0) / 255.0;
}
"""


# Rain streaks (conditions.py): one full-screen pass per layer of drops at ``layer_m`` from the eye, blended
# over the image and depth-tested at that distance (gl_FragDepth), so walls nearer than the layer hide it.
# Streaks live on a grid in world directions (azimuth x elevation; ``cells`` columns around the horizon), so
# every cube face of a panorama and a direct view agree. Each cell holds a streak with probability
# ``density`` at a hashed position (integer hash of cell, layer and ``seed``): ``len_rad`` long, slanted by the
# wind, ``width_rad`` wide, drawn with its coverage of the pixel (box filter of the pixel's angular size).
RAIN_FS = """
#version 330
uniform mat3 cam_basis;
uniform vec2 tan_half;
uniform float width_px;
uniform float layer_m;
uniform float cells;
uniform float len_rad;
uniform float width_rad;
uniform float density;
uniform float slant;
uniform uint seed;
uniform vec3 streak_rgb;
uniform float alpha;
uniform vec2 depth_ab;   // projection P[2][2], P[2][3]
in vec2 v_ndc;
out vec4 f_colour;
uint ihash(uint a, uint b, uint c) {
    uint h = a * 73856093u ^ b * 19349663u ^ c * 83492791u;
    h ^= h >> 13u; h *= 1274126177u; h ^= h >> 16u;
    return h;
}
void main() {
    vec3 cam = vec3(v_ndc.x * tan_half.x, v_ndc.y * tan_half.y, 1.0);
    float inv_len = inversesqrt(dot(cam, cam));
    vec3 dn = (cam_basis * cam) * inv_len;
    float az = atan(dn.x, dn.y);                 // compass azimuth, radians
    float el = asin(clamp(dn.z, -1.0, 1.0));
    float cw = 6.28318530718 / cells;            // cell width, radians of azimuth
    float ch = 2.0 * len_rad;                    // cell height, radians of elevation
    float u = (az + 3.14159265359) / cw + slant * el / cw;
    float v = el / ch;
    vec2 cell = floor(vec2(u, v));
    vec2 f = vec2(u, v) - cell;
    uint cx = uint(mod(cell.x, cells));
    uint h = ihash(cx, uint(int(cell.y) + 65536), seed);
    if (float(h & 1023u) / 1024.0 >= density) discard;
    float x0 = 0.15 + 0.7 * float((h >> 10u) & 255u) / 255.0;
    float y0 = 0.45 * float((h >> 18u) & 255u) / 255.0;
    float pix = 2.0 * tan_half.x / width_px * inv_len * inv_len;   // angular size of this pixel
    float dx = abs(f.x - x0) * cw * cos(el);                     // angular distance to the streak axis
    float cover = clamp((0.5 * (width_rad + pix) - dx) / pix, 0.0, 1.0) * min(width_rad / pix, 1.0);
    float along = (f.y - y0) * ch / len_rad;
    cover *= smoothstep(0.0, 0.15, along) * (1.0 - smoothstep(0.85, 1.0, along));
    cover *= 1.0 - smoothstep(0.7, 1.2, abs(el));
    if (cover <= 0.0) discard;
    float z_eye = -layer_m * inv_len;
    gl_FragDepth = 0.5 * (depth_ab.x * z_eye + depth_ab.y) / (-z_eye) + 0.5;
    f_colour = vec4(streak_rgb, alpha * cover);
}
"""


def variant(source: str, weather: bool, max_lamps: int = 48, lamps: bool = True) -> str:
    """``source`` as compiled: unchanged for the clear day (``weather`` false: the preprocessor drops every
    ``WEATHER`` block, so those programs are the original ones), else with ``#define WEATHER`` and the lamp
    array size after the ``#version`` line; ``lamps`` false (a condition whose street lamps are off) also defines
    ``NO_LAMPS``, which compiles the lamp loop out (it would add nothing: the same pixels, less work)."""
    if not weather:
        return source
    head, sep, rest = source.partition("#version 330\n")
    no_lamps = "" if lamps else "#define NO_LAMPS 1\n"
    return f"{head}{sep}#define WEATHER 1\n#define MAX_LAMPS {int(max_lamps)}\n{no_lamps}{rest}"
