"""The OSM importer's tag rules: source kinds and versions, which highways are streets, paths and carriers, widths, sidewalks,
street objects and POI categories from tags."""

from __future__ import annotations

import math
import re
from pathlib import Path

from urbanarena.errors import CityFormatError
from urbanarena.world import annotations as A


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
