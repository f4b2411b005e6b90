"""The clear day's sky colour: the shared 360-degree photos against the ``photo`` style's panoramas (issue 24).

Both sides are measured the same way: in an equirectangular panorama, the pixels of each elevation band that are
clear sky (blue above red by more than 20 levels and above 120: clouds, trees and walls left out), averaged
(display sRGB, 0..255). The photos' figures are :data:`urbanarena.render.scene3d.photo_sky.SKY_PROFILE`'s source.
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

BANDS_DEG = ((3.0, 8.0), (8.0, 14.0), (14.0, 20.0), (20.0, 30.0), (30.0, 45.0), (45.0, 60.0))


def clear_sky_mean(pano, band_deg) -> tuple[list[float], int]:
    """``(mean RGB, pixel count)`` of the clear-sky pixels of ``pano`` ``(H, W, 3)`` uint8 between the elevations
    ``band_deg`` (degrees)."""
    import numpy as np

    h = pano.shape[0]
    e = 90.0 - (np.arange(h) + 0.5) * 180.0 / h
    band = pano[(e >= band_deg[0]) & (e <= band_deg[1])].reshape(-1, 3).astype(np.float64)
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

    def add(acc, pano):
        for band in BANDS_DEG:
            m, k = clear_sky_mean(pano, band)
            if k:
                sm, n = acc.get(band, (np.zeros(3), 0))
                acc[band] = (sm + np.asarray(m) * k, n + k)

    photos: dict = {}
    for f in sorted(folder.glob("[0-9].jpg")):
        with Image.open(f) as im:
            add(photos, np.asarray(im.convert("RGB")))
        print(f"  photo {f.name}", file=sys.stderr)

    from urbanarena.bench.population import shopping_nodes
    from urbanarena.bench.realism import _city
    from urbanarena.render.scene3d import photo_sky
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    if photo_sky.hdri_dir() is None:
        return 2
    city = _city(a.city)
    scene = scene_from_city(city)
    r = SceneRenderer(scene, RenderSettings.for_condition("clear", style="photo"))
    ours: dict = {}
    for i, n in enumerate(shopping_nodes(city)[: a.nodes]):
        x, y, _ = node_pose(city, n)
        add(ours, r.render_panorama(x, y, width=2048))
        print(f"  node {i + 1}/{a.nodes} {n}", file=sys.stderr)
    rows = []
    for band in BANDS_DEG:
        pm = photos[band][0] / photos[band][1] if band in photos else None
        om = ours[band][0] / ours[band][1] if band in ours else None
        rows.append({"band_deg": list(band), "photos": None if pm is None else [round(float(v), 1) for v in pm],
                     "rendered": None if om is None else [round(float(v), 1) for v in om],
                     "ratio": None if pm is None or om is None else [round(float(v), 3) for v in om / pm]})
    print(json.dumps({"bands": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
