"""Build a renderable :class:`Scene` from a city's annotations (:mod:`urbanarena.world.annotations`).

Mapping (all coordinates stay in the city's local frame, metres):

* every polygon of an annotated building becomes one :class:`Building`
  (id ``<building id>`` or ``<building id>#<k>`` for multipolygons), height
  ``height_m``, base ``min_height_m``;
* every **named** POI (facade-attached and standalone) becomes a :class:`Poi`
  at its ``facade_xy`` (its raw position when it has none), on the building
  polygon nearest to that point, with the facade's outward normal as
  ``facing_hint_deg`` so the sign goes on the facade the annotations chose;
* street objects keep their type as the mesh kind; the traffic sign code
  (``traffic_sign`` tag) is the label. Objects of type ``crossing`` that lie
  on a carriageway (a street with ``is_street`` whose ``highway`` is not
  ``pedestrian``) become zebra :class:`Crosswalk` stripes across it (the
  street's ``width_m`` and ``street_azimuth_deg``); other crossings draw nothing;
* streets become :class:`Road` surfaces: carriageways (``is_street`` and not
  ``pedestrian``) as asphalt with 2 m sidewalks when either side has one,
  everything else (footways, pedestrian streets, cycleways, steps, service
  paths) as paved walking surface; pedestrian squares (``walkable_areas``,
  ``polygon_xy`` as ``[polygon][ring][vertex]``) as :class:`PavedArea`;
* the look of a building (drawn by the realistic style only, :data:`.scene.BUILDING_LOOK_FIELDS`) from its
  OSM tags (:func:`building_look`): ``building:material`` (or ``building:facade:material``) normalised by
  :data:`MATERIALS`, ``building:colour`` and ``roof:colour`` (CSS names or hex, read by Pillow's
  ``ImageColor``), ``roof:shape`` normalised by :data:`ROOF_SHAPES`, ``roof:height`` (or ``roof:levels``
  x 2.8 m), the ``building`` value; unreadable values count as missing;
* tram tracks (``rail_lines``) become :class:`RailLine` and planted land cover (``land_areas``)
  :class:`LandArea` (realistic style only);
* the attribution is the city's (``© OpenStreetMap contributors`` for OSM cities).
"""

from __future__ import annotations

import math

from shapely.geometry import Point as SPoint, Polygon

from urbanarena.render.scene3d.scene import (
    OSM_ATTRIBUTION, Building, Crosswalk, LandArea, PavedArea, Poi, RailLine, Road, Scene, StreetObject,
)
from urbanarena.world.city import City

#: Sidewalk width (each side) drawn along carriageways mapped with ``sidewalk=*``.
SIDEWALK_M = 2.0

#: ``building:material`` values -> the realistic style's facade materials (ours)
MATERIALS = {
    "brick": "brick", "bricks": "brick", "plaster": "plaster", "render": "plaster", "stucco": "plaster",
    "stone": "stone", "sandstone": "stone", "limestone": "stone", "granite": "stone", "marble": "stone",
    "concrete": "concrete", "cement_block": "concrete", "reinforced_concrete": "concrete", "glass": "glass",
    "mirror": "glass", "wood": "wood", "timber_framing": "wood", "timber": "wood", "metal": "metal",
    "steel": "metal", "metal_plates": "metal", "aluminium": "metal",
}
#: ``roof:shape`` values -> the roof drawn (ours: close relatives are approximated; dome, onion, round and
#: skillion keep their tag and are drawn flat, see docs/renderer.md)
ROOF_SHAPES = {
    "flat": "flat", "gabled": "gabled", "gambrel": "gabled", "saltbox": "gabled", "hipped": "hipped",
    "half-hipped": "hipped", "side_hipped": "hipped", "mansard": "hipped", "pyramidal": "pyramidal",
    "dome": "dome", "onion": "onion", "round": "round", "skillion": "skillion",
}
ROOF_LEVEL_M = 2.8


def _css_rgb(value: str | None) -> tuple[int, int, int] | None:
    from PIL import ImageColor

    if not value:
        return None
    try:
        return tuple(ImageColor.getrgb(value.strip().split(";")[0].strip().lower()))[:3]
    except ValueError:
        return None


def building_look(tags: dict[str, str]) -> dict:
    """The realistic-only :class:`Building` fields (module docstring) from a building's OSM ``tags``."""
    from urbanarena.world.annotations import parse_length_m

    mat = (tags.get("building:material") or tags.get("building:facade:material") or "").strip().lower()
    roof_h = parse_length_m(tags.get("roof:height"))
    if roof_h is None:
        try:
            lv = float(str(tags.get("roof:levels", "")).split(";")[0])
            roof_h = lv * ROOF_LEVEL_M if lv > 0 else None
        except ValueError:
            roof_h = None
    kind = tags.get("building")
    return {"material": MATERIALS.get(mat), "tagged_colour": _css_rgb(tags.get("building:colour")),
            "roof_shape": ROOF_SHAPES.get((tags.get("roof:shape") or "").strip().lower()),
            "roof_colour": _css_rgb(tags.get("roof:colour")),
            "roof_height_m": roof_h if roof_h is not None and 0 < roof_h < 30 else None,
            "kind": kind if kind and kind != "yes" else None}


def _is_carriageway(street) -> bool:
    return bool(street.is_street) and street.highway not in ("pedestrian", "footway", "path", "steps")


def scene_from_annotations(ann, name: str = "city", attribution: str = OSM_ATTRIBUTION) -> Scene:
    """:class:`Scene` from an :class:`~urbanarena.world.annotations.Annotations` (module docstring).

    Raises:
        ValueError: a record that cannot be drawn (e.g. a building with no valid polygon
            is skipped; duplicate ids raise).
    """
    buildings: list[Building] = []
    parts: dict[str, list[tuple[str, Polygon]]] = {}
    for b in ann.buildings:
        polys = [p for p in b.polygons_xy if p and len(p[0]) >= 3]
        for k, rings in enumerate(polys):
            bid = b.id if len(polys) == 1 else f"{b.id}#{k}"
            base = float(b.min_height_m or 0.0)
            if base >= b.height_m:
                base = 0.0
            try:
                bb = Building(bid, tuple(map(tuple, rings[0])), float(b.height_m),
                              holes=tuple(tuple(map(tuple, r)) for r in rings[1:] if len(r) >= 3),
                              levels=b.levels, base_m=base, **building_look(b.tags or {}))
            except ValueError:
                continue
            buildings.append(bb)
            parts.setdefault(b.id, []).append((bid, Polygon(rings[0], [r for r in rings[1:] if len(r) >= 3])))

    def part_of(building_id: str | None, x: float, y: float) -> str | None:
        if building_id is None or building_id not in parts:
            return None
        p = SPoint(x, y)
        return min(parts[building_id], key=lambda bp: (bp[1].distance(p), bp[0]))[0]

    pois: list[Poi] = []
    for p in list(ann.pois) + list(ann.standalone_pois):
        if not p.name or not p.name.strip():
            continue
        x, y = p.facade_xy if p.facade_xy is not None else (p.x_m, p.y_m)
        hint = None
        if p.facade_id is not None:
            try:
                hint = float(ann.facade(p.facade_id).normal_deg)
            except KeyError:
                hint = None
        pois.append(Poi(p.id, p.name.strip(), p.category, float(x), float(y), part_of(p.building_id, x, y), hint))

    streets = {s.id: s for s in ann.streets}
    objects: list[StreetObject] = []
    crosswalks: list[Crosswalk] = []
    for o in ann.objects:
        if o.type == "crossing":
            s = streets.get(o.street_id) if o.street_id is not None else None
            if s is not None and _is_carriageway(s) and o.street_azimuth_deg is not None:
                crosswalks.append(Crosswalk(o.id, float(o.x_m), float(o.y_m), float(o.street_azimuth_deg),
                                            float(s.width_m)))
            continue
        label = (o.tags or {}).get("traffic_sign") if o.type == "traffic_sign" else None
        objects.append(StreetObject(o.id, o.type, float(o.x_m), float(o.y_m), None, label))

    roads: list[Road] = []
    for s in ann.streets:
        if len(s.xy) < 2 or not (s.width_m > 0) or s.length_m <= 0:
            continue
        if _is_carriageway(s):
            side = SIDEWALK_M if (s.sidewalk_left or s.sidewalk_right) else 0.0
            roads.append(Road(s.id, tuple(map(tuple, s.xy)), float(s.width_m), side, "road"))
        else:
            kind = "pedestrian" if s.highway == "pedestrian" else "footway"
            roads.append(Road(s.id, tuple(map(tuple, s.xy)), float(s.width_m), 0.0, kind))

    paved: list[PavedArea] = []
    for a in ann.walkable_areas or ():
        polys = a.get("polygon_xy") or []
        if polys and polys[0] and isinstance(polys[0][0][0], (int, float)):
            polys = [polys]  # a single polygon [ring][vertex]
        for k, rings in enumerate(polys):  # [polygon][ring][vertex]
            if not rings or len(rings[0]) < 3:
                continue
            aid = str(a.get("id")) if len(polys) == 1 else f"{a.get('id')}#{k}"
            try:
                paved.append(PavedArea(aid, tuple(map(tuple, rings[0])),
                                       tuple(tuple(map(tuple, r)) for r in rings[1:] if len(r) >= 3)))
            except ValueError:
                continue
    rails: list[RailLine] = []
    for r in getattr(ann, "rail_lines", None) or ():
        try:
            rails.append(RailLine(str(r["id"]), tuple(map(tuple, r["xy"]))))
        except (KeyError, TypeError, ValueError):
            continue
    land: list[LandArea] = []
    for a in getattr(ann, "land_areas", None) or ():
        polys = a.get("polygon_xy") or []
        for k, rings in enumerate(polys):
            if not rings or len(rings[0]) < 3:
                continue
            try:
                land.append(LandArea(str(a["id"]) if len(polys) == 1 else f"{a['id']}#{k}",
                                     tuple(map(tuple, rings[0])),
                                     tuple(tuple(map(tuple, h)) for h in rings[1:] if len(h) >= 3), a.get("kind", "grass")))
            except (KeyError, TypeError, ValueError):
                continue
    return Scene(name=name, buildings=tuple(buildings), pois=tuple(pois), objects=tuple(objects),
                 roads=tuple(roads), crosswalks=tuple(crosswalks), paved_areas=tuple(paved),
                 rails=tuple(rails), land_areas=tuple(land), attribution=attribution)


def scene_from_city(city: City) -> Scene:
    """The renderable scene of an annotated city (``city.annotations``).

    Raises:
        ValueError: the city has no annotations (e.g. a CitySeeker city): it has real
            panoramas or none, nothing to render.
    """
    ann = getattr(city, "annotations", None)
    if ann is None:
        raise ValueError(f"city {city.name!r} has no annotations: nothing to render (not an OSM city?)")
    return scene_from_annotations(ann, name=city.name, attribution=city.meta.attribution or OSM_ATTRIBUTION)


def node_pose(city: City, node: str) -> tuple[float, float, float]:
    """``(x_m, y_m, centre_bearing_deg)`` of a node's panorama: its position and ``heading_deg`` (0 when unset)."""
    d = city.node(node)
    h = d.get("heading_deg")
    return float(d["x_m"]), float(d["y_m"]), 0.0 if h is None or not math.isfinite(float(h)) else float(h) % 360.0
