"""Render the docs images of docs/renderer.md "Render styles and realism": the same Helsinki-core viewpoint in
the flat and realistic styles beside a view cut from a real 360-degree photo, 640x360 JPEG (quality 80).

    python benchmarks/render_realism_screenshots.py [--out docs/screenshots/realism] [--photo FILE]

Viewpoint: pose node n00701 of the Helsinki core, bearing 344 degrees, pitch 3 degrees, 90-degree view at eye
height 1.7 m (the weather screenshots' viewpoint: a street lamp, a vending machine, shop signs). Photo: the
shared GoPro photo ``panoramas/geovisio/1.jpg`` (a station forecourt in Ile-de-France, MIT), yaw 0 from its
centre column, pitch 0, 90 degrees: a street scene at a similar framing, not the same place.

Two more realistic views show what OSM data drives (tram tracks, land cover): ``realistic-tram.jpg`` from node
n00264 at bearing 341 degrees, pitch -4 (tracks across a square towards the railway station), and
``realistic-park.jpg`` from node n00054 at bearing 240 degrees, pitch -8 (a park's lawn and flower beds).
"""

from __future__ import annotations

import argparse
from pathlib import Path

NODE, YAW_DEG, PITCH_DEG = "n00701", 344.0, 3.0
EXTRA_VIEWS = {"realistic-tram": ("n00264", 341.0, -4.0), "realistic-park": ("n00054", 240.0, -8.0)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="docs/screenshots/realism")
    ap.add_argument("--photo", default=None)
    args = ap.parse_args()
    from PIL import Image

    from urbanarena.render.realism import default_photos, photo_views
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer
    from urbanarena.world.resolve import resolve_city

    city = resolve_city("helsinki")
    scene = scene_from_city(city)
    x, y, _ = node_pose(city, NODE)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for style in ("flat", "realistic"):
        r = SceneRenderer(scene, RenderSettings(style=style))
        img = r.render_view(x, y, YAW_DEG, PITCH_DEG, 90.0, 640, 360, 1.7, attribution=True)
        Image.fromarray(img).save(out / f"{style}.jpg", quality=80)
        if style == "realistic":
            for name, (node, yaw, pitch) in EXTRA_VIEWS.items():
                ex, ey, _ = node_pose(city, node)
                img = r.render_view(ex, ey, yaw, pitch, 90.0, 640, 360, 1.7, attribution=True)
                Image.fromarray(img).save(out / f"{name}.jpg", quality=80)
        r.release()
    photos = [Path(args.photo)] if args.photo else [p for p in default_photos() if p.name == "1.jpg"]
    if photos:
        Image.fromarray(photo_views(photos[0])[0]).save(out / "photo.jpg", quality=80)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
