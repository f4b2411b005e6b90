"""The OSM importer's annotations: POIs, street objects, buildings and blocks of an imported city (:mod:`urbanarena.world.annotations`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import shapely
from shapely.geometry import LineString, Point, Polygon, box

from urbanarena.world import annotations as A
from urbanarena.world.geo import LocalFrame
from urbanarena.world.importers.osm_tags import CARRIER_HIGHWAYS, KIND, _is_storefront, _object_type, _poi_category
from urbanarena.world.importers.osm_read import _Raw, _grow


def _annotations(path: Path, raw: _Raw, bb, frame: LocalFrame, streets: list[A.Street], g: nx.DiGraph,
                 wide_lines: list[LineString], context_m: float, report: dict[str, Any]) -> A.Annotations:
    ann = A.Annotations(origin_lat=frame.origin_lat, origin_lon=frame.origin_lon, bbox=tuple(bb) if bb else None,
                        source={"kind": KIND, "file": path.name})
    core = box(*bb) if bb else None
    ctx = box(*_grow(bb, context_m)) if bb else None

    def to_xy_ring(ring):
        lo = np.array([p[0] for p in ring])
        la = np.array([p[1] for p in ring])
        x, y = frame.to_xy(la, lo)
        return [(float(a), float(b)) for a, b in zip(np.atleast_1d(x), np.atleast_1d(y))]

    def strip(ring):
        return ring[:-1] if len(ring) > 1 and ring[0] == ring[-1] else ring

    # ---- buildings
    buildings: list[A.Building] = []
    area_building: dict[str, str] = {}
    for ar in raw.areas:
        t = ar.tags
        if "building" not in t or t.get("building") == "no":
            continue
        polys_ll = [[strip(r) for r in poly] for poly in ar.polygons]
        shp_ll = shapely.MultiPolygon([Polygon(p[0], p[1:]) for p in polys_ll if len(p[0]) >= 3])
        if shp_ll.is_empty:
            continue
        if ctx is not None and not shp_ll.intersects(ctx):
            continue
        polys_xy = []
        for poly in polys_ll:
            rings = [to_xy_ring(r) for r in poly]
            ext = Polygon(rings[0])
            if not ext.exterior.is_ccw:
                rings[0] = rings[0][::-1]
                poly[0] = poly[0][::-1]
            for k in range(1, len(rings)):
                if Polygon(rings[k]).exterior.is_ccw:
                    rings[k] = rings[k][::-1]
                    poly[k] = poly[k][::-1]
            polys_xy.append(rings)
        h, src, levels, mh = A.building_height(t)
        b = A.Building(
            id=ar.id, osm_id=ar.osm_id, polygons_xy=polys_xy,
            polygons_lonlat=[[[(float(x), float(y)) for x, y in r] for r in poly] for poly in polys_ll],
            height_m=h, height_source=src, min_height_m=mh, levels=levels, name=t.get("name"), tags=t,
            in_core=core is None or shp_ll.intersects(core))
        b.facades = A.make_facades(b.id, [p[0] for p in polys_xy])
        buildings.append(b)
        area_building[ar.id] = b.id
    A.mark_street_facing(buildings, wide_lines)
    ann.buildings = buildings
    report["buildings_height_source"] = dict(Counter(b.height_source for b in buildings if b.in_core))

    # ---- pose nodes for look-ups
    node_ids = list(g.nodes)
    node_xy = np.array([[g.nodes[n]["x_m"], g.nodes[n]["y_m"]] for n in node_ids]) if node_ids else np.zeros((0, 2))

    def in_core(lon: float, lat: float) -> bool:
        return bb is None or (bb[0] <= lon <= bb[2] and bb[1] <= lat <= bb[3])

    def in_ctx(lon: float, lat: float) -> bool:
        return ctx is None or ctx.covers(Point(lon, lat))

    # ---- POIs and objects
    pois: list[A.POI] = []
    objects: list[A.StreetObject] = []
    skipped_indoor = 0
    for nid_osm in sorted(raw.nodes):
        lon, lat, t = raw.nodes[nid_osm]
        x, y = frame.to_xy(lat, lon)
        ot = _object_type(t)
        if ot is not None:
            if in_ctx(lon, lat):
                objects.append(A.StreetObject(id=f"n{nid_osm}", osm_id=f"node/{nid_osm}", type=ot, x_m=float(x), y_m=float(y),
                                              lat=float(lat), lon=float(lon), name=t.get("name"), tags=t, in_core=in_core(lon, lat)))
            continue
        cat = _poi_category(t)
        if cat is None or not in_core(lon, lat):
            continue
        if not _is_storefront(t):
            skipped_indoor += 1
            continue
        pois.append(A.POI(id=f"n{nid_osm}", osm_id=f"node/{nid_osm}", name=t.get("name"), category=cat[0], kind=cat[1],
                          x_m=float(x), y_m=float(y), lat=float(lat), lon=float(lon), tags=t))
    building_of: dict[str, str] = {}
    for ar in raw.areas:
        cat = _poi_category(ar.tags)
        if cat is None or ar.tags.get("highway"):
            continue
        shp_ll = shapely.MultiPolygon([Polygon(p[0], p[1:]) for p in ar.polygons if len(p[0]) >= 3])
        if shp_ll.is_empty:
            continue
        rp = shp_ll.representative_point()
        if not in_core(rp.x, rp.y):
            continue
        if not _is_storefront(ar.tags):
            skipped_indoor += 1
            continue
        x, y = frame.to_xy(rp.y, rp.x)
        pois.append(A.POI(id=ar.id, osm_id=ar.osm_id, name=ar.tags.get("name"), category=cat[0], kind=cat[1],
                          x_m=float(x), y_m=float(y), lat=float(rp.y), lon=float(rp.x), tags=ar.tags))
        if ar.id in area_building:
            building_of[ar.id] = area_building[ar.id]
    # crossings mapped only as a crossing way
    crossing_nodes = {o.osm_id for o in objects if o.type == "crossing"}
    street_lines = [s.line() for s in streets if s.highway in CARRIER_HIGHWAYS]
    carrier_union = shapely.union_all(street_lines) if street_lines else None
    for w in raw.ways:
        if w.tags.get("footway") != "crossing" or carrier_union is None:
            continue
        if any(f"node/{r}" in crossing_nodes or (r in raw.nodes and _object_type(raw.nodes[r][2]) == "crossing") for r in w.refs):
            continue
        lo = np.array([p[0] for p in w.lonlat]); la = np.array([p[1] for p in w.lonlat])
        xs, ys = frame.to_xy(la, lo)
        line = LineString(list(zip(np.atleast_1d(xs), np.atleast_1d(ys))))
        inter = line.intersection(carrier_union)
        pt = inter.representative_point() if not inter.is_empty else line.interpolate(0.5, normalized=True)
        plat, plon = frame.to_latlon(pt.x, pt.y)
        if not in_ctx(plon, plat):
            continue
        objects.append(A.StreetObject(id=f"w{w.id}", osm_id=f"way/{w.id}", type="crossing", x_m=float(pt.x), y_m=float(pt.y),
                                      lat=float(plat), lon=float(plon), name=w.tags.get("name"), tags=w.tags,
                                      in_core=in_core(plon, plat)))
    A.place_objects(objects, streets, node_ids, node_xy)
    attached, standalone = A.attach_pois(pois, buildings, streets, node_ids, node_xy, to_latlon=frame.to_latlon,
                                         building_of=building_of)
    ann.pois, ann.standalone_pois, ann.objects = attached, standalone, objects
    report["pois_skipped_indoor"] = skipped_indoor
    report["pois_unnamed_without_building"] = len(pois) - len(attached) - len(standalone)
    ann.streets = streets

    # ---- blocks
    polys = A.city_blocks([s.line() for s in streets if s.is_street])
    b_shapes = [(b.id, b.shape().representative_point()) for b in buildings]
    blocks = []
    for k, poly in enumerate(polys):
        ext = [(float(x), float(y)) for x, y in list(poly.exterior.coords)[:-1]]
        holes = [[(float(x), float(y)) for x, y in list(r.coords)[:-1]] for r in poly.interiors]
        rings_ll = []
        for ring in [ext] + holes:
            la, lo = frame.to_latlon(np.array([p[0] for p in ring]), np.array([p[1] for p in ring]))
            rings_ll.append([(float(a), float(b)) for a, b in zip(np.atleast_1d(lo), np.atleast_1d(la))])
        boundary = poly.boundary
        blocks.append(A.Block(
            id=f"b{k:04d}", polygon_xy=[ext] + holes, polygon_lonlat=rings_ll, area_m2=float(poly.area),
            building_ids=[bid for bid, rp in b_shapes if poly.covers(rp)],
            poi_ids=[p.id for p in attached if poly.covers(Point(p.facade_xy))],
            street_ids=[s.id for s in streets if s.is_street and s.line().interpolate(0.5, normalized=True).distance(boundary) < 1.0]))
    ann.blocks = blocks

    # ---- pedestrian squares
    for ar in raw.areas:
        if ar.tags.get("area") != "yes" or ar.tags.get("highway") not in ("pedestrian", "footway"):
            continue
        polys_ll = [[strip(r) for r in poly] for poly in ar.polygons]
        shp = shapely.MultiPolygon([Polygon(p[0], p[1:]) for p in polys_ll if len(p[0]) >= 3])
        if core is not None and not shp.intersects(core):
            continue
        ann.walkable_areas.append({
            "id": ar.id, "osm_id": ar.osm_id, "name": ar.tags.get("name"), "highway": ar.tags.get("highway"),
            "polygon_xy": [[to_xy_ring(r) for r in poly] for poly in polys_ll],
            "polygon_lonlat": [[[list(p) for p in r] for r in poly] for poly in polys_ll],
        })

    # ---- drawn only: tram tracks and planted land cover (render/scene3d/realistic.py)
    for w in raw.rails:
        lo, la = [p[0] for p in w.lonlat], [p[1] for p in w.lonlat]
        if ctx is not None and not LineString(w.lonlat).intersects(ctx):
            continue
        x, y = frame.to_xy(np.array(la), np.array(lo))
        ann.rail_lines.append({"id": f"w{w.id}", "osm_id": f"way/{w.id}", "railway": w.tags.get("railway"),
                               "xy": [[float(a), float(b)] for a, b in zip(np.atleast_1d(x), np.atleast_1d(y))]})
    for ar in raw.areas:
        kind = A.land_cover_kind(ar.tags)
        if kind is None or "building" in ar.tags:
            continue
        polys_ll = [[strip(r) for r in poly] for poly in ar.polygons]
        shp = shapely.MultiPolygon([Polygon(p[0], p[1:]) for p in polys_ll if len(p[0]) >= 3])
        if shp.is_empty or (ctx is not None and not shp.intersects(ctx)):
            continue
        ann.land_areas.append({"id": ar.id, "osm_id": ar.osm_id, "kind": kind,
                               "polygon_xy": [[[list(p) for p in to_xy_ring(r)] for r in poly] for poly in polys_ll]})
    return ann
