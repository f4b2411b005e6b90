"""What drawing the ``photo`` style's people and vehicles with their own textures
(``render/scene3d/photo_model_textures.py``) and walkers in a stride (``render/scene3d/people_pose.py``) cost:
the same renderer with the textured program and without it (the plain program: the baked corner colours, as
before), and with the stride and without it (``--what``: ``textures``, ``walking`` or ``both``), in one process,
interleaved round by round so that a shared machine's load drifts into both alike; plus the converted models'
cache (size, load time cold and warm) and the texture array (layers, bytes with mipmaps, build time).

Per round and variant: panoramas 2048 x 1024 with the population (its mesh built anew each time, as the panorama
store does per node) and first-person frames 640 x 360 with it (four headings) on the first ``--nodes``
shopping-street nodes of the default city, clear day; CPU ms per panorama and per frame, minimum and median over
``--rounds``, and the machine's load (``uptime``). Needs the fetched assets.

    LP_NUM_THREADS=2 python3 benchmarks/bench_photo_model_textures.py [--nodes 2] [--rounds 3] [--what both]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ab_cpu_ms, photo_people_setup, population_workloads, uptime  # noqa: E402


def _du(folder: Path) -> int:
    return sum(f.stat().st_size for f in Path(folder).rglob("*") if f.is_file())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-cold", action="store_true", help="skip the cold model conversion (slow)")
    ap.add_argument("--what", choices=("textures", "walking", "both"), default="both")
    a = ap.parse_args()

    from urbanarena import paths
    from urbanarena.render.scene3d import photo_model_textures as PMT
    from urbanarena.render.scene3d import population_photo as PP
    from urbanarena.render.scene3d.cache import render_with_population
    from urbanarena.render.scene3d.context import current
    from urbanarena.render.scene3d.population_draw import node_population
    from urbanarena.render.scene3d.renderer import SceneRenderer

    setup = photo_people_setup(a.nodes)
    if setup is None:
        return 2
    scene, settings, nodes, poses = setup
    res = {"LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"), "nodes": a.nodes, "rounds": a.rounds,
           "what": a.what}
    models = PP.photo_models()
    src = Path(models.adults[0][0].source).parents[2]   # <package folder>/people/<name>/<name>.obj
    c = time.process_time()
    PP.load_photo_models(src, cache_dir=paths.home() / "models")
    res["models_load_warm_cpu_s"] = round(time.process_time() - c, 2)
    if not a.no_cold:
        with tempfile.TemporaryDirectory() as tmp:
            c = time.process_time()
            PP.load_photo_models(src, cache_dir=Path(tmp))
            res["models_load_cold_cpu_s"] = round(time.process_time() - c, 2)
            res["models_cache_bytes"] = _du(Path(tmp))
    tris = {k: [sum(lv[i].n_triangles for lv in getattr(models, k)) for i in range(4)]
            for k in ("adults", "cars")}
    res["triangles_per_level_all_models"] = tris
    res["texture_layers"] = len(models.textures)
    res["texture_array_bytes_with_mips"] = PMT.texture_paths_bytes(models.textures)

    r = SceneRenderer(scene, settings)
    prog = r.prog_models
    if prog is None:
        print("no textured program (models without textures?)", file=sys.stderr)
        return 2
    with current(r.ctx):
        c = time.perf_counter()
        tex = PMT.model_texture_array(r.ctx, models.textures)
        res["texture_array_build_s"] = round(time.perf_counter() - c, 2)
        tex.release()

    def use(name):
        on = name == "with"
        r.prog_models = prog if on or a.what == "walking" else None
        PP.WALKING = on or a.what == "textures"

    pano, frames = population_workloads(scene, settings, nodes, poses)
    for name in ("without", "with"):   # warm: shader compile, sky and shadow bakes
        use(name)
        x, y, b = poses[0]
        render_with_population(r, x, y, 1.7, 2048, b, node_population(scene, settings, nodes[0], x, y))
    res["uptime_start"] = uptime()
    ab_cpu_ms({"without": r, "with": r}, a.rounds, pano, frames, res, before=use)
    use("with")
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
