"""The photographic assets' credits travel with photo-style images (issue 24 item 1): the block a frozen photo
suite's manifest carries, and the dataset card and ``asset_licences.json`` of a ``tasks export --format hf`` of a
photo suite. The package is the hand-made .deb of ``assets_util`` (6 files: 4 CC-BY-3.0 by "Model Maker", 1 CC0
sky by "Sky Author", 1 CC0 copyright by "Packager"), fetched from 127.0.0.1; the expected counts and sha256s are
taken from the files the test itself put in the package."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest
from PIL import Image
from typer.testing import CliRunner

if shutil.which("dpkg-deb") is None:
    pytest.skip("dpkg-deb (Debian's package builder) is needed to build the test .deb", allow_module_level=True)

import assets_util as A  # noqa: E402
from urbanarena.render.assets import fetch as F  # noqa: E402
from urbanarena.render.assets import registry  # noqa: E402
from urbanarena.render.assets.credits import asset_credits, credit_lines  # noqa: E402

datasets = pytest.importorskip("datasets", reason="the datasets package is not installed (test extra)")


@pytest.fixture()
def fetched(tmp_path, monkeypatch):
    """The fake package fetched into ``$URBANARENA_HOME/assets`` and made the only pinned package."""
    monkeypatch.setenv("URBANARENA_HOME", str(tmp_path / "home"))
    deb = A.build_deb(tmp_path)
    with A.Server({"/fake.deb": deb.read_bytes()}) as srv:
        pkg = A.deb_package(srv.url("/fake.deb"), deb)
        monkeypatch.setattr(registry, "PACKAGES", (pkg,))
        F.fetch_package(pkg, use_clients=False)
    return pkg, deb


def test_nothing_installed_means_no_credits(tmp_path, monkeypatch):
    monkeypatch.setenv("URBANARENA_HOME", str(tmp_path / "home"))
    assert asset_credits() is None


def test_credits_pin_the_package_and_count_every_licence(fetched):
    pkg, deb = fetched
    c = asset_credits(with_files=True)
    assert c["packages"] == [{"package": "fake-assets", "version": "1.0-1", "registry": "debian",
                              "sha256": hashlib.sha256(deb.read_bytes()).hexdigest(), "files": 6}]
    got = {(g["licence"], g["authors"]): g["files"] for g in c["licences"]}
    assert got == {("CC-BY-3.0", "Model Maker"): 4, ("CC0-1.0", "Sky Author"): 1, ("CC0-1.0", "Packager"): 1}
    assert c["files"] == 6
    want = A.expected_files()
    rows = {r["file"].split("/", 1)[1]: r for r in c["file_rows"]}
    assert set(rows) == set(want)
    for rel, data in want.items():
        assert rows[rel]["sha256"] == hashlib.sha256(data).hexdigest()
    assert "- `fake-assets` 1.0-1: CC-BY-3.0, by Model Maker (4 files)" in credit_lines(c)
    assert "- `fake-assets` 1.0-1: CC0-1.0, by Sky Author (1 file)" in credit_lines(c)
    # a pinned package that is not installed is not credited; a damaged install is not either
    other = type(pkg)(**{**pkg.__dict__, "name": "other-assets"})
    assert [p["package"] for p in asset_credits(packages=(pkg, other))["packages"]] == ["fake-assets"]
    f = next(p for p in (F._root(None) / pkg.key).rglob("*.obj"))
    f.write_bytes(f.read_bytes() + b"#")
    assert asset_credits() is None


def _suite(tmp_path, style):
    from urbanarena.tasks.schema import CityRef, Task, TaskFile
    from urbanarena.world.city_io import save_city
    from vlm_util import cross_city, graph_task

    city = cross_city(tmp_path)
    city_dir = save_city(city, tmp_path / "city")
    ref = CityRef(name=city.name, content_hash=city.content_hash)
    (tmp_path / "assets").mkdir()
    Image.new("RGB", (20, 10), (10, 200, 30)).save(tmp_path / "assets" / "ref.png")
    t = Task(task_id="loc/1", family="cityarena", city=ref, start=graph_task(city).start, instruction="where?",
             answer="x:1 y:2", answer_metric="exact_match", difficulty="easy",
             extra={"task_kind": "localization", "reference_images": ["assets/ref.png"]})
    path = TaskFile(city=ref, tasks=[graph_task(city), t]).save(tmp_path / "tasks.json")
    # what materializing a frozen suite writes beside its task file
    (tmp_path / "check.json").write_text(json.dumps({"suite": "x-mini", "render_style": style}))
    return city_dir, path


def _export(city_dir, path, out):
    from urbanarena.cli.main import app

    return CliRunner().invoke(app, ["tasks", "export", "--city", str(city_dir), "--tasks", str(path), "--format",
                                    "hf", "--out", str(out), "--panoramas", "none"], catch_exceptions=False)


def test_a_photo_suite_export_credits_every_asset(fetched, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    city_dir, path = _suite(tmp_path, "photo")
    r = _export(city_dir, path, tmp_path / "hf")
    assert r.exit_code == 0, r.output
    card = (tmp_path / "hf" / "README.md").read_text()
    assert "license: other" in card
    assert "assets: CC-BY-3.0" in card.split("---")[1]                     # in the header's licence details
    assert "  - `fake-assets` 1.0-1: CC-BY-3.0, by Model Maker (4 files)" in card
    assert "(6 files; every file with its licence, authors and sha256 in `asset_licences.json`)" in card
    lic = json.loads((tmp_path / "hf" / "asset_licences.json").read_text())
    assert lic["files"] == 6 and len(lic["file_rows"]) == 6
    assert {r["licence"] for r in lic["file_rows"]} == {"CC-BY-3.0", "CC0-1.0"}


def test_a_realistic_suite_export_has_no_asset_credits(fetched, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    city_dir, path = _suite(tmp_path, "realistic")
    r = _export(city_dir, path, tmp_path / "hf")
    assert r.exit_code == 0, r.output
    card = (tmp_path / "hf" / "README.md").read_text()
    assert "fake-assets" not in card and "assets:" not in card
    assert not (tmp_path / "hf" / "asset_licences.json").exists()


def test_freezing_a_photo_suite_without_its_assets_is_refused(tmp_path, monkeypatch):
    from urbanarena.errors import UrbanArenaError
    from urbanarena.tasks.frozen import freeze
    from vlm_util import cross_city

    monkeypatch.setenv("URBANARENA_HOME", str(tmp_path / "home"))
    with pytest.raises(UrbanArenaError, match="urbanarena assets fetch"):
        freeze(cross_city(tmp_path), tmp_path / "suite", suite="x-photo-v1", solver=object(), render_style="photo")
    assert not (tmp_path / "suite").exists()
