"""What the ``photo`` style's clouds (``render/scene3d/photo_clouds.py``) cost against another revision's: two photo
renderers in one process, one drawing the clouds of ``--before`` (the module's source at that git revision, loaded
in place of the current one while its renderer is built), interleaved round by round (``_common.ab_static_poses``:
panoramas 2048 wide and 640 x 360 frames, no people, on the first ``--nodes`` shopping-street nodes of the default
city, clear day). Reports CPU ms min/median per panorama and frame and the ``with`` (current) / ``without``
(``--before``) ratios. Needs the fetched assets (``urbanarena assets fetch``) and git.

    LP_NUM_THREADS=2 python3 benchmarks/bench_photo_clouds.py --before 8245f78 [--nodes 3] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ab_static_poses  # noqa: E402

MODULE = "src/urbanarena/render/scene3d/photo_clouds.py"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="git revision whose photo_clouds.py is the baseline")
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--city", default="helsinki")
    a = ap.parse_args()
    import urbanarena.render.scene3d as pkg
    from urbanarena.bench.population import shopping_nodes
    from urbanarena.bench.realism import _city
    from urbanarena.render.scene3d import photo_clouds as current
    from urbanarena.render.scene3d import photo_sky
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    if photo_sky.hdri_dir() is None:
        return 2
    root = Path(__file__).resolve().parent.parent
    src = subprocess.run(["git", "-C", str(root), "show", f"{a.before}:{MODULE}"], check=True, capture_output=True,
                         text=True).stdout
    old = types.ModuleType("photo_clouds_before")
    exec(compile(src, f"{a.before}:{MODULE}", "exec"), old.__dict__)
    city = _city(a.city)
    scene = scene_from_city(city)
    poses = [node_pose(city, n) for n in shopping_nodes(city)[:a.nodes]]
    name = current.__name__
    renderers = {}
    try:
        for label, mod in (("without", old), ("with", current)):
            sys.modules[name], pkg.photo_clouds = mod, mod
            renderers[label] = SceneRenderer(scene, RenderSettings(style="photo", population="none"))
    finally:
        sys.modules[name], pkg.photo_clouds = current, current
    res = {"LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"), "before": a.before, "nodes": a.nodes,
           "rounds": a.rounds}
    ab_static_poses(renderers, poses, a.rounds, res)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
