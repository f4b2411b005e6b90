"""B1 + R3 composed with the CitySeeker VLM agent, end to end through the real SDK against the fake
model server: the choice replies' confidence scores trigger B1, the walk back sends no request,
and the strategy texts reach both prompts of the next decisions (after the request line)."""

from __future__ import annotations

import json

import pytest

from urbanarena.agents.strategies import StrategyAgent
from urbanarena.agents.vlm import CitySeekerVLMAgent
from urbanarena.runner.episode import EpisodeRunner
from vlm_util import FAST_RETRY, OPENAI_KEY, cross_city, graph_task, phase_script, server, spec, user_texts


def stop(v: int) -> str:
    return json.dumps({"observation": "a street", "thoughts": "deciding", "action": v})


def choice(label: str, n: int, score: float) -> str:
    return json.dumps({"thoughts": "t", "observation": {chr(65 + i): "view" for i in range(n)}, "action": label,
                       "score": score})


def test_b1_and_r3_drive_the_cityseeker_vlm_agent(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    city = cross_city(tmp_path)  # centre c, arms n/e/s/w; urbanarena-graph-v1 offers at c: A=n, B=e, C=s, D=w
    script = phase_script(
        [stop(0)] * 6 + [stop(1)],
        [choice("A", 1, 0.9), choice("A", 4, 0.7), choice("A", 1, 0.7), choice("A", 4, 0.7),  # s c n c -> n
         choice("A", 1, 0.9), choice("B", 4, 0.9)])  # after walking back to s: s -> c -> e
    with server("openai", script) as srv:
        factory = lambda: StrategyAgent(CitySeekerVLMAgent(  # noqa: E731
            spec("openai", srv), hfov_deg=60.0, crop_size=(40, 20), retry=FAST_RETRY, timeout_s=5), "B1,R3")
        res = EpisodeRunner(city, factory, "vlm-cityseeker").run_once(graph_task(city), 0, "urbanarena-graph-v1", 20)
    assert res["error"] is None and res["stop_reason"] == "stop"
    # at n the last three scores (0.7, 0.7, 0.7) average below 0.75: back to s (the 0.9 decision), 2 env steps
    assert res["trajectory"] == ["s", "c", "n", "c", "n", "c", "s", "c", "e"]
    assert res["metrics"]["tc_exact"] == 1.0 and res["steps"] == 9
    [ev] = res["agent_stats"]["strategy"]["events"]
    assert (ev["at"], ev["target"], ev["cost_steps"], ev["outcome"]) == ("n", "s", 2, "reverted")
    assert ev["confidences"] == [0.7, 0.7, 0.7]
    assert len(srv.log) == 13 == res["agent_stats"]["requests"]  # 6 decisions x 2 + the final stop; none for the walk back
    # the 9th and 10th requests are the decision at s after the walk back: both carry the B1 note and R3
    for rec in srv.log[8:10]:
        text = "\n".join(user_texts(rec))
        assert "Request: I need a pharmacy.\n\n[Backtracking] You walked back to this place (P0) because your last 3 " \
               "choices had low confidence (mean 0.70, below 0.75). Last time here you went 0 deg (confidence 0.90)." in text
        assert ("[Recent steps] Your last 3 steps in this round (oldest first):\n"
                "- step 4: at P1 went heading 0 deg to P2\n"
                "- step 5: at P2 went heading 180 deg to P1 (walking back)\n"
                "- step 6: at P1 went heading 180 deg to P0 (walking back)") in text
    assert "[Backtracking]" not in "\n".join(user_texts(srv.log[10]))  # the note is given once
    assert "[Recent steps]" not in "\n".join(user_texts(srv.log[0]))  # nothing before the first step
    # no strategy text at the first decision: the prompt ends with the bare request line
    assert user_texts(srv.log[0])[0].rstrip().endswith("Request: I need a pharmacy.")
    # later prompts hold the request once, followed by this act's text only (the question is restored each act)
    assert all("\n".join(user_texts(r)).count("Request: I need a pharmacy.") == 1 for r in srv.log)
    assert all("\n".join(user_texts(r)).count("[Recent steps]") == 1 for r in srv.log[2:])


def test_vlm_agent_is_accepted_for_every_strategy():
    from urbanarena.agents.strategies import STRATEGIES, StrategyError, check_applicable, parse_strategies

    agent = CitySeekerVLMAgent("openai:gpt-4o")
    for sid in STRATEGIES:
        check_applicable(agent, parse_strategies(sid))
    with pytest.raises(StrategyError, match="at most one backtracking"):
        parse_strategies("B1,B3")
