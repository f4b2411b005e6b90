"""The rules of ``cityseeker_needs`` as constants: versions, categories, route-length and difficulty bands, the
ambiguity gap, the verifying protocols and the built-in mapping file."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Callable

from urbanarena.tasks.families.cityseeker import CitySeekerFamily
from urbanarena.tasks.schema import Task


GENERATOR_VERSION = 2  # 2: each category's remainder bands rotate (small --per-category suites get hard tasks)


SUITE_VERSION = 1


MAPPING_FORMAT = "urbanarena-needs"


MAPPING_VERSION = 1


#: CitySeeker's seven one-stop categories (names as the cityseeker family's CATEGORY_NAMES)
CATEGORIES = ("basic_poi", "brand_specific", "transport_hub", "latent_poi", "implicit_need",
              "accessible_entrance", "semantic_preference")


TWO_STOP = "two_stop"


ALL_CATEGORIES = CATEGORIES + (TWO_STOP,)


#: route steps (hops) of a task, inclusive
MIN_ROUTE_STEPS = 5


MAX_ROUTE_STEPS = 24


#: each stage of a two-stop task has at least this many steps
MIN_STAGE_STEPS = 2


#: CitySeeker's difficulty bands by route steps, inclusive
DIFFICULTY_STEPS: dict[str, tuple[int, int]] = {"easy": (3, 10), "medium": (11, 18), "hard": (19, 24)}


#: the second-nearest goal node must be this much farther (graph metres) for the nearest to be the goal
AMBIGUITY_GAP_M = 5.0


#: a place counts only when its pose node is this close (metres)
MAX_NODE_DISTANCE_M = 15.0


#: step limit and protocols the oracle verifies every task under (the cityseeker family's limit)
DEFAULT_MAX_STEPS = CitySeekerFamily.default_max_steps


VERIFY_PROTOCOLS = ("cityseeker-v1", "urbanarena-graph-v1")


DEFAULT_PER_CATEGORY = 10


NO_ROUTE = f"no goal node within the search limit ({MAX_ROUTE_STEPS + 1} of the longest edges)"


DEFAULT_MAPPING = "needs_v1.json"


Verifier = Callable[[Task], list[dict[str, Any]]]


def default_mapping_path() -> Path:
    """Path of the built-in need mapping (``urbanarena/tasks/generators/data/needs_v1.json``)."""
    return Path(str(resources.files("urbanarena.tasks.generators") / "data" / DEFAULT_MAPPING))


def category_split(n: int, k: int) -> dict[str, int]:
    """Tasks per difficulty for ``n`` tasks of the category with index ``k``: ``n // 3`` per band, and the
    ``n % 3`` remainder tasks to the bands starting at ``k mod 3`` (easy, medium, hard, cyclically), so that
    over the categories every band gets its share even when ``n < 3`` (with ``n = 1`` and eight categories:
    easy 3, medium 3, hard 2). Generator version 1 gave every category's remainder to easy, then medium.

    >>> category_split(2, 0), category_split(2, 2)
    ({'easy': 1, 'medium': 1, 'hard': 0}, {'easy': 1, 'medium': 0, 'hard': 1})
    """
    base, rem = divmod(int(n), 3)
    bands = ("easy", "medium", "hard")
    extra = {bands[(k + i) % 3] for i in range(rem)}
    return {d: base + (1 if d in extra else 0) for d in bands}


def needs_suite_name(city_name: str, version: int = SUITE_VERSION) -> str:
    """Our suite name: ``<city>-needs7-v<version>``."""
    return f"{city_name}-needs7-v{version}"


def difficulty_of(steps: int) -> str | None:
    """CitySeeker difficulty of a route of ``steps`` hops (:data:`DIFFICULTY_STEPS`), ``None`` outside."""
    for d, (lo, hi) in DIFFICULTY_STEPS.items():
        if lo <= steps <= hi:
            return d
    return None
