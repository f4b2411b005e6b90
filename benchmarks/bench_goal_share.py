"""How much of the goal the ``landmark_image`` reference photos of a frozen suite show (issue 25 item 8): the
goal share of :mod:`urbanarena.render.scene3d.goal_share` (sign face and storefront, in the ID pass of the
reference camera with the photo's own people and vehicles) for every reference of one size.

Run (the built city in the cache: ``URBANARENA_HOME=...``):
``python3 benchmarks/bench_goal_share.py [--suite helsinki-arena7-v4] [--size mini] [--city helsinki]
[--render-style realistic] [--out FILE.json] [--png DIR]``. Prints one row per reference (task, POI, sign
share, storefront share, the storefront's occluders) and the distribution (quantiles, counts under candidate
thresholds); ``--png`` writes each reference photo with its storefront region outlined.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default="helsinki-arena7-v4")
    ap.add_argument("--size", default="mini")
    ap.add_argument("--city", default="helsinki")
    ap.add_argument("--render-style", default="realistic")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--png", type=Path)
    a = ap.parse_args()

    from urbanarena.render.scene3d.goal_share import GoalShare
    from urbanarena.tasks.frozen import PACKAGE_DIR
    from urbanarena.world.resolve import resolve_city

    city = resolve_city(a.city)
    tasks = json.loads(gzip.open(PACKAGE_DIR / a.suite / f"{a.size}.json.gz").read())["tasks"]
    refs = [t for t in tasks if t["extra"].get("task_kind") == "landmark_image"]
    hook = GoalShare(city, a.render_style)
    rows = []
    for t in refs:
        view, poi = t["extra"]["reference_view"], t["extra"]["poi_id"]
        got = hook(city, view, poi)
        rows.append({"task": t["task_id"], "poi": poi, "name": t["extra"]["landmark"],
                     "condition": view.get("condition"), "distance_m": view.get("distance_m"),
                     "sign": got["sign"], "storefront": got["storefront"], "occluders_px": got["occluders_px"]})
        print(f"{t['task_id'].rsplit('/', 1)[-1]} {poi:>12} {t['extra']['landmark'][:28]:28} "
              f"sign {got['sign']['share']:.3f} ({got['sign']['visible_px']}/{got['sign']['area_px']:.0f} px)  "
              f"storefront {got['storefront']['share']:.3f} ({got['storefront']['visible_px']}/"
              f"{got['storefront']['area_px']:.0f} px)  occluders {got['occluders_px']}", flush=True)
        if a.png is not None:
            _outline(a, city, view, poi, t["task_id"].rsplit("/", 1)[-1])
    for key in ("sign", "storefront"):
        s = np.array([r[key]["share"] for r in rows])
        q = np.quantile(s, [0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0]).round(3).tolist()
        under = {t: int((s < t).sum()) for t in (0.3, 0.5, 0.6, 0.7, 0.8, 0.9)}
        print(f"{key}: n {len(s)}, min/p10/p25/median/p75/p90/max {q}, below threshold {under}")
    if a.out is not None:
        a.out.write_text(json.dumps(rows, indent=1), encoding="utf-8")


def _outline(a, city, view, poi, stem) -> None:
    import cv2

    from urbanarena.render.scene3d.goal_share import goal_regions, project_polygon
    from urbanarena.render.scene3d.layout import building_walls
    from urbanarena.render.scene3d.reference import reference_renderer_of, reference_settings

    rr = reference_renderer_of(city, a.render_style)
    img = rr.render(view)
    r = rr.renderer(reference_settings(view, rr.base_settings))
    s = next(p for p in r.meshes.placements if p.poi_id == poi)
    b = next((b for b in r.scene.buildings if b.id == s.building_id), None)
    wall = building_walls(b)[s.wall_index] if b is not None and s.wall_index is not None else None
    cam = (view["x_m"], view["y_m"], view["eye_height_m"], view["yaw_deg"], view["pitch_deg"], view["hfov_deg"],
           view["width"], view["height"])
    out = np.ascontiguousarray(img[..., ::-1])
    for quad, col in zip(goal_regions(s, wall), ((0, 0, 255), (0, 255, 255))):
        poly = project_polygon(quad, *cam)
        cv2.polylines(out, [np.round(poly).astype(np.int32).reshape(-1, 1, 2)], True, col, 1)
    a.png.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(a.png / f"{stem}.png"), out)


if __name__ == "__main__":
    main()
