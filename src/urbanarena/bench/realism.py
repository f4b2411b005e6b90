"""``urbanarena bench realism``: how much rendered views look like photographed streets (issue 14).

For each render style (default ``realistic`` and ``flat``) the default city (``helsinki``, built into the
cache when missing) is rendered at ``nodes`` pose nodes (SHA-256-of-id order,
:func:`urbanarena.render.realism.sample_nodes`) as 640 x 360, 90-degree level views at yaws 0/90/180/270
(eye 1.7 m, clear day); each real equirectangular photo (default: the shared ``panoramas/`` folder,
:func:`~urbanarena.render.realism.default_photos`; or the files given) gives the same four views. Every view's
flat share, edge density and colour diversity (:mod:`urbanarena.render.realism`) is printed with each set's
median and mean, and the realistic style's medians are judged against issue 14's targets (flat share
<= 0.40, edge density >= 0.055).

``speed=True`` adds, per style and condition (``clear`` noon and ``night``): first-person frames/s
(640 x 360, 90 degrees, over the same views after one warm-up), panoramas/s (2048 x 1024, three nodes;
render + remap, no PNG), the renderer's setup time (meshes, sign atlas, shade bake, GL) and, for the
realistic style, the baked shade's build time, triangles and bytes. Measure alone, with
``LP_NUM_THREADS=2`` (llvmpipe threads); the figures carry the machine's load averages.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from urbanarena.bench.common import machine

STYLES = ("realistic", "flat")


def _city(name: str):
    from urbanarena.world.resolve import cached_city_names, resolve_city

    if name not in cached_city_names() and name == "helsinki":
        from urbanarena.build import build_city, resolve_source

        build_city(resolve_source(name))
    return resolve_city(name)


def _views(renderer, poses) -> list:
    from urbanarena.render import realism as R

    return [renderer.render_view(x, y, yaw, 0.0, R.VIEW_HFOV_DEG, R.VIEW_WIDTH, R.VIEW_HEIGHT)
            for x, y in poses for yaw in R.VIEW_YAWS_DEG]


def _speed(scene, poses, style: str, condition: str) -> dict[str, Any]:
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    t0 = time.perf_counter()
    r = SceneRenderer(scene, RenderSettings.for_condition(condition, style=style))
    setup = time.perf_counter() - t0
    # warm-up: first-use costs (program compiles, the realistic sky bake, the panorama resampling maps,
    # which are shared by every renderer of the process) are not counted in the rates
    r.render_view(*poses[0], 0.0, 0.0, 90.0, 640, 360)
    r.render_panorama(*poses[0], width=2048)
    t, c = time.perf_counter(), time.process_time()
    n = len(_views(r, poses))
    fps = n / (time.perf_counter() - t)
    frame_cpu_ms = (time.process_time() - c) / n * 1e3
    t, c = time.perf_counter(), time.process_time()
    for x, y in poses[:3]:
        r.render_panorama(x, y, width=2048)
    k = min(3, len(poses))
    panos = k / (time.perf_counter() - t)
    pano_cpu_ms = (time.process_time() - c) / k * 1e3
    out = {"style": style, "condition": condition, "fps_640": round(fps, 2), "panos_per_s": round(panos, 3),
           "frame_cpu_ms": round(frame_cpu_ms, 2), "pano_cpu_ms": round(pano_cpu_ms, 1), "setup_s": round(setup, 3)}
    if r.meshes.shade is not None:
        m = r.meshes.shade
        out["shade_bake_s"] = round(r.meshes.bake["bake_s"], 3)
        out["shade_triangles"] = m.n_triangles
        out["shade_bytes"] = int(m.positions.nbytes + m.normals.nbytes + m.colours.nbytes)
    r.release()
    return out


def measure(*, nodes: int = 6, styles: Sequence[str] = STYLES, photos: Sequence[str | Path] | None = None,
            city: str = "helsinki", speed: bool = False, shared: str | Path | None = None,
            progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The realism report (module docstring) as a JSON-able dict: ``sets`` (``name`` -> ``views`` rows of
    ``{"view", "flat_share", "edge_density", "colour_diversity"}`` plus ``summary``), ``targets``, ``speed``.

    Raises:
        ValueError: an unknown style; ImageFormatError: a photo that cannot be read.
    """
    from urbanarena.render import realism as R
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer
    from urbanarena.render.scene3d.styles import check_style

    say = progress or (lambda s: None)
    for s in styles:
        check_style(s)
    result: dict[str, Any] = {"machine_start": machine(), "lp_num_threads": os.environ.get("LP_NUM_THREADS"),
                              "sets": {}}
    c = _city(city)
    scene = scene_from_city(c)
    ids = R.sample_nodes(map(str, c.graph.nodes), nodes)
    poses = [node_pose(c, n)[:2] for n in ids]
    for style in styles:
        say(f"rendering {len(ids) * 4} {style} views")
        r = SceneRenderer(scene, RenderSettings(style=style))
        rows = []
        for k, img in enumerate(_views(r, poses)):
            st = R.realism_stats(img)
            rows.append({"view": f"{ids[k // 4]}@{int(R.VIEW_YAWS_DEG[k % 4])}", **st.as_dict()})
        r.release()
        result["sets"][style] = {"views": rows, "summary": _summary(rows)}
    paths = [Path(p) for p in photos] if photos else R.default_photos(shared)
    if paths:
        say(f"cutting views from {len(paths)} photos")
        rows = []
        for p in paths:
            for yaw, img in zip(R.VIEW_YAWS_DEG, R.photo_views(p)):
                rows.append({"view": f"{p.name}@{int(yaw)}", **R.realism_stats(img).as_dict()})
        result["sets"]["photos"] = {"views": rows, "summary": _summary(rows), "files": [str(p) for p in paths]}
    real = result["sets"].get("realistic")
    if real is not None:
        med = real["summary"]["median"]
        result["targets"] = {
            "flat_share": {"median": med["flat_share"], "goal": f"<= {R.TARGET_FLAT_SHARE_MAX}",
                           "met": med["flat_share"] <= R.TARGET_FLAT_SHARE_MAX},
            "edge_density": {"median": med["edge_density"], "goal": f">= {R.TARGET_EDGE_DENSITY_MIN}",
                             "met": med["edge_density"] >= R.TARGET_EDGE_DENSITY_MIN},
        }
    if speed:
        result["speed"] = []
        for style in styles:
            for cond in ("clear", "night"):
                say(f"timing {style} {cond}")
                result["speed"].append(_speed(scene, poses, style, cond))
    result["machine_end"] = machine()
    return result


def _summary(rows: list[dict]) -> dict:
    from urbanarena.render.realism import RealismStats, summarise

    return summarise(RealismStats(r["flat_share"], r["edge_density"], r["colour_diversity"],
                                  r.get("spectral_slope", float("nan"))) for r in rows)


def format_report(result: dict[str, Any]) -> str:
    """The text report: every view's figures per set, side by side, then medians, targets and speed."""
    sets = result["sets"]
    lines = []
    for name, s in sets.items():
        lines.append(f"{name} ({s['summary']['views']} views)")
        lines.append(f"  {'view':34} {'flat share':>10} {'edges':>8} {'colours':>8} {'slope':>7}")
        for r in s["views"]:
            lines.append(f"  {r['view'][:34]:34} {r['flat_share']:10.3f} {r['edge_density']:8.4f} "
                         f"{r['colour_diversity']:8d} {r.get('spectral_slope', float('nan')):7.2f}")
    lines.append("")
    lines.append(f"{'set':12} {'views':>5} {'median flat':>12} {'median edges':>13} {'median colours':>15}"
                 f" {'mean flat':>10} {'mean edges':>11} {'median slope':>13}")
    for name, s in sets.items():
        m, a = s["summary"]["median"], s["summary"]["mean"]
        lines.append(f"{name:12} {s['summary']['views']:5d} {m['flat_share']:12.3f} {m['edge_density']:13.4f} "
                     f"{m['colour_diversity']:15.0f} {a['flat_share']:10.3f} {a['edge_density']:11.4f} "
                     f"{m.get('spectral_slope', float('nan')):13.2f}")
    for k, t in (result.get("targets") or {}).items():
        lines.append(f"target realistic median {k}: {t['median']:.4f} (goal {t['goal']}: "
                     f"{'met' if t['met'] else 'MISSED'})")
    if result.get("speed"):
        lines.append("")
        lines.append(f"{'style':10} {'condition':9} {'fps 640x360':>11} {'panos/s':>8} {'setup s':>8} "
                     f"{'bake s':>7} {'bake tris':>9} {'bake MB':>8}")
        lines[-1] += f" {'frame cpu ms':>12} {'pano cpu ms':>11}"
        for s in result["speed"]:
            lines.append(f"{s['style']:10} {s['condition']:9} {s['fps_640']:11.1f} {s['panos_per_s']:8.2f} "
                         f"{s['setup_s']:8.2f} {s.get('shade_bake_s', 0):7.2f} {s.get('shade_triangles', 0):9d} "
                         f"{s.get('shade_bytes', 0) / 1e6:8.2f} {s.get('frame_cpu_ms', 0):12.1f} "
                         f"{s.get('pano_cpu_ms', 0):11.1f}")
        by = {(s["style"], s["condition"]): s for s in result["speed"]}
        for cond in ("clear", "night"):
            a, b = by.get(("realistic", cond)), by.get(("flat", cond))
            if a and b and a.get("frame_cpu_ms") and a.get("pano_cpu_ms"):
                lines.append(f"realistic / flat ({cond}), CPU time per frame {a['frame_cpu_ms'] / b['frame_cpu_ms']:.2f}, "
                             f"per panorama {a['pano_cpu_ms'] / b['pano_cpu_ms']:.2f}; wall time per frame "
                             f"{b['fps_640'] / a['fps_640']:.2f}, per panorama {b['panos_per_s'] / a['panos_per_s']:.2f}")
    m0, m1 = result.get("machine_start", {}), result.get("machine_end", {})
    lines.append("")
    lines.append(f"machine: {m0.get('cores')} cores, load average {m0.get('loadavg')} -> "
                 f"{m1.get('loadavg')}; LP_NUM_THREADS={result.get('lp_num_threads')}")
    return "\n".join(lines)


__all__ = ["STYLES", "format_report", "measure"]
