"""What the ``photo`` style's leaf grade, leaf translucency and sparser, toned hedge and bush templates cost
(``render/scene3d/photo_leaf_look.py``, ``photo_plant_tone.py``, the templates of ``photo_greenery_mesh.py``, the
tree program of ``trees_photo.py``): the same renders with people before and after, in one process, interleaved
round by round so that a shared machine's load drifts into both alike.

Variants: ``without`` -- the older ``trees_photo.py`` and ``photo_greenery_mesh.py`` given as files (e.g. ``git show
<commit>:src/urbanarena/render/scene3d/trees_photo.py``): their atlas, tree templates, tree program and hedge, bush
and tuft templates, and with ``--old-verges`` an older ``photo_verges_mesh.py``'s verge templates (the branch
start) -- and ``with`` (this code). Per round and variant: panoramas 2048 x 1024
with the population and first-person frames 640 x 360 (four headings, the population drawn) on the first
``--nodes`` shopping-street nodes plus the ``--extra`` nodes; CPU ms per panorama and per frame, min and median
over ``--rounds``, and the machine's load. Needs the fetched assets.

    LP_NUM_THREADS=2 python3 benchmarks/bench_photo_foliage.py --old-trees FILE --old-mesh FILE
        [--old-verges FILE] [--nodes 3] [--extra n01241] [--rounds 4]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ab_cpu_ms, photo_people_setup, population_workloads, uptime  # noqa: E402


def _load(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod   # (its dataclasses look their module up)
    spec.loader.exec_module(mod)
    return mod


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--extra", default="n01241")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--old-trees", required=True)
    ap.add_argument("--old-mesh", required=True)
    ap.add_argument("--old-verges", default=None)
    a = ap.parse_args()
    from urbanarena import paths
    from urbanarena.bench.realism import _city
    from urbanarena.render.assets import package_by_name
    from urbanarena.render.scene3d import photo_greenery_mesh as PGM
    from urbanarena.render.scene3d import photo_verges_mesh as PVM
    from urbanarena.render.scene3d import trees_photo as TP
    from urbanarena.render.scene3d.cache import render_with_population
    from urbanarena.render.scene3d.city_scene import node_pose
    from urbanarena.render.scene3d.population_draw import node_population
    from urbanarena.render.scene3d.renderer import SceneRenderer

    setup = photo_people_setup(a.nodes)
    if setup is None:
        return 2
    scene, settings, nodes, poses = setup
    extra = [n for n in a.extra.split(",") if n]
    city = _city("helsinki")
    nodes, poses = list(nodes) + extra, list(poses) + [node_pose(city, n) for n in extra]
    old_trees, old_mesh = _load("trees_photo_old", a.old_trees), _load("photo_greenery_mesh_old", a.old_mesh)
    old_kit = old_trees.load_tree_kit(paths.assets_dir() / package_by_name(TP.PACKAGE).key)
    old_verges = _load("photo_verges_mesh_old", a.old_verges) if a.old_verges else PVM
    saved = (TP.photo_trees, TP.program_sources, PGM.greenery_templates, PVM.verge_templates)
    renderers = {}
    try:
        TP.photo_trees, TP.program_sources = (lambda quiet=False: old_kit), old_trees.program_sources
        PGM.greenery_templates = old_mesh.greenery_templates
        if old_verges is not PVM:   # an older module has one grass set for both arrays
            old_tm = old_verges.verge_templates()
            PVM.verge_templates = lambda: {"grass_mid": old_tm["grass"], **old_tm}
        renderers["without"] = SceneRenderer(scene, settings)
    finally:
        TP.photo_trees, TP.program_sources, PGM.greenery_templates, PVM.verge_templates = saved
    renderers["with"] = SceneRenderer(scene, settings)

    pano, frames = population_workloads(scene, settings, nodes, poses)
    for r in renderers.values():   # warm: shader compile, sky and shadow bakes
        x, y, b = poses[0]
        render_with_population(r, x, y, 1.7, 2048, b, node_population(scene, settings, nodes[0], x, y))
    res = {"LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"), "nodes": nodes, "rounds": a.rounds,
           "uptime_start": uptime()}
    ab_cpu_ms(renderers, a.rounds, pano, frames, res)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
