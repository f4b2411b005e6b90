"""First-person observer of the continuous environment: a perspective render at the agent's pose.

:class:`SceneViewObserver` is a callable ``(city, pose) -> RGB uint8 (H, W, 3)``
(the same shape of observer as :class:`urbanarena.env.arena_env.Observer`). It
builds the city's :class:`~urbanarena.render.scene3d.renderer.SceneRenderer`
from :func:`~urbanarena.render.scene3d.city_scene.scene_from_city` on its first
call (lazily: constructing it needs no OpenGL) and renders
``render_view(x_m, y_m, yaw_deg, pitch_deg, hfov_deg, width, height, eye_height_m,
attribution=True)`` -- "© OpenStreetMap contributors" in the bottom-right corner.
Without an OpenGL context the first call raises
:class:`~urbanarena.render.scene3d.context.RendererUnavailableError` naming the
city and the reason.
"""

from __future__ import annotations

import threading

import numpy as np

from urbanarena.env.continuous.state import ContinuousPose
from urbanarena.render.scene3d.context import RendererUnavailableError


class SceneViewObserver:
    """Perspective views of a rendered city (module docstring).

    Args:
        city: an annotated city (OSM import).
        width, height: view size, pixels; hfov_deg: horizontal field of view; eye_height_m: camera height.
        settings: :class:`~urbanarena.render.scene3d.render_settings.RenderSettings` or ``None`` (defaults: ``flat``
            style; the runner passes the run's style, :mod:`urbanarena.render.scene3d.styles`).
        condition: weather / time of day (``night``, ``fog``, ``rain+dusk``; see
            :mod:`urbanarena.render.scene3d.conditions`) applied to ``settings`` (default: theirs).
        attribution: stamp the city's attribution on each view (only through the ``clean`` camera).
        camera: camera preset (:mod:`urbanarena.render.camera_model`); ``None`` = the style's default.
    Raises:
        ValueError: the city has no annotations (nothing to render); an unknown ``condition``.
    """

    def __init__(self, city, width: int = 640, height: int = 360, hfov_deg: float = 90.0,
                 eye_height_m: float = 1.7, settings=None, attribution: bool = True, condition: str | None = None,
                 camera: str | None = None):
        if getattr(city, "annotations", None) is None:
            raise ValueError(f"city {city.name!r} has no annotations: nothing to render")
        self.city = city
        self.width, self.height = int(width), int(height)
        self.hfov_deg, self.eye_height_m = float(hfov_deg), float(eye_height_m)
        if condition is not None:
            from dataclasses import replace

            from urbanarena.render.scene3d.conditions import parse_condition
            from urbanarena.render.scene3d.renderer import RenderSettings

            weather, time_of_day = parse_condition(condition)
            settings = replace(settings or RenderSettings(), weather=weather, time_of_day=time_of_day)
        self.settings = settings
        from urbanarena.render.camera_model import default_camera, get_camera, views_carry_attribution

        self.camera_name = camera or default_camera(getattr(settings, "style", None))
        self.camera = get_camera(self.camera_name)
        # a photographic camera's frames carry no stamp (render/camera_model.py: views_carry_attribution)
        self.attribution = bool(attribution) and views_carry_attribution(self.camera_name)
        self._renderer = None
        self._lock = threading.Lock()

    @property
    def renderer(self):
        """The scene renderer (built on first use)."""
        with self._lock:
            if self._renderer is None:
                from urbanarena.render.scene3d.city_scene import scene_from_city
                from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

                try:
                    self._renderer = SceneRenderer(scene_from_city(self.city), self.settings or RenderSettings())
                except RendererUnavailableError as e:
                    raise RendererUnavailableError(f"cannot render city {self.city.name!r}: {e}") from e
            return self._renderer

    def __call__(self, city, pose: ContinuousPose, dynamic=None) -> np.ndarray:
        """The view at ``pose``; ``dynamic``: :class:`~urbanarena.render.scene3d.dynamic.DynamicObjects`
        (pedestrians, closure barriers) drawn into it, or ``None``."""
        kw = {} if dynamic is None else {"dynamic": dynamic}
        img = self.renderer.render_view(pose.x_m, pose.y_m, pose.yaw_deg, pose.pitch_deg, self.hfov_deg,
                                        self.width, self.height, self.eye_height_m, attribution=self.attribution,
                                        **kw)
        if self.camera.is_identity:
            return img
        settings_key = self.settings.key() if self.settings is not None else ""
        return self.camera.apply(img, f"{city.content_hash}|{settings_key}|{pose.x_m:.3f}|{pose.y_m:.3f}|"
                                      f"{pose.yaw_deg:.3f}|{pose.pitch_deg:.3f}|{self.hfov_deg:g}|{self.width}x{self.height}",
                                 hfov_deg=self.hfov_deg)


__all__ = ["SceneViewObserver"]
