"""Typed exceptions shared by every layer.

Every error about bad input names the file and the record (line number,
list index or key) so a user can find and fix it.
"""

from __future__ import annotations

from pathlib import Path


class UrbanArenaError(Exception):
    """Base class of every error raised on purpose by urbanarena."""


class DataFormatError(UrbanArenaError, ValueError):
    """Malformed input data.

    Attributes:
        path: the file that holds the bad record (``None`` for in-memory data).
        record: which record: ``"line 12"``, ``"edge 5"``, ``"question_idx 41"``...
        reason: what is wrong with it.
    """

    def __init__(self, path: str | Path | None, record: str | None, reason: str):
        self.path = str(path) if path is not None else None
        self.record = record
        self.reason = reason
        where = self.path or "<memory>"
        if record:
            where += f" [{record}]"
        super().__init__(f"{where}: {reason}")


class CityFormatError(DataFormatError):
    """A city source or saved city directory is malformed."""


class TaskFormatError(DataFormatError):
    """A task file or a foreign task source is malformed."""


class UnknownCityError(UrbanArenaError, LookupError):
    """A CITY argument names nothing we can load."""


class ProtocolError(UrbanArenaError, ValueError):
    """An unknown protocol id, or a protocol that cannot run a task."""


class StoreError(UrbanArenaError):
    """The run store is inconsistent with the requested run."""


class RunIOError(UrbanArenaError, OSError):
    """Writing a run's files failed on the machine's side (disk full, quota, I/O error, read-only file
    system) after RUN_DIR was created; not bad input.

    Attributes:
        path: the file being written.
    """

    def __init__(self, path: str | Path, reason: str):
        self.path = str(path)
        super().__init__(f"writing {self.path} failed: {reason}")


class NoImageryError(UrbanArenaError, LookupError):
    """A city has no imagery (graph-only) but the task or command needs images."""


class ImageryLicenceError(UrbanArenaError, PermissionError):
    """Exporting imagery whose licence forbids redistribution, without the user stating they hold the rights."""


class ImageFormatError(DataFormatError):
    """An image file is missing, unreadable or not an equirectangular (2:1) panorama; names the file."""


class ImageEncodeError(UrbanArenaError, ValueError):
    """An image cannot be encoded within the requested limits (pixels, bytes)."""


class UnsafePathError(UrbanArenaError, ValueError):
    """A name that becomes a path is unsafe (a separator, ``..``, NUL, a control character, too long), or a
    path would land outside the folder its writer is confined to (:mod:`urbanarena.safe_paths`)."""


class AssetFetchError(UrbanArenaError):
    """A pinned asset package could not be fetched, verified or extracted (offline, refused, timed out, too
    large, unreadable, or not what the registry entry lists); names the package and the reason. Nothing is
    left in the asset cache under the package's name."""


class AssetChecksumError(AssetFetchError, ValueError):
    """A downloaded asset package's sha256 is not the pinned one (the file is deleted, nothing extracted)."""
