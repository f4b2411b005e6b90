"""Frames importer — the Movie Map paradigm (``--city frames:PATH``,
``urbanarena city from-frames FRAME... --out CITY_DIR``).

A sequence of geotagged 360-degree frames (equirectangular images, 2:1)
becomes a *trajectory* of nodes; several trajectories are joined where they
meet into one pose graph. Every frame is its own panorama: node
``heading_deg`` is the compass bearing of the frame's centre column, and the
city's imagery (:mod:`urbanarena.world.imagery`, source ``"frames"``,
``yaw_offset_deg = 0``) points at the frames' folder.

Inputs
------
``PATH`` (for :func:`import_city`) is one of

* a **directory**: the images directly inside it form one trajectory, and
  each immediate sub-directory holding images forms one more (one level
  deep; sub-directories in name order). Images are ``*.jpg``, ``*.jpeg``,
  ``*.png``, ``*.webp`` (any case); other files are ignored;
* a **CSV manifest** (``*.csv``, UTF-8, header row required), one frame per
  row. Columns (case-insensitive; unknown columns are ignored and listed in
  the import report): ``filename`` (alias ``file``, ``path``; required;
  relative to the CSV's folder or absolute), ``lat`` (``latitude``), ``lon``
  (``lng``, ``longitude``), ``heading`` (``heading_deg``), ``trajectory``
  (``trajectory_id``). Empty cells fall back to the image's EXIF. Without a
  ``trajectory`` column all rows are one trajectory named after the CSV
  file's stem;
* a single image file (one trajectory of one frame: rejected, see below).

:func:`import_frames` takes several paths at once (the CLI's ``FRAME...``):
directories as above, loose image files grouped into one trajectory per
parent folder. A folder trajectory's id is the folder's path relative to the
parent of the imagery root (the common folder of all frames), e.g.
``"geovisio"`` or ``"scene/north"``; trajectories are taken in natural order
of these paths.

Per frame
---------
* **Position**: CSV ``lat``/``lon`` when given, else EXIF GPS
  (``GPSLatitude``/``GPSLongitude`` degrees-minutes-seconds with the N/S, E/W
  refs, read from the GPS IFD with Pillow without decoding pixels). Refused:
  NaN/infinite values, a missing or invalid ref, out-of-range values, and the
  exact position (0, 0) (cameras write it when they have no fix).
* **Heading** (``heading_deg``, the bearing of the image centre column), by
  precedence: the CSV ``heading`` (an explicit statement by the user; any
  finite value, wrapped into [0, 360)); else EXIF ``GPSImgDirection``
  (``GPSImgDirectionRef`` ``"T"`` true north, or missing: taken as true;
  ``"M"`` magnetic north is used as is — no declination model — and a warning
  goes into the report); else the **course**: the geodesic forward azimuth
  from this frame to the next frame of its trajectory, and for the last frame
  the direction of travel on arrival (forward azimuth at the last frame of the
  geodesic from the previous one, ``back_azimuth + 180``). Course headings
  assume a camera whose front faces the direction of travel. Courses are
  computed after thinning. The source is kept per node (``heading_source``:
  ``"csv"``, ``"exif"``, ``"exif_magnetic"`` or ``"course"``).
* **Image**: opened with Pillow (JPEG/MPO, PNG, WebP). It must be 2:1
  (``|W - 2H| <= 1`` pixel). With ``verify_pixels`` (default) the pixel data
  are decoded once — JPEGs at 1/8 scale through Pillow's draft mode — so that
  truncated or corrupt files are refused at import, not mid-episode.

Capture order within a trajectory
---------------------------------
CSV: row order. Folders: when *every* frame of the trajectory has EXIF
``DateTimeOriginal``, ascending time (``SubSecTimeOriginal`` adds fractions;
ties broken by file name); otherwise natural file-name order (``2.jpg`` before
``10.jpg``). The order used is reported per trajectory.

Two consecutive frames (capture order, before thinning) more than
``max_gap_m`` apart (default 100 m) are refused: they are not one trajectory
(e.g. a stray photo from another place in the folder); put them in separate
folders or CSV trajectories, or raise the limit.

Thinning (``spacing_m > 0``)
----------------------------
Greedy along the capture order: keep the first frame; keep a frame when its
geodesic distance to the last kept frame is ``>= spacing_m``. The last frame is
always kept; if it lies closer than ``spacing_m`` to the previously kept frame,
that one is dropped instead (unless it is the first frame).

Edges
-----
Consecutive kept frames are joined both ways; ``azimuth_deg`` is the WGS84
geodesic forward azimuth (pyproj ``Geod.inv``), ``length_m`` the geodesic
length, ``trajectory_id`` the trajectory and ``edge_kind`` ``"trajectory"``.

Joining trajectories (join rule)
--------------------------------
Each trajectory is a polyline of its kept frames in the city's local metric
frame. Two segments are *in contact* when their distance is
``<= join_radius_m`` (default 4 m; ``shapely`` ``STRtree`` query with predicate
``dwithin``). Segment pairs in contact form a grid of cells ``(i, j)`` (segment
``i`` of one trajectory, ``j`` of the other); a *contact zone* is a connected
set of cells under 8-neighbour adjacency — one place where the two paths meet
(a crossing, a T-junction, or a stretch where they run side by side). A
trajectory may also meet itself (a loop): then segments ``i < j`` count only
when the path between them is longer than ``2 * join_radius_m``, and so must
the chosen node pair be apart along the path.

For each zone the importer picks the pair of frames (one end of a segment of
each side of the zone) that are nearest to each other (ties: lowest frame
indices), and then

* **merges** them when their geodesic distance is ``<= join_radius_m`` and
  ``merge`` is true (default): the frame of the earlier trajectory (for a
  loop, the earlier frame) becomes the junction node; the other frame is
  dropped and its edges are re-attached to the junction node with azimuth and
  length recomputed from the junction's position. A clean crossing thus gives
  one node of out-degree 4;
* otherwise **connects** them with a pair of edges (``edge_kind`` ``"join"``,
  ``trajectory_id`` null) — this happens when the paths meet between frames
  that are farther apart than the radius, or when ``merge`` is false.

Pairs already joined are skipped. Zones are processed in trajectory order,
then by their first cell. Every join is listed in the import report
(``city.meta.extra["joins"]``: nodes, trajectories, action ``merge`` or
``connect``, node distance, the least segment distance of the zone and whether
the paths cross).

Validation
----------
:class:`~urbanarena.errors.CityFormatError` naming the file (and the CSV line):
unreadable or unsupported image, image not 2:1, no EXIF at all (and no CSV
position), NaN/missing/invalid GPS, duplicate positions (two kept frames less
than 1 cm apart; thinning with ``spacing_m`` removes repeated fixes of a
standing camera), the same file twice, a trajectory with fewer than 2 frames
(a lone frame has no course and no move; e.g. a single phone photosphere is
refused), fewer than 2 frames overall, and CSV errors (missing header or
``filename`` column, wrong field count, empty filename, bad numbers, lat
without lon, missing file, duplicate row) with their line numbers.

Node ids are the frame paths relative to the imagery root (the common folder
of all frames; POSIX separators), e.g. ``"1.jpg"`` or ``"north/0003.jpg"``.
Node attributes besides the core ones: ``image`` (= the id),
``trajectory_id``, ``frame_index`` (position in the trajectory's capture
order before thinning), ``heading_source``, ``captured_at`` (EXIF time, ISO
8601, or null) and ``merged_frames`` (ids of frames merged into a junction).
``walkable_headings_*`` are null (frames carry none).

Licence and attribution (graph and imagery alike) are the caller's; by
default ``"unknown — user's own footage"``. Imagery is marked redistributable
when the caller says so, or by default when the licence is one of
:data:`OPEN_LICENCES`.
"""

from __future__ import annotations

import csv
import math
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Sequence

import networkx as nx
import numpy as np

from urbanarena.errors import CityFormatError
from urbanarena.world.city import City, CityMeta
from urbanarena.world.geo import WGS84_GEOD, LocalFrame, wrap_deg
from urbanarena.world.node_ids import check_node_id

KIND = "frames"
#: bump when the import result for the same input files changes (import cache key)
VERSION = "1"

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")
ALLOWED_FORMATS = ("JPEG", "MPO", "PNG", "WEBP")
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

_EXIF_IFD = 0x8769
_GPS_IFD = 0x8825
_TAG_DATETIME_ORIGINAL = 0x9003
_TAG_SUBSEC_ORIGINAL = 0x9291
_GPS_LAT_REF, _GPS_LAT, _GPS_LON_REF, _GPS_LON = 1, 2, 3, 4
_GPS_IMG_DIR_REF, _GPS_IMG_DIR = 16, 17

_CSV_COLUMNS = {
    "filename": "filename", "file": "filename", "path": "filename",
    "lat": "lat", "latitude": "lat",
    "lon": "lon", "lng": "lon", "longitude": "lon",
    "heading": "heading", "heading_deg": "heading",
    "trajectory": "trajectory", "trajectory_id": "trajectory",
}


# ====================================================================== EXIF
@dataclass(frozen=True)
class FrameExif:
    """What one image file says about itself.

    Attributes:
        path: the file.
        width_px, height_px: image size in pixels.
        has_exif: the file carries any EXIF tag at all.
        lat, lon: EXIF GPS position (WGS84 degrees) or ``None``.
        gps_problem: why the EXIF position is unusable (``None`` if usable or absent).
        heading_deg: ``GPSImgDirection`` wrapped into [0, 360), or ``None``.
        heading_ref: ``"T"`` or ``"M"`` (``None`` when absent).
        captured_at: EXIF ``DateTimeOriginal`` (+ sub-seconds), naive local time, or ``None``.
    """

    path: Path
    width_px: int
    height_px: int
    has_exif: bool
    lat: float | None = None
    lon: float | None = None
    gps_problem: str | None = None
    heading_deg: float | None = None
    heading_ref: str | None = None
    captured_at: datetime | None = None


def _num(v: Any) -> float:
    """EXIF rational/number -> float (NaN for 0-denominator rationals or junk)."""
    try:
        return float(v)
    except (TypeError, ValueError, ZeroDivisionError):
        return math.nan


def _ref(v: Any) -> str:
    if isinstance(v, bytes):
        v = v.decode("latin-1", "replace")
    return str(v).strip("\x00 ").upper() if v is not None else ""


def _dms(value: Any, ref: Any, pos: str, neg: str, limit: float, what: str) -> tuple[float | None, str | None]:
    """EXIF degrees/minutes/seconds + ref -> signed degrees, or (None, problem)."""
    if value is None:
        return None, f"GPS {what} missing"
    parts = value if isinstance(value, (tuple, list)) else (value,)
    nums = [_num(p) for p in parts]
    if not nums or len(nums) > 3:
        return None, f"GPS {what} has {len(nums)} components (expected degrees, minutes, seconds)"
    if not all(math.isfinite(n) for n in nums):
        return None, f"GPS {what} is NaN or infinite ({', '.join(repr(n) for n in nums)})"
    deg = sum(n / 60.0**k for k, n in enumerate(nums))
    r = _ref(ref)
    if r not in (pos, neg):
        return None, f"GPS {what} ref is {r!r}, expected {pos!r} or {neg!r}"
    if r == neg:
        deg = -deg
    if abs(deg) > limit:
        return None, f"GPS {what} {deg} out of range [-{limit:g}, {limit:g}]"
    return deg, None


def _parse_time(raw: Any, subsec: Any) -> datetime | None:
    if not isinstance(raw, str):
        return None
    try:
        t = datetime.strptime(raw.strip("\x00 "), "%Y:%m:%d %H:%M:%S")
    except ValueError:
        return None
    digits = re.sub(r"\D", "", str(subsec or ""))
    if digits:
        t = t.replace(microsecond=int((digits + "000000")[:6]))
    return t


def read_frame_exif(path: str | Path, verify_pixels: bool = True) -> FrameExif:
    """Read size, GPS, image direction and capture time of one frame (no pixel decoding unless ``verify_pixels``).

    Args:
        path: image file (JPEG/MPO, PNG or WebP).
        verify_pixels: decode the pixel data once (JPEG at 1/8 scale) to catch
            truncated or corrupt files.
    Returns:
        :class:`FrameExif`. GPS problems are reported in ``gps_problem`` rather
        than raised, because a CSV manifest may supply the position.
    Raises:
        CityFormatError: file missing, not an image Pillow can read, an
            unsupported format, or corrupt pixel data.
    """
    from PIL import Image, UnidentifiedImageError

    p = Path(path)
    try:
        im = Image.open(p)
    except FileNotFoundError as e:
        raise CityFormatError(p, None, "frame file not found") from e
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError) as e:
        raise CityFormatError(p, None, f"unreadable image: {e}") from e
    with im:
        if im.format not in ALLOWED_FORMATS:
            raise CityFormatError(p, None, f"unsupported image format {im.format!r} (use JPEG, PNG or WebP)")
        width, height = im.size
        try:
            exif = im.getexif()
            gps = exif.get_ifd(_GPS_IFD) if _GPS_IFD in exif else {}
            sub = exif.get_ifd(_EXIF_IFD) if _EXIF_IFD in exif else {}
        except Exception as e:  # noqa: BLE001 - Pillow raises assorted errors on garbled EXIF
            raise CityFormatError(p, "EXIF", f"unreadable EXIF metadata: {e}") from e
        if verify_pixels:
            try:
                if im.format in ("JPEG", "MPO"):
                    im.draft("RGB", (max(1, width // 8), max(1, height // 8)))
                im.load()
            except (OSError, SyntaxError, ValueError) as e:
                raise CityFormatError(p, None, f"unreadable image data (truncated or corrupt): {e}") from e
    lat = lon = None
    problem = None
    if gps:
        lat, p_lat = _dms(gps.get(_GPS_LAT), gps.get(_GPS_LAT_REF), "N", "S", 90.0, "latitude")
        lon, p_lon = _dms(gps.get(_GPS_LON), gps.get(_GPS_LON_REF), "E", "W", 180.0, "longitude")
        problem = "; ".join(x for x in (p_lat, p_lon) if x) or None
        if problem:
            lat = lon = None
        elif lat == 0.0 and lon == 0.0:
            lat = lon = None
            problem = "GPS position is exactly (0, 0): the camera had no fix"
    elif len(exif):
        problem = "no GPS metadata in EXIF"
    heading = ref = None
    if _GPS_IMG_DIR in gps:
        h = _num(gps.get(_GPS_IMG_DIR))
        if math.isfinite(h):
            heading = wrap_deg(h)
            ref = _ref(gps.get(_GPS_IMG_DIR_REF)) or "T"
    captured = _parse_time(sub.get(_TAG_DATETIME_ORIGINAL), sub.get(_TAG_SUBSEC_ORIGINAL))
    return FrameExif(p, int(width), int(height), bool(len(exif)), lat, lon, problem, heading, ref, captured)


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


# ================================================================== resolve
def _where(e: _Entry) -> tuple[Path, str | None]:
    """(file, record) naming a frame in errors: the CSV line when there is one."""
    if e.csv_path is not None:
        return e.csv_path, f"line {e.line} ({e.path.name})"
    return e.path, None


def _resolve(e: _Entry, verify_pixels: bool, warnings: list[str]) -> _Frame:
    ex = read_frame_exif(e.path, verify_pixels=verify_pixels)
    problems = []
    if abs(ex.width_px - 2 * ex.height_px) > ASPECT_TOLERANCE_PX:
        problems.append(f"image is {ex.width_px}x{ex.height_px}, not a 2:1 equirectangular panorama")
    lat, lon = e.lat, e.lon
    if lat is None:
        if not ex.has_exif:
            problems.append("no EXIF metadata at all, so no GPS position (give lat/lon in a CSV manifest)")
        elif ex.gps_problem:
            problems.append(ex.gps_problem + " (give lat/lon in a CSV manifest to override)")
        else:
            lat, lon = ex.lat, ex.lon
    if problems:
        # the image file is what is wrong: name it; CSV rows add their line
        raise CityFormatError(e.path, f"{e.csv_path.name} line {e.line}" if e.csv_path else None, "; ".join(problems))
    if e.heading is not None:
        heading, source = wrap_deg(e.heading), "csv"
    elif ex.heading_deg is not None:
        heading = ex.heading_deg
        source = "exif" if ex.heading_ref != "M" else "exif_magnetic"
        if ex.heading_ref not in ("T", "M"):
            warnings.append(f"{e.path}: GPSImgDirectionRef {ex.heading_ref!r} unknown, heading taken as true north")
        elif ex.heading_ref == "M":
            warnings.append(f"{e.path}: GPSImgDirection is relative to magnetic north; used without declination correction")
    else:
        heading, source = None, None
    assert lat is not None and lon is not None
    return _Frame(e.path, e.trajectory, float(lat), float(lon), heading, source, ex.captured_at)


def _order(frames: list[_Frame], by_csv: bool) -> str:
    """Sort ``frames`` in place into capture order; returns the rule used."""
    if by_csv:
        return "csv"
    if all(f.captured_at is not None for f in frames):
        frames.sort(key=lambda f: (f.captured_at, _natural_key(f.path.name)))
        return "exif_time"
    frames.sort(key=lambda f: _natural_key(f.path.name))
    return "filename"


def thin(lats: np.ndarray, lons: np.ndarray, spacing_m: float) -> list[int]:
    """Indices kept by thinning to a minimum spacing (rule in the module docstring).

    Args:
        lats, lons: WGS84 degrees, capture order, shape ``(n,)``.
        spacing_m: minimum geodesic spacing in metres (``<= 0``: keep all).
    """
    n = len(lats)
    if spacing_m <= 0 or n <= 2:
        return list(range(n))
    kept = [0]
    for k in range(1, n - 1):
        _, _, d = WGS84_GEOD.inv(lons[kept[-1]], lats[kept[-1]], lons[k], lats[k])
        if d >= spacing_m:
            kept.append(k)
    _, _, d = WGS84_GEOD.inv(lons[kept[-1]], lats[kept[-1]], lons[n - 1], lats[n - 1])
    if d < spacing_m and len(kept) > 1:
        kept.pop()
    kept.append(n - 1)
    return kept


def course_headings(lats: np.ndarray, lons: np.ndarray) -> np.ndarray:
    """Course at each point of a polyline, degrees clockwise from true north in [0, 360).

    Point ``k < n-1``: geodesic forward azimuth from point ``k`` to ``k+1``;
    last point: forward azimuth at the last point of the geodesic from point
    ``n-2`` (``back azimuth + 180``). Needs ``n >= 2`` distinct points.
    """
    az, baz, _ = WGS84_GEOD.inv(lons[:-1], lats[:-1], lons[1:], lats[1:])
    az = np.atleast_1d(az)
    last = float(np.atleast_1d(baz)[-1]) + 180.0
    return np.array([wrap_deg(a) for a in az] + [wrap_deg(last)])


# ==================================================================== joins
def _edge_attrs(g: nx.DiGraph, u: str, v: str, **extra: Any) -> dict[str, Any]:
    a, b = g.nodes[u], g.nodes[v]
    az, _, d = WGS84_GEOD.inv(a["lon"], a["lat"], b["lon"], b["lat"])
    return {"azimuth_deg": wrap_deg(az), "length_m": float(d), **extra}


def _zones(cells: set[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """Connected sets of cells under 8-neighbour adjacency, each sorted, ordered by first cell."""
    h = nx.Graph()
    h.add_nodes_from(cells)
    for i, j in cells:
        for di, dj in ((0, 1), (1, -1), (1, 0), (1, 1)):
            if (i + di, j + dj) in cells:
                h.add_edge((i, j), (i + di, j + dj))
    return sorted((sorted(c) for c in nx.connected_components(h)), key=lambda c: c[0])


def _join(
    g: nx.DiGraph,
    node_ids: list[list[str]],
    xy: list[np.ndarray],
    cum: list[np.ndarray],
    traj_names: list[str],
    radius_m: float,
    merge: bool,
) -> list[dict[str, Any]]:
    """Join trajectories where they meet (module docstring); edits ``g``; returns the joins made."""
    import shapely

    seg_traj: list[int] = []
    seg_local: list[int] = []
    coords = []
    for t, pts in enumerate(xy):
        for k in range(len(pts) - 1):
            seg_traj.append(t)
            seg_local.append(k)
            coords.append(pts[k:k + 2])
    if not coords:
        return []
    segs = shapely.linestrings(np.asarray(coords, dtype=float))
    tree = shapely.STRtree(segs)
    qa, qb = tree.query(segs, predicate="dwithin", distance=radius_m)
    cells: dict[tuple[int, int], set[tuple[int, int]]] = {}
    for a, b in zip(qa.tolist(), qb.tolist()):
        if a >= b:
            continue
        ta, tb = seg_traj[a], seg_traj[b]
        i, j = seg_local[a], seg_local[b]
        if ta == tb and (j < i + 2 or cum[ta][j] - cum[ta][i + 1] <= 2 * radius_m):
            continue
        cells.setdefault((ta, tb), set()).add((i, j))
    rep: dict[str, str] = {}

    def find(n: str) -> str:
        while n in rep:
            n = rep[n]
        return n

    seg_index = {(t, k): s for s, (t, k) in enumerate(zip(seg_traj, seg_local))}
    joins: list[dict[str, Any]] = []
    for ta, tb in sorted(cells):
        for zone in _zones(cells[(ta, tb)]):
            cand_a = sorted({k for i, _ in zone for k in (i, i + 1)})
            cand_b = sorted({k for _, j in zone for k in (j, j + 1)})
            best = None
            for ka in cand_a:
                for kb in cand_b:
                    if ta == tb and abs(cum[ta][kb] - cum[ta][ka]) <= 2 * radius_m:
                        continue
                    d = float(np.hypot(*(xy[ta][ka] - xy[tb][kb])))
                    key = (d, ka, kb)
                    if best is None or key < best:
                        best = key
            if best is None:
                continue
            _, ka, kb = best
            if ta == tb and kb < ka:
                ka, kb = kb, ka
            na, nb = find(node_ids[ta][ka]), find(node_ids[tb][kb])
            if na == nb or g.has_edge(na, nb):
                continue
            zsegs = [(segs[seg_index[(ta, i)]], segs[seg_index[(tb, j)]]) for i, j in zone]
            gap = min(float(shapely.distance(s, t)) for s, t in zsegs)
            crosses = any(bool(shapely.intersects(s, t)) for s, t in zsegs)
            _, _, dist = WGS84_GEOD.inv(g.nodes[na]["lon"], g.nodes[na]["lat"], g.nodes[nb]["lon"], g.nodes[nb]["lat"])
            record = {
                "trajectories": [traj_names[ta], traj_names[tb]],
                "nodes": [na, nb],
                "frames": [node_ids[ta][ka], node_ids[tb][kb]],
                "distance_m": float(dist),
                "min_gap_m": gap,
                "crossing": crosses,
            }
            if merge and dist <= radius_m:
                _merge(g, keep=na, drop=nb)
                rep[nb] = na
                record["action"] = "merge"
                record["junction"] = na
            else:
                g.add_edge(na, nb, **_edge_attrs(g, na, nb, trajectory_id=None, edge_kind="join"))
                g.add_edge(nb, na, **_edge_attrs(g, nb, na, trajectory_id=None, edge_kind="join"))
                record["action"] = "connect"
            joins.append(record)
    return joins


def _merge(g: nx.DiGraph, keep: str, drop: str) -> None:
    """Re-attach ``drop``'s edges to ``keep`` (geometry from ``keep``) and remove ``drop``."""
    for u, _, d in list(g.in_edges(drop, data=True)):
        if u != keep and not g.has_edge(u, keep):
            extra = {k: v for k, v in d.items() if k not in ("azimuth_deg", "length_m")}
            g.add_edge(u, keep, **_edge_attrs(g, u, keep, **extra))
    for _, v, d in list(g.out_edges(drop, data=True)):
        if v != keep and not g.has_edge(keep, v):
            extra = {k: v2 for k, v2 in d.items() if k not in ("azimuth_deg", "length_m")}
            g.add_edge(keep, v, **_edge_attrs(g, keep, v, **extra))
    merged = list(g.nodes[keep].get("merged_frames") or [])
    merged.append(drop)
    merged.extend(g.nodes[drop].get("merged_frames") or [])
    g.nodes[keep]["merged_frames"] = merged
    g.remove_node(drop)


# =================================================================== import
def import_frames(
    inputs: Sequence[str | Path] = (),
    csv_path: str | Path | None = None,
    *,
    spacing_m: float = 0.0,
    join_radius_m: float = DEFAULT_JOIN_RADIUS_M,
    max_gap_m: float = DEFAULT_MAX_GAP_M,
    merge: bool = True,
    name: str | None = None,
    licence: str | None = None,
    attribution: str | None = None,
    redistributable: bool | None = None,
    verify_pixels: bool = True,
) -> City:
    """Build a pose-graph city from geotagged 360-degree frames (rules in the module docstring).

    Args:
        inputs: frame files and/or folders (not together with ``csv_path``).
        csv_path: a CSV manifest instead of ``inputs``.
        spacing_m: minimum spacing between kept frames, metres (0: keep all).
        join_radius_m: contact distance between trajectories, metres (> 0).
        max_gap_m: largest allowed distance between consecutive frames, metres.
        merge: merge the nearest frame pair of a contact zone when within the
            radius (else always connect with join edges).
        name: city name (default: the imagery root folder's name, or the CSV stem).
        licence, attribution: of the frames (graph and imagery); default
            :data:`DEFAULT_LICENCE` and no attribution.
        redistributable: whether the imagery may be exported; default: the
            licence is in :data:`OPEN_LICENCES`.
        verify_pixels: decode each image once to refuse corrupt files.
    Returns:
        :class:`~urbanarena.world.city.City` with imagery attached and the
        import report in ``meta.extra`` (trajectories, joins, warnings).
    Raises:
        CityFormatError: naming the file (and CSV line) of the first bad input.
        ValueError: ``spacing_m < 0``, ``join_radius_m <= 0`` or ``max_gap_m <= 0``.
    """
    from scipy.spatial import cKDTree

    from urbanarena.world.imagery import attach_panorama_folder

    if not (math.isfinite(spacing_m) and spacing_m >= 0):
        raise ValueError(f"spacing_m must be >= 0, got {spacing_m}")
    if not (math.isfinite(join_radius_m) and join_radius_m > 0):
        raise ValueError(f"join_radius_m must be > 0, got {join_radius_m}")
    if not max_gap_m > 0:
        raise ValueError(f"max_gap_m must be > 0, got {max_gap_m}")
    inp = _collect(inputs, csv_path)
    warnings: list[str] = []
    # resolve every frame first: a bad file is reported as such, whatever the count
    resolved = {t: [_resolve(e, verify_pixels, warnings) for e in es] for t, es in inp.trajectories.items()}
    n_total = sum(len(v) for v in resolved.values())
    if n_total < 2:
        where = inp.csv_path or (next(iter(inp.trajectories.values()))[0].path if n_total else None)
        raise CityFormatError(where, None, f"{n_total} frame(s): a frames city needs at least 2 frames "
                              "(a lone frame has neither a course nor a move)")
    # order, check gaps, thin
    trajs: list[tuple[str, list[_Frame], str, int]] = []
    for tname, entries in inp.trajectories.items():
        frames = resolved[tname]
        if len(frames) < 2:
            p, rec = _where(entries[0])
            raise CityFormatError(p, rec, f"trajectory {tname!r} has {len(frames)} frame; a trajectory needs at "
                                  "least 2 frames (a lone frame has neither a course nor a move)")
        order = _order(frames, inp.ordered_by_csv)
        for k, f in enumerate(frames):
            f.frame_index = k
        lats = np.array([f.lat for f in frames])
        lons = np.array([f.lon for f in frames])
        _, _, steps = WGS84_GEOD.inv(lons[:-1], lats[:-1], lons[1:], lats[1:])
        for k, d in enumerate(np.atleast_1d(steps)):
            if d > max_gap_m:
                raise CityFormatError(
                    frames[k + 1].path, None,
                    f"{d:.1f} m from the previous frame {frames[k].path.name} of trajectory {tname!r} (capture "
                    f"order: {order}), more than the largest allowed gap {max_gap_m:g} m: not one trajectory; "
                    "put the frames in separate folders or raise the maximum gap",
                )
        kept = thin(lats, lons, spacing_m)
        trajs.append((tname, [frames[k] for k in kept], order, len(frames)))
    # duplicate positions (after thinning), across all trajectories
    all_frames = [f for _, fs, _, _ in trajs for f in fs]
    lat_all = np.array([f.lat for f in all_frames])
    lon_all = np.array([f.lon for f in all_frames])
    frame = LocalFrame.centred_on(lat_all, lon_all)
    x_all, y_all = frame.to_xy(lat_all, lon_all)
    xy_all = np.column_stack([np.atleast_1d(x_all), np.atleast_1d(y_all)])
    pairs = sorted(cKDTree(xy_all).query_pairs(r=DUPLICATE_EPS_M * 1.5))
    for a, b in pairs:
        _, _, d = WGS84_GEOD.inv(lon_all[a], lat_all[a], lon_all[b], lat_all[b])
        if d < DUPLICATE_EPS_M:
            fa, fb = all_frames[a], all_frames[b]
            hint = " (use a minimum spacing to thin repeated fixes)" if fa.trajectory == fb.trajectory else ""
            raise CityFormatError(fb.path, None, f"duplicate position: {d * 100:.2f} cm from {fa.path}{hint}")
    root = inp.root
    g = nx.DiGraph()
    node_ids: list[list[str]] = []
    xy: list[np.ndarray] = []
    cum: list[np.ndarray] = []
    names: list[str] = []
    report_trajs = []
    pos = 0
    for tname, fs, order, n_in in trajs:
        lats = np.array([f.lat for f in fs])
        lons = np.array([f.lon for f in fs])
        course = course_headings(lats, lons)
        az, baz, dist = WGS84_GEOD.inv(lons[:-1], lats[:-1], lons[1:], lats[1:])
        az, baz, dist = np.atleast_1d(az), np.atleast_1d(baz), np.atleast_1d(dist)
        ids = []
        sources: dict[str, int] = {}
        for k, f in enumerate(fs):
            nid = check_node_id(f.path.relative_to(root).as_posix(), f.path, "file name")
            if nid in g:
                raise CityFormatError(f.path, None, "the same frame is given twice")
            heading, hsrc = (f.heading_deg, f.heading_source) if f.heading_deg is not None else (float(course[k]), "course")
            sources[hsrc] = sources.get(hsrc, 0) + 1
            g.add_node(
                nid, lat=f.lat, lon=f.lon, heading_deg=float(heading), walkable_headings_raw=None,
                walkable_headings_deg=None, image=nid, trajectory_id=tname, frame_index=f.frame_index,
                heading_source=hsrc, captured_at=f.captured_at.isoformat() if f.captured_at else None,
                merged_frames=None,
            )
            ids.append(nid)
        for k in range(len(fs) - 1):
            g.add_edge(ids[k], ids[k + 1], azimuth_deg=wrap_deg(az[k]), length_m=float(dist[k]),
                       trajectory_id=tname, edge_kind="trajectory")
            g.add_edge(ids[k + 1], ids[k], azimuth_deg=wrap_deg(baz[k]), length_m=float(dist[k]),
                       trajectory_id=tname, edge_kind="trajectory")
        node_ids.append(ids)
        xy.append(xy_all[pos:pos + len(fs)])
        pos += len(fs)
        cum.append(np.concatenate([[0.0], np.cumsum(dist)]))
        names.append(tname)
        report_trajs.append({
            "id": tname, "frames": n_in, "nodes": len(fs), "length_m": float(np.sum(dist)),
            "order": order, "heading_sources": dict(sorted(sources.items())),
        })
    joins = _join(g, node_ids, xy, cum, names, join_radius_m, merge)
    lic = licence or DEFAULT_LICENCE
    meta = CityMeta(
        name=name or (inp.csv_path.stem if inp.csv_path else root.name) or "frames",
        source={
            "kind": KIND,
            "root": str(root),
            "csv": str(inp.csv_path) if inp.csv_path else None,
            "files": [f.path.relative_to(root).as_posix() for _, fs, _, _ in trajs for f in fs],
            "description": "geotagged 360-degree frames (Movie Map paradigm)",
        },
        licence=lic,
        attribution=attribution,
        extra={
            "trajectories": report_trajs,
            "joins": joins,
            "join_radius_m": float(join_radius_m),
            "spacing_m": float(spacing_m),
            "max_gap_m": float(max_gap_m),
            "merge": bool(merge),
            "ignored_csv_columns": inp.ignored_columns,
            "warnings": warnings,
        },
    )
    city = City(g, meta, frame=frame)
    attach_panorama_folder(
        city, root, "{node}",
        yaw_offset_deg=0.0,
        licence=lic,
        attribution=attribution,
        redistributable=(lic in OPEN_LICENCES) if redistributable is None else bool(redistributable),
        source="frames",
        notes="each frame is its own panorama; node heading_deg is the bearing of its centre column "
              "(EXIF GPSImgDirection, the CSV heading, or the course of travel: see heading_source)",
    )
    return city


def import_city(path: str | Path, **options: Any) -> City:
    """Import a frames source (``--city frames:PATH``): a folder of frames or a CSV manifest.

    ``options`` are those of :func:`import_frames` (``spacing_m``,
    ``join_radius_m``, ``max_gap_m``, ``merge``, ``name``, ``licence``, ``attribution``,
    ``redistributable``, ``verify_pixels``).

    Raises:
        CityFormatError: see :func:`import_frames`.
    """
    return import_frames([path], None, **options)
