"""The ``photo`` style's trees (issue 24, tells "trees are blobs or lollipops"): bark-textured trunks and branches
and crowns of many alpha-tested photo leaf cards, from the fetched ``@dgreenheck/ez-tree`` package (MIT).

* **Texture atlas** (:func:`build_atlas`): one RGBA row of :data:`CELL_PX`-square cells, the four leaf cut-outs
  (:data:`LEAF_FILES`, PNG with alpha: a photographed twig with its leaves) then the four bark colour maps
  (:data:`BARK_FILES`, opaque). A leaf cell's transparent texels take the mean colour of its opaque ones (no dark
  fringe when filtering). Mipmaps are box-filtered and **coverage preserving** (:func:`coverage_mips`): in each
  leaf cell of each level the alpha is scaled so that the share of texels at alpha >= 0.5 stays the full-size
  cell's, so crowns do not thin out with distance.
* **Species** (:data:`SPECIES`): ``oak`` (oak leaves, oak bark), ``ash`` (ash leaves, willow bark), ``birch`` (the
  aspen twig tinted green, birch bark) and ``pine`` (pine twig, pine bark, a conical crown); chosen per tree by
  a hash of its OSM id with :data:`SPECIES_WEIGHTS`.
* **Templates** (:func:`tree_template`): per species :data:`VARIANTS` pre-built trees of unit size factor, seeded
  by the species and variant name: a tapered trunk (7 sides), five branches (5 sides) and
  :data:`Species.cards` leaf cards (two triangles each) placed in the crown volume -- points drawn in an
  ellipsoid (a cone for the pine) biased to its shell, each card standing on its twig's stem and leaning outward.
  Broadleaf crowns are lumpy: :data:`CLUMP_SHARE` of the cards gather (Gaussian, :data:`CLUMP_M`) around
  :data:`CLUMPS` leaf masses on the crown's outer half, leaving gaps between them; card sizes vary 0.65..1.25.
  A card's corner normals point away from the crown's centre (so the crown shades as one volume) and its colour
  is the species tint times an occlusion ``0.42 + 0.58 f`` (``f``: the card's radial share of the crown, inner
  leaves darker) and ``0.78 + 0.22 l`` (``l``: its height share in the crown, the underside in shade).
* **Placement** (:func:`tree_mesh`): every ``tree`` street object draws template ``variant`` of its species,
  turned by a hashed angle and scaled by the realistic style's size factor ``0.8 + 0.4 u`` (the same crown
  height and spread, so the baked crown shadows of :mod:`.realistic` still fall under it), carrying the object's
  feature index, its colours times a per-tree tint (:func:`tree_tint`). About 380-440 triangles a tree.
* **Shader** (:func:`program_sources`): the lit weather vertex shader plus a UV; the fragment shader samples the
  atlas (``textureGrad`` of the continuous UV, so bark repeats along the trunk without seams), discards alpha
  < 0.5 (cut-outs), lights (plus the sunlight through the leaf, :mod:`.photo_leaf_look`), tone-maps and hazes
  like the realistic foliage. The leaf cells of the atlas are graded towards street foliage
  (:func:`.photo_leaf_look.grade_leaf_cell`).

UV encoding: ``u = 2 k + s`` with ``k`` the atlas cell and ``s`` in 0..1 across it; ``v`` is 0..1 up a leaf card
and runs on along a bark cylinder (metres / :data:`BARK_REPEAT_M`; the shader wraps it).
"""

from __future__ import annotations

import hashlib
import math
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from urbanarena.render.scene3d.mesh_primitives import MeshData

PACKAGE = "@dgreenheck/ez-tree"
#: bumped whenever the trees' geometry, atlas or shader change pixels (part of the photo render identity)
TREES_VERSION = "photo-trees-3"   # 3: the leaf grade and translucency (.photo_leaf_look)
CELL_PX = 256
LEAF_FILES = ("leaves/oak_color.png", "leaves/ash_color.png", "leaves/aspen_color.png", "leaves/pine_color.png")
BARK_FILES = ("bark/oak_color_1k.jpg", "bark/willow_color_1k.jpg", "bark/birch_color_1k.jpg",
              "bark/pine_color_1k.jpg")
N_CELLS = len(LEAF_FILES) + len(BARK_FILES)
#: metres of trunk one bark texture covers vertically
BARK_REPEAT_M = 1.2
#: pre-built templates per species
VARIANTS = 3
#: texture unit of the atlas (0 signs, 1 sky, 2 sun shadow)
TREE_UNIT = 3
MIP_LEVELS = 5


class TreeAssetError(ValueError):
    """A tree texture that cannot be read (the message names the file)."""


@dataclass(frozen=True)
class Species:
    """One species: atlas cells of its leaves and bark, leaf tint (multiplies the photo), crown shape
    (``rx_m``, ``rz_m`` semi-axes at unit size; ``cone`` for conifers), number and size of its leaf cards."""

    name: str
    leaf_cell: int
    bark_cell: int
    tint: tuple[float, float, float]
    rx_m: float
    rz_m: float
    cards: int
    card_m: float
    cone: bool = False


SPECIES = (Species("oak", 0, 4, (0.72, 0.72, 0.68), 2.0, 1.9, 160, 1.3),
           Species("ash", 1, 5, (0.72, 0.72, 0.68), 1.8, 2.0, 160, 1.35),
           Species("birch", 2, 6, (0.42, 0.6, 0.55), 1.5, 2.3, 150, 1.1),
           Species("pine", 3, 7, (0.75, 0.75, 0.7), 1.7, 2.8, 120, 1.25, cone=True))
#: broadleaf crowns: leaf clumps per crown, share of cards in clumps, a clump's spread (m, at unit size)
CLUMPS, CLUMP_SHARE, CLUMP_M = 11, 0.75, 0.5
#: share of each species among the trees (Helsinki's street trees are mostly broadleaves)
SPECIES_WEIGHTS = (0.35, 0.3, 0.25, 0.1)
#: the realistic style's trunk height and crown centre (times the size factor; .meshes.object_mesh)
TRUNK_M, CROWN_Z_M = 2.4, 3.9


@dataclass(frozen=True)
class TreeKit:
    """What the photo trees are drawn from: the atlas ``(CELL_PX, N_CELLS * CELL_PX, 4)`` uint8 (row 0 = top),
    its mip levels (level ``k``: ``2^k`` times smaller, level 0 the atlas), per species a tuple of
    :data:`VARIANTS` templates (:class:`MeshData` with ``uv``, unit size), and an identity string."""

    atlas: np.ndarray
    mips: tuple[np.ndarray, ...]
    templates: tuple[tuple[MeshData, ...], ...]
    identity: str


# ------------------------------------------------------------------------------------------------ the atlas
def _read_rgba(path: Path) -> np.ndarray:
    from PIL import Image

    try:
        with Image.open(path) as im:
            im = im.convert("RGBA")
            # premultiplied resize: transparent texels do not bleed their (arbitrary) colour
            a = np.asarray(im, np.float32) / 255.0
    except OSError as e:
        raise TreeAssetError(f"{path}: cannot read tree texture: {e}") from e
    pm = np.concatenate([a[..., :3] * a[..., 3:], a[..., 3:]], axis=-1)
    chans = [np.asarray(Image.fromarray(pm[..., c]).resize((CELL_PX, CELL_PX), Image.Resampling.BOX), np.float32)
             for c in range(4)]
    out = np.stack(chans, axis=-1)
    alpha = out[..., 3:]
    out[..., :3] = np.where(alpha > 1e-4, out[..., :3] / np.maximum(alpha, 1e-4), 0.0)
    return np.clip(out, 0.0, 1.0)


def fill_transparent(cell: np.ndarray) -> np.ndarray:
    """``cell`` (H, W, 4) float 0..1 with the colour of every texel whose alpha is under 0.5 replaced by the mean
    colour of the others (unchanged when none is opaque)."""
    out = cell.copy()
    solid = out[..., 3] >= 0.5
    if solid.any():
        out[~solid, :3] = out[solid, :3].mean(axis=0)
    return out


def build_atlas(folder: Path) -> np.ndarray:
    """The atlas (module docstring) from the package folder: ``(CELL_PX, N_CELLS * CELL_PX, 4)`` uint8.

    Raises:
        TreeAssetError: a missing or unreadable texture (the message names it).
    """
    cells = []
    for rel in LEAF_FILES + BARK_FILES:
        p = Path(folder) / rel
        if not p.is_file():
            raise TreeAssetError(f"{p}: tree texture missing")
        c = _read_rgba(p)
        if rel in BARK_FILES:
            c[..., 3] = 1.0
        else:   # the leaf photos graded towards street foliage (.photo_leaf_look)
            from urbanarena.render.scene3d.photo_leaf_look import grade_leaf_cell

            c = grade_leaf_cell(c).astype(np.float32)
        cells.append(fill_transparent(c))
    return np.round(np.concatenate(cells, axis=1) * 255.0).astype(np.uint8)


def coverage_mips(atlas: np.ndarray, levels: int = MIP_LEVELS) -> tuple[np.ndarray, ...]:
    """Levels 0..``levels - 1`` of ``atlas`` (each a 2 x 2 box average of the one before). In every leaf cell
    (the first ``len(LEAF_FILES)``) of a smaller level the alpha is scaled by ``0.5 / t`` where ``t`` is the alpha
    quantile that leaves the level-0 cell's share of texels at alpha >= 0.5 above it (module docstring)."""
    base = atlas.astype(np.float32) / 255.0
    h, w = base.shape[:2]
    cell0 = w // N_CELLS
    cov0 = [float((base[:, k * cell0:(k + 1) * cell0, 3] >= 0.5).mean()) for k in range(len(LEAF_FILES))]
    out = [atlas]
    cur = base
    for _ in range(1, levels):
        cur = 0.25 * (cur[0::2, 0::2] + cur[1::2, 0::2] + cur[0::2, 1::2] + cur[1::2, 1::2])
        lvl = cur.copy()
        c = lvl.shape[1] // N_CELLS
        for k, cov in enumerate(cov0):
            a = lvl[:, k * c:(k + 1) * c, 3]
            if 0.0 < cov < 1.0:
                t = float(np.quantile(a, 1.0 - cov))
                if t > 1e-3:
                    lvl[:, k * c:(k + 1) * c, 3] = np.clip(a * (0.5 / t), 0.0, 1.0)
        out.append(np.round(lvl * 255.0).astype(np.uint8))
    return tuple(out)


# -------------------------------------------------------------------------------------------- the templates
def _rng(*parts) -> np.random.Generator:
    return np.random.default_rng(int.from_bytes(hashlib.sha256("/".join(map(str, parts)).encode()).digest()[:8],
                                                "big"))


def _cylinder(p0, p1, r0: float, r1: float, sides: int, cell: int, v0: float = 0.0):
    """Triangles ``(6 sides, 3)`` of a tapered open cylinder from ``p0`` to ``p1``, radial normals, bark UVs."""
    p0, p1 = np.asarray(p0, np.float64), np.asarray(p1, np.float64)
    ax = p1 - p0
    length = float(np.linalg.norm(ax))
    ax /= max(length, 1e-9)
    ref = np.array([0.0, 0.0, 1.0]) if abs(ax[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    e1 = np.cross(ax, ref)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(ax, e1)
    P, N, UV = [], [], []
    for i in range(sides):
        a0, a1 = 2 * math.pi * i / sides, 2 * math.pi * (i + 1) / sides
        d0, d1 = math.cos(a0) * e1 + math.sin(a0) * e2, math.cos(a1) * e1 + math.sin(a1) * e2
        q = [p0 + r0 * d0, p0 + r0 * d1, p1 + r1 * d1, p1 + r1 * d0]
        n = [d0, d1, d1, d0]
        u0, u1 = 2 * cell + i / sides, 2 * cell + (i + 1) / sides
        v1 = v0 + length / BARK_REPEAT_M
        uv = [(u0, v0), (u1, v0), (u1, v1), (u0, v1)]
        for k in (0, 1, 2, 0, 2, 3):
            P.append(q[k])
            N.append(n[k])
            UV.append(uv[k])
    return P, N, UV


def card(stem, axis, across, size_m: float, cell: int):
    """Two triangles of a leaf card ``size_m`` square standing on ``stem`` (its bottom middle), rising along
    ``axis`` and ``across`` sideways (unit vectors): ``(positions (6, 3), uv (6, 2))``, corner order
    bottom-left, bottom-right, top-right, bottom-left, top-right, top-left."""
    stem, axis, across = (np.asarray(v, np.float64) for v in (stem, axis, across))
    h = across * size_m / 2
    q = [stem - h, stem + h, stem + h + axis * size_m, stem - h + axis * size_m]
    eps = 0.002
    uv = [(2 * cell + eps, eps), (2 * cell + 1 - eps, eps), (2 * cell + 1 - eps, 1 - eps), (2 * cell + eps, 1 - eps)]
    idx = (0, 1, 2, 0, 2, 3)
    return np.array([q[k] for k in idx]), np.array([uv[k] for k in idx])


def tree_template(sp: Species, variant: int) -> MeshData:
    """The pre-built tree ``variant`` of species ``sp`` at size factor 1 (module docstring), standing at the
    origin: positions in metres, ``uv`` as the module docstring encodes it, colours the tint times occlusion."""
    rng = _rng(TREES_VERSION, sp.name, variant)
    P, N, C, UV = [], [], [], []
    bark_rgb = np.array([1.0, 1.0, 1.0])
    centre = np.array([0.0, 0.0, CROWN_Z_M + (0.9 if sp.cone else 0.0)])
    top = CROWN_Z_M + sp.rz_m * (1.0 if sp.cone else 0.45)
    p, n, uv = _cylinder((0, 0, 0), (0, 0, top), 0.17, 0.05, 7, sp.bark_cell)
    P += p
    N += n
    UV += uv
    C += [bark_rgb * (0.7 + 0.3 * min(q[2] / TRUNK_M, 1.0)) for q in p]
    for i in range(5):
        z = TRUNK_M + (top - TRUNK_M) * (0.1 + 0.7 * i / 5 + 0.1 * rng.random())
        a = 2 * math.pi * (i / 5 + 0.15 * rng.random())
        reach = (sp.rx_m * 0.75) * (1.0 - (z - TRUNK_M) / (top - TRUNK_M + 1.0) * (0.8 if sp.cone else 0.3))
        end = (reach * math.cos(a), reach * math.sin(a), z + (-0.3 if sp.cone else 0.7) * reach)
        p, n, uv = _cylinder((0, 0, z), end, 0.06, 0.02, 5, sp.bark_cell, v0=float(rng.random()))
        P += p
        N += n
        UV += uv
        C += [bark_rgb * 0.85] * len(p)
    tint = np.asarray(sp.tint)
    up = np.array([0.0, 0.0, 1.0])
    clumps = []
    for _ in range(CLUMPS):                                    # leaf masses on the crown's outer half
        d = rng.normal(size=3)
        d /= np.linalg.norm(d)
        clumps.append(centre + (0.55 + 0.3 * rng.random()) * d * np.array([sp.rx_m, sp.rx_m, sp.rz_m]))
    for _ in range(sp.cards):
        if sp.cone:
            t = rng.random() ** 0.8                            # height share up the cone (more cards low)
            z = TRUNK_M * 0.6 + t * (top - TRUNK_M * 0.6)
            r_cone = sp.rx_m * (1.0 - t) + 0.15
            a = 2 * math.pi * rng.random()
            f = 0.55 + 0.45 * math.sqrt(rng.random())
            pt = np.array([f * r_cone * math.cos(a), f * r_cone * math.sin(a), z])
            out = np.array([math.cos(a), math.sin(a), 0.0])
            axis = out - 0.35 * up
            frac = f
        elif rng.random() < CLUMP_SHARE:                       # around a clump: lumpy crown with gaps
            pt = clumps[int(rng.integers(CLUMPS))] + rng.normal(size=3) * CLUMP_M
            rel = (pt - centre) / np.array([sp.rx_m, sp.rx_m, sp.rz_m])
            frac = float(min(np.linalg.norm(rel), 1.0))
            out = (pt - centre) / max(np.linalg.norm(pt - centre), 1e-6)
            axis = out + 0.5 * up + 0.4 * rng.normal(size=3)
        else:
            d = rng.normal(size=3)
            d /= np.linalg.norm(d)
            frac = 0.45 + 0.55 * rng.random() ** 0.5
            pt = centre + frac * d * np.array([sp.rx_m, sp.rx_m, sp.rz_m])
            out = (pt - centre) / np.linalg.norm(pt - centre)
            axis = out + 0.5 * up + 0.4 * rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        side = np.cross(axis, rng.normal(size=3))
        side /= max(np.linalg.norm(side), 1e-9)
        size = sp.card_m * (0.65 + 0.6 * rng.random())
        q, uv = card(pt - axis * size * 0.3, axis, side, size, sp.leaf_cell)
        nrm = (pt - centre)
        nrm = 0.7 * nrm / max(np.linalg.norm(nrm), 1e-9) + 0.3 * up
        nrm /= np.linalg.norm(nrm)
        low = float(np.clip((pt[2] - TRUNK_M) / (top + 0.5 - TRUNK_M), 0.0, 1.0))   # underside in shade
        col = tint * (0.42 + 0.58 * frac) * (0.78 + 0.22 * low) * (0.9 + 0.2 * rng.random())
        P += list(q)
        UV += list(uv)
        N += [nrm] * 6
        C += [col] * 6
    f32 = np.float32
    return MeshData(np.asarray(P, f32), np.asarray(N, f32), np.asarray(C, f32), uv=np.asarray(UV, f32))


# -------------------------------------------------------------------------------------------- placement
def _unit(oid: str, salt: str) -> float:
    from urbanarena.render.scene3d.palette import stable_unit

    return stable_unit(oid, salt)


def species_of(oid: str) -> int:
    """Index into :data:`SPECIES` of the tree with OSM id ``oid`` (:data:`SPECIES_WEIGHTS`, seeded by the id)."""
    u = _unit(oid, "photo-tree-species")
    acc = 0.0
    for k, w in enumerate(SPECIES_WEIGHTS):
        acc += w
        if u < acc:
            return k
    return len(SPECIES_WEIGHTS) - 1


def tree_tint(oid: str) -> np.ndarray:
    """``(3,)`` per-tree colour factor of the tree ``oid``: brightness ``0.85..1.1`` times a red/blue shift of
    ``-/+ 7 %`` (yellower or bluer greens), by hashes of the id."""
    b = 0.85 + 0.25 * _unit(oid, "photo-tree-bright")
    h = 0.07 * (2.0 * _unit(oid, "photo-tree-hue") - 1.0)
    return np.array([b * (1 + h), b, b * (1 - h)], np.float32)


def tree_mesh(objects, feature_of: dict[str, int], kit: TreeKit) -> MeshData:
    """Every ``tree`` in ``objects`` (:class:`~.scene.StreetObject`) as its template (module docstring), one
    triangle list with ``uv`` and ``feature`` (``feature_of[id]``, 0 when absent); empty when there is none."""
    P, N, C, UV, F = [], [], [], [], []
    for o in objects:
        if o.kind != "tree":
            continue
        k = species_of(o.id)
        tmpl = kit.templates[k][int(_unit(o.id, "photo-tree-variant") * VARIANTS) % VARIANTS]
        s = 0.8 + 0.4 * _unit(o.id, "tree-size")                  # the realistic style's size factor
        a = 2 * math.pi * _unit(o.id, "photo-tree-turn")
        ca, sa = math.cos(a), math.sin(a)
        R = np.array([[ca, -sa, 0.0], [sa, ca, 0.0], [0.0, 0.0, 1.0]])
        P.append(tmpl.positions.astype(np.float64) @ R.T * s + [o.x_m, o.y_m, 0.0])
        N.append(tmpl.normals.astype(np.float64) @ R.T)
        C.append(tmpl.colours * tree_tint(o.id))
        UV.append(tmpl.uv)
        F.append(np.full(len(tmpl.positions), feature_of.get(o.id, 0), np.float32))
    f32 = np.float32
    if not P:
        z = np.zeros((0, 3), f32)
        return MeshData(z, z.copy(), z.copy(), uv=np.zeros((0, 2), f32), feature=np.zeros((0,), f32))
    return MeshData(np.concatenate(P).astype(f32), np.concatenate(N).astype(f32), np.concatenate(C).astype(f32),
                    uv=np.concatenate(UV).astype(f32), feature=np.concatenate(F))


def load_tree_kit(folder: Path) -> TreeKit:
    """The atlas, its mips and every template, from the package folder ``folder``.

    Raises:
        TreeAssetError: a missing or unreadable texture.
    """
    atlas = build_atlas(Path(folder))
    templates = tuple(tuple(tree_template(sp, v) for v in range(VARIANTS)) for sp in SPECIES)
    ident = hashlib.sha256(repr((TREES_VERSION, SPECIES, SPECIES_WEIGHTS, CELL_PX)).encode()
                           + atlas.tobytes()).hexdigest()[:16]
    return TreeKit(atlas, coverage_mips(atlas), templates, ident)


_LOADED: dict = {}
_LOCK = threading.Lock()


def photo_trees(quiet: bool = False) -> TreeKit | None:
    """The pinned package's tree kit when it is installed and whole (loaded once per process), else ``None``
    after one line on stderr (once per process, unless ``quiet``): the photo style then draws the realistic
    style's trees. Never fetches."""
    from urbanarena.render.scene3d.asset_kits import load_kit_once

    return load_kit_once(_LOADED, _LOCK, PACKAGE, load_tree_kit, (TreeAssetError, OSError),
                         missing=lambda why: f"photo trees unavailable ({why}); drawing the realistic trees",
                         broken=lambda why: f"photo trees unavailable ({why}); drawing the realistic trees",
                         quiet=quiet)


# -------------------------------------------------------------------------------------------- the program
TREE_FS = """
#version 330
uniform vec3 horizon;
uniform sampler2D tree_tex;
in vec3 v_albedo;
in vec3 v_world;
in vec3 v_normal;
in vec2 v_uv;
out vec4 f_colour;
""" + "LIGHT_FS_HERE" + "TONE_HERE" + "GLOW_HERE" + """
void main() {
    float cell = floor(v_uv.x * 0.5);
    vec2 local = vec2(clamp(v_uv.x - 2.0 * cell, 0.004, 0.996), fract(v_uv.y));
    vec2 g = vec2(1.0 / N_CELLS, 1.0);
    vec4 t = textureGrad(tree_tex, vec2((cell + local.x) / N_CELLS, 1.0 - local.y), dFdx(v_uv) * g, dFdy(v_uv) * g);
    if (t.a < 0.5) discard;                                    // the photo's cut-out
    vec3 n = normalize(v_normal);
    vec3 c = v_albedo * t.rgb * (light_at(n) + lamp_light(v_world, n) + leaf_glow(v_world, n));
    c = tonemap(c);
    f_colour = vec4(clamp(mix(horizon, c, fog_at(v_world)), 0.0, 1.0), 1.0);
}
"""


def program_sources(max_lamps: int, lamps: bool = True) -> tuple[str, str]:
    """``(vertex, fragment)`` GLSL of the tree program (module docstring): the weather variant of the plain
    vertex shader with ``in_uv`` passed on, and :data:`TREE_FS`."""
    from urbanarena.render.scene3d import shaders
    from urbanarena.render.scene3d.realistic_shaders import TONE

    vs = shaders.PLAIN_VS
    assert "in vec3 in_colour;\n" in vs and "    gl_Position" in vs
    vs = vs.replace("in vec3 in_colour;\n", "in vec3 in_colour;\nin vec2 in_uv;\nout vec2 v_uv;\n", 1)
    vs = vs.replace("    gl_Position", "    v_uv = in_uv;\n    gl_Position", 1)
    from urbanarena.render.scene3d.photo_leaf_look import TRANSLUCENCY_GLSL

    fs = (TREE_FS.replace("LIGHT_FS_HERE", shaders.LIGHT_FS).replace("TONE_HERE", TONE)
          .replace("GLOW_HERE", TRANSLUCENCY_GLSL)
          .replace("N_CELLS", f"{float(N_CELLS):.1f}"))
    return shaders.variant(vs, True, max_lamps, lamps), shaders.variant(fs, True, max_lamps, lamps)


__all__ = ["BARK_FILES", "CELL_PX", "LEAF_FILES", "PACKAGE", "SPECIES", "SPECIES_WEIGHTS", "Species",
           "TREES_VERSION", "TreeAssetError", "TreeKit", "build_atlas", "card", "coverage_mips",
           "fill_transparent", "load_tree_kit", "photo_trees", "program_sources", "species_of", "tree_mesh",
           "tree_template"]


def with_photo_trees(meshes, scene, kit: TreeKit):
    """``meshes`` (:class:`~.meshes.SceneMeshes` of the realistic style) with the trees' trunks taken out of
    ``objects`` (their feature indices) and ``foliage`` replaced by :func:`tree_mesh` (textured, with ``uv``)."""
    from dataclasses import replace

    feature_of = {fid: k for k, (kind, fid) in enumerate(meshes.features, 1) if kind == "object"}
    trees = {feature_of[o.id] for o in scene.objects if o.kind == "tree" and o.id in feature_of}
    objects = meshes.objects
    if trees and objects.feature is not None and objects.n_triangles:
        keep = ~np.isin(objects.feature.reshape(-1, 3)[:, 0].astype(np.int64), sorted(trees))
        objects = objects.take_triangles(np.flatnonzero(keep))
    return replace(meshes, objects=objects, foliage=tree_mesh(scene.objects, feature_of, kit))
