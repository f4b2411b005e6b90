"""The frames importer's inputs (parsing): image folders as trajectories, or a CSV manifest of frames with their
positions, and which files a source has."""

from __future__ import annotations

import csv
import math
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Sequence

from urbanarena.errors import CityFormatError
from urbanarena.world.importers.frames_exif import IMAGE_SUFFIXES


DEFAULT_JOIN_RADIUS_M = 4.0


#: consecutive frames of one trajectory farther apart than this are refused (metres)
DEFAULT_MAX_GAP_M = 100.0


DEFAULT_LICENCE = "unknown — user's own footage"


#: two frames closer than this are "duplicate positions" (metres)
DUPLICATE_EPS_M = 0.01


#: allowed deviation from exact 2:1, pixels (|W - 2H|)
ASPECT_TOLERANCE_PX = 1


#: licences (SPDX ids) that allow redistribution: imagery defaults to redistributable
OPEN_LICENCES = frozenset({
    "MIT", "CC0-1.0", "CC-BY-4.0", "CC-BY-SA-4.0", "CC-BY-3.0", "CC-BY-SA-3.0", "BSD-2-Clause",
    "BSD-3-Clause", "Apache-2.0", "ODbL-1.0", "PDDL-1.0",
})


_CSV_COLUMNS = {
    "filename": "filename", "file": "filename", "path": "filename",
    "lat": "lat", "latitude": "lat",
    "lon": "lon", "lng": "lon", "longitude": "lon",
    "heading": "heading", "heading_deg": "heading",
    "trajectory": "trajectory", "trajectory_id": "trajectory",
}


# ================================================================== sources
@dataclass
class _Entry:
    """One frame named by the input, before its metadata is read."""

    path: Path
    trajectory: str
    line: int | None = None  # CSV line
    csv_path: Path | None = None
    lat: float | None = None
    lon: float | None = None
    heading: float | None = None


@dataclass
class _Frame:
    """A resolved frame."""

    path: Path
    trajectory: str
    lat: float
    lon: float
    heading_deg: float | None
    heading_source: str | None
    captured_at: datetime | None
    frame_index: int = -1


@dataclass
class _Inputs:
    root: Path
    trajectories: dict[str, list[_Entry]]
    ordered_by_csv: bool
    csv_path: Path | None = None
    ignored_columns: list[str] = field(default_factory=list)


def _is_image(p: Path) -> bool:
    return p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES and not p.name.startswith(".")


def _natural_key(name: str) -> list[Any]:
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", name)]


def _images_in(d: Path) -> list[Path]:
    return sorted((p for p in d.iterdir() if _is_image(p)), key=lambda p: _natural_key(p.name))


def _dir_trajectories(d: Path) -> list[tuple[Path, list[Path]]]:
    """(folder, images) for ``d`` itself and each immediate sub-folder with images."""
    out = []
    top = _images_in(d)
    if top:
        out.append((d, top))
    for sub in sorted((s for s in d.iterdir() if s.is_dir() and not s.name.startswith(".")),
                      key=lambda s: _natural_key(s.name)):
        imgs = _images_in(sub)
        if imgs:
            out.append((sub, imgs))
    return out


def _common_root(folders: Iterable[Path]) -> Path:
    fs = [str(f) for f in folders]
    return Path(os.path.commonpath(fs)) if fs else Path(".")


def _collect_paths(paths: Sequence[Path]) -> _Inputs:
    groups: dict[Path, list[Path]] = {}
    for p in paths:
        p = Path(p).expanduser().resolve()
        if p.is_dir():
            found = _dir_trajectories(p)
            if not found:
                raise CityFormatError(p, None, f"no frames ({', '.join(IMAGE_SUFFIXES)}) in this folder or its sub-folders")
            for folder, imgs in found:
                groups.setdefault(folder, []).extend(imgs)
        elif p.is_file():
            if p.suffix.lower() == ".csv":
                raise CityFormatError(p, None, "a CSV manifest must be the only input (pass it alone or with --csv)")
            groups.setdefault(p.parent, []).append(p)
        else:
            raise CityFormatError(p, None, "frame file or folder not found")
    if not groups:
        raise CityFormatError(None, None, "no frames given")
    root = _common_root(groups)
    trajs: dict[str, list[_Entry]] = {}
    for folder in sorted(groups, key=lambda f: _natural_key(str(f))):
        rel = folder.relative_to(root.parent).as_posix() if root.parent != root else folder.as_posix()
        seen: set[Path] = set()
        entries = []
        for img in groups[folder]:
            if img in seen:
                raise CityFormatError(img, None, "the same frame is given twice")
            seen.add(img)
            entries.append(_Entry(img, rel))
        trajs[rel] = entries
    return _Inputs(root, trajs, ordered_by_csv=False)


def _csv_float(raw: str, what: str, path: Path, line: int) -> float | None:
    s = raw.strip()
    if not s:
        return None
    try:
        v = float(s)
    except ValueError:
        raise CityFormatError(path, f"line {line}", f"{what} {s!r} is not a number") from None
    if not math.isfinite(v):
        raise CityFormatError(path, f"line {line}", f"{what} is {s!r}, not a finite number")
    return v


def read_manifest(csv_path: str | Path) -> _Inputs:
    """Parse a CSV manifest (columns in the module docstring).

    Returns:
        the frames grouped by trajectory, in row order.
    Raises:
        CityFormatError: naming the CSV and the line for every malformed row
            (see the module docstring); a missing frame file names the row.
    """
    path = Path(csv_path).expanduser().resolve()
    try:
        raw = path.read_bytes()
    except FileNotFoundError as e:
        raise CityFormatError(path, None, "CSV manifest not found") from e
    except OSError as e:
        raise CityFormatError(path, None, f"cannot read CSV manifest: {e}") from e
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        bad_line = raw.count(b"\n", 0, e.start) + 1
        raise CityFormatError(path, f"line {bad_line}", f"not UTF-8 text: {e.reason}") from None
    reader = csv.reader(text.splitlines())
    header: list[str] | None = None
    cols: dict[str, int] = {}
    ignored: list[str] = []
    trajs: dict[str, list[_Entry]] = {}
    seen: dict[Path, int] = {}
    try:
        for row in reader:
            line = reader.line_num
            if not row or all(not c.strip() for c in row):
                continue
            if header is None:
                header = [c.strip().lower() for c in row]
                for k, name in enumerate(header):
                    canon = _CSV_COLUMNS.get(name)
                    if canon is None:
                        ignored.append(row[k].strip())
                    elif canon in cols:
                        raise CityFormatError(path, f"line {line}", f"column {canon!r} given twice ({name!r})")
                    else:
                        cols[canon] = k
                if "filename" not in cols:
                    raise CityFormatError(path, f"line {line}", "header has no 'filename' column "
                                          "(expected filename, lat, lon, heading[, trajectory])")
                continue
            if len(row) != len(header):
                raise CityFormatError(path, f"line {line}", f"{len(row)} fields, header has {len(header)}")

            def cell(name: str) -> str:
                return row[cols[name]] if name in cols else ""

            fname = cell("filename").strip()
            if not fname:
                raise CityFormatError(path, f"line {line}", "empty filename")
            lat = _csv_float(cell("lat"), "lat", path, line)
            lon = _csv_float(cell("lon"), "lon", path, line)
            heading = _csv_float(cell("heading"), "heading", path, line)
            if (lat is None) != (lon is None):
                raise CityFormatError(path, f"line {line}", "give both lat and lon, or neither (then EXIF GPS is used)")
            if lat is not None and not -90.0 <= lat <= 90.0:
                raise CityFormatError(path, f"line {line}", f"lat {lat} out of range [-90, 90]")
            if lon is not None and not -180.0 <= lon <= 180.0:
                raise CityFormatError(path, f"line {line}", f"lon {lon} out of range [-180, 180]")
            try:
                fp = Path(fname).expanduser()
                fp = (fp if fp.is_absolute() else path.parent / fp).resolve()
                found = fp.is_file()
            except (OSError, ValueError, RuntimeError) as e:  # too long, NUL byte, unknown ~user
                raise CityFormatError(path, f"line {line}", f"frame file name {fname[:80]!r} is unusable: {e}") from None
            if not found:
                raise CityFormatError(path, f"line {line}", f"frame file not found: {fname}")
            if fp in seen:
                raise CityFormatError(path, f"line {line}", f"frame {fname} already listed on line {seen[fp]}")
            seen[fp] = line
            traj = cell("trajectory").strip() or path.stem
            trajs.setdefault(traj, []).append(_Entry(fp, traj, line, path, lat, lon, heading))
    except csv.Error as e:
        raise CityFormatError(path, f"line {reader.line_num}", f"malformed CSV: {e}") from None
    if header is None:
        raise CityFormatError(path, None, "empty CSV manifest (no header row)")
    root = _common_root(e.path.parent for es in trajs.values() for e in es) if trajs else path.parent
    return _Inputs(root, trajs, ordered_by_csv=True, csv_path=path, ignored_columns=ignored)


def _collect(paths: Sequence[str | Path], csv_path: str | Path | None) -> _Inputs:
    paths = [Path(p) for p in paths]
    if csv_path is None and len(paths) == 1 and paths[0].suffix.lower() == ".csv" and paths[0].is_file():
        csv_path, paths = paths[0], []
    if csv_path is not None:
        if paths:
            raise CityFormatError(Path(csv_path), None, "give either a CSV manifest or frame files/folders, not both")
        return read_manifest(csv_path)
    return _collect_paths(paths)


def source_files(path: str | Path) -> list[Path]:
    """The files of a frames source, in import order (hashed for the import cache).

    ``path`` is a directory of frames, a CSV manifest (the CSV comes first,
    then the frames it names) or an image file.

    Raises:
        CityFormatError: nothing usable at ``path`` or a malformed CSV.
    """
    inp = _collect([path], None)
    files = [e.path for es in inp.trajectories.values() for e in es]
    return ([inp.csv_path] if inp.csv_path else []) + files
