"""Synthetic equirectangular 360-degree videos and GPX tracks for the ``city from-video`` tests.

Frames are the real GeoVisio panorama ``1.jpg`` (``../shared/data/panoramas/geovisio``, MIT) reduced to 256 x 128
and shifted in yaw (``np.roll`` of the columns: a turn of the camera about its vertical axis, 7 px = 9.84 degrees
per frame) so that consecutive frames differ; without the shared folder a seeded random texture stands in (the
sampling tests do not depend on the picture's content). Videos are H.264 MP4 encoded with PyAV, with the
container's ``creation_time``. Track positions are laid out in metres with pyproj's ``Geod.fwd`` around the GPS fix
of ``1.jpg`` (the origin of ``tests/data/panoramax_grid.osm``), independently of urbanarena's local frame.
"""

from __future__ import annotations

import functools
import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
from pyproj import Geod

GEOD = Geod(ellps="WGS84")
LAT0, LON0 = 49.0068896, 1.9191854
T0 = datetime(2021, 7, 29, 9, 16, 40, tzinfo=timezone.utc)
REPO = Path(__file__).resolve().parents[1]
REAL_FRAME = REPO.parent / "shared" / "data" / "panoramas" / "geovisio" / "1.jpg"
W, H = 256, 128


def iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def offset(east_m: float, north_m: float) -> tuple[float, float]:
    """(lat, lon) at (east, north) metres from the origin along a geodesic."""
    d = math.hypot(east_m, north_m)
    if d == 0:
        return LAT0, LON0
    lon, lat, _ = GEOD.fwd(LON0, LAT0, math.degrees(math.atan2(east_m, north_m)), d)
    return lat, lon


@functools.lru_cache(maxsize=4)
def base_frame(w: int = W, h: int = H) -> np.ndarray:
    """The real panorama reduced to ``w x h`` RGB, or a seeded random texture when the shared data are absent."""
    if REAL_FRAME.is_file():
        from PIL import Image

        with Image.open(REAL_FRAME) as im:
            im.draft("RGB", (w * 4, h * 4))  # decode at a reduced scale: the file is 5760 x 2880
            return np.asarray(im.convert("RGB").resize((w, h)))
    rng = np.random.default_rng(0)
    small = rng.integers(0, 256, (h // 4, w // 4, 3), dtype=np.uint8)
    return np.kron(small, np.ones((4, 4, 1), dtype=np.uint8))


def frame(i: int, w: int = W, h: int = H) -> np.ndarray:
    """Frame ``i``: the base frame turned by ``7 i`` pixels."""
    return np.ascontiguousarray(np.roll(base_frame(w, h), 7 * i, axis=1))


def write_video(path: Path, frames, fps: int = 10, start: datetime | None = T0) -> Path:
    """Encode RGB ``frames`` (arrays of one size) as an H.264 MP4 with ``creation_time`` = ``start``."""
    import av

    with av.open(str(path), "w") as c:
        if start is not None:
            c.metadata["creation_time"] = iso(start)
        s = c.add_stream("libx264", rate=fps)
        first = None
        for a in frames:
            if first is None:
                first = a
                s.height, s.width = a.shape[:2]
                s.pix_fmt = "yuv420p"
            for p in s.encode(av.VideoFrame.from_ndarray(a, format="rgb24")):
                c.mux(p)
        for p in s.encode():
            c.mux(p)
    return path


def write_gpx(path: Path, points, extra: str = "") -> Path:
    """GPX 1.1 with one track segment of ``points`` ``(lat, lon, time)`` (time a datetime or text)."""
    rows = "".join(f'<trkpt lat="{la:.9f}" lon="{lo:.9f}"><time>{t if isinstance(t, str) else iso(t)}</time></trkpt>\n'
                   for la, lo, t in points)
    path.write_text(f'<?xml version="1.0" encoding="UTF-8"?>\n{extra}<gpx version="1.1" creator="urbanarena tests" '
                    f'xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg>\n{rows}</trkseg></trk></gpx>\n')
    return path


def polyline_track(corners, speed_mps: float, step_m: float = 10.0, t0: datetime = T0):
    """Track points every ``step_m`` along the straight legs between ``corners`` (east, north metres) walked at
    ``speed_mps``; returns ``(points, duration_s)``."""
    pts, t = [], 0.0
    for (a, b), (c, d) in zip(corners, corners[1:]):
        L = math.hypot(c - a, d - b)
        n = max(1, int(round(L / step_m)))
        for i in range(n):
            pts.append((*offset(a + (c - a) * i / n, b + (d - b) * i / n), t0 + timedelta(seconds=t + L * i / n / speed_mps)))
        t += L / speed_mps
    pts.append((*offset(*corners[-1]), t0 + timedelta(seconds=t)))
    return pts, t
