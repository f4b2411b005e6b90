"""Do the people and vehicles of the panoramas hide objects that a frozen suite's counting tasks count? (issue 19
item 1: "counting tasks never count them unless asked"; ours, a check of a frozen suite)

For every ``object_count`` task of the city's frozen suite (``--suite-size``, default ``mini``) and every counted
object (``extra.counted``): is it visible (:class:`~urbanarena.render.scene3d.visibility.CountVisibility`: at least
100 px in a 640 x 360, 90-degree view from a pose node of its range, looking at it; the nodes within
``VIEW_NODE_TOLERANCE_M`` of the range polygon, as the generator takes them) from the scene alone, and with each
node's people and vehicles (the realistic style's population) drawn in? Prints the objects visible without the
population but hidden by it from every node of the range (the ground truth would then count what no panorama shows).
Run: ``python3 benchmarks/bench_count_occlusion.py [--city helsinki] [--suite-size mini|standard] [--suite NAME]``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time

import numpy as np


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--city", default="helsinki")
    ap.add_argument("--suite-size", choices=("mini", "standard"), default="mini")
    ap.add_argument("--suite", default=None, help="one of the city's frozen suites by name (default: the newest, "
                                                  "as --tasks mini takes it), e.g. helsinki-arena7-v3")
    a = ap.parse_args(argv)

    from shapely.geometry import Point, Polygon
    from shapely.strtree import STRtree

    from urbanarena.render.scene3d.city_scene import scene_from_city
    from urbanarena.render.scene3d.styles import settings_for_style
    from urbanarena.render.scene3d.visibility import CountVisibility, VisibilityPass
    from urbanarena.tasks.frozen import frozen_for_city
    from urbanarena.tasks.generators.object_count import OBJECT_TYPES, VIEW_NODE_TOLERANCE_M
    from urbanarena.world.resolve import resolve_city

    city = resolve_city(a.city)
    fs = frozen_for_city(city, "realistic", a.suite)
    entry = fs.manifest["sizes"][a.suite_size]
    with gzip.open(fs.directory / entry["file"], "rt", encoding="utf-8") as f:
        tasks = [t for t in json.load(f)["tasks"] if (t.get("extra") or {}).get("task_kind") == "object_count"]
    vis = VisibilityPass(scene_from_city(city))
    plain = CountVisibility(city, vis=vis)
    people = CountVisibility(city, vis=vis, population=settings_for_style("realistic"))
    nodes = [str(n) for n in city.graph.nodes]
    tree = STRtree(np.array([Point(city.xy(n)) for n in nodes], dtype=object))
    n_obj = hidden = affected = 0
    t0 = time.perf_counter()
    for t in tasks:
        rings = t["extra"]["range_polygon_xy"]
        region = Polygon(rings[0], rings[1:])
        inside = [nodes[int(i)] for i in tree.query(region, predicate="dwithin", distance=VIEW_NODE_TOLERANCE_M)]
        bad = []
        for c in t["extra"]["counted"]:
            order = sorted(inside, key=lambda n: (float(np.hypot(*(np.asarray(city.xy(n)) - c["xy_m"]))), n))
            kind = "poi" if OBJECT_TYPES[c["type"]][1] == "shop" else "object"
            n_obj += 1
            if plain(kind, c["id"], order) and not people(kind, c["id"], order):
                bad.append(c["id"])
        hidden += len(bad)
        affected += bool(bad)
        if bad:
            print(f"  {t['task_id']}: {t['extra']['object_type']}: hidden by people/vehicles: {bad}")
    print(f"{fs.name}-{a.suite_size}: {len(tasks)} object_count tasks, {n_obj} counted objects; {hidden} visible "
          f"without the population but hidden by it from every node of the range ({affected} tasks); "
          f"{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
