"""Touchdown graph: import time and memory, then saved-city load time.

Goal (issue 2): import <= 3 s and <= 300 MB. Prints figures; asserts nothing.
Run: python3 benchmarks/bench_touchdown_load.py
"""

from __future__ import annotations

import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED, need, peak_rss_mb  # noqa: E402


def main() -> None:
    src = need(SHARED / "touchdown")
    base_rss = peak_rss_mb()
    from urbanarena.world.city_io import load_city, save_city
    from urbanarena.world.importers.touchdown import import_city

    after_import_rss = peak_rss_mb()
    tracemalloc.start()
    t0 = time.perf_counter()
    city = import_city(src)
    t_import = time.perf_counter() - t0
    _, py_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = peak_rss_mb()
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        save_city(city, Path(d) / "td")
        t_save = time.perf_counter() - t0
        t0 = time.perf_counter()
        back = load_city(Path(d) / "td")
        t_load = time.perf_counter() - t0
    print(f"nodes={city.graph.number_of_nodes()} edges={city.graph.number_of_edges()} (reloaded {back.graph.number_of_edges()})")
    print(f"import (parse + geodesics + graph + local xy): {t_import:.2f} s  (goal <= 3 s; ratio {t_import / 3:.2f})")
    print(f"python heap peak during import (tracemalloc): {py_peak / 2**20:.0f} MiB")
    print(f"process peak RSS: {rss:.0f} MiB (python+modules before import: {after_import_rss:.0f} MiB, bare: {base_rss:.0f} MiB)  (goal <= 300 MB; ratio {rss / 300:.2f})")
    print(f"save_city: {t_save:.2f} s; load_city (saved, hash verified): {t_load:.2f} s")


if __name__ == "__main__":
    main()
