"""The text form of a task's expected answer in exported tables (the ``answer`` column of ``tasks export``'s
``tasks`` table and of the VLMEvalKit TSV, and the answer turns of ``demos export``)."""

from __future__ import annotations

import json
from typing import Any


def answer_text(answer: Any) -> str | None:
    """The ``answer`` column's text form of a task's expected answer.

    Text stays as it is (a grid cell ``x:N y:M``, a count ``12``, a place name); a number becomes its
    decimal text (``3``, ``2.5``); any other value (a list, an object, ``true``/``false``) becomes compact
    JSON text; ``None`` (navigation tasks, scored by position) stays ``None``. The exact value is in
    ``task_json``.
    """
    if answer is None or isinstance(answer, str):
        return answer
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        return json.dumps(answer)
    return json.dumps(answer, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
