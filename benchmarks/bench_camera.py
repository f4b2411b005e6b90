"""Calibrate the camera model (render/camera_model.py) against the real 360-degree photos.

For the shared photos (``../shared/data/panoramas``, the four measured 640x360 views of each) and for
rendered views of the default city (``--style``, ``--nodes`` pose nodes x 4 yaws, in a clear day and at night)
seen through each camera preset and through ``consumer360`` as it was before version 2 (``consumer360-v1``),
prints per set the median of each measure (ours, :func:`view_measures`):

* noise in flat regions (``realism.noise_sigma``), spectral slope (``realism.spectral_slope``);
* luminance percentiles p1 / p50 / p99 (BT.601 grey) and the clipped share (pixels with a channel >= 250);
* grain per brightness band: the residual ``grey - Gaussian_1.5px(grey)``'s standard deviation in the flattest
  quarter of 8x8 tiles whose smoothed mean is dark (< 70), mid (70-170) or bright (> 170);
* edge 10-90 % width (px) and overshoot (halo beyond the plateaus over the step height) of strong vertical edges;
* blockiness: mean |horizontal difference| across 8-px block boundaries over that within blocks (1 = none).

Then the camera's cost in ms per 640x360 view, ``consumer360`` and ``consumer360-v1`` interleaved in this
process (median of 30 each, after a warm-up), and their ratio.

    LP_NUM_THREADS=2 python3 benchmarks/bench_camera.py [--nodes 4] [--city helsinki] [--style photo]
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
from _common import SHARED, need, uptime  # noqa: E402

#: consumer360 before version 2 (the first calibration: noise, softness, JPEG; no metering or processing)
CONSUMER360_V1 = dict(exposure_sd_ev=0.15, white_balance_sd=0.02, chromatic_aberration=0.0008, blur_sigma_px=0.8,
                      read_noise=0.75, shot_gain=0.01, chroma_noise=0.35, noise_blur_sigma_px=0.6, jpeg_quality=90,
                      jpeg_subsampling=1)


def _strong_edge_profiles(grey: np.ndarray, half: int, n: int = 200):
    """Up to ``n`` rising profiles ``(2 half + 1,)`` along rows across the strongest Sobel-x responses (one per
    4x4 cell), each with its step at the centre."""
    g = grey.astype(np.float64)
    gx = np.abs(cv2.Sobel(g, cv2.CV_64F, 1, 0, ksize=3))
    gx[:, :half + 2] = gx[:, -half - 2:] = 0
    used = set()
    for idx in np.argsort(gx.ravel())[::-1][:6000]:
        y, x = divmod(int(idx), g.shape[1])
        if (y // 4, x // 4) in used:
            continue
        used.add((y // 4, x // 4))
        prof = g[y, x - half:x + half + 1]
        yield prof[::-1] if prof[-1] < prof[0] else prof
        n -= 1
        if n <= 0:
            return


def edge_width_px(grey: np.ndarray) -> float:
    """Median 10-90 % rise distance (pixels) of strong horizontal steps (rise >= 40 grey levels) over +-6 px,
    between the profile's minimum and maximum, crossings linearly interpolated."""
    widths = []
    for prof in _strong_edge_profiles(grey, 6, 4000):
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


def edge_overshoot(grey: np.ndarray) -> float:
    """Median halo of strong steps over +-8 px whose outer three samples each side are flat (within 15 % of the
    step, >= 40 grey levels): ``max(peak above the high plateau, dip below the low one) / step`` (0 = none)."""
    vals = []
    for prof in _strong_edge_profiles(grey, 8, 4000):
        lo, hi = prof[:2].mean(), prof[-2:].mean()
        step = hi - lo
        if step < 40 or np.ptp(prof[:3]) > 0.15 * step or np.ptp(prof[-3:]) > 0.15 * step:
            continue
        vals.append(max(prof[9:15].max() - hi, lo - prof[2:8].min(), 0.0) / step)
        if len(vals) >= 150:
            break
    return float(np.median(vals)) if vals else float("nan")


def grain_by_band(grey: np.ndarray, tile: int = 8) -> dict[str, float]:
    """The residual grain (module docstring) per brightness band ``dark``/``mid``/``bright`` (grey levels; NaN for
    a band with under 20 tiles)."""
    g = grey.astype(np.float32)
    b = cv2.GaussianBlur(g, (0, 0), 1.5)
    h8, w8 = g.shape[0] // tile * tile, g.shape[1] // tile * tile

    def tiles(a):
        return a[:h8, :w8].reshape(h8 // tile, tile, w8 // tile, tile).transpose(0, 2, 1, 3).reshape(-1, tile * tile)
    r, s = tiles(g - b), tiles(b)
    structure, mean, sd = s.std(axis=1), s.mean(axis=1), r.std(axis=1)
    out = {}
    for name, lo, hi in (("dark", 0, 70), ("mid", 70, 170), ("bright", 170, 256)):
        sel = (mean >= lo) & (mean < hi)
        if sel.sum() < 20:
            out[name] = float("nan")
            continue
        keep = structure[sel] <= np.percentile(structure[sel], 25)
        out[name] = float(np.median(sd[sel][keep]))
    return out


def blockiness(grey: np.ndarray) -> float:
    """Mean |horizontal difference| across 8-px block boundaries over that inside blocks."""
    d = np.abs(np.diff(grey.astype(np.float32), axis=1))
    at = (np.arange(d.shape[1]) % 8) == 7
    return float(d[:, at].mean() / max(float(d[:, ~at].mean()), 1e-6))


def view_measures(img: np.ndarray) -> dict[str, float]:
    """Every measure of one RGB ``uint8`` view (module docstring)."""
    from urbanarena.render import realism as R

    g = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
    p1, p50, p99 = np.percentile(g, (1, 50, 99))
    grain = grain_by_band(g)
    return {"noise": R.noise_sigma(g), "slope": R.spectral_slope(g), "p1": p1, "p50": p50, "p99": p99,
            "clip": float((img.max(axis=2) >= 250).mean()), "g_dark": grain["dark"], "g_mid": grain["mid"],
            "g_bright": grain["bright"], "edge_px": edge_width_px(g), "overshoot": edge_overshoot(g),
            "block": blockiness(g)}


def measures(views: list[np.ndarray]) -> dict:
    rows = [view_measures(v) for v in views]
    return {"views": len(views), **{k: float(np.nanmedian([r[k] for r in rows])) for k in rows[0]}}


def _render(city, ids, style: str, condition: str) -> list[np.ndarray]:
    from urbanarena.bench.realism import _views
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    r = SceneRenderer(scene_from_city(city), RenderSettings.for_condition(condition, style=style))
    try:
        return _views(r, [node_pose(city, n)[:2] for n in ids])
    finally:
        r.release()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--city", default="helsinki")
    ap.add_argument("--style", default="photo")
    args = ap.parse_args()
    from urbanarena.bench.realism import _city
    from urbanarena.render import realism as R
    from urbanarena.render.camera_model import CAMERAS, CameraModel
    from urbanarena.render.scene3d.styles import usable_style

    print(uptime(), flush=True)
    photos = R.default_photos(need(SHARED / "panoramas").parent)
    pv = [v for p in photos for v in R.photo_views(p)]
    rows = {"photos": {**measures(pv), "jpeg q": [R.jpeg_quality_estimate(p) for p in photos]}}
    print(f"photos: {len(photos)} files, {len(pv)} views", flush=True)
    city = _city(args.city)
    ids = R.sample_nodes(map(str, city.graph.nodes), args.nodes)
    style = usable_style(args.style)
    cams = {"clean": CAMERAS["clean"], "consumer360-v1": CameraModel("consumer360", **CONSUMER360_V1),
            **{k: v for k, v in CAMERAS.items() if k != "clean"}}
    views = {}
    for cond in ("clear", "night"):
        print(f"rendering {len(ids) * 4} {style} views of {city.name} ({cond})", flush=True)
        views[cond] = _render(city, ids, style, cond)
        for name, cam in cams.items():
            rows[f"{name} {cond}"] = measures([cam.apply(v, f"bench|{cond}|{i}") for i, v in enumerate(views[cond])])
    keys = [k for k in rows["photos"] if k not in ("views", "jpeg q")]
    print(f"\n{'set':22} {'n':>3} " + " ".join(f"{k:>9}" for k in keys))
    for name, m in rows.items():
        print(f"{name:22} {m['views']:3d} " + " ".join(f"{m[k]:9.3g}" for k in keys)
              + (f"  jpeg q {m['jpeg q']}" if "jpeg q" in m else ""))
    allv = views["clear"] + views["night"]
    new, old = cams["consumer360"], cams["consumer360-v1"]
    new.apply(allv[0], "warm"), old.apply(allv[0], "warm")
    times = {"consumer360": [], "consumer360-v1": []}
    for i in range(30):
        for name, cam in (("consumer360", new), ("consumer360-v1", old)):
            t = time.perf_counter()
            cam.apply(allv[i % len(allv)], f"t{i}")
            times[name].append((time.perf_counter() - t) * 1e3)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\ncamera ms per 640x360 view (median of 30, interleaved): consumer360 {med['consumer360']:.1f}, "
          f"consumer360-v1 {med['consumer360-v1']:.1f}, ratio {med['consumer360'] / med['consumer360-v1']:.2f}")
    print(uptime())


if __name__ == "__main__":
    main()
