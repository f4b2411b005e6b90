"""What the ``photo`` style's sky visibility costs (``render/scene3d/photo_occlusion.py``): the field's
precomputation for the whole city (CPU seconds, :func:`.photo_occlusion.compute_field`), then the same renders with
the field and without it (``photo_occlusion.ENABLED`` false: the photo style exactly as before the module), in one
process, interleaved round by round so that a shared machine's load drifts into both alike.

Per round and variant: panoramas 2048 x 1024 without the population and first-person frames 640 x 360 (four
headings) on the first ``--nodes`` shopping-street nodes of the default city, clear day; CPU ms per panorama and
per frame (minimum and median over ``--rounds``) and their with/without ratios; then frames looking down at the
ground (``bench_photo_ground_wear.ground_views``: pitch -35, the ground's and the walls' feet's own cost, diluted
less). Needs the fetched assets.

Pictures (``--shots DIR``): for each ``--views`` entry ``NODE:HEADING:PITCH`` (heading relative to the node's
bearing, degrees) and each of ``--conditions``, ``DIR/<condition>.png``: per view the 640 x 360 photo view
without the field (left) and with it (right), the views one under another; ``--skip-speed`` skips the speed runs.

    LP_NUM_THREADS=2 python3 benchmarks/bench_photo_occlusion.py [--nodes 2] [--rounds 4] [--shots DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ab_static_poses, renderers_without_and_with  # noqa: E402


def _renderers(scene, settings):
    from urbanarena.render.scene3d import photo_occlusion as PO

    return renderers_without_and_with(PO, scene, settings)


def shots(city, scene, views: str, conditions: str, folder: str, width: int, height: int) -> None:
    import numpy as np
    from PIL import Image

    from urbanarena.render.scene3d.city_scene import node_pose
    from urbanarena.render.scene3d.renderer import RenderSettings

    Path(folder).mkdir(parents=True, exist_ok=True)
    for cond in conditions.split(","):
        rs = _renderers(scene, RenderSettings.for_condition(cond, style="photo", population="none"))
        rows = []
        for view in views.split(","):
            node, heading, pitch = view.split(":")
            x, y, b = node_pose(city, node)
            rows.append(np.concatenate([rs[n].render_view(x, y, b + float(heading), float(pitch), 90.0, width,
                                                          height) for n in ("without", "with")], axis=1))
        path = Path(folder) / f"{cond}.png"
        Image.fromarray(np.concatenate(rows, axis=0)).save(path)
        print(f"{path} ({path.stat().st_size // 1024} kB)", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--city", default="helsinki")
    ap.add_argument("--shots", default=None)
    ap.add_argument("--views", default="n01648:160:-12,n01946:90:-5,n01881:64:0")
    ap.add_argument("--conditions", default="clear,cloudy,dusk")
    ap.add_argument("--size", default="640x360")
    ap.add_argument("--skip-speed", action="store_true")
    a = ap.parse_args()
    from urbanarena.bench.population import shopping_nodes
    from urbanarena.bench.realism import _city
    from urbanarena.render.scene3d import photo_materials as PM
    from urbanarena.render.scene3d import photo_occlusion as PO
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.renderer import RenderSettings

    if PM.photo_materials() is None:
        print("photo materials not fetched: run `urbanarena assets fetch`", file=sys.stderr)
        return 2
    city = _city(a.city)
    scene = scene_from_city(city)
    c, w = time.process_time(), time.perf_counter()
    field = PO.compute_field(scene.buildings)
    res = {"LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"), "nodes": a.nodes, "rounds": a.rounds,
           "field": {"cells": list(field.sky.shape[:2]), "cell_m": field.cell_m,
                     "cpu_s": round(time.process_time() - c, 2), "wall_s": round(time.perf_counter() - w, 2)}}
    print(json.dumps(res["field"]), file=sys.stderr)
    if a.shots:
        wd, ht = (int(v) for v in a.size.split("x"))
        shots(city, scene, a.views, a.conditions, a.shots, wd, ht)
        if a.skip_speed:
            return 0
    poses = [node_pose(city, n) for n in shopping_nodes(city)[:a.nodes]]
    renderers = _renderers(scene, RenderSettings(style="photo", population="none"))
    ab_static_poses(renderers, poses, a.rounds, res)
    from bench_photo_ground_wear import ground_views

    res["ground_views"] = ground_views(renderers, poses, a.rounds)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
