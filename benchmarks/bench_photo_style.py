"""The ``photo`` style's people and vehicles (issue 24 item 2) vs ``realistic``: speed and side-by-side pictures.

Speed: :func:`urbanarena.bench.population.speed` for both styles on the first ``--nodes`` shopping-street nodes of
the default city (panoramas/s 2048 x 1024 with the population, first-person frames/s 640 x 360 with it, CPU ms,
median population triangles), with the machine's load (``uptime``) before and after: a shared machine's wall
rates swing with its load. Pictures (``--shots DIR``): for ``--shot-nodes`` nodes, the 640 x 360 level view
towards the most population pixels, realistic left and photo right, as JPEG (quality 82) under DIR.
Needs the fetched assets (``urbanarena assets fetch``) and builds the default city when not cached.

    LP_NUM_THREADS=2 python3 benchmarks/bench_photo_style.py [--nodes 6] [--shots docs/screenshots]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def shots(city, nodes, out_dir: Path) -> list[str]:
    import numpy as np
    from PIL import Image

    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.population_draw import node_population, population_pixels
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    scene = scene_from_city(city)
    rs = {s: SceneRenderer(scene, RenderSettings(style=s, population="snapshot")) for s in ("realistic", "photo")}
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for n in nodes:
        x, y, b = node_pose(city, n)
        objs = {s: node_population(scene, r.settings, n, x, y) for s, r in rs.items()}
        if objs["realistic"] is None:
            continue
        best = max(range(8), key=lambda k: population_pixels(rs["realistic"], objs["realistic"], x, y,
                                                             b + 45 * k)["total_px"])
        yaw = b + 45 * best
        imgs = [rs[s].render_view(x, y, yaw, 0.0, 90.0, 640, 360, dynamic=objs[s]) for s in ("realistic", "photo")]
        path = out_dir / f"photo-style-{n.replace(':', '_')}.jpg"
        Image.fromarray(np.concatenate(imgs, axis=1)).save(path, quality=82)
        written.append(f"{path} ({path.stat().st_size // 1024} kB)")
    return written


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=6)
    ap.add_argument("--city", default="helsinki")
    ap.add_argument("--shots", type=Path, default=None)
    ap.add_argument("--shot-nodes", type=int, default=3)
    ap.add_argument("--skip-speed", action="store_true")
    a = ap.parse_args()
    from urbanarena.bench.population import shopping_nodes, speed
    from urbanarena.bench.realism import _city
    from urbanarena.render.scene3d.population_photo import photo_models

    if photo_models() is None:
        print("photo assets not fetched: run `urbanarena assets fetch`", file=sys.stderr)
        return 2
    city = _city(a.city)
    ns = shopping_nodes(city)
    res = {"LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"), "uptime_start": uptime()}
    if not a.skip_speed:
        for style in ("realistic", "photo"):
            res[style] = speed(city, ns[:a.nodes], "clear", style=style)
    if a.shots is not None:
        step = max(1, len(ns) // max(a.shot_nodes, 1))
        res["shots"] = shots(city, ns[::step][:a.shot_nodes], a.shots)
    res["uptime_end"] = uptime()
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
