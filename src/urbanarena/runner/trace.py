"""Per-step recording of an episode: the poses an arena agent passed through
and, with ``urbanarena run --trace``, debug traces on disk.

:class:`EpisodeRecorder` wraps the agent of one episode. It forwards
``reset``/``act``/``record_outcome``/``close``/``config``/``stats`` to the
wrapped agent unchanged (the episode is the same with or without it) and
remembers what the loop reports after every arena step (the pose, for the
final segment and the per-step nodes of the stored row).

Traces (``--trace``): one folder per episode under ``RUN_DIR/traces/``,
named ``<task id>__s<seed>__<config hash prefix>`` (characters outside
``[A-Za-z0-9._-]`` replaced by ``_``), holding

* ``steps.jsonl`` — one JSON object per step: ``step``, ``observation``
  (what the agent was shown, without pixels: node / pose / choices / arrows /
  text / memory / recent actions), ``action`` (arena label or graph index),
  ``outcome`` (arena: executed, invalid, blocked, metres moved, the pose after
  the step, goal distances, stop reason), ``agent`` (the agent's own record of
  the step: requests, re-asks, parse failures, the thought; whatever its
  ``stats["trace"]`` holds) and ``images`` (paths relative to the folder);
* ``images/step_<k>_view.png``, ``images/step_<k>_map.png`` and
  ``images/reference_<i>.png`` — the images the agent received.

A graph job of several rounds (``--rounds n``) has one such folder per round,
``<slug>/round-<k>/`` (:mod:`urbanarena.runner.dispatch`).

Traces hold no API key and no request body (images are written as the env
rendered them, before encoding). A rerun of the episode (resume) rewrites
its folder. Traces are debug artifacts, not results: the store stays the
single record of an episode.
"""

from __future__ import annotations

import json
import re
import shutil
import threading
from pathlib import Path
from typing import Any, Mapping

import numpy as np
from PIL import Image as PILImage

from urbanarena.agents.base import Agent, AgentContext
from urbanarena.tasks.schema import Task

TRACES_DIR = "traces"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
#: observation keys never copied into a trace line (pixels)
_PIXEL_KEYS = ("view", "map", "reference_images", "image", "images", "panorama")


class EpisodeCancelled(BaseException):
    """Raised inside an episode when the backend cancels it (Ctrl-C): a ``BaseException`` so that
    the episode loops, which record agent ``Exception``\\ s as agent errors, let it through."""


def trace_slug(task_id: str, seed: int, config_hash: str) -> str:
    """Folder name of one episode's trace (see the module docstring)."""
    return f"{_UNSAFE.sub('_', task_id).strip('_') or 'task'}__s{int(seed)}__{config_hash[:12]}"


def _plain(obj: Any) -> Any:
    """JSON-able copy of an observation value, arrays dropped (their shape kept)."""
    if obj is None or isinstance(obj, (bool, str, int, float)):
        return obj if not (isinstance(obj, float) and obj != obj) else None
    if isinstance(obj, np.ndarray):
        return {"array_shape": list(obj.shape)}
    if isinstance(obj, np.generic):
        return _plain(obj.item())
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items() if k not in _PIXEL_KEYS}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return str(obj)


class TraceWriter:
    """Writes one episode's trace folder (see the module docstring).

    Args:
        folder: ``RUN_DIR/traces/<slug>`` (replaced when it exists).
    """

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        if self.folder.exists():
            shutil.rmtree(self.folder)
        (self.folder / "images").mkdir(parents=True)
        self._f = open(self.folder / "steps.jsonl", "w", encoding="utf-8")
        self._refs_written = False

    def _image(self, arr: Any, name: str) -> str | None:
        if not isinstance(arr, np.ndarray) or arr.ndim != 3 or arr.shape[2] != 3:
            return None
        rel = f"images/{name}.png"
        PILImage.fromarray(np.ascontiguousarray(arr.astype(np.uint8, copy=False))).save(self.folder / rel)
        return rel

    def step(self, step: int, observation: Mapping[str, Any], action: Any, outcome: Mapping[str, Any] | None,
             agent_record: Any) -> None:
        """Append the line of step ``step`` (1-based) and write its images."""
        images = []
        for key in ("view", "map"):
            rel = self._image(observation.get(key), f"step_{step:04d}_{key}")
            if rel:
                images.append(rel)
        if not self._refs_written:
            for i, ref in enumerate(observation.get("reference_images") or []):
                rel = self._image(ref, f"reference_{i}")
                if rel:
                    images.append(rel)
            self._refs_written = True
        line = {"step": step, "observation": _plain(observation), "action": _plain(action),
                "outcome": _plain(outcome) if outcome is not None else None, "agent": _plain(agent_record),
                "images": images}
        self._f.write(json.dumps(line, ensure_ascii=False, allow_nan=False, default=str) + "\n")
        self._f.flush()

    def close(self) -> None:
        if not self._f.closed:
            self._f.close()


def _action_repr(action: Any) -> Any:
    label = getattr(action, "label", None)
    return label() if callable(label) else action


class EpisodeRecorder(Agent):
    """Transparent wrapper of one episode's agent (module docstring).

    Args:
        inner: the agent.
        trace: a :class:`TraceWriter` or ``None``.
        arena: the episode runs in the arena (a step's line is written when the
            loop reports the outcome through :meth:`record_outcome`); otherwise
            each line is written right after ``act``.
        cancel: an event that, once set, aborts the episode at its next step
            (:class:`EpisodeCancelled`).
    """

    def __init__(self, inner: Agent, trace: TraceWriter | None = None, *, arena: bool = False,
                 cancel: threading.Event | None = None):
        self.inner = inner
        self.trace = trace
        self.arena = arena
        self.cancel = cancel
        self.name = getattr(inner, "name", type(inner).__name__)
        self.privileged = bool(getattr(inner, "privileged", False))
        self.params = getattr(inner, "params", {})
        self.poses: list[dict[str, Any]] = []
        self._pending: tuple[int, Mapping[str, Any], Any] | None = None
        self._steps = 0

    @property
    def stats(self) -> dict[str, Any]:  # type: ignore[override]
        return getattr(self.inner, "stats", {})

    @stats.setter
    def stats(self, value: dict[str, Any]) -> None:
        self.inner.stats = value

    def config(self) -> dict[str, Any]:
        return self.inner.config()

    def reset(self, task: Task, context: AgentContext) -> None:
        self.poses = []
        self._pending = None
        self._steps = 0
        self.inner.reset(task, context)

    def _agent_record(self) -> Any:
        recs = self.stats.get("trace") if isinstance(self.stats, dict) else None
        return recs[-1] if isinstance(recs, list) and recs else None

    def act(self, observation: dict[str, Any]) -> Any:
        if self.cancel is not None and self.cancel.is_set():
            raise EpisodeCancelled("episode cancelled")
        action = self.inner.act(observation)
        self._steps += 1
        if self.trace is not None:
            if self.arena:
                self._pending = (self._steps, observation, action)
            else:
                self.trace.step(self._steps, observation, _action_repr(action), None, self._agent_record())
        return action

    def final_answer(self, observation: dict[str, Any]) -> Any:
        """Forward the runner's final-answer question to the inner agent (``None`` when it has none)."""
        ask = getattr(self.inner, "final_answer", None)
        return ask(observation) if callable(ask) else None

    def record_outcome(self, info: Mapping[str, Any]) -> None:
        """Called by the arena loop after each step: remember the pose, write the trace line, forward."""
        pose = info.get("pose")
        if isinstance(pose, Mapping):
            self.poses.append(dict(pose))
        if self.trace is not None and self._pending is not None:
            step, obs, action = self._pending
            outcome = {k: info.get(k) for k in ("executed", "invalid_action", "invalid_reason", "blocked", "moved_m",
                                                "displacement_m", "branch", "parse_error", "pose", "goal_distance_m",
                                                "stop_reason", "stop_reason_detail", "counters")}
            self.trace.step(step, obs, _action_repr(action), outcome, self._agent_record())
            self._pending = None
        forward = getattr(self.inner, "record_outcome", None)
        if callable(forward):
            forward(info)

    def close(self) -> None:
        if self.trace is not None:
            self.trace.close()
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()


__all__ = ["EpisodeCancelled", "EpisodeRecorder", "TRACES_DIR", "TraceWriter", "trace_slug"]
