"""City annotations: what stands along the streets of a city.

An :class:`Annotations` object travels with a :class:`~urbanarena.world.city.City`
(``city.annotations``; ``None`` for cities without any, e.g. CitySeeker) and
is saved beside the graph as ``annotations.json.gz`` (see *File format* below).
Importers fill it (today: :mod:`urbanarena.world.importers.osm`); the renderer
and the task generators read it.

Coordinates: every position is given twice, in the city's local frame
(``x_m``/``y_m`` or ``*_xy``: metres, x east, y north, the city's
:class:`~urbanarena.world.geo.LocalFrame`) and in WGS84 (``lat``/``lon`` or
``*_lonlat``: degrees, **lon first** in coordinate lists, as GeoJSON).
Angles are degrees clockwise from true north in [0, 360).

Records
-------
:class:`Building`
    Footprint polygons (exterior ring counter-clockwise in local metres, holes
    clockwise), height and facades. Height rule (:func:`building_height`):
    the ``height`` tag (metres; ``"12 m"``, ``"40'"`` and ``"40 ft"`` are
    understood), else ``building:levels`` x :data:`LEVEL_HEIGHT_M` (3 m),
    else :data:`DEFAULT_BUILDING_HEIGHT_M` (12 m, about four storeys);
    ``height_source`` says which rule applied. ``min_height_m`` from
    ``min_height`` or ``building:min_level`` x 3 m (else 0).
:class:`Facade`
    One wall of a building's outer ring: consecutive ring edges that turn by
    less than :data:`FACADE_MERGE_ANGLE_DEG` are merged into one straight
    facade from ``p0`` to ``p1`` (exterior rings run counter-clockwise, so the
    outside is on the right of ``p0 -> p1``; ``normal_deg`` is the outward
    normal's azimuth). A facade is *street-facing* when a ray cast outward
    along its normal from 25 %, 50 % or 75 % of its length reaches the
    walkable network within :data:`FACADE_STREET_MAX_M` before entering any
    building (party walls and courtyard walls are not street-facing);
    ``street_distance_m`` is the shortest such ray.
:class:`POI`
    A named or unnamed shop, amenity, tourism site ... that belongs to a
    building facade. ``category`` is the OSM key that made it a POI (first of
    :data:`POI_CATEGORIES` present), ``kind`` that key's value, ``tags`` the raw
    tags. Attachment (:func:`attach_pois`): the building containing the point,
    else the nearest building within :data:`POI_BUILDING_MAX_M`; on it the
    nearest street-facing facade (the nearest facade of any kind when the
    building has no street-facing one); ``facade_xy`` is the point's
    projection on that facade, kept 0.5 m from its ends; ``front_xy`` is the
    point of walkable space in front of it: where a ray from ``facade_xy``
    along the facade normal first meets the pedestrian network (within
    :data:`FACADE_STREET_MAX_M`, before entering a building;
    ``front_method="normal"``), else the nearest point of the network
    (``"nearest"``). Task goals and success radii are measured to
    ``front_xy``. ``node_id`` is the pose node nearest to ``front_xy``;
    ``street_id``/``along_m``/``lateral_m`` place the facade point along a
    street (``lateral_m`` > 0: right of the street's direction).
    Named POIs with no building within reach are kept apart as
    ``standalone_pois`` (same record, ``building_id``/``facade_id`` null).
:class:`StreetObject`
    Trees, street lamps, vending machines, benches, traffic signals, traffic
    signs, crossings, bus stops and subway entrances (:data:`OBJECT_TYPES`),
    each placed along its nearest street like POIs (``street_azimuth_deg`` is
    the street's direction there; crossings are drawn across it).
:class:`Street`
    A piece of the walkable network between two decision points (or dead
    ends) after pruning: polyline, pose node ids along it, OSM way ids, the
    dominant ``highway`` value, name, carriageway ``width_m`` and whether a
    sidewalk runs on its left/right (mapped as ``sidewalk=*`` on the road or
    as a separate ``footway=sidewalk`` way folded into it).
    ``is_street`` is true for carriageways and pedestrian streets (not for
    footpaths, steps, cycleways): only those bound city blocks.
:class:`Block`
    A polygon enclosed by streets: :func:`city_blocks` polygonizes the
    (noded) ``is_street`` lines with :func:`shapely.polygonize` and keeps
    faces of at least :data:`BLOCK_MIN_AREA_M2` that are wider than
    ``2 x`` :data:`BLOCK_MIN_HALF_WIDTH_M` somewhere (drops slivers between
    dual carriageways and traffic islands). Lists the buildings and POIs
    inside it and the streets along its boundary.

File format (``annotations.json.gz``, gzip UTF-8 JSON, version 1)
------------------------------------------------------------------
``{"format": "urbanarena-annotations", "format_version": 1, "origin": {lat, lon},
"bbox": [W, S, E, N] | null, "source": {...}, "pois": [...], "standalone_pois": [...],
"objects": [...], "buildings": [...], "blocks": [...], "streets": [...],
"walkable_areas": [...]}``, plus ``"rail_lines"`` and ``"land_areas"`` when non-empty (drawn-only tram
tracks and planted land cover, see :class:`Annotations`); each record is the dataclass below as a JSON
object (tuples become lists). Its sha256 over canonical JSON
(:attr:`Annotations.content_hash`) is stored in ``city.json``
(``annotations_hash``) and checked on load.

Modules: the records and the file format are in :mod:`.annotation_records`, the tag rules (heights, land cover) in
:mod:`.annotation_heights`, the geometry (facades, POI and object placement, blocks) in
:mod:`.annotation_placement`; this module re-exports their names.
"""

from __future__ import annotations

# re-exported: the records, the height/land-cover rules and the placement geometry were defined here
from urbanarena.world.annotation_records import (  # noqa: F401
    ANNOTATIONS_FILE, Annotations, BLOCK_MIN_AREA_M2, BLOCK_MIN_HALF_WIDTH_M, Block, Building,
    DEFAULT_BUILDING_HEIGHT_M, FACADE_END_MARGIN_M, FACADE_MERGE_ANGLE_DEG, FACADE_STREET_MAX_M, FORMAT_ID,
    FORMAT_VERSION, Facade, LEVEL_HEIGHT_M, OBJECT_TYPES, POI, POI_BUILDING_MAX_M, POI_CATEGORIES, Street,
    StreetObject, _RECORD_TYPES, _from_record, _tuple2,
)
from urbanarena.world.annotation_heights import (  # noqa: F401
    LAND_COVER, _FEET_INCHES, _NUM, _levels, building_height, land_cover_kind, parse_length_m,
)
from urbanarena.world.annotation_placement import (  # noqa: F401
    StreetLocator, _RayCaster, _azimuth, _first_hit, _place_front, attach_pois, city_blocks, make_facades,
    mark_street_facing, place_objects,
)
