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

import json
import threading
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from urbanarena.env.arena_env import ArenaEnv, ArenaPose
from urbanarena.env.motion.trajectory import TrajState
from urbanarena.env.observers import panorama_observer_for
from urbanarena.env.stop_rules import arena_config_for
from urbanarena.errors import StoreError, UrbanArenaError
from urbanarena.render.encode import decode_image
from urbanarena.render.maps import map_renderer_for
from urbanarena.render.views import ViewRenderer
from urbanarena.report.runs import load_city_for
from urbanarena.runner.arena import ArenaViewSettings
from urbanarena.runner.metadata import read_run_json
from urbanarena.runner.store import STORE_FILE, Store
from urbanarena.runner.trace import TRACES_DIR, trace_slug
from urbanarena.tasks.families import get_family
from urbanarena.tasks.resolve import task_hash
from urbanarena.tasks.schema import Task, load_task_file
from urbanarena.world.city import City

#: trajectory line colour on the map (RGB)
PATH_RGB = (31, 95, 191)


def is_continuous_row(row: dict[str, Any]) -> bool:
    """Whether a store row is a continuous-mode episode (:func:`urbanarena.report.replay_continuous.is_continuous_row`)."""
    from urbanarena.report.replay_continuous import is_continuous_row as f

    return f(row)


def pose_state(pose: dict[str, Any]) -> TrajState:
    """The motion state of a stored pose dict (``ArenaPose.to_dict``): ``edge [u, v]`` when committed to an
    edge, else ``node``; ``offset_m``, ``travel_deg``, ``yaw_deg``, ``pitch_deg``.

    Raises:
        ValueError: a pose with neither an edge nor a node.
    """
    edge = pose.get("edge")
    if edge:
        u, v = str(edge[0]), str(edge[1])
    elif pose.get("node") is not None:
        u, v = str(pose["node"]), None
    else:
        raise ValueError(f"stored pose without edge or node: {pose!r}")
    return TrajState(u, v, float(pose.get("offset_m") or 0.0), float(pose["travel_deg"]), float(pose["yaw_deg"]),
                     float(pose.get("pitch_deg") or 0.0))


@dataclass
class StepRecord:
    """What happened at step ``k`` (1-based; the move from state ``k-1`` to state ``k``).

    Attributes:
        step: ``k``. action: the action label (``"W LARGE"``, ``"ANSWER: ..."``).
        thought: the model's thought, ``None`` when the agent keeps none.
        memory: the memory sent with the action (``None`` without traces).
        outcome: the trace's outcome record (executed, blocked, moved_m, ...), ``None`` without traces.
    """

    step: int
    action: str
    thought: str | None = None
    memory: str | None = None
    outcome: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"step": self.step, "action": self.action, "thought": self.thought, "memory": self.memory,
                "outcome": self.outcome}


class EpisodeReplay:
    """One stored arena episode (module docstring).

    Args:
        row: the store row (parsed JSON columns).
        city: the run's city.
        view: the run's :class:`ArenaViewSettings` (the config's ``extra.arena_view``).
        task: the task (hash-checked), or ``None``.
        task_dir: folder of the task file (reference images resolve against it).
        city_dir: the saved city's directory (imagery root).
        trace_dir: the episode's trace folder when it exists.
    Raises:
        StoreError: a graph episode (no ``details.poses``).
    """

    def __init__(self, row: dict[str, Any], city: City, *, view: ArenaViewSettings | None = None,
                 task: Task | None = None, task_dir: Path | None = None, city_dir: Path | None = None,
                 trace_dir: Path | None = None):
        details = row.get("details") or {}
        if not isinstance(details, dict) or not isinstance(details.get("poses"), list):
            raise StoreError(f"episode {row.get('id')} ({row.get('task_id')}) is not an arena episode: "
                             "it has no stored poses to replay")
        self.row = row
        self.city = city
        self.view_settings = view or ArenaViewSettings()
        self.task = task
        self.task_dir = task_dir
        self.city_dir = city_dir
        self.trace_dir = trace_dir if trace_dir is not None and trace_dir.is_dir() else None
        self.env = ArenaEnv(city, arena_config_for(str(row["protocol"])))
        self.start_exact = task is not None
        if task is not None:
            opts = get_family(task.family).env_options(task)
        else:
            opts = {"start_node": str((row.get("trajectory") or [None])[0])}
        self.env.reset(seed=int(row.get("seed") or 0), options=opts)
        start = self.env.state
        assert start is not None
        self._states = [start] + [pose_state(p) for p in details["poses"]]
        self.poses: list[ArenaPose] = [self.env.pose(s) for s in self._states]
        self._observer: Any = None
        self._observer_built = False
        self._lock = threading.Lock()
        self._trace_lines = self._read_trace()

    # ------------------------------------------------------------ facts
    @property
    def n_states(self) -> int:
        """``steps + 1``: the start and one state per stored step."""
        return len(self.poses)

    @property
    def episode_id(self) -> int:
        return int(self.row["id"])

    @property
    def goal_xy(self) -> tuple[float, float] | None:
        """The final goal in city metres (from the task), ``None`` when unknown or goal-less."""
        if self.task is None:
            return None
        return get_family(self.task.family).goal_xy_m(self.task, self.city)

    def _read_trace(self) -> dict[int, dict[str, Any]]:
        if self.trace_dir is None:
            return {}
        p = self.trace_dir / "steps.jsonl"
        out: dict[int, dict[str, Any]] = {}
        try:
            for line in p.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    d = json.loads(line)
                    out[int(d.get("step"))] = d
        except (OSError, ValueError, TypeError):
            return {}
        return out

    def steps(self) -> list[StepRecord]:
        """One :class:`StepRecord` per stored step (module docstring)."""
        actions = list(self.row.get("actions") or [])
        trace = (self.row.get("agent_stats") or {}).get("trace")
        thoughts: dict[int, str] = {}
        if isinstance(trace, list):
            for i, rec in enumerate(trace, 1):
                if isinstance(rec, dict) and rec.get("thought") is not None:
                    thoughts[int(rec.get("step") or i)] = str(rec["thought"])
        out = []
        for k in range(1, self.n_states):
            line = self._trace_lines.get(k) or {}
            nxt = self._trace_lines.get(k + 1)
            memory = None
            if nxt is not None:
                memory = ((nxt.get("observation") or {}).get("text") or {}).get("memory")
            out.append(StepRecord(k, str(actions[k - 1]) if k - 1 < len(actions) else "", thoughts.get(k), memory,
                                  line.get("outcome")))
        return out

    def outcome(self) -> dict[str, Any]:
        """Stop reason, its detail, answer, expected answer, score and the validator's message."""
        r, m = self.row, self.row.get("metrics") or {}
        d = r.get("details") or {}
        return {"stop_reason": r.get("stop_reason"), "stop_reason_detail": d.get("stop_reason_detail"),
                "answer": d.get("answer"), "expected": m.get("expected"), "score": m.get("evaluation_score"),
                "scored_success": m.get("scored_success"), "message": m.get("message"), "error": r.get("error"),
                "steps": r.get("steps")}

    def summary(self) -> dict[str, Any]:
        """JSON-able facts of the episode (the replay page's data)."""
        return {
            "id": self.episode_id, "task_id": self.row.get("task_id"), "agent": self.row.get("agent"),
            "seed": self.row.get("seed"), "protocol": self.row.get("protocol"),
            "config_hash": self.row.get("config_hash"), "category": self.row.get("category"),
            "difficulty": self.row.get("difficulty"),
            "instruction": self.task.instruction if self.task is not None else None,
            "task_kind": (self.row.get("details") or {}).get("task_kind"),
            "start_exact": self.start_exact, "n_states": self.n_states,
            "references": len(self.reference_paths()),
            "poses": [p.to_dict() for p in self.poses],
            "steps": [s.as_dict() for s in self.steps()],
            "outcome": self.outcome(),
            "attribution": self.city.meta.attribution,
        }

    # ------------------------------------------------------------ images
    @property
    def observer(self):
        """The camera observer of the run's view settings (built on first use).

        Raises:
            UrbanArenaError: a graph-only city (no views to draw).
            RendererUnavailableError: a rendered city and no OpenGL context here.
        """
        with self._lock:
            if not self._observer_built:
                v = self.view_settings
                self._observer = panorama_observer_for(self.city, base_dir=self.city_dir, width=v.width,
                                                       height=v.height, hfov_deg=v.hfov_deg,
                                                       renderer=ViewRenderer(max_grids=16),
                                                       render_settings=v.render_settings)
                self._observer_built = True
            if self._observer is None:
                raise UrbanArenaError(f"city {self.city.name!r} is graph-only: there is no view to replay")
            return self._observer

    def _state_index(self, k: int) -> int:
        if not 0 <= int(k) < self.n_states:
            raise IndexError(f"state {k} out of range 0..{self.n_states - 1}")
        return int(k)

    def view(self, k: int) -> np.ndarray:
        """The camera view at state ``k``: RGB uint8 ``(height, width, 3)`` of the run's view settings.

        Raises:
            IndexError: ``k`` outside ``0 .. n_states-1``.
        """
        pose = self.poses[self._state_index(k)]
        return np.ascontiguousarray(self.observer(self.city, pose))

    def map(self, k: int, width: int = 480, height: int = 480) -> np.ndarray:
        """The city map at state ``k`` (module docstring): RGB uint8 ``(height, width, 3)``.

        Raises:
            IndexError: ``k`` outside ``0 .. n_states-1``.
        """
        k = self._state_index(k)
        mr = map_renderer_for(self.city, int(width), int(height))
        start = (self.poses[0].x_m, self.poses[0].y_m)
        goal = self.goal_xy
        img = mr.start_goal_map(start, goal) if goal is not None else mr.background().copy()
        if goal is None:
            u, v = mr.world_to_px(*start)
            cv2.circle(img, (int(round(float(u))), int(round(float(v)))), mr.style.marker_radius_px,
                       mr.style.start, -1, cv2.LINE_AA)
        if k > 0:
            xs = [p.x_m for p in self.poses[:k + 1]]
            ys = [p.y_m for p in self.poses[:k + 1]]
            us, vs = mr.world_to_px(xs, ys)
            pts = np.round(np.stack([us, vs], axis=1) * 16.0).astype(np.int32)
            cv2.polylines(img, [pts], False, PATH_RGB, 2, cv2.LINE_AA, shift=4)
        p = self.poses[k]
        mr.draw_agent(img, p.x_m, p.y_m, p.yaw_deg)
        return img

    def reference_paths(self) -> list[Path]:
        """The task's reference image files (resolved against the task file's folder), ``[]`` without the task."""
        if self.task is None:
            return []
        try:
            return get_family(self.task.family).reference_image_paths(self.task, self.task_dir)
        except ValueError:
            return []

    def reference_image(self, i: int) -> np.ndarray:
        """Reference image ``i`` of the task as RGB.

        Raises:
            IndexError: no such reference image. OSError: unreadable file.
        """
        paths = self.reference_paths()
        if not 0 <= int(i) < len(paths):
            raise IndexError(f"reference image {i} out of range (the task has {len(paths)})")
        return decode_image(paths[int(i)].read_bytes())


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
