"""What the ``photo`` style's seeded greenery and street clutter cost (``render/scene3d/photo_greenery.py``,
``photo_clutter.py``, the fuller trees of ``trees_photo.py``): the same renders with them and without them, in one
process, interleaved round by round so that a shared machine's load drifts into both alike.

Variants: ``without`` (greenery and clutter off; with ``--old-trees FILE``, a copy of an older ``trees_photo.py``,
e.g. ``git show <commit>:src/urbanarena/render/scene3d/trees_photo.py``, its trees too: the branch start) and
``with`` (everything on). Per round and variant: panoramas 2048 x 1024 and first-person frames 640 x 360 (four
headings) on the first ``--nodes`` shopping-street nodes of the default city, clear day, population ``--population``;
CPU ms per panorama and per frame, the minimum and the median over ``--rounds``, and the machine's load
(``uptime``). Needs the fetched assets (``urbanarena assets fetch``).

    LP_NUM_THREADS=2 python3 benchmarks/bench_photo_greenery.py [--nodes 4] [--rounds 5] [--old-trees FILE]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ab_static_poses  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--city", default="helsinki")
    ap.add_argument("--population", default="snapshot")
    ap.add_argument("--old-trees", default=None)
    a = ap.parse_args()
    from urbanarena.bench.population import shopping_nodes
    from urbanarena.bench.realism import _city
    from urbanarena.render.scene3d import photo_clutter as PC, photo_greenery as PG, trees_photo as TP
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    if TP.photo_trees() is None or PC.photo_clutter() is None:
        print("photo assets not fetched: run `urbanarena assets fetch`", file=sys.stderr)
        return 2
    city = _city(a.city)
    scene = scene_from_city(city)
    poses = [node_pose(city, n) for n in shopping_nodes(city)[:a.nodes]]
    saved = (TP.photo_trees, TP.with_photo_trees)
    renderers = {}
    settings = RenderSettings(style="photo", population=a.population)
    try:
        PG.ENABLED = PC.ENABLED = False
        if a.old_trees:
            spec = importlib.util.spec_from_file_location("trees_photo_old", a.old_trees)
            old = importlib.util.module_from_spec(spec)
            sys.modules["trees_photo_old"] = old   # (its dataclasses look their module up)
            spec.loader.exec_module(old)
            from urbanarena import paths
            from urbanarena.render.assets import package_by_name

            kit = old.load_tree_kit(paths.assets_dir() / package_by_name(TP.PACKAGE).key)
            TP.photo_trees, TP.with_photo_trees = (lambda quiet=False: kit), old.with_photo_trees
        renderers["without"] = SceneRenderer(scene, settings)
        TP.photo_trees, TP.with_photo_trees = saved
        PG.ENABLED = PC.ENABLED = True
        renderers["with"] = SceneRenderer(scene, settings)
    finally:
        TP.photo_trees, TP.with_photo_trees = saved
        PG.ENABLED = PC.ENABLED = True
    res = {"LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"), "nodes": a.nodes, "rounds": a.rounds,
           "old_trees": bool(a.old_trees), "population": a.population,
           "scene_mesh_triangles": {n: int(r.meshes.n_triangles) for n, r in renderers.items()}}   # seeded arrays not counted
    ab_static_poses(renderers, poses, a.rounds, res)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
