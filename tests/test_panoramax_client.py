"""The Panoramax client against the fake STAC server (tests/panoramax_fake.py) on 127.0.0.1: paging,
injected 429/5xx, dropped and resumed downloads, verification, the cache. No real data needed: the
pictures are synthetic equirectangular JPEGs made here.

Expected values are worked from what the server holds: 10 pictures in the bbox with a page size of 3 are
ceil(10 / 3) = 4 search pages; the bytes of a resumed file equal the served bytes; a 429 with
``Retry-After: 1`` means the next request comes at least 1 s later.
"""

from __future__ import annotations

import hashlib
import math

import pytest

pytest.importorskip("pystac_client", reason="the Panoramax client needs pystac-client (extra 'panoramax')")

from panoramax_fake import FakePanoramax, FakePicture, heading_pano, jpeg_bytes  # noqa: E402
from urbanarena.world.importers.panoramax.client import (  # noqa: E402
    PanoramaxClient,
    PanoramaxError,
    api_url,
    sha256_multihash,
)

BBOX = (2.0, 48.0, 2.01, 48.01)


def pictures(n: int = 10, width: int = 256) -> list[FakePicture]:
    out = []
    for k in range(n):
        h = (37.0 * k) % 360
        out.append(FakePicture(f"p{k:02d}", "seq-a" if k < 6 else "seq-b", 48.001 + 0.0005 * k, 2.001 + 0.0005 * k,
                               h, f"2024-05-01T10:00:{k:02d}Z", jpeg_bytes(heading_pano(h, width, seed=k)),
                               licence="CC-BY-SA-4.0" if k < 6 else "CC0-1.0",
                               author="Alice" if k < 6 else "Bob"))
    # one outside the bbox: never returned
    out.append(FakePicture("outside", "seq-b", 47.5, 2.5, 0.0, "2024-05-01T11:00:00Z", jpeg_bytes(heading_pano(0.0, 64))))
    return out


def client(srv: FakePanoramax, tmp_path, **kw) -> PanoramaxClient:
    kw.setdefault("backoff_s", 0.01)
    return PanoramaxClient(srv.url, cache_dir=tmp_path / "cache", **kw)


def test_api_url():
    assert api_url("https://panoramax.example.org") == "https://panoramax.example.org/api"
    assert api_url("https://panoramax.example.org/api/") == "https://panoramax.example.org/api"
    with pytest.raises(PanoramaxError):
        api_url("ftp://x")


def test_pages_through_every_result(tmp_path):
    pics = pictures()
    with FakePanoramax(pics) as srv:
        c = client(srv, tmp_path, page_size=3)
        got = c.search(BBOX)
        pages = [r for r in srv.log if r[1] == "/api/search"]
    assert [p.id for p in got] == [f"p{k:02d}" for k in range(10)]  # served order: sequence, time, id
    assert len(pages) == math.ceil(10 / 3) and all(r[3] == 200 for r in pages)
    p0, p7 = got[0], got[7]
    assert (p0.sequence_id, p0.licence, p0.author) == ("seq-a", "CC-BY-SA-4.0", "Alice")
    assert (p7.sequence_id, p7.licence, p7.author) == ("seq-b", "CC0-1.0", "Bob")
    assert p0.heading_deg == 0.0 and p7.heading_deg == pytest.approx(37.0 * 7 % 360)
    assert p0.lat == pytest.approx(48.001) and p0.lon == pytest.approx(2.001)
    assert p0.camera == "GoPro Max" and p0.field_of_view_deg == 360
    assert p0.source_url == f"{srv.api}/collections/seq-a/items/p00"
    assert p0.image_url == f"{srv.api}/pictures/p00/hd.jpg" and p0.asset == "hd"
    assert p0.size_bytes == len(pics[0].data) and p0.checksum == "1220" + hashlib.sha256(pics[0].data).hexdigest()


def test_survives_429_and_5xx_and_honours_retry_after(tmp_path):
    with FakePanoramax(pictures(), retry_after_s=1) as srv:
        srv.faults["/api/search"] = ["429", "503", "500"]
        srv.faults["/api/collections/seq-b"] = ["500"]
        srv.faults["/api/pictures/p03/hd.jpg"] = ["503", "429"]
        c = client(srv, tmp_path, page_size=4)
        got = c.search(BBOX)
        c.fetch(got[3])
        log = list(srv.log)
    assert len(got) == 10
    search = [r for r in log if r[1] == "/api/search"]
    assert [r[3] for r in search[:4]] == [429, 503, 500, 200]
    # Retry-After: 1 on the 429 and the 503: each following try waits at least 1 s
    assert search[1][0] - search[0][0] >= 1.0 and search[2][0] - search[1][0] >= 1.0
    assert [r[3] for r in log if r[1] == "/api/collections/seq-b"] == [500, 200]
    img = [r for r in log if r[1] == "/api/pictures/p03/hd.jpg"]
    assert [r[3] for r in img] == [503, 429, 200] and img[2][0] - img[1][0] >= 1.0
    assert (tmp_path / "cache").rglob("p03.hd.jpg")


def test_gives_up_after_the_retry_budget(tmp_path):
    with FakePanoramax(pictures()) as srv:
        srv.faults["/api/search"] = ["500"] * 10
        c = client(srv, tmp_path, max_retries=2)
        with pytest.raises(PanoramaxError, match="search failed"):
            c.search(BBOX)
        assert [r[3] for r in srv.log if r[1] == "/api/search"] == [500, 500, 500]  # 1 + 2 retries


def test_dropped_download_resumes_with_range_and_verifies(tmp_path):
    pics = pictures(width=2048)
    with FakePanoramax(pics) as srv:
        c = client(srv, tmp_path)
        got = {p.id: p for p in c.search(BBOX)}
        srv.faults["/api/pictures/p05/hd.jpg"] = ["drop", "drop"]
        path = c.fetch(got["p05"])
        reqs = [r for r in srv.log if r[1] == "/api/pictures/p05/hd.jpg"]
        n_before = len(srv.log)
        again = c.fetch(got["p05"])  # cached: verified and reused without a request
        assert len(srv.log) == n_before and again == path
    data = pics[5].data
    assert path.read_bytes() == data and not path.with_name(path.name + ".part").exists()
    half = len(data) // 2
    # first try: the whole file, half of it sent, then the connection drops; each later try asks for the
    # rest from the bytes kept (whole 4 KiB reads: at most what was delivered) and gets 206
    assert (reqs[0][3], reqs[0][4]) == (200, None) and [r[3] for r in reqs[1:]] == [206, 206]
    starts = [int(r[4][len("bytes="):-1]) for r in reqs[1:]]
    assert 0 < starts[0] <= half and starts[0] % 4096 == 0
    assert starts[0] < starts[1] <= starts[0] + (len(data) - starts[0]) // 2
    assert c.stats.resumes == 2 and c.stats.fetched == 1 and c.stats.cached == 1
    assert got["p05"].local_path == str(path)


def test_checksum_mismatch_is_refused(tmp_path):
    pics = pictures(3)
    with FakePanoramax(pics) as srv:
        c = client(srv, tmp_path)
        p = c.search(BBOX)[1]
        p.checksum = sha256_multihash(b"something else")
        with pytest.raises(PanoramaxError, match=r"picture p01 .*does not verify: SHA-256"):
            c.fetch(p)
        assert not c.cache_path(p).exists() and not c.cache_path(p).with_name(c.cache_path(p).name + ".part").exists()
        p.checksum, p.size_bytes = None, 5
        with pytest.raises(PanoramaxError, match=r"bytes, expected 5"):
            c.fetch(p)


def test_too_many_drops_give_up(tmp_path):
    with FakePanoramax(pictures(2)) as srv:
        c = client(srv, tmp_path, max_resumes=1)
        p = c.search(BBOX)[0]
        srv.faults[f"/api/pictures/{p.id}/hd.jpg"] = ["drop"] * 5
        with pytest.raises(PanoramaxError, match="dropped 2 times"):
            c.fetch(p)
