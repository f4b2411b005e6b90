"""Which task families a city of real photographs can have, and why (Panoramax, frames and video cities).

On a rendered OSM city every annotation is drawn, so ground truth taken from
OSM is what the agent sees. On real photographs it is not: OSM does not map
every tree, lamp or bench a camera sees, and the photos may be older or newer
than the map. The families therefore split in two:

* families whose ground truth is a **place** (a POI's front point, a node
  position, a route along the streets, the order of storefronts on a facade):
  built from OSM as on rendered cities — ``localization``,
  ``landmark_language``, ``map_navigation``, ``vln``, ``relational`` and the
  CitySeeker-style need tasks (``tasks generate --suite cityseeker``);
* families whose ground truth is **what the pictures show**: ``object_count``
  is generated only when the user *confirms* that the city's street-object
  annotation matches the photographs (``--confirm-object-annotation`` of
  ``urbanarena city from-panoramax``, ``from-frames --osm`` or ``from-video --osm``, recorded in ``city.json`` as
  ``extra.real_imagery.confirmed_annotations``); ``landmark_image`` cannot use
  reference photos drawn by the 3D renderer from OSM geometry (they would not
  show the photographed facades): its reference is another real picture
  (:mod:`urbanarena.tasks.generators.real_references`: ``tasks generate
  --reference-pictures DIR_OR_CSV``, or the Panoramax STAC around each POI),
  built only when the user confirms the references
  (``--confirm-landmark-references``), since their pixels are not checked.

:func:`family_plan` states this per family; :func:`unavailable_reason` is the
check the suite builder (:func:`~urbanarena.tasks.generators.suite.generate_suite`)
makes before each family, reporting the reason as an unavailable family.
A city is a *real-imagery* city when its imagery source is ``panoramax``,
``frames`` (``city from-frames``) or ``video`` (``city from-video``). Frames
and video cities carry OSM annotations only when built with ``--osm FILE``
(:mod:`urbanarena.world.importers.osm_join`); without them the place-based
generators find no POIs and say so.
"""

from __future__ import annotations

from typing import Any

from urbanarena.world.city import City

#: imagery sources made of real photographs with OSM annotations (the rules here apply)
REAL_IMAGERY_SOURCES = frozenset({"panoramax", "frames", "video"})
#: families whose ground truth needs annotation OSM cannot guarantee on photos; built only when confirmed
CONFIRMABLE = ("object_count",)
CONFIRMED_KEY = "confirmed_annotations"

REASONS: dict[str, str] = {
    "localization": "ground truth is the pose node's position on the OSM district map, which holds whatever "
                    "the photos show",
    "landmark_language": "goal is the OSM POI's front point on the street network; the photos are not checked "
                         "for a legible sign",
    "landmark_image": "the reference must be another real picture facing the POI (the 3D renderer would draw "
                      "OSM geometry, not the photographed facades): give --reference-pictures DIR_OR_CSV (or, on "
                      "a Panoramax city, let the STAC be searched) with --confirm-landmark-references of "
                      "urbanarena tasks generate",
    "map_navigation": "start and goal are positions on the street network (map ground truth)",
    "vln": "routes and turns come from the street network and the OSM POIs",
    "relational": "left/right/across relations come from the OSM facades the POIs are attached to",
    "object_count": "object counts need ground truth of what the photographs show; OSM does not map every "
                    "tree, lamp or bench a camera sees: confirm the street-object annotation first "
                    "(--confirm-object-annotation of urbanarena city from-panoramax, from-frames or from-video)",
    "cityseeker_needs": "goals are OSM POIs and street objects with a pose node, as on rendered cities",
}


def is_real_imagery(city: City) -> bool:
    """Whether ``city``'s views are real photographs with OSM-derived annotations (imagery source in
    :data:`REAL_IMAGERY_SOURCES`)."""
    im = city.meta.imagery or {}
    return im.get("source") in REAL_IMAGERY_SOURCES


def confirmed_annotations(city: City) -> set[str]:
    """Families whose annotation the user confirmed for this city (``extra.real_imagery.confirmed_annotations``)."""
    block = (city.meta.extra or {}).get("real_imagery") or {}
    return {str(k) for k in block.get(CONFIRMED_KEY) or []}


def confirm_annotations(city: City, kinds: tuple[str, ...] = CONFIRMABLE) -> City:
    """Record (in place) that the user confirmed the annotation behind ``kinds`` matches the photographs.

    Raises:
        ValueError: a kind that needs no confirmation.
    """
    bad = [k for k in kinds if k not in CONFIRMABLE]
    if bad:
        raise ValueError(f"only {', '.join(CONFIRMABLE)} can be confirmed, got {bad}")
    block = city.meta.extra.setdefault("real_imagery", {})
    block[CONFIRMED_KEY] = sorted(set(block.get(CONFIRMED_KEY) or []) | set(kinds))
    return city


def unavailable_reason(city: City, kind: str, real_references: Any = None) -> str | None:
    """Why family ``kind`` cannot be generated on ``city`` because its views are real photographs, or
    ``None`` (also for every rendered or graph-only city). ``landmark_image`` is possible only with
    ``real_references`` (a :class:`~urbanarena.tasks.generators.real_references.ReferenceFinder`)."""
    if not is_real_imagery(city):
        return None
    if kind == "landmark_image":
        return None if real_references is not None else f"real imagery: {REASONS['landmark_image']}"
    if kind in CONFIRMABLE and kind not in confirmed_annotations(city):
        return f"real imagery: {REASONS[kind]}"
    return None


def family_plan(city: City) -> dict[str, dict[str, Any]]:
    """Per family (the seven arena families and ``cityseeker_needs``): ``{"buildable": bool, "reason": str}``
    for a real-imagery city (module docstring); buildable here means "not excluded because the views are
    photographs" — the generators may still find too little data in the area and say so."""
    from urbanarena.tasks.generators.kinds import ALL_KINDS

    out = {}
    for kind in (*ALL_KINDS, "cityseeker_needs"):
        why = unavailable_reason(city, kind)
        if why is None and kind in CONFIRMABLE and is_real_imagery(city):
            why_ok = "the user confirmed the street-object annotation matches the photographs"
        else:
            why_ok = REASONS[kind]
        out[kind] = {"buildable": why is None, "reason": why or why_ok}
    return out


__all__ = ["CONFIRMABLE", "REAL_IMAGERY_SOURCES", "REASONS", "confirm_annotations", "confirmed_annotations",
           "family_plan", "is_real_imagery", "unavailable_reason"]
