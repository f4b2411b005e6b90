"""The side-by-side benchmarks of ``urbanarena bench`` (issue 8), runnable from a checkout.

Same as ``urbanarena bench [NAME] [--json] [--quick] [--out FILE]`` (see
:mod:`urbanarena.bench` and ``docs/bench.md``): perspective cut vs py360convert,
env step with view + map, the 64 x 10 concurrency sweep against a 200 ms fake
model server, Touchdown-scale and 1,000,000-node graphs, 3D rendering beside
MetaDrive, memory per worker.

Run: ``python3 benchmarks/bench_all.py`` (about 5-10 minutes on 2 cores),
``python3 benchmarks/bench_all.py sweep --json``, ``python3 benchmarks/bench_all.py --quick``.
"""

from __future__ import annotations

import typer

from urbanarena.cli.bench_cmd import bench

if __name__ == "__main__":
    typer.run(bench)
