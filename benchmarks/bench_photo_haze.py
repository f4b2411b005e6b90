"""What the ``photo`` style's clear air and far skyline (``photo-haze-2``, ``render/scene3d/photo_atmosphere.py``)
cost and look like: renderers with the branch start's haze (2.5 km optical range, skyline ring to 300 m) and with
the new one (20 km, far band to 1500 m, ground to 4 km), in one process, interleaved round by round.

Speed: panoramas 2048 x 1024 and first-person frames 640 x 360 (four headings) on the first ``--nodes``
shopping-street nodes, clear day, photo style without people (as ``bench_photo_materials.py``).
Pictures (``--shots DIR``): each ``--views`` ``NODE:HEADING:PITCH`` before (left) and after (right) at 640 x 360,
stacked into ``DIR/photo-haze.jpg``.

    LP_NUM_THREADS=2 python3 benchmarks/bench_photo_haze.py [--nodes 3] [--rounds 5] [--shots DIR] [--skip-speed]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ab_static_poses  # noqa: E402


def renderers(scene) -> dict:
    """``{"before": ..., "after": ...}`` clear-day photo renderers (no people) of ``scene``."""
    from urbanarena.render.scene3d import photo_atmosphere as PA
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    keep = PA.CLEAR_HAZE_BETA_PER_M, PA.FAR_OUT_M
    out = {}
    try:
        PA.CLEAR_HAZE_BETA_PER_M, PA.FAR_OUT_M = PA.HAZE_BETA_PER_M, PA.RING_OUT_M
        out["before"] = SceneRenderer(scene, RenderSettings(style="photo", population="none"))
    finally:
        PA.CLEAR_HAZE_BETA_PER_M, PA.FAR_OUT_M = keep
    out["after"] = SceneRenderer(scene, RenderSettings(style="photo", population="none"))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--city", default="helsinki")
    ap.add_argument("--shots", default=None)
    ap.add_argument("--views", default="n00008:0:0,n00010:90:0,n01648:160:0")
    ap.add_argument("--skip-speed", action="store_true")
    a = ap.parse_args()
    import numpy as np
    from PIL import Image

    from urbanarena.bench.population import VIEW_H, VIEW_HFOV, VIEW_W, shopping_nodes
    from urbanarena.bench.realism import _city
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city

    city = _city(a.city)
    scene = scene_from_city(city)
    rs = renderers(scene)
    if a.shots:
        rows = []
        for view in a.views.split(","):
            node, heading, pitch = view.split(":")
            x, y, b = node_pose(city, node)
            rows.append(np.concatenate([rs[k].render_view(x, y, b + float(heading), float(pitch), VIEW_HFOV, VIEW_W,
                                                          VIEW_H) for k in ("before", "after")], axis=1))
        Path(a.shots).mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.concatenate(rows, axis=0)).save(Path(a.shots) / "photo-haze.png")
        if a.skip_speed:
            return 0
    poses = [node_pose(city, n) for n in shopping_nodes(city)[:a.nodes]]
    res = {"LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"), "nodes": a.nodes, "rounds": a.rounds,
           "load": os.getloadavg()}
    ab_static_poses({"without": rs["before"], "with": rs["after"]}, poses, a.rounds, res)   # before, after
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
