"""The arena environment: 360CityArena semantics over a city pose graph (Gymnasium).

The agent walks along streets (metres along directed edges), turns its camera
(absolute compass yaw, pitch positive up) and picks branches at intersections
with LEFT / RIGHT / UP while red arrows are shown; it ends the episode with
ANSWER. Motion rules, magnitudes and the branch mapping are documented in
:mod:`urbanarena.env.motion.trajectory`; stop rules (step limit, stagnation,
away-from-goal) are wrappers in :mod:`urbanarena.env.stop_rules`.

Actions are :class:`ArenaAction` values:

=============  ==============================================================
kind           effect
=============  ==============================================================
``W``          walk SMALL / MEDIUM / LARGE = 1.5 / 4 / 7 m (3 m when omitted)
``S``          camera yaw back to the travel direction, pitch level
``A`` / ``D``  camera yaw left / right by 30 / 60 / 90 deg (24 when omitted)
``Q`` / ``E``  camera pitch up / down by 30 / 60 / 90 deg (24), clamped
``LEFT`` ...   ``LEFT`` / ``RIGHT`` / ``UP``: choose a branch; valid only
               while arrows are shown (``obs["arrows"]`` non-empty)
``ANSWER``     end the episode with ``answer`` text
``PARSE_ERROR``  the agent layer could not parse the model's reply: nothing
               is executed, but the step (one model request) is consumed
=============  ==============================================================

Every ``step`` is one consumed model request. Invalid actions (a branch key
with no arrows, or one the protocol's branch rule rejects) execute nothing,
consume the step and are counted and recorded in ``info``; they are never
mapped to another action.

Observation (dict):
    ``view``: RGB uint8 ``(H, W, 3)`` camera view from the observer, or
        ``None`` (graph-only city or no observer).
    ``map``: RGB uint8 current-location map from the map renderer, or ``None``.
    ``reference_images``: list of RGB arrays given at reset (task references).
    ``arrows``: list of ``{"target", "bearing_deg", "turn_deg", "keys"}``, the
        branches shown as red arrows (empty when none are shown); ``keys``
        lists the branch keys that select each one.
    ``text``: ``{"task": str, "memory": str, "recent_actions": [str, ...]}``;
        ``memory`` echoes the last ``memory`` the agent sent with an action
        (the agent owns its memory), ``recent_actions`` the last
        ``recent_actions_window`` executed actions as text (``"W MEDIUM"``).
    ``recent_actions``: the same actions as dicts (kind, magnitude, answer,
        step, moved_m, invalid, blocked).
    ``step``: steps (model requests) consumed so far.

``info`` (dict): ``pose`` (``x_m``, ``y_m`` local ENU metres, ``lat``, ``lon``
WGS84, ``edge`` ``[u, v]`` or ``None``, ``node`` when on a node, ``offset_m``,
``travel_deg``, ``yaw_deg``, ``pitch_deg``, ``nearest_node``),
``goal_distance_m`` (``{"euclidean": m, "graph": m}`` or ``None`` without a
goal; graph is ``inf`` when unreachable), ``action`` (the action as a dict),
``executed``, ``invalid_action``, ``invalid_reason``, ``blocked``,
``moved_m`` (metres along the graph), ``displacement_m`` (straight-line
metres between the positions before and after the step), ``branch`` (target
and turn when a branch was chosen), ``parse_error``, ``answer``,
``stop_reason`` (``"ANSWER"`` or set by a stop-rule wrapper, else ``None``),
``stop_reason_detail``, ``counters`` (``steps``, ``executed_actions``,
``parse_errors``, ``invalid_actions``, ``blocked_moves``, ``answers``).

Reward is always 0.0: the task's validators score the finished episode.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from urbanarena.env.motion.trajectory import Branch, MotionConfig, TrajectoryMotion, TrajState
from urbanarena.world.city import City
from urbanarena.world.geo import wrap_deg


class ActionKind(str, Enum):
    """The arena action tokens (360CityArena's set plus ``PARSE_ERROR``)."""

    W = "W"
    S = "S"
    A = "A"
    D = "D"
    Q = "Q"
    E = "E"
    LEFT = "LEFT"
    RIGHT = "RIGHT"
    UP = "UP"
    ANSWER = "ANSWER"
    PARSE_ERROR = "PARSE_ERROR"


class Magnitude(str, Enum):
    """Size of a W move or an A/D/Q/E rotation."""

    SMALL = "SMALL"
    MEDIUM = "MEDIUM"
    LARGE = "LARGE"


BRANCH_KINDS = frozenset({ActionKind.LEFT, ActionKind.RIGHT, ActionKind.UP})
LOOK_KINDS = frozenset({ActionKind.A, ActionKind.D, ActionKind.Q, ActionKind.E})


class NonTextAnswer(str):
    """An ANSWER's text that the model sent as a JSON number (``"answer": 3``), not as a string.

    It is the number's text everywhere (prompts, stored columns, JSON); only a validator that asks
    (``isinstance(answer, NonTextAnswer)``) can tell it from ``"3"``. Made by the reply parser under
    ``reply_reading = "reference"`` (``cityarena-v1``), whose validators score such an answer 0 as
    360CityArena's do (:mod:`urbanarena.tasks.reference_answers`).
    """

    __slots__ = ()


@dataclass(frozen=True)
class ArenaAction:
    """One structured arena action.

    Attributes:
        kind: :class:`ActionKind` (a plain string such as ``"W"`` is accepted).
        magnitude: :class:`Magnitude` for W/A/D/Q/E, or ``None`` (the
            documented default applies). Ignored by other kinds.
        answer: answer text (ANSWER only); a :class:`NonTextAnswer` when it arrived as a JSON number.
        memory: the agent's current memory text, echoed in the next
            observation (``None`` keeps the previous one).
        error: why the reply could not be parsed (PARSE_ERROR only).
    Raises:
        ValueError: unknown kind or magnitude.
    """

    kind: ActionKind
    magnitude: Magnitude | None = None
    answer: str | None = None
    memory: str | None = None
    error: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "kind", ActionKind(self.kind))
        if self.magnitude is not None:
            object.__setattr__(self, "magnitude", Magnitude(self.magnitude))

    @classmethod
    def parse_error(cls, error: str = "", memory: str | None = None) -> "ArenaAction":
        """The action the agent layer sends when a reply could not be parsed."""
        return cls(ActionKind.PARSE_ERROR, error=error, memory=memory)

    def label(self) -> str:
        """Short text form: ``"W MEDIUM"``, ``"A"``, ``"ANSWER: x:1 y:2"``, ``"PARSE_ERROR"``."""
        if self.kind == ActionKind.ANSWER:
            return f"ANSWER: {self.answer or ''}".rstrip()
        if self.magnitude is not None and (self.kind == ActionKind.W or self.kind in LOOK_KINDS):
            return f"{self.kind.value} {self.magnitude.value}"
        return self.kind.value

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (memory omitted: it is the agent's, recorded by the agent layer)."""
        return {
            "kind": self.kind.value,
            "magnitude": self.magnitude.value if self.magnitude is not None else None,
            "answer": self.answer,
            "error": self.error,
        }


class ArenaActionSpace(gym.Space):
    """Gymnasium space of :class:`ArenaAction` values; ``sample`` draws a kind
    (PARSE_ERROR excluded) and a magnitude uniformly with the space's RNG."""

    def __init__(self, seed: int | None = None):
        super().__init__(shape=None, dtype=None, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, ArenaAction)

    def sample(self, mask: Any = None, probability: Any = None) -> ArenaAction:
        kinds = [k for k in ActionKind if k != ActionKind.PARSE_ERROR]
        kind = kinds[int(self.np_random.integers(len(kinds)))]
        mags = [None, *Magnitude]
        mag = mags[int(self.np_random.integers(len(mags)))]
        return ArenaAction(kind, mag if (kind == ActionKind.W or kind in LOOK_KINDS) else None,
                           answer="" if kind == ActionKind.ANSWER else None)

    @property
    def is_np_flattenable(self) -> bool:
        return False


@dataclass(frozen=True)
class ArenaPose:
    """What an observer needs to draw the agent's view.

    Attributes:
        x_m, y_m: local ENU position (metres east / north of the city origin).
        lat, lon: WGS84 degrees of the same position.
        yaw_deg: camera yaw, absolute compass bearing [0, 360).
        pitch_deg: camera pitch, degrees, positive up.
        travel_deg: travel direction, degrees from north.
        nearest_node: node whose panorama shows the view between panoramas.
        edge: ``(u, v)`` when committed to an edge, else ``None``.
        offset_m: metres from ``u`` along the edge.
        node: the node the agent stands on, else ``None``.
        arrows: branches shown as red arrows (``Branch.bearing_deg`` absolute).
    """

    x_m: float
    y_m: float
    lat: float
    lon: float
    yaw_deg: float
    pitch_deg: float
    travel_deg: float
    nearest_node: str
    edge: tuple[str, str] | None
    offset_m: float
    node: str | None
    arrows: tuple[Branch, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "x_m": self.x_m, "y_m": self.y_m, "lat": self.lat, "lon": self.lon,
            "yaw_deg": self.yaw_deg, "pitch_deg": self.pitch_deg, "travel_deg": self.travel_deg,
            "nearest_node": self.nearest_node, "edge": list(self.edge) if self.edge else None,
            "offset_m": self.offset_m, "node": self.node,
        }


@runtime_checkable
class Observer(Protocol):
    """Draws the camera view: ``observer(city, pose) -> RGB uint8 (H, W, 3)`` or
    ``None`` (graph-only). Implementations draw ``pose.arrows`` as red arrows."""

    def __call__(self, city: City, pose: ArenaPose) -> np.ndarray | None: ...


@runtime_checkable
class MapRenderer(Protocol):
    """Draws the current-location map with the agent's marker: ``(city, pose) -> RGB`` or ``None``."""

    def __call__(self, city: City, pose: ArenaPose) -> np.ndarray | None: ...


@dataclass(frozen=True)
class ArenaConfig:
    """Environment settings.

    Attributes:
        motion: :class:`MotionConfig` (metres, degrees, branch rule).
        recent_actions_window: executed actions kept in the observation
            (360CityArena's runner keeps the last 5 exchanges).
    """

    motion: MotionConfig = field(default_factory=MotionConfig)
    recent_actions_window: int = 5

    def as_dict(self) -> dict[str, Any]:
        return {"motion": self.motion.as_dict(), "recent_actions_window": self.recent_actions_window}


class ArenaEnv(gym.Env):
    """360CityArena-style environment on a :class:`City` (see the module docstring).

    Args:
        city: the pose graph.
        config: :class:`ArenaConfig`.
        observer: camera-view callable (:class:`Observer`) or ``None`` for graph-only.
        map_renderer: current-location map callable or ``None``.
    Attributes (per episode): ``states`` (a :class:`TrajState` per step,
    start included), ``positions`` (``(x_m, y_m)`` per step), ``actions``
    (:class:`ArenaAction` per step), ``counters``, ``goal_xy``, ``goal_node``.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        city: City,
        config: ArenaConfig | None = None,
        observer: Observer | Callable[[City, ArenaPose], np.ndarray | None] | None = None,
        map_renderer: MapRenderer | Callable[[City, ArenaPose], np.ndarray | None] | None = None,
    ):
        super().__init__()
        self.city = city
        self.config = config or ArenaConfig()
        self.motion = TrajectoryMotion(city, self.config.motion)
        self.observer = observer
        self.map_renderer = map_renderer
        self.action_space = ArenaActionSpace()
        self.observation_space = spaces.Dict({"step": spaces.Box(0, np.inf, shape=(), dtype=np.int64)})
        self.state: TrajState | None = None
        self.done = False
        self._reset_episode_fields()

    def _reset_episode_fields(self) -> None:
        self.states: list[TrajState] = []
        self.positions: list[tuple[float, float]] = []
        self.actions: list[ArenaAction] = []
        self.counters = {"steps": 0, "executed_actions": 0, "parse_errors": 0, "invalid_actions": 0,
                         "blocked_moves": 0, "answers": 0}
        self.task_text = ""
        self.memory = ""
        self.reference_images: list[np.ndarray] = []
        self.recent: deque[dict[str, Any]] = deque(maxlen=max(0, self.config.recent_actions_window))
        self.goal_node: str | None = None
        self.goal_xy: tuple[float, float] | None = None
        self.answer: str | None = None

    # ---------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode.

        Args:
            seed: seeds ``np_random`` and the action space (the env itself is deterministic).
            options:
                ``start_node`` (required): node id.
                ``start_heading_deg``: travel direction to face (default: the
                    node's panorama heading, else the first out-edge azimuth, else 0).
                ``start_yaw_deg``: camera yaw (default: the start heading);
                ``start_pitch_deg`` (default 0).
                ``goal_node`` and/or ``goal_xy_m`` ``(x, y)`` local metres or
                    ``goal_latlon`` ``(lat, lon)``: the goal for distances
                    (Euclidean to the goal position; graph distance to
                    ``goal_node``, or to the node nearest the goal position plus
                    the straight metres from that node to it).
                ``task_text``: task text; ``memory``: initial memory text;
                ``reference_images``: list of RGB arrays.
        Raises:
            ValueError: missing/unknown start node or goal node.
        """
        super().reset(seed=seed)
        if seed is not None:
            self.action_space.seed(seed)
        options = options or {}
        start = options.get("start_node")
        if start is None or start not in self.city:
            raise ValueError(f"reset needs a start_node in the city, got {start!r}")
        heading = options.get("start_heading_deg")
        if heading is None:
            heading = self.city.node(start).get("heading_deg")
        if heading is None:
            outs = self.city.out_edges(start)
            heading = outs[0][1]["azimuth_deg"] if outs else 0.0
        heading = wrap_deg(float(heading))
        yaw = options.get("start_yaw_deg")
        yaw = heading if yaw is None else wrap_deg(float(yaw))
        pitch = float(options.get("start_pitch_deg") or 0.0)
        m = self.config.motion
        pitch = min(max(pitch, m.pitch_min_deg), m.pitch_max_deg)
        self._reset_episode_fields()
        self.state = TrajState(start, None, 0.0, heading, yaw, pitch)
        self.done = False
        self._set_goal(options)
        self.task_text = str(options.get("task_text") or "")
        self.memory = str(options.get("memory") or "")
        self.reference_images = list(options.get("reference_images") or [])
        self.states.append(self.state)
        self.positions.append(self.motion.position_xy(self.state))
        pose = self.pose()
        info = self._info(
            pose, action=None, executed=False, invalid=False, invalid_reason=None, blocked=False, moved=0.0,
            displacement=0.0, branch=None, stop_reason=None,
        )
        return self._obs(pose), info

    def step(self, action: ArenaAction):
        """Consume one model request and execute ``action`` (see the module docstring).

        Raises:
            RuntimeError: called before ``reset`` or after the episode ended.
            TypeError: ``action`` is not an :class:`ArenaAction`.
        """
        if self.state is None or self.done:
            raise RuntimeError("step() called before reset() or after the episode ended")
        if not isinstance(action, ArenaAction):
            raise TypeError(f"ArenaEnv.step needs an ArenaAction, got {type(action).__name__}")
        before = self.state
        before_xy = self.motion.position_xy(before)
        m = self.config.motion
        invalid = blocked = False
        invalid_reason = None
        moved = 0.0
        branch: Branch | None = None
        stop_reason = None
        terminated = False
        executed = True
        kind = action.kind
        self.counters["steps"] += 1
        if action.memory is not None:
            self.memory = action.memory
        if kind == ActionKind.PARSE_ERROR:
            executed = False
            self.counters["parse_errors"] += 1
        elif kind == ActionKind.W:
            dist = m.move_m[action.magnitude.value] if action.magnitude is not None else m.move_default_m
            out = self.motion.walk(before, dist)
            self.state, moved, blocked = out.state, out.moved_m, out.blocked
            invalid_reason = out.reason if blocked else None
        elif kind == ActionKind.S:
            self.state = self.motion.reset_view(before)
        elif kind in LOOK_KINDS:
            deg = m.turn_deg[action.magnitude.value] if action.magnitude is not None else m.turn_default_deg
            self.state = self.motion.look(before, kind.value, deg)
        elif kind in BRANCH_KINDS:
            out = self.motion.choose(before, kind.value)
            self.state, invalid, invalid_reason, branch = out.state, out.invalid, out.reason, out.branch
        elif kind == ActionKind.ANSWER:
            terminated = True
            stop_reason = "ANSWER"
            self.answer = action.answer or ""
            self.counters["answers"] += 1
        if executed:
            self.counters["executed_actions"] += 1
        if invalid:
            self.counters["invalid_actions"] += 1
        if blocked:
            self.counters["blocked_moves"] += 1
        after_xy = self.motion.position_xy(self.state)
        displacement = math.hypot(after_xy[0] - before_xy[0], after_xy[1] - before_xy[1])
        self.actions.append(action)
        self.states.append(self.state)
        self.positions.append(after_xy)
        if executed:
            self.recent.append({
                "step": self.counters["steps"], "kind": kind.value,
                "magnitude": action.magnitude.value if action.magnitude is not None else None,
                "answer": action.answer if kind == ActionKind.ANSWER else None,
                "label": action.label(), "moved_m": moved, "invalid": invalid, "blocked": blocked,
            })
        self.done = terminated
        pose = self.pose()
        info = self._info(
            pose, action=action, executed=executed, invalid=invalid, invalid_reason=invalid_reason, blocked=blocked,
            moved=moved, displacement=displacement, branch=branch, stop_reason=stop_reason,
        )
        return self._obs(pose), 0.0, terminated, False, info

    def close(self) -> None:
        self.state = None

    # ------------------------------------------------------------ positions
    def pose(self, state: TrajState | None = None) -> ArenaPose:
        """The :class:`ArenaPose` of ``state`` (default: the current state)."""
        s = state if state is not None else self.state
        if s is None:
            raise RuntimeError("no state: call reset() first")
        x, y = self.motion.position_xy(s)
        lat, lon = self.city.frame.to_latlon(x, y)
        return ArenaPose(
            x_m=x, y_m=y, lat=float(lat), lon=float(lon), yaw_deg=s.yaw_deg, pitch_deg=s.pitch_deg,
            travel_deg=s.travel_deg, nearest_node=self.motion.nearest_node(s),
            edge=(s.u, s.v) if s.v is not None else None, offset_m=s.offset_m, node=s.at_node,
            arrows=tuple(self.motion.arrows(s)),
        )

    def _set_goal(self, options: dict[str, Any]) -> None:
        gnode = options.get("goal_node")
        if gnode is not None and gnode not in self.city:
            raise ValueError(f"goal_node {gnode!r} is not in the city")
        gxy = options.get("goal_xy_m")
        if gxy is None and options.get("goal_latlon") is not None:
            lat, lon = options["goal_latlon"]
            x, y = self.city.frame.to_xy(float(lat), float(lon))
            gxy = (float(x), float(y))
        if gxy is None and gnode is not None:
            gxy = tuple(float(c) for c in self.city.xy(gnode))
        if gxy is not None and gnode is None:
            gnode = self._nearest_node_to(gxy)
        self.goal_node = gnode
        self.goal_xy = (float(gxy[0]), float(gxy[1])) if gxy is not None else None

    def _nearest_node_to(self, xy: tuple[float, float]) -> str:
        best, best_d = None, math.inf
        for n, d in self.city.graph.nodes(data=True):
            dist = math.hypot(d["x_m"] - xy[0], d["y_m"] - xy[1])
            if dist < best_d or (dist == best_d and best is not None and n < best):
                best, best_d = n, dist
        assert best is not None
        return best

    def euclidean_goal_distance_m(self, state: TrajState | None = None) -> float | None:
        """Straight-line metres (local ENU) from the agent's position to the goal position."""
        if self.goal_xy is None:
            return None
        x, y = self.motion.position_xy(state if state is not None else self.state)
        return math.hypot(x - self.goal_xy[0], y - self.goal_xy[1])

    def graph_goal_distance_m(self, state: TrajState | None = None) -> float | None:
        """Graph path metres from the agent's position to the goal.

        On an edge ``(u, v)`` at offset ``s``: the smaller of ``(L - s) + d(v)``
        and, where the reverse edge exists, ``s' + d(u)`` (``s'`` the same point
        on the reverse edge); ``d`` is the shortest directed path length to the
        goal node; plus the straight metres from the goal node to the goal
        position (0 for node goals). ``inf`` when unreachable.
        """
        if self.goal_node is None:
            return None
        s = state if state is not None else self.state
        dist = self.city.distances_to(self.goal_node)
        residual = 0.0
        if self.goal_xy is not None:
            gx, gy = self.city.xy(self.goal_node)
            residual = math.hypot(gx - self.goal_xy[0], gy - self.goal_xy[1])
        if s.v is None or s.offset_m == 0.0:
            return dist.get(s.u, math.inf) + residual
        length = self.motion.edge_length_m(s.u, s.v)
        best = (length - s.offset_m) + dist.get(s.v, math.inf)
        if self.city.graph.has_edge(s.v, s.u):
            rlen = self.motion.edge_length_m(s.v, s.u)
            back = (s.offset_m / length * rlen) if length > 0 else 0.0
            best = min(best, back + dist.get(s.u, math.inf))
        return best + residual

    # --------------------------------------------------------------- helpers
    def _obs(self, pose: ArenaPose | None = None) -> dict[str, Any]:
        assert self.state is not None
        pose = pose if pose is not None else self.pose()
        view = self.observer(self.city, pose) if self.observer is not None else None
        cmap = self.map_renderer(self.city, pose) if self.map_renderer is not None else None
        recent = list(self.recent)
        return {
            "view": view,
            "map": cmap,
            "reference_images": list(self.reference_images),
            "arrows": [
                {"target": b.target, "bearing_deg": b.bearing_deg, "turn_deg": b.turn_deg, "keys": list(b.keys)}
                for b in pose.arrows
            ],
            "text": {"task": self.task_text, "memory": self.memory, "recent_actions": [r["label"] for r in recent]},
            "recent_actions": recent,
            "step": self.counters["steps"],
        }

    def _info(self, pose: ArenaPose, *, action, executed, invalid, invalid_reason, blocked, moved, displacement,
              branch, stop_reason) -> dict[str, Any]:
        assert self.state is not None
        eu = self.euclidean_goal_distance_m()
        gr = self.graph_goal_distance_m()
        return {
            "pose": pose.to_dict(),
            "goal_distance_m": None if eu is None and gr is None else {"euclidean": eu, "graph": gr},
            "action": action.to_dict() if action is not None else None,
            "executed": executed,
            "invalid_action": invalid,
            "invalid_reason": invalid_reason if (invalid or blocked) else None,
            "blocked": blocked,
            "moved_m": moved,
            "displacement_m": displacement,
            "branch": {"target": branch.target, "turn_deg": branch.turn_deg, "bearing_deg": branch.bearing_deg}
            if branch is not None else None,
            "parse_error": action is not None and action.kind == ActionKind.PARSE_ERROR,
            "answer": self.answer,
            "stop_reason": stop_reason,
            "stop_reason_detail": None,
            "counters": dict(self.counters),
        }


__all__ = [
    "ActionKind", "Magnitude", "NonTextAnswer", "ArenaAction", "ArenaActionSpace", "ArenaPose", "Observer", "MapRenderer",
    "ArenaConfig", "ArenaEnv",
]
