"""``urbanarena play`` of continuous-mode (``urbanground``) tasks through its HTTP API (FastAPI TestClient).

Suite (``web_continuous_util``): an L1 orientation question (the practice task), an L2 short walk and an L5
walk with a road closure announced after 30 simulated seconds, on the fixture city. The participant plays
the ug-oracle's actions (the L2 walk after five map actions written out here). Checked against a fresh
:class:`ContinuousEnv` given the same actions directly (no runner, no web layer): the trajectory samples
(exact floats), every image shown (first-person view pixels from a second renderer, map pixels), the
notices, and the score (arrival: the final sample within 15 m of the goal read from the suite JSON). Also:
tokens, the refusal of malformed actions (nothing consumed), the time limit, a mixed task set.
"""

from __future__ import annotations

import json
import math
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from urbanarena.agents.vlm.urbanground import state_text  # noqa: E402
from urbanarena.errors import UrbanArenaError  # noqa: E402
from urbanarena.render.scene3d.context import gl_unavailable_reason  # noqa: E402
from urbanarena.runner.store import STORE_FILE, Store  # noqa: E402
from urbanarena.tasks.families.urbanground import UrbanGroundFamily  # noqa: E402
from urbanarena.tasks.metrics import urbanground as ug  # noqa: E402
from urbanarena.web.app import create_play_app  # noqa: E402
from urbanarena.web.auth import ParticipantTokens  # noqa: E402
from urbanarena.web.play import open_play, play_service_class  # noqa: E402
from urbanarena.web.play_continuous import ContinuousPlayService  # noqa: E402
from web_continuous_util import MAP_SCRIPT, continuous_study, direct_run, goal_distance_m, play_all  # noqa: E402
from web_util import decode_data_url  # noqa: E402

pytestmark = pytest.mark.skipif(gl_unavailable_reason() is not None,
                                reason=f"3D renderer unavailable: {gl_unavailable_reason()}")

@pytest.fixture(scope="module")
def home(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("URBANARENA_HOME", str(tmp_path_factory.mktemp("ugwebhome")))
    yield
    mp.undo()


@pytest.fixture(scope="module")
def study(home, tmp_path_factory):
    return continuous_study(str(tmp_path_factory.getbasetemp() / "ugwebstudy"))


@pytest.fixture(scope="module")
def play(study, tmp_path_factory):
    reg, tokens = ParticipantTokens.issue(["alice", "bob"])
    run_dir = tmp_path_factory.mktemp("ugplay") / "run"
    svc = open_play(str(study["city_dir"]), str(study["suite"]), reg, run_dir, practice_count=1, time_limit_s=None)
    yield {"service": svc, "tokens": tokens, "run_dir": run_dir, "app": create_play_app(svc)}
    svc.close()


def _h(token):
    return {"Authorization": f"Bearer {token}"}


def _suite_json(study):
    return {t["task_id"]: t for t in json.loads(study["suite"].read_text())["tasks"]}


def test_continuous_tasks_get_the_continuous_service_and_page_and_need_a_token(play, study):
    svc = play["service"]
    assert type(svc) is ContinuousPlayService and svc.family.name == "urbanground"
    assert svc.protocol_id == "urbanground-v1" and svc.max_steps == 100  # the family's step limit
    assert [t.category for t in svc.plan.practice] == ["l1_orientation"]
    c = TestClient(play["app"])
    for method, url in [("GET", "/"), ("GET", "/api/state"), ("POST", "/api/start"), ("POST", "/api/act"),
                        ("GET", "/static/play_continuous.js")]:
        assert c.request(method, url).status_code == 401, url
        assert c.request(method, url, headers=_h("x" * 43)).status_code == 401, url
    page = c.get("/", headers=_h(play["tokens"]["alice"]))
    assert page.status_code == 200 and "/static/play_continuous.js" in page.text and "/static/play.js" not in page.text
    assert "© OpenStreetMap contributors" in page.text
    assert c.get("/static/play_continuous.js", headers=_h(play["tokens"]["alice"])).status_code == 200
    # one motion model per study: arena + continuous tasks are refused
    arena_like = study["tasks"]["l2_short_range"].model_copy(update={"family": "cityarena"})
    with pytest.raises(UrbanArenaError, match="mixes arena: cityarena; continuous: urbanground"):
        play_service_class([study["tasks"]["l2_short_range"], arena_like])


def test_bad_actions_are_refused_with_a_reason_and_consume_nothing(play, study):
    c = TestClient(play["app"])
    h = _h(play["tokens"]["bob"])
    assert c.post("/api/consent", headers=h).json()["phase"] == "ready"
    ep = c.post("/api/start", headers=h).json()["episode"]
    assert ep["practice"] and ep["step"] == 0 and ep["mode"] == "first_person"
    q = study["tasks"]["l1_orientation"]
    # the question's options, as the task text lists them
    assert [o["text"] for o in ep["options"]] == q.extra["options"] and [o["letter"] for o in ep["options"]] == list(
        "ABCD")
    assert ep["allowed"] == ["move", "sprint", "look", "open_map", "terminate"]
    bad = [
        ({"action": "fly"}, "unknown action 'fly'"),
        ({"kind": "W"}, "unknown action None"),
        ({"action": "move", "dir": "up", "seconds": 1}, "dir must be forward, backward, left or right"),
        ({"action": "move", "dir": "forward", "seconds": "fast"}, "seconds must be a number"),
        ({"action": "look", "yaw": float("inf")}, "must be"),
        ({"action": "move", "dir": "forward", "memory": "notes"}, "move has no field memory"),
        ({"action": "parse_error"}, "parse_error"),
        ({"action": "map_pan", "east": 10}, "map_pan is unavailable in first_person mode"),
        ({"action": "terminate", "answer": "x" * 2001}, "at most 2000 characters"),
        ("move", "JSON object"),
    ]
    for action, why in bad:
        body = json.dumps({"seq": ep["seq"], "action": action}, allow_nan=True)
        r = c.post("/api/act", headers={**h, "Content-Type": "application/json"}, content=body)
        assert r.status_code == 422, (action, r.status_code, r.text)
        assert why in r.json()["detail"], (action, r.json())
    assert c.post("/api/act", headers=h, json={"seq": ep["seq"] + 1, "action": {"action": "open_map"}}).status_code == 409
    assert c.post("/api/act", headers=h, json={"seq": "1", "action": {"action": "open_map"}}).status_code == 422
    st = c.get("/api/state", headers=h).json()["episode"]
    assert st["step"] == 0 and st["seq"] == ep["seq"]  # nothing was consumed
    # in map mode the first-person actions are the refused ones
    st = c.post("/api/act", headers=h, json={"seq": st["seq"], "action": {"action": "open_map"}}).json()["episode"]
    assert st["mode"] == "map" and st["view"] is None and st["map"].startswith("data:image/png")
    assert st["allowed"] == ["map_select", "map_pan", "map_zoom", "close_map", "terminate"]
    r = c.post("/api/act", headers=h, json={"seq": st["seq"], "action": {"action": "move", "dir": "forward"}})
    assert r.status_code == 422 and "move is unavailable in map mode (close the map first)" in r.json()["detail"]
    # answering with the option's letter ends the practice task; its success is shown, nothing is stored
    st = c.post("/api/act", headers=h, json={"seq": st["seq"], "action": {"action": "terminate",
                                                                             "answer": str(q.answer)}}).json()
    assert st["phase"] == "ready" and st["last_result"]["practice"]
    assert st["last_result"]["score"] == 1.0 and st["last_result"]["stop_reason"] == "terminate"
    assert st["last_result"]["steps"] == 2
    with Store(play["run_dir"] / STORE_FILE, readonly=True) as s:
        assert [r for r in s.rows() if r["agent"] == "human:bob"] == []


def test_play_to_completion_equals_a_direct_env_run(play, study):
    from urbanarena.env.continuous import SceneViewObserver

    city = study["city"]
    fam = UrbanGroundFamily()
    suite = _suite_json(study)
    oracle = study["oracle_rows"]
    c = TestClient(play["app"])
    played = play_all(c, _h(play["tokens"]["alice"]), study)
    for _actions, _shown, st in played.values():
        assert st["phase"] in ("ready", "done") and st["last_result"]["stop_reason"] == "terminate"
        if st["last_result"]["practice"]:
            assert st["last_result"]["score"] == 1.0  # the option's text is read as its letter
    assert {study["tasks"][k].task_id for k in ("l2_short_range", "l5_road_closure")} <= set(played)
    with Store(play["run_dir"] / STORE_FILE, readonly=True) as s:
        rows = {r["task_id"]: r for r in s.rows() if r["agent"] == "human:alice"}
        cfg = {x["config_hash"]: x["config"] for x in s.configs()}
    assert set(rows) == {study["tasks"][k].task_id for k in ("l2_short_range", "l5_road_closure")}

    # the L2 walk: every image shown equals the direct env's, rendered by a second observer
    task = study["tasks"]["l2_short_range"]
    actions, shown, _ = played[task.task_id]
    from urbanarena.render.scene3d.styles import settings_for_style

    # play renders in the commands' default style (realistic)
    env, obs = direct_run(city, task, actions, observer=SceneViewObserver(city, width=640, height=360,
                                                                          settings=settings_for_style()))
    assert len(shown) == len(obs) - 1 == len(actions)  # the last observation ends the episode (not shown)
    for k, (p, o) in enumerate(zip(shown, obs)):
        assert p["step"] == k and p["mode"] == o["mode"]
        if o["mode"] == "map":
            assert p["view"] is None and (decode_data_url(p["map"]) == o["map"]).all(), k
        else:
            assert p["map"] is None and (decode_data_url(p["view"]) == o["view"]).all(), k
        assert p["state_text"] == state_text(o["text"]["state"]) and p["last_result"] == o["text"]["last_result"]
        assert p["recent_actions"] == o["text"]["recent_actions"]
    assert [p["mode"] for p in shown[:6]] == ["first_person", "map", "map", "map", "map", "first_person"]
    assert "selected point: lat" in shown[4]["state_text"] and "shows 150 m from top to bottom" in shown[4]["state_text"]
    row = rows[task.task_id]
    assert row["agent"] == "human:alice" and row["seed"] == 0 and row["stop_reason"] == "terminate"
    assert row["actions"] == actions and row["steps"] == len(actions) and row["error"] is None
    assert row["details"]["samples"] == [[s.t_s, s.x_m, s.y_m, s.yaw_deg, s.pitch_deg, s.step, s.checkpoint]
                                         for s in env.samples]
    assert row["details"]["sim_time_s"] == env.sim_time_s
    assert math.isclose(env.sim_time_s, oracle[task.task_id]["details"]["sim_time_s"] + len(MAP_SCRIPT), abs_tol=1e-9)
    final = row["details"]["samples"][-1][1:3]
    assert goal_distance_m(city, suite[task.task_id], final) <= 15.0 and row["metrics"]["sr"] == 1.0
    assert math.isclose(row["metrics"]["final_distance_m"], goal_distance_m(city, suite[task.task_id], final),
                        abs_tol=1e-9)
    t = ug.Trajectory.from_samples(env.samples)
    assert row["metrics"] == json.loads(json.dumps(fam.score_trajectory(task, city, "urbanground-v1", t,
                                                                        steps=len(actions))))
    assert len(row["agent_stats"]["decision_seconds"]) == len(actions)
    config = cfg[row["config_hash"]]
    assert config["agent"]["name"] == "human" and config["family"]["name"] == "urbanground"
    assert config["protocol"]["id"] == "urbanground-v1" and config["max_steps"] == 100
    assert config["extra"] == {"continuous_view": {"width": 640, "height": 360, "hfov_deg": 90.0},
                               "render_style": "realistic"}

    # the L5 walk: the oracle's row, and the closure notice shown when the env delivers it (>= 30 s)
    task = study["tasks"]["l5_road_closure"]
    actions, shown, _ = played[task.task_id]
    env, obs = direct_run(city, task, actions)
    assert [p["notices"] for p in shown] == [o["text"]["notices"] for o in obs[:len(shown)]]
    first = next(k for k, p in enumerate(shown) if p["notices"])
    assert obs[first]["text"]["state"]["time_s"] >= 30.0 > obs[first - 1]["text"]["state"]["time_s"]
    row, o = rows[task.task_id], oracle[task.task_id]
    assert row["actions"] == o["actions"] == actions
    assert row["details"]["samples"] == o["details"]["samples"] == [
        [s.t_s, s.x_m, s.y_m, s.yaw_deg, s.pitch_deg, s.step, s.checkpoint] for s in env.samples]
    assert row["metrics"] == o["metrics"] and row["metrics"]["sr"] == 1.0 and row["metrics"]["spr"] == 1.0
    assert row["details"]["closures"] == o["details"]["closures"]
    assert goal_distance_m(city, suite[task.task_id], row["details"]["samples"][-1][1:3]) <= 15.0
    # tokens never reach the RUN_DIR
    for f in play["run_dir"].rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            assert all(tok.encode() not in data for tok in play["tokens"].values()), f


def test_time_limit_ends_the_episode_and_scores_the_trajectory_so_far(study, tmp_path):
    city = study["city"]
    reg, tokens = ParticipantTokens.issue(["carol"])
    svc = open_play(str(study["city_dir"]), str(study["suite"]), reg, tmp_path / "run", practice_count=1,
                    time_limit_s=3.0, per_participant=1)
    try:
        c = TestClient(create_play_app(svc))
        h = _h(tokens["carol"])
        c.post("/api/consent", headers=h)
        ep = c.post("/api/start", headers=h).json()["episode"]
        q = study["tasks"]["l1_orientation"]
        st = c.post("/api/act", headers=h, json={"seq": ep["seq"], "action": {"action": "terminate",
                                                                                "answer": str(q.answer)}}).json()
        assert st["phase"] == "ready"
        ep = c.post("/api/start", headers=h).json()["episode"]
        assert 0 < ep["remaining_s"] <= 3.0
        task = next(t for t in study["tasks"].values() if UrbanGroundFamily().prompt(t) == ep["instruction"])
        move = {"action": "move", "dir": "forward", "seconds": 1.0}
        st = c.post("/api/act", headers=h, json={"seq": ep["seq"], "action": move}).json()
        assert st["phase"] == "episode" and st["episode"]["step"] == 1
        t0 = time.monotonic()
        while st["phase"] == "episode":  # the participant does nothing more: the server ends it on time
            assert time.monotonic() - t0 < 30
            time.sleep(0.2)
            st = c.get("/api/state", headers=h).json()
        assert st["last_result"]["stop_reason"] == "TIME_LIMIT" and st["last_result"]["steps"] == 1
    finally:
        svc.close()
    with Store(tmp_path / "run" / STORE_FILE, readonly=True) as s:
        [row] = s.rows()
    env, _ = direct_run(city, task, [move])
    assert row["task_id"] == task.task_id and row["stop_reason"] == "TIME_LIMIT" and row["error"] is None
    assert row["steps"] == 1 and row["actions"] == [move]
    assert row["details"]["stop_reason_detail"] == "time limit of 3 s reached"
    assert row["details"]["samples"] == [[s.t_s, s.x_m, s.y_m, s.yaw_deg, s.pitch_deg, s.step, s.checkpoint]
                                         for s in env.samples]
    walked = math.dist(row["details"]["samples"][0][1:3], row["details"]["samples"][-1][1:3])
    assert math.isclose(row["metrics"]["path_length_m"], walked, abs_tol=1e-9) and walked <= 1.4 + 1e-9
    d = goal_distance_m(city, _suite_json(study)[task.task_id], row["details"]["samples"][-1][1:3])
    assert row["metrics"]["sr"] == (1.0 if d <= 15.0 else 0.0) == 0.0
    assert row["agent_stats"]["time_limit_reached"] is True
