"""Generators of ``cityarena`` tasks (360CityArena-style families) from a city's own data.

One module per family — :mod:`.localization`, :mod:`.landmark` (by name and by
reference photo), :mod:`.map_navigation`, :mod:`.vln`, :mod:`.object_count`,
:mod:`.relational` — shared pieces in :mod:`.common`, the split areas in
:mod:`.splits` and the suite builder in :mod:`.suite`
(``urbanarena tasks generate``).
"""

from urbanarena.tasks.generators.common import CALIBRATION_TARGETS, CALIBRATION_TOLERANCE, FamilyUnavailable
from urbanarena.tasks.generators.splits import SPLITS, SplitError, check_split, city_area
from urbanarena.tasks.generators.suite import (
    ALL_KINDS,
    SUITE_SIZES,
    SuiteResult,
    generate_suite,
    save_suite,
    suite_name,
)

__all__ = [
    "ALL_KINDS", "CALIBRATION_TARGETS", "CALIBRATION_TOLERANCE", "FamilyUnavailable", "SPLITS", "SUITE_SIZES",
    "SplitError", "SuiteResult", "check_split", "city_area", "generate_suite", "save_suite", "suite_name",
]
