"""Which features a rendered view shows, and how many pixels of each: the ID pass.

:class:`VisibilityPass` renders a view with every feature of the scene — each
building, each POI sign (face, panel body and posts) and each street object —
in its own flat colour (no lighting, fog, textures, MSAA or attribution stamp),
through the same camera, geometry, culling, draw order and depth test as
:meth:`SceneRenderer.render_view` (:meth:`SceneRenderer.render_ids`), and counts
the pixels of each feature. Ground surfaces (roads, sidewalks, crosswalks) and
the sky are not features: they hide nothing (the ground writes no depth and
lies under everything that stands on it).

A feature is named by its **key** ``(kind, id)``: ``kind`` is ``building``,
``poi`` or ``object`` and ``id`` the scene's id (:class:`~.scene.Building`
``id``, :class:`~.scene.Poi` ``id``, :class:`~.scene.StreetObject` ``id``),
which for a city built by :func:`~.city_scene.scene_from_city` is the
annotation id (``n<osm node>``, ``w<osm way>``, ``r<osm relation>``; a
multipolygon building's parts ``<id>#<part>``). The kind is part of the key
because ids repeat across kinds: a shop mapped on a building outline gives a
POI and a building with the same OSM id.

:class:`CountVisibility` is the hook the object-count task generator
(:func:`urbanarena.tasks.generators.object_count.generate`, ``visibility=``)
uses to keep only ranges whose counted objects can all be seen: an object
counts as visible from a range when some pose node of the range shows at
least :data:`MIN_VISIBLE_PX` of its pixels in a 90-degree, 640x360 view (the
arena's view size) at the panorama eye height, looking at it.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

from urbanarena.render.scene3d.meshes import FEATURE_KINDS
from urbanarena.render.scene3d.renderer import DEFAULT_EYE_HEIGHT_M, RenderSettings, SceneRenderer
from urbanarena.render.scene3d.scene import Scene

#: Fewest pixels of an object in a 640x360, 90-degree view (focal length 320 px) for it to count as
#: visible: 100 px is a 10 x 10 patch, what a traffic-sign disc (0.7 m) covers at about 20 m, a
#: street-lamp pole (0.16 x 5.2 m) at about 25 m, a bench at about 45 m. Smaller than that an object
#: is a few pixels of colour that neither a person nor a VLM (which sees the view downscaled) can
#: name, so a count that includes it cannot be checked by looking.
MIN_VISIBLE_PX = 100
#: The arena's perspective view: 640 x 360 pixels, 90-degree horizontal field of view.
VIEW_WIDTH, VIEW_HEIGHT, VIEW_HFOV_DEG = 640, 360, 90.0


class VisibilityPass:
    """Pixel counts per feature of rendered views of one scene.

    Args:
        scene: a :class:`Scene`, or a :class:`SceneRenderer` to reuse (its meshes and GL objects).
        settings: render settings when ``scene`` is a scene (culling distance, clip planes).
    Raises:
        RendererUnavailableError: no OpenGL context here.
    """

    def __init__(self, scene: Scene | SceneRenderer, settings: RenderSettings | None = None):
        self.renderer = scene if isinstance(scene, SceneRenderer) else SceneRenderer(scene, settings)
        feats = self.renderer.features
        self._keys: list[tuple[str, str] | None] = [None, *feats]
        self._index = {key: k for k, key in enumerate(feats, 1)}
        sc = self.renderer.scene
        self._anchor: dict[tuple[str, str], tuple[float, float, float]] = {}
        for b in sc.buildings:
            xs, ys = zip(*b.footprint)
            self._anchor["building", b.id] = (float(np.mean(xs)), float(np.mean(ys)), 0.5 * (b.base_m + b.height_m))
        placed = {s.poi_id: s for s in self.renderer.meshes.placements}
        for p in sc.pois:
            s = placed.get(p.id)
            self._anchor["poi", p.id] = s.centre if s is not None else (p.x_m, p.y_m, 3.0)
        for o in sc.objects:
            self._anchor["object", o.id] = (o.x_m, o.y_m, 1.0)

    @property
    def features(self) -> list[tuple[str, str]]:
        """All feature keys ``(kind, id)``, in feature-index order (index ``k`` is entry ``k - 1``)."""
        return list(self._keys[1:])

    def index_of(self, key: tuple[str, str]) -> int:
        """Feature index of ``(kind, id)``. Raises ``KeyError`` for a feature the scene does not draw."""
        return self._index[tuple(key)]

    def anchor(self, key: tuple[str, str]) -> tuple[float, float, float]:
        """Where to aim at a feature, ``(x_m, y_m, z_m)``: a street object's position 1 m up, a POI's
        sign-face centre, a building's footprint vertex mean at half height. Raises ``KeyError``."""
        return self._anchor[tuple(key)]

    def index_image(self, x_m: float, y_m: float, eye_height_m: float = DEFAULT_EYE_HEIGHT_M,
                    yaw_deg: float = 0.0, pitch_deg: float = 0.0, hfov_deg: float = VIEW_HFOV_DEG,
                    width: int = VIEW_WIDTH, height: int = VIEW_HEIGHT, dynamic=None) -> np.ndarray:
        """``(height, width)`` int32 feature indices (0 = ground/sky; :meth:`SceneRenderer.render_ids`).
        Camera conventions of :mod:`.renderer` (compass yaw, pitch up positive, metres). ``dynamic``: people and
        vehicles drawn too (they hide what is behind them; their own indices follow the features')."""
        return self.renderer.render_ids(x_m, y_m, yaw_deg, pitch_deg, hfov_deg, width, height, eye_height_m,
                                        dynamic=dynamic)

    def mask(self, key: tuple[str, str], *args, **kwargs) -> np.ndarray:
        """``(height, width)`` bool: the pixels showing feature ``(kind, id)`` (other arguments as
        :meth:`index_image`). Raises ``KeyError`` for a feature the scene does not draw."""
        return self.index_image(*args, **kwargs) == self._index[tuple(key)]

    def pixel_counts(self, x_m: float, y_m: float, eye_height_m: float = DEFAULT_EYE_HEIGHT_M,
                     yaw_deg: float = 0.0, pitch_deg: float = 0.0, hfov_deg: float = VIEW_HFOV_DEG,
                     width: int = VIEW_WIDTH, height: int = VIEW_HEIGHT) -> dict[tuple[str, str], int]:
        """``{(kind, id): visible pixel count}`` of the view at this pose, for every feature with at
        least one pixel (features not in the dict show none). :meth:`counts_by_kind` gives
        ``{kind: {id: count}}``.

        Args:
            x_m, y_m: camera position (local metres); eye_height_m: above the ground.
            yaw_deg: compass bearing of the view centre; pitch_deg: up positive.
            hfov_deg: horizontal field of view; width, height: pixels.
        Raises:
            ValueError: bad angles or sizes.
        """
        img = self.index_image(x_m, y_m, eye_height_m, yaw_deg, pitch_deg, hfov_deg, width, height)
        counts = np.bincount(img.ravel(), minlength=len(self._keys))
        nz = np.flatnonzero(counts[1:]) + 1
        return {self._keys[k]: int(counts[k]) for k in nz}

    def counts_by_kind(self, *args, **kwargs) -> dict[str, dict[str, int]]:
        """``{"building": {id: n}, "poi": {id: n}, "object": {id: n}}`` (arguments as :meth:`pixel_counts`)."""
        out: dict[str, dict[str, int]] = {k: {} for k in FEATURE_KINDS}
        for (kind, fid), n in self.pixel_counts(*args, **kwargs).items():
            out[kind][fid] = n
        return out

    def pixels_towards(self, key: tuple[str, str], x_m: float, y_m: float,
                       eye_height_m: float = DEFAULT_EYE_HEIGHT_M, hfov_deg: float = VIEW_HFOV_DEG,
                       width: int = VIEW_WIDTH, height: int = VIEW_HEIGHT, dynamic=None) -> int:
        """Pixels of feature ``(kind, id)`` in a level view (pitch 0) from ``(x_m, y_m)`` turned towards
        its :meth:`anchor` (``dynamic``: with these people and vehicles in front of it). Raises ``KeyError`` for a
        feature the scene does not draw."""
        ax, ay, _ = self._anchor[tuple(key)]
        yaw = math.degrees(math.atan2(ax - x_m, ay - y_m)) % 360.0
        img = self.index_image(x_m, y_m, eye_height_m, yaw, 0.0, hfov_deg, width, height, dynamic=dynamic)
        return int(np.count_nonzero(img == self._index[tuple(key)]))


class CountVisibility:
    """The object-count generator's visibility hook on a city's rendered scene.

    ``hook(kind, feature_id, node_ids) -> bool``: whether the feature (``kind`` ``object`` for
    a street object, ``poi`` for a POI whose sign is counted) shows at least ``min_pixels``
    pixels in the view from at least one of ``node_ids`` (pose nodes, tried in the order given,
    stopping at the first that shows it): a level ``hfov_deg`` view of ``width x height`` pixels
    at ``eye_height_m`` above the node, turned towards it (:meth:`VisibilityPass.pixels_towards`).
    A feature the scene does not draw is not visible. Results are cached per ``(feature, node)``;
    ``renders`` counts the views rendered.

    Args:
        city: the city (node positions; its scene is built with :func:`scene_from_city` unless
            ``vis`` is given).
        vis: a :class:`VisibilityPass` of the city's scene to reuse.
        population: render settings whose ``population`` is ``snapshot`` (e.g. ``settings_for_style("realistic")``):
            each node's people and vehicles (:mod:`.population`, the ones its panorama shows) are drawn into its
            views, so an object they hide is not visible from there; ``None`` (the default): the scene alone.
    Raises:
        ValueError: the city has no annotations (nothing to render).
        RendererUnavailableError: no OpenGL context here.
    """

    def __init__(self, city, vis: VisibilityPass | None = None, min_pixels: int = MIN_VISIBLE_PX,
                 width: int = VIEW_WIDTH, height: int = VIEW_HEIGHT, hfov_deg: float = VIEW_HFOV_DEG,
                 eye_height_m: float = DEFAULT_EYE_HEIGHT_M, population=None):
        if vis is None:
            from urbanarena.render.scene3d.city_scene import scene_from_city

            vis = VisibilityPass(scene_from_city(city))
        self.city = city
        self.vis = vis
        self.min_pixels = int(min_pixels)
        self.width, self.height, self.hfov_deg = int(width), int(height), float(hfov_deg)
        self.eye_height_m = float(eye_height_m)
        self.renders = 0
        self._cache: dict[tuple[str, str, str], int] = {}
        self.population = population if getattr(population, "population", "none") != "none" else None
        self._people: dict[str, object] = {}

    def _dynamic(self, node: str):
        """The node's people and vehicles when :attr:`population` is set (cached per node), else ``None``."""
        if self.population is None:
            return None
        if node not in self._people:
            from urbanarena.render.scene3d.city_scene import node_pose
            from urbanarena.render.scene3d.population_draw import node_population

            x, y, _ = node_pose(self.city, node)
            self._people[node] = node_population(self.vis.renderer.scene, self.population, node, x, y)
        return self._people[node]

    def pixels(self, kind: str, feature_id: str, node: str) -> int:
        """Pixels of the feature in the view from ``node`` towards it (cached); 0 for one not drawn."""
        key = (kind, feature_id, node)
        n = self._cache.get(key)
        if n is None:
            if (kind, feature_id) not in self.vis._index:
                n = 0
            else:
                x, y = self.city.xy(node)
                n = self.vis.pixels_towards((kind, feature_id), float(x), float(y), self.eye_height_m,
                                            self.hfov_deg, self.width, self.height, dynamic=self._dynamic(node))
                self.renders += 1
            self._cache[key] = n
        return n

    def __call__(self, kind: str, feature_id: str, node_ids: Iterable[str]) -> bool:
        return any(self.pixels(kind, feature_id, n) >= self.min_pixels for n in node_ids)

    def best(self, kind: str, feature_id: str, node_ids: Sequence[str]) -> tuple[str | None, int]:
        """``(node, pixels)`` of the node showing the feature most (``(None, 0)`` without nodes)."""
        best: tuple[str | None, int] = (None, 0)
        for n in node_ids:
            px = self.pixels(kind, feature_id, n)
            if best[0] is None or px > best[1]:
                best = (n, px)
        return best


__all__ = ["CountVisibility", "MIN_VISIBLE_PX", "VIEW_HEIGHT", "VIEW_HFOV_DEG", "VIEW_WIDTH", "VisibilityPass"]
