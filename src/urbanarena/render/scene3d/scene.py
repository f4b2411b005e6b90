"""What the 3D renderer draws: a plain, hashable description of a street scene.

All geometry is in the city's local frame: metres, ``x`` east, ``y`` north,
``z`` up, ground at ``z = 0`` (flat ground; no terrain). Bearings are compass
degrees clockwise from true north.

A :class:`Scene` is built either by hand (tests, synthetic cities) or from a
city's OSM annotations by :func:`urbanarena.render.scene3d.city_scene.scene_from_city`.
It holds only data (frozen dataclasses of tuples and numbers), so it can be
hashed: :meth:`Scene.content_hash` is the SHA-256 of its canonical JSON, and the
panorama cache keys on it (together with the renderer version and settings).

Kinds of street object (:data:`OBJECT_KINDS`) each have a simple mesh
(:mod:`urbanarena.render.scene3d.meshes`); a kind outside the list is drawn as
a generic grey post so nothing silently disappears.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping, Sequence

Point = tuple[float, float]

#: Street-object kinds with a dedicated mesh.
OBJECT_KINDS = (
    "tree",
    "street_lamp",
    "vending_machine",
    "bench",
    "traffic_sign",
    "traffic_signals",
    "bus_stop",
    "subway_entrance",
    "waste_basket",
    "bollard",
)

#: Road surface kinds: ``road`` (asphalt carriageway, optional sidewalks each side);
#: ``footway`` / ``pedestrian`` (paved walking surface, drawn in the sidewalk colour).
ROAD_KINDS = ("road", "footway", "pedestrian")

#: Attribution text for scenes built from OpenStreetMap data.
OSM_ATTRIBUTION = "© OpenStreetMap contributors"


#: :class:`Building` fields read by the realistic style only (from OSM tags, :mod:`.city_scene`)
BUILDING_LOOK_FIELDS = ("material", "tagged_colour", "roof_shape", "roof_colour", "roof_height_m", "kind")

_CONTENT = ("buildings", "pois", "objects", "roads", "crosswalks", "paved_areas", "rails", "land_areas")
#: content drawn by the realistic style only, left out of :meth:`Scene.to_dict` while empty
_LOOK_CONTENT = ("rails", "land_areas")
#: :class:`LandArea` kinds
LAND_KINDS = ("grass", "park", "planting")


def _pts(seq: Iterable[Sequence[float]]) -> tuple[Point, ...]:
    return tuple((float(p[0]), float(p[1])) for p in seq)


def _finite(name: str, *vals: float) -> None:
    for v in vals:
        if not math.isfinite(v):
            raise ValueError(f"{name}: non-finite value {v!r}")


@dataclass(frozen=True)
class Building:
    """An extruded building.

    Attributes:
        id: stable identifier (its facade colour is derived from it when ``colour`` is ``None``).
        footprint: exterior ring ``((x_m, y_m), ...)``, at least 3 distinct points, not
            repeated at the end; either orientation.
        height_m: roof height above ground, metres (> 0).
        holes: interior rings (courtyards), same form as ``footprint``.
        colour: facade RGB ``(0..255)``; ``None`` = deterministic choice from a palette.
        levels: number of storeys from the source (informational; window rows follow the
            renderer's storey height).
        shopfront: whether the ground floor has display windows (also set for buildings with signs).
        base_m: height of the lowest part above ground (``min_height``: overhangs, bridges), metres.
        material: facade material from ``building:material`` (normalised: ``brick``, ``plaster``, ``stone``,
            ``concrete``, ``glass``, ``wood``, ``metal``); ``None`` = seeded choice. Realistic style only.
        tagged_colour: facade RGB ``(0..255)`` from ``building:colour``; realistic style only (the flat
            style keeps ``colour``, so its pixels do not change).
        roof_shape: ``roof:shape`` (``flat``, ``gabled``, ``hipped``, ``pyramidal``, ...); ``None`` = seeded
            choice on low buildings. Realistic style only.
        roof_colour: roof RGB from ``roof:colour``; realistic style only.
        roof_height_m: height of a pitched roof above the walls (``roof:height``, or ``roof:levels`` x 2.8 m).
        kind: the ``building`` tag's value (``yes``, ``residential``, ``apartments``, ``church``, ...).
    """

    id: str
    footprint: tuple[Point, ...]
    height_m: float
    holes: tuple[tuple[Point, ...], ...] = ()
    colour: tuple[int, int, int] | None = None
    levels: float | None = None
    shopfront: bool = False
    base_m: float = 0.0
    material: str | None = None
    tagged_colour: tuple[int, int, int] | None = None
    roof_shape: str | None = None
    roof_colour: tuple[int, int, int] | None = None
    roof_height_m: float | None = None
    kind: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "footprint", _pts(self.footprint))
        object.__setattr__(self, "holes", tuple(_pts(h) for h in self.holes))
        if len(set(self.footprint)) < 3:
            raise ValueError(f"building {self.id!r}: footprint needs at least 3 distinct points")
        if not (self.height_m > 0) or not math.isfinite(self.height_m):
            raise ValueError(f"building {self.id!r}: height_m must be positive, got {self.height_m}")
        if not (0.0 <= self.base_m < self.height_m):
            raise ValueError(f"building {self.id!r}: base_m must be in [0, height_m), got {self.base_m}")
        for p in self.footprint:
            _finite(f"building {self.id!r} footprint", *p)
        for name in ("colour", "tagged_colour", "roof_colour"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, tuple(int(c) for c in getattr(self, name)))


@dataclass(frozen=True)
class Poi:
    """A named point of interest whose name is shown on a storefront sign.

    Attributes:
        id: stable identifier.
        name: text on the sign (any script the sign font covers).
        category: normalised category (``"shop"``, ``"amenity"``, ...), used for the sign colour.
        x_m, y_m: the POI's facade point (or raw position) in local metres.
        building_id: building the POI belongs to, if known; ``None`` = nearest building.
        facing_hint_deg: outward normal of the facade the POI was attached to by the
            importer, if known: a wall through the POI point facing within 30 degrees of
            it is preferred over the renderer's own street-facing test.
    """

    id: str
    name: str
    category: str
    x_m: float
    y_m: float
    building_id: str | None = None
    facing_hint_deg: float | None = None

    def __post_init__(self):
        _finite(f"poi {self.id!r}", self.x_m, self.y_m)
        if not self.name.strip():
            raise ValueError(f"poi {self.id!r}: empty name")


@dataclass(frozen=True)
class StreetObject:
    """A piece of street furniture or vegetation.

    Attributes:
        kind: one of :data:`OBJECT_KINDS` (others are drawn as a generic post).
        heading_deg: compass bearing the object's front faces (vending machine
            front, bench seat, sign face); ``None`` = facing the nearest road.
        label: optional text (e.g. a traffic sign's type), used for its colour/shape.
    """

    id: str
    kind: str
    x_m: float
    y_m: float
    heading_deg: float | None = None
    label: str | None = None

    def __post_init__(self):
        _finite(f"object {self.id!r}", self.x_m, self.y_m)


@dataclass(frozen=True)
class Road:
    """A street surface along a centreline.

    Attributes:
        centreline: ``((x_m, y_m), ...)``, at least 2 points.
        width_m: carriageway (or path) width, metres.
        sidewalk_m: sidewalk width on each side, metres (0 = none).
        kind: one of :data:`ROAD_KINDS`.
    """

    id: str
    centreline: tuple[Point, ...]
    width_m: float
    sidewalk_m: float = 0.0
    kind: str = "road"

    def __post_init__(self):
        object.__setattr__(self, "centreline", _pts(self.centreline))
        if len(self.centreline) < 2:
            raise ValueError(f"road {self.id!r}: centreline needs at least 2 points")
        if not (self.width_m > 0) or self.sidewalk_m < 0:
            raise ValueError(f"road {self.id!r}: width_m must be > 0 and sidewalk_m >= 0")
        if self.kind not in ROAD_KINDS:
            raise ValueError(f"road {self.id!r}: kind must be one of {ROAD_KINDS}, got {self.kind!r}")


@dataclass(frozen=True)
class Crosswalk:
    """A zebra crossing: white stripes across a carriageway.

    Attributes:
        x_m, y_m: centre of the crossing (on the road centreline).
        road_bearing_deg: direction of traffic on the road at that point (either way).
        road_width_m: width of the carriageway the stripes span.
        length_m: extent of the crossing along the traffic direction (stripe length).
    Stripes are ``stripe_m`` wide with equal gaps, laid across the road.
    """

    id: str
    x_m: float
    y_m: float
    road_bearing_deg: float
    road_width_m: float
    length_m: float = 3.0
    stripe_m: float = 0.5

    def __post_init__(self):
        _finite(f"crosswalk {self.id!r}", self.x_m, self.y_m, self.road_bearing_deg)
        if not (self.road_width_m > 0 and self.length_m > 0 and self.stripe_m > 0):
            raise ValueError(f"crosswalk {self.id!r}: sizes must be positive")


@dataclass(frozen=True)
class PavedArea:
    """A paved pedestrian area (square, plaza): polygon exterior ``((x_m, y_m), ...)`` and holes."""

    id: str
    polygon: tuple[Point, ...]
    holes: tuple[tuple[Point, ...], ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "polygon", _pts(self.polygon))
        object.__setattr__(self, "holes", tuple(_pts(h) for h in self.holes))
        if len(set(self.polygon)) < 3:
            raise ValueError(f"paved area {self.id!r}: polygon needs at least 3 distinct points")


@dataclass(frozen=True)
class RailLine:
    """A tram track (OSM ``railway=tram``) along a centreline ``((x_m, y_m), ...)``: two rails 1.0 m apart
    (Helsinki's metre gauge, ours for every city) on an embedded track bed. Drawn by the realistic style only."""

    id: str
    centreline: tuple[Point, ...]

    def __post_init__(self):
        object.__setattr__(self, "centreline", _pts(self.centreline))
        if len(self.centreline) < 2:
            raise ValueError(f"rail {self.id!r}: centreline needs at least 2 points")


@dataclass(frozen=True)
class LandArea:
    """Planted land cover (lawns, parks, shrub beds; :data:`LAND_KINDS`): polygon exterior and holes.
    Drawn by the realistic style only, under the streets and walking surfaces."""

    id: str
    polygon: tuple[Point, ...]
    holes: tuple[tuple[Point, ...], ...] = ()
    kind: str = "grass"

    def __post_init__(self):
        object.__setattr__(self, "polygon", _pts(self.polygon))
        object.__setattr__(self, "holes", tuple(_pts(h) for h in self.holes))
        if len(set(self.polygon)) < 3:
            raise ValueError(f"land area {self.id!r}: polygon needs at least 3 distinct points")
        if self.kind not in LAND_KINDS:
            raise ValueError(f"land area {self.id!r}: kind must be one of {LAND_KINDS}, got {self.kind!r}")


@dataclass(frozen=True)
class Scene:
    """Everything drawn in one city.

    Attributes:
        name: scene/city name.
        buildings, pois, objects, roads, crosswalks, paved_areas: the content (tuples).
        rails, land_areas: tram tracks and planted land cover, drawn by the realistic style only (not in
            :meth:`bounds`, so the flat style's ground is unchanged).
        attribution: text that must accompany renders (``OSM_ATTRIBUTION`` for OSM cities).
        ground_extent: ``(xmin, ymin, xmax, ymax)`` of the ground plane; ``None`` = content
            bounding box grown by 500 m.
    """

    name: str = "scene"
    buildings: tuple[Building, ...] = ()
    pois: tuple[Poi, ...] = ()
    objects: tuple[StreetObject, ...] = ()
    roads: tuple[Road, ...] = ()
    crosswalks: tuple[Crosswalk, ...] = ()
    paved_areas: tuple[PavedArea, ...] = ()
    rails: tuple[RailLine, ...] = ()
    land_areas: tuple[LandArea, ...] = ()
    attribution: str = ""
    ground_extent: tuple[float, float, float, float] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        for name in _CONTENT:
            object.__setattr__(self, name, tuple(getattr(self, name)))
        for name in _CONTENT:
            ids = [x.id for x in getattr(self, name)]
            if len(ids) != len(set(ids)):
                dup = sorted({i for i in ids if ids.count(i) > 1})
                raise ValueError(f"scene {self.name!r}: duplicate {name} ids {dup[:5]}")

    # ----------------------------------------------------------- hashing
    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (tuples become lists). A building's realistic-only fields (:data:`BUILDING_LOOK_FIELDS`)
        are left out while ``None`` (so scenes without them keep the content hash they had before them)."""
        d = json.loads(json.dumps(asdict(self), ensure_ascii=False))
        for name in _LOOK_CONTENT:
            if not d.get(name):
                d.pop(name, None)
        for b in d["buildings"]:
            for k in BUILDING_LOOK_FIELDS:
                if b.get(k) is None:
                    b.pop(k, None)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Scene":
        """Inverse of :meth:`to_dict`."""
        return cls(
            name=d.get("name", "scene"),
            buildings=tuple(Building(**{**b, **{k: tuple(b[k]) if b.get(k) else None
                                                for k in ("colour", "tagged_colour", "roof_colour") if k in b}})
                            for b in d.get("buildings", ())),
            pois=tuple(Poi(**p) for p in d.get("pois", ())),
            objects=tuple(StreetObject(**o) for o in d.get("objects", ())),
            roads=tuple(Road(**r) for r in d.get("roads", ())),
            crosswalks=tuple(Crosswalk(**c) for c in d.get("crosswalks", ())),
            paved_areas=tuple(PavedArea(**a) for a in d.get("paved_areas", ())),
            rails=tuple(RailLine(**r) for r in d.get("rails", ())),
            land_areas=tuple(LandArea(**a) for a in d.get("land_areas", ())),
            attribution=d.get("attribution", ""),
            ground_extent=tuple(d["ground_extent"]) if d.get("ground_extent") else None,
            extra=dict(d.get("extra") or {}),
        )

    def content_hash(self) -> str:
        """SHA-256 (hex) of the canonical JSON (sorted keys, repr floats): equal scenes hash equal."""
        text = json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    # ----------------------------------------------------------- lookup
    def building(self, building_id: str) -> Building:
        """The building with ``building_id``. Raises ``KeyError``."""
        for b in self.buildings:
            if b.id == building_id:
                return b
        raise KeyError(building_id)

    def bounds(self) -> tuple[float, float, float, float]:
        """``(xmin, ymin, xmax, ymax)`` of all content (metres); ``(-50, -50, 50, 50)`` for an empty scene."""
        xs: list[float] = []
        ys: list[float] = []
        for b in self.buildings:
            xs += [p[0] for p in b.footprint]
            ys += [p[1] for p in b.footprint]
        for r in self.roads:
            xs += [p[0] for p in r.centreline]
            ys += [p[1] for p in r.centreline]
        for a in self.paved_areas:
            xs += [p[0] for p in a.polygon]
            ys += [p[1] for p in a.polygon]
        for o in (*self.pois, *self.objects, *self.crosswalks):
            xs.append(o.x_m)
            ys.append(o.y_m)
        if not xs:
            return (-50.0, -50.0, 50.0, 50.0)
        return (min(xs), min(ys), max(xs), max(ys))
