"""What the ``photo`` style's speed work saves (issue 24 speed floors): the branch start's way and the new way in one
process, interleaved round by round so that a shared machine's load drifts into both alike.

``without`` (the branch start): the population's shade mesh built placement by placement with shapely objects, its
vertices tiled with one gather per attribute (:meth:`MeshData.tiles`, then interleaved), people and vehicles at
three levels of detail (``LOD_FROM_M = (10, 30)``), the ground drawn whole, the sky shaded in every row. ``with``:
the shade mesh built for all placements at once, one gather of the interleaved buffer, a fourth level beyond 45 m,
the ground's chunks outside the frustum skipped (:class:`.tiles.OrderedChunks`), the sky shaded only above the
rows that see nothing but ground (:func:`.photo_atmosphere.sky_rows`).

Per round and variant: panoramas 2048 x 1024 with the population (snapshot and mesh built anew, as the panorama
store does per node) and first-person frames 640 x 360 with it (four headings per node, the population built once
per node) on the first ``--nodes`` shopping-street nodes of the default city, clear day; CPU ms per panorama and
per frame (min and median over ``--rounds``) and the machine's load (``uptime``). Needs the fetched assets.

    LP_NUM_THREADS=2 python3 benchmarks/bench_photo_speed.py [--nodes 4] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ab_cpu_ms, photo_people_setup, population_workloads, uptime  # noqa: E402


def legacy_shade_mesh(placements, sun_dir, shadow_k):
    """The branch start's shade mesh: one placement at a time, a shapely MultiPoint hull each."""
    import shapely
    from shapely.geometry import MultiPoint

    from urbanarena.render.scene3d import population_photo as PP
    from urbanarena.render.scene3d.mesh_primitives import MeshData

    def fan(cx, cy, ring, kc, kr):
        n = len(ring) - 1
        c = np.broadcast_to([cx, cy, PP.SHADE_Z_M], (n, 3))
        r0 = np.concatenate([ring[:-1], np.full((n, 1), PP.SHADE_Z_M)], axis=1)
        r1 = np.concatenate([ring[1:], np.full((n, 1), PP.SHADE_Z_M)], axis=1)
        col = np.empty((n, 3, 3), np.float32)
        col[:, 0], col[:, 1:] = kc, kr
        return np.stack([c, r0, r1], axis=1), col

    tris, cols = [], []
    sx, sy, sz = (float(v) for v in sun_dir)
    sun = sz > math.sin(math.radians(2.0)) and shadow_k < 0.999
    ang = np.linspace(0.0, 2 * math.pi, PP.CONTACT_SIDES + 1)
    for p in placements:
        a = math.radians(p.heading_deg)
        fwd, right = np.array([math.sin(a), math.cos(a)]), np.array([math.cos(a), -math.sin(a)])
        hl, hw = PP.CONTACT_GROW * p.length_m / 2, PP.CONTACT_GROW * p.width_m / 2
        ring = (np.cos(ang)[:, None] * hw * right + np.sin(ang)[:, None] * hl * fwd) + [p.x_m, p.y_m]
        t, c = fan(p.x_m, p.y_m, ring, PP.CONTACT_K, 1.0)
        tris.append(t)
        cols.append(c)
        if sun:
            foot = np.asarray(p.footprint().exterior.coords)[:-1]
            d = p.height_m / sz
            top = foot + [-sx * d, -sy * d]
            if p.kind in ("pedestrian", "waiting", "crossing"):
                top = (foot - [p.x_m, p.y_m]) * PP.PERSON_TOP + [p.x_m - sx * d, p.y_m - sy * d]
            hull = MultiPoint(np.concatenate([foot, top]).tolist()).convex_hull
            if hull.geom_type == "Polygon":
                ctr = np.asarray(shapely.centroid(hull).coords)[0]
                t, c = fan(float(ctr[0]), float(ctr[1]), np.asarray(hull.exterior.coords), shadow_k, shadow_k)
                tris.append(t)
                cols.append(c)
    T = np.concatenate(tris).reshape(-1, 3).astype(np.float32)
    return MeshData(T, np.broadcast_to(np.array([0, 0, 1], np.float32), T.shape).copy(),
                    np.concatenate(cols).reshape(-1, 3).astype(np.float32))


def legacy_tile_order(self, tile_m):
    """The branch start's tiling cost: length-3 reductions and a gather per attribute (:meth:`MeshData.tiles`)."""
    n = self.n_triangles
    tris = self.positions.reshape(n, 3, 3).astype(np.float64)
    key = np.floor(tris.mean(axis=1)[:, :2] / tile_m).astype(np.int64)
    order = np.lexsort((key[:, 1], key[:, 0]))
    self.take_triangles(order)   # the gathers the old path paid before interleaving
    key, tris = key[order], tris[order]
    starts = np.concatenate([[0], np.flatnonzero(np.any(np.diff(key, axis=0) != 0, axis=1)) + 1])
    lo = np.minimum.reduceat(tris.min(axis=1), starts, axis=0)
    hi = np.maximum.reduceat(tris.max(axis=1), starts, axis=0)
    counts = np.diff(np.concatenate([starts, [n]]))
    return (order[:, None] * 3 + np.arange(3)[None, :]).reshape(-1), starts * 3, counts * 3, lo, hi


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()

    from urbanarena.render.scene3d import population_photo as PP
    from urbanarena.render.scene3d.cache import render_with_population
    from urbanarena.render.scene3d.mesh_primitives import MeshData
    from urbanarena.render.scene3d.population_draw import node_population
    from urbanarena.render.scene3d.renderer import SceneRenderer

    setup = photo_people_setup(a.nodes)
    if setup is None:
        return 2
    scene, settings, nodes, poses = setup
    new = (PP.shade_mesh, MeshData.tile_order, PP.LOD_FROM_M)
    old = (legacy_shade_mesh, legacy_tile_order, PP.LOD_FROM_M[:2])
    r = SceneRenderer(scene, settings)
    chunks, box = r._ground_chunks, r._ground_box

    def use(name):
        v = new if name == "with" else old
        PP.shade_mesh, MeshData.tile_order, PP.LOD_FROM_M = v
        r._ground_chunks = chunks if name == "with" else None
        r._ground_box = box if name == "with" else (0.0, 0.0, 0.0, 0.0)   # off the box: the sky everywhere

    pano, frames = population_workloads(scene, settings, nodes, poses)

    x, y, b = poses[0]
    render_with_population(r, x, y, 1.7, 2048, b, node_population(scene, settings, nodes[0], x, y))   # warm
    res = {"LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"), "nodes": a.nodes, "rounds": a.rounds,
           "uptime_start": uptime()}
    ab_cpu_ms({"without": r, "with": r}, a.rounds, pano, frames, res, before=use)
    use("with")
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
