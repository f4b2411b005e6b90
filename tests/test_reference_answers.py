"""Issue 25 item 3: under ``cityarena-v1`` grid and count answers score as 360CityArena's validators score them.

Expected values are worked by hand from the reference's rules (``tasks/validators.py`` at a6ec8ed, restated in
``urbanarena.tasks.reference_answers``): the grid needs whitespace between ``x:N`` and ``y:M`` and is searched
anywhere in the lower-cased answer; a count is the whole answer as one decimal literal. ``urbanarena-v1`` keeps
our forgiving reading, so every case is scored under both ids (reference / ours, as the issue lists them)."""

from __future__ import annotations

import pytest

from arena_util import t_junction
from urbanarena.agents.base import Agent
from urbanarena.agents.vlm.arena_loop import run_arena_episode
from urbanarena.agents.vlm.parsing import parse_arena_reply
from urbanarena.env.arena_env import ActionKind, ArenaAction, NonTextAnswer
from urbanarena.env.protocols import get_protocol
from urbanarena.tasks.families.cityarena import CityArenaFamily
from urbanarena.tasks.reference_answers import reference_count, reference_grid
from urbanarena.tasks.schema import CityRef, Goal, Position, Start, Task


@pytest.fixture(scope="module")
def city():
    return t_junction()


def _task(city, kind, answer=None, goal=None):
    return Task(task_id=f"t/{kind}", family="cityarena", city=CityRef(name=city.name, content_hash=city.content_hash),
                start=Start(node="s", heading_deg=0.0), goals=[goal] if goal else [], instruction="a task",
                answer=answer, extra={"task_kind": kind})


def _score(city, task, said, protocol):
    return CityArenaFamily.make_validator(task, city, protocol)("ANSWER", said, city.xy("s")).score


GRID = [  # answer for expected x:3 y:4 -> (reference, ours)
    ("x:3 y:4", 1.0, 1.0),
    ("X: 3   Y: 4", 1.0, 1.0),
    ("  The cell is x:3\ty:4.  ", 1.0, 1.0),
    ("x:3, y:4", 0.0, 1.0),      # a comma is not whitespace
    ("x=3; y=4", 0.0, 1.0),      # '=' is not ':'
    ("(x:3,y:4)", 0.0, 1.0),
    ("max:3 y:4", 1.0, 0.0),     # the reference reads the x of "max"
    ("x:3 y:5", 0.0, 0.0),
    ("3 4", 0.0, 0.0),
]

COUNT = [  # answer for expected 10 -> (reference, ours); MRA by hand: rel = |p - 10| / 10, 1[rel < 1 - theta]
    ("10", 1.0, 1.0),
    (" 10 ", 1.0, 1.0),
    ("10.0", 1.0, 1.0),
    ("1e1", 1.0, 0.0),           # Decimal reads an exponent; ours takes the first number, 1 -> rel 0.9
    ("1_0", 1.0, 0.0),           # Decimal allows digit separators; ours reads 1
    ("12", 0.6, 0.6),            # rel 0.2 < 1 - theta for theta 0.50..0.75: 6 of 10
    ("about 12", 0.0, 0.6),
    ("3 cars", 0.0, 0.0),        # ours: rel 0.7 < 0.3? no -> 0
    ("1,000", 0.0, 0.0),         # ours reads 1000: rel 99 -> 0
    ("NaN", 0.0, 0.0),
    ("Infinity", 0.0, 0.0),
    ("-10", 0.0, 0.0),           # rel 2
]


@pytest.mark.parametrize("said,ref,ours", GRID)
def test_grid_answers_under_both_readings(city, said, ref, ours):
    task = _task(city, "localization", answer="x:3 y:4")
    assert _score(city, task, said, "cityarena-v1") == ref
    assert _score(city, task, said, "urbanarena-v1") == ours


@pytest.mark.parametrize("said,ref,ours", COUNT)
def test_count_answers_under_both_readings(city, said, ref, ours):
    task = _task(city, "object_count", answer="10")
    assert _score(city, task, said, "cityarena-v1") == pytest.approx(ref)
    assert _score(city, task, said, "urbanarena-v1") == pytest.approx(ours)


def test_the_issue_cases_for_three():
    # the issue's own list: "3 cars" for 3 is 0 under the reference, 1 under ours; "1,000" for 1000 likewise
    assert reference_count("3 cars") is None and reference_count("1,000") is None
    assert reference_count("1e1") == 10 and reference_grid("max:3 y:4") == (3, 4)
    assert reference_grid("x:3, y:4") is None


@pytest.mark.parametrize("said,expected,ref,ours", [("3 cars", "3", 0.0, 1.0), ("1,000", "1000", 0.0, 1.0),
                                                     ("about 12", "10", 0.0, 0.6)])
def test_the_issue_count_cases_scored_under_both_ids(city, said, expected, ref, ours):
    # the issue's list, scored through the family's validator (reference / ours): "3 cars" for 3 and "1,000" for
    # 1000 read as the number by ours only; "about 12" for 10 is MRA 0.6 by ours (rel 0.2: 6 of 10 thresholds)
    task = _task(city, "object_count", answer=expected)
    assert _score(city, task, said, "cityarena-v1") == pytest.approx(ref)
    assert _score(city, task, said, "urbanarena-v1") == pytest.approx(ours)


def test_cityarena_reads_by_reference_and_urbanarena_does_not():
    assert get_protocol("cityarena-v1").params["answer_reading"] == "reference"
    assert "answer_reading" not in get_protocol("urbanarena-v1").params


class Says(Agent):
    name = "says"

    def __init__(self, reply: str):
        super().__init__()
        self.reply = reply

    def reset(self, task, context):
        pass

    def act(self, observation):
        return parse_arena_reply(self.reply, magnitude_out_of_range="default", empty_answer="accept",
                                 reading="reference").action


def test_a_json_number_answer_scores_zero_under_the_reference_in_the_whole_loop(city):
    reply = '{"thought": "", "action": "ANSWER", "memory": "", "answer": 3}'
    parsed = parse_arena_reply(reply, magnitude_out_of_range="default", empty_answer="accept", reading="reference")
    assert isinstance(parsed.action.answer, NonTextAnswer) and parsed.action.answer == "3"
    assert "answer_not_text" in parsed.notes
    lenient = parse_arena_reply(reply, magnitude_out_of_range="default", empty_answer="accept")
    assert not isinstance(lenient.action.answer, NonTextAnswer) and "answer_not_string" in lenient.repairs
    task = _task(city, "object_count", answer="3")
    ref = run_arena_episode(city, Says(reply), task, seed=0, protocol_id="cityarena-v1")
    assert ref["evaluation_score"] == 0.0 and ref["is_correct"] is False
    assert ref["validation"]["parsed"] is False
    ours = run_arena_episode(city, Says(reply), task, seed=0, protocol_id="urbanarena-v1")
    assert ours["evaluation_score"] == 1.0
    # a string "3" is read by both
    text = run_arena_episode(city, Says(reply.replace(": 3}", ': "3"}')), task, seed=0, protocol_id="cityarena-v1")
    assert text["evaluation_score"] == 1.0
    # the reference's .strip() fails for every kind: a navigation ANSWER at the goal with "answer": null scores 0
    lat, lon = city.frame.to_latlon(*city.xy("s"))
    nav = _task(city, "landmark_language", goal=Goal(position=Position(lat=float(lat), lon=float(lon))))
    null = '{"thought": "", "action": "ANSWER", "memory": "", "answer": null}'
    assert run_arena_episode(city, Says(null), nav, seed=0, protocol_id="cityarena-v1")["evaluation_score"] == 0.0
    assert run_arena_episode(city, Says(null.replace("null", '"here"')), nav, seed=0,
                             protocol_id="cityarena-v1")["evaluation_score"] == 1.0


@pytest.mark.parametrize("token,ok", [("W", True), (" W", False), ("W ", False), ("W.", False), ("w", False)])
def test_a_padded_action_token_is_refused_by_the_reference_reading(token, ok):
    reply = '{"thought": "", "action": "%s", "memory": "", "answer": "SMALL"}' % token
    ref = parse_arena_reply(reply, magnitude_out_of_range="default", empty_answer="accept", reading="reference")
    assert (ref.action is not None) is ok
    if not ok:
        assert ref.failure == "reference_refused"
    lenient = parse_arena_reply(reply, magnitude_out_of_range="default", empty_answer="accept")
    assert lenient.action is not None and lenient.action.kind == ActionKind.W
