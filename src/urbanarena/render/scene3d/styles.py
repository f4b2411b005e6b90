"""Render styles: how realistic the 3D city looks (issue 14; ``--render-style`` on every command that renders).

* ``flat`` -- the renderer's original look (untextured walls with one window grid, flat ground and sky).
  Its pixels and the ``helsinki-arena7-v1`` frozen suite's image hashes are exactly those from before styles
  existed (cache keys changed once: :meth:`~.renderer.RenderSettings.identity_dict` names the style).
* ``realistic`` -- procedural materials (from OSM tags where present), windows with depth, shopfronts, awnings,
  cornices, balconies, pitched roofs, kerbs, road markings, tram tracks, textured ground and planted land cover,
  alpha-tested tree crowns, baked ground shadows and contact occlusion, cast shadows on walls, clouds,
  atmospheric perspective, exposure and tone mapping (:mod:`.realistic_shaders`, :mod:`.realistic`,
  :mod:`.building_look`, :mod:`.sun_shadow`).
  The default of the commands and of the observers (:data:`DEFAULT_RENDER_STYLE`); frozen suite
  ``helsinki-arena7-v2``.
* ``photo`` -- issue 24's photographic style, opt-in (``--render-style photo``), first step: ``realistic`` with the
  population's box people and vehicles replaced by the real textured models of the fetched
  ``sweethome3d-furniture`` package and a contact and sun shadow under each (:mod:`.population_photo`), photo
  trees (:mod:`.trees_photo`), a skyline ring beyond the city, height haze and wet ground instead of rain
  streaks (:mod:`.photo_atmosphere`), an HDRI sky and image-based ambient light (:mod:`.photo_sky`),
  photographed wall and ground materials (:mod:`.photo_materials`). Without
  the fetched package (``urbanarena assets fetch``; never fetched implicitly) :func:`settings_for_style` says so
  in one line on stderr and returns the ``realistic`` style.

:class:`~.renderer.RenderSettings` itself defaults to ``flat`` (the library-level default, so code and tests
that build a renderer by hand keep their pixels); the product-level default is :data:`DEFAULT_RENDER_STYLE`,
applied by :func:`settings_for_style`: the commands (``--render-style``), the runner
(:class:`~urbanarena.runner.arena.ArenaViewSettings`), the play service and ``urbanarena city build --prerender``
render realistic unless told ``flat``; the library-level observers (``rendered_store_for``,
``panorama_observer_for``, ``SceneViewObserver``) draw what their ``settings`` say (default ``flat``).
"""

from __future__ import annotations

from urbanarena.render.scene3d.render_settings import (  # noqa: F401  (re-exported: they were defined here)
    DEFAULT_RENDER_STYLE, RENDER_STYLES, check_style,
)


def settings_for_style(style: str | None = None, settings=None, population: str | None = None):
    """``settings`` (default :class:`~.renderer.RenderSettings` ()) with ``style`` (default
    :data:`DEFAULT_RENDER_STYLE`) when ``style`` is given or ``settings`` is ``None``, and with ``population``
    (``snapshot`` or ``none``; default the style's, :data:`~.population.DEFAULT_POPULATION_OF_STYLE`: people and
    vehicles in realistic panoramas, none in flat ones) whenever the style is set here or ``population`` is given.

    ``photo`` without its fetched assets (:func:`.population_photo.photo_models` is ``None``, which prints
    the one line) gives the ``realistic`` style instead.

    Raises:
        ValueError: unknown style or population.
    """
    from dataclasses import replace

    from urbanarena.render.scene3d.population import DEFAULT_POPULATION_OF_STYLE, check_population
    from urbanarena.render.scene3d.render_settings import RenderSettings

    if settings is not None and style is None:
        return settings if population is None else replace(settings, population=check_population(population))
    style = check_style(style or DEFAULT_RENDER_STYLE)
    if style == "photo":
        from urbanarena.render.scene3d.population_photo import photo_models

        if photo_models() is None:
            style = "realistic"
    pop = check_population(population) if population is not None else DEFAULT_POPULATION_OF_STYLE[style]
    if settings is None:
        return RenderSettings(style=style, population=pop)
    return replace(settings, style=style, population=pop)


__all__ = ["DEFAULT_RENDER_STYLE", "RENDER_STYLES", "check_style", "settings_for_style"]
