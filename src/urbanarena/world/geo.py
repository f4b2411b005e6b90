"""Geodesy and angle helpers.

Conventions: angles in degrees; headings and azimuths clockwise from true north
in [0, 360). Positions are WGS84 (EPSG:4326) lat/lon; local geometry is in a
per-city east-north frame in metres (x east, y north).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from pyproj import Geod, Transformer

WGS84_GEOD = Geod(ellps="WGS84")


def wrap_deg(angle_deg: float) -> float:
    """Wrap an angle into [0, 360)."""
    a = math.fmod(float(angle_deg), 360.0)
    if a < 0:
        a += 360.0
    if a >= 360.0:  # fmod of tiny negatives can round up to 360
        a = 0.0
    return a


def angle_diff_deg(a_deg: float, b_deg: float) -> float:
    """Smallest absolute difference between two bearings, in [0, 180]."""
    d = abs(wrap_deg(a_deg) - wrap_deg(b_deg))
    return 360.0 - d if d > 180.0 else d


def signed_turn_deg(from_deg: float, to_deg: float) -> float:
    """Signed turn from one bearing to another in (-180, 180]; positive = clockwise (right)."""
    d = wrap_deg(to_deg - from_deg)
    return d - 360.0 if d > 180.0 else d


def geodesic_distance_m(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Geodesic distance on the WGS84 ellipsoid in metres (pyproj ``Geod.inv``)."""
    _, _, dist = WGS84_GEOD.inv(lon1, lat1, lon2, lat2)
    return float(dist)


def geodesic_azimuth_deg(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Forward azimuth from point 1 to point 2, degrees clockwise from true north in [0, 360)."""
    az, _, _ = WGS84_GEOD.inv(lon1, lat1, lon2, lat2)
    return wrap_deg(az)


def mercator_to_metres(value_mercator: float, lat_deg: float) -> float:
    """Convert a Web Mercator (EPSG:3857) length at latitude ``lat_deg`` to metres.

    EPSG:3857 scales lengths by ``1 / cos(lat)`` (spherical Mercator scale
    factor), so true metres = value x cos(lat). Good to ~0.5 % against the
    ellipsoid over street-scale distances.
    """
    return float(value_mercator) * math.cos(math.radians(lat_deg))


@lru_cache(maxsize=4)
def _to_mercator() -> Transformer:
    return Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)


@lru_cache(maxsize=4)
def _from_mercator() -> Transformer:
    return Transformer.from_crs("EPSG:3857", "EPSG:4326", always_xy=True)


def lonlat_to_mercator(lon, lat):
    """WGS84 lon/lat (degrees) -> Web Mercator x, y (EPSG:3857 units). Arrays allowed."""
    return _to_mercator().transform(lon, lat)


def mercator_to_lonlat(x, y):
    """Web Mercator x, y (EPSG:3857 units) -> WGS84 lon, lat (degrees). Arrays allowed."""
    return _from_mercator().transform(x, y)


class LocalFrame:
    """A city's local east-north frame in metres.

    Implemented as the azimuthal equidistant projection (``+proj=aeqd``)
    centred on the origin, on the WGS84 datum: x east, y north, metres. Within a
    few km of the origin it agrees with the tangent-plane ENU frame to well
    under a centimetre per 100 m, and distances from the origin are exact.

    Args:
        origin_lat: origin latitude, degrees WGS84.
        origin_lon: origin longitude, degrees WGS84.
    """

    def __init__(self, origin_lat: float, origin_lon: float):
        self.origin_lat = float(origin_lat)
        self.origin_lon = float(origin_lon)
        proj = (
            f"+proj=aeqd +lat_0={self.origin_lat!r} +lon_0={self.origin_lon!r} "
            "+x_0=0 +y_0=0 +datum=WGS84 +units=m +no_defs"
        )
        # PROJ picks the operation once (a CRS lookup in its database, ~10 ms); the transformers kept are
        # built from that operation's pipeline text, the same steps, so each further thread's first call
        # (pyproj builds one transformer per thread) takes ~0.3 ms instead of repeating the lookup
        self._fwd = Transformer.from_pipeline(Transformer.from_crs("EPSG:4326", proj, always_xy=True).definition)
        self._inv = Transformer.from_pipeline(Transformer.from_crs(proj, "EPSG:4326", always_xy=True).definition)

    def to_xy(self, lat, lon):
        """WGS84 lat/lon (degrees, scalars or arrays) -> (x_m, y_m)."""
        x, y = self._fwd.transform(lon, lat)
        return x, y

    def to_latlon(self, x_m, y_m):
        """Local (x_m, y_m) -> WGS84 (lat, lon) in degrees."""
        lon, lat = self._inv.transform(x_m, y_m)
        return lat, lon

    @classmethod
    def centred_on(cls, lats: np.ndarray, lons: np.ndarray) -> "LocalFrame":
        """Frame whose origin is the centre of the bounding box of the given points."""
        return cls((float(np.min(lats)) + float(np.max(lats))) / 2, (float(np.min(lons)) + float(np.max(lons))) / 2)
