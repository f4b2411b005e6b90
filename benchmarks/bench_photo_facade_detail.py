"""What the ``photo`` style's sills and grime (``render/scene3d/photo_facade_detail.py``) cost: renderers built in
one process without them (the branch start's facades) and with them, timed interleaved round by round (the order
reversed every other round) so that a shared machine's load drifts into both alike.

Per round and variant: four 640 x 360 first-person frames (90 degrees, headings +0/90/180/270) at each of the first
``--nodes`` shopping-street nodes of the default city, clear day (``--condition``), no population (the patches cost
per wall fragment); ``--panoramas`` adds a 2048 x 1024 panorama per node. Prints CPU ms (``time.process_time``:
all llvmpipe threads) per frame, min and median over ``--rounds``, their ratios to the branch start, the machine's
load, and per variant how many pixels of the first round's frames differ from the branch start's by more than 8
grey levels. Needs the fetched assets (``urbanarena assets fetch``).

    LP_NUM_THREADS=2 python3 benchmarks/bench_photo_facade_detail.py [--nodes 2] [--rounds 6]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import uptime  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--condition", default="clear")
    ap.add_argument("--panoramas", action="store_true", help="also a 2048-wide panorama per node and round")
    a = ap.parse_args()
    import numpy as np

    from urbanarena.bench.population import VIEW_H, VIEW_HFOV, VIEW_W, shopping_nodes
    from urbanarena.bench.realism import _city
    from urbanarena.render.scene3d import photo_facade_detail as PFD
    from urbanarena.render.scene3d.cache import render_with_population
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    city = _city("helsinki")
    scene = scene_from_city(city)
    poses = [node_pose(city, n) for n in shopping_nodes(city)[:a.nodes]]
    settings = RenderSettings.for_condition(a.condition, style="photo", population="none")
    patch = PFD.patch_source
    renderers = {}
    try:
        for name, detail in (("start", False), ("detail", True)):
            PFD.patch_source = patch if detail else (lambda src: src)
            renderers[name] = SceneRenderer(scene, settings)
    finally:
        PFD.patch_source = patch

    def frames(r, keep=None):
        for x, y, b in poses:
            for k in range(4):
                img = r.render_view(x, y, b + 90 * k, 0.0, VIEW_HFOV, VIEW_W, VIEW_H)
                if keep is not None:
                    keep.append(img)
        return 4 * len(poses)

    first = {}
    for name, r in renderers.items():     # warm-up (shader compile, bakes) and the pixels compared
        first[name] = []
        frames(r, first[name])
    res = {"LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"), "nodes": a.nodes, "rounds": a.rounds,
           "uptime_start": uptime()}
    res["pixels_differing_from_start"] = {
        name: [int((np.abs(x.astype(int) - y).max(axis=2) > 8).sum()) for x, y in zip(imgs, first["start"])]
        for name, imgs in first.items() if name != "start"}
    times = {n: {"frame": [], "pano": []} for n in renderers}
    for rd in range(a.rounds):
        order = list(renderers.items())
        for name, r in (order if rd % 2 == 0 else order[::-1]):
            c = time.process_time()
            n = frames(r)
            times[name]["frame"].append((time.process_time() - c) / n * 1e3)
            if a.panoramas:
                c = time.process_time()
                for x, y, b in poses:
                    render_with_population(r, x, y, 1.7, 2048, b, None)
                times[name]["pano"].append((time.process_time() - c) / len(poses) * 1e3)
    for name, t in times.items():
        for kind, v in t.items():
            if not v:
                continue
            res[f"{name} {kind} cpu_ms min/median"] = [round(min(v), 1), round(statistics.median(v), 1)]
            base = times["start"][kind]
            res[f"{name} {kind} ratio min/median"] = [round(min(v) / min(base), 3),
                                                      round(statistics.median(v) / statistics.median(base), 3)]
    res["uptime_end"] = uptime()
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
