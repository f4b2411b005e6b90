"""Answer validators of the arena tasks and the 360CityArena episode score.

Sources: 360CityArena (Watanabe et al., "360CityArena: A Realistic Virtual
Urban Navigation Benchmark for Embodied Agents", ECCV 2026) — its evaluation
protocol as published with the benchmark (repository ``360MM-Team/360CityArena``:
README "Evaluation Protocol", ``docs/evaluation_protocol.md``,
``docs/results_schema.md`` and ``python/src/cityarena/tasks/validators.py``).
We reproduce the rules in our own code:

* **exact_match** (Localization): the answer names a grid cell ``x:N y:M``.
* **coordinate_match** (navigation families): the final position is within
  a radius of the target, strict ``distance < radius``: 10 m, 20 m for Map
  Navigation.
* **mean_relative_accuracy** (Counting, "MRA"): mean over the ten thresholds
  ``theta in {0.50, 0.55, ..., 0.95}`` of ``1[|y_hat - y| / |y| < 1 - theta]``
  (strict); ``y = 0`` scores 1 iff ``y_hat = 0``.
* **fuzzy_match** (Relational Spatial Reasoning): an LLM judge decides
  whether the answer means the reference.

Ours (urbanarena's generated suites, never applied to 360CityArena's tasks):

* **name_match** (relational tasks of the ``<city>-arena7`` suites, whose
  answer is always a POI name): deterministic, no judge. Correct when the
  expected name is read in the answer and none of the task's distractor
  names is (:func:`name_match`; "read" = the folded approximate-substring
  rule of :mod:`urbanarena.world.text_match`, normalised edit distance
  <= 0.2).

Episode columns (:func:`score_episode`) keep 360CityArena's meanings
(``docs/results_schema.md``, results schema v3):

* ``is_correct`` — the validator's verdict on the final answer or, for
  location tasks that did not end with ANSWER, on the final position.
* ``scored_success`` — true only when the episode ended with ``ANSWER`` and
  ``is_correct`` is true (MRA can give partial ``evaluation_score`` while this
  stays false).
* ``evaluation_score`` — the official per-task score in [0, 1]: the
  validator's score when the episode ended with ``ANSWER``, else 0
  (non-ANSWER terminations score 0). A run's score is the mean over tasks,
  missing scores counting 0.

Our additions, never mixed into the official columns: a missing number or an
unparsable grid answer is recorded (``parsed = False``); fuzzy_match records
the judge (model, version, prompt hash, raw verdict) and unparsable verdicts,
and refuses a judge that is the model under test; the offline fallback
(normalised string match) lives in ``offline_score`` only.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any, Callable, Protocol, runtime_checkable

from urbanarena.errors import UrbanArenaError

EXACT_MATCH = "exact_match"
COORDINATE_MATCH = "coordinate_match"
MRA = "mean_relative_accuracy"
FUZZY_MATCH = "fuzzy_match"
NAME_MATCH = "name_match"
METRICS = (EXACT_MATCH, COORDINATE_MATCH, MRA, FUZZY_MATCH, NAME_MATCH)

#: coordinate_match radius (metres) of the landmark-search and language-guided families
COORDINATE_RADIUS_M = 10.0
#: coordinate_match radius (metres) of map navigation
MAP_NAVIGATION_RADIUS_M = 20.0
#: MRA thresholds 0.50, 0.55, ..., 0.95 as exact fractions
MRA_THRESHOLDS: tuple[Fraction, ...] = tuple(Fraction(50 + 5 * i, 100) for i in range(10))

OFFLINE_METRIC = "normalised_string_match"


class JudgeConflictError(UrbanArenaError, ValueError):
    """The fuzzy-match judge is (or was served as) the model under test."""


@dataclass
class JudgeRecord:
    """Who judged and what it said (stored with every fuzzy_match result).

    Attributes:
        model: the judge's pinned model id (as configured).
        reported_model: the model name the provider reported back.
        model_version: the judge's version/snapshot, if known.
        prompt_hash: sha256 (hex) of the judge prompt template.
        raw_verdict: the judge's reply text.
        verdict: parsed verdict, ``None`` when unparsable.
        parsed: whether the verdict could be parsed.
    """

    model: str
    reported_model: str | None
    model_version: str | None
    prompt_hash: str
    raw_verdict: str
    verdict: bool | None
    parsed: bool


@dataclass
class ValidationResult:
    """One validator's result.

    Attributes:
        metric: one of :data:`METRICS`.
        is_correct: the binary verdict (``None`` when no verdict is available).
        score: the validator's score in [0, 1] (MRA partial credit), ``None``
            when unavailable (no judge, unparsable verdict).
        expected: the reference answer/target as text.
        user_answer: the answer as given (or the final position ``"x y"``).
        message: human-readable explanation.
        validation_available: whether ``score``/``is_correct`` were produced.
        parsed: whether the answer could be parsed (grid pair, number);
            ``False`` is recorded, never silent.
        prediction: the parsed prediction (``[x, y]``, a number, a position).
        distance_m, threshold_m: coordinate_match distance and radius, metres.
        relative_error: MRA ``|y_hat - y| / |y|`` (``None`` if undefined).
        judge: :class:`JudgeRecord` for fuzzy_match with a judge.
        offline_score, offline_metric: the offline fallback (fuzzy_match), a
            separate column that never enters ``score``.
    """

    metric: str
    is_correct: bool | None
    score: float | None
    expected: str
    user_answer: str
    message: str
    validation_available: bool = True
    parsed: bool = True
    prediction: Any = None
    distance_m: float | None = None
    threshold_m: float | None = None
    relative_error: float | None = None
    judge: JudgeRecord | None = None
    offline_score: float | None = None
    offline_metric: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ------------------------------------------------------------- name_match
#: distractor names shorter than this (folded) are not checked: they match inside unrelated text
NAME_MATCH_MIN_DISTRACTOR_CHARS = 4


def name_match(answer: str, expected: str, distractors: list[str] | tuple[str, ...] = ()) -> ValidationResult:
    """Our deterministic validator for answers that are a place name (module docstring).

    Correct (score 1) when ``expected`` is read in ``answer``
    (:func:`urbanarena.world.text_match.name_match_distance` <= 0.2: case-,
    diacritics- and punctuation-folded, best approximate substring) **and** no
    distractor is read in it: listing several nearby names is not an answer.
    A distractor is skipped when it folds to under
    :data:`NAME_MATCH_MIN_DISTRACTOR_CHARS` characters or is contained in the
    expected name or vice versa (it cannot be told apart).

    Args:
        answer: the agent's answer text.
        expected: the reference name.
        distractors: names the task lists as wrong (``extra.distractor_names``).
    """
    from urbanarena.world.text_match import NAME_MATCH_THRESHOLD, fold_text, name_match_distance

    ans = str(answer or "")
    d = name_match_distance(expected, [ans])
    fe = fold_text(expected)
    hits = []
    for name in distractors:
        fd = fold_text(name)
        if len(fd) < NAME_MATCH_MIN_DISTRACTOR_CHARS or fd in fe or fe in fd:
            continue
        if name_match_distance(name, [ans]) <= NAME_MATCH_THRESHOLD:
            hits.append(name)
    ok = d <= NAME_MATCH_THRESHOLD and not hits
    if ok:
        msg = f"correct: {expected!r} read (distance {d:.2f})"
    elif d > NAME_MATCH_THRESHOLD:
        msg = f"incorrect: {expected!r} not read (best distance {d:.2f} > {NAME_MATCH_THRESHOLD})"
    else:
        msg = f"incorrect: the answer also names {', '.join(map(repr, hits))}"
    return ValidationResult(NAME_MATCH, ok, 1.0 if ok else 0.0, str(expected), ans, msg,
                            prediction={"distance": round(d, 4), "distractors_read": hits})


# ------------------------------------------------------------- exact_match
_BRACKETS = str.maketrans({c: " " for c in "[](){}<>\"'`"})
_GRID_RE = re.compile(r"(?<![a-z0-9_])x\s*[:=]\s*(\d+)[\s,;/|]*y\s*[:=]\s*(\d+)(?!\d)", re.IGNORECASE)


def parse_grid_answer(text: str) -> tuple[int, int] | None:
    """Parse a grid cell ``x:N y:M`` from free text; ``None`` when absent.

    Grammar (case-insensitive; the first occurrence in the text is used, as the
    reference's ``re.search``): brackets and quotes ``[](){}<>"'`` are ignored;
    then ``x``, optional spaces, ``:`` (or ``=``), optional spaces, an integer
    ``N``; any run of spaces, commas, semicolons, slashes or bars; ``y``,
    ``:``/``=``, an integer ``M``. The ``x`` must not be glued to a preceding
    letter or digit (``max:3`` is not ``x:3``). Accepted: ``x:3 y:4``,
    ``X: 3, Y: 4``, ``[x:3, y:4]``, ``(x:3,y:4)``, ``x=3; y=4``,
    ``The cell is {x: 3, y: 4}.``. Not accepted: ``3,4``, ``(3, 4)``,
    ``y:4 x:3`` (order matters), negative or decimal numbers.
    """
    m = _GRID_RE.search(str(text).translate(_BRACKETS))
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2))


def exact_match(answer: str, expected: str) -> ValidationResult:
    """Localization: the answered grid cell equals the expected one (both parsed
    by :func:`parse_grid_answer`). An unparsable answer scores 0 and is recorded
    (``parsed=False``).

    Raises:
        ValueError: the expected answer itself is not a grid cell (a task-data error).
    """
    exp = parse_grid_answer(expected)
    if exp is None:
        raise ValueError(f"expected answer {expected!r} is not a grid cell 'x:N y:M'")
    got = parse_grid_answer(answer)
    if got is None:
        return ValidationResult(EXACT_MATCH, False, 0.0, str(expected), str(answer),
                                f"invalid answer format: expected 'x:N y:M', got {answer!r}", parsed=False)
    ok = got == exp
    msg = (f"correct: x:{exp[0]} y:{exp[1]}" if ok
           else f"incorrect: expected x:{exp[0]} y:{exp[1]}, got x:{got[0]} y:{got[1]}")
    return ValidationResult(EXACT_MATCH, ok, 1.0 if ok else 0.0, str(expected), str(answer), msg, prediction=list(got))


# -------------------------------------------------------- coordinate_match
def coordinate_match(final_xy_m: tuple[float, float] | None, target_xy_m: tuple[float, float],
                     radius_m: float = COORDINATE_RADIUS_M) -> ValidationResult:
    """Navigation: the final position lies strictly within ``radius_m`` of the target.

    Args:
        final_xy_m: the agent's final position, local ENU metres ``(x east, y
            north)`` (360CityArena's Unity ``x``/``z``), or ``None`` when unknown.
        target_xy_m: target position in the same frame.
        radius_m: 10 m (:data:`COORDINATE_RADIUS_M`) or 20 m for map
            navigation (:data:`MAP_NAVIGATION_RADIUS_M`).
    Returns: ``distance_m`` is the Euclidean distance; correct iff ``distance_m < radius_m``.
    """
    tx, ty = float(target_xy_m[0]), float(target_xy_m[1])
    expected = f"x:{tx:.2f} y:{ty:.2f}"
    if final_xy_m is None:
        return ValidationResult(COORDINATE_MATCH, False, 0.0, expected, "", "position required but unknown",
                                parsed=False, threshold_m=float(radius_m))
    fx, fy = float(final_xy_m[0]), float(final_xy_m[1])
    dist = math.hypot(fx - tx, fy - ty)
    ok = dist < radius_m
    msg = (f"{'correct' if ok else 'incorrect'}: final ({fx:.2f}, {fy:.2f}), target ({tx:.2f}, {ty:.2f}), "
           f"distance {dist:.2f} m (threshold {radius_m} m)")
    return ValidationResult(COORDINATE_MATCH, ok, 1.0 if ok else 0.0, expected, f"{fx:.2f} {fy:.2f}", msg,
                            prediction=[fx, fy], distance_m=dist, threshold_m=float(radius_m))


# --------------------------------------------------------------------- MRA
_NUMBER_RE = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\d])|(?<![\w.])[-+]?\.\d+")


def first_number(text: str) -> Fraction | None:
    """The first number in ``text`` as an exact fraction, or ``None``.

    A number is an optional sign, digits (``1,234`` with comma groups of three
    is one thousand two hundred thirty-four; ``1,2`` is two numbers) and an
    optional decimal part (``3.5``, ``.5``). It must not be glued to a
    preceding letter, digit, underscore or point (``A3`` is not a number).
    Spelled-out numbers (``three``) are not recognised: they count as missing.
    """
    m = _NUMBER_RE.search(str(text))
    if m is None:
        return None
    return Fraction(m.group(0).replace(",", ""))


def mean_relative_accuracy(prediction: Fraction | float | int, truth: Fraction | float | int) -> float:
    """MRA = (1/10) * sum over theta in {0.50, ..., 0.95} of 1[|pred - y| / |y| < 1 - theta].

    Exact rational arithmetic (no float boundary effects: an error of exactly
    ``1 - theta`` fails that threshold). ``y = 0``: 1.0 iff ``pred = 0``, else 0.0.
    Source: 360CityArena evaluation protocol (Object Count MRA).
    """
    p, y = Fraction(prediction), Fraction(truth)
    if y == 0:
        return 1.0 if p == 0 else 0.0
    rel = abs(p - y) / abs(y)
    return sum(1 for th in MRA_THRESHOLDS if rel < 1 - th) / 10.0


def mra_match(answer: str, expected: str | int | float) -> ValidationResult:
    """Counting: MRA of the first number in ``answer`` against ``expected``.

    ``is_correct`` is exact numeric equality (360CityArena keeps it as a binary
    diagnostic); ``score`` is the MRA. A missing number scores 0 and is
    recorded (``parsed=False``).

    Raises:
        ValueError: ``expected`` holds no number (a task-data error).
    """
    y = first_number(str(expected))
    if y is None:
        raise ValueError(f"expected answer {expected!r} holds no number")
    p = first_number(answer)
    if p is None:
        return ValidationResult(MRA, False, 0.0, str(expected), str(answer),
                                f"no number in the answer {answer!r}; MRA 0", parsed=False)
    score = mean_relative_accuracy(p, y)
    rel = None if y == 0 else float(abs(p - y) / abs(y))
    ok = p == y
    pred = int(p) if p.denominator == 1 else float(p)
    return ValidationResult(MRA, ok, score, str(expected), str(answer),
                            f"expected {float(y):g}, got {float(p):g}; MRA {score:.1f}", prediction=pred,
                            relative_error=rel)


# ------------------------------------------------------------- fuzzy_match
JUDGE_PROMPT_TEMPLATE = """You are grading one answer from an agent that explored a city.

Question: {question}
Reference answer: {reference}
Agent's answer: {answer}

The agent's answer is correct when it identifies the same thing as the reference answer. Different names, \
spellings, abbreviations or translations of the same place or object count as the same, and extra words that do \
not change the meaning are fine. An answer that names something else, contradicts the reference, or lists several \
candidates without committing to one is incorrect.

Think as briefly as you like, then finish with one line of exactly this form:
is_correct: true
or
is_correct: false"""

#: output-token budget recommended for judges (reasoning models need room; the reference used 64)
JUDGE_MAX_OUTPUT_TOKENS = 1024


def prompt_hash(template: str = JUDGE_PROMPT_TEMPLATE) -> str:
    """sha256 (hex) of a judge prompt template (UTF-8)."""
    return hashlib.sha256(template.encode("utf-8")).hexdigest()


def judge_prompt(question: str, reference: str, answer: str, template: str = JUDGE_PROMPT_TEMPLATE) -> str:
    """The judge prompt for one answer."""
    return template.format(question=question, reference=reference, answer=answer)


@dataclass(frozen=True)
class JudgeVerdict:
    """A judge's reply.

    Attributes:
        text: the raw reply text (parsed by :func:`parse_verdict`).
        model: the model name the provider reported (or the configured one).
        model_version: version/snapshot if known.
        prompt_hash: sha256 of the prompt template used.
    """

    text: str
    model: str
    model_version: str | None = None
    prompt_hash: str = field(default_factory=prompt_hash)


@runtime_checkable
class Judge(Protocol):
    """An LLM judge: ``judge(question, reference, answer) -> JudgeVerdict``.

    ``model_id`` is the pinned model (a model spec such as
    ``openai:gpt-4o-2024-08-06`` or a bare name); it is compared with the model
    under test before any call.
    """

    model_id: str

    def __call__(self, question: str, reference: str, answer: str) -> JudgeVerdict: ...


class TemplateJudge:
    """A :class:`Judge` from a text-completion function.

    Args:
        complete: ``complete(prompt, max_output_tokens) -> text`` or
            ``-> (text, reported_model)`` (e.g. a model client call).
        model_id: the judge's pinned model id.
        model_version: its version/snapshot, if known.
        template: prompt template with ``{question}``, ``{reference}``, ``{answer}``.
        max_output_tokens: token budget per verdict (default :data:`JUDGE_MAX_OUTPUT_TOKENS`).
    """

    def __init__(self, complete: Callable[[str, int], str | tuple[str, str | None]], model_id: str,
                 model_version: str | None = None, template: str = JUDGE_PROMPT_TEMPLATE,
                 max_output_tokens: int = JUDGE_MAX_OUTPUT_TOKENS):
        self.complete = complete
        self.model_id = model_id
        self.model_version = model_version
        self.template = template
        self.max_output_tokens = int(max_output_tokens)
        self.prompt_hash = prompt_hash(template)

    def __call__(self, question: str, reference: str, answer: str) -> JudgeVerdict:
        out = self.complete(judge_prompt(question, reference, answer, self.template), self.max_output_tokens)
        text, reported = (out if isinstance(out, tuple) else (out, None))
        return JudgeVerdict(str(text or ""), reported or self.model_id, self.model_version, self.prompt_hash)


_TRUE = {"true", "yes", "correct", "1"}
_FALSE = {"false", "no", "incorrect", "0"}
_VERDICT_RE = re.compile(
    r"\bis[\s_-]*correct\b\s*[:=]?\s*(true|false|yes|no|correct|incorrect)\b", re.IGNORECASE)
_VERDICT_WORD_RE = re.compile(r"\b(?:verdict|answer|result)\s*[:=]\s*(true|false|yes|no|correct|incorrect)\b",
                              re.IGNORECASE)


def _word_to_bool(w: str) -> bool | None:
    w = w.strip().lower()
    if w in _TRUE:
        return True
    if w in _FALSE:
        return False
    return None


def parse_verdict(text: str) -> bool | None:
    """Parse a judge's verdict; ``None`` when it cannot be read.

    Tried in order (markdown ``*``/backticks and code fences are ignored):
    1. a JSON object with ``is_correct`` (or ``correct``/``verdict``) as a
       boolean or a true/false/yes/no/correct/incorrect string;
    2. the **last** ``is_correct: true|false`` (also ``is correct = yes``,
       ``is_correct: correct``...) — the final line wins over earlier
       reasoning;
    3. the last ``verdict|answer|result: correct|incorrect|true|false``;
    4. a reply that is only one such word (``True.``, ``incorrect``).
    """
    if text is None:
        return None
    t = re.sub(r"```[a-zA-Z]*", " ", str(text)).replace("*", "").replace("`", "").strip()
    if not t:
        return None
    for m in re.finditer(r"\{[^{}]*\}", t):
        try:
            obj = json.loads(m.group(0))
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            for key in ("is_correct", "correct", "verdict"):
                if key in obj:
                    v = obj[key]
                    if isinstance(v, bool):
                        return v
                    if isinstance(v, str) and _word_to_bool(v) is not None:
                        return _word_to_bool(v)
    hits = _VERDICT_RE.findall(t)
    if hits:
        return _word_to_bool(hits[-1])
    hits = _VERDICT_WORD_RE.findall(t)
    if hits:
        return _word_to_bool(hits[-1])
    return _word_to_bool(t.strip(" .!\n\t\"'").lower())


_DATE_SUFFIX = re.compile(r"(-\d{4}-\d{2}-\d{2}|-\d{8}|-latest|@[\w.-]+)$")


def normalise_model_id(model: str) -> str:
    """Model identity for the judge-is-not-the-model check.

    Lower-cased; a provider/spec prefix up to the last ``:`` removed
    (``openai:gpt-4o`` -> ``gpt-4o``; ``openai-compatible:http://h:8000/v1:qwen`` -> ``qwen``);
    a path prefix up to the last ``/`` removed (``models/gemini-2.0``,
    ``Qwen/Qwen2.5-VL``); a snapshot suffix removed (``-2024-08-06``,
    ``-20241022``, ``-latest``, ``@20240620``) — a snapshot of the model under
    test is the model under test.
    """
    m = str(model).strip().lower()
    m = m.rsplit(":", 1)[-1]
    m = m.rsplit("/", 1)[-1]
    prev = None
    while prev != m:
        prev, m = m, _DATE_SUFFIX.sub("", m)
    return m


def same_model(a: str, b: str) -> bool:
    """Whether two model ids name the same model (:func:`normalise_model_id`)."""
    return normalise_model_id(a) == normalise_model_id(b)


def normalise_text(text: str) -> str:
    """Offline-match normalisation: NFKC, case-folded, punctuation dropped, the
    articles a/an/the dropped, whitespace collapsed."""
    t = unicodedata.normalize("NFKC", str(text)).casefold()
    t = "".join(" " if unicodedata.category(c).startswith("P") else c for c in t)
    words = [w for w in t.split() if w not in {"a", "an", "the"}]
    return " ".join(words)


def fuzzy_match(question: str, reference: str, answer: str, *, judge: Judge | None = None,
                model_under_test: str | None = None) -> ValidationResult:
    """Relational spatial reasoning: an LLM judge decides whether ``answer`` means ``reference``.

    Args:
        judge: a :class:`Judge`; ``None`` runs only the offline fallback.
        model_under_test: the model whose answer is judged (required with a
            judge): the judge must be a different model.
    Returns:
        With a judge and a readable verdict: ``score`` 1/0 and ``judge``
        recorded. An unparsable verdict: ``validation_available=False``,
        ``score=None``, ``judge.parsed=False`` (recorded, never guessed).
        Without a judge: ``validation_available=False``, ``score=None``.
        Always: ``offline_score`` (1/0, :func:`normalise_text` equality) in its
        own field.
    Raises:
        ValueError: a judge without ``model_under_test``.
        JudgeConflictError: the judge's pinned or reported model is the model under test.
    """
    offline = 1.0 if normalise_text(answer) == normalise_text(reference) and normalise_text(reference) else 0.0
    base = dict(expected=str(reference), user_answer=str(answer), offline_score=offline, offline_metric=OFFLINE_METRIC)
    if judge is None:
        return ValidationResult(FUZZY_MATCH, None, None, message="no judge configured: offline string match only",
                                validation_available=False, **base)
    if not model_under_test:
        raise ValueError("fuzzy_match with a judge needs model_under_test (the judge must differ from it)")
    if same_model(judge.model_id, model_under_test):
        raise JudgeConflictError(f"judge model {judge.model_id!r} is the model under test {model_under_test!r}")
    v = judge(question, reference, answer)
    if same_model(v.model, model_under_test):
        raise JudgeConflictError(f"judge was served by {v.model!r}, the model under test {model_under_test!r}")
    verdict = parse_verdict(v.text)
    rec = JudgeRecord(judge.model_id, v.model, v.model_version, v.prompt_hash, v.text, verdict, verdict is not None)
    if verdict is None:
        return ValidationResult(FUZZY_MATCH, None, None, message=f"unparsable judge verdict: {v.text[:200]!r}",
                                validation_available=False, judge=rec, **base)
    return ValidationResult(FUZZY_MATCH, verdict, 1.0 if verdict else 0.0,
                            message=f"judge {v.model}: {'correct' if verdict else 'incorrect'}", judge=rec, **base)


# ------------------------------------------------------------ episode score
def score_episode(status: str, validation: ValidationResult | None) -> dict[str, Any]:
    """360CityArena's per-episode columns from the stop status and the validator result.

    Args:
        status: how the episode ended: ``"ANSWER"`` or a stop rule
            (``"STEP_LIMIT"``, ``"STAGNATION"``, ``"AWAY_FROM_GOAL"``, ...).
        validation: the validator's result on the answer (ANSWER) or on the
            final position (location tasks without ANSWER); ``None`` when none.
    Returns: ``status``, ``completed_by_answer``, ``is_correct`` (``None`` when
        unknown), ``scored_success``, ``validation_available``,
        ``evaluation_metric``, ``evaluation_score`` (``float`` in [0, 1]; 0.0
        for every non-ANSWER status; ``None`` = missing for an ANSWER without a
        validator verdict, which counts 0 in a run mean), ``offline_score``,
        ``user_answer``, ``expected``, ``distance_to_goal``,
        ``validation_threshold``, ``message``, and the judge's ``judge_model``,
        ``judge_reported_model``, ``judge_model_version``,
        ``judge_prompt_hash``, ``judge_verdict_parsed``.
    """
    by_answer = status == "ANSWER"
    v = validation
    available = bool(v is not None and v.validation_available)
    is_correct = v.is_correct if v is not None else None
    if not by_answer:
        score: float | None = 0.0
    elif not available:
        score = None
    else:
        raw = v.score if v.score is not None else (1.0 if v.is_correct else 0.0)
        score = min(1.0, max(0.0, float(raw)))
    j = v.judge if v is not None else None
    return {
        "status": status,
        "completed_by_answer": by_answer,
        "is_correct": is_correct,
        "scored_success": bool(by_answer and is_correct is True),
        "validation_available": available,
        "evaluation_metric": v.metric if v is not None else "",
        "evaluation_score": score,
        "offline_score": v.offline_score if v is not None else None,
        "user_answer": v.user_answer if v is not None else "",
        "expected": v.expected if v is not None else "",
        "distance_to_goal": v.distance_m if v is not None else None,
        "validation_threshold": v.threshold_m if v is not None else None,
        "message": v.message if v is not None else f"{status}: no validation",
        "judge_model": j.model if j else None,
        "judge_reported_model": j.reported_model if j else None,
        "judge_model_version": j.model_version if j else None,
        "judge_prompt_hash": j.prompt_hash if j else None,
        "judge_verdict_parsed": j.parsed if j else None,
    }


def coordinate_radius_m(task_kind: str | None) -> float:
    """coordinate_match radius for a task kind: 20 m for ``map_navigation``, else 10 m."""
    return MAP_NAVIGATION_RADIUS_M if task_kind == "map_navigation" else COORDINATE_RADIUS_M
