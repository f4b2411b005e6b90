"""3D rendering throughput (moderngl on headless EGL; Mesa llvmpipe on the CPU) and MetaDrive beside it.

Scene: :func:`~urbanarena.bench.scenes.render_district` (6 x 6 blocks, 288
buildings with 576 shop signs, street objects; no data needed), one
:class:`~urbanarena.render.scene3d.renderer.SceneRenderer` in this process
(scene meshes, sign atlas and GL upload timed separately as
``render_setup_s``). Poses: pose nodes spread over the district, eye height
1.7 m.

* ``render_panos_per_s`` — 2048 x 1024 equirectangular panoramas
  (:meth:`SceneRenderer.render_panorama`: six cube faces and the equirect
  remap; no PNG write) per second, one process;
* ``render_fps_640`` / ``render_fps_128`` — first-person views
  (:meth:`SceneRenderer.render_view`, 90 degree field of view) at 640 x 360
  and 128 x 128, frames per second = 1 / the lowest of 3 median frame times
  (yaw changes every frame);
* ``render_fps_vs_metadrive`` — ``render_fps_640`` / MetaDrive's frames per
  second at 640 x 360 on the same machine
  (:mod:`urbanarena.bench.metadrive_probe`, its own process), or ``None`` with
  the reason when MetaDrive is not installed or cannot start here.

llvmpipe renders with as many threads as cores (``LP_NUM_THREADS`` unset), so
these are whole-machine figures.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from urbanarena.bench.common import best_median_s, rounded


def metadrive_python(explicit: str | None = None) -> tuple[str | None, str]:
    """``(python executable, how found)`` that has MetaDrive: ``explicit``, ``$URBANARENA_METADRIVE_PYTHON``, or
    this interpreter when ``metadrive`` is importable here; ``(None, reason)`` otherwise."""
    for cand, how in ((explicit, "--metadrive-python"),
                      (os.environ.get("URBANARENA_METADRIVE_PYTHON"), "$URBANARENA_METADRIVE_PYTHON")):
        if cand:
            return (cand, how) if Path(cand).exists() else (None, f"{how} {cand!r} does not exist")
    if importlib.util.find_spec("metadrive") is not None:
        return sys.executable, "this interpreter"
    return None, ("metadrive-simulator is not installed (pip install 'urbanarena[bench]', Python < 3.12; or name "
                  "another interpreter that has it with --metadrive-python / $URBANARENA_METADRIVE_PYTHON)")


def measure_metadrive(frames: int = 60, python: str | None = None, timeout_s: float = 180.0) -> dict[str, Any]:
    """``metadrive_fps_640`` or ``None`` and ``metadrive_reason``; never raises."""
    exe, how = metadrive_python(python)
    if exe is None:
        return {"metadrive_fps_640": None, "metadrive_reason": how}
    probe = Path(__file__).with_name("metadrive_probe.py")
    try:
        p = subprocess.run([exe, str(probe), "--width", "640", "--height", "360", "--frames", str(frames)],
                           capture_output=True, text=True, timeout=timeout_s)
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        r = json.loads(lines[-1]) if lines else {"ok": False, "stage": "process",
                                                 "error": f"exit {p.returncode}: {p.stderr.strip()[-300:]}"}
    except subprocess.TimeoutExpired:
        r = {"ok": False, "stage": "process", "error": f"no result within {timeout_s:.0f} s"}
    if not r.get("ok"):
        return {"metadrive_fps_640": None, "metadrive_python": how, "metadrive_version": r.get("metadrive"),
                "metadrive_reason": f"MetaDrive failed at {r.get('stage')}: {r.get('error')}"}
    return {"metadrive_fps_640": rounded(r["fps"], 2), "metadrive_python": how, "metadrive_version": r.get("metadrive"),
            "metadrive_note": r.get("note")}


def measure(quick: bool = False, metadrive_python_exe: str | None = None) -> dict[str, Any]:
    """The figures of the module docstring; GL unavailable: every figure ``None`` with the reason."""
    from urbanarena.render.scene3d.context import gl_info, gl_unavailable_reason

    md = measure_metadrive(frames=10 if quick else 60, python=metadrive_python_exe)
    reason = gl_unavailable_reason()
    if reason:
        keys = ("render_panos_per_s", "render_fps_640", "render_fps_128", "render_fps_vs_metadrive")
        return {**{k: None for k in keys}, **md,
                "_notes": {k: f"no headless OpenGL context: {reason}" for k in keys}}
    from urbanarena.bench.scenes import render_district
    from urbanarena.render.scene3d.meshes import build_scene_meshes
    from urbanarena.render.scene3d.renderer import SceneRenderer

    city, scene = render_district(2 if quick else 6)
    t = time.perf_counter()
    meshes = build_scene_meshes(scene)
    r = SceneRenderer(scene, meshes=meshes)
    r.render_view(0.0, 0.0, 0.0, 0.0, 90.0, 64, 64)  # GL context, upload, shader compile
    setup_s = time.perf_counter() - t
    nodes = sorted(city.graph.nodes)
    poses = [city.xy(n) for n in nodes[:: max(1, len(nodes) // 40)]]

    def view(w: int, h: int):
        return lambda i: r.render_view(poses[i % len(poses)][0], poses[i % len(poses)][1], (i * 47.0) % 360, 0.0,
                                       90.0, w, h)

    n640, n128, npano = (5, 10, 2) if quick else (20, 40, 6)
    t640, c640 = best_median_s(view(640, 360), n640)
    t128, c128 = best_median_s(view(128, 128), n128)
    tpano, cpano = best_median_s(lambda i: r.render_panorama(*poses[i % len(poses)]), npano, rounds=2)
    fps640 = 1.0 / t640
    out: dict[str, Any] = {
        "render_panos_per_s": rounded(1.0 / tpano, 3), "render_pano_s": rounded(tpano),
        "render_pano_cpu_s": rounded(cpano), "render_fps_640": rounded(fps640, 2),
        "render_fps_128": rounded(1.0 / t128, 2), "render_view_cpu_ms_640": rounded(c640 * 1e3, 2),
        "render_view_cpu_ms_128": rounded(c128 * 1e3, 2), "render_setup_s": rounded(setup_s),
        "render_triangles": int(meshes.n_triangles), "render_gl": gl_info().get("GL_RENDERER"), **md,
    }
    if md["metadrive_fps_640"]:
        out["render_fps_vs_metadrive"] = rounded(fps640 / md["metadrive_fps_640"], 3)
    else:
        out["render_fps_vs_metadrive"] = None
        out["_notes"] = {"render_fps_vs_metadrive": md["metadrive_reason"]}
    r.release()
    return out
