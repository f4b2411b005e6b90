"""Decoded equirectangular panoramas per node, with an LRU cache bounded in bytes.

Images are returned as read-only RGB ``uint8`` arrays ``(H, W, 3)``. Files may be
JPEG, PNG or WebP (decoded by OpenCV; Pillow is the fallback for anything
OpenCV cannot read). Grey or alpha images are converted to RGB (alpha dropped);
16-bit images are reduced to 8 bits. EXIF orientation is ignored: a panorama's
pixel layout is its geometry.

Validation: the file must exist, decode, and be equirectangular — width
``W = 2 * H`` (one pixel of tolerance for odd rounding) and ``H >= 2``.
Every failure raises :class:`~urbanarena.errors.ImageFormatError` naming the file.

Orientation and node lookup come from the city's imagery description
(:mod:`urbanarena.world.imagery`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Generic, Hashable, TypeVar

import cv2
import numpy as np
from PIL import Image, UnidentifiedImageError

from urbanarena.errors import ImageFormatError
from urbanarena.world.city import City
from urbanarena.world.imagery import ImagerySource, centre_bearing_deg, imagery_of

V = TypeVar("V")

#: Default byte budget of a :class:`PanoramaStore` (decoded pixels), 1 GiB.
DEFAULT_BUDGET_BYTES = 1 << 30


@dataclass
class CacheStats:
    """Counters of an :class:`LRUByteCache`."""

    hits: int = 0
    misses: int = 0
    evictions: int = 0
    items: int = 0
    bytes: int = 0
    budget_bytes: int = 0


class LRUByteCache(Generic[V]):
    """Least-recently-used cache bounded by the total size of its values in bytes.

    ``put`` inserts and then evicts least-recently-used entries until the total is
    within the budget (a single value larger than the budget is kept alone until
    the next insertion, so the caller always gets what it asked for). ``get``
    refreshes recency. Thread-safe.

    Args:
        budget_bytes: maximum total ``size_of(value)``.
        size_of: bytes of a value; default ``value.nbytes``.
    """

    def __init__(self, budget_bytes: int, size_of: Callable[[V], int] | None = None):
        if budget_bytes <= 0:
            raise ValueError("budget_bytes must be positive")
        self.budget_bytes = int(budget_bytes)
        self._size_of = size_of or (lambda v: int(v.nbytes))  # type: ignore[attr-defined]
        self._data: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._hits = self._misses = self._evictions = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        """Value for ``key`` (marked most recently used) or ``None`` (counted as a miss)."""
        with self._lock:
            item = self._data.get(key)
            if item is None:
                self._misses += 1
                return None
            self._data.move_to_end(key)
            self._hits += 1
            return item[0]

    def peek(self, key: Hashable) -> V | None:
        """Value for ``key`` (marked most recently used) or ``None``; not counted as a hit or a miss."""
        with self._lock:
            item = self._data.get(key)
            if item is None:
                return None
            self._data.move_to_end(key)
            return item[0]

    def put(self, key: Hashable, value: V) -> None:
        """Insert (or replace) ``key`` and evict LRU entries until within budget."""
        size = int(self._size_of(value))
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._data[key] = (value, size)
            self._bytes += size
            while self._bytes > self.budget_bytes and len(self._data) > 1:
                k, (_, s) = self._data.popitem(last=False)
                self._bytes -= s
                self._evictions += 1

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._data

    def keys(self) -> list[Hashable]:
        """Keys from least to most recently used."""
        with self._lock:
            return list(self._data)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._bytes = 0

    @property
    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(self._hits, self._misses, self._evictions, len(self._data), self._bytes, self.budget_bytes)


# ------------------------------------------------------------------ decoding
def _to_rgb_uint8(arr: np.ndarray, path: Path, bgr: bool) -> np.ndarray:
    if arr.dtype == np.uint16:
        arr = (arr >> 8).astype(np.uint8)
    elif arr.dtype != np.uint8:
        raise ImageFormatError(path, None, f"unsupported pixel type {arr.dtype}")
    if arr.ndim == 2:
        return cv2.cvtColor(arr, cv2.COLOR_GRAY2RGB)
    ch = arr.shape[2]
    if ch == 1:
        return cv2.cvtColor(arr[..., 0], cv2.COLOR_GRAY2RGB)
    if ch == 3:
        return cv2.cvtColor(arr, cv2.COLOR_BGR2RGB) if bgr else np.ascontiguousarray(arr)
    if ch == 4:
        return cv2.cvtColor(arr, cv2.COLOR_BGRA2RGB if bgr else cv2.COLOR_RGBA2RGB)
    raise ImageFormatError(path, None, f"unsupported channel count {ch}")


def check_equirect_size(width: int, height: int, path: str | Path | None = None) -> None:
    """Raise :class:`ImageFormatError` unless ``width x height`` is 2:1 (``|W - 2H| <= 1``, ``H >= 2``)."""
    if height < 2 or abs(width - 2 * height) > 1:
        raise ImageFormatError(
            path, None,
            f"not an equirectangular panorama: {width}x{height} pixels, expected width = 2 x height "
            f"(aspect 2:1, got {width / max(height, 1):.3f}:1)",
        )


def read_image_size(path: str | Path) -> tuple[int, int]:
    """``(width, height)`` from the file header without decoding the pixels.

    Raises:
        ImageFormatError: missing, empty or unrecognised file.
    """
    p = Path(path)
    if not p.is_file():
        raise ImageFormatError(p, None, "panorama file not found")
    if p.stat().st_size == 0:
        raise ImageFormatError(p, None, "empty file")
    try:
        with Image.open(p) as im:
            return im.size
    except Image.DecompressionBombError as e:  # header size past PIL's limit: refused before decoding
        raise ImageFormatError(p, None, f"image too large to decode ({e})") from e
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as e:
        raise ImageFormatError(p, None, f"not a readable image: {e}") from e


def load_equirect(path: str | Path, max_width: int | None = None) -> np.ndarray:
    """Decode and validate an equirectangular panorama.

    Args:
        path: JPEG/PNG/WebP file.
        max_width: if set and the image is wider, it is reduced (OpenCV's
            reduced JPEG decode where possible, then ``INTER_AREA``) to at most
            this width, keeping 2:1. Sampling a view from a panorama much
            finer than the view avoids aliasing and is faster.
    Returns:
        ``(H, W, 3)`` ``uint8`` RGB array, C-contiguous.
    Raises:
        ImageFormatError: missing/empty/undecodable file, not 2:1, truncated data.
    """
    p = Path(path)
    w, h = read_image_size(p)
    check_equirect_size(w, h, p)
    flags = cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION
    if max_width is not None and w > max_width:
        for factor, f in ((8, cv2.IMREAD_REDUCED_COLOR_8), (4, cv2.IMREAD_REDUCED_COLOR_4), (2, cv2.IMREAD_REDUCED_COLOR_2)):
            if w // factor >= max_width:
                flags = f | cv2.IMREAD_IGNORE_ORIENTATION
                break
    try:
        buf = np.fromfile(p, dtype=np.uint8)
    except OSError as e:
        raise ImageFormatError(p, None, f"cannot read file: {e}") from e
    arr = cv2.imdecode(buf, flags)
    if arr is not None:
        rgb = _to_rgb_uint8(arr, p, bgr=True)
    else:
        try:
            with Image.open(p) as im:
                im.load()
                rgb = _to_rgb_uint8(np.asarray(im.convert("RGB")), p, bgr=False)
        except (UnidentifiedImageError, OSError, ValueError, SyntaxError, Image.DecompressionBombError) as e:
            raise ImageFormatError(p, None, f"cannot decode image: {e}") from e
    hh, ww = rgb.shape[:2]
    check_equirect_size(ww, hh, p)
    if max_width is not None and ww > max_width:
        new_w = max_width - (max_width % 2)
        rgb = cv2.resize(rgb, (new_w, new_w // 2), interpolation=cv2.INTER_AREA)
    return np.ascontiguousarray(rgb)


# --------------------------------------------------------------------- store
class PanoramaStore:
    """Panoramas of a city's nodes, decoded on demand and kept in an LRU byte-budget cache.

    Args:
        city: a city with imagery (``city.meta.imagery``).
        budget_bytes: cache budget for decoded pixels (default 1 GiB; a
            5760x2880 RGB panorama takes 49.8 MB).
        max_width: reduce decoded panoramas to at most this width (see
            :func:`load_equirect`); ``None`` keeps full resolution.
        base_dir: folder that a relative imagery ``root`` is resolved against
            (usually the saved city directory).
    Raises:
        NoImageryError: graph-only city (raised here, at construction).
    """

    def __init__(
        self,
        city: City,
        budget_bytes: int = DEFAULT_BUDGET_BYTES,
        max_width: int | None = None,
        base_dir: str | Path | None = None,
    ):
        self.city = city
        self.source: ImagerySource = imagery_of(city, need="rendering panorama views")
        self.max_width = max_width
        self.base_dir = base_dir
        self.cache: LRUByteCache[np.ndarray] = LRUByteCache(budget_bytes)
        self._loading: dict[str, threading.Lock] = {}
        self._loading_lock = threading.Lock()

    def path(self, node: str) -> Path:
        """File of ``node``'s panorama. Raises ``KeyError`` for an unknown node."""
        if node not in self.city:
            raise KeyError(f"unknown node {node!r}")
        return self.source.path_for(node, self.base_dir)

    def get(self, node: str) -> np.ndarray:
        """RGB ``uint8`` ``(H, W, 3)`` panorama of ``node`` (read-only view of the cached array).

        Thread-safe; a panorama is decoded once however many threads ask for it at the same time (the
        others wait for that decode: when many episodes start at one node, the first step of each would
        otherwise decode the same file again).

        Raises:
            KeyError: unknown node.
            ImageFormatError: missing or invalid file (names the file).
        """
        img = self.cache.get(node)
        if img is None:
            with self._loading_lock:
                lock = self._loading.setdefault(node, threading.Lock())
            with lock:
                img = self.cache.peek(node)  # decoded by another thread while this one waited
                if img is None:
                    img = load_equirect(self.path(node), self.max_width)
                    img.setflags(write=False)
                    self.cache.put(node, img)
        return img

    def centre_bearing_deg(self, node: str) -> float:
        """Compass bearing of the centre column of ``node``'s panorama (degrees, [0, 360))."""
        return centre_bearing_deg(self.city, node, self.source)

    @property
    def stats(self) -> CacheStats:
        """Cache counters (hits, misses, evictions, items, bytes, budget)."""
        return self.cache.stats
