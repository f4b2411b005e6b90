"""360-degree video importer (``urbanarena city from-video VIDEO --gpx TRACK.gpx --out CITY_DIR``).

An equirectangular 360-degree video (MP4/MOV ..., anything FFmpeg reads, through
`PyAV <https://pyav.basswood-io.com>`_: the optional ``video`` extra) and the GPS
track recorded with it (GPX, :mod:`urbanarena.world.importers.gpx`) become a
city of the same kind ``city from-frames`` writes: frames sampled every
``spacing_m`` metres along the track are written as JPEG files into
``CITY_DIR/frames/`` and built into a pose graph by the frames importer's
graph building (:func:`urbanarena.world.importers.frames.frames_city`: one
trajectory, consecutive samples joined both ways, and the track joined to
itself where it crosses or revisits a place — the frames importer's join rule
with ``join_radius_m``).

Time and position
-----------------
A decoded frame's time is ``video start + frame pts (seconds) + time_offset_s``.
The video start is ``video_start`` when given, else the container's
``creation_time`` tag (taken as UTC); a video with neither is refused (naming
the file). ``time_offset_s`` corrects a camera clock (e.g. a local time
written as UTC: ``--time-offset-s -7200``). The frame's arc length along the
track is interpolated linearly in time between the two track points around it,
and its position is the point at that arc length on the geodesic of that track
segment (:meth:`~urbanarena.world.importers.gpx.Track.position_at_arc`). Frames
before the track's first or after its last point are not used (counted).

Sampling
--------
Targets lie every ``spacing_m`` metres of arc length from the first frame
inside the track: ``s_k = s_0 + k * spacing_m``. Target ``k`` takes the first
frame (decode order) whose arc length is in ``[s_k, s_k + spacing_m / 2)`` and
that is

* **sharp**: the variance of the Laplacian (OpenCV, 3x3 kernel) of the frame
  in grey levels, resized to 512 px wide, is at least ``blur_min_var``
  (``0`` turns the check off), and
* **not a near-duplicate** of the last sampled frame: the mean absolute
  difference of their 64 x 32 grey thumbnails is more than
  ``duplicate_max_diff`` grey levels (``0`` turns the check off). A track
  drifting while the camera stands still otherwise yields copies of one view.

A target whose window passes without such a frame is skipped and counted
(``skipped_blur``, ``skipped_duplicate``, ``skipped_no_frame``): the next
sample is then farther away. A camera standing still makes no progress along
the track, so it yields no new sample.

Heading
-------
``heading_deg`` (the bearing of the frame's centre column) is the direction of
travel: the geodesic forward azimuth from the track point at ``s - h`` to the
one at ``s + h`` (``h = min(spacing_m / 2, 5 m)``, clipped to the track's
ends). This assumes a camera whose front faces the direction of travel, as
most mounts do (``heading_source`` ``"track"``).

Per node, besides the frames importer's attributes: ``captured_at`` (the
frame's time, ISO 8601 UTC), ``video_time_s`` (its pts in seconds),
``frame_index`` (its number in decode order), ``track_m`` (arc length along the
track), ``blur_var``, ``licence`` and ``author`` (as Panoramax pictures: ``city
licences`` lists them). ``meta.source`` names the video and the GPX with their
sha256; ``meta.extra["video"]`` is the sampling report.

Not read yet: GPS tracks embedded in the video (GoPro GPMF, CAMM). A video
without a GPX is refused, saying whether it carries such a stream.

Errors (:class:`~urbanarena.errors.CityFormatError` naming the file and time)
----------------------------------------------------------------------------
no track given, a video FFmpeg cannot open or decode (truncated: fewer frames
decoded than the container announces), a video that is not 2:1
equirectangular, no start time, no overlap of the video's time span and the
track's (a track of another day or a wrong clock: the message gives both spans
and the offset that would align their starts), fewer than 2 samples, and every
bad track of :func:`~urbanarena.world.importers.gpx.read_gpx` (one point, jumps,
no fix ...).

Writing
-------
:func:`import_video` writes everything into a hidden temporary folder next to
``out_dir`` and renames it to ``out_dir`` only when the city is complete; on
any error the temporary folder is removed, so nothing half-written is left.
"""

from __future__ import annotations

import math
import os
import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from urbanarena.errors import CityFormatError
from urbanarena.progress import Progress, report
from urbanarena.world.city import City
from urbanarena.world.importers.gpx import DEFAULT_MAX_SPEED_MPS, Track, format_time, parse_time, read_gpx

KIND = "video"
#: bump when the import result for the same video and track changes
VERSION = "1"
DEFAULT_SPACING_M = 5.0
DEFAULT_BLUR_MIN_VAR = 30.0
DEFAULT_DUPLICATE_MAX_DIFF = 1.5
FRAMES_DIR = "frames"
ASPECT_TOLERANCE_PX = 1
_BLUR_WIDTH_PX = 512
_THUMB = (64, 32)
#: arc lengths this close count as equal (metres): rounding of the track and its interpolation
_ARC_EPS_M = 1e-3


@dataclass(frozen=True)
class VideoInfo:
    """What the container says about a video: size (pixels), frame count (0: unknown), duration (seconds, or
    ``None``), start time (``None`` when the container has no ``creation_time``) and embedded data streams."""

    path: Path
    width_px: int
    height_px: int
    n_frames: int
    duration_s: float | None
    creation_time: datetime | None
    data_streams: tuple[str, ...]


def _av():
    try:
        import av
    except ImportError as e:  # pragma: no cover - av is in the test extra
        raise CityFormatError(None, None, "reading videos needs PyAV: pip install 'urbanarena[video]'") from e
    return av


def probe_video(path: str | Path) -> VideoInfo:
    """Open ``path`` and read its first video stream's size, frame count, duration and creation time.

    Raises:
        CityFormatError: missing file, not a video FFmpeg can open (e.g. truncated), no video stream.
    """
    av = _av()
    path = Path(path)
    if not path.is_file():
        raise CityFormatError(path, None, "video file not found")
    try:
        with av.open(str(path)) as c:
            if not c.streams.video:
                raise CityFormatError(path, None, "no video stream in this file")
            vs = c.streams.video[0]
            w, h = int(vs.codec_context.width), int(vs.codec_context.height)
            n = int(vs.frames or 0)
            if vs.duration is not None and vs.time_base is not None:
                dur = float(vs.duration * vs.time_base)
            elif c.duration is not None:
                dur = c.duration / 1_000_000
            else:
                dur = None
            meta = {**(c.metadata or {}), **(vs.metadata or {})}
            data = tuple(f"{s.index}:{(s.metadata or {}).get('handler_name', '')}:{s.codec_context.name if s.codec_context else ''}"
                         for s in c.streams.data) if hasattr(c.streams, "data") else ()
    except av.FFmpegError as e:
        raise CityFormatError(path, None, f"cannot read the video (truncated or not a video?): {e}") from None
    created = None
    if meta.get("creation_time"):
        try:
            created = parse_time(str(meta["creation_time"]))
        except ValueError:
            created = None
    return VideoInfo(path, w, h, n, dur, created, data)


def _embedded_track_hint(info: VideoInfo) -> str:
    kinds = [s for s in info.data_streams if any(k in s.lower() for k in ("gopro met", "gpmd", "camm"))]
    if kinds:
        return (f"; the video carries an embedded camera track ({', '.join(kinds)}), which urbanarena does not read "
                "yet: export it to GPX")
    return ""


def _sharpness(grey: np.ndarray) -> float:
    import cv2

    h, w = grey.shape
    if w > _BLUR_WIDTH_PX:
        grey = cv2.resize(grey, (_BLUR_WIDTH_PX, max(1, round(h * _BLUR_WIDTH_PX / w))), interpolation=cv2.INTER_AREA)
    return float(cv2.Laplacian(grey, cv2.CV_64F, ksize=3).var())


def _thumb(grey: np.ndarray) -> np.ndarray:
    import cv2

    return cv2.resize(grey, _THUMB, interpolation=cv2.INTER_AREA).astype(np.float64)


def heading_at(track: Track, s_m: float, spacing_m: float) -> float:
    """Direction of travel at arc length ``s_m`` (module docstring), degrees clockwise from north in [0, 360)."""
    from urbanarena.world.geo import WGS84_GEOD, wrap_deg

    h = min(spacing_m / 2.0, 5.0)
    a, b = max(0.0, s_m - h), min(track.length_m, s_m + h)
    if b - a < 1e-6:
        a, b = max(0.0, track.length_m - 2 * h), track.length_m
    la, lo = track.position_at_arc(a)
    lb, lob = track.position_at_arc(b)
    az, _, _ = WGS84_GEOD.inv(lo, la, lob, lb)
    return wrap_deg(float(az))


@dataclass
class _Sample:
    index: int
    pts_s: float
    t_s: float
    s_m: float
    blur: float
    path: Path


def _check_overlap(info: VideoInfo, track: Track, start_s: float) -> None:
    if info.duration_s is None:
        return
    v0, v1 = start_s, start_s + info.duration_s
    t0, t1 = float(track.times_s[0]), float(track.times_s[-1])
    if v1 < t0 or v0 > t1:
        raise CityFormatError(
            info.path, f"video time {format_time(v0)} .. {format_time(v1)}",
            f"no overlap with the GPS track {track.path} ({format_time(t0)} .. {format_time(t1)}): a track of "
            f"another day or a wrong camera clock; --time-offset-s {t0 - v0:+.0f} would align the video's start "
            "with the track's")


def _sample(info: VideoInfo, track: Track, start_s: float, frames_dir: Path, *, spacing_m: float,
            blur_min_var: float, duplicate_max_diff: float, jpeg_quality: int,
            progress: Progress | None) -> tuple[list[_Sample], dict[str, Any]]:
    """Decode the video once, writing the sampled frames into ``frames_dir`` (module docstring)."""
    import cv2
    from PIL import Image

    av = _av()
    t0, t1 = float(track.times_s[0]), float(track.times_s[-1])
    stats = {"frames_decoded": 0, "before_track": 0, "after_track": 0, "skipped_blur": 0,
             "skipped_duplicate": 0, "skipped_no_frame": 0}
    samples: list[_Sample] = []
    last_thumb: np.ndarray | None = None
    s0: float | None = None
    k = 0  # current target
    why_missed: str | None = None  # what the current target's window has rejected so far
    total = max(info.n_frames, 1)
    label = f"sample video {info.path.name}"
    report(progress, label, 0, total)
    pts = 0.0
    try:
        with av.open(str(info.path)) as c:
            vs = c.streams.video[0]
            vs.thread_type = "AUTO"
            for i, frame in enumerate(c.decode(vs)):
                stats["frames_decoded"] += 1
                report(progress, label, min(i + 1, total), total)
                pts = float(frame.time) if frame.time is not None else i / float(vs.average_rate or 1)
                t = start_s + pts
                if t < t0:
                    stats["before_track"] += 1
                    continue
                if t > t1:
                    stats["after_track"] += 1
                    continue
                s = float(track.arc_at(t))
                if s0 is None:
                    s0 = s
                target = s0 + k * spacing_m
                if s < target - _ARC_EPS_M:
                    continue
                if s >= target + spacing_m / 2:  # the window passed: skip to the target this frame is in
                    k_new = int(math.floor((s - s0 + _ARC_EPS_M) / spacing_m))
                    for _ in range(k, k_new):
                        stats["skipped_" + (why_missed or "no_frame")] += 1
                        why_missed = None
                    k = k_new
                    target = s0 + k * spacing_m
                    if s >= target + spacing_m / 2:
                        continue
                rgb = frame.to_ndarray(format="rgb24")
                grey = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
                blur = _sharpness(grey)
                if blur_min_var > 0 and blur < blur_min_var:
                    why_missed = "blur"
                    continue
                th = _thumb(grey)
                if duplicate_max_diff > 0 and last_thumb is not None and \
                        float(np.mean(np.abs(th - last_thumb))) <= duplicate_max_diff:
                    why_missed = "duplicate"
                    continue
                p = frames_dir / f"{len(samples) + 1:06d}.jpg"
                Image.fromarray(rgb).save(p, quality=int(jpeg_quality))
                samples.append(_Sample(i, pts, t, s, blur, p))
                last_thumb = th
                why_missed = None
                k += 1
    except av.FFmpegError as e:
        raise CityFormatError(info.path, f"at {pts:.2f} s ({format_time(start_s + pts)})",
                              f"cannot decode the video (truncated or damaged?): {e}") from None
    report(progress, label, total, total)
    if info.n_frames and stats["frames_decoded"] < info.n_frames - 1:
        raise CityFormatError(info.path, f"at {pts:.2f} s ({format_time(start_s + pts)})",
                              f"truncated video: {stats['frames_decoded']} of the {info.n_frames} frames the "
                              "container announces could be decoded")
    if stats["frames_decoded"] == 0:
        raise CityFormatError(info.path, None, "no frame could be decoded (truncated or damaged video?)")
    if why_missed is not None:
        stats["skipped_" + why_missed] += 1
    return samples, stats


def import_video(
    video: str | Path,
    gpx: str | Path | None,
    out_dir: str | Path,
    *,
    spacing_m: float = DEFAULT_SPACING_M,
    time_offset_s: float = 0.0,
    video_start: str | None = None,
    blur_min_var: float = DEFAULT_BLUR_MIN_VAR,
    duplicate_max_diff: float = DEFAULT_DUPLICATE_MAX_DIFF,
    max_speed_mps: float = DEFAULT_MAX_SPEED_MPS,
    join_radius_m: float | None = None,
    max_gap_m: float | None = None,
    merge: bool = True,
    name: str | None = None,
    licence: str | None = None,
    author: str | None = None,
    redistributable: bool | None = None,
    jpeg_quality: int = 92,
    osm: str | Path | None = None,
    bbox: Sequence[float] | None = None,
    overwrite: bool = False,
    progress: Progress | None = None,
    finish: Callable[[City], City | None] | None = None,
) -> City:
    """Build a frames city from a 360-degree video and its GPX track and save it to ``out_dir`` (rules in the
    module docstring).

    Args:
        video: the video file (equirectangular, 2:1).
        gpx: the GPX 1.1 track (``None``: refused, embedded tracks are not read yet).
        out_dir: CITY_DIR to write (the saved city plus ``frames/``).
        spacing_m: sampling distance along the track, metres (> 0).
        time_offset_s: seconds added to the video's times to match the track's clock.
        video_start: the video's start time (ISO 8601; default: the container's ``creation_time``).
        blur_min_var: least variance of the Laplacian of a sampled frame (0: no blur check).
        duplicate_max_diff: frames within this mean grey difference of the last sample are duplicates (0: off).
        max_speed_mps: fastest plausible speed between track points (m/s).
        join_radius_m, max_gap_m, merge: the frames importer's join radius (default ``max(4, spacing_m / 2)``),
            largest gap between samples (default ``max(100, 4 * spacing_m)``) and merge rule.
        name: city name (default the video's file stem).
        licence, author: of the footage, recorded per node and in the city's licence/attribution.
        redistributable: whether the frames may be exported (default: the licence is open).
        jpeg_quality: of the written frames (1-95).
        osm, bbox: an OSM file (and its crop, ``(W, S, E, N)``) whose annotations are joined to the nodes
            (:func:`urbanarena.world.importers.osm_join.join_osm`).
        overwrite: replace an existing non-empty ``out_dir``.
        progress: hears the decoding (step ``sample video NAME``, :mod:`urbanarena.progress`).
        finish: called on the city last, before it is saved (e.g. to record a confirmed annotation).
    Returns:
        the city as saved (imagery root ``out_dir/frames``).
    Raises:
        CityFormatError: see the module docstring (naming the file and the time).
        FileExistsError: ``out_dir`` exists, is not empty and ``overwrite`` is false.
        ValueError: a non-positive spacing or an out-of-range option.
    """
    from urbanarena.hashing import file_sha256
    from urbanarena.world.city_io import save_city
    from urbanarena.world.importers.frames import DEFAULT_LICENCE, frames_city
    from urbanarena.world.importers.frames_inputs import _Entry, _Inputs

    if not (math.isfinite(spacing_m) and spacing_m > 0):
        raise ValueError(f"spacing_m must be > 0, got {spacing_m}")
    if not math.isfinite(time_offset_s):
        raise ValueError(f"time_offset_s must be finite, got {time_offset_s}")
    if not 1 <= int(jpeg_quality) <= 95:
        raise ValueError(f"jpeg_quality must be in 1..95, got {jpeg_quality}")
    video = Path(video)
    out = Path(out_dir).expanduser().resolve()
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not overwrite:
        raise FileExistsError(f"{out}: exists and is not empty (use --force to replace it)")
    info = probe_video(video)
    if gpx is None:
        raise CityFormatError(video, None, "no GPS track: give the GPX recorded with the video (--gpx TRACK.gpx)"
                              + _embedded_track_hint(info))
    if abs(info.width_px - 2 * info.height_px) > ASPECT_TOLERANCE_PX or info.height_px < 2:
        raise CityFormatError(video, None, f"frames are {info.width_px}x{info.height_px} px, not a 2:1 "
                              "equirectangular 360-degree video")
    track = read_gpx(gpx, max_speed_mps=max_speed_mps)
    if video_start is not None:
        try:
            start = parse_time(video_start)
        except ValueError:
            raise ValueError(f"video_start {video_start!r} is not an ISO 8601 time") from None
        start_source = "given"
    elif info.creation_time is not None:
        start, start_source = info.creation_time, "creation_time"
    else:
        raise CityFormatError(video, None, "the container has no creation_time: give the video's start time "
                              "(--video-start 2024-05-01T10:00:00Z)")
    start_s = start.timestamp() + float(time_offset_s)
    _check_overlap(info, track, start_s)
    lic = licence or DEFAULT_LICENCE
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.partial-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        frames_dir = tmp / FRAMES_DIR
        frames_dir.mkdir(parents=True)
        samples, stats = _sample(info, track, start_s, frames_dir, spacing_m=spacing_m, blur_min_var=blur_min_var,
                                 duplicate_max_diff=duplicate_max_diff, jpeg_quality=jpeg_quality,
                                 progress=progress)
        if len(samples) < 2:
            used = stats["frames_decoded"] - stats["before_track"] - stats["after_track"]
            raise CityFormatError(video, f"video time {format_time(start_s)}",
                                  f"{len(samples)} frame(s) sampled ({used} of {stats['frames_decoded']} frames "
                                  f"inside the track's time span {format_time(track.times_s[0])} .. "
                                  f"{format_time(track.times_s[-1])}; skipped: blur {stats['skipped_blur']}, "
                                  f"duplicate {stats['skipped_duplicate']}): a city needs at least 2")
        traj = video.stem or "video"
        entries = []
        for sm in samples:
            lat, lon = track.position_at_arc(sm.s_m)
            entries.append(_Entry(sm.path, traj, lat=lat, lon=lon, heading=heading_at(track, sm.s_m, spacing_m)))
        inp = _Inputs(frames_dir, {traj: entries}, ordered_by_csv=True)
        city = frames_city(inp, spacing_m=0.0, join_radius_m=join_radius_m or max(4.0, spacing_m / 2),
                           max_gap_m=max_gap_m or max(100.0, 4 * spacing_m), merge=merge,
                           name=name or traj, licence=lic, attribution=author,
                           redistributable=redistributable, verify_pixels=False)
        by_file = {sm.path.name: sm for sm in samples}
        for n, d in city.graph.nodes(data=True):
            sm = by_file[d["image"]]
            d.update(heading_source="track", captured_at=format_time(sm.t_s), video_time_s=round(sm.pts_s, 6),
                     frame_index=sm.index, track_m=round(sm.s_m - samples[0].s_m, 3), blur_var=round(sm.blur, 3),
                     licence=lic, author=author or "unknown")
        for t in city.meta.extra["trajectories"]:
            t["order"] = "video"
            t["heading_sources"] = {"track": t["nodes"]}
        city.meta.source = {
            "kind": KIND, "builder_version": VERSION,
            "video": str(video.resolve()), "video_sha256": file_sha256(video),
            "gpx": str(Path(gpx).resolve()), "gpx_sha256": file_sha256(gpx),
            "video_start": format_time(start.timestamp()), "video_start_source": start_source,
            "time_offset_s": float(time_offset_s), "files": sorted(by_file),
            "description": "frames sampled from an equirectangular 360-degree video along its GPS track",
        }
        city.meta.extra["video"] = {
            **stats, "samples": len(samples), "spacing_m": float(spacing_m), "blur_min_var": float(blur_min_var),
            "duplicate_max_diff": float(duplicate_max_diff), "size_px": [info.width_px, info.height_px],
            "frames_announced": info.n_frames, "duration_s": info.duration_s,
            "track": {"points": len(track.times_s), "length_m": round(track.length_m, 3),
                      "start": format_time(track.times_s[0]), "end": format_time(track.times_s[-1]),
                      "duplicate_times": track.duplicate_times},
            "track_m_sampled": round(samples[-1].s_m - samples[0].s_m, 3),
            "embedded_tracks": "not read (GoPro GPMF, CAMM)",
        }
        im = dict(city.meta.imagery or {})
        im.update(root=str(out / FRAMES_DIR), source=KIND,
                  notes="frames sampled from a 360-degree video; node heading_deg is the direction of travel "
                        "along the GPS track (camera front assumed forward)")
        city.meta.imagery = im
        if osm is not None:
            from urbanarena.world.importers.osm_join import join_osm

            city = join_osm(city, osm, bbox=bbox)
        if finish is not None:
            city = finish(city) or city
        save_city(city, tmp)
        if out.exists():
            old = out.parent / f".{out.name}.old-{os.getpid()}"
            os.replace(out, old)
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return city


__all__ = ["DEFAULT_BLUR_MIN_VAR", "DEFAULT_DUPLICATE_MAX_DIFF", "DEFAULT_SPACING_M", "FRAMES_DIR", "KIND",
           "VideoInfo", "heading_at", "import_video", "probe_video"]
