"""``landmark_image`` reference photos (issue 19 item 2): view distance to the goal views and how often
the ocr baseline can read the goal's name in them.

Steps:

1. the default city (built into the cache when missing) and a ``landmark_image`` suite through the
   public command: ``urbanarena tasks generate --city helsinki --families landmark_image --per-family N
   --seed S --render-style STYLE`` (every reference passed the view-distance check, ``extra.reference_check``);
2. per reference photo: rapidocr (the ocr agent's :class:`~urbanarena.agents.ocr_agent.SignReader`) reads
   the whole picture; *readable* = the goal's name is read anywhere in it
   (:func:`~urbanarena.agents.ocr_agent.locate_name`, the project's "a name is read"), *picked* = the line
   the ocr agent takes as the goal name (:func:`~urbanarena.agents.ocr_agent.reference_name`) is the
   goal's name;
3. the distances behind the threshold: the generated references' smallest distance to the goal views
   (``extra.reference_check``), and three controls per task through the same measure
   (:class:`~urbanarena.render.scene3d.reference.GoalViewDistance`): a photo taken *at* the goal node
   (eye height 1.7 m, the clear day, looking at the storefront) -- what a pixel match looks like; the
   same in the reference's condition; and generator version 1's camera (3-8 m along the facade,
   70 degrees, straight at the sign).

Run: ``python3 benchmarks/bench_reference_goals.py [--per-family 40] [--seed 0] [--render-style realistic]
[--controls 12] [--out DIR]``. Prints the figures; measured with other jobs on the machine (timings
are not the point here).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_ocr_vs_random import cli, ensure_city  # noqa: E402


def ocr_shares(tasks: list[dict], base: Path) -> dict:
    """Readable / picked shares of the references (module docstring, step 2)."""
    from urbanarena.agents.ocr_agent import locate_name, reference_name, shared_reader
    from urbanarena.render.scene3d.cache import read_png

    reader = shared_reader()
    rows = []
    for t in tasks:
        img = read_png(base / t["extra"]["reference_images"][0])
        lines = reader.read(img)
        name = t["extra"]["landmark"]
        picked = reference_name(lines, img.shape[1])
        rows.append({"task": t["task_id"], "name": name, "readable": locate_name(name, lines) is not None,
                     "picked": picked, "picked_right": picked is not None and locate_name(name, [
                         ln for ln in lines if ln.text.strip() == picked]) is not None,
                     "condition": t["extra"]["reference_view"].get("condition"),
                     "placement": t["extra"]["reference_view"].get("placement")})
    return {"n": len(rows), "readable": sum(r["readable"] for r in rows),
            "picked_right": sum(r["picked_right"] for r in rows), "rows": rows}


def v1_camera(city, poi, rng) -> dict | None:
    """Generator version 1's camera of ``poi`` (:func:`urbanarena.tasks.generators.landmark.reference_view_v1`)."""
    from scipy.spatial import cKDTree
    from shapely.strtree import STRtree

    from urbanarena.tasks.generators.common import make_context
    from urbanarena.tasks.generators.landmark import reference_view_v1

    ctx = make_context(city, [0], max_steps=50)
    tree = cKDTree(np.array([city.xy(n) for n in city.graph.nodes]))
    bldgs = STRtree(np.array([b.shape() for b in city.annotations.buildings], dtype=object))
    return reference_view_v1(ctx, poi, tree, bldgs, rng)


def v1_readable(city, tasks: list[dict], style: str, seed: int) -> tuple[int, int]:
    """How many of generator version 1's photos of the same POIs let rapidocr read the name."""
    from urbanarena.agents.ocr_agent import locate_name, shared_reader
    from urbanarena.render.scene3d.reference import render_reference

    rng = np.random.default_rng(seed)
    n = hits = 0
    for t in tasks:
        v = v1_camera(city, city.annotations.poi(t["extra"]["poi_id"]), rng)
        if v is None:
            continue
        n += 1
        hits += locate_name(t["extra"]["landmark"], shared_reader().read(render_reference(city, v, style))) is not None
    return hits, n


def controls(city, tasks: list[dict], style: str, n: int, seed: int) -> dict[str, list[float]]:
    """The control distances (module docstring, step 3) for the first ``n`` tasks."""
    from urbanarena.render.scene3d.reference import GoalViewDistance

    check = GoalViewDistance(city, style)
    rng = np.random.default_rng(seed)
    out: dict[str, list[float]] = {"at_goal_node": [], "at_goal_node_other_condition": [], "generator_v1": []}
    for t in tasks[:n]:
        v = t["extra"]["reference_view"]
        poi = city.annotations.poi(t["extra"]["poi_id"])
        nodes = [t["goals"][0]["node"]]
        x, y = city.xy(nodes[0])
        yaw = math.degrees(math.atan2(poi.facade_xy[0] - x, poi.facade_xy[1] - y)) % 360.0
        at = {"x_m": float(x), "y_m": float(y), "eye_height_m": 1.7, "yaw_deg": yaw, "pitch_deg": 0.0,
              "hfov_deg": v["hfov_deg"], "width": v["width"], "height": v["height"]}
        out["at_goal_node"].append(check(city, at, nodes)["min_view_distance"])
        out["at_goal_node_other_condition"].append(
            check(city, {**at, "condition": v["condition"], "lighting": v["lighting"]}, nodes)["min_view_distance"])
        old = v1_camera(city, poi, rng)
        if old is not None:
            out["generator_v1"].append(check(city, old, nodes)["min_view_distance"])
    return out


def describe(vals: list[float], threshold: float) -> str:
    a = np.array(vals)
    return (f"n {len(a)}, min {a.min():.3f}, median {np.median(a):.3f}, max {a.max():.3f}; "
            f"below {threshold:g}: {int((a < threshold).sum())}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--city", default="helsinki")
    ap.add_argument("--per-family", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--render-style", default="realistic")
    ap.add_argument("--controls", type=int, default=12, help="tasks whose control distances are measured")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    from urbanarena.render.view_distance import REFERENCE_MIN_DISTANCE
    from urbanarena.world.resolve import resolve_city

    city_name = ensure_city(a.city)
    out = a.out or Path(tempfile.mkdtemp(prefix="bench-refs-"))
    suite = out / "landmark_image.json"
    if not suite.exists():
        cli("tasks", "generate", "--city", city_name, "--families", "landmark_image", "--per-family", a.per_family,
            "--seed", a.seed, "--out", suite, "--render-style", a.render_style)
    tasks = json.loads(suite.read_text())["tasks"]
    city = resolve_city(city_name)
    shares = ocr_shares(tasks, suite.parent)
    n = shares["n"]
    print(f"{n} landmark_image references (tasks generate --per-family {a.per_family} --seed {a.seed} "
          f"--render-style {a.render_style}) on {city_name}")
    print(f"  ocr reads the goal's name anywhere in the photo: {shares['readable']}/{n} "
          f"({100 * shares['readable'] / max(n, 1):.0f} %)")
    print(f"  ocr agent's picked line is the goal's name:     {shares['picked_right']}/{n} "
          f"({100 * shares['picked_right'] / max(n, 1):.0f} %)")
    by: dict[str, list[int]] = {}
    for r in shares["rows"]:
        for k in (f"condition {r['condition']}", f"placement {r['placement']}"):
            by.setdefault(k, []).append(int(r["readable"]))
    print("  readable by " + "; ".join(f"{k}: {sum(v)}/{len(v)}" for k, v in sorted(by.items())))
    hits, n1 = v1_readable(city, tasks, a.render_style, a.seed)
    print(f"  control, generator version 1's photos of the same POIs: {hits}/{n1} readable "
          f"({100 * hits / max(n1, 1):.0f} %)")
    dists = [t["extra"]["reference_check"]["min_view_distance"] for t in tasks if "reference_check" in t["extra"]]
    print(f"view distance (1 - SSIM, 80x60 grey) of the references to the goal views, threshold "
          f"{REFERENCE_MIN_DISTANCE:g}:")
    print(f"  generated references:               {describe(dists, REFERENCE_MIN_DISTANCE)}")
    ctl = controls(city, tasks, a.render_style, a.controls, a.seed)
    for k, label in (("at_goal_node", "photo at the goal node (clear day)"),
                     ("at_goal_node_other_condition", "photo at the goal node, ref. condition"),
                     ("generator_v1", "generator version 1's camera")):
        print(f"  {label + ':':<37} {describe(ctl[k], REFERENCE_MIN_DISTANCE)}")
    if a.json:
        print(json.dumps({"shares": {k: v for k, v in shares.items() if k != "rows"}, "distances": dists,
                          "controls": ctl}))


if __name__ == "__main__":
    main()
