"""The arena ReAct agent driven by scripted fake servers through the real openai/anthropic SDKs.

City: the T junction of ``arena_util`` (start s at (0, -20) facing north, the
junction j at (0, 0), arms to w (-20, 0) and e (20, 0)) with compass-coloured
panoramas (``vlm_util``): views are 32 x 18 px with a 60-degree field of view,
so a view facing north is red, east green, south blue.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from fakes import ScriptedReply
from urbanarena.agents.base import AgentContext
from urbanarena.agents.clients import BudgetExceeded
from urbanarena.agents.vlm import ArenaReActAgent, run_arena_episode
from urbanarena.env.observers import LocationMapObserver, panorama_observer_for
from urbanarena.errors import ProtocolError
from vlm_util import (
    ANTHROPIC_KEY, BLUE, FAST_RETRY, OPENAI_KEY, RED, arena_task, reply, roles, server, spec,
    strip_volatile, system_text, t_city, user_texts,
)

VIEW_W, VIEW_H = 32, 18


@pytest.fixture(autouse=True)
def _keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)


@pytest.fixture(scope="module")
def city(tmp_path_factory):
    return t_city(tmp_path_factory.mktemp("tcity"))


def observer(city):
    return panorama_observer_for(city, width=VIEW_W, height=VIEW_H, hfov_deg=60.0)


def run(city, srv, provider, protocol="cityarena-v1", *, seed=0, task=None, agent_kw=None, **kw):
    agent = ArenaReActAgent(spec(provider, srv), retry=FAST_RETRY, timeout_s=5, **(agent_kw or {}))
    res = run_arena_episode(city, agent, task or arena_task(city), seed=seed, protocol_id=protocol,
                            observer=kw.pop("obs", observer(city)), **kw)
    agent.close()
    return res


def close(rgb, want, tol=6.0):
    return bool(np.allclose(rgb, want, atol=tol))


# ------------------------------------------------------------ full episodes
WALK_TO_T_AND_ANSWER = [
    reply("W", "LARGE", memory="Start: facing north on the stem.", thought="road ahead"),
    reply("W", "LARGE", thought="keep going"),
    reply("W", "LARGE", thought="almost there"),
    reply("D", "LARGE", thought="look right for arrows"),
    reply("RIGHT", thought="take the east arm"),
    reply("W", "LARGE", thought="walk east"),
    reply("ANSWER", "x:1 y:2 (east of the T)", thought="done"),
]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_scripted_episode_through_the_real_sdks(city, provider):
    with server(provider, WALK_TO_T_AND_ANSWER) as srv:
        res = run(city, srv, provider)
    # W LARGE = 7 m: -20 -> -13 -> -6 -> 0 (the third walk stops at the junction: 6 m, blocked);
    # D and RIGHT do not move; RIGHT commits to the east arm; W LARGE walks 7 m east.
    assert res["positions"] == [[0, -20], [0, -13], [0, -6], [0, 0], [0, 0], [0, 0], [7, 0], [7, 0]]
    assert res["actions"] == ["W LARGE", "W LARGE", "W LARGE", "D LARGE", "RIGHT", "W LARGE",
                              "ANSWER: x:1 y:2 (east of the T)"]
    assert res["stop_reason"] == "ANSWER" and res["error"] is None and res["steps"] == 7
    assert res["answer"] == "x:1 y:2 (east of the T)"  # verbatim; the validator extracts the cell
    assert res["is_correct"] is True and res["scored_success"] is True and res["evaluation_score"] == 1.0
    assert res["env_counters"] == {"steps": 7, "executed_actions": 7, "parse_errors": 0, "invalid_actions": 0,
                                   "blocked_moves": 1, "answers": 1}
    st = res["agent_stats"]
    assert st["requests"] == st["api_requests"] == len(srv.log) == 7
    assert st["parse_failures"] == 0 and st["reasks"] == 0 and st["repairs"] == {}
    assert st["blocked_moves"] == 1 and st["invalid_actions"] == 0
    assert st["generation"]["temperature"] == 1.0 and st["generation"]["max_output_tokens"] == 8192
    # tokens: what the server reported, summed independently from its own usage rule
    usage = [srv.default_usage(r.body, text) for r, text in zip(srv.log, WALK_TO_T_AND_ANSWER)]
    assert st["input_tokens"] == sum(u[0] for u in usage) and st["output_tokens"] == sum(u[1] for u in usage)
    # requests: protocol settings, system prompt with the task, one decoded view per request
    body = srv.log[0].body
    if provider == "openai":
        assert body["temperature"] == 1.0 and body["max_completion_tokens"] == 8192
    else:
        assert body["temperature"] == 1.0 and body["max_tokens"] == 8192
    assert "Find the grid cell of the junction" in system_text(srv.log[0])
    for r in srv.log:
        assert r.auth_ok and [(i.format, i.width, i.height) for i in r.images] == [("JPEG", VIEW_W, VIEW_H)]
    means = [r.images[0].mean_rgb for r in srv.log]
    assert all(close(m, RED) for m in means[:4])  # facing north (branch arrows outside the view)
    assert means[4][1] > 200 and means[4][0] > means[4][2]  # yaw 90: green, with the red east arrow drawn on it
    assert close(means[5], BLUE) and close(means[6], BLUE)  # RIGHT turns the camera with the travel: yaw 180
    json.dumps(res, allow_nan=False)


def test_map_and_reference_images_are_sent_in_order(city):
    ref = np.zeros((10, 20, 3), np.uint8)
    ref[...] = (10, 200, 30)
    task = arena_task(city)
    opts = {"start_node": "s", "start_heading_deg": 0.0, "task_text": task.instruction, "reference_images": [ref]}
    with server("openai", [reply("ANSWER", "x:0 y:0")]) as srv:
        res = run(city, srv, "openai", task=task, map_renderer=LocationMapObserver(48, 40), reset_options=opts)
    assert res["stop_reason"] == "ANSWER" and res["is_correct"] is False and res["evaluation_score"] == 0.0
    [rec] = srv.log
    assert [(i.width, i.height) for i in rec.images] == [(VIEW_W, VIEW_H), (48, 40), (20, 10)]
    assert close(rec.images[0].mean_rgb, RED) and close(rec.images[2].mean_rgb, (10, 200, 30))
    texts = user_texts(rec)
    assert texts[1:] == ["Your current camera view:",
                         "Map of your current location (the marker is you, pointing where you face):",
                         "Reference images for the task:"]


def test_same_seed_and_script_give_identical_results(city):
    script = ["not json", *WALK_TO_T_AND_ANSWER[:3], '{"action": "W", "answer": "HUGE"}', *WALK_TO_T_AND_ANSWER[3:]]
    results = []
    for _ in range(2):
        with server("openai", script) as srv:
            results.append(run(city, srv, "openai", seed=5))
    a, b = (strip_volatile(r) for r in results)
    assert a == b
    assert a["agent_stats"]["parse_failures"] == 1 and a["stop_reason"] == "ANSWER"


# ------------------------------------------------------------ garbage model
GARBAGE = ["", "I am not sure what to do here.", '{"thought": "t", "action": "JUMP"}', '{"thought": "t"}']
GARBAGE_TYPES = ["empty", "no_json", "unknown_action", "missing_action"]


def garbage_script(body, n):
    return GARBAGE[n % 4]


def test_always_garbage_model_ends_at_step_limit_cityarena(city):
    with server("openai", garbage_script) as srv:
        res = run(city, srv, "openai", "cityarena-v1")
    # 50 steps (the protocol's limit); each step: 1 request + 3 re-requests, all unusable
    assert res["stop_reason"] == "STEP_LIMIT" and res["steps"] == 50
    assert res["actions"] == ["PARSE_ERROR"] * 50 and res["positions"] == [[0, -20]] * 51
    assert res["env_counters"]["parse_errors"] == 50 and res["env_counters"]["executed_actions"] == 0
    assert res["evaluation_score"] == 0.0 and res["scored_success"] is False
    st = res["agent_stats"]
    assert len(srv.log) == st["requests"] == st["parse_failures"] == 200
    assert st["parse_errors"] == {t: 50 for t in GARBAGE_TYPES}
    assert st["reasks"] == 150 and st["parse_error_steps"] == 50 and st["flagged_empty"] == 50
    assert all(rec["requests"] == 4 and rec["action"] == "PARSE_ERROR" for rec in st["trace"])


def test_always_garbage_model_ends_at_step_limit_urbanarena(city):
    with server("anthropic", garbage_script) as srv:
        res = run(city, srv, "anthropic", "urbanarena-v1", max_steps=8)
    assert res["stop_reason"] == "STEP_LIMIT" and res["steps"] == 8 and res["env_counters"]["parse_errors"] == 8
    st = res["agent_stats"]
    assert len(srv.log) == st["requests"] == st["parse_failures"] == 24  # 1 + 2 corrective re-asks per step
    assert sum(st["parse_errors"].values()) == 24 and st["reasks"] == 16 and st["parse_error_steps"] == 8
    assert [roles(r) for r in srv.log[:3]] == [["user"], ["user", "assistant", "user"],
                                             ["user", "assistant", "user", "assistant", "user"]]


# ------------------------------------------------------------ memory and window
def test_memory_and_recent_action_window_in_the_request_at_step_k(city):
    thoughts = [f"thought number {k}" for k in range(1, 10)]
    memories = ["goal: the tower", "", "   ", "goal: the tower; bakery on the left", "", "", "", "", ""]
    script = [reply("W", "SMALL", memory=m, thought=t) for m, t in zip(memories, thoughts)]
    with server("openai", script) as srv:
        res = run(city, srv, "openai", max_steps=9)
    assert res["stop_reason"] == "STEP_LIMIT" and len(srv.log) == 9

    def line(k):
        return 'step %d: {"thought": "%s", "action": "W", "answer": "SMALL"}' % (k, thoughts[k - 1])

    step1 = user_texts(srv.log[0])[0]
    assert "[memory]\n(empty)\n\n[recent actions, oldest first]\n(none yet)\n\nThis is step 1." in step1
    # step 3: memory from step 1 kept through an empty and a blank memory; steps 1-2 in the window
    step3 = user_texts(srv.log[2])[0]
    assert f"[memory]\ngoal: the tower\n\n[recent actions, oldest first]\n{line(1)}\n{line(2)}\n\nThis is step 3." in step3
    # step 8: the window holds the last 5 executed actions (steps 3..7); the memory of step 4
    step8 = user_texts(srv.log[7])[0]
    window = "\n".join(line(k) for k in range(3, 8))
    assert f"[memory]\ngoal: the tower; bakery on the left\n\n[recent actions, oldest first]\n{window}\n\n" in step8
    assert line(2) not in step8
    assert res["agent_stats"]["memory_updates"] == 2


@pytest.mark.parametrize("protocol,expected_memory", [
    ("cityarena-v1", "noted in a rejected reply"),  # the reference reads memory before validating the action
    ("urbanarena-v1", "first notes"),               # ours: only accepted replies update memory
])
def test_memory_from_a_rejected_reply_follows_the_protocol(city, protocol, expected_memory):
    script = [reply("W", "SMALL", memory="first notes"),
              '{"thought": "t", "action": "JUMP", "memory": "noted in a rejected reply", "answer": ""}',
              reply("W", "SMALL", memory=""), reply("W", "SMALL")]
    with server("openai", script) as srv:
        run(city, srv, "openai", protocol, max_steps=3)
    assert f"[memory]\n{expected_memory}\n" in user_texts(srv.log[3])[0]


def test_urbanarena_window_reports_outcomes(city):
    script = [reply("W", "LARGE"), reply("W", "LARGE"), reply("W", "LARGE"), reply("UP"), reply("S")]
    with server("openai", script) as srv:
        run(city, srv, "openai", "urbanarena-v1", max_steps=5)
    text = user_texts(srv.log[4])[0]
    assert '"action": "W", "answer": "LARGE"} -> moved 7.0 m\n' in text
    assert '"action": "W", "answer": "LARGE"} -> blocked after 6.0 m\n' in text  # stopped at the junction
    assert '"action": "UP", "answer": ""} -> invalid: no such arrow was shown' in text  # no branch straight ahead


# ------------------------------------------------------------ parse-failure rules
def test_cityarena_re_requests_the_same_prompt_without_consuming_a_step(city, tmp_path):
    cache = tmp_path / "responses.sqlite"
    script = ["oops", '{"thought": "t", "action": "FLY"}', reply("W", "SMALL"),
              "x", "y", "z", "w",  # four unusable replies: the step is consumed as a parse error
              reply("ANSWER", "x:1 y:2")]
    kw = dict(agent_kw={"cache": "read-write", "cache_path": str(cache)})
    with server("openai", script) as srv:
        res = run(city, srv, "openai", "cityarena-v1", **kw)
    assert res["actions"] == ["W SMALL", "PARSE_ERROR", "ANSWER: x:1 y:2"] and res["steps"] == 3
    assert res["env_counters"]["parse_errors"] == 1
    st = res["agent_stats"]
    assert len(srv.log) == st["requests"] == 8 and st["reasks"] == 2 + 3 and st["parse_failures"] == 6
    assert st["parse_errors"] == {"no_json": 5, "unknown_action": 1} and st["parse_error_steps"] == 1
    # a re-request sends the same prompt again (the cache does not answer it: each call has its own index)
    assert srv.log[0].body == srv.log[1].body == srv.log[2].body
    assert srv.log[3].body == srv.log[6].body != srv.log[2].body
    assert st["cache_hits"] == 0 and st["cache_misses"] == 8


def test_replay_from_cache_read_only_after_the_server_stopped(city, tmp_path):
    cache = tmp_path / "responses.sqlite"
    script = ["oops", reply("W", "SMALL"), "x", "y", "z", "w", reply("ANSWER", "x:1 y:2")]
    with server("openai", script) as srv:
        base_url = srv.base_url
        first = run(city, srv, "openai", agent_kw={"cache": "read-write", "cache_path": str(cache)})
    agent = ArenaReActAgent(f"openai:{base_url}:gpt-4o", retry=FAST_RETRY, timeout_s=1, cache="read-only",
                            cache_path=str(cache))
    again = run_arena_episode(city, agent, arena_task(city), seed=0, protocol_id="cityarena-v1", observer=observer(city))
    assert again["error"] is None and again["agent_stats"]["cache_hits"] == 7 and again["agent_stats"]["api_requests"] == 0
    a, b = strip_volatile(first), strip_volatile(again)
    for k in ("cache_hits", "cache_misses", "api_requests", "http_attempts", "input_tokens", "output_tokens",
              "cached_input_tokens", "cached_output_tokens", "cost_usd"):
        a["agent_stats"].pop(k), b["agent_stats"].pop(k)
    assert a == b


def test_urbanarena_corrective_re_asks_within_the_step(city):
    script = ["no json at all", '{"thought": "t", "action": "W", "memory": "", "answer": "HUGE"}', reply("W", "SMALL"),
              "", '{"action": "FLY"}', "still nothing",  # three unusable replies: parse-error step
              reply("ANSWER", "x:1 y:2")]
    with server("openai", script) as srv:
        res = run(city, srv, "openai", "urbanarena-v1")
    assert res["actions"] == ["W SMALL", "PARSE_ERROR", "ANSWER: x:1 y:2"] and res["positions"][1] == [0, -18.5]
    st = res["agent_stats"]
    assert len(srv.log) == 7 and st["reasks"] == 4 and st["parse_failures"] == 5 and st["parse_error_steps"] == 1
    assert st["parse_errors"] == {"no_json": 2, "magnitude_out_of_range": 1, "empty": 1, "unknown_action": 1}
    r2, r3 = srv.log[1], srv.log[2]
    assert roles(r2) == ["user", "assistant", "user"]
    msgs = [m for m in r3.body["messages"] if m["role"] != "system"]
    assert msgs[1]["content"] == "no json at all" and msgs[3]["content"] == script[1]
    last = user_texts(r3)[0]
    assert last.startswith("Your previous reply could not be used: size 'HUGE' for W is not one of SMALL, MEDIUM, LARGE")
    assert user_texts(r2)[0].startswith("Your previous reply could not be used: no JSON object found")
    # an empty reply is shown to the model as a placeholder (providers reject empty assistant turns)
    assert [m for m in srv.log[4].body["messages"] if m["role"] == "assistant"][0]["content"] == "(empty reply)"
    # the first request of the next step starts a fresh conversation
    assert roles(srv.log[6]) == ["user"]


@pytest.mark.parametrize("protocol", ["cityarena-v1", "urbanarena-v1"])
def test_malformed_outputs_each_handled_and_counted(city, protocol):
    script = [
        "I think I should walk forward.",                                                   # non-JSON
        '```json\n{"thought": "fence", "action": "W", "memory": "", "answer": "SMALL"}\n```',  # JSON in a code fence
        '{"action": "W"}',                                                                # missing fields
        '{"thought": "t", "memory": ""}',                                                 # missing action
        '{"action": "FLY"}',                                                              # unknown action
        '{"action": "W", "answer": "HUGE"}',                                              # magnitude out of range
        "",                                                                               # empty reply
        'Done! {"thought": "t", "action": "ANSWER", "memory": "", "answer": "x:1 y:2, near the tower"} Bye',
    ]
    if protocol == "cityarena-v1":  # the reference parser refuses prose around the object: it asks again
        script.append('{"thought": "t", "action": "ANSWER", "memory": "", "answer": "x:1 y:2, near the tower"}')
    with server("openai", script) as srv:
        res = run(city, srv, "openai", protocol)
    st = res["agent_stats"]
    assert len(srv.log) == st["requests"] == len(script) and res["stop_reason"] == "ANSWER" and res["is_correct"] is True
    assert res["answer"] == "x:1 y:2, near the tower"
    if protocol == "cityarena-v1":
        assert st["repairs"] == {"code_fence": 1}  # a json-tagged fence: the reference reads it too
        # re-requests: W SMALL (1.5 m), W default (3 m), W with HUGE -> default size (3 m), ANSWER
        assert res["actions"] == ["W SMALL", "W", "W", "ANSWER: x:1 y:2, near the tower"]
        assert res["positions"] == [[0, -20], [0, -18.5], [0, -15.5], [0, -12.5], [0, -12.5]]
        assert st["parse_errors"] == {"no_json": 1, "missing_action": 1, "unknown_action": 1, "empty": 1,
                                      "reference_refused": 1}
        assert st["notes"] == {"missing_field_thought": 3, "missing_field_memory": 3, "missing_field_answer": 3,
                               "magnitude_omitted": 1, "magnitude_out_of_range": 1}
        assert st["reasks"] == 5 and st["parse_error_steps"] == 0
    else:
        assert st["repairs"] == {"code_fence": 1, "surrounding_text": 1}
        # corrective re-asks (at most 2 per step): step 3 spends its three requests on three bad replies
        assert res["actions"] == ["W SMALL", "W", "PARSE_ERROR", "ANSWER: x:1 y:2, near the tower"]
        assert res["positions"] == [[0, -20], [0, -18.5], [0, -15.5], [0, -15.5], [0, -15.5]]
        assert st["parse_errors"] == {"no_json": 1, "missing_action": 1, "unknown_action": 1,
                                      "magnitude_out_of_range": 1, "empty": 1}
        assert st["notes"] == {"missing_field_thought": 3, "missing_field_memory": 3, "missing_field_answer": 3,
                               "magnitude_omitted": 1}
        assert st["reasks"] == 4 and st["parse_error_steps"] == 1
    assert st["parse_failures"] == sum(st["parse_errors"].values())


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_refusals_and_truncated_replies_are_typed(city, provider):
    script = [ScriptedReply("", refusal="I can't help with that.") if provider == "openai"
              else ScriptedReply("I can't help with that.", finish="refusal"),
              ScriptedReply('{"thought": "a very long', finish="length" if provider == "openai" else "max_tokens"),
              reply("ANSWER", "x:1 y:2")]
    with server(provider, script) as srv:
        res = run(city, srv, provider, "cityarena-v1")
    st = res["agent_stats"]
    assert res["actions"] == ["ANSWER: x:1 y:2"] and st["requests"] == 3
    assert st["parse_errors"] == {"refusal": 1, "truncated": 1}
    assert st["flagged_refusal"] == 1 and st["flagged_truncated"] == 1


# ------------------------------------------------------------ faults, caps, errors
def test_transport_faults_are_counted_and_change_nothing_else(city):
    script = WALK_TO_T_AND_ANSWER
    with server("openai", script) as srv:
        clean = run(city, srv, "openai")
    plan = [None, "http_500", "http_429", None, "connection", "http_503", None, None, "http_500"]
    with server("openai", script, fault_plan=plan, retry_after="0") as srv:
        faulty = run(city, srv, "openai")
        injected = dict(srv.injected)
    st = faulty["agent_stats"]
    assert injected == {"http_500": 2, "http_429": 1, "connection": 1, "http_503": 1}
    assert {k[6:]: v for k, v in st.items() if k.startswith("fault_")} == injected
    assert st["faults_total"] == 5 and st["retries"] == 5 and st["http_attempts"] == 12 and st["requests"] == 7
    a, b = strip_volatile(clean), strip_volatile(faulty)
    for k in ("faults_total", "retries", "http_attempts", *(f"fault_{t}" for t in injected)):
        a["agent_stats"].pop(k, None), b["agent_stats"].pop(k, None)
    assert a == b


def test_request_cap_stops_the_run_and_a_resume_pays_nothing_twice(city, tmp_path):
    kw = {"cache": "read-write", "cache_path": str(tmp_path / "c.sqlite"), "budget_ledger": str(tmp_path / "b.sqlite")}
    with server("openai", WALK_TO_T_AND_ANSWER) as srv:
        with pytest.raises(BudgetExceeded):  # a run-level stop, not an episode result
            run(city, srv, "openai", agent_kw={**kw, "max_requests": 3})
        assert len(srv.log) == 3
    # resume without the cap: the three calls made come from the cache, only the rest is sent
    with server("openai", WALK_TO_T_AND_ANSWER[3:]) as srv:
        res = run(city, srv, "openai", agent_kw=kw)
    assert res["stop_reason"] == "ANSWER" and res["is_correct"] is True and len(srv.log) == 4
    assert res["agent_stats"]["cache_hits"] == 3 and res["agent_stats"]["api_requests"] == 4


def test_missing_view_and_wrong_protocol(city):
    with server("openai", [reply("W")]) as srv:
        res = run(city, srv, "openai", obs=None)
    assert res["stop_reason"] == "error" and "NoImageryError" in res["error"] and "graph-only" in res["error"]
    assert len(srv.log) == 0
    agent = ArenaReActAgent("openai-compatible:http://127.0.0.1:9/v1:m")
    with pytest.raises(ProtocolError, match="arena protocols"):
        agent.reset(arena_task(city), AgentContext(city=city, motion=None, seed=0, protocol_id="cityseeker-v1"))
