"""Confined file serving: every file route of the play and replay servers resolves its path here.

:func:`confined_file` accepts a request path only when it is a relative POSIX
path whose parts are ordinary names (no ``..``, no ``.``, no empty part, no
leading dot, no backslash, no NUL, no drive or absolute path) and whose fully
resolved target (symlinks followed) is a regular file inside the resolved
root. Anything else is answered ``404`` by the routes, exactly like a missing
file, so a probe learns nothing about the disk.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

#: longest request path accepted (characters)
MAX_PATH_CHARS = 512


def confined_file(root: str | Path, rel: str) -> Path | None:
    """The file ``root/rel`` when ``rel`` is safe and the file lies inside ``root`` (module docstring), else ``None``.

    Args:
        root: the folder the route serves.
        rel: the path from the request (already percent-decoded by the framework).
    """
    if not isinstance(rel, str) or not rel or len(rel) > MAX_PATH_CHARS:
        return None
    if "\\" in rel or "\x00" in rel or ":" in rel or rel.startswith("/"):
        return None
    parts = PurePosixPath(rel).parts
    if not parts or any(p in ("", ".", "..") or p.startswith(".") for p in parts):
        return None
    if rel.split("/") != list(parts):  # "a//b", "a/./b", trailing "/": not a plain path
        return None
    try:
        base = Path(root).resolve(strict=True)
        target = (base / Path(*parts)).resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not target.is_relative_to(base) or not target.is_file():
        return None
    return target


__all__ = ["MAX_PATH_CHARS", "confined_file"]
