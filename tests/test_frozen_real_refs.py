"""Issue 26 integration item 1: ``tasks freeze`` pins the real reference pictures of ``landmark_image`` and
``tasks fetch`` gets them again, against the fake Panoramax server (tests/panoramax_fake.py).

The city is the Panoramax scene of tests/panoramax_util.py built with ``city from-panoramax --osm``; afterwards a
later sequence (``seq-later``: another date, licence and author) is published with two pictures in front of the
Pharmacie Centrale's and the Café de la Gare's west facades (grid (-5, -7) and (-5, 7): 15 m from each facade
point, on its normal; worked in tests/test_landmark_real_refs.py). The suite is frozen with
``--confirm-landmark-references`` (the STAC searched around each goal POI). Expected values come from the served
bytes and metadata (``hashlib`` on ``FakePicture.data``), not from the pins code. Not covered (needs a real
instance): a reference picture that moved on the instance (its pinned position is searched; the test removes it).
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
from panoramax_fake import FakePanoramax, FakePicture, heading_pano, jpeg_bytes  # noqa: E402
from urbanarena.cli.main import app  # noqa: E402

# a long end-to-end run (real data, whole suites built, frozen and fetched): CI runs it in its acceptance step
pytestmark = pytest.mark.acceptance

CITY = "pmxrefs"
LATER = {"ref-pharmacie": (-5.0, -7.0), "ref-gare": (-5.0, 7.0)}


def tree_sha256(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def cli(home: Path, *args: str):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("URBANARENA_HOME", str(home))
        return CliRunner().invoke(app, list(args))


def later_pictures() -> list[FakePicture]:
    out = []
    for k, (pid, (x, y)) in enumerate(LATER.items()):
        la, lo = U.ll(x, y)
        out.append(FakePicture(pid, "seq-later", la, lo, 10.0 * k, f"2025-06-01T09:00:0{k}Z",
                               jpeg_bytes(heading_pano(10.0 * k, 256, seed=7 + k)), licence="CC-BY-4.0",
                               author="Later Author"))
    return out


def publish(srv: FakePanoramax, pics: list[FakePicture]) -> None:
    srv.pictures = sorted(srv.pictures + pics, key=lambda p: (p.collection, p.datetime, p.id))
    srv.by_id = {p.id: p for p in srv.pictures}


@pytest.fixture(scope="module")
def frozen(shared_dir, tmp_path_factory):
    if not (shared_dir / "data" / "panoramas" / "geovisio" / "1.jpg").is_file():
        pytest.skip("../shared/data/panoramas/geovisio not found: real data absent")
    tmp = tmp_path_factory.mktemp("frozenrefs")
    home = tmp / "home"
    with FakePanoramax(U.scene(shared_dir)) as srv:
        r = cli(home, "city", "from-panoramax", "--bbox", ",".join(map(str, U.bbox())), "--osm", str(U.GRID_OSM),
                "--name", CITY, "--instance", srv.url, "--spacing-m", "3")
        assert r.exit_code == 0, r.output
        later = later_pictures()
        publish(srv, later)
        r = cli(home, "tasks", "freeze", "--city", CITY, "--split", "", "--sizes", "mini", "--out",
                str(tmp / "suite"), "--confirm-landmark-references")
        assert r.exit_code == 0, r.output
        tasks = json.loads(gzip.decompress((tmp / "suite" / "mini.json.gz").read_bytes()))["tasks"]
        yield {"srv": srv, "tmp": tmp, "home": home, "later": {p.id: p for p in later},
               "manifest": json.loads((tmp / "suite" / "manifest.json").read_text()), "tasks": tasks,
               "suite_files": tree_sha256(tmp / "suite")}


def test_freeze_pins_each_reference_picture_by_panoramax_id_sha256_licence_and_author(frozen):
    m, later = frozen["manifest"], frozen["later"]
    li = [t for t in frozen["tasks"] if t["extra"]["task_kind"] == "landmark_image"]
    assert li and m["sizes"]["mini"]["by_family"]["landmark_image"] == len(li)
    assert "landmark_image" not in m.get("excluded_families", {})
    used = {t["extra"]["reference_view"]["picture_id"] for t in li}
    assert used <= set(later)  # never one of the city's own pictures
    pins = {p["id"]: p for p in m["reference_pictures"]["pictures"]}
    assert set(pins) >= used
    for pid, p in pins.items():
        s = later[pid]
        assert (p["sha256"], p["bytes"], p["licence"], p["author"], p["sequence_id"], p["panoramax_id"]) == (
            hashlib.sha256(s.data).hexdigest(), len(s.data), "CC-BY-4.0", "Later Author", "seq-later", pid)
        assert (p["lat"], p["lon"], p["heading_deg"]) == pytest.approx((s.lat, s.lon, s.heading_deg))
    assert m["reference_pictures"]["instance"] == frozen["srv"].api
    # the manifest keeps no local path; the reference assets name their picture's sha256
    assert str(frozen["tmp"]) not in json.dumps(m)
    refs = {rel: a for rel, a in m["sizes"]["mini"]["assets"].items() if a["kind"] == "real_reference"}
    assert refs and all("path" not in a["params"] for a in refs.values())
    assert {a["params"]["sha256"] for a in refs.values()} <= {p["sha256"] for p in pins.values()}
    # the local store holds the served bytes under their sha256
    store = frozen["home"] / "reference_pictures"
    for p in pins.values():
        f = next(store.glob(p["sha256"] + ".*"))
        assert hashlib.sha256(f.read_bytes()).hexdigest() == hashlib.sha256(later[p["id"]].data).hexdigest()


def test_materialize_redraws_the_cuts_from_the_stored_pictures_or_names_a_missing_one(frozen, tmp_path):
    from urbanarena.tasks.frozen import FrozenSuiteError, load_frozen
    from urbanarena.tasks.frozen_materialize import materialize
    from urbanarena.world.city_io import load_city

    fs = load_frozen(frozen["tmp"] / "suite")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("URBANARENA_HOME", str(frozen["home"]))
        city = load_city(frozen["home"] / "cities" / CITY)
        path, check = materialize(fs, "mini", city, dest_root=tmp_path / "a", check_panoramas=False)
        assert check["assets_differ"] == [] and check["assets_checked"] == len(fs.manifest["sizes"]["mini"]["assets"])
        rel = next(r for r, a in fs.manifest["sizes"]["mini"]["assets"].items() if a["kind"] == "real_reference")
        assert (path.parent / rel).is_file()
        empty = tmp_path / "empty-home"
        mp.setenv("URBANARENA_HOME", str(empty))
        with pytest.raises(FrozenSuiteError, match="tasks fetch") as e:
            materialize(fs, "mini", city, dest_root=tmp_path / "b", check_panoramas=False)
        assert "reference picture ref-" in str(e.value) and "is not in" in str(e.value)


def test_fetch_downloads_the_reference_pictures_by_id_and_rebuilds_a_bit_identical_suite(frozen):
    tmp, srv = frozen["tmp"], frozen["srv"]
    (tmp / "pub").mkdir()
    shutil.copy(tmp / "suite" / "manifest.json", tmp / "pub" / "manifest.json")
    home = tmp / "home-fetch"
    before = len(srv.log)
    r = cli(home, "tasks", "fetch", str(tmp / "pub" / "manifest.json"), "--osm", str(U.GRID_OSM),
            "--out", str(tmp / "suite2"))
    assert r.exit_code == 0, r.output
    assert tree_sha256(tmp / "suite2") == frozen["suite_files"]
    got = {r[1].split("/")[3] for r in frozen["srv"].log[before:] if r[1].startswith("/api/pictures/")}
    pins = frozen["manifest"]["reference_pictures"]["pictures"]
    assert {p["id"] for p in pins} <= got
    for p in pins:
        f = next((home / "reference_pictures").glob(p["sha256"] + ".*"))
        assert hashlib.sha256(f.read_bytes()).hexdigest() == hashlib.sha256(frozen["later"][p["id"]].data).hexdigest()


def _refetch(frozen, label: str):
    tmp = frozen["tmp"]
    (tmp / "pub").mkdir(exist_ok=True)
    shutil.copy(tmp / "suite" / "manifest.json", tmp / "pub" / "manifest.json")
    home = tmp / f"home-{label}"
    r = cli(home, "tasks", "fetch", str(tmp / "pub" / "manifest.json"), "--osm", str(U.GRID_OSM),
            "--out", str(tmp / f"suite-{label}"))
    return r, home, tmp / f"suite-{label}"


def test_a_changed_or_missing_reference_picture_fails_naming_its_id(frozen):
    srv = frozen["srv"]
    pid = frozen["manifest"]["reference_pictures"]["pictures"][0]["id"]
    pic = srv.by_id[pid]
    old = pic.data
    pic.data = jpeg_bytes(heading_pano(0.0, 256, seed=99))  # the server's own checksum follows: only the pin tells
    try:
        r, home, out = _refetch(frozen, "changed")
    finally:
        pic.data = old
    assert r.exit_code == 2, r.output
    assert f"picture {pid}: changed" in r.output and hashlib.sha256(old).hexdigest() in r.output
    assert not out.exists() and not (home / "cities" / CITY).exists()
    srv.pictures.remove(pic)
    del srv.by_id[pid]
    try:
        r, home, out = _refetch(frozen, "missing")
    finally:
        publish(srv, [pic])
    assert r.exit_code == 2, r.output
    assert f"picture {pid}: missing" in r.output
    assert not out.exists() and not (home / "cities" / CITY).exists()
