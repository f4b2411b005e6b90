"""The continuous environment: UrbanGround semantics on a rendered city (Gymnasium).

The agent is a pose anywhere on walkable space -- ``x_m``, ``y_m`` (local metres),
camera ``yaw_deg`` (compass) and ``pitch_deg`` (positive up) -- and acts with
UrbanGround's actions (:mod:`urbanarena.env.continuous.actions`): move/sprint for
a number of simulated seconds, look (a relative turn), open the map, and in map
mode select/pan/zoom/close; terminate ends the episode. Buildings and street
furniture block motion, building passages and covered ways do not
(:mod:`.collision`); the pedestrian network is kept for analysis only
(:mod:`.walk_network`), never as a constraint.

Simulated time. Every duration is simulated: a move/sprint lasts its
``seconds``; a look ``look_seconds`` (0.5 s); a jump ``jump_seconds`` (0.5 s, in place);
each map action (open_map, map_select, map_pan, map_zoom, map_orbit, close_map)
``map_action_seconds`` (1.0 s);
terminate, invalid and parse-error steps 0 s; every step (model request) adds
``step_overhead_s`` (0 s by default) while the agent stands still. Speeds are
metres per simulated second (walk 1.4 m/s, a typical adult walking speed;
sprint 3.0 m/s; same speed in all four directions). Nothing reads the wall
clock, so the same action sequence gives the same trajectory and the same
times whatever the model's latency. These durations and speeds are our
definitions (UrbanGround runs in real time; its released client only bounds a
move to 0.05-2 s); they are fields of :class:`ContinuousConfig`.

Modes: ``first_person`` (move, sprint, look, jump, open_map, terminate) and ``map``
(map_select, map_pan, map_zoom, map_orbit, close_map, terminate). An action of the other
mode, an unreadable action (:class:`~urbanarena.env.continuous.actions.ActionFormatError`)
or ``parse_error`` executes nothing but consumes the step; it is counted and
recorded in ``info``. Out-of-range values are clamped and every clamp is recorded
(``info["clamped"]``: field, given, used; also the absolute pitch limits and
the map zoom limits).

Observation (dict):
    ``mode``: ``"first_person"`` or ``"map"``.
    ``view``: first-person RGB ``(H, W, 3)`` from the observer (in first-person mode
        with an observer, else ``None``). The observer is any callable
        ``(city, ContinuousPose) -> image``; :class:`.observer.SceneViewObserver`
        renders the 3D city. Tests run without one (no OpenGL needed).
    ``map``: the map image (map mode only, else ``None``; :mod:`.map_view`).
    ``reference_images``: list of RGB arrays given at reset.
    ``text``: ``{"task", "memory", "state", "recent_actions", "last_result"}`` (with dynamics also
        ``notices``: the closure notices delivered so far, :mod:`.dynamics`);
        ``state`` mirrors UrbanGround's ``/state``: ``mode``, ``lat``, ``lon``,
        ``yaw_deg``, ``pitch_deg``, ``time_s`` (simulated seconds since reset),
        ``street`` (name of the nearest walkable line within 15 m, or ``None``),
        ``on_pedestrian_network`` (within ``network_buffer_m`` of the pedestrian lines),
        and in map mode ``map`` (:meth:`.map_view.MapView.state_dict`: centre, half-size,
        metres per pixel, the selected point's lat/lon and ``street``).
    ``step``: steps consumed so far.

``info``: ``pose`` (:class:`.state.ContinuousPose` as a dict), ``mode``,
``sim_time_s``, ``step_seconds``, ``goal_distance_m`` (straight line to the goal,
or ``None``), ``action`` (as given, or ``None``), ``executed``,
``invalid_action``, ``invalid_reason``, ``clamped``, ``defaulted``, ``blocked``,
``contacts``, ``moved_m`` (path length walked), ``displacement_m``,
``stop_reason`` (``"terminate"``, ``"closure_violation"`` or ``None``), ``counters`` (``steps``,
``executed_actions``, ``parse_errors``, ``invalid_actions``, ``clamped_actions``,
``blocked_moves``, ``map_actions``); with dynamics ``dynamics`` (contacts, violation, notices of
the step; :meth:`ContinuousEnv.dynamics_record` has the episode's).

Dynamic city (``dynamics=`` or the ``dynamics`` reset option; :mod:`.dynamics`): road closures with
notices after a simulated delay (crossing an announced one ends the episode, ``stop_reason =
"closure_violation"``), physical barriers, moving pedestrians that block the agent and whose contacts
are counted; ``docs/continuous.md``.

Trajectory: :attr:`ContinuousEnv.samples` (:class:`.state.Sample`; straight
lines at constant speed between consecutive samples; each step ends with a
checkpoint sample), the input of :mod:`urbanarena.tasks.metrics.urbanground`.

Reward is always 0.0: the task's scorers judge the finished episode.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any, Callable, Mapping

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from urbanarena.env.continuous.actions import (
    FIRST_PERSON_KINDS, MAP_KINDS, MOTION_KINDS, ActionFormatError, ActionKind, Clamp, ContinuousAction,
    ContinuousActionSpace, clamp_action,
)
from urbanarena.env.continuous.collision import WalkableSpace
from urbanarena.env.continuous.dynamics import DynamicWorld, EpisodeDynamics
from urbanarena.env.continuous.kinematics import integrate_move
from urbanarena.env.continuous.map_view import MapMarker, MapView
from urbanarena.env.continuous.state import ContinuousPose, Sample
from urbanarena.env.continuous.walk_network import WalkNetwork
from urbanarena.world.city import City
from urbanarena.world.geo import wrap_deg

FIRST_PERSON = "first_person"
MAP = "map"


@dataclass(frozen=True)
class ContinuousConfig:
    """Settings of :class:`ContinuousEnv` (units in the names; rules in the module docstring).

    Attributes:
        walk_speed_mps, sprint_speed_mps: metres per simulated second.
        look_seconds, jump_seconds, map_action_seconds, step_overhead_s: simulated durations (ours).
        substep_s: longest straight piece of a turning move (:mod:`.kinematics`).
        collision_mode: ``"slide"`` or ``"stop"`` (:mod:`.collision`).
        agent_radius_m, passage_half_width_m: agent disc and passage corridor (:mod:`.collision`).
        bounds_margin_m: fence around the walkable network (``None``: no fence).
        pitch_min_deg, pitch_max_deg: absolute camera pitch limits.
        map_width_px, map_height_px, map_default_half_m, map_min_half_m, map_max_half_m: map mode (:mod:`.map_view`).
        network_buffer_m: buffer of ``on_pedestrian_network`` in the text state (PNA's default, 3 m).
        start_search_m: a start inside an obstacle moves to the nearest free point within this distance.
        recent_actions_window: executed actions listed in the observation.
    """

    walk_speed_mps: float = 1.4
    sprint_speed_mps: float = 3.0
    look_seconds: float = 0.5
    jump_seconds: float = 0.5
    map_action_seconds: float = 1.0
    step_overhead_s: float = 0.0
    substep_s: float = 0.1
    collision_mode: str = "slide"
    agent_radius_m: float = 0.25
    passage_half_width_m: float = 1.5
    bounds_margin_m: float | None = 50.0
    pitch_min_deg: float = -89.0
    pitch_max_deg: float = 89.0
    map_width_px: int = 640
    map_height_px: int = 360
    map_default_half_m: float = 150.0
    map_min_half_m: float = 10.0
    map_max_half_m: float = 5000.0
    network_buffer_m: float = 3.0
    start_search_m: float = 10.0
    recent_actions_window: int = 5

    def __post_init__(self):
        if self.collision_mode not in ("slide", "stop"):
            raise ValueError(f"collision_mode must be 'slide' or 'stop', got {self.collision_mode!r}")
        for name in ("walk_speed_mps", "sprint_speed_mps", "look_seconds", "jump_seconds", "map_action_seconds",
                     "step_overhead_s"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0")
        if not self.substep_s > 0:
            raise ValueError("substep_s must be > 0")
        if not self.pitch_min_deg <= 0.0 <= self.pitch_max_deg or self.pitch_min_deg < -90 or self.pitch_max_deg > 90:
            raise ValueError("pitch limits must satisfy -90 <= min <= 0 <= max <= 90")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class ContinuousEnv(gym.Env):
    """UrbanGround-style continuous environment on a :class:`City` (see the module docstring).

    Args:
        city: the city (an annotated OSM city for buildings, furniture and renders; a plain pose graph
            works too, with only the fence as an obstacle).
        config: :class:`ContinuousConfig`.
        observer: first-person view callable ``(city, ContinuousPose) -> RGB`` or ``None``.
        space: a prebuilt :class:`WalkableSpace` (default: built from the city and config).
        network: a prebuilt :class:`WalkNetwork` (default: built from the city).
        dynamics: the dynamic city of every episode (a JSON dynamics spec, a
            :class:`~.dynamics.DynamicsSpec` or a :class:`~.dynamics.DynamicWorld`; ``reset`` option
            ``dynamics`` overrides it per episode), or ``None``: a static city, exactly as without it.
            With dynamics the observer is called as ``observer(city, pose, dynamic=DynamicObjects)``.
    Attributes (per episode): ``samples`` (:class:`Sample` list), ``actions`` (as given), ``counters``,
    ``goal_xy``, ``sim_time_s``, ``mode``, ``world`` (:class:`~.dynamics.DynamicWorld` or ``None``) and
    ``dynamics`` (:class:`~.dynamics.EpisodeDynamics` or ``None``).
    """

    metadata = {"render_modes": []}

    def __init__(self, city: City, config: ContinuousConfig | None = None,
                 observer: Callable[[City, ContinuousPose], np.ndarray | None] | None = None,
                 space: WalkableSpace | None = None, network: WalkNetwork | None = None, dynamics=None):
        super().__init__()
        self.city = city
        self.config = config or ContinuousConfig()
        c = self.config
        self.space = space if space is not None else WalkableSpace.from_city(
            city, agent_radius_m=c.agent_radius_m, passage_half_width_m=c.passage_half_width_m,
            bounds_margin_m=c.bounds_margin_m)
        self.network = network if network is not None else WalkNetwork.from_city(city)
        self.static_space = self.space
        self.dynamics_spec = dynamics
        self.observer = observer
        self.map_view = MapView(city, c.map_width_px, c.map_height_px, c.map_default_half_m, c.map_min_half_m,
                                c.map_max_half_m)
        self.action_space = ContinuousActionSpace()
        self.observation_space = spaces.Dict({"step": spaces.Box(0, np.inf, shape=(), dtype=np.int64)})
        self._pose: tuple[float, float, float, float] | None = None  # x, y, yaw, pitch
        self.done = False
        self._reset_episode_fields()

    def _reset_episode_fields(self) -> None:
        self.samples: list[Sample] = []
        self.actions: list[Any] = []
        self.counters = {"steps": 0, "executed_actions": 0, "parse_errors": 0, "invalid_actions": 0,
                         "clamped_actions": 0, "blocked_moves": 0, "map_actions": 0}
        self.sim_time_s = 0.0
        self.mode = FIRST_PERSON
        self.task_text = ""
        self.memory = ""
        self.reference_images: list[np.ndarray] = []
        self.markers: list[MapMarker] = []
        self.goal_xy: tuple[float, float] | None = None
        self.start_adjusted_m = 0.0
        self.recent: deque[str] = deque(maxlen=max(0, self.config.recent_actions_window))
        self.last_result = ""
        self.map_view.reset()
        self.world: DynamicWorld | None = None
        self.dynamics: EpisodeDynamics | None = None

    # ---------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode.

        Args:
            seed: seeds ``np_random`` and the action space (the env itself is deterministic).
            options:
                start (one required): ``start_xy_m`` ``(x, y)`` local metres, ``start_latlon`` ``(lat, lon)``
                    or ``start_node`` (a pose node's position). A start inside an obstacle moves to the
                    nearest free point within ``config.start_search_m`` (``info["start_adjusted_m"]``).
                ``start_yaw_deg`` (default: the start node's ``heading_deg``, else 0), ``start_pitch_deg`` (0).
                goal (optional): ``goal_xy_m``, ``goal_latlon`` or ``goal_node``.
                ``task_text``, ``memory``, ``reference_images``; ``map_markers``: list of
                ``{"label", "x_m", "y_m"}`` (or ``lat``/``lon``) drawn on the map.
        Raises:
            ValueError: no start, unknown node, no free point near the start.
        """
        super().reset(seed=seed)
        if seed is not None:
            self.action_space.seed(seed)
        o = dict(options or {})
        self._reset_episode_fields()
        self._set_dynamics(o["dynamics"] if "dynamics" in o else self.dynamics_spec)
        start = self._xy_option(o, "start")
        if start is None:
            raise ValueError("reset needs start_xy_m, start_latlon or start_node")
        free = self.space.nearest_free(*start, max_m=self.config.start_search_m)
        if free is None:
            raise ValueError(f"no free point within {self.config.start_search_m} m of the start {start}")
        self.start_adjusted_m = math.dist(free, start)
        yaw = o.get("start_yaw_deg")
        if yaw is None and o.get("start_node") is not None:
            yaw = self.city.node(o["start_node"]).get("heading_deg")
        yaw = wrap_deg(float(yaw or 0.0))
        pitch = min(max(float(o.get("start_pitch_deg") or 0.0), self.config.pitch_min_deg), self.config.pitch_max_deg)
        self._pose = (free[0], free[1], yaw, pitch)
        self.goal_xy = self._xy_option(o, "goal")
        self.task_text = str(o.get("task_text") or "")
        self.memory = str(o.get("memory") or "")
        self.reference_images = list(o.get("reference_images") or [])
        for m in o.get("map_markers") or []:
            xy = (m["x_m"], m["y_m"]) if "x_m" in m else self.city.frame.to_xy(m["lat"], m["lon"])
            self.markers.append(MapMarker(str(m.get("label", "")), float(xy[0]), float(xy[1])))
        self.done = False
        self.samples.append(Sample(0.0, free[0], free[1], yaw, pitch, 0, True))
        if self.dynamics is not None:
            self.dynamics.start(free[0], free[1])
            self.dynamics.deliver_notices(0.0, free[0], free[1])
        info = self._info(action=None, executed=False, invalid_reason=None, clamps=[], defaulted=(), blocked=False,
                          contacts=0, moved=0.0, displacement=0.0, step_seconds=0.0, stop_reason=None)
        info["start_adjusted_m"] = self.start_adjusted_m
        if self.dynamics is not None:
            info["dynamics"] = {"new_contacts": list(self.dynamics.contacts), "closure_violation": None,
                                "new_notices": list(self.dynamics.notices), "pedestrian_blocked": False,
                                **self._dynamics_info()}
        return self._obs(), info

    def _set_dynamics(self, spec) -> None:
        """This episode's world (module docstring of :mod:`.dynamics`); physical barriers join the obstacles."""
        if spec is None:
            self.space = self.static_space
            return
        world = spec if isinstance(spec, DynamicWorld) else DynamicWorld.from_spec(self.city, spec, self.network)
        self.world = world
        self.space = self.static_space.with_barriers(world.physical_obstacles())
        self.dynamics = EpisodeDynamics(world, self.config.agent_radius_m)

    def _xy_option(self, o: Mapping[str, Any], prefix: str) -> tuple[float, float] | None:
        if o.get(f"{prefix}_xy_m") is not None:
            x, y = o[f"{prefix}_xy_m"]
            return (float(x), float(y))
        if o.get(f"{prefix}_latlon") is not None:
            lat, lon = o[f"{prefix}_latlon"]
            x, y = self.city.frame.to_xy(float(lat), float(lon))
            return (float(x), float(y))
        node = o.get(f"{prefix}_node")
        if node is not None:
            if node not in self.city:
                raise ValueError(f"{prefix}_node {node!r} is not in the city")
            x, y = self.city.xy(node)
            return (float(x), float(y))
        return None

    def step(self, action: ContinuousAction | Mapping[str, Any]):
        """Consume one model request and execute ``action`` (see the module docstring).

        Args:
            action: a :class:`ContinuousAction` or UrbanGround's JSON dict.
        Raises:
            RuntimeError: called before ``reset`` or after the episode ended.
        """
        if self._pose is None or self.done:
            raise RuntimeError("step() called before reset() or after the episode ended")
        c = self.config
        self.counters["steps"] += 1
        step_no = self.counters["steps"]
        x0, y0, yaw0, pitch0 = self._pose
        t_before = self.sim_time_s
        given = action.to_dict() if isinstance(action, ContinuousAction) else action
        self.actions.append(given)
        invalid_reason: str | None = None
        parsed: ContinuousAction | None = None
        clamps: list[Clamp] = []
        try:
            if isinstance(action, ContinuousAction):
                parsed = action
            elif isinstance(action, Mapping):
                parsed = ContinuousAction.from_dict(action)
            else:
                raise ActionFormatError(f"an action must be a ContinuousAction or a JSON object, "
                                        f"got {type(action).__name__}")
            if parsed.memory is not None:
                self.memory = parsed.memory
            if parsed.kind != ActionKind.PARSE_ERROR:
                parsed, clamps = clamp_action(parsed)
        except ActionFormatError as e:
            invalid_reason = str(e)
        executed = False
        blocked = False
        contacts = 0
        moved = 0.0
        duration = 0.0
        stop_reason = None
        new_samples: list[Sample] = []
        ped_blocked = False  # a mover (pedestrian or moving car) cut the move short
        veh_blocked = False  # ... and it was a car
        if parsed is not None and invalid_reason is None:
            kind = parsed.kind
            allowed = FIRST_PERSON_KINDS if self.mode == FIRST_PERSON else MAP_KINDS
            if kind == ActionKind.PARSE_ERROR:
                self.counters["parse_errors"] += 1
                self.last_result = "parse error: nothing executed"
            elif kind not in allowed:
                invalid_reason = f"{kind.value} is unavailable in {self.mode} mode"
                clamps = []  # nothing executed, nothing clamped
            else:
                executed = True
                if kind in MOTION_KINDS:
                    speed = c.sprint_speed_mps if kind == ActionKind.SPRINT else c.walk_speed_mps
                    secs = parsed.get("seconds")
                    res = integrate_move(self.space, x0, y0, yaw0, pitch0, direction_offset_deg=parsed.dir.offset_deg,
                                         speed_mps=speed, seconds=secs, yaw_rate_dps=parsed.get("yaw_rate"),
                                         pitch_rate_dps=parsed.get("pitch_rate"),
                                         pitch_limits_deg=(c.pitch_min_deg, c.pitch_max_deg),
                                         substep_s=c.substep_s, mode=c.collision_mode)
                    t0 = self.sim_time_s
                    motion = [(t0 + t, sx, sy, syaw, spitch) for t, sx, sy, syaw, spitch in res.samples]
                    end_xy, moved = (res.x_m, res.y_m), res.moved_m
                    if self.dynamics is not None:
                        blocks_before = self.dynamics.blocks
                        motion, t_block = self.dynamics.block_motion(t0, x0, y0, yaw0, pitch0, motion)
                        if t_block is not None:
                            ped_blocked = True
                            veh_blocked = self.dynamics.blocks == blocks_before
                            end_xy = (motion[-1][1], motion[-1][2])
                            pts = [(x0, y0)] + [(m[1], m[2]) for m in motion]
                            moved = sum(math.dist(a, b) for a, b in zip(pts[:-1], pts[1:]))
                    for t, sx, sy, syaw, spitch in motion:
                        new_samples.append(Sample(t, sx, sy, syaw, spitch, step_no, False))
                    self._pose = (end_xy[0], end_xy[1], res.yaw_deg, res.pitch_deg)
                    if res.pitch_limited:
                        clamps.append(Clamp("pitch_deg", pitch0 + parsed.get("pitch_rate") * secs, res.pitch_deg))
                    duration, blocked, contacts = secs, res.blocked or ped_blocked, len(res.contacts)
                    self.last_result = (f"{parsed.label()}: walked {moved:.2f} m of {res.intended_m:.2f} m"
                                        + (" (blocked)" if blocked else "")
                                        + ((" (a vehicle is in the way)" if veh_blocked
                                            else " (a pedestrian is in the way)") if ped_blocked else ""))
                elif kind == ActionKind.LOOK:
                    want = pitch0 + parsed.get("pitch")
                    pitch = min(max(want, c.pitch_min_deg), c.pitch_max_deg)
                    if pitch != want:
                        clamps.append(Clamp("pitch_deg", want, pitch))
                    self._pose = (x0, y0, wrap_deg(yaw0 + parsed.get("yaw")), pitch)
                    duration = c.look_seconds
                    self.last_result = f"{parsed.label()}: yaw {self._pose[2]:.1f} pitch {pitch:.1f}"
                elif kind == ActionKind.JUMP:  # ours: flat ground, nothing to jump onto (actions module)
                    duration = c.jump_seconds
                    self.last_result = "jumped in place"
                elif kind == ActionKind.TERMINATE:
                    stop_reason = "terminate"
                    self.last_result = "terminated"
                else:
                    duration = c.map_action_seconds
                    self.counters["map_actions"] += 1
                    self._map_action(parsed, clamps)
        if invalid_reason is not None:
            self.counters["invalid_actions"] += 1
            self.last_result = f"invalid action: {invalid_reason}"
        if executed:
            self.counters["executed_actions"] += 1
            self.recent.append(parsed.label())
        if clamps:
            self.counters["clamped_actions"] += 1
            self.last_result += " [clamped: " + ", ".join(f"{k.field} {k.given:g} -> {k.used:g}" for k in clamps) + "]"
        if blocked:
            self.counters["blocked_moves"] += 1
        step_seconds = duration + c.step_overhead_s
        self.sim_time_s += step_seconds
        x1, y1, yaw1, pitch1 = self._pose
        new_samples.append(Sample(self.sim_time_s, x1, y1, yaw1, pitch1, step_no, True))
        if len(new_samples) >= 2 and new_samples[-2].t_s == new_samples[-1].t_s:
            new_samples.pop(-2)
        self.samples.extend(new_samples)
        events = None
        if self.dynamics is not None:
            events = self._step_dynamics(t_before, x0, y0, new_samples)
            if events["closure_violation"] is not None and stop_reason is None:
                stop_reason = "closure_violation"
                v = events["closure_violation"]
                self.last_result += f" -- closure {v['closure']} crossed: the task has failed"
        self.done = stop_reason is not None
        info = self._info(action=given, executed=executed, invalid_reason=invalid_reason, clamps=clamps,
                          defaulted=parsed.defaulted if parsed is not None else (), blocked=blocked,
                          contacts=contacts, moved=moved, displacement=math.hypot(x1 - x0, y1 - y0),
                          step_seconds=step_seconds, stop_reason=stop_reason)
        if events is not None:
            info["dynamics"] = {**events, "pedestrian_blocked": ped_blocked and not veh_blocked,
                                **({"vehicle_blocked": veh_blocked} if self.dynamics.world.vehicles is not None else {}),
                                **self._dynamics_info()}
        return self._obs(), 0.0, self.done, False, info

    def _step_dynamics(self, t_before: float, x0: float, y0: float, new_samples: list[Sample]) -> dict[str, Any]:
        """Pedestrian contacts and closure crossings of the step just taken, then the notices due now."""
        d = self.dynamics
        at = np.array([t_before] + [s.t_s for s in new_samples])
        axy = np.array([(x0, y0)] + [(s.x_m, s.y_m) for s in new_samples])
        contacts = d.count_contacts(at, axy)
        violation = d.check_crossing(at, axy) if d.violation is None else None
        x1, y1 = self._pose[0], self._pose[1]
        notices = d.deliver_notices(self.sim_time_s, x1, y1) if violation is None else []
        if violation is None and d.violation is not None:  # standing on a closure announced just now
            violation = d.violation
        return {"new_contacts": contacts, "closure_violation": violation, "new_notices": notices}

    def _dynamics_info(self) -> dict[str, Any]:
        d = self.dynamics
        return {"pedestrian_collisions": len(d.contacts), "pedestrian_blocks": d.blocks,
                "closures_announced": sorted(d.notice_times_s), "closure_violated": d.violation is not None,
                **({"vehicle_collisions": len(d.vehicle_contacts), "vehicle_blocks": d.vehicle_blocks}
                   if d.world.vehicles is not None else {})}

    def dynamics_record(self) -> dict[str, Any] | None:
        """What the scorer needs about the dynamic city (:meth:`.dynamics.EpisodeDynamics.record` at the current
        simulated time), or ``None`` for a static episode."""
        return None if self.dynamics is None else self.dynamics.record(self.sim_time_s)

    def _map_action(self, a: ContinuousAction, clamps: list[Clamp]) -> None:
        mv = self.map_view
        x, y = self._pose[0], self._pose[1]
        k = a.kind
        if k == ActionKind.OPEN_MAP:
            mv.open(x, y)
            self.mode = MAP
            self.last_result = "map opened"
        elif k == ActionKind.CLOSE_MAP:
            self.mode = FIRST_PERSON
            self.last_result = "map closed"
        elif k == ActionKind.MAP_PAN:
            mv.pan(a.get("east"), a.get("north"))
            self.last_result = f"map centre moved {a.get('east'):g} m east, {a.get('north'):g} m north"
        elif k == ActionKind.MAP_ZOOM:
            want, used = mv.zoom(a.get("factor"))
            if want != used:
                clamps.append(Clamp("map_half_m", want, used))
            self.last_result = f"map shows {2 * used:g} m from top to bottom"
        elif k == ActionKind.MAP_ORBIT:  # ours: the map is a north-up 2D raster; orbiting changes nothing
            self.last_result = "the map is a flat north-up map: orbiting leaves it unchanged"
        elif k == ActionKind.MAP_SELECT:
            sx, sy = mv.select(a.get("x"), a.get("y"))
            lat, lon = self.city.frame.to_latlon(sx, sy)
            street = self.network.street_name_at(sx, sy)
            self.last_result = (f"selected lat {float(lat):.6f}, lon {float(lon):.6f}"
                                + (f" ({street})" if street else ""))

    def close(self) -> None:
        self._pose = None

    # ------------------------------------------------------------ positions
    def pose(self) -> ContinuousPose:
        """The current :class:`ContinuousPose`."""
        if self._pose is None:
            raise RuntimeError("no pose: call reset() first")
        x, y, yaw, pitch = self._pose
        lat, lon = self.city.frame.to_latlon(x, y)
        return ContinuousPose(x, y, yaw, pitch, float(lat), float(lon))

    def goal_distance_m(self) -> float | None:
        """Straight-line metres from the agent to the goal (``None`` without a goal)."""
        if self.goal_xy is None or self._pose is None:
            return None
        return math.hypot(self._pose[0] - self.goal_xy[0], self._pose[1] - self.goal_xy[1])

    def trajectory(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(t_s (N,), xy_m (N, 2), checkpoint (N,) bool)`` of :attr:`samples`."""
        t = np.array([s.t_s for s in self.samples], float)
        xy = np.array([(s.x_m, s.y_m) for s in self.samples], float).reshape(-1, 2)
        cp = np.array([s.checkpoint for s in self.samples], bool)
        return t, xy, cp

    # --------------------------------------------------------------- helpers
    def text_state(self) -> dict[str, Any]:
        """The ``state`` part of the text observation (module docstring)."""
        p = self.pose()
        out: dict[str, Any] = {
            "mode": self.mode, "lat": p.lat, "lon": p.lon, "yaw_deg": p.yaw_deg, "pitch_deg": p.pitch_deg,
            "time_s": self.sim_time_s, "street": self.network.street_name_at(p.x_m, p.y_m),
            "on_pedestrian_network": self.network.distance_m(p.x_m, p.y_m) <= self.config.network_buffer_m,
        }
        if self.mode == MAP:
            m = self.map_view.state_dict()
            if m["selected"] is not None:
                m["selected"]["street"] = self.network.street_name_at(m["selected"]["x_m"], m["selected"]["y_m"])
            out["map"] = m
        return out

    def _obs(self) -> dict[str, Any]:
        pose = self.pose()
        view = None
        cmap = None
        if self.mode == FIRST_PERSON:
            if self.observer is not None:
                if self.world is None:
                    view = self.observer(self.city, pose)
                else:
                    view = self.observer(self.city, pose, dynamic=self.world.scene_objects(self.sim_time_s))
        else:
            cmap = self.map_view.image((pose.x_m, pose.y_m), pose.yaw_deg, self.markers)
            if self.dynamics is not None:
                self.world.draw_on_map(cmap, self.map_view.renderer(), self.sim_time_s)
        text = {"task": self.task_text, "memory": self.memory, "state": self.text_state(),
                "recent_actions": list(self.recent), "last_result": self.last_result}
        if self.dynamics is not None:
            text["notices"] = list(self.dynamics.notices)
        return {
            "mode": self.mode,
            "view": view,
            "map": cmap,
            "reference_images": list(self.reference_images),
            "text": text,
            "step": self.counters["steps"],
        }

    def _info(self, *, action, executed, invalid_reason, clamps, defaulted, blocked, contacts, moved, displacement,
              step_seconds, stop_reason) -> dict[str, Any]:
        return {
            "pose": self.pose().to_dict(),
            "mode": self.mode,
            "sim_time_s": self.sim_time_s,
            "step_seconds": step_seconds,
            "goal_distance_m": self.goal_distance_m(),
            "action": dict(action) if isinstance(action, Mapping) else (repr(action) if action is not None else None),
            "executed": executed,
            "invalid_action": invalid_reason is not None,
            "invalid_reason": invalid_reason,
            "clamped": [k.to_dict() for k in clamps],
            "defaulted": list(defaulted),
            "blocked": blocked,
            "contacts": contacts,
            "moved_m": moved,
            "displacement_m": displacement,
            "stop_reason": stop_reason,
            "counters": dict(self.counters),
        }


__all__ = ["FIRST_PERSON", "MAP", "ContinuousConfig", "ContinuousEnv"]
