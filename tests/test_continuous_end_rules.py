"""Issue 25 item 4: continuous episodes end by one rule (``env/continuous/ending.py``, ``EpisodeEnd``) in
``urbanarena run`` (:class:`~urbanarena.runner.continuous_episode.ContinuousEpisodeRunner`) and in
``urbanarena/Continuous-v1`` (:class:`~urbanarena.gym.continuous.ContinuousTaskEnv`): the same scripted
actions end at the same step, with the same stop reason, at the same simulated time, with the same score.

Hand-worked times (``ContinuousConfig`` defaults): a move lasts its ``seconds``, a look 0.5 s, terminate 0 s.

City: the needs fixture of ``test_urbanground_scoring`` (Mainstreet y = 0, x = 0 .. 200)."""

from __future__ import annotations

import json

import pytest

from test_urbanground_scoring import FAM, city, task  # noqa: F401  (city: fixture)
from urbanarena.agents.base import Agent
from urbanarena.env.continuous.ending import EpisodeEnd
from urbanarena.gym.common import GymConfigError
from urbanarena.gym.continuous import ContinuousTaskEnv
from urbanarena.runner.continuous_episode import ContinuousEpisodeRunner

OPTIONS = ["Cafe Uno", "City Bank", "Corner Shop", "Nord Cafe"]
MOVE_1 = {"action": "move", "dir": "forward", "seconds": 1.0}
MOVE_2 = {"action": "move", "dir": "forward", "seconds": 2.0}
LOOK = {"action": "look", "yaw": 10}


def scripted(actions):
    """An agent class that plays ``actions`` in order, then repeats the last one."""

    class Script(Agent):
        name = "script"
        action_style = "continuous"

        def reset(self, task, context):
            self.i = 0

        def act(self, observation):
            a = actions[min(self.i, len(actions) - 1)]
            self.i += 1
            return dict(a)

    return Script


def via_runner(city, t, actions, max_steps):
    row = ContinuousEpisodeRunner(city, scripted(actions), "script").run(t, 0, "urbanground-v1", max_steps)
    return {"steps": row["steps"], "stop_reason": row["stop_reason"], "sim_time_s": row["details"]["sim_time_s"],
            "answer": row["details"]["answer"], "metrics": row["metrics"]}


def via_gym(city, t, actions, max_steps):
    env = ContinuousTaskEnv(city=city, split=None, tasks=[t], family=t.category, max_steps=max_steps)
    env.reset(seed=0, options={"task": t})
    n, term, trunc, info = 0, False, False, {}
    while not (term or trunc):
        a = actions[min(n, len(actions) - 1)]
        _, _, term, trunc, info = env.step(json.dumps(a))
        n += 1
        assert n <= max_steps, "the Gym env ran past the step limit"
    with pytest.raises(RuntimeError):  # the episode is over: no further step
        env.step(json.dumps(MOVE_2))
    assert trunc == (info["stop_reason"] == "max_steps") and term != trunc
    return {"steps": n, "stop_reason": info["stop_reason"], "sim_time_s": env.env.sim_time_s,
            "answer": env.ends.answer(info["stop_reason"], actions[min(n - 1, len(actions) - 1)]),
            "metrics": env.score}


def both(city, t, actions, max_steps):
    r, g = via_runner(city, t, actions, max_steps), via_gym(city, t, actions, max_steps)
    assert g == r
    return r


def l1(city, **extra):
    return task(city, "fx/q", "l1_active_exploration", (0, 0), answer="A", extra={"options": OPTIONS, **extra})


def test_rule_order_hand_worked():
    e = EpisodeEnd(max_steps=30, time_window_s=60.0)
    assert e.reason(29, 58.0) is None
    assert e.reason(30, 60.0) == "time_window"  # both hold: the window is named first
    assert e.reason(30, 59.5) == "max_steps"
    assert e.reason(12, 61.0) == "time_window"
    assert e.reason(30, 60.0, "terminate") == "terminate"  # the environment's own ending comes first
    assert e.reason(5, 3.0, "closure_violation") == "closure_violation"
    assert EpisodeEnd(max_steps=100).reason(99, 1e6) is None  # no window
    assert EpisodeEnd(max_steps=0).reason(0, 0.0) == "max_steps"
    assert EpisodeEnd.answer("terminate", {"action": "terminate", "answer": "B"}) == "B"
    assert EpisodeEnd.answer("time_window", {"action": "terminate", "answer": "B"}) is None
    assert EpisodeEnd.truncated("max_steps") and not EpisodeEnd.truncated("time_window")
    with pytest.raises(ValueError):
        EpisodeEnd(max_steps=-1)


def test_l1_window_ends_both_at_step_31_and_61_s(city):
    # 1 s, then 2 s per step: after step k the clock reads 1 + 2 (k - 1) s; the first k with that >= 60 is
    # k = 31 (61 s). The step limit (100) is far off.
    t = l1(city)
    assert FAM.episode_end(t, 100) == EpisodeEnd(100, 60.0)
    r = both(city, t, [MOVE_1, MOVE_2], 100)
    assert (r["steps"], r["stop_reason"], r["answer"]) == (31, "time_window", None)
    assert r["sim_time_s"] == pytest.approx(61.0)
    assert r["metrics"]["answer_correct"] == 0.0


def test_step_limit_ends_both_at_step_100(city):
    # looks of 0.5 s: 100 steps take 50 s, so on an L1 question the 60 s window (120 looks) never closes
    for t in (l1(city), task(city, "fx/n", "l2_short_range", (0, 0), [(60, 0)])):
        r = both(city, t, [LOOK], 100)
        assert (r["steps"], r["stop_reason"]) == (100, "max_steps")
        assert r["sim_time_s"] == pytest.approx(50.0)


def test_window_and_limit_on_the_same_step_is_the_window(city):
    # 2 s moves with a 30-step limit: step 30 reaches 60 s as well; both name the window
    r = both(city, l1(city), [MOVE_2], 30)
    assert (r["steps"], r["stop_reason"]) == (30, "time_window")
    assert r["sim_time_s"] == pytest.approx(60.0)


def test_terminate_with_answer_before_the_window(city):
    # 3 moves of 2 s (6 s), then terminate (0 s) answering "A": step 4 at 6 s, answer right
    r = both(city, l1(city), [MOVE_2, MOVE_2, MOVE_2, {"action": "terminate", "answer": "A"}], 100)
    assert (r["steps"], r["stop_reason"], r["answer"]) == (4, "terminate", "A")
    assert r["sim_time_s"] == pytest.approx(6.0)
    assert r["metrics"]["answer_correct"] == 1.0


def test_a_task_window_from_extra(city):
    # extra.exploration_window_s = 5 on a navigation task: 2 s moves reach 6 s >= 5 at step 3
    t = task(city, "fx/w", "l2_short_range", (0, 0), [(150, 0)], extra={"exploration_window_s": 5})
    r = both(city, t, [MOVE_2], 100)
    assert (r["steps"], r["stop_reason"]) == (3, "time_window")
    assert r["sim_time_s"] == pytest.approx(6.0)


def test_gym_refuses_a_step_limit_below_one(city):
    with pytest.raises(GymConfigError):
        ContinuousTaskEnv(city=city, split=None, tasks=[l1(city)], family="l1_active_exploration", max_steps=0)
