"""Concurrency sweep: wall time of an API-bound evaluation at concurrency 1, 4, 16, 64, 256.

What runs: ``episodes`` (64) arena episodes of ``steps`` (10) model requests each,
through the product's own run path (:func:`urbanarena.runner.driver.prepare` /
:func:`~urbanarena.runner.driver.execute`: backend, store, results), with the
``vlm-arena`` agent and the real ``openai`` SDK talking to
:mod:`urbanarena.bench.fake_server` (a separate process, as a remote model server
would be) that answers every request after ``latency_ms`` (200 ms) with a fixed
scripted policy (walk 7 m, ..., ANSWER at step ``steps``). Every request carries
the 640 x 360 camera view, cut from a 2048 x 1024 panorama of
:func:`~urbanarena.bench.scenes.street_city` and JPEG-encoded by the client; the
server counts the images it receives by format and size, so the figures prove
what was sent. The response cache is off (every step is a real request).

Concurrency N runs the episodes with ``--workers N`` (threads: the backend for
API-bound agents; ``--concurrency N`` where the runner has that option). With
``E`` episodes the best possible speed-up at N is ``min(N, E)`` (64 at N = 256);
the goal of issue 8 is ``0.9 N``.

Figures per level: wall seconds of ``execute`` (city already saved, run
prepared), CPU seconds of the sweep process (agent, env, encoding, SDK, store),
the sampled peak RSS of the sweep process during the level
(:class:`~urbanarena.bench.common.RssSampler`), and the server's peak number of
requests inside their latency wait at once. The speed-up at N is
``wall(1) / wall(N)``. Memory per concurrent episode is the slope of the peak
RSS from concurrency 1 to the highest level, ``(peak(N) - peak(1)) / (min(N, E) - 1)``.

Runs in a child process (``python -m urbanarena.bench.sweep --child``) so its
memory figures are its own. The model client's modules are imported before the
first level is timed (a one-time cost, not a per-step one).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from urbanarena.bench.common import RssSampler, child_main, rounded, run_child, temp_root

LEVELS = (1, 4, 16, 64, 256)
TASK_ANSWER = "x:1 y:2"


class ServerProcess:
    """:mod:`urbanarena.bench.fake_server` in its own process; ``stats()`` reads its ``GET /stats``."""

    def __init__(self, latency_ms: float, answer_step: int):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "urbanarena.bench.fake_server", "--latency-ms", str(latency_ms),
             "--answer-step", str(answer_step)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        try:
            self.port = int(json.loads(line)["port"])
        except (ValueError, KeyError, TypeError) as e:
            self.close()
            raise RuntimeError(f"fake model server did not start: {line!r}") from e

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=10) as r:  # noqa: S310 - loopback
            return json.loads(r.read())

    def cpu_s(self) -> float | None:
        """User + system CPU seconds of the server process so far (``/proc``), or ``None``."""
        try:
            import os

            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> "ServerProcess":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def write_inputs(root: Path, episodes: int) -> tuple[Path, Path]:
    """Saved street city with panoramas and a task file of ``episodes`` localization tasks; returns
    ``(city_dir, task_file)``. Task ``i`` starts at node ``n{i mod 4}`` facing north."""
    from urbanarena.bench.scenes import street_city
    from urbanarena.world.city_io import save_city

    city = street_city(root, n_nodes=16)
    city_dir = save_city(city, root / "city")
    ref = {"name": city.name, "content_hash": city.content_hash}
    tasks = [{"task_id": f"bench/{i:03d}", "family": "cityarena", "city": ref,
              "start": {"node": f"n{i % 4:02d}", "heading_deg": 0},
              "instruction": "Walk north along the street, then say which grid cell you are in as x:N y:M.",
              "answer": TASK_ANSWER, "answer_metric": "exact_match", "difficulty": "easy",
              "category": "localization", "extra": {"task_kind": "localization"}} for i in range(episodes)]
    task_file = root / "tasks.json"
    task_file.write_text(json.dumps({"format": "urbanarena-tasks", "schema_version": 1, "city": ref,
                                     "tasks": tasks}), encoding="utf-8")
    return city_dir, task_file


def _request(city_dir: Path, task_file: Path, out: Path, model: str, level: int):
    from urbanarena.runner.driver import RunRequest

    fields = {f.name for f in dataclasses.fields(RunRequest)}
    kw: dict[str, Any] = dict(city=str(city_dir), tasks=str(task_file), agent="vlm-arena", out=out, model=model,
                              cache="off")
    if "concurrency" in fields:  # the runner's in-process concurrency option (issue 8), where it exists
        kw["concurrency"] = level
    else:
        kw["workers"] = level
        kw["backend"] = "threads" if level > 1 else "in-process"
    return RunRequest(**kw), ("concurrency" if "concurrency" in fields else "workers (threads)")


def _child(argv: list[str]) -> dict[str, Any]:
    import logging

    logging.disable(logging.WARNING)
    ap = argparse.ArgumentParser()
    ap.add_argument("--levels", default=",".join(map(str, LEVELS)))
    ap.add_argument("--episodes", type=int, default=64)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--latency-ms", type=float, default=200.0)
    a = ap.parse_args(argv)
    levels = [int(v) for v in a.levels.split(",")]
    from urbanarena.runner.driver import execute, prepare
    from urbanarena.runner.store import Store

    # the model client's modules (the openai SDK: ~1.5 s of CPU) load once per process, on the first
    # request; loaded here, before any level is timed, so concurrency 1 is not charged for them
    import urbanarena.agents.clients.openai_client  # noqa: F401

    root = temp_root()
    out: dict[str, Any] = {"episodes": a.episodes, "steps": a.steps, "latency_ms": a.latency_ms, "levels": {}}
    try:
        t = time.perf_counter()
        city_dir, task_file = write_inputs(root, a.episodes)
        out["inputs_s"] = rounded(time.perf_counter() - t)
        with ServerProcess(a.latency_ms, a.steps) as srv:
            model = f"openai-compatible:{srv.base_url}:fake-bench"
            for level in levels:
                req, knob = _request(city_dir, task_file, root / f"run-{level}", model, level)
                prepared = prepare(req, check_keys=False)
                before = srv.stats()
                srv_cpu0 = srv.cpu_s()
                with RssSampler() as rss:
                    cpu0, t0 = time.process_time(), time.perf_counter()
                    outcome = execute(prepared)
                    wall = time.perf_counter() - t0
                    cpu = time.process_time() - cpu0
                after = srv.stats()
                srv_cpu1 = srv.cpu_s()
                store = Store(Path(req.out) / "episodes.sqlite", readonly=True)
                try:
                    rows = [(r["stop_reason"], r["steps"], r["error"]) for r in store.rows(parse_json=False)]
                finally:
                    store.close()
                images = {k: v - before["images"].get(k, 0) for k, v in after["images"].items()
                          if v - before["images"].get(k, 0)}
                out["knob"] = knob
                out["levels"][str(level)] = {
                    "wall_s": rounded(wall), "cpu_s": rounded(cpu), "peak_rss_mb": rounded(rss.peak_mb, 1),
                    "episodes_run": outcome.run, "errors": outcome.errors,
                    "requests": after["requests"] - before["requests"], "images": images,
                    "bad_images": after["bad_images"] - before["bad_images"],
                    "server_max_in_flight": after["max_in_flight"],
                    "server_cpu_s": rounded(srv_cpu1 - srv_cpu0) if srv_cpu0 is not None and srv_cpu1 is not None
                    else None,
                    "stop_reasons": sorted({r[0] for r in rows}), "steps_per_episode": sorted({r[1] for r in rows}),
                    "first_error": next((_last_line(r[2]) for r in rows if r[0] == "error"), None),
                }
                shutil.rmtree(Path(req.out), ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


def _last_line(text: Any) -> str:
    lines = [ln for ln in str(text or "").strip().splitlines() if ln.strip()]
    return lines[-1].strip()[:300] if lines else "no error text"


def _errored(level: str, lv: dict[str, Any] | None) -> str | None:
    """Why a level's figures are not measurements (some of its episodes ended in an error), else ``None``."""
    if not lv or not lv.get("errors"):
        return None
    return (f"{lv['errors']} of {lv.get('episodes_run')} episodes at concurrency {level} ended in an error "
            f"(first: {lv.get('first_error') or '?'}); a figure over errored episodes is not a measurement")


def summarize(raw: dict[str, Any]) -> dict[str, Any]:
    """Top-level figures from a child's result: ``sweep_wall_s_N``, ``sweep_speedup_N`` (``wall(1) /
    wall(N)``), ``sweep_ideal_speedup_N`` (``min(N, episodes)``), ``sweep_cpu_ms_per_step_N`` (the sweep
    process's CPU milliseconds per step at concurrency N: ``cpu_s / (episodes x steps)``),
    ``sweep_cpu_ms_per_step`` (the same at concurrency 1),
    ``sweep_episode_mb`` (RSS slope per concurrent episode), ``sweep_rss_mb_1``, ``sweep_rss_mb_max``.

    A figure over a level with errored episodes (every one at concurrency 1, for the ratios) is ``None``,
    its reason in ``_notes`` (printed by ``bench`` as ``null`` with the note)."""
    levels = raw["levels"]
    episodes, steps = int(raw["episodes"]), int(raw["steps"])
    out: dict[str, Any] = {"sweep_episodes": episodes, "sweep_steps": steps, "sweep_latency_ms": raw["latency_ms"],
                           "sweep_knob": raw.get("knob")}
    notes: dict[str, str] = {}
    base = levels.get("1")
    base_bad = _errored("1", base)
    for key, lv in levels.items():
        n = int(key)
        bad = _errored(key, lv)
        out[f"sweep_wall_s_{n}"] = None if bad else lv["wall_s"]
        out[f"sweep_speedup_{n}"] = (rounded(base["wall_s"] / lv["wall_s"], 2)
                                     if base and lv["wall_s"] and not bad and not base_bad else None)
        out[f"sweep_ideal_speedup_{n}"] = min(n, episodes)
        # our CPU per step at this level: the sweep process's CPU seconds over its episodes x steps
        out[f"sweep_cpu_ms_per_step_{n}"] = (None if bad or lv.get("cpu_s") is None
                                             else rounded(1000.0 * lv["cpu_s"] / (episodes * steps), 2))
        if bad:
            notes[f"sweep_cpu_ms_per_step_{n}"] = bad
            notes[f"sweep_wall_s_{n}"] = bad
        if bad or base_bad:
            notes[f"sweep_speedup_{n}"] = bad or base_bad  # type: ignore[assignment]
    if base_bad:
        for k in ("sweep_cpu_ms_per_step", "sweep_rss_mb_1", "sweep_rss_mb_max", "sweep_episode_mb"):
            out[k] = None
            notes[k] = base_bad
        out["sweep_levels"] = levels
        out["_notes"] = notes
        return out
    if base:
        total = episodes * steps
        out["sweep_cpu_ms_per_step"] = rounded(1000.0 * base["cpu_s"] / total, 2)
        if base.get("server_cpu_s") is not None:
            out["sweep_server_cpu_ms_per_step"] = rounded(1000.0 * base["server_cpu_s"] / total, 2)
        out["sweep_rss_mb_1"] = base["peak_rss_mb"]
        top = max(levels, key=int)
        n_top = min(int(top), episodes)
        out["sweep_rss_mb_max"] = levels[top]["peak_rss_mb"]
        if n_top > 1:
            out["sweep_episode_mb"] = rounded((levels[top]["peak_rss_mb"] - base["peak_rss_mb"]) / (n_top - 1), 2)
        if _errored(top, levels[top]):
            out["sweep_rss_mb_max"] = out["sweep_episode_mb"] = None
            notes["sweep_rss_mb_max"] = notes["sweep_episode_mb"] = _errored(top, levels[top])  # type: ignore
    out["sweep_levels"] = levels
    if notes:
        out["_notes"] = notes
    return out


def measure(quick: bool = False, timeout_s: float = 540.0) -> dict[str, Any]:
    """Run the sweep in a child process; return :func:`summarize`'s figures.

    ``quick``: 16 episodes of 2 steps at 50 ms latency (a smoke run of the same code path).
    Raises: :class:`~urbanarena.bench.common.ChildError` when the child fails.
    """
    args = ["--episodes", "16", "--steps", "2", "--latency-ms", "50"] if quick else []
    return summarize(run_child("urbanarena.bench.sweep", args, timeout_s))


if __name__ == "__main__":
    child_main(_child)
