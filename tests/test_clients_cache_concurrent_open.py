"""Many episodes open a fresh response cache file at the same moment (threads of one run, worker processes):
none may fail. Switching a new file to WAL needs an exclusive lock, and SQLite answers one of two
connections that both hold a shared lock "database is locked" at once (no busy wait): the cache retries."""

from __future__ import annotations

import multiprocessing as mp
import threading

from urbanarena.agents.clients.cache import ResponseCache


def _open_many(path: str, n: int) -> list[str]:
    barrier = threading.Barrier(n)
    errors: list[str] = []

    def one():
        try:
            barrier.wait()
            ResponseCache(path, "read-write").close()
        except Exception as e:  # noqa: BLE001 - collected for the assertion
            errors.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return errors


def _proc(path: str, q) -> None:
    q.put(_open_many(path, 4))


def test_threads_open_a_fresh_cache_at_once(tmp_path):
    for k in range(30):
        errors = _open_many(str(tmp_path / f"c{k}.sqlite"), 8)
        assert errors == [], errors


def test_processes_open_a_fresh_cache_at_once(tmp_path):
    ctx = mp.get_context("spawn")
    for k in range(3):
        path = str(tmp_path / f"p{k}.sqlite")
        q = ctx.Queue()
        procs = [ctx.Process(target=_proc, args=(path, q)) for _ in range(3)]
        for p in procs:
            p.start()
        errors = [e for _ in procs for e in q.get(timeout=120)]
        for p in procs:
            p.join(timeout=60)
        assert errors == [], errors
