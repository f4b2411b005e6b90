"""Reading a frame's EXIF for the frames importer: GPS position, altitude, direction, time and image size (Pillow)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from urbanarena.errors import CityFormatError
from urbanarena.world.geo import wrap_deg


IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")


ALLOWED_FORMATS = ("JPEG", "MPO", "PNG", "WEBP")


_EXIF_IFD = 0x8769


_GPS_IFD = 0x8825


_TAG_DATETIME_ORIGINAL = 0x9003


_TAG_SUBSEC_ORIGINAL = 0x9291


_GPS_LAT_REF, _GPS_LAT, _GPS_LON_REF, _GPS_LON = 1, 2, 3, 4


_GPS_IMG_DIR_REF, _GPS_IMG_DIR = 16, 17


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
