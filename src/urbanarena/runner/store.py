"""The run store: one SQLite database per run directory (``RUN_DIR/episodes.sqlite``).

Durability: the database is in WAL mode with ``synchronous=NORMAL``; every
finished episode is written by :meth:`Store.add` in its own transaction
(``BEGIN IMMEDIATE`` / ``INSERT`` / ``COMMIT``). A crash of the process at
any point (including between the ``INSERT`` and the ``COMMIT``) loses at most
the episode being written; SQLite rolls an uncommitted transaction back on
the next open. (With ``synchronous=NORMAL`` a power loss, not a process
crash, may roll back the last few commits; they are simply rerun.)

Only the driver process writes; workers return result dicts.

Tables:

``episodes`` — one row per ``(task_id, seed, agent, config_hash)`` (UNIQUE):

=================  =========  ==================================================
column             type       meaning
=================  =========  ==================================================
id                 INTEGER    row id (insertion order; not part of the result)
task_id            TEXT       task id
seed               INTEGER    episode seed
agent              TEXT       agent name
config_hash        TEXT       :mod:`urbanarena.runner.config` hash
protocol           TEXT       protocol id (e.g. ``cityseeker-v1``)
family             TEXT       task family
category           TEXT       task category (may be NULL)
difficulty         TEXT       task difficulty (may be NULL)
task_hash          TEXT       sha256 of the task's canonical JSON
stop_reason        TEXT       ``stop`` / ``max_steps`` / ``error``
error              TEXT       agent exception text, NULL when none
steps              INTEGER    actions taken (STOP included)
invalid_actions    INTEGER    invalid actions taken
trajectory         TEXT       JSON list of node ids (start first)
headings           TEXT       JSON list of headings (degrees), one per node
actions            TEXT       JSON list of action ints (-1 STOP, -2 unparseable)
metrics            TEXT       JSON object of every metric the scorer returned
<metric key>       REAL       one column per key of ``METRIC_KEYS`` (NULL where
                              it does not apply); rates 0/1, as stored per episode
agent_stats        TEXT       JSON object (requests, tokens ... as the agent counts)
timings            TEXT       JSON object of seconds (agent_s, env_s, score_s, total_s)
details            TEXT       JSON object, arena episodes: task_kind, answer,
                              final_position, positions ([x_m, y_m] per step),
                              goal_distance_m, env_counters, poses ...; NULL
                              for graph episodes
<v3 column>        ...        360CityArena results-schema-v3 columns
                              (:mod:`urbanarena.runner.results`: status,
                              evaluation_score, final_position_x ... model,
                              token totals, error counters); NULL where they
                              do not apply
duration_s         REAL       wall time of the episode, seconds
started_at         TEXT       ISO 8601 UTC
finished_at        TEXT       ISO 8601 UTC
=================  =========  ==================================================

``strategy_memory`` — the job memory of runs with ``--strategy`` / ``--rounds`` (one row per
(config_hash, task_id, seed, agent, round, step); columns in
:mod:`urbanarena.agents.strategies.memory`). A job's memory rows are written by :meth:`Store.add` in
the transaction of its episode row, so they are stored exactly when the episode is. The table is
created in place in older stores opened for writing (the schema version stays 2: nothing existing
changes).

For those runs the episode row is the job's last round and ``details`` holds ``rounds``,
``rounds_planned``, ``privileged``, ``strategies`` and ``per_round`` (see
:meth:`urbanarena.runner.episode.EpisodeRunner.run_rounds`).

``configs`` — ``config_hash`` -> the hashed config JSON (self-describing store).
``meta`` — ``schema_version`` (2). A version-1 store (before the ``details``
and v3 columns) is upgraded in place when opened for writing (the columns are
added, old rows hold NULL there); read-only it is read as it is, the missing
columns returned as ``None``.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from pathlib import Path
from typing import Any, Iterable, Iterator

from urbanarena.agents.strategies.memory import MEMORY_COLUMNS, MEMORY_DDL, MEMORY_KEY, MEMORY_TABLE
from urbanarena.errors import RunIOError, StoreError
from urbanarena.redact import redact_urls
from urbanarena.runner.results import V3_STORE_COLUMNS, V3_STORE_NAMES, V3_TIME_COLUMNS
from urbanarena.tasks.metrics import METRIC_KEYS

STORE_FILE = "episodes.sqlite"
SCHEMA_VERSION = 2
#: schema versions this code opens (older ones are upgraded when opened for writing)
READABLE_VERSIONS = (1, 2)

#: test hook: SIGKILL the process inside the Nth commit of this process
#: (after the INSERT, before COMMIT). Used by the crash-safety tests only.
KILL_ENV = "URBANARENA_TEST_KILL_AT_COMMIT"

KEY_COLUMNS = ("task_id", "seed", "agent", "config_hash")
JSON_COLUMNS = ("trajectory", "headings", "actions", "metrics", "agent_stats", "timings", "details")
#: columns that legitimately differ between two runs of the same episode
TIME_COLUMNS = ("id", "timings", "duration_s", "started_at", "finished_at") + V3_TIME_COLUMNS
SCALAR_COLUMNS = (
    "task_id", "seed", "agent", "config_hash", "protocol", "family", "category", "difficulty",
    "task_hash", "stop_reason", "error", "steps", "invalid_actions",
)

_METRIC_COLS = tuple(METRIC_KEYS)
for _k in _METRIC_COLS:
    if not _k.isidentifier() or _k in SCALAR_COLUMNS or _k in JSON_COLUMNS or _k in TIME_COLUMNS or _k in V3_STORE_NAMES:
        raise RuntimeError(f"metric key {_k!r} cannot be a store column")

COLUMNS: tuple[str, ...] = (
    ("id",) + SCALAR_COLUMNS + JSON_COLUMNS[:4] + _METRIC_COLS + JSON_COLUMNS[4:] + V3_STORE_NAMES
    + ("duration_s", "started_at", "finished_at")
)
#: columns added by schema version 2, with their SQL types
_V2_COLUMNS: tuple[tuple[str, str], ...] = (("details", "TEXT"),) + V3_STORE_COLUMNS

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS configs (
    config_hash TEXT PRIMARY KEY,
    config TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS episodes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id TEXT NOT NULL,
    seed INTEGER NOT NULL,
    agent TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    protocol TEXT NOT NULL,
    family TEXT NOT NULL,
    category TEXT,
    difficulty TEXT,
    task_hash TEXT NOT NULL,
    stop_reason TEXT,
    error TEXT,
    steps INTEGER NOT NULL,
    invalid_actions INTEGER NOT NULL,
    trajectory TEXT NOT NULL,
    headings TEXT NOT NULL,
    actions TEXT NOT NULL,
    metrics TEXT NOT NULL,
    {", ".join(f"{k} REAL" for k in _METRIC_COLS)},
    agent_stats TEXT NOT NULL,
    timings TEXT NOT NULL,
    {", ".join(f"{c} {t}" for c, t in _V2_COLUMNS)},
    duration_s REAL,
    started_at TEXT,
    finished_at TEXT,
    UNIQUE (task_id, seed, agent, config_hash)
);
CREATE INDEX IF NOT EXISTS episodes_config ON episodes (config_hash);
{MEMORY_DDL};
"""


def _dumps(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"), allow_nan=False, ensure_ascii=False)


def _column_value(v: Any) -> Any:
    """A v3 column value as SQLite stores it (bools as 0/1, non-finite floats as NULL)."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float) and v != v:
        return None
    if isinstance(v, (dict, list)):
        return _dumps(v)
    return v


def _metric_value(v: Any) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    return None


class Store:
    """The SQLite episode store of one run directory.

    Args:
        path: the database file (``RUN_DIR/episodes.sqlite``); created with
            its schema when missing.
        readonly: open read-only (summary/export); raises :class:`StoreError`
            when the file does not exist. A store this process cannot write (a read-only RUN_DIR) is read in
            SQLite's ``immutable`` mode when no write-ahead log is pending (:meth:`_open_unwritable`).
    Raises:
        StoreError: missing store (read-only), or a store of another schema version.
    """

    def __init__(self, path: str | Path, readonly: bool = False):
        self.path = Path(path)
        self.readonly = readonly
        self._commits = 0
        kill = os.environ.get(KILL_ENV)
        self._kill_at = int(kill) if kill and kill.strip().isdigit() else None
        if readonly:
            if not self.path.is_file():
                raise StoreError(f"{self.path}: no run store here (is this a RUN_DIR?)")
            try:
                # not mode=ro: a reader of a WAL database may need to create the -shm file
                self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=30)
                self.conn.execute("SELECT 1 FROM episodes LIMIT 1")
            except sqlite3.DatabaseError as e:
                if os.access(self.path.parent, os.W_OK) and os.access(self.path, os.W_OK):
                    raise StoreError(f"{self.path}: not a run store ({e})") from e
                self.conn = self._open_unwritable(e)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=30)
            try:
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute("PRAGMA synchronous=NORMAL")
                self.conn.execute("BEGIN IMMEDIATE")
                for stmt in _SCHEMA.strip().split(";"):
                    if stmt.strip():
                        self.conn.execute(stmt)
                self.conn.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
                )
                self.conn.execute("COMMIT")
            except sqlite3.DatabaseError as e:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise StoreError(f"{self.path}: cannot open the run store ({e})") from e
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None or int(row[0]) not in READABLE_VERSIONS:
            raise StoreError(f"{self.path}: store schema version {row and row[0]!r}, this urbanarena reads "
                             f"{', '.join(map(str, READABLE_VERSIONS))}")
        self.schema_version = int(row[0])
        if self.schema_version < SCHEMA_VERSION and not readonly:
            self._upgrade()
        present = {r[1] for r in self.conn.execute("PRAGMA table_info(episodes)")}
        self._select = ", ".join(c if c in present else f"NULL AS {c}" for c in COLUMNS)

    def _open_unwritable(self, first: sqlite3.DatabaseError) -> sqlite3.Connection:
        """Read a store in a directory (or file) this process cannot write: SQLite's ``immutable`` mode reads
        the database file alone, exact when no write-ahead log is pending (a run closed cleanly, or any
        run after its last checkpoint); with a pending ``-wal`` file the episodes in it would be missed, so
        that is refused, naming the directory as read-only.

        Raises:
            StoreError: a pending write-ahead log, or a file that is not a run store.
        """
        wal = self.path.with_name(self.path.name + "-wal")
        where = self.path.parent if not os.access(self.path.parent, os.W_OK) else self.path
        if wal.is_file() and wal.stat().st_size > 0:
            raise StoreError(f"{where}: read-only, and the run store has a pending write-ahead log ({wal.name}) that "
                             "SQLite can only read by writing beside it: copy the RUN_DIR somewhere writable "
                             f"(or make it writable) and retry ({first})")
        try:
            conn = sqlite3.connect(f"{self.path.absolute().as_uri()}?immutable=1", uri=True, isolation_level=None)
            conn.execute("SELECT 1 FROM episodes LIMIT 1")
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path}: not a run store ({e}; {where} is read-only)") from e
        return conn

    def _upgrade(self) -> None:
        """Add the schema-2 columns to a version-1 store (one transaction)."""
        present = {r[1] for r in self.conn.execute("PRAGMA table_info(episodes)")}
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            for c, t in _V2_COLUMNS:
                if c not in present:
                    self.conn.execute(f"ALTER TABLE episodes ADD COLUMN {c} {t}")
            self.conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))
            self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        self.schema_version = SCHEMA_VERSION

    # ---------------------------------------------------------------- writing
    def add_config(self, config_hash: str, config: dict[str, Any], created_at: str) -> None:
        """Record a config (no-op when already present)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.execute(
                "INSERT OR IGNORE INTO configs (config_hash, config, created_at) VALUES (?, ?, ?)",
                (config_hash, _dumps(config), created_at),
            )
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def add(self, result: dict[str, Any], replace: bool = False) -> bool:
        """Commit one finished episode in one transaction.

        Args:
            result: a result dict of :meth:`EpisodeRunner.run`.
            replace: replace an existing row with the same key (used to rerun
                errored episodes); otherwise an existing key is left alone.
        Returns: True when a row was written.
        """
        m = result.get("metrics") or {}
        values = {
            **{k: result.get(k) for k in SCALAR_COLUMNS},
            "trajectory": _dumps(result["trajectory"]),
            "headings": _dumps(result.get("headings") or []),
            "actions": _dumps(result["actions"]),
            "metrics": _dumps(m),
            **{k: _metric_value(m.get(k)) for k in _METRIC_COLS},
            "agent_stats": _dumps(result.get("agent_stats") or {}),
            "timings": _dumps(result.get("timings") or {}),
            "details": _dumps(result["details"]) if result.get("details") is not None else None,
            **{k: _column_value((result.get("v3") or {}).get(k)) for k in V3_STORE_NAMES},
            "duration_s": (result.get("timings") or {}).get("total_s"),
            "started_at": result.get("started_at"),
            "finished_at": result.get("finished_at"),
        }
        for k in ("error", "last_error_message", "agent_stats"):  # defence in depth: no URL credential is stored
            if isinstance(values.get(k), str):
                values[k] = redact_urls(values[k])
        cols = list(values)
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        sql = f"{verb} INTO episodes ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})"
        mem_sql = (f"INSERT INTO {MEMORY_TABLE} ({', '.join(MEMORY_COLUMNS)}) "
                   f"VALUES ({', '.join('?' for _ in MEMORY_COLUMNS)})")
        try:
            return self._write_episode(result, sql, [values[c] for c in cols], mem_sql, replace)
        except sqlite3.OperationalError as e:
            raise RunIOError(self.path, str(e)) from e  # disk full, I/O error, read-only file system

    def _write_episode(self, result: dict[str, Any], sql: str, row: list[Any], mem_sql: str, replace: bool) -> bool:
        memory = result.get("memory") or []
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            cur = self.conn.execute(sql, row)
            if cur.rowcount > 0 and (memory or replace):
                # the job's memory rows (strategies/--rounds) commit with its episode row, in this transaction
                self.conn.execute(f"DELETE FROM {MEMORY_TABLE} WHERE {' AND '.join(f'{k}=?' for k in MEMORY_KEY)}",
                                  [result.get(k) for k in MEMORY_KEY])
                self.conn.executemany(mem_sql, [[m.get(c) for c in MEMORY_COLUMNS] for m in memory])
            self._commits += 1
            if self._kill_at is not None and self._commits == self._kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        return cur.rowcount > 0

    # ---------------------------------------------------------------- reading
    def done_keys(self) -> dict[tuple[str, int, str, str], tuple[str, str | None]]:
        """``{(task_id, seed, agent, config_hash): (task_hash, stop_reason)}`` of stored episodes."""
        rows = self.conn.execute("SELECT task_id, seed, agent, config_hash, task_hash, stop_reason FROM episodes")
        return {(r[0], r[1], r[2], r[3]): (r[4], r[5]) for r in rows}

    def errored(self, agent: str, config_hashes: Iterable[str]) -> list[tuple[str, int, str, str | None]]:
        """``(task_id, seed, config_hash, error text)`` of the stored episodes of ``agent`` under
        ``config_hashes`` that ended in an error (stop reason ``error``), by finish time."""
        hs = list(config_hashes)
        if not hs:
            return []
        return [tuple(r) for r in self.conn.execute(
            f"SELECT task_id, seed, config_hash, error FROM episodes WHERE stop_reason='error' AND agent=? AND "
            f"config_hash IN ({', '.join('?' for _ in hs)}) ORDER BY finished_at, task_id, seed", [agent, *hs])]

    def count(self, config_hash: str | None = None) -> int:
        """Number of stored episodes (of one config when given)."""
        if config_hash is None:
            return self.conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
        return self.conn.execute("SELECT COUNT(*) FROM episodes WHERE config_hash=?", (config_hash,)).fetchone()[0]

    def configs(self) -> list[dict[str, Any]]:
        """Configs that have episodes: ``[{config_hash, config, agent, protocol, family,
        episodes, errors}]`` ordered by first stored episode."""
        cfg = {h: json.loads(c) for h, c in self.conn.execute("SELECT config_hash, config FROM configs")}
        out = []
        for h, agent, n, errors, _first in self.conn.execute(
            "SELECT config_hash, MIN(agent), COUNT(*), SUM(stop_reason='error'), MIN(id) "
            "FROM episodes GROUP BY config_hash ORDER BY MIN(id)"
        ):
            protos = [r[0] for r in self.conn.execute("SELECT DISTINCT protocol FROM episodes WHERE config_hash=?", (h,))]
            fams = [r[0] for r in self.conn.execute("SELECT DISTINCT family FROM episodes WHERE config_hash=?", (h,))]
            out.append({
                "config_hash": h,
                "config": cfg.get(h),
                "agent": agent,
                "protocol": protos[0] if len(protos) == 1 else ",".join(sorted(protos)),
                "family": fams[0] if len(fams) == 1 else ",".join(sorted(fams)),
                "episodes": n,
                "errors": int(errors or 0),
            })
        return out

    def rows(self, config_hashes: Iterable[str] | None = None, parse_json: bool = True) -> Iterator[dict[str, Any]]:
        """Stored episodes as dicts (columns of :data:`COLUMNS`), ordered by
        (config_hash, task_id, seed, agent); JSON columns parsed when
        ``parse_json``."""
        sql = f"SELECT {self._select} FROM episodes"
        args: list[Any] = []
        if config_hashes is not None:
            hs = list(config_hashes)
            sql += f" WHERE config_hash IN ({', '.join('?' for _ in hs)})"
            args = hs
        sql += " ORDER BY config_hash, task_id, seed, agent"
        for r in self.conn.execute(sql, args):
            d = dict(zip(COLUMNS, r))
            if parse_json:
                for c in JSON_COLUMNS:
                    d[c] = json.loads(d[c]) if d[c] is not None else None
            yield d

    def memory_rows(self, config_hash: str | None = None, task_id: str | None = None,
                    seed: int | None = None) -> list[dict[str, Any]]:
        """Rows of the ``strategy_memory`` table (:mod:`urbanarena.agents.strategies.memory`), optionally
        of one config / task / seed, ordered by (config_hash, task_id, seed, agent, round, step); ``[]`` for a
        store that has no such table."""
        if self.conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (MEMORY_TABLE,)).fetchone() is None:
            return []
        where, args = [], []
        for k, v in (("config_hash", config_hash), ("task_id", task_id), ("seed", seed)):
            if v is not None:
                where.append(f"{k}=?")
                args.append(v)
        sql = f"SELECT {', '.join(MEMORY_COLUMNS)} FROM {MEMORY_TABLE}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY config_hash, task_id, seed, agent, round, step"
        return [dict(zip(MEMORY_COLUMNS, r)) for r in self.conn.execute(sql, args)]

    def integrity_ok(self) -> bool:
        """``PRAGMA integrity_check`` == ok."""
        return self.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
