"""Drawing a node's population (:mod:`.population`) into its panorama and into the ID pass.

* :class:`PopulationObjects` -- a snapshot as the renderer's ``dynamic=`` argument: its mesh
  (:func:`.population_meshes.placements_mesh`, placement ``i`` as feature ``i + 1``; with the ``photo`` style's
  models :func:`.population_photo.photo_placements_mesh`) is built once and drawn into all six cube faces of the
  panorama, lit by the condition's street-furniture program; with models it also draws the people's and
  vehicles' contact and sun shadows on the ground (:meth:`PopulationObjects.draw_shade`).
* :func:`node_population` -- the objects the panorama store draws for a node (``None`` without population).
* :func:`population_pixels` -- the ID pass of a view with the population: pixels of each placement, and the people
  and vehicles in all (what the coverage acceptance measures, ``urbanarena bench population``).
"""

from __future__ import annotations

import numpy as np

from urbanarena.render.scene3d.context import free_when_collected
from urbanarena.render.scene3d.meshes import MeshData
from urbanarena.render.scene3d.population import PEOPLE_KINDS, VEHICLE_KINDS, Snapshot, snapshot_for_settings
from urbanarena.render.scene3d.population_meshes import placements_mesh


#: side of the ground tiles the population's triangles are grouped by for frustum culling, metres
TILE_M = 10.0
#: triangles per chunk of the population's shade mesh that the frustum test keeps or skips whole (a contact blob
#: is 16 triangles, a sun shadow up to about 16 more)
SHADE_CHUNK_TRIS = 16


class PopulationObjects:
    """A :class:`~.population.Snapshot` drawable as ``dynamic=`` (mesh built on first use, then reused).

    ``models``: the ``photo`` style's :class:`~.population_photo.PhotoModels` (textured people and vehicles,
    shadows), or ``None`` for the realistic style's box meshes (and no shadow layer)."""

    def __init__(self, snap: Snapshot, models=None):
        self.snapshot = snap
        self.placements = snap.placements
        self.models = models
        #: what is drawn: the photo style turns its people (:func:`.population_photo.photo_pose`; positions,
        #: sizes and order unchanged, so the ID pass's placement ``i`` is ``placements[i]``)
        self._drawn = None
        self._mesh: MeshData | None = None
        self._gl: dict = {}
        self._shade: dict = {}
        free_when_collected(self, _free_arrays, self._gl, self._shade)

    def __bool__(self) -> bool:
        return bool(self.placements)

    def drawn(self) -> list:
        """The placements as drawn (the photo style's people turned, :func:`.population_photo.photo_pose`)."""
        if self._drawn is None:
            if self.models is not None:
                from urbanarena.render.scene3d.population_photo import photo_pose

                self._drawn = photo_pose(self.placements)
            else:
                self._drawn = list(self.placements)
        return self._drawn

    def mesh(self) -> MeshData:
        if self._mesh is None:
            if self.models is not None:
                from urbanarena.render.scene3d.population_photo import photo_placements_mesh

                self._mesh = photo_placements_mesh(self.drawn(), self.models,
                                                   camera_xy=(self.snapshot.x_m, self.snapshot.y_m))
            else:
                self._mesh = placements_mesh(self.placements)
        return self._mesh

    def draw_shade(self, ctx, prog, light) -> int:
        """Photo style: multiply the ground by the population's shadows (:func:`.population_photo.shade_mesh`)
        with the shade program ``prog`` (``mvp`` set; the renderer sets the blending); ``light`` the condition's
        :class:`~.conditions.Lighting`. Nothing without models. Only the chunks of :data:`SHADE_CHUNK_TRIS`
        consecutive triangles that meet the view frustum (read back from ``mvp``) are drawn, in order. Returns the
        triangles of the shade mesh."""
        from urbanarena.render.scene3d.tiles import OrderedChunks, frustum_planes

        if self.models is None:
            return 0
        key = (id(ctx), id(prog))
        got = self._shade.get(key)
        if got is None:
            from urbanarena.render.scene3d.population_photo import shade_mesh
            from urbanarena.render.scene3d.realistic import shadow_factor

            mesh = shade_mesh(self.drawn(), light.sun_dir, shadow_factor(light))
            if mesh.n_triangles == 0:
                return 0
            names = ("in_pos", "in_normal", "in_colour")
            fmt = " ".join("3f" if name in prog else "12x" for name in names)
            buf = ctx.buffer(mesh.interleaved(("positions", "normals", "colours")).tobytes())
            vao = ctx.vertex_array(prog, [(buf, fmt, *[n for n in names if n in prog])])
            # in the mesh's order, chunks wholly outside the view skipped: the same blend order, the same pixels
            chunks = OrderedChunks([(vao, 0, 3 * mesh.n_triangles)], mesh.positions, chunk_tris=SHADE_CHUNK_TRIS)
            got = self._shade[key] = (buf, vao, mesh.n_triangles, chunks)
        mvp = np.frombuffer(prog["mvp"].read(), dtype="f4").reshape(4, 4).T.astype(np.float64)
        got[3].render(frustum_planes(mvp))
        return got[2]

    def draw(self, ctx, prog) -> int:
        """Draw into the bound framebuffer with ``prog`` (its ``mvp`` set): the mesh is uploaded on first use and
        kept until :meth:`release` (the six faces of a panorama upload it once), grouped in
        :data:`TILE_M` ground tiles of which only those meeting the view frustum (read back from ``mvp``) are
        drawn. Returns the triangles of the mesh."""
        from urbanarena.render.scene3d.tiles import TiledVertexArray as _Tiled, frustum_planes as _frustum_planes

        key = (id(ctx), id(prog))
        got = self._gl.get(key)
        if got is None:
            mesh = self.mesh()
            if mesh.n_triangles == 0:
                return 0
            order, first, count, lo, hi = mesh.tile_order(TILE_M)   # one gather of the interleaved vertices
            # photo models: (u, v, layer) and the baked texel per corner for the textured program
            # (.photo_model_textures; another program skips their bytes)
            textured = mesh.uv is not None and mesh.uv.shape[1:] == (6,)
            names = ("in_pos", "in_normal", "in_colour", "in_uvl", "in_texel")[:5 if textured else 3]
            fields = ("positions", "normals", "colours", "uv")[:4 if textured else 3]
            fmt = " ".join("3f" if name in prog else "12x" for name in names)
            used = [name for name in names if name in prog]
            buf = ctx.buffer(mesh.interleaved(fields)[order].tobytes())
            vao = ctx.vertex_array(prog, [(buf, fmt, *used)])
            got = self._gl[key] = (buf, vao, _Tiled(vao, first, count, lo, hi), mesh.n_triangles)
        mvp = np.frombuffer(prog["mvp"].read(), dtype="f4").reshape(4, 4).T.astype(np.float64)
        got[2].render(_frustum_planes(mvp))
        return got[3]

    def release(self) -> None:
        """Free the GL arrays :meth:`vertex_array` made (call with the renderer's context current). Collected
        without it, they are freed at the process's next GL use (:func:`.context.free_when_collected`)."""
        _free_arrays(self._gl, self._shade)


def _free_arrays(*tables: dict) -> None:
    """Release the ``(buffer, vertex array, ...)`` values of ``tables`` and empty them (the context current)."""
    for table in tables:
        for buf, vao, *_ in table.values():
            vao.release()
            buf.release()
        table.clear()


def release_population(renderer, population: PopulationObjects | None) -> None:
    """Free ``population``'s GL arrays (``None``: nothing) with ``renderer``'s context current, after a draw."""
    if population is not None:
        from urbanarena.render.scene3d.context import current

        with renderer._lock, current(renderer.ctx):
            population.release()


def node_population(scene, settings, node: str, x_m: float, y_m: float) -> PopulationObjects | None:
    """What the panorama store draws into ``node``'s panorama: its snapshot when ``settings.population`` is
    ``snapshot`` (and it places anything), else ``None``. The ``photo`` style draws the fetched models
    (:func:`.population_photo.photo_models`); without them (one line on stderr) the realistic boxes."""
    snap = snapshot_for_settings(scene, settings, node, x_m, y_m)
    if snap is None or not snap.placements:
        return None
    models = None
    if getattr(settings, "style", "flat") == "photo":
        from urbanarena.render.scene3d.population_photo import photo_models

        models = photo_models()
    return PopulationObjects(snap, models)


def models_program(renderer, program) -> tuple:
    """``(program, texture array)`` of a renderer in the photo style with a population whose models have
    textures (:mod:`.photo_model_textures`), else ``(None, None)``. ``program(vs, fs)``: the renderer's compile
    function (condition variant and photo patches); the array is kept with the renderer's resources."""
    if renderer.settings.style != "photo" or renderer.settings.population == "none":
        return None, None
    from urbanarena.render.scene3d import photo_model_textures as PMT
    from urbanarena.render.scene3d.population_photo import photo_models

    models = photo_models(quiet=True)
    if models is None or not models.textures:
        return None, None
    prog = program(*PMT.program_sources())
    prog["model_tex"].value = PMT.MODEL_TEX_UNIT
    return prog, renderer._keep(PMT.model_texture_array(renderer.ctx, models.textures))


def population_pixels(renderer, objs: PopulationObjects, x_m: float, y_m: float, yaw_deg: float,
                      pitch_deg: float = 0.0, hfov_deg: float = 90.0, width: int = 640, height: int = 360,
                      eye_height_m: float = 1.7) -> dict:
    """Visible pixels of the population in one view (ID pass: the scene occludes it and it occludes the scene).

    Returns:
        ``{"per_placement": {placement id: px}, "people_px": int, "vehicles_px": int, "total_px": int}``.
    """
    ids = renderer.render_ids(x_m, y_m, yaw_deg, pitch_deg, hfov_deg, width, height, eye_height_m, dynamic=objs)
    base = len(renderer.features)
    k = ids[ids > base] - base - 1
    counts = np.bincount(k, minlength=len(objs.placements)) if k.size else np.zeros(len(objs.placements), int)
    per = {p.id: int(c) for p, c in zip(objs.placements, counts) if c}
    people = sum(int(c) for p, c in zip(objs.placements, counts) if p.kind in PEOPLE_KINDS)
    vehicles = sum(int(c) for p, c in zip(objs.placements, counts) if p.kind in VEHICLE_KINDS)
    return {"per_placement": per, "people_px": people, "vehicles_px": vehicles, "total_px": people + vehicles}


def visible_placements(renderer, objs: PopulationObjects, x_m: float, y_m: float, centre_bearing_deg: float = 0.0,
                       min_px: int = 1, **view) -> dict[str, int]:
    """``{placement id: most pixels in one view}`` over the four level views at ``centre + 0/90/180/270`` degrees
    (640 x 360, 90 degrees unless ``view`` says otherwise) for the placements showing at least ``min_px``."""
    best: dict[str, int] = {}
    for k in range(4):
        got = population_pixels(renderer, objs, x_m, y_m, (centre_bearing_deg + 90.0 * k) % 360.0, **view)
        for pid, n in got["per_placement"].items():
            best[pid] = max(best.get(pid, 0), n)
    return {pid: n for pid, n in sorted(best.items()) if n >= min_px}


class StartVisibility:
    """The population counting generator's visibility hook: every counted placement shows at least ``min_px``
    pixels in one of the four level views from the start node (``(placement ids, node) -> bool``)."""

    def __init__(self, city, renderer, min_px: int = 30):
        self.city, self.renderer, self.min_px = city, renderer, int(min_px)

    def __call__(self, ids, node: str) -> bool:
        from urbanarena.render.scene3d.city_scene import node_pose

        x, y, b = node_pose(self.city, node)
        objs = node_population(self.renderer.scene, self.renderer.settings, node, x, y)
        if objs is None:
            return False
        seen = visible_placements(self.renderer, objs, x, y, b, self.min_px)
        return all(i in seen for i in ids)


__all__ = ["PopulationObjects", "StartVisibility", "models_program", "node_population", "population_pixels",
           "release_population", "visible_placements"]
