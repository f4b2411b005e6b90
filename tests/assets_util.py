"""Hand-made asset packages and a local HTTP server for the asset fetcher's tests (no network).

:func:`build_deb` builds a real ``.deb`` with ``dpkg-deb --build``; :func:`build_tgz` an npm-style tarball;
:class:`Server` serves bytes on 127.0.0.1, optionally stalling after half of a file until released.
"""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
import threading
import zipfile
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from PIL import Image

from urbanarena.render.assets.registry import AssetPackage, FileGroup

#: the 2x2 texture's pixels, row by row (RGB)
PIXELS = [(200, 10, 10), (10, 200, 10), (10, 10, 200), (250, 250, 250)]

OBJ = b"""mtllib man.mtl
v 0 0 0
v 1 0 0
v 0 1 0
v 0 0 1
vt 0 0
vt 1 0
vt 0 1
usemtl skin
f 1/1 2/2 3/3
usemtl cloth
f 1/1 3/3 4/3
"""
MTL = b"""newmtl skin
Kd 0.8 0.6 0.5
map_Kd man.png
newmtl cloth
Kd 0.1 0.1 0.3
"""


def png_bytes() -> bytes:
    im = Image.new("RGB", (2, 2))
    im.putdata(PIXELS)
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


def catalogue_zip() -> bytes:
    """A Sweet Home 3D-like catalogue: one listed model folder, one that must be left out."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("LICENSE.TXT", "CC-BY test licence\n")
        z.writestr("people/", "")
        z.writestr("people/man/man.obj", OBJ)
        z.writestr("people/man/man.mtl", MTL)
        z.writestr("people/man/man.png", png_bytes())
        z.writestr("people/woman/woman.obj", b"v 0 0 0\n")  # not listed
    return buf.getvalue()


#: files of the fake .deb (paths under its root) -> bytes
DEB_FILES = {
    "usr/share/fake/hdri/sky.hdr": b"#?RADIANCE fake sky\n" + bytes(range(256)),
    "usr/share/fake/hdri/unused.hdr": b"not listed\n",
    "usr/share/fake/catalogue.zip": catalogue_zip(),
    "usr/share/doc/fake-assets/copyright": b"Files: *\nLicense: CC0\n",
}

#: files the fake registry entry extracts: cache path -> bytes (worked out by hand from DEB_FILES)
EXPECTED = {
    "hdri/sky.hdr": DEB_FILES["usr/share/fake/hdri/sky.hdr"],
    "copyright": DEB_FILES["usr/share/doc/fake-assets/copyright"],
}


def expected_files() -> dict[str, bytes]:
    z = zipfile.ZipFile(io.BytesIO(DEB_FILES["usr/share/fake/catalogue.zip"]))
    out = dict(EXPECTED)
    for name in ("man/man.obj", "man/man.mtl", "man/man.png"):
        out[f"people/{name}"] = z.read(f"people/{name}")
    out["people/LICENSE.TXT"] = z.read("LICENSE.TXT")
    return out


def build_deb(tmp: Path, files: dict[str, bytes] = DEB_FILES) -> Path:
    root = tmp / "debroot"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(
        "Package: fake-assets\nVersion: 1.0-1\nArchitecture: all\nMaintainer: Test <test@example.org>\n"
        "Description: fake assets for tests\n")
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    out = tmp / "fake-assets_1.0-1_all.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(root), str(out)], check=True,
                   capture_output=True)
    return out


def build_tgz(tmp: Path, files: dict[str, bytes]) -> Path:
    out = tmp / "fake-1.0.0.tgz"
    with tarfile.open(out, "w:gz") as tf:
        for rel, data in files.items():
            info = tarfile.TarInfo(rel)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return out


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def deb_package(url: str, deb: Path) -> AssetPackage:
    """The registry entry of the fake .deb served at ``url``."""
    return AssetPackage(
        name="fake-assets", registry="debian", version="1.0-1", url=url, sha256=sha256(deb),
        size_bytes=deb.stat().st_size,
        groups=(
            FileGroup("sky", ("usr/share/fake/hdri/sky.hdr",), dest="hdri", strip="usr/share/fake/hdri/",
                      licence="CC0-1.0", authors="Sky Author", source="copyright", files=1),
            FileGroup("people", ("people/man/*", "LICENSE.TXT"), dest="people", strip="people/",
                      archive="usr/share/fake/catalogue.zip", licence="CC-BY-3.0", authors="Model Maker",
                      source="LICENSE.TXT", files=4),
            FileGroup("copyright", ("usr/share/doc/fake-assets/copyright",), dest="",
                      strip="usr/share/doc/fake-assets/", licence="CC0-1.0", authors="Packager",
                      source="copyright", files=1),
        ))


def with_sha(pkg: AssetPackage, sha: str) -> AssetPackage:
    return replace(pkg, sha256=sha)


class Server:
    """Serve ``{path: bytes}`` on 127.0.0.1; ``stall`` paths send half their bytes, then wait for
    :meth:`release` (or 60 s) before the rest. ``requests`` counts the GETs."""

    def __init__(self, files: dict[str, bytes], stall: tuple[str, ...] = ()):
        self.files, self.stall, self.requests = files, set(stall), 0
        self._go = threading.Event()
        srv = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def do_GET(self):  # noqa: N802 - http.server's name
                srv.requests += 1
                data = srv.files.get(self.path)
                if data is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.path in srv.stall:
                    half = len(data) // 2
                    self.wfile.write(data[:half])
                    self.wfile.flush()
                    srv._go.wait(60)
                    data = data[half:]
                try:
                    self.wfile.write(data)
                except OSError:
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"

    def release(self) -> None:
        self._go.set()

    def __enter__(self) -> "Server":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
        self.httpd.shutdown()
        self.httpd.server_close()
