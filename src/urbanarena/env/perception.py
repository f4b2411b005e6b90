"""Oracle perception: the annotated features a camera view shows, computed from geometry, not pixels.

Used by the ``--oracle-perception`` control mode (:mod:`urbanarena.agents.controls`), which gives
a VLM agent the POIs and street objects in its view as text instead of the image, so a report can
separate perception from reasoning.

:func:`features_in_view` lists the features of ``city.annotations`` that a camera at
``(x_m, y_m)`` looking along compass bearing ``yaw_deg`` with a horizontal field of view
``hfov_deg`` sees, by three tests:

1. **Range**: the horizontal distance from the camera to the feature's point is greater than 0
   and at most ``max_distance_m``.
2. **Field of view**: the bearing from the camera to the point lies within ``hfov_deg / 2`` of
   ``yaw_deg`` (either side, inclusive; ``hfov_deg = 360`` keeps every bearing: a panorama).
3. **Line of sight**: the straight segment from the camera to the point crosses no building
   footprint (a shapely :class:`~shapely.strtree.STRtree` over the footprints of
   ``annotations.buildings``; a segment touching a footprint only along its boundary, e.g.
   grazing a corner, is not blocked). The feature's point is the **facade point** for POIs
   attached to a facade (``facade_xy``: where its storefront sign hangs), which lies on its own
   building's wall, so the last :data:`FACADE_CLEARANCE_M` of the segment are left out of the
   test; a camera standing inside a footprint (a passage through a building) ignores that
   building. Street objects and standalone POIs use their own position.

Heights are ignored (footprints block at any height; low objects are not hidden behind parked
cars or one another): this is the oracle's deliberately simple notion of "in view".

Each feature comes back as a :class:`Feature` with its name (POIs; ``None`` for unnamed ones),
category (``"shop=bakery"``: the POI's OSM key and value; an object's type, ``"bench"``),
absolute bearing and bearing relative to the view centre (degrees, negative = left of centre)
and distance (metres), nearest first.
"""

from __future__ import annotations

import math
import threading
import weakref
from dataclasses import asdict, dataclass
from typing import Any, Mapping

import gymnasium as gym
import numpy as np
import shapely
from shapely.geometry import LineString, Point
from shapely.strtree import STRtree

from urbanarena.errors import UrbanArenaError
from urbanarena.world.city import City
from urbanarena.world.geo import signed_turn_deg, wrap_deg

#: metres of the sight line left out at a facade point (it lies on its own building's wall)
FACADE_CLEARANCE_M = 0.3
#: default range of the oracle, metres
DEFAULT_MAX_DISTANCE_M = 50.0


class NoAnnotationsError(UrbanArenaError, LookupError):
    """The city has no annotations (POIs, objects, buildings) to perceive."""


@dataclass(frozen=True)
class Feature:
    """One annotated feature in view.

    Attributes:
        kind: ``"poi"`` or ``"object"``.
        id: the annotation id.
        name: the POI's or object's name, or ``None``.
        category: ``"<osm key>=<value>"`` for POIs (``"shop=bakery"``), the object type for objects.
        x_m, y_m: the point tested (facade point of a POI on a facade), local metres.
        bearing_deg: compass bearing from the camera, [0, 360).
        relative_deg: bearing relative to the view centre, (-180, 180], negative = left.
        distance_m: horizontal distance from the camera, metres.
    """

    kind: str
    id: str
    name: str | None
    category: str
    x_m: float
    y_m: float
    bearing_deg: float
    relative_deg: float
    distance_m: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class PerceptionIndex:
    """Feature points and the building footprint tree of one :class:`Annotations` object.

    Raises:
        NoAnnotationsError: ``annotations`` is ``None``.
    """

    def __init__(self, annotations: Any):
        if annotations is None:
            raise NoAnnotationsError("the city has no annotations (POIs, street objects, buildings): oracle "
                                     "perception needs them (OSM cities carry them)")
        rows: list[tuple[str, str, str | None, str, float, float, bool]] = []
        for p in list(annotations.pois) + list(annotations.standalone_pois):
            on_facade = p.facade_xy is not None
            x, y = (p.facade_xy if on_facade else (p.x_m, p.y_m))
            rows.append(("poi", p.id, p.name, f"{p.category}={p.kind}", float(x), float(y), on_facade))
        for o in annotations.objects:
            rows.append(("object", o.id, o.name, o.type, float(o.x_m), float(o.y_m), False))
        self.rows = rows
        self.xy = np.array([(r[4], r[5]) for r in rows], dtype=float).reshape(-1, 2)
        shapes = [b.shape() for b in annotations.buildings]
        self.buildings = np.array(shapes, dtype=object)
        self.tree = STRtree(self.buildings) if shapes else None

    def blocked(self, cam: tuple[float, float], target: tuple[float, float], on_facade: bool,
                ignore: frozenset[int]) -> bool:
        """Whether a building footprint blocks the sight line ``cam -> target`` (module docstring, test 3)."""
        if self.tree is None:
            return False
        dx, dy = target[0] - cam[0], target[1] - cam[1]
        d = math.hypot(dx, dy)
        end = target
        if on_facade:
            if d <= FACADE_CLEARANCE_M:
                return False
            k = (d - FACADE_CLEARANCE_M) / d
            end = (cam[0] + k * dx, cam[1] + k * dy)
        seg = LineString([cam, end])
        for i in self.tree.query(seg, predicate="intersects"):
            if int(i) in ignore:
                continue
            # the segment's interior meets the footprint's interior (DE-9IM "T********"): touching the
            # boundary only (grazing a corner, running along a wall) does not block
            if shapely.relate_pattern(seg, self.buildings[int(i)], "T********"):
                return True
        return False


_INDEX: dict[int, tuple[tuple, PerceptionIndex]] = {}
_INDEX_LOCK = threading.Lock()


def perception_index(city: City) -> PerceptionIndex:
    """The (cached) :class:`PerceptionIndex` of ``city.annotations``. Raises :class:`NoAnnotationsError`."""
    ann = getattr(city, "annotations", None)
    if ann is None:
        raise NoAnnotationsError(f"city {city.name!r} has no annotations (POIs, street objects, buildings): "
                                 "oracle perception needs them (OSM cities carry them)")
    # one index per live annotations object (keyed by id: dataclasses are unhashable; dropped with the
    # object), rebuilt when its record lists are replaced or change length
    sig = tuple((id(getattr(ann, k)), len(getattr(ann, k))) for k in ("pois", "standalone_pois", "objects", "buildings"))
    with _INDEX_LOCK:
        hit = _INDEX.get(id(ann))
        if hit is None or hit[0] != sig:
            if hit is None:
                weakref.finalize(ann, _INDEX.pop, id(ann), None)
            hit = _INDEX[id(ann)] = (sig, PerceptionIndex(ann))
    return hit[1]


def _pose_values(pose: Any) -> tuple[float, float, float]:
    if isinstance(pose, Mapping):
        return float(pose["x_m"]), float(pose["y_m"]), float(pose["yaw_deg"])
    if isinstance(pose, (tuple, list)):
        x, y, yaw = pose
        return float(x), float(y), float(yaw)
    return float(pose.x_m), float(pose.y_m), float(pose.yaw_deg)


def features_in_view(city: City, pose: Any, hfov_deg: float = 90.0,
                     max_distance_m: float = DEFAULT_MAX_DISTANCE_M) -> list[Feature]:
    """The annotated POIs and street objects a camera sees (module docstring), nearest first.

    Args:
        city: a city with ``annotations``.
        pose: the camera: an :class:`~urbanarena.env.arena_env.ArenaPose`, a mapping with ``x_m``,
            ``y_m`` (local metres) and ``yaw_deg`` (compass bearing of the view centre), or a tuple
            ``(x_m, y_m, yaw_deg)``.
        hfov_deg: horizontal field of view, degrees in (0, 360] (360: all around).
        max_distance_m: range, metres (> 0).
    Returns: list of :class:`Feature`, by distance then id.
    Raises:
        NoAnnotationsError: the city has no annotations.
        ValueError: ``hfov_deg`` or ``max_distance_m`` out of range.
    """
    if not 0.0 < float(hfov_deg) <= 360.0:
        raise ValueError(f"hfov_deg must be in (0, 360], got {hfov_deg}")
    if not float(max_distance_m) > 0.0:
        raise ValueError(f"max_distance_m must be > 0, got {max_distance_m}")
    idx = perception_index(city)
    x, y, yaw = _pose_values(pose)
    if len(idx.rows) == 0:
        return []
    d = np.hypot(idx.xy[:, 0] - x, idx.xy[:, 1] - y)
    near = np.flatnonzero((d > 0.0) & (d <= float(max_distance_m)))
    ignore: frozenset[int] = frozenset()
    if idx.tree is not None:
        ignore = frozenset(int(i) for i in idx.tree.query(Point(x, y), predicate="within"))
    half = float(hfov_deg) / 2.0
    out: list[Feature] = []
    for i in near:
        kind, fid, name, cat, fx, fy, on_facade = idx.rows[int(i)]
        bearing = wrap_deg(math.degrees(math.atan2(fx - x, fy - y)))
        rel = signed_turn_deg(yaw, bearing)
        if hfov_deg < 360.0 and abs(rel) > half + 1e-9:
            continue
        if idx.blocked((x, y), (fx, fy), on_facade, ignore):
            continue
        out.append(Feature(kind, fid, name, cat, fx, fy, bearing, rel, float(d[i])))
    out.sort(key=lambda f: (f.distance_m, f.id))
    return out


class FeaturesInViewWrapper(gym.ObservationWrapper):
    """Adds ``observation["features_in_view"]`` to an arena env's observations: :func:`features_in_view`
    of the camera, as dicts (:meth:`Feature.to_dict`), nearest first.

    The camera stands where the view's picture is taken: the pose's ``nearest_node`` (views are cut
    from the nearest node's panorama, :class:`~urbanarena.env.observers.PanoramaObserver`), looking
    along the pose's yaw. Privileged by construction (it reads the annotations): only the
    ``--oracle-perception`` control mode uses it.

    Args:
        env: an :class:`~urbanarena.env.arena_env.ArenaEnv`, possibly wrapped.
        hfov_deg: the view's horizontal field of view, degrees.
        max_distance_m: range, metres.
    Raises:
        NoAnnotationsError: the env's city has no annotations (on construction).
    """

    def __init__(self, env: gym.Env, hfov_deg: float = 90.0, max_distance_m: float = DEFAULT_MAX_DISTANCE_M):
        super().__init__(env)
        self.hfov_deg = float(hfov_deg)
        self.max_distance_m = float(max_distance_m)
        perception_index(env.unwrapped.city)  # type: ignore[attr-defined]

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        base = self.env.unwrapped
        pose = base.pose()  # type: ignore[attr-defined]
        x, y = base.city.xy(pose.nearest_node)  # type: ignore[attr-defined]
        feats = features_in_view(base.city, (float(x), float(y), pose.yaw_deg), self.hfov_deg,  # type: ignore[attr-defined]
                                 self.max_distance_m)
        return {**observation, "features_in_view": [f.to_dict() for f in feats]}


__all__ = ["DEFAULT_MAX_DISTANCE_M", "FACADE_CLEARANCE_M", "Feature", "FeaturesInViewWrapper", "NoAnnotationsError",
           "PerceptionIndex", "features_in_view", "perception_index"]
