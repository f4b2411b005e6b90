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

# the shared blocks and the facade program live in their own modules; their names stay importable from here
from urbanarena.render.scene3d.realistic_facade_glsl import FACADE_FS, FACADE_VS  # noqa: F401
from urbanarena.render.scene3d.realistic_glsl import HASH, NOISE, SKY_COLOUR, TONE  # noqa: F401

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
