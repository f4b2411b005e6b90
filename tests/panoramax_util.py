"""The Panoramax test scene: synthetic sequences along the hand-written grid ``tests/data/panoramax_grid.osm``,
the real GeoVisio frames, and bad pictures.

Positions are laid out in metres around the grid's origin (the GPS fix of GeoVisio ``1.jpg``) with pyproj's
``Geod.fwd`` (independent of urbanarena's local frame). Synthetic sequences run along the six grid lines,
one picture every 3 m with a deterministic lateral GPS error of +-0.8 m (alternating), the camera heading
given in ``view:azimuth`` (the north-south sequences' cameras are turned 30 degrees right of the course).
"""

from __future__ import annotations

import math
from pathlib import Path

from pyproj import Geod

from panoramax_fake import FakePicture, exif_fix, heading_pano, jpeg_bytes

GEOD = Geod(ellps="WGS84")
LAT0, LON0 = 49.0068896, 1.9191854
DATA = Path(__file__).parent / "data"
GRID_OSM = DATA / "panoramax_grid.osm"
STEP_M = 3.0
NOISE_M = 0.8
#: (x, y) of the grid's vertices and their OSM degree
VERTICES = {(-50, -25): 2, (0, -25): 3, (50, -25): 2, (-50, 25): 3, (0, 25): 4, (50, 25): 3,
            (-50, 75): 2, (0, 75): 3, (50, 75): 2}
REAL = ("1.jpg", "2.jpg", "3.jpg", "4.jpg")
REAL_AUTHOR = "Adrien Pavie (GeoVisio test suite)"


def ll(e: float, n: float) -> tuple[float, float]:
    """(lat, lon) of the point ``e`` m east and ``n`` m north of the origin (geodesic)."""
    d = math.hypot(e, n)
    if d == 0:
        return LAT0, LON0
    lon, lat, _ = GEOD.fwd(LON0, LAT0, math.degrees(math.atan2(e, n)), d)
    return lat, lon


def bbox(margin_w: float = -70, margin_s: float = -45, margin_e: float = 120, margin_n: float = 95):
    s, w = ll(margin_w, margin_s)
    n, e = ll(margin_e, margin_n)
    return (w, s, e, n)


def _line(seq: str, pts: list[tuple[float, float]], course_deg: float, camera_offset_deg: float,
          t0: int, width: int = 128, licence: str = "CC-BY-SA-4.0") -> list[FakePicture]:
    out = []
    ux, uy = math.sin(math.radians(course_deg)), math.cos(math.radians(course_deg))
    for k, (x, y) in enumerate(pts):
        lat_err = NOISE_M if k % 2 == 0 else -NOISE_M  # across the course: (uy, -ux) is to the right
        lat, lon = ll(x + uy * lat_err, y - ux * lat_err)
        h = (course_deg + camera_offset_deg) % 360
        out.append(FakePicture(f"{seq}-{k:03d}", seq, lat, lon, h, f"2024-05-01T10:{t0 + k // 60:02d}:{k % 60:02d}Z",
                               jpeg_bytes(heading_pano(h, width, seed=k)), licence=licence))
    return out


def _steps(a: float, b: float) -> list[float]:
    n = int(abs(b - a) // STEP_M)
    sgn = 1 if b > a else -1
    vals = [a + sgn * STEP_M * k for k in range(n + 1)]
    if abs(vals[-1] - b) > 1e-9:
        vals.append(b)
    return vals


def synthetic_sequences(skip_gare=(-3.0, 10.0)) -> list[FakePicture]:
    """Six sequences along the grid lines (module docstring). ``Allée de la Gare`` (x = 0) leaves
    ``skip_gare`` (y range) to the real frames; ``Rue du Nord`` is driven westwards."""
    pics: list[FakePicture] = []
    t = 0
    for y, name in ((-25, "sud"), (25, "centre")):
        pics += _line(f"seq-{name}", [(x, y) for x in _steps(-50, 50)], 90.0, 0.0, t)
        t += 2
    pics += _line("seq-nord", [(x, 75) for x in _steps(50, -50)], 270.0, 0.0, t)
    t += 2
    for x, name in ((-50, "ouest"), (50, "est")):
        pics += _line(f"seq-{name}", [(x, y) for y in _steps(-25, 75)], 0.0, 30.0, t)
        t += 2
    ys = [y for y in _steps(-25, 75) if not (skip_gare[0] < y < skip_gare[1])]
    pics += _line("seq-gare", [(0, y) for y in ys], 0.0, 30.0, t)
    return pics


def real_sequence(shared: Path) -> list[FakePicture]:
    """GeoVisio 1..4.jpg as one sequence: EXIF position, GPSImgDirection as view:azimuth, MIT licence."""
    d = shared / "data" / "panoramas" / "geovisio"
    out = []
    for f in REAL:
        lat, lon, heading, iso = exif_fix(d / f)
        out.append(FakePicture(f"geovisio-{f[0]}", "seq-geovisio", lat, lon, heading, iso, (d / f).read_bytes(),
                               licence="MIT", author=REAL_AUTHOR, size_px=(5760, 2880)))
    return out


def bad_pictures(shared: Path) -> list[FakePicture]:
    """The bad inputs: NaN GPS (``bad/invalid_exif.jpg``, whose EXIF GPS is NaN), no heading
    (``bad/e1_without_exif.jpg``, placed on Rue du Sud), a 300 x 200 picture on Rue du Centre, and a
    three-picture sequence 50 m east of the grid (``seq-far``)."""
    b = shared / "data" / "panoramas" / "bad"
    lat, lon = ll(-20, -25)
    lat2, lon2 = ll(-20, 25)
    from PIL import Image
    import io
    import numpy as np

    buf = io.BytesIO()
    Image.fromarray(np.full((200, 300, 3), 90, np.uint8)).save(buf, "JPEG")
    pics = [
        FakePicture("bad-nan-gps", "seq-bad", math.nan, math.nan, 10.0, "2024-05-02T09:00:00Z",
                    (b / "invalid_exif.jpg").read_bytes()),
        FakePicture("bad-no-heading", "seq-bad", lat, lon, None, "2024-05-02T09:00:01Z",
                    (b / "e1_without_exif.jpg").read_bytes()),
        FakePicture("bad-not-2to1", "seq-bad", lat2, lon2, 90.0, "2024-05-02T09:00:02Z", buf.getvalue()),
    ]
    for k in range(3):
        la, lo = ll(100, 3.0 * k)
        pics.append(FakePicture(f"far-{k}", "seq-far", la, lo, 0.0, f"2024-05-03T09:00:0{k}Z",
                                jpeg_bytes(heading_pano(0.0, 128))))
    return pics


def scene(shared: Path) -> list[FakePicture]:
    return synthetic_sequences() + real_sequence(shared) + bad_pictures(shared)
