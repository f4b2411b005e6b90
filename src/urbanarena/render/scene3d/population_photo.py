"""The ``photo`` style's people and vehicles (issue 24 item 2): real textured models instead of boxes, and a contact
shadow and sun shadow under each.

* **Models** (:class:`PhotoCatalogue`, :func:`photo_models`): the standing Reallusion people of the
  ``sweethome3d-furniture`` package (:data:`ADULTS`, :data:`CHILDREN`), its everyday Scopia/KatorLegaz cars
  (:data:`CARS`: hatchbacks, a compact MPV, a compact SUV, a Beetle; left out: KatorLegaz's concept sedan, a
  toy-like show car, Scopia's Chevrolet, a low sports coupe (height 0.27 of its length), and the Smart, a 2.7 m
  car the placements' 3.9-4.7 m would blow up) and van (:data:`VANS`), converted by :mod:`.photo_models`
  (textures baked into corner colours, decimated once with crease-angle normals for vehicles
  (:data:`VEHICLE_CREASE_DEG`), cached as ``.npz``); the nearest levels are drawn with the textures themselves
  (:mod:`.photo_model_textures`: the mesh's ``uv`` rows, :func:`with_texture_layers`), vehicle glass excepted.
  The sitting and lying poses and the bus are not used: the population has no benches to seat people on and no
  bus kind.
* **Walkers** (:func:`.people_look.walkers`: crossing people, pedestrians not in a talking pair, a person walking
  a bicycle) are drawn with their legs in a stride (:mod:`.people_pose`; :data:`WALKING`).
* **Choice**: a person's model is ``ADULTS[h % n]`` (``CHILDREN`` under 1.4 m) with ``h`` a hash of the
  placement's ``variant`` (drawn from the city seed), so the same seed gives the same people, except that no two
  people within :data:`DISTINCT_M` draw the same model (:func:`model_picks`); a car's model is
  ``CARS[h % n]``, a van (odd ``variant``, as :mod:`.population_meshes`) the van. Body paint materials take a
  European street's colour drawn from the ``variant`` (:func:`.photo_vehicles.car_colour`), and the vehicle's
  clear coat, tinted glass, tyres and rims their finish (:func:`.photo_vehicles.finish_colours`, reflections
  baked for the snapshot's eye).
* **Levels of detail**: each model is decimated at four cells (:data:`PERSON_CELLS`, :data:`VEHICLE_CELLS`); a
  placement farther than :data:`LOD_FROM_M` from the snapshot's camera draws the coarser level (a cell stays
  under about two pixels of a 2048-pixel panorama or a 640-pixel 90-degree view where it is used).
* **Size and orientation**: as the boxes (:mod:`.population_meshes`): people scaled uniformly to ``height_m``,
  vehicles uniformly to ``length_m``; turned to ``heading_deg`` (model front along the heading), at ``(x_m, y_m)``.
  A cyclist is drawn as a person walking a bicycle (the package's Scopia bicycle at ``length_m``, its frame
  painted from :data:`BIKE_PALETTE` by hash, the person :data:`WALK_BESIDE_M` to its right: the package has no
  riding pose). The package has no tram: a tram section is :mod:`.photo_tram`'s procedural Helsinki low-floor
  section (cabs at the tram's two ends, :func:`.photo_tram.cab_ends`), scaled to the placement's box and given
  the vehicles' finish (:func:`.photo_vehicles.finish_colours`).
* **Shadows** (:func:`shade_mesh`): under every person and vehicle a soft contact blob (an ellipse
  :data:`CONTACT_GROW` times the footprint, a triangle fan from :data:`CONTACT_K` at the centre to 1 at the
  rim), and, when the condition has a sun, its shadow on the ground: the convex hull of the placement's box
  (footprint at ``z = 0`` and at ``height_m``; for people the top is :data:`PERSON_TOP` of the footprint, so the
  shadow tapers like a body's) projected along the sun onto the ground, at the ground's
  shadow factor (:func:`.realistic.shadow_factor`). The renderer multiplies the ground by it (after the ground
  layers, as the baked shade). The walls' shadow map (:mod:`.sun_shadow`) is baked once per renderer and does not
  hold the population.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from urbanarena.render.scene3d import people_look as PL
from urbanarena.render.scene3d import people_pose as PPOSE
from urbanarena.render.scene3d import photo_model_textures as PMT
from urbanarena.render.scene3d import photo_tram as PT
from urbanarena.render.scene3d import photo_vehicles as PV
from urbanarena.render.scene3d.mesh_primitives import MeshData
from urbanarena.render.scene3d.photo_models import MODELS_VERSION, Model, ModelFormatError, load_model

PACKAGE = "sweethome3d-furniture"
ADULTS = tuple(f"people/{n}/{n}.obj" for n in ("male01", "male02", "male03", "female01", "female02", "female03",
                                                  "holdingFemale01", "holdingFemale02", "holdingFemale03",
                                                  "holdingMale01"))
CHILDREN = tuple(f"people/{n}/{n}.obj" for n in ("boyStanding", "girlStanding"))
CARS = ("scopia/seat_leon/seat_leon.obj", "scopia/peugeot-308/peugeot-308.obj",
        "scopia/renault-scenic/renault-scenic.obj", "scopia/suv/suv.obj", "katorlegaz/VW-new-beetle/VW-new-beetle.obj")
VANS = ("scopia/van/van.obj",)
BICYCLES = ("scopia/bicycle/bicycle.obj",)
#: a cyclist is drawn as a person walking a bicycle: the person this far (metres) right of the bicycle's axis
WALK_BESIDE_M = 0.4
#: bicycle frame colours (display 0..1): black, white, dark blue, red, green, silver, teal
BIKE_PALETTE = ((0.06, 0.06, 0.07), (0.85, 0.85, 0.83), (0.10, 0.16, 0.36), (0.55, 0.08, 0.08),
                (0.12, 0.30, 0.16), (0.60, 0.62, 0.64), (0.10, 0.40, 0.42))
#: clustering cells of the levels of detail (fraction of a person's height / a vehicle's length), nearest first:
#: (male01: 2,289 / 745 / 167 / 72 triangles; the Seat Leon 7,343 / 3,225 / 358 / 192). Vehicles' second level
#: 0.03 (ours; was 0.05, 1,355 triangles): at 0.05 the wheels and a convertible's windscreen frame collapsed into
#: spikes seen 10-30 m away
PERSON_CELLS = (0.02, 0.05, 0.1, 0.15)
VEHICLE_CELLS = (0.015, 0.03, 0.1, 0.15)
#: crease angle of the vehicles' corner normals per level of detail (degrees; :func:`.photo_models.crease_normals`):
#: near, body edges stay sharp and panels smooth; the coarse levels smooth everywhere (their few big triangles
#: would show as facets); people stay smooth everywhere
VEHICLE_CREASE_DEG = (60.0, 80.0, 180.0, 180.0)
#: a bicycle's tubes are thin: finer cells (fraction of its length)
BICYCLE_CELLS = (0.012, 0.025, 0.05, 0.075)
#: distances from the snapshot's camera (metres) beyond which the next level is drawn (the last: a person
#: there is under 12 pixels tall in a 640-pixel 90-degree view, a cell under 2 pixels)
LOD_FROM_M = (10.0, 30.0, 45.0)
#: the contact blob: ellipse semi-axes = CONTACT_GROW x half the footprint; darkest share of light at its centre
CONTACT_GROW = 1.25
CONTACT_K = 0.45
CONTACT_SIDES = 16
SHADE_Z_M = 0.0
#: a person's sun shadow: the top of the box is this share of the footprint (a tapering shadow, not a slab)
PERSON_TOP = 0.6
CHILD_BELOW_M = 1.4
#: people nearer than this (metres) never draw the same model (:func:`model_picks`)
DISTINCT_M = 6.0
#: bumped whenever the people's variation (:mod:`.people_look`, :mod:`.people_pose`) changes (part of the
#: catalogue's identity)
PEOPLE_VERSION = "people-look-4"
#: walkers are drawn in a stride (:mod:`.people_pose`); the tests switch it off to compare poses
WALKING = True
#: bumped whenever the vehicles' paint and finish (:mod:`.photo_vehicles`) change
VEHICLES_VERSION = "photo-vehicles-1"


@dataclass(frozen=True)
class PhotoCatalogue:
    """Which model files (paths under the package's cache folder) each kind draws from."""

    adults: tuple[str, ...] = ADULTS
    children: tuple[str, ...] = CHILDREN
    cars: tuple[str, ...] = CARS
    vans: tuple[str, ...] = VANS
    bicycles: tuple[str, ...] = BICYCLES


@dataclass(frozen=True)
class PhotoModels:
    """Converted models of a catalogue (:func:`load_photo_models`): per model a tuple of its levels of detail
    (nearest first); empty tuples where the catalogue has none."""

    adults: tuple[tuple[Model, ...], ...]
    children: tuple[tuple[Model, ...], ...]
    cars: tuple[tuple[Model, ...], ...]
    vans: tuple[tuple[Model, ...], ...]
    identity: str
    bicycles: tuple[tuple[Model, ...], ...] = ()
    #: texture images of the textured levels (:mod:`.photo_model_textures`); a model's ``tex`` indexes these
    textures: tuple[str, ...] = ()


def load_photo_models(folder: Path, catalogue: PhotoCatalogue = PhotoCatalogue(),
                      cache_dir: Path | None = None) -> PhotoModels:
    """Load every model of ``catalogue`` from the package folder ``folder`` (:mod:`.photo_models`).

    Raises:
        ModelFormatError: a missing or malformed model file (message names it).
    """
    folder = Path(folder)

    def load(rels, normalise, cells, creases=None):
        out = []
        for rel in rels:
            p = folder / rel
            if not p.is_file():
                raise ModelFormatError(f"{p}: model file missing")
            levels = [load_model(p, normalise, cell, cache_dir, 180.0 if creases is None else creases[k])
                      for k, cell in enumerate(cells)]
            if normalise == "height":
                levels = [dataclasses.replace(m, region=r, cloth_ref=ref) for m in levels
                          for r, ref in [PL.cloth_regions(m.positions, m.colours)]]
            elif creases is not None and levels[0].material is not None:   # vehicles: their rims (.photo_vehicles)
                levels = [dataclasses.replace(m, material=PV.with_rims(m.positions, m.normals, m.material))
                          for m in levels]
            out.append(tuple(levels))
        return tuple(out)

    ident = hashlib.sha256(repr((MODELS_VERSION, PEOPLE_VERSION, WALKING, PPOSE.STRIDE_DEG, PPOSE.HIP_Z,
                                 PPOSE.HIP_BLEND, PPOSE.SIDE_BLEND, catalogue, PERSON_CELLS, VEHICLE_CELLS,
                                 BICYCLE_CELLS, LOD_FROM_M, WALK_BESIDE_M, BIKE_PALETTE, VEHICLES_VERSION,
                                 VEHICLE_CREASE_DEG, PMT.source_identity())).encode()).hexdigest()[:16]
    vc = VEHICLE_CREASE_DEG
    groups = (load(catalogue.adults, "height", PERSON_CELLS), load(catalogue.children, "height", PERSON_CELLS),
              load(catalogue.cars, "length", VEHICLE_CELLS, vc), load(catalogue.vans, "length", VEHICLE_CELLS, vc),
              load(catalogue.bicycles, "length", BICYCLE_CELLS))
    groups, textures = with_texture_layers(groups)
    adults, children, cars, vans, bicycles = groups
    return PhotoModels(adults, children, cars, vans, ident, bicycles, textures)


def with_texture_layers(groups):
    """``(groups, textures)``: the models of ``groups`` (tuples of per-model level tuples) with the textured
    levels' (:data:`.photo_model_textures.TEXTURED_LEVELS`) ``tex`` renumbered into one list of texture files
    (sorted, each once) and the coarser levels' ``tex`` dropped (baked colours)."""
    textures = sorted({t for g in groups for levels in g for m in levels[:PMT.TEXTURED_LEVELS]
                       if m.tex is not None for t in m.textures})
    at = {t: k for k, t in enumerate(textures)}
    out = []
    for g in groups:
        models = []
        for levels in g:
            lv = []
            for k, m in enumerate(levels):
                if m.tex is None or k >= PMT.TEXTURED_LEVELS or not m.textures:
                    lv.append(dataclasses.replace(m, tex=None))
                    continue
                lut = np.array([at[t] for t in m.textures] + [-1], np.int16)
                lv.append(dataclasses.replace(m, tex=lut[np.where(m.tex < 0, len(m.textures), m.tex)]))
            models.append(tuple(lv))
        out.append(tuple(models))
    return tuple(out), tuple(textures)


_LOADED: dict = {}
_LOCK = threading.Lock()


def photo_models(quiet: bool = False) -> PhotoModels | None:
    """The pinned package's models when it is installed and whole (loaded once per process), else ``None`` after
    one line on stderr (said once per process, by the first call without ``quiet``): the photo style then draws
    the realistic style's boxes. Never fetches."""
    from urbanarena import paths
    from urbanarena.render.scene3d.asset_kits import load_kit_once

    return load_kit_once(_LOADED, _LOCK, PACKAGE,
                         lambda folder: load_photo_models(folder, cache_dir=paths.home() / "models"),
                         (ModelFormatError, OSError), missing=lambda why: why,
                         broken=lambda why: (f"photo assets unavailable ({why}); rendering the procedural "
                                             "'realistic' style"), quiet=quiet)


def _h(v: int, salt: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{salt}:{int(v)}".encode()).digest()[:8], "big")


def model_for(p, models: PhotoModels) -> tuple[Model, ...] | None:
    """The model (its levels of detail) a placement draws (module docstring), or ``None`` for the box meshes."""
    if p.kind in ("pedestrian", "waiting", "crossing"):
        pool = models.children if p.height_m < CHILD_BELOW_M and models.children else models.adults
        return pool[_h(p.variant, "person") % len(pool)] if pool else None
    if p.kind in ("car", "parked_car"):
        pool = models.vans if int(p.variant) % 2 == 1 and models.vans else models.cars
        return pool[_h(p.variant, "car") % len(pool)] if pool else None
    if p.kind == "cyclist" and models.bicycles and models.adults:
        return models.bicycles[_h(p.variant, "bicycle") % len(models.bicycles)]
    return None


def model_picks(placements, models: PhotoModels) -> list:
    """Per placement the levels of detail it draws: :func:`model_for`'s, except that no two people within
    :data:`DISTINCT_M` of each other wear the same model (issue 24 tell "clone pedestrians"): in placement order,
    a person whose pick an earlier person within that distance already drew takes the next model of its pool
    (``(k + 1) % n``, ...) that none of them drew (its own pick when every one is taken)."""
    picks = [model_for(p, models) for p in placements]
    people = [i for i, p in enumerate(placements)
              if p.kind in ("pedestrian", "waiting", "crossing") and picks[i] is not None]
    if len(people) < 2:
        return picks
    xy = np.array([[placements[i].x_m, placements[i].y_m] for i in people], np.float64)
    close = np.hypot(xy[:, None, 0] - xy[None, :, 0], xy[:, None, 1] - xy[None, :, 1]) < DISTINCT_M
    drawn: list[tuple[int, tuple] | None] = []   # per person so far: (model id, pool) or None
    for a, i in enumerate(people):
        p = placements[i]
        pool = models.children if p.height_m < CHILD_BELOW_M and models.children else models.adults
        k = next((j for j, m in enumerate(pool) if m is picks[i]), None)
        if k is None:
            drawn.append(None)
            continue
        near = {d[0] for d, c in zip(drawn, close[a, :a]) if c and d is not None and d[1] is pool}
        for step in range(len(pool)):
            if (k + step) % len(pool) not in near:
                k = (k + step) % len(pool)
                break
        picks[i] = pool[k]
        drawn.append((k, pool))
    return picks


def photo_pose(placements) -> list:
    """``placements`` as the photo style draws them: people turned to :func:`.people_look.photo_headings` (the
    same positions and sizes; other placements unchanged)."""
    heads = PL.photo_headings(placements)
    return [p if h == p.heading_deg else dataclasses.replace(p, heading_deg=h) for p, h in zip(placements, heads)]


def person_look(m: Model, variant: int, *per_corner: np.ndarray, walking: bool = False) -> tuple[np.ndarray, ...]:
    """``(positions, normals, colours, *per_corner)`` ``(3T, ...)`` of a person model for the placement
    ``variant``: clothes recoloured (:func:`.people_look.clothing_colours`), legs in a stride when ``walking``
    (:func:`.people_pose.walk_pose`, :func:`.people_pose.stride_deg`), the body's width and depth scaled
    (:func:`.people_look.build_scale`) and mirrored half of the time (:func:`.people_look.is_mirrored`; the
    ``per_corner`` arrays, e.g. UVs, reordered with the corners)."""
    col = m.colours
    paint = PL.clothing_colours(variant)
    if paint is not None and m.region is not None:
        col = PL.recolour(col, m.region, m.cloth_ref, *paint)
    k = PL.build_scale(variant)
    pos, nrm = m.positions, m.normals
    if walking and WALKING:
        pos, nrm = PPOSE.walk_pose(pos, nrm, PPOSE.stride_deg(variant))
    pos = pos * np.array([k, k, 1.0], np.float32)
    if PL.is_mirrored(variant):
        return PL.mirrored(pos, nrm, col, *per_corner)
    return (pos, nrm, col, *per_corner)


def _uvl(m: Model) -> np.ndarray:
    """``(3T, 3)`` float32 (u, v, texture layer) of a model's corners (layer -1 where it is not textured)."""
    if m.tex is None or m.uv is None:
        return _untextured(len(m.positions), 3)
    return np.concatenate([m.uv, m.tex[:, None].astype(np.float32)], axis=1).astype(np.float32)


def _texel(m: Model) -> np.ndarray:
    return m.texel if m.texel is not None else np.ones((len(m.positions), 3), np.float32)


def photo_placements_mesh(placements, models: PhotoModels, first_feature: int = 1,
                          camera_xy: tuple[float, float] | None = None) -> MeshData:
    """One triangle list of ``placements``: models where :func:`model_picks` has one (the level of detail of the
    placement's distance from ``camera_xy``, local metres; ``None``: the finest; people varied by
    :func:`person_look`), the box meshes of :func:`.population_meshes.placements_mesh` for the rest; placement
    ``i`` carries feature ``first_feature + i``. Headings are the placements' own (the caller turns them with
    :func:`photo_pose`). The mesh's ``uv`` is ``(N, 6)``: u, v and texture layer of :attr:`PhotoModels.textures`
    (-1: drawn with the vertex colour alone) and the texture sample baked into the corner's colour
    (:mod:`.photo_model_textures`)."""
    from urbanarena.render.scene3d.meshes import concat_meshes
    from urbanarena.render.scene3d.population_meshes import placements_mesh

    P, N, C, F, U = [], [], [], [], []
    rest = []
    picks = model_picks(placements, models)
    walking = PL.walkers(placements)
    cabs = PT.cab_ends(placements) if PT.ENABLED else {}
    for i, p in enumerate(placements):
        levels = picks[i]
        if i in cabs:
            _tram_section(p, cabs[i], first_feature + i, camera_xy, (P, N, C, F))
            U.append(_untextured(len(P[-1])))
            continue
        if levels is None:
            rest.append(i)
            continue
        level = 0
        if camera_xy is not None:
            d = math.hypot(p.x_m - camera_xy[0], p.y_m - camera_xy[1])
            level = min(sum(d > f for f in LOD_FROM_M), len(levels) - 1)
        m = levels[level]
        person = p.kind in ("pedestrian", "waiting", "crossing")
        s = p.height_m if person else p.length_m
        if person:
            pos, nrm, col, uvl, texel = person_look(m, p.variant, _uvl(m), _texel(m), walking=walking[i])
        else:
            pos, nrm, col, uvl, texel = m.positions, m.normals, m.colours, _uvl(m), _texel(m)
            if m.material is not None and m.tex is not None:   # glass: its baked reflection, untextured (a
                uvl = uvl.copy()                                   # texture's quotient turned it into streaks)
                uvl[m.material == PV.GLASS, 2] = -1.0
        a = math.radians(p.heading_deg)
        fwd, right = np.array([math.sin(a), math.cos(a)]), np.array([math.cos(a), -math.sin(a)])
        paint = None
        vehicle = p.kind in ("car", "parked_car")
        if vehicle:   # a European street's colours (.photo_vehicles), not the population's box palette
            paint = PV.car_colour(p.variant, van=int(p.variant) % 2 == 1 and bool(models.vans))
        elif p.kind == "cyclist":
            paint = np.asarray(BIKE_PALETTE[_h(p.variant, "bike-colour") % len(BIKE_PALETTE)], np.float32)
        if paint is not None and m.paint.any():
            col = np.where(m.paint[:, None] > 0, np.clip(m.paint[:, None] * paint, 0, 1), col)
        parts = [(pos, nrm, col, uvl, texel, s, np.array([p.x_m, p.y_m]))]
        if p.kind == "cyclist":   # the person walking it, beside it (module docstring)
            rider = models.adults[_h(p.variant, "person") % len(models.adults)]
            rm = rider[min(level, len(rider) - 1)]
            parts.append((*person_look(rm, p.variant, _uvl(rm), _texel(rm), walking=True), p.height_m,
                          np.array([p.x_m, p.y_m]) + WALK_BESIDE_M * right))
        for pos, nrm, col, uvl, texel, s, at in parts:
            loc = pos.astype(np.float64) * s
            xy = loc[:, 0:1] * right + loc[:, 1:2] * fwd + at
            P.append(np.concatenate([xy, loc[:, 2:3]], axis=1))
            nxy = nrm[:, 0:1] * right + nrm[:, 1:2] * fwd
            N.append(np.concatenate([nxy, nrm[:, 2:3]], axis=1))
            if vehicle and m.material is not None:   # clear coat, tinted glass, tyres (.photo_vehicles)
                eye = np.array([*(camera_xy if camera_xy is not None else (p.x_m, p.y_m)), PV.EYE_M])
                col = PV.finish_colours(P[-1], N[-1], col, m.material, eye)
            C.append(col)
            U.append(np.concatenate([uvl, texel], axis=1))   # (.photo_model_textures)
            F.append(np.full(len(loc), first_feature + i, np.float32))
    mesh = None
    if P:
        mesh = MeshData(np.concatenate(P).astype(np.float32), np.concatenate(N).astype(np.float32),
                        np.concatenate(C).astype(np.float32), uv=np.concatenate(U), feature=np.concatenate(F))
    if rest:
        boxes = placements_mesh([placements[i] for i in rest])
        lut = np.array([first_feature + i for i in rest], np.float32)
        boxes = MeshData(boxes.positions, boxes.normals, boxes.colours, uv=_untextured(len(boxes.positions)),
                         feature=lut[boxes.feature.astype(np.int64) - 1])
        mesh = boxes if mesh is None else concat_meshes(mesh, boxes)
    if mesh is None:
        z = np.zeros((0, 3), np.float32)
        return MeshData(z, z.copy(), z.copy(), uv=np.zeros((0, 6), np.float32), feature=np.zeros((0,), np.float32))
    return mesh


def _untextured(n: int, width: int = 6) -> np.ndarray:
    """``(n, width)`` float32 (u, v, layer[, texel rgb]) rows of corners drawn without texture (layer -1,
    texel 1)."""
    out = np.ones((n, width), np.float32)
    out[:, :2] = 0.0
    out[:, 2] = -1.0
    return out


def _tram_section(p, cabs: tuple[bool, bool], feature: int, camera_xy, out: tuple) -> None:
    """Append tram placement ``p``'s :func:`.photo_tram.section_mesh` (pantograph on ``variant`` 1, as the boxes;
    ``cabs`` from :func:`.photo_tram.cab_ends`) to the lists ``out = (P, N, C, F)``: scaled from the reference
    size to the placement's box, turned to its heading, finished for the eye at ``camera_xy``."""
    P, N, C, F = out
    pos, nrm, col, cls = PT.section_mesh(int(p.variant) == 1, *cabs)
    k = np.array([p.width_m / PT.WIDTH_M, p.length_m / PT.LENGTH_M, p.height_m / PT.HEIGHT_M])
    loc = pos * k
    nl = nrm / k
    nl /= np.maximum(np.linalg.norm(nl, axis=1, keepdims=True), 1e-12)
    a = math.radians(p.heading_deg)
    fwd, right = np.array([math.sin(a), math.cos(a)]), np.array([math.cos(a), -math.sin(a)])
    xy = loc[:, 0:1] * right + loc[:, 1:2] * fwd + np.array([p.x_m, p.y_m])
    P.append(np.concatenate([xy, loc[:, 2:3]], axis=1))
    N.append(np.concatenate([nl[:, 0:1] * right + nl[:, 1:2] * fwd, nl[:, 2:3]], axis=1))
    eye = np.array([*(camera_xy if camera_xy is not None else (p.x_m, p.y_m)), PV.EYE_M])
    col = PV.finish_colours(P[-1], N[-1], col, cls, eye)
    glass = cls == PV.GLASS
    col[glass] = PT.glass_colours(P[-1][glass], N[-1][glass], eye)
    C.append(col)
    F.append(np.full(len(loc), feature, np.float32))


def shade_mesh(placements, sun_dir, shadow_k: float) -> MeshData:
    """The ground shade of ``placements`` (module docstring): vertex colour = share of light kept (the renderer
    multiplies the ground by it). ``sun_dir``: unit vector towards the sun; ``shadow_k``: the ground's share
    in shadow (no sun shadows when the sun is under 2 degrees or ``shadow_k >= 0.999``).

    Triangles in placement order, per placement its contact fan (:data:`CONTACT_SIDES` triangles) then, with a
    sun, the fan of its shadow hull from the hull's centroid. Computed for all placements at once (the hulls with
    shapely's vectorised functions): a panorama's population builds this once per node."""
    import shapely

    n = len(placements)
    if n == 0:
        z = np.zeros((0, 3), np.float32)
        return MeshData(z, z.copy(), z.copy())
    sx, sy, sz = (float(v) for v in sun_dir)
    sun = sz > math.sin(math.radians(2.0)) and shadow_k < 0.999
    ang = np.linspace(0.0, 2 * math.pi, CONTACT_SIDES + 1)
    # per placement: forward and right unit vectors (math.sin/cos as Placement.footprint), half sizes, centre
    a = [math.radians(p.heading_deg) for p in placements]
    fwd = np.array([[math.sin(t), math.cos(t)] for t in a])
    right = np.array([[math.cos(t), -math.sin(t)] for t in a])
    centre = np.array([[p.x_m, p.y_m] for p in placements], np.float64)
    length = np.array([p.length_m for p in placements], np.float64)
    width = np.array([p.width_m for p in placements], np.float64)
    # contact blobs: (n, S+1, 2) rings, the same arithmetic in the same order as one placement at a time
    hl, hw = CONTACT_GROW * length / 2, CONTACT_GROW * width / 2
    ring = ((np.cos(ang)[None, :, None] * hw[:, None, None]) * right[:, None, :]
            + (np.sin(ang)[None, :, None] * hl[:, None, None]) * fwd[:, None, :]) + centre[:, None, :]
    S = CONTACT_SIDES
    tri = np.zeros((n, S, 3, 3))
    tri[:, :, 0, :2] = centre[:, None, :]
    tri[:, :, 1, :2] = ring[:, :-1]
    tri[:, :, 2, :2] = ring[:, 1:]
    tri[:, :, :, 2] = SHADE_Z_M
    col = np.empty((n, S, 3, 3), np.float32)
    col[:, :, 0] = CONTACT_K
    col[:, :, 1:] = 1.0
    tris, cols, owner = [tri.reshape(-1, 3, 3)], [col.reshape(-1, 3, 3)], [np.repeat(2 * np.arange(n), S)]
    if sun:
        # footprint corners as Placement.footprint: c + sf*hl*f + sr*hw*r, (sf, sr) = (1,1), (1,-1), (-1,-1), (-1,1)
        fl, fw = length / 2 + 0.0, width / 2 + 0.0
        sgn = np.array([(1, 1), (1, -1), (-1, -1), (-1, 1)], np.float64)
        foot = (centre[:, None, :] + (sgn[None, :, 0, None] * fl[:, None, None]) * fwd[:, None, :]
                + (sgn[None, :, 1, None] * fw[:, None, None]) * right[:, None, :])
        d = np.array([p.height_m for p in placements], np.float64) / sz
        top = foot + np.stack([-sx * d, -sy * d], axis=1)[:, None, :]
        person = np.array([p.kind in ("pedestrian", "waiting", "crossing") for p in placements])
        if person.any():   # shoulders and head: narrower than the feet
            shift = np.stack([centre[:, 0] - sx * d, centre[:, 1] - sy * d], axis=1)
            top_p = (foot - centre[:, None, :]) * PERSON_TOP + shift[:, None, :]
            top = np.where(person[:, None, None], top_p, top)
        hulls = shapely.convex_hull(shapely.multipoints(np.concatenate([foot, top], axis=1)))
        poly = shapely.get_type_id(hulls) == 3
        if poly.any():
            idx = np.flatnonzero(poly)
            coords, which = shapely.get_coordinates(hulls[idx], return_index=True)
            ctr = shapely.get_coordinates(shapely.centroid(hulls[idx]))
            edge = np.flatnonzero(which[:-1] == which[1:])   # ring edges (each ring is closed)
            k = which[edge]
            t2 = np.zeros((len(edge), 3, 3))
            t2[:, 0, :2] = ctr[k]
            t2[:, 1, :2] = coords[edge]
            t2[:, 2, :2] = coords[edge + 1]
            t2[:, :, 2] = SHADE_Z_M
            tris.append(t2)
            cols.append(np.full((len(edge), 3, 3), shadow_k, np.float32))
            owner.append(2 * idx[k] + 1)
    order = np.argsort(np.concatenate(owner), kind="stable")
    T = np.concatenate(tris)[order].reshape(-1, 3).astype(np.float32)
    return MeshData(T, np.broadcast_to(np.array([0, 0, 1], np.float32), T.shape).copy(),
                    np.concatenate(cols)[order].reshape(-1, 3).astype(np.float32))


__all__ = ["ADULTS", "BICYCLES", "CARS", "CHILDREN", "PACKAGE", "PEOPLE_VERSION", "PhotoCatalogue", "PhotoModels",
           "VANS", "load_photo_models", "model_for", "model_picks", "person_look", "photo_models",
           "photo_placements_mesh", "photo_pose",
           "shade_mesh"]
