"""The static image-question table of an exported suite, in VLMEvalKit's TSV layout.

For harnesses without an environment loop: tasks whose question is answered from the start view alone
become one row each. Which tasks (ours): ``cityarena`` tasks of the kinds in :data:`STATIC_KINDS` —
``localization``, whose answer (the start's grid cell) is a function of the start pose, and for which the
full 360-degree start panorama plus the task's reference images (the grid map) hold everything the
walk would show of the start. Navigation, search and counting tasks need movement and are left out;
their static scores would not be the benchmark's.

Columns (VLMEvalKit's ``TSVDataset``: ``index`` unique integer, ``image`` base64): ``index``,
``image`` (one base64 string, or a list of them when the task has reference images, as the list literal ``['...', '...']`` VLMEvalKit's ``toliststr`` reads: the start
panorama first, then the references in order), ``question`` (our one-line
note that the images are all there is, then the task's instruction), ``answer`` (the expected answer
as text, :func:`urbanarena.runner.answer_column.answer_text`), ``category`` (the task kind), ``l2-category`` (difficulty), ``split``, ``task_id``,
``answer_metric``. No ``A``–``D`` columns: these are open answers, not multiple choice.
Tab-separated, UTF-8, a header row; no field holds a tab or a newline (those are replaced by spaces).
"""

from __future__ import annotations

import base64
import csv
from pathlib import Path
from typing import Any, Mapping

from urbanarena.runner.answer_column import answer_text
from urbanarena.tasks.schema import Task

#: cityarena task kinds exported to the static table (module docstring)
STATIC_KINDS = frozenset({"localization"})
#: the line put before the instruction in the static table (ours)
STATIC_NOTE = ("You cannot move or turn: the first image is the full 360-degree panorama of where you stand; "
               "any further images are the task's reference images.")
COLUMNS = ("index", "image", "question", "answer", "category", "l2-category", "split", "task_id", "answer_metric")


def is_static(task: Task) -> bool:
    """Whether ``task`` goes into the static table (module docstring)."""
    return task.family == "cityarena" and (task.extra or {}).get("task_kind") in STATIC_KINDS


def _flat(text: Any) -> str:
    return " ".join(str(text if text is not None else "").split())


def static_rows(tasks: list[Task], panoramas: Mapping[str, Any], references: Mapping[str, list[Any]]) -> list[dict[str, Any]]:
    """Rows of the static table for the static tasks whose start panorama was exported.

    Args:
        panoramas: node id -> exported image (``.data`` bytes); references: task id -> exported images.
    """
    rows = []
    for t in tasks:
        if not is_static(t) or (t.start.node or "") not in panoramas:
            continue
        images = [panoramas[t.start.node]] + list(references.get(t.task_id, []))  # type: ignore[index]
        b64 = [base64.b64encode(im.data).decode("ascii") for im in images]
        rows.append({
            "index": len(rows), "image": b64[0] if len(b64) == 1 else "[" + ", ".join(f"'{x}'" for x in b64) + "]",
            "question": _flat(f"{STATIC_NOTE} {t.instruction}"), "answer": _flat(answer_text(t.answer)),
            "category": _flat((t.extra or {}).get("task_kind")), "l2-category": _flat(t.difficulty),
            "split": _flat((t.provenance or {}).get("split") or "test"), "task_id": _flat(t.task_id),
            "answer_metric": _flat(t.answer_metric),
        })
    return rows


def write_static_tsv(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Write the rows as a VLMEvalKit TSV (module docstring); returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
        w.writeheader()
        for r in rows:
            w.writerow(r)
    return path


__all__ = ["COLUMNS", "STATIC_KINDS", "is_static", "static_rows", "write_static_tsv"]
