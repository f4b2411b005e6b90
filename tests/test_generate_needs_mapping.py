"""The need -> POI mapping file: the built-in one and malformed user files (TaskFormatError naming file and record)."""

from __future__ import annotations

import copy
import json

import pytest

from urbanarena.errors import TaskFormatError
from urbanarena.tasks.generators.cityseeker_needs import (
    CATEGORIES,
    default_mapping_path,
    load_needs,
)
from urbanarena.tasks.families.cityseeker import CATEGORY_NAMES


def test_builtin_mapping_covers_the_seven_categories():
    m = load_needs()
    assert m.source == "needs_v1.json" and default_mapping_path().is_file()
    assert set(CATEGORIES) == set(CATEGORY_NAMES.values()) - {"two_stop"}  # same names as imported CitySeeker tasks
    for cat in CATEGORIES:
        needs = m.by_category(cat)
        assert len(needs) >= 4, cat
        for n in needs:
            assert len(n.instructions) >= 2 and len(set(n.instructions)) == len(n.instructions), n.id
    assert len(m.two_stop_templates) >= 3
    assert sum(1 for n in m.needs if n.errands) >= 20


def test_clause_semantics():
    m = load_needs()
    n = {x.id: x for x in m.needs}
    # all tags of a clause must hold; values split at ';', case-insensitive
    assert n["accessible_cafe"].matches({"amenity": "cafe", "wheelchair": "yes"})
    assert not n["accessible_cafe"].matches({"amenity": "cafe", "wheelchair": "limited"})
    assert not n["accessible_cafe"].matches({"amenity": "cafe"})
    assert n["japanese"].matches({"amenity": "restaurant", "cuisine": "noodle; Japanese"})
    # "*" = present and not "no"
    assert n["unwell"].matches({"healthcare": "dentist"}) and not n["unwell"].matches({"healthcare": "no"})
    # name regex searches name, name:en and brand
    assert n["mcdonalds"].matches({"amenity": "fast_food", "brand": "McDonald's", "name": "Mäkkäri"})
    assert n["r_kioski"].matches({"shop": "kiosk", "name": "R-kioski"})
    assert not n["r_kioski"].matches({"shop": "kiosk", "name": "Kioski R"})
    # object clauses match only street objects of their type
    assert n["bus"].matches({"highway": "bus_stop"}, "bus_stop")
    assert not n["bus"].matches({"highway": "bus_stop"}, None)
    assert n["thirsty"].matches({"amenity": "vending_machine", "vending": "drinks"}, "vending_machine")
    assert not n["thirsty"].matches({"amenity": "vending_machine", "vending": "parking_tickets"}, "vending_machine")


def _base():
    return json.loads(default_mapping_path().read_text(encoding="utf-8"))


def _mut(f):
    def make():
        d = _base()
        f(d)
        return json.dumps(d)
    return make


BAD = {
    "truncated": (lambda: default_mapping_path().read_text()[:500], "[line "),
    "not_an_object": (lambda: "[1, 2]", "expected a JSON object"),
    "wrong_format": (_mut(lambda d: d.update(format="urbanarena-tasks")), "[format]"),
    "wrong_version": (_mut(lambda d: d.update(version=2)), "[version]"),
    "no_needs": (_mut(lambda d: d.update(needs=[])), "[needs]"),
    "unknown_category": (_mut(lambda d: d["needs"][2].update(category="shopping")),
                         "[needs[2] (id 'bank') field category]"),
    "bad_id": (_mut(lambda d: d["needs"][0].update(id="Cafe Latte")), "[needs[0] (id 'Cafe Latte') field id]"),
    "empty_instructions": (_mut(lambda d: d["needs"][1].update(instructions=[])),
                           "[needs[1] (id 'restaurant') field instructions]"),
    "blank_instruction": (_mut(lambda d: d["needs"][1].update(instructions=["ok", "  "])),
                          "[needs[1] (id 'restaurant') field instructions]"),
    "bad_regex": (_mut(lambda d: d["needs"][9]["match"][0].update(name="mcdonald(")),
                  "[needs[9] (id 'mcdonalds') field match.0.name]"),
    "unknown_object_type": (_mut(lambda d: d["needs"][18]["match"][0].update(object_type="tram_stop")),
                            "[needs[18] (id 'metro') field match.0.object_type]"),
    "empty_clause": (_mut(lambda d: d["needs"][0].update(match=[{}])), "[needs[0] (id 'cafe') field match.0]"),
    "no_clauses": (_mut(lambda d: d["needs"][0].update(match=[])), "[needs[0] (id 'cafe') field match]"),
    "unknown_field": (_mut(lambda d: d["needs"][0].update(colour="red")), "[needs[0] (id 'cafe') field colour]"),
    "tag_value_not_text": (_mut(lambda d: d["needs"][0]["match"][0]["tags"].update(amenity=[1])),
                           "[needs[0] (id 'cafe') field match.0.tags"),
    "duplicate_id": (_mut(lambda d: d["needs"].append(copy.deepcopy(d["needs"][0]))), "[needs[50] (id 'cafe')]: duplicate need id"),
    "template_without_second": (_mut(lambda d: d["two_stop_templates"].append("First {first}.")),
                                "[two_stop_templates[4]]"),
    "template_bad_field": (_mut(lambda d: d["two_stop_templates"].insert(0, "{first} {second} {third}")),
                           "[two_stop_templates[0]]"),
    "errands_without_templates": (_mut(lambda d: d.update(two_stop_templates=[])), "[two_stop_templates]"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_mapping_names_file_and_record(tmp_path, case):
    make, where = BAD[case]
    p = tmp_path / f"{case}.json"
    p.write_text(make(), encoding="utf-8")
    with pytest.raises(TaskFormatError) as ei:
        load_needs(p)
    msg = str(ei.value)
    assert msg.startswith(str(p)) and ei.value.path == str(p)
    assert where in msg, msg


def test_missing_and_binary_mapping(tmp_path):
    with pytest.raises(TaskFormatError, match="not found") as ei:
        load_needs(tmp_path / "nope.json")
    assert str(tmp_path / "nope.json") in str(ei.value)
    p = tmp_path / "bin.json"
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(TaskFormatError, match="UTF-8"):
        load_needs(p)


def test_user_mapping_round_trip(tmp_path):
    d = _base()
    d["needs"] = [n for n in d["needs"] if n["category"] == "basic_poi"][:2]
    p = tmp_path / "mine.json"
    p.write_text(json.dumps(d), encoding="utf-8")
    m = load_needs(p)
    assert [n.id for n in m.needs] == ["cafe", "restaurant"] and m.source == "mine.json"
    assert len(m.sha256) == 64 and m.sha256 != load_needs().sha256
