"""VLM agent for the UrbanGround ladder (``vlm-urbanground``): one UrbanGround action per model call.

The agent runs in :class:`~urbanarena.env.continuous.ContinuousEnv` (``urbanground`` tasks, protocol
``urbanground-v1``; the runner's loop is :mod:`urbanarena.runner.continuous_episode`).

Inputs (``-p inputs=...``, in ``config()``; default: the protocol's ``agent_inputs``, ``reference``
under ``urbanground-v1``), a strategy object chosen at ``reset``:

* ``reference`` -- UrbanGround's released agent (:mod:`urbanarena.agents.vlm.urbanground_react`,
  :class:`~urbanarena.agents.vlm.urbanground_react.ReferenceInputs`): the task text on the first
  turn only, one screenshot per turn, no simulator state, the text conversation as memory,
  ``{"observation", "reason", "action": {...}}`` replies, a separate final-answer request for
  questions;
* ``state`` -- ours (:class:`StateInputs`, described below): every request carries the state text,
  which gives the agent PRIVILEGED information UrbanGround's agent never sees -- its position in
  lat/lon, the nearest street's name, whether it stands on the pedestrian network, the map's centre
  and the selected point's coordinates and street --, plus a memory field and its recent actions.

With ``state`` inputs each step sends one request:

* system = ``urbanground_system`` with the task text (``observation["text"]["task"]``: the
  instruction, and for questions the options and how to answer);
* one user turn = ``urbanground_step`` (the state text -- position, camera yaw/pitch, simulated
  time, nearest street, on the pedestrian network, and in map mode the map's centre, size and
  selected point --, the closure notices delivered so far, the result of the last action, the
  agent's memory, its recent actions with their outcomes, the step number, the mode and the actions
  allowed in it), then the picture of the mode -- the first-person view in first-person mode, the
  map in map mode -- and the task's reference images, if any.

Reply: ONE JSON object, an action in UrbanGround's flat schema
(:mod:`urbanarena.env.continuous.actions`) plus optional ``thought`` and ``memory``, e.g.
``{"thought": "...", "action": "move", "dir": "forward", "seconds": 1.5, "memory": "..."}``;
questions are answered with ``{"action": "terminate", "answer": "B"}``. Parsed by
:func:`parse_urbanground_reply`: JSON extraction and its counted lenient readings are
:func:`~urbanarena.agents.vlm.parsing.extract_json_object`'s; the action is read and validated by
:meth:`ContinuousAction.from_dict` (the env's own reader). Values out of range are *not* the
agent's business: they are passed on as given and the env clamps and records them
(``info["clamped"]``); missing numeric fields take UrbanGround's defaults in the env
(``info["defaulted"]``, noted here as ``defaulted_<field>``).

Unusable replies (failure types, counted in ``stats["parse_errors"]``): those of
:mod:`~urbanarena.agents.vlm.parsing` (``empty``, ``refusal``, ``truncated``, ``oversized``,
``no_json``, ``json_invalid``, ``missing_action``), ``unknown_action`` (not one of UrbanGround's
action names), ``wrong_mode`` (an action of the other mode: e.g. ``map_pan`` in first-person
mode), ``invalid_field`` (a ``dir`` that is not forward/backward/left/right, a number that is not
a finite number), ``empty_answer`` (``terminate`` without an answer on a question task, under
``corrective-re-ask``). They are handled by the arena agent's documented rule
(:mod:`urbanarena.agents.vlm.arena`, ``docs/vlm-agents.md``), chosen by ``parse_failure``:

* ``corrective-re-ask`` (default, as ``urbanarena-v1``): the bad reply and an
  ``urbanground_correction`` message naming the problem are appended to the conversation, up to
  ``max_reasks`` (default 2) times within the step; memory only from accepted replies; an empty
  answer to a question is a failure;
* ``re-request`` (as ``cityarena-v1``): the same request is sent again, up to ``max_reasks`` times;
  memory from any JSON-object reply; an empty answer is accepted (noted).

When the re-asks are spent the step sends the env's ``parse_error`` action
(``{"action": "parse_error", "error": ...}``): it executes nothing, consumes the step and is counted
by the env (``counters["parse_errors"]``) and here (``parse_error_steps``). Nothing unusable is ever
replaced by a default action.

Memory: a blank ``memory`` keeps the previous notes, any other string replaces them; the agent sends
its memory with every action (the env echoes it in ``text["memory"]``). Recent actions: the last
``recent_actions_window`` (5) actions the agent sent, oldest first, as
``step k: {"thought", "action"} -> outcome`` (outcome from the env's ``info`` via
:meth:`record_outcome`: metres walked of intended, blocked, invalid, clamped; map actions: the env's
result line); parse-error steps executed nothing and are not listed.

``act`` returns UrbanGround's action JSON (a dict: the canonical action name and ``dir``, the
numeric fields as the model gave them, ``memory``, and ``answer`` for ``terminate``).

``stats``: the :class:`~urbanarena.agents.vlm.common.ModelAgent` counters (requests, tokens,
faults, ``reasks``, ``parse_failures``, ``parse_errors`` by type, ``repairs``, ``notes``) plus
``parse_error_steps``, ``memory_updates``, ``invalid_actions``, ``blocked_moves``,
``clamped_actions``, ``map_actions`` (sent), ``actions`` (accepted, by name) and a per-step
``trace`` (step, mode, requests, failures, repairs, notes, action, thought, memory).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from urbanarena.agents.base import AgentContext
from urbanarena.agents.clients import Image, Message, Text
from urbanarena.agents.controls import MAP, VIEW, reference_features, reference_role
from urbanarena.agents.prompts import URBANGROUND_TEMPLATES
from urbanarena.agents.vlm.common import ReAskAgent, bump
from urbanarena.agents.vlm.parsing import MemoryReply, answer_text, extract_json_object, memory_reply
from urbanarena.env.continuous.actions import (
    FIRST_PERSON_KINDS, MAP_KINDS, MOTION_KINDS, ActionFormatError, ActionKind, ContinuousAction,
)
from urbanarena.env.protocols import get_protocol
from urbanarena.errors import NoImageryError, ProtocolError
from urbanarena.tasks.schema import Task

FIRST_PERSON_MODE = "first_person"
MAP_MODE = "map"
VIEW_LABEL = "Your current first-person view:"
MAP_LABEL = ("The map (north up; the marker is you, pointing where you face; the scale bar gives distances; "
             "a cross marks the point you selected):")
REFERENCE_LABEL = "Reference images for the task:"
EMPTY_MEMORY = "(empty)"
NO_ACTIONS = "(none yet)"
NO_NOTICES = "(none)"
NO_RESULT = "(this is the start)"
THOUGHT_TRACE_CHARS = 300
MEMORY_TRACE_CHARS = 500
RECENT_THOUGHT_CHARS = 200

#: UrbanGround action names in the order the prompts list them (``parse_error`` is ours, never the model's)
MODEL_ACTIONS = ("move", "sprint", "look", "open_map", "map_select", "map_pan", "map_zoom", "close_map", "terminate")
#: actions allowed per mode, in prompt order
ALLOWED: dict[str, tuple[str, ...]] = {
    FIRST_PERSON_MODE: tuple(a for a in MODEL_ACTIONS if ActionKind(a) in FIRST_PERSON_KINDS),
    MAP_MODE: tuple(a for a in MODEL_ACTIONS if ActionKind(a) in MAP_KINDS),
}
#: UrbanGround's released agent also offers ``jump`` and ``map_orbit`` (its action space, in prompt order)
REFERENCE_ACTIONS = ("move", "sprint", "look", "jump", "open_map", "map_select", "map_pan", "map_zoom", "map_orbit",
                     "close_map", "terminate")
REFERENCE_ALLOWED: dict[str, tuple[str, ...]] = {
    FIRST_PERSON_MODE: tuple(a for a in REFERENCE_ACTIONS if ActionKind(a) in FIRST_PERSON_KINDS),
    MAP_MODE: tuple(a for a in REFERENCE_ACTIONS if ActionKind(a) in MAP_KINDS),
}
#: failure types this parser adds to :data:`urbanarena.agents.vlm.parsing.FAILURE_TYPES`
UG_FAILURE_TYPES = ("wrong_mode", "invalid_field")

#: per ``parse_failure`` rule (the arena agent's rules, :data:`urbanarena.agents.vlm.arena.PARSE_RULES`)
PARSE_RULES: dict[str, dict[str, Any]] = {
    "re-request": {"empty_answer": "accept", "memory_from": "any-object"},
    "corrective-re-ask": {"empty_answer": "error", "memory_from": "accepted"},
}
DEFAULT_PARSE_FAILURE = "corrective-re-ask"
#: what a request shows (``-p inputs=...``): UrbanGround's released agent, or ours with the state text
INPUTS = ("reference", "state")
DEFAULT_MAX_REASKS = 2
#: generation preset (UrbanGround publishes none: provider defaults, 2,048 output tokens, as the graph protocols)
UG_GENERATION = {"max_output_tokens": 2048}


@dataclass
class UrbanGroundReply(MemoryReply):
    """A parsed UrbanGround reply (the shared fields: :class:`~urbanarena.agents.vlm.parsing.MemoryReply`).

    Attributes:
        action: the accepted action as UrbanGround's JSON dict (canonical name and ``dir``,
            numeric fields as given, ``answer`` for ``terminate``; no ``memory``) or ``None``.
        kind: the accepted :class:`ActionKind` (``None`` on failure).
        answer: the ``terminate`` answer (``None`` when absent).
    """

    action: dict[str, Any] | None
    kind: ActionKind | None = None
    answer: str | None = None


def parse_urbanground_reply(text: str | None, flags: Iterable[str] = (), *, mode: str = FIRST_PERSON_MODE,
                            needs_answer: bool = False, empty_answer: str = "error",
                            allowed: Mapping[str, tuple[str, ...]] | None = None) -> UrbanGroundReply:
    """Parse a reply into one UrbanGround action (module docstring).

    Rules:

    * the JSON object (:func:`extract_json_object`; keys case-insensitive);
    * ``action``: one of :data:`MODEL_ACTIONS`, any case and surrounding blanks (repair
      ``action_case``); an object ``{"action": {"action": "move", ...}}`` is read as the inner
      action (repair ``nested_action``); ``type`` is accepted for ``action`` (repair
      ``type_field``); absent: ``missing_action``; another name: ``unknown_action``;
    * the action must be allowed in ``mode`` (:data:`ALLOWED`), else ``wrong_mode``;
    * the fields are read by :meth:`ContinuousAction.from_dict`: a bad ``dir`` or a value that is not
      a finite number fails with ``invalid_field``; numbers written as text are read (repair
      ``number_as_text``); missing numeric fields are noted (``defaulted_<field>``; the env uses
      UrbanGround's defaults); values out of range are kept as given (the env clamps and records);
    * ``terminate``: ``answer`` (text; a number becomes text, repair ``answer_not_string``);
      with ``needs_answer`` (a question task) an empty answer fails with ``empty_answer`` when
      ``empty_answer="error"``, else it is noted;
    * missing ``thought`` / ``memory`` are noted (``missing_field_<name>``).

    Args:
        text, flags: the reply text and its client flags.
        mode: ``"first_person"`` or ``"map"`` (the observation's mode).
        needs_answer: the task is a question (its ``terminate`` must carry an answer).
        empty_answer: ``"error"`` or ``"accept"``.
        allowed: the actions the model may name per mode (default :data:`ALLOWED`; the reference inputs
            use :data:`REFERENCE_ALLOWED`, which adds ``jump`` and ``map_orbit``).
    Raises:
        ValueError: unknown ``mode`` or ``empty_answer``.
    """
    per_mode = ALLOWED if allowed is None else allowed
    if mode not in per_mode:
        raise ValueError(f"mode must be one of {', '.join(per_mode)}, got {mode!r}")
    known = {a for names in per_mode.values() for a in names}
    if empty_answer not in ("error", "accept"):
        raise ValueError(f"empty_answer must be 'error' or 'accept', got {empty_answer!r}")
    ex = extract_json_object(text, flags)
    out = memory_reply(UrbanGroundReply, ex, ("thought", "memory"))
    if ex.obj is None:
        return out
    obj, repairs, notes = dict(ex.obj), out.repairs, out.notes
    allowed = per_mode[mode]
    fields = obj
    raw = obj.get("action")
    if isinstance(raw, Mapping):  # {"action": {"action": "move", "dir": ...}}
        inner = {str(k).strip().lower(): v for k, v in raw.items()}
        fields = {**{k: v for k, v in obj.items() if k != "action"}, **inner}
        raw = inner.get("action", inner.get("type"))
        repairs.append("nested_action")
    elif raw is None and obj.get("type") is not None:
        raw = obj.get("type")
        repairs.append("type_field")
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        out.failure, out.detail = "missing_action", f'the JSON object has no "action" (one of {", ".join(allowed)})'
        return out
    name = raw.strip().lower() if isinstance(raw, str) else None
    if name not in known:
        out.failure = "unknown_action"
        out.detail = f"unknown action {raw!r}; use one of {', '.join(allowed)}"
        return out
    if name != raw:
        repairs.append("action_case")
    kind = ActionKind(name)
    if name not in allowed:
        out.failure = "wrong_mode"
        other = "map" if mode == FIRST_PERSON_MODE else "first-person"
        out.detail = (f"{name} is a {other}-mode action and you are in "
                      f"{'first-person' if mode == FIRST_PERSON_MODE else 'map'} mode; use one of {', '.join(allowed)}")
        return out
    try:
        parsed = ContinuousAction.from_dict({**fields, "action": name})
    except ActionFormatError as e:
        out.failure, out.detail = "invalid_field", str(e)
        return out
    if any(isinstance(fields.get(f), str) for f in parsed.values):
        repairs.append("number_as_text")
    for f in parsed.defaulted:
        notes.append(f"defaulted_{f}")
    action = parsed.to_dict()
    if kind == ActionKind.TERMINATE:
        ans = answer_text(fields.get("answer"), repairs)
        if needs_answer and not ans:
            if empty_answer == "error":
                out.failure = "empty_answer"
                out.detail = 'this task is a question: terminate with its answer in "answer"'
                return out
            notes.append("empty_answer")
        if ans:
            action["answer"] = ans
            out.answer = ans
    out.action, out.kind = action, kind
    return out


def _fmt(v: Any, nd: int = 1) -> str:
    return f"{float(v):.{nd}f}" if isinstance(v, (int, float)) and math.isfinite(float(v)) else str(v)


def state_text(state: Mapping[str, Any]) -> str:
    """The ``[state]`` block of the step prompt from the env's text state (``observation["text"]["state"]``,
    UrbanGround's ``/state``): position (WGS84), camera yaw (degrees clockwise from north) and pitch
    (degrees, up positive), simulated time (seconds since the start), nearest street, whether the agent
    is on the pedestrian network, and in map mode the map's centre, extent and selected point."""
    lines = []
    if "lat" in state and "lon" in state:
        lines.append(f"position: lat {float(state['lat']):.6f}, lon {float(state['lon']):.6f}")
    if "yaw_deg" in state:
        lines.append(f"camera: yaw {_fmt(state['yaw_deg'])} deg (compass, clockwise from north), "
                     f"pitch {_fmt(state.get('pitch_deg', 0.0))} deg (up positive)")
    if "time_s" in state:
        lines.append(f"time: {_fmt(state['time_s'])} s since the start (simulated)")
    if "street" in state:
        lines.append(f"street: {state['street'] or '(no street within 15 m)'}")
    if "on_pedestrian_network" in state:
        lines.append(f"on a sidewalk or footway: {'yes' if state['on_pedestrian_network'] else 'no'}")
    m = state.get("map")
    if isinstance(m, Mapping):
        lines.append(f"map: centre lat {float(m['center_lat']):.6f}, lon {float(m['center_lon']):.6f}; "
                     f"shows {2 * float(m['half_m']):.0f} m from top to bottom "
                     f"({float(m['metres_per_px']):.2f} m per pixel)")
        sel = m.get("selected")
        if isinstance(sel, Mapping):
            street = f" ({sel['street']})" if sel.get("street") else ""
            lines.append(f"selected point: lat {float(sel['lat']):.6f}, lon {float(sel['lon']):.6f}{street}")
    return "\n".join(lines) if lines else "(no state)"


class UrbanGroundVLMAgent(ReAskAgent):
    """VLM agent for UrbanGround tasks in :class:`~urbanarena.env.continuous.ContinuousEnv` (module docstring).

    Args:
        model, generation, images, prompt_templates, cache, cache_path, max_usd, max_requests,
        budget_ledger, timeout_s, retry, api_key_env, client, control: see
            :mod:`urbanarena.agents.vlm.common`.
        parse_failure: ``"corrective-re-ask"`` (default) or ``"re-request"`` (module docstring).
        max_reasks: extra requests per step for unusable replies (default 2; 0..8).
        recent_actions_window: recent actions listed in the prompt (default 5; 0: none).
        include_references: send the task's reference images (default true).
    Raises:
        ValueError: an unknown ``parse_failure``, ``max_reasks`` outside 0..8, a negative window.
    """

    name = "vlm-urbanground"
    action_style = "continuous"
    template_names = URBANGROUND_TEMPLATES

    def __init__(self, model: str | None = None, *, parse_failure: str = DEFAULT_PARSE_FAILURE,
                 max_reasks: int = DEFAULT_MAX_REASKS, recent_actions_window: int = 5,
                 include_references: bool = True, inputs: str | None = None, **kwargs: Any):
        if parse_failure not in PARSE_RULES:
            raise ValueError(f"parse_failure must be one of {', '.join(PARSE_RULES)}, got {parse_failure!r}")
        if isinstance(max_reasks, bool) or not 0 <= int(max_reasks) <= 8:
            raise ValueError(f"max_reasks must be 0..8, got {max_reasks!r}")
        if int(recent_actions_window) < 0:
            raise ValueError(f"recent_actions_window must be >= 0, got {recent_actions_window!r}")
        if inputs is not None and inputs not in INPUTS:
            raise ValueError(f"inputs must be one of {', '.join(INPUTS)}, got {inputs!r}")
        super().__init__(model, **kwargs)
        self.parse_failure = parse_failure
        self.max_reasks = int(max_reasks)
        self.window = int(recent_actions_window)
        self.include_references = bool(include_references)
        self.inputs_param = inputs
        self.rules = PARSE_RULES[parse_failure]
        self.protocol_id: str | None = None
        self.inputs: Any = None

    def options(self) -> dict[str, Any]:
        return {"parse_failure": self.parse_failure, "max_reasks": self.max_reasks,
                "recent_actions_window": self.window, "include_references": self.include_references,
                "inputs": self.inputs_param or "protocol"}

    @staticmethod
    def _check_protocol(protocol_id: str) -> None:
        if get_protocol(protocol_id).params.get("action_set") != "urbanground":
            raise ProtocolError(f"agent 'vlm-urbanground' runs the UrbanGround protocol (urbanground-v1), "
                                f"not {protocol_id!r}")

    def inputs_for(self, protocol_id: str) -> str:
        """The inputs this agent uses under ``protocol_id``: ``-p inputs=...``, else the protocol's
        ``agent_inputs`` (``urbanground-v1``: ``reference``), else ``state``."""
        return self.inputs_param or str(get_protocol(protocol_id).params.get("agent_inputs", "state"))

    def max_requests_per_step(self, protocol_id: str) -> int:
        """Upper bound of model requests per env step, for ``--dry-run``: 1 + ``max_reasks`` (state inputs),
        one more for the final-answer request of a question (reference inputs).

        Raises:
            ProtocolError: not an UrbanGround protocol.
        """
        self._check_protocol(protocol_id)
        return 1 + self.max_reasks + (1 if self.inputs_for(protocol_id) == "reference" else 0)

    def protocol_generation(self, protocol_id: str) -> dict[str, Any]:
        return dict(UG_GENERATION)

    # ------------------------------------------------------------ episode
    def reset(self, task: Task, context: AgentContext) -> None:
        """Start an episode under ``context.protocol_id`` (``urbanground-v1``).

        Raises:
            ProtocolError: not an UrbanGround protocol.
            MissingAPIKeyError / ModelSpecError: the client cannot be built.
        """
        self._check_protocol(context.protocol_id)
        self.protocol_id = context.protocol_id
        self.task_text = task.instruction
        self.needs_answer = bool((task.extra or {}).get("options"))
        self.reference_role = reference_role(task)
        self.reference_features = reference_features(task, context.city, self.control)
        self.memory = ""
        self.recent: list[dict[str, Any]] = []
        self._pending: dict[str, Any] | None = None
        self._first = True
        self.reset_common(context)
        self.stats.update({"parse_failure_rule": self.parse_failure, "max_reasks": self.max_reasks,
                           "parse_error_steps": 0, "memory_updates": 0, "invalid_actions": 0, "blocked_moves": 0,
                           "clamped_actions": 0, "map_actions": 0, "actions": {}})
        name = self.inputs_for(context.protocol_id)
        self.inputs = INPUT_STRATEGIES[name](self)
        self.stats["inputs"] = name
        self.inputs.reset(task, context)

    def record_outcome(self, info: Mapping[str, Any]) -> None:
        """Take the env's verdict on the last action (called by the episode loop after ``env.step``):
        counters, and the outcome shown with that action among the recent actions."""
        if info.get("invalid_action"):
            self.stats["invalid_actions"] += 1
        if info.get("blocked"):
            self.stats["blocked_moves"] += 1
        if info.get("clamped"):
            self.stats["clamped_actions"] += 1
        entry, self._pending = self._pending, None
        if entry is None:
            return
        if info.get("invalid_action"):
            entry["outcome"] = f"invalid: {info.get('invalid_reason')}"
            return
        parts = []
        kind = ActionKind(entry["action"]["action"])
        if kind in MOTION_KINDS:
            parts.append(f"walked {float(info.get('moved_m') or 0.0):.1f} m")
            if info.get("blocked"):
                parts.append("blocked")
        clamps = info.get("clamped") or []
        if clamps:
            parts.append("clamped " + ", ".join(f"{c['field']} {c['given']:g} -> {c['used']:g}" for c in clamps))
        if parts:
            entry["outcome"] = "; ".join(parts)

    # ------------------------------------------------------------ requests
    def _recent_text(self) -> str:
        entries = self.recent[-self.window:] if self.window > 0 else []
        if not entries:
            return NO_ACTIONS
        lines = []
        for e in entries:
            line = f"step {e['step']}: " + json.dumps({"thought": e["thought"][:RECENT_THOUGHT_CHARS], **e["action"]},
                                                      ensure_ascii=False)
            if e.get("outcome"):
                line += f" -> {e['outcome']}"
            lines.append(line)
        return "\n".join(lines)

    def user_message(self, obs: Mapping[str, Any], step: int) -> Message:
        """The step's user turn: text, the mode's picture (view or map), reference images.

        Raises:
            NoImageryError: first-person mode without a view while the control mode shows views.
        """
        mode = str(obs.get("mode") or FIRST_PERSON_MODE)
        text_obs = obs.get("text") or {}
        notices = list(text_obs.get("notices") or [])
        text = self.templates["urbanground_step"].render(
            state=state_text(text_obs.get("state") or {}),
            notices="\n".join(notices) if notices else NO_NOTICES,
            last_result=str(text_obs.get("last_result") or "") or NO_RESULT,
            memory=self.memory if self.memory.strip() else EMPTY_MEMORY,
            recent_actions=self._recent_text(), step=step,
            mode="first-person" if mode == FIRST_PERSON_MODE else "map", allowed=", ".join(ALLOWED[mode]))
        c = self.control
        parts: list[Text | Image] = [Text(text)]
        if mode == MAP_MODE:
            parts += [Text(MAP_LABEL), *c.parts(MAP, obs.get("map"))]
        else:
            if obs.get("view") is None and c.shows_view:
                raise NoImageryError(f"agent {self.name!r} needs a first-person view but the observation has none "
                                     "(the continuous env was built without an observer)")
            parts += [Text(VIEW_LABEL), *c.parts(VIEW, obs.get("view"), obs.get("features_in_view"))]
        refs = list(obs.get("reference_images") or []) if self.include_references else []
        if refs:
            parts.append(Text(REFERENCE_LABEL))
            for r in refs:
                parts += c.parts(self.reference_role, r, self.reference_features)
        return Message("user", parts)

    def final_answer(self, observation: dict[str, Any]) -> str | None:
        """A question's answer after an exploration that ended without ``terminate`` (turn limit, exploration
        window), asked with the final observation; ``None`` when the inputs ask none (``state``: the answer
        only comes with ``terminate``), for a navigation task, or for an unusable reply (counted).
        Raises what the client raises."""
        ask = getattr(self.inputs, "final_answer", None)
        if ask is None:
            return None
        step = int(observation.get("step", self.stats["steps"])) + 1
        task_text = str((observation.get("text") or {}).get("task") or self.task_text)
        return ask(observation, step, self.templates[self.inputs.system_template].render(task=task_text))

    # ------------------------------------------------------------ act
    def act(self, observation: dict[str, Any]) -> dict[str, Any]:  # type: ignore[override]
        """One step: request(s) until a usable reply or the re-asks are spent; returns UrbanGround's
        action JSON (or the ``parse_error`` action).

        Raises:
            NoImageryError: first-person mode without a view.
            ValueError: an observation ``mode`` other than ``first_person`` / ``map``.
            ModelTransportError / ModelRequestError / BudgetExceeded / CacheMissError: from the
                client (counted in ``stats`` first).
        """
        obs = observation
        mode = str(obs.get("mode") or FIRST_PERSON_MODE)
        if mode not in ALLOWED:
            raise ValueError(f"observation mode {mode!r}: expected first_person or map")
        step, system = self._begin_step(obs, self.inputs.system_template)
        self._pending = None
        failures: list[str] = []
        rec: dict[str, Any] = {"step": step, "mode": mode, "requests": 0, "failures": failures, "repairs": [],
                               "notes": []}
        parsed = self.inputs.decide(obs, step, system, mode, rec)
        if parsed is not None:
            action = dict(parsed.action)  # type: ignore[arg-type]
            entry = {"step": step, "thought": parsed.thought, "action": dict(action)}
            self.recent.append(entry)
            self._pending = entry
            bump(self.stats["actions"], action["action"])
            if parsed.kind in MAP_KINDS | {ActionKind.OPEN_MAP} and parsed.kind != ActionKind.TERMINATE:
                self.stats["map_actions"] += 1
            rec.update(action=dict(action), thought=parsed.thought[:THOUGHT_TRACE_CHARS],
                       memory=self.memory[:MEMORY_TRACE_CHARS])
            self.stats["trace"].append(rec)
            if self.inputs.sends_memory:
                action["memory"] = self.memory
            return action
        rec.update(action={"action": ActionKind.PARSE_ERROR.value}, thought="", memory=self.memory[:MEMORY_TRACE_CHARS])
        self.stats["trace"].append(rec)
        out = {"action": ActionKind.PARSE_ERROR.value, "error": "; ".join(failures)}
        if self.inputs.sends_memory:
            out["memory"] = self.memory
        return out


class StateInputs:
    """Our inputs (``-p inputs=state``): one user turn per step with the state text (privileged: the
    position in lat/lon, the nearest street, whether on the pedestrian network, the map's centre), the
    notices, the last result, the agent's memory field and its recent actions, then the mode's picture
    and the reference images; no conversation is kept between steps (module docstring)."""

    name = "state"
    system_template = "urbanground_system"
    sends_memory = True

    def __init__(self, agent: UrbanGroundVLMAgent):
        self.agent = agent

    def reset(self, task: Task, context: AgentContext) -> None:
        pass

    def decide(self, obs: Mapping[str, Any], step: int, system: str, mode: str,
               rec: dict[str, Any]) -> UrbanGroundReply | None:
        """The step's accepted reply, or ``None`` when the re-asks are spent."""
        a = self.agent
        return a._ask(  # type: ignore[return-value]
            step, system, rec, lambda: a.user_message(obs, step),
            lambda reply: parse_urbanground_reply(reply.text, reply.flags, mode=mode, needs_answer=a.needs_answer,
                                                  empty_answer=a.rules["empty_answer"]),
            lambda bad: a.templates["urbanground_correction"].render(error=bad.detail, allowed=", ".join(ALLOWED[mode])))


#: inputs name -> strategy class (``reference`` is added by :mod:`.urbanground_react`, which the package imports)
INPUT_STRATEGIES: dict[str, Any] = {"state": StateInputs}

__all__ = ["ALLOWED", "INPUTS", "INPUT_STRATEGIES", "MODEL_ACTIONS", "PARSE_RULES", "REFERENCE_ACTIONS", "REFERENCE_ALLOWED", "StateInputs",
           "UG_FAILURE_TYPES", "UrbanGroundReply", "UrbanGroundVLMAgent", "parse_urbanground_reply", "state_text"]
