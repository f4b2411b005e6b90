"""The rule for a run's ``--out`` folder (issue 29 item 10, the run side of :mod:`urbanarena.safe_paths`).

``RUN_DIR`` is absent, an empty folder, or a run directory to resume: a folder that holds at least one of the
files a run writes (the episode store, ``run.json``, the response cache, the budget ledger, its lock or log). Any other
non-empty folder — a home directory, a project checkout, another command's export — is refused before anything
is written, so a mistyped ``--out`` never scatters a run's files among someone else's."""

from __future__ import annotations

from pathlib import Path

from urbanarena.errors import UnsafePathError
from urbanarena.runner.logs import LOG_FILE
from urbanarena.runner.metadata import RUN_FILE
from urbanarena.runner.run_lock import LOCK_FILE
from urbanarena.runner.run_request import CACHE_FILE, LEDGER_FILE
from urbanarena.runner.store import STORE_FILE

#: files whose presence makes a folder a run directory (to resume; the lock and log: a run that is writing there
#: now, or one killed before its first episode was stored)
RUN_MARKERS = (STORE_FILE, RUN_FILE, CACHE_FILE, LEDGER_FILE, LOCK_FILE, LOG_FILE)


def check_run_folder(out: str | Path) -> Path:
    """``out`` when a run may write there (absent, empty, or holding one of :data:`RUN_MARKERS`).

    Raises: UnsafePathError (exit 2 from the CLI): a non-empty folder that is not a run directory, naming it and
        a few of the entries found."""
    p = Path(out)
    if not p.is_dir():
        return p
    entries = sorted(x.name for x in p.iterdir())
    if not entries or any(m in entries for m in RUN_MARKERS):
        return p
    shown = ", ".join(entries[:3]) + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")
    raise UnsafePathError(f"--out {p}: a non-empty folder that is not a run directory (holds {shown}; none of "
                          f"{', '.join(RUN_MARKERS)}); give a new or empty folder, or the RUN_DIR of a run to resume")


__all__ = ["RUN_MARKERS", "check_run_folder"]
