"""What the ``photo`` style's street ground (``render/scene3d/photo_ground.py``) costs: the same photo renders with the
ground program patched by this checkout's ``photo_materials.patch_source`` and by the one of a git revision
(``--base``, default the commit before the photo ground; "without") and this checkout ("with"), in one process,
interleaved round by round so that a shared machine's load drifts into both alike (:func:`_common.ab_static_poses`:
2048-wide panoramas and 640 x 360 frames without people on the first ``--nodes`` shopping-street nodes of the
default city, clear day).

    LP_NUM_THREADS=2 python3 benchmarks/bench_photo_ground.py [--base REV] [--nodes 4] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ab_static_poses  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def base_patch_source(rev: str):
    """``patch_source`` of ``photo_materials.py`` as it was at git revision ``rev``."""
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:src/urbanarena/render/scene3d/photo_materials.py"],
                         check=True, capture_output=True, text=True).stdout
    mod = types.ModuleType("photo_materials_base")
    sys.modules[mod.__name__] = mod          # (its dataclasses look their module up)
    exec(compile(src, f"{rev}:photo_materials.py", "exec"), mod.__dict__)
    return mod.patch_source


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="9eb8dd2")
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--city", default="helsinki")
    a = ap.parse_args()
    from urbanarena.bench.population import shopping_nodes
    from urbanarena.bench.realism import _city
    from urbanarena.render.scene3d import photo_materials as PM
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    if PM.photo_materials() is None:
        print("photo materials not fetched: run `urbanarena assets fetch`", file=sys.stderr)
        return 2
    city = _city(a.city)
    scene = scene_from_city(city)
    poses = [node_pose(city, n) for n in shopping_nodes(city)[:a.nodes]]
    mine = PM.patch_source
    renderers = {}
    try:
        for name, patch in (("without", base_patch_source(a.base)), ("with", mine)):
            PM.patch_source = patch
            renderers[name] = SceneRenderer(scene, RenderSettings(style="photo", population="none"))
    finally:
        PM.patch_source = mine
    res = {"LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"), "base": a.base, "nodes": a.nodes, "rounds": a.rounds}
    ab_static_poses(renderers, poses, a.rounds, res)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
