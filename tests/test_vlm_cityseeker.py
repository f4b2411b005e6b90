"""CitySeeker's VLM protocol on a synthetic graph city with panoramas, driven by the graph runner.

City: the cross of ``arena_util`` (centre c, arms n/e/s/w 20 m away) with
compass-coloured panoramas (``vlm_util``: north red, east green, south blue,
west yellow). At c the offered headings are 0, 90, 180, 270 under both
protocols (raw walkable headings / sorted edge azimuths), labelled A..D.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from urbanarena.agents.base import AgentContext
from urbanarena.agents.vlm import CitySeekerVLMAgent
from urbanarena.env.protocols import make_motion
from urbanarena.errors import NoImageryError, ProtocolError
from urbanarena.runner.episode import EpisodeRunner
from vlm_util import (
    ANTHROPIC_KEY, BLUE, FAST_RETRY, GREEN, OPENAI_KEY, RED, YELLOW, cross_city, graph_task, phase_script, roles,
    server, spec, strip_volatile, user_texts,
)

CROP = (40, 20)


@pytest.fixture(autouse=True)
def _keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)


@pytest.fixture(scope="module")
def city(tmp_path_factory):
    return cross_city(tmp_path_factory.mktemp("cross"))


def stop(v: int) -> str:
    return json.dumps({"observation": "a street", "thoughts": "deciding", "action": v})


def choice(label: str, n: int, score: float = 0.8) -> str:
    return json.dumps({"thoughts": "t", "observation": {chr(65 + i): "view" for i in range(n)}, "action": label,
                       "score": score})


def run(city, srv, provider, protocol, *, max_steps=10, seed=0, **agent_kw):
    kw = {"hfov_deg": 60.0, "crop_size": CROP, "retry": FAST_RETRY, "timeout_s": 5, **agent_kw}
    factory = lambda: CitySeekerVLMAgent(spec(provider, srv), **kw)  # noqa: E731
    return EpisodeRunner(city, factory, "vlm-cityseeker").run(graph_task(city), seed, protocol, max_steps)


def is_stop_request(rec) -> bool:
    return "Panorama of the current place" in json.dumps(rec.body)


@pytest.mark.parametrize("provider,protocol", [("openai", "cityseeker-v1"), ("anthropic", "urbanarena-graph-v1")])
def test_scripted_episode_through_the_runner(city, provider, protocol):
    script = phase_script([stop(0), stop(0), stop(1)], [choice("A", 1, 0.9), choice("B", 4, 0.7)])
    with server(provider, script) as srv:
        res = run(city, srv, provider, protocol)
    assert res["error"] is None and res["stop_reason"] == "stop"
    assert res["trajectory"] == ["s", "c", "e"] and res["actions"] == [0, 1, -1]
    assert res["metrics"]["tc_exact"] == 1.0 and res["invalid_actions"] == 0
    st = res["agent_stats"]
    assert len(srv.log) == st["requests"] == 5 and st["parse_failures"] == 0 and st["stops"] == 1
    assert st["scores"] == [0.9, 0.7] and [t["score"] for t in st["trace"]] == [0.9, 0.7, None]
    assert [t["choice"] for t in st["trace"]] == ["A", "B", None] and st["fallbacks"] == {"stop": 0, "choice": 0}
    assert [is_stop_request(r) for r in srv.log] == [True, False, True, False, True]
    # the stop decision sees the whole panorama: mean of its red, green, blue and yellow quarters
    for r in srv.log[0::2]:
        assert [(i.width, i.height) for i in r.images] == [(64, 32)]
        assert np.allclose(r.images[0].mean_rgb, (127.5, 127.5, 63.75), atol=3)
    # choices at c: one crop per heading 0/90/180/270, in order A..D
    crops = srv.log[3].images
    assert [(i.width, i.height) for i in crops] == [CROP] * 4
    for got, want in zip(crops, (RED, GREEN, BLUE, YELLOW)):
        assert np.allclose(got.mean_rgb, want, atol=6)
    texts = user_texts(srv.log[3])
    assert texts[1:] == ["Image A:", "Image B:", "Image C:", "Image D:"]
    assert "4 directions can be walked" in texts[0] and "labelled A, B, C, D" in texts[0]
    assert "Request: I need a pharmacy." in texts[0]
    # relative directions at c, travelling north (the s -> c edge):
    if protocol == "cityseeker-v1":  # the reference's labels (left/right mirrored), and none at the start
        assert ("Image A is on your FRONT.\nImage B is on your LEFT.\nImage C is on your BACK.\n"
                "Image D is on your RIGHT.") in texts[0]
        assert "is on your" not in user_texts(srv.log[1])[0]
    else:
        assert ("Image A is on your FRONT.\nImage B is on your RIGHT.\nImage C is on your BACK.\n"
                "Image D is on your LEFT.") in texts[0]
        assert "Image A is on your FRONT." in user_texts(srv.log[1])[0]


def test_cityseeker_v1_falls_back_to_the_first_choice_and_counts_it(city):
    with server("openai", lambda body, n: "I cannot tell.") as srv:
        res = run(city, srv, "openai", "cityseeker-v1", max_steps=6)
    # every stop reply unusable -> continue; every choice unusable -> A (the first heading):
    # s -A-> c -A(north)-> n -A(south)-> c -> n -> c -> n
    assert res["actions"] == [0] * 6 and res["trajectory"] == ["s", "c", "n", "c", "n", "c", "n"]
    assert res["stop_reason"] == "max_steps" and res["invalid_actions"] == 0
    st = res["agent_stats"]
    assert len(srv.log) == st["requests"] == st["parse_failures"] == 12 and st["reasks"] == 0
    assert st["fallbacks"] == {"stop": 6, "choice": 6} and st["parse_errors"] == {"no_json": 12}
    assert [t["fallback"] for t in st["trace"]] == ["stop+choice"] * 6
    assert st["scores"] == [0.5] * 6  # CitySeeker's default confidence for its fallback


def test_required_fields_differ_by_protocol(city):
    lean_choice = '{"action": "B"}'  # no thoughts/observation/score: the reference's parser rejects it
    for protocol, action, fallback in (("cityseeker-v1", 0, "choice"), ("urbanarena-graph-v1", 1, None)):
        script = phase_script([stop(0), stop(0), stop(1)], [choice("A", 1), lean_choice])
        with server("openai", script) as srv:
            res = run(city, srv, "openai", protocol, max_steps=2)
        st = res["agent_stats"]
        assert res["actions"] == [0, action] and st["trace"][1]["fallback"] == fallback
        if fallback:
            assert st["parse_errors"] == {"missing_fields": 1} and st["fallbacks"]["choice"] == 1
        else:
            assert st["parse_failures"] == 0 and st["notes"] == {"score_missing": 1} and st["scores"][1] is None


def test_urbanarena_graph_re_asks_then_returns_an_invalid_index(city):
    with server("anthropic", lambda body, n: '{"thoughts": "hmm", "action": "perhaps"}') as srv:
        res = run(city, srv, "anthropic", "urbanarena-graph-v1", max_steps=4)
    # the stop decision stays unusable after 2 corrective re-asks: -2, rejected and counted by the env
    assert res["actions"] == [-2] * 4 and res["trajectory"] == ["s"] * 5 and res["invalid_actions"] == 4
    st = res["agent_stats"]
    assert len(srv.log) == st["requests"] == 12 and st["reasks"] == 8 and st["unparseable_steps"] == 4
    assert st["parse_errors"] == {"bad_stop_value": 12} and st["invalid_actions"] == 4
    assert [roles(r) for r in srv.log[:3]] == [["user"], ["user", "assistant", "user"],
                                             ["user", "assistant", "user", "assistant", "user"]]
    assert user_texts(srv.log[1])[0].startswith(
        """Your previous reply could not be used: "action" must be 1 (stop) or 0 (continue), got 'perhaps'""")


def test_urbanarena_graph_recovers_after_corrective_re_asks(city):
    script = phase_script(["nothing", stop(0), stop(1)], ['{"action": "Z"}', "?", choice("a", 1, 0.4)])
    with server("openai", script) as srv:
        res = run(city, srv, "openai", "urbanarena-graph-v1", max_steps=5)
    assert res["actions"] == [0, -1] and res["trajectory"] == ["s", "c"]
    st = res["agent_stats"]
    assert len(srv.log) == 6 and st["reasks"] == 3 and st["parse_errors"] == {
        "no_json": 2, "choice_out_of_range": 1}
    assert st["repairs"] == {"choice_case": 1} and st["trace"][0]["failures"] == [
        "stop:no_json", "choice:choice_out_of_range", "choice:no_json"]


def test_same_seed_and_script_give_identical_results(city):
    def script():
        return phase_script(["junk", stop(0), stop(0), stop(1)], [choice("A", 1, 0.3), "junk", choice("C", 4)])
    out = []
    for _ in range(2):
        with server("openai", script()) as srv:
            out.append(run(city, srv, "openai", "cityseeker-v1", seed=3, pano_max_width=32))
    assert strip_volatile(out[0]) == strip_volatile(out[1])
    # s: stop junk -> continue (fallback), A -> c; c: "junk" choice -> A (fallback) -> n;
    # n offers one heading, so "C" is out of range -> A (fallback) -> c; c: stop
    assert out[0]["trajectory"] == ["s", "c", "n", "c"] and out[0]["actions"] == [0, 0, 0, -1]
    assert out[0]["agent_stats"]["fallbacks"] == {"stop": 1, "choice": 2}
    assert out[0]["agent_stats"]["parse_errors"] == {"no_json": 2, "choice_out_of_range": 1}


def test_default_crop_geometry_and_panorama_downscale(city):
    # hfov 120 (CitySeeker's default): a crop centred east spans bearings 30..150; with f = (W/2)/tan(60 deg)
    # the columns beyond +-45 degrees (|u - cx| > f) are red (left) and blue (right), the middle green.
    w, h = 60, 20
    f = (w / 2) / np.tan(np.radians(60.0))
    xs = np.arange(w) - (w - 1) / 2
    green = np.count_nonzero(np.abs(xs) < f) / w
    side = (1 - green) / 2
    want = (255 * side, 255 * green, 255 * side)
    with server("openai", phase_script([stop(0), stop(1)], [choice("A", 1)])) as srv:
        res = run(city, srv, "openai", "urbanarena-graph-v1", hfov_deg=120.0, crop_size=(w, h), pano_max_width=32)
    assert res["actions"] == [0, -1]
    assert [(i.width, i.height) for i in srv.log[0].images] == [(32, 16)]
    agent = CitySeekerVLMAgent("openai-compatible:http://127.0.0.1:9/v1:m", crop_size=(w, h))
    agent.reset(graph_task(city), AgentContext(city=city, motion=make_motion("cityseeker-v1", city, "heading"), seed=0,
                                               protocol_id="cityseeker-v1"))
    [east] = agent.crops("c", [90.0])
    assert east.shape == (h, w, 3)
    assert np.allclose(east.reshape(-1, 3).mean(axis=0), want, atol=8)


def test_graph_only_city_and_wrong_protocol(tmp_path):
    bare = cross_city(tmp_path, panoramas=False)
    agent = CitySeekerVLMAgent("openai-compatible:http://127.0.0.1:9/v1:m")
    ctx = AgentContext(city=bare, motion=make_motion("cityseeker-v1", bare, "heading"), seed=0, protocol_id="cityseeker-v1")
    with pytest.raises(NoImageryError, match=r"graph-only.*vlm-cityseeker agent"):
        agent.reset(graph_task(bare), ctx)
    with server("openai", [stop(1)]) as srv:
        res = run(bare, srv, "openai", "cityseeker-v1")
    assert res["stop_reason"] == "error" and "NoImageryError" in res["error"] and len(srv.log) == 0
    ctx.protocol_id = "touchdown-v1"
    with pytest.raises(ProtocolError, match="heading-choice protocols"):
        agent.reset(graph_task(bare), ctx)
