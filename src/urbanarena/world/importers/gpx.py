"""GPS tracks from GPX 1.1 files (``city from-video --gpx TRACK.gpx``), read safely and checked.

Reading
-------
The file is parsed with the standard library's expat parser (no third-party
GPX library is a dependency). As ``defusedxml`` would, the reader refuses any
document type declaration (``<!DOCTYPE``), entity declaration or external
entity reference, so no entity is ever expanded or fetched. Element names are
matched by their local part (any namespace: GPX 1.0 and 1.1 files both read).

Every ``trkpt`` of every ``trk``/``trkseg`` is taken, in file order (segments
and tracks are concatenated: a track is one recording). ``rtept``/``wpt``
elements are ignored (routes and waypoints carry no recording times). Each
point needs ``lat``/``lon`` attributes (WGS84 degrees) and a ``<time>``
(ISO 8601; ``Z`` or an explicit offset; a time without a zone is taken as
UTC). ``<ele>`` is optional (metres).

Checks (:class:`~urbanarena.errors.CityFormatError` naming the file, the
point number and its time)
--------------------------------------------------------------------------
* not XML, a DTD or an entity, no ``trkpt`` at all, only one point;
* a point without a position, a position not finite or out of range, or the
  exact position (0, 0) (receivers write it when they have no fix);
* a point without a time or with an unreadable time;
* times going backwards (two points with the same time: the later one is
  dropped and counted in :attr:`Track.duplicate_times`);
* a **jump**: consecutive points whose geodesic distance divided by their
  time difference exceeds ``max_speed_mps`` (default
  :data:`DEFAULT_MAX_SPEED_MPS`, 60 m/s = 216 km/h), a lost fix or a
  teleport; the message gives both times, the distance and the speed.
"""

from __future__ import annotations

import math
import xml.parsers.expat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from urbanarena.errors import CityFormatError
from urbanarena.world.geo import WGS84_GEOD

#: consecutive track points faster than this apart are a jump (m/s)
DEFAULT_MAX_SPEED_MPS = 60.0


@dataclass
class Track:
    """A GPS track: points in time order.

    Attributes:
        path: the GPX file.
        times_s: POSIX seconds (UTC) per point, strictly increasing, shape ``(n,)``.
        lats, lons: WGS84 degrees, shape ``(n,)``.
        cum_m: geodesic arc length from the first point, metres, shape ``(n,)``.
        duplicate_times: points dropped because they repeat the previous point's time.
    """

    path: Path
    times_s: np.ndarray
    lats: np.ndarray
    lons: np.ndarray
    cum_m: np.ndarray
    duplicate_times: int = 0
    ele_m: list[float | None] = field(default_factory=list)

    @property
    def start(self) -> datetime:
        return datetime.fromtimestamp(float(self.times_s[0]), timezone.utc)

    @property
    def end(self) -> datetime:
        return datetime.fromtimestamp(float(self.times_s[-1]), timezone.utc)

    @property
    def length_m(self) -> float:
        return float(self.cum_m[-1])

    def arc_at(self, t_s: np.ndarray | float) -> np.ndarray:
        """Arc length (metres) at POSIX time(s) ``t_s``, linear in time between points (clipped to the ends)."""
        return np.interp(t_s, self.times_s, self.cum_m)

    def position_at_arc(self, s_m: float) -> tuple[float, float]:
        """(lat, lon) at arc length ``s_m`` along the track: on the geodesic of the segment holding it."""
        s = min(max(float(s_m), 0.0), self.length_m)
        k = int(np.searchsorted(self.cum_m, s, side="right")) - 1
        k = min(max(k, 0), len(self.cum_m) - 2)
        seg = self.cum_m[k + 1] - self.cum_m[k]
        if seg <= 0:
            return float(self.lats[k]), float(self.lons[k])
        az, _, _ = WGS84_GEOD.inv(self.lons[k], self.lats[k], self.lons[k + 1], self.lats[k + 1])
        lon, lat, _ = WGS84_GEOD.fwd(self.lons[k], self.lats[k], az, s - self.cum_m[k])
        return float(lat), float(lon)


def _iso(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def format_time(t_s: float) -> str:
    """POSIX seconds -> ISO 8601 UTC text (``...Z``), for messages and node attributes."""
    return _iso(datetime.fromtimestamp(float(t_s), timezone.utc))


def parse_time(text: str) -> datetime:
    """ISO 8601 time (``Z``, an offset, or none = UTC) -> aware datetime.

    Raises:
        ValueError: unreadable text.
    """
    s = text.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    dt = datetime.fromisoformat(s)
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=timezone.utc)


class _Reader:
    """expat handlers collecting track points; refuses DTDs and entities."""

    def __init__(self, path: Path):
        self.path = path
        self.points: list[dict] = []
        self._in_trkpt: dict | None = None
        self._text: list[str] | None = None
        self._line = 0

    def _refuse(self, *_args) -> None:
        raise CityFormatError(self.path, f"line {self._p.CurrentLineNumber}",
                              "the GPX holds a DOCTYPE or entity declaration: refused (entities are never expanded)")

    def parse(self, data: bytes) -> None:
        p = xml.parsers.expat.ParserCreate(namespace_separator=" ")
        self._p = p
        p.StartDoctypeDeclHandler = self._refuse
        p.EntityDeclHandler = self._refuse
        p.UnparsedEntityDeclHandler = self._refuse
        p.ExternalEntityRefHandler = self._refuse
        p.SetParamEntityParsing(xml.parsers.expat.XML_PARAM_ENTITY_PARSING_NEVER)
        p.StartElementHandler = self._start
        p.EndElementHandler = self._end
        p.CharacterDataHandler = self._chars
        try:
            p.Parse(data, True)
        except xml.parsers.expat.ExpatError as e:
            raise CityFormatError(self.path, f"line {e.lineno}", f"not a well-formed GPX (XML) file: "
                                  f"{xml.parsers.expat.ErrorString(e.code)}") from None

    def _start(self, name: str, attrs: dict) -> None:
        local = name.rsplit(" ", 1)[-1]
        if local == "trkpt":
            self._in_trkpt = {"lat": attrs.get("lat"), "lon": attrs.get("lon"), "time": None, "ele": None,
                              "line": self._p.CurrentLineNumber}
        elif self._in_trkpt is not None and local in ("time", "ele"):
            self._text = []

    def _chars(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)

    def _end(self, name: str) -> None:
        local = name.rsplit(" ", 1)[-1]
        if self._in_trkpt is None:
            return
        if local in ("time", "ele") and self._text is not None:
            self._in_trkpt[local] = "".join(self._text).strip()
            self._text = None
        elif local == "trkpt":
            self.points.append(self._in_trkpt)
            self._in_trkpt = None


def read_gpx(path: str | Path, *, max_speed_mps: float = DEFAULT_MAX_SPEED_MPS) -> Track:
    """Read and check a GPX track (rules in the module docstring).

    Args:
        path: the ``.gpx`` file.
        max_speed_mps: fastest plausible speed between consecutive points (m/s, > 0).
    Returns:
        the :class:`Track` (at least 2 points, strictly increasing times).
    Raises:
        CityFormatError: naming the file and the point (number, line and time) of the first problem.
        ValueError: ``max_speed_mps <= 0``.
    """
    if not (math.isfinite(max_speed_mps) and max_speed_mps > 0):
        raise ValueError(f"max_speed_mps must be > 0, got {max_speed_mps}")
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CityFormatError(path, None, "GPX track not found") from None
    except OSError as e:
        raise CityFormatError(path, None, f"cannot read the GPX track: {e.strerror or e}") from None
    r = _Reader(path)
    r.parse(data)
    if not r.points:
        raise CityFormatError(path, None, "no track points (<trkpt>) in the GPX file")
    times: list[float] = []
    lats: list[float] = []
    lons: list[float] = []
    eles: list[float | None] = []
    dup = 0
    for k, pt in enumerate(r.points, start=1):
        rec = f"point {k} (line {pt['line']})"
        try:
            lat, lon = float(pt["lat"]), float(pt["lon"])
        except (TypeError, ValueError):
            raise CityFormatError(path, rec, f"no valid lat/lon attributes ({pt['lat']!r}, {pt['lon']!r})") from None
        if not (math.isfinite(lat) and math.isfinite(lon)) or abs(lat) > 90 or abs(lon) > 180:
            raise CityFormatError(path, rec, f"position ({lat}, {lon}) is not a valid WGS84 position")
        if lat == 0.0 and lon == 0.0:
            raise CityFormatError(path, rec, "position (0, 0): the receiver had no fix")
        if not pt["time"]:
            raise CityFormatError(path, rec, "no <time>: a track point needs its recording time")
        try:
            t = parse_time(pt["time"]).timestamp()
        except ValueError:
            raise CityFormatError(path, rec, f"unreadable <time> {pt['time']!r} (expected ISO 8601)") from None
        rec = f"{rec} at {format_time(t)}"
        if times and t < times[-1]:
            raise CityFormatError(path, rec, f"time goes backwards (previous point at {format_time(times[-1])})")
        if times and t == times[-1]:
            dup += 1
            continue
        ele = None
        if pt["ele"]:
            try:
                ele = float(pt["ele"])
            except ValueError:
                ele = None
        times.append(t)
        lats.append(lat)
        lons.append(lon)
        eles.append(ele)
    if len(times) < 2:
        raise CityFormatError(path, f"point 1 at {format_time(times[0])}",
                              f"{len(times)} track point with a distinct time: a track needs at least 2")
    ts, la, lo = np.array(times), np.array(lats), np.array(lons)
    _, _, d = WGS84_GEOD.inv(lo[:-1], la[:-1], lo[1:], la[1:])
    d = np.atleast_1d(d)
    speed = d / np.diff(ts)
    bad = np.nonzero(speed > max_speed_mps)[0]
    if len(bad):
        k = int(bad[0])
        raise CityFormatError(
            path, f"points {k + 1}-{k + 2} at {format_time(ts[k])} .. {format_time(ts[k + 1])}",
            f"jump in the track: {d[k]:.1f} m in {ts[k + 1] - ts[k]:g} s ({speed[k]:.1f} m/s, more than "
            f"{max_speed_mps:g} m/s): a lost fix or a glitch; cut it out of the GPX or raise the maximum speed")
    cum = np.concatenate([[0.0], np.cumsum(d)])
    return Track(path, ts, la, lo, cum, dup, eles)


__all__ = ["DEFAULT_MAX_SPEED_MPS", "Track", "format_time", "parse_time", "read_gpx"]
