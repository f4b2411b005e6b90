"""Reference photos of ``landmark_image`` tasks, rendered with the scene renderer.

A ``landmark_image`` task carries the camera of its reference photo in
``extra.reference_view`` (written by
:func:`urbanarena.tasks.generators.landmark.reference_view`): a position that is
not a pose node, an eye height and a sun position the panoramas never use, and
the view's direction, field of view and size. :func:`render_reference` draws it:

* position ``x_m``, ``y_m`` — the city's local frame, metres (east, north);
* ``eye_height_m`` — camera height above the ground, metres;
* ``yaw_deg`` (compass bearing of the view centre, clockwise from true north),
  ``pitch_deg`` (up positive), ``hfov_deg`` — degrees;
* ``width``, ``height`` — pixels;
* ``lighting`` — ``sun_azimuth_deg`` (compass) and ``sun_elevation_deg`` (above the
  horizon), degrees, replacing those two fields of the default
  :class:`~urbanarena.render.scene3d.render_settings.RenderSettings` (everything else,
  sky, fog, sign resolution, stays as the panoramas have it);
* ``condition`` (optional; the references of generator version 2, ``scheme`` 2) — a named weather /
  time of day (``dusk``, ``cloudy``, ``rain``, ``cloudy+dusk``; since ``scheme`` 4 also ``clear``, the
  episodes' own; :mod:`.conditions`) the photo is taken in. Views without it (the references of ``helsinki-arena7-v1``/``-v2``) draw exactly as before;
* ``population_key`` (optional; ``scheme`` 3, generator version 3) — the photo shows the people and vehicles
  of its own moment: :func:`~urbanarena.render.scene3d.population.snapshot` seeded with this key instead
  of a node id, around the camera, in the photo's condition (so other people than any panorama shows, and
  parked cars of another time of day), drawn when the renderer's settings have a population (the
  realistic style's default, as its panoramas). Views without it show nobody, as before.
* ``camera`` (optional) — the camera the photo was taken with (:mod:`urbanarena.render.camera_model`,
  e.g. ``phone``), applied to the rendered image with its draws keyed by the whole view dict; such a
  photo carries no attribution stamp (a street photo does not; the attribution stays in the suite's
  metadata and cards). Absent: ``clean``, the renderer's pixels with the stamp, as before.

The image is :meth:`SceneRenderer.render_view
<urbanarena.render.scene3d.renderer.SceneRenderer.render_view>` at that pose
with the attribution ("© OpenStreetMap contributors" for OSM cities) stamped in
the bottom-right corner, because reference photos are stored as files and shown
like any other render.

Renderers are cached per process (the city's scene, one
:class:`SceneRenderer` per lighting; the meshes and the sign atlas are built
once per scene and shared between lightings), so rendering a suite's reference
photos builds the scene once.
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from dataclasses import replace
from typing import Any, Mapping

import numpy as np

from urbanarena.render.camera_model import get_camera, views_carry_attribution
from urbanarena.render.scene3d.city_scene import scene_from_city
from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer
from urbanarena.render.scene3d.scene import Scene
from urbanarena.render.scene3d.styles import settings_for_style
from urbanarena.world.city import City

#: ``extra.reference_view`` fields :func:`render_reference` reads (``lighting`` is a mapping)
VIEW_FIELDS = ("x_m", "y_m", "eye_height_m", "yaw_deg", "pitch_deg", "hfov_deg", "width", "height")


def _number(view: Mapping[str, Any], key: str) -> float:
    if key not in view:
        raise ValueError(f"reference_view: missing {key!r}")
    v = view[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
        raise ValueError(f"reference_view: {key!r} must be a finite number, got {v!r}")
    return float(v)


def reference_settings(view: Mapping[str, Any], base: RenderSettings | None = None) -> RenderSettings:
    """The :class:`RenderSettings` of a reference view: ``base`` (default: the panoramas' defaults) with
    the sun of ``view["lighting"]`` (``sun_azimuth_deg``, ``sun_elevation_deg``; absent = ``base``'s) and
    the weather and time of day of ``view["condition"]`` when present.

    Raises:
        ValueError: ``lighting`` is not a mapping, or a sun angle is not a finite number
            (elevation outside [-90, 90]); an unknown ``condition``.
    """
    base = base or RenderSettings()
    light = view.get("lighting") or {}
    if not isinstance(light, Mapping):
        raise ValueError(f"reference_view: 'lighting' must be an object, got {light!r}")
    az = _number(light, "sun_azimuth_deg") if "sun_azimuth_deg" in light else base.sun_azimuth_deg
    el = _number(light, "sun_elevation_deg") if "sun_elevation_deg" in light else base.sun_elevation_deg
    if not -90.0 <= el <= 90.0:
        raise ValueError(f"reference_view: sun_elevation_deg must be in [-90, 90], got {el}")
    out = replace(base, sun_azimuth_deg=float(az) % 360.0, sun_elevation_deg=float(el))
    if "condition" in view:
        from urbanarena.render.scene3d.conditions import parse_condition

        cond = view["condition"]
        if not isinstance(cond, str):
            raise ValueError(f"reference_view: 'condition' must be a string, got {cond!r}")
        weather, time_of_day = parse_condition(cond)
        out = replace(out, weather=weather, time_of_day=time_of_day)
    return out


def _view_camera(view: Mapping[str, Any]):
    """The camera named by the view's optional ``camera`` field (absent: ``clean``, as every reference drawn
    before the camera model; :mod:`urbanarena.render.camera_model`).

    Raises: ValueError: not a known camera name."""
    name = view.get("camera", "clean")
    if not isinstance(name, str):
        raise ValueError(f"reference_view: 'camera' must be a camera name, got {name!r}")
    return get_camera(name)


class ReferenceRenderer:
    """Renders reference views of one scene (module docstring); callable as ``(city, view) -> RGB``.

    Args:
        scene: the scene to draw (e.g. :func:`~urbanarena.render.scene3d.city_scene.scene_from_city`).
        base_settings: settings every lighting starts from (default :class:`RenderSettings`).
        attribution: stamp the scene's attribution in the bottom-right corner (default True).
    Raises:
        RendererUnavailableError: no OpenGL context here (on the first render).
    """

    def __init__(self, scene: Scene, base_settings: RenderSettings | None = None, attribution: bool = True,
                 max_renderers: int = 2):
        self.scene = scene
        self.base_settings = base_settings or RenderSettings()
        self.attribution = attribution
        #: renderers kept at once (least recently used released): each lighting's renderer holds its own GL
        #: buffers and, realistic, its own shade bake, several hundred MB of the CPU renderer's memory
        self.max_renderers = max(1, int(max_renderers))
        self._renderers: OrderedDict[RenderSettings, SceneRenderer] = OrderedDict()
        self._lock = threading.Lock()

    def renderer(self, settings: RenderSettings) -> SceneRenderer:
        """The :class:`SceneRenderer` for ``settings`` (built once; meshes shared when the sign resolution
        matches an existing renderer's)."""
        with self._lock:
            r = self._renderers.get(settings)
            if r is not None:
                self._renderers.move_to_end(settings)
            if r is None:
                meshes = next((x.scene_meshes for s, x in self._renderers.items()
                               if s.sign_px_per_m == settings.sign_px_per_m and s.style == settings.style), None)
                if meshes is not None and settings.is_realistic:  # the baked shade follows the sun
                    from urbanarena.render.scene3d.conditions import lighting
                    from urbanarena.render.scene3d.realistic import shade_mesh

                    shade, bake = shade_mesh(self.scene, lighting(settings))
                    meshes = replace(meshes, shade=shade, bake=bake)
                # release the least recently used renderers *before* building this one (its CPU meshes are
                # held above): at most max_renderers hold GL buffers at any moment, never one more
                while len(self._renderers) >= self.max_renderers:
                    self._renderers.popitem(last=False)[1].release()
                r = SceneRenderer(self.scene, settings, meshes=meshes)
                self._renderers[settings] = r
            return r

    def render(self, view: Mapping[str, Any]) -> np.ndarray:
        """RGB ``uint8`` ``(height, width, 3)`` of ``view`` (module docstring for the fields).

        Raises:
            ValueError: a missing or non-finite field, bad angles or sizes.
            RendererUnavailableError: no OpenGL context here.
        """
        vals = {k: _number(view, k) for k in VIEW_FIELDS}
        w, h = vals["width"], vals["height"]
        if w != int(w) or h != int(h) or w < 1 or h < 1:
            raise ValueError(f"reference_view: width and height must be positive integers, got {w!r} x {h!r}")
        if not vals["eye_height_m"] > 0:
            raise ValueError(f"reference_view: eye_height_m must be positive, got {vals['eye_height_m']}")
        settings = reference_settings(view, self.base_settings)
        camera = _view_camera(view)
        renderer = self.renderer(settings)
        people = self._population(view, settings, vals["x_m"], vals["y_m"])
        try:
            img = renderer.render_view(
                vals["x_m"], vals["y_m"], vals["yaw_deg"] % 360.0, vals["pitch_deg"], vals["hfov_deg"], int(w),
                int(h), eye_height_m=vals["eye_height_m"], dynamic=people,
                attribution=self.attribution and views_carry_attribution(camera.name))
        finally:
            from urbanarena.render.scene3d.population_draw import release_population

            release_population(renderer, people)
        if camera.is_identity:
            return img
        return camera.apply(img, json.dumps(dict(view), sort_keys=True, default=str), hfov_deg=float(vals["hfov_deg"]))

    def _population(self, view: Mapping[str, Any], settings: RenderSettings, x_m: float, y_m: float):
        """The people and vehicles of the photo's moment (``population_key``; module docstring), or ``None``."""
        key = view.get("population_key")
        if key is None:
            return None
        if not isinstance(key, str) or not key:
            raise ValueError(f"reference_view: 'population_key' must be a non-empty string, got {key!r}")
        from urbanarena.render.scene3d.population_draw import node_population

        return node_population(self.scene, settings, key, x_m, y_m)

    def __call__(self, city: City, view: Mapping[str, Any]) -> np.ndarray:
        return self.render(view)

    def release(self) -> None:
        """Free the renderers' GL objects."""
        with self._lock:
            for r in self._renderers.values():
                r.release()
            self._renderers.clear()


_CACHE: OrderedDict[tuple, ReferenceRenderer] = OrderedDict()
_CACHE_LOCK = threading.Lock()
#: scenes kept by :func:`reference_renderer_of` per process
MAX_CACHED_SCENES = 2


def reference_renderer_of(city: City, render_style: str = "flat") -> ReferenceRenderer:
    """The process-wide :class:`ReferenceRenderer` of ``city``'s scene in ``render_style`` (at most
    :data:`MAX_CACHED_SCENES` kept, least recently used dropped).

    Raises:
        ValueError: the city has no annotations (nothing to render); an unknown style.
    """
    key = (id(city), city.content_hash, render_style)
    with _CACHE_LOCK:
        r = _CACHE.get(key)
        if r is not None and getattr(r, "_city", None) is city:
            _CACHE.move_to_end(key)
            return r
    r = ReferenceRenderer(scene_from_city(city), settings_for_style(render_style))
    r._city = city  # type: ignore[attr-defined]  # keeps id(city) valid while cached
    with _CACHE_LOCK:
        _CACHE[key] = r
        while len(_CACHE) > MAX_CACHED_SCENES:
            _CACHE.popitem(last=False)[1].release()
    return r



def release_reference_renderers() -> int:
    """Release and forget the process-wide renderers of :func:`reference_renderer_of` (GL objects, scenes);
    returns how many. For a long-lived process between unrelated jobs and for test isolation: call it only when
    no other thread is drawing with one of them."""
    with _CACHE_LOCK:
        renderers = list(_CACHE.values())
        _CACHE.clear()
    for r in renderers:
        r.release()
    return len(renderers)

def render_reference(city: City, view: Mapping[str, Any], render_style: str = "flat") -> np.ndarray:
    """Render a ``landmark_image`` task's ``extra.reference_view`` on ``city`` (module docstring).

    Args:
        city: an annotated (OSM-built) city; ``x_m``/``y_m`` are in its local frame.
        view: the reference view dict.
        render_style: ``flat`` (the default here: the style ``helsinki-arena7-v1`` was drawn in) or
            ``realistic`` (the commands' default).
    Returns:
        RGB ``uint8`` ``(view["height"], view["width"], 3)``.
    Raises:
        ValueError: the city has no annotations, or a bad view field.
        RendererUnavailableError: no OpenGL context here (the message says why).
    """
    return reference_renderer_of(city, render_style).render(view)


class GoalViewDistance:
    """The view distance of reference photos to the views an agent can take at their goal nodes
    (:mod:`urbanarena.render.view_distance`), callable as ``(city, view, goal_nodes) -> dict``.

    The reference is drawn with :func:`reference_renderer_of` in ``render_style``; the goal views are cut
    from the nodes' panoramas as the episodes see them (the clear day, ``render_style``, the panorama
    cache under ``<urbanarena home>/panoramas``, shared with the runs; with the style's default population,
    :func:`~urbanarena.render.scene3d.styles.settings_for_style`).

    Returns ``{"min_view_distance", "node", "yaw_deg", "pitch_deg"}``: the smallest distance (rounded to
    4 decimals) and the goal view it was found at.

    Raises:
        ValueError: no goal nodes, a bad view field. RendererUnavailableError: no OpenGL context here.
    """

    def __init__(self, city: City, render_style: str = "flat"):
        from urbanarena.render.scene3d.cache import RenderedPanoramaStore

        self.city = city
        self.render_style = render_style
        self.store = RenderedPanoramaStore(city, settings=settings_for_style(render_style))

    def __call__(self, city: City, view: Mapping[str, Any], goal_nodes) -> dict[str, Any]:
        from urbanarena.render.view_distance import min_node_distance

        if city is not self.city:
            raise ValueError("GoalViewDistance: built for another city")
        nodes = list(goal_nodes)
        if not nodes:
            raise ValueError("GoalViewDistance: no goal nodes")
        ref = reference_renderer_of(city, self.render_style).render(view)
        best: dict[str, Any] = {}
        for n in nodes:
            d, yaw, pitch = min_node_distance(ref, self.store.get(n), self.store.centre_bearing_deg(n),
                                              float(view["hfov_deg"]))
            if not best or d < best["min_view_distance"]:
                best = {"min_view_distance": round(d, 4), "node": str(n), "yaw_deg": yaw, "pitch_deg": pitch}
        return best


__all__ = ["GoalViewDistance", "ReferenceRenderer", "VIEW_FIELDS", "reference_renderer_of", "reference_settings",
           "render_reference"]
