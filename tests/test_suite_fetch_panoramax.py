"""Issue 26 item 4: a frozen real-imagery suite pins every picture; ``urbanarena tasks fetch`` rebuilds the same
city and suite from the manifest alone, against the fake Panoramax server, and names a missing or changed picture.

The fake server (tests/panoramax_fake.py) serves the scene of tests/panoramax_util.py: synthetic sequences along
the hand-written grid, the real GeoVisio frames ``../shared/data/panoramas/geovisio/1..4.jpg`` (MIT) and the bad
pictures. Expected values come from the served bytes and metadata (``hashlib`` on ``FakePicture.data``, the
pictures' licences and authors), not from the pins code; "bit-identical" is the sha256 of every file of the city
folder and of the suite folder. Not covered here (needs a real instance): pagination over thousands of items, a
mirror instance (other item URLs give another content hash: the fetch refuses it).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("pystac_client", reason="the Panoramax client needs pystac-client (extra 'panoramax')")

from typer.testing import CliRunner  # noqa: E402

import panoramax_util as U  # noqa: E402
from panoramax_fake import FakePanoramax  # noqa: E402
from urbanarena.cli.main import app  # noqa: E402

# a long end-to-end run (real data, whole suites built, frozen and fetched): CI runs it in its acceptance step
pytestmark = pytest.mark.acceptance

CITY = "pmxfetch"


def tree_sha256(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def cli(home: Path, *args: str):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("URBANARENA_HOME", str(home))
        return CliRunner().invoke(app, list(args))


@pytest.fixture(scope="module")
def published(shared_dir, tmp_path_factory):
    """City built with ``city from-panoramax --osm`` and frozen (mini) in home ``home``; then ``home`` is moved
    away and only ``manifest.json`` is kept (``pub/``), as a lab would publish it. The server keeps running."""
    if not (shared_dir / "data" / "panoramas" / "geovisio" / "1.jpg").is_file():
        pytest.skip("../shared/data/panoramas/geovisio not found: real data absent")
    tmp = tmp_path_factory.mktemp("fetch")
    home = tmp / "home"
    pics = U.scene(shared_dir)
    with FakePanoramax(pics) as srv:
        r = cli(home, "city", "from-panoramax", "--bbox", ",".join(map(str, U.bbox())), "--osm", str(U.GRID_OSM),
                "--name", CITY, "--instance", srv.url, "--spacing-m", "3")
        assert r.exit_code == 0, r.output
        r = cli(home, "tasks", "freeze", "--city", CITY, "--split", "", "--sizes", "mini", "--out", str(tmp / "suite"))
        assert r.exit_code == 0, r.output
        city_files = tree_sha256(home / "cities" / CITY)
        suite_files = tree_sha256(tmp / "suite")
        shutil.move(str(home), str(tmp / "home-orig"))
        (tmp / "pub").mkdir()
        shutil.copy(tmp / "suite" / "manifest.json", tmp / "pub" / "manifest.json")
        yield {"srv": srv, "tmp": tmp, "home": home, "pics": pics, "city_files": city_files,
               "suite_files": suite_files, "manifest": json.loads((tmp / "suite" / "manifest.json").read_text())}


def test_manifest_pins_every_picture_by_id_sha256_licence_and_author(published):
    m = published["manifest"]
    pins = m["pictures"]
    served = {p.id: p for p in published["pics"]}
    assert pins["source"] == "panoramax" and pins["supplied"] is False
    # every searched picture is an input, in the server's search order (it sorts by collection, time, id)
    order = sorted(published["pics"], key=lambda p: (p.collection, p.datetime, p.id))
    assert [e["id"] for e in pins["inputs"]] == [p.id for p in order]
    # the downloaded ones carry the served bytes' sha256; the NaN fix and the picture without heading are never
    # downloaded (their metadata disqualifies them), so they have none
    for e in pins["inputs"]:
        if e["id"] in ("bad-nan-gps", "bad-no-heading"):
            assert "sha256" not in e
        else:
            assert e["sha256"] == hashlib.sha256(served[e["id"]].data).hexdigest()
            assert e["bytes"] == len(served[e["id"]].data)
    # the graph's pictures, with the licence and author the server gave
    graph = json.loads(gzip.decompress((published["tmp"] / "home-orig" / "cities" / CITY / "graph.json.gz")
                                       .read_bytes()))
    assert [p["node"] for p in pins["pictures"]] == [n["id"] for n in graph["nodes"]]
    for p in pins["pictures"]:
        s = served[p["id"]]
        assert (p["sha256"], p["licence"], p["author"], p["sequence_id"]) == (
            hashlib.sha256(s.data).hexdigest(), s.licence, s.author, s.collection)
    real = [p for p in pins["pictures"] if p["id"].startswith("geovisio-")]
    assert real and all(p["licence"] == "MIT" and p["author"] == U.REAL_AUTHOR for p in real)
    assert pins["osm"] == {"file": U.GRID_OSM.name, "sha256": hashlib.sha256(U.GRID_OSM.read_bytes()).hexdigest()}
    # families the photographs exclude are stated, not fatal
    assert set(m["excluded_families"]) == {"landmark_image", "object_count"}


def test_fetch_into_an_empty_home_rebuilds_a_bit_identical_city_and_suite(published):
    tmp, home = published["tmp"], published["home"]
    assert not home.exists()
    r = cli(home, "tasks", "fetch", str(tmp / "pub" / "manifest.json"), "--osm", str(U.GRID_OSM),
            "--out", str(tmp / "suite2"))
    assert r.exit_code == 0, r.output
    assert tree_sha256(home / "cities" / CITY) == published["city_files"]
    assert tree_sha256(tmp / "suite2") == published["suite_files"]
    assert set(published["suite_files"]) == {"manifest.json", "mini.json.gz"}
    # the pictures in the new cache are the served ones
    cache = next((home / "panoramax").iterdir())
    served = {p.id: p for p in published["pics"]}
    for p in published["manifest"]["pictures"]["pictures"]:
        assert hashlib.sha256((cache / p["file"]).read_bytes()).hexdigest() == \
            hashlib.sha256(served[p["id"]].data).hexdigest()


def test_fetch_on_another_home_path_gives_the_same_graph_annotations_and_suite(published):
    """On another machine the home differs: graph and annotations are bit-identical; city.json differs only where
    it names this machine's picture folder (the imagery root and the skipped 300 x 200 picture's file)."""
    tmp = published["tmp"]
    home = tmp / "other-home"
    r = cli(home, "tasks", "fetch", str(tmp / "pub"), "--osm", str(U.GRID_OSM), "--out", str(tmp / "suite3"))
    assert r.exit_code == 0, r.output
    got = tree_sha256(home / "cities" / CITY)
    for f in ("graph.json.gz", "annotations.json.gz"):
        assert got[f] == published["city_files"][f]
    assert tree_sha256(tmp / "suite3") == published["suite_files"]
    orig = (tmp / "home-orig" / "cities" / CITY / "city.json").read_text().replace(str(published["home"]), "HOME")
    new = (home / "cities" / CITY / "city.json").read_text().replace(str(home), "HOME")
    assert new == orig


def _assert_nothing_written(home: Path, out: Path) -> None:
    assert not out.exists()
    assert not (home / "cities" / CITY).exists()
    cache = home / "panoramax"
    assert not cache.exists() or not any(p.is_file() for p in cache.rglob("*"))


def test_a_changed_picture_fails_naming_its_id(published, shared_dir):
    """The real frame geovisio-3 is replaced on the server by another real frame (4.jpg): the server's own
    checksum follows, so only the pin can tell."""
    srv, tmp = published["srv"], published["tmp"]
    pic = srv.by_id["geovisio-3"]
    old = pic.data
    pic.data = (shared_dir / "data" / "panoramas" / "geovisio" / "4.jpg").read_bytes()
    try:
        home = tmp / "home-changed"
        r = cli(home, "tasks", "fetch", str(tmp / "pub" / "manifest.json"), "--osm", str(U.GRID_OSM),
                "--out", str(tmp / "suite-changed"))
    finally:
        pic.data = old
    assert r.exit_code == 2, r.output
    assert "picture geovisio-3: changed" in r.output and hashlib.sha256(old).hexdigest() in r.output
    assert "1 pinned picture(s) missing or changed" in r.output
    _assert_nothing_written(home, tmp / "suite-changed")


def test_a_missing_picture_fails_naming_its_id(published):
    srv, tmp = published["srv"], published["tmp"]
    gone = srv.by_id.pop("seq-est-010")
    srv.pictures.remove(gone)
    try:
        home = tmp / "home-missing"
        r = cli(home, "tasks", "fetch", str(tmp / "pub" / "manifest.json"), "--osm", str(U.GRID_OSM),
                "--out", str(tmp / "suite-missing"))
    finally:
        srv.pictures.append(gone)
        srv.pictures.sort(key=lambda p: (p.collection, p.datetime, p.id))
        srv.by_id[gone.id] = gone
    assert r.exit_code == 2, r.output
    assert "picture seq-est-010: missing" in r.output
    _assert_nothing_written(home, tmp / "suite-missing")


def test_another_osm_file_or_none_is_refused_by_name(published, tmp_path):
    tmp = published["tmp"]
    r = cli(tmp_path / "h1", "tasks", "fetch", str(tmp / "pub" / "manifest.json"), "--out", str(tmp_path / "s1"))
    assert r.exit_code == 2 and "--osm FILE" in r.output and U.GRID_OSM.name in r.output
    other = tmp_path / "other.osm"
    other.write_bytes(U.GRID_OSM.read_bytes().replace(b"</osm>", b"<!-- edited --></osm>"))
    r = cli(tmp_path / "h2", "tasks", "fetch", str(tmp / "pub" / "manifest.json"), "--osm", str(other),
            "--out", str(tmp_path / "s2"))
    assert r.exit_code == 2 and str(other) in r.output and "differs from the pinned OSM file" in r.output
    assert not (tmp_path / "s2").exists()
