"""Annotation rules read from OSM-style tags: lengths with units, building heights and levels, land-cover kinds."""

from __future__ import annotations

import math
import re

from urbanarena.world.annotation_records import DEFAULT_BUILDING_HEIGHT_M, LEVEL_HEIGHT_M


# --------------------------------------------------------------------------- heights
_NUM = re.compile(r"^\s*([-+]?\d+(?:[.,]\d+)?)\s*(m|meters?|metres?|ft|feet|'|)\s*$", re.IGNORECASE)


_FEET_INCHES = re.compile(r"^\s*(\d+)\s*'\s*(\d+(?:\.\d+)?)\s*\"\s*$")


def parse_length_m(value: str | None) -> float | None:
    """Parse an OSM length value to metres (``"12"``, ``"12.5 m"``, ``"40'"``,
    ``"40 ft"``, ``"10'6\\""``; the first of ``;``-separated values). ``None``
    when absent, unparseable, not finite or negative."""
    if value is None:
        return None
    v = str(value).split(";")[0].strip()
    m = _FEET_INCHES.match(v)
    if m:
        out = (float(m.group(1)) * 12 + float(m.group(2))) * 0.0254
    else:
        m = _NUM.match(v)
        if not m:
            return None
        out = float(m.group(1).replace(",", "."))
        if m.group(2).lower() in ("ft", "feet", "'"):
            out *= 0.3048
    return out if math.isfinite(out) and out >= 0 else None


#: land cover drawn as planting (ours): tag value -> kind (``grass`` lawns, ``park`` lawns with beds,
#: ``planting`` shrubs and flower beds)
LAND_COVER = {
    ("landuse", "grass"): "grass", ("landuse", "meadow"): "grass", ("landuse", "village_green"): "grass",
    ("landuse", "recreation_ground"): "grass", ("landuse", "flowerbed"): "planting",
    ("leisure", "park"): "park", ("leisure", "garden"): "park", ("natural", "grassland"): "grass",
    ("natural", "scrub"): "planting", ("natural", "heath"): "planting", ("landuse", "plant_nursery"): "planting",
}


def land_cover_kind(tags: dict[str, str]) -> str | None:
    """The land-cover kind (:data:`LAND_COVER`) of an area's OSM tags, first matching key in the
    order landuse, leisure, natural; ``None`` if none."""
    for key in ("landuse", "leisure", "natural"):
        k = LAND_COVER.get((key, tags.get(key, "")))
        if k is not None:
            return k
    return None


def _levels(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        out = float(str(value).split(";")[0].strip().replace(",", "."))
    except ValueError:
        return None
    return out if math.isfinite(out) and out >= 0 else None


def building_height(tags: dict[str, str]) -> tuple[float, str, float | None, float]:
    """Height of a building from its OSM tags.

    Returns ``(height_m, source, levels, min_height_m)``: ``source`` is
    ``"height"`` (the ``height`` tag, metres), ``"levels"``
    (``building:levels`` x :data:`LEVEL_HEIGHT_M`) or ``"default"``
    (:data:`DEFAULT_BUILDING_HEIGHT_M`); ``levels`` the parsed
    ``building:levels`` or ``None``; ``min_height_m`` from ``min_height``, else
    ``building:min_level`` x :data:`LEVEL_HEIGHT_M`, else 0. A zero height
    counts as missing.
    """
    levels = _levels(tags.get("building:levels"))
    h = parse_length_m(tags.get("height"))
    if h is not None and h > 0:
        height, src = h, "height"
    elif levels is not None and levels > 0:
        height, src = levels * LEVEL_HEIGHT_M, "levels"
    else:
        height, src = DEFAULT_BUILDING_HEIGHT_M, "default"
    mh = parse_length_m(tags.get("min_height"))
    if mh is None:
        ml = _levels(tags.get("building:min_level"))
        mh = ml * LEVEL_HEIGHT_M if ml is not None else 0.0
    return float(height), src, levels, float(min(mh, height))
