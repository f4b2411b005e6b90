"""3D scene rendering of OSM-built cities: moderngl on a headless EGL context (Mesa llvmpipe on the CPU).

* :mod:`.scene` — the scene description (:class:`Scene`: buildings, POIs, street
  objects, roads, crosswalks, paved areas), hashable;
* :mod:`.city_scene` — :func:`scene_from_city` from a city's OSM annotations;
* :mod:`.layout` — storefront sign placement (facade choice, non-overlapping packing);
* :mod:`.signage` — the realistic style's sign kinds, font families and variations (seeded per POI);
* :mod:`.fonts`, :mod:`.palette`, :mod:`.attribution` — sign text, deterministic colours,
  "© OpenStreetMap contributors" on renders;
* :mod:`.meshes` — numpy triangle meshes; :mod:`.shaders` — GLSL;
* :mod:`.renderer` — :class:`SceneRenderer`: perspective views at any pose and
  cubemap -> equirectangular panoramas;
* :mod:`.cache` — :class:`RenderedPanoramaStore` (panoramas on disk, drop-in for
  :class:`urbanarena.render.panorama_store.PanoramaStore`) and :func:`prerender`;
* :mod:`.context` — the shared GL context and :func:`gl_unavailable_reason`.
* :mod:`.styles` — render styles (``flat``, ``realistic``: :mod:`.realistic_shaders`, :mod:`.realistic`);
* :mod:`.conditions`, :mod:`.weather` — weather and time of day (``RenderSettings.for_condition``);
  :mod:`.legibility` — OCR legibility of signs per condition.

Importing this package does not need moderngl; creating a renderer does
(:class:`RendererUnavailableError` says why it cannot).
"""

from urbanarena.render.scene3d.context import RendererUnavailableError, gl_unavailable_reason
from urbanarena.render.scene3d.scene import (
    OSM_ATTRIBUTION, Building, Crosswalk, PavedArea, Poi, Road, Scene, StreetObject,
)

__all__ = [
    "OSM_ATTRIBUTION", "Building", "Crosswalk", "PavedArea", "Poi", "Road", "Scene", "StreetObject",
    "RendererUnavailableError", "gl_unavailable_reason",
]
