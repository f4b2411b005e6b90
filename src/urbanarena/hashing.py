"""File hashing shared by the importers, the city builder, fonts and frozen suites, and reproducible gzip
writing (the saved city's ``graph.json.gz`` and ``annotations.json.gz``: the same content, the same bytes)."""

from __future__ import annotations

import gzip
import hashlib
import io
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, TextIO


def file_sha256(path: str | Path) -> str:
    """sha256 (hex) of a file's bytes, read in 1 MiB chunks.

    Raises:
        OSError: the file cannot be read.
    """
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@contextmanager
def reproducible_gzip_text(path: str | Path, compresslevel: int = 5) -> Iterator[TextIO]:
    """A UTF-8 text stream writing ``path`` as gzip without a time stamp or file name in the header
    (``mtime=0``, empty name), so that the same text gives the same bytes on every machine and day.

    Raises:
        OSError: the file cannot be written.
    """
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=compresslevel,
                                                mtime=0) as gz, io.TextIOWrapper(gz, encoding="utf-8") as f:
        yield f
