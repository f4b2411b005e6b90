"""Parsing model replies into actions: robust, typed, and never silent.

Every reply ends in exactly one of two outcomes: an accepted decision, or a
*parse failure* with a type from :data:`FAILURE_TYPES`. Lenient readings of a
reply that a strict JSON parser would reject (code fences, prose around the
object, lower-case action tokens ...) are accepted but listed in
``repairs``; benign gaps (a field left out, a magnitude omitted ...) are
listed in ``notes``. The agents count all three per type, so a reader can
see how many decisions needed a lenient reading (360CityArena's reference
parser, ``json.loads`` after removing a ```` ```json ```` fence, would have
rejected those).

JSON extraction (:func:`extract_json_object`), in order:

1. the whole reply (whitespace stripped) is a JSON object;
2. the inside of the first closed code fence (```` ``` ```` or
   ```` ```json ````) is one (repair ``code_fence``);
3. the first ``{`` from which :meth:`json.JSONDecoder.raw_decode` reads an
   object, ignoring the text around it (repair ``surrounding_text``);
4. the span from the first ``{`` to the last ``}`` with trailing commas
   before ``}``/``]`` removed (repair ``trailing_comma``; CitySeeker's parser
   does the same).

Keys are matched case-insensitively (repair ``key_case`` when one is not lower case).

Failure types:

=========================  ====================================================
``oversized``              the client flagged the reply ``oversized`` (more
                           output than ``max_output_tokens`` allows); it is
                           not read: its content is outside what the request
                           allowed, and a scan of megabytes of text for
                           ``{`` is quadratic
``empty``                  no text (or only whitespace)
``refusal``                the provider flagged a refusal and no object was found
``truncated``              cut at the output-token limit and no object was found
``no_json``                no ``{`` in the reply
``json_invalid``           a ``{`` but no decodable JSON object
``missing_action``         the object has no (non-empty) ``action``
``unknown_action``         ``action`` is not one of the protocol's tokens
``magnitude_out_of_range`` (arena, where the protocol rejects it) the size of
                           W/A/D/Q/E is not SMALL/MEDIUM/LARGE
``empty_answer``           (arena, where the protocol rejects it) ANSWER with no text
``bad_stop_value``         (CitySeeker stop) ``action`` is not 0/1/yes/no/...
``choice_out_of_range``    (CitySeeker choice) a label or index beyond the images
``missing_fields``         (``cityseeker-v1``) a field its reference parser
                           requires is absent or has the wrong type
``observation_count``      (``cityseeker-v1``) ``observation`` does not have one
                           entry per image, as its reference requires
``reference_refused``      (arena, ``reading="reference"``: ``cityarena-v1``) a
                           reply only a lenient reading accepts (prose around
                           the object, a fence not tagged ``json``, trailing
                           commas, key or action case, a size inside the
                           action token); 360CityArena's parser refuses it
=========================  ====================================================
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from urbanarena.env.arena_env import ActionKind, ArenaAction, Magnitude, NonTextAnswer

FAILURE_TYPES = (
    "oversized", "empty", "refusal", "truncated", "no_json", "json_invalid", "missing_action", "unknown_action",
    "magnitude_out_of_range", "empty_answer", "bad_stop_value", "choice_out_of_range", "missing_fields",
    "observation_count", "reference_refused",
)

#: arena action tokens a model may send (PARSE_ERROR is ours, never the model's)
ARENA_TOKENS = ("W", "S", "A", "D", "Q", "E", "LEFT", "RIGHT", "UP", "ANSWER")
SIZED_KINDS = frozenset({"W", "A", "D", "Q", "E"})

#: magnitude words accepted in the ``answer`` field (360CityArena's runner accepts the same synonyms)
MAGNITUDE_WORDS = {
    "SMALL": Magnitude.SMALL, "S": Magnitude.SMALL,
    "MEDIUM": Magnitude.MEDIUM, "M": Magnitude.MEDIUM,
    "LARGE": Magnitude.LARGE, "L": Magnitude.LARGE, "BIG": Magnitude.LARGE,
}


@dataclass
class Extracted:
    """Result of :func:`extract_json_object`: the object, or a failure type with detail."""

    obj: dict[str, Any] | None
    failure: str | None = None
    detail: str = ""
    repairs: list[str] = field(default_factory=list)


_FENCE = re.compile(r"```[ \t]*(?:json|JSON|Json)?[ \t]*\r?\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _lower_keys(obj: dict[str, Any], repairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in obj.items():
        lk = str(k).strip().lower()
        if lk != k:
            if "key_case" not in repairs:
                repairs.append("key_case")
        out.setdefault(lk, v)
    return out


def extract_json_object(text: str | None, flags: Iterable[str] = ()) -> Extracted:
    """Find the JSON object in a model reply (see the module docstring for the order of attempts).

    Args:
        text: the reply text.
        flags: the reply's client flags (``empty``, ``truncated``, ``refusal``);
            they name the failure when no object is found.
    Returns: :class:`Extracted` with ``obj`` (keys lower-cased) or ``failure``.
    """
    flags = set(flags)
    if "oversized" in flags:
        return Extracted(None, "oversized", "the reply is longer than the output-token limit allows; it was not read")
    s = (text or "").strip()
    if not s:
        return Extracted(None, "refusal" if "refusal" in flags else "empty", "the reply is empty")
    repairs: list[str] = []

    def found(obj: Any, how: list[str]) -> Extracted | None:
        if isinstance(obj, dict):
            return Extracted(_lower_keys(obj, how), None, "", how)
        return None

    try:
        hit = found(json.loads(s), repairs)
        if hit is not None:
            return hit
    except json.JSONDecodeError:
        pass
    m = _FENCE.search(s)
    if m:
        inner = m.group(1).strip()
        try:
            hit = found(json.loads(inner), ["code_fence"])
            if hit is not None:
                return hit
        except json.JSONDecodeError:
            pass
    dec = json.JSONDecoder()
    for i, ch in enumerate(s):
        if ch != "{":
            continue
        try:
            obj, end = dec.raw_decode(s, i)
        except json.JSONDecodeError:
            continue
        hit = found(obj, ["surrounding_text"] if (s[:i].strip() or s[end:].strip()) else [])
        if hit is not None:
            return hit
    first, last = s.find("{"), s.rfind("}")
    if first != -1 and last > first:
        candidate = _TRAILING_COMMA.sub(r"\1", s[first:last + 1])
        try:
            how = ["trailing_comma"] + (["surrounding_text"] if (s[:first].strip() or s[last + 1:].strip()) else [])
            hit = found(json.loads(candidate), how)
            if hit is not None:
                return hit
        except json.JSONDecodeError:
            pass
    if "refusal" in flags:
        return Extracted(None, "refusal", "the provider flagged a refusal")
    if "truncated" in flags:
        return Extracted(None, "truncated", "the reply was cut at the output-token limit before a complete JSON object")
    if first == -1:
        return Extracted(None, "no_json", "no JSON object found in the reply")
    return Extracted(None, "json_invalid", "the reply contains '{' but no valid JSON object")


#: an unusable reply echoed back in a corrective re-ask keeps at most this many characters when oversized
ECHO_MAX_CHARS = 2000


def echo_text(text: str | None, refusal: str | None = None, flags: Iterable[str] = ()) -> str:
    """What a corrective re-ask repeats of an unusable reply as the assistant turn.

    The reply text (stripped), else the refusal text, else ``"(empty reply)"``;
    an ``oversized`` reply keeps its first :data:`ECHO_MAX_CHARS` characters
    and a note of how many were left out, so a re-ask never sends the bulk back.
    """
    said = (text or "").strip() or (refusal or "").strip() or "(empty reply)"
    if "oversized" in set(flags) and len(said) > ECHO_MAX_CHARS:
        said = said[:ECHO_MAX_CHARS] + f" [... {len(said) - ECHO_MAX_CHARS} characters left out]"
    return said


# ----------------------------------------------------------------- replies with thought and memory
@dataclass
class MemoryReply:
    """The fields of a parsed reply shared by the agents that keep a reflection memory (arena, UrbanGround).

    Attributes:
        action: the accepted action (its type is the parser's) or ``None``.
        failure / detail: the failure type and a sentence for the corrective message.
        thought: the ``thought`` text (``""`` when absent).
        memory: the ``memory`` field when it is a string, else ``None``.
        json_object: whether a JSON object was found (the reference updates
            memory from any object, even one whose action is rejected).
        repairs / notes: see the module docstring.
    """

    action: Any
    failure: str | None = None
    detail: str = ""
    thought: str = ""
    memory: str | None = None
    json_object: bool = False
    repairs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.action is not None


def memory_reply(cls: type, ex: Extracted, fields: Iterable[str]) -> Any:
    """Start a parsed reply of type ``cls`` (a :class:`MemoryReply`) from :func:`extract_json_object`'s result.

    Args:
        cls: the reply class; built with keywords only.
        ex: the extraction.
        fields: field names whose absence from the object is noted (``missing_field_<name>``).
    Returns: ``cls(None, failure, detail)`` when ``ex`` found no object; else ``cls`` with ``action=None``
        (the caller reads the action), ``thought`` (``thought`` or ``thoughts``; text as given, another value
        as JSON, ``""`` when absent), ``memory`` (when text), ``json_object=True``, the extraction's
        repairs (a copy) and the notes of the missing ``fields``.
    """
    if ex.obj is None:
        return cls(None, failure=ex.failure, detail=ex.detail)
    obj = ex.obj
    thought = obj.get("thought", obj.get("thoughts"))
    thought = thought if isinstance(thought, str) else ("" if thought is None else json.dumps(thought))
    memory = obj.get("memory") if isinstance(obj.get("memory"), str) else None
    notes = [f"missing_field_{name}" for name in fields if name not in obj]
    return cls(None, thought=thought, memory=memory, json_object=True, repairs=list(ex.repairs), notes=notes)


def answer_text(value: Any, repairs: list[str]) -> str:
    """An ``answer`` field as stripped text: a number becomes its text (repair ``answer_not_string``
    appended to ``repairs``), text is stripped, anything else is ``""``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
        repairs.append("answer_not_string")
    return value.strip() if isinstance(value, str) else ""


# ----------------------------------------------------------------- arena
@dataclass
class ArenaReply(MemoryReply):
    """A parsed arena reply (fields: :class:`MemoryReply`).

    Attributes:
        action: the accepted action (``memory`` not set; the agent adds it) or ``None``.
    """

    action: ArenaAction | None


_ACTION_RE = re.compile(r"\s*([A-Za-z]+)\s*(?:[:\-_\s]\s*([A-Za-z]+)\s*)?\.?\s*")


def _magnitude(value: Any) -> tuple[Magnitude | None, bool]:
    """``(magnitude, recognised)``; ``(None, True)`` for an omitted value."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, True
    if not isinstance(value, str):
        return None, False
    return MAGNITUDE_WORDS.get(value.strip().rstrip(".").upper()), value.strip().rstrip(".").upper() in MAGNITUDE_WORDS


#: repairs 360CityArena's reference reading also makes (``key_action_generator.extract_json_from_content`` and
#: ``validate_action`` at a6ec8ed: the whole reply, or the inside of a ``json``-tagged fence, through ``json.loads``;
#: keys and action tokens exact; the answer passed as given)
REFERENCE_REPAIRS = frozenset({"code_fence", "answer_not_string"})
_JSON_FENCE = re.compile(r"```json\s*(.*?)```", re.IGNORECASE | re.DOTALL)


def parse_arena_reply(text: str | None, flags: Iterable[str] = (), *, magnitude_out_of_range: str = "error",
                      empty_answer: str = "error", reading: str = "lenient") -> ArenaReply:
    """Parse a 360CityArena-style reply ``{"thought", "action", "memory", "answer"}``.

    Rules:

    * ``action`` must be one of :data:`ARENA_TOKENS`, matched
      case-insensitively (repair ``action_case``); ``"W MEDIUM"`` /
      ``"W: MEDIUM"`` carry the size in the token (repair ``magnitude_in_action``).
    * W/A/D/Q/E take their size from ``answer`` (as 360CityArena's runner
      does), else from a ``magnitude`` field (repair ``magnitude_field``):
      SMALL/MEDIUM/LARGE (also S/M/L/BIG), any case. Omitted: the documented
      default size (note ``magnitude_omitted``). Anything else:
      ``magnitude_out_of_range="default"`` uses the default size (note
      ``magnitude_out_of_range``; the reference runner's behaviour) or
      ``"error"`` fails with ``magnitude_out_of_range``.
    * ANSWER passes ``answer`` verbatim (whitespace stripped; numbers turned
      into text, repair ``answer_not_string``): extra words stay for the
      validators, which extract what they score. An empty answer is
      accepted (note ``empty_answer``; ``empty_answer="accept"``, as the
      reference) or fails (``"error"``).
    * Missing ``thought``/``memory``/``answer`` fields are noted
      (``missing_field_<name>``), not failures.

    Args:
        text, flags: the reply text and its client flags.
        magnitude_out_of_range: ``"default"`` or ``"error"``.
        empty_answer: ``"accept"`` or ``"error"``.
        reading: ``"lenient"`` (every reading above, each repair listed) or ``"reference"``
            (360CityArena's: a reply that needed any repair outside :data:`REFERENCE_REPAIRS` fails with
            ``reference_refused``, a fence only counts when tagged ``json``, the action must be the bare
            token (``" W"`` and ``"W."`` are refused, repair ``action_padded``: its ``validate_action`` tests
            membership), a ``magnitude`` field is ignored, as its runner reads the size from ``answer`` only,
            and an ANSWER whose ``answer`` is not a JSON string is kept as a
            :class:`~urbanarena.env.arena_env.NonTextAnswer` (note ``answer_not_text``), which the
            ``cityarena-v1`` validators score 0 as the reference's do).
    """
    out = _parse_arena(text, flags, magnitude_out_of_range, empty_answer)
    if reading != "reference" or out.action is None:
        return out
    refused = [r for r in out.repairs if r not in REFERENCE_REPAIRS and r != "magnitude_field"]
    if "code_fence" in out.repairs and not _JSON_FENCE.search(text or ""):
        refused.append("untagged_fence")
    obj = extract_json_object(text, flags).obj or {}
    raw_action = obj.get("action")
    if (isinstance(raw_action, str) and raw_action not in ARENA_TOKENS
            and not {"action_case", "magnitude_in_action"} & set(refused)):
        refused.append("action_padded")  # " W", "W.": the reference accepts the bare token only
    if refused:
        out.action, out.failure = None, "reference_refused"
        if {"surrounding_text", "trailing_comma", "untagged_fence"} & set(refused):
            out.json_object = False  # the reference's json.loads found no object: its memory stays
        out.detail = ("reply the reference parser refuses (" + ", ".join(refused) + "); send only the JSON object "
                      'with lower-case keys and one action token such as "W"')
        out.repairs = []  # nothing was accepted: the failure type counts it
        return out
    if "magnitude_field" in out.repairs:  # the reference reads the size from "answer" only: default size
        out.repairs.remove("magnitude_field")
        out.notes.append("magnitude_field_ignored")
        out.action = ArenaAction(out.action.kind)
    raw_answer = obj.get("answer")
    if out.action.kind == ActionKind.ANSWER and "answer" in obj and not isinstance(raw_answer, str):
        # the reference's validators call .strip() on it and fail: the cityarena-v1 validators score it 0
        shown = (str(raw_answer) if isinstance(raw_answer, (int, float)) and not isinstance(raw_answer, bool)
                 else json.dumps(raw_answer, ensure_ascii=False, default=str))
        out.action = replace(out.action, answer=NonTextAnswer(shown))
        out.notes.append("answer_not_text")
    return out


def _parse_arena(text: str | None, flags: Iterable[str], magnitude_out_of_range: str,
                 empty_answer: str) -> ArenaReply:
    ex = extract_json_object(text, flags)
    out = memory_reply(ArenaReply, ex, ("thought", "memory", "answer"))
    if ex.obj is None:
        return out
    obj, repairs, notes = ex.obj, out.repairs, out.notes
    raw = obj.get("action")
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        out.failure, out.detail = "missing_action", 'the JSON object has no "action"'
        return out
    m = _ACTION_RE.fullmatch(raw) if isinstance(raw, str) else None
    token = m.group(1).upper() if m else None
    inline = m.group(2) if m else None
    if token not in ARENA_TOKENS or (inline is not None and not (token in SIZED_KINDS and _magnitude(inline)[1])):
        out.failure = "unknown_action"
        out.detail = f"unknown action {raw!r}; use one of {', '.join(ARENA_TOKENS)}"
        return out
    if m.group(1) != token:
        repairs.append("action_case")
    kind = ActionKind(token)
    if kind == ActionKind.ANSWER:
        ans = answer_text(obj.get("answer"), repairs)
        if not ans:
            if empty_answer == "error":
                out.failure, out.detail = "empty_answer", 'ANSWER needs the answer text in "answer"'
                return out
            notes.append("empty_answer")
        out.action = ArenaAction(kind, answer=ans)
        return out
    if token in SIZED_KINDS:
        if inline is not None:
            size, recognised = _magnitude(inline)
            repairs.append("magnitude_in_action")
        else:
            value = obj.get("answer")
            if (value is None or (isinstance(value, str) and not value.strip())) and obj.get("magnitude") not in (None, ""):
                value = obj.get("magnitude")
                repairs.append("magnitude_field")
            size, recognised = _magnitude(value)
            if value is None or (isinstance(value, str) and not value.strip()):
                notes.append("magnitude_omitted")
            elif not recognised:
                if magnitude_out_of_range == "error":
                    out.failure = "magnitude_out_of_range"
                    out.detail = (f"size {value!r} for {token} is not one of SMALL, MEDIUM, LARGE")
                    return out
                notes.append("magnitude_out_of_range")
        out.action = ArenaAction(kind, magnitude=size)
        return out
    out.action = ArenaAction(kind)
    return out


# ------------------------------------------------------------ CitySeeker
@dataclass
class StopReply:
    """A parsed stop decision: ``stop`` True/False, or a failure."""

    stop: bool | None
    failure: str | None = None
    detail: str = ""
    repairs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.stop is not None


@dataclass
class ChoiceReply:
    """A parsed choice: 0-based ``index`` and confidence ``score`` (``None`` when not given), or a failure."""

    index: int | None
    score: float | None = None
    failure: str | None = None
    detail: str = ""
    repairs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.index is not None


_STOP_WORDS = {"1": True, "0": False, "yes": True, "no": False, "true": True, "false": False,
               "stop": True, "continue": False}


def parse_stop_reply(text: str | None, flags: Iterable[str] = (), *, strict_fields: bool = False) -> StopReply:
    """Parse CitySeeker's stop decision ``{"observation", "thoughts", "action": 0|1}``.

    ``action`` 1 = stop, 0 = keep walking; also accepted: ``true``/``false``
    and the words yes/no/stop/continue in any case (repair ``stop_word``), a
    float 0.0/1.0. ``strict_fields`` (``cityseeker-v1``): ``thoughts`` (text)
    and ``observation`` (object or text) must be present, as the reference's
    pydantic model requires (else ``missing_fields``).
    """
    ex = extract_json_object(text, flags)
    if ex.obj is None:
        return StopReply(None, ex.failure, ex.detail)
    obj, out = ex.obj, StopReply(None, repairs=list(ex.repairs))
    raw = obj.get("action")
    if raw is None and "stop" in obj:
        raw = obj["stop"]
        out.repairs.append("stop_field")
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        out.failure, out.detail = "missing_action", 'the JSON object has no "action" (1 = stop, 0 = continue)'
        return out
    value: bool | None = None
    if isinstance(raw, bool):
        value = raw
    elif isinstance(raw, (int, float)) and raw in (0, 1):
        value = bool(raw)
    elif isinstance(raw, str):
        w = raw.strip().strip(".").lower()
        value = _STOP_WORDS.get(w)
        if value is not None and w not in ("0", "1"):
            out.repairs.append("stop_word")
    if value is None:
        out.failure, out.detail = "bad_stop_value", f'"action" must be 1 (stop) or 0 (continue), got {raw!r}'
        return out
    if strict_fields:
        bad = [f for f, ok in (("thoughts", isinstance(obj.get("thoughts"), str)),
                               ("observation", isinstance(obj.get("observation"), (str, dict)))) if not ok]
        if bad:
            out.failure, out.detail = "missing_fields", f"missing or mistyped field(s): {', '.join(bad)}"
            return out
    out.stop = value
    return out


_CHOICE_RE = re.compile(r"\s*(?:(?:image|option|choice)\s*)?([A-Za-z]|\d+)\s*\.?\s*", re.IGNORECASE)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            v = float(value.strip())
        except ValueError:
            return None
        return v if math.isfinite(v) else None
    return None


def parse_choice_reply(text: str | None, n_choices: int, flags: Iterable[str] = (), *,
                       strict_fields: bool = False) -> ChoiceReply:
    """Parse CitySeeker's choice ``{"thoughts", "observation": {...}, "action": "B", "score": 0.8}``.

    ``action``: a letter (``A`` = first image), any case (repair
    ``choice_case``), optionally written ``"Image B"`` (repair
    ``choice_text``); or a 0-based index as CitySeeker's validator converts
    it (``"1"`` -> ``B``, repair ``numeric_choice``). Beyond the images:
    ``choice_out_of_range``. ``score``: a number (or numeric text); outside
    [0, 1] it is kept and noted (``score_out_of_range``); absent or not a
    number: ``None`` and noted (``score_missing``).

    ``strict_fields`` (``cityseeker-v1``, as the reference's pydantic model
    and ``validate_choice_parsed``): ``thoughts`` text, a numeric ``score``
    and an ``observation`` object (or JSON text of one) with exactly one entry
    per image are required (``missing_fields`` / ``observation_count``).
    """
    ex = extract_json_object(text, flags)
    if ex.obj is None:
        return ChoiceReply(None, failure=ex.failure, detail=ex.detail)
    obj, out = ex.obj, ChoiceReply(None, repairs=list(ex.repairs))
    labels = [chr(ord("A") + i) for i in range(n_choices)]
    raw = obj.get("action")
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        out.failure, out.detail = "missing_action", f'the JSON object has no "action" (one of {", ".join(labels)})'
        return out
    index: int | None = None
    if isinstance(raw, int) and not isinstance(raw, bool):
        index = raw
        out.repairs.append("numeric_choice")
    elif isinstance(raw, str):
        m = _CHOICE_RE.fullmatch(raw)
        if m:
            tok = m.group(1)
            if tok.isdigit():
                index = int(tok)
                out.repairs.append("numeric_choice")
            else:
                index = ord(tok.upper()) - ord("A")
                if tok != tok.upper():
                    out.repairs.append("choice_case")
            if m.group(0).strip().rstrip(".").strip() != tok:
                out.repairs.append("choice_text")
    if index is None:
        out.failure, out.detail = "unknown_action", f'"action" must be one of {", ".join(labels)}, got {raw!r}'
        return out
    if not 0 <= index < n_choices:
        out.failure = "choice_out_of_range"
        out.detail = f'"action" {raw!r} is beyond the {n_choices} images ({", ".join(labels)})'
        return out
    score = _number(obj.get("score"))
    if strict_fields:
        observation = obj.get("observation")
        if isinstance(observation, str):
            try:
                observation = json.loads(observation)
            except json.JSONDecodeError:
                observation = None
        bad = [f for f, ok in (("thoughts", isinstance(obj.get("thoughts"), str)), ("score", score is not None),
                               ("observation", isinstance(observation, dict))) if not ok]
        if bad:
            out.failure, out.detail = "missing_fields", f"missing or mistyped field(s): {', '.join(bad)}"
            return out
        if len(observation) != n_choices:
            out.failure = "observation_count"
            out.detail = f'"observation" must have one entry per image ({n_choices}), got {len(observation)}'
            return out
    if score is None:
        out.notes.append("score_missing")
    elif not 0.0 <= score <= 1.0:
        out.notes.append("score_out_of_range")
    out.index, out.score = index, score
    return out


# ----------------------------------------------------- relative directions
#: CitySeeker's eight direction names, in the order of its ``Direction`` enum
DIRECTIONS_8 = ("FRONT", "FRONT_LEFT", "LEFT", "BACK_LEFT", "BACK", "BACK_RIGHT", "RIGHT", "FRONT_RIGHT")


def relative_direction(forward_deg: float, heading_deg: float, *, reference: bool = False) -> str:
    """Where compass bearing ``heading_deg`` lies relative to travel direction ``forward_deg``.

    Eight 45-degree sectors centred on FRONT, FRONT_RIGHT, RIGHT, ... (bearings
    clockwise from north, so a bearing 90 degrees clockwise of ``forward`` is
    RIGHT). ``reference=True`` reproduces CitySeeker's
    ``Compass.get_relative_direction``: the clockwise sector index
    ``int((rel + 22.5) // 45) % 8`` of ``rel = (heading - forward) mod 360``
    is looked up in the enum order FRONT, FRONT_LEFT, LEFT, ..., which runs
    counter-clockwise, so left and right come out mirrored (90 degrees
    clockwise is named LEFT). ``cityseeker-v1`` shows the reference's labels.
    """
    rel = (float(heading_deg) % 360.0 - float(forward_deg) % 360.0 + 360.0) % 360.0
    idx = int((rel + 22.5) // 45) % 8
    if reference:
        return DIRECTIONS_8[idx]
    return DIRECTIONS_8[(8 - idx) % 8]
