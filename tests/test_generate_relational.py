"""Relational ground truth against hand-worked relations on the hand-written fixtures.

``tests/data/osm_generate_fixture.osm``: a north row of storefronts on
Mainstreet (x = 20 Alpha Books, 35 Bravo Cafe, 50 Charlie Bakery, 65 Delta
Florist, 72 an unnamed shop, 80 Echo Optics; facing them from the street you
look north, so right = east) and a south row (25 Foxtrot Pharmacy, 50 Golf
Kiosk, 75 Hotel India; facing them you look south, right = west).
``tests/data/osm_fixture.osm``: Kukka (x = 130) and Ravintola Sointu (150) on
the south facade of one building, seen from Mainstreet (right = east).
"""

from __future__ import annotations

from generate_util import OLD_FIXTURE, fixture_city
from urbanarena.agents.arena_oracle import verify_arena_task
from urbanarena.tasks.generators import relational
from urbanarena.tasks.generators.common import make_context


def relations(city) -> dict[tuple[str, str, int], tuple[str, str]]:
    pool = relational.generate(make_context(city, 0), {})
    out = {}
    for d, cands in pool.by_difficulty.items():
        for c in cands:
            e = c.fields["extra"]
            key = (e["landmark"], e["relation"], e["doors"])
            assert key not in out
            out[key] = (c.fields["answer"], d)
    return out


def test_generate_fixture_relations_hand_worked():
    got = relations(fixture_city())
    expected = {
        # north row, right = east
        ("Alpha Books", "right", 1): ("Bravo Cafe", "easy"),
        ("Alpha Books", "right", 2): ("Charlie Bakery", "medium"),
        ("Alpha Books", "right", 3): ("Delta Florist", "medium"),
        ("Bravo Cafe", "right", 1): ("Charlie Bakery", "easy"),
        ("Bravo Cafe", "right", 2): ("Delta Florist", "medium"),
        ("Bravo Cafe", "left", 1): ("Alpha Books", "easy"),
        ("Charlie Bakery", "right", 1): ("Delta Florist", "easy"),
        ("Charlie Bakery", "left", 1): ("Bravo Cafe", "easy"),
        ("Charlie Bakery", "left", 2): ("Alpha Books", "medium"),
        ("Delta Florist", "left", 1): ("Charlie Bakery", "easy"),
        ("Delta Florist", "left", 2): ("Bravo Cafe", "medium"),
        ("Delta Florist", "left", 3): ("Alpha Books", "medium"),
        # south row, right = west
        ("Foxtrot Pharmacy", "left", 1): ("Golf Kiosk", "easy"),
        ("Foxtrot Pharmacy", "left", 2): ("Hotel India", "medium"),
        ("Golf Kiosk", "right", 1): ("Foxtrot Pharmacy", "easy"),
        ("Golf Kiosk", "left", 1): ("Hotel India", "easy"),
        ("Hotel India", "right", 1): ("Golf Kiosk", "easy"),
        ("Hotel India", "right", 2): ("Foxtrot Pharmacy", "medium"),
        # across Mainstreet (unique nearest within 15 m, runner-up at least 6 m farther)
        ("Alpha Books", "across", 1): ("Foxtrot Pharmacy", "hard"),
        ("Charlie Bakery", "across", 1): ("Golf Kiosk", "hard"),
        ("Echo Optics", "across", 1): ("Hotel India", "hard"),
        ("Golf Kiosk", "across", 1): ("Charlie Bakery", "hard"),
    }
    assert got == expected
    # the unnamed shop between Delta and Echo blocks "right of Delta" and "left of Echo"
    assert ("Delta Florist", "right", 1) not in got and ("Echo Optics", "left", 1) not in got


def test_old_fixture_kukka_and_sointu():
    got = relations(fixture_city(str(OLD_FIXTURE)))
    assert got == {("Kukka", "right", 1): ("Ravintola Sointu", "easy"),
                   ("Ravintola Sointu", "left", 1): ("Kukka", "easy")}


def test_right_is_the_facade_direction_seen_from_the_street():
    city = fixture_city()
    ctx = make_context(city, 0)
    by_name = {p.name: p for p in city.annotations.pois if p.name}
    north, south = by_name["Charlie Bakery"], by_name["Golf Kiosk"]
    # the street runs west -> east (along grows eastwards): facing north, right = east = +along
    assert north.along_m < by_name["Delta Florist"].along_m
    assert relational.right_along_sign(ctx, north) == 1
    assert relational.right_along_sign(ctx, south) == -1


def test_task_fields_and_oracle_answer():
    city = fixture_city()
    pool = relational.generate(make_context(city, 3), {})
    c = next(c for c in pool.by_difficulty["hard"] if c.fields["extra"]["landmark"] == "Echo Optics")
    t = c.build("t/1")
    assert t.answer == "Hotel India" and t.answer_metric == "name_match"
    # distractors (hand-worked from the fixture layout): the four doors before Echo on its row (Bravo, Charlie,
    # Delta, the unnamed shop -> no name) and the three nearest across the street minus the answer (Golf, Foxtrot)
    names = {p.name.split()[0]: p.name for p in city.annotations.pois if p.name}
    assert sorted(t.extra["distractor_names"]) == sorted(names[k] for k in ("Bravo", "Charlie", "Delta", "Golf",
                                                                            "Foxtrot"))
    assert "Echo Optics" in t.instruction and "across the street" in t.instruction
    d = city.shortest_path_length_m(t.start.node, city.annotations.poi(t.extra["poi_id"]).node_id)
    assert relational.START_BAND_M[0] <= d <= relational.START_BAND_M[1]
    res = verify_arena_task(city, t, protocols=("cityarena-v1",))
    assert res[0].solved and res[0].steps == 1 and res[0].status == "ANSWER"
