"""A human player as an arena agent: the browser supplies the actions, the runner does the rest.

The play server runs every human episode through the runner's own arena
episode (:meth:`urbanarena.runner.arena.ArenaEpisodeRunner.run`: the same
env, observer, map, reference images, stop rules, validator and store row as
any agent). The agent is :class:`HumanAgent`, whose ``act`` hands the
observation to an :class:`EpisodeChannel` and blocks until the participant's
action arrives over HTTP. The episode runs in its own thread
(:class:`EpisodeThread`), one per participant at a time.

Time limit: :class:`TimeLimitWrapper` is the outermost env wrapper (given to
the runner through the agent's ``control.env_wrapper`` hook, the one the
control modes use). The clock starts when the first observation is handed to
the participant. When it has run out, the next step executes nothing and ends
the episode with ``truncated`` and ``stop_reason = "TIME_LIMIT"``; ``act``
returns by itself at the deadline, so an idle participant's episode ends on
time too. The step that hits the limit is not counted (no action was taken).

Per-step decision times (seconds from the observation being handed over to
the action arriving) go to ``agent_stats["decision_seconds"]``.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

import gymnasium as gym

from urbanarena.agents.base import Agent, AgentContext
from urbanarena.env.arena_env import ActionKind, ArenaAction
from urbanarena.runner.trace import EpisodeCancelled
from urbanarena.tasks.schema import Task

#: stop reason of an episode whose time ran out
TIME_LIMIT = "TIME_LIMIT"


class EpisodeChannel:
    """Hands observations from the episode thread to HTTP requests and actions back (thread-safe).

    Args:
        time_limit_s: seconds from the first observation, ``None`` = no limit.
    Attributes:
        seq: observations handed over so far (the participant acts on ``seq``).
        obs: the latest observation (the env's dict).
        done: the episode ended; ``row`` holds its store row (``None`` when it failed: ``error``).
    """

    def __init__(self, time_limit_s: float | None = None):
        self.time_limit_s = time_limit_s
        self._cv = threading.Condition()
        self.seq = 0
        self.obs: dict[str, Any] | None = None
        self._action: ArenaAction | None = None
        self.deadline: float | None = None
        self.shown_at: float | None = None
        self.done = False
        self.row: dict[str, Any] | None = None
        self.error: str | None = None
        self.cancelled = False

    def remaining_s(self) -> float | None:
        """Seconds left (``None`` without a limit or before the first observation); 0 when over."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def expired(self) -> bool:
        """Whether the time limit has run out."""
        return self.deadline is not None and time.monotonic() >= self.deadline

    # ------------------------------------------------------ episode thread
    def exchange(self, obs: dict[str, Any]) -> ArenaAction:
        """Publish ``obs`` and wait for the participant's action (or the deadline).

        Returns: the action; at the deadline a ``S`` action that :class:`TimeLimitWrapper` does not execute.
        Raises:
            EpisodeCancelled: the server is shutting down.
        """
        with self._cv:
            now = time.monotonic()
            if self.deadline is None and self.time_limit_s is not None:
                self.deadline = now + float(self.time_limit_s)
            self.obs = obs
            self.seq += 1
            self.shown_at = now
            self._action = None
            self._cv.notify_all()
            while self._action is None and not self.cancelled:
                rem = self.remaining_s()
                if rem is not None and rem <= 0:
                    return ArenaAction(ActionKind.S)
                self._cv.wait(timeout=rem)
            if self.cancelled:
                raise EpisodeCancelled("play server shutting down")
            action, self._action = self._action, None
            return action

    def finish(self, row: dict[str, Any] | None = None, error: str | None = None) -> None:
        """Mark the episode ended (with its stored row, or the error that stopped it)."""
        with self._cv:
            self.done, self.row, self.error = True, row, error
            self._cv.notify_all()

    # ------------------------------------------------------ HTTP side
    def submit(self, action: ArenaAction, seq: int) -> bool:
        """Hand ``action`` over for observation ``seq``. Returns False (nothing done) when the episode ended,
        ``seq`` is not the current observation, or an action for it is already pending."""
        with self._cv:
            if self.done or self.cancelled or int(seq) != self.seq or self._action is not None:
                return False
            self._action = action
            self._cv.notify_all()
            return True

    def wait_after(self, seq: int, timeout_s: float) -> bool:
        """Wait until an observation after ``seq`` is published or the episode ended; False on timeout."""
        with self._cv:
            return self._cv.wait_for(lambda: self.seq > seq or self.done, timeout=timeout_s)

    def cancel(self) -> None:
        """Abort the episode at its next ``act`` (nothing is stored)."""
        with self._cv:
            self.cancelled = True
            self._cv.notify_all()


class TimeLimitWrapper(gym.Wrapper):
    """Ends the episode with ``TIME_LIMIT`` once the channel's time is up (module docstring)."""

    def __init__(self, env: gym.Env, channel: EpisodeChannel):
        super().__init__(env)
        self.channel = channel
        self._last_obs: Any = None

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self._last_obs = obs
        return obs, info

    def step(self, action):
        if self.channel.expired():
            counters = dict(getattr(self.env.unwrapped, "counters", {}) or {})
            info = {"stop_reason": TIME_LIMIT, "stop_privileged": False, "counters": counters,
                    "stop_reason_detail": f"time limit of {self.channel.time_limit_s:g} s reached"}
            return self._last_obs, 0.0, False, True, info
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._last_obs = obs
        return obs, reward, terminated, truncated, info


class _TimeLimitControl:
    """The ``control`` hook the runner asks for an env wrapper (:func:`urbanarena.runner.arena.control_wrapper`)."""

    def __init__(self, channel: EpisodeChannel):
        self.channel = channel

    def env_wrapper(self, hfov_deg: float) -> Callable[[gym.Env], gym.Env]:
        return lambda env: TimeLimitWrapper(env, self.channel)


class HumanAgent(Agent):
    """The participant, acting through an :class:`EpisodeChannel` (module docstring).

    Args:
        channel: the episode's channel.
        time_limit_s: the study's per-task limit (part of ``config()`` and so of the config hash).
    """

    name = "human"
    uses_images = True

    def __init__(self, channel: EpisodeChannel, time_limit_s: float | None = None):
        super().__init__(input="browser", time_limit_s=time_limit_s)
        self.channel = channel
        self.control = _TimeLimitControl(channel)
        self.stats = {"decision_seconds": []}

    def reset(self, task: Task, context: AgentContext) -> None:
        self.stats = {"decision_seconds": []}

    def act(self, observation: dict[str, Any]) -> ArenaAction:
        action = self.channel.exchange(observation)
        shown = self.channel.shown_at
        if shown is not None:
            self.stats["decision_seconds"].append(round(time.monotonic() - shown, 3))
        return action


class EpisodeThread(threading.Thread):
    """Runs ``run()`` (the runner's episode, returning its row) in a daemon thread; then calls
    ``on_row(row)`` (storing it) and finishes the channel. A cancelled episode finishes with error
    ``"cancelled"`` and no row; any other failure with its message."""

    def __init__(self, channel: EpisodeChannel, run: Callable[[], dict[str, Any]],
                 on_row: Callable[[dict[str, Any]], None]):
        super().__init__(daemon=True, name="urbanarena-play-episode")
        self.channel = channel
        self._run = run
        self._on_row = on_row

    def run(self) -> None:
        try:
            row = self._run()
            self._on_row(row)
        except EpisodeCancelled:
            self.channel.finish(error="cancelled")
        except BaseException as e:  # noqa: BLE001 - reported to the participant's page, never swallowed silently
            self.channel.finish(error=f"{type(e).__name__}: {e}")
        else:
            self.channel.finish(row=row)


def parse_action(data: Any) -> ArenaAction:
    """An :class:`ArenaAction` from the browser's JSON ``{"kind", "magnitude"?, "answer"?}``.

    ``kind`` is one of W S A D Q E LEFT RIGHT UP ANSWER (``PARSE_ERROR`` is the model layer's, not a player's);
    ``magnitude`` SMALL / MEDIUM / LARGE or absent; ``answer`` the ANSWER text (at most 2000 characters).

    Raises:
        ValueError: anything else.
    """
    if not isinstance(data, dict):
        raise ValueError("an action is a JSON object {kind, magnitude?, answer?}")
    kind = data.get("kind")
    if not isinstance(kind, str) or kind == ActionKind.PARSE_ERROR.value:
        raise ValueError(f"unknown action kind {kind!r}")
    try:
        k = ActionKind(kind)
    except ValueError:
        raise ValueError(f"unknown action kind {kind!r}") from None
    mag = data.get("magnitude") or None
    answer = data.get("answer")
    if k == ActionKind.ANSWER:
        if not isinstance(answer, str) or len(answer) > 2000:
            raise ValueError("ANSWER needs an answer text of at most 2000 characters")
        return ArenaAction(k, answer=answer)
    return ArenaAction(k, mag)


__all__ = ["EpisodeChannel", "EpisodeThread", "HumanAgent", "TIME_LIMIT", "TimeLimitWrapper", "parse_action"]
