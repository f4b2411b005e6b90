"""Sky visibility of the ``photo`` style's ground and walls (issue 24, blind-sort tells "flat lighting", "no
darkening where things meet the ground"): the ambient (sky) light of a point shrinks with the share of the sky
that the buildings around it hide, so a narrow street is darker near the ground than an open square, and a wall
across a narrow courtyard darker than one facing a square. The sun's direct light and its shadows are unchanged.

Photo style only, with its atmosphere (:mod:`.photo_atmosphere` ``ENABLED``): entered through
:func:`patch_source` (ground and facade programs), so ``flat`` and ``realistic`` never reach this module. With
:data:`ENABLED` false the ground keeps its light and the facade its canyon ramp: the pixels of before.

* **The field** (:func:`field_for`, once per scene and process): the buildings' heights rasterized on a grid of
  :data:`CELL_M` cells (:func:`height_grid`); per cell and per height ``z`` of :data:`LEVELS_M` the open-sky
  fraction of an upward-facing surface (:func:`open_sky`): along :data:`N_AZ` azimuths the horizon's tangent
  ``t = max_d (h(p + d u) - z) / d`` (steps out to :data:`MAX_DIST_M`: every cell to :data:`FAR_FROM_M`, then at
  most :data:`MAX_STEP_M` apart, so a building thinner than that can fall between two steps far out), and ``S = 1 - mean sin^2(atan t)``, the
  cosine-weighted sky view factor. An open square gives 1; the floor of an infinite street canyon of walls
  ``H`` high and ``W`` apart ``1 / sqrt(1 + (2 H / W)^2)`` (Oke's ``cos beta``). Cells inside a building take
  the value of the nearest cell outside. Stored as an RGBA texture (``S`` at the four heights), sampled
  bilinearly.
* **Ground** (GLSL ``po_ground``, twin :func:`ground_factor`): the ambient light times
  ``sqrt(S + (1 - S) BOUNCE)``: the hidden sky replaced by light bounced off what hides it (:data:`BOUNCE`,
  ours), the square root because the pipeline's light values are the square root of linear light
  (:mod:`.photo_sky`).
* **Walls** (GLSL ``po_wall``, twin :func:`wall_factor`): the field read :data:`WALL_OFFSET_M` in front of the
  wall, interpolated in height between the levels. There the wall itself hides about half the sky (the back
  half contributes nothing to ``S``), so the open share of the half in front is ``f = clamp(2 S, 0, 1)`` (a
  little over 1 before the clamp in the open: the azimuths along the wall count as front); a vertical surface facing a uniform horizon
  of elevation ``b`` sees ``1 - sin b`` of its open-field sky while a horizontal one sees ``cos b = f``, so the
  wall's visibility is ``v = 1 - sqrt(1 - f^2)`` (exact in a canyon, ours elsewhere), and its ambient factor
  ``sqrt(v + (1 - v) BOUNCE)``, times a fade at the foot (:func:`foot_fade`: 0.85 at the ground to 1 at 1.5 m,
  ours: the corner gets less bounce light and 1 m cells cannot hold it). It replaces the facade program's fixed canyon ramp (``0.72`` at the foot to 1 at
  14 m on every wall alike, :data:`.photo_facades.CANYON_NEW`), which assumed every wall stood in a street
  canyon (the line is swapped here; :mod:`.photo_facades` is not edited). Inner
  corners come out darker than the wall's middle (the point in front sees two walls), outer corners lighter.

Cost: one texture lookup and a dozen operations per ground and wall fragment; the field for the default city is
computed once per scene and process (measured in ``benchmarks/bench_photo_occlusion.py``, docs/renderer.md).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np

#: switch read when a renderer builds its programs (benchmarks and tests compare with and without)
ENABLED = True
#: bumped whenever this module changes photo pixels (photo render identity)
OCCLUSION_VERSION = "photo-occlusion-3"
#: grid cell (m), azimuths, reach (m), heights of the four channels (m)
CELL_M = 1.0
N_AZ = 16
MAX_DIST_M = 160.0
LEVELS_M = (0.0, 4.0, 12.0, 30.0)
#: the horizon steps: every cell out to FAR_FROM_M (m), then growing by a tenth, at most MAX_STEP_M (m) apart
FAR_FROM_M, MAX_STEP_M = 12.0, 5.0
#: share of the hidden sky's light that the surfaces hiding it send back (ours: sunlit and shaded walls of
#: albedo 0.2-0.4 seen together)
BOUNCE = 0.35
#: the wall's foot: its ambient factor times ``1 - FOOT_K (1 - smoothstep(0, FOOT_M, z))`` (ours: the corner with
#: the ground gets less bounce, and the field's 1 m cells cannot hold it)
FOOT_K, FOOT_M = 0.15, 1.5
#: walls read the field this far in front of them (m; half a cell and a little more, so a wall's own cell is
#: outside the building)
WALL_OFFSET_M = 0.75
#: texture unit of the field (signs 0, sky 1, shadow 2, trees 3, materials 6)
FIELD_UNIT = 7


@dataclass(frozen=True)
class OcclusionField:
    """The sky visibility of a scene.

    Attributes:
        origin: world ``(x, y)`` (m) of the grid's lower left corner (cell ``[0, 0]`` spans ``origin`` to
            ``origin + CELL_M``). cell_m: cell size (m).
        sky: ``(ny, nx, 4)`` float32 open-sky fraction 0..1 at the heights :data:`LEVELS_M` (row ``j`` is
            ``y``).
    """

    origin: tuple[float, float]
    cell_m: float
    sky: np.ndarray


# ------------------------------------------------------------------------------------------ the field
def height_grid(buildings, cell_m: float = CELL_M, margin_m: float = 20.0) -> tuple[np.ndarray, tuple[float, float]]:
    """The buildings' wall heights on a grid: ``(ny, nx)`` float32 metres (0 outside every footprint and in
    courtyards; the taller where footprints overlap) and the grid's origin ``(x, y)`` (m), the footprints'
    bounding box grown by ``margin_m``. A cell belongs to a footprint when its centre does."""
    import shapely
    from shapely.geometry import Polygon

    rings = [np.asarray(b.footprint, np.float64) for b in buildings]
    if not rings:
        return np.zeros((1, 1), np.float32), (0.0, 0.0)
    allp = np.concatenate(rings)
    x0, y0 = allp.min(axis=0) - margin_m
    x1, y1 = allp.max(axis=0) + margin_m
    nx, ny = int(math.ceil((x1 - x0) / cell_m)), int(math.ceil((y1 - y0) / cell_m))
    grid = np.zeros((ny, nx), np.float32)
    for b in sorted(buildings, key=lambda b: float(b.height_m)):
        poly = Polygon(b.footprint, b.holes or None)
        bx0, by0, bx1, by1 = poly.bounds
        i0, j0 = max(int((bx0 - x0) / cell_m) - 1, 0), max(int((by0 - y0) / cell_m) - 1, 0)
        i1, j1 = min(int((bx1 - x0) / cell_m) + 2, nx), min(int((by1 - y0) / cell_m) + 2, ny)
        jj, ii = np.mgrid[j0:j1, i0:i1]
        inside = shapely.contains_xy(poly, x0 + (ii + 0.5) * cell_m, y0 + (jj + 0.5) * cell_m)
        grid[j0:j1, i0:i1][inside] = float(b.height_m)
    return grid, (float(x0), float(y0))


def _steps(cell_m: float, max_dist_m: float) -> list[float]:
    """Horizon step distances (m): every cell out to :data:`FAR_FROM_M`, then growing by a tenth, at most
    :data:`MAX_STEP_M` apart."""
    d, out = cell_m, []
    while d <= max_dist_m:
        out.append(d)
        d = d + cell_m if d < FAR_FROM_M else d + min(0.1 * d, MAX_STEP_M)
    return out


def open_sky(heights: np.ndarray, cell_m: float, z_m=LEVELS_M, n_az: int = N_AZ,
             max_dist_m: float = MAX_DIST_M) -> np.ndarray:
    """Open-sky fraction of an upward-facing surface (module docstring) at every cell of ``heights``
    ``(ny, nx)`` (m) and every height of ``z_m`` (m): ``(len(z_m), ny, nx)`` float32 in 0..1 (1: nothing above
    the horizon). Cells beyond the grid count as open ground."""
    h = np.asarray(heights, np.float32)
    ny, nx = h.shape
    steps = _steps(cell_m, max_dist_m)
    reach = int(math.ceil(max_dist_m / cell_m)) + 2
    hp = np.pad(h, reach, mode="constant")
    z = np.asarray(z_m, np.float32)
    occ = np.zeros((len(z), ny, nx), np.float32)
    tmp = np.empty((ny, nx), np.float32)
    for k in range(n_az):
        a = 2 * math.pi * k / n_az
        ux, uy = math.cos(a), math.sin(a)
        best = np.zeros((len(z), ny, nx), np.float32)          # the horizon's tangent, at least 0
        for d in steps:
            di, dj = int(round(d * ux / cell_m)), int(round(d * uy / cell_m))
            view = hp[reach + dj:reach + dj + ny, reach + di:reach + di + nx]
            for li, zl in enumerate(z):
                np.subtract(view, zl, out=tmp)
                tmp *= 1.0 / d
                np.maximum(best[li], tmp, out=best[li])
        best *= best
        occ += best / (1.0 + best)                              # sin^2 of the horizon's elevation
    return 1.0 - occ / n_az


def fill_inside(sky: np.ndarray, inside: np.ndarray) -> np.ndarray:
    """``sky`` ``(L, ny, nx)`` with every cell where ``inside`` ``(ny, nx)`` taking the value of the nearest cell
    where it is not (so bilinear lookups next to a wall do not blend in the roof's sky)."""
    from scipy.ndimage import distance_transform_edt

    if not inside.any() or inside.all():
        return sky
    _, (jj, ii) = distance_transform_edt(inside, return_indices=True)
    return sky[:, jj, ii]


def compute_field(buildings, cell_m: float = CELL_M) -> OcclusionField:
    """The :class:`OcclusionField` of ``buildings`` (:class:`.scene.Building` list)."""
    heights, origin = height_grid(buildings, cell_m)
    sky = fill_inside(open_sky(heights, cell_m), heights > 0)
    return OcclusionField(origin, cell_m, np.ascontiguousarray(np.moveaxis(sky, 0, -1), np.float32))


_LOCK = threading.Lock()
_FIELDS: dict[str, OcclusionField] = {}


def field_for(scene) -> OcclusionField:
    """The field of ``scene``, computed once per process (keyed by the scene's content hash)."""
    key = scene.content_hash()
    with _LOCK:
        got = _FIELDS.get(key)
    if got is None:
        got = compute_field(scene.buildings)
        with _LOCK:
            _FIELDS[key] = got
    return got


# ------------------------------------------------------------------------------------------ the twins
def ground_factor(s) -> np.ndarray:
    """The ground's ambient factor at open-sky fraction ``s`` (twin of ``po_ground``'s last line)."""
    s = np.asarray(s, np.float64)
    return np.sqrt(s + (1.0 - s) * BOUNCE)


def wall_factor(s) -> np.ndarray:
    """A wall's ambient factor from the open-sky fraction ``s`` read in front of it (twin of ``po_wall``'s
    last lines)."""
    f = np.clip(2.0 * np.asarray(s, np.float64), 0.0, 1.0)
    v = 1.0 - np.sqrt(1.0 - f * f)
    return np.sqrt(v + (1.0 - v) * BOUNCE)


def foot_fade(z_m) -> np.ndarray:
    """The wall foot's factor at heights ``z_m`` (m) (twin of ``po_wall``'s last factor)."""
    t = np.clip(np.asarray(z_m, np.float64) / FOOT_M, 0.0, 1.0)
    return 1.0 - FOOT_K * (1.0 - t * t * (3.0 - 2.0 * t))


def level_mix(sky4, z_m) -> np.ndarray:
    """The open-sky fraction at heights ``z_m`` ``(...)`` (m) between the four levels ``sky4`` ``(..., 4)``
    (linear; constant below the first and above the last level; twin of ``po_level``)."""
    sky4 = np.asarray(sky4, np.float64)
    z = np.asarray(z_m, np.float64)
    lv = np.asarray(LEVELS_M, np.float64)
    out = sky4[..., 0].copy()
    for i in range(len(lv) - 1):
        t = np.clip((z - lv[i]) / (lv[i + 1] - lv[i]), 0.0, 1.0)
        out = np.where(z > lv[i], sky4[..., i] + (sky4[..., i + 1] - sky4[..., i]) * t, out)
    return out


# ------------------------------------------------------------------------------------------ GLSL
def _f(x: float) -> str:
    return f"{float(x):.6f}"


#: the field's lookups and factors (twins above)
GLSL = f"""
uniform sampler2D po_field;
uniform vec4 po_box;   // grid origin (m), 1 / grid size (1/m)
vec4 po_at(vec2 p) {{ return texture(po_field, (p - po_box.xy) * po_box.zw); }}
float po_level(vec4 s, float z) {{
    return z < {_f(LEVELS_M[1])} ? mix(s.r, s.g, clamp(z / {_f(LEVELS_M[1])}, 0.0, 1.0))
         : z < {_f(LEVELS_M[2])} ? mix(s.g, s.b, (z - {_f(LEVELS_M[1])}) / {_f(LEVELS_M[2] - LEVELS_M[1])})
         : mix(s.b, s.a, clamp((z - {_f(LEVELS_M[2])}) / {_f(LEVELS_M[3] - LEVELS_M[2])}, 0.0, 1.0));
}}
float po_ground(vec2 p) {{
    float s = po_at(p).r;
    return sqrt(s + (1.0 - s) * {_f(BOUNCE)});
}}
float po_wall(vec3 p, vec3 n) {{
    float f = clamp(2.0 * po_level(po_at(p.xy + {_f(WALL_OFFSET_M)} * n.xy), p.z), 0.0, 1.0);
    float v = 1.0 - sqrt(1.0 - f * f);
    return sqrt(v + (1.0 - v) * {_f(BOUNCE)}) * (1.0 - {_f(FOOT_K)} * (1.0 - smoothstep(0.0, {_f(FOOT_M)}, p.z)));
}}
"""

#: the ground's lit line (after .photo_atmosphere's wet-ground patch): the ambient part scaled
GROUND_OLD = "(light_at(n) + lamp_light(v_world, n))"
GROUND_NEW = "(light_at(n) - (1.0 - po_ground(v_world.xy)) * light_vis(n, 0.0) + lamp_light(v_world, n))"
#: the facade's canyon ramp (:data:`.photo_facades.CANYON_NEW`'s first line) gives way to the wall's factor
FACADE_NEW = "    float canyon = po_wall(v_world, n);\n"
#: a text of :data:`.photo_facades.LIGHT_NEW` beside the canyon ramp: the facade source is the photo one
PHOTO_FACADE_MARK = "refl = facade_mirror("


def _facade_old() -> str:
    from urbanarena.render.scene3d.photo_facades import CANYON_NEW

    return CANYON_NEW.splitlines(keepends=True)[0]


def patch_source(src: str, program: str = "") -> str:
    """A photo program's fragment source (after :func:`.photo_facades.patch_source` and
    :func:`.photo_atmosphere.patch_source`) with the field (module docstring): the ``ground`` programs' ambient
    scaled by ``po_ground``, the photo ``facade`` program's canyon ramp replaced by ``po_wall``; other sources
    (a facade without :mod:`.photo_facades`' lighting among them), and every source while :data:`ENABLED` is
    false, unchanged.

    Raises:
        RuntimeError: the text to patch is missing (shaders edited without this module)."""
    if not ENABLED or program not in ("ground", "facade"):
        return src
    if program == "facade" and PHOTO_FACADE_MARK not in src:
        return src          # the realistic facade (the photo facades switched off): its own light
    old, new = (GROUND_OLD, GROUND_NEW) if program == "ground" else (_facade_old(), FACADE_NEW)
    if src.count(old) != 1 or src.count("void main() {") != 1:
        raise RuntimeError(f"photo occlusion: the {program} text to patch was not found once (shaders changed?)")
    return src.replace("void main() {", GLSL + "void main() {").replace(old, new)


class FieldTexture:
    """The field of a renderer's scene as a texture, its programs pointed at it (:data:`FIELD_UNIT`).

    Args:
        renderer: a :class:`.renderer.SceneRenderer` (its ``ctx``, ``scene``, ``_keep``).
        programs: the programs patched with the field (their ``po_field`` and ``po_box`` uniforms are set).
    """

    def __init__(self, renderer, programs) -> None:
        import moderngl

        f = field_for(renderer.scene)
        ny, nx = f.sky.shape[:2]
        data = np.clip(np.round(f.sky * 255.0), 0, 255).astype(np.uint8)
        self.texture = renderer._keep(renderer.ctx.texture((nx, ny), 4, np.ascontiguousarray(data).tobytes(),
                                                           alignment=1))
        self.texture.filter = (moderngl.LINEAR, moderngl.LINEAR)
        self.texture.repeat_x = self.texture.repeat_y = False
        box = (f.origin[0], f.origin[1], 1.0 / (nx * f.cell_m), 1.0 / (ny * f.cell_m))
        for prog in programs:
            if prog is not None and "po_field" in prog:
                prog["po_field"].value = FIELD_UNIT
                prog["po_box"].value = box

    def use(self) -> None:
        """Bind the field to :data:`FIELD_UNIT` (each frame: renderers share the GL context)."""
        self.texture.use(FIELD_UNIT)


def source_identity() -> dict | None:
    """Version and sha256 (12 hex) of the GLSL and constants (photo render identity); ``None`` when off."""
    import hashlib

    if not ENABLED:
        return None
    text = GLSL + GROUND_NEW + FACADE_NEW + repr((CELL_M, N_AZ, MAX_DIST_M, FAR_FROM_M, MAX_STEP_M, FOOT_K, FOOT_M))
    return {"version": OCCLUSION_VERSION, "glsl": hashlib.sha256(text.encode()).hexdigest()[:12]}


__all__ = ["BOUNCE", "CELL_M", "ENABLED", "FIELD_UNIT", "FieldTexture", "GLSL", "LEVELS_M", "N_AZ",
           "OCCLUSION_VERSION", "OcclusionField", "compute_field", "field_for", "fill_inside", "foot_fade", "ground_factor",
           "height_grid", "level_mix", "open_sky", "patch_source", "source_identity", "wall_factor"]
