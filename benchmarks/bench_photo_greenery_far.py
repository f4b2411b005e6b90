"""What the far level of the ``photo`` style's seeded hedges and bushes saves (``photo_greenery.FAR_FROM_M``,
``photo_greenery_mesh`` ``far``): the same renders with it and without it (``FAR_FROM_M`` at the draw distance and
the scene's 40 m tiles, as the branch drew them before), in one process, interleaved round by round so that a
shared machine's load drifts into both alike. Two pose sets: the first ``--nodes`` shopping-street nodes with
their people (the speed floor's workload: panoramas 2048 x 1024 and four 640 x 360 frames each), and ``--nodes``
nodes with the most seeded hedges and bushes within 80 m (no people). CPU ms per panorama and frame (minimum and
median over ``--rounds``), their ratios, the machine's load (``uptime``), and the pixels that differ.

    LP_NUM_THREADS=2 python3 benchmarks/bench_photo_greenery_far.py [--nodes 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ab_cpu_ms, ab_static_poses, photo_people_setup, population_workloads, uptime  # noqa: E402


def green_nodes(city, scene, n: int) -> list:
    """``n`` poses ``(x_m, y_m, bearing_deg)`` of nodes with the most seeded hedge cells and bushes within 80 m."""
    import numpy as np

    from urbanarena.render.scene3d import photo_greenery as PG
    from urbanarena.render.scene3d.city_scene import node_pose

    plan = PG.plan_for(scene)
    pts = np.concatenate([plan["hedge"][:, :2], plan["bush"][:, :2]])
    poses = [node_pose(city, str(k)) for k in sorted(city.graph.nodes, key=str)[::7]]
    score = [int((np.hypot(pts[:, 0] - x, pts[:, 1] - y) < 80).sum()) for x, y, _ in poses]
    return [poses[i] for i in np.argsort(score)[::-1][:n]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    import numpy as np

    from urbanarena.bench.population import VIEW_H, VIEW_HFOV, VIEW_W
    from urbanarena.bench.realism import _city
    from urbanarena.render.scene3d import photo_greenery as PG
    from urbanarena.render.scene3d.renderer import SceneRenderer

    setup = photo_people_setup(a.nodes)
    if setup is None:
        return 2
    scene, settings, nodes, poses = setup
    renderers, keep = {}, (PG.FAR_FROM_M, PG.GREEN_TILE_M)
    try:
        for name, far_from_m, tile_m in (("without", PG.SMALL_DISTANCE_M, 40.0), ("with", *keep)):
            PG.FAR_FROM_M, PG.GREEN_TILE_M = far_from_m, tile_m
            renderers[name] = SceneRenderer(scene, settings)
    finally:
        PG.FAR_FROM_M, PG.GREEN_TILE_M = keep
    res = {"LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"), "nodes": a.nodes, "rounds": a.rounds,
           "uptime_start": uptime()}
    green = green_nodes(_city("helsinki"), scene, a.nodes)
    diff = []
    for x, y, b in green:
        for k in range(4):
            im = [r.render_view(x, y, b + 90 * k, 0.0, VIEW_HFOV, VIEW_W, VIEW_H) for r in renderers.values()]
            diff.append(int((np.abs(im[0].astype(int) - im[1].astype(int)).max(axis=2) > 8).sum()))
    res["green_frames_px_differing_by_over_8"] = diff
    pano, frames = population_workloads(scene, settings, nodes, poses)
    for r in renderers.values():
        pano(r)
    res["shopping_with_people"] = ab_cpu_ms(renderers, a.rounds, pano, frames, {})
    res["green_nodes_no_people"] = ab_static_poses(renderers, green, a.rounds, {})
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
