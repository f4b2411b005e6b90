"""Issue 17 acceptance: the behaviour-cloning baseline against random, straight and the blind ablation on
the test split, by the paired test (:func:`urbanarena.tasks.metrics.paired.paired_bootstrap`,
one-sided ``greater``, 10,000 resamples).

Reads finished ``urbanarena run`` folders of the same task file (``--run NAME=RUN_DIR``, the first is
the model under test) and compares per-task means over seeds of two metrics:

* ``success``: ``evaluation_score`` (ANSWER within 20 m of the map-navigation goal);
* ``progress`` (graded): ``max(0, (d0 - d1) / d0)`` with ``d0`` the walkable-graph distance from the
  start to the goal (the arena env's ``graph_goal_distance_m`` at reset) and ``d1`` the same distance
  at the episode's end (the row's ``details.goal_distance_m.graph``).

UrbanGround task files (``l2_constrained``, family ``urbanground``) use instead:

* ``success``: ``metrics.sr`` (the end within 15 m of the goal and the restricted zone never entered);
* ``progress``: ``max(0, (d0 - d1) / d0)`` with ``d0`` the walk network distance
  (:meth:`~urbanarena.env.continuous.walk_network.WalkNetwork.network_distance_m`) from the start to the
  goal and ``d1`` from the episode's final position (``details.final_position``) to the goal; 0 when the
  zone was entered (``metrics.zone_respected`` 0: the task failed; ours).

Run (after the four runs of docs/gym.md)::

    python3 benchmarks/bench_bc_paired.py --city helsinki --tasks test-mn.json \\
        --run bc=runs/bc-test --run random=runs/random-test --run straight=runs/straight-test \\
        --run blind=runs/blind-test
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    from urbanarena.env.stop_rules import make_arena_env
    from urbanarena.runner.store import Store
    from urbanarena.tasks.families.cityarena import CityArenaFamily
    from urbanarena.tasks.metrics.paired import pair_scores, paired_bootstrap, per_task_scores
    from urbanarena.tasks.resolve import resolve_tasks
    from urbanarena.world.resolve import resolve_city

    ap = argparse.ArgumentParser()
    ap.add_argument("--city", required=True)
    ap.add_argument("--tasks", required=True)
    ap.add_argument("--run", action="append", required=True, help="NAME=RUN_DIR (first: the model under test)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    city = resolve_city(a.city)
    tasks = resolve_tasks(a.tasks, city)
    ground = all(t.family == "urbanground" for t in tasks)
    runs = {}
    if ground:
        from urbanarena.tasks.families.urbanground import UrbanGroundFamily, goal_points_xy

        net = UrbanGroundFamily().network(city)
        goal = {t.task_id: goal_points_xy(t, city)[-1] for t in tasks}
        d0 = {t.task_id: net.network_distance_m(city.frame.to_xy(t.start.position.lat, t.start.position.lon),
                                                goal[t.task_id]) for t in tasks}
    else:
        env = make_arena_env(city, "cityarena-v1", task_kind="map_navigation").unwrapped
        d0 = {}
        for t in tasks:
            env.reset(options=CityArenaFamily().env_options(t))
            d0[t.task_id] = env.graph_goal_distance_m()
    for spec in a.run:
        name, _, path = spec.partition("=")
        with Store(Path(path) / "episodes.sqlite", readonly=True) as st:
            rows = list(st.rows())
        for r in rows:
            m = r.get("metrics") or {}
            base = d0[r["task_id"]]
            if ground:
                fp = (r.get("details") or {}).get("final_position") or {}
                d1 = net.network_distance_m((float(fp["x_m"]), float(fp["y_m"])), goal[r["task_id"]]) if fp else None
                r["success"] = float(m.get("sr") or 0.0)
                entered = m.get("zone_respected") == 0.0
            else:
                d1 = ((r.get("details") or {}).get("goal_distance_m") or {}).get("graph")
                r["success"] = float(m.get("evaluation_score") or 0.0)
                entered = False
            r["progress"] = (max(0.0, (base - float(d1)) / base) if d1 is not None and base > 0 and not entered
                             else 0.0)
        runs[name] = rows
    names = list(runs)
    out = {"tasks": len(tasks), "agents": {}, "paired": {}}
    for n in names:
        out["agents"][n] = {k: sum(per_task_scores(runs[n], k).values()) / len(per_task_scores(runs[n], k))
                            for k in ("success", "progress")}
        out["agents"][n]["episodes"] = len(runs[n])
    top = names[0]
    for n in names[1:]:
        for k in ("success", "progress"):
            ids, x, y = pair_scores(per_task_scores(runs[top], k), per_task_scores(runs[n], k))
            r = paired_bootstrap(x, y, alternative="greater", seed=0)
            out["paired"][f"{top} > {n} ({k})"] = {"n": r.n, "mean_diff": round(r.mean_diff, 4),
                                                    "ci95": [round(v, 4) for v in r.ci95], "p": round(r.p_value, 5)}
    if a.json:
        print(json.dumps(out, indent=1))
        return
    print(f"{len(tasks)} test tasks")
    for n, v in out["agents"].items():
        print(f"  {n:10} success {100 * v['success']:5.1f} %  progress {100 * v['progress']:5.1f} %  "
              f"({v['episodes']} episodes)")
    for k, v in out["paired"].items():
        print(f"  {k:32} diff {v['mean_diff']:+.3f}  CI95 {v['ci95']}  p = {v['p']} (n = {v['n']})")


if __name__ == "__main__":
    main()
