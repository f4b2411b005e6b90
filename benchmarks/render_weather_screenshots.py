"""Render the docs images of docs/renderer.md "Weather and time of day": one Helsinki-core viewpoint under
every named condition (plus rain at night), 640x360 PNG with the OpenStreetMap attribution stamp.

    python benchmarks/render_weather_screenshots.py [--out docs/screenshots/weather]

Viewpoint: pose node n00701 of the Helsinki core (24.9410,60.1660,24.9500,60.1710), bearing 344 degrees,
pitch 3 degrees, 90-degree view at eye height 1.7 m: a street lamp, a vending machine and two shop signs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

CONDITIONS = ("clear", "cloudy", "rain", "fog", "dusk", "night", "rain+night")
NODE, YAW_DEG, PITCH_DEG = "n00701", 344.0, 3.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="docs/screenshots/weather")
    args = ap.parse_args()
    from PIL import Image

    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.meshes import build_scene_meshes
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer
    from urbanarena.tasks.generators.splits import HELSINKI_AREAS
    from urbanarena.world import default_city as dc
    from urbanarena.world.importers.osm import import_city

    city = import_city(str(dc.helsinki_pbf()), bbox=HELSINKI_AREAS["test"], name="helsinki")
    scene = scene_from_city(city)
    meshes = build_scene_meshes(scene)
    x, y, _ = node_pose(city, NODE)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for cond in CONDITIONS:
        r = SceneRenderer(scene, RenderSettings.for_condition(cond), meshes=meshes)
        img = r.render_view(x, y, YAW_DEG, PITCH_DEG, 90.0, 640, 360, 1.7, attribution=True)
        r.release()
        path = out / f"{cond.replace('+', '-')}.png"
        # 256-colour palette PNG (median cut, Floyd-Steinberg): the camera noise makes full-colour PNGs ~450 kB
        Image.fromarray(img).quantize(256, dither=Image.Dither.FLOYDSTEINBERG).save(path, optimize=True)
        print(path)


if __name__ == "__main__":
    main()
