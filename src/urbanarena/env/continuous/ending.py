"""Episode-ending rules of continuous episodes: the one decision the runner and ``Continuous-v1`` both make.

A continuous episode ends, checked after every step in this order:

1. ``"terminate"`` -- the agent's terminate action (the environment's ``info["stop_reason"]``);
2. ``"closure_violation"`` -- the agent crossed an announced road closure (the environment's rule);
3. ``"time_window"`` -- the task's exploration window has passed in simulated time
   (``sim_time_s >= time_window_s``; L1 active exploration: 60 s,
   :meth:`urbanarena.tasks.families.urbanground.UrbanGroundFamily.exploration_window_s`);
4. ``"max_steps"`` -- ``max_steps`` steps have been taken.

Before the first step only 3 and 4 can hold (a 0-step limit or a 0 s window: the runner takes no action).
The answer of a question is the ``answer`` field of the ending action when the environment ended the
episode (1 or 2); an episode ended by the window or the step limit has none, unless the agent gives
one when the runner asks it afterwards (``agent.final_answer(observation)``, :data:`LIMIT_STOPS`: agents
with UrbanGround's reference inputs do; the Gym env has no agent to ask). ``max_steps`` is the one
ending Gymnasium calls truncation; the others are terminations (the window is the task's own rule and the
simulated time is part of the observation). The runner adds ``"error"`` (the agent raised), which the
Gym env has no counterpart of.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

TERMINATE_STOP = "terminate"
CLOSURE_VIOLATION_STOP = "closure_violation"
TIME_WINDOW_STOP = "time_window"
MAX_STEPS_STOP = "max_steps"
#: endings the environment itself reports (``info["stop_reason"]``)
ENV_STOPS = frozenset({TERMINATE_STOP, CLOSURE_VIOLATION_STOP})
#: endings after which the runner asks a question's agent for its final answer (the exploration ran out;
#: UrbanGround's released agent is asked after its last turn), when the agent can answer then
LIMIT_STOPS = frozenset({TIME_WINDOW_STOP, MAX_STEPS_STOP})


@dataclass(frozen=True)
class EpisodeEnd:
    """When a continuous episode ends (module docstring).

    Attributes:
        max_steps: the step limit (>= 0).
        time_window_s: simulated seconds before the episode ends unanswered, or ``None`` (no window).
    """

    max_steps: int
    time_window_s: float | None = None
    #: endings after which the runner may ask for a final answer (:data:`LIMIT_STOPS`)
    asks_final_answer = LIMIT_STOPS

    def __post_init__(self):
        if int(self.max_steps) != self.max_steps or self.max_steps < 0:
            raise ValueError(f"max_steps must be a whole number >= 0, got {self.max_steps!r}")
        if self.time_window_s is not None and not float(self.time_window_s) >= 0:
            raise ValueError(f"time_window_s must be >= 0 or None, got {self.time_window_s!r}")

    def reason(self, steps: int, sim_time_s: float, env_stop: str | None = None) -> str | None:
        """The stop reason after ``steps`` steps at ``sim_time_s`` simulated seconds, the environment having
        reported ``env_stop`` for the last step; ``None``: the episode goes on."""
        if env_stop:
            return str(env_stop)
        if self.time_window_s is not None and sim_time_s >= self.time_window_s:
            return TIME_WINDOW_STOP
        if steps >= self.max_steps:
            return MAX_STEPS_STOP
        return None

    def at_start(self, env) -> str | None:
        """The stop reason right after ``env.reset`` (a :class:`~.env.ContinuousEnv`), before any action."""
        return self.reason(int(env.counters["steps"]), float(env.sim_time_s))

    def after_step(self, env, info: Mapping[str, Any]) -> str | None:
        """The stop reason after ``env.step`` returned ``info``."""
        return self.reason(int(env.counters["steps"]), float(env.sim_time_s), info.get("stop_reason"))

    @staticmethod
    def truncated(reason: str | None) -> bool:
        """Whether Gymnasium calls this ending a truncation (only the step limit)."""
        return reason == MAX_STEPS_STOP

    @staticmethod
    def answer(reason: str | None, action: Any) -> Any:
        """The episode's answer: the ending action's ``answer`` field when the environment ended it, else ``None``."""
        if reason not in ENV_STOPS:
            return None
        given = action.to_dict() if hasattr(action, "to_dict") else action
        return given.get("answer") if isinstance(given, Mapping) else None


__all__ = ["CLOSURE_VIOLATION_STOP", "ENV_STOPS", "EpisodeEnd", "LIMIT_STOPS", "MAX_STEPS_STOP", "TERMINATE_STOP",
           "TIME_WINDOW_STOP"]
