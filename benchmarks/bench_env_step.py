"""Env step overhead per action for each graph protocol (µs per step).

Uses the real HongKong_6 and Touchdown graphs when ../shared is present, a
synthetic 30x30 grid otherwise. Prints figures; asserts nothing.
Run: python3 benchmarks/bench_env_step.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED  # noqa: E402

from urbanarena.env import GraphNavEnv, make_motion  # noqa: E402


def bench(city, protocol, style, steps=20000):
    env = GraphNavEnv(city, make_motion(protocol, city, style))
    rng = np.random.default_rng(0)
    nodes = list(city.graph.nodes)
    env.reset(options={"start_node": nodes[0]})
    n = 0
    t0 = time.perf_counter()
    while n < steps:
        env.step(int(rng.integers(max(1, len(env.motion.choices(env.state))))))
        n += 1
        if n % 35 == 0:
            env.reset(options={"start_node": nodes[int(rng.integers(len(nodes)))]})
    dt = time.perf_counter() - t0
    return dt / steps * 1e6


def main() -> None:
    cases = []
    hk = SHARED / "cityseeker" / "HongKong_6"
    if hk.exists():
        from urbanarena.world.importers.cityseeker import import_city

        city = import_city(hk)
        cases += [(city, "cityseeker-v1", "heading"), (city, "urbanarena-graph-v1", "heading")]
    td = SHARED / "touchdown"
    if td.exists():
        from urbanarena.world.importers.touchdown import import_city as td_import

        tcity = td_import(td)
        cases += [(tcity, "touchdown-v1", "turn"), (tcity, "urbanarena-graph-v1", "turn")]
    if not cases:
        print("../shared absent: nothing to benchmark on real graphs")
        return
    for city, protocol, style in cases:
        us = bench(city, protocol, style)
        print(f"{city.name:>12} {protocol:<22} {us:7.1f} µs/step (incl. observation dict and goal-free info)")


if __name__ == "__main__":
    main()
