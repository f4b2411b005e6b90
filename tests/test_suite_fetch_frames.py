"""Issue 26 item 4 for frames cities (no public picture ids): the pins name each file with its capture time and
sha256; ``urbanarena tasks fetch`` says the pictures must be supplied and verifies a supplied folder by sha256,
naming a missing or changed picture.

The frames are the real GeoVisio frames ``../shared/data/panoramas/geovisio/1..4.jpg`` copied into a temporary
folder; expected hashes are ``hashlib`` on those bytes, capture times their EXIF DateTimeOriginal (read with
Pillow). The successful rebuild of a frames suite needs a frames city with ``--osm`` (the place families), which
these four frames cannot give: that path is covered for Panoramax (tests/test_suite_fetch_panoramax.py).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from urbanarena.cli.main import app

FRAMES = ("1.jpg", "2.jpg", "3.jpg", "4.jpg")


@pytest.fixture
def frames_dir(shared_dir, tmp_path) -> Path:
    src = shared_dir / "data" / "panoramas" / "geovisio"
    if not (src / "1.jpg").is_file():
        pytest.skip("../shared/data/panoramas/geovisio not found: real data absent")
    d = tmp_path / "walk"
    d.mkdir()
    for f in FRAMES:
        shutil.copy(src / f, d / f)
    return d


@pytest.fixture
def pins(frames_dir):
    from urbanarena.world.importers.frames import import_frames
    from urbanarena.world.picture_pins import picture_pins

    city = import_frames([frames_dir], licence="MIT", attribution="Adrien Pavie")
    return picture_pins(city)


def test_frames_pins_name_each_file_with_capture_and_sha256(pins, frames_dir):
    assert pins["source"] == "frames" and pins["supplied"] is True and pins["count"] == 4
    by_id = {p["id"]: p for p in pins["pictures"]}
    assert set(by_id) == set(FRAMES)
    for f in FRAMES:
        data = (frames_dir / f).read_bytes()
        t = Image.open(frames_dir / f).getexif().get_ifd(0x8769)[0x9003]  # DateTimeOriginal "YYYY:MM:DD HH:MM:SS"
        assert by_id[f]["sha256"] == hashlib.sha256(data).hexdigest() and by_id[f]["bytes"] == len(data)
        assert by_id[f]["captured_at"] == t[:10].replace(":", "-") + "T" + t[11:]
        assert (by_id[f]["licence"], by_id[f]["author"]) == ("MIT", "Adrien Pavie")
    assert pins["licences"] == {"MIT": {"pictures": 4, "authors": ["Adrien Pavie"]}}


def test_verify_supplied_names_missing_and_changed_pictures(pins, frames_dir, tmp_path):
    from urbanarena.world.picture_pins import PinnedPictureError, verify_supplied

    assert set(verify_supplied(pins, frames_dir)) == set(FRAMES)
    (frames_dir / "2.jpg").unlink()
    shutil.copy(frames_dir / "4.jpg", frames_dir / "3.jpg")  # another real frame under 3.jpg's name
    with pytest.raises(PinnedPictureError) as e:
        verify_supplied(pins, frames_dir)
    assert list(e.value.problems) == ["2.jpg", "3.jpg"]  # pin order (the city's node order)
    assert e.value.problems["2.jpg"].startswith("missing") and e.value.problems["3.jpg"].startswith("changed")
    assert "picture 2.jpg: missing" in str(e.value) and "picture 3.jpg: changed" in str(e.value)


def _manifest(tmp_path: Path, pins) -> Path:
    d = tmp_path / "pub"
    d.mkdir()
    m = {"format": "urbanarena-frozen-suite", "format_version": 1, "suite": "walk-arena7-v2", "seed": 0,
         "split": None, "city": {"name": "walk", "content_hash": "0" * 64, "build": "urbanarena city from-frames"},
         "sizes": {}, "pictures": pins}
    (d / "manifest.json").write_text(json.dumps(m))
    return d / "manifest.json"


def test_fetch_asks_for_the_pictures_and_names_a_changed_one(pins, frames_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("URBANARENA_HOME", str(tmp_path / "home"))
    manifest = _manifest(tmp_path, pins)
    r = CliRunner().invoke(app, ["tasks", "fetch", str(manifest), "--out", str(tmp_path / "suite")])
    assert r.exit_code == 2 and "no public ids: supply them with --pictures DIR" in r.output
    (frames_dir / "1.jpg").write_bytes((frames_dir / "1.jpg").read_bytes()[:-100])  # truncated copy
    r = CliRunner().invoke(app, ["tasks", "fetch", str(manifest), "--pictures", str(frames_dir),
                                 "--out", str(tmp_path / "suite")])
    assert r.exit_code == 2 and "picture 1.jpg: changed" in r.output
    assert not (tmp_path / "suite").exists()
