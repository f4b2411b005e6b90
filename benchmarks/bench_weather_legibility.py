"""OCR legibility of storefront names per weather / time of day on the Helsinki core.

Method of ``tests/test_legibility.py`` (:mod:`urbanarena.render.scene3d.legibility`): the first N
eligible named POIs in SHA-256-of-id order, a 640x360, 90-degree view 10 m square in front of each
sign at eye height 1.7 m, rapidocr on the sign's neighbourhood, a name read when its normalised
edit distance to the OCR text is <= 0.2. Prints one row per condition: names read, rate, a 95 %
Wilson interval, the paired difference to ``clear`` (signs read in clear but not in the condition
minus the reverse) and seconds.

    python benchmarks/bench_weather_legibility.py [--n 100] [--conditions clear,cloudy,rain,fog,dusk,night]
        [--json FILE]

Needs the Helsinki extract (downloaded once, sha256-pinned), moderngl with EGL, rapidocr.
"""

from __future__ import annotations

import argparse
import json
import math
import time


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson score interval of a proportion k / n (Wilson 1927)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return c - h, c + h


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100, help="POIs (first N eligible; default 100)")
    ap.add_argument("--conditions", default="clear,cloudy,rain,fog,dusk,night")
    ap.add_argument("--json", default=None, help="also write the per-POI results here")
    args = ap.parse_args()

    from urbanarena.render.scene3d.city_scene import scene_from_city
    from urbanarena.render.scene3d.legibility import legibility_sample, rapidocr_reader, read_signs
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer
    from urbanarena.render.scene3d.visibility import VisibilityPass
    from urbanarena.tasks.generators.splits import HELSINKI_AREAS
    from urbanarena.world import default_city as dc
    from urbanarena.world.importers.osm import import_city

    city = import_city(str(dc.helsinki_pbf()), bbox=HELSINKI_AREAS["test"], name="helsinki")
    scene = scene_from_city(city)
    vis = VisibilityPass(scene)
    meshes = vis.renderer.meshes
    sample = legibility_sample(scene, meshes.placements, args.n)
    ocr = rapidocr_reader()
    conds = [c.strip() for c in args.conditions.split(",") if c.strip()]
    results: dict[str, list] = {}
    print(f"{len(sample)} POIs, 10 m square-on, 640x360 @ 90 deg")
    print(f"{'condition':<12} {'read':>7} {'rate':>6} {'95% CI':>13} {'vs clear':>9} {'lost/won':>9} {'s':>6}")
    for cond in conds:
        t0 = time.perf_counter()
        r = SceneRenderer(scene, RenderSettings.for_condition(cond), meshes=meshes)
        res = read_signs(r, vis, ocr, sample)
        r.release()
        secs = time.perf_counter() - t0
        results[cond] = res
        k, n = sum(x[1] for x in res), len(res)
        lo, hi = wilson(k, n)
        diff = lost = won = ""
        if "clear" in results and cond != "clear":
            base = [x[1] for x in results["clear"]]
            now = [x[1] for x in res]
            lost_n = sum(a and not b for a, b in zip(base, now))
            won_n = sum(b and not a for a, b in zip(base, now))
            diff, lost = f"{(sum(base) - k) / n:+.0%}", f"{lost_n}/{won_n}"
        print(f"{cond:<12} {k:>3}/{n:<3} {k / n:>6.0%} {lo:>6.0%}-{hi:<5.0%} {diff:>9} {lost:>9} {secs:>6.1f}", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({c: [{"name": a, "read": b, "lines": l} for a, b, l in v] for c, v in results.items()}, f,
                      indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
