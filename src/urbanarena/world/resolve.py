"""Resolve a CITY argument (``--city``) to a :class:`~urbanarena.world.city.City`.

One grammar for every command:

* ``KIND:PATH`` where ``KIND`` is a known importer (``cityseeker:DIR``,
  ``touchdown:DIR`` ...): the source is imported once and cached as a saved
  city under ``paths.imports_dir() / "<kind>-<key>"``, where ``<key>`` is the
  first 16 hex digits of a sha256 over the importer kind, the importer's
  ``VERSION`` (when it defines one) and, for each source file in the order
  ``source_files`` lists them, its name and bytes. A second load of the same
  source reads the cache and does not re-import; changing any source byte
  changes the key.
* a path to a saved city directory (``city.json`` + ``graph.json.gz``, see
  :mod:`urbanarena.world.city_io`);
* the name of a saved city in ``paths.cities_dir()`` (``urbanarena city import
  CITY --name NAME`` puts one there).

Anything else raises :class:`~urbanarena.errors.UnknownCityError` naming what
was tried. ``KIND:`` is only read as an importer prefix when ``KIND`` is a
known importer kind, so other strings containing ``:`` are treated as paths.

Every resolution goes through a saved directory, so the driver and its worker
processes load the very same city (same edge order) from disk.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from urbanarena import paths
from urbanarena.errors import CityFormatError, UnknownCityError
from urbanarena.world.city import City
from urbanarena.world.city_io import META_FILE, load_city, save_city
from urbanarena.world.importers import importers

#: allowed names of cached cities (``urbanarena city import --name``)
CITY_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


@dataclass(frozen=True)
class CitySource:
    """Where a CITY argument points.

    Attributes:
        spec: the argument as given.
        kind: ``"import"``, ``"dir"`` or ``"name"``.
        directory: the saved city directory to load (for ``"import"`` the cache
            directory, filled on first use).
        importer: importer kind for ``"import"``, else ``None``.
        source_path: the importer's input path for ``"import"``, else ``None``.
    """

    spec: str
    kind: str
    directory: Path
    importer: str | None = None
    source_path: Path | None = None


def split_kind(spec: str) -> tuple[str, str] | None:
    """``("cityseeker", "DIR")`` for ``"cityseeker:DIR"`` when the prefix is a
    known importer kind, else ``None``."""
    if ":" not in spec:
        return None
    kind, _, rest = spec.partition(":")
    if kind in importers() and rest:
        return kind, rest
    return None


def source_key(kind: str, path: Path) -> str:
    """Cache key of an importer source: first 16 hex digits of sha256 over the
    kind, the importer's ``VERSION`` attribute (if any) and every source file's
    name and bytes.

    Raises:
        UnknownCityError: the importer lists no source files at ``path``.
        CityFormatError: a listed source file cannot be read.
    """
    mod = importers()[kind]
    files = list(mod.source_files(path))
    if not files:
        raise UnknownCityError(f"{kind}:{path}: no {kind} source files found there")
    h = hashlib.sha256()
    h.update(f"{kind}\0{getattr(mod, 'VERSION', '')}\0".encode())
    for f in files:
        f = Path(f)
        h.update(f.name.encode() + b"\0")
        try:
            with open(f, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
        except OSError as e:
            raise CityFormatError(f, None, f"cannot read source file: {e.strerror or e}") from e
        h.update(b"\0")
    return h.hexdigest()[:16]


def locate_city(spec: str) -> CitySource:
    """Classify a CITY argument without loading or importing anything heavy.

    Raises:
        UnknownCityError: ``spec`` is neither ``KIND:PATH`` with an existing
            path, an existing saved city directory, nor a cached city name.
    """
    spec = str(spec)
    kp = split_kind(spec)
    if kp is not None:
        kind, raw = kp
        src = Path(raw).expanduser()
        if not src.exists():
            raise UnknownCityError(f"city {spec!r}: {src} does not exist")
        key = source_key(kind, src)
        return CitySource(spec, "import", paths.imports_dir() / f"{kind}-{key}", kind, src)
    p = Path(spec).expanduser()
    if p.is_dir():
        if not (p / META_FILE).is_file():
            hint = ""
            kinds = sorted(importers())
            if kinds:
                hint = f"; to import raw data use KIND:PATH with KIND one of {', '.join(kinds)} (e.g. {kinds[0]}:{spec})"
            raise UnknownCityError(f"city {spec!r}: directory is not a saved city ({META_FILE} missing){hint}")
        return CitySource(spec, "dir", p)
    if p.exists():
        raise UnknownCityError(f"city {spec!r}: is a file; a CITY is KIND:PATH, a saved city directory or a cached city name")
    if CITY_NAME_RE.match(spec):
        d = paths.cities_dir() / spec
        if (d / META_FILE).is_file():
            return CitySource(spec, "name", d)
    names = cached_city_names()
    raise UnknownCityError(
        f"unknown city {spec!r}: not KIND:PATH (importers: {', '.join(sorted(importers())) or 'none'}), "
        f"not a saved city directory, and not a cached city name "
        f"(cached: {', '.join(names) if names else 'none'}; cache: {paths.cities_dir()})"
    )


def cached_city_names() -> list[str]:
    """Names of the saved cities in ``paths.cities_dir()``, sorted."""
    d = paths.cities_dir()
    return sorted(p.name for p in d.iterdir() if (p / META_FILE).is_file())


def _remove_stale_tmp(parent: Path) -> None:
    """Delete temporary import directories left by processes that died (their pid is gone)."""
    for p in parent.glob(".*.tmp-*"):
        try:
            pid = int(p.name.rsplit(".tmp-", 1)[1].split("-")[0])
        except (IndexError, ValueError):
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(p, ignore_errors=True)
        except PermissionError:
            pass


def _atomic_save(city: City, final: Path) -> None:
    """Save ``city`` into ``final`` via a temporary sibling directory and a rename,
    so a crash never leaves a half-written cache entry."""
    final.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_tmp(final.parent)
    tmp = final.parent / f".{final.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        save_city(city, tmp)
        try:
            os.rename(tmp, final)
        except OSError:
            # another process finished the same import first, or a stale entry exists
            if not (final / META_FILE).is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def materialize(source: CitySource) -> Path:
    """Make sure ``source.directory`` holds a saved city (importing on first use)
    and return it.

    Raises:
        CityFormatError: the importer rejects the source data.
    """
    if source.kind == "import" and not (source.directory / META_FILE).is_file():
        assert source.importer is not None and source.source_path is not None
        city = importers()[source.importer].import_city(source.source_path)
        _atomic_save(city, source.directory)
    return source.directory


def resolve_city_source(spec: str) -> tuple[City, CitySource]:
    """Resolve a CITY argument; returns the city and where it was loaded from.

    Raises:
        UnknownCityError: nothing matches ``spec``.
        CityFormatError: malformed importer input or saved city.
    """
    source = locate_city(spec)
    directory = materialize(source)
    try:
        city = load_city(directory)
    except CityFormatError:
        if source.kind != "import":
            raise
        # a corrupted cache entry: rebuild it once from the source
        shutil.rmtree(directory, ignore_errors=True)
        directory = materialize(source)
        city = load_city(directory)
    return city, source


def resolve_city(spec: str) -> City:
    """Resolve a CITY argument (``KIND:PATH``, saved city directory, or cached name).

    Raises:
        UnknownCityError: nothing matches ``spec`` (the message lists importer
            kinds and cached names).
        CityFormatError: malformed importer input or saved city.
    """
    return resolve_city_source(spec)[0]


def save_named(city: City, name: str, overwrite: bool = True) -> Path:
    """Save ``city`` into the cache as ``paths.cities_dir()/name`` (atomically).

    Raises:
        UnknownCityError: ``name`` is not a valid city name.
    """
    if not CITY_NAME_RE.match(name):
        raise UnknownCityError(f"invalid city name {name!r}: use letters, digits, '_', '.', '-'")
    final = paths.cities_dir() / name
    if final.exists():
        if not overwrite:
            raise UnknownCityError(f"a cached city named {name!r} already exists at {final} (use --force to replace it)")
        shutil.rmtree(final)
    _atomic_save(city, final)
    return final
