"""Vector environments of the registered gym envs (issue 17): env steps/s at 1, 2 and 4 envs with
``gymnasium.vector.SyncVectorEnv`` and ``AsyncVectorEnv`` (``context="spawn"``: EGL contexts do not
survive ``fork``), and renders/s for image observations.

Configurations: ``urbanarena/Arena-v1`` map navigation with ``observation="map"`` (current-location
map + reference map per step, 96 x 96) and ``urbanarena/Continuous-v1`` short-range navigation with
``observation="rgb"`` (a first-person 3D render, 640 x 360 resized to 160 x 90, per step). Actions are
drawn uniformly among the masked-valid ones (seeded); episodes that end are reset by the vector env
(autoreset) inside the timing. "renders/s" counts the image observations produced (see the configs:
map-mode steps of Continuous-v1 draw a map instead of a 3D view). Every env of a vector env builds its city and
tasks in its own process (cached under URBANARENA_HOME), which the timing excludes (a warm-up of 5
steps first). Prints figures; asserts nothing.

Run: ``URBANARENA_HOME=... python3 benchmarks/bench_gym_vector.py [--steps 60] [--envs 1,2,4]``
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def make_fn(env_id: str, kwargs: dict):
    def fn():
        import gymnasium as gym
        import urbanarena  # noqa: F401  (registers the envs in spawned workers)

        return gym.make(env_id, **kwargs)
    return fn


def masked_actions(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    return np.array([int(rng.choice(np.flatnonzero(m))) for m in masks])


def bench(env_id: str, kwargs: dict, n: int, kind: str, steps: int) -> dict:
    import gymnasium as gym

    fns = [make_fn(env_id, kwargs) for _ in range(n)]
    t0 = time.perf_counter()
    venv = (gym.vector.SyncVectorEnv(fns) if kind == "sync"
            else gym.vector.AsyncVectorEnv(fns, context="spawn", shared_memory=False))
    obs, _ = venv.reset(seed=list(range(n)))
    start_s = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    for _ in range(5):
        obs, *_ = venv.step(masked_actions(rng, obs["action_mask"]))
    t = time.perf_counter()
    for _ in range(steps):
        obs, *_ = venv.step(masked_actions(rng, obs["action_mask"]))
    dt = time.perf_counter() - t
    venv.close()
    env_steps = steps * n
    return {"env": env_id, "vector": kind, "n_envs": n, "env_steps": env_steps, "seconds": round(dt, 3),
            "env_steps_per_s": round(env_steps / dt, 1), "renders_per_s": round(env_steps / dt, 1),
            "startup_s": round(start_s, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--envs", default="1,2,4")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    configs = [
        ("urbanarena/Arena-v1", {"observation": "map"},
         "2 images per step: the location map drawn, the reference map resized"),
        ("urbanarena/Continuous-v1", {"observation": "rgb", "action": "discrete"},
         "1 image per step: a first-person 3D render, or the map image in map mode"),
    ]
    rows = []
    for env_id, kw, what in configs:
        for kind in ("sync", "async"):
            for n in (int(v) for v in a.envs.split(",")):
                r = bench(env_id, kw, n, kind, a.steps)
                r["renders"] = what
                if "Arena" in env_id:
                    r["renders_per_s"] = round(2 * r["env_steps_per_s"], 1)
                rows.append(r)
                if not a.json:
                    print(f"{env_id:26} {kind:5} n={n}  {r['env_steps_per_s']:8.1f} env steps/s  "
                          f"{r['renders_per_s']:8.1f} renders/s  ({r['env_steps']} steps in {r['seconds']} s; "
                          f"start {r['startup_s']} s)", flush=True)
    base = {(r["env"], r["vector"]): r["env_steps_per_s"] for r in rows if r["n_envs"] == 1}
    for r in rows:
        r["ratio_vs_1"] = round(r["env_steps_per_s"] / base[(r["env"], r["vector"])], 2)
    if a.json:
        print(json.dumps(rows, indent=1))
    else:
        print("ratios vs 1 env:", ", ".join(f"{r['env'].split('/')[1]} {r['vector']} n={r['n_envs']}: "
                                             f"{r['ratio_vs_1']}" for r in rows))


if __name__ == "__main__":
    main()
