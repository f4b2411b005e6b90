"""Reply parsing of the VLM agents: every malformed-output class, hand-worked."""

from __future__ import annotations

import json

import pytest

from urbanarena.agents.vlm.parsing import (
    extract_json_object,
    parse_arena_reply,
    parse_choice_reply,
    parse_stop_reply,
    relative_direction,
)
from urbanarena.env.arena_env import ActionKind, Magnitude

OBJ = {"thought": "go on", "action": "W", "memory": "m", "answer": "MEDIUM"}
TEXT = json.dumps(OBJ)


# ------------------------------------------------------------ extraction
@pytest.mark.parametrize("text,repairs", [
    (TEXT, []),
    ("```json\n" + TEXT + "\n```", ["code_fence"]),
    ("```\n" + TEXT + "\n```", ["code_fence"]),
    ("Here is my move: " + TEXT + " -- hope it helps", ["surrounding_text"]),
    (TEXT + "\nI walk because the road continues.", ["surrounding_text"]),
    ('{"thought": "x", "action": "W", "memory": "", "answer": "SMALL",}', ["trailing_comma"]),
])
def test_extraction_accepts_lenient_forms_and_names_each_repair(text, repairs):
    ex = extract_json_object(text)
    assert ex.failure is None and ex.repairs == repairs
    assert ex.obj["action"] == "W"


@pytest.mark.parametrize("text,flags,failure", [
    ("", (), "empty"),
    ("   \n ", (), "empty"),
    ("", ("refusal",), "refusal"),
    ("I cannot help with that.", ("refusal",), "refusal"),
    ('{"thought": "long', ("truncated",), "truncated"),
    ("I will walk forward now.", (), "no_json"),
    ('{"action": W}', (), "json_invalid"),
    ('["W"]', (), "no_json"),
])
def test_extraction_failures_are_typed(text, flags, failure):
    ex = extract_json_object(text, flags)
    assert ex.obj is None and ex.failure == failure and ex.detail


def test_keys_are_matched_case_insensitively_and_counted():
    ex = extract_json_object('{"Action": "W", "Thought": "t"}')
    assert ex.obj == {"action": "W", "thought": "t"} and ex.repairs == ["key_case"]


# ------------------------------------------------------------ arena replies
@pytest.mark.parametrize("action,answer,kind,size,repairs", [
    ("W", "MEDIUM", "W", "MEDIUM", []),
    ("w", "medium", "W", "MEDIUM", ["action_case"]),
    ("A", "S", "A", "SMALL", []),          # 360CityArena's runner accepts S/M/L/BIG
    ("D", "big", "D", "LARGE", []),
    ("Q", "L.", "Q", "LARGE", []),
    ("W LARGE", "", "W", "LARGE", ["magnitude_in_action"]),
    ("e: small", "", "E", "SMALL", ["action_case", "magnitude_in_action"]),
    ("S", "whatever", "S", None, []),       # the answer field is ignored for S/LEFT/RIGHT/UP
    ("up", "", "UP", None, ["action_case"]),
    ("LEFT", "", "LEFT", None, []),
])
def test_arena_actions_and_sizes(action, answer, kind, size, repairs):
    r = parse_arena_reply(json.dumps({"thought": "t", "action": action, "memory": "", "answer": answer}))
    assert r.ok and r.action.kind == ActionKind(kind)
    assert r.action.magnitude == (Magnitude(size) if size else None)
    assert r.repairs == repairs


def test_size_in_magnitude_field_and_omitted_size():
    r = parse_arena_reply('{"action": "W", "magnitude": "SMALL"}')
    assert r.action.magnitude == Magnitude.SMALL and r.repairs == ["magnitude_field"]
    r = parse_arena_reply('{"thought": "t", "action": "A", "memory": "", "answer": ""}')
    assert r.ok and r.action.magnitude is None and r.notes == ["magnitude_omitted"]


@pytest.mark.parametrize("size", ["HUGE", "45", 90, "x:1 y:2"])
def test_magnitude_out_of_range_by_protocol_rule(size):
    text = json.dumps({"thought": "t", "action": "D", "memory": "", "answer": size})
    strict = parse_arena_reply(text, magnitude_out_of_range="error")
    assert not strict.ok and strict.failure == "magnitude_out_of_range" and "SMALL, MEDIUM, LARGE" in strict.detail
    ref = parse_arena_reply(text, magnitude_out_of_range="default")  # 360CityArena: unknown sizes use the default
    assert ref.ok and ref.action.kind == ActionKind.D and ref.action.magnitude is None
    assert ref.notes == ["magnitude_out_of_range"]


def test_unknown_and_missing_actions():
    for bad in ("JUMP", "W HUGE", "MOVE FORWARD", "W,S", 3, ["W"]):
        r = parse_arena_reply(json.dumps({"thought": "t", "action": bad, "memory": "kept", "answer": ""}))
        assert not r.ok and r.failure == "unknown_action", bad
        assert r.json_object and r.memory == "kept"  # memory is still readable (the reference updates it)
    for obj in ({"thought": "t"}, {"action": ""}, {"action": None, "answer": "x"}):
        r = parse_arena_reply(json.dumps(obj))
        assert not r.ok and r.failure == "missing_action"


def test_missing_optional_fields_are_noted_not_failures():
    r = parse_arena_reply('{"action": "S"}')
    assert r.ok and r.action.kind == ActionKind.S and r.thought == "" and r.memory is None
    assert r.notes == ["missing_field_thought", "missing_field_memory", "missing_field_answer"]


def test_answer_text_is_passed_verbatim_with_extra_words():
    text = 'Final: {"thought": "done", "action": "ANSWER", "memory": "", "answer": "  x:3, y:4 (the cell with the tower) "}'
    r = parse_arena_reply(text)
    assert r.ok and r.action.kind == ActionKind.ANSWER
    assert r.action.answer == "x:3, y:4 (the cell with the tower)"  # validators extract what they score
    assert r.repairs == ["surrounding_text"]
    r = parse_arena_reply('{"action": "ANSWER", "answer": 12}')
    assert r.action.answer == "12" and "answer_not_string" in r.repairs


def test_empty_answer_by_protocol_rule():
    text = '{"thought": "t", "action": "ANSWER", "memory": "", "answer": ""}'
    assert parse_arena_reply(text, empty_answer="error").failure == "empty_answer"
    r = parse_arena_reply(text, empty_answer="accept")
    assert r.ok and r.action.answer == "" and r.notes == ["empty_answer"]


def test_non_json_reply_keeps_no_memory():
    r = parse_arena_reply("I would walk forward, memory: the station is north")
    assert not r.ok and r.failure == "no_json" and not r.json_object and r.memory is None


# ------------------------------------------------------------ CitySeeker replies
@pytest.mark.parametrize("value,stop,repairs", [
    (1, True, []), (0, False, []), ("1", True, []), (True, True, []), (0.0, False, []),
    ("yes", True, ["stop_word"]), ("No", False, ["stop_word"]), ("STOP", True, ["stop_word"]),
    ("continue", False, ["stop_word"]),
])
def test_stop_values(value, stop, repairs):
    r = parse_stop_reply(json.dumps({"observation": "o", "thoughts": "t", "action": value}))
    assert r.ok and r.stop is stop and r.repairs == repairs


def test_stop_failures_and_strict_fields():
    assert parse_stop_reply('{"action": 2}').failure == "bad_stop_value"
    assert parse_stop_reply('{"action": "maybe"}').failure == "bad_stop_value"
    assert parse_stop_reply('{"thoughts": "t"}').failure == "missing_action"
    assert parse_stop_reply("stop here").failure == "no_json"
    lean = '{"action": 1}'
    assert parse_stop_reply(lean).stop is True
    r = parse_stop_reply(lean, strict_fields=True)  # cityseeker-v1: thoughts and observation are required
    assert r.failure == "missing_fields" and "thoughts" in r.detail and "observation" in r.detail


@pytest.mark.parametrize("action,index,repairs", [
    ("A", 0, []), ("C", 2, []), ("b", 1, ["choice_case"]), ("Image C", 2, ["choice_text"]),
    ("1", 1, ["numeric_choice"]), (2, 2, ["numeric_choice"]), ("D.", 3, []),
])
def test_choice_labels(action, index, repairs):
    r = parse_choice_reply(json.dumps({"thoughts": "t", "observation": {}, "action": action, "score": 0.6}), 4)
    assert r.ok and r.index == index and r.score == 0.6 and r.repairs == repairs


def test_choice_failures_and_scores():
    assert parse_choice_reply('{"action": "E", "score": 0.5}', 4).failure == "choice_out_of_range"
    assert parse_choice_reply('{"action": "4"}', 4).failure == "choice_out_of_range"
    assert parse_choice_reply('{"action": "north"}', 4).failure == "unknown_action"
    assert parse_choice_reply('{"score": 0.5}', 4).failure == "missing_action"
    r = parse_choice_reply('{"action": "A"}', 2)
    assert r.ok and r.score is None and r.notes == ["score_missing"]
    r = parse_choice_reply('{"action": "A", "score": "1.7"}', 2)
    assert r.ok and r.score == 1.7 and r.notes == ["score_out_of_range"]


def test_choice_strict_fields_follow_the_reference_validator():
    good = {"thoughts": "t", "observation": {"A": "cars", "B": "shops"}, "action": "B", "score": 0.8}
    assert parse_choice_reply(json.dumps(good), 2, strict_fields=True).index == 1
    as_text = dict(good, observation=json.dumps(good["observation"]))  # the reference json.loads a text observation
    assert parse_choice_reply(json.dumps(as_text), 2, strict_fields=True).index == 1
    r = parse_choice_reply(json.dumps(dict(good, observation={"A": "cars"})), 2, strict_fields=True)
    assert r.failure == "observation_count"
    r = parse_choice_reply(json.dumps({"action": "B", "score": 0.8}), 2, strict_fields=True)
    assert r.failure == "missing_fields" and "thoughts" in r.detail
    r = parse_choice_reply(json.dumps(dict(good, score="high")), 2, strict_fields=True)
    assert r.failure == "missing_fields" and "score" in r.detail


# ------------------------------------------------------------ directions
@pytest.mark.parametrize("forward,heading,correct,reference", [
    (0, 0, "FRONT", "FRONT"),
    (0, 90, "RIGHT", "LEFT"),            # CitySeeker's labels mirror left and right
    (0, 270, "LEFT", "RIGHT"),
    (0, 180, "BACK", "BACK"),
    (0, 45, "FRONT_RIGHT", "FRONT_LEFT"),
    (90, 0, "LEFT", "RIGHT"),
    (350, 10, "FRONT", "FRONT"),         # across north
    (350, 30, "FRONT_RIGHT", "FRONT_LEFT"),
    (0, 22.4, "FRONT", "FRONT"),         # sector edges at +-22.5 degrees
    (0, 22.5, "FRONT_RIGHT", "FRONT_LEFT"),
    (0, 337.5, "FRONT", "FRONT"),
])
def test_relative_direction(forward, heading, correct, reference):
    assert relative_direction(forward, heading) == correct
    assert relative_direction(forward, heading, reference=True) == reference
