"""The photo style's extra scene content, added to a renderer's meshes before its vertex arrays are built.

:func:`add_photo_content` composes, in this order (each step keeps the meshes whole when its package is missing,
so the photo style then draws the realistic style's trees or no clutter):

0. tagged facade colours muted to paint (:mod:`.photo_paint`) and signal and sign poles moved from the
   carriageway to the kerb (:mod:`.photo_kerbside`; neither needs a package); then the buildings' cornices,
   parapets and roof boxes, plinths, downpipes and balconies as two meshes drawn near the eye
   (:mod:`.photo_building_detail`; no package);
1. photographic trees (:mod:`.trees_photo`) in place of the realistic crowns and trunks;
2. with them, the seeded trees, hedges, bushes and tufts (:mod:`.photo_greenery`) and the grass verges
   (:mod:`.photo_verges`, via :func:`.photo_greenery.verge_arrays`);
3. the benches, bins, bicycles and hydrants (:mod:`.photo_clutter`), tagged ones in place of the realistic boxes
   and seeded ones as a separate mesh;
4. the tram lines' overhead wires and poles (:mod:`.photo_wires`; no package needed): the poles into
   ``objects``, the wires as a plan the renderer draws as lines.

The renderer (:class:`~.renderer.SceneRenderer`) draws the separate meshes only near the eye (their draw
distances are in their modules).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PhotoContent:
    """What :func:`add_photo_content` returns.

    Attributes:
        meshes: the scene's :class:`~.meshes.SceneMeshes` with the photo trees and tagged clutter in.
        tree_kit: the :class:`~.trees_photo.TreeKit` (``None``: no photo trees, nor greenery or verges).
        green_small: the seeded greenery as ``[(mesh, from_m, to_m)]`` textured meshes and the distances they
            are drawn at (:func:`.photo_greenery.with_greenery`; ``None`` without it).
        green_verges: the verges as ``[(mesh, tile_m, distance_m)]``.
        clutter_seeded: the seeded clutter as one mesh (``None`` without it).
        wires: :func:`.photo_wires.plan_wires`'s plan (``None``: no wires).
        building_detail: the buildings' cornices, parapets and roof boxes, and their plinths, downpipes and
            balconies, as ``[(mesh, draw distance m), ...]`` (:mod:`.photo_building_detail`; empty without them).
    """

    meshes: object
    tree_kit: object | None = None
    green_small: object | None = None
    green_verges: list = field(default_factory=list)
    clutter_seeded: object | None = None
    wires: dict | None = None
    building_detail: list = field(default_factory=list)


def add_photo_content(meshes, scene) -> PhotoContent:
    """``meshes`` (the realistic style's :class:`~.meshes.SceneMeshes` of ``scene``, as built: not a photo
    renderer's, which already hold this content; see :attr:`.renderer.SceneRenderer.scene_meshes`) with the photo
    style's trees, greenery, verges and clutter (see the module docstring); never fetches a package."""
    from urbanarena.render.scene3d import (photo_building_detail, photo_clutter, photo_greenery, photo_kerbside,
                                           photo_paint, photo_wires, trees_photo)

    out = PhotoContent(photo_kerbside.with_kerbside(photo_paint.with_paint(meshes), scene))
    if photo_building_detail.ENABLED:
        out.building_detail = photo_building_detail.with_building_detail(out.meshes, scene)
    out.tree_kit = trees_photo.photo_trees()
    if out.tree_kit is not None:
        out.meshes = trees_photo.with_photo_trees(out.meshes, scene, out.tree_kit)
        if photo_greenery.ENABLED:
            out.meshes, out.green_small = photo_greenery.with_greenery(out.meshes, scene, out.tree_kit)
            out.green_verges = photo_greenery.verge_arrays(scene)
    clutter_kit = photo_clutter.photo_clutter(quiet=True) if photo_clutter.ENABLED else None
    if clutter_kit is not None:
        out.meshes, out.clutter_seeded = photo_clutter.with_clutter(out.meshes, scene, clutter_kit)
    if photo_wires.ENABLED:
        out.wires = photo_wires.plan_wires(scene)
        out.meshes = photo_wires.with_poles(out.meshes, out.wires)
    return out


_LIT = (("positions", "normals", "colours"), ("in_pos", "in_normal", "in_colour"))
_LEAF = (("positions", "normals", "colours", "uv"), ("in_pos", "in_normal", "in_colour", "in_uv"))


def near_arrays(content: PhotoContent, vao, prog_foliage, prog_plain, foliage: bool) -> tuple[list, list]:
    """The renderer's arrays of ``content`` drawn only near the eye, built by the renderer's ``vao(prog, mesh,
    fields, names, tile_m=...)`` (a tiled vertex array or ``None``).

    Returns ``(near, building_detail)``: ``near`` as ``[(tiled array, draw distance m, minimum distance m)]``
    (tiles whose nearest point is the minimum distance or nearer are left to a finer level): trees, hedges,
    bushes and tufts and their far level, the verges' arrays (only when ``foliage``: the foliage program and the
    tree kit exist), the buildings' cornices, plinths, balconies... (:mod:`.photo_building_detail`) and the
    seeded clutter; ``building_detail`` the detail arrays alone as ``[(tiled array, draw distance m)]`` (the
    ID pass and the sun's shadow bake draw them too)."""
    near, detail = [], []
    if foliage and content.green_small is not None:
        from urbanarena.render.scene3d.photo_greenery import GREEN_TILE_M

        for mesh, from_m, to_m in content.green_small:   # trees; hedges, bushes, tufts near; their far level
            near.append((vao(prog_foliage, mesh, *_LEAF, tile_m=GREEN_TILE_M), to_m, from_m))
        for mesh, tile_m, distance_m in content.green_verges:   # mid and near-only detail arrays, own tile sizes
            near.append((vao(prog_foliage, mesh, *_LEAF, tile_m=tile_m), distance_m, 0.0))
    for mesh, distance_m in content.building_detail:
        tiled = vao(prog_plain, mesh, *_LIT)
        if tiled is not None:
            detail.append((tiled, distance_m))
            near.append((tiled, distance_m, 0.0))
    if content.clutter_seeded is not None:
        from urbanarena.render.scene3d.photo_clutter import DISTANCE_M

        near.append((vao(prog_plain, content.clutter_seeded, *_LIT), DISTANCE_M, 0.0))
    return near, detail
