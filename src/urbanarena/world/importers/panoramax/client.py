"""Panoramax STAC client: search pictures by bbox, download them resumably into a local cache.

Instance and API
----------------
A Panoramax instance (``https://panoramax.openstreetmap.fr``, the federated
meta-catalogue ``https://api.panoramax.xyz`` ...) serves its STAC API under
``<instance>/api`` (:func:`api_url` appends ``/api`` unless the URL already ends
with it). The landing page must declare STAC item search; ``/search?bbox=W,S,E,N``
returns pictures (STAC items) page by page (``rel="next"`` links), which
``pystac-client`` follows (``limit`` = page size).

Per picture (STAC item) we keep, as :class:`Picture`:

* ``id``; ``collection`` = the **sequence** id;
* position: the item's GeoJSON point ``[lon, lat]`` (WGS84 degrees; kept as given,
  NaN included: validity is judged by the builder, which reports bad pictures);
* ``heading_deg``: ``properties["view:azimuth"]`` (degrees clockwise from true
  north, the bearing of the picture's centre column; ``None`` when absent);
* capture time ``properties["datetime"]``;
* camera from the perspective-imagery extension ``properties["pers:interior_orientation"]``
  (``camera_manufacturer``, ``camera_model``, ``field_of_view`` (360 for
  spherical pictures), ``sensor_array_dimensions`` ``[W, H]`` pixels);
* licence: ``properties["license"]`` (SPDX id), else the item's or its
  collection's ``license`` field; author: the first ``providers`` entry with
  role ``producer`` (item, then collection), else ``properties["geovisio:producer"]``;
  source URL: the item's ``rel="self"`` link (else ``<api>/collections/<seq>/items/<id>``);
* the image asset (``hd`` by default; ``sd`` / ``thumb`` on request): href,
  ``file:size`` (bytes) and ``file:checksum`` (a multihash; ``1220`` + hex =
  SHA-256) when the server gives them.

Rate limits and retries
-----------------------
Every request (search pages, collections, downloads) goes through a
``requests`` session with a ``urllib3`` :class:`~urllib3.util.retry.Retry`:
status 429, 500, 502, 503 and 504 are retried up to ``max_retries`` times with
exponential back-off (``backoff_s * 2**(n-1)``, at most ``max_backoff_s``), and a
``Retry-After`` header (seconds or an HTTP date) on 429/503 is honoured: the
client waits at least that long before the next try. Connection errors are
retried the same way. After the last try :class:`PanoramaxError` names the URL.

Downloads (resumable, verified)
-------------------------------
:meth:`PanoramaxClient.download` writes ``<dest>.part``; when the connection
drops mid-body (or the body is shorter than announced) it asks again with
``Range: bytes=<have>-`` and appends the ``206 Partial Content`` answer (a
``200`` answer restarts the file; the ``Content-Range`` start must equal the
bytes held). It tries ``max_resumes`` times. The finished file must have the
announced length (``Content-Length`` / ``Content-Range`` total) and, when the
item gives them, ``file:size`` bytes and the ``file:checksum`` SHA-256; a
mismatch deletes the part file and raises :class:`PanoramaxError`. Only then is
the file renamed to ``dest``. A ``dest`` already in the cache is re-verified
(size, checksum) and reused without a request.

Cache: ``<cache_dir>/<instance host>/<picture id>.<asset>.jpg``; the default
cache dir is ``<urbanarena home>/panoramax`` (``$URBANARENA_HOME``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence
from urllib.parse import urlparse

from urbanarena.errors import UrbanArenaError

DEFAULT_INSTANCE = "https://api.panoramax.xyz"
#: STAC assets of a Panoramax picture, largest first
ASSETS = ("hd", "sd", "thumb")
RETRY_STATUS = (429, 500, 502, 503, 504)
#: download read size: what a dropped connection can lose of the bytes it did deliver (they are asked again)
CHUNK_BYTES = 4096
#: multihash prefix of a SHA-256 digest (code 0x12, length 0x20)
SHA256_MULTIHASH_PREFIX = "1220"


class PanoramaxError(UrbanArenaError):
    """A Panoramax request failed for good (after retries), an answer is malformed, or a download does not
    verify. The message names the URL (and the picture where known)."""


def api_url(instance: str) -> str:
    """The STAC API root of an instance URL: ``<instance>/api`` unless it already ends with ``/api``.

    Raises:
        PanoramaxError: not an ``http(s)://`` URL.
    """
    u = str(instance).strip().rstrip("/")
    p = urlparse(u)
    if p.scheme not in ("http", "https") or not p.netloc:
        raise PanoramaxError(f"instance {instance!r}: expected an http(s):// URL")
    return u if u.endswith("/api") else u + "/api"


@dataclass
class Picture:
    """One Panoramax picture (a STAC item), as searched; see the module docstring for the fields' sources.

    ``lat``/``lon`` are WGS84 degrees as the server gave them (may be NaN); ``heading_deg`` degrees
    clockwise from true north (``None``: the item has no ``view:azimuth``); ``local_path`` is set once
    downloaded.
    """

    id: str
    sequence_id: str | None
    lat: float
    lon: float
    heading_deg: float | None
    captured_at: str | None
    licence: str | None
    author: str | None
    source_url: str
    image_url: str | None
    asset: str
    instance: str
    field_of_view_deg: float | None = None
    camera: str | None = None
    sensor_px: tuple[int, int] | None = None
    size_bytes: int | None = None
    checksum: str | None = None
    local_path: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["sensor_px"] = list(self.sensor_px) if self.sensor_px else None
        return d


@dataclass
class DownloadStats:
    """Counters of a client's downloads: files fetched, reused from the cache, resumed ranges, bytes."""

    fetched: int = 0
    cached: int = 0
    resumes: int = 0
    restarts: int = 0
    bytes: int = 0


def _num(v: Any) -> float:
    """``float(v)`` for a JSON number (not a bool) or numeric text, else NaN."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        return math.nan
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return math.nan


def _obj(v: Any) -> dict[str, Any]:
    """``v`` when it is a JSON object, else ``{}`` (a malformed member reads as absent)."""
    return v if isinstance(v, dict) else {}


def _text(v: Any) -> str | None:
    """``v`` as text when it is a non-empty string or a number, else ``None``."""
    if isinstance(v, str):
        return v or None
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    return None


def _producer(providers: Any) -> str | None:
    if not isinstance(providers, list):
        return None
    named = [p for p in providers if isinstance(p, dict) and _text(p.get("name"))]
    for p in named:
        if isinstance(p.get("roles"), list) and "producer" in p["roles"]:
            return _text(p["name"])
    return _text(named[0]["name"]) if named else None


def parse_item(item: dict[str, Any], api: str, asset: str = "hd",
               collections: dict[str, dict[str, Any]] | None = None) -> Picture:
    """A STAC item dict (Panoramax picture) -> :class:`Picture` (module docstring for the fields).

    Members of the wrong JSON type read as absent (a position that is not two numbers becomes NaN, which
    :func:`~urbanarena.world.importers.panoramax.build.validate_picture` reports and skips).

    Args:
        api: the API root (for the default source URL and the ``instance`` field).
        asset: preferred image asset; falls back to the next larger/smaller of :data:`ASSETS`.
        collections: sequence metadata by id (licence/author fallback).
    Raises:
        PanoramaxError: not a STAC item (no ``id``, or one that is not a string or a number).
    """
    pid = _text(item.get("id")) if isinstance(item, dict) else None
    if pid is None:
        raise PanoramaxError(f"{api}: a search result without an id: {str(item)[:200]}")
    geom = _obj(item.get("geometry"))
    coords = geom.get("coordinates")
    if geom.get("type") != "Point" or not isinstance(coords, (list, tuple)) or len(coords) < 2:
        lon = lat = math.nan
    else:
        lon, lat = _num(coords[0]), _num(coords[1])
    props = _obj(item.get("properties"))
    seq = _text(item.get("collection"))
    coll = _obj((collections or {}).get(seq)) if seq is not None else {}
    heading = props.get("view:azimuth")
    heading_deg = _num(heading) if heading is not None else None
    if heading_deg is not None and not math.isfinite(heading_deg):
        heading_deg = None
    io = _obj(props.get("pers:interior_orientation"))
    fov = _num(io.get("field_of_view")) if io.get("field_of_view") is not None else None
    fov = fov if fov is not None and math.isfinite(fov) else None
    cam = " ".join(t for t in (_text(io.get(k)) for k in ("camera_manufacturer", "camera_model")) if t) or None
    dims = io.get("sensor_array_dimensions")
    sensor = None
    if isinstance(dims, (list, tuple)) and len(dims) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) and 0 < v < 1 << 31 for v in dims):
        sensor = (int(dims[0]), int(dims[1]))
    licence = _text(props.get("license")) or _text(item.get("license")) or _text(coll.get("license"))
    author = (_producer(item.get("providers")) or _producer(props.get("providers"))
              or _producer(coll.get("providers")) or _text(props.get("geovisio:producer")))
    links = item.get("links") if isinstance(item.get("links"), list) else []
    self_link = next((_text(lk.get("href")) for lk in links
                      if isinstance(lk, dict) and lk.get("rel") == "self" and _text(lk.get("href"))), None)
    source = self_link or f"{api}/collections/{seq}/items/{pid}"
    assets = _obj(item.get("assets"))
    order = [asset] + [a for a in ASSETS if a != asset]
    chosen = next((a for a in order if _text(_obj(assets.get(a)).get("href"))), None)
    a = _obj(assets.get(chosen))
    size = a.get("file:size")
    size_ok = isinstance(size, (int, float)) and not isinstance(size, bool) and 0 <= size < 1 << 53
    return Picture(
        id=pid, sequence_id=seq, lat=lat, lon=lon, heading_deg=heading_deg,
        captured_at=_text(props.get("datetime")), licence=licence, author=author, source_url=source,
        image_url=_text(a.get("href")), asset=chosen or asset, instance=api,
        field_of_view_deg=fov, camera=cam, sensor_px=sensor,
        size_bytes=int(size) if size_ok else None,
        checksum=_text(a.get("file:checksum")),
    )


class PanoramaxClient:
    """Search and download pictures from one Panoramax instance (module docstring: retries, resume, cache).

    Args:
        instance: instance URL (default :data:`DEFAULT_INSTANCE`); ``/api`` is appended when missing.
        cache_dir: download cache root (default ``<urbanarena home>/panoramax``).
        asset: image asset to download: ``hd`` (full resolution, default), ``sd`` or ``thumb``.
        page_size: items per search page (the STAC ``limit``).
        max_retries: tries after the first, per request, on 429/5xx and connection errors.
        backoff_s, max_backoff_s: exponential back-off between retries (seconds).
        max_resumes: ranged re-requests per download after a dropped connection.
        timeout_s: connect/read timeout per request (seconds).
        user_agent: the User-Agent header.
    Raises:
        PanoramaxError: a bad instance URL.
        ValueError: an unknown asset or a bad number.
    """

    def __init__(self, instance: str = DEFAULT_INSTANCE, *, cache_dir: str | Path | None = None, asset: str = "hd",
                 page_size: int = 100, max_retries: int = 5, backoff_s: float = 0.5, max_backoff_s: float = 30.0,
                 max_resumes: int = 5, timeout_s: float = 30.0, user_agent: str | None = None):
        if asset not in ASSETS:
            raise ValueError(f"asset must be one of {', '.join(ASSETS)}, got {asset!r}")
        if page_size < 1 or max_retries < 0 or max_resumes < 0 or timeout_s <= 0:
            raise ValueError("page_size >= 1, max_retries >= 0, max_resumes >= 0 and timeout_s > 0 are required")
        self.api = api_url(instance)
        if cache_dir is None:
            from urbanarena import paths

            cache_dir = paths.home() / "panoramax"
        host = re.sub(r"[^A-Za-z0-9._-]+", "_", urlparse(self.api).netloc) or "instance"
        self.cache_dir = Path(cache_dir) / host
        self.asset = asset
        self.page_size = int(page_size)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self.max_resumes = int(max_resumes)
        self.timeout_s = float(timeout_s)
        self.user_agent = user_agent or "urbanarena (+https://panoramax.fr STAC client)"
        self.stats = DownloadStats()
        self._session = None

    # ------------------------------------------------------------------ HTTP
    def retry_policy(self):
        """The ``urllib3`` :class:`~urllib3.util.retry.Retry` every request uses (module docstring)."""
        from urllib3.util.retry import Retry

        Retry.DEFAULT_BACKOFF_MAX = self.max_backoff_s  # older urllib3 reads the class attribute
        kwargs = dict(total=self.max_retries, connect=self.max_retries, read=self.max_retries,
                      status=self.max_retries, status_forcelist=RETRY_STATUS,
                      allowed_methods=frozenset({"GET", "HEAD", "POST"}), backoff_factor=self.backoff_s,
                      respect_retry_after_header=True, raise_on_status=True)
        try:
            return Retry(backoff_max=self.max_backoff_s, **kwargs)
        except TypeError:  # urllib3 < 2
            return Retry(**kwargs)

    def session(self):
        """The ``requests`` session with the retry policy mounted (created on first use)."""
        if self._session is None:
            import requests
            from requests.adapters import HTTPAdapter

            s = requests.Session()
            adapter = HTTPAdapter(max_retries=self.retry_policy())
            s.mount("http://", adapter)
            s.mount("https://", adapter)
            s.headers["User-Agent"] = self.user_agent
            self._session = s
        return self._session

    def _stac_io(self):
        from pystac_client.stac_api_io import StacApiIO

        io = StacApiIO(headers={"User-Agent": self.user_agent}, timeout=self.timeout_s,
                       max_retries=self.retry_policy())
        return io

    def _get_json(self, url: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        import requests

        try:
            r = self.session().get(url, params=params, timeout=self.timeout_s)
            r.raise_for_status()
            return r.json()
        except requests.RequestException as e:
            raise PanoramaxError(f"{url}: request failed after {self.max_retries} retries: {e}") from e
        except ValueError as e:
            raise PanoramaxError(f"{url}: not JSON: {e}") from e

    # ---------------------------------------------------------------- search
    def search_items(self, bbox: Sequence[float], max_items: int | None = None) -> Iterator[dict[str, Any]]:
        """Raw STAC items (dicts) of the pictures in ``bbox`` = ``(W, S, E, N)`` WGS84 degrees, all pages.

        Uses ``pystac_client.Client.open(<api>).search(bbox=..., limit=page_size, method="GET")``.

        Raises:
            PanoramaxError: the API cannot be opened or a page fails after retries.
            ValueError: ``max_items`` below 1.
        """
        if max_items is not None and int(max_items) < 1:
            raise ValueError(f"max_items must be >= 1 (or None for all), got {max_items}")
        try:
            from pystac_client import Client
            from pystac_client.exceptions import APIError
        except ImportError as e:  # pragma: no cover - depends on the installation
            raise PanoramaxError("the Panoramax client needs pystac-client: pip install 'urbanarena[panoramax]'") from e
        import requests

        w, s, e, n = (float(v) for v in bbox)
        try:
            client = Client.open(self.api, stac_io=self._stac_io(), timeout=self.timeout_s)
            search = client.search(bbox=[w, s, e, n], limit=self.page_size, max_items=max_items, method="GET")
            yield from search.items_as_dicts()
        except (APIError, requests.RequestException) as err:
            raise PanoramaxError(f"{self.api}: STAC search failed (after {self.max_retries} retries): {err}") from err
        except ValueError as err:  # a page that is not JSON (orjson/json decode errors are ValueErrors)
            raise PanoramaxError(f"{self.api}: a STAC search page is not valid JSON: {err}") from err

    def collection(self, sequence_id: str) -> dict[str, Any]:
        """The STAC collection (sequence) ``<api>/collections/<id>`` as a dict.

        Raises:
            PanoramaxError: the request fails after retries or the answer is not JSON.
        """
        return self._get_json(f"{self.api}/collections/{sequence_id}")

    def search(self, bbox: Sequence[float], max_items: int | None = None,
               with_collections: bool = True) -> list[Picture]:
        """Pictures in ``bbox`` (``W, S, E, N`` WGS84 degrees) as :class:`Picture` records, in search order.

        With ``with_collections`` each sequence's collection is fetched once for the licence/author
        fallback (module docstring).

        Raises:
            PanoramaxError: see :meth:`search_items`, :meth:`collection`.
        """
        items = list(self.search_items(bbox, max_items=max_items))
        colls: dict[str, dict[str, Any]] = {}
        if with_collections:
            for seq in sorted({str(i.get("collection")) for i in items if i.get("collection") is not None}):
                colls[seq] = self.collection(seq)
        return [parse_item(i, self.api, self.asset, colls) for i in items]

    # ------------------------------------------------------------- download
    def cache_path(self, picture: Picture) -> Path:
        """Where ``picture`` is cached: ``<cache_dir>/<host>/<id>.<asset>.jpg`` (:func:`cache_file_name`)."""
        return self.cache_dir / cache_file_name(picture.id, picture.asset)

    def fetch(self, picture: Picture) -> Path:
        """Download ``picture``'s image into the cache (or reuse it); sets ``picture.local_path``.

        Raises:
            PanoramaxError: no image asset, a failed or unverifiable download.
        """
        if not picture.image_url:
            raise PanoramaxError(f"picture {picture.id}: no image asset ({'/'.join(ASSETS)}) in its STAC item")
        dest = self.cache_path(picture)
        self.download(picture.image_url, dest, size_bytes=picture.size_bytes, checksum=picture.checksum,
                      what=f"picture {picture.id}")
        picture.local_path = str(dest)
        return dest

    def download(self, url: str, dest: str | Path, *, size_bytes: int | None = None, checksum: str | None = None,
                 what: str | None = None) -> Path:
        """Download ``url`` to ``dest`` resumably and verify it (module docstring).

        Args:
            size_bytes: expected size (``file:size``), checked when given.
            checksum: expected multihash (``file:checksum``; SHA-256 ``1220...`` is checked, other hash
                functions are ignored).
            what: names the download in errors (e.g. ``"picture <id>"``).
        Returns: ``dest``.
        Raises:
            PanoramaxError: the request fails after retries, the connection keeps dropping
                (more than ``max_resumes`` times), or size/checksum do not match.
        """
        import requests

        dest = Path(dest)
        label = f"{what} ({url})" if what else url
        want_sha = _sha256_of_multihash(checksum)
        if dest.is_file():
            problem = _verify(dest, size_bytes, want_sha)
            if problem is None:
                self.stats.cached += 1
                return dest
            dest.unlink()
        dest.parent.mkdir(parents=True, exist_ok=True)
        part = dest.with_name(dest.name + ".part")
        total: int | None = None
        drops = 0
        while True:
            have = part.stat().st_size if part.exists() else 0
            headers = {"Range": f"bytes={have}-"} if have else {}
            try:
                with self.session().get(url, headers=headers, stream=True, timeout=self.timeout_s) as r:
                    if r.status_code == 416 and have:  # our part file is useless: start again
                        part.unlink()
                        self.stats.restarts += 1
                        continue
                    r.raise_for_status()
                    if r.status_code == 206:
                        start, end, tot = _content_range(r.headers.get("Content-Range"))
                        if start != have:
                            raise PanoramaxError(f"{label}: asked for bytes {have}- but the server sent "
                                                 f"{r.headers.get('Content-Range')!r}")
                        total = tot
                        mode = "ab"
                    else:
                        if have:
                            self.stats.restarts += 1
                        cl = r.headers.get("Content-Length")
                        total = int(cl) if cl is not None and cl.isdigit() else None
                        mode = "wb"
                    with open(part, mode) as f:
                        for chunk in r.iter_content(CHUNK_BYTES):
                            f.write(chunk)
                            self.stats.bytes += len(chunk)
                got = part.stat().st_size
                if total is not None and got < total:
                    raise _ShortBody(f"{got} of {total} bytes")
                break
            except (requests.exceptions.ChunkedEncodingError, requests.exceptions.ConnectionError,
                    requests.exceptions.Timeout, _ShortBody) as e:
                from urllib3.exceptions import MaxRetryError

                if isinstance(e, requests.exceptions.ConnectionError) and e.args and isinstance(e.args[0],
                                                                                                MaxRetryError):
                    raise PanoramaxError(f"{label}: download failed after {self.max_retries} retries: {e}") from e
                drops += 1
                if drops > self.max_resumes:
                    raise PanoramaxError(f"{label}: the connection dropped {drops} times; gave up after "
                                         f"{self.max_resumes} resumes") from e
                self.stats.resumes += 1
                continue
            except requests.RequestException as e:
                raise PanoramaxError(f"{label}: download failed after {self.max_retries} retries: {e}") from e
        problem = _verify(part, size_bytes if size_bytes is not None else total, want_sha)
        if problem is not None:
            part.unlink()
            raise PanoramaxError(f"{label}: downloaded file does not verify: {problem}")
        os.replace(part, dest)
        self.stats.fetched += 1
        return dest


def cache_file_name(picture_id: str, asset: str) -> str:
    """The cache file name of a picture's asset: ``<id>.<asset>.jpg``, characters outside ``[A-Za-z0-9._-]``
    replaced by ``_`` (the node attribute ``image`` of a Panoramax city)."""
    return f"{re.sub(r'[^A-Za-z0-9._-]+', '_', picture_id)}.{asset}.jpg"


class _ShortBody(Exception):
    """The body ended before the announced length (a dropped connection the HTTP stack did not flag)."""


def _content_range(value: str | None) -> tuple[int, int, int | None]:
    m = re.fullmatch(r"\s*bytes\s+(\d+)-(\d+)/(\d+|\*)\s*", value or "")
    if not m:
        raise PanoramaxError(f"malformed Content-Range {value!r}")
    return int(m.group(1)), int(m.group(2)), (int(m.group(3)) if m.group(3) != "*" else None)


def _sha256_of_multihash(checksum: str | None) -> str | None:
    if not checksum:
        return None
    c = checksum.strip().lower()
    if c.startswith(SHA256_MULTIHASH_PREFIX) and len(c) == 4 + 64:
        return c[4:]
    return None


def file_sha256(path: str | Path) -> str:
    """SHA-256 (hex) of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _verify(path: Path, size_bytes: int | None, sha256: str | None) -> str | None:
    size = path.stat().st_size
    if size_bytes is not None and size != size_bytes:
        return f"{size} bytes, expected {size_bytes}"
    if sha256 is not None:
        got = file_sha256(path)
        if got != sha256:
            return f"SHA-256 {got}, expected {sha256}"
    return None


def sha256_multihash(data: bytes) -> str:
    """The ``file:checksum`` multihash of ``data`` (``1220`` + SHA-256 hex), as STAC's file extension writes it."""
    return SHA256_MULTIHASH_PREFIX + hashlib.sha256(data).hexdigest()


__all__ = ["ASSETS", "DEFAULT_INSTANCE", "DownloadStats", "PanoramaxClient", "PanoramaxError", "Picture",
           "api_url", "cache_file_name", "file_sha256", "parse_item", "sha256_multihash"]
