"""M1, the route map of CitySeeker's map ablation: the drawing (hand-made line city, pixels checked at
positions computed from the map geometry), the image channel into the CitySeeker VLM agent through the
real openai SDK and the fake server (the map is an extra image of both requests of every step, decoded
from the request body and checked for the route colour), the records (run.json, rows: privileged) and
the refusal for agents that look at no images."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest
from PIL import Image

from strategies_util import line_city, task_for
from urbanarena.agents.baselines import RandomAgent
from urbanarena.agents.controls import NO_MAP_TEXT
from urbanarena.agents.strategies import StrategyError, check_applicable, compose, parse_strategies
from urbanarena.agents.strategies.route_map import MAP_LABEL, MAP_LABEL_TWO_STOPS, ROUTE_RGB, RouteMap, route_nodes
from urbanarena.agents.strategies.base import RoundState, Walk
from urbanarena.agents.vlm import CitySeekerVLMAgent
from urbanarena.env.protocols import make_motion
from urbanarena.runner.episode import EpisodeRunner
from urbanarena.tasks.schema import Goal
from vlm_util import FAST_RETRY, OPENAI_KEY, cross_city, graph_task, phase_script, server, spec, user_texts


def near(px, rgb, tol=40) -> bool:
    return bool(np.all(np.abs(np.asarray(px, int) - np.asarray(rgb, int)) <= tol))


def strategy_for(city, task, size_px=256, at=None, heading=90.0):
    s = RouteMap(size_px=size_px)
    walk = Walk()
    walk.observe({"node": at or task.start.node, "heading_deg": heading})
    state = RoundState(task=task, city=city, motion=make_motion("cityseeker-v1", city, "heading"),
                       protocol_id="cityseeker-v1", per_stage=False, walk=walk, memory=None)
    s.reset(state)
    return s, state


def px(s, city, a, b, frac=0.5):
    """Pixel (row, col) of the point ``frac`` of the way from node a to node b."""
    (xa, ya), (xb, yb) = city.xy(a), city.xy(b)
    u, v = s.renderer.world_to_px(xa + frac * (xb - xa), ya + frac * (yb - ya))
    return int(round(float(v))), int(round(float(u)))


def test_route_map_draws_the_route_start_goal_and_agent():
    city = line_city("ABCDEF")  # A..F west to east, ~31 m apart
    task = task_for(city, "A", "D")
    s, state = strategy_for(city, task, at="B", heading=90.0)
    assert route_nodes(city, "A", ["D"]) == ["A", "B", "C", "D"]
    [(label, img)] = s.context_images(state)
    assert label == MAP_LABEL and img.shape == (256, 256, 3) and img.dtype == np.uint8
    assert s.describe()["privileged"] is True and s.images == 1
    # the route between the markers is magenta; the street beyond the goal (D -> E) is not
    for a, b in (("B", "C"), ("C", "D")):
        r, c = px(s, city, a, b, 0.5)
        assert near(img[r, c], ROUTE_RGB), (a, b, img[r, c])
    r, c = px(s, city, "D", "E", 0.6)
    assert not near(img[r, c], ROUTE_RGB, 80) and near(img[r, c], (150, 150, 150), 60)
    # start marker blue at A, goal marker red at D, the agent (orange) at B
    for node, rgb in (("A", (30, 90, 230)), ("D", (220, 20, 20)), ("B", (255, 140, 0))):
        r, c = px(s, city, node, node)
        assert near(img[r, c], rgb, 30), (node, img[r, c])
    # the agent moves: at C now, and B shows the route again
    state.walk.observe({"node": "C", "heading_deg": 90.0})
    [(_, img2)] = s.context_images(state)
    r, c = px(s, city, "C", "C")
    assert near(img2[r, c], (255, 140, 0), 30)
    r, c = px(s, city, "B", "B")
    assert near(img2[r, c], ROUTE_RGB) and s.images == 2
    # away from the drawings the map is the map renderer's background (streets, scale bar, attribution)
    assert np.array_equal(img2[:4, :4], s.renderer.background()[:4, :4])


def test_two_stop_route_goes_through_both_goals():
    city = line_city("ABCDEF")
    task = task_for(city, "B", "E").model_copy(update={"goals": [Goal(node="D", label="x"), Goal(node="A", label="y")]})
    assert route_nodes(city, "B", ["D", "A"]) == ["B", "C", "D", "C", "B", "A"]
    s, state = strategy_for(city, task)
    [(label, img)] = s.context_images(state)
    assert label == MAP_LABEL_TWO_STOPS
    for node in ("D", "A"):  # both goals red
        r, c = px(s, city, node, node)
        assert near(img[r, c], (220, 20, 20), 30), node
    r, c = px(s, city, "A", "B", 0.5)
    assert near(img[r, c], ROUTE_RGB)


def test_params_and_refusal():
    assert parse_strategies("m1(size_px=128)")[0].params == {"size_px": 128, "margin_m": 40.0}
    for bad, msg in (("M1(size_px=10)", "size_px must be"), ("M1(margin_m=-1)", "margin_m must be"),
                     ("M1(zoom=2)", "unknown parameter")):
        with pytest.raises(StrategyError, match=msg):
            parse_strategies(bad)
    with pytest.raises(StrategyError, match=r"strategy M1 \(route map \(map ablation\)\) needs an agent that looks at "
                                            r"images in its prompt; agent 'random' does not"):
        check_applicable(RandomAgent(), parse_strategies("M1"))
    check_applicable(CitySeekerVLMAgent("openai-compatible:http://127.0.0.1:9/v1:m"), parse_strategies("B1,M1,R3"))


# ----------------------------------------------------------------- through the SDK and the fake server
def stop(v: int) -> str:
    return json.dumps({"observation": "a street", "thoughts": "deciding", "action": v})


def choice(label: str, n: int, score: float = 0.9) -> str:
    return json.dumps({"thoughts": "t", "observation": {chr(65 + i): "view" for i in range(n)}, "action": label,
                       "score": score})


def body_images(body) -> list[np.ndarray]:
    """Every image of the last user turn of an OpenAI request body, decoded (RGB)."""
    users = [m for m in body["messages"] if m["role"] == "user"]
    out = []
    for p in users[-1]["content"]:
        if p.get("type") == "image_url":
            url = p["image_url"]["url"] if isinstance(p["image_url"], dict) else p["image_url"]
            data = base64.b64decode(url.split(",", 1)[1])
            out.append(np.asarray(Image.open(io.BytesIO(data)).convert("RGB")))
    return out


def magenta_pixels(img: np.ndarray) -> int:
    d = np.abs(img.astype(int) - np.asarray(ROUTE_RGB)).max(axis=2)
    return int(np.count_nonzero(d <= 40))


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)


def run_m1(city, control=None):
    script = phase_script([stop(0), stop(0), stop(1)], [choice("A", 1), choice("B", 4)])
    kw = {"control": control} if control else {}
    with server("openai", script) as srv:
        factory = lambda: compose(CitySeekerVLMAgent(spec("openai", srv), hfov_deg=60.0, crop_size=(40, 20),  # noqa: E731
                                                     retry=FAST_RETRY, timeout_s=5, **kw), "M1(size_px=128)")
        row = EpisodeRunner(city, factory, "vlm-cityseeker", strategies="M1(size_px=128)").run(
            graph_task(city), 0, "cityseeker-v1", 10)
        log = list(srv.log)
    return row, log


def test_map_reaches_the_model_as_an_extra_image_of_every_request(tmp_path):
    city = cross_city(tmp_path)
    row, log = run_m1(city)
    assert row["error"] is None and row["trajectory"] == ["s", "c", "e"] and row["actions"] == [0, 1, -1]
    assert len(log) == 5
    # stop requests: panorama + map; choice requests: the crops + map; the map is last, after its label
    assert [len(r.images) for r in log] == [2, 2, 2, 5, 2]
    for r in log:
        imgs = body_images(r.body)
        assert [(i.width, i.height) for i in r.images][-1] == (128, 128)
        assert imgs[-1].shape == (128, 128, 3) and magenta_pixels(imgs[-1]) >= 40
        assert all(magenta_pixels(i) == 0 for i in imgs[:-1])  # the camera pictures carry no route colour
        assert user_texts(r)[-1] == MAP_LABEL
    st = row["agent_stats"]
    assert st["extra_images"] == 3 and st["strategy"]["images"] == {"M1": 3}
    assert [t.get("extra_images") for t in st["trace"]] == [[MAP_LABEL]] * 3
    d = row["details"]
    assert d["privileged"] is True and [u["id"] for u in d["strategies"]] == ["M1"]


def test_no_map_control_withholds_the_route_map(tmp_path):
    city = cross_city(tmp_path)
    row, log = run_m1(city, control="no-map")
    assert row["error"] is None and [len(r.images) for r in log] == [1, 1, 1, 4, 1]
    assert all(user_texts(r)[-2:] == [MAP_LABEL, NO_MAP_TEXT] for r in log)


def test_run_json_records_the_map_ablation(tmp_path):
    from fakes import FakeOpenAIServer
    from test_run_vlm_arena import db_rows, invoke
    from urbanarena.tasks.schema import CityRef, TaskFile
    from urbanarena.world.city_io import save_city

    city = cross_city(tmp_path)
    city_dir = save_city(city, tmp_path / "city")
    task_file = TaskFile(city=CityRef(name=city.name, content_hash=city.content_hash), tasks=[graph_task(city)]).save(
        tmp_path / "tasks.json")
    script = phase_script([stop(0), stop(0), stop(1)], [choice("A", 1), choice("B", 4)])
    with FakeOpenAIServer(script) as srv:
        r = invoke("run", "--city", city_dir, "--tasks", task_file, "--agent", "vlm-cityseeker",
                   "--model", f"openai-compatible:{srv.base_url}:fake", "--out", tmp_path / "run",
                   "--strategy", "M1(size_px=160)", "-p", "hfov_deg=60", "-p", "crop_size=[40, 20]")
        log = list(srv.log)
    assert r.exit_code == 0, r.output
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["privileged"] is True and meta["strategies"]["spec"] == "M1(size_px=160,margin_m=40.0)"
    [item] = meta["strategies"]["items"]
    assert item["title"] == "route map (map ablation)" and item["privileged"] is True
    [row] = db_rows(tmp_path / "run")
    assert row["tc_exact"] == 1.0 and json.loads(row["details"])["privileged"] is True
    assert all(magenta_pixels(body_images(q.body)[-1]) >= 40 for q in log)
