"""The task kinds a suite is generated from: the seven arena families (:data:`ALL_KINDS`, in suite order) and the
kinds generated only when asked for (:data:`OPT_IN_KINDS`)."""

from __future__ import annotations

#: the seven arena families, in the order a suite generates them (a family's seed derives from its index here)
ALL_KINDS = ("localization", "landmark_language", "landmark_image", "map_navigation", "vln", "object_count",
             "relational")
#: kinds generated only when asked for (``kinds=``): ``population_count`` counts the people and vehicles of the
#: start node's panorama (:mod:`.population_count`; the ``object_count`` family's metric)
OPT_IN_KINDS = ("population_count",)

__all__ = ["ALL_KINDS", "OPT_IN_KINDS"]
