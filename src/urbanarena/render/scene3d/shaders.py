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
float light_of(vec3 n) {
    return ambient * (0.8 + 0.2 * n.z) + sun * max(dot(n, sun_dir), 0.0);
}
float fog_of(vec3 p) {
    vec3 d = p - eye;
    return 1.0 / (1.0 + dot(d, d) * inv_fog2);
}
"""

PLAIN_VS = """
#version 330
uniform mat4 mvp;
in vec3 in_pos;
in vec3 in_normal;
in vec3 in_colour;
out vec3 v_colour;
out float v_fog;
""" + LIGHT_VS + """
void main() {
    v_colour = in_colour * light_of(normalize(in_normal));
    v_fog = fog_of(in_pos);
    gl_Position = mvp * vec4(in_pos, 1.0);
}
"""

PLAIN_FS = """
#version 330
uniform vec3 horizon;
in vec3 v_colour;
in float v_fog;
out vec4 f_colour;
void main() {
    f_colour = vec4(clamp(mix(horizon, v_colour, v_fog), 0.0, 1.0), 1.0);
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
""" + LIGHT_VS + """
void main() {
    v_colour = in_colour * light_of(normalize(in_normal));
    v_world = in_pos;
    gl_Position = mvp * vec4(in_pos, 1.0);
}
"""

GROUND_FS = """
#version 330
uniform vec3 horizon;
uniform vec3 eye;
uniform float inv_fog2;
in vec3 v_colour;
in vec3 v_world;
out vec4 f_colour;
void main() {
    vec3 d = v_world - eye;
    float f = 1.0 / (1.0 + dot(d, d) * inv_fog2);
    f_colour = vec4(clamp(mix(horizon, v_colour, f), 0.0, 1.0), 1.0);
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
out float v_light;
out float v_fog;
out vec4 v_facade;
flat out float v_shop;
""" + LIGHT_VS + """
void main() {
    v_colour = in_colour;
    v_light = light_of(normalize(in_normal));
    v_fog = fog_of(in_pos);
    v_facade = in_facade;
    v_shop = in_shop;
    gl_Position = mvp * vec4(in_pos, 1.0);
}
"""

FACADE_FS = """
#version 330
in vec3 v_colour;
in float v_light;
in float v_fog;
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
    f_colour = vec4(clamp(mix(horizon, albedo * v_light, v_fog), 0.0, 1.0), 1.0);
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
out float v_light;
out float v_fog;
""" + LIGHT_VS + """
void main() {
    v_uv = in_uv;
    v_light = min(sign_ambient + 0.25 * sun * max(dot(normalize(in_normal), sun_dir), 0.0), 1.05);
    v_fog = fog_of(in_pos);
    gl_Position = mvp * vec4(in_pos, 1.0);
}
"""

SIGN_FS = """
#version 330
uniform sampler2D atlas;
uniform vec3 horizon;
in vec2 v_uv;
in float v_light;
in float v_fog;
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
    f_colour = vec4(clamp(mix(horizon, sample_aniso(v_uv) * v_light, v_fog), 0.0, 1.0), 1.0);
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
in vec2 v_ndc;
out vec4 f_colour;
void main() {
    vec3 d = cam_basis * vec3(v_ndc.x * tan_half.x, v_ndc.y * tan_half.y, 1.0);
    float e = clamp(d.z * inversesqrt(dot(d, d)), 0.0, 1.0);  // sine of the elevation
    vec3 c = mix(horizon, zenith, e * (2.0 - e));
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
