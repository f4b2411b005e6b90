"""Stored arena episodes, step by step: what ``urbanarena replay`` shows and ``urbanarena video`` draws.

:class:`RunReplay` opens a RUN_DIR read-only (its run store, ``run.json`` and
traces) and gives an :class:`EpisodeReplay` per stored arena episode (store row
id). An episode has ``steps + 1`` *states*: state 0 is the start, state ``k``
the pose after step ``k`` (``details.poses[k-1]``, as the runner stored it).
For every state it re-renders what the agent was shown:

* the camera view, from the stored pose (node or edge + offset, travel
  direction, camera yaw and pitch) through the same observer the runner builds
  (:func:`~urbanarena.env.observers.panorama_observer_for` at the run's
  ``arena_view`` size), with the red branch arrows of that pose
  (:meth:`ArenaEnv.pose <urbanarena.env.arena_env.ArenaEnv.pose>` of the
  protocol's motion rules) — pixel-identical to the episode's views;
* a map of the whole city with the trajectory so far (blue line), the start
  (blue disc), the goal when the task gives one (red disc) and the agent marker
  pointing along the camera yaw (:class:`~urbanarena.render.maps.MapRenderer`,
  attribution included).

State 0 is the task's start (``ArenaEnv.reset`` with the family's reset
options) when the task is found: ``run.json`` ``tasks.files`` are read, and a
task is used only when its hash equals the row's ``task_hash``. Without it,
state 0 stands at the first trajectory node facing that node's default heading
(``start_exact`` false), and reference images and the goal marker are missing.

Per step: the action label, the model's thought (``agent_stats.trace``, stored
with every VLM episode), the memory the agent sent with the action (the next
step's observation in ``RUN_DIR/traces`` when the run had ``--trace``), and the
outcome recorded in the trace. Per episode: stop reason, detail, answer,
expected answer, score (``evaluation_score``) and the validator's message.

Continuous-mode episodes (``urbanground``) are replayed by
:class:`~urbanarena.report.replay_continuous.ContinuousEpisodeReplay` (same interface; views from the
stored trajectory samples), chosen by :meth:`RunReplay.episode`.

Raises :class:`~urbanarena.errors.StoreError` for a RUN_DIR without a store,
an unknown episode id, or a graph episode.
"""

from __future__ import annotations

import threading
import dataclasses
from pathlib import Path
from typing import Any


from urbanarena.errors import StoreError, UrbanArenaError
from urbanarena.report.runs import load_city_for
from urbanarena.runner.arena import ArenaViewSettings
from urbanarena.runner.metadata import read_run_json
from urbanarena.runner.store import STORE_FILE, Store
from urbanarena.runner.trace import TRACES_DIR, trace_slug
from urbanarena.tasks.resolve import task_hash
from urbanarena.tasks.schema import Task, load_task_file
# re-exported: the episode replay was defined here before it had a module of its own
from urbanarena.report.replay_episode import (  # noqa: F401
    PATH_RGB, EpisodeReplay, StepRecord, is_continuous_row, pose_state,
)

class RunReplay:
    """A RUN_DIR opened for replay (module docstring).

    Args:
        run_dir: the RUN_DIR.
        city: a CITY argument tried before ``run.json``'s.
    Raises:
        StoreError: no store, no episodes, or the run's city cannot be loaded.
    """

    def __init__(self, run_dir: str | Path, city: str | None = None, render_style: str | None = None):
        from urbanarena.render.scene3d.styles import check_style

        self.render_style = check_style(render_style) if render_style is not None else None  # None: the run's
        self.run_dir = Path(run_dir)
        if not self.run_dir.is_dir():
            raise StoreError(f"{self.run_dir}: no such RUN_DIR")
        with Store(self.run_dir / STORE_FILE, readonly=True) as store:
            self.rows = {int(r["id"]): r for r in store.rows()}
            self.configs = {c["config_hash"]: c.get("config") or {} for c in store.configs()}
        if not self.rows:
            raise StoreError(f"{self.run_dir}: the run store holds no episodes")
        self.meta = read_run_json(self.run_dir)
        self.city, city_dir, note = load_city_for(self.run_dir, self.meta, city)
        if self.city is None:
            raise StoreError(f"{self.run_dir}: {note}; give --city CITY")
        self.city_dir = Path(city_dir) if city_dir is not None else None
        self._tasks: dict[str, tuple[Task, Path]] | None = None
        self._episodes: dict[int, EpisodeReplay] = {}
        self._lock = threading.Lock()

    def _task_index(self) -> dict[str, tuple[Task, Path]]:
        if self._tasks is None:
            found: dict[str, tuple[Task, Path]] = {}
            files = ((self.meta or {}).get("tasks") or {}).get("files") or []
            for f in files:
                p = Path(str(f))
                if not p.is_absolute() and not p.is_file():
                    p = self.run_dir.resolve().parent / p
                try:
                    tf = load_task_file(p)
                except (UrbanArenaError, OSError, ValueError):
                    continue
                for t in tf.tasks:
                    found.setdefault(t.task_id, (t, p.absolute().parent))
            self._tasks = found
        return self._tasks

    def episodes(self) -> list[dict[str, Any]]:
        """One line per stored episode: ``id``, ``task_id``, ``agent``, ``seed``, ``stop_reason``, ``steps``,
        ``score`` (``evaluation_score``; continuous episodes: ``sr``), ``arena``, ``continuous`` (continuous
        mode, :mod:`urbanarena.report.replay_continuous`) and ``replayable`` (either), in row-id order."""
        out = []
        for i, r in sorted(self.rows.items()):
            m = r.get("metrics") or {}
            arena = isinstance((r.get("details") or {}).get("poses"), list)
            continuous = not arena and is_continuous_row(r)
            out.append({"id": i, "task_id": r["task_id"], "agent": r["agent"], "seed": r["seed"],
                        "stop_reason": r.get("stop_reason"), "steps": r.get("steps"),
                        "score": m.get("sr") if continuous else m.get("evaluation_score"), "family": r.get("family"),
                        "arena": arena, "continuous": continuous, "replayable": arena or continuous})
        return out

    def resolve_id(self, episode: str | int) -> int:
        """A row id from an ``--episode`` value: a row id, or a task id stored exactly once.

        Raises:
            StoreError: no such episode, or a task id stored several times (the message lists their row ids).
        """
        s = str(episode).strip()
        if s.isdigit() and int(s) in self.rows:
            return int(s)
        hits = [i for i, r in self.rows.items() if r["task_id"] == s]
        if len(hits) == 1:
            return hits[0]
        if hits:
            raise StoreError(f"{self.run_dir}: task {s!r} has {len(hits)} stored episodes (ids "
                             f"{', '.join(map(str, sorted(hits)))}); give the id")
        raise StoreError(f"{self.run_dir}: no episode {s!r} (give a row id from `urbanarena replay` or a task id)")

    def episode(self, episode: str | int) -> EpisodeReplay:
        """The :class:`EpisodeReplay` of a row id or unique task id (cached); a continuous-mode episode gets a
        :class:`~urbanarena.report.replay_continuous.ContinuousEpisodeReplay` (same interface).

        Raises:
            StoreError: see :meth:`resolve_id`; a graph episode.
        """
        eid = self.resolve_id(episode)
        with self._lock:
            ep = self._episodes.get(eid)
            if ep is not None:
                return ep
            row = self.rows[eid]
            hit = self._task_index().get(str(row["task_id"]))
            task, task_dir = (hit if hit is not None and task_hash(hit[0]) == row.get("task_hash") else (None, None))
            cfg = self.configs.get(row["config_hash"]) or {}
            trace = self.run_dir / TRACES_DIR / trace_slug(str(row["task_id"]), int(row["seed"]), str(row["config_hash"]))
            if not isinstance((row.get("details") or {}).get("poses"), list) and is_continuous_row(row):
                from urbanarena.report.replay_continuous import ContinuousEpisodeReplay

                cv = (cfg.get("extra") or {}).get("continuous_view") or {}
                ep = ContinuousEpisodeReplay(row, self.city, task=task, trace_dir=trace,
                                             view_size=(int(cv.get("width", 640)), int(cv.get("height", 360))),
                                             hfov_deg=float(cv.get("hfov_deg", 90.0)),
                                             render_style=self.render_style or str((cfg.get("extra") or {}).get(
                                                 "render_style", "flat")))
            else:
                view = ArenaViewSettings.from_stored((cfg.get("extra") or {}).get("arena_view"))
                if self.render_style is not None:
                    # another style than the run's: that style's own population too
                    view = dataclasses.replace(view, render_style=self.render_style, population=None)
                ep = EpisodeReplay(row, self.city, view=view, task=task, task_dir=task_dir, city_dir=self.city_dir,
                                   trace_dir=trace)
            self._episodes[eid] = ep
            return ep


__all__ = ["EpisodeReplay", "PATH_RGB", "RunReplay", "StepRecord", "pose_state"]
