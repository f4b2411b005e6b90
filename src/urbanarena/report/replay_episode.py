"""One stored arena episode for replay (:class:`EpisodeReplay`: its states, views, maps and step records), and which
rows are continuous-mode episodes (:func:`is_continuous_row`; :mod:`.replay_continuous` replays those)."""

from __future__ import annotations

import json
import threading
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
from urbanarena.runner.arena import ArenaViewSettings
from urbanarena.tasks.families import get_family
from urbanarena.tasks.schema import Task
from urbanarena.world.city import City

#: trajectory line colour on the map (RGB)
PATH_RGB = (31, 95, 191)


def is_continuous_row(row: dict[str, Any]) -> bool:
    """Whether a store row is a continuous-mode episode (its family's ``action_style``; rows of an unknown family
    with stored ``details.samples`` count too)."""
    try:
        if get_family(str(row.get("family"))).action_style == "continuous":
            return True
    except (KeyError, ValueError, LookupError):
        pass
    d = row.get("details")
    return isinstance(d, dict) and isinstance(d.get("samples"), list) and not isinstance(d.get("poses"), list)


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


__all__ = ["EpisodeReplay", "PATH_RGB", "StepRecord", "is_continuous_row", "pose_state"]
