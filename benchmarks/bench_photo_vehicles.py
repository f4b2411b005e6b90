"""What the ``photo`` style's vehicle finish and finer levels of detail cost (``render/scene3d/photo_vehicles.py``,
crease-angle normals and the cells of ``render/scene3d/population_photo.py``): the same renders with the branch
start's models (its catalogue with the Chevrolet, vehicle cells 0.03/0.06/0.1/0.15, person cells
0.02/0.05/0.1/0.15, smooth normals, no finish) and with today's, in one process, interleaved round by round so
that a shared machine's load drifts into both alike.

Per round and variant: panoramas 2048 x 1024 with the population (its mesh built anew each time, as the panorama
store does per node) and first-person frames 640 x 360 with it (four headings) on the first ``--nodes``
shopping-street nodes of the default city, clear day; CPU ms per panorama and per frame. Reports the minimum and
the median over ``--rounds`` and the machine's load (``uptime``). Needs the fetched assets.

    LP_NUM_THREADS=2 python3 benchmarks/bench_photo_vehicles.py [--nodes 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ab_cpu_ms, photo_people_setup, population_workloads, uptime  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()

    from urbanarena import paths
    from urbanarena.render.assets import package_by_name
    from urbanarena.render.scene3d import photo_vehicles as PV
    from urbanarena.render.scene3d import population_photo as PP
    from urbanarena.render.scene3d.cache import render_with_population
    from urbanarena.render.scene3d.population_draw import node_population
    from urbanarena.render.scene3d.renderer import SceneRenderer

    setup = photo_people_setup(a.nodes)
    if setup is None:
        return 2
    scene, settings, nodes, poses = setup
    folder = paths.assets_dir() / package_by_name(PP.PACKAGE).key
    new_models = PP.photo_models()
    saved = (PP.PERSON_CELLS, PP.VEHICLE_CELLS, PP.VEHICLE_CREASE_DEG)
    PP.PERSON_CELLS, PP.VEHICLE_CELLS = (0.02, 0.05, 0.1, 0.15), (0.03, 0.06, 0.1, 0.15)
    PP.VEHICLE_CREASE_DEG = (180.0,) * 4
    old_cat = PP.PhotoCatalogue(cars=PP.CARS[:4] + ("scopia/chevrolet/chevrolet.obj",) + PP.CARS[4:])
    old_models = PP.load_photo_models(folder, old_cat, cache_dir=paths.home() / "models")
    PP.PERSON_CELLS, PP.VEHICLE_CELLS, PP.VEHICLE_CREASE_DEG = saved
    finish = PV.finish_colours
    variants = {"without": (old_models, lambda pos, nrm, col, cls, eye: col),
                "with": (new_models, finish)}

    def use(name):
        models, fin = variants[name]
        PP.photo_models = lambda quiet=False, m=models: m
        PV.finish_colours = fin

    renderers = {}
    for name in variants:
        use(name)
        renderers[name] = SceneRenderer(scene, settings)
    pano, frames = population_workloads(scene, settings, nodes, poses)
    for name, r in renderers.items():   # warm: shader compile, sky and shadow bakes
        use(name)
        x, y, b = poses[0]
        render_with_population(r, x, y, 1.7, 2048, b, node_population(scene, settings, nodes[0], x, y))
    res = {"LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"), "nodes": a.nodes, "rounds": a.rounds,
           "uptime_start": uptime()}
    ab_cpu_ms(renderers, a.rounds, pano, frames, res, before=use)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
