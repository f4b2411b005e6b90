"""The ``photo`` style's wall and ground materials (issue 24 item 2, tells "textures tile visibly and are
spotless", "walls one untextured plane"): photographs instead of the realistic style's value-noise grain.

Photo style only: ``flat`` and ``realistic`` never reach this module, so their pixels stay as they were.

Source: three CC0 photographs shipped in the pinned PyPI wheel of ``scikit-image`` 0.26.0 (``skimage/data``;
licence and origin stated in the package's own ``_fetchers.py``): a brick wall (CC0Textures ``Bricks25``), gravel
(CC0Textures ``Gravel04``) and a lawn (``Grass-01`` by linolafett), greyscale, 512 x 512. They carry the
*luminance* of the surface; its colour stays the realistic style's material colour (``building:colour`` where
tagged), which the photo modulates.

* **Layers** (:func:`build_layers`), one ``R8`` texture array of :data:`TEX_PX` squared layers, mipmapped
  (trilinear), bound once a frame to :data:`MATERIAL_UNIT`:

  - :data:`LAYER_BRICK`: an atlas of :data:`BRICK_COLS` x :data:`BRICK_ROWS` brick faces (128 x 32 texels each)
    cut out of the brick photo (:func:`brick_faces`: dark bricks between bright mortar, found by a threshold
    halfway between the photo's median and its 95th percentile, connected components taller than 2.2 x their
    width, inset by :data:`BRICK_INSET`, mortar texels left in a corner set to the face's median, turned so the
    long side runs along the wall; mirrored copies fill the cells beyond the faces found);
  - :data:`LAYER_GRAVEL`, :data:`LAYER_GRASS`: the photo made **tileable** (:func:`make_tileable`: crossfaded
    with itself shifted by half its size under a ``sin^2`` window, with the blend's variance restored).

  Every layer is stored as the photo's *relative* luminance: texel ``s = round(128 L / mean(L))`` (clipped to
  255), so the shader's ratio ``r = s / 128`` is 1 on average and the photo's own contrast around it.
* **Stochastic tiling** (:func:`stochastic_ratio`, GLSL :data:`LOOKUP_GLSL`; no repeat at street distances):
  the surface position ``p`` (metres) in tile units ``q = p / tile_m`` lies in a triangle of a triangle grid
  (vertices :data:`HEX_K` per tile, after Heitz and Neyret's and Mikkelsen's hex tiling); a vertex draws the
  photo turned by ``90 k`` degrees and shifted by ``o`` (from the hash ``h = rhash(vertex, seed)``:
  ``o = ((h & 1023), (h >> 10 & 1023)) / 1024``, ``k = h >> 20 & 3``) at ``uv = turn_k(q) + o``. Two of the
  triangle's three vertices draw (:func:`hex_vertices`): the one of least barycentric weight drops out and the
  other two give up that weight, so a vertex enters or leaves the blend at weight 0 (no seam); the two weights
  are cubed and normalised (one dominates near it) and the blend keeps the photo's contrast:
  ``r = 1 + sum w (r_i - 1) / sqrt(sum w^2)`` (variance-preserving blending, without the histogram transform).
  Both samples take one level of detail, GL's isotropic one from the derivatives of ``q`` (their offsets jump
  between triangles, so their own derivatives would not do).
* **Distance** (:func:`contrast_gains`): a box-filtered mip level flattens the photo towards its mean (a gravel
  stone is a pixel at 10 m) where a real surface stays rough at every scale; at level of detail ``l`` the
  deviation ``r - 1`` is multiplied by a per-layer gain that brings the level's contrast up to level 0's times
  :data:`MIP_KEEP` ``** l`` (never below 1), as the line :func:`gain_fit` draws through the levels' gains
  (``2 ** max(0, slope (l - start))``; a formula is cheaper on llvmpipe than a table lookup per fragment).
* **Materials** (:data:`MATERIALS`: layer, metres per tile, strength ``a``; the albedo is multiplied by
  ``1 + a (r - 1)``; the realistic material's own synthetic grain is left out, its larger structure kept):

  - walls (by the realistic material choice of :mod:`.building_look`, tinted by its colour): brick -- every
    brick of the realistic running bond (0.25 x 0.075 m) shows one photographed face picked by a hash of its
    course and place, the mortar joints stay; plaster -- the gravel photo at :data:`PLASTER` scale as render
    grain; stone blocks and concrete panels -- the gravel photo at their scales; glass, wood and metal as
    realistic;
  - ground: asphalt -- the gravel photo at asphalt-aggregate scale; sidewalk paving slabs and the setts -- a
    fine concrete/granite grain from the gravel photo; grass -- the lawn photo at :data:`GRASS` scale.

  The grey photos also tint the grain a little (:data:`HUE_SHIFT`): brighter texels warmer, darker cooler.
  On top, low-frequency **dirt and wear**: on paving and setts ``1 - A / 2 + A n`` (``n`` a value noise of
  wavelength :data:`DIRT_M`, ``A`` = :data:`DIRT_A`); on walls (not glass) soiling streaks running down,
  ``1 - STREAK_A n(u) (0.5 + 0.5 smoothstep(2, 12, z))`` (``n(u)`` a 1-D value noise along the wall of wavelength
  :data:`STREAK_M`), darkest high up where the rain runs off.
* **Cost**: one lookup of two samples per ground fragment and per wall fragment (the wall's parameters chosen
  without branches: llvmpipe runs every branch of a shader), plus one brick-face sample on walls; a third
  sample (the whole triangle) cost about 9 % more panorama CPU time on llvmpipe (one interleaved run: 374
  against 343 ms; docs/renderer.md).

Windows, shopfronts, kerbs, shadows, haze and rain are untouched (road paint and the ground's metre-scale variation:
:mod:`.photo_ground`). The photos' own scale, from their content: gravel stones of 15-25 texels are 2-3 cm, so that
photo spans about 0.6 m; the lawn's clover leaflets of about 20 texels are 1-2 cm, so about 0.5 m. The tile sizes of
:data:`MATERIALS` (0.3-0.8 m) are ours: the gravel drawn smaller as asphalt aggregate and render grain, larger as
concrete; the lawn a little larger than life.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from urbanarena.render.scene3d import photo_ground as PG
from urbanarena.render.scene3d import photo_ground_wear as PW
from urbanarena.render.scene3d import photo_paving as PV
from urbanarena.render.scene3d.photo_ground import M32, rhash_np  # noqa: F401  (re-exported)

PACKAGE = "scikit-image"
#: bumped whenever the layers, the lookup or the material parameters change pixels (photo render identity)
MATERIALS_VERSION = "photo-materials-2"
#: texture unit of the material array (0 signs, 1 sky, 2 sun shadow, 3 photo trees)
MATERIAL_UNIT = 6
TEX_PX = 512
FILES = {"brick": "materials/brick.png", "gravel": "materials/gravel.png", "grass": "materials/grass.png"}
LAYER_BRICK, LAYER_GRAVEL, LAYER_GRASS = 0, 1, 2
N_LAYERS = 3
#: brick face atlas: columns x rows of (TEX_PX / cols) x (TEX_PX / rows) texel faces
BRICK_COLS, BRICK_ROWS = 4, 16
#: share of a found brick's bounding box cut off on each side (the perspective leaves mortar at its corners)
BRICK_INSET = (0.1, 0.25)    # along its length, across it
#: relative luminance 1 is stored as this texel value
MEAN_LEVEL = 128.0
#: wavelength of the dirt and wear noise (m) and its amplitude (the albedo times 1 - A / 2 + A n)
DIRT_M, DIRT_A = 7.0, 0.4
#: wall soiling streaks: wavelength along the wall (m) and depth (share of the albedo at most)
STREAK_M, STREAK_A = 1.3, 0.16
#: colour of the grain: the albedo's red times 1 + HUE_SHIFT d and blue times 1 - HUE_SHIFT d, with d the grain's
#: deviation (ours: brighter stones and blades a little warmer)
HUE_SHIFT = 0.2
#: triangle-grid density of the stochastic tiling: grid vertices (each drawing the photo with its own offset and
#: turn) are 1 / HEX_K tiles apart
HEX_K = 1.5
#: each mip level keeps this share of the contrast of the one above (:func:`contrast_gains`), for
#: :data:`MIP_LEVELS` levels (512 to 1 texel)
MIP_KEEP, MIP_LEVELS = 0.85, 10


@dataclass(frozen=True)
class Material:
    """A photo material: ``layer`` of the array, ``tile_m`` metres per texture repeat, ``strength`` of the
    photo's contrast (1: its own), ``seed`` of the stochastic tiling."""

    layer: int
    tile_m: float
    strength: float
    seed: int


#: the photo materials (module docstring); scales and strengths ours, chosen by eye on renders of the default city
ASPHALT = Material(LAYER_GRAVEL, 0.25, 0.55, 71)
PAVING = Material(LAYER_GRAVEL, 0.6, 0.35, 72)
SETTS = Material(LAYER_GRAVEL, 0.5, 0.45, 73)
GRASS = Material(LAYER_GRASS, 0.7, 1.0, 74)
PLASTER = Material(LAYER_GRAVEL, 0.3, 0.25, 75)
CONCRETE = Material(LAYER_GRAVEL, 0.8, 0.35, 76)
STONE = Material(LAYER_GRAVEL, 0.5, 0.4, 77)
MATERIALS = {"asphalt": ASPHALT, "paving": PAVING, "setts": SETTS, "grass": GRASS, "plaster": PLASTER,
             "concrete": CONCRETE, "stone": STONE}


class MaterialAssetError(RuntimeError):
    """A material photo is missing or unreadable, or has no usable bricks (names the file)."""


# ------------------------------------------------------------------------------------------------ the layers
def relative(lum: np.ndarray) -> np.ndarray:
    """``lum`` (greyscale, any shape) as relative luminance texels: ``round(128 lum / mean(lum))`` clipped to
    0-255, ``uint8``."""
    lum = np.asarray(lum, np.float64)
    m = float(lum.mean())
    if m <= 0:
        return np.full(lum.shape, int(MEAN_LEVEL), np.uint8)
    return np.clip(np.rint(lum * (MEAN_LEVEL / m)), 0, 255).astype(np.uint8)


def make_tileable(img: np.ndarray) -> np.ndarray:
    """``img`` ``(N, N)`` made to wrap without a seam: ``m + (w (a - m) + (1 - w) (b - m)) / sqrt(w^2 + (1 - w)^2)``
    with ``b`` the image shifted by ``N / 2`` in both axes (its seams moved to the middle, where ``w`` is 1),
    ``w = sin^2(pi x / N) sin^2(pi y / N)`` (0 at the border), ``m`` the mean. Float64."""
    a = np.asarray(img, np.float64)
    n0, n1 = a.shape
    b = np.roll(a, (n0 // 2, n1 // 2), axis=(0, 1))
    wy = np.sin(np.pi * (np.arange(n0) + 0.5) / n0) ** 2
    wx = np.sin(np.pi * (np.arange(n1) + 0.5) / n1) ** 2
    w = wy[:, None] * wx[None, :]
    m = a.mean()
    return m + (w * (a - m) + (1 - w) * (b - m)) / np.sqrt(w * w + (1 - w) * (1 - w))


def brick_faces(lum: np.ndarray) -> list[np.ndarray]:
    """The brick faces of the brick photo ``lum`` ``(H, W)`` (bricks standing, long side vertical, between
    brighter mortar), each cropped inside its bounding box by :data:`BRICK_INSET` and turned so its long side is
    horizontal, texels brighter than the threshold (mortar left in a corner by the tilt) set to the face's
    median; in reading order of their box corners. Float64 crops."""
    from scipy import ndimage

    a = np.asarray(lum, np.float64)
    t = 0.5 * (np.median(a) + np.percentile(a, 95))
    dark = ndimage.binary_opening(a < t, structure=np.ones((5, 5), bool))
    lab, n = ndimage.label(dark)
    out = []
    h, w = a.shape
    for k, sl in enumerate(ndimage.find_objects(lab), 1):
        if sl is None:
            continue
        r0, r1, c0, c1 = sl[0].start, sl[0].stop, sl[1].start, sl[1].stop
        bh, bw = r1 - r0, c1 - c0
        if bh < 2.2 * bw or bw < 8 or r0 == 0 or c0 == 0 or r1 == h or c1 == w:
            continue   # not a whole standing brick (touches the border, or a fragment)
        il, ia = int(round(BRICK_INSET[0] * bh)), int(round(BRICK_INSET[1] * bw))
        face = a[r0 + il:r1 - il, c0 + ia:c1 - ia].T.copy()
        med = np.median(face)
        face[face > t] = med          # mortar the tilt leaves in a corner of the box takes the face's median
        out.append(face)
    return out


def _resize(img: np.ndarray, w: int, h: int) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.fromarray(np.asarray(img, np.float32), "F").resize((w, h), Image.BILINEAR), np.float64)


def brick_atlas(faces: list[np.ndarray], size: int = TEX_PX) -> np.ndarray:
    """``(size, size)`` float64 atlas of :data:`BRICK_COLS` x :data:`BRICK_ROWS` cells; cell ``k`` (row-major)
    holds face ``k mod n`` resized to the cell, mirrored left-right when ``k // n`` is odd and top-bottom when
    ``k // (2 n)`` is odd.

    Raises:
        MaterialAssetError: no faces."""
    if not faces:
        raise MaterialAssetError("the brick photo has no whole bricks")
    cw, ch = size // BRICK_COLS, size // BRICK_ROWS
    atlas = np.zeros((size, size), np.float64)
    n = len(faces)
    for k in range(BRICK_COLS * BRICK_ROWS):
        f = _resize(faces[k % n], cw, ch)
        if (k // n) % 2:
            f = f[:, ::-1]
        if (k // (2 * n)) % 2:
            f = f[::-1, :]
        r, c = divmod(k, BRICK_COLS)
        atlas[r * ch:(r + 1) * ch, c * cw:(c + 1) * cw] = f
    return atlas


def _read(folder: Path, rel: str) -> np.ndarray:
    from PIL import Image, UnidentifiedImageError

    path = folder / rel
    try:
        with Image.open(path) as im:
            a = np.asarray(im.convert("L"), np.float64)
    except (OSError, UnidentifiedImageError) as e:
        raise MaterialAssetError(f"{path}: unreadable material photo ({e})") from None
    if a.shape != (TEX_PX, TEX_PX):
        raise MaterialAssetError(f"{path}: {a.shape[1]}x{a.shape[0]} pixels, expected {TEX_PX}x{TEX_PX}")
    return a


def build_layers(folder: str | Path) -> np.ndarray:
    """The material array ``(N_LAYERS, TEX_PX, TEX_PX)`` ``uint8`` (module docstring) from the photos under
    ``folder`` (the package's cache folder).

    Raises:
        MaterialAssetError: a photo missing, unreadable, of another size, or the brick photo without bricks."""
    folder = Path(folder)
    brick = _read(folder, FILES["brick"])
    layers = np.zeros((N_LAYERS, TEX_PX, TEX_PX), np.uint8)
    layers[LAYER_BRICK] = relative(brick_atlas(brick_faces(brick)))
    layers[LAYER_GRAVEL] = relative(make_tileable(_read(folder, FILES["gravel"])))
    layers[LAYER_GRASS] = relative(make_tileable(_read(folder, FILES["grass"])))
    return layers


def box_mips(layer: np.ndarray) -> list[np.ndarray]:
    """Mip levels of ``layer`` ``(N, N)`` as GL builds them for a power-of-two size: each the 2 x 2 box mean of
    the one above, down to 1 x 1 (float64; level 0 is ``layer``)."""
    cur = np.asarray(layer, np.float64)
    out = [cur]
    while cur.shape[0] > 1 and cur.shape[1] > 1:
        cur = 0.25 * (cur[0::2, 0::2] + cur[1::2, 0::2] + cur[0::2, 1::2] + cur[1::2, 1::2])
        out.append(cur)
    return out


def contrast_gains(layer: np.ndarray, keep: float | None = None, levels: int = MIP_LEVELS) -> np.ndarray:
    """Per mip level ``k < levels`` the factor that brings the level's contrast (standard deviation of its
    :func:`box_mips` level) up to level 0's times ``keep ** k`` (default :data:`MIP_KEEP`); never below 1 (a
    level that keeps more contrast is left alone), 1 at level 0 and for a flat level. A box
    filter alone flattens the photo towards its mean with distance (a gravel stone is a pixel at 10 m) where a
    real surface stays rough at every scale; the shader multiplies the deviation ``r - 1`` by the gain at its
    level of detail (interpolated)."""
    keep = MIP_KEEP if keep is None else keep
    mips = box_mips(layer)
    s0 = mips[0].std()
    out = np.ones(levels)
    for k in range(1, levels):
        sd = mips[min(k, len(mips) - 1)].std()
        out[k] = max(1.0, s0 * keep ** k / sd) if sd > 1e-9 else 1.0
    return out


def gain_fit(gains: np.ndarray) -> tuple[float, float]:
    """``(start, slope)`` of the line ``log2 gain = slope (level - start)`` fitted (least squares) to the levels
    of ``gains`` (:func:`contrast_gains`) above 1; ``(MIP_LEVELS, 0)`` when none is. The shader's gain at level
    of detail ``l`` is ``2 ** max(0, slope (l - start))``: one formula, no table lookup per fragment."""
    g = np.asarray(gains, np.float64)
    lv = np.flatnonzero(g > 1.0 + 1e-6)
    if len(lv) == 0:
        return float(MIP_LEVELS), 0.0
    if len(lv) == 1:
        return float(lv[0] - 1), float(np.log2(g[lv[0]]))
    slope, icpt = np.polyfit(lv.astype(np.float64), np.log2(g[lv]), 1)
    return float(-icpt / slope) if slope > 0 else float(MIP_LEVELS), float(max(slope, 0.0))


@dataclass(frozen=True)
class MaterialKit:
    """The built material array ``layers`` ``(N_LAYERS, TEX_PX, TEX_PX)`` ``uint8``, its contrast ``gains``
    ``(N_LAYERS, MIP_LEVELS)`` (:func:`contrast_gains`) and their fit ``gain_lines`` ``(N_LAYERS, 2)`` float32
    (:func:`gain_fit`: start, slope; what the shader uses), its identity (sha256 of all, 16 hex), ``bricks``
    faces found."""

    layers: np.ndarray
    gains: np.ndarray
    gain_lines: np.ndarray
    identity: str
    bricks: int


def kit_from_layers(layers: np.ndarray, bricks: int = 0) -> MaterialKit:
    """A :class:`MaterialKit` of ``layers`` ``(N_LAYERS, n, n)`` ``uint8`` (a power-of-two ``n``)."""
    gains = np.stack([contrast_gains(layer) for layer in layers]).astype(np.float32)
    lines = np.array([gain_fit(g) for g in gains], np.float32)
    h = hashlib.sha256(np.ascontiguousarray(layers).tobytes() + gains.tobytes() + lines.tobytes()).hexdigest()[:16]
    return MaterialKit(np.ascontiguousarray(layers), gains, lines, h, bricks)


def load_material_kit(folder: str | Path) -> MaterialKit:
    """:func:`build_layers` of ``folder`` as a kit (raises as it does)."""
    layers = build_layers(folder)
    return kit_from_layers(layers, len(brick_faces(_read(Path(folder), FILES["brick"]))))


_LOADED: dict = {}
_LOCK = threading.Lock()
_INSTEAD = "drawing the realistic walls and ground"


def photo_materials(quiet: bool = False) -> MaterialKit | None:
    """The pinned package's material kit when it is installed and whole (built once per process), else ``None``
    after one line on stderr (once per process, unless ``quiet``): the photo style then draws the realistic
    walls and ground. Never fetches."""
    from urbanarena.render.scene3d.asset_kits import load_kit_once

    return load_kit_once(_LOADED, _LOCK, PACKAGE, load_material_kit, (MaterialAssetError, OSError),
                         missing=lambda why: f"photo materials unavailable ({why}); {_INSTEAD}",
                         broken=lambda why: f"photo materials unavailable ({why}); {_INSTEAD}", quiet=quiet)


# ------------------------------------------------------------------------------------------ the Python twin
def turn(q: np.ndarray, k) -> np.ndarray:
    """``q`` ``(..., 2)`` turned by ``90 k`` degrees (``k`` broadcast): (x, y), (-y, x), (-x, -y), (y, -x)."""
    x, y = q[..., 0], q[..., 1]
    k = np.asarray(k) % 4
    return np.stack([np.select([k == 0, k == 1, k == 2], [x, -y, -x], y),
                     np.select([k == 0, k == 1, k == 2], [y, x, -y], -x)], -1)


def bilinear_repeat(layer: np.ndarray, uv: np.ndarray) -> np.ndarray:
    """GL's ``LINEAR`` filtering with ``REPEAT`` wrapping of ``layer`` ``(N, M)`` (row ``j`` at ``v = (j + 0.5) /
    N``) at ``uv`` ``(..., 2)``; texel values as stored (0-255), float64."""
    n, m = layer.shape
    x = uv[..., 0] * m - 0.5
    y = uv[..., 1] * n - 0.5
    x0, y0 = np.floor(x), np.floor(y)
    fx, fy = x - x0, y - y0
    x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
    L = np.asarray(layer, np.float64)

    def at(j, i):
        return L[j % n, i % m]

    return ((1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x0 + 1))
            + fy * ((1 - fx) * at(y0 + 1, x0) + fx * at(y0 + 1, x0 + 1)))


def cell_draw(cells: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Offset ``o`` ``(..., 2)`` and turn ``k`` of the integer grid vertices ``cells`` ``(..., 2)`` (module
    docstring)."""
    h = rhash_np(cells[..., 0], cells[..., 1], seed)
    o = np.stack([(h & 1023) / 1024.0, ((h >> 10) & 1023) / 1024.0], -1)
    return o, (h >> 20) & 3


def hex_vertices(q: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """The two triangle-grid vertices that draw at tile coordinates ``q`` ``(..., 2)`` (integer, skewed frame)
    and their weights ``(..., 2)``: of the three vertices of the triangle around ``q`` the one of least
    barycentric weight drops out (the first on a tie, as the shader), the other two keep their weight less that
    one, cubed and normalised to sum 1."""
    g = np.asarray(q, np.float64) * HEX_K
    sk = np.stack([g[..., 0] - 0.57735027 * g[..., 1], 1.15470054 * g[..., 1]], -1)
    base = np.floor(sk)
    f = sk - base
    t = 1.0 - f[..., 0] - f[..., 1]
    low = (t > 0.0)[..., None]
    w = np.where(low, np.stack([t, f[..., 1], f[..., 0]], -1), np.stack([-t, 1 - f[..., 1], 1 - f[..., 0]], -1))
    b = base.astype(np.int64)
    v = np.stack([np.where(low, b, b + [1, 1]), np.where(low, b + [0, 1], b + [1, 0]),
                  np.where(low, b + [1, 0], b + [0, 1])], -2)                     # (..., 3, 2)
    m = np.argmin(w, axis=-1)
    keep = np.stack([np.where(m == 0, 1, 0), np.where(m == 2, 1, 2)], -1)        # (..., 2) vertex indices
    wab = np.take_along_axis(w, keep, -1) - w.min(-1, keepdims=True)
    wab = wab ** 3
    wab = wab / np.maximum(wab.sum(-1, keepdims=True), 1e-30)
    va = np.take_along_axis(v, keep[..., 0, None, None].repeat(2, -1), -2)[..., 0, :]
    vb = np.take_along_axis(v, keep[..., 1, None, None].repeat(2, -1), -2)[..., 0, :]
    return [va, vb], wab


def stochastic_ratio(layer: np.ndarray, q: np.ndarray, seed: int) -> np.ndarray:
    """The relative luminance ``r`` the shader's ``photo_ratio`` draws at tile coordinates ``q`` ``(..., 2)``
    (module docstring), at full resolution (mip level 0, gain 1). Float64, ``q.shape[:-1]``."""
    q = np.asarray(q, np.float64)
    verts, w = hex_vertices(q)
    acc = np.zeros(q.shape[:-1])
    for n, v in enumerate(verts):
        o, k = cell_draw(v, seed)
        acc += w[..., n] * (bilinear_repeat(layer, turn(q, k) + o) / MEAN_LEVEL - 1.0)
    return 1.0 + acc / np.sqrt(np.maximum((w * w).sum(-1), 1e-30))


def plain_ratio(layer: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Plain periodic tiling (``uv = q``), for comparison with :func:`stochastic_ratio`."""
    return bilinear_repeat(layer, np.asarray(q, np.float64)) / MEAN_LEVEL


# ------------------------------------------------------------------------------------------------ the GLSL
#: the stochastic lookup (twin: :func:`stochastic_ratio`); needs ``rhash`` (realistic_shaders.HASH) before it
LOOKUP_GLSL = f"""
uniform sampler2DArray photo_mat;
uniform vec2 photo_gain[{N_LAYERS}];   // contrast gain line per layer: start level, slope (gain_fit)
vec2 photo_turn(vec2 q, uint k) {{
    return k == 0u ? q : (k == 1u ? vec2(-q.y, q.x) : (k == 2u ? -q : vec2(q.y, -q.x)));
}}
// relative luminance (1 on average) of photo layer `layer` at tile coordinates q, stochastically tiled: the
// three vertices of the triangle-grid cell around q each draw the photo turned and shifted by their hash
float photo_ratio(float layer, vec2 q, uint seed) {{
    // the level of detail (isotropic, as GL picks it: the longer footprint axis in texels), one for the three
    // samples (their offsets jump between grid cells, so their own derivatives would not do)
    vec2 dx = dFdx(q), dy = dFdy(q);
    float lod = clamp(0.5 * log2(max(max(dot(dx, dx), dot(dy, dy)), 1e-20)) + {np.log2(TEX_PX):.1f}, 0.0, {MIP_LEVELS - 1.0:.1f});
    vec2 g = q * {HEX_K:.6f};
    vec2 sk = vec2(g.x - 0.57735027 * g.y, 1.15470054 * g.y);   // skewed: the triangle grid's unit cells
    vec2 base = floor(sk);
    vec2 f = sk - base;
    float t = 1.0 - f.x - f.y;
    bool low = t > 0.0;
    vec3 w = low ? vec3(t, f.y, f.x) : vec3(-t, 1.0 - f.y, 1.0 - f.x);
    ivec2 b = ivec2(base);
    ivec2 v0 = low ? b : b + ivec2(1, 1), v1 = low ? b + ivec2(0, 1) : b + ivec2(1, 0);
    ivec2 v2 = low ? b + ivec2(1, 0) : b + ivec2(0, 1);
    // two samples: the vertex of least weight drops out and the others give up that weight (so a vertex
    // enters or leaves the blend at weight 0: no seam), then the weights are cubed (one dominates near it)
    int m = (w.x <= w.y && w.x <= w.z) ? 0 : (w.y <= w.z ? 1 : 2);
    ivec2 va = m == 0 ? v1 : v0, vb = m == 2 ? v1 : v2;
    vec2 wab = vec2(m == 0 ? w.y : w.x, m == 2 ? w.y : w.z) - min(w.x, min(w.y, w.z));
    wab = wab * wab * wab;
    wab /= max(wab.x + wab.y, 1e-30);
    float acc = 0.0;
    for (int n = 0; n < 2; n++) {{
        uint h = rhash(uvec3(uvec2(n == 0 ? va : vb), seed));
        vec2 o = vec2(float(h & 1023u), float((h >> 10u) & 1023u)) / 1024.0;
        float r = textureLod(photo_mat, vec3(photo_turn(q, (h >> 20u) & 3u) + o, layer), lod).r * {255.0 / MEAN_LEVEL:.8f};
        acc += wab[n] * (r - 1.0);
    }}
    vec2 gl = photo_gain[int(layer + 0.5)];
    float gain = exp2(max(0.0, gl.y * (lod - gl.x)));
    return 1.0 + gain * acc / sqrt(max(dot(wab, wab), 1e-30));
}}
// albedo factor of a material: 1 + strength (r - 1), brighter texels a little warmer and darker ones a little
// cooler (HUE_SHIFT of the deviation: stones, blades and grains are not all one hue)
vec3 photo_grain(float layer, vec2 p_m, float tile_m, float strength, uint seed) {{
    float d = strength * (photo_ratio(layer, p_m / tile_m, seed) - 1.0);
    return (1.0 + d) * vec3(1.0 + {HUE_SHIFT:.3f} * d, 1.0, 1.0 - {HUE_SHIFT:.3f} * d);
}}
// wall soiling: vertical streaks (a 1-D value noise along the wall, wavelength STREAK_M), darkest at the top
float photo_streaks(float u_m, float z_m) {{
    float x = u_m / {STREAK_M:.2f}, i = floor(x), f = fract(x);
    float n = mix(h21(vec2(i, 0.0), 83u), h21(vec2(i + 1.0, 0.0), 83u), f * f * (3.0 - 2.0 * f));
    return 1.0 - {STREAK_A:.3f} * n * (0.5 + 0.5 * smoothstep(2.0, 12.0, z_m));
}}
float photo_dirt(vec2 p_m, uint seed) {{ return {1 - DIRT_A / 2:.4f} + {DIRT_A:.4f} * vnoise(p_m / {DIRT_M:.2f}, seed); }}
"""


def _grain(m: Material, p: str) -> str:
    return f"photo_grain({float(m.layer):.1f}, {p}, {m.tile_m:.4f}, {m.strength:.4f}, {int(m.seed)}u)"


#: realistic ground source -> photo (each replaced wherever it occurs: the one-material programs and the all
#: materials one). The synthetic grain of asphalt and setts is dropped; grass takes the lawn photo; on top the
#: metre-scale variation of :mod:`.photo_ground` (repair patches, stains, chipped paint, the lawn's colour).
GROUND_SWAPS = PG.ASPHALT_SWAPS + (
    ("(1.0 + 0.22 * grain * fine)", "1.0"),
    ("(1.0 + 0.3 * g * fine)", "1.0"),
    ("    a = asphalt(p, fine);\n", f"    a = asphalt(p, fine) * {_grain(ASPHALT, 'p')} * {PG.ASPHALT_FACTOR};\n"),
    ("    a = paving(p);\n", f"    a = {PV.CALL} * {_grain(PAVING, 'p')} * photo_dirt(p, 81u) * {PG.STAINS_FACTOR};\n"),
    ("    a = unpaved(p, fine);\n",
     f"    a = unpaved(p, fine) * {_grain(SETTS, 'p')} * photo_dirt(p, 82u) * {PG.STAINS_FACTOR};\n"),
    ("    a = trackbed(p, fine);\n", f"    a = trackbed(p, fine) * {PG.STAINS_FACTOR};\n"),
    ("    else if (is(a, vec3(120.0, 118.0, 112.0))) a = trackbed(p, fine);\n",
     f"    else if (is(a, vec3(120.0, 118.0, 112.0))) a = trackbed(p, fine) * {PG.STAINS_FACTOR};\n"),
    ("    a = grass(p, fine, step(81.0 / 255.0, a.r));\n",
     f"    a = grass(p, fine, step(81.0 / 255.0, a.r)) * {_grain(GRASS, 'p')};\n"),
    ("else if (is(a, vec3(80.0, 110.0, 50.0)) || is(a, vec3(82.0, 112.0, 52.0))) a = grass(p, fine, step(81.0 / 255.0, a.r));",
     "else if (is(a, vec3(80.0, 110.0, 50.0)) || is(a, vec3(82.0, 112.0, 52.0))) a = grass(p, fine, step(81.0 / 255.0, "
     f"a.r)) * {_grain(GRASS, 'p')};"),
    ("    if (is(a, vec3(72.0, 74.0, 78.0))) a = asphalt(p, fine);\n",
     f"    if (is(a, vec3(72.0, 74.0, 78.0))) a = asphalt(p, fine) * {_grain(ASPHALT, 'p')} * {PG.ASPHALT_FACTOR};\n"),
    ("    else if (is(a, vec3(168.0, 165.0, 158.0))) a = paving(p);\n",
     f"    else if (is(a, vec3(168.0, 165.0, 158.0))) a = {PV.CALL} * {_grain(PAVING, 'p')} * photo_dirt(p, 81u) * {PG.STAINS_FACTOR};\n"),
    ("    else if (is(a, vec3(132.0, 128.0, 118.0))) a = unpaved(p, fine);\n",
     f"    else if (is(a, vec3(132.0, 128.0, 118.0))) a = unpaved(p, fine) * {_grain(SETTS, 'p')} * photo_dirt(p, 82u) * {PG.STAINS_FACTOR};\n"),
)

#: the realistic facade's wall albedo and its photo replacement: the material told apart by its cell size
#: (realistic_shaders.FACADE_VS: brick 0.25 x 0.075, plaster 1e4 x 1e4, stone 0.6, concrete 3.0; glass, wood
#: and metal unchanged)
FACADE_OLD = "    vec3 albedo = v_albedo * (1.0 + v_amp.x * (tone - 0.5)) * (1.0 + v_amp.y * (stain - 0.5));\n"
FACADE_NEW = f"""    vec3 albedo = v_albedo * (1.0 + v_amp.x * (tone - 0.5)) * (1.0 + v_amp.y * (stain - 0.5));
    vec2 pw = vec2(u, z) + vec2(hf(wh, 0u), hf(wh, 8u)) * 97.0;     // each wall its own part of the photo
    // one lookup of each kind per fragment, parameters chosen without branches (llvmpipe runs every branch)
    bool bricks = abs(v_cell.x - 0.25) < 1e-3 && abs(v_cell.y - 0.075) < 1e-3;
    bool plaster = v_cell.x > 1e3, stone = abs(v_cell.x - 0.6) < 1e-3, panels = abs(v_cell.x - 3.0) < 1e-3;
    vec3 mat = plaster ? vec3({PLASTER.tile_m:.4f}, {PLASTER.strength:.4f}, {PLASTER.seed}.0)
        : (stone ? vec3({STONE.tile_m:.4f}, {STONE.strength:.4f}, {STONE.seed}.0)
        : (panels ? vec3({CONCRETE.tile_m:.4f}, {CONCRETE.strength:.4f}, {CONCRETE.seed}.0) : vec3(1.0, 0.0, 0.0)));
    vec3 grain = photo_grain({float(LAYER_GRAVEL):.1f}, pw, mat.x, mat.y, uint(mat.z));
    // brick: every brick of the bond a photographed face, picked by a hash of its course and place
    uvec2 bid = uvec2(ivec2(int(floor(cu)), int(row)));
    uint bh = rhash(uvec3(bid, wh ^ 40503u));
    uint bk = bh % {BRICK_COLS * BRICK_ROWS}u;
    vec2 scale = vec2({1.0 / BRICK_COLS:.8f}, {1.0 / BRICK_ROWS:.8f});
    vec2 buv = (vec2(float(bk % {BRICK_COLS}u), float(bk / {BRICK_COLS}u)) + 0.03 + 0.94 * vec2(fract(cu), fract(z / v_cell.y))) * scale;
    vec2 cont = vec2(cu, z / v_cell.y) * 0.94 * scale;
    float face = textureGrad(photo_mat, vec3(buv, {float(LAYER_BRICK):.1f}), dFdx(cont), dFdy(cont)).r * {255.0 / MEAN_LEVEL:.8f};
    float hue = float((bh >> 12u) & 255u) / 255.0 - 0.5;
    vec3 brick = v_albedo * face * (1.0 + 0.35 * v_amp.x * (tone - 0.5)) * (1.0 + v_amp.y * (stain - 0.5))
                 * vec3(1.0 + 0.12 * hue, 1.0, 1.0 - 0.12 * hue);
    if (v_glass < 0.5) {{
        albedo = bricks ? brick : albedo * grain;
        if (v_cell.x > 0.2) albedo *= photo_streaks(pw.x, z);   // dirt streaks run down from the top
    }}
"""


def _swap(src: str, old: str, new: str, what: str) -> str:
    if old not in src:
        raise RuntimeError(f"photo materials: the {what} source to replace was not found (shaders changed?)")
    return src.replace(old, new)


def _with_lookup(src: str) -> str:
    """``src`` with :data:`LOOKUP_GLSL` inserted after the realistic noise functions (it needs ``rhash`` and
    ``vnoise``)."""
    anchor = "float gridline(float x, float period, float hw) {"
    return _swap(src, anchor, LOOKUP_GLSL + anchor, "noise functions")


def wear_grains() -> tuple[str, str]:
    """The GLSL of the asphalt's and the paving's grain, as :mod:`.photo_ground_wear` finds them in the ground."""
    return _grain(ASPHALT, "p"), _grain(PAVING, "p")


def patch_source(src: str, program: str = "") -> str:
    """A realistic ``ground`` or ``facade`` fragment source made photo (module docstring); other programs are
    returned unchanged.

    Raises:
        RuntimeError: the realistic text to replace is missing (the shaders were edited without this module)."""
    if program == "ground":
        src = _with_lookup(src)
        anchor = "float gridline(float x, float period, float hw) {"
        src = _swap(src, anchor, PG.GLSL + PV.GLSL + anchor, "noise functions")
        hit = False
        for old, new in GROUND_SWAPS:
            if old in src:
                src, hit = src.replace(old, new), True
        if not hit:
            raise RuntimeError("photo materials: no ground material call found (shaders changed?)")
        src = PW.patch_ground(src, wear_grains())   # decals: covers, oil, tar lines, gum, moss, paths (.photo_ground_wear)
    elif program == "facade":
        src = _with_lookup(src)
        src = _swap(src, FACADE_OLD, FACADE_NEW, "facade albedo")
    return src


def source_identity() -> str:
    """sha256 (12 hex) of this module's GLSL and material parameters (part of the photo render identity)."""
    text = (LOOKUP_GLSL + FACADE_NEW + "".join(a + b for a, b in GROUND_SWAPS) + repr(MATERIALS)
            + PG.source_identity() + PV.source_identity() + PW.source_identity(wear_grains()))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


__all__ = ["ASPHALT", "CONCRETE", "GRASS", "LOOKUP_GLSL", "MATERIALS", "MATERIALS_VERSION", "MATERIAL_UNIT",
           "MaterialAssetError", "MaterialKit", "PACKAGE", "PAVING", "PLASTER", "SETTS", "STONE", "box_mips",
           "brick_atlas", "brick_faces", "build_layers", "contrast_gains", "gain_fit", "hex_vertices", "kit_from_layers",
           "load_material_kit", "make_tileable", "patch_source", "photo_materials", "plain_ratio", "relative",
           "rhash_np", "source_identity", "stochastic_ratio"]
