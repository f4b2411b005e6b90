"""``urbanarena replay``: the replay API over the arena oracle's traced run of the fixture suite.

Positions re-derived from the stored poses equal the stored positions; every state has a view and a
map; the trace route serves the trace folder and nothing outside it; unknown episodes and states 404.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from urbanarena.render.scene3d.context import gl_unavailable_reason  # noqa: E402
from urbanarena.report.replay_data import RunReplay  # noqa: E402
from urbanarena.web.auth import ParticipantTokens  # noqa: E402
from urbanarena.web.replay import create_replay_app  # noqa: E402
from web_util import decode_png, fixture_study  # noqa: E402

pytestmark = pytest.mark.skipif(gl_unavailable_reason() is not None,
                                reason=f"3D renderer unavailable: {gl_unavailable_reason()}")


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("URBANARENA_HOME", str(tmp_path_factory.mktemp("replayhome")))
    yield
    mp.undo()


@pytest.fixture(scope="module")
def replay(home, tmp_path_factory):
    study = fixture_study(str(tmp_path_factory.getbasetemp() / "webstudy"))
    rr = RunReplay(study["oracle_run"])
    reg, tokens = ParticipantTokens.issue(["viewer"])
    client = TestClient(create_replay_app(rr, reg))
    client.headers["Authorization"] = f"Bearer {tokens['viewer']}"
    return {"rr": rr, "client": client, "study": study}


def test_episode_list_and_states(replay):
    c, rr = replay["client"], replay["rr"]
    bare = TestClient(c.app)
    r = bare.get("/api/episodes")
    assert r.status_code == 401 and r.json()["detail"].startswith("viewer token required: open the link `urbanarena replay`")
    page = bare.get("/", headers={"accept": "text/html"})
    assert page.status_code == 401 and "viewer token required" in page.text and "participant" not in page.text
    eps = c.get("/api/episodes").json()["episodes"]
    assert len(eps) == 7 and all(e["arena"] for e in eps)
    nav = next(e for e in eps if "/map_navigation/" in e["task_id"])
    d = c.get(f"/api/episodes/{nav['id']}").json()
    row = rr.rows[nav["id"]]
    assert d["n_states"] == row["steps"] + 1 == len(d["poses"]) and len(d["steps"]) == row["steps"]
    stored = row["details"]["positions"]  # the runner's positions, start first
    assert np.allclose([[p["x_m"], p["y_m"]] for p in d["poses"]], stored, atol=1e-9)
    assert [s["action"] for s in d["steps"]] == row["actions"]
    assert d["outcome"]["stop_reason"] == "ANSWER" and d["outcome"]["score"] == row["evaluation_score"] == 1.0
    assert d["start_exact"] is True and d["references"] == 1
    # memory comes from the trace (the oracle keeps none: empty strings, not missing)
    assert all(s["memory"] == "" for s in d["steps"][:-1]) and d["steps"][0]["outcome"]["executed"] is True
    last = d["n_states"] - 1
    v = decode_png(c.get(f"/api/episodes/{nav['id']}/view/{last}.png").content)
    m = decode_png(c.get(f"/api/episodes/{nav['id']}/map/{last}.png").content)
    assert v.shape == (360, 640, 3) and m.shape == (480, 480, 3)
    assert np.array_equal(v, rr.episode(nav["id"]).view(last))
    # the map changes as the trajectory grows (blue path pixels drawn only from state 1 on)
    m0 = decode_png(c.get(f"/api/episodes/{nav['id']}/map/0.png").content)
    assert not np.array_equal(m0, m)
    ref = decode_png(c.get(f"/api/episodes/{nav['id']}/reference/0.png").content)
    assert ref.shape[2] == 3
    for bad in [f"/api/episodes/{nav['id']}/view/{last + 1}.png", f"/api/episodes/{nav['id']}/view/-1.png",
                "/api/episodes/9999", f"/api/episodes/{nav['id']}/reference/5.png"]:
        assert c.get(bad).status_code in (404, 422), bad


def test_trace_route_is_confined(replay):
    c, rr = replay["client"], replay["rr"]
    eps = c.get("/api/episodes").json()["episodes"]
    eid = next(e["id"] for e in eps if "/map_navigation/" in e["task_id"])
    ok = c.get(f"/api/episodes/{eid}/trace/steps.jsonl")
    assert ok.status_code == 200 and json.loads(ok.text.splitlines()[0])["step"] == 1
    assert c.get(f"/api/episodes/{eid}/trace/images/step_0001_map.png").status_code == 200
    trace_dir = rr.episode(eid).trace_dir
    assert (trace_dir / ".." / ".." / "run.json").is_file()  # what a naive join would serve
    for bad in ["..%2f..%2frun.json", "%2e%2e/%2e%2e/episodes.sqlite", "images/..%2f..%2f..%2frun.json",
                "%2Fetc%2Fpasswd", "images%5c..%5c..%5crun.json"]:
        r = c.get(f"/api/episodes/{eid}/trace/{bad}")
        assert r.status_code == 404 and "format" not in r.text, bad
