"""What the ``photo`` style's building details cost (``render/scene3d/photo_building_detail.py``: cornices,
parapets, roof boxes, plinths, downpipes, balconies): the same renders with the details and without them, in one
process, interleaved round by round so that a shared machine's load drifts into both alike.

Per round and variant: panoramas 2048 x 1024 without the population and first-person frames 640 x 360 (four
headings) on the first ``--nodes`` shopping-street nodes of the default city, clear day (``--condition`` for
another); CPU ms per panorama and per frame, minimum and median over ``--rounds``, their ratios, the triangles of
the two detail meshes against the scene's, and the machine's load (``uptime``). Needs the fetched assets (``urbanarena assets fetch``).

Pictures: ``--shots DIR`` writes one PNG per ``--views`` entry (``NODE:HEADING:PITCH:CONDITION[:HFOV]``), without
the details left, with them right, and skips the speed runs.

    LP_NUM_THREADS=2 python3 benchmarks/bench_photo_building_detail.py [--nodes 2] [--rounds 12] [--shots DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ab_static_poses  # noqa: E402


def _renderer(scene, condition: str, enabled: bool):
    from urbanarena.render.scene3d import photo_building_detail as D
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    keep = D.ENABLED
    D.ENABLED = enabled
    try:
        return SceneRenderer(scene, RenderSettings.for_condition(condition, style="photo", population="none"))
    finally:
        D.ENABLED = keep


def shots(city, scene, views: str, out: str) -> None:
    """Per ``views`` entry a PNG ``DIR/NODE_HEADING_PITCH_CONDITION.png``: the 640 x 360 view without the details
    (left) and with them (right), no population."""
    import numpy as np
    from PIL import Image

    from urbanarena.bench.population import VIEW_H, VIEW_HFOV, VIEW_W
    from urbanarena.render.scene3d.city_scene import node_pose

    Path(out).mkdir(parents=True, exist_ok=True)
    renderers = {}
    for view in views.split(","):
        node, heading, pitch, cond, *rest = view.split(":")
        hfov = float(rest[0]) if rest else VIEW_HFOV
        x, y, b = node_pose(city, node)
        row = []
        for enabled in (False, True):
            r = renderers.get((cond, enabled)) or renderers.setdefault((cond, enabled), _renderer(scene, cond, enabled))
            row.append(r.render_view(x, y, b + float(heading), float(pitch), hfov, VIEW_W, VIEW_H))
        path = Path(out) / f"{node}_{heading}_{pitch}_{cond}.png"
        Image.fromarray(np.concatenate(row, axis=1)).save(path)
        print(path, file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--city", default="helsinki")
    ap.add_argument("--condition", default="clear")
    ap.add_argument("--shots", default=None, help="write the before/after PNGs into this folder, skip the speed runs")
    ap.add_argument("--views", default="n01946:60:12:clear,n00008:45:-4:clear,n00008:30:10:dusk")
    a = ap.parse_args()
    from urbanarena.bench.population import shopping_nodes
    from urbanarena.bench.realism import _city
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city

    city = _city(a.city)
    scene = scene_from_city(city)
    if a.shots:
        shots(city, scene, a.views, a.shots)
        return 0
    poses = [node_pose(city, n) for n in shopping_nodes(city)[:a.nodes]]
    renderers = {"without": _renderer(scene, a.condition, False), "with": _renderer(scene, a.condition, True)}
    from urbanarena.render.scene3d import photo_building_detail as D

    m = renderers["with"].scene_meshes
    far, near = D.detail_meshes(scene, m.features, {s.building_id for s in m.placements if s.building_id},
                                facades=m.facades)
    res = {"LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"), "nodes": a.nodes, "rounds": a.rounds,
           "scene_triangles": renderers["without"].meshes.n_triangles,
           "detail_triangles": {f"far (within {D.FAR_M:.0f} m)": far.n_triangles,
                                f"near (within {D.NEAR_M:.0f} m)": near.n_triangles}}
    ab_static_poses(renderers, poses, a.rounds, res)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
