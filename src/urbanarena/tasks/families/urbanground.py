"""The UrbanGround ladder (``urbanground``): continuous-mode tasks L1-L5 and their scorer.

Episodes run in :class:`urbanarena.env.continuous.ContinuousEnv` (UrbanGround's
action schema, simulated time; ``docs/continuous.md``) under protocol
``urbanground-v1``; the runner's continuous loop is
:mod:`urbanarena.runner.continuous_episode`. Tasks are generated from a city's
own annotations by :mod:`urbanarena.tasks.generators.urbanground`.

Task fields (``docs/continuous.md``, *The ladder*):

* ``category``: the sub-family (:data:`SUBFAMILIES`, e.g. ``l2_short_range``), so
  summaries group ``by_family``; ``extra.level`` the ladder level ``L1`` .. ``L5``;
  ``extra.kind`` how it is scored (:data:`KINDS`).
* ``start``: position (WGS84) and ``heading_deg`` (the start yaw), plus the nearest pose node.
* ``goals``: navigation goal(s) as positions (multi-stop: one per stop, in the
  scheduled order for ``schedule``); ``success_radius_m`` 15 (UrbanGround's arrival radius).
* ``extra.goal_points`` (``search``): every place that satisfies the request
  (``[{"lat", "lon", "label"}]``); arriving within the radius of any counts.
* ``extra.options`` / ``answer`` (``choice``): four options and the correct letter ``A`` .. ``D``.
* ``extra.restricted_zones``: polygons ``[[lat, lon], ...]`` the agent must not enter (active from t = 0).
* ``extra.deadlines_s``: per stop, simulated seconds since the start (``schedule``).
* ``extra.dynamics``: the dynamic-city spec of L5 tasks (:mod:`urbanarena.env.continuous.dynamics`).

Answers: the agent answers a ``choice`` task with ``{"action": "terminate", "answer": "B"}``
(an ``answer`` field on UrbanGround's terminate action; a letter or the option's text).

Scoring (:meth:`UrbanGroundFamily.score_trajectory`; formulas in
:mod:`urbanarena.tasks.metrics.urbanground`): per-episode keys :data:`EPISODE_KEYS`
(``None`` where a key does not apply):

* ``sr``: ``navigation`` / ``constrained`` / ``closure``: final position within 15 m of the goal and no
  zone or active closure entered; ``search``: within 15 m of any ``goal_points`` entry (and no zone);
  ``choice``: the answer is correct; ``schedule``: every stop reached in order by its deadline;
  ``multi_stop``: every stop reached (any order). Any zone/closure violation forces 0.
* ``pna`` (every kind): fraction of action time within 3 m of the pedestrian lines.
* ``spr``: per closure episode tested by its closure (a notice arrived, so a closure was active, before the
  episode ended) 1 when no active closure was crossed, 0 when one was (its mean is SPR);
  ``None`` for an episode that ended before any notice (not in SPR's denominator);
  ``zone_respected`` the same for restricted zones.
* ``pcr``: per pedestrian episode 1 when the agent touched a pedestrian (mean = PCR);
  ``pedestrian_collisions`` the count.
* ``final_distance_m``, ``rdr``, ``oracle_sr``, ``oracle_rdr``, ``endpoint_regression_m``,
  ``endpoint_regressed``: point goals (``search``: the goal point nearest the final position).
* ``route_efficiency`` (``multi_stop``): network MST over start + stops / path length.
* ``on_time_ratio``, ``mean_lateness_s`` (``schedule``); ``stops_reached`` (both).
* ``answer_correct`` (``choice``); ``path_length_m``, ``sim_time_s``, ``steps`` (every kind).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from urbanarena.env.continuous.ending import EpisodeEnd
from urbanarena.env.continuous.walk_network import WalkNetwork
from urbanarena.errors import ProtocolError
from urbanarena.tasks.families.base import TaskFamily, Trajectory
from urbanarena.tasks.metrics import urbanground as ug
from urbanarena.tasks.schema import Task
from urbanarena.world.city import City

PROTOCOL_ID = "urbanground-v1"
ARRIVAL_RADIUS_M = ug.ARRIVAL_RADIUS_M

#: sub-family -> (ladder level, scoring kind)
SUBFAMILIES: dict[str, tuple[str, str]] = {
    "l1_visual_recognition": ("L1", "choice"),
    "l1_orientation": ("L1", "choice"),
    "l1_active_exploration": ("L1", "choice"),
    "l2_short_range": ("L2", "navigation"),
    "l2_long_range": ("L2", "navigation"),
    "l2_instruction": ("L2", "navigation"),
    "l2_constrained": ("L2", "navigation"),
    "l3_place_type_search": ("L3", "search"),
    "l3_implicit_intent": ("L3", "search"),
    "l4_time_window": ("L4", "schedule"),
    "l4_multi_stop": ("L4", "multi_stop"),
    "l5_road_closure": ("L5", "navigation"),
    "l5_pedestrians": ("L5", "navigation"),
}
KINDS = ("choice", "navigation", "search", "schedule", "multi_stop")
#: L1 active exploration: evidence gathered "within a 60-second window" (paper, task design, level 1)
EXPLORATION_WINDOW_S = 60.0
LETTERS = ("A", "B", "C", "D")

#: per-episode metric keys of the scorer
EPISODE_KEYS: tuple[str, ...] = (
    "sr", "pna", "spr", "pcr", "zone_respected", "answer_correct", "final_distance_m", "rdr", "oracle_sr",
    "oracle_rdr", "endpoint_regression_m", "endpoint_regressed", "route_efficiency", "on_time_ratio",
    "mean_lateness_s", "stops_reached", "pedestrian_collisions", "closure_violations", "path_length_m",
    "sim_time_s", "steps",
)
#: keys reported in percent (x100) by summaries
PERCENT_KEYS: frozenset[str] = frozenset({"sr", "pna", "spr", "pcr", "zone_respected", "answer_correct", "oracle_sr",
                                          "endpoint_regressed", "on_time_ratio"})

#: the action schema shown to agents (UrbanGround's actions, :mod:`urbanarena.env.continuous.actions`)
ACTION_SCHEMA_TEXT = """\
Reply with ONE JSON object, the next action:
  {"action": "move", "dir": "forward|backward|left|right", "seconds": 0.05-2.0}   walk 1.4 m/s
  {"action": "sprint", "dir": "forward|backward|left|right", "seconds": 0.05-2.0} run 3.0 m/s
     (move/sprint may add "yaw_rate" / "pitch_rate" in deg/s, -180..180, to turn while walking,
      and "jump": true with "jump_at": seconds into the move)
  {"action": "look", "yaw": -180..180, "pitch": -90..90}   turn the camera (positive yaw = right, pitch = up)
  {"action": "jump"}                                       jump in place
  {"action": "open_map"}                                   switch to the north-up map
  in map mode: {"action": "map_select", "x": 0-1, "y": 0-1}, {"action": "map_pan", "east": m, "north": m},
               {"action": "map_zoom", "factor": 0.25-4}, {"action": "map_orbit", "yaw": deg, "pitch": deg},
               {"action": "close_map"}
  {"action": "terminate"}    end the episode where you stand (questions: {"action": "terminate", "answer": "B"})
Optional "memory": text kept for you between steps. Time is simulated: only your actions take time.
Buildings and street furniture block you; you succeed by stopping within 15 m of the goal."""


def level_of(task: Task) -> str:
    """Ladder level of a task (``extra.level``, else from its category)."""
    return str(task.extra.get("level") or SUBFAMILIES.get(task.category or "", ("?", ""))[0])


#: the conditions UrbanGround reports results by (paper, Table 1), as our condition names
PAPER_CONDITIONS: tuple[str, ...] = ("clear", "dusk", "night", "cloudy", "rain")


def condition_of(task: Task) -> str:
    """Weather / time-of-day condition of a task (``extra.dynamics.condition``; ``"clear"`` without one):
    summaries and reports group results by it, as the paper's Table 1 does."""
    dyn = task.extra.get("dynamics") if isinstance(task.extra, dict) else None
    cond = dyn.get("condition") if isinstance(dyn, dict) else None
    return str(cond) if cond else "clear"


def kind_of(task: Task) -> str:
    """Scoring kind of a task (``extra.kind``, else from its category)."""
    return str(task.extra.get("kind") or SUBFAMILIES.get(task.category or "", ("", "navigation"))[1])


def latlon_to_xy(city: City, lat: float, lon: float) -> tuple[float, float]:
    x, y = city.frame.to_xy(float(lat), float(lon))
    return float(x), float(y)


def zones_xy(task: Task, city: City) -> list[list[tuple[float, float]]]:
    """Restricted-zone rings of a task in local metres."""
    return [[latlon_to_xy(city, a, b) for a, b in ring] for ring in task.extra.get("restricted_zones") or []]


def goal_points_xy(task: Task, city: City) -> list[tuple[float, float]]:
    """Goal positions (local metres) in order: ``goals`` (or the ``search`` task's ``goal_points``)."""
    if kind_of(task) == "search" and task.extra.get("goal_points"):
        return [latlon_to_xy(city, g["lat"], g["lon"]) for g in task.extra["goal_points"]]
    return [latlon_to_xy(city, g.position.lat, g.position.lon) for g in task.goals if g.position is not None]


def parse_answer(task: Task, answer: Any) -> str | None:
    """The option letter of an answer (a letter ``A``-``D``, ``"B)"``, or the option's text, any case);
    ``None`` when it names no option."""
    if answer is None:
        return None
    s = str(answer).strip()
    opts = [str(o) for o in task.extra.get("options") or []]
    for i, o in enumerate(opts):
        if s.casefold() == o.casefold():
            return LETTERS[i]
    head = s.strip("()[]. ").upper()
    if len(head) >= 1 and head[0] in LETTERS[: len(opts) or 4] and (len(head) == 1 or not head[1].isalpha()):
        return head[0]
    return None


class UrbanGroundFamily(TaskFamily):
    """UrbanGround ladder tasks in continuous mode (module docstring)."""

    name = "urbanground"
    action_style = "continuous"
    default_protocol = PROTOCOL_ID
    #: UrbanGround's loop ends when the agent answers, signals completion "or reaches the 100-step limit"
    #: (paper, Experimental Setup, agent protocol)
    default_max_steps = 100
    version = 1

    def __init__(self):
        self._networks: dict[str, WalkNetwork] = {}

    @staticmethod
    def check_protocol(protocol_id: str) -> None:
        """Raises :class:`ProtocolError` unless ``protocol_id`` is ``urbanground-v1``."""
        if protocol_id != PROTOCOL_ID:
            raise ProtocolError(f"urbanground tasks run under {PROTOCOL_ID!r} only (got {protocol_id!r})")

    @staticmethod
    def check_task(task: Task, base_dir: Any = None, city: City | None = None) -> None:
        """Check a task's urbanground fields before a run (module docstring), so a hand-edited file fails
        up front instead of mid-run.

        Args:
            task: the task. base_dir: unused (the family has no files of its own).
            city: when given, the start and the goal positions must lie inside the walkable area's fence
                (the streets' bounding box grown by 50 m, as :class:`ContinuousEnv` builds it).
        Raises:
            ValueError: naming the field: an unknown sub-family (``category``), a level or kind that does
                not fit it, a malformed ``extra.dynamics`` (the record inside it, e.g.
                ``dynamics.closures[0]``), options / answer of a question, a goal without a position,
                malformed ``goal_points`` / ``restricted_zones`` / ``deadlines_s`` / ``map_markers``, a
                start or goal outside the city.
        """
        from urbanarena.env.continuous.dynamics import DynamicsSpec
        from urbanarena.errors import TaskFormatError

        def finite(v: Any) -> bool:
            return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(float(v))

        def latlon_list(v: Any, field: str) -> list[tuple[float, float]]:
            if not isinstance(v, list):
                raise ValueError(f"{field} must be a list of {{'lat', 'lon'}} objects")
            out = []
            for k, p in enumerate(v):
                if not isinstance(p, dict) or not (finite(p.get("lat")) and finite(p.get("lon"))):
                    raise ValueError(f"{field}[{k}] must be an object with numeric 'lat' and 'lon', got {p!r}")
                out.append((float(p["lat"]), float(p["lon"])))
            return out

        sub = task.category
        if sub not in SUBFAMILIES:
            raise ValueError(f"category (the sub-family) must be one of {', '.join(SUBFAMILIES)}; got {sub!r}")
        level, kind = SUBFAMILIES[sub]
        ex = task.extra or {}
        if ex.get("level") is not None and ex["level"] != level:
            raise ValueError(f"extra.level {ex['level']!r} does not fit sub-family {sub!r} (level {level})")
        if ex.get("kind") is not None and ex["kind"] not in KINDS:
            raise ValueError(f"extra.kind {ex['kind']!r} is not one of {', '.join(KINDS)}")
        kind = kind_of(task)
        if ex.get("dynamics") is not None:
            try:
                DynamicsSpec.from_dict(ex["dynamics"])
            except TaskFormatError as e:
                raise ValueError(f"extra.{e.record}: {e.reason}") from None
        zones = ex.get("restricted_zones")
        if zones is not None:
            if not isinstance(zones, list):
                raise ValueError("extra.restricted_zones must be a list of polygons [[lat, lon], ...]")
            for k, ring in enumerate(zones):
                if not isinstance(ring, list) or len(ring) < 3 or not all(
                        isinstance(p, (list, tuple)) and len(p) == 2 and finite(p[0]) and finite(p[1]) for p in ring):
                    raise ValueError(f"extra.restricted_zones[{k}] must be a polygon of at least 3 [lat, lon] points")
        markers = ex.get("map_markers")
        if markers is not None:
            if not isinstance(markers, list) or not all(
                    isinstance(m, dict) and ((finite(m.get("lat")) and finite(m.get("lon")))
                                             or (finite(m.get("x_m")) and finite(m.get("y_m")))) for m in markers):
                raise ValueError("extra.map_markers must be a list of {'label', 'lat', 'lon'} objects")
        for k, g in enumerate(task.goals):
            if g.position is None:
                raise ValueError(f"goals[{k}] needs a position (continuous tasks score positions)")
        if kind == "choice":
            opts = ex.get("options")
            if not isinstance(opts, list) or not 2 <= len(opts) <= len(LETTERS) or not all(
                    isinstance(o, str) and o.strip() for o in opts):
                raise ValueError(f"extra.options must be a list of 2 to {len(LETTERS)} non-empty strings, got {opts!r}")
            if str(task.answer) not in LETTERS[: len(opts)]:
                raise ValueError(f"answer must be the letter of an option ({', '.join(LETTERS[: len(opts)])}), "
                                 f"got {task.answer!r}")
        elif kind == "search":
            points = latlon_list(ex["goal_points"], "extra.goal_points") if ex.get("goal_points") is not None else []
            if not points and not task.goals:
                raise ValueError("a search task needs extra.goal_points or goals")
        elif not task.goals:
            raise ValueError(f"a {kind} task ({sub}) needs at least one goal")
        if kind == "schedule":
            dl = ex.get("deadlines_s")
            if not isinstance(dl, list) or len(dl) != len(task.goals) or not all(finite(d) and d >= 0 for d in dl):
                raise ValueError(f"extra.deadlines_s must list one number of seconds >= 0 per goal "
                                 f"({len(task.goals)}), got {dl!r}")
        if city is not None:
            ann = getattr(city, "annotations", None)
            lines = [p for s in (ann.streets if ann is not None else []) if len(s.xy) >= 2 for p in s.xy]
            if lines:
                xy = np.asarray(lines, float)
                m = 50.0  # WalkableSpace.from_annotations' fence margin
                x0, y0 = xy.min(axis=0) - m
                x1, y1 = xy.max(axis=0) + m
                pts = [("start", task.start.position)] + [(f"goals[{k}]", g.position) for k, g in enumerate(task.goals)]
                for name, p in pts:
                    if p is None:
                        continue
                    x, y = latlon_to_xy(city, p.lat, p.lon)
                    if not (x0 <= x <= x1 and y0 <= y <= y1):
                        raise ValueError(f"{name} position ({p.lat}, {p.lon}) lies outside city {city.name!r} "
                                         "(its streets' bounding box grown by 50 m)")

    # ------------------------------------------------------------------ episodes
    def prompt(self, task: Task) -> str:
        """The task text shown to the agent: instruction, options (``choice``) and how to answer."""
        text = task.instruction
        opts = task.extra.get("options")
        if opts:
            text += "\n" + "\n".join(f"{LETTERS[i]}) {o}" for i, o in enumerate(opts))
            text += '\nAnswer with {"action": "terminate", "answer": "<letter>"}.'
        return text

    def env_options(self, task: Task, city: City | None = None) -> dict[str, Any]:  # type: ignore[override]
        """``ContinuousEnv.reset`` options: start position and yaw, goal (first goal point), task text,
        map markers (``extra.map_markers``: ``{"label", "lat", "lon"}``)."""
        pos = task.start.position
        opts: dict[str, Any] = {"task_text": self.prompt(task),
                                "start_yaw_deg": float(task.start.heading_deg or 0.0)}
        if pos is not None:
            opts["start_latlon"] = (pos.lat, pos.lon)
        else:
            opts["start_node"] = task.start.node
        g = task.final_goal
        if g is not None and g.position is not None:
            opts["goal_latlon"] = (g.position.lat, g.position.lon)
        markers = task.extra.get("map_markers")
        if markers:
            opts["map_markers"] = [dict(m) for m in markers]
        return opts

    @staticmethod
    def exploration_window_s(task: Task) -> float | None:
        """Simulated seconds the agent may explore before the episode ends unanswered: ``extra.exploration_window_s``
        when set, else 60 for L1 active exploration (paper, task design: "within a 60-second window"), else
        ``None`` (no window). What happens when it closes is ours (the paper does not say): the episode ends
        with stop reason ``time_window`` and no answer."""
        v = task.extra.get("exploration_window_s")
        if v is not None:
            return float(v)
        return EXPLORATION_WINDOW_S if task.category == "l1_active_exploration" else None

    def episode_end(self, task: Task, max_steps: int | None = None) -> EpisodeEnd:
        """The task's episode-ending rules (:class:`~urbanarena.env.continuous.ending.EpisodeEnd`): the step
        limit ``max_steps`` (default :attr:`default_max_steps`) and :meth:`exploration_window_s`. The runner
        and ``urbanarena/Continuous-v1`` both end their episodes by it."""
        return EpisodeEnd(int(self.default_max_steps if max_steps is None else max_steps),
                          self.exploration_window_s(task))

    def network(self, city: City) -> WalkNetwork:
        """The city's :class:`WalkNetwork` (cached per city content hash)."""
        key = city.content_hash
        net = self._networks.get(key)
        if net is None:
            net = WalkNetwork.from_city(city)
            self._networks = {key: net}
        return net

    # ------------------------------------------------------------------ scoring
    def score(self, task: Task, city: City, protocol_id: str, traj: Trajectory) -> dict[str, float | None]:
        """Score a graph node path as a continuous trajectory: the agent at each node's position, one
        simulated second per node (for tools that hold only node paths). Continuous episodes are scored
        by :meth:`score_trajectory` on their recorded samples."""
        path = list(traj.path) or ([task.start.node] if task.start.node else [])
        xy = np.array([city.xy(n) for n in path], float).reshape(-1, 2)
        t = ug.Trajectory.from_arrays(np.arange(len(xy), dtype=float), xy)
        return self.score_trajectory(task, city, protocol_id, t, steps=traj.steps)

    def score_env_episode(self, task: Task, city: City, protocol_id: str, env: Any, answer: Any = None
                          ) -> tuple[dict[str, Any], list[ug.Closure], list[ug.Trajectory] | None]:
        """Score the episode a :class:`~urbanarena.env.continuous.ContinuousEnv` holds (its samples, its
        dynamics record: closures active from the notice's delivery, pedestrians on their exact tracks), as
        the runner's continuous loop and ``urbanarena/Continuous-v1`` both do.

        Returns: ``(metrics, closures, pedestrians)`` (:meth:`score_trajectory`; ``pedestrians`` ``None``
            without any). Raises: as :meth:`score_trajectory`.
        """
        traj = ug.Trajectory.from_samples(env.samples)
        peds = None
        closures: list[ug.Closure] = []
        record = env.dynamics_record() or {}
        if env.world is not None:
            closures = [ug.Closure(tuple(map(tuple, c["coords"])), float(c["active_from_s"]), bool(c["zone"]))
                        for c in record.get("closures") or []]
            if env.world.n_pedestrians:
                peds = [ug.Trajectory.from_arrays(tt, xy) for tt, xy in env.world.pedestrian_tracks(env.sim_time_s)]
        metrics = self.score_trajectory(task, city, protocol_id, traj, answer=answer, steps=int(env.counters["steps"]),
                                        network=env.network, closures=closures, pedestrians=peds)
        return metrics, closures, peds

    def score_trajectory(self, task: Task, city: City, protocol_id: str, traj: ug.Trajectory, *,
                         answer: Any = None, steps: int = 0, network: WalkNetwork | None = None,
                         closures: Sequence[ug.Closure] = (), pedestrians: Sequence[ug.Trajectory] | None = None
                         ) -> dict[str, Any]:
        """Per-episode metrics (:data:`EPISODE_KEYS`, module docstring).

        Args:
            traj: the recorded trajectory (local metres, simulated seconds).
            answer: the agent's answer (``choice`` tasks), as given.
            steps: consumed steps.
            network: the walk network (default: built from the city, cached).
            closures: the episode's road closures (L5; each active from its notice time).
            pedestrians: the episode's pedestrian trajectories (``None``: no pedestrians).
        Raises:
            ProtocolError: a protocol other than ``urbanground-v1``.
        """
        self.check_protocol(protocol_id)
        net = network or self.network(city)
        kind = kind_of(task)
        radius = float(task.success_radius_m if task.success_radius_m is not None else ARRIVAL_RADIUS_M)
        out: dict[str, Any] = {k: None for k in EPISODE_KEYS}
        out["steps"] = float(steps)
        out["path_length_m"] = traj.path_length_m()
        out["sim_time_s"] = float(traj.t_s[-1] - traj.t_s[0])
        out["pna"] = ug.pna(traj, net)
        zones = [ug.Closure(tuple(r), 0.0, zone=True) for r in zones_xy(task, city)]
        zone_viol = ug.closure_violations(traj, zones) if zones else []
        clos_viol = ug.closure_violations(traj, closures) if closures else []
        if zones:
            out["zone_respected"] = 0.0 if zone_viol else 1.0
        if closures:
            # SPR (paper, Table 4: "the fraction of road-closure episodes that respect the closure"): only an
            # episode still running when a closure became active (its notice arrived) was tested by it; one
            # that ended before every notice is not counted (None), neither as respecting nor as violating
            end_s = float(traj.t_s[-1])
            tested = any(math.isfinite(c.active_from_s) and c.active_from_s <= end_s for c in closures)
            out["spr"] = (0.0 if clos_viol else 1.0) if tested else None
            out["closure_violations"] = float(len(clos_viol))
        if pedestrians is not None:
            n = ug.pedestrian_collisions(traj, pedestrians)
            out["pedestrian_collisions"] = float(n)
            out["pcr"] = 1.0 if n else 0.0
        violated = bool(zone_viol or clos_viol)
        forbidden = list(zones) + list(closures)
        if kind == "choice":
            letter = parse_answer(task, answer)
            out["answer_correct"] = 1.0 if (letter is not None and letter == str(task.answer)) else 0.0
            out["sr"] = 0.0 if violated else out["answer_correct"]
            return out
        goals = goal_points_xy(task, city)
        if not goals:
            out["sr"] = 0.0
            return out
        if kind in ("navigation", "search"):
            fx, fy = traj.final_xy
            goal = min(goals, key=lambda g: math.hypot(g[0] - fx, g[1] - fy)) if kind == "search" else goals[-1]
            if kind == "search":  # the oracle checkpoint may lie near another goal point: best over all
                best = max((ug.oracle_checkpoint(traj, g, radius, forbidden) for g in goals),
                           key=lambda r: (r["oracle_sr"], -r["distance_m"]))
            m = ug.navigation_metrics(traj, goal, network=None, closures=forbidden, radius_m=radius)
            out.update({k: m[k] for k in ("sr", "final_distance_m", "rdr", "oracle_sr", "oracle_rdr",
                                          "endpoint_regression_m", "endpoint_regressed")})
            if kind == "search":
                out["oracle_sr"], out["oracle_rdr"] = best["oracle_sr"], best["oracle_rdr"]
                er = max(0.0, float(m["final_distance_m"]) - best["distance_m"])
                out["endpoint_regression_m"] = er
                out["endpoint_regressed"] = 1.0 if best["oracle_sr"] == 1.0 and m["sr"] == 0.0 else 0.0
            return out
        if kind == "schedule":
            deadlines = list(task.extra.get("deadlines_s") or [None] * len(goals))
            arr = ug.schedule_arrivals(traj, goals, radius)
            sm = ug.schedule_metrics(arr, deadlines)
            out["stops_reached"] = float(sm["stops_reached"])
            out["on_time_ratio"] = sm["on_time_ratio"]
            out["mean_lateness_s"] = sm["mean_lateness_s"]
            all_on_time = all(o is not False for o in sm["on_time"]) and sm["stops_reached"] == len(goals)
            out["sr"] = 1.0 if all_on_time and not violated else 0.0
            return out
        # multi_stop: any order
        reached = [ug.schedule_arrivals(traj, [g], radius)[0] is not None for g in goals]
        out["stops_reached"] = float(sum(reached))
        mst = ug.mst_lower_bound_m(traj.start_xy, goals, net)
        out["route_efficiency"] = ug.route_efficiency(mst, out["path_length_m"])
        out["sr"] = 1.0 if all(reached) and not violated else 0.0
        return out


__all__ = ["ACTION_SCHEMA_TEXT", "ARRIVAL_RADIUS_M", "PAPER_CONDITIONS", "condition_of", "EPISODE_KEYS", "KINDS", "LETTERS", "PERCENT_KEYS",
           "PROTOCOL_ID", "SUBFAMILIES", "UrbanGroundFamily", "goal_points_xy", "kind_of", "latlon_to_xy",
           "level_of", "parse_answer", "zones_xy"]
