"""Response cache: every model call stored in a local SQLite file, for resume and replay.

Key: sha256 hex of the canonical JSON (sorted keys, compact, UTF-8) of::

    {"v": 1, "provider": ..., "model": ..., "system": ...,
     "messages": [{"role": ..., "content": [{"type": "text", "text": ...} |
                                            {"type": "image", "sha256": <pixels>, "width": W, "height": H}]}],
     "generation": <settings actually sent>, "images": <ImageSettings>,
     "sample_index": n}

Images enter by the hash of their pixels (:attr:`Image.sha256`), not by their
encoded bytes. The endpoint URL is not part of the key (a local server that
moved port still replays) and neither is anything about credentials: the cache
never sees an API key.

Modes (``--cache``):

* ``read-write`` — a hit returns the stored reply without an API call; a miss
  calls the API and stores the reply (empty/truncated/refusal replies included:
  they are what the model said);
* ``read-only`` — a hit returns the stored reply; a miss raises
  :class:`CacheMissError` and makes no API call (replay / re-scoring);
* ``off`` — no lookup, no store.

Tables: ``responses(key, created_utc, provider, model, request_json,
encoded_json, reply_json)`` and ``images(sha256, media_type, width, height,
data)`` (the encoded bytes actually sent). :meth:`ResponseCache.export_bundle`
writes ``responses.jsonl`` + ``images/<sha256>.<ext>`` + ``manifest.json``.
Concurrency: WAL journal and a busy timeout; several processes may share one file.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterator

from urbanarena.agents.clients.errors import CacheMissError, ModelClientError
from urbanarena.agents.clients.images import EncodedImage
from urbanarena.agents.clients.types import Image, ImageSettings, ModelReply, ModelRequest

CACHE_MODES = ("read-write", "read-only", "off")
KEY_VERSION = 1
BUNDLE_SCHEMA = "urbanarena-cache-bundle-v1"


def canonical(obj: Any) -> str:
    """Canonical JSON (sorted keys, compact separators, NaN rejected)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def request_summary(provider: str, model: str, request: ModelRequest, generation: dict[str, Any], images: ImageSettings) -> dict[str, Any]:
    """The JSON object hashed into the cache key (see module docstring)."""
    msgs = []
    for m in request.messages:
        parts = []
        for p in m.parts():
            if isinstance(p, Image):
                parts.append({"type": "image", "sha256": p.sha256, "width": p.width, "height": p.height})
            else:
                parts.append({"type": "text", "text": p.text})
        msgs.append({"role": m.role, "content": parts})
    return {
        "v": KEY_VERSION,
        "provider": provider,
        "model": model,
        "system": request.system,
        "messages": msgs,
        "generation": generation,
        "images": images.model_dump(mode="json"),
        "sample_index": int(request.sample_index),
    }


def cache_key(summary: dict[str, Any]) -> str:
    """sha256 hex of :func:`canonical` of ``summary``."""
    return hashlib.sha256(canonical(summary).encode("utf-8")).hexdigest()


#: attempts at switching a cache file to WAL while other connections open it at the same moment
WAL_ATTEMPTS = 100


def _set_wal(con: sqlite3.Connection, path: Path) -> None:
    """``PRAGMA journal_mode=WAL``, retried while the file is locked.

    Several episodes (threads or worker processes) open a fresh cache file at the same moment on their
    first request. Switching the journal mode needs an exclusive lock; when two connections each hold a
    shared lock and both ask for it, SQLite answers one of them ``database is locked`` at once, without
    calling the busy handler (it would deadlock). The mode is stored in the file, so once any connection
    has switched it the others' PRAGMA succeeds. Retried up to :data:`WAL_ATTEMPTS` times, 10-50 ms apart.

    Raises:
        ModelClientError: still locked after every attempt (names the file).
    """
    for attempt in range(WAL_ATTEMPTS):
        try:
            con.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e).lower() and "busy" not in str(e).lower():
                raise
            time.sleep(0.01 * (1 + attempt % 5))
    raise ModelClientError(f"response cache {path}: still locked after {WAL_ATTEMPTS} attempts to enable WAL")


class ResponseCache:
    """SQLite response cache.

    Args:
        path: the cache file (created in ``read-write`` mode).
        mode: ``read-write``, ``read-only`` or ``off``.
    Raises:
        ValueError: unknown mode.
        ModelClientError: ``read-only`` and the file does not exist.
    """

    def __init__(self, path: str | Path, mode: str = "read-write"):
        if mode not in CACHE_MODES:
            raise ValueError(f"cache mode {mode!r}: expected one of {', '.join(CACHE_MODES)}")
        self.path = Path(path)
        self.mode = mode
        self._lock = threading.Lock()
        self._con: sqlite3.Connection | None = None
        if mode == "off":
            return
        if mode == "read-only" and not self.path.is_file():
            raise ModelClientError(f"response cache {self.path} does not exist (mode read-only)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(str(self.path), timeout=60.0, check_same_thread=False, isolation_level=None)
        con.execute("PRAGMA busy_timeout=60000")
        if mode == "read-write":
            _set_wal(con, self.path)
            con.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, created_utc TEXT NOT NULL, provider TEXT NOT NULL,"
                " model TEXT NOT NULL, request_json TEXT NOT NULL, encoded_json TEXT NOT NULL, reply_json TEXT NOT NULL)"
            )
            con.execute(
                "CREATE TABLE IF NOT EXISTS images (sha256 TEXT PRIMARY KEY, media_type TEXT NOT NULL, width INTEGER NOT NULL,"
                " height INTEGER NOT NULL, data BLOB NOT NULL)"
            )
        self._con = con

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    def get(self, key: str) -> ModelReply | None:
        """The stored reply for ``key`` (marked ``from_cache``), or ``None``.

        Raises:
            CacheMissError: ``read-only`` mode and no entry.
        """
        if self._con is None:
            return None
        with self._lock:
            try:
                row = self._con.execute("SELECT reply_json FROM responses WHERE key = ?", (key,)).fetchone()
            except sqlite3.OperationalError:  # read-only file without the table
                row = None
        if row is None:
            if self.mode == "read-only":
                raise CacheMissError(key, str(self.path))
            return None
        reply = ModelReply.model_validate_json(row[0])
        return reply.model_copy(update={"from_cache": True, "attempts": 0, "cache_key": key})

    def put(self, key: str, summary: dict[str, Any], encoded: list[EncodedImage], reply: ModelReply) -> None:
        """Store a reply (``read-write`` only; an existing key is kept)."""
        if self._con is None or self.mode != "read-write":
            return
        enc = [
            {"source_sha256": e.source_sha256, "sha256": e.sha256, "media_type": e.media_type, "width": e.width,
             "height": e.height, "source_width": e.source_width, "source_height": e.source_height}
            for e in encoded
        ]
        stored = reply.model_copy(update={"from_cache": False, "cache_key": key})
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        with self._lock:
            con = self._con
            con.execute("BEGIN IMMEDIATE")
            try:
                for e in encoded:
                    con.execute("INSERT OR IGNORE INTO images VALUES (?, ?, ?, ?, ?)", (e.sha256, e.media_type, e.width, e.height, e.data))
                con.execute(
                    "INSERT OR IGNORE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (key, now, summary["provider"], summary["model"], canonical(summary), canonical(enc), stored.model_dump_json()),
                )
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise

    def __contains__(self, key: str) -> bool:
        if self._con is None:
            return False
        with self._lock:
            return self._con.execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone() is not None

    def __len__(self) -> int:
        if self._con is None:
            return 0
        with self._lock:
            return int(self._con.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def entries(self) -> Iterator[dict[str, Any]]:
        """Stored entries in insertion order: ``key``, ``created_utc``, ``provider``, ``model``,
        ``request`` (the key summary), ``encoded_images``, ``reply``."""
        if self._con is None:
            return iter(())
        with self._lock:
            rows = self._con.execute(
                "SELECT key, created_utc, provider, model, request_json, encoded_json, reply_json FROM responses ORDER BY rowid"
            ).fetchall()
        return (
            {"key": k, "created_utc": c, "provider": p, "model": m, "request": json.loads(rq),
             "encoded_images": json.loads(en), "reply": json.loads(rp)}
            for k, c, p, m, rq, en, rp in rows
        )

    def export_bundle(self, out_dir: str | Path) -> Path:
        """Write an audit bundle: ``responses.jsonl``, ``images/<sha256>.<ext>``, ``manifest.json``.

        Returns: ``out_dir``. The bundle holds requests (texts, image hashes,
        settings), the encoded images that were sent and the replies; no
        credentials (the cache never holds any).
        """
        out = Path(out_dir)
        (out / "images").mkdir(parents=True, exist_ok=True)
        n = 0
        with open(out / "responses.jsonl", "w", encoding="utf-8") as f:
            for e in self.entries():
                f.write(canonical(e) + "\n")
                n += 1
        n_img = 0
        if self._con is not None:
            with self._lock:
                rows = self._con.execute("SELECT sha256, media_type, data FROM images ORDER BY sha256").fetchall()
            for sha, media, data in rows:
                ext = "jpg" if media == "image/jpeg" else "png"
                (out / "images" / f"{sha}.{ext}").write_bytes(data)
                n_img += 1
        manifest = {"schema": BUNDLE_SCHEMA, "key_version": KEY_VERSION, "entries": n, "images": n_img, "source": self.path.name}
        (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        return out

    def close(self) -> None:
        if self._con is not None:
            with self._lock:
                self._con.close()
                self._con = None
