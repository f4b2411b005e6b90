"""OpenStreetMap importer: a pedestrian pose graph with annotations (``--city osm:FILE``).

Reads ``.osm`` (XML), ``.osm.pbf``, ``.osm.gz`` or ``.osm.bz2`` with pyosmium
(BSD-2-Clause) and builds a :class:`~urbanarena.world.city.City` whose nodes
are pose nodes along the walkable street network, plus its
:class:`~urbanarena.world.annotations.Annotations` (POIs, street objects,
buildings, blocks, street geometry). ``import_city(path, bbox=(W, S, E, N))``
crops to a bbox in WGS84 degrees; ``osm:FILE`` (no bbox) imports the whole file.

Pipeline (every threshold is an argument of :func:`import_city`):

1. **Read** the file, keeping what lies within the bbox grown by a margin
   (``max(context_m, 3 * sidewalk_fold_m)``, so that folding and facade tests
   near the edge see their streets). Ways are split where a node location is
   missing (extract boundaries).
2. **Walkable ways** (:func:`classify_way`). Included ``highway`` values:
   :data:`STREET_HIGHWAYS` (carriageways and pedestrian streets) and
   :data:`PATH_HIGHWAYS` (footway, path, steps, track, bridleway);
   ``cycleway`` only with ``foot`` = yes/designated/permissive;
   ``trunk``/``motorway`` (and links) only with such a ``foot`` tag.
   Excluded, with the reason counted in the report: any other ``highway``
   value (platform, corridor, elevator, construction, proposed, the
   non-standard ``trail`` of the Helsinki extract, ...); ``foot`` in
   :data:`FOOT_NO`; ``access`` in :data:`ACCESS_NO` unless ``foot`` allows
   walking; ``area=yes`` (a pedestrian square's outline is not a walking
   line: it is kept as a ``walkable_areas`` polygon); ``indoor`` other than
   no; tunnels (``tunnel`` other than no/building_passage: the city is
   rendered above ground). Roads tagged ``foot=use_sidepath`` stay: they
   carry their separately mapped sidewalks (step 3). Building outlines are
   never streets (only ``highway`` ways are read as lines).
3. **Sidewalk folding.** A way tagged ``footway=sidewalk`` runs beside a
   carriageway drawn separately; the pose graph walks the carriageway's
   centreline and the sidewalk folds into it. Rule: sample the sidewalk
   every 2 m; a sample is *covered* when a carriageway segment
   (:data:`CARRIER_HIGHWAYS`) lies within ``sidewalk_fold_m`` (default
   20 m) and runs parallel to it (within ``fold_angle_deg``, default 25
   degrees). Uncovered stretches shorter than ``fold_keep_min_m`` (15 m)
   next to covered ones count as covered (corners); covered stretches are
   dropped (cuts snap to a sidewalk vertex within 2.5 m, i.e. its corner)
   and their side (left/right of the carriageway) is recorded on it
   (``Street.sidewalk_left/right``); uncovered stretches stay as footways.
   Ways that touched a dropped sidewalk are reconnected: a dead-end spur
   that lies wholly within ``sidewalk_fold_m`` of the carriageway and is at
   most ``2 * sidewalk_fold_m`` long (the half of a crossing between
   sidewalk and road) is removed; any other touching vertex that cannot
   reach a carriageway vertex within ``1.5 * sidewalk_fold_m`` along the
   network gets a straight connector to the nearest point of the
   carriageway that absorbed the sidewalk there.
4. **Crop** the network to the bbox (segments clipped at its edges), then
   contract streets (see 5) shorter than ``merge_m`` (3 m) into one vertex:
   dual junctions a metre apart and stubs left by the crop would otherwise
   give pose nodes almost on top of each other.
5. **Pose nodes.** The network is cut into streets between *decision
   points* (vertices of degree >= 3), dead ends, vertices where the way's
   ``name`` or ``highway`` changes (a corner where one street becomes
   another; connectors never cut) and, on closed loops, one vertex; a
   street runs in the direction of its dominant (longest) OSM way, and
   pose nodes sit on every such vertex. Each street of length ``L`` carries
   ``n = max(1, floor(L / spacing_m + 0.5))`` equal edges of length
   ``L / n`` along its polyline, so
   edges on streets of at least ``1.5 * spacing_m`` are within
   [0.75, 1.25] x ``spacing_m`` (shorter streets are one edge). Loops get at
   least three edges and parallel streets between the same two decision
   points at least two, so the graph is simple. Every edge exists in both
   directions except on pedestrian one-ways (``oneway:foot``, or ``oneway``
   on footway/path/steps/pedestrian; ``-1`` reverses). Edge
   ``azimuth_deg`` is the WGS84 geodesic azimuth between its two nodes,
   ``length_m`` the length of the polyline between them (local metres).
   Node ``heading_deg`` is the street direction at the node (the tangent
   of the street polyline over +-1 m, in the street's direction); at a
   street's end vertex the direction of its highest-ranked street
   (:data:`HIGHWAY_RANK`, then the longest) there.
   ``walkable_headings_deg`` = the out-edge azimuths in ascending order.
6. **Prune** to the largest strongly connected component (node count);
   the report lists what was dropped.
7. **Annotations** (:mod:`urbanarena.world.annotations`): buildings (areas
   with ``building`` other than ``no``; ``building:part`` ignored) meeting
   the bbox grown by ``context_m`` (``in_core`` if they meet the bbox
   itself); POIs (nodes and areas inside the bbox with a
   :data:`~urbanarena.world.annotations.POI_CATEGORIES` key, not street
   objects, not :data:`NON_POI_AMENITY` unless named, on the ground floor:
   no ``level`` tag or one whose values include 0; others are counted as
   ``pois_skipped_indoor``); street objects (:data:`OBJECT_RULES`, first
   match wins; a ``footway=crossing`` way without a crossing node adds a
   crossing where it meets a carriageway) within the grown bbox; blocks
   from the ``is_street`` streets (:data:`BLOCK_HIGHWAYS` and named
   ``service`` ways); pedestrian
   squares.

The import report is ``city.meta.extra["osm_import"]`` (counts of nodes,
edges, decision points, POIs by category, objects by type, buildings,
blocks, excluded ways by reason, sidewalks folded, connectors, spurs,
pruned components, timings) and ``city.meta.extra["facts"]``
(:func:`~urbanarena.world.facts.graph_facts`).

Errors: a missing file, an unknown suffix, truncated or garbled data, a
bad bbox, a bbox holding no OSM data, or one without walkable streets raise
:class:`~urbanarena.errors.CityFormatError` naming the file (and the bbox
or the XML line where known).

Licence: OpenStreetMap data is ODbL 1.0; wherever the data or images made
from it are shown, credit "© OpenStreetMap contributors".
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import networkx as nx
import numpy as np
import shapely
from shapely.geometry import LineString, Point, Polygon, box
from shapely.strtree import STRtree

from urbanarena.errors import CityFormatError
from urbanarena.world import annotations as A
from urbanarena.world.city import City, CityMeta
from urbanarena.world.geo import WGS84_GEOD, LocalFrame

KIND = "osm"
#: bump when the import rules change (part of the import-cache key)
VERSION = "1"
LICENCE = "ODbL-1.0"
ATTRIBUTION = "© OpenStreetMap contributors"
SUFFIXES = (".osm", ".osm.pbf", ".pbf", ".osm.gz", ".osm.bz2")

STREET_HIGHWAYS = frozenset({
    "primary", "primary_link", "secondary", "secondary_link", "tertiary", "tertiary_link",
    "unclassified", "residential", "living_street", "service", "road", "pedestrian",
})
PATH_HIGHWAYS = frozenset({"footway", "path", "steps", "track", "bridleway"})
#: included only with a ``foot`` tag that allows walking
FOOT_TAG_HIGHWAYS = frozenset({"cycleway", "trunk", "trunk_link", "motorway", "motorway_link"})
#: carriageways that absorb separately mapped sidewalks
CARRIER_HIGHWAYS = frozenset(STREET_HIGHWAYS - {"pedestrian"} | {"trunk", "trunk_link", "motorway", "motorway_link"})
#: streets that bound city blocks; also named ``service`` ways (in city centres a named
#: service way is a street, e.g. a tram/pedestrian street; unnamed ones are driveways,
#: alleys and parking aisles). Paths, steps and cycleways never bound blocks.
BLOCK_HIGHWAYS = frozenset({
    "primary", "primary_link", "secondary", "secondary_link", "tertiary", "tertiary_link",
    "unclassified", "residential", "living_street", "road", "pedestrian", "trunk", "trunk_link",
})
FOOT_YES = frozenset({"yes", "designated", "permissive", "official"})
FOOT_NO = frozenset({"no", "private"})
ACCESS_NO = frozenset({"no", "private"})
#: order used to choose a decision point's heading (lower = preferred)
HIGHWAY_RANK = {h: i for i, h in enumerate([
    "trunk", "primary", "secondary", "tertiary", "unclassified", "residential", "pedestrian", "living_street",
    "trunk_link", "primary_link", "secondary_link", "tertiary_link", "road", "service", "footway", "path",
    "cycleway", "bridleway", "track", "steps", "motorway", "motorway_link", "connector",
])}
#: carriageway (or path) width defaults by ``highway`` when neither ``width`` nor ``lanes`` is tagged, metres
DEFAULT_WIDTH_M = {
    "trunk": 14.0, "trunk_link": 7.0, "primary": 14.0, "primary_link": 7.0, "secondary": 12.0, "secondary_link": 7.0,
    "tertiary": 10.0, "tertiary_link": 6.0, "unclassified": 8.0, "residential": 8.0, "living_street": 6.0,
    "road": 8.0, "service": 5.0, "pedestrian": 8.0, "footway": 2.5, "path": 2.0, "cycleway": 3.0,
    "bridleway": 2.5, "track": 3.0, "steps": 3.0, "motorway": 14.0, "motorway_link": 7.0, "connector": 2.0,
}
LANE_WIDTH_M = 3.25
#: amenity values that are street furniture or infrastructure: POIs only when named
NON_POI_AMENITY = frozenset({
    "parking", "parking_space", "parking_entrance", "bicycle_parking", "motorcycle_parking", "waste_basket",
    "waste_disposal", "recycling", "post_box", "telephone", "clock", "drinking_water", "grit_bin", "shelter",
    "loading_dock", "charging_station", "taxi", "bicycle_rental", "fountain", "toilets", "atm",
})


def _object_type(t: dict[str, str]) -> str | None:
    """Street object type of a node's tags (first rule that matches), see :data:`OBJECT_RULES`."""
    hw = t.get("highway")
    if hw == "crossing":
        return "crossing"
    if hw == "traffic_signals":
        return "traffic_signals"
    if hw == "bus_stop" or (t.get("public_transport") == "platform" and t.get("bus") == "yes"):
        return "bus_stop"
    if t.get("railway") == "subway_entrance":
        return "subway_entrance"
    if hw == "street_lamp":
        return "street_lamp"
    am = t.get("amenity")
    if am == "vending_machine":  # before signs: ticket machines may carry a traffic_sign tag
        return "vending_machine"
    if "traffic_sign" in t or hw in ("stop", "give_way"):
        return "traffic_sign"
    if am == "bench":
        return "bench"
    if t.get("natural") == "tree":
        return "tree"
    return None


#: documentation of :func:`_object_type`: (type, tag rule) in match order
OBJECT_RULES = (
    ("crossing", "highway=crossing"),
    ("traffic_signals", "highway=traffic_signals"),
    ("bus_stop", "highway=bus_stop, or public_transport=platform + bus=yes"),
    ("subway_entrance", "railway=subway_entrance"),
    ("street_lamp", "highway=street_lamp"),
    ("vending_machine", "amenity=vending_machine"),
    ("traffic_sign", "traffic_sign=*, highway=stop, highway=give_way"),
    ("bench", "amenity=bench"),
    ("tree", "natural=tree"),
)


#: longest street between junctions accepted, metres (ours: longer ones come from a wrong coordinate, and
#: sampling them every ``spacing_m`` would not end in useful time)
MAX_CHAIN_M = 200_000.0


def source_files(path: str | Path) -> list[Path]:
    """``[path]`` for an OSM file (hashed for the import cache).

    Raises:
        CityFormatError: not a file, or a suffix other than :data:`SUFFIXES`.
    """
    p = Path(path)
    if not p.is_file():
        raise CityFormatError(p, None, "OSM file not found")
    if not p.name.lower().endswith(SUFFIXES):
        raise CityFormatError(p, None, f"unknown OSM file type; expected one of {', '.join(SUFFIXES)}")
    return [p]


# --------------------------------------------------------------------------- reading
@dataclass
class _RawWay:
    id: int
    tags: dict[str, str]
    refs: list[int]
    lonlat: list[tuple[float, float]]


@dataclass
class _RawArea:
    id: str  # "w123" / "r45"
    osm_id: str
    tags: dict[str, str]
    polygons: list[list[list[tuple[float, float]]]]  # lon/lat rings


@dataclass
class _Raw:
    nodes: dict[int, tuple[float, float, dict[str, str]]] = field(default_factory=dict)
    ways: list[_RawWay] = field(default_factory=list)
    areas: list[_RawArea] = field(default_factory=list)
    rails: list[_RawWay] = field(default_factory=list)  # railway=tram ways (drawn, not walked)
    n_objects: int = 0
    timestamp: str | None = None


def _interesting_node(t: dict[str, str]) -> bool:
    return _object_type(t) is not None or any(k in t for k in A.POI_CATEGORIES)


def _bbox_hit(lons: Sequence[float], lats: Sequence[float], bb: tuple[float, float, float, float] | None) -> bool:
    if bb is None:
        return True
    return not (max(lons) < bb[0] or min(lons) > bb[2] or max(lats) < bb[1] or min(lats) > bb[3])


def _read(path: Path, read_bb: tuple[float, float, float, float] | None) -> _Raw:
    import osmium

    raw = _Raw()
    try:
        fp = osmium.FileProcessor(str(path)).with_areas()
        try:
            hdr = fp.header
            raw.timestamp = hdr.get("osmosis_replication_timestamp") or hdr.get("timestamp") or None
        except Exception:  # header is optional
            raw.timestamp = None
        for o in fp:
            raw.n_objects += 1
            if o.is_node():
                if not len(o.tags):
                    continue
                t = dict(o.tags)
                if not _interesting_node(t) or not o.location.valid():
                    continue
                lon, lat = o.location.lon, o.location.lat
                if read_bb is None or (read_bb[0] <= lon <= read_bb[2] and read_bb[1] <= lat <= read_bb[3]):
                    raw.nodes[o.id] = (lon, lat, t)
            elif o.is_way():
                if o.tags.get("railway") == "tram" and o.tags.get("tunnel") in (None, "no"):
                    ll = [(n.lon, n.lat) for n in o.nodes if n.location.valid()]
                    if len(ll) >= 2 and _bbox_hit([p[0] for p in ll], [p[1] for p in ll], read_bb):
                        raw.rails.append(_RawWay(o.id, dict(o.tags), [], ll))
                if "highway" not in o.tags:
                    continue
                t = dict(o.tags)
                piece_refs: list[int] = []
                piece_ll: list[tuple[float, float]] = []
                pieces = []
                for n in o.nodes:
                    if n.location.valid():
                        piece_refs.append(n.ref)
                        piece_ll.append((n.lon, n.lat))
                    else:  # missing node (extract boundary): split here
                        pieces.append((piece_refs, piece_ll))
                        piece_refs, piece_ll = [], []
                pieces.append((piece_refs, piece_ll))
                for refs, ll in pieces:
                    if len(refs) >= 2 and _bbox_hit([p[0] for p in ll], [p[1] for p in ll], read_bb):
                        raw.ways.append(_RawWay(o.id, t, refs, ll))
            elif o.is_area():
                t = dict(o.tags)
                wanted = ("building" in t and t.get("building") != "no") or any(k in t for k in A.POI_CATEGORIES) or (
                    t.get("highway") in ("pedestrian", "footway") and t.get("area") == "yes") or (
                    A.land_cover_kind(t) is not None)
                if not wanted:
                    continue
                polys = []
                for outer in o.outer_rings():
                    ring = [(n.lon, n.lat) for n in outer]
                    holes = [[(n.lon, n.lat) for n in inner] for inner in o.inner_rings(outer)]
                    polys.append([ring] + holes)
                if not polys:
                    continue
                lons = [p[0] for poly in polys for p in poly[0]]
                lats = [p[1] for poly in polys for p in poly[0]]
                if not _bbox_hit(lons, lats, read_bb):
                    continue
                kind = "w" if o.from_way() else "r"
                oid = o.orig_id()
                raw.areas.append(_RawArea(f"{kind}{oid}", f"{'way' if kind == 'w' else 'relation'}/{oid}", t, polys))
    except CityFormatError:
        raise
    except Exception as e:  # libosmium reports every parse error as RuntimeError; be broad but typed
        msg = str(e)
        m = re.search(r"line (\d+)", msg)
        raise CityFormatError(path, f"line {m.group(1)}" if m else None, f"cannot read OSM data: {msg}") from e
    if raw.n_objects == 0:
        raise CityFormatError(path, None, "no OSM objects in the file (empty or not OSM data)")
    return raw


# --------------------------------------------------------------------------- way rules
def classify_way(tags: dict[str, str]) -> str:
    """Why a ``highway`` way is or is not walkable.

    Returns ``"street"`` (a carriageway or pedestrian street), ``"path"``
    (footway, path, steps ...), or an exclusion reason: ``"highway=<v>"``,
    ``"foot=<v>"``, ``"access=<v>"``, ``"area"``, ``"indoor"``, ``"tunnel"``.
    The rules are in the module docstring.
    """
    hw = tags.get("highway", "")
    foot = tags.get("foot")
    if hw in FOOT_TAG_HIGHWAYS:
        if foot not in FOOT_YES:
            return f"highway={hw}"
    elif hw not in STREET_HIGHWAYS and hw not in PATH_HIGHWAYS:
        return f"highway={hw}"
    if foot in FOOT_NO:
        return f"foot={foot}"
    if tags.get("access") in ACCESS_NO and foot not in FOOT_YES:
        return f"access={tags['access']}"
    if tags.get("area") == "yes":
        return "area"
    if tags.get("indoor") not in (None, "no") or hw == "corridor":
        return "indoor"
    if tags.get("tunnel") not in (None, "no", "building_passage"):
        return "tunnel"
    return "street" if hw in STREET_HIGHWAYS or hw in ("trunk", "trunk_link", "motorway", "motorway_link") else "path"


def _foot_oneway(tags: dict[str, str]) -> int:
    """+1: walking only in the way's direction, -1: only against it, 0: both."""
    v = tags.get("oneway:foot")
    if v is None and tags.get("highway") in ("footway", "path", "steps", "pedestrian"):
        v = tags.get("oneway")
    if v in ("yes", "1", "true"):
        return 1
    if v == "-1":
        return -1
    return 0


def _width_m(tags: dict[str, str]) -> float:
    w = A.parse_length_m(tags.get("width"))
    if w is not None and w > 0:
        return float(w)
    try:
        lanes = float(str(tags.get("lanes", "")).split(";")[0])
        if lanes > 0 and math.isfinite(lanes):
            return lanes * LANE_WIDTH_M
    except ValueError:
        pass
    return DEFAULT_WIDTH_M.get(tags.get("highway", ""), 3.0)


def _tag_sidewalks(tags: dict[str, str]) -> tuple[bool, bool]:
    """(left, right) sidewalks from ``sidewalk``/``sidewalk:left|right|both`` tags (``separate`` counts)."""
    yes = ("yes", "separate")
    s = tags.get("sidewalk")
    left = s in ("both", "left", "yes", "separate")
    right = s in ("both", "right", "yes", "separate")
    if tags.get("sidewalk:both") in yes:
        left = right = True
    if tags.get("sidewalk:left") in yes:
        left = True
    if tags.get("sidewalk:right") in yes:
        right = True
    return left, right


# --------------------------------------------------------------------------- the network
@dataclass
class _Way:
    idx: int
    id: int | None  # OSM way id (None for connectors)
    tags: dict[str, str]
    cls: str  # "street" | "path" | "connector"

    @property
    def highway(self) -> str:
        return "connector" if self.cls == "connector" else self.tags.get("highway", "")


class _Net:
    """Vertex-level walkable network: vertices (OSM node ids or negative synthetic ids) with
    local xy, and an undirected graph whose edges carry the way index and the way's direction."""

    def __init__(self, frame: LocalFrame):
        self.frame = frame
        self.xy: dict[int, tuple[float, float]] = {}
        self.ways: list[_Way] = []
        self.g = nx.Graph()
        self._next = -1

    def new_vertex(self, x: float, y: float) -> int:
        v = self._next
        self._next -= 1
        self.xy[v] = (float(x), float(y))
        return v

    def add_way(self, wid: int | None, tags: dict[str, str], cls: str) -> _Way:
        w = _Way(len(self.ways), wid, tags, cls)
        self.ways.append(w)
        return w

    def add_path(self, way: _Way, vids: Sequence[int]) -> None:
        for a, b in zip(vids[:-1], vids[1:]):
            if a != b:
                self.g.add_edge(a, b, way=way.idx, start=a)

    def seg_len(self, a: int, b: int) -> float:
        (x0, y0), (x1, y1) = self.xy[a], self.xy[b]
        return math.hypot(x1 - x0, y1 - y0)


def _arc(xy: np.ndarray) -> np.ndarray:
    return np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(xy, axis=0).T))])


def _fold_sidewalks(net: _Net, sidewalks: list[tuple[_Way, list[int]]], carriers: set[int], fold_m: float,
                    angle_deg: float, keep_min_m: float, report: dict[str, Any]) -> dict[int, int]:
    """Fold sidewalk ways into carriageways (rule in the module docstring).

    Adds the kept stretches to ``net``; returns ``{vertex: carrier way idx}``
    for vertices that touched a folded stretch. Records folded sides in
    ``carrier way .tags["urbanarena:sidewalk_left|right"]``.
    """
    touched: dict[int, int] = {}
    folded_len: dict[tuple[int, str], float] = defaultdict(float)
    segs_a, segs_b, seg_way = [], [], []
    for u, v, d in net.g.edges(data=True):
        if d["way"] in carriers:
            a, b = (u, v) if d["start"] == u else (v, u)
            segs_a.append(net.xy[a])
            segs_b.append(net.xy[b])
            seg_way.append(d["way"])
    n_full = n_part = n_kept_pieces = 0
    total_fold_m = 0.0
    cos_max = math.cos(math.radians(angle_deg))
    if segs_a:
        SA, SB = np.array(segs_a), np.array(segs_b)
        seg_geoms = shapely.linestrings(np.stack([SA, SB], axis=1))
        tree = STRtree(seg_geoms)
        sdir = SB - SA
        sdir = sdir / np.maximum(np.linalg.norm(sdir, axis=1, keepdims=True), 1e-9)
    for way, vids in sidewalks:
        xy = np.array([net.xy[v] for v in vids])
        s_v = _arc(xy)
        L = float(s_v[-1])
        if L <= 0:
            continue
        s = np.unique(np.concatenate([s_v, np.linspace(0, L, max(2, int(math.ceil(L / 2.0)) + 1))]))
        seg_i = np.clip(np.searchsorted(s_v, s, side="right") - 1, 0, len(vids) - 2)
        t = (s - s_v[seg_i]) / np.maximum(s_v[seg_i + 1] - s_v[seg_i], 1e-9)
        pts = xy[seg_i] + (xy[seg_i + 1] - xy[seg_i]) * t[:, None]
        tan = xy[seg_i + 1] - xy[seg_i]
        tan = tan / np.maximum(np.linalg.norm(tan, axis=1, keepdims=True), 1e-9)
        covered = np.zeros(len(s), bool)
        absorb = np.full(len(s), -1)
        side = np.zeros(len(s))
        if segs_a:
            P = shapely.points(pts)
            pi, si = tree.query(P, predicate="dwithin", distance=fold_m)
            if len(pi):
                dist = shapely.distance(P[pi], seg_geoms[si])
                par = np.abs(np.einsum("ij,ij->i", tan[pi], sdir[si])) >= cos_max
                order = np.lexsort((dist, pi))
                for k in order:
                    if not par[k]:
                        continue
                    i = pi[k]
                    if covered[i]:
                        continue
                    covered[i] = True
                    absorb[i] = seg_way[si[k]]
                    j = si[k]
                    cx = sdir[j, 0] * (pts[i, 1] - SA[j, 1]) - sdir[j, 1] * (pts[i, 0] - SA[j, 0])
                    side[i] = 1.0 if cx > 0 else -1.0  # > 0: left of the carriageway's direction
        if not covered.any():
            net.add_path(way, vids)
            continue
        # runs of equal coverage, with arc-length extents cut at midpoints between samples
        runs = []  # [flag, i0, i1]
        for i, c in enumerate(covered):
            if runs and runs[-1][0] == c:
                runs[-1][2] = i
            else:
                runs.append([bool(c), i, i])

        def snap(sv: float) -> float:
            # cut at a sidewalk vertex (a corner) when one is within a sample step
            k = int(np.argmin(np.abs(s_v - sv)))
            return float(s_v[k]) if abs(s_v[k] - sv) <= 2.5 else sv

        def extent(r):
            a = 0.0 if r[1] == 0 else snap((s[r[1] - 1] + s[r[1]]) / 2)
            b = L if r[2] == len(s) - 1 else snap((s[r[2]] + s[r[2] + 1]) / 2)
            return a, b

        changed = True
        while changed and len(runs) > 1:
            changed = False
            for k, r in enumerate(runs):
                a, b = extent(r)
                if not r[0] and b - a < keep_min_m:
                    r[0] = True
                    changed = True
                elif r[0] and b - a < 5.0 and 0 < k < len(runs) - 1 and not runs[k - 1][0] and not runs[k + 1][0]:
                    r[0] = False
                    changed = True
            merged = []
            for r in runs:
                if merged and merged[-1][0] == r[0]:
                    merged[-1][2] = r[2]
                else:
                    merged.append(list(r))
            runs = merged
        if all(r[0] for r in runs):
            n_full += 1
        else:
            n_part += 1
        # nearest covered sample's carrier for any arc position
        cov_idx = np.flatnonzero(absorb >= 0)

        def carrier_at(sv: float) -> int:
            j = cov_idx[np.argmin(np.abs(s[cov_idx] - sv))]
            return int(absorb[j])

        for i in cov_idx:
            cw = int(absorb[i])
            folded_len[(cw, "left" if side[i] > 0 else "right")] += 2.0
        for r in runs:
            a, b = extent(r)
            inner = [k for k in range(len(vids)) if a - 1e-9 <= s_v[k] <= b + 1e-9]
            if r[0]:
                total_fold_m += b - a
                for k in inner:
                    touched[vids[k]] = carrier_at(s_v[k])
                continue
            # kept stretch: original vertices inside plus cut vertices at its ends
            piece: list[int] = []
            for sv, at_start in ((a, True), (b, False)):
                close = [k for k in range(len(vids)) if abs(s_v[k] - sv) < 0.01]
                if close:
                    cut = vids[close[0]]
                else:
                    j = int(np.clip(np.searchsorted(s_v, sv, side="right") - 1, 0, len(vids) - 2))
                    tt = (sv - s_v[j]) / max(s_v[j + 1] - s_v[j], 1e-9)
                    cut = net.new_vertex(*(xy[j] + (xy[j + 1] - xy[j]) * tt))
                if (at_start and a > 0) or (not at_start and b < L):
                    touched[cut] = carrier_at(sv)
                if at_start:
                    piece.append(cut)
                    piece.extend(vids[k] for k in inner if vids[k] != cut and abs(s_v[k] - a) >= 0.01 and abs(s_v[k] - b) >= 0.01)
                else:
                    if cut != piece[-1]:
                        piece.append(cut)
            if len(piece) >= 2:
                kept = net.add_way(way.id, dict(way.tags, **{"urbanarena:sidewalk_part": "yes"}), way.cls)
                net.add_path(kept, piece)
                n_kept_pieces += 1
    for (cw, sd), length in folded_len.items():
        if length >= 5.0:
            net.ways[cw].tags[f"urbanarena:sidewalk_{sd}"] = "yes"
    report.update(sidewalk_ways=len(sidewalks), sidewalks_folded=n_full, sidewalks_partly_folded=n_part,
                  sidewalk_pieces_kept=n_kept_pieces, sidewalk_length_folded_m=round(total_fold_m, 1))
    return touched


def _carrier_line(net: _Net, way_idx: int) -> shapely.Geometry:
    segs = [LineString([net.xy[u], net.xy[v]]) for u, v, d in net.g.edges(data=True) if d["way"] == way_idx]
    return shapely.union_all(segs) if segs else LineString()


def _reconnect(net: _Net, touched: dict[int, int], fold_m: float, report: dict[str, Any]) -> None:
    """Remove corridor spurs and add connectors for vertices that touched a folded sidewalk."""
    g = net.g
    carrier_lines: dict[int, shapely.Geometry] = {}

    def cline(w: int) -> shapely.Geometry:
        if w not in carrier_lines:
            carrier_lines[w] = _carrier_line(net, w)
        return carrier_lines[w]

    spurs = 0
    changed = True
    while changed:
        changed = False
        for v in sorted(touched):
            if v not in g or g.degree(v) != 1:
                continue
            chain = [v]
            prev, cur = None, v
            while True:
                nb = [n for n in g.neighbors(cur) if n != prev]
                if not nb:
                    break
                prev, cur = cur, nb[0]
                chain.append(cur)
                if g.degree(cur) != 2:
                    break
            length = sum(net.seg_len(a, b) for a, b in zip(chain[:-1], chain[1:]))
            line = cline(touched[v])
            within = all(Point(net.xy[c]).distance(line) <= fold_m + 1.0 for c in chain)
            if length <= 2 * fold_m and within:
                for a, b in zip(chain[:-1], chain[1:]):
                    g.remove_edge(a, b)
                for c in chain:
                    if c in g and g.degree(c) == 0:
                        g.remove_node(c)
                spurs += 1
                changed = True
    carrier_vertices = {n for u, v, d in g.edges(data=True) if net.ways[d["way"]].cls == "street" and net.ways[d["way"]].highway in CARRIER_HIGHWAYS for n in (u, v)}
    connectors = 0
    conn_way = None
    for v in sorted(touched):
        if v not in g or v in carrier_vertices:
            continue
        near = nx.single_source_dijkstra_path_length(
            g, v, cutoff=1.5 * fold_m, weight=lambda a, b, d: net.seg_len(a, b))
        if any(n in carrier_vertices for n in near):
            continue
        w = touched[v]
        # nearest segment of that carrier
        best = None
        px, py = net.xy[v]
        for a, b, d in g.edges(data=True):
            if d["way"] != w:
                continue
            (ax, ay), (bx, by) = net.xy[a], net.xy[b]
            dx, dy = bx - ax, by - ay
            L2 = dx * dx + dy * dy
            t = 0.0 if L2 == 0 else max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / L2))
            qx, qy = ax + t * dx, ay + t * dy
            dd = math.hypot(px - qx, py - qy)
            if best is None or dd < best[0]:
                best = (dd, a, b, t, qx, qy, d)
        if best is None:
            continue
        dd, a, b, t, qx, qy, d = best
        seg = net.seg_len(a, b)
        if t * seg < 0.5:
            p = a
        elif (1 - t) * seg < 0.5:
            p = b
        else:
            p = net.new_vertex(qx, qy)
            g.remove_edge(a, b)
            first, second = (a, b) if d["start"] == a else (b, a)
            g.add_edge(first, p, way=w, start=first)
            g.add_edge(p, second, way=w, start=p)
        if conn_way is None:
            conn_way = net.add_way(None, {"highway": "footway", "footway": "connector", "urbanarena:connector": "sidewalk_fold"}, "connector")
        if p != v:
            g.add_edge(v, p, way=conn_way.idx, start=v)
            connectors += 1
        carrier_vertices.add(p)
    report.update(spurs_removed=spurs, connectors_added=connectors)


def _clip(net: _Net, bbox: tuple[float, float, float, float]) -> int:
    """Clip the network to the bbox (lon/lat). Returns the number of cut points added."""
    W, S, E, N = bbox
    lonlat: dict[int, tuple[float, float]] = {}

    def ll(v: int) -> tuple[float, float]:
        if v not in lonlat:
            lat, lon = net.frame.to_latlon(*net.xy[v])
            lonlat[v] = (float(lon), float(lat))
        return lonlat[v]

    def inside(p) -> bool:
        return W <= p[0] <= E and S <= p[1] <= N

    cuts = 0
    for a, b, d in list(net.g.edges(data=True)):
        pa, pb = ll(a), ll(b)
        if inside(pa) and inside(pb):
            continue
        # Liang-Barsky in lon/lat
        t0, t1 = 0.0, 1.0
        dx, dy = pb[0] - pa[0], pb[1] - pa[1]
        ok = True
        for p, q in ((-dx, pa[0] - W), (dx, E - pa[0]), (-dy, pa[1] - S), (dy, N - pa[1])):
            if p == 0:
                if q < 0:
                    ok = False
                    break
                continue
            r = q / p
            if p < 0:
                t0 = max(t0, r)
            else:
                t1 = min(t1, r)
        net.g.remove_edge(a, b)
        if not ok or t0 >= t1 - 1e-12:
            continue
        first = a if d["start"] == a else b
        ends = []
        for t, v in ((t0, a), (t1, b)):
            if (t == 0.0 and v == a) or (t == 1.0 and v == b):
                ends.append(v)
            else:
                # the cut point is exact in lon/lat (on the bbox edge); its xy comes from the projection
                lon_c, lat_c = pa[0] + t * dx, pa[1] + t * dy
                nv = net.new_vertex(*net.frame.to_xy(lat_c, lon_c))
                lonlat[nv] = (lon_c, lat_c)
                ends.append(nv)
                cuts += 1
        u, w = ends
        net.g.add_edge(u, w, way=d["way"], start=u if first == a else w)
    net.g.remove_nodes_from([v for v in list(net.g.nodes) if net.g.degree(v) == 0])
    return cuts


@dataclass
class _Chain:
    vids: list[int]
    xy: np.ndarray
    s: np.ndarray
    seg_way: list[int]
    seg_fwd: list[bool]

    @property
    def length(self) -> float:
        return float(self.s[-1])


def _street_key(net: _Net, way_idx: int) -> tuple[str, str] | None:
    w = net.ways[way_idx]
    return None if w.cls == "connector" else (w.tags.get("name") or "", w.highway)


def _chains(net: _Net) -> list[_Chain]:
    """Cut the network into chains between key vertices: degree != 2, or degree 2
    where the two ways differ in (name, highway) (connectors never cut). Each
    chain runs in the direction of its dominant OSM way."""
    g = net.g
    key = {v for v in g.nodes if g.degree(v) != 2}
    for v in g.nodes:
        if v in key:
            continue
        k1, k2 = (_street_key(net, d["way"]) for _, _, d in g.edges(v, data=True))
        if k1 is not None and k2 is not None and k1 != k2:
            key.add(v)
    seen: set[frozenset] = set()
    chains: list[_Chain] = []

    def walk(start: int, nxt: int) -> list[int]:
        """Follow degree-2 vertices from ``start`` through ``nxt`` to the next key vertex."""
        path = [start, nxt]
        seen.add(frozenset((start, nxt)))
        while path[-1] not in key:
            cur = path[-1]
            nb = [n for n in g.neighbors(cur) if n != path[-2]]
            path.append(nb[0])
            seen.add(frozenset((cur, nb[0])))
        return path

    def build(vids: list[int]) -> _Chain:
        xy = np.array([net.xy[v] for v in vids])
        ways, fwd = [], []
        for a, b in zip(vids[:-1], vids[1:]):
            d = g.edges[a, b]
            ways.append(d["way"])
            fwd.append(d["start"] == a)
        return _Chain(vids, xy, _arc(xy), ways, fwd)

    def make(vids: list[int]) -> _Chain:
        ch = build(vids)
        dom = _dominant_way(net, ch)
        share = sum((ch.s[j + 1] - ch.s[j]) * (1 if ch.seg_fwd[j] else -1) for j in range(len(ch.seg_way)) if ch.seg_way[j] == dom)
        return build(vids[::-1]) if share < 0 else ch

    for k in sorted(key):
        for n in sorted(g.neighbors(k)):
            if frozenset((k, n)) in seen:
                continue
            chains.append(make(walk(k, n)))
    # pure loops without any key vertex
    for comp in nx.connected_components(g):
        if any(v in key for v in comp):
            continue
        k = min(comp)
        key.add(k)
        chains.append(make(walk(k, min(g.neighbors(k)))))
    return chains


def _merge_close(net: _Net, merge_m: float) -> int:
    """Contract every chain shorter than ``merge_m`` (dual junctions a metre apart,
    stubs left by clipping) into one vertex; returns the number of chains contracted.

    The merged vertex sits on the group's decision point (degree >= 3) when it
    has exactly one, else at the mean of the group's vertices.
    """
    if merge_m <= 0:
        return 0
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while parent.get(x, x) != x:
            parent[x] = parent.get(parent[x], parent[x])
            x = parent[x]
        return x

    merged = 0
    for ch in _chains(net):
        if ch.length < merge_m and ch.vids[0] != ch.vids[-1]:
            merged += 1
            for v in ch.vids[1:]:
                a, b = find(ch.vids[0]), find(v)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    if not merged:
        return 0
    g = net.g
    groups: dict[int, list[int]] = defaultdict(list)
    for v in list(parent):
        groups[find(v)].append(v)
    for rep, members in groups.items():
        members = sorted(set(members) | {rep})
        hubs = [v for v in members if g.degree(v) >= 3]
        pts = [net.xy[v] for v in (hubs if len(hubs) == 1 else members)]
        net.xy[rep] = (float(np.mean([p[0] for p in pts])), float(np.mean([p[1] for p in pts])))
    h = nx.Graph()
    for u, v, d in g.edges(data=True):
        fu, fv = find(u), find(v)
        if fu == fv or h.has_edge(fu, fv):
            continue
        h.add_edge(fu, fv, way=d["way"], start=fu if d["start"] == u else fv)
    net.g = h
    return merged


def _interp(ch: _Chain, sv: float) -> tuple[float, float]:
    j = int(np.clip(np.searchsorted(ch.s, sv, side="right") - 1, 0, len(ch.vids) - 2))
    seg = ch.s[j + 1] - ch.s[j]
    t = 0.0 if seg <= 0 else (sv - ch.s[j]) / seg
    p = ch.xy[j] + (ch.xy[j + 1] - ch.xy[j]) * t
    return float(p[0]), float(p[1])


def _tangent_deg(ch: _Chain, sv: float) -> float:
    a = _interp(ch, max(0.0, sv - 1.0))
    b = _interp(ch, min(ch.length, sv + 1.0))
    return math.degrees(math.atan2(b[0] - a[0], b[1] - a[1])) % 360.0


def _seg_at(ch: _Chain, sv: float) -> int:
    return int(np.clip(np.searchsorted(ch.s, sv, side="right") - 1, 0, len(ch.vids) - 2))


# --------------------------------------------------------------------------- import
def _check_bbox(path: Path, bbox: Sequence[float] | None) -> tuple[float, float, float, float] | None:
    if bbox is None:
        return None
    rec = "bbox " + ",".join(str(v) for v in bbox) if isinstance(bbox, (list, tuple)) else f"bbox {bbox!r}"
    try:
        W, S, E, N = (float(v) for v in bbox)
    except (TypeError, ValueError) as e:
        raise CityFormatError(path, rec, "bbox must be four numbers W,S,E,N (WGS84 degrees)") from e
    if not all(math.isfinite(v) for v in (W, S, E, N)):
        raise CityFormatError(path, rec, "bbox values must be finite")
    if not (-180 <= W <= 180 and -180 <= E <= 180 and -90 <= S <= 90 and -90 <= N <= 90):
        raise CityFormatError(path, rec, "bbox out of range (lon in [-180, 180], lat in [-90, 90])")
    if not (W < E and S < N):
        raise CityFormatError(path, rec, "empty bbox: need W < E and S < N")
    return (W, S, E, N)


def _grow(bb: tuple[float, float, float, float], margin_m: float) -> tuple[float, float, float, float]:
    W, S, E, N = bb
    lat_c = (S + N) / 2
    dlat = margin_m / 111_320.0
    dlon = margin_m / (111_320.0 * max(math.cos(math.radians(lat_c)), 1e-6))
    return (W - dlon, S - dlat, E + dlon, N + dlat)


from urbanarena.hashing import file_sha256 as _sha256  # noqa: E402


def _is_storefront(tags: dict[str, str]) -> bool:
    lv = tags.get("level")
    if lv is None:
        return True
    for part in re.split(r"[;,]", lv):
        try:
            if float(part.strip()) == 0:
                return True
        except ValueError:
            continue
    return False


def _poi_category(tags: dict[str, str]) -> tuple[str, str] | None:
    for k in A.POI_CATEGORIES:
        if k in tags:
            v = tags[k]
            if k == "amenity" and v in NON_POI_AMENITY and not tags.get("name"):
                return None
            if v == "no":
                continue
            return k, v
    return None


def import_city(path: str | Path, bbox: Sequence[float] | None = None, spacing_m: float = 10.0, *,
                name: str | None = None, sidewalk_fold_m: float = 20.0, fold_angle_deg: float = 25.0,
                fold_keep_min_m: float = 15.0, context_m: float = 50.0, merge_m: float = 3.0) -> City:
    """Import an OSM file as a pedestrian pose graph with annotations.

    Args:
        path: ``.osm``/``.osm.pbf``/``.osm.gz``/``.osm.bz2`` file.
        bbox: ``(W, S, E, N)`` WGS84 degrees to crop to; ``None`` = the whole file.
        spacing_m: target distance between pose nodes along streets, metres.
        name: city name (default: the file name without suffixes).
        sidewalk_fold_m, fold_angle_deg, fold_keep_min_m: sidewalk folding
            (module docstring, step 3).
        context_m: buildings and street objects this far outside the bbox are
            kept (``in_core=False``) so renders near the edge are not empty.
        merge_m: streets shorter than this are contracted to one vertex
            (module docstring, step 4).
    Returns: a :class:`City` with ``city.annotations`` set; report in
        ``city.meta.extra["osm_import"]``. The local frame is centred on the
        bbox (or on the walkable network's bounds when there is no bbox).
    Raises:
        CityFormatError: bad file (missing, unknown type, truncated, not OSM),
            bad or empty bbox, no walkable street in the bbox, or a street
            longer than :data:`MAX_CHAIN_M` between junctions; the message
            names the file.
    """
    t_start = time.perf_counter()
    path = Path(path)
    source_files(path)
    if not (spacing_m > 0 and math.isfinite(spacing_m)):
        raise ValueError(f"spacing_m must be a positive number, got {spacing_m!r}")
    bb = _check_bbox(path, bbox)
    bb_rec = f"bbox {','.join(f'{v:.7f}' for v in bb)}" if bb else None
    read_bb = _grow(bb, max(context_m, 3 * sidewalk_fold_m)) if bb else None
    raw = _read(path, read_bb)
    t_read = time.perf_counter()
    report: dict[str, Any] = {"bbox": list(bb) if bb else None, "spacing_m": spacing_m, "osm_objects_read": raw.n_objects}

    # ---- walkable ways
    excluded: Counter[str] = Counter()
    walk_ways: list[tuple[_RawWay, str]] = []
    for w in raw.ways:
        cls = classify_way(w.tags)
        if cls in ("street", "path"):
            walk_ways.append((w, cls))
        else:
            excluded[cls] += 1
    if bb is not None:
        inside_any = any(
            any(bb[0] <= lon <= bb[2] and bb[1] <= lat <= bb[3] for lon, lat in w.lonlat) or
            LineString(w.lonlat).intersects(box(*bb)) for w, _ in walk_ways)
        if not raw.ways and not raw.areas and not raw.nodes:
            raise CityFormatError(path, bb_rec, "no OSM data inside the bbox (is it the right area?)")
        if not inside_any:
            raise CityFormatError(path, bb_rec, "no walkable streets inside the bbox")
    elif not walk_ways:
        raise CityFormatError(path, None, "no walkable streets in the file")
    if bb is not None:
        frame = LocalFrame((bb[1] + bb[3]) / 2, (bb[0] + bb[2]) / 2)
    else:
        lls = np.array([p for w, _ in walk_ways for p in w.lonlat])
        frame = LocalFrame((lls[:, 1].min() + lls[:, 1].max()) / 2, (lls[:, 0].min() + lls[:, 0].max()) / 2)

    net = _Net(frame)
    all_refs = sorted({r for w, _ in walk_ways for r in w.refs})
    ll_of = {r: p for w, _ in walk_ways for r, p in zip(w.refs, w.lonlat)}
    if all_refs:
        lons = np.array([ll_of[r][0] for r in all_refs])
        lats = np.array([ll_of[r][1] for r in all_refs])
        xs, ys = frame.to_xy(lats, lons)
        for r, x, y in zip(all_refs, np.atleast_1d(xs), np.atleast_1d(ys)):
            net.xy[r] = (float(x), float(y))
    sidewalks: list[tuple[_Way, list[int]]] = []
    carriers: set[int] = set()
    for w, cls in walk_ways:
        way = net.add_way(w.id, dict(w.tags), cls)
        if w.tags.get("footway") == "sidewalk" and cls == "path":
            sidewalks.append((way, w.refs))
            continue
        if cls == "street" and way.highway in CARRIER_HIGHWAYS:
            carriers.add(way.idx)
        net.add_path(way, w.refs)
    report["ways_walkable"] = len(walk_ways)
    report["ways_excluded_by_reason"] = dict(sorted(excluded.items()))

    touched = _fold_sidewalks(net, sidewalks, carriers, sidewalk_fold_m, fold_angle_deg, fold_keep_min_m, report)
    _reconnect(net, touched, sidewalk_fold_m, report)
    # the unclipped network (facade tests near the edge)
    wide_lines = [LineString([net.xy[u], net.xy[v]]) for u, v in net.g.edges]
    if bb is not None:
        report["bbox_cut_points"] = _clip(net, bb)
    if net.g.number_of_edges() == 0:
        raise CityFormatError(path, bb_rec, "no walkable streets inside the bbox")
    report["short_streets_merged"] = _merge_close(net, merge_m)

    # ---- pose nodes
    chains = _chains(net)
    for ch in chains:
        if ch.length > MAX_CHAIN_M:  # a mistyped coordinate far from the rest, not a street to sample every few m
            wid = net.ways[ch.seg_way[0]].id
            raise CityFormatError(path, f"way {wid}" if wid is not None else bb_rec,
                                  f"a walkable street of {ch.length / 1000:,.0f} km without a junction, longer than "
                                  f"{MAX_CHAIN_M / 1000:g} km (ours): is a node's coordinate wrong?")
    g = nx.DiGraph()
    key_node: dict[int, str] = {}
    counter = 0

    def new_id() -> str:
        nonlocal counter
        counter += 1
        return f"n{counter - 1:05d}"

    pair_count: Counter[tuple[str, str]] = Counter()
    chain_nodes: list[list[str]] = []
    chain_pos: list[list[float]] = []
    node_xy: dict[str, tuple[float, float]] = {}
    node_head: dict[str, float] = {}
    node_chain: dict[str, int] = {}
    for ci, ch in enumerate(chains):
        for v in (ch.vids[0], ch.vids[-1]):
            if v not in key_node:
                nid = new_id()
                key_node[v] = nid
                node_xy[nid] = net.xy[v]
        a, b = key_node[ch.vids[0]], key_node[ch.vids[-1]]
        n = max(1, int(math.floor(ch.length / spacing_m + 0.5)))
        if a == b:
            n = max(n, 3)
        elif pair_count[tuple(sorted((a, b)))] and n == 1:
            n = 2
        if n == 1:
            pair_count[tuple(sorted((a, b)))] += 1
        pos = [ch.length * k / n for k in range(n + 1)]
        ids = [a]
        for k in range(1, n):
            nid = new_id()
            node_xy[nid] = _interp(ch, pos[k])
            node_head[nid] = _tangent_deg(ch, pos[k])
            node_chain[nid] = ci
            ids.append(nid)
        ids.append(b)
        chain_nodes.append(ids)
        chain_pos.append(pos)
    # headings of decision points / ends: best-ranked incident chain, then the longest
    best_for: dict[str, tuple[tuple, int, float]] = {}
    for ci, ch in enumerate(chains):
        dom = _dominant_way(net, ch)
        rank = HIGHWAY_RANK.get(net.ways[dom].highway, 99)
        for end, sv in ((chain_nodes[ci][0], 0.0), (chain_nodes[ci][-1], ch.length)):
            cand = ((rank, -ch.length, ci), ci, sv)
            if end not in best_for or cand[0] < best_for[end][0]:
                best_for[end] = cand
    for nid, (_, ci, sv) in best_for.items():
        node_head[nid] = _tangent_deg(chains[ci], sv)
        node_chain[nid] = ci
    ids_all = list(node_xy)
    xs = np.array([node_xy[i][0] for i in ids_all])
    ys = np.array([node_xy[i][1] for i in ids_all])
    lats, lons = frame.to_latlon(xs, ys)
    lats, lons = np.atleast_1d(lats), np.atleast_1d(lons)
    for i, nid in enumerate(ids_all):
        g.add_node(nid, lat=float(lats[i]), lon=float(lons[i]), x_m=float(xs[i]), y_m=float(ys[i]),
                   heading_deg=float(node_head.get(nid, 0.0)), walkable_headings_raw=None, walkable_headings_deg=None)
    # edges
    src_u, src_v, lens, meta = [], [], [], []
    for ci, ch in enumerate(chains):
        ids, pos = chain_nodes[ci], chain_pos[ci]
        for k in range(len(ids) - 1):
            mid = (pos[k] + pos[k + 1]) / 2
            j = _seg_at(ch, mid)
            way = net.ways[ch.seg_way[j]]
            ow = _foot_oneway(way.tags) if way.cls != "connector" else 0
            fwd_ok = ow == 0 or (ow == 1) == ch.seg_fwd[j]
            bwd_ok = ow == 0 or not fwd_ok
            L = pos[k + 1] - pos[k]
            attrs = {"street_id": f"s{ci:04d}", "way_id": way.id, "highway": way.highway}
            if way.highway == "steps":
                attrs["steps"] = True
            if fwd_ok:
                src_u.append(ids[k]); src_v.append(ids[k + 1]); lens.append(L); meta.append(attrs)
            if bwd_ok:
                src_u.append(ids[k + 1]); src_v.append(ids[k]); lens.append(L); meta.append(attrs)
    if src_u:
        la0 = np.array([g.nodes[u]["lat"] for u in src_u]); lo0 = np.array([g.nodes[u]["lon"] for u in src_u])
        la1 = np.array([g.nodes[v]["lat"] for v in src_v]); lo1 = np.array([g.nodes[v]["lon"] for v in src_v])
        az, _, _ = WGS84_GEOD.inv(lo0, la0, lo1, la1)
        az = np.mod(np.asarray(az, float), 360.0)
        for u, v, L, m, a in zip(src_u, src_v, lens, meta, az):
            g.add_edge(u, v, azimuth_deg=float(a) if a < 360.0 else 0.0, length_m=float(L), **m)
    report["nodes_before_pruning"] = g.number_of_nodes()
    report["edges_before_pruning"] = g.number_of_edges()

    # ---- prune to the largest strongly connected component
    comps = sorted(nx.strongly_connected_components(g), key=lambda c: (-len(c), min(c)))
    keep = comps[0] if comps else set()
    dropped = [c for c in comps[1:]]
    drop_nodes = set().union(*dropped) if dropped else set()
    drop_edges = [(u, v) for u, v in g.edges if u in drop_nodes or v in drop_nodes]
    report["pruned"] = {
        "components_dropped": len(dropped),
        "nodes_dropped": len(drop_nodes),
        "edges_dropped": len(drop_edges),
        "length_dropped_m": round(sum(g.edges[e]["length_m"] for e in drop_edges) / 2, 1),
        "largest_dropped_nodes": max((len(c) for c in dropped), default=0),
    }
    g.remove_nodes_from(drop_nodes)
    # renumber nothing (ids stay stable); fill walkable headings and node kinds
    und = g.to_undirected(as_view=True)
    for nid in g.nodes:
        hs = sorted(float(d["azimuth_deg"]) for _, _, d in g.out_edges(nid, data=True))
        deg = und.degree(nid)
        d = g.nodes[nid]
        d["walkable_headings_raw"] = hs
        d["walkable_headings_deg"] = list(hs)
        d["node_kind"] = "decision_point" if deg >= 3 else ("dead_end" if deg <= 1 else "street")
        d["decision_point"] = deg >= 3
        d["street_id"] = f"s{node_chain[nid]:04d}" if nid in node_chain else None
    city_name = name or re.sub(r"(\.osm)?(\.pbf|\.gz|\.bz2)?$", "", path.name, flags=re.IGNORECASE) or "osm"
    t_graph = time.perf_counter()

    # ---- annotations
    to_latlon = frame.to_latlon
    streets: list[A.Street] = []
    for ci, ch in enumerate(chains):
        ids = chain_nodes[ci]
        if not all(i in g for i in ids):
            continue
        dom = net.ways[_dominant_way(net, ch)]
        tl, tr = _tag_sidewalks(dom.tags) if dom.cls == "street" else (False, False)
        fl = dom.tags.get("urbanarena:sidewalk_left") == "yes"
        fr = dom.tags.get("urbanarena:sidewalk_right") == "yes"
        left, right = tl or fl, tr or fr
        la, lo = to_latlon(ch.xy[:, 0], ch.xy[:, 1])
        way_ids = []
        for wi in ch.seg_way:
            wid = net.ways[wi].id
            if wid is not None and wid not in way_ids:
                way_ids.append(wid)
        names = [net.ways[wi].tags.get("name") for wi in ch.seg_way if net.ways[wi].tags.get("name")]
        streets.append(A.Street(
            id=f"s{ci:04d}", node_ids=ids, xy=[(float(x), float(y)) for x, y in ch.xy],
            lonlat=[(float(a), float(b)) for a, b in zip(np.atleast_1d(lo), np.atleast_1d(la))],
            length_m=ch.length, highway=dom.highway, name=dom.tags.get("name") or (names[0] if names else None),
            way_ids=way_ids, is_street=dom.cls == "street" and (
                dom.highway in BLOCK_HIGHWAYS or (dom.highway == "service" and bool(dom.tags.get("name")))),
            width_m=_width_m(dom.tags) if dom.cls != "connector" else DEFAULT_WIDTH_M["connector"],
            sidewalk_left=left, sidewalk_right=right,
            steps=any(net.ways[wi].highway == "steps" for wi in ch.seg_way)))
    ann = _annotations(path, raw, bb, frame, streets, g, wide_lines, context_m, report)
    t_ann = time.perf_counter()
    report["nodes"] = g.number_of_nodes()
    report["edges"] = g.number_of_edges()
    report["decision_points"] = sum(1 for _, d in g.nodes(data=True) if d["decision_point"])
    report["dead_ends"] = sum(1 for _, d in g.nodes(data=True) if d["node_kind"] == "dead_end")
    report["streets"] = len(streets)
    report["network_length_m"] = round(sum(s.length_m for s in streets), 1)
    if bb is not None:
        w_m = (bb[2] - bb[0]) * 111_320.0 * math.cos(math.radians((bb[1] + bb[3]) / 2))
        h_m = (bb[3] - bb[1]) * 111_320.0
        report["bbox_size_m"] = [round(w_m, 1), round(h_m, 1)]
        poly_ll = box(*bb)
        xs_b, ys_b = frame.to_xy(np.array([p[1] for p in poly_ll.exterior.coords]), np.array([p[0] for p in poly_ll.exterior.coords]))
        report["bbox_area_km2"] = round(Polygon(list(zip(xs_b, ys_b))).area / 1e6, 4)
    report["annotations"] = ann.counts()
    report["timing_s"] = {"read": round(t_read - t_start, 3), "graph": round(t_graph - t_read, 3),
                          "annotations": round(t_ann - t_graph, 3), "total": round(t_ann - t_start, 3)}
    meta = CityMeta(
        name=city_name,
        source={"kind": KIND, "files": [path.name], "sha256": {path.name: _sha256(path)}, "bbox": list(bb) if bb else None,
                "spacing_m": spacing_m, "osm_timestamp": raw.timestamp, "importer_version": VERSION},
        licence=LICENCE,
        attribution=ATTRIBUTION,
        imagery=None,
        extra={"osm_import": report},
    )
    city = City(g, meta, frame=frame)
    city.annotations = ann
    from urbanarena.world.facts import graph_facts

    city.meta.extra["facts"] = graph_facts(city)
    return city


def _dominant_way(net: _Net, ch: _Chain) -> int:
    tot: Counter[int] = Counter()
    for j, w in enumerate(ch.seg_way):
        tot[w] += float(ch.s[j + 1] - ch.s[j])
    # prefer non-connector ways
    order = sorted(tot.items(), key=lambda kv: (net.ways[kv[0]].cls == "connector", -kv[1], kv[0]))
    return order[0][0]


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
