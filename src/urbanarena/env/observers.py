"""Observers for :class:`~urbanarena.env.arena_env.ArenaEnv`: panorama views and location maps.

An observer is any callable ``(city, pose) -> RGB uint8 (H, W, 3) | None``
(:class:`~urbanarena.env.arena_env.Observer`). This module provides the two
the arena uses:

* :class:`PanoramaObserver` — the perspective view at the pose's compass yaw
  and pitch, cut from the panorama of ``pose.nearest_node`` (between
  panoramas the nearer node's image is shown, the Movie Map paradigm), with
  red ground arrows drawn at the true bearings of ``pose.arrows`` (the
  branches LEFT/RIGHT/UP can choose), as in 360CityArena.
* :class:`LocationMapObserver` — the current-location map with the agent's
  marker at the pose, pointing along the camera yaw.

:func:`panorama_observer_for` returns ``None`` for graph-only cities (no imagery
and nothing to render) so the env runs without images.

Panorama resolution. By default :func:`panorama_observer_for` decodes each
panorama at the width that loses no detail at the view centre,
:func:`~urbanarena.render.views.matching_pano_width` ``(hfov_deg, width)``
rounded up to an even number: the panorama's pixels per radian ``W / 2 pi``
then equal (or just exceed) the view's focal length ``f = (width / 2) /
tan(hfov / 2)`` in pixels per radian at its centre, where a perspective view
is coarsest (towards its edges and away from the horizon a view pixel
covers a smaller angle of the panorama, which is then oversampled anyway).
A 640 px, 90 degree view needs 2011 -> 2012 px, so a 5760 x 2880 GoPro frame
is decoded at 2012 x 1006 (OpenCV's reduced JPEG decode, then area
averaging): about 8x fewer pixels in the cache, a faster decode and remap,
and no aliasing from sampling a much finer image. Narrower panoramas are
never enlarged. Pass ``max_width=None`` for full resolution or an int for
your own limit. One store serves one view geometry: an observer with a
larger view or a narrower field of view needs its own store.

Rendered cities. A city without imagery but with OSM annotations (an
OpenStreetMap import, :mod:`urbanarena.world.importers.osm`) is observed
through :class:`~urbanarena.render.scene3d.cache.RenderedPanoramaStore`:
each node's panorama is rendered by the 3D scene renderer on first use and
cached on disk (``<urbanarena home>/panoramas/<scene>-<key>/<node>.png``, the
same files ``urbanarena city build --prerender`` writes). Width: with
``max_width="match"`` the panoramas are rendered at
``max(DEFAULT_PANO_WIDTH, view_matched_width(hfov, width))`` — 2048 px for the
640 px, 90 degree arena view (matched width 2012), so the observer shares the
prerendered cache and the view cut samples a panorama at least as fine as the
view's centre; a larger view gets its own, wider render. ``max_width=None``
renders at :data:`~urbanarena.render.scene3d.renderer.DEFAULT_PANO_WIDTH`, an
int at that width (rounded down to even). Where no OpenGL context can be
created, :func:`panorama_observer_for` raises
:class:`~urbanarena.render.scene3d.context.RendererUnavailableError` naming the
city and the reason (it never silently returns ``None`` for a renderable
city). Rendered stores are shared within a process (one renderer, one memory
cache per city and width), so several runners in threads do not each build
the scene's meshes.

:func:`observation_source` says which of the three a city is (``"imagery"``,
``"rendered"`` or ``None`` for graph-only).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import Literal

import numpy as np

from urbanarena.env.arena_env import ArenaPose
from urbanarena.render.maps import Extent, map_renderer_for
from urbanarena.render.overlays import draw_branch_arrows
from urbanarena.render.panorama_store import DEFAULT_BUDGET_BYTES, PanoramaStore
from urbanarena.render.views import ViewRenderer, matching_pano_width, node_view
from urbanarena.render.scene3d.context import RendererUnavailableError
from urbanarena.world.city import City
from urbanarena.world.imagery import has_imagery


class PanoramaObserver:
    """Perspective view from the nearest panorama with red branch arrows.

    Args:
        store: the city's :class:`PanoramaStore`, or a
            :class:`~urbanarena.render.scene3d.cache.RenderedPanoramaStore` for a rendered city (one per
            city; its LRU cache holds decoded panoramas).
        hfov_deg: horizontal field of view, degrees (default 90).
        width, height: view size in pixels (default 640x360, the 360CityArena
            capture size).
        draw_arrows: draw red arrows for ``pose.arrows`` (default True).
        arrow_labels: write the keys that select each arrow (``LEFT``,
            ``UP/LEFT``) next to it; default False (360CityArena's arrows are
            unlabelled).
        renderer: :class:`ViewRenderer` with cached sampling grids (default shared).
        camera: a :class:`~urbanarena.render.camera_model.CameraModel` applied to each view before the
            arrows are drawn (default none: the renderer's pixels). Its random draws are keyed by the
            view: the store's identity (or the city's content hash), node, yaw, pitch, field of view and size.
        max_views: finished views (cut, camera model, arrows) kept, least recently used dropped first
            (default 64, 0.69 MB each at 640x360). A view is a function of the node, the yaw, the pitch
            and the arrows' bearings and labels (the store, camera and geometry are fixed per observer),
            so a pose seen before (another seed or episode of the same task, a turn back) is copied from
            here instead of cut again; ``0`` turns this off. :attr:`view_hits` / :attr:`view_misses`
            count calls.
    Raises (on call): ``KeyError``/``ImageFormatError`` from the store when the
    nearest node's panorama is missing or invalid.
    """

    def __init__(self, store: PanoramaStore, *, hfov_deg: float = 90.0, width: int = 640, height: int = 360,
                 draw_arrows: bool = True, arrow_labels: bool = False, renderer: ViewRenderer | None = None,
                 camera=None, max_views: int = 64):
        self.store = store
        self.camera = camera if camera is not None and not camera.is_identity else None
        self.hfov_deg = float(hfov_deg)
        self.width = int(width)
        self.height = int(height)
        self.draw_arrows = draw_arrows
        self.arrow_labels = arrow_labels
        self.renderer = renderer
        self.last_placements: list = []
        self.max_views = int(max_views)
        self._views: OrderedDict[tuple, tuple[np.ndarray, list]] = OrderedDict()
        self._views_lock = threading.Lock()
        self.view_hits = 0
        self.view_misses = 0

    def __call__(self, city: City, pose: ArenaPose) -> np.ndarray:
        """The finished view ``(height, width, 3)`` RGB ``uint8`` at ``pose`` (a fresh, writable array)."""
        if self.max_views <= 0:
            return self._draw(city, pose)[0]
        key = (pose.nearest_node, float(pose.yaw_deg), float(pose.pitch_deg),
               tuple((float(b.bearing_deg), tuple(b.keys)) for b in pose.arrows) if self.draw_arrows else ())
        with self._views_lock:
            hit = self._views.get(key)
            if hit is not None:
                self._views.move_to_end(key)
                self.view_hits += 1
        if hit is not None:
            self.last_placements = list(hit[1])
            return hit[0].copy()
        view, placements = self._draw(city, pose)
        kept = view.copy()
        kept.setflags(write=False)
        with self._views_lock:
            self.view_misses += 1
            self._views[key] = (kept, list(placements))
            while len(self._views) > self.max_views:
                self._views.popitem(last=False)
        return view

    def _draw(self, city: City, pose: ArenaPose) -> tuple[np.ndarray, list]:
        view = node_view(self.store, pose.nearest_node, pose.yaw_deg, pose.pitch_deg, self.hfov_deg,
                         self.width, self.height, renderer=self.renderer)
        if self.camera is not None:
            source = getattr(self.store, "identity", None) or city.content_hash
            view = self.camera.apply(view, f"{source}|{pose.nearest_node}|{pose.yaw_deg:.4f}|{pose.pitch_deg:.4f}|"
                                           f"{self.hfov_deg:g}|{self.width}x{self.height}", hfov_deg=self.hfov_deg)
        self.last_placements = []
        if self.draw_arrows and pose.arrows:
            branches = [(b.bearing_deg, "/".join(b.keys) if self.arrow_labels else "") for b in pose.arrows]
            view, self.last_placements = draw_branch_arrows(view, pose.yaw_deg, pose.pitch_deg, self.hfov_deg,
                                                            branches, inplace=bool(view.flags.writeable))
        if not view.flags.writeable:
            view = view.copy()
        return view, self.last_placements


#: ``max_width`` value of :func:`panorama_observer_for` meaning "the view's matching width"
MATCH_VIEW: Literal["match"] = "match"


def view_matched_width(hfov_deg: float, width: int) -> int:
    """Panorama width (pixels, even) that loses no detail at the centre of a ``width`` px, ``hfov_deg``
    view: :func:`~urbanarena.render.views.matching_pano_width` (``ceil(2 pi f)``, ``f = (width / 2) /
    tan(hfov / 2)``) rounded up to an even number (equirectangular panoramas keep ``W = 2 H``).
    640 px at 90 degrees: 2012."""
    w = matching_pano_width(hfov_deg, width)
    return w + (w % 2)


def observation_source(city: City) -> Literal["imagery", "rendered"] | None:
    """Where a city's camera views come from: ``"imagery"`` (it carries an imagery source:
    real or attached panoramas), ``"rendered"`` (no imagery, but annotations the 3D renderer
    draws: an OSM import) or ``None`` (graph-only: no views)."""
    if has_imagery(city):
        return "imagery"
    if getattr(city, "annotations", None) is not None:
        return "rendered"
    return None


def require_renderer(city: City) -> None:
    """Check that the panoramas of a rendered city can be rendered here.

    Raises:
        RendererUnavailableError: no OpenGL context (missing moderngl or EGL/Mesa libraries); the
            message names the city and the reason.
    """
    from urbanarena.render.scene3d.context import gl_unavailable_reason

    reason = gl_unavailable_reason()
    if reason is not None:
        raise RendererUnavailableError(
            f"city {city.name!r} has no imagery and its panoramas must be rendered, but the 3D renderer is "
            f"unavailable: {reason}")


def _rendered_width(max_width: int | Literal["match"] | None, hfov_deg: float, width: int) -> int:
    from urbanarena.render.scene3d.renderer import DEFAULT_PANO_WIDTH

    if max_width is None:
        return DEFAULT_PANO_WIDTH
    if isinstance(max_width, str):
        return max(DEFAULT_PANO_WIDTH, view_matched_width(hfov_deg, width))
    w = int(max_width) - int(max_width) % 2
    if w < 16:
        raise ValueError(f"a rendered panorama needs max_width >= 16, got {max_width!r}")
    return w


_RENDERED_STORES: dict[tuple, object] = {}
_RENDERED_LOCK = threading.Lock()
#: rendered stores kept per process (each holds a city, its scene and a renderer)
MAX_RENDERED_STORES = 4


def rendered_store_for(city: City, width: int | None = None, *, root: str | Path | None = None,
                       budget_bytes: int = DEFAULT_BUDGET_BYTES, settings=None):
    """The process-wide :class:`~urbanarena.render.scene3d.cache.RenderedPanoramaStore` of ``city``
    at panorama ``width`` (default :data:`~urbanarena.render.scene3d.renderer.DEFAULT_PANO_WIDTH`)
    under ``root`` (default ``<urbanarena home>/panoramas``): one per (city object, width, root, render
    settings: ``settings`` a :class:`~urbanarena.render.scene3d.render_settings.RenderSettings`, e.g.
    ``RenderSettings.for_condition("night")``, default ``RenderSettings()``: the clear day, ``flat`` style; the
    runner and the commands pass the run's style, :mod:`urbanarena.render.scene3d.styles`), at most
    :data:`MAX_RENDERED_STORES`
    (oldest dropped).

    Raises:
        RendererUnavailableError: no OpenGL context here (message names the city and the reason).
        ValueError: the city has no annotations (nothing to render).
    """
    from urbanarena.render.scene3d.cache import RenderedPanoramaStore
    from urbanarena.render.scene3d.renderer import DEFAULT_PANO_WIDTH
    width = int(width or DEFAULT_PANO_WIDTH)
    key = (id(city), city.content_hash, width, str(Path(root).absolute()) if root is not None else None,
           int(budget_bytes), None if settings is None else settings.key())
    with _RENDERED_LOCK:
        store = _RENDERED_STORES.get(key)
        if store is not None and getattr(store, "city", None) is city:
            return store
        require_renderer(city)
        try:
            store = RenderedPanoramaStore(city, root=root, width=width, budget_bytes=budget_bytes, settings=settings)
        except RendererUnavailableError as e:
            raise RendererUnavailableError(f"city {city.name!r}: cannot render its panoramas: {e}") from e
        _RENDERED_STORES[key] = store
        while len(_RENDERED_STORES) > MAX_RENDERED_STORES:
            _RENDERED_STORES.pop(next(iter(_RENDERED_STORES)))
        return store



def release_rendered_stores() -> int:
    """Release every process-wide rendered store of :func:`rendered_store_for` (their renderers' GL objects and
    decoded panoramas; each store rebuilds its renderer on its next use) and forget them; returns how many.

    For a long-lived process between unrelated jobs, and for test isolation: call it only when no other thread
    is drawing with one of these stores."""
    with _RENDERED_LOCK:
        stores = list(_RENDERED_STORES.values())
        _RENDERED_STORES.clear()
    for store in stores:
        store.release()
    return len(stores)

def panorama_observer_for(city: City, *, base_dir: str | Path | None = None, budget_bytes: int = DEFAULT_BUDGET_BYTES,
                          max_width: int | Literal["match"] | None = MATCH_VIEW, render_root: str | Path | None = None,
                          render_settings=None, camera: str | None = None, **kwargs) -> PanoramaObserver | None:
    """A :class:`PanoramaObserver` for ``city``: from its imagery, from rendered panoramas (an OSM city,
    module docstring), or ``None`` for a graph-only city.

    Args:
        base_dir: folder a relative imagery root resolves against (the saved city directory).
        budget_bytes: byte budget of the panorama store's memory cache.
        max_width: imagery: decoded panorama width limit: ``"match"`` (default) = :func:`view_matched_width`
            of the observer's ``hfov_deg`` and ``width`` (module docstring: no detail lost at the view
            centre); ``None`` = full resolution; an int = at most that many pixels. Rendered cities: the
            render width (module docstring).
        render_root: rendered cities: cache root of the panoramas (default ``<urbanarena home>/panoramas``).
        render_settings: rendered cities: :class:`~urbanarena.render.scene3d.render_settings.RenderSettings` (weather,
            time of day: ``RenderSettings.for_condition("fog")``; default the clear day). Ignored for imagery.
        camera: camera preset name (:mod:`urbanarena.render.camera_model`); ``None`` = the render style's
            default (:func:`~urbanarena.render.camera_model.default_camera`: ``clean`` for flat and realistic,
            and for imagery cities, whose pictures already came through a camera).
        kwargs: passed to :class:`PanoramaObserver` (hfov_deg, width, height, ...).
    Raises:
        ValueError: ``max_width`` is neither ``"match"``, ``None`` nor a positive int.
        RendererUnavailableError: a city to be rendered, and no OpenGL context here (the message names
            the city and the reason).
    """
    source = observation_source(city)
    if source is None:
        return None
    if isinstance(max_width, str):
        if max_width != MATCH_VIEW:
            raise ValueError(f"max_width must be 'match', None or a positive int, got {max_width!r}")
    elif max_width is not None and (isinstance(max_width, bool) or int(max_width) < 2):
        raise ValueError(f"max_width must be 'match', None or a positive int >= 2, got {max_width!r}")
    hfov, width = float(kwargs.get("hfov_deg", 90.0)), int(kwargs.get("width", 640))
    from urbanarena.render.camera_model import default_camera, get_camera

    if source == "rendered":
        name = camera or default_camera(getattr(render_settings, "style", None))
        kwargs = {**kwargs, "camera": get_camera(name)}
        store = rendered_store_for(city, _rendered_width(max_width, hfov, width), root=render_root,
                                   budget_bytes=budget_bytes, settings=render_settings)
        return PanoramaObserver(store, **kwargs)  # type: ignore[arg-type]
    if camera is not None:
        kwargs = {**kwargs, "camera": get_camera(camera)}
    if isinstance(max_width, str):
        max_width = view_matched_width(hfov, width)
    return PanoramaObserver(PanoramaStore(city, budget_bytes=budget_bytes, max_width=max_width, base_dir=base_dir),
                            **kwargs)


class LocationMapObserver:
    """Current-location map: the city's street map with the agent marker at the pose.

    Args:
        width, height: map size in pixels (default 640x640, the 360CityArena map capture size).
        extent: map extent (default: the whole city, see :class:`~urbanarena.render.maps.Extent`).
    """

    def __init__(self, width: int = 640, height: int = 640, extent: Extent | None = None):
        self.width = int(width)
        self.height = int(height)
        self.extent = extent

    def __call__(self, city: City, pose: ArenaPose) -> np.ndarray:
        return map_renderer_for(city, self.width, self.height, self.extent).location_map(pose.x_m, pose.y_m,
                                                                                         pose.yaw_deg)
