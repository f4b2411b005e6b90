"""LocalFrame keeps transformers built from the pipeline PROJ chose for its CRS pair (a further thread's first
call then skips the CRS lookup): they give the very same numbers as the CRS-built transformers, in any thread
(issue 27 item 5)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from pyproj import Transformer

from urbanarena.world.geo import LocalFrame


@pytest.mark.parametrize("lat0, lon0", [(60.17, 24.94), (22.28, 114.16), (-33.87, 151.21), (64.1, -179.9),
                                        (0.0, 0.0)])
def test_frame_matches_the_crs_transformers_exactly(lat0, lon0):
    frame = LocalFrame(lat0, lon0)
    proj = (f"+proj=aeqd +lat_0={float(lat0)!r} +lon_0={float(lon0)!r} "
            "+x_0=0 +y_0=0 +datum=WGS84 +units=m +no_defs")
    fwd = Transformer.from_crs("EPSG:4326", proj, always_xy=True)
    inv = Transformer.from_crs(proj, "EPSG:4326", always_xy=True)
    rng = np.random.default_rng(7)
    x, y = rng.uniform(-8000, 8000, 5000), rng.uniform(-8000, 8000, 5000)
    lon, lat = inv.transform(x, y)
    got_lat, got_lon = frame.to_latlon(x, y)
    assert np.array_equal(got_lat, lat) and np.array_equal(got_lon, lon)
    ex, ey = fwd.transform(lon, lat)
    got_x, got_y = frame.to_xy(lat, lon)
    assert np.array_equal(got_x, ex) and np.array_equal(got_y, ey)
    # scalars, as the env asks for one pose at a time, and from other threads
    want = frame.to_latlon(123.25, -45.5)
    assert want == pytest.approx((lat0, lon0), abs=0.01)
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(frame.to_latlon(123.25, -45.5))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [want] * 4
