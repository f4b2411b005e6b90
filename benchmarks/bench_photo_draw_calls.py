"""What the ``photo`` style's second speed round saves (issue 24, the 20 frames/s floor): the branch start's way
and the new way in one process, interleaved round by round so that a shared machine's load drifts into both alike.

``without`` (the branch start): one ``glDrawArrays`` per run of visible tiles (front to back) and per run of ground
chunks, ground chunks of 64 triangles with only kerbs and rails limited to 120 m, the population's shade mesh drawn
whole, the skyline ring's back faces drawn. ``with``: a frame's runs as one ``glMultiDrawArraysIndirect`` per vertex
array (:class:`.tiles.IndirectDraws`), the shade mesh's chunks outside the view skipped, and the ground chunks and
skyline as :mod:`.photo_atmosphere` configures them (``GROUND_CHUNK_TRIS``, ``GROUND_DETAIL_M``,
``SKYLINE_CULL_BACK``: by default as at the branch start; set them to 16, ``{4: 120.0, 5: 120.0, 7: 120.0}`` and
``True`` to measure the held-back options).

Per round and variant: panoramas 2048 x 1024 with the population (snapshot and mesh built anew, as the panorama
store does per node) and first-person frames 640 x 360 with it (four headings per node, the population built and
uploaded before the timing, as ``bench_photo_style`` does) on the first ``--nodes`` shopping-street nodes of the
default city, clear day; CPU ms per panorama and per frame (min and median over ``--rounds``), the machine's load
(``uptime``), and how many pixels differ between the variants in the first round's frames and panoramas (and in
which image rows of the frames). Needs the fetched assets.

    LP_NUM_THREADS=2 python3 benchmarks/bench_photo_draw_calls.py [--nodes 4] [--rounds 4]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ab_cpu_ms, photo_people_setup, uptime  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=4)
    a = ap.parse_args()

    import moderngl

    from urbanarena.bench.population import VIEW_H, VIEW_HFOV, VIEW_W
    from urbanarena.render.scene3d.cache import render_with_population
    from urbanarena.render.scene3d.population_draw import node_population
    from urbanarena.render.scene3d.realistic_shaders import ground_material_runs
    from urbanarena.render.scene3d import tiles as T
    from urbanarena.render.scene3d.renderer import SceneRenderer
    from urbanarena.render.scene3d.tiles import OrderedChunks

    setup = photo_people_setup(a.nodes)
    if setup is None:
        return 2
    scene, settings, nodes, poses = setup
    r = SceneRenderer(scene, settings)
    arrays = [t for t in (r.vao_facades, r.vao_solids, r.vao_skyline, r.vao_objects, r.vao_foliage,
                          *(t for t, _, _ in r._near_vaos), *(t for _, t in r.sign_vaos)) if t is not None]
    indirect = r._ground_chunks.indirect
    new_ground = r._ground_chunks
    runs = ground_material_runs(r.meshes.ground.colours)
    old_ground = OrderedChunks(r.ground_runs, r.meshes.ground.positions, chunk_tris=64,
                               max_dist_m=[{5: 120.0, 7: 120.0}.get(k) for _, _, k in runs])

    class Whole(OrderedChunks):   # the branch start drew the shade mesh whole, in order
        def render(self, planes, eye=None):
            for vao in self.vaos:
                vao.render(moderngl.TRIANGLES)

    sky_render = r.vao_skyline.render

    def sky_both(planes, eye=None):
        r.ctx.disable(moderngl.CULL_FACE)
        sky_render(planes, eye)

    state = {"name": "with"}

    def use(name):
        state["name"] = name
        on = name == "with"
        for t in arrays:
            t.indirect = indirect if on else None
        r._ground_chunks = new_ground if on else old_ground
        T.OrderedChunks = OrderedChunks if on else Whole   # what the population's draw_shade builds
        r.vao_skyline.render = sky_render if on else sky_both   # the branch start drew its back faces too

    images = {}

    def pano(rr):
        for n, (x, y, b) in zip(nodes, poses):
            img = render_with_population(rr, x, y, 1.7, 2048, b, node_population(scene, settings, n, x, y))
            images.setdefault((state["name"], "pano", n), img)
        return len(poses)

    pops = {}   # per variant its populations, built (and uploaded, shade chunks made) once before the timing

    def frames(rr):
        for n, (x, y, b) in zip(nodes, poses):
            objs = pops[state["name"]][n]
            for k in range(4):
                img = rr.render_view(x, y, b + 90 * k, 0.0, VIEW_HFOV, VIEW_W, VIEW_H, dynamic=objs)
                images.setdefault((state["name"], "frame", n, k), img)
        return 4 * len(poses)

    x, y, b = poses[0]
    render_with_population(r, x, y, 1.7, 2048, b, node_population(scene, settings, nodes[0], x, y))   # warm
    for name in ("without", "with"):
        use(name)
        pops[name] = {n: node_population(scene, settings, n, x, y) for n, (x, y, _) in zip(nodes, poses)}
        for n, (x, y, b) in zip(nodes, poses):
            r.render_view(x, y, b, 0.0, VIEW_HFOV, VIEW_W, VIEW_H, dynamic=pops[name][n])
    res = {"LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"), "nodes": a.nodes, "rounds": a.rounds,
           "uptime_start": uptime()}
    ab_cpu_ms({"without": r, "with": r}, a.rounds, pano, frames, res, before=use)
    use("with")
    diff, rows = [], set()
    for key, img in images.items():
        if key[0] != "with":
            continue
        m = (img != images[("without", *key[1:])]).any(axis=-1)
        diff.append(int(m.sum()))
        if key[1] == "frame":
            rows |= set(np.flatnonzero(m.any(axis=1)).tolist())
    res["changed_pixels"] = diff
    res["frame_rows_changed"] = sorted(rows)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
