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
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass
from functools import lru_cache

import cv2
import numpy as np

from urbanarena.render.scene3d.attribution import stamp_attribution, stamp_panorama_attribution
from urbanarena.render.scene3d.context import current, gl_context, gl_info
from urbanarena.render.scene3d.dynamic import draw_dynamic, draw_dynamic_ids
from urbanarena.render.scene3d.fonts import sign_font
from urbanarena.render.scene3d.meshes import SceneMeshes, build_scene_meshes
from urbanarena.render.scene3d.scene import Scene
from urbanarena.render.scene3d import shaders
from urbanarena.render.scene3d.weather import WeatherPass
from urbanarena.render.views import Camera

#: Bumped whenever a change alters rendered pixels (part of every cache key).
RENDERER_VERSION = "scene3d-1"

DEFAULT_EYE_HEIGHT_M = 1.7
DEFAULT_PANO_WIDTH = 2048


@dataclass(frozen=True)
class RenderSettings:
    """Lighting and quality settings (part of the cache key).

    Attributes:
        sun_azimuth_deg, sun_elevation_deg: direction towards the sun (compass / above horizon).
        ambient, sun: light intensities (see :mod:`.shaders`).
        sign_ambient: brightness of sign faces (backlit boxes).
        horizon_rgb, zenith_rgb: sky gradient; the horizon colour is also the fog colour.
        fog_m: fog distance: the scene keeps ``1 / (1 + (d / fog_m)^2)`` of its colour at distance ``d``.
        near_m, far_m: clip planes.
        samples: MSAA samples (0 or 1 = off).
        floor_h_m, ground_h_m: storey heights used for window rows.
        sign_px_per_m: sign texture resolution (pixels per metre of sign).
        object_distance_m: street objects (and sign bodies) in ground tiles farther than this
            are not drawn (a 0.5 m object 200 m away spans under 1 px of a 2048 px panorama).
        weather: ``clear``, ``cloudy``, ``rain`` or ``fog``; time_of_day: ``day``, ``dusk`` or ``night``
            (:mod:`.conditions`: what each changes, on top of the settings above, which describe the clear
            day). rain_seed: seed of the rain streaks. style: ``flat`` (the original look; this class's
            default) or ``realistic`` (:mod:`.styles`; the commands' default). :meth:`for_condition` builds settings from a name
            (``night``, ``rain+dusk``); :attr:`condition` names them. The clear day (the default) draws
            with the original shaders: exactly the pixels and cache keys of the renderer before conditions.
        population: ``none`` (this class's default) or ``snapshot``: the people and vehicles of each node's
            panorama (:mod:`.population`; drawn by the panorama store, not by :meth:`SceneRenderer.render_view`),
            seeded with ``population_seed``.
    Raises:
        ValueError: unknown weather or time of day.
    """

    sun_azimuth_deg: float = 200.0
    sun_elevation_deg: float = 40.0
    ambient: float = 0.62
    sun: float = 0.5
    sign_ambient: float = 0.95
    horizon_rgb: tuple[int, int, int] = (205, 220, 236)
    zenith_rgb: tuple[int, int, int] = (92, 142, 212)
    fog_m: float = 900.0
    near_m: float = 0.2
    far_m: float = 3000.0
    samples: int = 0
    floor_h_m: float = 3.2
    ground_h_m: float = 3.6
    sign_px_per_m: float = 128.0
    object_distance_m: float = 200.0
    weather: str = "clear"
    time_of_day: str = "day"
    rain_seed: int = 0
    style: str = "flat"
    population: str = "none"
    population_seed: int = 0

    def __post_init__(self) -> None:
        from urbanarena.render.scene3d.conditions import TIMES_OF_DAY, WEATHERS
        from urbanarena.render.scene3d.population import check_population
        from urbanarena.render.scene3d.styles import check_style

        check_style(self.style)
        check_population(self.population)

        if self.weather not in WEATHERS:
            raise ValueError(f"weather must be one of {', '.join(WEATHERS)}, got {self.weather!r}")
        if self.time_of_day not in TIMES_OF_DAY:
            raise ValueError(f"time_of_day must be one of {', '.join(TIMES_OF_DAY)}, got {self.time_of_day!r}")

    @classmethod
    def for_condition(cls, condition: str, **fields) -> "RenderSettings":
        """Settings for a named condition (``clear``, ``cloudy``, ``rain``, ``fog``, ``dusk``, ``night`` or
        ``WEATHER+TIME``; :func:`.conditions.parse_condition`), other fields as given or default.

        Raises:
            ValueError: unknown condition.
        """
        from urbanarena.render.scene3d.conditions import parse_condition

        weather, time_of_day = parse_condition(condition)
        return cls(**{**fields, "weather": weather, "time_of_day": time_of_day})

    @property
    def condition(self) -> str:
        """Name of the condition (``clear``, ``night``, ``rain+dusk``; :func:`.conditions.condition_name`)."""
        from urbanarena.render.scene3d.conditions import condition_name

        return condition_name(self.weather, self.time_of_day)

    @property
    def is_realistic(self) -> bool:
        """True for the ``realistic`` style (:mod:`.styles`)."""
        return self.style == "realistic"

    @property
    def is_clear_day(self) -> bool:
        """True for the default condition (drawn with the original shaders)."""
        return self.weather == "clear" and self.time_of_day == "day"

    def identity_dict(self) -> dict:
        """The fields that determine pixels: all of them, except the condition fields while they hold their
        defaults (any other condition changes the dict, hence the key). The ``style`` field is always there:
        adding it changed every cache key once (the flat style's pixels did not change). ``population`` and
        ``population_seed`` are left out at their defaults (``none``, 0), so keys without people are unchanged."""
        d = asdict(self)
        for name, default in (("weather", "clear"), ("time_of_day", "day"), ("rain_seed", 0),
                              ("population", "none"), ("population_seed", 0)):
            if d[name] == default:
                del d[name]
        return d

    def key(self) -> str:
        """Short stable hash of the settings (:meth:`identity_dict`)."""
        return hashlib.sha256(json.dumps(self.identity_dict(), sort_keys=True).encode()).hexdigest()[:16]

    @property
    def sun_dir(self) -> np.ndarray:
        a, e = math.radians(self.sun_azimuth_deg), math.radians(self.sun_elevation_deg)
        return np.array([math.sin(a) * math.cos(e), math.cos(a) * math.cos(e), math.sin(e)])


def view_matrix(eye: np.ndarray, yaw_deg: float, pitch_deg: float) -> np.ndarray:
    """4x4 world -> OpenGL eye matrix (camera looks down -z; x right, y up) for the views.Camera basis."""
    b = Camera(yaw_deg, pitch_deg, 90.0, 1, 1).basis()  # rows right, up, forward
    R = np.stack([b[0], b[1], -b[2]])
    M = np.eye(4)
    M[:3, :3] = R
    M[:3, 3] = -R @ np.asarray(eye, dtype=np.float64)
    return M


def projection_matrix(hfov_deg: float, width: int, height: int, near: float, far: float) -> np.ndarray:
    """4x4 OpenGL perspective matrix with ``tan(hfov/2)`` spanning ``width/2`` pixels and square pixels."""
    fx = 1.0 / math.tan(math.radians(hfov_deg) / 2.0)
    fy = fx * width / height
    P = np.zeros((4, 4))
    P[0, 0], P[1, 1] = fx, fy
    P[2, 2] = (far + near) / (near - far)
    P[2, 3] = 2 * far * near / (near - far)
    P[3, 2] = -1.0
    return P


def cube_face_size(pano_width: int) -> int:
    """Cube face size ``S = ceil(W / pi)``: face focal length ``S/2`` equals the panorama's ``W / 2 pi`` px/rad."""
    return int(math.ceil(pano_width / math.pi))


#: Cube faces as (yaw offset from the panorama centre, pitch), degrees.
CUBE_FACES = ((0.0, 0.0), (90.0, 0.0), (180.0, 0.0), (270.0, 0.0), (0.0, 90.0), (0.0, -90.0))


@lru_cache(maxsize=4)
def _equirect_maps(width: int, height: int, face: int, pad: int) -> tuple[np.ndarray, np.ndarray]:
    """Fixed-point ``cv2.remap`` maps from a ``6P x P`` face strip (``P = face + 2 pad``) to the panorama."""
    P = face + 2 * pad
    lon = (np.arange(width, dtype=np.float64) + 0.5) / width * 2 * np.pi - np.pi
    lat = np.pi / 2 - (np.arange(height, dtype=np.float64) + 0.5) / height * np.pi
    cl = np.cos(lat)[:, None]
    d = np.stack([np.sin(lon)[None, :] * cl, np.cos(lon)[None, :] * cl,
                  np.broadcast_to(np.sin(lat)[:, None], (height, width))], axis=-1)
    bases = np.stack([Camera(y, p, 90.0, 1, 1).basis() for y, p in CUBE_FACES])  # (6, 3, 3)
    fwd = bases[:, 2, :]
    k = np.argmax(d @ fwd.T, axis=-1)  # (H, W)
    B = bases[k]  # (H, W, 3, 3)
    c = np.einsum("hwij,hwj->hwi", B, d)
    f = face / 2.0
    cx = (P - 1) / 2.0
    mx = (cx + f * c[..., 0] / c[..., 2] + k * P).astype(np.float32)
    my = (cx - f * c[..., 1] / c[..., 2]).astype(np.float32)
    m1, m2 = cv2.convertMaps(mx, my, cv2.CV_16SC2)
    return m1, m2


#: Side of the ground tiles that meshes are grouped by for frustum culling, metres.
TILE_M = 40.0


def _frustum_planes(M: np.ndarray) -> np.ndarray:
    """The six clip planes ``(6, 4)`` of a projection-view matrix (Gribb & Hartmann 2001):
    a point ``p`` is inside when ``plane . (p, 1) >= 0`` for all six."""
    return np.stack([M[3] + M[0], M[3] - M[0], M[3] + M[1], M[3] - M[1], M[3] + M[2], M[3] - M[2]])


class _Tiled:
    """A vertex array whose triangles are grouped by ground tile; draws only tiles meeting the frustum.

    ``source`` = ``(buffer, stride_bytes, feature indices per vertex)``: what the ID pass needs to
    draw the same vertices (positions first in each ``stride_bytes`` record)."""

    def __init__(self, vao, first: np.ndarray, count: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                 source: tuple | None = None, front_to_back: bool = False):
        self.vao, self.first, self.count, self.lo, self.hi = vao, first, count, lo, hi
        self.source = source
        #: draw the visible tiles nearest first (the realistic style: the depth test then rejects hidden
        #: fragments before their costly shading); else in storage order (the flat style's pixels)
        self.front_to_back = front_to_back

    def with_vao(self, vao) -> "_Tiled":
        """The same tiling, in the same order, drawn through another vertex array over the same vertices."""
        return _Tiled(vao, self.first, self.count, self.lo, self.hi, front_to_back=self.front_to_back)

    def visible(self, planes: np.ndarray) -> np.ndarray:
        """Mask of tiles whose bounding box is not entirely outside one plane (conservative)."""
        n = planes[:, :3]
        # the box corner farthest along each plane normal ("p-vertex")
        pv = np.where(n[None, :, :] >= 0, self.hi[:, None, :], self.lo[:, None, :])  # (T, 6, 3)
        d = np.einsum("tpk,pk->tp", pv, n) + planes[None, :, 3]
        return np.all(d >= 0, axis=1)

    def render(self, planes: np.ndarray, eye: np.ndarray | None = None, max_dist_m: float | None = None) -> None:
        import moderngl

        vis = self.visible(planes)
        d2 = None
        if eye is not None:
            nearest = np.clip(eye[None, :], self.lo, self.hi)  # closest box point to the eye
            d2 = np.einsum("tk,tk->t", nearest - eye, nearest - eye)
        if max_dist_m is not None and d2 is not None:
            vis &= d2 <= max_dist_m * max_dist_m
        if not vis.any():
            return
        if self.front_to_back and d2 is not None:
            idx = np.flatnonzero(vis)
            idx = idx[np.argsort(d2[idx], kind="stable")]
            # runs of tiles consecutive both in the nearest-first order and in storage: one draw call each
            cut = np.flatnonzero(np.diff(idx) != 1) + 1
            for run in np.split(idx, cut):
                a, b = int(run[0]), int(run[-1])
                first = int(self.first[a])
                self.vao.render(moderngl.TRIANGLES, vertices=int(self.first[b] + self.count[b] - first), first=first)
            return
        # merge runs of consecutive visible tiles into one draw call each
        edges = np.diff(np.concatenate([[0], vis.astype(np.int8), [0]]))
        for a, b in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)):
            first = int(self.first[a])
            count = int(self.first[b - 1] + self.count[b - 1] - first)
            self.vao.render(moderngl.TRIANGLES, vertices=count, first=first)


def render_identity(scene: Scene, settings: RenderSettings, width: int | None = None,
                    eye_height_m: float | None = None, poses: str = "") -> dict:
    """Everything that determines rendered pixels: renderer version, scene content hash, settings,
    panorama width and eye height (when fixed), the sign font's SHA-256, the OpenGL driver
    (``GL_RENDERER``/``GL_VERSION``), the OpenCV version (remap) and a hash of node poses.
    Creates the GL context if needed (to name the driver)."""
    font = sign_font()
    return {
        "renderer_version": RENDERER_VERSION,
        "scene": scene.name,
        "scene_hash": scene.content_hash(),
        "settings": settings.identity_dict(),
        "width": None if width is None else int(width),
        "eye_height_m": None if eye_height_m is None else float(eye_height_m),
        "font": {"family": font.family, "sha256": font.sha256, "licence": font.licence},
        "gl": gl_info(),
        "opencv": cv2.__version__,
        "poses_hash": poses,
        "attribution": scene.attribution,
        **({"realistic": realistic_identity(), "sign_families": _sign_families()} if settings.is_realistic else {}),
        **({"population": _population_identity()} if settings.population != "none" else {}),
    }


def _population_identity() -> dict:
    from urbanarena.render.scene3d.population import population_identity

    return population_identity()


def _sign_families() -> dict:
    from urbanarena.render.scene3d.signage import SIGNAGE_VERSION, family_identity

    return {"version": SIGNAGE_VERSION, **family_identity()}


def realistic_identity() -> str:
    """Version of the realistic style's code: :data:`.realistic_shaders.REALISTIC_VERSION` plus the SHA-256 (12 hex)
    of its GLSL sources, so a shader change never reuses cached realistic panoramas."""
    from urbanarena.render.scene3d import realistic_shaders as RS

    src = "".join(RS.program_sources(n, 48)[0] + RS.program_sources(n, 48)[1]
                  for n in ("facade", "ground", "sky", "sky_tex", "foliage", "shade", "sign"))
    from urbanarena.render.scene3d.sun_shadow import DEPTH_FS, DEPTH_VS, SHADOW_MAP_PX

    src += DEPTH_VS + DEPTH_FS + str(SHADOW_MAP_PX)
    return f"{RS.REALISTIC_VERSION}-{hashlib.sha256(src.encode()).hexdigest()[:12]}"


def _check_view_args(pitch_deg: float, hfov_deg: float, width: int, height: int) -> None:
    if not (0.0 < hfov_deg < 180.0):
        raise ValueError(f"hfov_deg must be in (0, 180), got {hfov_deg}")
    if not (-90.0 <= pitch_deg <= 90.0):
        raise ValueError(f"pitch_deg must be in [-90, 90], got {pitch_deg}")
    if width < 1 or height < 1 or width > 8192 or height > 8192:
        raise ValueError(f"size out of range: {width}x{height}")


class SceneRenderer:
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
            meshes = build_scene_meshes(scene, px_per_m=self.settings.sign_px_per_m, style=self.settings.style,
                                        light=light, floor_h_m=self.settings.floor_h_m,
                                        ground_h_m=self.settings.ground_h_m)
        self.meshes = meshes
        self._lock = threading.RLock()
        self._fbos: OrderedDict[tuple[int, int], tuple] = OrderedDict()
        self._resources: list = []
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

        def program(vs, fs):
            return self._keep(ctx.program(vertex_shader=shaders.variant(vs, wx, MAX_LAMPS, lamps),
                                          fragment_shader=shaders.variant(fs, wx, MAX_LAMPS, lamps)))

        def real_program(name, ground_mat=0):
            from urbanarena.render.scene3d.realistic_shaders import program_sources

            vs, fs = program_sources(name, MAX_LAMPS, ground_mat, lamps)
            return self._keep(ctx.program(vertex_shader=vs, fragment_shader=fs))

        self.prog_plain = program(shaders.PLAIN_VS, shaders.PLAIN_FS)
        self.prog_sign = real_program("sign") if real else program(shaders.SIGN_VS, shaders.SIGN_FS)
        self.prog_foliage = self.prog_shade = self.prog_sky_draw = None
        self._sky_tex = None
        ground_runs, ground_progs = [], {}
        if real:
            from urbanarena.render.scene3d.realistic_shaders import ground_material_runs

            self.prog_ground, self.prog_facade, self.prog_sky = (real_program(n) for n in ("ground", "facade", "sky"))
            self.prog_foliage, self.prog_shade = real_program("foliage"), real_program("shade")
            self.prog_sky_draw = real_program("sky_tex")  # samples the sky baked by prog_sky (_bake_sky)
            # one program per ground material, so that no pixel runs the other materials' code (llvmpipe
            # executes every branch of a shader); the runs keep the painter's order
            ground_runs = ground_material_runs(self.meshes.ground.colours)
            ground_progs = {k: real_program("ground", k) for k in sorted({k for _, _, k in ground_runs}) if k}
        else:
            self.prog_ground = program(shaders.GROUND_VS, shaders.GROUND_FS)
            self.prog_facade = program(shaders.FACADE_VS, shaders.FACADE_FS)
            self.prog_sky = program(shaders.SKY_VS, shaders.SKY_FS)
        self._lit_programs = tuple(p for p in (self.prog_plain, self.prog_ground, self.prog_facade, self.prog_sign,
                                               self.prog_foliage, self.prog_shade, *ground_progs.values())
                                   if p is not None)
        m = self.meshes

        def vao(prog, mesh, fields, names, tiled=True):
            if mesh.n_triangles == 0:
                return None
            if tiled:
                mesh, first, count, lo, hi = mesh.tiles(TILE_M)
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
        self.vao_solids = vao(self.prog_plain, m.solids, ("positions", "normals", "colours"),
                              ("in_pos", "in_normal", "in_colour"))
        self.vao_objects = vao(self.prog_plain, m.objects, ("positions", "normals", "colours"),
                               ("in_pos", "in_normal", "in_colour"))
        self.vao_facades = vao(self.prog_facade, m.facades, ("positions", "normals", "colours", "facade", "shop"),
                               ("in_pos", "in_normal", "in_colour", "in_facade", "in_shop"))
        self.vao_foliage = self.vao_shade = None
        if real and m.foliage is not None:
            self.vao_foliage = vao(self.prog_foliage, m.foliage, ("positions", "normals", "colours"),
                                   ("in_pos", "in_normal", "in_colour"))
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
        quad = np.array([-1, -1, 1, -1, 1, 1, -1, -1, 1, 1, -1, 1], dtype="f4")
        quad_buf = self._keep(ctx.buffer(quad.tobytes()))
        self.vao_sky = self._keep(ctx.vertex_array(self.prog_sky, [(quad_buf, "2f", "in_ndc")]))
        if self.prog_sky_draw is not None:
            self.vao_sky_draw = self._keep(ctx.vertex_array(self.prog_sky_draw, [(quad_buf, "2f", "in_ndc")]))
        else:
            self.prog_sky_draw, self.vao_sky_draw = self.prog_sky, self.vao_sky
        s = self.settings
        sun = tuple(float(v) for v in s.sun_dir)
        hz = tuple(c / 255.0 for c in s.horizon_rgb)
        for prog in self._lit_programs:
            for name, value in (("sun_dir", sun), ("ambient", s.ambient), ("sun", s.sun), ("horizon", hz),
                                ("inv_fog2", 1.0 / (s.fog_m * s.fog_m))):
                if name in prog:  # unused uniforms are optimised away
                    prog[name].value = value
        for prog, name, value in ((self.prog_facade, "floor_h", s.floor_h_m),
                                  (self.prog_facade, "ground_h", s.ground_h_m),
                                  (self.prog_sign, "sign_ambient", s.sign_ambient), (self.prog_sign, "atlas", 0),
                                  (self.prog_sky, "horizon", hz),
                                  (self.prog_sky, "zenith", tuple(c / 255.0 for c in s.zenith_rgb))):
            if name in prog:
                prog[name].value = value
        self.weather = None if (s.is_clear_day and not real) else WeatherPass(self)
        self.sun_shadow, self._shadow_baked = None, False
        if real:
            from urbanarena.render.scene3d.sun_shadow import SunShadow

            self.sun_shadow = SunShadow(self, self.weather.lighting)
        if real:
            from urbanarena.render.scene3d.realistic_shaders import style_uniforms

            for prog in (*self._lit_programs, self.prog_sky):
                for name, value in style_uniforms(s, self.weather.lighting).items():
                    if name in prog:
                        prog[name].value = value

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
        key = (width, height)
        f = self._fbos.get(key)
        if f is not None:
            self._fbos.move_to_end(key)
            return f
        ctx = self.ctx
        samples = self.settings.samples if self.settings.samples > 1 else 0
        samples = min(samples, ctx.max_samples)
        ms = ctx.framebuffer([ctx.renderbuffer((width, height), 4, samples=samples)],
                             ctx.depth_renderbuffer((width, height), samples=samples))
        resolve = ctx.framebuffer([ctx.renderbuffer((width, height), 4)]) if samples else None
        f = (ms, resolve)
        self._fbos[key] = f
        while len(self._fbos) > 4:
            _, old = self._fbos.popitem(last=False)
            for fb in old:
                if fb is not None:
                    for a in fb.color_attachments:
                        a.release()
                    if fb.depth_attachment is not None:
                        fb.depth_attachment.release()
                    fb.release()
        return f

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
        for tiled in (self.vao_facades, self.vao_solids):
            if tiled is not None:
                tiled.render(planes, eye)
        if not real and self.vao_objects is not None:
            self.vao_objects.render(planes, eye, s.object_distance_m)
        if self.vao_foliage is not None:
            self.vao_foliage.render(planes, eye, s.object_distance_m)
        for tex, tiled in self.sign_vaos:
            tex.use(0)
            tiled.render(planes, eye)
        if dynamic:  # figures and barriers of this frame (render/scene3d/dynamic.py)
            draw_dynamic(ctx, self.prog_plain, dynamic)
        # 2. sky at the far plane: only where nothing stands
        ctx.depth_func = "<="
        basis = Camera(yaw_deg, pitch_deg, hfov_deg, width, height).basis()
        self.prog_sky_draw["cam_basis"].write(basis.astype("f4").tobytes())
        tx = math.tan(math.radians(hfov_deg) / 2)
        self.prog_sky_draw["tan_half"].value = (tx, tx * height / width)
        if self._sky_tex is not None:
            self._sky_tex.use(1)
        self.vao_sky_draw.render(mgl.TRIANGLES)
        # 3. ground layers in painter's order (later layers cover earlier ones), hidden behind whatever
        #    stands on them; no depth writes, so coplanar layers never fight
        if self.vao_ground is not None:
            ctx.depth_func = "<"
            ms.depth_mask = False
            if self.ground_runs:
                for va, first, count in self.ground_runs:
                    va.render(mgl.TRIANGLES, vertices=count, first=first)
            else:
                self.vao_ground.render(mgl.TRIANGLES)
            if self.vao_shade is not None:  # baked ground shade multiplies the ground (realistic.py)
                ctx.enable(mgl.BLEND)
                ctx.blend_func = mgl.ZERO, mgl.SRC_COLOR
                self.vao_shade.render(mgl.TRIANGLES)
                ctx.disable(mgl.BLEND)
            ms.depth_mask = True
        if self.weather is not None:  # 4. rain streaks (conditions.py)
            self.weather.draw_rain(basis, hfov_deg, width, height, P)
        src = ms
        if resolve is not None:
            ctx.copy_framebuffer(resolve, ms)
            src = resolve
        data = src.read(viewport=(0, 0, width, height), components=3, alignment=1)
        img = np.frombuffer(data, dtype=np.uint8).reshape(height, width, 3)
        if self.weather is not None and not s.is_clear_day:  # camera noise of the condition's light (weather.py)
            return self.weather.sensor_noise(np.ascontiguousarray(img[::-1]))
        return np.ascontiguousarray(img[::-1])

    def _build_id_pass(self) -> tuple:
        """The ID program and vertex arrays over the existing vertex buffers (built once, on first use)."""
        ctx = self.ctx
        prog = self._keep(ctx.program(vertex_shader=shaders.ID_VS, fragment_shader=shaders.ID_FS))

        def id_vao(tiled):
            if tiled is None:
                return None
            buf, stride, feature = tiled.source
            n = (buf.size // stride)
            feat = np.zeros(n, np.float32) if feature is None else np.ascontiguousarray(feature, dtype=np.float32)
            fbuf = self._keep(ctx.buffer(feat.tobytes()))
            pos = "3f" if stride == 12 else f"3f {stride - 12}x"
            return tiled.with_vao(self._keep(ctx.vertex_array(prog, [(buf, pos, "in_pos"),
                                                                     (fbuf, "1f", "in_feature")])))

        return (prog, id_vao(self.vao_facades), id_vao(self.vao_solids), id_vao(self.vao_objects),
                [id_vao(t) for _, t in self.sign_vaos], id_vao(getattr(self, "vao_foliage", None)))

    def _id_fbo(self, width: int, height: int):
        key = ("id", width, height)
        f = self._fbos.get(key)
        if f is not None:
            self._fbos.move_to_end(key)
            return f[0]
        ctx = self.ctx
        fb = ctx.framebuffer([ctx.renderbuffer((width, height), 4)], ctx.depth_renderbuffer((width, height)))
        self._fbos[key] = (fb, None)
        while len(self._fbos) > 4:
            _, old = self._fbos.popitem(last=False)
            for o in old:
                if o is not None:
                    for a in o.color_attachments:
                        a.release()
                    if o.depth_attachment is not None:
                        o.depth_attachment.release()
                    o.release()
        return fb

    def _draw_ids(self, eye: np.ndarray, yaw_deg: float, pitch_deg: float, hfov_deg: float, width: int,
                  height: int, dynamic=None) -> np.ndarray:
        """Feature-index image ``(height, width)`` int32: the geometry, draw order, culling and depth
        test of :meth:`_draw` (steps 1; the sky and the ground, which writes no depth, hide nothing)."""
        mgl = self._mgl
        ctx = self.ctx
        s = self.settings
        if self._id_pass is None:
            self._id_pass = self._build_id_pass()
        prog, facades, solids, objects, signs, foliage = self._id_pass
        fb = self._id_fbo(width, height)
        fb.use()
        ctx.viewport = (0, 0, width, height)
        fb.clear(0.0, 0.0, 0.0, 1.0, depth=1.0)
        P = projection_matrix(hfov_deg, width, height, s.near_m, s.far_m)
        V = view_matrix(eye, yaw_deg, pitch_deg)
        prog["mvp"].write((P @ V).T.astype("f4").tobytes())
        ctx.disable(mgl.CULL_FACE | mgl.BLEND)
        ctx.enable(mgl.DEPTH_TEST)
        ctx.depth_func = "<"
        planes = _frustum_planes(P @ V)
        for tiled in (facades, solids):
            if tiled is not None:
                tiled.render(planes, eye)
        for tiled in (objects, foliage):
            if tiled is not None:
                tiled.render(planes, eye, s.object_distance_m)
        for tiled in signs:
            if tiled is not None:
                tiled.render(planes, eye)
        if dynamic:  # the population's people and vehicles (.population): indices after the scene's features
            draw_dynamic_ids(ctx, prog, dynamic, len(self.features))
        data = fb.read(viewport=(0, 0, width, height), components=3, alignment=1)
        rgb = np.frombuffer(data, dtype=np.uint8).reshape(height, width, 3)[::-1].astype(np.int32)
        return np.ascontiguousarray(rgb[..., 0] | (rgb[..., 1] << 8) | (rgb[..., 2] << 16))

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
        """Free GL objects (the shared context stays)."""
        with self._lock, current(self.ctx):
            for ms, res in self._fbos.values():
                for fb in (ms, res):
                    if fb is not None:
                        for a in fb.color_attachments:
                            a.release()
                        if fb.depth_attachment is not None:
                            fb.depth_attachment.release()
                        fb.release()
            self._fbos.clear()
            for r in reversed(self._resources):
                r.release()
            self._resources.clear()

