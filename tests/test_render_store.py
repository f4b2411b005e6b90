"""Panorama store: decoding (RGB order, formats), validation errors naming the file,
LRU byte-budget behaviour, graph-only cities."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from conftest import make_city
from urbanarena.errors import ImageFormatError, NoImageryError
from urbanarena.render.panorama_store import LRUByteCache, PanoramaStore, load_equirect
from urbanarena.world.imagery import attach_panorama_folder


def _pano(w=64, h=32, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (h, w, 3), dtype=np.uint8)


def _save(arr: np.ndarray, path, **kw):
    Image.fromarray(arr).save(path, **kw)
    return path


def _toy_city(n=4):
    nodes = {f"n{i}": (48.85 + i * 1e-4, 2.35) for i in range(n)}
    edges = [(f"n{i}", f"n{i+1}", 0.0, 11.1) for i in range(n - 1)]
    return make_city(nodes, edges, heading_deg={f"n{i}": 10.0 * i for i in range(n)})


# ------------------------------------------------------------------ decoding
@pytest.mark.parametrize("suffix,kw", [(".png", {}), (".webp", {"lossless": True})])
def test_lossless_formats_round_trip_rgb(tmp_path, suffix, kw):
    arr = _pano()
    p = _save(arr, tmp_path / f"p{suffix}", **kw)
    out = load_equirect(p)
    assert out.dtype == np.uint8 and out.shape == (32, 64, 3)
    assert np.array_equal(out, arr)  # channel order preserved (Pillow wrote RGB)


def test_jpeg_red_is_red(tmp_path):
    arr = np.zeros((32, 64, 3), np.uint8)
    arr[..., 0] = 255
    out = load_equirect(_save(arr, tmp_path / "red.jpg", quality=95))
    assert out[..., 0].min() >= 245 and out[..., 1:].max() <= 10


def test_grey_and_alpha_become_rgb(tmp_path):
    g = np.full((32, 64), 77, np.uint8)
    out = load_equirect(_save(g, tmp_path / "g.png"))
    assert out.shape == (32, 64, 3) and (out == 77).all()
    rgba = np.zeros((32, 64, 4), np.uint8)
    rgba[..., 2] = 200
    rgba[..., 3] = 10
    out = load_equirect(_save(rgba, tmp_path / "a.png"))
    assert out.shape == (32, 64, 3) and (out[..., 2] == 200).all() and (out[..., :2] == 0).all()


def test_max_width_reduces_keeping_2_to_1(tmp_path):
    arr = np.tile(np.arange(256, dtype=np.uint8)[None, :, None], (128, 1, 3))
    out = load_equirect(_save(arr, tmp_path / "big.png"), max_width=100)
    assert out.shape == (50, 100, 3)
    # INTER_AREA of a horizontal ramp: column j averages source columns 2.56 j .. 2.56 (j+1)
    assert abs(int(out[0, 50, 0]) - round(2.56 * 50.5 - 0.5)) <= 1


# ---------------------------------------------------------------- bad input
def test_not_2_to_1_names_the_file(tmp_path):
    p = _save(_pano(60, 32), tmp_path / "wide.png")
    with pytest.raises(ImageFormatError) as ei:
        load_equirect(p)
    assert ei.value.path == str(p) and "2:1" in str(ei.value) and "60x32" in str(ei.value)


def test_truncated_empty_missing_garbage(tmp_path):
    p = _save(_pano(256, 128), tmp_path / "t.jpg", quality=90)
    data = p.read_bytes()
    for keep in (len(data) // 3, len(data) - 200):  # badly and barely truncated
        p.write_bytes(data[:keep])
        with pytest.raises(ImageFormatError) as ei:
            load_equirect(p)
        assert str(p) in str(ei.value)
    e = tmp_path / "empty.jpg"
    e.write_bytes(b"")
    with pytest.raises(ImageFormatError, match="empty"):
        load_equirect(e)
    with pytest.raises(ImageFormatError, match="not found"):
        load_equirect(tmp_path / "nope.jpg")
    gtxt = tmp_path / "text.png"
    gtxt.write_text("not an image")
    with pytest.raises(ImageFormatError, match="not a readable image"):
        load_equirect(gtxt)


@pytest.mark.shared
@pytest.mark.parametrize("name,size", [("e1_without_exif.jpg", "256x144"), ("invalid_exif.jpg", "4608x2592")])
def test_shared_bad_panoramas(shared_dir, name, size):
    p = shared_dir / "data" / "panoramas" / "bad" / name
    if not p.is_file():
        pytest.skip(f"{p} not found")
    with pytest.raises(ImageFormatError) as ei:
        load_equirect(p)
    assert ei.value.path == str(p)
    assert size in str(ei.value) and "2:1" in str(ei.value)


@pytest.mark.shared
def test_shared_geovisio_loads(shared_dir):
    p = shared_dir / "data" / "panoramas" / "geovisio" / "pixel3_photosphere.jpg"
    if not p.is_file():
        pytest.skip(f"{p} not found")
    out = load_equirect(p)
    assert out.shape == (512, 1024, 3)
    ref = np.asarray(Image.open(p).convert("RGB"))
    assert np.abs(out.astype(int) - ref.astype(int)).mean() < 1.0  # same pixels as Pillow's RGB decode


# ------------------------------------------------------------------ LRU cache
def test_lru_byte_budget_evicts_least_recently_used():
    c: LRUByteCache[np.ndarray] = LRUByteCache(budget_bytes=250)
    a, b, d = np.zeros(100, np.uint8), np.ones(100, np.uint8), np.full(100, 2, np.uint8)
    c.put("a", a)
    c.put("b", b)
    assert c.get("a") is a  # a becomes most recent
    c.put("d", d)  # 300 > 250: evict LRU = b
    assert c.keys() == ["a", "d"]
    assert c.get("b") is None
    s = c.stats
    assert (s.hits, s.misses, s.evictions, s.items, s.bytes) == (1, 1, 1, 2, 200)
    big = np.zeros(1000, np.uint8)
    c.put("big", big)  # larger than the budget: kept alone
    assert c.keys() == ["big"] and c.stats.evictions == 3 and c.stats.bytes == 1000
    c.put("small", a)
    assert c.keys() == ["small"]


def test_store_caches_and_evicts(tmp_path):
    city = _toy_city(4)
    for i in range(4):
        _save(_pano(seed=i), tmp_path / f"n{i}.png")
    attach_panorama_folder(city, tmp_path, "{node}.png", yaw_offset_deg=5.0)
    one = 64 * 32 * 3
    store = PanoramaStore(city, budget_bytes=int(2.5 * one))
    p0 = store.get("n0")
    assert np.array_equal(p0, _pano(seed=0))
    assert not p0.flags.writeable
    assert store.get("n0") is p0
    store.get("n1")
    store.get("n0")
    store.get("n2")  # evicts n1 (least recently used)
    s = store.stats
    assert (s.hits, s.misses, s.evictions, s.items, s.bytes) == (2, 3, 1, 2, 2 * one)
    assert set(store.cache.keys()) == {"n0", "n2"}
    assert store.centre_bearing_deg("n3") == pytest.approx(35.0)
    with pytest.raises(KeyError):
        store.get("zz")


def test_threads_asking_for_one_panorama_at_once_decode_it_once(tmp_path, monkeypatch):
    import threading

    import urbanarena.render.panorama_store as ps

    city = _toy_city(2)
    for i in range(2):
        _save(_pano(seed=i), tmp_path / f"n{i}.png")
    attach_panorama_folder(city, tmp_path, "{node}.png")
    store = PanoramaStore(city)
    decodes: list[str] = []
    gate = threading.Event()
    real = ps.load_equirect

    def slow(path, max_width=None):
        decodes.append(path.name)
        gate.wait(5)  # hold the first decode until every thread has asked
        return real(path, max_width)

    monkeypatch.setattr(ps, "load_equirect", slow)
    got: list = []
    threads = [threading.Thread(target=lambda n=n: got.append(store.get(n))) for n in ["n0"] * 8 + ["n1"] * 4]
    for t in threads:
        t.start()
    while store.stats.misses < 12:  # every thread has looked and missed
        threading.Event().wait(0.01)
    gate.set()
    for t in threads:
        t.join(10)
    assert sorted(decodes) == ["n0.png", "n1.png"]  # once each, not 12 times
    assert len(got) == 12 and sum(g is store.get("n0") for g in got) == 8
    assert np.array_equal(store.get("n1"), _pano(seed=1))


def test_store_missing_file_names_it(tmp_path):
    city = _toy_city(2)
    attach_panorama_folder(city, tmp_path, "{node}.jpg")
    store = PanoramaStore(city)
    with pytest.raises(ImageFormatError) as ei:
        store.get("n1")
    assert ei.value.path == str(tmp_path.resolve() / "n1.jpg")


def test_graph_only_city_says_it_needs_images():
    with pytest.raises(NoImageryError, match="graph-only.*needs panorama images"):
        PanoramaStore(_toy_city(2))
