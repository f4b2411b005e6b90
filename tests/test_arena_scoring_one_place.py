"""Issue 15, defect 8: one place decides how an arena task is scored.

``run_arena_episode`` without an explicit validator must score exactly as the runner does (the
``cityarena`` family's ``make_validator``): the kind's default metric when ``answer_metric`` is unset,
the metric aliases, and the protocol's own coordinate radii. The agent answers at once, so the final
position is the start node s (0, -20) of the T junction."""

from __future__ import annotations

import pytest

from arena_util import t_junction
from urbanarena.agents.base import Agent
from urbanarena.agents.vlm.arena_loop import run_arena_episode
from urbanarena.env.arena_env import ActionKind, ArenaAction
from urbanarena.env.protocols import PROTOCOLS
from urbanarena.tasks.families.cityarena import CityArenaFamily
from urbanarena.tasks.schema import CityRef, Goal, Position, Start, Task


class AnswerAtOnce(Agent):
    name = "answer-at-once"

    def __init__(self, answer: str):
        super().__init__()
        self.answer = answer

    def reset(self, task, context):
        pass

    def act(self, observation):
        return ArenaAction(ActionKind.ANSWER, answer=self.answer)


@pytest.fixture(scope="module")
def city():
    return t_junction()


def _task(city, kind, *, answer=None, metric=None, goal=None):
    return Task(task_id=f"t/{kind}", family="cityarena", city=CityRef(name=city.name, content_hash=city.content_hash),
                start=Start(node="s", heading_deg=0.0), goals=[goal] if goal else [], instruction="a task",
                answer=answer, answer_metric=metric, extra={"task_kind": kind})


def _both(city, task, said, protocol="cityarena-v1"):
    loop = run_arena_episode(city, AnswerAtOnce(said), task, seed=0, protocol_id=protocol)
    fam = CityArenaFamily.make_validator(task, city, protocol)("ANSWER", said, city.xy("s"))
    return loop, fam


def test_kind_default_metric_is_scored(city):
    task = _task(city, "localization", answer="x:1 y:2")  # answer_metric unset: the kind's exact_match
    loop, fam = _both(city, task, "x:1 y:2")
    assert fam.is_correct and loop["is_correct"] is True and loop["evaluation_score"] == 1.0
    assert loop["validation"]["metric"] == "exact_match"


def test_metric_alias_is_scored(city):
    task = _task(city, "object_count", answer="7", metric="mra")
    loop, fam = _both(city, task, "7")
    assert fam.is_correct and loop["is_correct"] is True and loop["evaluation_score"] == pytest.approx(fam.score)


def test_the_protocols_radius_decides(city, monkeypatch):
    # goal 15 m north of s: inside the published 20 m map-navigation radius, outside a 12 m one
    lat, lon = city.frame.to_latlon(0.0, -5.0)
    task = _task(city, "map_navigation", goal=Goal(position=Position(lat=float(lat), lon=float(lon))))
    loop, fam = _both(city, task, "here")
    assert fam.is_correct and loop["is_correct"] is True
    monkeypatch.setitem(PROTOCOLS["cityarena-v1"].params, "map_navigation_radius_m", 12.0)
    loop, fam = _both(city, task, "here")
    assert not fam.is_correct and loop["is_correct"] is False
    assert loop["validation"]["distance_m"] == pytest.approx(15.0, abs=1e-6)
