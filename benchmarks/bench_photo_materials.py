"""What the ``photo`` style's photographed walls and ground cost (``render/scene3d/photo_materials.py``): the same
renders with the materials and without them (the fallback, which draws the realistic materials, as the photo style
did before), in one process, interleaved round by round so that a shared machine's load drifts into both alike.

Per round and variant: panoramas 2048 x 1024 without the population and first-person frames 640 x 360 (four
headings) on the first ``--nodes`` shopping-street nodes of the default city, clear day; CPU ms per panorama and
per frame. Reports the minimum and the median over ``--rounds`` and the machine's load (``uptime``).
Needs the fetched assets (``urbanarena assets fetch``).

Pictures (``--shots DIR``): for each ``--views`` entry ``NODE:HEADING:PITCH`` (heading relative to the node's
bearing, degrees) the 640 x 360 view, realistic left and photo right (no population), as
``DIR/photo-materials-K.jpg`` (JPEG quality 82); the speed runs are skipped with ``--skip-speed``.

    LP_NUM_THREADS=2 python3 benchmarks/bench_photo_materials.py [--nodes 4] [--rounds 5] [--shots DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ab_static_poses  # noqa: E402


def shots(city, scene, views: str, out_dir: str) -> None:
    from pathlib import Path

    import numpy as np
    from PIL import Image

    from urbanarena.bench.population import VIEW_H, VIEW_HFOV, VIEW_W
    from urbanarena.render.scene3d.city_scene import node_pose
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    rs = {s: SceneRenderer(scene, RenderSettings(style=s, population="none")) for s in ("realistic", "photo")}
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    for k, view in enumerate(views.split(","), 1):
        node, heading, pitch = view.split(":")
        x, y, b = node_pose(city, node)
        imgs = [rs[s].render_view(x, y, b + float(heading), float(pitch), VIEW_HFOV, VIEW_W, VIEW_H)
                for s in ("realistic", "photo")]
        path = Path(out_dir) / f"photo-materials-{k}.jpg"
        Image.fromarray(np.concatenate(imgs, axis=1)).save(path, quality=82)
        print(f"{path} ({node}, heading {heading}, pitch {pitch}; {path.stat().st_size // 1024} kB)", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--city", default="helsinki")
    ap.add_argument("--shots", default=None)
    ap.add_argument("--views", default="n00008:45:-4,n01946:90:-4,n01648:160:-8")
    ap.add_argument("--skip-speed", action="store_true")
    a = ap.parse_args()
    from urbanarena.bench.population import shopping_nodes
    from urbanarena.bench.realism import _city
    from urbanarena.render.scene3d import photo_materials as PM
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    kit = PM.photo_materials()
    if kit is None:
        print("photo materials not fetched: run `urbanarena assets fetch`", file=sys.stderr)
        return 2
    city = _city(a.city)
    scene = scene_from_city(city)
    if a.shots:
        shots(city, scene, a.views, a.shots)
        if a.skip_speed:
            return 0
    poses = [node_pose(city, n) for n in shopping_nodes(city)[:a.nodes]]
    load = PM.photo_materials
    renderers = {}
    try:
        for name, got in (("without", None), ("with", kit)):
            PM.photo_materials = lambda quiet=False, k=got: k
            renderers[name] = SceneRenderer(scene, RenderSettings(style="photo", population="none"))
    finally:
        PM.photo_materials = load
    res = {"LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"), "nodes": a.nodes, "rounds": a.rounds}
    ab_static_poses(renderers, poses, a.rounds, res)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
