"""The ``photo`` style's street clutter (issue 24, tell "no clutter: bins, bollards, bikes"): textured models of
the pinned ``sweethome3d-furniture`` package (:mod:`.photo_models` reads and decimates them) on the sidewalks.

* **Tagged** (OSM): every ``bench`` street object draws a bench model (:data:`KINDS` ``bench``, the variant by a
  hash of its id) at its node, facing the nearest walk line, in place of the realistic box bench (same feature
  index, so the ID pass is unchanged); a ``waste_basket`` draws the park trash can. Their collision discs are
  the annotations' (:mod:`urbanarena.env.continuous.collision`), unchanged.
* **Seeded** (:func:`plan_clutter`, deterministic): on both sides of every carriageway with a sidewalk, on the
  sidewalk :data:`KERB_IN_M` in from the kerb (:meth:`.photo_placement.FreeGround.kerb_ok`: never within
  :data:`.photo_placement.CLEAR_M` of a walk line), one candidate every :data:`STEP_M` metres, each (key
  ``road/side/s``) a trash can, one to three bicycles (1.9 m apart) or a scooter parked parallel to the kerb, a fire hydrant,
  or nothing (:data:`SHARES`); plus a trash can 1.3 m beside half of the tagged benches. Seeded clutter is drawn
  only: first-person movement does not collide with it (it stands off the path centres instead).
* **Models** (:data:`KINDS`): ``(file, height_m)``: each converted model is scaled to that height, decimated
  with a clustering cell of :data:`CELL` of its height (:func:`convert`: cut-out materials :data:`SKIP` left out); tagged ones go into the ``objects`` mesh (the lit street-furniture program, the ID pass),
  the seeded ones into a mesh of their own drawn with the same program in ground tiles up to :data:`DISTANCE_M`
  (not in the ID pass).
"""

from __future__ import annotations

import math
import threading
from pathlib import Path

import numpy as np

from urbanarena.render.scene3d.mesh_primitives import MeshData
from urbanarena.render.scene3d.photo_placement import FreeGround, line_samples, unit

PACKAGE = "sweethome3d-furniture"
#: bumped whenever the clutter's plan or meshes change pixels (part of the photo render identity)
CLUTTER_VERSION = "photo-clutter-1"
#: off: the photo style draws none of it (tests compare the trees or the people alone)
ENABLED = True
#: kind -> ((package-relative OBJ, height in metres), ...)
KINDS = {
    "bench": (("blendswap-cc0/bench/bench.obj", 0.5), ("katorlegaz/concrete-bench/concrete-bench.obj", 0.8)),
    "bin": (("katorlegaz/park-trashcan/park-trashcan.obj", 0.95),),
    "hydrant": (("katorlegaz/fire-hydrant/fire-hydrant.obj", 0.75),),
    "bicycle": (("scopia/bicycle/bicycle.obj", 1.0),),   # its "textured" spoke discs are skipped (SKIP)
    "scooter": (("scopia/scooter2/scooter2.obj", 1.15),),
}
CELL = 0.07
#: clustering cells other than :data:`CELL`, by kind
CELLS: dict[str, float] = {}
#: materials left out (drawn as a cut-out in the package, which baked vertex colours cannot show)
SKIP = frozenset({"textured"})
STEP_M, KERB_IN_M = 30.0, 0.55
#: seeded clutter is drawn in ground tiles up to this far (m)
DISTANCE_M = 90.0
#: cumulative shares of a seeded candidate: bin, bicycles, scooter, hydrant (the rest: nothing)
SHARES = (("bin", 0.25), ("bicycle", 0.4), ("scooter", 0.46), ("hydrant", 0.5))


def plan_clutter(scene, ground: FreeGround | None = None) -> list[tuple[str, float, float, float, str]]:
    """The seeded clutter of ``scene`` (module docstring): ``[(kind, x_m, y_m, heading_deg, key), ...]`` with
    ``heading_deg`` the compass bearing the model's front faces; deterministic."""
    g = ground or FreeGround(scene)
    out = []
    for r in scene.roads:
        if r.kind != "road" or r.sidewalk_m <= 0:
            continue
        for side in (1, -1):
            t = line_samples(r.centreline, STEP_M, side * (r.width_m / 2 + KERB_IN_M), STEP_M / 2)
            if not len(t):
                continue
            ok = g.kerb_ok(t[:, :2], 0.4)
            for (x, y, bear, s), good in zip(t, ok):
                if not good:
                    continue
                key = f"{r.id}/{side}/{s:.0f}"
                u = unit(key, "clutter-kind")
                kind = next((k for k, share in SHARES if u < share), None)
                if kind is None:
                    continue
                along = 90.0 - math.degrees(bear)                       # compass bearing of the street
                facing = (along + (90.0 if side > 0 else -90.0)) % 360.0   # towards the road
                if kind == "bicycle":
                    n = 1 + int(3 * unit(key, "clutter-bikes"))
                    ux, uy = math.cos(bear), math.sin(bear)
                    for k in range(n):
                        px, py = x + ux * 1.9 * (k - (n - 1) / 2), y + uy * 1.9 * (k - (n - 1) / 2)
                        if g.kerb_ok(np.array([[px, py]]), 0.4)[0]:
                            out.append(("bicycle", px, py, (along + 180.0 * (k % 2) + 6.0) % 360.0, f"{key}/{k}"))
                elif kind == "scooter":
                    out.append(("scooter", x, y, (along + (180.0 if unit(key, "clutter-dir") < 0.5 else 0.0)) % 360,
                                key))
                else:
                    out.append((kind, x, y, facing, key))
    benches = [o for o in scene.objects if o.kind == "bench"]
    for o in benches:
        if unit(o.id, "clutter-bench-bin") < 0.5:
            h = bench_heading(o, g)
            a = math.radians(h + 90.0)
            px, py = o.x_m + 1.3 * math.sin(a), o.y_m + 1.3 * math.cos(a)
            if not g.near_lines(np.array([[px, py]]), 0.9)[0]:
                out.append(("bin", px, py, h, f"{o.id}/bin"))
    return out


def bench_heading(o, ground: FreeGround) -> float:
    """Compass bearing (degrees) a tagged bench faces: its ``heading_deg`` when set, else towards the nearest
    walk line (0 when there is none or it stands on one)."""
    if o.heading_deg is not None:
        return float(o.heading_deg) % 360.0
    if ground.line_tree is None:
        return 0.0
    import shapely

    p = shapely.Point(o.x_m, o.y_m)
    line = ground.lines[int(ground.line_tree.nearest(p))]
    q = line.interpolate(line.project(p))
    dx, dy = q.x - o.x_m, q.y - o.y_m
    if math.hypot(dx, dy) < 1e-6:
        return 0.0
    return math.degrees(math.atan2(dx, dy)) % 360.0


def place(model, x_m: float, y_m: float, heading_deg: float, height_m: float, feature: float) -> MeshData:
    """One model (:class:`.photo_models.Model`, unit height, front +y) scaled to ``height_m``, turned so its
    front faces compass ``heading_deg`` and moved to ``(x_m, y_m)``: a triangle list with ``feature``."""
    a = -math.radians(heading_deg)                    # counter-clockwise turn taking +y (north) to the bearing
    c, s = math.cos(a), math.sin(a)
    R = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    p = model.positions.astype(np.float64) @ R.T * height_m + [x_m, y_m, 0.0]
    n = model.normals.astype(np.float64) @ R.T
    f32 = np.float32
    return MeshData(p.astype(f32), n.astype(f32), model.colours.astype(f32),
                    feature=np.full(len(p), feature, f32))


def convert(obj: Path, cell: float, skip=SKIP):
    """A street-furniture model (:class:`.photo_models.Model`, unit height, front +y) from the OBJ ``obj``: as
    :func:`.photo_models.load_model` with ``normalise="height"`` (same axes, baking and clustering by
    ``cell``), but without the triangles of the materials in ``skip`` (lower-case names).

    Raises:
        ModelFormatError: a malformed or missing file, or nothing left.
    """
    from urbanarena.render.scene3d.photo_models import (
        Model, ModelFormatError, bake_colours, cluster_decimate, read_mtl, read_obj,
    )

    P, UV, mats, lib_names = read_obj(obj)
    materials: dict = {}
    for n in lib_names:
        if (obj.parent / n).is_file():
            materials.update(read_mtl(obj.parent / n))
    keep = np.array([m.lower() not in skip for m in mats], bool)
    if not keep.any():
        raise ModelFormatError(f"{obj}: no triangles left")
    P, UV, mats = P[keep], UV[keep], [m for m, k in zip(mats, keep) if k]
    cols, paint = bake_colours(UV, mats, materials)
    loc = np.stack([-P[..., 0], P[..., 2], P[..., 1]], axis=-1)
    flat = loc.reshape(-1, 3)
    lo, hi = flat.min(axis=0), flat.max(axis=0)
    size = tuple(float(v) for v in hi - lo)
    if size[2] <= 0:
        raise ModelFormatError(f"{obj}: the model has no height")
    loc = (loc - np.array([(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, lo[2]])) / size[2]
    pos, nrm, col, pnt = cluster_decimate(loc, cols, paint, cell)
    return Model(pos, nrm, col, pnt, size, str(obj))


def load_clutter_kit(folder: Path) -> dict:
    """``{kind: ((Model, height_m), ...)}`` of :data:`KINDS` from the package folder.

    Raises:
        ModelFormatError: a missing or malformed model file (the message names it).
    """
    from urbanarena.render.scene3d.photo_models import ModelFormatError

    out = {}
    for k, v in KINDS.items():
        models = []
        for rel, h in v:
            p = Path(folder) / rel
            if not p.is_file():
                raise ModelFormatError(f"{p}: model file missing")
            models.append((convert(p, CELLS.get(k, CELL)), h))
        out[k] = tuple(models)
    return out


_LOADED: dict = {}
_LOCK = threading.Lock()


def photo_clutter(quiet: bool = False) -> dict | None:
    """The clutter models when the pinned package is installed and whole (once per process), else ``None``
    after one line on stderr: the photo style then draws the realistic style's benches and no clutter."""
    from urbanarena.render.scene3d.asset_kits import load_kit_once
    from urbanarena.render.scene3d.photo_models import ModelFormatError

    return load_kit_once(_LOADED, _LOCK, PACKAGE, load_clutter_kit, (ModelFormatError, OSError),
                         missing=lambda why: f"photo clutter unavailable ({why}); drawing no clutter",
                         broken=lambda why: f"photo clutter unavailable ({why}); drawing no clutter",
                         quiet=quiet)


def clutter_mesh(scene, kit: dict, feature_of: dict[str, int], ground: FreeGround | None = None,
                 tagged: bool = True, seeded: bool = True) -> MeshData:
    """The tagged benches and waste baskets (features ``feature_of[id]``; with ``tagged``) and the seeded
    clutter (feature 0; with ``seeded``) of ``scene`` as one triangle list (module docstring)."""
    g = ground or FreeGround(scene)
    parts = []
    for o in scene.objects if tagged else ():
        kind = {"bench": "bench", "waste_basket": "bin"}.get(o.kind)
        if kind is None:
            continue
        choices = kit[kind]
        model, h = choices[int(unit(o.id, "clutter-variant") * len(choices)) % len(choices)]
        heading = bench_heading(o, g) if kind == "bench" else 0.0
        parts.append(place(model, o.x_m, o.y_m, heading, h, float(feature_of.get(o.id, 0))))
    for kind, x, y, heading, key in plan_clutter(scene, g) if seeded else ():
        choices = kit[kind]
        model, h = choices[int(unit(key, "clutter-variant") * len(choices)) % len(choices)]
        parts.append(place(model, x, y, heading, h, 0.0))
    if not parts:
        z = np.zeros((0, 3), np.float32)
        return MeshData(z, z.copy(), z.copy(), feature=np.zeros(0, np.float32))
    return MeshData(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("positions", "normals", "colours")),
                    feature=np.concatenate([p.feature for p in parts]))


def with_clutter(meshes, scene, kit: dict):
    """``(meshes, seeded)``: ``meshes`` with the realistic box benches and bins of ``scene`` taken out of
    ``objects`` (their feature indices) and the tagged models put in (same features), and the seeded clutter as
    one mesh, which the renderer draws with the street-furniture program up to :data:`DISTANCE_M` (not in the
    ID pass)."""
    from dataclasses import replace

    from urbanarena.render.scene3d.meshes import concat_meshes

    feature_of = {fid: k for k, (kind, fid) in enumerate(meshes.features, 1) if kind == "object"}
    drop = {feature_of[o.id] for o in scene.objects if o.kind in ("bench", "waste_basket") and o.id in feature_of}
    objects = meshes.objects
    if drop and objects.feature is not None and objects.n_triangles:
        keep = ~np.isin(objects.feature.reshape(-1, 3)[:, 0].astype(np.int64), sorted(drop))
        objects = objects.take_triangles(np.flatnonzero(keep))
    from urbanarena.render.scene3d.photo_placement import ground_for

    g = ground_for(scene)
    return (replace(meshes, objects=concat_meshes(objects, clutter_mesh(scene, kit, feature_of, g, seeded=False))),
            clutter_mesh(scene, kit, feature_of, g, tagged=False))


__all__ = ["CLUTTER_VERSION", "KINDS", "PACKAGE", "bench_heading", "clutter_mesh", "load_clutter_kit",
           "photo_clutter", "place", "plan_clutter", "with_clutter"]
