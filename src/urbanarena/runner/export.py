"""Export a run store to CSV, JSON lines or Parquet.

One row per stored episode, ordered by (config_hash, task_id, seed, agent),
with the store's columns (see :mod:`urbanarena.runner.store`):

* **JSONL** — one JSON object per line; ``trajectory``, ``headings``,
  ``actions``, ``metrics``, ``agent_stats`` and ``timings`` are nested JSON.
* **CSV** — the same columns; the nested ones hold compact JSON text; empty
  cells for NULL; a header row.
* **Parquet** — typed columns: ``trajectory`` list<string>, ``headings``
  list<double>, ``actions`` list<int64>, one double column per metric key,
  ``metrics``/``agent_stats``/``timings`` as JSON text. Needs ``pyarrow``
  (``pip install 'urbanarena[export]'``).
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any, Iterable

from urbanarena.errors import UrbanArenaError
from urbanarena.runner.store import COLUMNS, JSON_COLUMNS, Store
from urbanarena.tasks.metrics import METRIC_KEYS

FORMATS = ("csv", "jsonl", "parquet")


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
    types: dict[str, Any] = {
        "id": pa.int64(), "seed": pa.int64(), "steps": pa.int64(), "invalid_actions": pa.int64(),
        "trajectory": pa.list_(pa.string()), "headings": pa.list_(pa.float64()), "actions": pa.list_(pa.int64()),
        "duration_s": pa.float64(),
        **{k: pa.float64() for k in METRIC_KEYS},
    }
    schema = pa.schema([(c, types.get(c, pa.string())) for c in COLUMNS])
    cols: dict[str, list] = {c: [] for c in COLUMNS}
    for r in rows:
        for c in COLUMNS:
            v = r[c]
            if c in ("metrics", "agent_stats", "timings"):
                v = None if v is None else _dumps(v)
            cols[c].append(v)
    table = pa.Table.from_pydict(cols, schema=schema)
    pq.write_table(table, tmp)
    return table.num_rows


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
    writer = {"csv": _write_csv, "jsonl": _write_jsonl, "parquet": _write_parquet}[fmt]
    with Store(Path(run_dir) / "episodes.sqlite", readonly=True) as store:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        try:
            n = writer(store.rows(config_hashes), tmp)
            os.replace(tmp, out)
        finally:
            if tmp.exists():
                tmp.unlink()
    return n
