"""Validators against hand-worked tables (360CityArena evaluation protocol)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from urbanarena.tasks.validators import (
    COORDINATE_MATCH,
    EXACT_MATCH,
    FUZZY_MATCH,
    JUDGE_PROMPT_TEMPLATE,
    MRA,
    JudgeConflictError,
    JudgeVerdict,
    TemplateJudge,
    coordinate_match,
    coordinate_radius_m,
    exact_match,
    first_number,
    fuzzy_match,
    mean_relative_accuracy,
    mra_match,
    normalise_model_id,
    normalise_text,
    parse_grid_answer,
    parse_verdict,
    prompt_hash,
    same_model,
    score_episode,
)

# ------------------------------------------------------------- exact_match
GRID_CASES = [
    ("x:3 y:4", (3, 4)),
    ("X: 3, Y: 4", (3, 4)),
    ("[x:3, y:4]", (3, 4)),
    ("(x:3,y:4)", (3, 4)),
    ("{x: 3, y: 4}", (3, 4)),
    ("x=3; y=4", (3, 4)),
    ("x :3  ,  y : 4", (3, 4)),
    ("x:3y:4", (3, 4)),
    ("I believe I started at x:03 y:4. Not x:1 y:1.", (3, 4)),  # first occurrence, leading zero
    ('"x:2 y:5"', (2, 5)),
    ("x:12 y:1", (12, 1)),
    ("max:3 y:4", None),  # 'x' glued to a word
    ("3,4", None),
    ("(3, 4)", None),
    ("y:4 x:3", None),
    ("x:-1 y:2", None),
    ("x:1.5 y:2", None),
    ("", None),
]


@pytest.mark.parametrize("text,cell", GRID_CASES)
def test_parse_grid_answer(text, cell):
    assert parse_grid_answer(text) == cell


def test_exact_match_results():
    r = exact_match("[x: 2, y: 5]", "x:2 y:5")
    assert (r.metric, r.is_correct, r.score, r.parsed, r.prediction) == (EXACT_MATCH, True, 1.0, True, [2, 5])
    r = exact_match("x:5 y:2", "x:2 y:5")
    assert (r.is_correct, r.score, r.parsed) == (False, 0.0, True)
    r = exact_match("somewhere north", "x:2 y:5")
    assert (r.is_correct, r.score, r.parsed, r.validation_available) == (False, 0.0, False, True)
    assert "invalid answer format" in r.message
    with pytest.raises(ValueError):
        exact_match("x:1 y:1", "north-east")


# -------------------------------------------------------- coordinate_match
@pytest.mark.parametrize("final,target,radius,dist,ok", [
    ((0.0, 0.0), (6.0, 8.0), 10.0, 10.0, False),     # exactly on the radius: strict '<' fails
    ((0.0, 0.0), (6.0, 7.9), 10.0, math.hypot(6, 7.9), True),
    ((3.0, 4.0), (3.0, 4.0), 10.0, 0.0, True),
    ((0.0, 0.0), (12.0, 16.0), 20.0, 20.0, False),   # map navigation radius
    ((0.0, 0.0), (12.0, 15.0), 20.0, math.hypot(12, 15), True),
    ((-5.0, 2.0), (10.0, 10.0), 20.0, 17.0, True),
    ((-5.0, 2.0), (10.0, 10.0), 10.0, 17.0, False),
])
def test_coordinate_match_table(final, target, radius, dist, ok):
    r = coordinate_match(final, target, radius)
    assert r.metric == COORDINATE_MATCH and r.is_correct is ok and r.score == (1.0 if ok else 0.0)
    assert r.distance_m == pytest.approx(dist) and r.threshold_m == radius


def test_coordinate_match_unknown_position_and_radius_by_kind():
    r = coordinate_match(None, (1.0, 2.0))
    assert (r.is_correct, r.score, r.parsed, r.threshold_m) == (False, 0.0, False, 10.0)
    assert coordinate_radius_m("map_navigation") == 20.0
    assert coordinate_radius_m("landmark_search_image") == 10.0


# --------------------------------------------------------------------- MRA
# hand-worked: relative error e = |p - y| / y; score = #{theta in .50..95 : e < 1 - theta} / 10
MRA_TABLE = [
    (10, 10, 1.0),   # e = 0
    (11, 10, 0.8),   # e = .10 < 1-theta for 1-theta in {.50,...,.15} (8); fails .10 (strict) and .05
    (9, 10, 0.8),
    (12, 10, 0.6),   # e = .20 < {.50,.45,.40,.35,.30,.25} (6)
    (14, 10, 0.2),   # e = .40 < .50, .45 only
    (15, 10, 0.0),   # e = .50: not < .50
    (5, 10, 0.0),
    (0, 10, 0.0),
    (100, 10, 0.0),
    (1, 4, 0.0),     # e = .75
    (3, 4, 0.5),     # e = .25 < .50,.45,.40,.35,.30
    (0, 0, 1.0),
    (1, 0, 0.0),
    (Fraction(21, 2), 10, 0.9),  # e = .05: fails only theta = .95 (1 - .95 = .05, strict)
]


def _hand_mra(p, y):
    # independent float-free count via integer percent arithmetic: e < 1 - theta  <=>  100|p-y| < (100 - t)|y|
    if y == 0:
        return 1.0 if p == 0 else 0.0
    return sum(1 for t in range(50, 100, 5) if 100 * abs(Fraction(p) - y) < (100 - t) * abs(Fraction(y))) / 10


@pytest.mark.parametrize("p,y,score", MRA_TABLE)
def test_mra_table(p, y, score):
    assert _hand_mra(p, y) == pytest.approx(score)
    assert mean_relative_accuracy(p, y) == pytest.approx(score)


def test_mra_strict_boundaries_are_exact():
    # e exactly equal to 1 - theta for every threshold: each boundary fails (no float drift)
    for k in range(10):
        e = Fraction(50 - 5 * k, 100)  # .50 .45 ... .05
        p = 20 * (1 + e)
        assert mean_relative_accuracy(p, 20) == pytest.approx(k / 10)


@pytest.mark.parametrize("text,num", [
    ("12", Fraction(12)), ("There are 12 cars.", Fraction(12)), ("1,234 people", Fraction(1234)),
    ("1,2", Fraction(1)), ("3.5 and 4", Fraction(7, 2)), (".5", Fraction(1, 2)), ("-3", Fraction(-3)),
    ("A3 road has 5 lamps", Fraction(5)), ("12cars", Fraction(12)), ("three", None), ("", None), ("none", None),
])
def test_first_number(text, num):
    assert first_number(text) == num


def test_mra_match_results():
    r = mra_match("I counted 11 bicycles", "10")
    assert (r.metric, r.is_correct, r.score, r.prediction) == (MRA, False, 0.8, 11)
    assert r.relative_error == pytest.approx(0.1)
    r = mra_match("7", 7)
    assert (r.is_correct, r.score) == (True, 1.0)
    r = mra_match("0", "0")
    assert (r.is_correct, r.score, r.relative_error) == (True, 1.0, None)
    r = mra_match("there are a few", "4")
    assert (r.is_correct, r.score, r.parsed, r.validation_available) == (False, 0.0, False, True)
    assert "no number" in r.message
    with pytest.raises(ValueError):
        mra_match("3", "many")


# ------------------------------------------------------------- fuzzy_match
VERDICTS = [
    ("is_correct: True", True),
    ("is_correct: false", False),
    ("IS_CORRECT:TRUE", True),
    ("**is_correct**: `false`", False),
    ("is correct = yes", True),
    ("Output format is_correct: True/False.\nThe names differ.\nis_correct: false", False),  # last wins
    ('{"is_correct": true}', True),
    ('```json\n{"is_correct": "no"}\n```', False),
    ('{"verdict": "correct"}', True),
    ("Verdict: incorrect", False),
    ("True.", True),
    ("incorrect", False),
    ("Maybe; I cannot tell.", None),
    ("", None),
    ("The answer is plausible", None),
]


@pytest.mark.parametrize("text,verdict", VERDICTS)
def test_parse_verdict(text, verdict):
    assert parse_verdict(text) is verdict


class ScriptedJudge:
    """A judge replying from a script (records every call)."""

    def __init__(self, model_id, replies, reported=None):
        self.model_id = model_id
        self.replies = list(replies)
        self.reported = reported
        self.calls = []

    def __call__(self, question, reference, answer):
        self.calls.append((question, reference, answer))
        return JudgeVerdict(self.replies.pop(0), self.reported or self.model_id, "v1", prompt_hash())


def test_fuzzy_match_with_judge_records_everything():
    j = ScriptedJudge("openai:gpt-4o-mini-2024-07-18", ["thinking...\nis_correct: true"])
    r = fuzzy_match("Which shop is left of the station?", "Lawson", "the Lawson convenience store", judge=j,
                    model_under_test="anthropic:claude-sonnet-4-5")
    assert (r.metric, r.is_correct, r.score, r.validation_available) == (FUZZY_MATCH, True, 1.0, True)
    assert r.judge.model == "openai:gpt-4o-mini-2024-07-18" and r.judge.model_version == "v1"
    assert r.judge.prompt_hash == prompt_hash(JUDGE_PROMPT_TEMPLATE) and r.judge.parsed
    assert r.judge.raw_verdict.endswith("is_correct: true")
    assert r.offline_score == 0.0  # the offline column disagrees and stays separate
    assert j.calls == [("Which shop is left of the station?", "Lawson", "the Lawson convenience store")]


def test_fuzzy_match_unparsable_verdict_is_recorded_not_scored():
    j = ScriptedJudge("judge-model", ["I am not sure."])
    r = fuzzy_match("q", "Lawson", "Lawson", judge=j, model_under_test="vlm")
    assert (r.is_correct, r.score, r.validation_available) == (None, None, False)
    assert r.judge.parsed is False and r.judge.verdict is None and "unparsable" in r.message
    assert r.offline_score == 1.0


def test_fuzzy_match_offline_fallback_only():
    r = fuzzy_match("q", "The Lawson", "lawson!", judge=None)
    assert (r.score, r.is_correct, r.validation_available, r.offline_score) == (None, None, False, 1.0)
    assert r.offline_metric == "normalised_string_match"
    assert fuzzy_match("q", "Lawson", "FamilyMart").offline_score == 0.0
    assert fuzzy_match("q", "", "").offline_score == 0.0


def test_judge_is_never_the_model_under_test():
    with pytest.raises(JudgeConflictError):
        fuzzy_match("q", "a", "a", judge=ScriptedJudge("openai:gpt-4o-2024-08-06", ["is_correct: true"]),
                    model_under_test="gpt-4o")
    # pinned id differs, but the provider reports the model under test
    with pytest.raises(JudgeConflictError):
        fuzzy_match("q", "a", "a", judge=ScriptedJudge("judge-x", ["is_correct: true"], reported="Qwen/Qwen2.5-VL-7B"),
                    model_under_test="openai-compatible:http://127.0.0.1:8000/v1:qwen2.5-vl-7b")
    with pytest.raises(ValueError):
        fuzzy_match("q", "a", "a", judge=ScriptedJudge("judge-x", ["is_correct: true"]))


@pytest.mark.parametrize("a,b,same", [
    ("openai:gpt-4o", "gpt-4o-2024-08-06", True),
    ("anthropic:claude-3-5-sonnet-20241022", "claude-3-5-sonnet@20240620", True),
    ("models/gemini-2.0-flash", "openai-compatible:https://g.example/v1beta/openai:gemini-2.0-flash", True),
    ("gpt-4o", "gpt-4o-mini", False),
    ("gpt-4o-latest", "GPT-4o", True),
])
def test_same_model(a, b, same):
    assert same_model(a, b) is same


def test_template_judge_and_normalisation():
    seen = {}

    def complete(prompt, max_tokens):
        seen["prompt"], seen["max"] = prompt, max_tokens
        return "is_correct: false", "judge-2025"

    j = TemplateJudge(complete, "judge-model", "2025-01")
    v = j("Q?", "REF", "ANS")
    assert "Question: Q?" in seen["prompt"] and "Reference answer: REF" in seen["prompt"]
    assert "Agent's answer: ANS" in seen["prompt"] and seen["max"] == 1024
    assert (v.text, v.model, v.model_version, v.prompt_hash) == ("is_correct: false", "judge-2025", "2025-01",
                                                                 prompt_hash())
    assert normalise_text("  The  Café-Lawson, Ltd. ") == "café lawson ltd"
    assert normalise_model_id("openai-compatible:http://h:8000/v1:Qwen/Qwen2.5-VL-7B") == "qwen2.5-vl-7b"


# ------------------------------------------------------------ episode score
def test_score_episode_keeps_360cityarena_meanings():
    ok = exact_match("x:1 y:2", "x:1 y:2")
    s = score_episode("ANSWER", ok)
    assert (s["completed_by_answer"], s["is_correct"], s["scored_success"], s["evaluation_score"]) == (True, True, True,
                                                                                                       1.0)
    # non-ANSWER termination: the final-position check may be correct, the score is still 0
    pos = coordinate_match((1.0, 1.0), (0.0, 0.0), 20.0)
    s = score_episode("STEP_LIMIT", pos)
    assert (s["is_correct"], s["scored_success"], s["evaluation_score"]) == (True, False, 0.0)
    assert s["distance_to_goal"] == pytest.approx(math.sqrt(2)) and s["validation_threshold"] == 20.0
    # MRA partial credit: evaluation_score > 0 while scored_success stays false
    s = score_episode("ANSWER", mra_match("11", "10"))
    assert (s["evaluation_metric"], s["evaluation_score"], s["scored_success"]) == (MRA, 0.8, False)
    assert score_episode("STAGNATION", mra_match("10", "10"))["evaluation_score"] == 0.0
    # fuzzy without a judge: the score is missing, the offline column is separate
    s = score_episode("ANSWER", fuzzy_match("q", "Lawson", "lawson"))
    assert (s["evaluation_score"], s["validation_available"], s["offline_score"]) == (None, False, 1.0)
    s = score_episode("AWAY_FROM_GOAL", None)
    assert (s["evaluation_score"], s["is_correct"], s["scored_success"]) == (0.0, None, False)
    j = ScriptedJudge("judge-model", ["is_correct: true"])
    s = score_episode("ANSWER", fuzzy_match("q", "a", "b", judge=j, model_under_test="vlm"))
    assert (s["evaluation_score"], s["judge_model"], s["judge_verdict_parsed"]) == (1.0, "judge-model", True)
