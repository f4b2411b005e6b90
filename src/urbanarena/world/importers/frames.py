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

import math
from pathlib import Path
from typing import Any, Sequence

import networkx as nx
import numpy as np

from urbanarena.errors import CityFormatError
from urbanarena.world.city import City, CityMeta
from urbanarena.world.geo import WGS84_GEOD, LocalFrame, wrap_deg
from urbanarena.world.node_ids import check_node_id
# re-exported: EXIF reading, input collection (folders, CSV manifest) and the trajectory graph were defined here
from urbanarena.world.importers.frames_exif import (  # noqa: F401
    ALLOWED_FORMATS, FrameExif, IMAGE_SUFFIXES, _EXIF_IFD, _GPS_IFD, _GPS_IMG_DIR, _GPS_IMG_DIR_REF, _GPS_LAT,
    _GPS_LAT_REF, _GPS_LON, _GPS_LON_REF, _TAG_DATETIME_ORIGINAL, _TAG_SUBSEC_ORIGINAL, _dms, _num, _parse_time, _ref,
    read_frame_exif,
)
from urbanarena.world.importers.frames_inputs import (  # noqa: F401
    ASPECT_TOLERANCE_PX, DEFAULT_JOIN_RADIUS_M, DEFAULT_LICENCE, DEFAULT_MAX_GAP_M, DUPLICATE_EPS_M, OPEN_LICENCES,
    _CSV_COLUMNS, _Entry, _Frame, _Inputs, _collect, _collect_paths, _common_root, _csv_float, _dir_trajectories,
    _images_in, _is_image, _natural_key, read_manifest, source_files,
)
from urbanarena.world.importers.frames_graph import (  # noqa: F401
    _edge_attrs, _join, _merge, _order, _resolve, _where, _zones, course_headings, thin,
)

KIND = "frames"
#: bump when the import result for the same input files changes (import cache key)
VERSION = "1"


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
    if not (math.isfinite(spacing_m) and spacing_m >= 0):
        raise ValueError(f"spacing_m must be >= 0, got {spacing_m}")
    if not (math.isfinite(join_radius_m) and join_radius_m > 0):
        raise ValueError(f"join_radius_m must be > 0, got {join_radius_m}")
    if not max_gap_m > 0:
        raise ValueError(f"max_gap_m must be > 0, got {max_gap_m}")
    return frames_city(_collect(inputs, csv_path), spacing_m=spacing_m, join_radius_m=join_radius_m,
                       max_gap_m=max_gap_m, merge=merge, name=name, licence=licence, attribution=attribution,
                       redistributable=redistributable, verify_pixels=verify_pixels)


def frames_city(
    inp: _Inputs,
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
    """The graph building of :func:`import_frames` on frames already collected (``inp``: trajectories of
    :class:`_Entry`, e.g. made by the video importer with positions and headings given). Same arguments,
    result and errors as :func:`import_frames` (the arguments are not re-checked here)."""
    from scipy.spatial import cKDTree

    from urbanarena.world.imagery import attach_panorama_folder

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
