"""``urbanarena play`` through its HTTP API (FastAPI TestClient) on the fixture city's generated suite.

Two participants play every task at once, replaying the arena oracle's actions (object counting
answered "3" by alice, where the truth is 4: MRA 0.5 by hand, |3-4|/4 = 0.25 < 1-theta for theta in
0.50..0.70, 5 of 10 thresholds). Checked against values computed here: each stored score (coordinate
tasks: Euclidean metres from the stored final position to the goal read from the suite JSON, against
its radius), the positions of the oracle's episode, the Williams order, the pixels shown (replayed from
the stored poses), the reference image files; tokens never reach the RUN_DIR or the export.
"""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

import typer  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from PIL import Image  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from urbanarena.render.scene3d.context import gl_unavailable_reason  # noqa: E402
from urbanarena.report.replay_data import RunReplay  # noqa: E402
from urbanarena.runner.store import STORE_FILE, Store  # noqa: E402
from urbanarena.web.app import create_play_app  # noqa: E402
from urbanarena.web.auth import ParticipantTokens  # noqa: E402
from urbanarena.web.play import open_play  # noqa: E402
from urbanarena.web.study import export_anonymised, williams_row  # noqa: E402
from web_util import action_json, decode_data_url, fixture_study, suite_tasks  # noqa: E402

pytestmark = pytest.mark.skipif(gl_unavailable_reason() is not None,
                                reason=f"3D renderer unavailable: {gl_unavailable_reason()}")


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("URBANARENA_HOME", str(tmp_path_factory.mktemp("webhome")))
    yield
    mp.undo()


@pytest.fixture(scope="module")
def study(home, tmp_path_factory):
    return fixture_study(str(tmp_path_factory.getbasetemp() / "webstudy"))


@pytest.fixture(scope="module")
def play(study, tmp_path_factory):
    reg, tokens = ParticipantTokens.issue(["alice", "bob"])
    run_dir = tmp_path_factory.mktemp("play") / "run"
    svc = open_play(str(study["city_dir"]), str(study["suite"]), reg, run_dir, practice_count=1, time_limit_s=None)
    yield {"service": svc, "tokens": tokens, "run_dir": run_dir, "app": create_play_app(svc)}
    svc.close()


def _h(token):
    return {"Authorization": f"Bearer {token}"}


def test_every_route_needs_a_valid_token(play):
    c = TestClient(play["app"])
    for method, url in [("GET", "/"), ("GET", "/api/state"), ("POST", "/api/consent"), ("POST", "/api/start"),
                        ("POST", "/api/act"), ("GET", "/static/play.js")]:
        assert c.request(method, url).status_code == 401, url
        assert c.request(method, url, headers=_h("not-a-token")).status_code == 401, url
        assert TestClient(play["app"], cookies={"ua_token": "x" * 43}).request(method, url).status_code == 401, url
    assert c.get("/healthz").json() == {"ok": True}
    assert c.get("/?token=wrong", follow_redirects=False).status_code == 401
    r = c.get("/api/state", headers=_h(play["tokens"]["bob"]))
    assert r.status_code == 200 and r.json()["participant"] == "bob" and r.json()["phase"] == "consent"
    # the entry link sets an HttpOnly cookie and redirects to a URL without the token
    r = c.get(f"/?token={play['tokens']['alice']}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/"
    # other query parameters (a replay link's episode) survive the redirect; the token does not
    r2 = TestClient(play["app"]).get(f"/?episode=t%2F1+s0&token={play['tokens']['alice']}&step=3",
                                     follow_redirects=False)
    assert r2.status_code == 303 and r2.headers["location"] == "/?episode=t%2F1+s0&step=3"
    assert "httponly" in r.headers["set-cookie"].lower() and "samesite=strict" in r.headers["set-cookie"].lower()
    page = c.get("/")  # the client kept the cookie
    assert page.status_code == 200 and "alice" in page.text and "script-src 'self'" in page.headers[
        "content-security-policy"]
    assert page.headers["referrer-policy"] == "no-referrer"
    assert "© OpenStreetMap contributors" in page.text  # the fixture is an OSM city: the UI carries its attribution


@pytest.mark.parametrize("path", [
    "/static/..%2fapp.py", "/static/%2e%2e/%2e%2e/cli/main.py", "/static/..%2F..%2Fweb%2Fapp.py",
    "/static/%2Fetc%2Fpasswd", "/static//etc/passwd", "/static/.%2e/auth.py", "/static/..%5capp.py",
    "/static/play.js%00.css", "/static/"])
def test_static_route_rejects_traversal(play, path):
    from urbanarena.web.http import STATIC_DIR

    assert (STATIC_DIR / ".." / "app.py").is_file()  # what a naive join of "../app.py" would serve
    c = TestClient(play["app"])
    r = c.get(path, headers=_h(play["tokens"]["alice"]))
    assert r.status_code == 404, (path, r.status_code)
    assert "import" not in r.text and "root:" not in r.text
    assert c.get("/static/play.js", headers=_h(play["tokens"]["alice"])).status_code == 200


def _goal_xy(city, task_json):
    pos = task_json["goals"][-1]["position"]
    return city.frame.to_xy(pos["lat"], pos["lon"])


def _play_all(app, token, tasks_by_instruction, oracle_rows, answers, log):
    """Play every task of one participant: consent, practice, then each scored task with the oracle's actions."""
    c = TestClient(app)
    h = _h(token)
    assert c.post("/api/consent", headers=h).json()["phase"] == "ready"
    while True:
        st = c.get("/api/state", headers=h).json()
        if st["phase"] == "done":
            return
        assert st["phase"] == "ready", st
        st = c.post("/api/start", headers=h).json()
        ep = st["episode"]
        tid = tasks_by_instruction[ep["instruction"]]
        entry = {"task_id": tid, "practice": ep["practice"], "views": [decode_data_url(ep["view"])],
                 "map": ep["map"], "references": [decode_data_url(u) for u in ep["references"]]}
        labels = list(oracle_rows[tid]["actions"])
        if tid in answers:
            labels[-1] = f"ANSWER: {answers[tid]}"
        for i, lab in enumerate(labels):
            r = c.post("/api/act", headers=h, json={"seq": ep["seq"], "action": action_json(lab)})
            assert r.status_code == 200, r.text
            if i == 0:  # the same view again: its action was taken already
                stale = c.post("/api/act", headers=h, json={"seq": ep["seq"], "action": {"kind": "S"}})
                assert stale.status_code == 409
            st = r.json()
            if st["phase"] == "episode":
                ep = st["episode"]
                entry["views"].append(decode_data_url(ep["view"]))
        entry["result"] = st["last_result"]
        log.append(entry)


def test_two_participants_play_concurrently_and_are_scored_like_the_validator(play, study):
    svc = play["service"]
    suite = suite_tasks(study["suite"])
    by_instr = {t["instruction"]: tid for tid, t in suite.items()}
    oracle = study["oracle_rows"]
    count_id = next(tid for tid, t in suite.items() if t["extra"]["task_kind"] == "object_count")
    assert suite[count_id]["answer"] == "4"
    logs = {"alice": [], "bob": []}
    errors = []

    def worker(pid, answers):
        try:
            _play_all(play["app"], play["tokens"][pid], by_instr, oracle, answers, logs[pid])
        except BaseException as e:  # noqa: BLE001 - re-raised in the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=("alice", {count_id: "3"})),
               threading.Thread(target=worker, args=("bob", {}))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors

    # order: the first task of the file is practice, the rest in Williams rows 0 (alice) and 1 (bob)
    ids = list(suite)
    scored = ids[1:]
    for idx, pid in enumerate(["alice", "bob"]):
        played = [e["task_id"] for e in logs[pid]]
        assert played[0] == ids[0] and logs[pid][0]["practice"] is True
        assert logs[pid][0]["result"]["score"] == 1.0  # the practice answer is shown with its score
        assert played[1:] == [scored[j] for j in williams_row(len(scored), idx)]
        assert all("score" not in e["result"] for e in logs[pid][1:])  # scored tasks: no score shown

    city = svc.city
    with Store(play["run_dir"] / STORE_FILE, readonly=True) as s:
        rows = list(s.rows())
    assert sorted((r["agent"], r["task_id"]) for r in rows) == sorted(
        (f"human:{p}", t) for p in ("alice", "bob") for t in scored)  # practice never stored
    assert {r["config_hash"] for r in rows} == {svc.config_hash}
    for r in rows:
        t = suite[r["task_id"]]
        kind = t["extra"]["task_kind"]
        o = oracle[r["task_id"]]
        assert r["stop_reason"] == "ANSWER"
        assert r["details"]["positions"] == o["details"]["positions"]  # same actions -> same walk
        if t["answer_metric"] == "coordinate_match":
            fx, fy = r["details"]["final_position"]["x_m"], r["details"]["final_position"]["y_m"]
            gx, gy = _goal_xy(city, t)
            want = 1.0 if math.hypot(fx - gx, fy - gy) < t["success_radius_m"] else 0.0
            assert want == 1.0 and r["evaluation_score"] == want, (kind, r["metrics"]["message"])
        elif kind == "object_count" and r["agent"] == "human:alice":
            assert r["details"]["answer"] == "3" and r["evaluation_score"] == 0.5
        else:
            assert r["details"]["answer"] == t["answer"] and r["evaluation_score"] == 1.0
        assert len(r["agent_stats"]["decision_seconds"]) == r["steps"]

    # what the participant saw: the views the replay renders from the stored poses, pixel for pixel;
    # the task's reference files; the location map only where the task asks for it
    rr = RunReplay(play["run_dir"])
    nav = next(e for e in logs["alice"] if suite[e["task_id"]]["extra"]["task_kind"] == "map_navigation")
    row = next(r for r in rows if r["agent"] == "human:alice" and r["task_id"] == nav["task_id"])
    ep = rr.episode(row["id"])
    assert len(nav["views"]) == ep.n_states - 1 == row["steps"]  # no view after the final ANSWER
    for k, shown in enumerate(nav["views"]):
        assert np.array_equal(shown, ep.view(k)), k
    ref_file = Path(study["suite"]).parent / suite[nav["task_id"]]["extra"]["reference_images"][0]
    assert np.array_equal(nav["references"][0], np.asarray(Image.open(ref_file).convert("RGB")))
    assert decode_data_url(nav["map"]).shape == (640, 640, 3)
    # cityarena-v1 (the play default): the location map for every kind but localization (360CityArena's loader)
    assert all((e["map"] is None) == (suite[e["task_id"]]["extra"]["task_kind"] == "localization") for e in logs["alice"])

    # tokens are nowhere in RUN_DIR; the export names no participant
    for f in play["run_dir"].rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            assert not any(tok.encode() in data for tok in play["tokens"].values()), f
    out = play["run_dir"].parent / "export.jsonl"
    cli = typer.Typer()
    from urbanarena.cli.play_cmd import play as play_cmd, play_export

    cli.command("play")(play_cmd)
    cli.command("play-export")(play_export)
    res = CliRunner().invoke(cli, ["play-export", str(play["run_dir"]), "--out", str(out)])
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert "alice" not in text and "bob" not in text
    assert not any(tok in text for tok in play["tokens"].values())
    recs = [json.loads(line) for line in text.splitlines()]
    assert len(recs) == len(rows) and {r["agent"] for r in recs} == {"human:P01", "human:P02"}
    assert all("started_at" not in r and "id" not in r for r in recs)
    assert export_anonymised(play["run_dir"], out)["participants"] == 2
    # the report labels the human baseline as such, with its participant count and no names
    from urbanarena.report.runs import load_runs

    (hr,) = load_runs([play["run_dir"]], n_resamples=100, load_context=False)
    assert hr.label == "human (2 participants)"


def test_bad_actions_are_refused(play):
    c = TestClient(play["app"])
    h = _h(play["tokens"]["bob"])
    assert c.post("/api/act", headers=h, json={"seq": "1", "action": {"kind": "W"}}).status_code == 422
    for action in [{"kind": "PARSE_ERROR"}, {"kind": "JUMP"}, {"kind": "W", "magnitude": "HUGE"}, "W",
                   {"kind": "ANSWER"}]:
        r = c.post("/api/act", headers=h, json={"seq": 1, "action": action})
        assert r.status_code == 422, action


def test_time_limit_ends_the_episode(study, tmp_path):
    reg, tokens = ParticipantTokens.issue(["tim"])
    run_dir = tmp_path / "run"
    svc = open_play(str(study["city_dir"]), str(study["suite"]), reg, run_dir, practice_count=0, time_limit_s=1.5,
                    per_participant=1)
    try:
        c = TestClient(create_play_app(svc))
        h = _h(tokens["tim"])
        c.post("/api/consent", headers=h)
        ep = c.post("/api/start", headers=h).json()["episode"]
        assert 0 < ep["remaining_s"] <= 1.5
        st = c.post("/api/act", headers=h, json={"seq": ep["seq"], "action": {"kind": "D"}}).json()
        assert st["phase"] == "episode"
        t0 = time.monotonic()
        while st["phase"] == "episode" and time.monotonic() - t0 < 20:  # the participant does nothing more
            time.sleep(0.25)
            st = c.get("/api/state", headers=h).json()
        assert st["phase"] == "done" and st["last_result"]["stop_reason"] == "TIME_LIMIT"
        with Store(run_dir / STORE_FILE, readonly=True) as s:
            (row,) = list(s.rows())
        assert row["stop_reason"] == "TIME_LIMIT" and row["evaluation_score"] == 0.0 and row["steps"] == 1
        assert row["actions"] == ["D"] and row["agent"] == "human:tim"
    finally:
        svc.close()


def test_non_loopback_host_needs_public(study, tmp_path):
    from urbanarena.cli.play_cmd import play as play_cmd

    cli = typer.Typer()
    cli.command("play")(play_cmd)
    cli.command("other")(lambda: None)
    out = tmp_path / "run"
    for host in ("0.0.0.0", "192.168.1.20"):
        r = CliRunner().invoke(cli, ["play", "--city", str(study["city_dir"]), "--tasks", str(study["suite"]),
                                     "--host", host, "--out", str(out)])
        assert r.exit_code == 2 and "error: refusing to bind" in r.output, r.output
    assert not out.exists()


def test_a_busy_port_is_refused_before_tokens_or_run_dir(study, tmp_path):
    """Issue 29 item 14: exit 2 (the exit-status table's code for a bad choice detected before writing),
    no token printed, no RUN_DIR, no token file."""
    import socket

    from urbanarena.cli.play_cmd import play as play_cmd

    cli = typer.Typer()
    cli.command("play")(play_cmd)
    cli.command("other")(lambda: None)
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    out, tok = tmp_path / "run", tmp_path / "tokens.tsv"
    try:
        r = CliRunner().invoke(cli, ["play", "--city", str(study["city_dir"]), "--tasks", str(study["suite"]),
                                     "--port", str(port), "--out", str(out), "--tokens", str(tok),
                                     "--participant", "p1"])
    finally:
        busy.close()
    assert r.exit_code == 2, r.output
    assert f"--port {port}" in r.output and "already in use" in r.output
    assert "token=" not in r.output and not out.exists() and not tok.exists()
