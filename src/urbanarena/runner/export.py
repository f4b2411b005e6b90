"""Export a run store to CSV, JSON lines or Parquet.

One row per stored episode, ordered by (config_hash, task_id, seed, agent),
with the store's columns (see :mod:`urbanarena.runner.store`):

* **JSONL** — one JSON object per line; ``trajectory``, ``headings``,
  ``actions``, ``metrics``, ``agent_stats`` and ``timings`` are nested JSON.
* **CSV** — the same columns; the nested ones hold compact JSON text; empty
  cells for NULL; a header row.
* **Parquet** — typed columns: ``trajectory`` list<string>, ``headings``
  list<double>, ``actions`` list<int64> (list<string> when the export holds
  arena episodes, whose actions are labels such as ``"W LARGE"``; graph
  actions are then written as their decimal text), one double column per
  metric key, the results-schema-v3 columns typed as stored (int64, double,
  string), ``metrics``/``agent_stats``/``timings``/``details`` as JSON text.
  Needs ``pyarrow`` (``pip install 'urbanarena[export]'``).
* **cityarena-csv** — 360CityArena's ``results.csv`` (results schema v3,
  :data:`~urbanarena.runner.results.CITYARENA_CSV_COLUMNS`, in its column
  order) for the arena episodes of the run: ``timestamp`` = the episode's
  ``finished_at`` (ISO 8601 UTC), ``run_id`` = the RUN_DIR's name,
  ``experiment_id`` empty, booleans ``true``/``false``, NULL as an empty
  cell, ``final_position_x``/``final_position_z`` = local ENU x east / y north
  (metres). As the schema requires, the file holds no API key, prompt body,
  image payload or absolute path (absolute paths inside messages are cut to
  their last component). Refused when the run has no arena episode.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Iterable

import re

from urbanarena.errors import UrbanArenaError
from urbanarena.safe_paths import atomic_write
from urbanarena.runner.results import CITYARENA_CSV_COLUMNS, V3_STORE_COLUMNS
from urbanarena.runner.store import COLUMNS, JSON_COLUMNS, Store
from urbanarena.tasks.metrics import METRIC_KEYS

FORMATS = ("csv", "jsonl", "parquet", "cityarena-csv")
#: v3 columns holding 0/1 flags, written as true/false in cityarena-csv
_BOOL_COLUMNS = frozenset({"scored_success", "is_correct", "validation_available", "completed_by_answer"})
_ABS_PATH = re.compile(r"(?<![\w.:/])(?:/[^\s/'\"]+)+/(?=[^\s/'\"]+)")


class ExportError(UrbanArenaError):
    """An export that cannot be written (unknown format, missing optional dependency)."""


def _dumps(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _write_jsonl(rows: Iterable[dict[str, Any]], tmp: Path) -> int:
    n = 0
    with open(tmp, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(_dumps(r) + "\n")
            n += 1
    return n


def _write_csv(rows: Iterable[dict[str, Any]], tmp: Path) -> int:
    n = 0
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for r in rows:
            w.writerow([
                "" if r[c] is None else (_dumps(r[c]) if c in JSON_COLUMNS else r[c]) for c in COLUMNS
            ])
            n += 1
    return n


def _write_parquet(rows: Iterable[dict[str, Any]], tmp: Path) -> int:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as e:
        raise ExportError(
            "Parquet export needs pyarrow: pip install 'urbanarena[export]' (or pip install pyarrow)"
        ) from e
    rows = list(rows)
    labels = any(isinstance(a, str) for r in rows for a in (r["actions"] or []))
    sql_types = {"INTEGER": pa.int64(), "REAL": pa.float64(), "TEXT": pa.string()}
    types: dict[str, Any] = {
        "id": pa.int64(), "seed": pa.int64(), "steps": pa.int64(), "invalid_actions": pa.int64(),
        "trajectory": pa.list_(pa.string()), "headings": pa.list_(pa.float64()),
        "actions": pa.list_(pa.string() if labels else pa.int64()),
        "duration_s": pa.float64(),
        **{k: pa.float64() for k in METRIC_KEYS},
        **{c: sql_types[t] for c, t in V3_STORE_COLUMNS},
    }
    schema = pa.schema([(c, types.get(c, pa.string())) for c in COLUMNS])
    cols: dict[str, list] = {c: [] for c in COLUMNS}
    for r in rows:
        for c in COLUMNS:
            v = r[c]
            if c in ("metrics", "agent_stats", "timings", "details"):
                v = None if v is None else _dumps(v)
            elif c == "actions" and labels and v is not None:
                v = [str(a) for a in v]
            cols[c].append(v)
    table = pa.Table.from_pydict(cols, schema=schema)
    pq.write_table(table, tmp)
    return table.num_rows


def _strip_paths(text: str) -> str:
    """Cut absolute POSIX paths inside free text to their last component."""
    return _ABS_PATH.sub("", text)


def cityarena_rows(rows: Iterable[dict[str, Any]], run_id: str) -> Iterable[list[Any]]:
    """Store rows of arena episodes -> cityarena-csv cells (see the module docstring)."""
    for r in rows:
        if r.get("status") is None:
            continue
        out = []
        for c in CITYARENA_CSV_COLUMNS:
            if c == "timestamp":
                v = r.get("finished_at")
            elif c == "run_id":
                v = run_id
            elif c == "experiment_id":
                v = ""
            else:
                v = r.get(c)
            if v is None:
                out.append("")
            elif c in _BOOL_COLUMNS:
                out.append("true" if v else "false")
            elif isinstance(v, str):
                out.append(_strip_paths(v))
            else:
                out.append(v)
        yield out


def _write_cityarena_csv(rows: Iterable[dict[str, Any]], tmp: Path, run_id: str) -> int:
    n = 0
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(CITYARENA_CSV_COLUMNS)
        for cells in cityarena_rows(rows, run_id):
            w.writerow(cells)
            n += 1
    if n == 0:
        raise ExportError("no 360CityArena-style (arena family) episodes in this run: nothing to write as cityarena-csv")
    return n


def export_run(run_dir: str | Path, fmt: str, out: str | Path, config_hashes: list[str] | None = None) -> int:
    """Write the episodes of ``run_dir`` (optionally only some configs) to ``out``.

    The file is written to a temporary name and renamed, so ``out`` is never
    left half-written. Returns the number of rows written.

    Raises:
        ExportError: unknown format, or Parquet without pyarrow.
        StoreError: ``run_dir`` has no store.
    """
    fmt = fmt.lower()
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    out = Path(out)
    run_id = Path(run_dir).resolve().name
    writer = {"csv": _write_csv, "jsonl": _write_jsonl, "parquet": _write_parquet,
              "cityarena-csv": lambda rows, tmp: _write_cityarena_csv(rows, tmp, run_id)}[fmt]
    with Store(Path(run_dir) / "episodes.sqlite", readonly=True) as store:
        out.parent.mkdir(parents=True, exist_ok=True)
        n = atomic_write(out, lambda tmp: writer(store.rows(config_hashes), tmp))
    return n
