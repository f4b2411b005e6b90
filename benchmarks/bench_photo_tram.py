"""What the ``photo`` style's procedural tram costs (``render/scene3d/photo_tram.py``): the same renders with it and
without it (the realistic style's box sections, as the photo style drew trams before), in one process, interleaved
round by round so that a shared machine's load drifts into both alike.

Nodes: the first ``--nodes`` nodes of the default city (sorted ids, every ``--stride``-th) whose snapshot places
a tram within ``--near`` metres. Per round and variant: a 2048 x 1024 panorama with the population and four
640 x 360 first-person frames with it per node, clear day; CPU ms per panorama and per frame (min and median over
``--rounds``) and the machine's load (``uptime``). Needs the fetched assets.

Pictures (``--shots DIR``): per node a 640 x 360 view (75-degree field) towards its nearest tram section, boxes
left and the procedural tram right, as ``DIR/photo-tram-K.png``; ``--skip-speed`` skips the timing.

    LP_NUM_THREADS=2 python3 benchmarks/bench_photo_tram.py [--nodes 2] [--rounds 3] [--shots DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ab_cpu_ms, population_workloads, uptime  # noqa: E402


def tram_nodes(city, scene, settings, n: int, near_m: float, stride: int) -> list[tuple[str, tuple, object]]:
    """``[(node, (x, y, bearing), nearest tram placement)]`` of the first ``n`` nodes with a tram near them."""
    from urbanarena.render.scene3d.city_scene import node_pose
    from urbanarena.render.scene3d.population import snapshot_for_settings

    out = []
    for node in sorted(str(k) for k in city.graph.nodes)[::stride]:
        x, y, b = node_pose(city, node)
        snap = snapshot_for_settings(scene, settings, node, x, y)
        trams = [p for p in (snap.placements if snap else []) if p.kind == "tram"]
        if not trams:
            continue
        p = min(trams, key=lambda q: math.hypot(q.x_m - x, q.y_m - y))
        if 6.0 < math.hypot(p.x_m - x, p.y_m - y) < near_m:
            out.append((node, (x, y, b), p))
            if len(out) >= n:
                break
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--near", type=float, default=30.0)
    ap.add_argument("--stride", type=int, default=7)
    ap.add_argument("--shots", default=None)
    ap.add_argument("--skip-speed", action="store_true")
    a = ap.parse_args()
    import numpy as np
    from PIL import Image

    from urbanarena.bench.realism import _city
    from urbanarena.render.scene3d import photo_tram as PT
    from urbanarena.render.scene3d import population_photo as PP
    from urbanarena.render.scene3d.cache import render_with_population
    from urbanarena.render.scene3d.city_scene import scene_from_city
    from urbanarena.render.scene3d.population_draw import node_population, release_population
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    if PP.photo_models() is None:
        print("photo models not fetched: run `urbanarena assets fetch`", file=sys.stderr)
        return 2
    city = _city("helsinki")
    scene = scene_from_city(city)
    settings = RenderSettings(style="photo", population="snapshot")
    found = tram_nodes(city, scene, settings, a.nodes, a.near, a.stride)
    print(f"tram nodes: {[(n, p.id) for n, _, p in found]}", file=sys.stderr)
    if not found:
        return 1
    r = SceneRenderer(scene, settings)

    def use(name):
        PT.ENABLED = name == "with"

    if a.shots:
        Path(a.shots).mkdir(parents=True, exist_ok=True)
        for k, (node, (x, y, _), p) in enumerate(found, 1):
            yaw = math.degrees(math.atan2(p.x_m - x, p.y_m - y))
            imgs = []
            for name in ("without", "with"):
                use(name)
                objs = node_population(scene, settings, node, x, y)
                imgs.append(r.render_view(x, y, yaw, -2.0, 75.0, 640, 360, dynamic=objs))
                release_population(r, objs)
            path = Path(a.shots) / f"photo-tram-{k}.png"
            Image.fromarray(np.concatenate(imgs, axis=1)).save(path)
            print(f"{path} ({node}, yaw {yaw:.0f})", file=sys.stderr)
        if a.skip_speed:
            return 0
    nodes = [n for n, _, _ in found]
    poses = [q for _, q, _ in found]
    pano, frames = population_workloads(scene, settings, nodes, poses)
    renderers = {"without": r, "with": r}
    for name in renderers:   # warm: shader compile, sky and shadow bakes, the tram sections' meshes
        use(name)
        x, y, b = poses[0]
        render_with_population(r, x, y, 1.7, 2048, b, node_population(scene, settings, nodes[0], x, y))
    res = {"LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"), "nodes": nodes, "rounds": a.rounds,
           "uptime_start": uptime()}
    ab_cpu_ms(renderers, a.rounds, pano, frames, res, before=use)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
