"""A fake Panoramax instance for the tests: a STAC API on 127.0.0.1 with injectable faults.

Serves ``/api`` (landing page declaring STAC core + item search), ``/api/search?bbox=W,S,E,N&limit=N``
(GeoJSON FeatureCollection pages chained by ``rel="next"`` links carrying ``page=k``),
``/api/collections/<id>`` (sequences: licence and producer) and ``/api/pictures/<id>/<asset>.jpg``
(the image bytes, with ``Range`` support: ``206 Partial Content`` + ``Content-Range``).

Items look like Panoramax's: point geometry ``[lon, lat]`` (a NaN fix is written ``null``, as
JavaScript's ``JSON.stringify`` writes NaN: JSON has no NaN), ``collection`` = sequence id, ``properties`` with ``datetime``,
``view:azimuth`` (omitted for pictures without heading), ``pers:interior_orientation``
(``camera_manufacturer``, ``camera_model``, ``field_of_view``, ``sensor_array_dimensions``),
``license``; ``providers`` (producer); assets ``hd``/``sd``/``thumb`` with ``file:size`` and
``file:checksum`` (multihash ``1220`` + SHA-256, computed here with hashlib).

Faults: ``server.faults[path]`` is a list consumed one per request to that path: ``"429"`` (with
``Retry-After: <retry_after_s>``), ``"500"``, ``"503"`` or ``"drop"`` (image only: full headers, then
half the body, then the connection is closed). Every request is logged in ``server.log`` as
``(monotonic time, path, query, status, Range header)``.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import numpy as np
from PIL import Image

STAC_CONFORMANCE = [
    "https://api.stacspec.org/v1.0.0/core",
    "https://api.stacspec.org/v1.0.0/item-search",
    "https://api.stacspec.org/v1.0.0/ogcapi-features",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson",
]


@dataclass
class FakePicture:
    """One served picture: where, which way, whose, and the image bytes."""

    id: str
    collection: str
    lat: float
    lon: float
    heading_deg: float | None
    datetime: str
    data: bytes
    licence: str = "CC-BY-SA-4.0"
    author: str = "Test Contributor"
    field_of_view: float | None = 360
    camera: tuple[str, str] = ("GoPro", "Max")
    size_px: tuple[int, int] | None = None


def _js(v: float) -> float | None:
    return v if math.isfinite(v) else None


def heading_pano(heading_deg: float, width: int = 256, seed: int = 0) -> np.ndarray:
    """A synthetic equirectangular picture (``width`` x ``width/2``) whose colour encodes the compass
    bearing: column ``c`` faces ``heading + ((c + 0.5) / W - 0.5) * 360`` degrees; red = 128 + 100 sin(b),
    green = 128 + 100 cos(b), blue = a top-to-bottom ramp (so pitch shows) plus a per-picture offset."""
    h = width // 2
    cols = heading_deg + ((np.arange(width) + 0.5) / width - 0.5) * 360.0
    b = np.radians(cols)
    r = np.broadcast_to(128 + 100 * np.sin(b), (h, width))
    g = np.broadcast_to(128 + 100 * np.cos(b), (h, width))
    bl = np.broadcast_to((np.arange(h)[:, None] * 200 // max(1, h - 1)) + 20 + (seed % 30), (h, width))
    return np.clip(np.stack([r, g, bl], axis=-1), 0, 255).astype(np.uint8)


def jpeg_bytes(img: np.ndarray, quality: int = 92) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, "JPEG", quality=quality)
    return buf.getvalue()


class FakePanoramax:
    """The fake instance (module docstring). Use as a context manager; ``url`` is the instance URL."""

    def __init__(self, pictures: list[FakePicture], retry_after_s: int = 1, max_page: int = 1000):
        self.pictures = sorted(pictures, key=lambda p: (p.collection, p.datetime, p.id))
        self.by_id = {p.id: p for p in self.pictures}
        self.retry_after_s = retry_after_s
        self.max_page = max_page
        self.faults: dict[str, list[str]] = {}
        self.log: list[tuple[float, str, str, int, str | None]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> "FakePanoramax":
        handler = _make_handler(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def api(self) -> str:
        return self.url + "/api"

    def requests_to(self, prefix: str) -> list[tuple[float, str, str, int, str | None]]:
        return [r for r in self.log if r[1].startswith(prefix)]

    # ------------------------------------------------------------------ content
    def item(self, p: FakePicture) -> dict:
        props = {
            "datetime": p.datetime,
            "license": p.licence,
            "pers:interior_orientation": {
                "camera_manufacturer": p.camera[0], "camera_model": p.camera[1],
                **({"field_of_view": p.field_of_view} if p.field_of_view is not None else {}),
                **({"sensor_array_dimensions": list(p.size_px)} if p.size_px else {}),
            },
            "geovisio:producer": p.author,
        }
        if p.heading_deg is not None:
            props["view:azimuth"] = p.heading_deg
        digest = "1220" + hashlib.sha256(p.data).hexdigest()
        assets = {a: {"href": f"{self.api}/pictures/{p.id}/{a}.jpg", "type": "image/jpeg", "roles": ["data"],
                      "file:size": len(p.data), "file:checksum": digest} for a in ("hd", "sd", "thumb")}
        return {
            "type": "Feature", "stac_version": "1.0.0", "id": p.id, "collection": p.collection,
            "geometry": {"type": "Point", "coordinates": [_js(p.lon), _js(p.lat)]},
            "properties": props,
            "providers": [{"name": p.author, "roles": ["producer"]}],
            "assets": assets,
            "links": [{"rel": "self", "type": "application/geo+json",
                       "href": f"{self.api}/collections/{p.collection}/items/{p.id}"},
                      {"rel": "collection", "href": f"{self.api}/collections/{p.collection}"}],
        }

    def collection(self, cid: str) -> dict | None:
        members = [p for p in self.pictures if p.collection == cid]
        if not members:
            return None
        lons = [p.lon for p in members if math.isfinite(p.lon)] or [0.0]
        lats = [p.lat for p in members if math.isfinite(p.lat)] or [0.0]
        return {
            "type": "Collection", "stac_version": "1.0.0", "id": cid, "title": f"sequence {cid}",
            "description": "fake Panoramax sequence", "license": members[0].licence,
            "providers": [{"name": members[0].author, "roles": ["producer"]}],
            "extent": {"spatial": {"bbox": [[min(lons), min(lats), max(lons), max(lats)]]},
                       "temporal": {"interval": [[members[0].datetime, members[-1].datetime]]}},
            "links": [],
        }


def _make_handler(srv: FakePanoramax):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet
            pass

        def _log(self, status: int) -> None:
            u = urlparse(self.path)
            with srv._lock:
                srv.log.append((time.monotonic(), u.path, u.query, status, self.headers.get("Range")))

        def _send_json(self, obj, status: int = 200) -> None:
            body = json.dumps(obj, allow_nan=False).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self._log(status)

        def _fault(self, path: str) -> str | None:
            with srv._lock:
                q = srv.faults.get(path)
                return q.pop(0) if q else None

        def do_GET(self) -> None:  # noqa: N802
            u = urlparse(self.path)
            path = u.path.rstrip("/")
            fault = self._fault(path)
            if fault in ("429", "500", "503"):
                body = b'{"error": "injected"}'
                self.send_response(int(fault))
                if fault in ("429", "503"):
                    self.send_header("Retry-After", str(srv.retry_after_s))
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                self._log(int(fault))
                return
            q = parse_qs(u.query)
            if path == "/api":
                self._send_json({
                    "type": "Catalog", "stac_version": "1.0.0", "id": "fake-panoramax",
                    "description": "fake Panoramax instance for urbanarena tests", "conformsTo": STAC_CONFORMANCE,
                    "links": [{"rel": "self", "href": srv.api, "type": "application/json"},
                              {"rel": "root", "href": srv.api, "type": "application/json"},
                              {"rel": "search", "href": f"{srv.api}/search", "type": "application/geo+json",
                               "method": "GET"},
                              {"rel": "data", "href": f"{srv.api}/collections", "type": "application/json"}],
                })
            elif path == "/api/search":
                w, s, e, n = (float(v) for v in q.get("bbox", ["-180,-90,180,90"])[0].split(","))
                limit = min(int(q.get("limit", ["10"])[0]), srv.max_page)
                page = int(q.get("page", ["0"])[0])
                hits = [p for p in srv.pictures
                        if not (math.isfinite(p.lat) and math.isfinite(p.lon)) or (w <= p.lon <= e and s <= p.lat <= n)]
                chunk = hits[page * limit:(page + 1) * limit]
                links = [{"rel": "self", "href": srv.api + "/search?" + u.query}]
                if (page + 1) * limit < len(hits):
                    links.append({"rel": "next", "type": "application/geo+json", "method": "GET",
                                  "href": f"{srv.api}/search?bbox={w},{s},{e},{n}&limit={limit}&page={page + 1}"})
                self._send_json({"type": "FeatureCollection", "features": [srv.item(p) for p in chunk],
                                 "links": links})
            elif path.startswith("/api/collections/"):
                c = srv.collection(path.split("/")[3])
                self._send_json(c if c is not None else {"error": "not found"}, 200 if c is not None else 404)
            elif path.startswith("/api/pictures/"):
                pid = path.split("/")[3]
                p = srv.by_id.get(pid)
                if p is None:
                    self._send_json({"error": "not found"}, 404)
                    return
                self._send_image(p.data, fault == "drop")
            else:
                self._send_json({"error": "not found"}, 404)

        def _send_image(self, data: bytes, drop: bool) -> None:
            rng = self.headers.get("Range")
            start = 0
            status = 200
            if rng and rng.startswith("bytes=") and rng.endswith("-"):
                start = int(rng[6:-1])
                if start >= len(data):
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(data)}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    self._log(416)
                    return
                status = 206
            body = data[start:]
            self.send_response(status)
            self.send_header("Content-Type", "image/jpeg")
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(len(body)))
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            if drop:
                self.send_header("Connection", "close")
            self.end_headers()
            if drop:
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self._log(status)
                self.close_connection = True
                import socket

                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            self.wfile.write(body)
            self._log(status)

    return Handler


# ---------------------------------------------------------------------- scenes
def exif_fix(path: Path) -> tuple[float, float, float, str]:
    """(lat, lon, GPSImgDirection, ISO capture time) read from a JPEG's EXIF with Pillow."""
    im = Image.open(path)
    ex = im.getexif()
    gps = ex.get_ifd(0x8825)
    lat = sum(float(x) / 60**i for i, x in enumerate(gps[2])) * (-1 if gps[1] == "S" else 1)
    lon = sum(float(x) / 60**i for i, x in enumerate(gps[4])) * (-1 if gps[3] == "W" else 1)
    t = ex.get_ifd(0x8769).get(0x9003, "2021:07:29 00:00:00")
    iso = t[:10].replace(":", "-") + "T" + t[11:] + "Z"
    return lat, lon, float(gps[17]), iso
