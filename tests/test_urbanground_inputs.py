"""``vlm-urbanground``'s inputs under ``urbanground-v1`` follow UrbanGround's released agent (issue 25 item 5).

The reference inputs (the protocol's default): the task text in the first turn only, exactly one picture per
turn (the first-person view, or the map in map mode), no simulator state, the text conversation as memory,
``{"observation", "reason", "action": {...}}`` replies re-asked with a correction, and for a question a
separate final-answer request. ``-p inputs=state`` keeps our request (state text, memory, recent actions).

City and helpers: ``test_vlm_urbanground`` (passage fixture, start at fixture (0, 20) facing north, a pure-red
48 x 32 view from a stub observer, the env's 160 x 120 map).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from continuous_util import from_fix
from fakes import FakeOpenAIServer
from test_vlm_urbanground import (  # noqa: F401  (city: fixture)
    MAP_H, MAP_W, PROTOCOL, VIEW_H, VIEW_W, city, close, make_task, new_env, red_observer, replay,
)
from urbanarena.agents.base import AgentContext
from urbanarena.agents.params import AgentParamError, validate_agent_params
from urbanarena.agents.prompts import default_template
from urbanarena.agents.vlm import UrbanGroundVLMAgent
from urbanarena.agents.vlm.urbanground_react import parse_final_answer, parse_react_reply
from urbanarena.tasks.families.urbanground import UrbanGroundFamily
from urbanarena.tasks.metrics import urbanground as ug
from vlm_util import FAST_RETRY, OPENAI_KEY, RED

TURN = default_template("urbanground_ref_turn").text
FIX = default_template("urbanground_ref_correction").text
OPTIONS = ["ahead", "to the right", "behind", "to the left"]


@pytest.fixture(autouse=True)
def _keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)


def text_of(message) -> str:
    c = message["content"]
    return c if isinstance(c, str) else "".join(p["text"] for p in c if p.get("type") == "text")


def turns(rec) -> list[tuple[str, str]]:
    """(role, text) of every non-system message of a recorded request."""
    return [(m["role"], text_of(m)) for m in rec.body["messages"] if m["role"] != "system"]


def react(action: dict, observation: str = "I see the footway", reason: str = "keep going") -> str:
    return json.dumps({"observation": observation, "reason": reason, "action": action})


def agent_for(srv, **kw) -> UrbanGroundVLMAgent:
    return UrbanGroundVLMAgent(f"openai:{srv.base_url}:gpt-4o", retry=FAST_RETRY, timeout_s=5, **kw)


def episode(city, srv, task, *, steps=40, keep_open=False, **kw):
    """Run the agent in a ContinuousEnv; returns (env, actions, observations, agent)."""
    agent = agent_for(srv, **kw)
    env = new_env(city)
    obs, _ = env.reset(seed=0, options=UrbanGroundFamily().env_options(task, city))
    agent.reset(task, AgentContext(city=city, motion=None, seed=0, protocol_id=PROTOCOL,  # type: ignore[arg-type]
                                   task_id=task.task_id))
    actions, observations, done = [], [obs], False
    while not done and len(actions) < steps:
        a = agent.act(obs)
        actions.append(a)
        obs, _, done, _, info = env.step(a)
        agent.record_outcome(info)
        observations.append(obs)
    if not keep_open:
        agent.close()
    return env, actions, observations, agent


#: nested replies and the actions they mean
SCRIPT = [
    (react({"action": "move", "dir": "forward", "seconds": 2.0}), {"action": "move", "dir": "forward", "seconds": 2.0}),
    (react({"action": "open_map"}, "the footway goes on", "check the map"), {"action": "open_map"}),
    (react({"action": "map_zoom", "factor": 0.5}, "a map", "closer"), {"action": "map_zoom", "factor": 0.5}),
    (react({"action": "close_map"}, "the marker", "back to the street"), {"action": "close_map"}),
    (react({"action": "terminate"}, "the end of the footway", "arrived"), {"action": "terminate"}),
]


def test_reference_request_one_picture_no_state_task_once_and_text_conversation(city):
    task = make_task(city)
    with FakeOpenAIServer([r for r, _ in SCRIPT], api_key=OPENAI_KEY) as srv:
        env, actions, observations, agent = episode(city, srv, task)
        log = list(srv.log)
    assert len(log) == 5 and agent.stats["inputs"] == "reference"
    # the nested replies were executed: exactly the trajectory of the same actions applied directly
    want = [a for _, a in SCRIPT]
    assert actions == want and "memory" not in actions[0]
    ref, _, _ = replay(city, task, want)
    assert env.samples == ref.samples and env.counters == ref.counters
    s1 = [s for s in env.samples if s.step == 1 and s.checkpoint][0]
    assert math.isclose(s1.y_m - from_fix(city, 0.0, 20.0)[1], 2.8, abs_tol=1e-6)  # 2 s at 1.4 m/s north
    # exactly one picture per turn: the red view in first-person mode, the env's map in map mode
    modes = [o["mode"] for o in observations[:-1]]
    assert modes == ["first_person", "first_person", "map", "map", "first_person"]
    for rec, obs, mode in zip(log, observations, modes):
        [img] = rec.images
        if mode == "first_person":
            assert (img.width, img.height) == (VIEW_W, VIEW_H) and close(img.mean_rgb, RED)
        else:
            want_rgb = obs["map"].reshape(-1, 3).astype(float).mean(axis=0)
            assert (img.width, img.height) == (MAP_W, MAP_H) and close(img.mean_rgb, want_rgb, tol=2.0)
            assert not close(img.mean_rgb, RED, tol=60.0)
    # the user texts: the task block on the first turn only, then only the turn line
    first = "Task:\nWalk north along the footway, then stop.\n\n" + TURN
    users = [first] + [TURN] * 4
    # turn k: system, then turns 1..k-1 as (user text, raw reply) pairs, then turn k's user text
    for k, rec in enumerate(log):
        expect = []
        for i in range(k):
            expect += [("user", users[i]), ("assistant", SCRIPT[i][0])]
        assert turns(rec) == expect + [("user", users[k])]
        assert sum(1 for m in rec.body["messages"] if isinstance(m["content"], list)
                   for p in m["content"] if p.get("type") == "image_url") == 1  # earlier pictures are not resent
    # no simulator state anywhere in any request: not the start's coordinates, street, footway flag, time
    lat, lon = city.frame.to_latlon(*from_fix(city, 0.0, 20.0))
    for rec in log:
        body = json.dumps(rec.body["messages"])
        for bad in (f"{float(lat):.6f}", f"{float(lon):.6f}", f"{float(lat):.4f}", "position:", "street:",
                    "sidewalk or footway", "[state]", "[memory]", "recent actions", "since the start"):
            assert bad not in body
    system = rec.body["messages"][0]["content"]
    assert system == default_template("urbanground_ref_navigation_system").text
    assert "Walk north" not in system  # the task text is the first turn's, not the system prompt's
    assert agent.stats["trace"][0]["observation"] == "I see the footway"
    assert agent.stats["trace"][0]["thought"] == "keep going"


def test_missing_observation_is_re_asked_with_a_correction_and_counted(city):
    task = make_task(city)
    bad = json.dumps({"reason": "turn", "action": {"action": "look", "yaw": 30}})
    flat = json.dumps({"observation": "o", "reason": "r", "action": "look", "yaw": 30})
    good = react({"action": "look", "yaw": 30}, "a wall", "turn right")
    replies = [bad, flat, good, react({"action": "terminate"}, "done", "stop")]
    with FakeOpenAIServer(replies, api_key=OPENAI_KEY) as srv:
        env, actions, _, agent = episode(city, srv, task)
        log = list(srv.log)
    assert actions == [{"action": "look", "yaw": 30.0}, {"action": "terminate"}]
    assert env.pose().yaw_deg == 30.0 and env.counters["parse_errors"] == 0
    st = agent.stats
    assert st["parse_errors"] == {"missing_observation": 1, "action_not_object": 1}
    assert st["reasks"] == 2 and st["parse_failures"] == 2 and st["requests"] == 4
    assert st["trace"][0]["failures"] == ["missing_observation", "action_not_object"]
    first = "Task:\nWalk north along the footway, then stop.\n\n" + TURN
    assert turns(log[1]) == [("user", first), ("assistant", bad), ("user", FIX)]
    assert turns(log[2]) == [("user", first), ("assistant", bad), ("user", FIX), ("assistant", flat), ("user", FIX)]
    assert len(log[2].images) == 1  # the picture stays on the turn's own message only
    # the next turn remembers the accepted reply only, not the rejected ones
    assert turns(log[3]) == [("user", first), ("assistant", good), ("user", TURN)]


def test_question_gets_a_separate_final_answer_request_after_terminate(city):
    task = make_task(city, options=OPTIONS, answer="B", instruction="Where is the bench?")
    final = json.dumps({"answer": "B", "reason": "the bench was on my right"})
    replies = [react({"action": "look", "yaw": 90}, "a road ahead", "look right"),
               react({"action": "terminate", "answer": "C"}, "a bench", "seen enough"),  # the answer here is ignored
               final]
    with FakeOpenAIServer(replies, api_key=OPENAI_KEY) as srv:
        env, actions, _, agent = episode(city, srv, task)
        log = list(srv.log)
    assert actions == [{"action": "look", "yaw": 90.0}, {"action": "terminate", "answer": "B"}]
    assert len(log) == 3 and env.done and env.counters["steps"] == 2
    q = "Task:\nWhere is the bench?\nA. ahead\nB. to the right\nC. behind\nD. to the left\n\n" + TURN
    ask = ('Exploration is over. Answer the task from the final screenshot attached here and everything in this '
           'conversation.\n\nReply with exactly one JSON object and no Markdown or other text:\n'
           '{"answer": "A|B|C|D", "reason": "a short reason based on what you saw while exploring"}')
    assert turns(log[2]) == [("user", q), ("assistant", replies[0]), ("user", TURN), ("assistant", replies[1]),
                             ("user", ask)]
    [img] = log[2].images
    assert (img.width, img.height) == (VIEW_W, VIEW_H) and close(img.mean_rgb, RED)  # the final screen
    assert log[0].body["messages"][0]["content"] == default_template("urbanground_ref_question_system").text
    assert "terminate with its answer" not in json.dumps(log[0].body)  # our task prompt's answer line is not sent
    st = agent.stats
    assert st["final_answer_requests"] == 1 and st["final_answers"] == 1 and st["requests"] == 3
    assert st["trace"][1]["final_answer"] == {"answer": "B", "reason": "the bench was on my right"}
    m = UrbanGroundFamily().score_trajectory(task, city, PROTOCOL, ug.Trajectory.from_samples(env.samples),
                                             answer=actions[-1]["answer"], steps=2)
    assert m["answer_correct"] == 1.0 and m["sr"] == 1.0


def test_unusable_final_answer_leaves_the_question_unanswered(city):
    task = make_task(city, options=OPTIONS, answer="B", instruction="Where is the bench?")
    replies = [react({"action": "terminate"}, "a bench", "done"), json.dumps({"answer": "the right one", "reason": "x"})]
    with FakeOpenAIServer(replies, api_key=OPENAI_KEY) as srv:
        env, actions, _, agent = episode(city, srv, task)
    assert actions == [{"action": "terminate"}]
    assert agent.stats["parse_errors"] == {"bad_answer": 1} and agent.stats["final_answers"] == 0
    m = UrbanGroundFamily().score_trajectory(task, city, PROTOCOL, ug.Trajectory.from_samples(env.samples),
                                             answer=None, steps=1)
    assert m["answer_correct"] == 0.0


def test_turn_limit_asks_the_final_answer_after_the_last_step(city):
    """The exploration runs out (here after 2 steps): every step's action is executed, then ``final_answer``
    sends the final-answer request with the final screen and the whole conversation."""
    task = make_task(city, options=OPTIONS, answer="D", instruction="Where is the bench?")
    replies = [react({"action": "look", "yaw": -90}, "a road", "look left"),
               react({"action": "look", "yaw": -90}, "a wall", "look left again"),
               json.dumps({"answer": "Option D", "reason": "it was on the left"})]
    with FakeOpenAIServer(replies, api_key=OPENAI_KEY) as srv:
        env, actions, observations, agent = episode(city, srv, task, steps=2, keep_open=True)
        answer = agent.final_answer(observations[-1])
        agent.close()
        log = list(srv.log)
    assert actions == [{"action": "look", "yaw": -90.0}, {"action": "look", "yaw": -90.0}]
    assert answer == "D" and len(log) == 3 and env.pose().yaw_deg == 180.0  # both looks executed
    assert [r for r, _ in turns(log[2])] == ["user", "assistant", "user", "assistant", "user"]
    assert turns(log[2])[-1][1].startswith("Exploration is over.")
    assert agent.stats["trace"][-1]["notes"] == ["limit_final_answer"] and agent.stats["final_answers"] == 1
    # a navigation task has nothing to answer; state inputs only answer with terminate
    nav = make_task(city)
    with FakeOpenAIServer([react({"action": "look", "yaw": 10})], api_key=OPENAI_KEY) as srv:
        _, _, obs, a2 = episode(city, srv, nav, steps=1, keep_open=True)
        assert a2.final_answer(obs[-1]) is None and len(srv.log) == 1
    with FakeOpenAIServer([json.dumps({"action": "look", "yaw": 10})], api_key=OPENAI_KEY) as srv:
        _, _, obs, a3 = episode(city, srv, task, steps=1, inputs="state", keep_open=True)
        assert a3.final_answer(obs[-1]) is None and len(srv.log) == 1


def test_the_runner_asks_the_final_answer_when_the_step_limit_ends_a_question(tmp_path):
    """``urbanarena run --max-steps 2`` on an L1 question whose model never terminates: the runner stops at
    the limit (``max_steps``), asks the agent once more, and scores the answer it gives."""
    from contextlib import closing

    from typer.testing import CliRunner

    from generate_util import fixture_city
    from urbanarena.cli.main import app
    from urbanarena.render.scene3d.context import gl_unavailable_reason
    from urbanarena.runner.store import Store
    from urbanarena.tasks.generators.urbanground import generate_urbanground_suite, save_urbanground_suite
    from urbanarena.world.city_io import save_city

    if gl_unavailable_reason():
        pytest.skip(f"GL renderer unavailable: {gl_unavailable_reason()}")
    city = fixture_city()
    suite = generate_urbanground_suite(city, per_family=1, seed=0, subfamilies=["l1_orientation"])
    [task] = suite.task_file.tasks
    right = str(task.answer)

    def script(body, n):
        if "Exploration is over" in json.dumps(body["messages"]):
            return json.dumps({"answer": right, "reason": "I looked around"})
        return react({"action": "look", "yaw": 45})

    city_dir = save_city(city, tmp_path / "city")
    task_file = save_urbanground_suite(suite, tmp_path / "tasks.json")
    with FakeOpenAIServer(script, api_key=OPENAI_KEY) as srv:
        res = CliRunner().invoke(app, ["run", "--city", str(city_dir), "--tasks", str(task_file), "--agent",
                                       "vlm-urbanground", "--model", f"openai:{srv.base_url}:gpt-4o", "--max-steps",
                                       "2", "--out", str(tmp_path / "out")], catch_exceptions=False)
        log = list(srv.log)
    assert res.exit_code == 0, res.output
    assert len(log) == 3  # two looks, then the final answer
    [db] = list((tmp_path / "out").rglob("episodes.sqlite"))
    with closing(Store(db, readonly=True)) as store:
        [row] = store.rows()
    assert row["stop_reason"] == "max_steps" and row["steps"] == 2 and row["details"]["answer"] == right
    assert row["metrics"]["answer_correct"] == 1.0 and row["agent_stats"]["final_answers"] == 1


def test_a_notice_is_shown_once_on_its_turn_and_then_kept_by_the_conversation(city):
    """Hand-built observations (the env's ``text.notices`` lists every notice delivered so far)."""
    task = make_task(city)
    view = red_observer(city, None)
    note = "Notice: the Arcade is closed from now on."

    def obs(step, notices):
        return {"mode": "first_person", "view": view, "map": None, "reference_images": [],
                "text": {"task": "t", "notices": notices}, "step": step}

    replies = [react({"action": "look", "yaw": 10})] * 3
    with FakeOpenAIServer(replies, api_key=OPENAI_KEY) as srv:
        agent = agent_for(srv)
        agent.reset(task, AgentContext(city=city, motion=None, seed=0, protocol_id=PROTOCOL))  # type: ignore[arg-type]
        for k, notices in enumerate([[], [note], [note]]):
            agent.act(obs(k, notices))
        log = list(srv.log)
        agent.close()
    assert turns(log[1])[-1] == ("user", note + "\n\n" + TURN)
    assert turns(log[2])[-1] == ("user", TURN)
    assert turns(log[2])[2] == ("user", note + "\n\n" + TURN)  # remembered in the conversation


def test_inputs_state_restores_our_request(city):
    task = make_task(city)
    with FakeOpenAIServer(['{"action": "move", "dir": "forward", "seconds": 1.0, "memory": "m"}',
                           '{"action": "terminate"}'], api_key=OPENAI_KEY) as srv:
        env, actions, _, agent = episode(city, srv, task, inputs="state")
        log = list(srv.log)
    assert [a["action"] for a in actions] == ["move", "terminate"] and actions[0]["memory"] == "m"
    assert agent.stats["inputs"] == "state"
    lat, lon = city.frame.to_latlon(*from_fix(city, 0.0, 20.0))
    first = turns(log[0])
    assert [r for r, _ in first] == ["user"] and first[0][1].startswith(
        f"[state]\nposition: lat {float(lat):.6f}, lon {float(lon):.6f}")
    assert "Your current first-person view:" in first[0][1] and len(log[0].images) == 1
    assert [r for r, _ in turns(log[1])] == ["user"]  # no conversation kept: memory travels in the text
    assert "[memory]\nm\n" in turns(log[1])[0][1]
    assert default_template("urbanground_system").render(task=UrbanGroundFamily().prompt(task)) == \
        log[0].body["messages"][0]["content"]
    ref = UrbanGroundVLMAgent("openai:gpt-4o")
    assert ref.config() != agent.config() and ref.config()["inputs"] == "protocol"
    assert agent.config()["inputs"] == "state"


def test_inputs_parameter_validates():
    assert validate_agent_params("vlm-urbanground", {"inputs": "state"}) == {"inputs": "state"}
    assert validate_agent_params("vlm-urbanground", {"inputs": "reference"}) == {"inputs": "reference"}
    with pytest.raises(AgentParamError, match="inputs"):
        validate_agent_params("vlm-urbanground", {"inputs": "privileged"})
    with pytest.raises(ValueError, match="inputs must be one of reference, state"):
        UrbanGroundVLMAgent("openai:gpt-4o", inputs="privileged")


def test_reference_reply_parser_rules():
    ok = parse_react_reply('{"observation": "o", "reason": "r", "action": {"look": {"yaw": 20}}}')
    assert ok.ok and ok.action == {"action": "look", "yaw": 20.0} and ok.repairs == ["keyed_action"]
    ty = parse_react_reply('{"observation": "o", "reason": "r", "action": {"type": "jump"}}')
    assert ty.ok and ty.action == {"action": "jump"} and "type_field" in ty.repairs
    orbit = parse_react_reply('{"observation": "o", "reason": "r", "action": {"action": "map_orbit", "yaw": 5, '
                              '"pitch": 0}}', mode="map")
    assert orbit.ok and orbit.action == {"action": "map_orbit", "yaw": 5.0, "pitch": 0.0}
    assert parse_react_reply('{"observation": "o", "reason": "r", "action": {"action": "map_pan"}}').failure == \
        "wrong_mode"
    assert parse_react_reply('{"observation": " ", "reason": "r", "action": {"action": "jump"}}').failure == \
        "missing_observation"
    assert parse_react_reply('{"observation": "o", "action": {"action": "jump"}}').failure == "missing_reason"
    assert parse_react_reply('{"observation": "o", "reason": "r", "action": {"action": "move", "dir": "up"}}'
                             ).failure == "invalid_field"
    assert parse_react_reply("no json here").failure == "no_json"
    assert parse_final_answer('{"answer": "option c", "reason": "x"}').answer == "C"
    assert parse_final_answer('{"answer": "E", "reason": "x"}').failure == "bad_answer"
    assert parse_final_answer('{"answer": "C", "reason": "x"}', letters="AB").failure == "bad_answer"
    assert parse_final_answer('{"answer": "A"}').failure == "missing_reason"
    assert parse_final_answer('```json\n{"answer": "b", "reason": "x"}\n```').answer == "B"


def test_reference_templates_can_be_overridden(city, tmp_path):
    (tmp_path / "urbanground_ref_turn.txt").write_text("Pick one action.", encoding="utf-8")
    task = make_task(city)
    with FakeOpenAIServer([react({"action": "terminate"})], api_key=OPENAI_KEY) as srv:
        agent = agent_for(srv, prompt_templates=str(tmp_path))
        assert agent.config()["prompt_hash"] != agent_for(srv).config()["prompt_hash"]
        env = new_env(city)
        obs, _ = env.reset(seed=0, options=UrbanGroundFamily().env_options(task, city))
        agent.reset(task, AgentContext(city=city, motion=None, seed=0, protocol_id=PROTOCOL))  # type: ignore[arg-type]
        assert agent.act(obs) == {"action": "terminate"}
        assert turns(srv.log[0]) == [("user", "Task:\nWalk north along the footway, then stop.\n\nPick one action.")]
        agent.close()
    assert np.asarray(obs["view"]).shape == (VIEW_H, VIEW_W, 3)
