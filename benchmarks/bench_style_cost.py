"""CPU cost of the render styles, in one process, on the Helsinki core (issue 14's speed floors).

For each condition and style: CPU milliseconds (all llvmpipe threads, ``time.process_time``) and wall milliseconds
per 640x360, 90-degree first-person frame (6 default-city pose nodes x 4 yaws) and per 2048x1024 panorama, after a
warm-up frame and panorama; then the realistic/flat ratios, and a SHA-256 prefix of all the pixels drawn (equal
prefixes = same pixels, for checking that a speed-up kept them). CPU times resist the load of a shared machine
better than wall-clock rates; the ratios are measured side by side.

    LP_NUM_THREADS=2 python benchmarks/bench_style_cost.py [--conditions clear,night] [--styles realistic,flat]
        [--panoramas 3]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conditions", default="clear,night")
    ap.add_argument("--styles", default="realistic,flat")
    ap.add_argument("--panoramas", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=6)
    a = ap.parse_args()
    os.environ.setdefault("LP_NUM_THREADS", "2")
    from urbanarena.bench.realism import _city
    from urbanarena.render import realism as R
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    city = _city("helsinki")
    scene = scene_from_city(city)
    poses = [node_pose(city, n)[:2] for n in R.sample_nodes(map(str, city.graph.nodes), a.nodes)]
    res = {}
    for cond in a.conditions.split(","):
        for style in a.styles.split(","):
            r = SceneRenderer(scene, RenderSettings.for_condition(cond, style=style))
            t = time.perf_counter()
            r.render_view(*poses[0], 0.0, 0.0, 90.0, 640, 360)
            r.render_panorama(*poses[0], width=2048)
            warm = time.perf_counter() - t
            h = hashlib.sha256()
            t, c = time.perf_counter(), time.process_time()
            for x, y in poses:
                for yaw in R.VIEW_YAWS_DEG:
                    h.update(r.render_view(x, y, yaw, 0.0, 90.0, 640, 360).tobytes())
            n = len(poses) * len(R.VIEW_YAWS_DEG)
            fw, fc = (time.perf_counter() - t) / n * 1e3, (time.process_time() - c) / n * 1e3
            k = min(a.panoramas, len(poses))
            t, c = time.perf_counter(), time.process_time()
            for x, y in poses[:k]:
                h.update(r.render_panorama(x, y, width=2048).tobytes())
            pw, pc = (time.perf_counter() - t) / k * 1e3, (time.process_time() - c) / k * 1e3
            res[(cond, style)] = (fc, pc)
            print(f"{style:9s} {cond:6s} frame cpu {fc:6.1f} ms wall {fw:6.1f} | panorama cpu {pc:7.1f} ms wall "
                  f"{pw:7.1f} | warm-up {warm:5.2f} s | pixels {h.hexdigest()[:12]}", flush=True)
            r.release()
    for cond in a.conditions.split(","):
        if (cond, "realistic") in res and (cond, "flat") in res:
            (f1, p1), (f0, p0) = res[(cond, "realistic")], res[(cond, "flat")]
            print(f"{cond}: realistic / flat CPU time per frame {f1 / f0:.2f}, per panorama {p1 / p0:.2f}")
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
