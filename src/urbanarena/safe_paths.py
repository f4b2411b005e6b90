"""One rule for names that become paths and for writers' output folders.

* :func:`check_name`: a name used as a file or folder name (a dataset name, a suite name, an id) has no path
  separator (``/``, ``\\``), is not and holds no ``..``, has no NUL or other control character, is not empty
  and has at most :data:`MAX_NAME_CHARS` characters; else :class:`~urbanarena.errors.UnsafePathError`.
* :func:`confine`: the path a writer is about to write, checked to lie inside its output folder (symbolic
  links resolved).
* :func:`out_option`: the ``parser`` of every ``--out`` option: ``--out ''`` is refused (a usage error,
  exit 2) instead of meaning the current directory.
* :func:`check_out_folder`: an output *folder* must be absent or empty (``force`` replaces a non-empty one
  where the command offers ``--force``), never a file.
* :func:`atomic_write`: a file written under a temporary name and renamed; a failure leaves no temporary and
  names the path.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from urbanarena.errors import RunIOError, UnsafePathError

#: longest name accepted by :func:`check_name`
MAX_NAME_CHARS = 200


def check_name(name: str, what: str = "name") -> str:
    """``name`` unchanged when it is safe as one path component; else :class:`UnsafePathError` naming ``what``."""
    if not isinstance(name, str) or not name.strip():
        raise UnsafePathError(f"{what} {name!r}: empty")
    shown = repr(name[:60]) + ("..." if len(name) > 60 else "")
    if len(name) > MAX_NAME_CHARS:
        raise UnsafePathError(f"{what} {shown}: {len(name)} characters, at most {MAX_NAME_CHARS}")
    if "/" in name or "\\" in name:
        raise UnsafePathError(f"{what} {shown}: holds a path separator")
    if ".." in name or name == ".":
        raise UnsafePathError(f"{what} {shown}: holds '..' or is '.'")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise UnsafePathError(f"{what} {shown}: holds NUL or another control character")
    return name


def confine(root: str | Path, path: str | Path) -> Path:
    """``path`` (absolute, or relative to ``root``) when it lies inside ``root``; else :class:`UnsafePathError`."""
    base = Path(root).resolve()
    p = Path(path)
    full = (p if p.is_absolute() else base / p).resolve()
    if full != base and base not in full.parents:
        raise UnsafePathError(f"{path}: outside the output folder {root}")
    return full


def out_option(value: object) -> Path:
    """``typer.Option(parser=...)`` of ``--out``: a :class:`Path`; ``''`` (or blanks) is a usage error."""
    if isinstance(value, Path):
        return value
    if not str(value).strip():
        import typer  # the cli extra; only reached from the CLI
        raise typer.BadParameter("must not be empty (write './' to mean the current folder)")
    return Path(str(value))


def check_out_folder(out: str | Path, *, force: bool = False, flag: str = "--out") -> Path:
    """``out`` when it may become a writer's output folder: absent, or an empty folder (any folder with
    ``force``); a file or a non-empty folder raises :class:`UnsafePathError`."""
    p = Path(out)
    if p.exists() and not p.is_dir():
        raise UnsafePathError(f"{flag} {p}: exists and is a file, not a folder")
    if p.is_dir() and not force and any(p.iterdir()):
        raise UnsafePathError(f"{flag} {p}: exists and is not an empty folder"
                              + ("" if force is None else " (give an absent or empty folder)"))
    return p


def atomic_write(path: str | Path, write: Callable[[Path], Any]) -> Any:
    """``write(tmp)`` into a hidden temporary beside ``path``, renamed to ``path`` when it returns. Any failure
    removes the temporary; an ``OSError`` (a full disk) becomes :class:`~urbanarena.errors.RunIOError` naming
    ``path``. Returns what ``write`` returned."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        value = write(tmp)
        os.replace(tmp, p)
        return value
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise RunIOError(p, e.strerror or str(e)) from e
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


__all__ = ["MAX_NAME_CHARS", "atomic_write", "check_name", "check_out_folder", "confine", "out_option"]
