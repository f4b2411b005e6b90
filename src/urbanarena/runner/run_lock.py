"""The RUN_DIR lock: one writer per RUN_DIR (an advisory ``flock`` on ``RUN_DIR/.lock`` holding the writer's pid)."""

from __future__ import annotations

import os
from pathlib import Path

from urbanarena.errors import StoreError


LOCK_FILE = ".lock"


def lock_run_dir(run_dir: Path):
    """Take an exclusive advisory lock on ``RUN_DIR/.lock`` (POSIX ``flock``; the
    kernel drops it when the process dies, even by SIGKILL). Returns the open
    lock file, or ``None`` where ``fcntl`` is unavailable.

    Raises:
        StoreError: another process is running into the same RUN_DIR.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX
        return None
    f = open(run_dir / LOCK_FILE, "a+")
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        holder = f.read().strip()
        f.close()
        raise StoreError(
            f"{run_dir}: another urbanarena run is writing here{f' (pid {holder})' if holder else ''}; "
            "wait for it to finish or use another --out"
        ) from None
    f.seek(0)
    f.truncate()
    f.write(str(os.getpid()))
    f.flush()
    return f


_lock_run_dir = lock_run_dir  # the name it had in runner.driver

__all__ = ["LOCK_FILE", "lock_run_dir"]
