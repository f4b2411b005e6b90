"""Whether a process still lives (for lock files and watchers that name a pid); usable from every layer."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True while process ``pid`` exists and is not a zombie (Linux: ``/proc/PID/stat`` state ``Z``; where
    ``/proc`` cannot be read, existence alone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return stat[stat.rfind(b")") + 2:][:1] != b"Z"
    except OSError:
        return True
