"""``urbanarena bench``: speed and memory figures measured in one run, with ratios and goals.

One module per measurement (each documents what it runs and how it measures):

=============  ==================================================  ==========================================
name           module                                              top-level keys
=============  ==================================================  ==========================================
``cut``        :mod:`urbanarena.bench.cut`                         ``cut_speedup_vs_py360convert``
``env``        :mod:`urbanarena.bench.env_step`                    ``env_step_ms_median``
``graph``      :mod:`urbanarena.bench.graphs` (Touchdown scale)    ``graph_load_s``, ``graph_load_mb``
``graph1m``    :mod:`urbanarena.bench.graphs` (1,000,960 nodes)    ``graph_1m_load_s``, ``graph_1m_field_s``,
                                                                   ``graph_1m_mb``
``render``     :mod:`urbanarena.bench.render`                      ``render_panos_per_s``, ``render_fps_640``,
                                                                   ``render_fps_128``, ``render_fps_vs_metadrive``
``sweep``      :mod:`urbanarena.bench.sweep`                       ``sweep_speedup_16``, ``sweep_speedup_64``,
                                                                   ``sweep_speedup_256``, ``worker_rss_mb``
=============  ==================================================  ==========================================

:func:`run` returns one JSON-able dict: every key of :data:`REQUIRED_KEYS` (a
number, or ``None`` with the reason in ``notes[key]``), the companion figures of
each measurement, ``goals`` (per goal: the value, the goal, whether it is met
and, when missed, by how much and why), ``notes``, ``seconds`` (wall time of
each measurement), ``machine`` (cores, load averages before and after: the
figures are only as good as the machine is idle), ``quick``.

``quick`` runs every measurement through the same code on small inputs (a
smoke run, seconds instead of minutes); its figures are not comparable with the
goals, which are then not judged (``met`` is ``None``).
"""

from __future__ import annotations

import time
import traceback
from typing import Any, Callable

from urbanarena.bench.common import machine

#: keys every ``urbanarena bench all --json`` output has at top level (issue 8)
REQUIRED_KEYS = (
    "cut_speedup_vs_py360convert", "env_step_ms_median",
    "sweep_speedup_16", "sweep_speedup_64", "sweep_speedup_256",
    "graph_load_s", "graph_load_mb", "graph_1m_load_s", "graph_1m_field_s", "graph_1m_mb",
    "render_panos_per_s", "render_fps_640", "render_fps_128", "render_fps_vs_metadrive",
    "worker_rss_mb",
)

#: measurement name -> the required keys it provides
PROVIDES: dict[str, tuple[str, ...]] = {
    "cut": ("cut_speedup_vs_py360convert",),
    "env": ("env_step_ms_median",),
    "graph": ("graph_load_s", "graph_load_mb"),
    "graph1m": ("graph_1m_load_s", "graph_1m_field_s", "graph_1m_mb"),
    "render": ("render_panos_per_s", "render_fps_640", "render_fps_128", "render_fps_vs_metadrive"),
    "sweep": ("sweep_speedup_16", "sweep_speedup_64", "sweep_speedup_256", "worker_rss_mb"),
}
#: run order of ``bench all`` (light measurements first; the sweep, the longest, last)
NAMES = ("cut", "env", "graph", "render", "graph1m", "sweep")

#: pose nodes of the Helsinki core (``helsinki-core``, the default city when the panorama goal was set): the goal
#: keeps its figure (the whole extract, the default city since issue 19, has 5,301)
DEFAULT_CITY_NODES = 1052


def _measure(name: str, quick: bool, options: dict[str, Any]) -> dict[str, Any]:
    if name == "cut":
        from urbanarena.bench import cut

        return cut.measure(quick)
    if name == "env":
        from urbanarena.bench import env_step

        return env_step.measure(quick)
    if name == "graph":
        from urbanarena.bench import graphs

        return graphs.measure_touchdown(quick, shared=options.get("shared"))
    if name == "graph1m":
        from urbanarena.bench import graphs

        return graphs.measure_1m(quick)
    if name == "render":
        from urbanarena.bench import render

        return render.measure(quick, metadrive_python_exe=options.get("metadrive_python"))
    if name == "sweep":
        from urbanarena.bench import sweep

        out = sweep.measure(quick)
        # memory per worker: the sweep process at concurrency 1 (city, panorama cache, agent, client,
        # store: one complete worker), and the extra memory per further concurrent episode
        out["worker_rss_mb"] = out.get("sweep_rss_mb_1")
        out["worker_episode_mb"] = out.get("sweep_episode_mb")
        notes = out.get("_notes") or {}
        for k, src in (("worker_rss_mb", "sweep_rss_mb_1"), ("worker_episode_mb", "sweep_episode_mb")):
            if src in notes:
                notes[k] = notes[src]
        return out
    raise KeyError(name)


def _goal(value: float | None, goal: float, higher: bool, unit: str, why: str = "") -> dict[str, Any]:
    if value is None:
        return {"value": None, "goal": f"{'>=' if higher else '<='} {goal:g}{unit}", "met": None}
    met = value >= goal if higher else value <= goal
    g: dict[str, Any] = {"value": value, "goal": f"{'>=' if higher else '<='} {goal:g}{unit}", "met": bool(met)}
    if not met:
        if higher:
            g["missed_by"] = f"{goal - value:.3g}{unit} ({100 * (goal - value) / goal:.0f} % short)"
        else:
            g["missed_by"] = f"{value - goal:.3g}{unit} over ({100 * (value - goal) / goal:.0f} % over)"
        if why:
            g["why"] = why
    return g


def _sweep_why(r: dict[str, Any], n: int, cores: int) -> str:
    """Why the sweep at concurrency ``n`` falls short of ``0.9 n``, from its own figures.

    Bounds: latency alone allows ``min(n, E)``; the client's CPU work per step (``c`` ms, total ``T = S c``
    over the ``S`` steps) needs at least ``T`` of one core if all of it holds the GIL and ``T / cores`` if it
    spreads over every core, so the speed-up over ``wall(1)`` is at most ``wall(1) / (T / cores)`` and, for
    GIL-bound work, about ``wall(1) / T``.
    """
    e, steps, lat = r.get("sweep_episodes"), r.get("sweep_steps"), r.get("sweep_latency_ms")
    cpu, srv = r.get("sweep_cpu_ms_per_step"), r.get("sweep_server_cpu_ms_per_step") or 0.0
    w1 = r.get("sweep_wall_s_1")
    if None in (e, steps, lat, cpu, w1):
        return ""
    total = e * steps
    one_core = total * cpu / 1000.0
    all_cores = total * (cpu + srv) / 1000.0 / max(cores, 1)
    parts = []
    if n > e:
        parts.append(f"only {e} episodes, so at most {e} run at once (best speed-up {e})")
    parts.append(
        f"the sweep process spends {cpu:.1f} ms of CPU per step (agent and openai SDK request building, view cut, "
        f"JPEG encode, HTTP, env, store; the fake server {srv:.1f} ms more): its {total} steps need "
        f"{one_core:.1f} s of one core, most of it Python holding the GIL (cv2 and JPEG encoding release it), "
        f"or >= {all_cores:.1f} s spread over {cores} cores, so its speed-up over wall(1) = {w1:.1f} s is at most "
        f"about {w1 / one_core:.1f} (GIL-bound) to {w1 / all_cores:.1f} (both cores), whatever the concurrency")
    return "; ".join(parts)


def judge(results: dict[str, Any], quick: bool, cores: int, loadavg: list[float] | None = None) -> dict[str, Any]:
    """The ``goals`` section (module docstring); ``loadavg`` (1/5/15 min) adds the machine's load to the
    reasons of missed goals when the 1-minute figure exceeds ``cores``. Goals: issue 8 (sweep 0.9 N), issue 3 (cut >= 5x faster
    than py360convert, env step <= 5 ms), issue 2 (Touchdown-scale load <= 3 s, <= 300 MB), the
    renderer's (every panorama of the default city in <= 3 min on 2 cores)."""
    r = results
    goals: dict[str, Any] = {
        "cut_speedup_vs_py360convert": _goal(r.get("cut_speedup_vs_py360convert"), 5.0, True, "x"),
        "env_step_ms_median": _goal(r.get("env_step_ms_median"), 5.0, False, " ms",
                                    "wall time on a loaded machine; compare env_step_cpu_ms_median (CPU time of "
                                    "the step itself)"),
        "graph_load_s": _goal(r.get("graph_load_s"), 3.0, False, " s"),
        "graph_load_mb": _goal(r.get("graph_load_mb"), 300.0, False, " MB"),
        "render_panos_per_s": _goal(r.get("render_panos_per_s"), round(DEFAULT_CITY_NODES / 180.0, 2), True,
                                    "/s", f"{DEFAULT_CITY_NODES} panoramas of the default city in 180 s; measured "
                                    "in one process (llvmpipe threads on every core), PNG writes excluded"),
    }
    for n in (16, 64, 256):
        goals[f"sweep_speedup_{n}"] = _goal(r.get(f"sweep_speedup_{n}"), 0.9 * n, True, "x", _sweep_why(r, n, cores))
    if loadavg and loadavg[0] > cores:
        for g in goals.values():
            if g.get("met") is False:
                busy = (f"the machine's load average was {loadavg[0]:g} on {cores} cores (other processes "
                        "competing), so wall-time figures are pessimistic")
                g["why"] = f"{g['why']}; {busy}" if g.get("why") else busy
    if quick:
        for g in goals.values():
            g["met"] = None
            g.pop("missed_by", None)
            g.pop("why", None)
            g["note"] = "--quick: small inputs, not comparable with the goal"
    return goals


def run(names: tuple[str, ...] | list[str] = NAMES, quick: bool = False, options: dict[str, Any] | None = None,
        progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the named measurements in order; return the result dict (module docstring).

    A measurement that fails does not stop the others: its required keys are ``None`` and
    ``notes[key]`` says what failed.

    Raises: ``KeyError`` for an unknown name.
    """
    options = dict(options or {})
    for n in names:
        if n not in PROVIDES:
            raise KeyError(f"unknown benchmark {n!r}; known: all, {', '.join(NAMES)}")
    start = machine()
    out: dict[str, Any] = {}
    notes: dict[str, str] = {}
    seconds: dict[str, float] = {}
    t_all = time.perf_counter()
    for name in names:
        if progress:
            progress(name)
        t = time.perf_counter()
        try:
            res = _measure(name, quick, options)
        except Exception as e:  # noqa: BLE001 - one failed measurement must not lose the others
            tail = traceback.format_exception_only(type(e), e)[-1].strip()
            res = {k: None for k in PROVIDES[name]}
            res["_notes"] = {k: f"{name} failed: {tail}" for k in PROVIDES[name]}
        seconds[name] = round(time.perf_counter() - t, 2)
        notes.update(res.pop("_notes", {}) or {})
        out.update(res)
    for name in names:
        for k in PROVIDES[name]:
            out.setdefault(k, None)
            if out[k] is None and k not in notes:
                notes[k] = f"{name}: no value"
    seconds["total"] = round(time.perf_counter() - t_all, 2)
    end = machine()
    result = {k: out.get(k) for k in REQUIRED_KEYS if any(k in PROVIDES[n] for n in names)}
    result.update({k: v for k, v in out.items() if k not in result})
    worst = max((x for x in (start.get("loadavg"), end.get("loadavg")) if x), key=lambda x: x[0], default=None)
    result["goals"] = {k: v for k, v in judge(out, quick, start.get("cores") or 1, worst).items() if k in out}
    result["notes"] = notes
    result["seconds"] = seconds
    result["machine"] = {"cores": start["cores"], "python": start["python"], "loadavg_start": start["loadavg"],
                         "loadavg_end": end["loadavg"]}
    result["quick"] = bool(quick)
    return result
