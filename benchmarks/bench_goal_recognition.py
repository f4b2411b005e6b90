"""Would the ``ocr`` baseline recognise the goal when standing at it? Language goals against image goals, with the
search taken out (issue 19 item 2; a diagnostic of ours, not a benchmark protocol).

For every ``landmark_image`` task of the city's frozen suite (``--suite-size``, default ``mini``), at the goal
node, the agent's own perception (:class:`~urbanarena.agents.ocr_agent.SignReader` on the upper rows its
``_read`` uses, :func:`~urbanarena.agents.ocr_agent.locate_name`) on the views it can take there: camera
yaws every ``--yaw-step-deg`` (30) degrees at pitch 0, 640 x 360, 90 degree field of view, from the panorama
the episodes use (realistic style, people and vehicles). Two goal names are searched in those views:

* **language**: the POI's name, as ``landmark_language`` gives it in the instruction;
* **image**: the name the agent takes from the reference photo
  (:func:`~urbanarena.agents.ocr_agent.reference_name`; ``None`` when it reads no line, which recognises
  nothing).

A goal is *recognised* when the name is read in at least one view. Same POIs, same views: the two
differ only by where the name comes from, so the paired bootstrap over tasks
(:func:`urbanarena.tasks.metrics.paired.paired_bootstrap`) compares them. Run:
``python3 benchmarks/bench_goal_recognition.py [--city helsinki] [--suite-size mini|standard] [--suite NAME]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--city", default="helsinki")
    ap.add_argument("--suite-size", choices=("mini", "standard"), default="mini")
    ap.add_argument("--suite", default=None, help="one of the city's frozen suites by name (default: the newest, "
                                                  "as --tasks mini takes it), e.g. helsinki-arena7-v3")
    ap.add_argument("--yaw-step-deg", type=float, default=30.0)
    ap.add_argument("--limit", type=int, default=None)
    a = ap.parse_args(argv)

    import cv2

    from urbanarena.agents.ocr_agent import READ_BELOW_HORIZON_PX, locate_name, reference_name, shared_reader
    from urbanarena.env.arena_env import ArenaPose
    from urbanarena.env.observers import PanoramaObserver
    from urbanarena.render.scene3d.cache import RenderedPanoramaStore
    from urbanarena.tasks.frozen import frozen_for_city
    from urbanarena.tasks.frozen_materialize import materialize
    from urbanarena.tasks.metrics.paired import paired_bootstrap
    from urbanarena.world.resolve import resolve_city

    city = resolve_city(a.city)
    fs = frozen_for_city(city, "realistic", a.suite)
    tasks_path, _ = materialize(fs, a.suite_size, city)
    d = json.loads(tasks_path.read_text(encoding="utf-8"))
    tasks = [t for t in d["tasks"] if (t.get("extra") or {}).get("task_kind") == "landmark_image"]
    if a.limit:
        tasks = tasks[: a.limit]
    store = RenderedPanoramaStore(city)
    observer = PanoramaObserver(store)
    reader = shared_reader()
    rows_h = 360 // 2 + READ_BELOW_HORIZON_PX
    lang, img, picked = [], [], 0
    t0 = time.perf_counter()
    print(f"{len(tasks)} landmark_image tasks of {fs.name}-{a.suite_size}; views every {a.yaw_step_deg:g} degrees "
          "at the goal node")
    for t in tasks:
        name = t["extra"]["landmark"]
        ref_rel = t["extra"]["reference_images"][0]
        ref = cv2.cvtColor(cv2.imread(str(tasks_path.parent / ref_rel)), cv2.COLOR_BGR2RGB)
        ref_name = reference_name(reader.read(ref), ref.shape[1])
        picked += ref_name is not None
        node = t["goals"][0]["node"]
        x, y = city.xy(node)
        lat, lon = city.frame.to_latlon(x, y)
        views = []
        for k in range(int(round(360.0 / a.yaw_step_deg))):
            yaw = (k * a.yaw_step_deg) % 360.0
            pose = ArenaPose(x, y, lat, lon, yaw, 0.0, yaw, node, None, 0.0, node)
            views.append(reader.read(observer(city, pose)[:rows_h]))
        got_lang = any(locate_name(name, v) is not None for v in views)
        got_img = ref_name is not None and any(locate_name(ref_name, v) is not None for v in views)
        # the name the reference gave must also be the goal's (a neighbour's sign read at the goal is no success)
        got_img = got_img and locate_name(name, [_line(ref_name)]) is not None
        lang.append(float(got_lang))
        img.append(float(got_img))
        print(f"  {t['task_id']}: {name!r}: language {'read' if got_lang else '-'}; reference gave {ref_name!r}: "
              f"{'read' if got_img else '-'}")
    res = paired_bootstrap(lang, img, alternative="greater", seed=0)
    n = len(tasks)
    print(f"recognised at the goal node: language {int(sum(lang))}/{n} ({100 * sum(lang) / n:.0f} %), "
          f"image {int(sum(img))}/{n} ({100 * sum(img) / n:.0f} %); the reference gave a line in {picked}/{n}")
    print(f"  difference language - image: {100 * res.mean_diff:+.1f} points, 95% CI [{100 * res.ci95[0]:+.1f}, "
          f"{100 * res.ci95[1]:+.1f}], one-sided p = {res.p_value:.4f} (paired bootstrap over tasks)")
    print(f"  {time.perf_counter() - t0:.0f} s")
    return 0


def _line(text: str):
    """A :class:`TextLine` holding ``text`` (to match one name against another with the agent's rule)."""
    from urbanarena.agents.ocr_agent import TextLine

    return TextLine(text, 1.0, np.zeros((4, 2)))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
