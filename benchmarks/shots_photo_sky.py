"""Side-by-side pictures of the ``photo`` style's HDRI sky and image-based ambient light (issue 24 item 3).

For each condition (clear day, dusk, cloudy) the 640 x 360, 90-degree view of the default city that shows the most
sky (of the first ``--nodes`` shopping-street nodes, 8 yaws each, pitch ``--pitch``: the share of ID-pass background
pixels in the upper half), realistic left and photo right, with each node's people and vehicles, as JPEG (quality
82) ``DIR/photo-sky-<condition>.jpg``. Needs the fetched assets (``urbanarena assets fetch``).

    LP_NUM_THREADS=2 python3 benchmarks/shots_photo_sky.py --out docs/screenshots
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--city", default="helsinki")
    ap.add_argument("--nodes", type=int, default=12)
    ap.add_argument("--pitch", type=float, default=8.0)
    ap.add_argument("--conditions", default="clear,dusk,cloudy")
    a = ap.parse_args()
    import numpy as np
    from PIL import Image

    from urbanarena.bench.population import shopping_nodes
    from urbanarena.bench.realism import _city
    from urbanarena.render.scene3d import photo_sky
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.population_draw import node_population
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    if photo_sky.hdri_dir() is None:
        return 2
    city = _city(a.city)
    scene = scene_from_city(city)
    nodes = shopping_nodes(city)[: a.nodes]
    probe = SceneRenderer(scene, RenderSettings(style="realistic"))
    best = (-1.0, None, 0.0)
    for n in nodes:
        x, y, b = node_pose(city, n)
        for k in range(8):
            ids = probe.render_ids(x, y, b + 45 * k, a.pitch, 90.0, 320, 180)
            share = float((ids[:90] == 0).mean())
            if share > best[0]:
                best = (share, n, b + 45 * k)
    share, node, yaw = best
    x, y, _ = node_pose(city, node)
    a.out.mkdir(parents=True, exist_ok=True)
    written = []
    for cond in a.conditions.split(","):
        imgs = []
        for style in ("realistic", "photo"):
            r = SceneRenderer(scene, RenderSettings.for_condition(cond, style=style, population="snapshot"))
            objs = node_population(scene, r.settings, node, x, y)
            imgs.append(r.render_view(x, y, yaw, a.pitch, 90.0, 640, 360, dynamic=objs))
        path = a.out / f"photo-sky-{cond}.jpg"
        Image.fromarray(np.concatenate(imgs, axis=1)).save(path, quality=82)
        written.append(f"{path} ({path.stat().st_size // 1024} kB)")
    print(json.dumps({"node": node, "yaw_deg": round(yaw, 1), "pitch_deg": a.pitch,
                      "sky_share_upper_half": round(share, 3), "written": written}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
