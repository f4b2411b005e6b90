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
duration_s         REAL       wall time of the episode, seconds
started_at         TEXT       ISO 8601 UTC
finished_at        TEXT       ISO 8601 UTC
=================  =========  ==================================================

``configs`` — ``config_hash`` -> the hashed config JSON (self-describing store).
``meta`` — ``schema_version``.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from pathlib import Path
from typing import Any, Iterable, Iterator

from urbanarena.errors import StoreError
from urbanarena.tasks.metrics import METRIC_KEYS

STORE_FILE = "episodes.sqlite"
SCHEMA_VERSION = 1

#: test hook: SIGKILL the process inside the Nth commit of this process
#: (after the INSERT, before COMMIT). Used by the crash-safety tests only.
KILL_ENV = "URBANARENA_TEST_KILL_AT_COMMIT"

KEY_COLUMNS = ("task_id", "seed", "agent", "config_hash")
JSON_COLUMNS = ("trajectory", "headings", "actions", "metrics", "agent_stats", "timings")
#: columns that legitimately differ between two runs of the same episode
TIME_COLUMNS = ("id", "timings", "duration_s", "started_at", "finished_at")
SCALAR_COLUMNS = (
    "task_id", "seed", "agent", "config_hash", "protocol", "family", "category", "difficulty",
    "task_hash", "stop_reason", "error", "steps", "invalid_actions",
)

_METRIC_COLS = tuple(METRIC_KEYS)
for _k in _METRIC_COLS:
    if not _k.isidentifier() or _k in SCALAR_COLUMNS or _k in JSON_COLUMNS or _k in TIME_COLUMNS:
        raise RuntimeError(f"metric key {_k!r} cannot be a store column")

COLUMNS: tuple[str, ...] = (
    ("id",) + SCALAR_COLUMNS + JSON_COLUMNS[:4] + _METRIC_COLS + JSON_COLUMNS[4:] + ("duration_s", "started_at", "finished_at")
)

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
    duration_s REAL,
    started_at TEXT,
    finished_at TEXT,
    UNIQUE (task_id, seed, agent, config_hash)
);
CREATE INDEX IF NOT EXISTS episodes_config ON episodes (config_hash);
"""


def _dumps(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"), allow_nan=False, ensure_ascii=False)


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
            when the file does not exist.
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
                raise StoreError(f"{self.path}: not a run store ({e})") from e
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
        if row is None or int(row[0]) != SCHEMA_VERSION:
            raise StoreError(f"{self.path}: store schema version {row and row[0]!r}, this urbanarena reads {SCHEMA_VERSION}")

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
            "duration_s": (result.get("timings") or {}).get("total_s"),
            "started_at": result.get("started_at"),
            "finished_at": result.get("finished_at"),
        }
        cols = list(values)
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        sql = f"{verb} INTO episodes ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})"
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            cur = self.conn.execute(sql, [values[c] for c in cols])
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
        sql = f"SELECT {', '.join(COLUMNS)} FROM episodes"
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

    def integrity_ok(self) -> bool:
        """``PRAGMA integrity_check`` == ok."""
        return self.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
