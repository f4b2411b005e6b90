"""Frames importer on real 360-degree photographs from ``../shared/data/panoramas``.

geovisio/1..4.jpg: GoPro MAX equirectangular frames (5760x2880, MIT) taken 2 s
apart. Expected values are computed here from the files' EXIF, read with an
independent DMS conversion, and pyproj geodesics.
"""

from __future__ import annotations

import json
import random

import networkx as nx
import pytest
from PIL import Image
from pyproj import Geod

from urbanarena.errors import CityFormatError
from urbanarena.world.city_io import load_city, save_city
from urbanarena.world.imagery import ImagerySource, centre_bearing_deg
from urbanarena.world.importers.frames import DEFAULT_LICENCE, import_city, import_frames, source_files

pytestmark = pytest.mark.shared
GEOD = Geod(ellps="WGS84")


@pytest.fixture(scope="module")
def pano(shared_dir):
    d = shared_dir / "data" / "panoramas"
    if not (d / "geovisio" / "1.jpg").is_file():
        pytest.skip("../shared/data/panoramas not found: real data absent")
    return d


def _exif_truth(path):
    """(lat, lon, GPSImgDirection, DateTimeOriginal) straight from the GPS/EXIF IFDs."""
    ex = Image.open(path).getexif()
    gps = ex.get_ifd(0x8825)
    lat = sum(float(x) / 60**i for i, x in enumerate(gps[2])) * (-1 if gps[1] == "S" else 1)
    lon = sum(float(x) / 60**i for i, x in enumerate(gps[4])) * (-1 if gps[3] == "W" else 1)
    direction = float(gps[17]) if 17 in gps else None
    return lat, lon, direction, ex.get_ifd(0x8769)[0x9003]


def test_geovisio_trajectory(pano):
    files = [pano / "geovisio" / f"{i}.jpg" for i in (1, 2, 3, 4)]
    shuffled = files[:]
    random.Random(3).shuffle(shuffled)
    city = import_frames(shuffled, licence="MIT", attribution="geovisio test photos (c) 2022 Adrien Pavie")
    g = city.graph
    truth = {f.name: _exif_truth(f) for f in files}
    # capture order = EXIF DateTimeOriginal (11:16:42, :44, :46, :48), whatever the argument order
    assert sorted(truth.values(), key=lambda t: t[3]) == [truth[f"{i}.jpg"] for i in (1, 2, 3, 4)]
    assert list(g.nodes) == ["1.jpg", "2.jpg", "3.jpg", "4.jpg"]
    assert [g.nodes[n]["frame_index"] for n in g] == [0, 1, 2, 3]
    assert g.number_of_edges() == 6 and nx.is_strongly_connected(g)
    for n, (lat, lon, direction, _) in truth.items():
        d = g.nodes[n]
        assert d["lat"] == pytest.approx(lat, abs=1e-12) and d["lon"] == pytest.approx(lon, abs=1e-12)
        assert d["heading_deg"] == pytest.approx(direction, abs=1e-9)  # 349.06, 11.19, 1.47, 350.44
        assert d["heading_source"] == "exif"
    # edges: pyproj geodesic azimuth/length between consecutive fixes, both ways, tagged with the trajectory
    total = 0.0
    for a, b in zip(files, files[1:]):
        la, oa, *_ = truth[a.name]
        lb, ob, *_ = truth[b.name]
        az, baz, dist = GEOD.inv(oa, la, ob, lb)
        e = g.edges[a.name, b.name]
        assert e["length_m"] == pytest.approx(dist, abs=1e-9)
        assert e["azimuth_deg"] == pytest.approx(az % 360, abs=1e-9)
        assert g.edges[b.name, a.name]["azimuth_deg"] == pytest.approx(baz % 360, abs=1e-9)
        assert e["trajectory_id"] == g.edges[b.name, a.name]["trajectory_id"] == "geovisio"
        total += dist
    # about 7 m, nearly straight: the path is within 0.5 % of the first-to-last geodesic
    (l1, o1, *_), (l4, o4, *_) = truth["1.jpg"], truth["4.jpg"]
    direct = GEOD.inv(o1, l1, o4, l4)[2]
    assert 7.0 < direct < 7.5
    assert total == pytest.approx(direct, rel=5e-3)
    report = city.meta.extra["trajectories"]
    assert len(report) == 1 and report[0]["length_m"] == pytest.approx(total, abs=1e-9)
    assert report[0]["order"] == "exif_time" and city.meta.extra["joins"] == []
    # imagery: the frames themselves, MIT, centre column = GPSImgDirection
    src = ImagerySource.from_dict(city.meta.imagery)
    assert src.source == "frames" and src.licence == "MIT" and src.redistributable
    for f in files:
        assert src.path_for(f.name) == f.resolve()
        assert centre_bearing_deg(city, f.name) == pytest.approx(truth[f.name][2], abs=1e-9)


def test_geovisio_saved_and_reloaded(pano, tmp_path):
    files = [pano / "geovisio" / f"{i}.jpg" for i in (1, 2, 3, 4)]
    city = import_frames(files)
    assert city.meta.licence == DEFAULT_LICENCE and city.meta.imagery["licence"] == DEFAULT_LICENCE
    assert city.meta.imagery["redistributable"] is False
    back = load_city(save_city(city, tmp_path / "c"))
    assert back.content_hash == city.content_hash
    assert back.meta.imagery == json.loads(json.dumps(city.meta.imagery))
    assert back.meta.extra["trajectories"][0]["nodes"] == 4


def test_geovisio_folder_with_stray_photosphere_is_refused(pano):
    # the folder also holds pixel3_photosphere.jpg, taken a year earlier 322 km away: not one trajectory
    with pytest.raises(CityFormatError) as ei:
        import_city(pano / "geovisio")
    assert ei.value.path.endswith("1.jpg")
    assert "pixel3_photosphere.jpg" in ei.value.reason and "gap" in ei.value.reason
    lat_p, lon_p, direction_p, _ = _exif_truth(pano / "geovisio" / "pixel3_photosphere.jpg")
    lat_1, lon_1, _, _ = _exif_truth(pano / "geovisio" / "1.jpg")
    gap_m = GEOD.inv(lon_p, lat_p, lon_1, lat_1)[2]
    assert f"{gap_m:.1f} m" in ei.value.reason and 300e3 < gap_m < 350e3
    assert direction_p is None
    assert source_files(pano / "geovisio")[0].name == "1.jpg"  # natural order: 1..4, then pixel3
    assert [p.name for p in source_files(pano / "geovisio")] == ["1.jpg", "2.jpg", "3.jpg", "4.jpg", "pixel3_photosphere.jpg"]


def test_single_photosphere_is_refused(pano):
    """Decision: a lone frame (here the Pixel 3 photosphere, 2:1 with GPS but no
    GPSImgDirection) is an error, not a one-node city: it has no course to
    orient it and no move to make."""
    f = pano / "geovisio" / "pixel3_photosphere.jpg"
    with pytest.raises(CityFormatError) as ei:
        import_frames([f])
    assert ei.value.path == str(f.resolve()) and "at least 2 frames" in ei.value.reason


def test_nan_gps_file(pano):
    f = pano / "bad" / "invalid_exif.jpg"
    with pytest.raises(CityFormatError) as ei:
        import_frames([f])
    assert ei.value.path == str(f.resolve())
    assert "GPS latitude is NaN" in ei.value.reason and "GPS longitude is NaN" in ei.value.reason
    assert "4608x2592, not a 2:1" in ei.value.reason  # it is also a 16:9 phone photo


def test_no_exif_file(pano, tmp_path):
    f = pano / "bad" / "e1_without_exif.jpg"
    with pytest.raises(CityFormatError) as ei:
        import_frames([f])
    assert ei.value.path == str(f.resolve())
    assert "no EXIF metadata at all" in ei.value.reason and "256x144, not a 2:1" in ei.value.reason
    # a CSV position removes the EXIF complaint, but the image is still not a panorama
    from frames_util import write_csv

    m = write_csv(tmp_path / "m.csv", [[str(f), 49.0, 1.9, ""], [str(pano / "geovisio" / "1.jpg"), "", "", ""]])
    with pytest.raises(CityFormatError) as ei:
        import_city(m)
    assert ei.value.path == str(f.resolve()) and ei.value.record == "m.csv line 2"
    assert "not a 2:1" in ei.value.reason and "EXIF" not in ei.value.reason
