"""Random agent over the 177 HongKong_6 tasks x 10 seeds through the CLI runner.

Goal (issue 2): <= 10 s on 2 cores. Prints wall times for --workers 1 and 2,
their ratio, the in-process episode rate, and the resulting metrics.
Run: python3 benchmarks/bench_random_hk6.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED, need  # noqa: E402


def cli(*args: str, env: dict) -> str:
    return subprocess.run([sys.executable, "-m", "urbanarena.cli.main", *args], env=env, check=True,
                          capture_output=True, text=True).stdout


def main() -> None:
    hk = need(SHARED / "cityseeker" / "HongKong_6")
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, URBANARENA_HOME=home)
        city = f"cityseeker:{hk}"
        tasks = f"cityseeker:{hk / 'question.json'}"
        t0 = time.perf_counter()
        cli("city", "info", city, "--json", env=env)  # first import fills the cache
        t_import = time.perf_counter() - t0
        times = {}
        for workers in (1, 2):
            out = Path(home) / f"run{workers}"
            t0 = time.perf_counter()
            cli("run", "--city", city, "--tasks", tasks, "--agent", "random", "--seeds", "10",
                "--workers", str(workers), "--out", str(out), env=env)
            times[workers] = time.perf_counter() - t0
        summary = json.loads(cli("summary", str(Path(home) / "run2"), "--json", env=env))
    print(f"first import of HongKong_6 (CLI, incl. interpreter start): {t_import:.2f} s")
    for w, t in times.items():
        print(f"random, 177 tasks x 10 seeds = 1770 episodes, --workers {w}: {t:.2f} s "
              f"({1770 / t:.0f} episodes/s; goal <= 10 s, ratio {t / 10:.2f})")
    print(f"speed-up 2 workers vs 1: {times[1] / times[2]:.2f}x")
    m = summary["metrics"]
    print(f"protocol {summary['protocol']}: TC-P@50 {m['tc_proximity_50m']:.2f} %, TC-E {m['tc_exact']:.2f} %, "
          f"spd_cityseeker {m['spd_cityseeker']:.1f}, nDTW {m['ndtw']:.2f}")


if __name__ == "__main__":
    main()
