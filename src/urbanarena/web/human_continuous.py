"""A human player in continuous mode (UrbanGround's action schema): the browser's actions, checked.

The continuous counterpart of :mod:`urbanarena.web.human`. Every continuous episode
runs through the runner's own loop
(:meth:`urbanarena.runner.continuous_episode.ContinuousEpisodeRunner.run`: the same
:class:`~urbanarena.env.continuous.ContinuousEnv`, first-person observer, map,
stop rules, scorer and store row as any agent) with a :class:`ContinuousHumanAgent`,
whose ``act`` hands the observation to the episode's
:class:`~urbanarena.web.human.EpisodeChannel` and blocks until the participant's
action arrives over HTTP. The action it returns is UrbanGround's action JSON, so the
env executes a key press exactly as it executes an agent's reply, in simulated time.

Time limit: the channel returns a sentinel (the arena's ``S`` action, which no
continuous action can be) when the participant's time is up; the agent then raises
:class:`TimeLimitReached` before any step is taken and notes ``time_limit_reached``
in its ``stats``. The runner ends the episode as an agent error and scores the
trajectory so far (as it does for ``max_steps``); the play service then rewrites the
row's stop reason to ``TIME_LIMIT`` (:func:`mark_time_limit`).

Actions (:func:`parse_continuous_action`): a JSON object in UrbanGround's flat
schema (:mod:`urbanarena.env.continuous.actions`) with only that action's fields.
Refused (``ValueError``, the HTTP layer's 422), with a sentence naming the problem:
anything :meth:`ContinuousAction.from_dict` cannot read (unknown action, bad ``dir``,
a value that is not a finite number), ``parse_error`` (the model layer's, not a
player's), a field the action does not have (``memory`` included: a player keeps
their own notes), an action of the other mode (e.g. ``map_pan`` in first-person
mode: an agent's such action would consume a step; a player's is refused, as the
page never sends one), and an ``answer`` that is not text of at most 2000
characters. Values out of range are passed on as given: the env clamps and records
them, as for an agent.
"""

from __future__ import annotations

import math
import time
from typing import Any, Mapping

from urbanarena.env.arena_env import ArenaAction
from urbanarena.env.continuous.actions import (
    FIRST_PERSON_KINDS, LIMITS, MAP_KINDS, MOTION_KINDS, ActionFormatError, ActionKind, ContinuousAction,
)
from urbanarena.runner.results import graph_columns
from urbanarena.web.human import TIME_LIMIT, HumanAgent

#: observation modes (``ContinuousEnv.mode``)
FIRST_PERSON = "first_person"
MAP = "map"
#: longest answer text accepted
MAX_ANSWER_CHARS = 2000


class TimeLimitReached(RuntimeError):
    """The participant's time for the task ran out before they acted (module docstring)."""


class ContinuousHumanAgent(HumanAgent):
    """The participant in continuous mode, acting through an :class:`~urbanarena.web.human.EpisodeChannel`.

    Args:
        channel: the episode's channel.
        time_limit_s: the study's per-task limit (part of ``config()``).
    """

    action_style = "continuous"

    def act(self, observation: dict[str, Any]) -> dict[str, Any]:  # type: ignore[override]
        """Publish ``observation`` and return the participant's action (UrbanGround's JSON dict).

        Raises:
            TimeLimitReached: the time ran out before an action arrived.
            EpisodeCancelled: the server is shutting down.
        """
        action = self.channel.exchange(observation)
        if isinstance(action, ArenaAction):  # the channel's deadline sentinel
            self.stats["time_limit_reached"] = True
            raise TimeLimitReached(f"time limit of {self.channel.time_limit_s:g} s reached")
        shown = self.channel.shown_at
        if shown is not None:
            self.stats["decision_seconds"].append(round(time.monotonic() - shown, 3))
        return dict(action)


def _allowed_fields(kind: ActionKind) -> set[str]:
    out = {"action"} | set(LIMITS.get(kind, {}))
    if kind in MOTION_KINDS:
        out.add("dir")
    if kind == ActionKind.TERMINATE:
        out.add("answer")
    return out


def parse_continuous_action(data: Any, mode: str | None = None) -> dict[str, Any]:
    """The action to hand to the env from the browser's JSON (module docstring).

    Args:
        data: ``{"action": NAME, ...fields}``.
        mode: the current observation's mode (``"first_person"`` / ``"map"``); ``None``: not checked.
    Returns: the action as UrbanGround's JSON: ``action`` (lower case), ``dir`` for move/sprint, the given
        numeric fields as floats, ``answer`` for terminate when given.
    Raises:
        ValueError: a malformed action, a field the action does not have, an action of the other mode.
    """
    if not isinstance(data, Mapping):
        raise ValueError('an action is a JSON object such as {"action": "move", "dir": "forward", "seconds": 0.5}')
    name = data.get("action")
    if not isinstance(name, str):
        raise ValueError(f"unknown action {name!r} (one of move, sprint, look, jump, open_map, map_select, map_pan, "
                         "map_zoom, map_orbit, close_map, terminate)")
    if name.strip().lower() == ActionKind.PARSE_ERROR.value:
        raise ValueError("unknown action 'parse_error' (the model layer's, not a player's)")
    try:
        parsed = ContinuousAction.from_dict(data)
    except ActionFormatError as e:
        raise ValueError(str(e)) from None
    kind = parsed.kind
    extra = sorted(set(map(str, data)) - _allowed_fields(kind))
    if extra:
        allowed = ", ".join(sorted(_allowed_fields(kind) - {"action"})) or "none"
        raise ValueError(f"{kind.value} has no field {', '.join(extra)} (its fields: {allowed})")
    if mode is not None:
        allowed_kinds = FIRST_PERSON_KINDS if mode == FIRST_PERSON else MAP_KINDS
        if kind not in allowed_kinds:
            hint = "open the map first" if mode == FIRST_PERSON else "close the map first"
            raise ValueError(f"{kind.value} is unavailable in {mode} mode ({hint})")
    out: dict[str, Any] = {"action": kind.value}
    if parsed.dir is not None:
        out["dir"] = parsed.dir.value
    for k in LIMITS.get(kind, {}):
        if k in parsed.values:
            v = float(parsed.values[k])
            assert math.isfinite(v)
            out[k] = v
    if kind == ActionKind.TERMINATE and data.get("answer") is not None:
        ans = data["answer"]
        if not isinstance(ans, str) or len(ans) > MAX_ANSWER_CHARS:
            raise ValueError(f"terminate: answer must be text of at most {MAX_ANSWER_CHARS} characters")
        if ans.strip():
            out["answer"] = ans
    return out


def mark_time_limit(row: dict[str, Any]) -> dict[str, Any]:
    """A continuous row whose agent ran out of time (``agent_stats.time_limit_reached``) with stop reason
    ``TIME_LIMIT``, no error and its results-schema columns recomputed; other rows unchanged."""
    if not (row.get("agent_stats") or {}).get("time_limit_reached"):
        return row
    row = dict(row)
    limit = (row.get("error") or "").splitlines()[0] if row.get("error") else "time limit reached"
    row["stop_reason"] = TIME_LIMIT
    row["error"] = None
    details = dict(row.get("details") or {})
    details["stop_reason_detail"] = limit.removeprefix(f"{TimeLimitReached.__name__}: ")
    row["details"] = details
    row["v3"] = graph_columns(row)
    return row


__all__ = ["ContinuousHumanAgent", "FIRST_PERSON", "MAP", "MAX_ANSWER_CHARS", "TimeLimitReached", "mark_time_limit",
           "parse_continuous_action"]
