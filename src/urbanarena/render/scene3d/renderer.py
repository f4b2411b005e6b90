"""Render a :class:`~urbanarena.render.scene3d.scene.Scene`: perspective views and equirectangular panoramas.

Camera conventions are those of :mod:`urbanarena.render.views` (and of the
environment): pose ``(x_m, y_m)`` in the city's local frame, eye
``eye_height_m`` above the ground, ``yaw_deg`` a compass bearing (clockwise
from true north), ``pitch_deg`` up positive, no roll; pinhole with square
pixels whose horizontal field of view ``hfov_deg`` spans the outer edges of the
``width`` pixels, so pixel ``(u, v)`` (integers at pixel centres) sees the ray
``((u - (W-1)/2) / f, -(v - (H-1)/2) / f, 1)`` in camera axes (right, up,
forward) with ``f = (W/2) / tan(hfov/2)`` — exactly the ray
:class:`~urbanarena.render.views.Camera` gives that pixel. (OpenGL's
normalised device coordinates put pixel centres at ``(2u + 1)/W - 1``, which
is the same ray.) Images are RGB ``uint8`` ``(H, W, 3)``, row 0 at the top.

Panoramas
---------
A panorama is rendered as six 90-degree cube faces (``S x S`` pixels with
``S = ceil(W / pi)`` so that the face resolution matches the panorama's at the
horizon, plus a ``pad``-pixel border rendered with a slightly wider field of
view so bilinear sampling never crosses a face edge) and resampled with
``cv2.remap`` to an equirectangular ``W x W/2`` image following
:mod:`urbanarena.world.imagery`: column ``i`` (centre ``i + 0.5``) looks at
compass bearing ``centre_bearing_deg + 360 (i + 0.5) / W - 180``, row ``j``
at elevation ``90 - 180 (j + 0.5) / H`` degrees. The cube is turned to
``centre_bearing_deg`` (faces at ``centre + 0/90/180/270`` degrees, up, down),
so the remap grids are the same for every node and cached once per size.
So a view cut from the panorama with :func:`urbanarena.render.views.compass_view`
(``heading_deg = centre_bearing_deg``) matches a direct :meth:`SceneRenderer.render_view`
at the same pose up to resampling.

Determinism: the same scene, settings, size and pose give identical bytes on
the same GL implementation (Mesa llvmpipe's rasteriser and our CPU remap are
deterministic). Different drivers (a GPU) may differ in the last bits of
filtering and anti-aliasing; :meth:`SceneRenderer.identity` names the driver so
caches and frozen suites can tell.

Attribution: :meth:`render_panorama` writes the scene's attribution (e.g.
"© OpenStreetMap contributors") in a band along the bottom rows of the
panorama — the nadir, which views at ordinary pitches never show — so every
panorama file carries it; :meth:`render_view` adds it only with
``attribution=True`` (images shown to people).

The settings are in :mod:`.render_settings`, the camera and cube-map geometry in :mod:`.cubemap`, frustum culling in
:mod:`.tiles` and the cache identity in :mod:`.render_identity` (re-exported here).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

import cv2
import numpy as np

from urbanarena.render.scene3d.attribution import stamp_attribution, stamp_panorama_attribution
from urbanarena.render.scene3d import photo_textures
from urbanarena.render.scene3d.context import current, free_when_collected, gl_context
from urbanarena.render.scene3d.dynamic import draw_dynamic
from urbanarena.render.scene3d.photo_model_textures import MODEL_TEX_UNIT
from urbanarena.render.scene3d.population_draw import models_program
from urbanarena.render.scene3d.framebuffers import free_gl, view_framebuffers
from urbanarena.render.scene3d.id_pass import IdPassMixin
from urbanarena.render.scene3d.meshes import SceneMeshes, build_scene_meshes
from urbanarena.render.scene3d.photo_content import PhotoContent, add_photo_content, near_arrays
from urbanarena.render.scene3d.program_uniforms import set_settings_uniforms, set_style_uniforms
from urbanarena.render.scene3d.scene import Scene
from urbanarena.render.scene3d import shaders
from urbanarena.render.scene3d.weather import WeatherPass
from urbanarena.render.views import Camera
# re-exported: these were defined here (split into settings, cube-map geometry, culling and identity modules)
from urbanarena.render.scene3d.cubemap import (  # noqa: F401
    CUBE_FACES, cube_face_size, equirect_maps as _equirect_maps, projection_matrix, view_matrix,
)
from urbanarena.render.scene3d.render_identity import (  # noqa: F401
    RENDERER_VERSION, realistic_identity, render_identity,
)
from urbanarena.render.scene3d.render_settings import RenderSettings  # noqa: F401
from urbanarena.render.scene3d.tiles import (  # noqa: F401
    TILE_M, IndirectDraws, TiledVertexArray as _Tiled, frustum_planes as _frustum_planes,
)


DEFAULT_EYE_HEIGHT_M = 1.7
DEFAULT_PANO_WIDTH = 2048


def _check_view_args(pitch_deg: float, hfov_deg: float, width: int, height: int) -> None:
    if not (0.0 < hfov_deg < 180.0):
        raise ValueError(f"hfov_deg must be in (0, 180), got {hfov_deg}")
    if not (-90.0 <= pitch_deg <= 90.0):
        raise ValueError(f"pitch_deg must be in [-90, 90], got {pitch_deg}")
    if width < 1 or height < 1 or width > 8192 or height > 8192:
        raise ValueError(f"size out of range: {width}x{height}")


class SceneRenderer(IdPassMixin):
    """Renders one scene with a shared headless GL context.

    Args:
        scene: the scene.
        settings: :class:`RenderSettings`.
        meshes: prebuilt :class:`SceneMeshes` (default: built here).
    Raises:
        RendererUnavailableError: no OpenGL context here (see :mod:`.context`).
    """

    def __init__(self, scene: Scene, settings: RenderSettings | None = None, meshes: SceneMeshes | None = None):
        self.ctx = gl_context()  # raises RendererUnavailableError with the reason
        import moderngl

        self._mgl = moderngl
        self.scene = scene
        self.settings = settings or RenderSettings()
        if meshes is None:
            light = None
            if self.settings.is_realistic:
                from urbanarena.render.scene3d.conditions import lighting

                light = lighting(self.settings)
            meshes = build_scene_meshes(scene, px_per_m=self.settings.sign_px_per_m,
                                        style="realistic" if self.settings.is_realistic else self.settings.style,
                                        light=light, floor_h_m=self.settings.floor_h_m,
                                        ground_h_m=self.settings.ground_h_m)
        #: the meshes as built for the scene, before the style added its own content (a photo renderer's
        #: :attr:`meshes` hold its trees, clutter and wires): what another renderer of the scene may reuse
        self.scene_meshes = meshes
        self.meshes = meshes
        self._lock = threading.RLock()
        self._fbos: OrderedDict[tuple[int, int], tuple] = OrderedDict()
        self._resources: list = []
        free_when_collected(self, free_gl, self._fbos, self._resources)
        self._id_pass: tuple | None = None  # built on first render_ids
        self._scene_hash = scene.content_hash()
        with current(self.ctx):
            self._build_gl()

    # --------------------------------------------------------------- setup
    def _keep(self, obj):
        self._resources.append(obj)
        return obj

    def _build_gl(self) -> None:
        ctx = self.ctx
        real = self.settings.is_realistic
        # weather / time-of-day shader variant (.conditions); the realistic style always uses it (.styles)
        wx = not self.settings.is_clear_day or real
        from urbanarena.render.scene3d.conditions import MAX_LAMPS, lighting

        lamps = lighting(self.settings).lamps > 0  # street lamps on (dusk, night): the lamp loop is compiled in

        from urbanarena.render.scene3d import photo_atmosphere

        # photo style: haze, sky, wet ground and skyline of .photo_atmosphere
        self._photo_air = photo_atmosphere if self.settings.style == "photo" and photo_atmosphere.ENABLED else None
        self._ground_box = photo_atmosphere.ground_box(self.scene) if self._photo_air else None
        beta = photo_atmosphere.haze_beta_per_m(self.settings.weather)   # photo: a clear sky's air is clear
        air0 = ((lambda src, name="": self._photo_air.patch_source(src, name, beta)) if self._photo_air
                else (lambda src, name="": src))
        # photo style: the HDRI sky and image-based ambient light of .photo_sky (None without the package)
        self._photo_sky = None
        if self._photo_air is not None:
            from urbanarena.render.scene3d import photo_sky

            self._photo_sky = photo_sky.sky_for(self.settings, lighting(self.settings))
        ibl = photo_sky.patch_source if self._photo_sky is not None else (lambda src, name="", stage="fs": src)
        # photo style: photographed wall and ground materials (.photo_materials); without them the realistic ones
        self._photo_mats, self._mat_tex = None, None
        if self.settings.style == "photo":
            from urbanarena.render.scene3d import photo_materials

            self._photo_mats = photo_materials.photo_materials()
        mats = photo_materials.patch_source if self._photo_mats is not None else (lambda src, name="": src)
        # photo style: recessed windows, mirroring glass, rooms, weathering, lit flats at night (.photo_facades);
        # with the photo atmosphere, whose switch the tests turn off to compare photo pixels with realistic ones
        self._facade_sky, fac = False, None
        if self._photo_air is not None:
            from urbanarena.render.scene3d import photo_facades as fac

            self._facade_sky = self._photo_sky is not None and self._photo_sky.texture is not None

        from urbanarena.render.scene3d import photo_occlusion as occ   # photo: sky visibility of ground and walls

        def air(src, name=""):
            src = mats(air0(src, name), name)
            src = src if fac is None else occ.patch_source(fac.patch_source(src, name, sky_map=self._facade_sky), name)
            return ibl(src, name)

        def program(vs, fs):
            return self._keep(ctx.program(vertex_shader=ibl(shaders.variant(vs, wx, MAX_LAMPS, lamps), "", "vs"),
                                          fragment_shader=air(shaders.variant(fs, wx, MAX_LAMPS, lamps))))

        def real_program(name, ground_mat=0):
            from urbanarena.render.scene3d.realistic_shaders import program_sources

            vs, fs = program_sources(name, MAX_LAMPS, ground_mat, lamps)
            return self._keep(ctx.program(vertex_shader=ibl(vs, name, "vs"), fragment_shader=air(fs, name)))

        self.prog_plain = program(shaders.PLAIN_VS, shaders.PLAIN_FS)
        # photo style with a population: people and vehicles drawn with their textures (.photo_model_textures)
        self.prog_models, self._model_tex = models_program(self, program)
        self.prog_sign = real_program("sign") if real else program(shaders.SIGN_VS, shaders.SIGN_FS)
        self.prog_foliage = self.prog_shade = self.prog_sky_draw = None
        self._tree_tex = None
        content = PhotoContent(self.meshes)   # photo: trees, greenery, verges, clutter (.photo_content)
        if self.settings.style == "photo":
            content = add_photo_content(self.meshes, self.scene)
        self.meshes, tree_kit = content.meshes, content.tree_kit
        self._wires = None   # photo: the tram lines' overhead wires (.photo_wires)
        if content.wires is not None:
            from urbanarena.render.scene3d.photo_wires import WirePass

            self._wires = WirePass(self, content.wires)
        self._sky_tex = None
        ground_runs, ground_progs = [], {}
        if real:
            from urbanarena.render.scene3d.realistic_shaders import ground_material_runs

            self.prog_ground, self.prog_facade, self.prog_sky = (real_program(n) for n in ("ground", "facade", "sky"))
            self.prog_foliage, self.prog_shade = real_program("foliage"), real_program("shade")
            if tree_kit is not None:
                from urbanarena.render.scene3d.trees_photo import program_sources as tree_sources

                vs, fs = tree_sources(MAX_LAMPS, lamps)
                self.prog_foliage = self._keep(ctx.program(vertex_shader=ibl(vs, "", "vs"), fragment_shader=air(fs)))
            self.prog_sky_draw = real_program("sky_tex")  # samples the sky baked by prog_sky (_bake_sky)
            if self._photo_sky is not None and self._photo_sky.texture is not None:   # photo: the HDRI instead
                self.prog_sky_draw = self._keep(ctx.program(vertex_shader=shaders.SKY_VS,
                                                            fragment_shader=photo_sky.sky_fs()))
                self._sky_tex = photo_textures.hdri_texture(self, self._photo_sky)
            # one program per ground material, so that no pixel runs the other materials' code (llvmpipe
            # executes every branch of a shader); the runs keep the painter's order
            ground_runs = ground_material_runs(self.meshes.ground.colours)
            ground_progs = {k: real_program("ground", k) for k in sorted({k for _, _, k in ground_runs}) if k}
        else:
            self.prog_ground = program(shaders.GROUND_VS, shaders.GROUND_FS)
            self.prog_facade = program(shaders.FACADE_VS, shaders.FACADE_FS)
            self.prog_sky = program(shaders.SKY_VS, shaders.SKY_FS)
        self._lit_programs = tuple(p for p in (self.prog_plain, self.prog_ground, self.prog_facade, self.prog_sign,
                                               self.prog_foliage, self.prog_shade, *ground_progs.values(),
                                               self.prog_models)
                                   if p is not None)
        m = self.meshes

        def vao(prog, mesh, fields, names, tiled=True, tile_m=TILE_M):
            if mesh.n_triangles == 0:
                return None
            if tiled:
                mesh, first, count, lo, hi = mesh.tiles(tile_m)
            buf = self._keep(ctx.buffer(mesh.interleaved(fields).tobytes()))
            widths = [3 if f in ("positions", "normals", "colours") else 4 if f == "facade"
                      else 1 if f in ("shop", "feature") else 2 for f in fields]
            # attributes a shader does not use are optimised away: skip their bytes
            fmt = " ".join(f"{n}f" if name in prog else f"{4 * n}x" for n, name in zip(widths, names))
            used = [name for name in names if name in prog]
            va = self._keep(ctx.vertex_array(prog, [(buf, fmt, *used)]))
            if not tiled:
                return va
            return _Tiled(va, first, count, lo, hi, source=(buf, 4 * sum(widths), mesh.feature), front_to_back=real)

        self.vao_ground = vao(self.prog_ground, m.ground, ("positions", "normals", "colours"),
                              ("in_pos", "in_normal", "in_colour"), tiled=False)  # painter's order kept
        #: realistic style: (vertex array, first vertex, count) per run of one ground material, in order
        self.ground_runs = []
        if ground_progs and self.vao_ground is not None:
            gbuf = self._keep(ctx.buffer(m.ground.interleaved(("positions", "normals", "colours")).tobytes()))
            names = ("in_pos", "in_normal", "in_colour")
            gvaos = {k: self._keep(ctx.vertex_array(p, [(gbuf, " ".join("3f" if n in p else "12x" for n in names),
                                                          *(n for n in names if n in p))]))
                     for k, p in ground_progs.items()}
            self.ground_runs = [(gvaos.get(k, self.vao_ground), first, count) for first, count, k in ground_runs]
        #: photo: the ground runs without their chunks outside the frustum, kerbs and rails only near (.tiles)
        self._ground_chunks = None if self._photo_air is None or not self.ground_runs else \
            self._photo_air.ground_chunks(self.ground_runs, ground_runs, m.ground.positions)
        self.vao_solids = vao(self.prog_plain, m.solids, ("positions", "normals", "colours"),
                              ("in_pos", "in_normal", "in_colour"))
        self.vao_objects = vao(self.prog_plain, m.objects, ("positions", "normals", "colours"),
                               ("in_pos", "in_normal", "in_colour"))
        self.vao_facades = vao(self.prog_facade, m.facades, ("positions", "normals", "colours", "facade", "shop"),
                               ("in_pos", "in_normal", "in_colour", "in_facade", "in_shop"))
        self.vao_skyline = None if self._photo_air is None else vao(
            self.prog_plain, self._photo_air.skyline_mesh(self.scene), ("positions", "normals", "colours"),
            ("in_pos", "in_normal", "in_colour"))
        self.vao_foliage = self.vao_shade = None
        if real and m.foliage is not None and tree_kit is not None:
            self.vao_foliage = vao(self.prog_foliage, m.foliage, ("positions", "normals", "colours", "uv"),
                                   ("in_pos", "in_normal", "in_colour", "in_uv"))
            self._tree_tex = photo_textures.tree_texture(self, tree_kit)
        elif real and m.foliage is not None:
            self.vao_foliage = vao(self.prog_foliage, m.foliage, ("positions", "normals", "colours"),
                                   ("in_pos", "in_normal", "in_colour"))
        # photo: seeded greenery, building detail and clutter, each drawn only near the eye (.photo_content)
        self._near_vaos, self.building_detail_vaos = near_arrays(
            content, vao, self.prog_foliage, self.prog_plain, self.vao_foliage is not None and tree_kit is not None)
        if real and m.shade is not None:
            self.vao_shade = vao(self.prog_shade, m.shade, ("positions", "normals", "colours"),
                                 ("in_pos", "in_normal", "in_colour"), tiled=False)
        self.sign_vaos = []
        for page, mesh in zip(m.atlas.pages, m.signs):
            if mesh.n_triangles == 0:
                continue
            h, w = page.shape[:2]
            tex = self._keep(ctx.texture((w, h), 3, np.ascontiguousarray(page).tobytes(), alignment=1))
            tex.build_mipmaps(0, 5)
            tex.filter = (self._mgl.LINEAR_MIPMAP_LINEAR, self._mgl.LINEAR)
            tex.anisotropy = 1.0  # anisotropy is done in the shader (see shaders.SIGN_FS)
            tex.repeat_x = tex.repeat_y = False
            extra = (("feature",), ("in_feature",)) if wx and mesh.feature is not None else ((), ())
            self.sign_vaos.append((tex, vao(self.prog_sign, mesh, ("positions", "normals", "uv", *extra[0]),
                                            ("in_pos", "in_normal", "in_uv", *extra[1]))))
        if self.settings.style == "photo":   # photo: a frame's runs of tiles as one multi-draw call per array
            indirect = self._keep(IndirectDraws(ctx))
            for t in (self.vao_facades, self.vao_solids, self.vao_skyline, self.vao_objects, self.vao_foliage,
                      self._ground_chunks, *(t for t, _, _ in self._near_vaos), *(t for _, t in self.sign_vaos)):
                if t is not None:
                    t.indirect = indirect
        quad = np.array([-1, -1, 1, -1, 1, 1, -1, -1, 1, 1, -1, 1], dtype="f4")
        quad_buf = self._keep(ctx.buffer(quad.tobytes()))
        self.vao_sky = self._keep(ctx.vertex_array(self.prog_sky, [(quad_buf, "2f", "in_ndc")]))
        if self.prog_sky_draw is not None:
            self.vao_sky_draw = self._keep(ctx.vertex_array(self.prog_sky_draw, [(quad_buf, "2f", "in_ndc")]))
        else:
            self.prog_sky_draw, self.vao_sky_draw = self.prog_sky, self.vao_sky
        s = self.settings
        set_settings_uniforms(self)
        self.weather = None if (s.is_clear_day and not real) else WeatherPass(self)
        self.sun_shadow, self._shadow_baked = None, False
        if real:
            from urbanarena.render.scene3d.sun_shadow import SunShadow

            self.sun_shadow = SunShadow(self, self.weather.lighting)
        set_style_uniforms(self)
        self._occlusion = occ.FieldTexture(self, self._lit_programs) if fac is not None and occ.ENABLED else None
        if self._photo_mats is not None:
            self._mat_tex = photo_textures.material_texture(self, self._photo_mats)

    def _bake_sky(self) -> None:
        """Render the realistic sky (``prog_sky``, its uniforms set) once into the equirectangular texture that
        ``prog_sky_draw`` samples (:data:`.realistic_shaders.SKY_TEX_W` x ``SKY_TEX_H``, linear filtering,
        longitude wrapping)."""
        from urbanarena.render.scene3d.realistic_shaders import SKY_TEX_H, SKY_TEX_W

        ctx = self.ctx
        tex = self._keep(ctx.texture((SKY_TEX_W, SKY_TEX_H), 4))
        tex.filter = (self._mgl.LINEAR, self._mgl.LINEAR)
        tex.repeat_x, tex.repeat_y = True, False
        fb = ctx.framebuffer([tex])
        fb.use()
        ctx.viewport = (0, 0, SKY_TEX_W, SKY_TEX_H)
        ctx.disable(self._mgl.DEPTH_TEST | self._mgl.BLEND)
        self.vao_sky.render(self._mgl.TRIANGLES)
        fb.release()
        self.prog_sky_draw["sky_tex"].value = 1
        self._sky_tex = tex

    def _fbo(self, width: int, height: int):
        return view_framebuffers(self.ctx, self._fbos, width, height, self.settings.samples)

    # ------------------------------------------------------------- drawing
    def _draw(self, eye: np.ndarray, yaw_deg: float, pitch_deg: float, hfov_deg: float, width: int,
              height: int, dynamic=None) -> np.ndarray:
        mgl = self._mgl
        ctx = self.ctx
        s = self.settings
        if self.prog_sky_draw is not self.prog_sky and self._sky_tex is None:
            self._bake_sky()
        if self.sun_shadow is not None and not self._shadow_baked:
            self._shadow_baked = True
            self.sun_shadow.bake()  # realistic style: walls' cast shadows, once (sun_shadow.py)
        ms, resolve = self._fbo(width, height)
        ms.use()
        ctx.viewport = (0, 0, width, height)
        ms.clear(0.0, 0.0, 0.0, 1.0, depth=1.0)
        P = projection_matrix(hfov_deg, width, height, s.near_m, s.far_m)
        V = view_matrix(eye, yaw_deg, pitch_deg)
        mvp = (P @ V).T.astype("f4").tobytes()  # column-major for GLSL
        eye_t = tuple(float(v) for v in eye)
        ctx.disable(mgl.CULL_FACE)
        ctx.enable(mgl.DEPTH_TEST)
        for prog in self._lit_programs:
            prog["mvp"].write(mvp)
            if "eye" in prog:
                prog["eye"].value = eye_t
        if self.weather is not None:
            self.weather.set_lamps(eye)
        # 1. everything standing on the ground (frustum-culled tiles)
        ctx.depth_func = "<"
        planes = _frustum_planes(P @ V)
        if self.sun_shadow is not None:
            self.sun_shadow.use()
        real = self.sun_shadow is not None
        if real and self.vao_objects is not None:
            # realistic: balconies, awnings, cornices and street objects stand in front of the walls; drawn
            # first, the depth test rejects the (costly) facade fragments they hide
            self.vao_objects.render(planes, eye, s.object_distance_m)
        if self._mat_tex is not None:   # photo materials: walls and ground sample it
            from urbanarena.render.scene3d.photo_materials import MATERIAL_UNIT

            self._mat_tex.use(MATERIAL_UNIT)
        if self._facade_sky and self._sky_tex is not None:   # photo facades: the windows mirror the sky map
            self._sky_tex.use(1)   # photo_facades.SKY_UNIT
        if self._occlusion is not None:   # photo: the sky visibility field (.photo_occlusion)
            self._occlusion.use()
        for tiled in (self.vao_facades, self.vao_solids):
            if tiled is not None:
                tiled.render(planes, eye)
        if self.vao_skyline is not None:   # photo: closed boxes, outward windows (.photo_atmosphere)
            cull = self._photo_air.SKYLINE_CULL_BACK
            if cull:
                ctx.enable(mgl.CULL_FACE)
                ctx.cull_face = "back"
            self.vao_skyline.render(planes, eye)
            if cull:
                ctx.disable(mgl.CULL_FACE)
        if not real and self.vao_objects is not None:
            self.vao_objects.render(planes, eye, s.object_distance_m)
        if self.vao_foliage is not None:
            if self._tree_tex is not None:
                self._tree_tex.use(self._tree_unit)
            self.vao_foliage.render(planes, eye, s.object_distance_m)
        for tiled, distance_m, from_m in self._near_vaos:   # photo: seeded greenery, clutter (.photo_greenery)
            if tiled is not None:   # an empty mesh has no vertex array
                tiled.render(planes, eye, distance_m, from_m or None)
        for tex, tiled in self.sign_vaos:
            tex.use(0)
            tiled.render(planes, eye)
        if dynamic:  # figures and barriers of this frame (render/scene3d/dynamic.py)
            if self.prog_models is not None and getattr(dynamic, "models", None) is not None:
                self._model_tex.use(MODEL_TEX_UNIT)   # photo: textured people and vehicles
                draw_dynamic(ctx, self.prog_models, dynamic)
            else:
                draw_dynamic(ctx, self.prog_plain, dynamic)
        # 2. sky at the far plane: only where nothing stands
        ctx.depth_func = "<="
        basis = Camera(yaw_deg, pitch_deg, hfov_deg, width, height).basis()
        self.prog_sky_draw["cam_basis"].write(basis.astype("f4").tobytes())
        tx = math.tan(math.radians(hfov_deg) / 2)
        self.prog_sky_draw["tan_half"].value = (tx, tx * height / width)
        if self._sky_tex is not None:
            self._sky_tex.use(1)
            if "cloud_origin" in self.prog_sky_draw:   # photo clouds (.photo_clouds): parallax with the camera
                self.prog_sky_draw["cloud_origin"].value = (float(eye[0]), float(eye[1]))
        rows = height if self._photo_air is None or self.vao_ground is None else self._photo_air.sky_rows(
            eye, yaw_deg, pitch_deg, hfov_deg, width, height, self._ground_box, s.far_m)   # photo: none under ground
        ctx.scissor = None if rows == height else (0, height - rows, width, rows)   # GL rows count from the bottom
        if rows > 0:
            self.vao_sky_draw.render(mgl.TRIANGLES)
        ctx.scissor = None
        # 3. ground layers in painter's order (later layers cover earlier ones), hidden behind whatever
        #    stands on them; no depth writes, so coplanar layers never fight
        if self.vao_ground is not None:
            ctx.depth_func = "<"
            ms.depth_mask = False
            if self._ground_chunks is not None:
                self._ground_chunks.render(planes, eye)
            elif self.ground_runs:
                for va, first, count in self.ground_runs:
                    va.render(mgl.TRIANGLES, vertices=count, first=first)
            else:
                self.vao_ground.render(mgl.TRIANGLES)
            if self.vao_shade is not None:  # baked ground shade multiplies the ground (realistic.py)
                ctx.enable(mgl.BLEND)
                ctx.blend_func = mgl.ZERO, mgl.SRC_COLOR
                self.vao_shade.render(mgl.TRIANGLES)
                ctx.disable(mgl.BLEND)
            shade_own = getattr(dynamic, "draw_shade", None) if dynamic else None
            if shade_own is not None and self.prog_shade is not None and self.weather is not None:
                # photo style: the population's contact and sun shadows multiply the ground too
                ctx.enable(mgl.BLEND)
                ctx.blend_func = mgl.ZERO, mgl.SRC_COLOR
                shade_own(ctx, self.prog_shade, self.weather.lighting)
                ctx.disable(mgl.BLEND)
            ms.depth_mask = True
        if self._wires is not None:   # photo: overhead wires, blended by their width in pixels (.photo_wires)
            self._wires.draw(ms, mvp, P, height)
        if self.weather is not None and self._photo_air is None:  # 4. rain streaks (conditions.py; not photo)
            self.weather.draw_rain(basis, hfov_deg, width, height, P)
        src = ms
        if resolve is not None:
            ctx.copy_framebuffer(resolve, ms)
            src = resolve
        data = src.read(viewport=(0, 0, width, height), components=3, alignment=1)
        img = np.frombuffer(data, dtype=np.uint8).reshape(height, width, 3)
        if self._photo_air is not None and self.weather.lighting.rain:  # photo rain: lower contrast
            img = self._photo_air.rain_contrast(img, self.weather.lighting.horizon)
        if self.weather is not None and not s.is_clear_day:  # camera noise of the condition's light (weather.py)
            return self.weather.sensor_noise(np.ascontiguousarray(img[::-1]))
        return np.ascontiguousarray(img[::-1])

    # -------------------------------------------------------------- public
    @property
    def features(self) -> tuple[tuple[str, str], ...]:
        """``(kind, id)`` of each feature index ``k >= 1`` at position ``k - 1`` (``kind`` in ``building``,
        ``poi``, ``object``; see :mod:`.meshes`)."""
        return self.meshes.features

    def render_ids(self, x_m: float, y_m: float, yaw_deg: float, pitch_deg: float = 0.0, hfov_deg: float = 90.0,
                   width: int = 640, height: int = 480,
                   eye_height_m: float = DEFAULT_EYE_HEIGHT_M, dynamic=None) -> np.ndarray:
        """ID pass: which feature each pixel of :meth:`render_view` at the same pose shows.

        Same camera, geometry, frustum and object-distance culling, draw order and depth test as
        :meth:`render_view`, with each feature drawn in a flat colour encoding its index (no
        lighting, fog, textures, MSAA or attribution; :data:`.shaders.ID_FS`).

        Returns:
            ``(height, width)`` int32 feature indices, row 0 at the top: ``0`` where the view shows
            ground or sky, else ``k`` for :attr:`features` ``[k - 1]``; with ``dynamic`` (a population's
            :class:`~.population_draw.PopulationObjects`) ``len(features) + 1 + i`` for its placement ``i``.
        Raises:
            ValueError: bad angles or sizes (as :meth:`render_view`).
        """
        _check_view_args(pitch_deg, hfov_deg, width, height)
        with self._lock, current(self.ctx):
            return self._draw_ids(np.array([x_m, y_m, eye_height_m], dtype=np.float64), yaw_deg, pitch_deg,
                                  hfov_deg, int(width), int(height), dynamic=dynamic)

    def render_view(self, x_m: float, y_m: float, yaw_deg: float, pitch_deg: float = 0.0, hfov_deg: float = 90.0,
                    width: int = 640, height: int = 480, eye_height_m: float = DEFAULT_EYE_HEIGHT_M,
                    attribution: bool = False, dynamic=None) -> np.ndarray:
        """Perspective view at a pose (conventions in the module docstring).

        Args:
            x_m, y_m: camera position, local metres.
            yaw_deg: compass bearing of the view centre; pitch_deg: up positive, [-90, 90].
            hfov_deg: horizontal field of view in (0, 180).
            width, height: pixels.
            eye_height_m: camera height above the ground.
            attribution: stamp the scene's attribution in the bottom-right corner.
            dynamic: :class:`~urbanarena.render.scene3d.dynamic.DynamicObjects` (walking figures,
                barriers) drawn into this view only, or ``None``.
        Returns:
            ``(height, width, 3)`` RGB ``uint8``.
        Raises:
            ValueError: bad angles or sizes.
        """
        _check_view_args(pitch_deg, hfov_deg, width, height)
        with self._lock, current(self.ctx):
            img = self._draw(np.array([x_m, y_m, eye_height_m], dtype=np.float64), yaw_deg, pitch_deg, hfov_deg,
                             int(width), int(height), dynamic=dynamic)
        if attribution and self.scene.attribution:
            img = stamp_attribution(img, self.scene.attribution)
        return img

    def cube_faces(self, x_m: float, y_m: float, eye_height_m: float, face: int, pad: int = 2,
                   centre_bearing_deg: float = 0.0, dynamic=None) -> np.ndarray:
        """The six faces side by side, ``(P, 6P, 3)`` with ``P = face + 2 pad`` (order :data:`CUBE_FACES`)."""
        P = face + 2 * pad
        hfov = 2.0 * math.degrees(math.atan(P / face))
        eye = np.array([x_m, y_m, eye_height_m], dtype=np.float64)
        with self._lock, current(self.ctx):
            faces = [self._draw(eye, centre_bearing_deg + dy, p, hfov, P, P, dynamic=dynamic) for dy, p in CUBE_FACES]
        return np.concatenate(faces, axis=1)

    def render_panorama(self, x_m: float, y_m: float, eye_height_m: float = DEFAULT_EYE_HEIGHT_M,
                        width: int = DEFAULT_PANO_WIDTH, centre_bearing_deg: float = 0.0,
                        attribution: bool = True, dynamic=None) -> np.ndarray:
        """Equirectangular panorama ``(width/2, width, 3)`` at a pose (module docstring).

        Args:
            width: even panorama width in pixels (height = width / 2).
            centre_bearing_deg: compass bearing of the centre column (``heading_deg``
                of the node, see :mod:`urbanarena.world.imagery`).
            attribution: write the scene's attribution into the nadir band.
            dynamic: objects drawn into every face (a node's population, :mod:`.population_draw`), or ``None``.
        Raises:
            ValueError: odd or too small width.
        """
        if width < 16 or width % 2:
            raise ValueError(f"panorama width must be an even number >= 16, got {width}")
        height = width // 2
        face = cube_face_size(width)
        pad = 2
        strip = self.cube_faces(x_m, y_m, eye_height_m, face, pad, centre_bearing_deg, dynamic=dynamic)
        m1, m2 = _equirect_maps(width, height, face, pad)
        pano = cv2.remap(strip, m1, m2, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        if attribution and self.scene.attribution:
            pano = stamp_panorama_attribution(pano, self.scene.attribution)
        return pano

    # ------------------------------------------------------------ identity
    def identity(self, width: int | None = None, eye_height_m: float | None = None) -> dict:
        """What determines the pixels (:func:`render_identity`)."""
        return render_identity(self.scene, self.settings, width, eye_height_m)

    def release(self) -> None:
        """Free GL objects (the shared context stays). A renderer collected without it frees them at the
        process's next GL use (:func:`.context.free_when_collected`)."""
        with self._lock, current(self.ctx):
            free_gl(self._fbos, self._resources)

