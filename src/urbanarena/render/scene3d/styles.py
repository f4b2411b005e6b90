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
* ``photo`` -- issue 24's photographic style, the commands' default since the v5 suite
  (:data:`DEFAULT_RENDER_STYLE`): ``realistic`` with the population's box people and vehicles replaced by the
  real textured models of the fetched ``sweethome3d-furniture`` package and a contact and sun shadow under each
  (:mod:`.population_photo`), photo trees (:mod:`.trees_photo`), a skyline ring beyond the city, height haze and
  wet ground instead of rain streaks (:mod:`.photo_atmosphere`), an HDRI sky and image-based ambient light
  (:mod:`.photo_sky`), photographed wall and ground materials (:mod:`.photo_materials`), facades, greenery,
  clutter and clouds. It needs every pinned asset package (:mod:`urbanarena.render.assets`): :func:`usable_style`
  gives ``realistic`` instead, after one line on stderr, when one is missing or damaged (never a half-textured
  city). The commands that render (``demo``, ``run``, ``play``, ``city build --prerender``, ``tasks freeze``,
  ``tasks export``) fetch the packages first (``fetch=True``, a progress bar; one line and ``realistic`` when the
  fetch fails, :data:`NO_FETCH_ENV` forbids it); the library never fetches on its own.

:class:`~.renderer.RenderSettings` itself defaults to ``flat`` (the library-level default, so code and tests
that build a renderer by hand keep their pixels); the product-level default is :data:`DEFAULT_RENDER_STYLE`,
applied by :func:`settings_for_style`: the commands (``--render-style``), the runner
(:class:`~urbanarena.runner.arena.ArenaViewSettings`), the play service and ``urbanarena city build --prerender``
render ``photo`` (``realistic`` without the assets) unless told ``realistic`` or ``flat``; the library-level
observers (``rendered_store_for``, ``panorama_observer_for``, ``SceneViewObserver``) draw what their ``settings``
say (default ``flat``).
"""

from __future__ import annotations

import os
import sys
import threading

from urbanarena.render.scene3d.render_settings import (  # noqa: F401  (re-exported: they were defined here)
    DEFAULT_RENDER_STYLE, RENDER_STYLES, check_style,
)

#: set to ``1`` to forbid the commands' implicit fetch of the photo assets (``urbanarena assets fetch`` still
#: fetches); the test suite sets it, so no test downloads the 184 MB
NO_FETCH_ENV = "URBANARENA_NO_ASSET_FETCH"

_USABLE: dict[str, tuple[bool, str]] = {}   # asset root -> (photo usable, the fallback line not yet said)
_USABLE_LOCK = threading.Lock()


def fetch_forbidden() -> bool:
    """Whether the environment forbids implicit asset fetches (:data:`NO_FETCH_ENV`)."""
    return os.environ.get(NO_FETCH_ENV, "").strip().lower() in ("1", "true", "yes")


def _say_fetch(root: str) -> None:
    """One line on stderr before a download (the bar shows only on a terminal): what is fetched, how much, where."""
    from urbanarena.render.assets import registry
    from urbanarena.render.assets.fetch import read_manifest

    missing = [p for p in registry.PACKAGES if read_manifest(p, root) is None]
    if missing:
        mb = sum(p.size_bytes for p in missing) / 1e6
        print(f"photo assets: fetching {len(missing)} pinned packages ({mb:.1f} MB, once) into {root} ...",
              file=sys.stderr)


def usable_style(style: str | None = None, *, fetch: bool = False, progress=None) -> str:
    """The style a run really renders: ``style`` (``None``: :data:`DEFAULT_RENDER_STYLE`), except ``photo`` when any
    pinned asset package (:data:`urbanarena.render.assets.PACKAGES`) is missing or damaged in the asset root
    (``URBANARENA_HOME``'s ``assets``): then ``realistic``, after one line on stderr (once per process and root),
    which is left out only for the default (``style`` ``None``) when :data:`NO_FETCH_ENV` is set (a user who
    forbade the fetch, or the test suite).

    With ``fetch`` (the commands that render) missing packages are fetched first, with ``progress`` hearing the
    download (:mod:`urbanarena.progress`), unless :data:`NO_FETCH_ENV` is set; a failed fetch is the same one line
    and ``realistic`` (issue 24: never a half-textured city). Without ``fetch`` nothing is downloaded.

    Raises:
        ValueError: unknown style.
    """
    asked = style is not None
    style = check_style(style or DEFAULT_RENDER_STYLE)
    if style != "photo":
        return style
    from urbanarena import paths
    from urbanarena.render.assets import FALLBACK_STYLE, ensure_assets
    from urbanarena.render.scene3d.asset_kits import FETCH_HINT

    root = str(paths.assets_dir())
    fetch = fetch and not fetch_forbidden()
    with _USABLE_LOCK:
        if fetch or root not in _USABLE:
            if fetch:
                _say_fetch(root)
            status = ensure_assets(fetch=fetch, progress=progress)
            line = "" if status.available else status.message + ("" if fetch else FETCH_HINT)
            _USABLE[root] = (status.available, line)
        ok, line = _USABLE[root]
        if line and (asked or not fetch_forbidden()):
            print(line, file=sys.stderr)
            _USABLE[root] = (ok, "")
    if not ok:
        return FALLBACK_STYLE
    from urbanarena.render.scene3d.population_photo import photo_models

    return "photo" if photo_models() is not None else FALLBACK_STYLE   # a damaged model kit: its own line


def settings_for_style(style: str | None = None, settings=None, population: str | None = None):
    """``settings`` (default :class:`~.renderer.RenderSettings` ()) with ``style`` (default
    :data:`DEFAULT_RENDER_STYLE`) when ``style`` is given or ``settings`` is ``None``, and with ``population``
    (``snapshot`` or ``none``; default the style's, :data:`~.population.DEFAULT_POPULATION_OF_STYLE`: people and
    vehicles in realistic panoramas, none in flat ones) whenever the style is set here or ``population`` is given.

    ``photo`` without its fetched assets gives the ``realistic`` style instead, after one line on stderr
    (:func:`usable_style`; never fetches).

    Raises:
        ValueError: unknown style or population.
    """
    from dataclasses import replace

    from urbanarena.render.scene3d.population import DEFAULT_POPULATION_OF_STYLE, check_population
    from urbanarena.render.scene3d.render_settings import RenderSettings

    if settings is not None and style is None:
        return settings if population is None else replace(settings, population=check_population(population))
    style = check_style(style or DEFAULT_RENDER_STYLE)
    style = usable_style(style)
    pop = check_population(population) if population is not None else DEFAULT_POPULATION_OF_STYLE[style]
    if settings is None:
        return RenderSettings(style=style, population=pop)
    return replace(settings, style=style, population=pop)


__all__ = ["DEFAULT_RENDER_STYLE", "NO_FETCH_ENV", "RENDER_STYLES", "check_style", "fetch_forbidden",
           "settings_for_style", "usable_style"]
