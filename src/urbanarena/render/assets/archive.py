"""Reading the regular files of a package file: a Debian ``.deb`` (an ``ar`` archive whose ``data.tar.*``
holds the files) or an npm tarball (``.tgz``), and of zip members inside them.

Only regular files are yielded (directories, links and devices are skipped), with their paths normalised
(no leading ``./`` or ``/``). Errors are :class:`~urbanarena.errors.AssetFetchError` naming the file.
"""

from __future__ import annotations

import shutil
import tarfile
import zipfile
from pathlib import Path
from typing import IO, Callable, Iterator

from urbanarena.errors import AssetFetchError

#: one regular file of an archive: (normalised path, a function that opens it for reading)
Member = tuple[str, Callable[[], IO[bytes]]]

_AR_MAGIC = b"!<arch>\n"


def normalise(path: str) -> str:
    """``path`` without a leading ``./`` or ``/``."""
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/")


def deb_data_tar(deb: Path, out: Path) -> Path:
    """Copy the ``data.tar.*`` member of the Debian package ``deb`` to ``out`` (same suffix) and return its path.

    Raises:
        AssetFetchError: ``deb`` is not an ``ar`` archive or has no ``data.tar`` member, or uses a compression
            Python cannot read (``zst``).
    """
    with open(deb, "rb") as f:
        if f.read(8) != _AR_MAGIC:
            raise AssetFetchError(f"{deb}: not a Debian package (no ar header)")
        while True:
            header = f.read(60)
            if len(header) < 60:
                break
            name = header[:16].decode("ascii", "replace").strip().rstrip("/")
            try:
                size = int(header[48:58].decode("ascii").strip())
            except ValueError:
                raise AssetFetchError(f"{deb}: corrupt ar member header {name!r}") from None
            if name.startswith("data.tar"):
                if name.endswith(".zst"):
                    raise AssetFetchError(f"{deb}: {name} is zstd-compressed, which this Python cannot read")
                target = out.with_name(out.name + name[len("data.tar"):])
                with open(target, "wb") as g:
                    _copy_exact(f, g, size, deb)
                return target
            f.seek(size + (size % 2), 1)
    raise AssetFetchError(f"{deb}: no data.tar member")


def _copy_exact(src: IO[bytes], dst: IO[bytes], size: int, where: Path) -> None:
    left = size
    while left:
        chunk = src.read(min(left, 1 << 20))
        if not chunk:
            raise AssetFetchError(f"{where}: truncated archive")
        dst.write(chunk)
        left -= len(chunk)


def tar_members(path: Path) -> Iterator[Member]:
    """The regular files of the tarball ``path`` (any compression Python's ``tarfile`` reads), in order.

    Each opener is valid until the next member is asked for (the tarball is read as a stream)."""
    try:
        with tarfile.open(path, mode="r|*") as tf:
            for info in tf:
                if info.isfile():
                    yield normalise(info.name), _tar_opener(tf, info)
    except (tarfile.TarError, EOFError, OSError) as e:
        raise AssetFetchError(f"{path}: unreadable tar archive: {e}") from None


def _tar_opener(tf: tarfile.TarFile, info: tarfile.TarInfo) -> Callable[[], IO[bytes]]:
    def opener() -> IO[bytes]:
        f = tf.extractfile(info)
        if f is None:  # pragma: no cover - isfile() members always have data
            raise AssetFetchError(f"{info.name}: no data")
        return f
    return opener


def zip_members(path: Path, label: str) -> Iterator[Member]:
    """The regular files of the zip ``path`` (``label`` names it in errors)."""
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if not info.is_dir():
                    yield normalise(info.filename), (lambda i=info: zf.open(i))
    except (zipfile.BadZipFile, OSError) as e:
        raise AssetFetchError(f"{label}: unreadable zip archive: {e}") from None


def save_member(opener: Callable[[], IO[bytes]], target: Path) -> None:
    """Write the member behind ``opener`` to ``target`` (parents created)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with opener() as src, open(target, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)


__all__ = ["Member", "deb_data_tar", "normalise", "save_member", "tar_members", "zip_members"]
