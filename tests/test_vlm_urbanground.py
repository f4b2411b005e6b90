"""The UrbanGround VLM agent (``vlm-urbanground``) driven by scripted fake servers through the real openai SDK.

City: the passage fixture of ``continuous_util`` (footway x = 0 from (0, 0) to (0, 40), the covered
Arcade along y = 40, a bench at (10, 20), buildings B1-B3; fixture metres). The agent starts at
fixture (0, 20) facing north. The first-person view comes from a stub observer that returns a
pure-red 48 x 32 image (no OpenGL); the map is the env's own (160 x 120). Each test runs the
agent's actions in one :class:`ContinuousEnv` and, where a trajectory is compared, applies the
same actions -- written out here, not taken from the agent -- to a second env.
"""

from __future__ import annotations

import json
import math
from contextlib import closing

import numpy as np
import pytest
from typer.testing import CliRunner

from continuous_util import from_fix, passage_city
from fakes import FakeOpenAIServer
from urbanarena.agents.base import AgentContext
from urbanarena.agents.prompts import URBANGROUND_TEMPLATES, default_template
from urbanarena.agents.registry import AGENTS, make_agent
from urbanarena.agents.vlm import UrbanGroundVLMAgent
from urbanarena.agents.vlm.urbanground import parse_urbanground_reply
from urbanarena.env.continuous import ContinuousConfig, ContinuousEnv
from urbanarena.errors import NoImageryError, ProtocolError
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.runner.store import Store
from urbanarena.tasks.families.urbanground import UrbanGroundFamily
from urbanarena.tasks.metrics import urbanground as ug
from urbanarena.tasks.schema import CityRef, Start, Task
from vlm_util import FAST_RETRY, OPENAI_KEY, RED, system_text, user_texts

VIEW_W, VIEW_H = 48, 32
MAP_W, MAP_H = 160, 120
CFG = ContinuousConfig(map_width_px=MAP_W, map_height_px=MAP_H)
PROTOCOL = "urbanground-v1"


@pytest.fixture(autouse=True)
def _keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)


@pytest.fixture(scope="module")
def city():
    return passage_city()


def red_observer(city, pose, dynamic=None):
    img = np.zeros((VIEW_H, VIEW_W, 3), np.uint8)
    img[..., 0] = 255
    return img


def make_task(city, *, options=None, answer=None, instruction="Walk north along the footway, then stop.") -> Task:
    lat, lon = city.frame.to_latlon(*from_fix(city, 0.0, 20.0))
    extra = {"level": "L1", "kind": "choice", "options": options} if options else {"level": "L2", "kind": "navigation"}
    return Task(task_id="ug/test/1", family="urbanground", city=CityRef(name=city.name, content_hash=city.content_hash),
                start=Start(position={"lat": float(lat), "lon": float(lon)}, heading_deg=0.0),
                instruction=instruction, answer=answer, extra=extra,
                category="l1_orientation" if options else "l2_short_range")


def new_env(city, observer=red_observer) -> ContinuousEnv:
    return ContinuousEnv(city, CFG, observer=observer)


def run_agent(city, srv, task, *, max_steps=40, observer=red_observer, **agent_kw):
    """The agent's episode with the env's own reset options for the task; returns (env, actions, infos, agent).
    These tests check our state inputs (``inputs=state``); the reference inputs, ``urbanground-v1``'s
    default, are ``test_urbanground_inputs.py``'s."""
    agent_kw.setdefault("inputs", "state")
    agent = UrbanGroundVLMAgent(f"openai:{srv.base_url}:gpt-4o", retry=FAST_RETRY, timeout_s=5, **agent_kw)
    env = new_env(city, observer)
    obs, info = env.reset(seed=0, options=UrbanGroundFamily().env_options(task, city))
    agent.reset(task, AgentContext(city=city, motion=None, seed=0, protocol_id=PROTOCOL,  # type: ignore[arg-type]
                                   task_id=task.task_id))
    actions, infos, observations = [], [], [obs]
    done = False
    while not done and len(actions) < max_steps:
        a = agent.act(obs)
        actions.append(a)
        obs, _, done, _, info = env.step(a)
        agent.record_outcome(info)
        infos.append(info)
        observations.append(obs)
    agent.close()
    return env, actions, infos, agent, observations


def replay(city, task, actions):
    """The same actions applied directly to a fresh env; returns (env, observations, infos)."""
    env = new_env(city)
    obs, _ = env.reset(seed=0, options=UrbanGroundFamily().env_options(task, city))
    out, infos = [obs], []
    for a in actions:
        obs, _, done, _, info = env.step(a)
        out.append(obs)
        infos.append(info)
        if done:
            break
    return env, out, infos


def close(rgb, want, tol=6.0):
    return bool(np.allclose(rgb, want, atol=tol))


# ------------------------------------------------------------------ the script of the trajectory test
#: (the reply text the model sends, the action as UrbanGround's JSON that it means)
SCRIPT = [
    (json.dumps({"thought": "the footway runs north", "action": "move", "dir": "forward", "seconds": 2.0,
                 "memory": "Start on the west footway, facing north."}),
     {"action": "move", "dir": "forward", "seconds": 2.0}),
    ('```json\n{"thought": "run and bear right", "action": "sprint", "dir": "forward", "seconds": 1.5, '
     '"yaw_rate": 30}\n```', {"action": "sprint", "dir": "forward", "seconds": 1.5, "yaw_rate": 30.0}),
    ('{"Action": "LOOK", "yaw": 90, "pitch": -10, "memory": ""}', {"action": "look", "yaw": 90.0, "pitch": -10.0}),
    ('{"action": "move", "dir": "left", "seconds": "0.8"}', {"action": "move", "dir": "left", "seconds": 0.8}),
    # out of range: passed on as given, the env clamps seconds to 2.0 and records it
    (json.dumps({"action": "move", "dir": "backward", "seconds": 5.0}),
     {"action": "move", "dir": "backward", "seconds": 5.0}),
    (json.dumps({"thought": "where am I?", "action": "open_map"}), {"action": "open_map"}),
    (json.dumps({"action": "map_pan", "east": 20, "north": -10}), {"action": "map_pan", "east": 20.0, "north": -10.0}),
    (json.dumps({"action": "map_zoom", "factor": 0.5}), {"action": "map_zoom", "factor": 0.5}),
    (json.dumps({"action": "map_select", "x": 0.25, "y": 0.75}), {"action": "map_select", "x": 0.25, "y": 0.75}),
    (json.dumps({"action": "close_map"}), {"action": "close_map"}),
    (json.dumps({"action": "sprint", "dir": "right", "seconds": 1.0, "pitch_rate": 20}),
     {"action": "sprint", "dir": "right", "seconds": 1.0, "pitch_rate": 20.0}),
    (json.dumps({"thought": "done", "action": "terminate"}), {"action": "terminate"}),
]


def test_scripted_actions_give_the_trajectory_of_the_same_actions_applied_directly(city):
    task = make_task(city)
    with FakeOpenAIServer([r for r, _ in SCRIPT], api_key=OPENAI_KEY) as srv:
        env, actions, infos, agent, _ = run_agent(city, srv, task)
        log = list(srv.log)
    want = [a for _, a in SCRIPT]
    # what the agent sent: the meant action, plus its memory (kept across the blank memory of step 3)
    assert [{k: v for k, v in a.items() if k != "memory"} for a in actions] == want
    mem = "Start on the west footway, facing north."
    assert [a["memory"] for a in actions] == [mem] * len(SCRIPT)
    ref, _, ref_infos = replay(city, task, want)
    assert env.samples == ref.samples and len(env.samples) > 2 * len(SCRIPT)  # exact floats, every sub-step
    assert env.pose() == ref.pose() and env.sim_time_s == ref.sim_time_s
    assert env.counters == ref.counters
    assert env.counters == {"steps": 12, "executed_actions": 12, "parse_errors": 0, "invalid_actions": 0,
                            "clamped_actions": 1, "blocked_moves": env.counters["blocked_moves"], "map_actions": 5}
    # simulated time: 2 + 1.5 + 0.5 + 0.8 + 2.0 (clamped) + 5 map actions + 1 s = 12.8 s
    assert math.isclose(env.sim_time_s, 12.8, abs_tol=1e-9)
    assert infos[4]["clamped"] == [{"field": "seconds", "given": 5.0, "used": 2.0}] == ref_infos[4]["clamped"]
    # the agent moved: 2 s at 1.4 m/s north first (nothing in the way on the footway)
    s1 = [s for s in env.samples if s.step == 1 and s.checkpoint][0]
    x0, y0 = from_fix(city, 0.0, 20.0)
    assert math.isclose(s1.y_m - y0, 2.8, abs_tol=1e-6) and math.isclose(s1.x_m, x0, abs_tol=1e-6)
    st = agent.stats
    assert st["requests"] == len(log) == 12 and st["parse_failures"] == 0 and st["reasks"] == 0
    assert st["repairs"] == {"code_fence": 1, "key_case": 1, "action_case": 1, "number_as_text": 1}
    assert st["clamped_actions"] == 1 and st["map_actions"] == 5 and st["parse_error_steps"] == 0
    assert st["actions"] == {"move": 3, "sprint": 2, "look": 1, "open_map": 1, "map_pan": 1, "map_zoom": 1,
                             "map_select": 1, "close_map": 1, "terminate": 1}
    assert st["generation"]["max_output_tokens"] == 2048 and log[0].body["max_completion_tokens"] == 2048
    assert [r["thought"] for r in st["trace"][:3]] == ["the footway runs north", "run and bear right", ""]
    assert st["trace"][0]["memory"] == mem and st["trace"][4]["action"] == want[4]
    # the recent-action window of the last request: steps 7-11 with their outcomes, oldest first
    text = user_texts(log[11])[0]
    recent = text.split("[recent actions, oldest first]\n")[1].split("\n\n")[0].splitlines()
    assert [ln.split(":")[0] for ln in recent] == ["step 7", "step 8", "step 9", "step 10", "step 11"]
    moved = infos[10]["moved_m"]
    assert recent[-1].endswith(f"-> walked {moved:.1f} m" + ("; blocked" if infos[10]["blocked"] else ""))
    json.dumps(st, allow_nan=False)


def test_first_person_view_and_map_reach_the_model_as_sent(city):
    """Pure-red views decode as red; in map mode the env's map (not the view) is the one picture sent."""
    task = make_task(city)
    with FakeOpenAIServer([r for r, _ in SCRIPT], api_key=OPENAI_KEY) as srv:
        env, actions, infos, agent, observations = run_agent(city, srv, task)
        log = list(srv.log)
    modes = [o["mode"] for o in observations[:-1]]  # the observation each request was built from
    assert modes == ["first_person"] * 6 + ["map"] * 4 + ["first_person"] * 2
    for rec, obs, mode in zip(log, observations, modes):
        assert rec.auth_ok and len(rec.images) == 1
        img = rec.images[0]
        texts = user_texts(rec)
        if mode == "first_person":
            assert (img.width, img.height) == (VIEW_W, VIEW_H) and close(img.mean_rgb, RED)
            assert texts[1] == "Your current first-person view:"
        else:
            # the map the env produced for that observation, its mean computed here from the array
            want = obs["map"].reshape(-1, 3).astype(float).mean(axis=0)
            assert (img.width, img.height) == (MAP_W, MAP_H) and close(img.mean_rgb, want, tol=2.0)
            assert not close(img.mean_rgb, RED, tol=60.0)
            assert texts[1].startswith("The map (north up")
            assert "map: centre lat" in texts[0] and "in map mode. Allowed actions now: map_select, map_pan" in texts[0]
    # zooming in changes the picture: the means before and after differ
    assert not close(log[7].images[0].mean_rgb, log[8].images[0].mean_rgb, tol=0.5)
    # the state text of the first request: the env's own start pose, formatted here
    p0 = env.samples[0]
    lat, lon = city.frame.to_latlon(p0.x_m, p0.y_m)
    first = user_texts(log[0])[0]
    assert f"position: lat {float(lat):.6f}, lon {float(lon):.6f}" in first
    assert "camera: yaw 0.0 deg" in first and "time: 0.0 s since the start" in first
    assert ("This is step 1; you are in first-person mode. "
            "Allowed actions now: move, sprint, look, open_map, terminate") in first
    # after map_select, the selected point is reported in the state
    assert "selected point: lat" in user_texts(log[9])[0]
    assert "Walk north along the footway" in system_text(log[0])


def test_garbage_replies_are_reasked_counted_and_never_replaced_by_a_default(city):
    task = make_task(city, options=["ahead", "to the right", "behind", "to the left"], answer="B",
                     instruction="Where is the bench?")
    replies = [
        "I think I should walk north.",                                        # step 1: no_json
        '{"action": "fly", "dir": "up"}',                                      # unknown_action
        '{"action": "map_pan", "east": 10}',                                   # wrong_mode -> parse_error step
        '{"action": "move", "dir": "up", "seconds": 1}',                       # step 2: invalid_field
        '{"action": "move", "dir": "forward", "seconds": 1.0, "memory": "walked 1 s"}',
        '{"action": "terminate"}',                                             # step 3: empty_answer (a question)
        '{"thought": "the bench is to my right", "action": "terminate", "answer": "B"}',
    ]
    with FakeOpenAIServer(replies, api_key=OPENAI_KEY) as srv:
        env, actions, infos, agent, _ = run_agent(city, srv, task)
        log = list(srv.log)
    assert actions[0]["action"] == "parse_error"
    assert actions[0]["error"] == "no_json; unknown_action; wrong_mode"
    assert {k: v for k, v in actions[1].items() if k != "memory"} == {"action": "move", "dir": "forward",
                                                                      "seconds": 1.0}
    assert {k: v for k, v in actions[2].items() if k != "memory"} == {"action": "terminate", "answer": "B"}
    # the parse-error step executed nothing: pose and simulated time unchanged, counted by the env
    start = env.samples[0]
    after1 = [s for s in env.samples if s.step == 1]
    assert [(s.x_m, s.y_m, s.yaw_deg, s.t_s) for s in after1] == [(start.x_m, start.y_m, start.yaw_deg, 0.0)]
    assert env.counters["parse_errors"] == 1 and env.counters["executed_actions"] == 2
    assert env.counters["invalid_actions"] == 0 and env.counters["steps"] == 3 and env.done
    # exactly the trajectory of [parse_error, move, terminate] applied directly
    ref, _, _ = replay(city, task, [{"action": "parse_error"}, {"action": "move", "dir": "forward", "seconds": 1.0},
                                    {"action": "terminate", "answer": "B"}])
    assert env.samples == ref.samples
    st = agent.stats
    assert st["parse_errors"] == {"no_json": 1, "unknown_action": 1, "wrong_mode": 1, "invalid_field": 1,
                                  "empty_answer": 1}
    assert st["parse_failures"] == 5 and st["reasks"] == 4 and st["parse_error_steps"] == 1
    assert st["requests"] == len(log) == 7 and st["trace"][0]["failures"] == ["no_json", "unknown_action", "wrong_mode"]
    assert st["trace"][0]["action"] == {"action": "parse_error"}
    # corrective re-asks: the bad reply and a correction naming the problem are appended
    roles = [[m["role"] for m in r.body["messages"]] for r in log]
    assert roles[0] == ["system", "user"] and roles[1] == ["system", "user", "assistant", "user"]
    assert roles[2] == ["system", "user", "assistant", "user", "assistant", "user"] and roles[3] == ["system", "user"]
    assert log[1].body["messages"][2]["content"] in ("I think I should walk north.",
                                                     [{"type": "text", "text": "I think I should walk north."}])
    fix = user_texts(log[1])[-1]
    assert fix.startswith("Your previous reply could not be used: no JSON object found")
    assert user_texts(log[2])[-1].startswith("Your previous reply could not be used: unknown action 'fly'; use one of "
                                             "move, sprint, look, open_map, terminate")
    assert "dir must be forward, backward, left or right" in user_texts(log[4])[-1]
    assert "terminate with its answer" in user_texts(log[6])[-1]
    # memory only from accepted replies; the step-2 reply set it
    assert agent.memory == "walked 1 s" and st["memory_updates"] == 1
    # the answer scores as the family scores it (B is right)
    m = UrbanGroundFamily().score_trajectory(task, city, PROTOCOL, ug.Trajectory.from_samples(env.samples),
                                             answer=actions[-1]["answer"], steps=3)
    assert m["answer_correct"] == 1.0 and m["sr"] == 1.0


def test_re_request_rule_sends_the_same_prompt_again(city):
    task = make_task(city)
    replies = ["nothing useful", '{"action": "look", "yaw": -45}', '{"action": "terminate"}']
    with FakeOpenAIServer(replies, api_key=OPENAI_KEY) as srv:
        env, actions, infos, agent, _ = run_agent(city, srv, task, parse_failure="re-request", max_reasks=1)
        log = list(srv.log)
    assert agent.config()["model"] == {"provider": "openai", "model": "gpt-4o"}
    assert [a["action"] for a in actions] == ["look", "terminate"]
    assert log[0].body["messages"] == log[1].body["messages"]  # the same request again
    assert agent.stats["reasks"] == 1 and agent.stats["parse_errors"] == {"no_json": 1}
    assert env.pose().yaw_deg == 315.0 and env.counters["parse_errors"] == 0
    assert agent.config()["parse_failure"] == "re-request" and agent.config()["max_reasks"] == 1
    # a re-request run never shares a config with a corrective one
    assert agent.config() != UrbanGroundVLMAgent("openai:gpt-4o").config()


def test_reply_parser_rules():
    ok = parse_urbanground_reply('{"action": {"action": "Move", "dir": "Left", "seconds": 0.3}, "thought": "t"}')
    assert ok.ok and ok.action == {"action": "move", "dir": "left", "seconds": 0.3}
    assert set(ok.repairs) == {"nested_action", "action_case"} and ok.notes == ["missing_field_memory"]
    ty = parse_urbanground_reply('{"type": "look", "yaw": 20, "memory": "m"}')
    assert ty.ok and ty.action == {"action": "look", "yaw": 20.0} and ty.repairs == ["type_field"] and ty.memory == "m"
    d = parse_urbanground_reply('{"action": "move", "dir": "forward"}')
    assert d.ok and d.action == {"action": "move", "dir": "forward"} and "defaulted_seconds" in d.notes
    nan = parse_urbanground_reply('{"action": "look", "yaw": NaN}')
    assert nan.failure == "invalid_field" and "finite" in nan.detail
    assert parse_urbanground_reply('{"action": "parse_error"}').failure == "unknown_action"
    assert parse_urbanground_reply('{"action": "open_map"}', mode="map").failure == "wrong_mode"
    assert parse_urbanground_reply('{"action": "close_map"}', mode="map").ok
    assert parse_urbanground_reply('{"thought": "x"}').failure == "missing_action"
    assert parse_urbanground_reply('{"action": 3}').failure == "unknown_action"
    assert parse_urbanground_reply("", ["truncated"]).failure == "empty"
    assert parse_urbanground_reply('{"action": "move", "dir": "fo', ["truncated"]).failure == "truncated"
    t = parse_urbanground_reply('{"action": "terminate", "answer": 2}', needs_answer=True)
    assert t.ok and t.action == {"action": "terminate", "answer": "2"} and "answer_not_string" in t.repairs
    e = parse_urbanground_reply('{"action": "terminate", "answer": "  "}', needs_answer=True, empty_answer="accept")
    assert e.ok and e.action == {"action": "terminate"} and "empty_answer" in e.notes
    big = parse_urbanground_reply('{"action": "map_zoom", "factor": 100}', mode="map")
    assert big.ok and big.action == {"action": "map_zoom", "factor": 100.0}  # the env clamps, not the parser


def test_registry_config_protocol_and_missing_view(city, tmp_path):
    spec = "openai-compatible:http://127.0.0.1:9/v1:qwen2.5-vl"
    assert AGENTS["vlm-urbanground"] is UrbanGroundVLMAgent
    a = make_agent("vlm-urbanground", model=spec, max_reasks=3)
    cfg = a.config()
    assert cfg["name"] == "vlm-urbanground" and cfg["max_reasks"] == 3 and cfg["parse_failure"] == "corrective-re-ask"
    assert set(cfg["prompts"]) == set(URBANGROUND_TEMPLATES)
    # reference inputs (the protocol's default): 1 + 3 re-asks + the final-answer request; state inputs: 1 + 3
    assert a.max_requests_per_step(PROTOCOL) == 5 and a.action_style == "continuous" and a.uses_images
    assert make_agent("vlm-urbanground", model=spec, max_reasks=3, inputs="state").max_requests_per_step(PROTOCOL) == 4
    with pytest.raises(ProtocolError):
        a.max_requests_per_step("cityarena-v1")
    with pytest.raises(ValueError, match="parse_failure"):
        make_agent("vlm-urbanground", model=spec, parse_failure="guess")
    # a user template file replaces the packaged one and changes the config
    f = tmp_path / "urbanground_system.txt"
    f.write_text(default_template("urbanground_system").text + "\nBe brief.", encoding="utf-8")
    b = make_agent("vlm-urbanground", model=spec, prompt_templates=str(tmp_path))
    assert b.templates["urbanground_system"].source == str(f) and b.config()["prompt_hash"] != a.config()["prompt_hash"]
    task = make_task(city)
    with FakeOpenAIServer(['{"action": "terminate"}'], api_key=OPENAI_KEY) as srv:
        agent = UrbanGroundVLMAgent(f"openai:{srv.base_url}:gpt-4o", retry=FAST_RETRY, timeout_s=5, inputs="state")
        with pytest.raises(ProtocolError):
            agent.reset(task, AgentContext(city=city, motion=None,  # type: ignore[arg-type]
                                           seed=0, protocol_id="cityarena-v1"))
        env = new_env(city, observer=None)
        obs, _ = env.reset(seed=0, options=UrbanGroundFamily().env_options(task, city))
        agent.reset(task, AgentContext(city=city, motion=None, seed=0, protocol_id=PROTOCOL))  # type: ignore[arg-type]
        with pytest.raises(NoImageryError):
            agent.act(obs)
        assert srv.log == []  # nothing sent without the picture
        # blind: the view is withheld (a line instead), so no observer is needed
        blind = UrbanGroundVLMAgent(f"openai:{srv.base_url}:gpt-4o", retry=FAST_RETRY, timeout_s=5, control="blind",
                                    inputs="state")
        assert not blind.uses_images
        blind.reset(task, AgentContext(city=city, motion=None, seed=0, protocol_id=PROTOCOL))  # type: ignore[arg-type]
        assert blind.act(obs)["action"] == "terminate"
        assert srv.log[0].images == [] and "[No image is available" in " ".join(user_texts(srv.log[0]))
        agent.close()
        blind.close()


# ------------------------------------------------------------------ end to end through the CLI
def test_urbanarena_run_vlm_urbanground_end_to_end(tmp_path):
    """``urbanarena run --agent vlm-urbanground --model openai:URL:MODEL`` on a generated two-task suite
    (an L1 orientation question and an L2 short walk) with GL-rendered first-person views."""
    reason = gl_unavailable_reason()
    if reason:
        pytest.skip(f"GL renderer unavailable: {reason}")
    from generate_util import fixture_city
    from urbanarena.cli.main import app
    from urbanarena.tasks.generators.urbanground import generate_urbanground_suite, save_urbanground_suite
    from urbanarena.world.city_io import save_city

    city = fixture_city()
    suite = generate_urbanground_suite(city, per_family=1, seed=0, subfamilies=["l1_orientation", "l2_short_range"])
    tasks = {t.category: t for t in suite.task_file.tasks}
    assert set(tasks) == {"l1_orientation", "l2_short_range"}
    right = str(tasks["l1_orientation"].answer)
    city_dir = save_city(city, tmp_path / "city")
    task_file = save_urbanground_suite(suite, tmp_path / "tasks.json")

    # the default inputs under urbanground-v1 are the reference ones: {observation, reason, action} replies,
    # the question answered in a separate request after terminate
    def script(body, n):
        text = json.dumps(body["messages"])
        if "Exploration is over" in text:
            return json.dumps({"answer": right, "reason": "I saw it"})
        if "Relative to the direction you are facing now" in text:
            return json.dumps({"observation": "the street", "reason": "enough seen", "action": {"action": "terminate"}})
        if len(body["messages"]) == 2:  # system + the first turn
            return json.dumps({"observation": "a street", "reason": "go",
                               "action": {"action": "move", "dir": "forward", "seconds": 1.0}})
        return json.dumps({"observation": "here", "reason": "arrived", "action": {"action": "terminate"}})

    with FakeOpenAIServer(script, api_key=OPENAI_KEY) as srv:
        res = CliRunner().invoke(app, ["run", "--city", str(city_dir), "--tasks", str(task_file), "--agent",
                                       "vlm-urbanground", "--model", f"openai:{srv.base_url}:gpt-4o",
                                       "--out", str(tmp_path / "out")], catch_exceptions=False)
        log = list(srv.log)
    assert res.exit_code == 0, res.output
    assert len(log) == 4  # terminate + the final answer; one move + one terminate
    for r in log:
        [img] = r.images
        assert (img.width, img.height) == (640, 360) and not close(img.mean_rgb, RED, tol=60.0)
    dbs = list((tmp_path / "out").rglob("episodes.sqlite"))
    assert len(dbs) == 1
    with closing(Store(dbs[0], readonly=True)) as store:
        by_id = {r["task_id"]: r for r in store.rows()}
    assert len(by_id) == 2
    q = by_id[tasks["l1_orientation"].task_id]
    w = by_id[tasks["l2_short_range"].task_id]
    assert q["stop_reason"] == "terminate" and q["details"]["answer"] == right
    assert q["metrics"]["answer_correct"] == 1.0 and q["metrics"]["sr"] == 1.0 and q["steps"] == 1
    assert w["stop_reason"] == "terminate" and w["steps"] == 2
    assert w["actions"][0]["action"] == "move" and w["actions"][0]["seconds"] == 1.0
    assert math.isclose(w["details"]["sim_time_s"], 1.0) and w["agent_stats"]["requests"] == 2
    assert q["agent_stats"]["requests"] == 2 and q["agent_stats"]["final_answers"] == 1
    # the dry run builds each task's first request offline (no server): one image per request, and the
    # per-step request bound of the agent (1 + max re-asks)
    res = CliRunner().invoke(app, ["run", "--city", str(city_dir), "--tasks", str(task_file), "--agent",
                                   "vlm-urbanground", "--model", "openai:gpt-4o", "--out", str(tmp_path / "dry"),
                                   "--dry-run"], env={"OPENAI_API_KEY": ""}, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "2 tasks x 1 seeds" in res.output and "family urbanground" in res.output
    assert not (tmp_path / "dry" / "episodes.sqlite").exists()
