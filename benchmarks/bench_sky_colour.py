"""The clear day's sky colour: the shared 360-degree photos against the ``photo`` style's panoramas (issue 24).

Both sides are measured the same way: in an equirectangular panorama, the pixels between 20 and 60 degrees up that
are clear sky (blue above red by more than 20 levels and above 120: clouds, trees and walls left out), averaged
(display sRGB, 0..255). The photos' figure is :data:`urbanarena.render.scene3d.photo_sky.SKY_TARGET_RGB`'s source.
Needs ``../shared`` for the photos and the fetched assets for the renders (``urbanarena assets fetch``).

    LP_NUM_THREADS=2 python3 benchmarks/bench_sky_colour.py --nodes 3
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED, need  # noqa: E402

BAND_DEG = (20.0, 60.0)


def clear_sky_mean(pano) -> tuple[list[float], int]:
    """``(mean RGB, pixel count)`` of the clear-sky pixels of ``pano`` ``(H, W, 3)`` uint8 in :data:`BAND_DEG`."""
    import numpy as np

    h = pano.shape[0]
    e = 90.0 - (np.arange(h) + 0.5) * 180.0 / h
    band = pano[(e >= BAND_DEG[0]) & (e <= BAND_DEG[1])].reshape(-1, 3).astype(np.float64)
    sky = band[(band[:, 2] > band[:, 0] + 20) & (band[:, 2] > 120)]
    return [round(float(v), 1) for v in sky.mean(axis=0)] if len(sky) else [], int(len(sky))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--city", default="helsinki")
    a = ap.parse_args()
    import numpy as np
    from PIL import Image

    folder = need(SHARED / "panoramas" / "geovisio")
    photos = {}
    for f in sorted(folder.glob("[0-9].jpg")):
        with Image.open(f) as im:
            photos[f.name] = clear_sky_mean(np.asarray(im.convert("RGB")))
    counts = np.array([n for _, n in photos.values()], np.float64)
    pm = (np.array([m for m, _ in photos.values()]) * counts[:, None]).sum(axis=0) / counts.sum()
    out = {"photos": photos, "photos_mean": [round(float(v), 1) for v in pm]}

    from urbanarena.bench.population import shopping_nodes
    from urbanarena.bench.realism import _city
    from urbanarena.render.scene3d import photo_sky
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    if photo_sky.hdri_dir() is None:
        print(json.dumps(out, indent=1))
        return 2
    city = _city(a.city)
    scene = scene_from_city(city)
    r = SceneRenderer(scene, RenderSettings.for_condition("clear", style="photo"))
    ours, n_all = np.zeros(3), 0
    for i, n in enumerate(shopping_nodes(city)[: a.nodes]):
        x, y, _ = node_pose(city, n)
        m, k = clear_sky_mean(r.render_panorama(x, y, width=2048))
        print(f"  node {i + 1}/{a.nodes} {n}: {m} ({k} px)", file=sys.stderr)
        if k:
            ours, n_all = ours + np.asarray(m) * k, n_all + k
    out["rendered_mean"] = [round(float(v), 1) for v in ours / max(n_all, 1)]
    out["ratio_rendered_over_photos"] = [round(float(v), 3) for v in ours / max(n_all, 1) / pm]
    target = getattr(photo_sky, "SKY_TARGET_RGB", {}).get("day")
    out["target_rgb_255"] = [round(255 * v, 1) for v in target] if target else None
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
