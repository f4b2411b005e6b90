"""Shared helpers for benchmark scripts."""

from __future__ import annotations

import resource
import sys
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def need(path: Path) -> Path:
    if not path.exists():
        print(f"skipped: {path} not found (real data lives in ../shared)")
        sys.exit(0)
    return path


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, MiB (Linux ru_maxrss is KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def uptime() -> str:
    """``uptime``'s line (the machine's load: a shared machine's timings swing with it)."""
    import subprocess

    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def photo_people_setup(n_nodes: int):
    """``(scene, settings, nodes, poses)`` of the photo style with people on the first ``n_nodes`` shopping-street
    nodes of the default city (the people benchmarks' set-up), or ``None`` after one line on stderr when the photo
    models are not fetched."""
    from urbanarena.bench.population import shopping_nodes
    from urbanarena.bench.realism import _city
    from urbanarena.render.scene3d import population_photo as PP
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.renderer import RenderSettings

    if PP.photo_models() is None:
        print("photo models not fetched: run `urbanarena assets fetch`", file=sys.stderr)
        return None
    city = _city("helsinki")
    nodes = shopping_nodes(city)[:n_nodes]
    return (scene_from_city(city), RenderSettings(style="photo", population="snapshot"), nodes,
            [node_pose(city, n) for n in nodes])


def population_workloads(scene, settings, nodes, poses):
    """``(pano, frames)``: the people benchmarks' two workloads on renderer ``r``, each returning how many images it
    drew: a 2048 x 1024 panorama with the node's population at every pose, and four 640 x 360 first-person frames
    (headings ``b + 90 k``) with it. ``poses``: ``(x_m, y_m, bearing_deg)`` of ``nodes``."""
    from urbanarena.bench.population import VIEW_H, VIEW_HFOV, VIEW_W
    from urbanarena.render.scene3d.cache import render_with_population
    from urbanarena.render.scene3d.population_draw import node_population, release_population

    def pano(r):
        for n, (x, y, b) in zip(nodes, poses):
            render_with_population(r, x, y, 1.7, 2048, b, node_population(scene, settings, n, x, y))
        return len(poses)

    def frames(r):
        for n, (x, y, b) in zip(nodes, poses):
            objs = node_population(scene, settings, n, x, y)
            for k in range(4):
                r.render_view(x, y, b + 90 * k, 0.0, VIEW_HFOV, VIEW_W, VIEW_H, dynamic=objs)
            release_population(r, objs)
        return 4 * len(poses)

    return pano, frames


def ab_cpu_ms(renderers: dict, rounds: int, pano, frames, res: dict, before=None) -> dict:
    """Interleaved A/B timing in one process: per round, for each ``name, renderer`` of ``renderers`` (``without``
    and ``with``), ``pano(renderer)`` and ``frames(renderer)`` draw one round and return how many images they drew;
    ``before(name)``, if given, runs first (to switch a variant on). Adds to ``res``: per name the min and median
    CPU ms per panorama and per frame, their ``with``/``without`` ratios, and ``uptime_end``; returns ``res``."""
    import statistics
    import time

    times = {n: {"pano": [], "frame": []} for n in renderers}
    for _ in range(rounds):
        for name, r in renderers.items():
            if before is not None:
                before(name)
            for kind, draw in (("pano", pano), ("frame", frames)):
                c = time.process_time()
                n = draw(r)
                times[name][kind].append((time.process_time() - c) / n * 1e3)
    for name, t in times.items():
        res[name] = {f"{k}_cpu_ms_{s}": round(f(v), 1) for k, v in t.items()
                     for s, f in (("min", min), ("median", statistics.median))}
    for k in ("pano", "frame"):
        res[f"{k}_ratio_min"] = round(res["with"][f"{k}_cpu_ms_min"] / res["without"][f"{k}_cpu_ms_min"], 3)
        res[f"{k}_ratio_median"] = round(res["with"][f"{k}_cpu_ms_median"] / res["without"][f"{k}_cpu_ms_median"], 3)
    res["uptime_end"] = uptime()
    return res


def renderers_without_and_with(module, scene, settings) -> dict:
    """``{"without": renderer, "with": renderer}`` of ``settings``: the first built with ``module.ENABLED`` off,
    the second with it on (a photo module's switch, read when the renderer builds its programs); the switch is
    left on afterwards."""
    from urbanarena.render.scene3d.renderer import SceneRenderer

    out = {}
    try:
        for name, on in (("without", False), ("with", True)):
            module.ENABLED = on
            out[name] = SceneRenderer(scene, settings)
    finally:
        module.ENABLED = True
    return out


def ab_static_poses(renderers: dict, poses: list, rounds: int, res: dict) -> dict:
    """:func:`ab_cpu_ms` over fixed poses ``(x_m, y_m, bearing_deg)`` without people: a 2048-wide panorama per
    pose, and four 640x360 90-degree frames per pose (bearings +0/90/180/270), after one warm-up of each (shader
    compile, sky and shadow bakes)."""
    from urbanarena.bench.population import VIEW_H, VIEW_HFOV, VIEW_W
    from urbanarena.render.scene3d.cache import render_with_population

    def pano(r):
        for x, y, b in poses:
            render_with_population(r, x, y, 1.7, 2048, b, None)
        return len(poses)

    def frames(r):
        for x, y, b in poses:
            for k in range(4):
                r.render_view(x, y, b + 90 * k, 0.0, VIEW_HFOV, VIEW_W, VIEW_H)
        return 4 * len(poses)

    for r in renderers.values():
        x, y, b = poses[0]
        render_with_population(r, x, y, 1.7, 2048, b, None)
        r.render_view(x, y, b, 0.0, VIEW_HFOV, VIEW_W, VIEW_H)
    res["uptime_start"] = uptime()
    return ab_cpu_ms(renderers, rounds, pano, frames, res)
