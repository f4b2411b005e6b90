"""What the ``photo`` style's facades cost (``render/scene3d/photo_facades.py``): the same renders with the facade
patch and without it (the photo walls as before), in one process, interleaved round by round so that a shared
machine's load drifts into both alike.

Per round and variant: panoramas 2048 x 1024 without the population (the patch costs per wall
fragment, whoever stands in front) and first-person frames 640 x 360 (four headings)
on the first ``--nodes`` shopping-street nodes of the default city, clear day (``--condition`` for another); CPU ms
per panorama and per frame, minimum and median over ``--rounds``, and the machine's load (``uptime``). Needs the
fetched assets (``urbanarena assets fetch``).

Pictures: ``--shots FILE`` writes one JPEG of the ``--views`` (``NODE:HEADING:PITCH:CONDITION``), without the
patch left, with it right, and skips the speed runs.

    LP_NUM_THREADS=2 python3 benchmarks/bench_photo_facades.py [--nodes 3] [--rounds 4] [--shots FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ab_static_poses  # noqa: E402


def shots(city, scene, views: str, out: str) -> None:
    """One JPEG: per ``views`` entry ``NODE:HEADING:PITCH:CONDITION`` a row of the 640 x 360 view without the facade
    patch (left) and with it (right), halved, no population."""
    from pathlib import Path

    import numpy as np
    from PIL import Image

    from urbanarena.bench.population import VIEW_H, VIEW_HFOV, VIEW_W
    from urbanarena.render.scene3d import photo_facades as PF
    from urbanarena.render.scene3d.city_scene import node_pose
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    patch, rows = PF.patch_source, []
    for view in views.split(","):
        node, heading, pitch, cond = view.split(":")
        x, y, b = node_pose(city, node)
        row = []
        for fn in (lambda src, program="", sky_map=False: src, patch):
            PF.patch_source = fn
            try:
                r = SceneRenderer(scene, RenderSettings.for_condition(cond, style="photo", population="none"))
            finally:
                PF.patch_source = patch
            img = r.render_view(x, y, b + float(heading), float(pitch), VIEW_HFOV, VIEW_W, VIEW_H)
            row.append(np.asarray(Image.fromarray(img).resize((VIEW_W // 2, VIEW_H // 2), Image.LANCZOS)))
        rows.append(np.concatenate(row, axis=1))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.concatenate(rows, axis=0)).save(out, quality=80)
    print(f"{out}: {Path(out).stat().st_size // 1024} kB", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--city", default="helsinki")
    ap.add_argument("--condition", default="clear")
    ap.add_argument("--shots", default=None, help="write the before/after JPEG here and skip the speed runs")
    ap.add_argument("--views", default="n01946:60:12:clear,n00008:45:-4:clear,n00008:30:10:night")
    a = ap.parse_args()
    from urbanarena.bench.population import shopping_nodes
    from urbanarena.bench.realism import _city
    from urbanarena.render.scene3d import photo_facades as PF
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    city = _city(a.city)
    scene = scene_from_city(city)
    if a.shots:
        shots(city, scene, a.views, a.shots)
        return 0
    poses = [node_pose(city, n) for n in shopping_nodes(city)[:a.nodes]]
    patch = PF.patch_source
    renderers = {}
    settings = RenderSettings.for_condition(a.condition, style="photo", population="none")
    try:
        for name, fn in (("without", lambda src, program="", sky_map=False: src), ("with", patch)):
            PF.patch_source = fn
            renderers[name] = SceneRenderer(scene, settings)
    finally:
        PF.patch_source = patch
    res = {"LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"), "nodes": a.nodes, "rounds": a.rounds}
    ab_static_poses(renderers, poses, a.rounds, res)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
