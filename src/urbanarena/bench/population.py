"""``urbanarena bench population``: people and vehicles in the panoramas of the shopping streets (issue 19).

**Coverage** (the acceptance of issue 19, item 1): for every pose node of the core's shopping streets
(:data:`SHOPPING_STREETS`: the nodes whose street -- the node's ``street_id`` -- carries one of these OSM names),
the node's snapshot (:func:`urbanarena.render.scene3d.population.snapshot`, clear day unless told) is drawn into the
ID pass of 640 x 360, 90-degree level views at eye height 1.7 m, at the four yaws ``heading + 0/90/180/270`` (which
together see the whole horizon); a node **passes** when people and vehicles cover at least
:data:`MIN_PX` = 100 pixels in one of them. Goal: at least :data:`GOAL_SHARE` = 80 % of the nodes pass.

**Speed** (``speed=True``): realistic panoramas/s (2048 x 1024, render + remap, as the panorama store renders a
node: snapshot + mesh + draw) with the population and without it; first-person frames/s (640 x 360, four yaws per
node) with a node's population drawn as ``dynamic`` objects, its snapshot and mesh built beforehand (their CPU ms
are given apart), and without; CPU ms of each, and the machine's load averages before and after (a shared
machine's wall-clock rates swing with its load: compare the CPU times and ratios). The same figures are measured
for the ``photo`` style (textured people and vehicles, issue 24) when its assets are fetched (``speed_photo``).
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any, Callable, Sequence

from urbanarena.bench.common import machine

#: the core's shopping streets (OSM ``name`` of the streets in the default city's annotations)
SHOPPING_STREETS = ("Aleksanterinkatu", "Pohjoisesplanadi", "Keskuskatu", "Mikonkatu")
MIN_PX = 100
GOAL_SHARE = 0.8
VIEW_W, VIEW_H, VIEW_HFOV = 640, 360, 90.0


def shopping_nodes(city, names: Sequence[str] = SHOPPING_STREETS) -> list[str]:
    """Pose nodes (sorted) whose ``street_id`` names a street called one of ``names``."""
    streets = {s.id: s.name for s in city.annotations.streets}
    return sorted(str(n) for n in city.graph.nodes if streets.get(city.node(n).get("street_id")) in set(names))


def node_coverage(renderer, scene, settings, city, node: str) -> dict[str, Any]:
    """``{"node", "street", "placements", "best_yaw", "best_px", "px_by_yaw"}`` of one node (module docstring)."""
    from urbanarena.render.scene3d.city_scene import node_pose
    from urbanarena.render.scene3d.population_draw import PopulationObjects, population_pixels
    from urbanarena.render.scene3d.population import snapshot

    x, y, b = node_pose(city, node)
    snap = snapshot(scene, node, x, y, settings.condition, settings.population_seed)
    objs = PopulationObjects(snap)
    px = {}
    for k in range(4):
        yaw = (b + 90.0 * k) % 360.0
        px[round(yaw, 1)] = population_pixels(renderer, objs, x, y, yaw, 0.0, VIEW_HFOV, VIEW_W, VIEW_H)["total_px"] \
            if objs else 0
    best = max(px, key=lambda k: px[k])
    return {"node": node, "placements": len(snap), "best_yaw": best, "best_px": px[best], "px_by_yaw": px}


def coverage(city, nodes: Sequence[str], condition: str = "clear", progress: Callable[[str], None] | None = None,
             renderer=None) -> dict[str, Any]:
    """The coverage measure over ``nodes`` (module docstring) as a JSON-able dict."""
    from urbanarena.render.scene3d.city_scene import scene_from_city
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    settings = RenderSettings.for_condition(condition, style="realistic", population="snapshot")
    scene = renderer.scene if renderer is not None else scene_from_city(city)
    r = renderer if renderer is not None else SceneRenderer(scene, settings)
    streets = {s.id: s.name for s in city.annotations.streets}
    rows = []
    for i, n in enumerate(nodes):
        row = node_coverage(r, scene, settings, city, n)
        row["street"] = streets.get(city.node(n).get("street_id"))
        rows.append(row)
        if progress and (i + 1) % 20 == 0:
            progress(f"{i + 1}/{len(nodes)} nodes")
    passed = sum(1 for row in rows if row["best_px"] >= MIN_PX)
    by_street: dict[str, list[int]] = {}
    for row in rows:
        by_street.setdefault(row["street"], [0, 0])
        by_street[row["street"]][0] += row["best_px"] >= MIN_PX
        by_street[row["street"]][1] += 1
    share = passed / len(rows) if rows else 0.0
    return {"condition": condition, "nodes": len(rows), "passed": passed, "share": round(share, 4),
            "min_px": MIN_PX, "goal_share": GOAL_SHARE, "met": share >= GOAL_SHARE,
            "median_best_px": statistics.median([r_["best_px"] for r_ in rows]) if rows else 0,
            "by_street": {k: {"passed": v[0], "nodes": v[1]} for k, v in sorted(by_street.items(), key=str)},
            "rows": rows}


def speed(city, nodes: Sequence[str], condition: str = "clear", style: str = "realistic") -> dict[str, Any]:
    """Panoramas/s with and without the population and first-person frames/s with it (module docstring), in
    render ``style`` (``realistic`` or ``photo``)."""
    from urbanarena.render.scene3d.cache import render_with_population
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.context import current
    from urbanarena.render.scene3d.population_draw import node_population
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    scene = scene_from_city(city)
    settings = RenderSettings.for_condition(condition, style=style, population="snapshot")
    r = SceneRenderer(scene, settings)
    poses = [(n, *node_pose(city, n)) for n in nodes]
    n0, x0, y0, b0 = poses[0]
    render_with_population(r, x0, y0, 1.7, 2048, b0, node_population(scene, settings, n0, x0, y0))
    out: dict[str, Any] = {"condition": condition, "style": style, "panoramas": len(poses)}
    for label, with_pop in (("with_population", True), ("without", False)):
        t, c = time.perf_counter(), time.process_time()
        for n, x, y, b in poses:
            render_with_population(r, x, y, 1.7, 2048, b, node_population(scene, settings, n, x, y) if with_pop
                                   else None)
        out[f"panos_per_s_{label}"] = round(len(poses) / (time.perf_counter() - t), 3)
        out[f"pano_cpu_ms_{label}"] = round((time.process_time() - c) / len(poses) * 1e3, 1)
    frames = 0
    t = time.process_time()
    objs_of = {n: node_population(scene, settings, n, x, y) for n, x, y, _ in poses}
    out["snapshot_cpu_ms"] = round((time.process_time() - t) / len(poses) * 1e3, 1)
    t = time.process_time()
    tris = [o.mesh().n_triangles for o in objs_of.values() if o is not None]
    out["mesh_cpu_ms"] = round((time.process_time() - t) / len(poses) * 1e3, 1)
    out["median_triangles"] = int(statistics.median(tris)) if tris else 0
    t, c = time.perf_counter(), time.process_time()
    for n, x, y, b in poses:
        for k in range(4):
            r.render_view(x, y, b + 90 * k, 0.0, VIEW_HFOV, VIEW_W, VIEW_H, dynamic=objs_of[n])
            frames += 1
    out["fps_640_with_population"] = round(frames / (time.perf_counter() - t), 2)
    out["frame_cpu_ms_with_population"] = round((time.process_time() - c) / frames * 1e3, 2)
    t, c = time.perf_counter(), time.process_time()
    for n, x, y, b in poses:
        for k in range(4):
            r.render_view(x, y, b + 90 * k, 0.0, VIEW_HFOV, VIEW_W, VIEW_H)
    out["fps_640_without"] = round(frames / (time.perf_counter() - t), 2)
    out["frame_cpu_ms_without"] = round((time.process_time() - c) / frames * 1e3, 2)
    for o in objs_of.values():
        if o is not None:
            with r._lock, current(r.ctx):
                o.release()
    out["pano_time_ratio"] = round(out["pano_cpu_ms_with_population"] / out["pano_cpu_ms_without"], 3)
    out["floors"] = {"panos_per_s": 2.0, "fps_640": 20.0,
                     "met": out["panos_per_s_with_population"] >= 2.0 and out["fps_640_with_population"] >= 20.0}
    r.release()
    return out


def measure(*, city: str = "helsinki", nodes: int | None = None, condition: str = "clear", with_speed: bool = False,
            speed_nodes: int = 6, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Coverage (and speed) on the default city; ``nodes`` limits the shopping-street nodes (first in id order)."""
    from urbanarena.bench.realism import _city

    c = _city(city)
    ns = shopping_nodes(c)
    if nodes is not None:
        ns = ns[:nodes]
    res: dict[str, Any] = {"machine_start": machine(), "lp_num_threads": os.environ.get("LP_NUM_THREADS"),
                           "streets": list(SHOPPING_STREETS)}
    res["coverage"] = coverage(c, ns, condition, progress)
    if with_speed:
        res["speed"] = speed(c, ns[:speed_nodes], condition)
        from urbanarena.render.scene3d.population_photo import photo_models

        if photo_models() is not None:
            res["speed_photo"] = speed(c, ns[:speed_nodes], condition, style="photo")
    res["machine_end"] = machine()
    return res


def format_report(res: dict[str, Any]) -> str:
    cov = res["coverage"]
    lines = [f"population coverage ({cov['condition']}): {cov['passed']}/{cov['nodes']} shopping-street nodes "
             f"({100 * cov['share']:.1f} %) show >= {cov['min_px']} px of people/vehicles in a 640x360 view at some "
             f"yaw (goal >= {100 * cov['goal_share']:.0f} %: {'met' if cov['met'] else 'NOT met'}); median best "
             f"{cov['median_best_px']} px"]
    for k, v in cov["by_street"].items():
        lines.append(f"  {k}: {v['passed']}/{v['nodes']}")
    for sp in (res.get("speed"), res.get("speed_photo")):
        if not sp:
            continue
        lines.append(f"speed ({sp.get('style', 'realistic')}, {sp['condition']}, {sp['panoramas']} panoramas): {sp['panos_per_s_with_population']} "
                     f"panoramas/s with people ({sp['pano_cpu_ms_with_population']} CPU ms) vs "
                     f"{sp['panos_per_s_without']} without ({sp['pano_cpu_ms_without']} CPU ms; ratio "
                     f"{sp['pano_time_ratio']}); {sp['fps_640_with_population']} frames/s 640x360 with people "
                     f"({sp['frame_cpu_ms_with_population']} CPU ms) vs {sp['fps_640_without']} without "
                     f"({sp['frame_cpu_ms_without']} CPU ms); median {sp['median_triangles']} population "
                     f"triangles; floors 2 panoramas/s, 20 frames/s: {'met' if sp['floors']['met'] else 'NOT met'}")
    lines.append(f"load average start {res['machine_start'].get('loadavg')} end {res['machine_end'].get('loadavg')}")
    return "\n".join(lines)


__all__ = ["GOAL_SHARE", "MIN_PX", "SHOPPING_STREETS", "coverage", "format_report", "measure", "node_coverage",
           "shopping_nodes", "speed"]
