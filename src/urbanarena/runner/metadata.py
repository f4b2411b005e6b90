"""Run metadata: ``RUN_DIR/run.json``.

Written when a run starts (``status: "running"``) and rewritten when it ends
(``"finished"``, ``"interrupted"`` or ``"failed"``); a crash leaves
``"running"``. Each rewrite is atomic (temporary file + rename). When a
RUN_DIR is resumed or reused, the previous invocation's record moves into
``history`` (oldest first), so the top level always describes the latest
invocation.

Top-level keys: ``format`` (``"urbanarena-run"``), ``format_version`` (1),
``city`` (``spec``, ``name``, ``content_hash``, ``directory``), ``tasks``
(``spec``, ``source_hash`` — sha256 of the task source files —, ``files``,
``count``, ``limit``), ``agent`` (``name``, ``params``, ``config``),
``seeds`` (list of ints), ``protocols`` (``{family: protocol id}``),
``max_steps`` (``{family: int}``), ``configs`` (``{config_hash: hashed config}``),
``planned_by_config`` (``{config_hash: episodes planned}``),
``workers``, ``backend``, ``code_version`` (``git_commit``, ``git_dirty``,
``package_version``), ``python``, ``platform``, ``command`` (the canonical ``urbanarena run ...`` line;
rerun it to resume), ``argv`` (the process arguments),
``started_at``/``finished_at`` (ISO 8601 UTC), ``status``, ``episodes``
(``planned``, ``skipped``, ``run``, ``errors``), ``history``.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import urbanarena
from urbanarena.errors import RunIOError
from urbanarena.redact import redact_tree

RUN_FILE = "run.json"
RUN_FORMAT = "urbanarena-run"
RUN_FORMAT_VERSION = 1


@lru_cache(maxsize=1)
def code_version() -> dict[str, Any]:
    """The code that produced a run.

    Returns ``{"package_version", "git_commit", "git_dirty"}``: the package
    version, and — when the package is imported from a git work tree (an
    editable install) — its HEAD commit and whether ``git status --porcelain``
    reports changes; ``None`` for both otherwise (installed wheel, no git).
    """
    out: dict[str, Any] = {"package_version": urbanarena.__version__, "git_commit": None, "git_dirty": None}
    pkg_dir = Path(urbanarena.__file__).resolve().parent
    try:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=pkg_dir, capture_output=True, text=True, timeout=10
        )
        if top.returncode != 0:
            return out
        root = Path(top.stdout.strip())
        # only trust a work tree that actually holds this package's sources
        if not (root / "pyproject.toml").is_file() or root not in pkg_dir.parents:
            return out
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return out
        status = subprocess.run(
            ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, timeout=30
        )
        out["git_commit"] = head.stdout.strip()
        out["git_dirty"] = bool(status.stdout.strip()) if status.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        pass
    return out


def environment() -> dict[str, str]:
    """Python and platform strings."""
    return {"python": sys.version.split()[0], "platform": platform.platform()}


def read_run_json(run_dir: str | Path) -> dict[str, Any] | None:
    """The parsed ``run.json`` of ``run_dir`` or ``None`` when absent/unreadable."""
    p = Path(run_dir) / RUN_FILE
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def write_run_json(run_dir: str | Path, record: dict[str, Any]) -> Path:
    """Write ``record`` as ``run_dir/run.json``: atomically (a temporary file renamed over it); when that
    fails (a full disk) the temporary file is removed and ``run.json`` is overwritten in place, which
    reuses its blocks and so still records a final status on a full disk.

    Raises:
        RunIOError: neither way could write it (names the path and the OS error).
    """
    p = Path(run_dir) / RUN_FILE
    tmp = p.with_name(f".{RUN_FILE}.{os.getpid()}.tmp")
    data = json.dumps(redact_tree(record), indent=2, ensure_ascii=False, default=str).encode("utf-8")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, p)
        return p
    except OSError as first:
        tmp.unlink(missing_ok=True)
        try:
            with open(p, "r+b") as f:  # in place: no new file, the old blocks rewritten
                f.write(data)
                f.truncate()
            return p
        except OSError:
            raise RunIOError(p, f"{first.strerror or first}") from first


def start_record(run_dir: str | Path, invocation: dict[str, Any]) -> dict[str, Any]:
    """Build the record of a starting invocation, moving the previous record
    (if any) into ``history``, and write it. Returns the record."""
    prev = read_run_json(run_dir)
    history: list[dict[str, Any]] = []
    if prev:
        history = list(prev.pop("history", []) or [])
        prev.pop("format", None)
        prev.pop("format_version", None)
        history.append(prev)
    record = {
        "format": RUN_FORMAT,
        "format_version": RUN_FORMAT_VERSION,
        **invocation,
        "code_version": code_version(),
        **environment(),
        "status": "running",
        "finished_at": None,
        "history": history,
    }
    write_run_json(run_dir, record)
    return record
