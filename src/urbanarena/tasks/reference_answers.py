"""Answer reading of ``cityarena-v1``: grid cells and counts read as 360CityArena's released validators read them.

Protocol parameter ``answer_reading = "reference"`` (``cityarena-v1``); without it (``urbanarena-v1``) the
forgiving readers of :mod:`urbanarena.tasks.validators` apply (:func:`~urbanarena.tasks.validators.exact_match`,
:func:`~urbanarena.tasks.validators.mra_match`). Source: ``360MM-Team/360CityArena`` at commit a6ec8ed,
``python/src/cityarena/tasks/validators.py`` (``validate_localization_grid_answer``,
``validate_counting_answer``); the rules are restated here in our words:

* **grid** (Localization, ``exact_match``): the answer, whitespace-stripped and lower-cased, must *contain*
  ``x``, optional spaces, ``:``, optional spaces, digits, **at least one whitespace character**, ``y``,
  optional spaces, ``:``, optional spaces, digits; the first such place counts. Consequences: ``"x:3, y:4"``
  (a comma), ``"x=3; y=4"`` and ``"(x:3,y:4)"`` are unreadable (score 0), while ``"max:3 y:4"`` reads as
  ``x:3 y:4`` (the ``x`` of ``max``).
* **count** (Counting, MRA): the *whole* stripped answer must be one finite decimal literal as Python's
  :class:`decimal.Decimal` reads it (sign, digits with optional ``_`` separators, a fraction, an exponent):
  ``"1e1"`` is 10; ``"3 cars"``, ``"about 12"`` and ``"1,000"`` are unreadable (MRA 0); ``"NaN"`` and
  ``"Infinity"`` are refused as non-finite. MRA itself is the same formula
  (:func:`~urbanarena.tasks.validators.mean_relative_accuracy`, exact rationals).
* **not text**: an answer the model sent as a JSON number (``"answer": 3``) is scored 0 — the reference
  calls ``.strip()`` on it and fails. The reply parser marks such an answer
  (:class:`~urbanarena.env.arena_env.NonTextAnswer`) under ``reply_reading = "reference"`` so the validator
  can tell ``3`` from ``"3"``.

Every unreadable answer is recorded (``parsed = False``) with the reason, never repaired.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction

from urbanarena.env.arena_env import NonTextAnswer
from urbanarena.tasks.validators import (
    EXACT_MATCH,
    MRA,
    ValidationResult,
    first_number,
    mean_relative_accuracy,
    parse_grid_answer,
)

_REFERENCE_GRID_RE = re.compile(r"x\s*:\s*(\d+)\s+y\s*:\s*(\d+)")


def split_non_text(answer: str | None) -> tuple[str, bool]:
    """``(answer text as a plain str, arrived_as_a_JSON_number)``."""
    return ("" if answer is None else str.__str__(answer) if isinstance(answer, str) else str(answer),
            isinstance(answer, NonTextAnswer))


def reference_grid(text: str) -> tuple[int, int] | None:
    """The grid cell the reference reads in ``text`` (module docstring), or ``None``."""
    m = _REFERENCE_GRID_RE.search(str(text).strip().lower())
    return None if m is None else (int(m.group(1)), int(m.group(2)))


def reference_count(text: str) -> Fraction | None:
    """The count the reference reads: the whole stripped text as one finite decimal, else ``None``."""
    try:
        value = Decimal(str(text).strip())
    except (InvalidOperation, ValueError):
        return None
    if not value.is_finite():
        return None
    return Fraction(value)


def _non_text(metric: str, expected: str, text: str) -> ValidationResult:
    return ValidationResult(metric, False, 0.0, str(expected), text,
                            f"the answer arrived as a JSON number ({text}), not text: the reference cannot read it; "
                            "score 0", parsed=False)


def reference_exact_match(answer: str | None, expected: str) -> ValidationResult:
    """Localization under ``cityarena-v1``: the reference's grid reading of answer and expected cell.

    Raises:
        ValueError: ``expected`` is a grid cell neither reading finds (a task-data error).
    """
    text, non_text = split_non_text(answer)
    if non_text:
        return _non_text(EXACT_MATCH, expected, text)
    exp = reference_grid(expected) or parse_grid_answer(expected)
    if exp is None:
        raise ValueError(f"expected answer {expected!r} is not a grid cell 'x:N y:M'")
    got = reference_grid(text)
    if got is None:
        return ValidationResult(EXACT_MATCH, False, 0.0, str(expected), text,
                                f"invalid answer format under the reference reading: expected 'x:N y:M' "
                                f"(whitespace between the two), got {text!r}", parsed=False)
    ok = got == exp
    msg = (f"correct: x:{exp[0]} y:{exp[1]}" if ok
           else f"incorrect: expected x:{exp[0]} y:{exp[1]}, got x:{got[0]} y:{got[1]}")
    return ValidationResult(EXACT_MATCH, ok, 1.0 if ok else 0.0, str(expected), text, msg, prediction=list(got))


def reference_mra_match(answer: str | None, expected: str | int | float) -> ValidationResult:
    """Counting under ``cityarena-v1``: MRA of the answer read as one decimal literal (module docstring).

    Raises:
        ValueError: ``expected`` holds no number (a task-data error).
    """
    text, non_text = split_non_text(answer)
    if non_text:
        return _non_text(MRA, str(expected), text)
    y = reference_count(str(expected))
    if y is None:
        y = first_number(str(expected))
    if y is None:
        raise ValueError(f"expected answer {expected!r} holds no number")
    p = reference_count(text)
    if p is None:
        return ValidationResult(MRA, False, 0.0, str(expected), text,
                                f"the answer {text!r} is not one number under the reference reading; MRA 0",
                                parsed=False)
    score = mean_relative_accuracy(p, y)
    rel = None if y == 0 else float(abs(p - y) / abs(y))
    pred = int(p) if p.denominator == 1 else float(p)
    return ValidationResult(MRA, p == y, score, str(expected), text,
                            f"expected {float(y):g}, got {float(p):g}; MRA {score:.1f}", prediction=pred,
                            relative_error=rel)


__all__ = ["reference_count", "reference_exact_match", "reference_grid",
           "reference_mra_match", "split_non_text"]
