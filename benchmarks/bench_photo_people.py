"""What the ``photo`` style's varied people (``render/scene3d/people_look.py``) and cumulus clouds
(``render/scene3d/photo_clouds.py``) cost: the same renders with both and without them (people as before: the
model's own clothes, unmirrored, the population's headings, cyclists as boxes; no clouds: the sky shader's early
return), in one
process, interleaved round by round so that a shared machine's load drifts into both alike.

Per round and variant: panoramas 2048 x 1024 with the population (its mesh built anew each time, as the panorama
store does per node) and first-person frames 640 x 360 with it (four headings) on the first ``--nodes``
shopping-street nodes of the default city, clear day; CPU ms per panorama and per frame. Reports the minimum and
the median over ``--rounds`` and the machine's load (``uptime``). Needs the fetched assets.

    LP_NUM_THREADS=2 python3 benchmarks/bench_photo_people.py [--nodes 3] [--rounds 3]
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

    from urbanarena.render.scene3d import photo_clouds as PC
    from urbanarena.render.scene3d import population_photo as PP
    from urbanarena.render.scene3d.cache import render_with_population
    from urbanarena.render.scene3d.population_draw import node_population
    from urbanarena.render.scene3d.renderer import SceneRenderer

    setup = photo_people_setup(a.nodes)
    if setup is None:
        return 2
    scene, settings, nodes, poses = setup
    model_for = PP.model_for
    real = (PP.photo_pose, PP.person_look, dict(PC.COVER), model_for)
    plain = (lambda ps: list(ps), lambda m, v, *pc, walking=False: (m.positions, m.normals, m.colours, *pc), {},
             lambda p, models: None if p.kind == "cyclist" else model_for(p, models))

    def use(variant):
        PP.photo_pose, PP.person_look, PP.model_for = variant[0], variant[1], variant[3]
        PC.COVER.clear()
        PC.COVER.update(variant[2])

    variants = {"without": plain, "with": real}
    renderers = {}
    for name, v in variants.items():
        use(v)
        renderers[name] = SceneRenderer(scene, settings)
    use(real)

    pano, frames = population_workloads(scene, settings, nodes, poses)

    for name, r in renderers.items():   # warm: shader compile, sky and shadow bakes
        use(variants[name])
        x, y, b = poses[0]
        render_with_population(r, x, y, 1.7, 2048, b, node_population(scene, settings, nodes[0], x, y))
    res = {"LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"), "nodes": a.nodes, "rounds": a.rounds,
           "uptime_start": uptime()}
    ab_cpu_ms(renderers, a.rounds, pano, frames, res, before=lambda name: use(variants[name]))
    use(real)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
