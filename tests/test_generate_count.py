"""Counting ground truth against hand counts on the hand-written fixture.

Layout and hand counts: the header of ``tests/data/osm_generate_fixture.osm``
(object ids ``n4xx`` are the fixture's node ids, POIs ``n5xx``).
"""

from __future__ import annotations

import pytest

from generate_util import OLD_FIXTURE, fixture_city, node_at
from urbanarena.tasks.generators.common import FamilyUnavailable, make_context
from urbanarena.tasks.generators import object_count


@pytest.fixture(scope="module")
def counts():
    """``(start fixture xy, heading, range, type) -> (answer, counted ids, difficulties)`` over all candidates."""
    city = fixture_city()
    pool = object_count.generate(make_context(city, 0), {"easy": 1, "medium": 1, "hard": 1})
    out: dict = {}
    for d, cands in pool.by_difficulty.items():
        for c in cands:
            f = c.fields
            key = (f["start"].node, round(f["start"].heading_deg), f["extra"]["range"], f["extra"]["object_type"])
            ans, ids, diffs = out.get(key, (f["answer"], [o["id"] for o in f["extra"]["counted"]], set()))
            assert ans == f["answer"]
            diffs.add(d)
            out[key] = (ans, ids, diffs)
    return city, out


def get(counts, x, y, heading, rng, typ):
    city, out = counts
    return out.get((node_at(city, x, y), heading, rng, typ))


def test_road_up_to_the_next_crosswalk_hand_counted(counts):
    # from (30,0) facing east the range runs to the crossing at (160,0), |y| < 9 m
    assert get(counts, 30, 0, 90, "road", "tree")[:2] == ("7", ["n402", "n403", "n404", "n405", "n407", "n408", "n409"])
    assert get(counts, 30, 0, 90, "road_left", "tree")[:2] == ("4", ["n402", "n403", "n404", "n405"])
    assert get(counts, 30, 0, 90, "road_right", "tree")[:2] == ("3", ["n407", "n408", "n409"])
    assert get(counts, 30, 0, 90, "road", "street_lamp")[:2] == ("3", ["n421", "n422", "n423"])
    assert get(counts, 30, 0, 90, "road_left", "street_lamp")[:2] == ("2", ["n422", "n423"])
    assert get(counts, 30, 0, 90, "road_right", "street_lamp") is None  # one lamp: below the minimum of 2
    # from (100,0) facing west: up to the crossing at (20,0): T1..T4 north, T7 south
    assert get(counts, 100, 0, 270, "road", "tree")[:2] == ("5", ["n401", "n402", "n403", "n404", "n407"])
    assert get(counts, 100, 0, 270, "road_right", "tree")[0] == "4"  # facing west, right is north
    # from (100,0) facing east: up to (160,0): T5 north, T8 T9 south; L2 L3 north
    assert get(counts, 100, 0, 90, "road", "tree")[:2] == ("3", ["n405", "n408", "n409"])
    assert get(counts, 100, 0, 90, "road_left", "street_lamp")[:2] == ("2", ["n422", "n423"])


def test_block_perimeter_hand_counted(counts):
    # facing east on Mainstreet at (50,0): block A on the left, block C on the right
    assert get(counts, 50, 0, 90, "block_left", "tree")[:2] == ("6", ["n401", "n402", "n403", "n404", "n411", "n412"])
    assert get(counts, 50, 0, 90, "block_left", "shop")[:2] == ("4", ["n501", "n503", "n504", "n506"])
    assert get(counts, 50, 0, 90, "block_right", "shop")[:2] == ("2", ["n511", "n512"])
    # facing north on Midstreet at (100,50): block A left, block B right
    assert get(counts, 100, 50, 0, "block_right", "tree")[:2] == ("2", ["n405", "n406"])
    assert get(counts, 100, 50, 0, "block_right", "street_lamp")[:2] == ("2", ["n422", "n423"])
    assert get(counts, 100, 50, 0, "block_left", "tree")[0] == "6"
    # facing south on Midstreet at (100,-50): block D on the left
    assert get(counts, 100, -50, 180, "block_left", "tree")[:2] == ("2", ["n408", "n409"])


def test_ambiguous_range_is_dropped(counts):
    # from (90,0) facing east the range starts at x = 90, where tree T4 (90,7) stands on its boundary:
    # both-sides and left (north) tree counts are dropped, though T5 (+T8 T9) would give 3 / 1 + ...
    assert get(counts, 90, 0, 90, "road", "tree") is None
    assert get(counts, 90, 0, 90, "road_left", "tree") is None
    # ... while the south side, 7 m from T4, keeps its count (T8 T9)
    assert get(counts, 90, 0, 90, "road_right", "tree")[:2] == ("2", ["n408", "n409"])
    # the same stretch seen from (100,0), T4 behind the start: counted
    assert get(counts, 100, 0, 90, "road", "tree")[0] == "3"


def test_difficulty_bands_and_answer_format(counts):
    city, out = counts
    for (node, heading, rng, typ), (ans, ids, diffs) in out.items():
        n = int(ans)
        assert n == len(ids) >= 2
        for d in diffs:
            lo, hi = object_count.BANDS[d]
            assert lo <= n <= hi


def test_area_without_countable_ranges_says_why():
    city = fixture_city(str(OLD_FIXTURE))
    with pytest.raises(FamilyUnavailable) as e:
        object_count.generate(make_context(city, 0), {"easy": 1, "medium": 1, "hard": 1})
    assert e.value.kind == "object_count"
    assert "2 or more objects" in e.value.reason
