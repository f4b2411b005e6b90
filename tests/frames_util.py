"""Synthetic geotagged 360-degree frames for the frames-importer tests.

Frames are tiny 2:1 JPEGs whose EXIF is built with Pillow's ``Image.Exif``
API. Positions are laid out in metres around a centre point with pyproj's
``Geod.fwd`` (independent of urbanarena's local frame), then written as EXIF
degrees/minutes/seconds with exact rationals; :func:`write_frame` returns the
position the EXIF encodes exactly, so tests compare against the file's truth.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from fractions import Fraction
from pathlib import Path

from PIL import ExifTags, Image
from PIL.TiffImagePlugin import IFDRational
from pyproj import Geod

GEOD = Geod(ellps="WGS84")
LAT0, LON0 = 48.8566, 2.3522  # centre of the synthetic scenes
SEC_DEN = 1_000_000  # 1e-6 arc-second resolution (about 0.03 mm)


@dataclass(frozen=True)
class Written:
    """What a synthetic frame's EXIF encodes exactly."""

    path: Path
    lat: float | None
    lon: float | None


def offset(east_m: float, north_m: float, lat0: float = LAT0, lon0: float = LON0) -> tuple[float, float]:
    """(lat, lon) reached from (lat0, lon0) by a geodesic of length |(e, n)| at azimuth atan2(e, n)."""
    d = math.hypot(east_m, north_m)
    if d == 0:
        return lat0, lon0
    az = math.degrees(math.atan2(east_m, north_m))
    lon, lat, _ = GEOD.fwd(lon0, lat0, az, d)
    return lat, lon


def _dms(value: float) -> tuple[tuple[IFDRational, IFDRational, IFDRational], float]:
    """|value| as EXIF (deg, min, sec) rationals, and the exact |value| they encode."""
    v = abs(value)
    deg = int(v)
    minutes_f = (v - deg) * 60
    minutes = int(minutes_f)
    sec = Fraction(round((minutes_f - minutes) * 60 * SEC_DEN), SEC_DEN)
    exact = deg + Fraction(minutes, 60) + sec / 3600
    rationals = (IFDRational(deg, 1), IFDRational(minutes, 1), IFDRational(sec.numerator, sec.denominator))
    return rationals, float(exact)


def write_frame(
    path: Path,
    lat: float | None = None,
    lon: float | None = None,
    heading_deg: float | None = None,
    heading_ref: str = "T",
    taken: datetime | None = None,
    size: tuple[int, int] = (64, 32),
    exif: bool = True,
    raw_gps: dict[int, object] | None = None,
    colour: tuple[int, int, int] = (90, 120, 150),
) -> Written:
    """Write a small JPEG frame with optional GPS/direction/time EXIF.

    ``raw_gps`` (GPS IFD tag -> value) is written as is, for malformed-EXIF tests.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    im = Image.new("RGB", size, colour)
    if not exif:
        im.save(path, "JPEG", quality=80)
        return Written(path, None, None)
    ex = Image.Exif()
    ex[ExifTags.Base.Make] = "urbanarena-test"
    gps = ex.get_ifd(ExifTags.IFD.GPSInfo)
    exact_lat = exact_lon = None
    if lat is not None and lon is not None:
        r_lat, a_lat = _dms(lat)
        r_lon, a_lon = _dms(lon)
        gps[ExifTags.GPS.GPSLatitudeRef] = "N" if lat >= 0 else "S"
        gps[ExifTags.GPS.GPSLatitude] = r_lat
        gps[ExifTags.GPS.GPSLongitudeRef] = "E" if lon >= 0 else "W"
        gps[ExifTags.GPS.GPSLongitude] = r_lon
        exact_lat = a_lat if lat >= 0 else -a_lat
        exact_lon = a_lon if lon >= 0 else -a_lon
    if heading_deg is not None:
        gps[ExifTags.GPS.GPSImgDirectionRef] = heading_ref
        gps[ExifTags.GPS.GPSImgDirection] = IFDRational(round(heading_deg * 100), 100)
    for tag, value in (raw_gps or {}).items():
        gps[tag] = value
    if taken is not None:
        ex.get_ifd(ExifTags.IFD.Exif)[ExifTags.Base.DateTimeOriginal] = taken.strftime("%Y:%m:%d %H:%M:%S")
    im.save(path, "JPEG", quality=80, exif=ex)
    return Written(path, exact_lat, exact_lon)


def write_line(
    folder: Path,
    points_m: list[tuple[float, float]],
    headings: list[float | None] | None = None,
    prefix: str = "f",
    start: datetime | None = datetime(2024, 5, 1, 10, 0, 0),
) -> list[Written]:
    """A trajectory: one frame per local (east_m, north_m) point, named ``<prefix>NN.jpg``, 2 s apart."""
    out = []
    for k, (e, n) in enumerate(points_m):
        lat, lon = offset(e, n)
        h = headings[k] if headings else None
        t = start + timedelta(seconds=2 * k) if start else None
        out.append(write_frame(folder / f"{prefix}{k:02d}.jpg", lat, lon, h, taken=t))
    return out


def write_csv(path: Path, rows: list[list[object]], header: list[str] | None = None) -> Path:
    """A CSV manifest (default header ``filename, lat, lon, heading``)."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header or ["filename", "lat", "lon", "heading"])
        w.writerows(rows)
    return path
