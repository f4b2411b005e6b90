"""Calibrate the camera model (render/camera_model.py) against the real 360-degree photos.

For the shared photos (``../shared/data/panoramas``, the four measured 640x360 views of each) and for
rendered views of the default city (realistic style, ``--nodes`` pose nodes x 4 yaws) seen through each
camera preset, prints per set the median noise in flat regions (``realism.noise_sigma``), the median
spectral slope (``realism.spectral_slope``), the median 10-90 % edge width of strong vertical edges, and
for the photos the JPEG quality estimated from their quantisation tables; then the camera's cost in ms per
640x360 view (median of 20, this process, after a warm-up).

    LP_NUM_THREADS=2 python3 benchmarks/bench_camera.py [--nodes 6] [--city helsinki]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED, need  # noqa: E402


def edge_width_px(grey: np.ndarray) -> float:
    """Median 10-90 % rise distance (pixels) across the strongest horizontal gradients: for each of the 200
    strongest Sobel-x responses, the profile along the row over +-6 px, its 10 % and 90 % crossings between
    the local minimum and maximum, linearly interpolated (ours)."""
    g = grey.astype(np.float64)
    gx = np.abs(cv2.Sobel(g, cv2.CV_64F, 1, 0, ksize=3))
    gx[:, :8] = gx[:, -8:] = 0
    flat = np.argsort(gx.ravel())[::-1]
    widths, used = [], set()
    for idx in flat[:4000]:
        y, x = divmod(int(idx), g.shape[1])
        if (y // 4, x // 4) in used:
            continue
        used.add((y // 4, x // 4))
        prof = g[y, x - 6:x + 7]
        if prof[-1] < prof[0]:
            prof = prof[::-1]
        lo, hi = prof.min(), prof.max()
        if hi - lo < 40:
            continue
        a, b = lo + 0.1 * (hi - lo), lo + 0.9 * (hi - lo)
        def cross(level):
            for i in range(len(prof) - 1):
                if prof[i] < level <= prof[i + 1]:
                    return i + (level - prof[i]) / (prof[i + 1] - prof[i])
            return None
        ca, cb = cross(a), cross(b)
        if ca is not None and cb is not None and cb > ca:
            widths.append(cb - ca)
        if len(widths) >= 200:
            break
    return float(np.median(widths)) if widths else float("nan")


def measures(views: list[np.ndarray]) -> dict:
    from urbanarena.render import realism as R

    greys = [cv2.cvtColor(v, cv2.COLOR_RGB2GRAY) for v in views]
    med = statistics.median
    return {"views": len(views), "noise_sigma": med(R.noise_sigma(g) for g in greys),
            "spectral_slope": med(R.spectral_slope(g) for g in greys),
            "edge_width_px": med(edge_width_px(g) for g in greys)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=6)
    ap.add_argument("--city", default="helsinki")
    args = ap.parse_args()
    from urbanarena.bench.realism import _city, _views
    from urbanarena.render import realism as R
    from urbanarena.render.camera_model import CAMERAS
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    photos = R.default_photos(need(SHARED / "panoramas").parent)
    rows = {}
    pv = [v for p in photos for v in R.photo_views(p)]
    rows["photos"] = {**measures(pv), "jpeg_quality": [R.jpeg_quality_estimate(p) for p in photos]}
    print(f"photos: {len(photos)} files, {len(pv)} views", flush=True)
    city = _city(args.city)
    ids = R.sample_nodes(map(str, city.graph.nodes), args.nodes)
    print(f"rendering {len(ids) * 4} realistic views of {city.name}", flush=True)
    r = SceneRenderer(scene_from_city(city), RenderSettings(style="realistic"))
    views = _views(r, [node_pose(city, n)[:2] for n in ids])
    r.release()
    for name, cam in CAMERAS.items():
        out = [cam.apply(v, f"bench|{i}") for i, v in enumerate(views)]
        rows[name] = measures(out)
        if not cam.is_identity:
            cam.apply(views[0], "warm")
            times = []
            for i in range(20):
                t = time.perf_counter()
                cam.apply(views[i % len(views)], f"t{i}")
                times.append((time.perf_counter() - t) * 1e3)
            rows[name]["ms_per_view"] = statistics.median(times)
    print(f"\n{'set':12} {'views':>5} {'noise sigma':>11} {'slope':>7} {'edge 10-90 px':>13} {'ms/view':>8}  jpeg q")
    for name, m in rows.items():
        ms = f"{m['ms_per_view']:8.1f}" if "ms_per_view" in m else f"{'-':>8}"
        print(f"{name:12} {m['views']:5d} {m['noise_sigma']:11.2f} {m['spectral_slope']:7.2f} {m['edge_width_px']:13.2f} "
              f"{ms}  {m.get('jpeg_quality', '')}")
    base = rows["clean"]
    for name in CAMERAS:
        if name != "clean":
            m = rows[name]
            print(f"{name} / clean: noise x{m['noise_sigma'] / max(base['noise_sigma'], 1e-9):.2f}, edge width "
                  f"x{m['edge_width_px'] / base['edge_width_px']:.2f}; photos / {name}: noise "
                  f"x{rows['photos']['noise_sigma'] / m['noise_sigma']:.2f}, edge width "
                  f"x{rows['photos']['edge_width_px'] / m['edge_width_px']:.2f}")


if __name__ == "__main__":
    main()
