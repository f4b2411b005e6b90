"""Reference inputs of ``vlm-urbanground`` (``-p inputs=reference``, ``urbanground-v1``'s default): UrbanGround's released agent's prompting.

What UrbanGround's released agent (``AgentEvaluation/api/react_agent.py`` of ``UrbanGround/UrbanGround``)
sends, in our own words (the template texts are ours):

* system = ``urbanground_ref_question_system`` for a question task (``extra.options``), else
  ``urbanground_ref_navigation_system``: the kind of task, the action space and the visual ReAct reply
  format; no task text;
* each turn ONE user message: on the first remembered turn ``urbanground_ref_task`` (the task: the
  instruction and, for a question, its options as ``A. ...`` lines), then the closure notices that are
  new since the last remembered turn (each shown once; the conversation keeps it), then
  ``urbanground_ref_turn``; and exactly ONE picture: the screen of the mode (the first-person view in
  first-person mode, the map in map mode). No position, street, distance, time, memory field or recent
  actions: the released agent never shows simulator state. The task's reference images are not sent
  (UrbanGround's tasks have none);
* memory = the text conversation: every earlier remembered turn's user text and the model's raw reply
  (no earlier picture). A turn is remembered when its reply is accepted; a turn whose re-asks are spent
  is not (so the task text and a new notice are shown again on the next turn).

Reply: one JSON object ``{"observation": "...", "reason": "...", "action": {"action": "move", ...}}``
(:func:`parse_react_reply`): ``observation`` and ``reason`` non-blank text, ``action`` an object read by
:func:`~urbanarena.agents.vlm.urbanground.parse_urbanground_reply` (so by
:meth:`ContinuousAction.from_dict`) with the released agent's actions (``jump`` and ``map_orbit``
included). Failure types added here: ``missing_observation``, ``missing_reason``,
``action_not_object``. An unusable reply gets the bad reply and ``urbanground_ref_correction``
appended (``corrective-re-ask``; ``re-request`` sends the same messages again), up to ``max_reasks``
(2) times; when they are spent the step is the env's ``parse_error`` action (the released agent stops
the episode with an error there; ours consumes the step, as the state inputs do).

Question tasks: ``terminate`` ends the exploration and, in the same ``act``, a separate request
(``urbanground_ref_final``, the conversation so far plus the final screen) asks for
``{"answer": "<letter>", "reason": "..."}`` (:func:`parse_final_answer`: ``A``-``D`` or ``Option A``, the
task's letters only, a non-blank reason); the returned ``terminate`` carries that letter, or no answer
when the reply is unusable (counted; the released agent asks once, without re-asks). An ``answer`` inside
the exploration's ``terminate`` is ignored. Turn limit or exploration window: the exploration ends without
``terminate``; the runner then calls the agent's ``final_answer`` with the final observation, which sends
the same final-answer request (:meth:`ReferenceInputs.final_answer`), as the released agent asks after its
last turn; every step's action is executed.

Counters added to ``stats``: ``final_answer_requests``, ``final_answers`` (accepted); per-step trace:
``observation`` and, on a final answer, ``final_answer`` (answer or failure).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from urbanarena.agents.base import AgentContext
from urbanarena.agents.clients import Image, Message, ModelRequest, Text
from urbanarena.agents.controls import MAP, VIEW
from urbanarena.agents.vlm.common import call_index
from urbanarena.agents.vlm.parsing import answer_text, echo_text, extract_json_object
from urbanarena.agents.vlm.urbanground import (
    FIRST_PERSON_MODE, INPUT_STRATEGIES, MAP_MODE, REFERENCE_ALLOWED, UrbanGroundReply, parse_urbanground_reply,
)
from urbanarena.env.continuous.actions import ActionKind
from urbanarena.errors import NoImageryError
from urbanarena.tasks.schema import Task

if TYPE_CHECKING:
    from urbanarena.agents.vlm.urbanground import UrbanGroundVLMAgent

LETTERS = "ABCD"
#: failure types of the reference reply (besides the shared ones and the action parser's)
REACT_FAILURE_TYPES = ("missing_observation", "missing_reason", "action_not_object", "bad_answer")
OBSERVATION_TRACE_CHARS = 300
FINAL_PHASE = 1  # call_index phase of the final-answer request


@dataclass
class ReActReply(UrbanGroundReply):
    """A parsed reference reply: :class:`UrbanGroundReply` (``thought`` = the reason) plus ``observation``."""

    observation: str = ""


@dataclass
class FinalAnswerReply:
    """A parsed final answer: the letter (``None`` on failure), the reason, failure and detail, repairs."""

    answer: str | None
    reason: str = ""
    failure: str | None = None
    detail: str = ""
    repairs: list[str] | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


def _text_field(value: Any) -> str:
    if value is None or isinstance(value, (dict, list)):
        return ""
    return str(value).strip()


def parse_react_reply(text: str | None, flags: Iterable[str] = (), *, mode: str = FIRST_PERSON_MODE) -> ReActReply:
    """Parse a reference reply (module docstring) in ``mode``.

    Rules: the JSON object (:func:`extract_json_object`, its lenient readings counted); ``observation``
    and ``reason``: non-blank (a number is read as its text), else ``missing_observation`` /
    ``missing_reason``; ``action``: an object, else ``action_not_object``; an object keyed by an action
    name (``{"look": {"yaw": 20}}``) is read as that action (repair ``keyed_action``); the object is read
    by :func:`parse_urbanground_reply` with :data:`REFERENCE_ALLOWED` (its failures and repairs).
    """
    ex = extract_json_object(text, flags)
    if ex.obj is None:
        return ReActReply(None, failure=ex.failure, detail=ex.detail)
    obj = ex.obj
    out = ReActReply(None, json_object=True, repairs=list(ex.repairs))
    out.observation = _text_field(obj.get("observation"))
    out.thought = _text_field(obj.get("reason"))
    if not out.observation:
        out.failure, out.detail = "missing_observation", '"observation" must be a non-empty string'
        return out
    if not out.thought:
        out.failure, out.detail = "missing_reason", '"reason" must be a non-empty string'
        return out
    inner = obj.get("action")
    if not isinstance(inner, Mapping):
        out.failure, out.detail = "action_not_object", '"action" must be one flat action object with its own "action"'
        return out
    inner = dict(inner)
    known = {a for names in REFERENCE_ALLOWED.values() for a in names}
    if "action" not in inner and "type" not in inner and len(inner) == 1:
        (key, val), = inner.items()
        if str(key).strip().lower() in known and (val is None or isinstance(val, Mapping)):
            inner = {"action": key, **dict(val or {})}
            out.repairs.append("keyed_action")
    sub = parse_urbanground_reply(json.dumps(inner, allow_nan=True), mode=mode, allowed=REFERENCE_ALLOWED)
    out.repairs += sub.repairs
    out.notes += [n for n in sub.notes if not n.startswith("missing_field_")]
    if not sub.ok:
        out.failure, out.detail = sub.failure, sub.detail
        return out
    out.action, out.kind = sub.action, sub.kind
    return out


def parse_final_answer(text: str | None, flags: Iterable[str] = (), *, letters: str = LETTERS) -> FinalAnswerReply:
    """Parse a final answer ``{"answer": "B", "reason": "..."}``: ``answer`` one of ``letters`` (any case,
    ``Option B`` accepted, a letter only), else ``bad_answer``; ``reason`` non-blank, else ``missing_reason``."""
    ex = extract_json_object(text, flags)
    if ex.obj is None:
        return FinalAnswerReply(None, failure=ex.failure, detail=ex.detail, repairs=list(ex.repairs))
    repairs = list(ex.repairs)
    raw = answer_text(ex.obj.get("answer"), repairs).upper()
    m = re.fullmatch(r"(?:OPTION\s*)?([A-Z])", raw)
    reason = _text_field(ex.obj.get("reason"))
    if m is None or m.group(1) not in letters:
        return FinalAnswerReply(None, reason, "bad_answer", f'"answer" must be one of {", ".join(letters)}', repairs)
    if not reason:
        return FinalAnswerReply(None, reason, "missing_reason", '"reason" must be a non-empty string', repairs)
    return FinalAnswerReply(m.group(1), reason, repairs=repairs)


def task_description(task: Task) -> str:
    """The task as the released agent words it: the instruction, then ``A. option`` lines for a question."""
    opts = [str(o) for o in (task.extra or {}).get("options") or []]
    return "\n".join([task.instruction.strip(), *(f"{LETTERS[i]}. {o}" for i, o in enumerate(opts))])


class ReferenceInputs:
    """UrbanGround's released agent's inputs, memory and replies for :class:`UrbanGroundVLMAgent` (module docstring)."""

    name = "reference"
    sends_memory = False

    def __init__(self, agent: UrbanGroundVLMAgent):
        self.agent = agent
        self.system_template = "urbanground_ref_navigation_system"

    def reset(self, task: Task, context: AgentContext) -> None:
        opts = (task.extra or {}).get("options") or []
        self.letters = LETTERS[: len(opts)] if opts else ""
        self.system_template = "urbanground_ref_question_system" if opts else "urbanground_ref_navigation_system"
        self.description = task_description(task)
        self.history: list[Message] = []
        self.introduced = False
        self.notices_seen = 0
        self.agent.stats.update({"final_answer_requests": 0, "final_answers": 0})

    # ------------------------------------------------------------ requests
    def turn_text(self, obs: Mapping[str, Any]) -> tuple[str, int]:
        """The turn's user text and the number of notices it has shown (module docstring)."""
        t = self.agent.templates
        parts = [] if self.introduced else [t["urbanground_ref_task"].render(task=self.description)]
        notices = [str(n) for n in ((obs.get("text") or {}).get("notices") or [])]
        new = [n.strip() for n in notices[self.notices_seen:] if n.strip()]
        if new:
            parts.append("\n".join(new))
        parts.append(t["urbanground_ref_turn"].render())
        return "\n\n".join(parts), len(notices)

    def screen(self, obs: Mapping[str, Any], mode: str) -> list[Text | Image]:
        """The one picture of the turn: the map in map mode, else the first-person view (as the control mode
        shows it).

        Raises:
            NoImageryError: first-person mode without a view while the control mode shows views.
        """
        c = self.agent.control
        if mode == MAP_MODE:
            return list(c.parts(MAP, obs.get("map")))
        if obs.get("view") is None and c.shows_view:
            raise NoImageryError(f"agent {self.agent.name!r} needs a first-person view but the observation has none "
                                 "(the continuous env was built without an observer)")
        return list(c.parts(VIEW, obs.get("view"), obs.get("features_in_view")))

    def _remember(self, user_text: str, reply_text: str) -> None:
        self.history += [Message("user", user_text), Message("assistant", reply_text)]

    # ------------------------------------------------------------ decide
    def decide(self, obs: Mapping[str, Any], step: int, system: str, mode: str,
               rec: dict[str, Any]) -> ReActReply | None:
        """The step's accepted reply (a question's ``terminate`` carrying the final answer), or ``None``
        when the re-asks are spent. Raises what the client raises and :class:`NoImageryError`."""
        a = self.agent
        text, seen = self.turn_text(obs)
        messages = [*self.history, Message("user", [Text(text), *self.screen(obs, mode)])]
        first = list(messages)
        for attempt in range(1 + a.max_reasks):
            if a.parse_failure == "re-request":
                messages = list(first)
            reply = a._complete(ModelRequest(list(messages), system=system, sample_index=call_index(a.seed, step, attempt)))
            rec["requests"] += 1
            parsed = parse_react_reply(reply.text, reply.flags, mode=mode)
            a._note(parsed.repairs, parsed.notes)
            rec["repairs"] += parsed.repairs
            rec["notes"] += parsed.notes
            if parsed.ok:
                self._remember(text, echo_text(reply.text, reply.refusal, reply.flags))
                self.introduced, self.notices_seen = True, seen
                rec["observation"] = parsed.observation[:OBSERVATION_TRACE_CHARS]
                if parsed.kind == ActionKind.TERMINATE:
                    parsed.action = {"action": ActionKind.TERMINATE.value}
                    parsed.answer = None
                    if self.letters:
                        self._finish(parsed, obs, step, system, mode, rec)
                return parsed
            a._failure(parsed.failure or "unknown", parsed.detail)
            rec["failures"].append(parsed.failure or "unknown")
            if attempt < a.max_reasks:
                a.stats["reasks"] += 1
                if a.parse_failure == "corrective-re-ask":
                    said = echo_text(reply.text, reply.refusal, reply.flags)
                    fix = a.templates["urbanground_ref_correction"].render(
                        error=parsed.detail, allowed=", ".join(REFERENCE_ALLOWED[mode]))
                    messages = messages + [Message("assistant", said), Message("user", fix)]
        a.stats["parse_error_steps"] += 1
        return None

    def final_answer(self, obs: Mapping[str, Any], step: int, system: str) -> str | None:
        """The final answer of a question whose exploration ended without ``terminate`` (the turn limit or the
        exploration window: the runner asks, as UrbanGround's released agent does after its last turn); the
        letter, or ``None`` for a navigation task or an unusable reply (counted)."""
        if not self.letters:
            return None
        mode = str(obs.get("mode") or FIRST_PERSON_MODE)
        rec: dict[str, Any] = {"step": step, "mode": mode, "requests": 0, "failures": [], "repairs": [],
                               "notes": ["limit_final_answer"], "action": {"action": "final_answer"}}
        reply = ReActReply({"action": ActionKind.TERMINATE.value}, kind=ActionKind.TERMINATE, json_object=True)
        self._finish(reply, obs, step, system, mode, rec)
        self.agent.stats["trace"].append(rec)
        return reply.answer

    def _finish(self, reply: ReActReply, obs: Mapping[str, Any], step: int, system: str, mode: str,
                rec: dict[str, Any]) -> None:
        """Ask the final answer (one request: the conversation and the final screen); put it on ``reply``."""
        a = self.agent
        text = a.templates["urbanground_ref_final"].render(letters="|".join(self.letters))
        msg = Message("user", [Text(text), *self.screen(obs, mode)])
        got = a._complete(ModelRequest([*self.history, msg], system=system,
                                       sample_index=call_index(a.seed, step, 0, phase=FINAL_PHASE)))
        rec["requests"] += 1
        a.stats["final_answer_requests"] += 1
        final = parse_final_answer(got.text, got.flags, letters=self.letters)
        a._note(final.repairs or [], [])
        if not final.ok:
            a._failure(final.failure or "unknown", final.detail)
            rec["failures"].append(final.failure or "unknown")
            rec["final_answer"] = {"failure": final.failure}
            return
        self._remember(text, echo_text(got.text, got.refusal, got.flags))
        a.stats["final_answers"] += 1
        rec["final_answer"] = {"answer": final.answer, "reason": final.reason[:OBSERVATION_TRACE_CHARS]}
        reply.action = {"action": ActionKind.TERMINATE.value, "answer": final.answer}
        reply.answer = final.answer


INPUT_STRATEGIES["reference"] = ReferenceInputs

__all__ = ["FinalAnswerReply", "LETTERS", "REACT_FAILURE_TYPES", "ReActReply", "ReferenceInputs", "parse_final_answer",
           "parse_react_reply", "task_description"]
