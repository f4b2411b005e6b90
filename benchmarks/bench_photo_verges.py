"""What the ``photo`` style's grass verges and leafier hedges and bushes cost (``render/scene3d/photo_verges.py``,
``photo_verges_mesh.py``, the hedge and bush templates of ``photo_greenery_mesh.py``): the same renders with people
before and after, in one process, interleaved round by round so that a shared machine's load drifts into both alike.

Variants: ``without`` (verges off, and with ``--old-mesh FILE`` -- a copy of an older ``photo_greenery_mesh.py``,
e.g. ``git show <commit>:src/urbanarena/render/scene3d/photo_greenery_mesh.py`` -- its hedge, bush and tuft
templates: the branch start) and ``with``. Per round and variant: panoramas 2048 x 1024 with the population and
first-person frames 640 x 360 (four headings, the population drawn) on the first ``--nodes`` shopping-street nodes
of the default city plus the ``--extra`` nodes (comma-separated ids; e.g. streets with verges), clear day; CPU ms
per panorama and per frame, min and median over ``--rounds``, and the machine's load. Needs the fetched assets.

    LP_NUM_THREADS=2 python3 benchmarks/bench_photo_verges.py [--nodes 2] [--extra n01241] [--rounds 4]
        [--old-mesh FILE]
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--extra", default="n01241")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--old-mesh", default=None)
    a = ap.parse_args()
    from urbanarena.bench.realism import _city
    from urbanarena.render.scene3d import photo_greenery as PG
    from urbanarena.render.scene3d import photo_greenery_mesh as PGM
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
    saved = PGM.greenery_templates
    renderers = {}
    try:
        PG.VERGES = False
        if a.old_mesh:
            spec = importlib.util.spec_from_file_location("photo_greenery_mesh_old", a.old_mesh)
            old = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(old)
            PGM.greenery_templates = old.greenery_templates
        renderers["without"] = SceneRenderer(scene, settings)
    finally:
        PG.VERGES, PGM.greenery_templates = True, saved
    renderers["with"] = SceneRenderer(scene, settings)

    pano, frames = population_workloads(scene, settings, nodes, poses)

    for r in renderers.values():   # warm: shader compile, sky and shadow bakes
        x, y, b = poses[0]
        render_with_population(r, x, y, 1.7, 2048, b, node_population(scene, settings, nodes[0], x, y))
    res = {"LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"), "nodes": nodes, "rounds": a.rounds,
           "old_mesh": bool(a.old_mesh), "uptime_start": uptime()}
    ab_cpu_ms(renderers, a.rounds, pano, frames, res)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
