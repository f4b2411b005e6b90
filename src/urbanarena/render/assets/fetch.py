"""Fetching the pinned asset packages into the cache, with a licence manifest (issue 24 item 1).

Layout under ``<urbanarena home>/assets/`` (:func:`urbanarena.paths.assets_dir`)::

    <package key>/            one folder per pinned package (AssetPackage.key), only the listed files
        manifest.json         the package (name, registry, version, url, sha256) and every file extracted:
                              file, group, licence, authors, source, sha256, bytes
    licences.json             every installed file: file, package, version, licence, authors, sha256
    .tmp-<key>-<pid>-<hex>/   work folder of a fetch in progress (removed when its process is gone)

One fetch (:func:`fetch_package`): download exactly the pinned file (``apt-get download NAME=VERSION``,
``npm pack NAME@VERSION`` or ``pip download NAME==VERSION`` with the wheel's tags (:func:`pip_download_args`)
when that client is there and succeeds, else the registry URL with a total deadline
and the pinned size as the byte limit), check its sha256 (a mismatch raises
:class:`~urbanarena.errors.AssetChecksumError`), extract only the registry's listed files into the work folder,
check every group's file count, write ``manifest.json`` there, and rename the folder to its final name. The
package file is deleted. Any failure removes the work folder: the final name holds a whole package or nothing.

:func:`ensure_assets` is what a renderer calls: every pinned package present (fetching what is missing unless
``fetch=False``), or a one-line message and ``available=False``, meaning "render the procedural ``realistic``
style" (:data:`FALLBACK_STYLE`).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, Sequence

from urbanarena import paths
from urbanarena.errors import AssetChecksumError, AssetFetchError
from urbanarena.progress import Progress, counted, report
from urbanarena.render.assets.archive import deb_data_tar, save_member, tar_members, zip_members
from urbanarena.render.assets import registry
from urbanarena.render.assets.registry import AssetPackage, FileGroup
from urbanarena.safe_paths import atomic_write
from urbanarena.pids import pid_alive

#: the style a renderer draws when the assets are not available
FALLBACK_STYLE = "realistic"
MANIFEST = "manifest.json"
LICENCES = "licences.json"
#: default total time allowed for downloading one package (seconds)
DEFAULT_DEADLINE_S = 900.0
_CHUNK = 1 << 20


@dataclass
class FetchReport:
    """What :func:`fetch_package` did.

    Attributes:
        package, version: the pinned package.
        directory: its cache folder.
        via: ``apt-get``, ``npm``, ``pip``, ``url`` or ``cached`` (already installed, nothing fetched).
        files: number of files extracted (or present).
        download_bytes: bytes downloaded (0 when cached).
        seconds: wall time of the fetch.
    """

    package: str
    version: str
    directory: Path
    via: str
    files: int
    download_bytes: int = 0
    seconds: float = 0.0


@dataclass
class AssetsStatus:
    """Whether the photographic assets can be used (:func:`ensure_assets`).

    Attributes:
        available: every requested package is installed and whole.
        message: one line for the user (what is missing and the fallback, or where the assets are).
        directory: the assets cache folder.
        fallback_style: :data:`FALLBACK_STYLE` when not available, else ``None``.
        fetched: reports of the packages fetched by this call.
    """

    available: bool
    message: str
    directory: Path
    fallback_style: str | None = None
    fetched: list[FetchReport] = field(default_factory=list)


def _pinned(packages: Iterable[AssetPackage] | None) -> tuple[AssetPackage, ...]:
    """``packages``, or the registry's pinned ones (looked up at call time)."""
    return tuple(packages) if packages is not None else registry.PACKAGES


def _root(root: str | Path | None) -> Path:
    d = Path(root) if root is not None else paths.assets_dir()
    d.mkdir(parents=True, exist_ok=True)
    return d


def sha256_file(path: Path) -> str:
    """Hex sha256 of the file ``path``."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


# ----------------------------------------------------------------------------------------------- download

def _download_url(pkg: AssetPackage, out_dir: Path, deadline: float, progress: Progress | None) -> Path:
    """Stream ``pkg.url`` into ``out_dir``; refuse more than ``pkg.size_bytes`` bytes or passing ``deadline``."""
    target = out_dir / (PurePosixPath(pkg.url).name or "package")
    label = f"download {pkg.name} (kB)"
    total_kb = max(1, pkg.size_bytes // 1000)
    try:
        with urllib.request.urlopen(pkg.url, timeout=max(1.0, min(30.0, deadline - time.monotonic()))) as resp, \
                open(target, "wb", buffering=0) as f:
            report(progress, label, 0, total_kb)
            got = 0
            read = getattr(resp, "read1", resp.read)  # what has arrived, not a full chunk: progress, deadline
            while True:
                if time.monotonic() > deadline:
                    raise AssetFetchError(f"{pkg.name}: download from {pkg.url} passed its deadline "
                                          f"after {got} of {pkg.size_bytes} bytes")
                chunk = read(_CHUNK)
                if not chunk:
                    break
                got += len(chunk)
                if got > pkg.size_bytes:
                    raise AssetFetchError(f"{pkg.name}: {pkg.url} sent more than the pinned {pkg.size_bytes} bytes")
                f.write(chunk)
                report(progress, label, min(got // 1000, total_kb), total_kb)
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", None) or e
        raise AssetFetchError(f"{pkg.name}: cannot download {pkg.url}: {reason}") from None
    report(progress, label, total_kb, total_kb)
    return target


def _download_client(pkg: AssetPackage, out_dir: Path, deadline: float, progress: Progress | None) -> Path | None:
    """The package file fetched by its registry's client (``apt-get download`` / ``npm pack``) into ``out_dir``;
    ``None`` when the client is absent, fails or finds no such version."""
    if pkg.registry == "debian":
        exe, args, suffix = shutil.which("apt-get"), ["download", pkg.spec], ".deb"
    elif pkg.registry == "npm":
        exe, args, suffix = shutil.which("npm"), ["pack", pkg.spec, "--silent"], ".tgz"
    elif pkg.registry == "pypi":
        exe, args, suffix = sys.executable, ["-m", "pip", *pip_download_args(pkg)], ".whl"
    else:
        return None
    if exe is None:
        return None
    label = f"download {pkg.name}"
    report(progress, label, 0, 1)
    try:
        done = subprocess.run([exe, *args], cwd=out_dir, capture_output=True, check=False,
                              timeout=max(1.0, deadline - time.monotonic()))
    except (subprocess.TimeoutExpired, OSError):
        return None
    found = sorted(out_dir.glob(f"*{suffix}"))
    if done.returncode != 0 or len(found) != 1:
        for f in found:
            f.unlink(missing_ok=True)
        return None
    report(progress, label, 1, 1)
    return found[0]


def pip_download_args(pkg: AssetPackage) -> list[str]:
    """``pip`` arguments that download exactly the wheel file named by ``pkg.url`` (a PyPI package) into the
    current folder: its name and version, and the interpreter, ABI and platform tags read from the wheel's file
    name (``NAME-VERSION-PY-ABI-PLATFORM.whl``, compressed tags split at ``.``), so that pip picks that file
    whatever machine runs it.

    Raises:
        AssetFetchError: ``pkg.url`` does not name a wheel."""
    name = PurePosixPath(pkg.url).name
    parts = name[:-len(".whl")].split("-") if name.endswith(".whl") else []
    if len(parts) not in (5, 6):
        raise AssetFetchError(f"{pkg.name}: {name!r} is not a wheel file name")
    py, abi, plat = parts[-3:]
    args = ["download", "--no-deps", "--only-binary=:all:", "--dest", ".", "--quiet"]
    for tag in plat.split("."):
        args += ["--platform", tag]
    py0 = py.split(".")[0]
    if py0[:2] in ("cp", "pp") and py0[2:].isdigit():
        args += ["--implementation", py0[:2], "--python-version", f"{py0[2]}.{py0[3:]}" if len(py0) > 3 else py0[2]]
    for tag in abi.split("."):
        args += ["--abi", tag]
    return [*args, pkg.spec]


def download_package(pkg: AssetPackage, out_dir: Path, *, use_clients: bool = True,
                     deadline_s: float = DEFAULT_DEADLINE_S, progress: Progress | None = None) -> tuple[Path, str]:
    """Download the pinned file of ``pkg`` into the folder ``out_dir`` and check its sha256.

    Returns:
        ``(path, via)``: the verified package file and how it came (``apt-get``, ``npm`` or ``url``).

    Raises:
        AssetChecksumError: the bytes are not the pinned ones (the file is deleted).
        AssetFetchError: unreachable, refused, over the size limit or past ``deadline_s`` seconds.
    """
    deadline = time.monotonic() + float(deadline_s)
    path, via = None, "url"
    if use_clients:
        path = _download_client(pkg, out_dir, deadline, progress)
        via = {"debian": "apt-get", "npm": "npm", "pypi": "pip"}.get(pkg.registry, pkg.registry)
    if path is None:
        path, via = _download_url(pkg, out_dir, deadline, progress), "url"
    digest = sha256_file(path)
    if digest != pkg.sha256:
        size = path.stat().st_size
        path.unlink(missing_ok=True)
        raise AssetChecksumError(f"{pkg.name} {pkg.version}: sha256 {digest} ({size} bytes, via {via}) is not the "
                                 f"pinned {pkg.sha256} ({pkg.size_bytes} bytes); nothing kept")
    return path, via


# ----------------------------------------------------------------------------------------------- extract

def _dest(group: FileGroup, member: str, pkg: AssetPackage) -> str:
    rel = member[len(group.strip):] if group.strip and member.startswith(group.strip) else PurePosixPath(member).name
    out = PurePosixPath(group.dest, rel) if group.dest else PurePosixPath(rel)
    if out.is_absolute() or ".." in out.parts or not out.parts:
        raise AssetFetchError(f"{pkg.name}: member {member!r} of group {group.name!r} maps outside the cache")
    return out.as_posix()


def _match(groups: Sequence[FileGroup], member: str) -> FileGroup | None:
    for g in groups:
        if any(fnmatch.fnmatchcase(member, pat) for pat in g.members):
            return g
    return None


def extract_package(pkg: AssetPackage, package_file: Path, out_dir: Path, work_dir: Path,
                    progress: Progress | None = None) -> list[dict[str, Any]]:
    """Extract the listed files of ``pkg`` from ``package_file`` into ``out_dir`` (temporaries in ``work_dir``).

    Returns:
        One row per extracted file: ``file`` (path under ``out_dir``), ``group``, ``licence``, ``authors``,
        ``source``, ``sha256``, ``bytes``.

    Raises:
        AssetFetchError: unreadable archive, a path leaving ``out_dir``, two files on one path, or a group whose
            file count is not the registry's.
    """
    direct = [g for g in pkg.groups if g.archive is None]
    nested = {g.archive: [h for h in pkg.groups if h.archive == g.archive] for g in pkg.groups if g.archive}
    tarball = deb_data_tar(package_file, work_dir / "data.tar") if pkg.registry == "debian" else package_file
    # a wheel (PyPI) is a zip; a .deb's data and an npm package are tarballs
    members = zip_members(package_file, pkg.name) if pkg.registry == "pypi" else tar_members(tarball)
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()

    def keep(group: FileGroup, member: str, opener: Any) -> None:
        rel = _dest(group, member, pkg)
        if rel in seen:
            raise AssetFetchError(f"{pkg.name}: two members land on {rel!r} (group {group.name!r})")
        seen.add(rel)
        target = out_dir / rel
        save_member(opener, target)
        rows.append({"file": rel, "group": group.name, "licence": group.licence, "authors": group.authors,
                     "source": group.source, "sha256": sha256_file(target), "bytes": target.stat().st_size})

    label = f"extract {pkg.name}"
    report(progress, label, 0, len(pkg.groups))
    for member, opener in members:
        if member in nested:
            inner = work_dir / "inner.zip"
            save_member(opener, inner)
            for imember, iopen in zip_members(inner, f"{pkg.name}:{member}"):
                g = _match(nested[member], imember)
                if g is not None:
                    keep(g, imember, iopen)
            inner.unlink()
            continue
        g = _match(direct, member)
        if g is not None:
            keep(g, member, opener)
    for i, g in enumerate(pkg.groups):
        n = sum(1 for r in rows if r["group"] == g.name)
        if n != g.files:
            raise AssetFetchError(f"{pkg.name} {pkg.version}: group {g.name!r} yielded {n} files, the registry "
                                  f"lists {g.files} (registry entry and package disagree)")
        report(progress, label, i + 1, len(pkg.groups))
    if tarball != package_file:
        tarball.unlink(missing_ok=True)
    return sorted(rows, key=lambda r: r["file"])


# ----------------------------------------------------------------------------------------------- the cache


def clean_stale(root: str | Path | None = None) -> list[Path]:
    """Remove work folders (``.tmp-*``) left by fetches whose process is gone (killed); returns them."""
    removed = []
    for d in _root(root).glob(".tmp-*"):
        try:
            pid = int(d.name.rsplit("-", 2)[-2])
        except (ValueError, IndexError):
            pid = -1
        if pid != os.getpid() and (pid <= 0 or not pid_alive(pid)):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed


def _whole(d: Path) -> dict[str, Any] | None:
    """The manifest of the package folder ``d`` when every file it lists is present at its size; else None."""
    try:
        man = json.loads((d / MANIFEST).read_text(encoding="utf-8"))
        if not isinstance(man, dict) or not isinstance(man.get("files"), list):
            return None
        for r in man["files"]:
            if (d / r["file"]).stat().st_size != r["bytes"]:
                return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return man


def read_manifest(pkg: AssetPackage, root: str | Path | None = None) -> dict[str, Any] | None:
    """The ``manifest.json`` of ``pkg``'s cache folder when the package is installed and whole (manifest of the
    pinned sha256, the registry's file count, every file present at its size); else ``None``."""
    man = _whole(_root(root) / pkg.key)
    if man is None or man.get("sha256") != pkg.sha256 or len(man["files"]) != sum(g.files for g in pkg.groups):
        return None
    return man


def fetch_package(pkg: AssetPackage, *, root: str | Path | None = None, use_clients: bool = True,
                  deadline_s: float = DEFAULT_DEADLINE_S, force: bool = False,
                  progress: Progress | None = None) -> FetchReport:
    """Install ``pkg`` into the assets cache (module docstring): download, verify, extract the listed files,
    write its manifest, rename into place, rewrite ``licences.json``.

    Args:
        root: the assets folder (default :func:`urbanarena.paths.assets_dir`).
        use_clients: try ``apt-get download`` / ``npm pack`` first (else only the registry URL).
        deadline_s: total seconds allowed for the download.
        force: fetch again even when installed.

    Raises:
        AssetChecksumError, AssetFetchError: nothing is left under the package's folder name then (an
            installed copy from before stays as it was).
    """
    start = time.monotonic()
    r = _root(root)
    final = r / pkg.key
    if not force and (man := read_manifest(pkg, r)) is not None:
        return FetchReport(pkg.name, pkg.version, final, "cached", len(man["files"]))
    clean_stale(r)
    work = r / f".tmp-{pkg.key}-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        (work / "download").mkdir(parents=True)
        package_file, via = download_package(pkg, work / "download", use_clients=use_clients,
                                             deadline_s=deadline_s, progress=progress)
        size = package_file.stat().st_size
        files = work / "files"
        files.mkdir()
        rows = extract_package(pkg, package_file, files, work, progress=progress)
        package_file.unlink()
        man = {"schema": 1, "package": pkg.name, "registry": pkg.registry, "version": pkg.version,
               "url": pkg.url, "sha256": pkg.sha256, "size_bytes": size, "via": via, "note": pkg.note,
               "groups": [{"name": g.name, "licence": g.licence, "authors": g.authors, "source": g.source,
                           "files": g.files} for g in pkg.groups],
               "files": rows}
        (files / MANIFEST).write_text(json.dumps(man, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        if final.exists():
            if not force and (other := read_manifest(pkg, r)) is not None:  # another process installed it
                return FetchReport(pkg.name, pkg.version, final, "cached", len(other["files"]))
            os.rename(final, work / "old")  # a broken or replaced copy: removed with the work folder
        os.rename(files, final)
    except OSError as e:
        raise AssetFetchError(f"{pkg.name}: cannot install into {r}: {e}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write_licences(r)
    return FetchReport(pkg.name, pkg.version, final, via, len(rows), size, time.monotonic() - start)


def licence_rows(root: str | Path | None = None) -> list[dict[str, Any]]:
    """One row per file of every whole package folder in the assets cache: ``file`` (under the assets folder),
    ``package``, ``version``, ``licence``, ``authors``, ``sha256``; sorted by file."""
    r = _root(root)
    rows = []
    for d in sorted(p for p in r.iterdir() if p.is_dir() and not p.name.startswith(".")):
        man = _whole(d)
        if man is not None:
            rows += manifest_rows(d.name, man)
    return sorted(rows, key=lambda x: x["file"])


def manifest_rows(folder: str, man: dict[str, Any]) -> list[dict[str, Any]]:
    """The :func:`licence_rows` rows of one package's manifest ``man`` in its cache folder ``folder``."""
    return [{"file": f"{folder}/{f['file']}", "package": man["package"], "version": man["version"],
             "licence": f["licence"], "authors": f["authors"], "sha256": f["sha256"]} for f in man["files"]]


def write_licences(root: str | Path | None = None) -> Path:
    """(Re)write ``licences.json`` beside the package folders from their manifests; returns its path."""
    r = _root(root)
    rows = licence_rows(r)
    doc = {"schema": 1, "about": "licence of every photographic asset file urbanarena extracted from a pinned "
           "package; credit the authors of CC-BY files where rendered images are shared", "files": rows}
    target = r / LICENCES
    atomic_write(target, lambda tmp: tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n",
                                                    encoding="utf-8"))
    return target


def licence_summary(root: str | Path | None = None) -> list[dict[str, Any]]:
    """Installed files grouped by (package, version, licence, authors), with ``files`` counted; for listings."""
    return group_rows(licence_rows(root))


def group_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`licence_rows`-style rows grouped by (package, version, licence, authors), with ``files`` counted, in
    order of first appearance."""
    groups: dict[tuple[str, str, str, str], int] = {}
    for row in rows:
        k = (row["package"], row["version"], row["licence"], row["authors"])
        groups[k] = groups.get(k, 0) + 1
    return [{"package": p, "version": v, "licence": lic, "authors": a, "files": n}
            for (p, v, lic, a), n in groups.items()]


def package_status(packages: Iterable[AssetPackage] | None = None,
                   root: str | Path | None = None) -> list[dict[str, Any]]:
    """Per package: ``package``, ``version``, ``registry``, ``size_bytes`` (download), ``installed``,
    ``files``, ``directory``."""
    r = _root(root)
    out = []
    for pkg in _pinned(packages):
        man = read_manifest(pkg, r)
        out.append({"package": pkg.name, "version": pkg.version, "registry": pkg.registry,
                    "size_bytes": pkg.size_bytes, "installed": man is not None,
                    "files": len(man["files"]) if man else 0, "directory": str(r / pkg.key)})
    return out


def ensure_assets(packages: Sequence[AssetPackage] | None = None, *, root: str | Path | None = None,
                  fetch: bool = True, use_clients: bool = True, deadline_s: float = DEFAULT_DEADLINE_S,
                  force: bool = False, progress: Progress | None = None) -> AssetsStatus:
    """Make every package in ``packages`` (default: the pinned ones) available, fetching what is missing (unless ``fetch`` is false;
    every package again when ``force``; other arguments as :func:`fetch_package`).

    Never raises for a failed fetch: returns ``available=False`` with a one-line ``message`` and
    ``fallback_style`` = :data:`FALLBACK_STYLE`, and the cache holds only whole packages.
    """
    r = _root(root)
    packages = _pinned(packages)
    fetched: list[FetchReport] = []
    missing = [p for p in packages if force or read_manifest(p, r) is None]
    try:
        if missing and not fetch:
            raise AssetFetchError(f"not fetched: {', '.join(p.name for p in missing)}")
        for pkg in counted(progress, "asset packages", missing) if missing else []:
            fetched.append(fetch_package(pkg, root=r, use_clients=use_clients, deadline_s=deadline_s,
                                         force=force, progress=progress))
    except (AssetFetchError, OSError) as e:  # OSError: writing licences.json (a full disk)
        line = str(e).splitlines()[0]
        return AssetsStatus(False, f"photo assets unavailable ({line}); rendering the procedural "
                            f"'{FALLBACK_STYLE}' style", r, FALLBACK_STYLE, fetched)
    n = sum(len((read_manifest(p, r) or {}).get("files", [])) for p in packages)
    return AssetsStatus(True, f"photo assets: {len(packages)} packages, {n} files in {r}", r, None, fetched)


__all__ = ["AssetsStatus", "DEFAULT_DEADLINE_S", "FALLBACK_STYLE", "FetchReport", "LICENCES", "MANIFEST",
           "clean_stale", "download_package", "ensure_assets", "extract_package", "fetch_package",
           "licence_rows", "licence_summary", "package_status", "pip_download_args", "read_manifest",
           "sha256_file", "write_licences"]
