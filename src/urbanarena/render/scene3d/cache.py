"""Rendered panoramas on disk, rendered on demand (or all at once with :func:`prerender`).

Layout: one folder per render identity::

    <root>/<scene name>-<key[:16]>/manifest.json     what determines the pixels (see below)
    <root>/<scene name>-<key[:16]>/<node>.png        RGB panorama of a node (lossless PNG)

(``<scene name>-<condition>-<key[:16]>`` for a weather or time of day other than the clear day,
e.g. ``helsinki-rain_night-...``, and ``<scene name>-realistic-...`` for the realistic render style
(:mod:`.styles`); the key differs too, see below: the style is part of the settings, and so is the population:
``settings.population = "snapshot"`` draws each node's people and vehicles, :mod:`.population`, into its panorama.)

``key`` is the SHA-256 of :func:`~urbanarena.render.scene3d.render_identity.render_identity`: renderer version, scene
content hash, :class:`~urbanarena.render.scene3d.render_settings.RenderSettings` (including the weather,
time of day and rain seed whenever they differ from the clear day:
:meth:`~urbanarena.render.scene3d.render_settings.RenderSettings.identity_dict`),
panorama width, eye height, the sign font's SHA-256, the OpenGL driver
(``GL_RENDERER``/``GL_VERSION``: llvmpipe and a GPU driver may differ in the
last bits) and the OpenCV version (remap) — plus the hash of the node poses
(position and centre bearing of every node), so moving a node or changing its
heading renders anew. The root defaults to ``<urbanarena home>/panoramas``.

Files are named after the node id (ids outside ``[A-Za-z0-9_.-]`` are
percent-encoded), so the folder is also a plain ``panorama_folder`` imagery
source (:meth:`RenderedPanoramaStore.imagery_source`). Writes are atomic
(temporary file + ``os.replace``), so concurrent workers never leave a torn
file.

Panorama hashes (:meth:`RenderedPanoramaStore.pixel_hash`) are SHA-256 over the
decoded RGB pixels (with the shape), independent of PNG encoder settings;
frozen task suites store them to detect a machine whose renderer output
differs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
import urllib.parse
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Iterable

import cv2
import numpy as np

from urbanarena.errors import CityFormatError, ImageFormatError
from urbanarena.render.panorama_store import DEFAULT_BUDGET_BYTES, CacheStats, LRUByteCache
from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
from urbanarena.render.scene3d.population_draw import node_population, release_population
from urbanarena.render.scene3d.renderer import (
    DEFAULT_EYE_HEIGHT_M, DEFAULT_PANO_WIDTH, RENDERER_VERSION, RenderSettings, SceneRenderer, render_identity,
)
from urbanarena.render.scene3d.scene import Scene
from urbanarena.world.city import City
from urbanarena.world.imagery import ImagerySource

_SAFE = re.compile(r"^[A-Za-z0-9_.-]+$")
#: zlib level 1, no row filter: ~4x faster than OpenCV's default and about as small on renders
_PNG_PARAMS = [cv2.IMWRITE_PNG_COMPRESSION, 1]
if hasattr(cv2, "IMWRITE_PNG_FILTER"):
    _PNG_PARAMS += [cv2.IMWRITE_PNG_FILTER, cv2.IMWRITE_PNG_FILTER_NONE]


def default_root() -> Path:
    """``<urbanarena home>/panoramas`` (``$URBANARENA_HOME`` or the user cache directory)."""
    from urbanarena.paths import home

    return home() / "panoramas"


def node_file_name(node: str) -> str:
    """``<node>.png``, percent-encoding ids with characters outside ``[A-Za-z0-9_.-]`` (and ``.``/``..``)."""
    if _SAFE.match(node) and node not in (".", ".."):
        return f"{node}.png"
    return urllib.parse.quote(node, safe="").replace(".", "%2E") + ".png"


def poses_hash(poses: dict[str, tuple[float, float, float]]) -> str:
    """SHA-256 of ``{node: (x_m, y_m, centre_bearing_deg)}`` (sorted; positions rounded to 0.1 mm and
    bearings to 1e-6 degrees, far below what a float32 GL pipeline resolves, so a freshly imported city and
    the same city reloaded from disk — derived positions differing by ~1e-9 m — share one cache)."""
    text = json.dumps(sorted((k, [round(float(p[0]), 4), round(float(p[1]), 4), round(float(p[2]), 6)])
                             for k, p in poses.items()), separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def pixel_hash(img: np.ndarray) -> str:
    """SHA-256 (hex) of an image's shape and raw bytes."""
    h = hashlib.sha256(f"{img.shape}|{img.dtype}".encode())
    h.update(np.ascontiguousarray(img).tobytes())
    return h.hexdigest()


def write_png(path: Path, img: np.ndarray) -> None:
    """Write RGB ``img`` as PNG atomically."""
    ok, buf = cv2.imencode(".png", np.ascontiguousarray(img[..., ::-1]), _PNG_PARAMS)
    if not ok:
        raise ImageFormatError(path, None, "PNG encoding failed")
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")  # per process and thread
    tmp.write_bytes(buf.tobytes())
    os.replace(tmp, path)


def read_png(path: Path) -> np.ndarray:
    """Read a cached panorama as RGB ``uint8``. Raises :class:`ImageFormatError` on a damaged file."""
    arr = cv2.imdecode(np.fromfile(path, dtype=np.uint8), cv2.IMREAD_COLOR)
    if arr is None:
        raise ImageFormatError(path, None, "cannot decode cached panorama")
    return np.ascontiguousarray(arr[..., ::-1])


class RenderedPanoramaStore:
    """Panoramas of a city's nodes rendered from its scene, cached on disk and in memory.

    Drop-in for :class:`urbanarena.render.panorama_store.PanoramaStore` where views
    are cut (``get``, ``centre_bearing_deg``, ``path``, ``stats``), so
    :func:`urbanarena.render.views.node_view` works on it.

    Args:
        city: the city (node positions ``x_m``/``y_m``, ``heading_deg`` = centre bearing, 0 when unset).
        scene: its scene (default :func:`scene_from_city`).
        settings: render settings.
        root: cache root (default :func:`default_root`).
        width: panorama width (height = width / 2).
        eye_height_m: camera height above ground.
        budget_bytes: in-memory LRU budget for decoded panoramas.
    """

    def __init__(self, city: City, scene: Scene | None = None, settings: RenderSettings | None = None,
                 root: str | Path | None = None, width: int = DEFAULT_PANO_WIDTH,
                 eye_height_m: float = DEFAULT_EYE_HEIGHT_M, budget_bytes: int = DEFAULT_BUDGET_BYTES):
        self.city = city
        self.scene = scene if scene is not None else scene_from_city(city)
        self.settings = settings or RenderSettings()
        self.width = int(width)
        self.eye_height_m = float(eye_height_m)
        self.poses = {n: node_pose(city, n) for n in city.graph.nodes}
        self.identity = render_identity(self.scene, self.settings, self.width, self.eye_height_m,
                                        poses_hash(self.poses))
        self.key = hashlib.sha256(json.dumps(self.identity, sort_keys=True).encode()).hexdigest()
        safe_name = re.sub(r"[^A-Za-z0-9_.-]", "_", self.scene.name)[:40] or "scene"
        self.dir = Path(root) if root is not None else default_root()
        cond = "" if self.settings.is_clear_day else re.sub(r"[^A-Za-z0-9_.-]", "_", self.settings.condition) + "-"
        style = f"{self.settings.style}-" if self.settings.is_realistic else ""
        self.dir = self.dir / f"{safe_name}-{style}{cond}{self.key[:16]}"
        self.cache: LRUByteCache[np.ndarray] = LRUByteCache(budget_bytes)
        self._renderer: SceneRenderer | None = None
        self.rendered = 0

    # ----------------------------------------------------------- plumbing
    @property
    def renderer(self) -> SceneRenderer:
        """The scene renderer (built on first use: meshes, sign atlas, GL objects)."""
        if self._renderer is None:
            self._renderer = SceneRenderer(self.scene, self.settings)
        return self._renderer

    def release(self) -> None:
        """Free the renderer's GL objects and the decoded panoramas held in memory (the files stay; a later
        call builds a new renderer)."""
        if self._renderer is not None:
            self._renderer.release()
            self._renderer = None
        self.cache = LRUByteCache(self.cache.budget_bytes)

    def _ensure_dir(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        m = self.dir / "manifest.json"
        if not m.is_file():
            tmp = self.dir / f".manifest.{os.getpid()}-{threading.get_ident()}.tmp"
            tmp.write_text(json.dumps(self.identity, indent=2, sort_keys=True, ensure_ascii=False))
            os.replace(tmp, m)

    def path(self, node: str) -> Path:
        """Cache file of ``node``'s panorama. Raises ``KeyError`` for an unknown node."""
        if node not in self.poses:
            raise KeyError(f"unknown node {node!r}")
        return self.dir / node_file_name(node)

    def centre_bearing_deg(self, node: str) -> float:
        """Compass bearing of the centre column of ``node``'s panorama (its ``heading_deg``, 0 when unset)."""
        if node not in self.poses:
            raise KeyError(f"unknown node {node!r}")
        return self.poses[node][2]

    def is_cached(self, node: str) -> bool:
        return self.path(node).is_file()

    # ------------------------------------------------------------ access
    def population(self, node: str):
        """The people and vehicles drawn into ``node``'s panorama (:func:`.population_draw.node_population`:
        ``None`` unless ``settings.population`` is ``snapshot``)."""
        x, y, _ = self.poses[node]
        return node_population(self.scene, self.settings, node, x, y)

    def render(self, node: str) -> np.ndarray:
        """Render ``node``'s panorama now (no cache involved), with its population when the settings have one."""
        x, y, bearing = self.poses[node]
        return render_with_population(self.renderer, x, y, self.eye_height_m, self.width, bearing,
                                       self.population(node))

    def get(self, node: str) -> np.ndarray:
        """RGB ``uint8`` panorama ``(W/2, W, 3)`` of ``node`` (read-only): memory, else disk, else rendered
        and written to disk.

        Raises:
            KeyError: unknown node.
            RendererUnavailableError: it must be rendered and no GL context can be created.
        """
        img = self.cache.get(node)
        if img is not None:
            return img
        p = self.path(node)
        if p.is_file():
            img = read_png(p)
        else:
            img = self.render(node)
            self._ensure_dir()
            write_png(p, img)
            self.rendered += 1
        img.setflags(write=False)
        self.cache.put(node, img)
        return img

    @property
    def stats(self) -> CacheStats:
        return self.cache.stats

    def pixel_hash(self, node: str) -> str:
        """SHA-256 of ``node``'s panorama pixels (see :func:`pixel_hash`)."""
        return pixel_hash(self.get(node))

    def pixel_hashes(self, nodes: Iterable[str] | None = None) -> dict[str, str]:
        """``{node: pixel hash}`` for ``nodes`` (default all, sorted), rendering what is missing."""
        out = {}
        for n in sorted(nodes if nodes is not None else self.poses):
            out[n] = pixel_hash(read_png(self.path(n)) if self.is_cached(n) and n not in self.cache
                                else self.get(n))
        return out

    def imagery_source(self) -> ImagerySource:
        """A ``panorama_folder`` imagery source over the cache folder (centre column = node ``heading_deg``).

        Raises:
            CityFormatError: a node has no ``heading_deg``: this store renders it facing north,
                but the imagery rule cannot orient it (set ``heading_deg`` on every node first).
        """
        lacking = sorted(n for n in self.poses if self.city.node(n).get("heading_deg") is None)
        if lacking:
            raise CityFormatError(None, f"node {lacking[0]}",
                                  f"{len(lacking)} node(s) without heading_deg cannot be described as imagery")
        files = {n: node_file_name(n) for n in self.poses if node_file_name(n) != f"{n}.png"}
        return ImagerySource(
            root=str(self.dir), pattern="{node}.png", files=files or None, yaw_offset_deg=0.0,
            licence="rendered from OpenStreetMap data (ODbL-1.0): produced work",
            attribution=self.scene.attribution or None, redistributable=True, source="rendered",
            notes=f"urbanarena scene renderer {RENDERER_VERSION}, key {self.key[:16]}",
        )

    def missing(self) -> list[str]:
        """Nodes without a cached file (sorted)."""
        return sorted(n for n in self.poses if not self.is_cached(n))


def render_with_population(renderer: SceneRenderer, x: float, y: float, eye: float, width: int, bearing: float,
                            population) -> np.ndarray:
    """A panorama with ``population`` (or none) drawn into it; the population's GL arrays are freed after."""
    try:
        return renderer.render_panorama(x, y, eye, width, bearing, dynamic=population)
    finally:
        release_population(renderer, population)


# ------------------------------------------------------------------ prerender
_W: dict = {}


def _worker_init(scene_dict: dict, settings: dict, width: int, eye: float, threads: int) -> None:
    os.environ["LP_NUM_THREADS"] = str(threads)  # before the GL context exists
    scene = Scene.from_dict(scene_dict)
    _W["renderer"] = SceneRenderer(scene, RenderSettings(**{k: tuple(v) if isinstance(v, list) else v
                                                             for k, v in settings.items()}))
    _W["width"], _W["eye"] = width, eye


def _worker_render(job: tuple[str, float, float, float, str]) -> str:
    node, x, y, bearing, path = job
    r = _W["renderer"]
    img = render_with_population(r, x, y, _W["eye"], _W["width"], bearing,
                                  node_population(r.scene, r.settings, node, x, y))
    write_png(Path(path), img)
    return node


def prerender(store: RenderedPanoramaStore, nodes: Iterable[str] | None = None, workers: int = 1,
              progress: Callable[[int, int], None] | None = None) -> dict:
    """Render and cache every missing panorama of ``store`` (``nodes``: default all).

    Args:
        workers: processes; ``1`` renders in this process (llvmpipe still uses all
            cores for rasterising); ``> 1`` starts that many ``spawn`` workers, each
            building its own renderer and using ``LP_NUM_THREADS = cores / workers``.
        progress: called with ``(0, total)`` before the first panorama and ``(done, total)`` after each.
    Returns:
        ``{"rendered": n, "cached": m, "seconds": s, "per_panorama_s": s / n}``.
    """
    wanted = sorted(set(nodes) if nodes is not None else store.poses)
    todo = [n for n in wanted if not store.is_cached(n)]
    total = len(todo)
    cached = len(wanted) - total
    t0 = time.perf_counter()
    if total:
        store._ensure_dir()
        if progress:
            progress(0, total)
    if workers <= 1 or total <= 1:
        for i, n in enumerate(todo):
            write_png(store.path(n), store.render(n))
            if progress:
                progress(i + 1, total)
    else:
        import multiprocessing as mp

        threads = max(1, (os.cpu_count() or 1) // workers)
        ctx = mp.get_context("spawn")
        jobs = [(n, *store.poses[n], str(store.path(n))) for n in todo]
        with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_worker_init,
                                 initargs=(store.scene.to_dict(), asdict(store.settings), store.width,
                                           store.eye_height_m, threads)) as ex:
            for i, _ in enumerate(ex.map(_worker_render, jobs, chunksize=4)):
                if progress:
                    progress(i + 1, total)
    secs = time.perf_counter() - t0
    return {"rendered": total, "cached": cached, "seconds": secs, "per_panorama_s": secs / total if total else 0.0}
