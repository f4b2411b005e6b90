"""Stop rules of the arena as Gymnasium wrappers (360CityArena's early stops).

Each rule watches the ``info`` of every step of an :class:`~urbanarena.env.arena_env.ArenaEnv`
(one step = one consumed model request) and ends the episode with
``truncated=True`` and ``info["stop_reason"]`` set to its name when it fires:

=================  ==========================================================
``STEP_LIMIT``     ``max_steps`` consumed requests (default 50), parse errors
                   included, so no episode can loop forever. An ANSWER on the
                   last step still ends the episode as ``ANSWER``.
``STAGNATION``     the same action kind executed ``limit`` (20) consecutive
                   times, each with a displacement below ``epsilon_m``
                   (0.05 m). A parse error executes nothing: it is never a
                   repeat and breaks the run (as in the reference, where a
                   failed reply carries no action token).
``AWAY_FROM_GOAL`` ``limit`` (5) consecutive compared steps that each increase
                   the distance to the goal by more than ``epsilon_m``
                   (0.05 m); any compared step that does not resets the count.
                   Map navigation only. ``distance="euclidean"`` (cityarena-v1)
                   or ``"graph"`` (urbanarena-v1, path metres, so a correct
                   detour around a block is not stopped). ``counts="requests"``
                   compares every consumed request (reference behaviour: a
                   camera turn resets the count); ``"moves"`` compares only
                   steps that displace the agent. Uses the goal position, so
                   it is recorded as privileged (``info["stop_privileged"]``).
=================  ==========================================================

Source: 360CityArena ``python/src/cityarena/runner/agent_server.py``
(``early_stopping``: step limit 50 for every task type, stagnation limit 20 with
``LOCATION_EPSILON`` 0.05, ``GOAL_AWAY_CONSECUTIVE_LIMIT`` 5 with a 0.05 m
margin, MapNavigation only) and the paper's evaluation-protocol section.
Timing (protocol param ``stop_check``): ``"before-action"`` (cityarena-v1) is the
reference's: STEP_LIMIT and STAGNATION are checked on each request before its
action runs, on the position sent with it, and a rule that fires replaces the
request's action with an empty ANSWER (``info["action_replaced"]``); STEP_LIMIT
counts parsed replies only (an ANSWER as the last one is the agent's), plus our
backstop of ``max_steps`` parse-error steps; STAGNATION fires on the 21st
identical request. ``"after-action"`` (urbanarena-v1, ours) checks each step
after it ran: every consumed request counts and the 20th identical non-moving
action stops.

When several rules fire on the same step the innermost wrapper wins;
:func:`make_arena_env` nests them STEP_LIMIT (innermost), STAGNATION,
AWAY_FROM_GOAL, the reference's order of checks. A rule never overrides an
episode that already ended (ANSWER or an inner rule). Every step's ``info``
carries ``stop_rule_counters`` (each active rule's current count).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Literal

import gymnasium as gym

from urbanarena.env.arena_env import ActionKind, ArenaAction, ArenaConfig, ArenaEnv, MapRenderer, Observer
from urbanarena.env.motion.trajectory import MotionConfig
from urbanarena.env.protocols import get_protocol
from urbanarena.errors import ProtocolError
from urbanarena.world.city import City


#: ``ArenaAction.error`` prefix of an ANSWER a rule put in place of the request's action.
REPLACED = "replaced-by:"


def _kind_of(action) -> str | None:
    """The action token the reply carried (``None`` for a parse error); for an ANSWER an
    outer rule put in place, the token it replaced (``replaced-by:RULE:TOKEN``)."""
    kind = getattr(action, "kind", None)
    if kind is None or kind == ActionKind.PARSE_ERROR:
        return None
    err = str(getattr(action, "error", "") or "")
    if kind == ActionKind.ANSWER and err.startswith(REPLACED):
        token = err.split(":")[-1]
        return token or None
    return ActionKind(kind).value


class ArenaStopRule(gym.Wrapper):
    """Base class: subclasses override :meth:`_observe` (update counters, say whether to stop)."""

    name = ""
    privileged = False

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self._ended = False

    def reset(self, **kwargs):
        self._ended = False
        self._reset_counters()
        obs, info = self.env.reset(**kwargs)
        self._start(info)
        return obs, self._annotate(dict(info))

    def step(self, action):
        if self._ended:
            raise RuntimeError(f"step() after the episode ended ({self.name} wrapper)")
        pre_fire, pre_detail = self._before(action)
        if pre_fire:
            # reference timing: the request's action is replaced by an empty ANSWER
            action = ArenaAction(ActionKind.ANSWER, answer=None,
                                 error=f"{REPLACED}{self.name}:{_kind_of(action) or ''}")
        obs, reward, terminated, truncated, info = self.env.step(action)
        info = dict(info)
        fire, detail = self._observe(action, info)
        if pre_fire and info.get("stop_reason") == "ANSWER":
            # the replaced ANSWER ends the episode as this rule's stop (an inner rule that
            # also fired has already put its own name there: it was checked first)
            terminated, fire, detail = False, True, pre_detail
            info["action_replaced"] = True
        if fire and not truncated and (not terminated or pre_fire):
            truncated = True
            info["stop_reason"] = self.name
            info["stop_reason_detail"] = detail
            info["stop_privileged"] = self.privileged
        info = self._annotate(info)
        if terminated or truncated:
            self._ended = True
        return obs, reward, terminated, truncated, info

    def _annotate(self, info: dict[str, Any]) -> dict[str, Any]:
        counters = dict(info.get("stop_rule_counters") or {})
        counters[self.name] = self._count()
        info["stop_rule_counters"] = counters
        info.setdefault("stop_privileged", False)
        return info

    # hooks
    def _reset_counters(self) -> None: ...

    def _before(self, action) -> tuple[bool, str | None]:
        """Reference timing: say, before ``action`` runs, whether this request stops the episode."""
        return False, None

    def _start(self, info: dict[str, Any]) -> None: ...

    def _count(self) -> int:
        return 0

    def _observe(self, action, info: dict[str, Any]) -> tuple[bool, str | None]:
        """Update counters for one step; return ``(fire, detail)``. The base rule never fires."""
        return False, None


class StepLimitRule(ArenaStopRule):
    """STEP_LIMIT: stop after ``max_steps`` consumed requests (parse errors included).

    Args:
        max_steps: >= 1; 360CityArena's runner uses 50 for every task type.
    """

    name = "STEP_LIMIT"

    def __init__(self, env: gym.Env, max_steps: int = 50, timing: str = "after-action"):
        if int(max_steps) < 1:
            raise ValueError("max_steps must be >= 1")
        if timing not in ("after-action", "before-action"):
            raise ValueError(f"timing must be 'after-action' or 'before-action', got {timing!r}")
        super().__init__(env)
        self.max_steps = int(max_steps)
        self.timing = timing
        self._n = 0
        self._requests = 0

    def _reset_counters(self) -> None:
        self._n = 0
        self._requests = 0

    def _count(self) -> int:
        return self._n

    def _before(self, action):
        if self.timing != "before-action":
            return False, None
        self._requests += 1
        kind = _kind_of(action)
        if kind is not None:
            self._n += 1  # the reference counts successfully parsed replies only
            if self._n >= self.max_steps and kind != ActionKind.ANSWER.value:
                return True, f"step_limit={self.max_steps}"
        return False, None

    def _observe(self, action, info):
        if self.timing == "before-action":
            # ours: the reference has no bound on unparsed replies; ``max_steps`` parse-error
            # steps end the episode (after the last one) so an always-garbage model cannot loop
            if _kind_of(action) is None and self._requests - self._n >= self.max_steps:
                return True, f"step_limit={self.max_steps}"
            return False, None
        self._n += 1
        if self._n >= self.max_steps:
            return True, f"step_limit={self.max_steps}"
        return False, None


class StagnationRule(ArenaStopRule):
    """STAGNATION: the same action kind executed ``limit`` consecutive times, each
    moving the agent less than ``epsilon_m`` (straight-line displacement).

    Action identity is the kind only (``A SMALL`` repeats ``A LARGE``), as the
    reference compares action tokens. Parse errors reset the run.
    """

    name = "STAGNATION"

    def __init__(self, env: gym.Env, limit: int = 20, epsilon_m: float = 0.05,
                 timing: str = "after-action"):
        if int(limit) < 1:
            raise ValueError("limit must be >= 1")
        if timing not in ("after-action", "before-action"):
            raise ValueError(f"timing must be 'after-action' or 'before-action', got {timing!r}")
        super().__init__(env)
        self.limit = int(limit)
        self.epsilon_m = float(epsilon_m)
        self.timing = timing
        self._streak = 0
        self._prev: str | None = None
        self._last_disp: float | None = None

    def _reset_counters(self) -> None:
        self._streak, self._prev, self._last_disp = 0, None, None

    def _count(self) -> int:
        return self._streak

    def _before(self, action):
        if self.timing != "before-action":
            return False, None
        # the position arrives with the request: unchanged = the previous request moved < epsilon
        kind = _kind_of(action)
        unchanged = self._last_disp is not None and self._last_disp < self.epsilon_m
        same = kind is not None and self._prev is not None and kind == self._prev
        self._streak = self._streak + 1 if (unchanged and same) else 0
        self._prev = kind
        if self._streak >= self.limit:
            return True, (f"action {kind} requested with the position unchanged for {self._streak} "
                          f"consecutive requests (movement < {self.epsilon_m} m)")
        return False, None

    def _observe(self, action, info):
        if self.timing == "before-action":
            self._last_disp = float(info.get("displacement_m", 0.0) or 0.0)
            return False, None
        if not info.get("executed"):
            self._streak, self._prev = 0, None
            return False, None
        kind = (info.get("action") or {}).get("kind")
        if float(info.get("displacement_m", 0.0)) < self.epsilon_m:
            self._streak = self._streak + 1 if kind == self._prev else 1
        else:
            self._streak = 0
        self._prev = kind
        if self._streak >= self.limit:
            return True, (f"action {kind} executed {self._streak} consecutive times with displacement "
                          f"< {self.epsilon_m} m")
        return False, None


class AwayFromGoalRule(ArenaStopRule):
    """AWAY_FROM_GOAL: ``limit`` consecutive compared steps each increasing the goal distance.

    Args:
        distance: ``"euclidean"`` or ``"graph"`` (keys of ``info["goal_distance_m"]``).
        counts: ``"requests"`` (every consumed request is compared) or
            ``"moves"`` (only steps with displacement >= ``epsilon_m``).
        limit: consecutive increases that stop the episode (5).
        epsilon_m: an increase must exceed this margin (0.05 m).
    Privileged: it reads the goal position.
    """

    name = "AWAY_FROM_GOAL"
    privileged = True

    def __init__(self, env: gym.Env, distance: Literal["euclidean", "graph"] = "graph",
                 counts: Literal["requests", "moves"] = "moves", limit: int = 5, epsilon_m: float = 0.05):
        if distance not in ("euclidean", "graph"):
            raise ValueError(f"distance must be 'euclidean' or 'graph', got {distance!r}")
        if counts not in ("requests", "moves"):
            raise ValueError(f"counts must be 'requests' or 'moves', got {counts!r}")
        if int(limit) < 1:
            raise ValueError("limit must be >= 1")
        super().__init__(env)
        self.distance = distance
        self.counts = counts
        self.limit = int(limit)
        self.epsilon_m = float(epsilon_m)
        self._count_away = 0
        self._prev: float | None = None

    def _dist(self, info) -> float | None:
        g = info.get("goal_distance_m")
        return None if g is None else g.get(self.distance)

    def _reset_counters(self) -> None:
        self._count_away, self._prev = 0, None

    def _start(self, info) -> None:
        self._prev = self._dist(info)

    def _count(self) -> int:
        return self._count_away

    def _observe(self, action, info):
        d = self._dist(info)
        if d is None:
            return False, None
        if self.counts == "moves" and float(info.get("displacement_m", 0.0)) < self.epsilon_m:
            return False, None
        if self._prev is not None and math.isfinite(d) and d > self._prev + self.epsilon_m:
            self._count_away += 1
        else:
            self._count_away = 0
        self._prev = d
        if self._count_away >= self.limit:
            return True, (f"moved away from goal for {self._count_away} consecutive "
                          f"{'moves' if self.counts == 'moves' else 'steps'}; latest {self.distance} "
                          f"distance={d:.2f} m")
        return False, None


def arena_config_for(protocol_id: str, motion: MotionConfig | None = None) -> ArenaConfig:
    """:class:`ArenaConfig` of an arena protocol (branch rule, recent-action window).

    Args:
        motion: base metres/degrees to start from (default :class:`MotionConfig`);
            the protocol's ``branch_rule`` replaces its rule.
    Raises:
        ProtocolError: unknown id or a protocol without arena rules.
    """
    p = get_protocol(protocol_id)
    if p.params.get("action_set") != "arena":
        raise ProtocolError(f"protocol {protocol_id!r} has no arena rules (use cityarena-v1 or urbanarena-v1)")
    base = motion or MotionConfig()
    return ArenaConfig(motion=replace(base, branch_rule=p.params["branch_rule"]),
                       recent_actions_window=int(p.params["recent_actions_window"]))


def make_arena_env(
    city: City,
    protocol_id: str = "cityarena-v1",
    *,
    task_kind: str | None = None,
    max_steps: int | None = None,
    observer: Observer | None = None,
    map_renderer: MapRenderer | None = None,
    motion: MotionConfig | None = None,
) -> gym.Env:
    """An :class:`ArenaEnv` wrapped in its protocol's stop rules.

    Args:
        protocol_id: ``cityarena-v1`` or ``urbanarena-v1``.
        task_kind: the task's kind (e.g. ``"map_navigation"``); AWAY_FROM_GOAL
            is added only for kinds in the protocol's ``away_from_goal_scope``.
        max_steps: step limit (default: the protocol's, 50).
        observer, map_renderer: passed to :class:`ArenaEnv`.
        motion: base :class:`MotionConfig` (the protocol sets its branch rule).
    Returns: ``AwayFromGoalRule(StagnationRule(StepLimitRule(ArenaEnv)))``
        (the away rule only where it applies); ``env.unwrapped`` is the ArenaEnv.
    Raises:
        ProtocolError: not an arena protocol.
    """
    p = get_protocol(protocol_id).params
    cfg = arena_config_for(protocol_id, motion)
    env: gym.Env = ArenaEnv(city, cfg, observer=observer, map_renderer=map_renderer)
    timing = p.get("stop_check", "after-action")
    env = StepLimitRule(env, int(max_steps if max_steps is not None else p["step_limit"]), timing)
    env = StagnationRule(env, int(p["stagnation_limit"]), float(p["stagnation_epsilon_m"]), timing)
    if task_kind is not None and task_kind in p["away_from_goal_scope"]:
        env = AwayFromGoalRule(env, p["away_from_goal_distance"], p["away_from_goal_counts"],
                               int(p["away_from_goal_limit"]), float(p["away_from_goal_epsilon_m"]))
    return env
