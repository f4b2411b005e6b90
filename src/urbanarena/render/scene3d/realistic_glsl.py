"""GLSL building blocks that the ``realistic`` programs (:mod:`.realistic_shaders`) and the photo style's
patches share: the integer hash ``rhash`` (:data:`HASH`), value noise and fbm (:data:`NOISE`), exposure and the
ACES-fit tone mapper (:data:`TONE`) and the horizon-zenith sky colour (:data:`SKY_COLOUR`). Plain source strings
concatenated into the programs, so moving them here changed no pixel."""

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
