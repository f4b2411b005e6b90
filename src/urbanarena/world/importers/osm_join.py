"""OpenStreetMap annotations joined to the picture nodes of a real-imagery city (``--osm FILE [--bbox W,S,E,N]``
of ``city from-frames``, ``city from-video`` and, for the remapping, ``city from-panoramax``).

A city of real pictures has nodes where the camera stood and nothing else: no
POIs, street names, buildings or street objects, so the place-based task
families have no ground truth. :func:`join_osm` imports an OSM file of the same
area (:func:`urbanarena.world.importers.osm.import_city`, which builds the
street network and the annotations) and attaches its annotations to the
pictures, without moving any picture node (a Panoramax city, whose pictures are
snapped onto the OSM streets instead, shares the last step,
:func:`remap_annotations`):

1. **Area**: ``bbox`` ``(W, S, E, N)`` when given, else the nodes' bounding box
   grown by ``margin_m`` (default 100 m) on every side.
2. **Frame**: the city takes the OSM city's local frame (centred on the area),
   so annotation coordinates and node ``x_m``/``y_m`` share one frame; node
   latitudes and longitudes are unchanged.
3. **Streets**: each node is placed on the nearest OSM street (the annotation
   streets: polylines between decision points) within ``snap_radius_m``
   (default 15 m); among streets at most 2 m farther than the nearest, the one
   best aligned with the node's trajectory there wins (as Panoramax pictures
   are snapped). The node keeps its position and gets ``street_id``,
   ``along_m`` (arc length of its projection along the street) and
   ``street_distance_m``; a node farther from every street gets ``None`` and
   is listed in the report (``off_street``).
4. **Remapping** (:func:`remap_annotations`): each POI's ``node_id`` becomes
   the node nearest its front point (``node_distance_m`` the distance), each
   street object's the node nearest the object, each street's ``node_ids`` the
   nodes placed on it in order of ``along_m`` (possibly empty). Task
   generators use only POIs and objects whose node is near enough
   (``node_distance_m``), so annotations far from every picture are left out
   there, not here.

The city's licence becomes the OSM licence for the street network and
annotations plus the imagery's own; ``meta.source["osm"]`` names the file, its
sha256 and the bbox; ``meta.extra["osm_join"]`` is the report.
"""

from __future__ import annotations

import copy
import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from urbanarena.world.city import City, CityMeta

DEFAULT_SNAP_RADIUS_M = 15.0
DEFAULT_MARGIN_M = 100.0
#: streets at most this much farther than the nearest compete on alignment with the node's course (metres)
SNAP_ALIGN_SLACK_M = 2.0


def remap_annotations(ann: Any, city: City, *, label: str = "picture nodes") -> Any:
    """A copy of ``ann`` whose POI/object/street node references point at ``city``'s nodes (module docstring,
    step 4); coordinates are unchanged (``ann`` must be in ``city``'s local frame). Nodes without a
    ``street_id`` (``None`` or missing) are on no street."""
    from scipy.spatial import cKDTree

    out = copy.deepcopy(ann)
    ids = list(city.graph.nodes)
    tree = cKDTree(np.array([city.xy(n) for n in ids], dtype=float))

    def nearest(x: float, y: float) -> tuple[str, float]:
        d, k = tree.query([x, y])
        return ids[int(k)], float(d)

    for poi in list(out.pois) + list(out.standalone_pois):
        x, y = poi.front_xy if poi.front_xy is not None else (poi.x_m, poi.y_m)
        poi.node_id, poi.node_distance_m = nearest(x, y)
    for o in out.objects:
        o.node_id, o.node_distance_m = nearest(o.x_m, o.y_m)
    on_street: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for n, d in city.graph.nodes(data=True):
        if d.get("street_id") is not None:
            on_street[d["street_id"]].append((d["along_m"], n))
    for st in out.streets:
        st.node_ids = [n for _, n in sorted(on_street.get(st.id, []))]
    out.source = {**(out.source or {}), "remapped_to": label}
    return out


def _axis_angle(u: tuple[float, float], v: tuple[float, float]) -> float:
    """Angle between two directions as axes (0..90 degrees; a street has no sense)."""
    nu, nv = math.hypot(*u), math.hypot(*v)
    if nu == 0 or nv == 0:
        return 90.0
    c = abs(u[0] * v[0] + u[1] * v[1]) / (nu * nv)
    return math.degrees(math.acos(min(1.0, c)))


def _street_dir(line: Any, s: float) -> tuple[float, float]:
    p0 = line.interpolate(max(0.0, s - 1.0))
    p1 = line.interpolate(min(line.length, s + 1.0))
    return (p1.x - p0.x, p1.y - p0.y)



def nearest_street(tree: Any, lines: Sequence[Any], pt: Any, snap_radius_m: float,
                   course: tuple[float, float] | None) -> tuple[float, int] | None:
    """``(distance_m, index)`` of the street ``pt`` snaps to, or ``None`` when none lies within ``snap_radius_m``.

    ``tree`` is a shapely ``STRtree`` over ``lines`` (local x/y, metres; ``None`` when there are no streets).
    Streets at most :data:`SNAP_ALIGN_SLACK_M` farther than the nearest compete on how well they align with
    ``course`` (the picture's direction of travel, any sense), then on distance and index."""
    idx = tree.query(pt, predicate="dwithin", distance=snap_radius_m) if tree is not None else []
    if len(idx) == 0:
        return None
    dists = [(float(lines[i].distance(pt)), int(i)) for i in idx]
    dmin = min(x for x, _ in dists)
    near = sorted((x, i) for x, i in dists if x <= dmin + SNAP_ALIGN_SLACK_M)
    if course is not None and len(near) > 1:
        near.sort(key=lambda t: (round(_axis_angle(course, _street_dir(lines[t[1]], lines[t[1]].project(pt))), 6),
                                 t[0], t[1]))
    return near[0]

def _node_course(city: City, n: str) -> tuple[float, float] | None:
    """Direction of the node's trajectory (its trajectory edges' azimuths folded to one axis), local x/y."""
    az = [d["azimuth_deg"] for _, _, d in city.graph.out_edges(n, data=True)
          if d.get("edge_kind", "trajectory") == "trajectory" and d.get("azimuth_deg") is not None]
    if not az:
        return None
    a = math.radians(az[0])
    return (math.sin(a), math.cos(a))


def default_bbox(city: City, margin_m: float = DEFAULT_MARGIN_M) -> tuple[float, float, float, float]:
    """The nodes' bounding box grown by ``margin_m`` metres on every side, ``(W, S, E, N)`` degrees."""
    lats = np.array([d["lat"] for _, d in city.graph.nodes(data=True)], dtype=float)
    lons = np.array([d["lon"] for _, d in city.graph.nodes(data=True)], dtype=float)
    dlat = margin_m / 111_320.0
    dlon = margin_m / (111_320.0 * max(math.cos(math.radians(float(np.mean(lats)))), 1e-6))
    return (float(lons.min() - dlon), float(lats.min() - dlat), float(lons.max() + dlon), float(lats.max() + dlat))


def join_osm(city: City, osm_path: str | Path, *, bbox: Sequence[float] | None = None,
             snap_radius_m: float = DEFAULT_SNAP_RADIUS_M, margin_m: float = DEFAULT_MARGIN_M,
             osm_spacing_m: float = 10.0) -> City:
    """Join the annotations of an OSM file to ``city``'s picture nodes (module docstring).

    Args:
        city: a real-imagery city (frames or video); not modified.
        osm_path: ``.osm`` / ``.osm.pbf`` ... file covering the area.
        bbox: ``(W, S, E, N)`` WGS84 degrees (default: the nodes' box grown by ``margin_m``).
        snap_radius_m: largest node-to-street distance for a node to be on a street, metres (> 0).
        margin_m: growth of the default bbox, metres (>= 0).
        osm_spacing_m: pose spacing of the OSM import (only its annotations are used).
    Returns:
        a new :class:`City`: same nodes, edges and imagery, the OSM city's local frame, the annotations
        remapped, ``meta.extra["osm_join"]`` the report.
    Raises:
        CityFormatError: a bad OSM file or bbox, no OSM data or no walkable street in the area (naming the file).
        ValueError: a non-positive radius or a negative margin.
    """
    import shapely
    from shapely.geometry import LineString, Point

    from urbanarena.hashing import file_sha256
    from urbanarena.world.importers.osm import ATTRIBUTION as OSM_ATTRIBUTION, LICENCE as OSM_LICENCE
    from urbanarena.world.importers.osm import import_city as import_osm

    if not (math.isfinite(snap_radius_m) and snap_radius_m > 0):
        raise ValueError(f"snap_radius_m must be > 0, got {snap_radius_m}")
    if not (math.isfinite(margin_m) and margin_m >= 0):
        raise ValueError(f"margin_m must be >= 0, got {margin_m}")
    bb = tuple(float(v) for v in bbox) if bbox is not None else default_bbox(city, margin_m)
    osm_city = import_osm(osm_path, bbox=bb, spacing_m=osm_spacing_m, name=city.name)
    ann = osm_city.annotations
    g = city.graph.copy()
    for _, d in g.nodes(data=True):
        d.pop("x_m", None)
        d.pop("y_m", None)
    meta = copy.deepcopy(city.meta)
    out = City(g, meta, frame=osm_city.frame)
    lines = [LineString(s.xy) for s in ann.streets]
    tree = shapely.STRtree(lines) if lines else None
    off: list[str] = []
    on = 0
    for n in sorted(out.graph.nodes):
        d = out.graph.nodes[n]
        pt = Point(*out.xy(n))
        snap = nearest_street(tree, lines, pt, snap_radius_m, _node_course(out, n))
        if snap is None:
            d.update(street_id=None, along_m=None, street_distance_m=None)
            off.append(n)
            continue
        dist, i = snap
        d.update(street_id=ann.streets[i].id, along_m=round(float(lines[i].project(pt)), 3),
                 street_distance_m=round(dist, 3))
        on += 1
    out.annotations = remap_annotations(ann, out, label=f"{(city.meta.imagery or {}).get('source', 'picture')} nodes")
    im = city.meta.imagery or {}
    im_lic = im.get("licence") or city.meta.licence or "unknown"
    meta.licence = f"street network and annotations {OSM_LICENCE}; imagery {im_lic}"
    meta.attribution = f"{OSM_ATTRIBUTION}; imagery: {im.get('attribution') or city.meta.attribution or im_lic}"
    meta.source = {**(meta.source or {}), "osm": {"file": str(Path(osm_path).resolve()),
                                                  "sha256": file_sha256(osm_path), "bbox": list(bb)}}
    pois = list(out.annotations.pois) + list(out.annotations.standalone_pois)
    meta.extra = {**(meta.extra or {}), "osm_join": {
        "bbox": list(bb), "snap_radius_m": float(snap_radius_m), "nodes_on_street": on, "off_street": off,
        "streets": len(ann.streets), "streets_with_nodes": sum(1 for s in out.annotations.streets if s.node_ids),
        "pois": len(pois), "pois_within_snap_radius": sum(1 for p in pois if p.node_distance_m is not None
                                       and p.node_distance_m <= snap_radius_m),
        "objects": len(out.annotations.objects), "buildings": len(out.annotations.buildings),
    }}
    return out


__all__ = ["DEFAULT_MARGIN_M", "DEFAULT_SNAP_RADIUS_M", "default_bbox", "join_osm", "remap_annotations"]
