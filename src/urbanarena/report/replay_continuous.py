"""Stored continuous-mode episodes (``urbanground``, UrbanGround's motion model), step by step.

The continuous counterpart of :class:`~urbanarena.report.replay_episode.EpisodeReplay`, with the same
interface (``n_states``, ``steps()``, ``outcome()``, ``summary()``, ``view(k)``, ``map(k)``), so the replay
server (:mod:`urbanarena.web.replay`) and ``urbanarena video`` (:mod:`urbanarena.report.video`) show both
motion models; :class:`~urbanarena.report.replay_data.RunReplay` picks it for rows of a family whose
``action_style`` is ``"continuous"``.

States: an episode has ``steps + 1`` states, state ``k`` being the pose at the end of step ``k``: the
checkpoint sample of step ``k`` in ``details.samples`` (``[t_s, x_m, y_m, yaw_deg, pitch_deg, step,
checkpoint]``, stored by :mod:`urbanarena.runner.continuous_episode`; state 0 is the start sample). For
every state it re-renders what the agent was shown:

* in first-person mode, the view at the stored pose (x, y, yaw, pitch) by
  :class:`~urbanarena.env.continuous.SceneViewObserver` at the run's view size (config ``extra``
  ``continuous_view``, default 640 x 360, 90 degrees), with the episode's pedestrians and announced closure
  barriers at the state's simulated time when the task is found (``DynamicWorld.scene_objects(t)``, a pure
  function of time) and its render condition (weather / time of day, ``dynamics.condition``) --
  pixel-identical to the episode's views;
* in map mode, the map the agent saw: the stored actions are executed again in a fresh
  :class:`~urbanarena.env.continuous.ContinuousEnv` (without an observer; deterministic in simulated time)
  and its map observations kept, PNG-encoded; this needs the task (found as ``replay_data`` finds arena
  tasks: ``run.json`` task files, same hash) and is done only when the episode opened the map. The executed
  trajectory must equal the stored samples (``replay_exact``); otherwise, or without the task, map-mode
  states show the first-person view at their pose (``map_shown`` false).

The overview map (:meth:`ContinuousEpisodeReplay.map`): the city map with the trajectory so far (every
sample up to the state, blue line), the start (blue disc), the goal(s) when the task is found (red disc;
search tasks: every goal point), the episode's closures (red lines, from ``details.closures``) and the
agent marker pointing along the camera yaw.

Per step: the action (UrbanGround's action as a label, e.g. ``move forward 2.00s``), the model's thought
(``agent_stats.trace``), memory and outcome from ``RUN_DIR/traces`` when the run had ``--trace``. Per
episode: stop reason (and its detail), answer, expected answer (questions), score (``sr``) and a line of
the main metrics.
"""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from urbanarena.env.continuous.actions import ActionFormatError, ActionKind, ContinuousAction
from urbanarena.env.continuous.state import ContinuousPose
from urbanarena.errors import StoreError
from urbanarena.render.encode import decode_image, encode_image
from urbanarena.render.maps import map_renderer_for
from urbanarena.report.replay_episode import (  # noqa: F401  (is_continuous_row: re-exported, defined here before)
    PATH_RGB, EpisodeReplay, StepRecord, is_continuous_row,
)
from urbanarena.tasks.families import get_family
from urbanarena.tasks.schema import Task
from urbanarena.world.city import City

FIRST_PERSON = "first_person"
MAP = "map"
#: closures on the overview map (RGB)
CLOSURE_RGB = (200, 30, 30)


def action_label(action: Any) -> str:
    """A stored continuous action as a short label (``move forward 2.00s``, ``terminate answer='B'``); the JSON
    text when it cannot be read."""
    if isinstance(action, dict):
        try:
            a = ContinuousAction.from_dict(action)
        except ActionFormatError:
            return json.dumps(action, ensure_ascii=False)
        s = a.label()
        if a.kind == ActionKind.TERMINATE and action.get("answer") is not None:
            s += f" answer={str(action['answer'])!r}"
        return s
    return str(action)


class ContinuousEpisodeReplay(EpisodeReplay):
    """One stored continuous-mode episode (module docstring).

    Args:
        row: the store row (parsed JSON columns).
        city: the run's city (an annotated OSM city).
        task: the task (hash-checked), or ``None``.
        view_size: ``(width, height)`` of the first-person views; hfov_deg: their field of view.
        trace_dir: the episode's trace folder when it exists.
    Raises:
        StoreError: a row without ``details.samples``, or samples without a checkpoint per step.
    """

    def __init__(self, row: dict[str, Any], city: City, *, task: Task | None = None,
                 view_size: tuple[int, int] = (640, 360), hfov_deg: float = 90.0, trace_dir: Path | None = None,
                 render_style: str = "flat"):
        self.render_style = render_style
        details = row.get("details") or {}
        samples = details.get("samples") if isinstance(details, dict) else None
        if not isinstance(samples, list) or not samples:
            raise StoreError(f"episode {row.get('id')} ({row.get('task_id')}) has no stored trajectory samples to "
                             "replay")
        self.row = row
        self.city = city
        self.task = task
        self.task_dir = None
        self.city_dir = None
        self.trace_dir = trace_dir if trace_dir is not None and trace_dir.is_dir() else None
        self.view_size = (int(view_size[0]), int(view_size[1]))
        self.hfov_deg = float(hfov_deg)
        self.samples = [tuple(s) for s in samples]
        by_step: dict[int, tuple] = {}
        for s in self.samples:
            if s[6]:
                by_step[int(s[5])] = s  # the step's last checkpoint sample
        n = max(by_step) + 1 if by_step else 0
        if n == 0 or any(k not in by_step for k in range(n)):
            raise StoreError(f"episode {row.get('id')} ({row.get('task_id')}): stored samples lack a checkpoint for "
                             "every step")
        self.states = [by_step[k] for k in range(n)]
        self.start_exact = task is not None
        self._world = self._dynamic_world()
        self.modes = self._modes_from_actions()
        self._maps: dict[int, bytes] = {}
        self.replay_exact: bool | None = None
        if MAP in self.modes and task is not None:
            self._replay_maps()
        self.map_shown = MAP not in self.modes or bool(self.replay_exact)
        self._observer: Any = None
        self._lock = threading.Lock()
        self._trace_lines = self._read_trace()

    # ------------------------------------------------------------ facts
    @property
    def n_states(self) -> int:
        """``steps + 1``: the start and one state per step."""
        return len(self.states)

    @property
    def goal_points(self) -> list[tuple[float, float]]:
        """The task's goal points in city metres (``[]`` without the task or for questions)."""
        if self.task is None:
            return []
        from urbanarena.tasks.families.urbanground import goal_points_xy

        return goal_points_xy(self.task, self.city)

    @property
    def goal_xy(self) -> tuple[float, float] | None:
        g = self.goal_points
        return g[-1] if g else None

    @property
    def condition(self) -> str | None:
        """The render condition (weather / time of day) of the episode: the task's ``dynamics.condition`` when the
        task is known, else ``None`` (clear day), as the runner chooses its observer."""
        return getattr(getattr(self._world, "spec", None), "condition", None)

    def pose(self, k: int) -> ContinuousPose:
        """The pose at state ``k``. Raises: IndexError."""
        s = self.states[self._state_index(k)]
        lat, lon = self.city.frame.to_latlon(s[1], s[2])
        return ContinuousPose(float(s[1]), float(s[2]), float(s[3]), float(s[4]), float(lat), float(lon))

    def time_s(self, k: int) -> float:
        """Simulated seconds at state ``k``."""
        return float(self.states[self._state_index(k)][0])

    def _dynamic_world(self):
        spec = (self.task.extra or {}).get("dynamics") if self.task is not None else None
        if not spec:
            return None
        from urbanarena.env.continuous.dynamics import DynamicWorld

        return DynamicWorld.from_spec(self.city, spec, get_family(self.task.family).network(self.city))

    def _modes_from_actions(self) -> list[str]:
        """The observation mode at every state (``open_map`` in first-person mode opens the map, ``close_map`` in map
        mode closes it; anything else keeps the mode, as the env's rule)."""
        mode, out = FIRST_PERSON, [FIRST_PERSON]
        for a in list(self.row.get("actions") or [])[: self.n_states - 1]:
            name = str(a.get("action", "")).strip().lower() if isinstance(a, dict) else ""
            if name == ActionKind.OPEN_MAP.value and mode == FIRST_PERSON:
                mode = MAP
            elif name == ActionKind.CLOSE_MAP.value and mode == MAP:
                mode = FIRST_PERSON
            out.append(mode)
        out += [mode] * (self.n_states - len(out))
        return out

    def _replay_maps(self) -> None:
        """Execute the stored actions again (no observer) and keep the map-mode observations (module docstring)."""
        from urbanarena.env.continuous import ContinuousEnv

        fam = get_family(self.task.family)
        env = ContinuousEnv(self.city, network=fam.network(self.city))
        opts = fam.env_options(self.task, self.city)
        opts["dynamics"] = self._world
        obs, _ = env.reset(seed=int(self.row.get("seed") or 0), options=opts)
        maps = {0: obs["map"]} if obs["mode"] == MAP else {}
        modes = [obs["mode"]]
        for k, a in enumerate(list(self.row.get("actions") or [])[: self.n_states - 1], 1):
            obs, _, done, _, _ = env.step(a)
            modes.append(obs["mode"])
            if obs["mode"] == MAP:
                maps[k] = encode_image(obs["map"], "png").data
            if done:
                break
        got = [[s.t_s, s.x_m, s.y_m, s.yaw_deg, s.pitch_deg, s.step, s.checkpoint] for s in env.samples]
        self.replay_exact = got == [list(s) for s in self.samples] and modes == self.modes
        if self.replay_exact:
            self._maps = maps

    def steps(self) -> list[StepRecord]:
        """One :class:`StepRecord` per step; actions as labels (:func:`action_label`)."""
        out = super().steps()
        actions = list(self.row.get("actions") or [])
        for s in out:
            s.action = action_label(actions[s.step - 1]) if s.step - 1 < len(actions) else ""
        return out

    def outcome(self) -> dict[str, Any]:
        """Stop reason (and detail), answer, expected answer (questions), score (``sr``) and the main metrics as a
        line (``message``)."""
        r, m = self.row, self.row.get("metrics") or {}
        d = r.get("details") or {}
        expected = self.task.answer if self.task is not None and self.task.answer is not None else None
        parts = []
        for key, name, fmt in (("final_distance_m", "final distance", "{:.1f} m"), ("path_length_m", "path",
                                                                                     "{:.1f} m"),
                               ("sim_time_s", "time", "{:.1f} s"), ("pna", "PNA", "{:.2f}"), ("spr", "SPR", "{:.0f}"),
                               ("pedestrian_collisions", "pedestrian collisions", "{:.0f}"),
                               ("zone_respected", "zone respected", "{:.0f}"), ("stops_reached", "stops", "{:.0f}"),
                               ("on_time_ratio", "on time", "{:.2f}")):
            v = m.get(key)
            if isinstance(v, (int, float)) and math.isfinite(float(v)):
                parts.append(f"{name} {fmt.format(float(v))}")
        return {"stop_reason": r.get("stop_reason"), "stop_reason_detail": d.get("stop_reason_detail"),
                "answer": d.get("answer"), "expected": expected, "score": m.get("sr"),
                "scored_success": m.get("sr"), "message": "; ".join(parts) or None, "error": r.get("error"),
                "steps": r.get("steps")}

    def summary(self) -> dict[str, Any]:
        """JSON-able facts of the episode (the replay page's data; ``motion`` ``"continuous"``)."""
        out = super().summary()
        out["instruction"] = (get_family(self.task.family).prompt(self.task) if self.task is not None else None)
        out["motion"] = "continuous"
        out["replay_exact"] = self.replay_exact
        out["map_shown"] = self.map_shown
        return out

    @property
    def poses(self) -> list[Any]:  # type: ignore[override]
        return [_PoseDict({"t_s": float(s[0]), "x_m": float(s[1]), "y_m": float(s[2]), "yaw_deg": float(s[3]),
                           "pitch_deg": float(s[4]), "mode": self.modes[k]}) for k, s in enumerate(self.states)]

    # ------------------------------------------------------------ images
    @property
    def observer(self):
        """The first-person observer at the run's view size (built on first use; OpenGL on first render)."""
        with self._lock:
            if self._observer is None:
                from urbanarena.env.continuous import SceneViewObserver
                from urbanarena.render.scene3d.styles import settings_for_style

                self._observer = SceneViewObserver(self.city, width=self.view_size[0], height=self.view_size[1],
                                                   hfov_deg=self.hfov_deg, condition=self.condition,
                                                   settings=settings_for_style(self.render_style))
            return self._observer

    def first_person_view(self, k: int) -> np.ndarray:
        """The first-person view at state ``k`` (with the episode's pedestrians and barriers at its time when the task
        is known): RGB uint8 ``(height, width, 3)``. Raises: IndexError; RendererUnavailableError without OpenGL."""
        pose = self.pose(k)
        if self._world is None:
            img = self.observer(self.city, pose)
        else:
            img = self.observer(self.city, pose, dynamic=self._world.scene_objects(self.time_s(k)))
        return np.ascontiguousarray(img)

    def view(self, k: int) -> np.ndarray:
        """What the agent was shown at state ``k``: the map in map mode (when :attr:`map_shown`), else the
        first-person view. Raises: IndexError."""
        k = self._state_index(k)
        if self.modes[k] == MAP and k in self._maps:
            return decode_image(self._maps[k])
        return self.first_person_view(k)

    def map(self, k: int, width: int = 480, height: int = 480) -> np.ndarray:
        """The overview map at state ``k`` (module docstring): RGB uint8 ``(height, width, 3)``. Raises: IndexError."""
        k = self._state_index(k)
        mr = map_renderer_for(self.city, int(width), int(height))
        s0 = self.states[0]
        start = (float(s0[1]), float(s0[2]))
        goals = self.goal_points
        img = mr.start_goal_map(start, goals[-1]) if goals else mr.background().copy()
        style = mr.style
        if not goals:
            u, v = mr.world_to_px(*start)
            cv2.circle(img, (int(round(float(u))), int(round(float(v)))), style.marker_radius_px, style.start, -1,
                       cv2.LINE_AA)
        for g in goals[:-1]:
            u, v = mr.world_to_px(*g)
            cv2.circle(img, (int(round(float(u))), int(round(float(v)))), max(3, style.marker_radius_px - 2),
                       style.goal, -1, cv2.LINE_AA)
        for c in (self.row.get("details") or {}).get("closures") or []:
            pts = np.asarray(c.get("coords") or [], float).reshape(-1, 2)
            if len(pts) >= 2:
                us, vs = mr.world_to_px(pts[:, 0], pts[:, 1])
                p = np.round(np.stack([us, vs], axis=1) * 16.0).astype(np.int32)
                cv2.polylines(img, [p], bool(c.get("zone")), CLOSURE_RGB, 3, cv2.LINE_AA, shift=4)
        t_k = self.time_s(k)
        step_k = int(self.states[k][5])
        path = [(s[1], s[2]) for s in self.samples if int(s[5]) <= step_k and float(s[0]) <= t_k]
        if len(path) >= 2:
            xy = np.asarray(path, float)
            us, vs = mr.world_to_px(xy[:, 0], xy[:, 1])
            p = np.round(np.stack([us, vs], axis=1) * 16.0).astype(np.int32)
            cv2.polylines(img, [p], False, PATH_RGB, 2, cv2.LINE_AA, shift=4)
        pose = self.pose(k)
        mr.draw_agent(img, pose.x_m, pose.y_m, pose.yaw_deg)
        return img

    def reference_paths(self) -> list[Path]:
        """Continuous tasks carry no reference image files: ``[]``."""
        return []


class _PoseDict(dict):
    """A state's pose as a dict with the ``to_dict`` of arena poses (for :meth:`EpisodeReplay.summary`)."""

    def to_dict(self) -> dict[str, Any]:
        return dict(self)


__all__ = ["CLOSURE_RGB", "ContinuousEpisodeReplay", "action_label", "is_continuous_row"]
