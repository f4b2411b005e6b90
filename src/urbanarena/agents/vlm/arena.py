"""ReAct agent with reflection memory for the arena (360CityArena's protocol).

Each step the agent sends one request (system prompt = ``arena_system`` with
the task text; one user turn = ``arena_step`` text with the memory and the
recent-action window, then the camera view, the current-location map when the
observation has one, and the task's reference images) and expects one JSON
object ``{"thought", "action", "memory", "answer"}`` back, parsed by
:func:`~urbanarena.agents.vlm.parsing.parse_arena_reply`.

Control modes (``control``, :mod:`urbanarena.agents.controls`): under
``--blind`` every image part is replaced by a line saying no image is
available, under ``--no-map`` the map pictures (current-location map and the
reference maps of localization and map-navigation tasks), under
``--oracle-perception`` the camera view by the features it shows
(``observation["features_in_view"]``, added by the env wrapper the mode
supplies) and the maps by a line; the text of every request is otherwise the
same.

Memory (reflection). The agent owns it and sends it with every action (the
env echoes it). As in 360CityArena's runner (``KeyActionGenerator``), a
``memory`` that is empty or only whitespace keeps the previous memory; any
other string replaces it (the prompt asks the model to copy the old notes
forward). Under ``cityarena-v1`` memory is taken from any reply that is a JSON
object, even one whose action is then rejected, because the reference
updates memory before it validates the action; under ``urbanarena-v1`` only
from accepted replies.

Recent actions. The last ``recent_actions_window`` (protocol parameter, 5)
executed actions, oldest first, as ``step k: {"thought": ..., "action": ...,
"answer": ...}`` lines built from ``obs["recent_actions"]`` and the thoughts
the agent recorded; parse-error steps executed nothing and are not listed
(the reference keeps only successfully parsed replies). ``urbanarena-v1``
adds each action's outcome (metres moved, blocked, invalid). The reference
also re-sends these replies as separate assistant turns; we keep them inside
the user text only, so the conversation stays a single user turn that every
provider accepts.

Unusable replies, by the protocol's ``parse_failure`` parameter:

* ``re-request`` (``cityarena-v1``): the request is built again from the
  same observation and sent again, up to ``max_reasks`` (3) times, without
  consuming a step (360CityArena's Unity client retries a failed reply); then
  the step is consumed as :meth:`ArenaAction.parse_error`. Sizes outside
  SMALL/MEDIUM/LARGE fall back to the default size and an empty ANSWER is
  accepted, as the reference runner does (both noted in ``stats["notes"]``).
* ``corrective-re-ask`` (``urbanarena-v1``): the bad reply and an
  ``arena_correction`` message naming the problem are appended to the
  conversation, up to ``max_reasks`` (2) times within the step; then the step
  is consumed as a parse error. A size out of range and an empty ANSWER are
  parse failures.

Nothing unusable is ever replaced by a default action. ``stats`` counts:
``requests`` (and all :class:`UsageCounters` fields: tokens, latency, faults
by type, retries, cache hits, cost), ``steps``, ``reasks``,
``parse_failures`` (unusable replies), ``parse_errors`` (by type),
``parse_error_steps`` (steps consumed as PARSE_ERROR), ``repairs`` and
``notes`` (by type), ``memory_updates``, ``invalid_actions`` /
``blocked_moves`` (reported by the episode loop through
:meth:`record_outcome`) and a per-step ``trace``.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from urbanarena.agents.base import AgentContext
from urbanarena.agents.clients import Image, Message, Text
from urbanarena.agents.controls import MAP, VIEW, reference_features, reference_role
from urbanarena.agents.prompts import ARENA_TEMPLATES
from urbanarena.agents.vlm.common import ReAskAgent
from urbanarena.agents.vlm.parsing import parse_arena_reply
from urbanarena.env.arena_env import ArenaAction
from urbanarena.env.protocols import get_protocol
from urbanarena.errors import NoImageryError, ProtocolError
from urbanarena.tasks.schema import Task

VIEW_LABEL = "Your current camera view:"
MAP_LABEL = "Map of your current location (the marker is you, pointing where you face):"
REFERENCE_LABEL = "Reference images for the task:"
EMPTY_MEMORY = "(empty)"
NO_ACTIONS = "(none yet)"
THOUGHT_TRACE_CHARS = 300

#: per ``parse_failure`` rule: how sizes out of range, empty answers and memory are treated
PARSE_RULES: dict[str, dict[str, Any]] = {
    "re-request": {"magnitude_out_of_range": "default", "empty_answer": "accept", "memory_from": "any-object",
                   "recent_outcomes": False},
    "corrective-re-ask": {"magnitude_out_of_range": "error", "empty_answer": "error", "memory_from": "accepted",
                          "recent_outcomes": True},
}


class ArenaReActAgent(ReAskAgent):
    """360CityArena-style ReAct agent with reflection memory (module docstring).

    Args:
        model, generation, images, prompt_templates, cache, cache_path,
        max_usd, max_requests, budget_ledger, timeout_s, retry, api_key_env,
        client: see :mod:`urbanarena.agents.vlm.common`.
        include_map: send the current-location map when the observation has one.
        control: control mode (:mod:`urbanarena.agents.controls`): pictures withheld or replaced by text.
    ``act`` returns an :class:`ArenaAction`; the agent runs in an
    :class:`~urbanarena.env.arena_env.ArenaEnv` (see
    :mod:`urbanarena.agents.vlm.arena_loop`).
    """

    name = "vlm-arena"
    template_names = ARENA_TEMPLATES

    def __init__(self, model: str | None = None, *, include_map: bool = True, **kwargs: Any):
        super().__init__(model, **kwargs)
        self.include_map = bool(include_map)
        self.protocol_id: str | None = None

    def options(self) -> dict[str, Any]:
        return {"include_map": self.include_map, "parse_rules": PARSE_RULES}

    @staticmethod
    def max_requests_per_step(protocol_id: str) -> int:
        """Upper bound of model requests per env step under ``protocol_id`` (1 + ``max_reasks``), for ``--dry-run``."""
        return 1 + int(get_protocol(protocol_id).params.get("max_reasks", 0))

    def protocol_generation(self, protocol_id: str) -> dict[str, Any]:
        return dict(get_protocol(protocol_id).params.get("generation") or {})

    def protocol_images(self, protocol_id: str) -> dict[str, Any]:
        """``cityarena-v1``: images over the provider's byte limit shrink in 15 % steps (paper A.4)."""
        step = get_protocol(protocol_id).params.get("image_downscale_step")
        return {"downscale_step": float(step)} if step is not None else {}

    # ------------------------------------------------------------ episode
    def reset(self, task: Task, context: AgentContext) -> None:
        """Start an episode under ``context.protocol_id`` (``cityarena-v1`` or ``urbanarena-v1``).

        Raises:
            ProtocolError: not an arena protocol.
            MissingAPIKeyError / ModelSpecError: the client cannot be built.
        """
        params = get_protocol(context.protocol_id).params
        if params.get("action_set") != "arena" or params.get("parse_failure") not in PARSE_RULES:
            raise ProtocolError(f"agent {self.name!r} runs arena protocols (cityarena-v1, urbanarena-v1), "
                                f"not {context.protocol_id!r}")
        self.protocol_id = context.protocol_id
        self.parse_failure = str(params["parse_failure"])
        self.max_reasks = int(params["max_reasks"])
        self.window = int(params["recent_actions_window"])
        self.rules = PARSE_RULES[self.parse_failure]
        self.reading = str(params.get("reply_reading", "lenient"))  # cityarena-v1: the reference parser's
        self.task_text = task.instruction
        self.reference_role = reference_role(task)
        self.reference_features = reference_features(task, context.city, self.control)
        self.memory = ""
        self.thoughts: dict[int, str] = {}
        self.own_recent: list[dict[str, Any]] = []
        self._first = True
        self.reset_common(context)
        self.stats.update({"parse_failure_rule": self.parse_failure, "max_reasks": self.max_reasks,
                           "parse_error_steps": 0, "memory_updates": 0, "invalid_actions": 0, "blocked_moves": 0})

    def record_outcome(self, info: Mapping[str, Any]) -> None:
        """Count the env's verdict on the last action (called by the episode loop after ``env.step``)."""
        if info.get("invalid_action"):
            self.stats["invalid_actions"] += 1
        if info.get("blocked"):
            self.stats["blocked_moves"] += 1

    # ------------------------------------------------------------ requests
    def _recent_text(self, obs: Mapping[str, Any]) -> str:
        entries = list(obs.get("recent_actions") or self.own_recent)[-self.window:] if self.window > 0 else []
        if not entries:
            return NO_ACTIONS
        lines = []
        for e in entries:
            k = int(e["step"])
            size = e.get("magnitude") or (e.get("answer") if e.get("kind") == "ANSWER" else None) or ""
            line = f"step {k}: " + json.dumps({"thought": self.thoughts.get(k, ""), "action": e["kind"], "answer": size},
                                              ensure_ascii=False)
            if self.rules["recent_outcomes"]:
                if e.get("invalid"):
                    line += " -> invalid: no such arrow was shown"
                elif e.get("blocked"):
                    line += f" -> blocked after {float(e.get('moved_m') or 0.0):.1f} m"
                elif e.get("kind") == "W":
                    line += f" -> moved {float(e.get('moved_m') or 0.0):.1f} m"
            lines.append(line)
        return "\n".join(lines)

    def user_message(self, obs: Mapping[str, Any], step: int) -> Message:
        """The step's user turn: text, camera view, map (optional), reference images."""
        text = self.templates["arena_step"].render(memory=self.memory if self.memory.strip() else EMPTY_MEMORY,
                                                   recent_actions=self._recent_text(obs), step=step)
        c = self.control  # pictures as the control mode shows them (urbanarena.agents.controls)
        parts: list[Text | Image] = [Text(text), Text(VIEW_LABEL),
                                     *c.parts(VIEW, obs.get("view"), obs.get("features_in_view"))]
        if self.include_map and obs.get("map") is not None:
            parts += [Text(MAP_LABEL), *c.parts(MAP, obs["map"])]
        refs = list(obs.get("reference_images") or [])
        if refs:
            parts.append(Text(REFERENCE_LABEL))
            for r in refs:
                parts += c.parts(self.reference_role, r, getattr(self, "reference_features", None))
        return Message("user", parts)

    # ------------------------------------------------------------ act
    def act(self, observation: dict[str, Any]) -> ArenaAction:
        """One step: request(s) until a usable reply or the protocol's re-asks are spent.

        Raises:
            NoImageryError: the observation has no camera view.
            ModelTransportError / ModelRequestError / BudgetExceeded /
            CacheMissError: from the client (counted in ``stats`` first).
        """
        obs = observation
        if obs.get("view") is None and self.control.shows_view:
            raise NoImageryError(
                f"agent {self.name!r} needs a camera view but the observation has none: the city is graph-only "
                "(attach panoramas with urbanarena.world.imagery) or the arena env was built without an observer")
        step, system = self._begin_step(obs, "arena_system")
        failures: list[str] = []
        rec: dict[str, Any] = {"step": step, "requests": 0, "failures": failures, "repairs": [], "notes": []}
        parsed = self._ask(
            step, system, rec, lambda: self.user_message(obs, step),
            lambda reply: parse_arena_reply(reply.text, reply.flags,
                                            magnitude_out_of_range=self.rules["magnitude_out_of_range"],
                                            empty_answer=self.rules["empty_answer"], reading=self.reading),
            lambda bad: self.templates["arena_correction"].render(error=bad.detail))
        if parsed is not None:
            action = ArenaAction(parsed.action.kind, parsed.action.magnitude, parsed.action.answer,
                                 memory=self.memory)
            self.thoughts[step] = parsed.thought
            self.own_recent.append({"step": step, "kind": action.kind.value,
                                    "magnitude": action.magnitude.value if action.magnitude else None,
                                    "answer": action.answer})
            rec.update(action=action.label(), thought=parsed.thought[:THOUGHT_TRACE_CHARS])
            self.stats["trace"].append(rec)
            return action
        rec["action"] = "PARSE_ERROR"
        self.stats["trace"].append(rec)
        return ArenaAction.parse_error(error="; ".join(failures), memory=self.memory)

__all__ = ["ArenaReActAgent", "PARSE_RULES"]
