"""``ocr`` vs ``random`` on landmark search by language (issue 4 acceptance: ``ocr`` beats random by a
paired bootstrap with p < 0.05 and reaches at least 20 %).

Steps, all through the public commands:

1. the default city (``helsinki``: :func:`urbanarena.world.default_city.build_helsinki`, saved as a
   named city) — taken from the cache when present, built otherwise;
2. a ``landmark_language`` suite: ``urbanarena tasks generate --city helsinki --families
   landmark_language --per-family N --seed S``;
3. ``urbanarena run --agent random`` (the arena random baseline on arena tasks) and ``urbanarena run
   --agent ocr`` on it, same seeds;
4. per agent: ``urbanarena summary --json`` (``by_family.landmark_language``: mean evaluation score
   x100 with its cluster-bootstrap 95 % CI), and the paired bootstrap of the per-task evaluation
   scores (:func:`urbanarena.tasks.metrics.paired.paired_bootstrap`: one-sided p for ocr > random,
   two-sided p, 95 % CI of the difference); time per episode.

Options: ``--suite-size mini|standard|full`` (take the frozen suite's tasks of ``--family`` instead of
generating them; issue 14 measures ``--suite-size mini`` = ``helsinki-arena7-v2-mini``; ``--suite NAME``: one of the
city's frozen suites, default the newest), ``--render-style``
(realistic, the default, flat or photo; passed to ``tasks generate`` and both runs), ``--family`` (``landmark_language``,
the default, or ``landmark_image``: the ocr agent then reads the goal's name in the reference photo; issue 19),
``--per-family`` (25, the mini size), ``--seed`` (0),
``--seeds`` (episodes per task, 1),
``--workers`` (2), ``--out DIR`` (keep the runs; default a temporary folder), ``--check`` (exit 1
unless the acceptance holds), ``--calibrate`` (instead: the sign-ranging calibration of the ocr
agent — rapidocr box heights and sign-centre elevations against the true distances of 30 signs of
the city, the numbers behind ``DEFAULT_TEXT_BOX_HEIGHT_M`` and the elevation ranging).

Panoramas are rendered on demand into the panorama cache (``urbanarena city build --prerender``
renders them all beforehand). Run: ``python3 benchmarks/bench_ocr_vs_random.py``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def cli(*args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "urbanarena.cli.main", *map(str, args)], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"urbanarena {' '.join(map(str, args))} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r.stdout


def ensure_city(name: str = "helsinki") -> str:
    """The default city's name in the cache (built with the existing code when missing)."""
    from urbanarena.world.resolve import cached_city_names, save_named

    if name not in cached_city_names():
        from urbanarena.world.default_city import build_helsinki

        t0 = time.perf_counter()
        save_named(build_helsinki(name=name), name)
        print(f"built the default city {name!r} in {time.perf_counter() - t0:.1f} s")
    return name


def store_rows(run_dir: Path) -> list[dict[str, Any]]:
    from urbanarena.runner.store import STORE_FILE, Store

    with Store(run_dir / STORE_FILE, readonly=True) as store:
        return list(store.rows(parse_json=False))


def family_line(name: str, summary: dict[str, Any], family: str = "landmark_language") -> str:
    fam = (summary.get("by_family") or {}).get(family)
    if fam is None:  # a summary without families: the run's own evaluation score
        mean, ci = summary["metrics"].get("evaluation_score"), summary["ci95"].get("evaluation_score")
    else:
        mean, ci = fam["mean"], fam["ci95"]
    ci_txt = f"[{ci[0]:.1f}, {ci[1]:.1f}]" if ci else "[-]"
    return f"  {name:<7} {family}  {mean:5.1f}  95% CI {ci_txt}  ({summary['episodes']} episodes)"


def frozen_family(city: str, size: str, render_style: str, family: str = "landmark_language",
                  name: str | None = None) -> Path:
    """The ``family`` tasks of the city's frozen suite ``size`` for ``render_style`` as a task file, written beside
    the materialized suite (``<home>/suites/<suite>-<size>/``) so that its reference images resolve."""
    from urbanarena.tasks.frozen import frozen_for_city
    from urbanarena.tasks.frozen_materialize import materialize
    from urbanarena.world.resolve import resolve_city

    c = resolve_city(city)
    fs = frozen_for_city(c, render_style, name)
    tasks_path, _ = materialize(fs, size, c)
    d = json.loads(tasks_path.read_text(encoding="utf-8"))
    d["tasks"] = [t for t in d["tasks"] if (t.get("extra") or {}).get("task_kind") == family]
    path = tasks_path.with_name(f"{family}.json")
    path.write_text(json.dumps(d), encoding="utf-8")
    print(f"{len(d['tasks'])} {family} tasks of {fs.name}-{size} ({fs.render_style})")
    return path


def compare(city: str, per_family: int, seed: int, seeds: int, workers: int, out: Path,
            limit: int | None = None, suite_size: str | None = None, render_style: str = "realistic",
            family: str = "landmark_language", frozen_name: str | None = None) -> dict[str, Any]:
    """Generate the suite (or take the frozen suite's), run both agents, print and return the comparison."""
    from urbanarena.tasks.metrics.paired import pair_scores, paired_bootstrap, per_task_scores

    out.mkdir(parents=True, exist_ok=True)
    suite = out / f"{family}.json"
    if suite_size:
        suite = frozen_family(city, suite_size, render_style, family, frozen_name)
    elif not suite.exists():
        cli("tasks", "generate", "--city", city, "--families", family, "--per-family", per_family,
            "--seed", seed, "--out", suite, "--render-style", render_style)
    runs: dict[str, dict[str, Any]] = {}
    for agent in ("random", "ocr"):
        run_dir = out / f"run-{agent}"
        args = ["run", "--city", city, "--tasks", suite, "--agent", agent, "--seeds", seeds, "--workers", workers,
                "--out", run_dir, "--render-style", render_style]
        if limit:
            args += ["--limit", limit]
        t0 = time.perf_counter()
        cli(*args)
        wall = time.perf_counter() - t0
        rows = store_rows(run_dir)
        summary = json.loads(cli("summary", run_dir, "--json"))
        runs[agent] = {"rows": rows, "summary": summary, "wall_s": wall}
    a = per_task_scores(runs["ocr"]["rows"])
    b = per_task_scores(runs["random"]["rows"])
    tasks, xa, xb = pair_scores(a, b)
    one = paired_bootstrap(xa, xb, alternative="greater", seed=seed)
    two = paired_bootstrap(xa, xb, alternative="two-sided", seed=seed)
    print(f"{family} on {city}: {len(tasks)} tasks (seed {seed}), {seeds} seed(s) per task")
    for agent in ("random", "ocr"):
        print(family_line(agent, runs[agent]["summary"], family))
    print(f"  difference ocr - random: {100 * one.mean_diff:+.1f} points, 95% CI "
          f"[{100 * one.ci95[0]:+.1f}, {100 * one.ci95[1]:+.1f}] (paired bootstrap over tasks, BCa)")
    print(f"  p (one-sided, ocr > random) = {one.p_value:.4f}; p (two-sided) = {two.p_value:.4f} "
          f"({one.n_resamples} resamples)")
    for agent in ("random", "ocr"):
        rows = runs[agent]["rows"]
        agent_s = [json.loads(r["timings"]).get("agent_s", 0.0) for r in rows if r.get("timings")]
        print(f"  {agent:<7} {len(rows)} episodes in {runs[agent]['wall_s']:.1f} s wall with {workers} worker(s): "
              f"{runs[agent]['wall_s'] / max(1, len(rows)):.2f} s per episode; agent time "
              f"{sum(agent_s) / max(1, len(agent_s)):.2f} s per episode")
    by_diff: dict[str, list[float]] = {}
    diff_of = {str(r["task_id"]): r.get("difficulty") for r in runs["ocr"]["rows"]}
    for t, s in a.items():
        by_diff.setdefault(str(diff_of.get(t)), []).append(s)
    print("  ocr by difficulty: " + ", ".join(f"{d} {100 * sum(v) / len(v):.0f} % ({len(v)})"
                                             for d, v in sorted(by_diff.items())))
    ocr_mean = 100 * one.mean_a
    ok = ocr_mean >= 20.0 and one.p_value < 0.05
    print(f"acceptance (ocr >= 20 % and p < 0.05): {'met' if ok else 'NOT met'}")
    return {"tasks": tasks, "ocr": xa, "random": xb, "one_sided": one.to_dict(), "two_sided": two.to_dict(),
            "ok": ok, "wall_s": {k: v["wall_s"] for k, v in runs.items()}}


def calibrate(city_name: str, n_signs: int = 30, seed: int = 0) -> None:
    """Sign ranging against the truth: for ``n_signs`` one-line signs, views from the 6 nearest pose nodes
    within 30 m, aimed at the sign and 30 degrees beside it; prints the box height in metres
    (``h * z / f``) and the relative error of the elevation and box-height distance estimates."""
    import numpy as np

    from urbanarena.agents.ocr_agent import OcrAgent, locate_name, sighting_geometry
    from urbanarena.env.arena_env import ArenaPose
    from urbanarena.env.observers import PanoramaObserver
    from urbanarena.render.scene3d.cache import RenderedPanoramaStore
    from urbanarena.world.resolve import resolve_city

    city = resolve_city(city_name)
    store = RenderedPanoramaStore(city)
    observer = PanoramaObserver(store)
    signs = [p for p in store.renderer.meshes.placements if len(p.lines) == 1 and not p.freestanding and len(p.name) >= 6]
    rng = np.random.default_rng(seed)
    signs = [signs[i] for i in rng.choice(len(signs), min(n_signs, len(signs)), replace=False)]
    nodes = list(city.graph.nodes)
    xy = np.array([city.xy(n) for n in nodes])
    reader = OcrAgent().reader
    f = 320.0
    k, err_elev, err_box = [], [], []
    for p in signs:
        cx, cy, _ = p.centre
        d = np.hypot(xy[:, 0] - cx, xy[:, 1] - cy)
        for i in np.argsort(d)[:6]:
            if d[i] > 30.0:
                break
            x, y = xy[i]
            yaw = math.degrees(math.atan2(cx - x, cy - y)) % 360.0
            for off in (0.0, 30.0):
                view = observer(city, ArenaPose(x, y, 0.0, 0.0, (yaw + off) % 360.0, 0.0, 0.0, nodes[i], None, 0.0,
                                                nodes[i]))
                s = locate_name(p.name, reader.read(view))
                if s is None:
                    continue
                k.append(s.height_px * d[i] * math.cos(math.radians(off)) / f)
                _, de, how = sighting_geometry(s, 640, 360, 90.0)
                if how == "elevation":
                    err_elev.append(de / d[i] - 1.0)
                _, db, _ = sighting_geometry(s, 640, 1, 90.0)  # a 1 px tall frame forces the box-height estimate
                err_box.append(db / d[i] - 1.0)
    k_arr, e_arr, b_arr = np.array(k), np.array(err_elev), np.array(err_box)
    print(f"{len(k_arr)} sightings of {len(signs)} signs")
    print(f"  text box height: median {np.median(k_arr):.3f} m, IQR {np.percentile(k_arr, 25):.3f}-"
          f"{np.percentile(k_arr, 75):.3f} m")
    print(f"  distance by elevation: median error {100 * np.median(e_arr):+.1f} %, median |error| "
          f"{100 * np.median(np.abs(e_arr)):.1f} %")
    print(f"  distance by box height: median error {100 * np.median(b_arr):+.1f} %, median |error| "
          f"{100 * np.median(np.abs(b_arr)):.1f} %")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-family", type=int, default=25)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--calibrate", action="store_true")
    ap.add_argument("--suite-size", choices=("mini", "standard", "full"), default=None,
                    help="take the --family tasks of the city's frozen suite of this size instead")
    ap.add_argument("--suite", default=None, help="with --suite-size: one of the city's frozen suites by name "
                                                  "(default the newest), e.g. helsinki-arena7-v3")
    ap.add_argument("--render-style", choices=("realistic", "flat", "photo"), default="realistic")
    ap.add_argument("--family", choices=("landmark_language", "landmark_image"), default="landmark_language",
                    help="the family generated and run (landmark_image: the ocr agent reads the name in the "
                         "reference photo; the acceptance line applies to landmark_language)")
    a = ap.parse_args(argv)
    city = ensure_city()
    if a.calibrate:
        calibrate(city)
        return 0
    if a.out is not None:
        res = compare(city, a.per_family, a.seed, a.seeds, a.workers, a.out, a.limit, a.suite_size, a.render_style,
                      a.family, a.suite)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            res = compare(city, a.per_family, a.seed, a.seeds, a.workers, Path(tmp), a.limit, a.suite_size,
                          a.render_style, a.family, a.suite)
    return 0 if (res["ok"] or not a.check) else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
