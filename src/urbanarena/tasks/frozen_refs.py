"""The real reference pictures of a frozen suite's ``landmark_image`` tasks (issue 26 item 1 of the integration).

On a city of real photographs a ``landmark_image`` reference is a view cut from another real picture
(:mod:`urbanarena.tasks.generators.real_references`, image kind ``real_reference``). A frozen suite
(:mod:`urbanarena.tasks.frozen`) cannot keep the picture's local path, nor ship the picture (its licence may
forbid it), so:

* :func:`pin_references` writes the manifest's ``reference_pictures`` block: every picture the finder chose
  (:attr:`~urbanarena.tasks.generators.real_references.ReferenceFinder.chosen`, all sizes) by ``id`` with its
  ``sha256``, ``bytes``, ``licence``, ``author``, ``captured_at``, ``sequence_id``, ``source_url``, position
  (``lat``/``lon``, WGS84 degrees) and ``heading_deg``; Panoramax pictures add ``panoramax_id`` (and the block
  the ``instance``), supplied pictures (``--reference-pictures``) their ``file`` (the relative name under which
  ``tasks fetch --pictures DIR`` looks for them). Each picture is copied into the local store
  ``<urbanarena home>/reference_pictures/<sha256><suffix>`` (content-addressed; never published).
* The manifest's asset specs keep no local path; :func:`with_pinned_path` gives a spec the stored picture of its
  ``sha256``, from which the cut is drawn (when freezing, materializing and fetching alike).
* :func:`finder_from_pins` (``tasks fetch``) gets every pinned picture again — Panoramax ones by id from the
  instance (a STAC search of a small box around the pinned position, the download checked against the pinned
  sha256), supplied ones from a folder by ``file`` — stores them, and returns a finder holding exactly these
  pictures with the pinned metadata: it makes the same choices as the original finder (see ``chosen``), so the
  regenerated task files are bit-identical. Missing or changed pictures raise
  :class:`~urbanarena.world.pins_base.PinnedPictureError` naming each id (all are checked first); pictures that
  verify stay in the store (content-addressed, like a download cache).
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import Any, Mapping

from urbanarena import paths
from urbanarena.errors import UrbanArenaError
from urbanarena.hashing import file_sha256
from urbanarena.world.pins_base import PINS_VERSION, PinnedPictureError, licence_summary

#: half-size of the box searched around a pinned Panoramax reference picture's position, degrees (~11 m)
SEARCH_HALF_DEG = 1e-4


def store_dir() -> Path:
    """``<urbanarena home>/reference_pictures``: verified reference pictures by sha256 (created on demand)."""
    d = paths.home() / "reference_pictures"
    d.mkdir(parents=True, exist_ok=True)
    return d


def stored(sha256: str) -> Path | None:
    """The stored picture of ``sha256`` (any suffix), or ``None``."""
    d = store_dir()
    for p in sorted(d.glob(f"{sha256}.*")):
        if p.is_file():
            return p
    return None


def store(path: str | Path, sha256: str) -> Path:
    """Copy ``path`` into the store as ``<sha256><suffix>`` (atomically; kept when already there).

    Raises:
        PinnedPictureError: the file's sha256 is not ``sha256`` (it changed since it was chosen).
    """
    have = stored(sha256)
    if have is not None:
        return have
    got = file_sha256(path)
    if got != sha256:
        raise PinnedPictureError(str(path), {Path(path).name: f"changed: sha256 {got}, recorded {sha256}"})
    dest = store_dir() / f"{sha256}{Path(path).suffix.lower() or '.jpg'}"
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}")
    shutil.copyfile(path, tmp)
    os.replace(tmp, dest)
    return dest


def _file_name(pid: str) -> str:
    """Where a supplied picture is looked for under ``--pictures``: its id when it is a safe relative path, else
    its base name (a CSV may name absolute paths)."""
    p = Path(pid)
    return p.as_posix() if not p.is_absolute() and ".." not in p.parts else p.name


def pin_references(finder: Any) -> dict[str, Any] | None:
    """The ``reference_pictures`` block of ``finder``'s chosen pictures, sorted by id (module docstring); each
    picture is copied into the store. ``None`` when it chose none.

    Raises:
        UrbanArenaError: a chosen picture without a local file or sha256.
        PinnedPictureError: a chosen picture's file changed since it was chosen.
    """
    pics = sorted(finder.chosen.values(), key=lambda p: p.id)
    if not pics:
        return None
    out = []
    instance = None
    for p in pics:
        if not p.path or not p.sha256:
            raise UrbanArenaError(f"reference picture {p.id}: no local file or sha256 to pin")
        store(p.path, p.sha256)
        e = {"id": p.id, "source": p.source, "sha256": p.sha256, "bytes": Path(p.path).stat().st_size,
             "licence": p.licence, "author": p.author, "captured_at": p.captured_at, "sequence_id": p.group,
             "source_url": p.source_url, "lat": p.lat, "lon": p.lon, "heading_deg": p.heading_deg}
        if p.source == "panoramax":
            e["panoramax_id"] = p.id
            instance = instance or (finder.city.meta.source or {}).get("instance")
        else:
            e["file"] = _file_name(p.id)
        out.append(e)
    block: dict[str, Any] = {"version": PINS_VERSION, "count": len(out), "licences": licence_summary(out),
                             "pictures": out}
    if instance:
        block["instance"] = instance
    return block


def manifest_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """An asset spec as the manifest keeps it: a ``real_reference``'s params without the local ``path``."""
    out = {"kind": spec["kind"], "params": dict(spec["params"])}
    if out["kind"] == "real_reference":
        out["params"].pop("path", None)
    return out


def with_pinned_path(spec: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` (a manifest asset spec) ready to draw: a ``real_reference`` gets ``params.path`` = the stored picture
    of its ``params.sha256``; other kinds are returned unchanged.

    Raises:
        UrbanArenaError: the picture is not in the store (names its id and sha256; ``tasks fetch`` gets it).
    """
    if spec["kind"] != "real_reference":
        return dict(spec)
    params = dict(spec["params"])
    sha = params.get("sha256")
    p = stored(sha) if sha else None
    if p is None:
        raise UrbanArenaError(f"reference picture {params.get('picture_id')} (sha256 {sha}) is not in {store_dir()}: "
                              "get the suite's reference pictures with `urbanarena tasks fetch MANIFEST`")
    params["path"] = str(p)
    return {**spec, "params": params}


def finder_from_pins(city: Any, block: Mapping[str, Any], *, client: Any = None,
                     pictures_dir: str | Path | None = None, progress: Any = None) -> Any:
    """A confirmed :class:`~urbanarena.tasks.generators.real_references.ReferenceFinder` of ``city`` holding exactly
    the pinned reference pictures, each fetched/verified and stored (module docstring).

    Args:
        block: the manifest's ``reference_pictures`` block.
        client: a ``PanoramaxClient`` of the pinned instance (Panoramax pictures).
        pictures_dir: the folder of the supplied pictures (pinned ``file`` under it).
    Raises:
        PinnedPictureError: pictures missing or changed, each by id.
        UrbanArenaError: Panoramax pictures without a client, supplied ones without a folder.
    """
    from urbanarena.progress import counted
    from urbanarena.tasks.generators.real_references import ReferenceFinder, ReferencePicture

    pins = list(block.get("pictures") or [])
    if any(p["source"] == "panoramax" for p in pins) and client is None:
        raise UrbanArenaError("the suite's Panoramax reference pictures need the instance (a Panoramax client)")
    if any(p["source"] != "panoramax" for p in pins) and pictures_dir is None:
        names = ", ".join(str(p.get("file")) for p in pins if p["source"] != "panoramax")
        raise UrbanArenaError(f"the suite's landmark_image reference pictures have no public ids: supply them "
                              f"with --pictures DIR ({names})")
    problems: dict[str, str] = {}
    pics = []
    for e in counted(progress, "reference pictures", pins):
        pid = str(e["id"])
        try:
            path = _get_panoramax(client, e) if e["source"] == "panoramax" else _get_supplied(pictures_dir, e)
        except (UrbanArenaError, OSError) as err:
            problems[pid] = str(err)
            continue
        got = file_sha256(path)
        if got != e["sha256"]:
            problems[pid] = f"changed: {path} has sha256 {got}, pinned {e['sha256']}"
            continue
        pics.append(ReferencePicture(
            id=pid, lat=float(e["lat"]), lon=float(e["lon"]), heading_deg=float(e["heading_deg"]),
            source=str(e["source"]), licence=e.get("licence"), author=e.get("author"),
            captured_at=e.get("captured_at"), group=e.get("sequence_id"), source_url=e.get("source_url"),
            sha256=got, path=str(store(path, got))))
    if problems:
        raise PinnedPictureError("reference pictures", problems)
    return ReferenceFinder(city, pics, confirmed=True)


def _get_supplied(folder: str | Path, e: Mapping[str, Any]) -> Path:
    rel = str(e.get("file") or "")
    if not rel or Path(rel).is_absolute() or ".." in Path(rel).parts:
        raise UrbanArenaError(f"pinned file name {rel!r} leaves the pictures folder")
    path = Path(folder) / rel
    if not path.is_file():
        raise UrbanArenaError(f"missing: no file {path}")
    return path


def _get_panoramax(client: Any, e: Mapping[str, Any]) -> Path:
    lat, lon, pid = float(e["lat"]), float(e["lon"]), str(e.get("panoramax_id") or e["id"])
    h = SEARCH_HALF_DEG
    found = [p for p in client.search((lon - h, lat - h, lon + h, lat + h)) if p.id == pid]
    if not found:
        raise UrbanArenaError(f"missing: not served by {client.api} at its pinned position any more")
    return Path(client.fetch(found[0]))


__all__ = ["finder_from_pins", "manifest_spec", "pin_references", "store", "store_dir", "stored",
           "with_pinned_path"]
