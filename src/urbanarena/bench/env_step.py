"""Arena env step overhead with the camera view and the current-location map.

One :func:`~urbanarena.env.stop_rules.make_arena_env` env (``cityarena-v1``) on a
3 x 3-junction street grid with panoramas (:func:`~urbanarena.bench.scenes.grid_city`,
2048 x 1024 JPEGs decoded at the view's matching width, as the runner's
observer does), observed as the runner observes arena episodes: the 640 x 360,
90 degree view with red branch arrows
(:func:`~urbanarena.env.observers.panorama_observer_for`) and the 640 x 640
current-location map (:class:`~urbanarena.env.observers.LocationMapObserver`).
Every panorama is decoded before timing (the store's memory cache is warm, as
after an episode's first visit to a node). Actions: a fixed seeded sequence of
walks, camera turns, pitches and branch choices (when arrows are shown);
episodes restart every 40 steps. Figure: the median wall time of one
``env.step`` (lowest of 3 medians of ``n`` steps), and the same in CPU time;
goal <= 5 ms (issue 3).
"""

from __future__ import annotations

import shutil
from typing import Any

import numpy as np

from urbanarena.bench.common import best_median_s, rounded, temp_root


def measure(quick: bool = False) -> dict[str, Any]:
    """``env_step_ms_median`` (wall), ``env_step_cpu_ms_median``, ``env_step_ms_p90``, view and map sizes."""
    from urbanarena.bench.scenes import grid_city
    from urbanarena.env.arena_env import ActionKind, ArenaAction, Magnitude
    from urbanarena.env.observers import LocationMapObserver, panorama_observer_for
    from urbanarena.env.stop_rules import make_arena_env

    root = temp_root()
    try:
        city = grid_city(root, k=3, segments=3, n_panoramas=2 if quick else 4)
        observer = panorama_observer_for(city)
        for n in city.graph.nodes:
            observer.store.get(n)
        env = make_arena_env(city, "cityarena-v1", task_kind="localization", observer=observer,
                             map_renderer=LocationMapObserver(640, 640))
        nodes = sorted(city.graph.nodes)
        rng = np.random.default_rng(0)
        state = {"obs": None, "steps": 0}

        def reset() -> None:
            state["obs"], _ = env.reset(options={"start_node": nodes[int(rng.integers(len(nodes)))]})
            state["steps"] = 0

        mags = list(Magnitude)
        walk_look = [ActionKind.W, ActionKind.W, ActionKind.W, ActionKind.A, ActionKind.D, ActionKind.Q,
                     ActionKind.E, ActionKind.S]

        def pick() -> ArenaAction:
            obs = state["obs"]
            if obs["arrows"] and rng.random() < 0.5:
                keys = obs["arrows"][int(rng.integers(len(obs["arrows"])))]["keys"]
                return ArenaAction(keys[0])
            kind = walk_look[int(rng.integers(len(walk_look)))]
            return ArenaAction(kind, None if kind == ActionKind.S else mags[int(rng.integers(3))])

        walls: list[float] = []

        def step(_i: int) -> None:
            if state["obs"] is None or state["steps"] >= 40:
                reset()
            action = pick()
            state["obs"], _, term, trunc, _ = env.step(action)
            state["steps"] += 1
            if term or trunc:
                state["obs"] = None

        n = 40 if quick else 200
        wall, cpu = best_median_s(step, n, rounds=3, warmup=5)
        # p90 from one extra pass (a spread figure, not the headline)
        import time

        for i in range(n):
            t = time.perf_counter()
            step(i)
            walls.append(time.perf_counter() - t)
        view = state["obs"]["view"] if state["obs"] is not None else None
        return {"env_step_ms_median": rounded(wall * 1e3), "env_step_cpu_ms_median": rounded(cpu * 1e3),
                "env_step_ms_p90": rounded(float(np.percentile(walls, 90)) * 1e3),
                "env_step_view": "640x360" if view is None else f"{view.shape[1]}x{view.shape[0]}",
                "env_step_map": "640x640"}
    finally:
        shutil.rmtree(root, ignore_errors=True)
