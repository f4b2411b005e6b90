"""What the measurements share: timers, memory probes, child processes, the machine's load.

Memory is measured in two ways, named in every figure that uses them:

* **peak RSS of a child process** — a measurement that must not be polluted by
  what ran before it (the 1,000,000-node graph, a worker) runs in a fresh
  ``python -m urbanarena.bench.<module> --child ...`` process and reports its
  peak RSS (``VmHWM`` of ``/proc/self/status``; not ``ru_maxrss``, which Linux
  carries over from the parent across ``exec``) together with the RSS it had
  after its imports (``/proc/self/status`` ``VmRSS``), so the
  figure's own share is ``peak - baseline``;
* **sampled RSS** — :class:`RssSampler` polls ``VmRSS`` of a process every
  ``interval_s`` (50 ms) and keeps the maximum, for the peak of one phase of a
  longer-lived process (one concurrency level of the sweep).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

MIB = 1024.0 * 1024.0


def rss_mb(pid: int | str = "self") -> float | None:
    """Current resident set size (``VmRSS``) of process ``pid``, MiB; ``None`` where ``/proc`` has none."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError):
        return None
    return None


def peak_rss_mb() -> float:
    """Peak resident set size of this process's address space so far, MiB: ``VmHWM`` of
    ``/proc/self/status``, else ``ru_maxrss`` (KiB on Linux).

    ``VmHWM`` first because Linux carries ``ru_maxrss`` across ``execve`` from the address space it
    replaces: a child started with ``vfork``/``fork`` + ``exec`` (``subprocess``) would report its
    parent's peak.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class RssSampler:
    """Polls ``VmRSS`` of ``pid`` on a daemon thread; :attr:`peak_mb` is the largest value seen.

    Use as a context manager around the phase to measure. Resolution: ``interval_s``
    (a peak shorter than that may be missed).
    """

    def __init__(self, pid: int | str = "self", interval_s: float = 0.05):
        self.pid = pid
        self.interval_s = float(interval_s)
        self.peak_mb = rss_mb(pid) or 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="rss-sampler")

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            v = rss_mb(self.pid)
            if v is not None and v > self.peak_mb:
                self.peak_mb = v

    def __enter__(self) -> "RssSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        v = rss_mb(self.pid)
        if v is not None and v > self.peak_mb:
            self.peak_mb = v


def best_median_s(fn: Callable[[int], Any], n: int, rounds: int = 3, warmup: int = 1) -> tuple[float, float]:
    """``(wall, cpu)`` seconds per call of ``fn(i)``: the lowest of ``rounds`` medians of ``n`` calls each.

    The lowest median is robust to other load on a shared machine; CPU time is
    ``time.process_time`` (all threads of this process), i.e. the work itself.
    ``warmup`` calls run first and are not timed.
    """
    for i in range(warmup):
        fn(i)
    best_wall = best_cpu = float("inf")
    for _ in range(rounds):
        walls, cpus = [], []
        for i in range(n):
            t, c = time.perf_counter(), time.process_time()
            fn(i)
            cpus.append(time.process_time() - c)
            walls.append(time.perf_counter() - t)
        best_wall = min(best_wall, statistics.median(walls))
        best_cpu = min(best_cpu, statistics.median(cpus))
    return best_wall, best_cpu


def machine() -> dict[str, Any]:
    """Cores, load averages (1/5/15 min) and Python version of this machine, now."""
    try:
        load = [round(v, 2) for v in os.getloadavg()]
    except OSError:
        load = None
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count()
    return {"cores": cores, "loadavg": load, "python": sys.version.split()[0], "platform": sys.platform}


class ChildError(RuntimeError):
    """A measurement child process failed (its stderr tail is in the message)."""


def run_child(module: str, args: list[str], timeout_s: float) -> dict[str, Any]:
    """Run ``python -m module --child ARGS`` and return the JSON object it prints as its last stdout line.

    Raises:
        ChildError: non-zero exit, timeout, or no JSON on the last line.
    """
    cmd = [sys.executable, "-m", module, "--child", *args]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as e:
        raise ChildError(f"{module}: no result within {timeout_s:.0f} s") from e
    lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
    if p.returncode != 0 or not lines:
        tail = (p.stderr or "").strip().splitlines()[-3:]
        raise ChildError(f"{module} exited {p.returncode}: {' | '.join(tail) or 'no output'}")
    try:
        out = json.loads(lines[-1])
    except json.JSONDecodeError as e:
        raise ChildError(f"{module}: last line is not JSON: {lines[-1][:200]!r}") from e
    if not isinstance(out, dict):
        raise ChildError(f"{module}: printed {type(out).__name__}, not an object")
    return out


def child_main(fn: Callable[[list[str]], dict[str, Any]]) -> None:
    """Entry point of a measurement child: call ``fn(argv after --child)``, print its result as one JSON line."""
    argv = sys.argv[1:]
    if not argv or argv[0] != "--child":
        sys.exit("usage: python -m urbanarena.bench.<module> --child ...  (run by `urbanarena bench`)")
    out = fn(argv[1:])
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()


def rounded(v: float | None, nd: int = 3) -> float | None:
    """``v`` rounded to ``nd`` decimals (``None`` stays ``None``)."""
    return None if v is None else round(float(v), nd)


def temp_root() -> Path:
    """A fresh temporary folder for one measurement (the caller removes it)."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix="urbanarena-bench-"))
