"""Every registered env refuses an action outside its action space (issue 29, item 7).

Before: Graph-v1 ran ``-1`` as STOP and ``65``/``±1e9``/``2**62`` as invalid moves, all three envs truncated
``2.5`` to ``2``, and Continuous-v1 (json) parsed a 100,000-character action past its ``Text(512)`` space
(``'[' * 50000`` raised ``RecursionError``). The oracle for integers and text is Gymnasium's own
``Discrete.contains`` / ``Text.contains``; we refuse bools, which ``Discrete.contains`` lets through.
"""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import make_city
from urbanarena.gym.common import CHARSET, GymActionError, discrete_action, text_action
from urbanarena.gym.continuous import MACROS, MAX_ACTION_TEXT, ContinuousTaskEnv

N = 65


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.integers(min_value=-2**70, max_value=2**70), st.integers(min_value=-3, max_value=N + 3)))
def test_integers_match_gymnasium_discrete(a):
    space = spaces.Discrete(N)
    inside = 0 <= a < N
    assert inside == (-2**63 <= a < 2**63 and space.contains(a))  # the independent oracle agrees on ints
    if inside:
        assert discrete_action(a, N, "env") == a
        assert discrete_action(np.int64(a), N, "env") == a
        assert discrete_action(np.array(a), N, "env") == a
    else:
        with pytest.raises(GymActionError, match=rf"outside Discrete\({N}\)"):
            discrete_action(a, N, "env")


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_floats_refused(x):
    for v in (x, np.float64(x), np.array(x)):
        with pytest.raises(GymActionError, match="not a member"):
            discrete_action(v, N, "env")


@pytest.mark.parametrize("v", [True, False, np.bool_(True), "3", None, [1], np.array([1]), 2.0, np.array(1.0)])
def test_other_types_refused(v):
    with pytest.raises(GymActionError):
        discrete_action(v, N, "env")


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=600), st.text(alphabet="[{\"a:1, ]}", min_size=500, max_size=530)))
def test_text_matches_gymnasium_text(s):
    space = spaces.Text(MAX_ACTION_TEXT, min_length=0, charset=CHARSET)
    if space.contains(s):
        assert text_action(s, MAX_ACTION_TEXT, "env") == s
    else:
        with pytest.raises(GymActionError):
            text_action(s, MAX_ACTION_TEXT, "env")


def _graph_env():
    from urbanarena.gym.graph import GraphTaskEnv
    from urbanarena.tasks.schema import Task

    city = make_city({"a": (60.0, 24.0), "b": (60.0001, 24.0), "c": (60.0002, 24.0)},
                     [("a", "b", 0, 11), ("b", "a", 180, 11), ("b", "c", 0, 11), ("c", "b", 180, 11)])
    task = Task(task_id="t1", family="cityseeker", city={"name": "toy"}, start={"node": "a", "heading_deg": 0},
                goals=[{"node": "c"}], instruction="go north")
    return GraphTaskEnv(city=city, split=None, tasks=[task])


@pytest.mark.parametrize("bad", [-1, 65, 10**9, -10**9, 2**62, 2.5, 0.0, True, np.float32(1.0)])
def test_graph_env_refuses_and_goes_on(bad):
    env = _graph_env()
    env.reset(seed=0)
    with pytest.raises(GymActionError):
        env.step(bad)
    _, _, terminated, truncated, info = env.step(0)  # the episode is untouched: a real move still runs
    assert not terminated and not truncated and info["node"] == "b"


class _NoStep:
    def step(self, action):  # pragma: no cover - reached only if validation let an action through
        raise AssertionError(f"env.step reached with {action!r}")


@pytest.mark.parametrize("bad", [-1, 10**6, 2.5, 1.0, True])
def test_arena_env_refuses_before_stepping(bad):
    from urbanarena.gym.arena import ArenaTaskEnv

    env = ArenaTaskEnv.__new__(ArenaTaskEnv)
    env.env, env._done = _NoStep(), False
    with pytest.raises(GymActionError):
        env.step(bad)


@pytest.mark.parametrize("bad", ["[" * 50000, "{}" + " " * MAX_ACTION_TEXT, 3, b"{}", "{\"a\": \"\U0001f600\"}"])
def test_continuous_json_refuses(bad):
    env = ContinuousTaskEnv.__new__(ContinuousTaskEnv)
    env.action_kind = "json"
    with pytest.raises(GymActionError):
        env.decode_action(bad)


def test_continuous_json_inside_space_parses():
    env = ContinuousTaskEnv.__new__(ContinuousTaskEnv)
    env.action_kind = "json"
    assert env.decode_action('{"action": "stop"}') == {"action": "stop"}
    assert env.decode_action("[" * 400)["action"] == "parse_error"  # inside Text(512): parsed, not JSON


@pytest.mark.parametrize("bad", [-1, len(MACROS), 1.5, False])
def test_continuous_discrete_refuses(bad):
    env = ContinuousTaskEnv.__new__(ContinuousTaskEnv)
    env.action_kind = "discrete"
    with pytest.raises(GymActionError):
        env.decode_action(bad)
