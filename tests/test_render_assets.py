"""The pinned asset fetcher (issue 24 item 1) on hand-made packages served from 127.0.0.1: exactly the listed
files extracted, manifest complete, sha256 mismatch refused, offline fallback, killed download leaves nothing.
No test here touches the network (clients off, local URLs only)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pytest

if shutil.which("dpkg-deb") is None:
    pytest.skip("dpkg-deb (Debian's package builder) is needed to build the test .deb", allow_module_level=True)

from PIL import Image  # noqa: E402

import assets_util as A  # noqa: E402
from urbanarena.errors import AssetChecksumError, AssetFetchError  # noqa: E402
from urbanarena.render.assets import fetch as F  # noqa: E402
from urbanarena.render.assets.registry import FileGroup  # noqa: E402

SRC = str(Path(__file__).resolve().parents[1] / "src")


def files_on_disk(d: Path) -> set[str]:
    return {p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file()}


@pytest.fixture()
def deb(tmp_path):
    return A.build_deb(tmp_path)


def test_fetch_extracts_exactly_the_listed_files_with_a_complete_manifest(tmp_path, deb):
    root = tmp_path / "assets"
    seen = []
    with A.Server({"/fake.deb": deb.read_bytes()}) as srv:
        pkg = A.deb_package(srv.url("/fake.deb"), deb)
        rep = F.fetch_package(pkg, root=root, use_clients=False, progress=lambda *a: seen.append(a))
    want = A.expected_files()
    d = root / pkg.key
    assert rep.via == "url" and rep.files == 6 and rep.download_bytes == deb.stat().st_size
    assert files_on_disk(d) == set(want) | {"manifest.json"}
    for rel, data in want.items():
        assert (d / rel).read_bytes() == data, rel
    assert files_on_disk(root) == {f"{pkg.key}/{r}" for r in want} | {f"{pkg.key}/manifest.json", "licences.json"}
    # the manifest names every extracted file with its group's licence and authors and the file's own sha256
    man = json.loads((d / "manifest.json").read_text())
    assert man["sha256"] == hashlib.sha256(deb.read_bytes()).hexdigest() and man["version"] == "1.0-1"
    by_file = {r["file"]: r for r in man["files"]}
    assert set(by_file) == set(want)
    for rel, data in want.items():
        assert by_file[rel]["sha256"] == hashlib.sha256(data).hexdigest()
        assert by_file[rel]["bytes"] == len(data)
    assert by_file["people/man/man.obj"]["licence"] == "CC-BY-3.0"
    assert by_file["people/man/man.obj"]["authors"] == "Model Maker"
    assert by_file["hdri/sky.hdr"]["licence"] == "CC0-1.0" and by_file["copyright"]["authors"] == "Packager"
    # licences.json beside the cache: one row per file, prefixed by the package folder
    lic = json.loads((root / "licences.json").read_text())["files"]
    assert {r["file"] for r in lic} == {f"{pkg.key}/{r}" for r in want}
    assert all(r["package"] == "fake-assets" and r["version"] == "1.0-1" for r in lic)
    summary = {(s["licence"], s["authors"]): s["files"] for s in F.licence_summary(root)}
    assert summary == {("CC0-1.0", "Sky Author"): 1, ("CC-BY-3.0", "Model Maker"): 4, ("CC0-1.0", "Packager"): 1}
    # progress: the download in kB, from 0 to its total
    dl = [s for s in seen if s[0].startswith("download fake-assets")]
    assert dl[0][1] == 0 and dl[-1][1] == dl[-1][2] == deb.stat().st_size // 1000
    # a second fetch is a cache hit, no request
    assert F.fetch_package(pkg, root=root, use_clients=False).via == "cached"


def test_fetched_texture_and_model_are_usable(tmp_path, deb):
    with A.Server({"/fake.deb": deb.read_bytes()}) as srv:
        pkg = A.deb_package(srv.url("/fake.deb"), deb)
        d = F.fetch_package(pkg, root=tmp_path, use_clients=False).directory
    obj = (d / "people/man/man.obj").read_text().splitlines()
    mtl = (d / "people/man/man.mtl").read_text().splitlines()
    verts = [tuple(map(float, ln.split()[1:])) for ln in obj if ln.startswith("v ")]
    faces = [ln for ln in obj if ln.startswith("f ")]
    used = {ln.split()[1] for ln in obj if ln.startswith("usemtl")}
    defined = {ln.split()[1] for ln in mtl if ln.startswith("newmtl")}
    textures = [ln.split()[1] for ln in mtl if ln.startswith("map_Kd")]
    assert len(verts) == 4 and verts[3] == (0.0, 0.0, 1.0) and len(faces) == 2 and used == defined == {"skin", "cloth"}
    assert textures == ["man.png"]
    im = Image.open(d / "people/man" / textures[0]).convert("RGB")
    assert im.size == (2, 2) and [tuple(px) for px in np.asarray(im).reshape(-1, 3).tolist()] == A.PIXELS


def test_npm_tarball_and_path_escape_refused(tmp_path):
    good = A.build_tgz(tmp_path, {"package/LICENSE": b"MIT\n", "package/leaves/oak.png": A.png_bytes(),
                                  "package/index.js": b"x"})
    g = FileGroup("leaves", ("package/leaves/*.png", "package/LICENSE"), dest="", strip="package/",
                  licence="MIT", authors="Someone", source="package/LICENSE", files=2)
    with A.Server({"/good.tgz": good.read_bytes()}) as srv:
        pkg = F.AssetPackage("@fake/trees", "npm", "1.0.0", srv.url("/good.tgz"), A.sha256(good),
                             good.stat().st_size, (g,))
        rep = F.fetch_package(pkg, root=tmp_path / "a", use_clients=False)
    assert pkg.key == "fake-trees-1.0.0"
    assert files_on_disk(rep.directory) == {"LICENSE", "leaves/oak.png", "manifest.json"}
    (tmp_path / "evil").mkdir()
    bad = A.build_tgz(tmp_path / "evil", {"package/../../escape.png": b"x"})
    g2 = replace(g, members=("package/*",), files=1)
    with A.Server({"/bad.tgz": bad.read_bytes()}) as srv:
        pkg2 = F.AssetPackage("evil", "npm", "1.0.0", srv.url("/bad.tgz"), A.sha256(bad), bad.stat().st_size, (g2,))
        with pytest.raises(AssetFetchError, match="outside the cache"):
            F.fetch_package(pkg2, root=tmp_path / "b", use_clients=False)
    assert files_on_disk(tmp_path / "b") == set()
    assert not list((tmp_path).rglob("escape.png"))


def test_sha256_mismatch_refused_nothing_kept(tmp_path, deb):
    root = tmp_path / "assets"
    with A.Server({"/fake.deb": deb.read_bytes()}) as srv:
        pkg = A.with_sha(A.deb_package(srv.url("/fake.deb"), deb), "0" * 64)
        with pytest.raises(AssetChecksumError, match="sha256 .* is not the pinned 0000"):
            F.fetch_package(pkg, root=root, use_clients=False)
        st = F.ensure_assets([pkg], root=root, use_clients=False)
    assert not st.available and st.fallback_style == "realistic"
    assert "sha256" in st.message and "'realistic' style" in st.message and "\n" not in st.message
    assert list(root.iterdir()) == []  # no package folder, no work folder, no licences
    assert F.package_status([pkg], root)[0]["installed"] is False


def test_offline_connection_refused_falls_back(tmp_path, deb):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    pkg = A.deb_package(f"http://127.0.0.1:{port}/fake.deb", deb)
    root = tmp_path / "assets"
    st = F.ensure_assets([pkg], root=root, use_clients=False, deadline_s=10)
    assert not st.available and st.fallback_style == "realistic"
    assert st.message.startswith("photo assets unavailable (fake-assets: cannot download http://127.0.0.1:")
    assert "refused" in st.message.lower() and "\n" not in st.message
    assert list(root.iterdir()) == []
    assert F.ensure_assets([pkg], root=root, fetch=False).available is False  # status only: never fetches


def test_size_limit_and_group_count_mismatch_refused(tmp_path, deb):
    data = deb.read_bytes()
    with A.Server({"/fake.deb": data}) as srv:
        pkg = A.deb_package(srv.url("/fake.deb"), deb)
        small = replace(pkg, size_bytes=len(data) - 1)
        with pytest.raises(AssetFetchError, match=f"more than the pinned {len(data) - 1} bytes"):
            F.fetch_package(small, root=tmp_path / "a", use_clients=False)
        wrong = replace(pkg, groups=(replace(pkg.groups[0], files=2),) + pkg.groups[1:])
        with pytest.raises(AssetFetchError, match="group 'sky' yielded 1 files, the registry lists 2"):
            F.fetch_package(wrong, root=tmp_path / "b", use_clients=False)
    assert list((tmp_path / "a").iterdir()) == [] and list((tmp_path / "b").iterdir()) == []


def test_stalled_download_passes_its_deadline(tmp_path, deb):
    with A.Server({"/fake.deb": deb.read_bytes()}, stall=("/fake.deb",)) as srv:
        pkg = A.deb_package(srv.url("/fake.deb"), deb)
        t0 = time.monotonic()
        with pytest.raises(AssetFetchError, match="fake-assets: (cannot download|download from).*"):
            F.fetch_package(pkg, root=tmp_path / "assets", use_clients=False, deadline_s=1.5)
        assert time.monotonic() - t0 < 10
    assert list((tmp_path / "assets").iterdir()) == []


def test_killed_mid_download_leaves_nothing_under_the_final_name(tmp_path, deb):
    root = tmp_path / "assets"
    data = deb.read_bytes()
    with A.Server({"/fake.deb": data}, stall=("/fake.deb",)) as srv:
        pkg = A.deb_package(srv.url("/fake.deb"), deb)
        spec = json.dumps(asdict(pkg))
        code = ("import json,sys\nfrom urbanarena.render.assets.registry import AssetPackage, FileGroup\n"
                "from urbanarena.render.assets.fetch import fetch_package\n"
                "d=json.loads(sys.argv[1]); d['groups']=tuple(FileGroup(**{**g,'members':tuple(g['members'])}) "
                "for g in d['groups'])\nfetch_package(AssetPackage(**d), root=sys.argv[2], use_clients=False)\n")
        env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
        proc = subprocess.Popen([sys.executable, "-c", code, spec, str(root)], env=env)
        try:
            deadline = time.monotonic() + 60
            partial = []
            while time.monotonic() < deadline and not partial:
                partial = [p for p in root.glob(".tmp-*/download/*") if p.stat().st_size > 0]
                time.sleep(0.05)
            assert partial, "the child never started writing"
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert not (root / pkg.key).exists()
        assert F.package_status([pkg], root)[0]["installed"] is False
        assert F.read_manifest(pkg, root) is None
        # the next fetch clears the dead process's work folder and installs the whole package
        srv.release()
        rep = F.fetch_package(pkg, root=root, use_clients=False)
    assert rep.files == 6 and sorted(p.name for p in root.iterdir()) == sorted([pkg.key, "licences.json"])


def test_status_and_cli(tmp_path, deb, monkeypatch):
    from typer.testing import CliRunner

    from urbanarena.cli.main import app
    from urbanarena.render.assets import registry

    monkeypatch.setenv("URBANARENA_HOME", str(tmp_path / "home"))
    with A.Server({"/fake.deb": deb.read_bytes()}) as srv:
        pkg = A.deb_package(srv.url("/fake.deb"), deb)
        monkeypatch.setattr(registry, "PACKAGES", (pkg,))
        runner = CliRunner()
        r = runner.invoke(app, ["assets", "status", "--json"])
        assert r.exit_code == 0, r.output
        out = json.loads(r.stdout)
        assert out["packages"][0]["installed"] is False and out["download_bytes"] == deb.stat().st_size
        r = runner.invoke(app, ["assets", "fetch", "--no-clients", "--json"])
        assert r.exit_code == 0, r.output
        out = json.loads(r.stdout)
        assert out["available"] is True and out["fetched"][0]["files"] == 6 and out["fetched"][0]["via"] == "url"
    r = runner.invoke(app, ["assets", "status"])
    assert "fake-assets 1.0-1 (debian, " in r.stdout and "installed, 6 files" in r.stdout
    assert "CC-BY-3.0: 4 file(s) of fake-assets by Model Maker" in r.stdout
    monkeypatch.setattr(registry, "PACKAGES", (A.with_sha(pkg, "1" * 64),))
    r = runner.invoke(app, ["assets", "fetch", "--no-clients"])  # the server is gone: offline
    assert r.exit_code == 6 and "photo assets unavailable" in r.output and "'realistic' style" in r.output


def test_city_licences_lists_render_assets(tmp_path, deb, monkeypatch):
    from types import SimpleNamespace

    import networkx as nx
    from typer.testing import CliRunner

    from urbanarena.cli.main import app
    from urbanarena.render.assets import registry
    from urbanarena.world import resolve

    monkeypatch.setenv("URBANARENA_HOME", str(tmp_path / "home"))
    city = SimpleNamespace(name="toy", graph=nx.Graph(), meta=SimpleNamespace(
        licence="ODbL-1.0", attribution="© OpenStreetMap contributors", imagery=None))
    monkeypatch.setattr(resolve, "resolve_city", lambda spec: city)
    runner = CliRunner()
    r = runner.invoke(app, ["city", "licences", "toy"])
    assert r.exit_code == 0, r.output
    assert "photographic render assets: none fetched" in r.stdout
    with A.Server({"/fake.deb": deb.read_bytes()}) as srv:
        pkg = A.deb_package(srv.url("/fake.deb"), deb)
        monkeypatch.setattr(registry, "PACKAGES", (pkg,))
        F.fetch_package(pkg, use_clients=False)
    r = runner.invoke(app, ["city", "licences", "toy", "--json"])
    out = json.loads(r.stdout)
    assert sorted((a["licence"], a["files"]) for a in out["render_assets"]) == [
        ("CC-BY-3.0", 4), ("CC0-1.0", 1), ("CC0-1.0", 1)]
    assert out["render_assets_manifest"].endswith("assets/licences.json")
    r = runner.invoke(app, ["city", "licences", "toy"])
    assert "CC-BY-3.0: 4 file(s) of fake-assets 1.0-1 by Model Maker" in r.stdout


def test_a_damaged_install_is_not_installed_and_is_replaced_whole(tmp_path, deb):
    root = tmp_path / "assets"
    with A.Server({"/fake.deb": deb.read_bytes()}) as srv:
        pkg = A.deb_package(srv.url("/fake.deb"), deb)
        d = F.fetch_package(pkg, root=root, use_clients=False).directory
        (d / "people/man/man.png").write_bytes(b"trunc")  # another size than the manifest's
        assert F.read_manifest(pkg, root) is None
        assert F.ensure_assets([pkg], root=root, fetch=False).available is False
        assert F.licence_rows(root) == []  # licences list whole packages only
        rep = F.fetch_package(pkg, root=root, use_clients=False)
        assert srv.requests == 2
    assert rep.via == "url" and (d / "people/man/man.png").read_bytes() == A.expected_files()["people/man/man.png"]
    assert sorted(p.name for p in root.iterdir()) == sorted([pkg.key, "licences.json"])
    assert len(F.licence_rows(root)) == 6


def test_pypi_wheel_over_its_url_extracts_the_listed_members(tmp_path):
    """A wheel (a zip) from a PyPI-like URL: only the listed members, the manifest names the registry."""
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("fakepkg/__init__.py", b"")
        z.writestr("fakepkg/data/brick.png", A.png_bytes())
        z.writestr("fakepkg/data/camera.png", b"not listed")
        z.writestr("fakepkg-1.0.dist-info/LICENSE.txt", b"BSD\n")
    wheel = tmp_path / "fakepkg-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    wheel.write_bytes(buf.getvalue())
    groups = (FileGroup("materials", ("fakepkg/data/brick.png",), dest="materials", strip="fakepkg/data/",
                        licence="CC0-1.0", authors="Texture Maker", source="fakepkg/data/__init__.py", files=1),
              FileGroup("notice", ("fakepkg-1.0.dist-info/LICENSE.txt",), dest="", licence="BSD-3-Clause",
                        authors="Library Team", source="LICENSE.txt", files=1))
    with A.Server({"/" + wheel.name: wheel.read_bytes()}) as srv:
        pkg = F.AssetPackage("fakepkg", "pypi", "1.0", srv.url("/" + wheel.name), A.sha256(wheel),
                             wheel.stat().st_size, groups)
        rep = F.fetch_package(pkg, root=tmp_path / "a", use_clients=False)
    assert rep.via == "url" and rep.files == 2 and pkg.spec == "fakepkg==1.0"
    assert files_on_disk(rep.directory) == {"materials/brick.png", "LICENSE.txt", "manifest.json"}
    assert (rep.directory / "materials/brick.png").read_bytes() == A.png_bytes()
    man = json.loads((rep.directory / "manifest.json").read_text())
    assert man["registry"] == "pypi" and {r["file"]: r["licence"] for r in man["files"]} == {
        "materials/brick.png": "CC0-1.0", "LICENSE.txt": "BSD-3-Clause"}


def test_pip_download_args_name_the_pinned_wheel():
    """pip is told the wheel's own tags (read off its file name, worked out by hand here) and no dependencies."""
    from urbanarena.render.assets.registry import SCIKIT_IMAGE

    assert F.pip_download_args(SCIKIT_IMAGE) == [
        "download", "--no-deps", "--only-binary=:all:", "--dest", ".", "--quiet",
        "--platform", "manylinux_2_24_x86_64", "--platform", "manylinux_2_28_x86_64",
        "--implementation", "cp", "--python-version", "3.11", "--abi", "cp311", "scikit-image==0.26.0"]
    with pytest.raises(AssetFetchError, match="not a wheel"):
        F.pip_download_args(replace(SCIKIT_IMAGE, url="https://example.org/scikit-image-0.26.0.tar.gz"))
