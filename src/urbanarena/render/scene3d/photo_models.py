"""Textured 3D models of people and vehicles for the ``photo`` style (issue 24 item 2), read from the fetched
``sweethome3d-furniture`` package (:mod:`urbanarena.render.assets`).

A model is a Wavefront OBJ (``v``, ``vt``, ``f`` with ``v``, ``v/vt``, ``v//vn``, ``v/vt/vn`` corners, negative
indices, polygons fanned into triangles, ``usemtl``/``mtllib``) with its MTL (``Kd``, ``map_Kd``) and textures
(PNG/JPEG, read with Pillow). :func:`read_obj` and :func:`read_mtl` parse them; :func:`load_model` turns one
into a :class:`Model`:

* **axes and units**: Sweet Home 3D models are y up, front towards +z, in any unit (most cm, some m); the model
  is rotated to the renderer's local frame (x right, y forward = heading north, z up; ``(x, y, z)_local =
  (-x, z, y)_model``), centred on its bounding box's vertical axis, standing on ``z = 0``, and scaled so its
  height is 1 (people) or its length is 1 (vehicles): a placement scales it to its own metres.
* **textures** are baked into per-corner colours: each corner takes the bilinear texture sample at its UV,
  pulled 20 % towards the triangle's UV centroid (so a corner on a UV seam does not bleed the neighbouring
  island), times the material's ``Kd``. The lit street-furniture program then draws them like any other mesh
  (no texture unit, same lighting, fog, ID pass and culling). The model also keeps, per corner, its UV, the
  index of its texture in :attr:`Model.textures` (-1: untextured) and the texture sample that was baked
  (:attr:`Model.texel`), so that the near levels can be drawn with the texture itself
  (:mod:`.photo_model_textures`: the corner colour divided by that sample, times the texture per fragment).
* **cut-outs** (:func:`opaque_triangles`): a triangle whose texture is transparent (alpha under
  :data:`ALPHA_CUT`, the mean of its corners' samples) is dropped: the bicycle's spoked wheels are a
  transparent texture on discs, which baked opaque were black discs.
* **decimation** once at load by vertex clustering (:func:`cluster_decimate`): corners are snapped to a grid of
  ``cell`` (fraction of the model's height or length), triangles that collapse are dropped, each kept triangle
  keeps its corners' baked colours, normals are the area-weighted average of the faces at each cluster.
* **cache**: the result is written as ``.npz`` (no pickle) under ``<urbanarena home>/models/``, keyed by the
  sha256 of the OBJ, MTL and texture bytes and :data:`MODELS_VERSION`.

Raises :class:`ModelFormatError` (a ``ValueError``) naming the file and line for a malformed OBJ/MTL.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: bumped whenever the conversion changes (part of the cache key and of the photo style's render identity)
MODELS_VERSION = "photo-models-6"
#: share of the way from a corner's UV to its triangle's UV centroid where the texture is sampled
UV_PULL = 0.2
#: triangles whose texture's alpha (mean of the corner samples) is under this are dropped
ALPHA_CUT = 0.5
# the materials painted in the placement's car colour live with the vehicles' surface classes
from urbanarena.render.scene3d.photo_vehicles import PAINT_MATERIALS  # noqa: E402,F401 (re-exported)


class ModelFormatError(ValueError):
    """A model file (OBJ, MTL or texture) that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class Model:
    """A converted model (module docstring), as a triangle list of ``T`` triangles.

    Attributes:
        positions: ``(3T, 3)`` float32, local frame, unit height (people) or unit length (vehicles).
        normals: ``(3T, 3)`` float32 unit normals.
        colours: ``(3T, 3)`` float32 baked colours 0..1.
        paint: ``(3T,)`` float32: 0 for fixed colours, else the corner's brightness relative to its body paint
            (the placement's colour times this replaces the colour).
        size: ``(width, length, height)`` of the model before normalisation, in the file's unit.
        source: path of the OBJ it came from (for messages).
        region: ``(3T,)`` int8 clothing region of each corner (people in the photo style:
            :func:`.people_look.cloth_regions`; ``None`` for vehicles and before it is set).
        cloth_ref: mean luminance of the upper and lower clothing regions (with ``region``).
        material: ``(3T,)`` int8 surface class of each corner (:func:`.photo_vehicles.material_classes`: paint,
            glass, tyre, metal, other), or ``None`` (models loaded before it was kept).
        uv: ``(3T, 2)`` float32 texture coordinates of each corner (OBJ's, v up; 0 where untextured), or ``None``.
        tex: ``(3T,)`` int16 index of each corner's texture in ``textures`` (-1: untextured), or ``None``.
        texel: ``(3T, 3)`` float32 the texture sample baked into ``colours`` (without ``Kd``; 1 where
            untextured), or ``None``.
        textures: absolute paths of the model's texture images (``tex`` indexes them).
    """

    positions: np.ndarray
    normals: np.ndarray
    colours: np.ndarray
    paint: np.ndarray
    size: tuple[float, float, float]
    source: str
    region: np.ndarray | None = None
    cloth_ref: tuple[float, float] = (1.0, 1.0)
    material: np.ndarray | None = None
    uv: np.ndarray | None = None
    tex: np.ndarray | None = None
    texel: np.ndarray | None = None
    textures: tuple[str, ...] = ()

    @property
    def n_triangles(self) -> int:
        return len(self.positions) // 3


def read_mtl(path: Path) -> dict[str, dict]:
    """``{material: {"kd": (r, g, b), "map_kd": Path | None, "d": float}}`` of an MTL file.

    Raises:
        ModelFormatError: unreadable file or a malformed number (message: file and line).
    """
    out: dict[str, dict] = {}
    cur = None
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as e:
        raise ModelFormatError(f"{path}: cannot read material file: {e}") from e
    for no, line in enumerate(lines, 1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        key = parts[0].lower()
        try:
            if key == "newmtl":
                cur = out.setdefault(" ".join(parts[1:]), {"kd": (1.0, 1.0, 1.0), "map_kd": None, "d": 1.0})
            elif cur is None:
                continue
            elif key == "kd":
                cur["kd"] = tuple(float(v) for v in parts[1:4])
            elif key == "d":
                cur["d"] = float(parts[1])
            elif key == "map_kd" and len(parts) > 1:
                cur["map_kd"] = Path(path).parent / parts[-1]
        except (ValueError, IndexError) as e:
            raise ModelFormatError(f"{path}:{no}: bad {parts[0]!r} line: {line.strip()!r}") from e
    return out


def read_obj(path: Path) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
    """Triangles of an OBJ file.

    Returns:
        ``(positions (T, 3, 3) float64, uvs (T, 3, 2) float64 with NaN where a corner has none,
        material name per triangle (T,), mtllib file names)``.
    Raises:
        ModelFormatError: unreadable file, malformed number or index out of range (message: file and line).
    """
    V: list[list[float]] = []
    VT: list[list[float]] = []
    tri_v: list[tuple[int, int, int]] = []
    tri_t: list[tuple[int, int, int]] = []
    mats: list[str] = []
    libs: list[str] = []
    mat = ""
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as e:
        raise ModelFormatError(f"{path}: cannot read model file: {e}") from e
    for no, line in enumerate(lines, 1):
        if not line or line[0] == "#":
            continue
        parts = line.split()
        if not parts:
            continue
        key = parts[0]
        try:
            if key == "v":
                V.append([float(parts[1]), float(parts[2]), float(parts[3])])
            elif key == "vt":
                VT.append([float(parts[1]), float(parts[2]) if len(parts) > 2 else 0.0])
            elif key == "usemtl":
                mat = " ".join(parts[1:])
            elif key == "mtllib":
                libs.append(" ".join(parts[1:]))
            elif key == "f":
                vi, ti = [], []
                for c in parts[1:]:
                    s = c.split("/")
                    a = int(s[0])
                    vi.append(a - 1 if a > 0 else len(V) + a)
                    t = int(s[1]) if len(s) > 1 and s[1] else 0
                    ti.append(t - 1 if t > 0 else (len(VT) + t if t < 0 else -1))
                if len(vi) < 3:
                    raise ValueError("a face needs 3 corners")
                if min(vi) < 0 or max(vi) >= len(V) or max(ti) >= len(VT):
                    raise IndexError("index out of range")
                for k in range(1, len(vi) - 1):
                    tri_v.append((vi[0], vi[k], vi[k + 1]))
                    tri_t.append((ti[0], ti[k], ti[k + 1]))
                    mats.append(mat)
        except (ValueError, IndexError) as e:
            raise ModelFormatError(f"{path}:{no}: bad {key!r} line ({e}): {line.strip()[:80]!r}") from e
    if not tri_v:
        raise ModelFormatError(f"{path}: no faces")
    P = np.asarray(V, np.float64)[np.asarray(tri_v)]
    uv_table = np.concatenate([np.asarray(VT, np.float64).reshape(-1, 2), np.full((1, 2), np.nan)])
    T = np.asarray(tri_t)
    UV = uv_table[np.where(T < 0, len(uv_table) - 1, T)]
    return P, UV, mats, libs


def _texture(path: Path) -> np.ndarray:
    from PIL import Image

    try:
        with Image.open(path) as im:
            return np.asarray(im.convert("RGB"), np.float32) / 255.0
    except OSError as e:
        raise ModelFormatError(f"{path}: cannot read texture: {e}") from e


def _sample(tex: np.ndarray, uv: np.ndarray) -> np.ndarray:
    """Bilinear, repeating samples ``(N, 3)`` of ``tex`` at ``uv`` ``(N, 2)`` (OBJ's v up)."""
    h, w = tex.shape[:2]
    x = (uv[:, 0] % 1.0) * w - 0.5
    y = (1.0 - uv[:, 1] % 1.0) * h - 0.5
    x0, y0 = np.floor(x), np.floor(y)
    fx, fy = (x - x0)[:, None], (y - y0)[:, None]
    x0i, y0i = x0.astype(np.int64) % w, y0.astype(np.int64) % h
    x1i, y1i = (x0i + 1) % w, (y0i + 1) % h
    return ((tex[y0i, x0i] * (1 - fx) + tex[y0i, x1i] * fx) * (1 - fy)
            + (tex[y1i, x0i] * (1 - fx) + tex[y1i, x1i] * fx) * fy)


def bake_colours(uvs: np.ndarray, mats: list[str], materials: dict[str, dict]) -> tuple[np.ndarray, np.ndarray]:
    """``(colours (T, 3, 3), paint (T, 3))`` of triangles with corner ``uvs`` ``(T, 3, 2)`` and materials
    (module docstring: sampled at :data:`UV_PULL` towards the UV centroid, times ``Kd``; unknown materials
    white). ``paint`` is the corner's brightness over its ``Kd``'s for :data:`PAINT_MATERIALS`, else 0."""
    col, paint, _, _, _ = bake_textured(uvs, mats, materials)
    return col, paint


def bake_textured(uvs: np.ndarray, mats: list[str], materials: dict[str, dict]
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, tuple[Path, ...]]:
    """:func:`bake_colours` and what the textured drawing needs: ``(colours (T, 3, 3), paint (T, 3),
    texel (T, 3, 3) the texture samples before ``Kd`` (1 where untextured), tex (T,) int16 index into
    textures (-1: untextured or no UVs), textures)``; ``textures`` are the texture files that exist, sorted."""
    T = len(mats)
    col = np.ones((T, 3, 3), np.float32)
    texel = np.ones((T, 3, 3), np.float32)
    paint = np.zeros((T, 3), np.float32)
    tex_idx = np.full(T, -1, np.int16)
    names = np.asarray(mats, dtype=object)
    used = sorted({Path(m["map_kd"]) for n in set(mats) for m in [materials.get(n, {})]
                   if m.get("map_kd") is not None and Path(m["map_kd"]).is_file()})
    cache: dict[Path, np.ndarray] = {}
    for name in sorted(set(mats)):
        sel = np.nonzero(names == name)[0]
        m = materials.get(name, {"kd": (1.0, 1.0, 1.0), "map_kd": None})
        kd = np.asarray(m["kd"], np.float32)
        c = np.broadcast_to(kd, (len(sel), 3, 3)).copy()
        tex_path = m.get("map_kd")
        if tex_path is not None and Path(tex_path).is_file():
            uv = uvs[sel]
            ok = ~np.isnan(uv).any(axis=(1, 2))
            if ok.any():
                tex = cache.get(tex_path)
                if tex is None:
                    tex = cache[tex_path] = _texture(Path(tex_path))
                u = uv[ok]
                pulled = (1 - UV_PULL) * u + UV_PULL * u.mean(axis=1, keepdims=True)
                sample = _sample(tex, pulled.reshape(-1, 2)).reshape(-1, 3, 3)
                c[ok] = sample * kd
                texel[sel[ok]] = sample
                tex_idx[sel[ok]] = used.index(Path(tex_path))
        col[sel] = c
        if name.lower() in PAINT_MATERIALS:
            lum = c.mean(axis=2) / max(float(kd.mean()), 1e-3)
            paint[sel] = np.clip(lum, 0.05, 1.3)
    return col, paint, texel, tex_idx, tuple(used)


def opaque_triangles(uvs: np.ndarray, mats: list[str], materials: dict[str, dict]) -> np.ndarray:
    """``(T,)`` bool: the triangles kept (module docstring, cut-outs): False where the material's texture has an
    alpha channel and the mean alpha of the corner samples (at :data:`UV_PULL`, as the colours) is under
    :data:`ALPHA_CUT`; True for untextured triangles and textures without alpha."""
    from PIL import Image

    keep = np.ones(len(mats), bool)
    names = np.asarray(mats, dtype=object)
    for name in sorted(set(mats)):
        tex_path = materials.get(name, {}).get("map_kd")
        if tex_path is None or not Path(tex_path).is_file():
            continue
        try:
            with Image.open(tex_path) as im:
                if "A" not in im.getbands():
                    continue
                alpha = np.asarray(im.getchannel("A"), np.float32)[..., None] / 255.0
        except OSError as e:
            raise ModelFormatError(f"{tex_path}: cannot read texture: {e}") from e
        sel = np.nonzero(names == name)[0]
        uv = uvs[sel]
        ok = ~np.isnan(uv).any(axis=(1, 2))
        if not ok.any():
            continue
        u = uv[ok]
        pulled = (1 - UV_PULL) * u + UV_PULL * u.mean(axis=1, keepdims=True)
        a = _sample(alpha, pulled.reshape(-1, 2)).reshape(-1, 3).mean(axis=1)
        keep[sel[ok]] = a >= ALPHA_CUT
    return keep


def cluster_decimate(pos: np.ndarray, cols: np.ndarray, paint: np.ndarray, cell: float, crease_deg: float = 180.0
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Vertex clustering of a triangle list ``pos`` ``(T, 3, 3)`` on a grid of ``cell`` (module docstring).

    Returns ``(positions (3K, 3), normals (3K, 3), colours (3K, 3), paint (3K,))`` of the ``K`` kept triangles
    (``cell <= 0``: all triangles, smooth normals of the shared positions). ``crease_deg``: a corner's normal
    averages only the faces at its cluster within this angle of its own face (:func:`crease_normals`; 180: all
    of them, the area-weighted average)."""
    p, nrm, idx = _cluster(pos, cell, crease_deg)
    return (p.reshape(-1, 3).astype(np.float32), nrm.reshape(-1, 3).astype(np.float32),
            cols[idx].reshape(-1, 3).astype(np.float32), paint[idx].reshape(-1).astype(np.float32))


def _cluster(pos: np.ndarray, cell: float, crease_deg: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(kept triangles' positions (K, 3, 3), their corner normals (K, 3, 3), kept source triangles (K,))``."""
    flat = pos.reshape(-1, 3)
    q = np.floor(flat / cell).astype(np.int64) if cell > 0 else np.round(flat * 1e6).astype(np.int64)
    _, cid = np.unique(q, axis=0, return_inverse=True)
    cid = cid.reshape(-1)
    n = int(cid.max()) + 1
    cnt = np.bincount(cid, minlength=n).astype(np.float64)
    rep = np.stack([np.bincount(cid, weights=flat[:, k], minlength=n) for k in range(3)], axis=1) / cnt[:, None]
    tri = cid.reshape(-1, 3)
    keep = (tri[:, 0] != tri[:, 1]) & (tri[:, 1] != tri[:, 2]) & (tri[:, 0] != tri[:, 2])
    srt = np.sort(tri, axis=1)
    _, first = np.unique(srt[keep], axis=0, return_index=True)
    idx = np.nonzero(keep)[0][np.sort(first)]
    tri = tri[idx]
    p = rep[tri]                                                   # (K, 3, 3)
    fn = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])            # area-weighted face normals
    if crease_deg >= 180.0:
        vn = np.zeros((n, 3))
        for k in range(3):
            np.add.at(vn, tri[:, k], fn)
        vn /= np.maximum(np.linalg.norm(vn, axis=1, keepdims=True), 1e-12)
        return p, vn[tri], idx
    return p, crease_normals(tri, fn, crease_deg), idx


def crease_normals(tri: np.ndarray, face_normals: np.ndarray, crease_deg: float) -> np.ndarray:
    """Corner normals ``(K, 3, 3)`` with creases: the corner ``k`` of triangle ``t`` (vertex ``tri[t, k]``) takes
    the normalised sum of the area-weighted ``face_normals`` ``(K, 3)`` of every triangle at that vertex whose
    unit normal lies within ``crease_deg`` degrees of triangle ``t``'s own (so a box keeps flat faces and sharp
    edges while a finely faceted curve is smoothed). ``tri``: ``(K, 3)`` vertex indices. A zero-area triangle
    adds nothing to its neighbours (its weight is its area)."""
    K = len(tri)
    unit_n = face_normals / np.maximum(np.linalg.norm(face_normals, axis=1, keepdims=True), 1e-300)
    vert = tri.reshape(-1)                                         # incidence c = 3 t + k
    face = np.repeat(np.arange(K), 3)
    order = np.argsort(vert, kind="stable")
    v_sorted = vert[order]
    starts = np.flatnonzero(np.r_[True, v_sorted[1:] != v_sorted[:-1]])
    sizes = np.diff(np.r_[starts, len(v_sorted)])
    grp_size = np.repeat(sizes, sizes)                             # per sorted incidence: its vertex's valence
    grp_start = np.repeat(starts, sizes)
    a = np.repeat(np.arange(len(v_sorted)), grp_size)              # every (a, b) pair of incidences at a vertex
    b = grp_start[a] + (np.arange(len(a)) - np.repeat(np.cumsum(grp_size) - grp_size, grp_size))
    fa, fb = face[order[a]], face[order[b]]
    ok = np.einsum("ij,ij->i", unit_n[fa], unit_n[fb]) >= np.cos(np.radians(crease_deg)) - 1e-9
    acc = np.zeros((3 * K, 3))
    np.add.at(acc, order[a[ok]], face_normals[fb[ok]])
    acc /= np.maximum(np.linalg.norm(acc, axis=1, keepdims=True), 1e-300)
    return acc.reshape(K, 3, 3)


def _files_hash(obj: Path, materials: dict[str, dict], libs: list[Path]) -> str:
    h = hashlib.sha256(MODELS_VERSION.encode())
    files = [obj, *libs, *sorted({m["map_kd"] for m in materials.values() if m.get("map_kd") is not None})]
    for f in files:
        h.update(str(Path(f).name).encode())
        if Path(f).is_file():
            h.update(Path(f).read_bytes())
    return h.hexdigest()


def load_model(obj: Path, normalise: str, cell: float, cache_dir: Path | None = None,
               crease_deg: float = 180.0) -> Model:
    """Read, convert and decimate one model (module docstring), or read its cached conversion.

    Args:
        obj: the OBJ file (its MTL and textures beside it, as its ``mtllib`` says).
        normalise: ``height`` (people: unit height) or ``length`` (vehicles: unit length).
        cell: clustering cell in normalised units (0: no decimation).
        cache_dir: where converted models are kept as ``.npz`` (``None``: no cache).
        crease_deg: crease angle of the corner normals (:func:`crease_normals`; 180: smooth everywhere).
    Raises:
        ModelFormatError: malformed or missing files.
    """
    obj = Path(obj)
    P, UV, mats, lib_names = read_obj(obj)
    libs = [obj.parent / n for n in lib_names]
    materials: dict[str, dict] = {}
    for lib in libs:
        if lib.is_file():
            materials.update(read_mtl(lib))
    crease = "" if crease_deg >= 180.0 else f"|crease{crease_deg!r}"
    key = hashlib.sha256(f"{_files_hash(obj, materials, libs)}|{normalise}|{cell!r}{crease}".encode()
                         ).hexdigest()[:24]
    cached = None if cache_dir is None else Path(cache_dir) / f"{obj.stem}-{key}.npz"
    if cached is not None and cached.is_file():
        with np.load(cached, allow_pickle=False) as z:
            size = tuple(float(v) for v in z["size"])
            mat = z["material"] if "material" in z.files else None
            textures = tuple(str(obj.parent / n) for n in json.loads(str(z["textures"])))
            return Model(z["positions"], z["normals"], z["colours"], z["paint"], size, str(obj), material=mat,
                         uv=z["uv"], tex=z["tex"], texel=z["texel"], textures=textures)
    cols, paint, texel, tex_idx, textures = bake_textured(UV, mats, materials)
    keep = opaque_triangles(UV, mats, materials)
    if not keep.any():
        raise ModelFormatError(f"{obj}: every triangle is transparent")
    from urbanarena.render.scene3d.photo_vehicles import material_classes

    textured = frozenset(n for n, m in materials.items() if m.get("map_kd") is not None)
    classes = material_classes(mats, textured)[keep]
    P, cols, paint = P[keep], cols[keep], paint[keep]
    UV, texel, tex_idx = np.nan_to_num(UV[keep]), texel[keep], tex_idx[keep]
    loc = np.stack([-P[..., 0], P[..., 2], P[..., 1]], axis=-1)   # y up, front +z -> x right, y forward, z up
    flat = loc.reshape(-1, 3)
    lo, hi = flat.min(axis=0), flat.max(axis=0)
    size = tuple(float(v) for v in hi - lo)                       # (width, length, height)
    unit = size[2] if normalise == "height" else size[1]
    if unit <= 0:
        raise ModelFormatError(f"{obj}: the model has no {normalise}")
    centre = np.array([(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, lo[2]])
    loc = (loc - centre) / unit
    p, nrm, idx = _cluster(loc, cell, crease_deg)
    pos, nrm = p.reshape(-1, 3).astype(np.float32), nrm.reshape(-1, 3).astype(np.float32)
    col, pnt = cols[idx].reshape(-1, 3).astype(np.float32), paint[idx].reshape(-1).astype(np.float32)
    mat = np.repeat(classes[idx], 3).astype(np.int8)
    uv = UV[idx].reshape(-1, 2).astype(np.float32)
    tx = np.repeat(tex_idx[idx], 3).astype(np.int16)
    txl = texel[idx].reshape(-1, 3).astype(np.float32)
    names = [str(Path(t).relative_to(obj.parent)) if Path(t).is_relative_to(obj.parent) else Path(t).name
             for t in textures]
    model = Model(pos, nrm, col, pnt, size, str(obj), material=mat, uv=uv, tex=tx, texel=txl,
                  textures=tuple(str(obj.parent / n) for n in names))
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".tmp{np.random.default_rng().integers(1 << 30)}.npz")
        np.savez_compressed(tmp, positions=pos, normals=nrm, colours=col, paint=pnt, size=np.asarray(size),
                            material=mat, source=np.asarray(json.dumps(str(obj))), uv=uv, tex=tx, texel=txl,
                            textures=np.asarray(json.dumps(names)))
        tmp.replace(cached)
    return model


__all__ = ["ALPHA_CUT", "MODELS_VERSION", "Model", "ModelFormatError", "bake_colours", "bake_textured",
           "cluster_decimate",
           "crease_normals", "load_model", "opaque_triangles", "read_mtl", "read_obj"]
