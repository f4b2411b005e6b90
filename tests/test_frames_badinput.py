"""Frames importer: every bad input gives a CityFormatError naming the file (and the CSV line)."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest
from frames_util import offset, write_csv, write_frame, write_line
from PIL import ExifTags, Image
from PIL.TiffImagePlugin import IFDRational

from urbanarena.errors import CityFormatError
from urbanarena.world.importers.frames import import_city, import_frames, read_frame_exif


def _err(fn, *a, **kw) -> CityFormatError:
    with pytest.raises(CityFormatError) as ei:
        fn(*a, **kw)
    return ei.value


@pytest.fixture()
def line3(tmp_path):
    """Three good frames in tmp/ok and their paths."""
    return [w.path for w in write_line(tmp_path / "ok", [(0, 0), (5, 0), (10, 0)])]


# ------------------------------------------------------------------ CSV
@pytest.mark.parametrize(
    "rows, header, line, words",
    [
        ([["{0}", 1.0, 2.0]], ["file_name", "lat", "lon"], "line 1", "no 'filename' column"),
        ([["{0}", "", "", ""], ["{1}", "", ""]], None, "line 3", "3 fields, header has 4"),
        ([["{0}", "abc", 2.0, ""]], None, "line 2", "lat 'abc' is not a number"),
        ([["{0}", "", "", ""], ["{1}", "nan", 2.0, ""]], None, "line 3", "not a finite number"),
        ([["{0}", 95.0, 2.0, ""]], None, "line 2", "lat 95.0 out of range"),
        ([["{0}", 48.0, 200.0, ""]], None, "line 2", "lon 200.0 out of range"),
        ([["{0}", 48.0, "", ""]], None, "line 2", "give both lat and lon"),
        ([["{0}", "", "", "inf"]], None, "line 2", "heading is 'inf'"),
        ([["{0}", "", "", ""], ["missing.jpg", "", "", ""]], None, "line 3", "frame file not found: missing.jpg"),
        ([["{0}", "", "", ""], ["{1}", "", "", ""], ["{0}", "", "", ""]], None, "line 4", "already listed on line 2"),
        ([["", 1.0, 2.0, ""]], None, "line 2", "empty filename"),
        ([["{0}"]], ["filename", "lat", "latitude"], "line 1", "column 'lat' given twice"),
    ],
)
def test_csv_errors_name_the_line(tmp_path, line3, rows, header, line, words):
    rows = [[c.format(*line3) if isinstance(c, str) else c for c in r] for r in rows]
    m = write_csv(tmp_path / "m.csv", rows, header)
    e = _err(import_city, m)
    assert e.path == str(m) and e.record == line and words in e.reason


def test_csv_empty_and_not_utf8(tmp_path, line3):
    m = tmp_path / "empty.csv"
    m.write_text("\n\n")
    e = _err(import_city, m)
    assert e.path == str(m) and "empty CSV manifest" in e.reason
    m2 = tmp_path / "latin.csv"
    m2.write_bytes(f"filename,lat,lon\n{line3[0]},,\nstra\xdfe.jpg,1,2\n".encode("latin-1"))
    e = _err(import_city, m2)
    assert e.path == str(m2) and e.record == "line 3" and "not UTF-8" in e.reason


def test_csv_lone_frame_trajectory(tmp_path, line3):
    m = write_csv(tmp_path / "t.csv", [[line3[0], "a"], [line3[1], "a"], [line3[2], "b"]], ["filename", "trajectory"])
    e = _err(import_city, m)
    assert e.path == str(m) and e.record == "line 4 (f02.jpg)" and "trajectory 'b' has 1 frame" in e.reason


def test_csv_ignored_columns_and_bom(tmp_path, line3):
    m = tmp_path / "bom.csv"
    m.write_text("\ufeffFilename,Latitude,LNG,altitude\n" + "".join(f"{p},,,12\n" for p in line3), encoding="utf-8")
    city = import_city(m)
    assert city.graph.number_of_nodes() == 3 and city.meta.extra["ignored_csv_columns"] == ["altitude"]


def test_csv_and_frames_together_refused(tmp_path, line3):
    m = write_csv(tmp_path / "m.csv", [[str(p), "", "", ""] for p in line3])
    e = _err(import_frames, line3, m)
    assert e.path == str(m) and "not both" in e.reason
    e = _err(import_frames, [m, line3[0]])
    assert e.path == str(m) and "only input" in e.reason


# --------------------------------------------------------------- images
def test_unreadable_and_unsupported_images(tmp_path, line3):
    junk = tmp_path / "ok" / "junk.jpg"
    junk.write_bytes(b"this is not an image at all" * 10)
    e = _err(import_city, tmp_path / "ok")
    assert e.path == str(junk) and "unreadable image" in e.reason
    junk.unlink()
    gif = tmp_path / "ok" / "anim.jpg"
    Image.new("RGB", (64, 32)).save(gif, "GIF")
    e = _err(import_city, tmp_path / "ok")
    assert e.path == str(gif) and "unsupported image format 'GIF'" in e.reason


def test_truncated_jpeg_caught_by_pixel_check(tmp_path):
    d = tmp_path / "tr"
    write_line(d, [(0, 0), (5, 0)])
    # a noisy (large) frame, cut in the middle of its entropy-coded data
    lat, lon = offset(10, 0)
    full = write_frame(tmp_path / "full.jpg", lat, lon, size=(512, 256))
    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 256, (256, 512, 3), dtype=np.uint8)).save(
        full.path, "JPEG", quality=95, exif=Image.open(full.path).getexif())
    data = full.path.read_bytes()
    cut = d / "f02.jpg"
    cut.write_bytes(data[: len(data) // 2])
    e = _err(import_city, d)
    assert e.path == str(cut) and "truncated or corrupt" in e.reason
    # header and EXIF are intact: without the pixel check the frame is accepted
    assert read_frame_exif(cut, verify_pixels=False).lat == pytest.approx(full.lat)
    assert import_city(d, verify_pixels=False).graph.number_of_nodes() == 3


def test_not_two_to_one(tmp_path):
    d = tmp_path / "r"
    write_line(d, [(0, 0), (5, 0)])
    bad = write_frame(d / "f09.jpg", *offset(10, 0), size=(64, 40))
    e = _err(import_city, d)
    assert e.path == str(bad.path) and "64x40, not a 2:1 equirectangular panorama" in e.reason
    ok = write_frame(d / "f09.jpg", *offset(10, 0), size=(65, 32))  # |W - 2H| = 1 pixel: tolerated
    assert import_city(d).graph.number_of_nodes() == 3 and ok.path.is_file()


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"raw_gps": {ExifTags.GPS.GPSLatitudeRef: "X", ExifTags.GPS.GPSLatitude: (IFDRational(48, 1), 0.0, 0.0),
                      ExifTags.GPS.GPSLongitudeRef: "E", ExifTags.GPS.GPSLongitude: (IFDRational(2, 1), 0.0, 0.0)}},
         "GPS latitude ref is 'X'"),
        ({"raw_gps": {ExifTags.GPS.GPSLatitudeRef: "N", ExifTags.GPS.GPSLatitude: (IFDRational(1, 0), 0.0, 0.0),
                      ExifTags.GPS.GPSLongitudeRef: "E", ExifTags.GPS.GPSLongitude: (IFDRational(2, 1), 0.0, 0.0)}},
         "GPS latitude is NaN"),
        ({"raw_gps": {ExifTags.GPS.GPSLatitudeRef: "N", ExifTags.GPS.GPSLatitude: (IFDRational(95, 1), 0.0, 0.0),
                      ExifTags.GPS.GPSLongitudeRef: "E", ExifTags.GPS.GPSLongitude: (IFDRational(2, 1), 0.0, 0.0)}},
         "GPS latitude 95.0 out of range"),
        ({"raw_gps": {ExifTags.GPS.GPSLatitudeRef: "N", ExifTags.GPS.GPSLatitude: (0.0, 0.0, 0.0),
                      ExifTags.GPS.GPSLongitudeRef: "E", ExifTags.GPS.GPSLongitude: (0.0, 0.0, 0.0)}},
         "exactly (0, 0)"),
        ({"raw_gps": {ExifTags.GPS.GPSLatitudeRef: "N", ExifTags.GPS.GPSLatitude: (IFDRational(48, 1), 0.0, 0.0)}},
         "GPS longitude missing"),
        ({"taken": datetime(2024, 1, 1)}, "no GPS metadata in EXIF"),
        ({"exif": False}, "no EXIF metadata at all"),
    ],
)
def test_bad_gps(tmp_path, kwargs, words):
    d = tmp_path / "g"
    write_line(d, [(0, 0), (5, 0)])
    bad = write_frame(d / "f05.jpg", **kwargs)
    e = _err(import_city, d)
    assert e.path == str(bad.path) and words in e.reason
    assert "2:1" not in e.reason


def test_magnetic_heading_is_flagged(tmp_path):
    d = tmp_path / "m"
    write_frame(d / "a.jpg", *offset(0, 0), heading_deg=10.0, heading_ref="M")
    write_frame(d / "b.jpg", *offset(0, 5), heading_deg=12.5)
    city = import_city(d)
    assert city.graph.nodes["a.jpg"]["heading_source"] == "exif_magnetic"
    assert city.graph.nodes["a.jpg"]["heading_deg"] == pytest.approx(10.0)
    assert city.graph.nodes["b.jpg"]["heading_source"] == "exif"
    (w,) = city.meta.extra["warnings"]
    assert "a.jpg" in w and "magnetic" in w


def test_too_few_frames_and_missing_inputs(tmp_path):
    one = write_frame(tmp_path / "one" / "a.jpg", *offset(0, 0))
    e = _err(import_city, tmp_path / "one")
    assert e.path == str(one.path) and "at least 2 frames" in e.reason
    # two folders of one frame each: 2 frames in all, but each trajectory needs 2
    write_frame(tmp_path / "one" / "sub" / "b.jpg", *offset(0, 50))
    e = _err(import_city, tmp_path / "one")
    assert "trajectory 'one' has 1 frame" in e.reason
    (tmp_path / "empty").mkdir()
    e = _err(import_city, tmp_path / "empty")
    assert e.path == str(tmp_path / "empty") and "no frames" in e.reason
    e = _err(import_city, tmp_path / "nowhere")
    assert e.path == str(tmp_path / "nowhere") and "not found" in e.reason
    with pytest.raises(ValueError, match="join_radius_m"):
        import_city(tmp_path / "one", join_radius_m=0)
    with pytest.raises(ValueError, match="spacing_m"):
        import_city(tmp_path / "one", spacing_m=-1)
