"""OCR legibility of storefront names against distance, per render style, on the Helsinki core (issue 14).

Method of ``tests/test_legibility.py`` (:mod:`urbanarena.render.scene3d.legibility`): the first N eligible named
POIs in SHA-256-of-id order, a 640x360, 90-degree view square in front of each sign at eye height 1.7 m from each
distance, rapidocr on the sign's neighbourhood (ID-pass mask of the same style's renderer, so awnings and
cornices hide what they hide), a name read when its normalised edit distance to the OCR text is <= 0.2.
Prints one row per (style, distance): names read, rate and a 95 % Wilson interval.

    python benchmarks/bench_legibility_distance.py [--n 40] [--distances 5,10,15,20,30,40]
        [--styles realistic,flat] [--json FILE]

Needs the default city (``urbanarena city build helsinki``), moderngl with EGL, rapidocr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_weather_legibility import wilson  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=40, help="POIs (first N eligible; default 40)")
    ap.add_argument("--distances", default="5,10,15,20,30,40")
    ap.add_argument("--styles", default="realistic,flat")
    ap.add_argument("--json", default=None, help="also write the per-POI results here")
    args = ap.parse_args()
    from urbanarena.render.scene3d.city_scene import scene_from_city
    from urbanarena.render.scene3d.legibility import legibility_sample, rapidocr_reader, read_signs
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer
    from urbanarena.render.scene3d.visibility import VisibilityPass
    from urbanarena.world.resolve import resolve_city

    scene = scene_from_city(resolve_city("helsinki"))
    ocr = rapidocr_reader()
    dists = [float(d) for d in args.distances.split(",") if d.strip()]
    out: dict[str, dict[str, list]] = {}
    print(f"{'style':<10} {'distance m':>10} {'read':>7} {'rate':>6} {'95% CI':>13} {'s':>6}")
    for style in [s.strip() for s in args.styles.split(",") if s.strip()]:
        r = SceneRenderer(scene, RenderSettings(style=style))
        vis = VisibilityPass(r)
        sample = legibility_sample(scene, r.meshes.placements, args.n)
        out[style] = {}
        for d in dists:
            t0 = time.perf_counter()
            res = read_signs(r, vis, ocr, sample, distance_m=d)
            k, n = sum(x[1] for x in res), len(res)
            lo, hi = wilson(k, n)
            out[style][str(d)] = [{"name": a, "read": b, "lines": l} for a, b, l in res]
            print(f"{style:<10} {d:>10.0f} {k:>3}/{n:<3} {k / n:>6.0%} {lo:>6.0%}-{hi:<5.0%} "
                  f"{time.perf_counter() - t0:>6.1f}", flush=True)
        r.release()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
