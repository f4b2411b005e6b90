"""What the ``photo`` style's ground wear costs (``render/scene3d/photo_ground_wear.py``): the same renders with
the wear and without it (``photo_ground_wear.ENABLED`` false: the photo ground exactly as before the module), in
one process, interleaved round by round so that a shared machine's load drifts into both alike.

Per round and variant: panoramas 2048 x 1024 without the population and first-person frames 640 x 360 (four
headings) on the first ``--nodes`` shopping-street nodes of the default city, clear day; CPU ms per panorama and
per frame (minimum and median over ``--rounds``) and the machine's load (``uptime``); then frames looking down at
the ground (:func:`ground_views`), whose ratio is close to the ground's own. Needs the fetched assets.

Pictures (``--shots FILE``): for each ``--views`` entry ``NODE:HEADING:PITCH`` (heading relative to the node's
bearing, degrees) the 640 x 360 photo view, the branch start above and the wear below, in the ``--conditions``
given, as one JPEG (quality ``--quality``); the speed runs are skipped with ``--skip-speed``.

    LP_NUM_THREADS=2 python3 benchmarks/bench_photo_ground_wear.py [--nodes 3] [--rounds 4] [--shots F.jpg]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ab_static_poses, renderers_without_and_with  # noqa: E402


def _renderers(scene, settings):
    from urbanarena.render.scene3d import photo_ground_wear as PW

    return renderers_without_and_with(PW, scene, settings)


def shots(city, scene, views: str, conditions: str, path: str, width: int, height: int, quality: int) -> None:
    import numpy as np
    from PIL import Image

    from urbanarena.render.scene3d.city_scene import node_pose
    from urbanarena.render.scene3d.renderer import RenderSettings

    rows = []
    for cond in conditions.split(","):
        rs = _renderers(scene, RenderSettings.for_condition(cond, style="photo", population="none"))
        for name in ("without", "with"):
            imgs = []
            for view in views.split(","):
                node, heading, pitch = view.split(":")
                x, y, b = node_pose(city, node)
                imgs.append(rs[name].render_view(x, y, b + float(heading), float(pitch), 90.0, width, height))
            rows.append(np.concatenate(imgs, axis=1))
    Image.fromarray(np.concatenate(rows, axis=0)).save(path, quality=quality)
    print(f"{path} ({Path(path).stat().st_size // 1024} kB)", file=sys.stderr)


def ground_views(renderers: dict, poses: list, rounds: int) -> dict:
    """Frames that are nearly all ground (640 x 360, 90 degrees, pitch -35, four headings a pose), interleaved
    round by round: per variant the min and median CPU ms a frame and their with/without ratios (the ground's
    own cost, diluted only by the frame's fixed work)."""
    import statistics
    import time

    from urbanarena.bench.population import VIEW_H, VIEW_HFOV, VIEW_W

    times = {n: [] for n in renderers}
    for _ in range(rounds + 1):                        # the first round warms up, not counted
        for name, r in renderers.items():
            c = time.process_time()
            for x, y, b in poses:
                for k in range(4):
                    r.render_view(x, y, b + 90 * k, -35.0, VIEW_HFOV, VIEW_W, VIEW_H)
            times[name].append((time.process_time() - c) / (4 * len(poses)) * 1e3)
    out = {n: {"cpu_ms_min": round(min(t[1:]), 2), "cpu_ms_median": round(statistics.median(t[1:]), 2)}
           for n, t in times.items()}
    for s in ("min", "median"):
        out[f"ratio_{s}"] = round(out["with"][f"cpu_ms_{s}"] / out["without"][f"cpu_ms_{s}"], 3)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--city", default="helsinki")
    ap.add_argument("--shots", default=None)
    ap.add_argument("--views", default="n01648:160:-12,n01946:90:-20,n01881:64:-12")
    ap.add_argument("--conditions", default="clear")
    ap.add_argument("--size", default="640x360")
    ap.add_argument("--quality", type=int, default=80)
    ap.add_argument("--skip-speed", action="store_true")
    a = ap.parse_args()
    from urbanarena.bench.population import shopping_nodes
    from urbanarena.bench.realism import _city
    from urbanarena.render.scene3d import photo_materials as PM
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.renderer import RenderSettings

    if PM.photo_materials() is None:
        print("photo materials not fetched: run `urbanarena assets fetch`", file=sys.stderr)
        return 2
    city = _city(a.city)
    scene = scene_from_city(city)
    if a.shots:
        w, h = (int(v) for v in a.size.split("x"))
        shots(city, scene, a.views, a.conditions, a.shots, w, h, a.quality)
        if a.skip_speed:
            return 0
    poses = [node_pose(city, n) for n in shopping_nodes(city)[:a.nodes]]
    renderers = _renderers(scene, RenderSettings(style="photo", population="none"))
    res = {"LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"), "nodes": a.nodes, "rounds": a.rounds}
    ab_static_poses(renderers, poses, a.rounds, res)
    res["ground_views"] = ground_views(renderers, poses, a.rounds)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
