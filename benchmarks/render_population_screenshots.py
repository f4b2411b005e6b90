"""Render the docs images of docs/population.md: a crowded shopping street of the Helsinki core with its people and
vehicles (the node's snapshot, as the panorama store draws it), 640x360 JPEG (quality 80).

    python benchmarks/render_population_screenshots.py [--out docs/screenshots/population]

Viewpoints: of every third Aleksanterinkatu, Mikonkatu and Pohjoisesplanadi pose node
(``bench.population.shopping_nodes``) and its four yaws heading + 0/90/180/270, the view that shows the most people
and vehicles (at least 30 pixels each, ID pass), pitch 0, 90 degrees, eye
1.7 m: clear day, the same view without people (``--population none``), night and rain at dusk; and a
continuous-mode view of the first one with parked cars and four moving cars (``dynamics.vehicles``) at t = 5 s.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="docs/screenshots/population")
    args = ap.parse_args()
    from PIL import Image

    from urbanarena.bench.population import shopping_nodes
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.population_draw import node_population, population_pixels
    from urbanarena.render.scene3d.renderer import SceneRenderer
    from urbanarena.render.scene3d.styles import settings_for_style
    from urbanarena.world.resolve import resolve_city

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    city = resolve_city("helsinki")
    scene = scene_from_city(city)
    streets = {s.id: s.name for s in city.annotations.streets}
    clear = settings_for_style("realistic")
    r = SceneRenderer(scene, clear)

    def save(img, name):
        Image.fromarray(img).save(out / f"{name}.jpg", quality=80)
        print(out / f"{name}.jpg")

    picks = {}
    for n in shopping_nodes(city)[::3]:
        street = streets.get(city.node(n).get("street_id"))
        if street not in ("Aleksanterinkatu", "Mikonkatu", "Pohjoisesplanadi"):
            continue
        x, y, b = node_pose(city, n)
        objs = node_population(scene, clear, n, x, y)
        if objs is None:
            continue
        for k in range(4):  # the view showing the most people and vehicles (at least 30 px each)
            yaw = (b + 90.0 * k) % 360.0
            seen = population_pixels(r, objs, x, y, yaw)["per_placement"]
            row = {"best_yaw": yaw, "best_px": sum(seen.values()), "shown": sum(1 for v in seen.values() if v >= 30)}
            if street not in picks or row["shown"] > picks[street][1]["shown"]:
                picks[street] = (n, row)
    first = None
    for street, (n, row) in sorted(picks.items()):
        x, y, _ = node_pose(city, n)
        yaw = float(row["best_yaw"])
        tag = street.lower()
        print(f"{street}: node {n}, yaw {yaw:.1f}, {row['shown']} people/vehicles shown, {row['best_px']} px")
        first = first or (n, x, y, yaw, tag)
        save(r.render_view(x, y, yaw, 0.0, 90.0, 640, 360, attribution=True,
                           dynamic=node_population(scene, clear, n, x, y)), f"{tag}-clear")
    n, x, y, yaw, tag = first
    save(r.render_view(x, y, yaw, 0.0, 90.0, 640, 360, attribution=True), f"{tag}-none")
    for cond in ("night", "rain+dusk"):
        s = settings_for_style("realistic", settings=None)
        from dataclasses import replace

        from urbanarena.render.scene3d.conditions import parse_condition

        w, t = parse_condition(cond)
        s = replace(s, weather=w, time_of_day=t)
        rc = SceneRenderer(scene, s)
        save(rc.render_view(x, y, yaw, 0.0, 90.0, 640, 360, attribution=True,
                            dynamic=node_population(scene, s, n, x, y)), f"{tag}-{cond.replace('+', '-')}")
        rc.release()
    from urbanarena.env.continuous.dynamics import DynamicWorld

    world = DynamicWorld.from_spec(city, {"vehicles": {"moving": 4, "seed": 0, "center_xy_m": [x, y],
                                                       "area_radius_m": 120.0},
                                          "pedestrians": {"count": 20, "seed": 0, "center_xy_m": [x, y],
                                                          "area_radius_m": 80.0}})
    save(r.render_view(x, y, yaw, 0.0, 90.0, 640, 360, attribution=True, dynamic=world.scene_objects(5.0)),
         f"{tag}-continuous")


if __name__ == "__main__":
    main()
