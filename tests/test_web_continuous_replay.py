"""Replay (``urbanarena replay``) and video of continuous-mode episodes (``report/replay_continuous.py``).

A participant plays the suite of ``web_continuous_util`` through the HTTP API (the L2 walk with five map
actions first; the L5 walk with its closure notice at 30 simulated seconds). The replay of the stored rows
must show, at every compared state, the pixels the participant was shown (the first-person view re-rendered
from the stored trajectory sample, pedestrians and barriers at its simulated time; the map in map mode, by
executing the stored actions again); the overview map draws the trajectory so far and the closure; the
replay server serves the same images; a GIF of an episode has ``steps + 1`` frames.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402
from PIL import Image  # noqa: E402

from urbanarena.render.maps import map_renderer_for  # noqa: E402
from urbanarena.render.scene3d.context import gl_unavailable_reason  # noqa: E402
from urbanarena.report.replay_continuous import CLOSURE_RGB, ContinuousEpisodeReplay  # noqa: E402
from urbanarena.report.replay_data import PATH_RGB, RunReplay  # noqa: E402
from urbanarena.report.video import write_episode_video  # noqa: E402
from urbanarena.runner.store import STORE_FILE, Store  # noqa: E402
from urbanarena.web.app import create_play_app  # noqa: E402
from urbanarena.web.auth import ParticipantTokens  # noqa: E402
from urbanarena.web.play import open_play  # noqa: E402
from urbanarena.web.replay import create_replay_app  # noqa: E402
from web_continuous_util import MAP_SCRIPT, continuous_study, play_all  # noqa: E402
from web_util import decode_data_url, decode_png  # noqa: E402

pytestmark = pytest.mark.skipif(gl_unavailable_reason() is not None,
                                reason=f"3D renderer unavailable: {gl_unavailable_reason()}")


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("URBANARENA_HOME", str(tmp_path_factory.mktemp("ugreplayhome")))
    study = continuous_study(str(tmp_path_factory.getbasetemp() / "ugwebstudy"))
    reg, tokens = ParticipantTokens.issue(["dana"])
    run_dir = tmp_path_factory.mktemp("ugreplay") / "run"
    svc = open_play(str(study["city_dir"]), str(study["suite"]), reg, run_dir, practice_count=1, time_limit_s=None)
    try:
        shown = play_all(TestClient(create_play_app(svc)), {"Authorization": f"Bearer {tokens['dana']}"}, study)
    finally:
        svc.close()
    with Store(run_dir / STORE_FILE, readonly=True) as s:
        rows = {r["task_id"]: r for r in s.rows()}
    yield {"study": study, "run_dir": run_dir, "shown": shown, "rows": rows}
    mp.undo()


def _shown_image(payload):
    return decode_data_url(payload["map"] if payload["mode"] == "map" else payload["view"])


def test_states_views_and_maps_are_what_the_participant_saw(played):
    study, rows = played["study"], played["rows"]
    rr = RunReplay(played["run_dir"])
    listed = {e["task_id"]: e for e in rr.episodes()}
    for cat in ("l2_short_range", "l5_road_closure"):
        e = listed[study["tasks"][cat].task_id]
        assert e["replayable"] and e["continuous"] and not e["arena"] and e["score"] == 1.0

    # L2: map actions, then the walk; every state compared
    task = study["tasks"]["l2_short_range"]
    row = rows[task.task_id]
    ep = rr.episode(row["id"])
    assert isinstance(ep, ContinuousEpisodeReplay)
    actions, shown, _ = played["shown"][task.task_id]
    assert ep.n_states == row["steps"] + 1 == len(actions) + 1
    assert ep.replay_exact is True and ep.map_shown is True and ep.start_exact is True
    assert ep.modes[:6] == ["first_person", "map", "map", "map", "map", "first_person"]
    for k, payload in enumerate(shown):  # states 0 .. steps-1 were shown (the last ended the episode)
        assert (ep.view(k) == _shown_image(payload)).all(), k
    checkpoints = [s for s in row["details"]["samples"] if s[6]]
    assert [(p["x_m"], p["y_m"], p["yaw_deg"]) for p in ep.summary()["poses"]] == [(s[1], s[2], s[3])
                                                                                   for s in checkpoints]
    steps = ep.steps()
    assert [s.action for s in steps[:5]] == ["open_map", "map_zoom factor=0.5", "map_pan east=20 north=-10",
                                             "map_select x=0.25 y=0.75", "close_map"]
    assert steps[-1].action == "terminate"
    o = ep.outcome()
    assert o["stop_reason"] == "terminate" and o["score"] == 1.0 == row["metrics"]["sr"]
    assert f"final distance {row['metrics']['final_distance_m']:.1f} m" in o["message"]
    json.dumps(ep.summary(), allow_nan=False)

    # the overview map: the trajectory so far in the path colour, not yet at state 0
    mid = len(checkpoints) // 2
    k_last = ep.n_states - 1
    mr = map_renderer_for(study["city"], 480, 480)
    x, y = checkpoints[mid][1], checkpoints[mid][2]
    u, v = (int(round(float(a))) for a in mr.world_to_px(x, y))

    def has(img, rgb, r=2):
        patch = img[v - r:v + r + 1, u - r:u + r + 1].reshape(-1, 3).astype(int)
        return bool((np.abs(patch - np.array(rgb)).sum(axis=1) <= 30).any())

    assert has(ep.map(k_last), PATH_RGB) and not has(ep.map(0), PATH_RGB)

    # L5: the barrier appears in the views once announced; sampled states compared
    task = study["tasks"]["l5_road_closure"]
    row = rows[task.task_id]
    ep = rr.episode(row["id"])
    actions, shown, _ = played["shown"][task.task_id]
    first_notice = next(k for k, p in enumerate(shown) if p["notices"])
    for k in sorted({0, first_notice - 1, first_notice, len(shown) // 2, len(shown) - 1}):
        assert (ep.view(k) == _shown_image(shown[k])).all(), k
    assert ep.replay_exact is None and ep.map_shown is True  # the oracle never opened the map
    c = row["details"]["closures"][0]["coords"]
    cx, cy = (c[0][0] + c[-1][0]) / 2, (c[0][1] + c[-1][1]) / 2
    u, v = (int(round(float(a))) for a in mr.world_to_px(cx, cy))
    assert has(ep.map(0), CLOSURE_RGB, r=1)


def test_replay_server_and_video(played, tmp_path):
    study, rows = played["study"], played["rows"]
    task = study["tasks"]["l2_short_range"]
    row = rows[task.task_id]
    _actions, shown, _ = played["shown"][task.task_id]
    rr = RunReplay(played["run_dir"])
    reg, tok = ParticipantTokens.issue(["viewer"])
    c = TestClient(create_replay_app(rr, reg))
    h = {"Authorization": f"Bearer {tok['viewer']}"}
    assert c.get("/api/episodes").status_code == 401
    data = c.get(f"/api/episodes/{row['id']}", headers=h).json()
    assert data["motion"] == "continuous" and data["n_states"] == row["steps"] + 1
    assert data["outcome"]["score"] == 1.0 and data["instruction"].startswith("Walk to ")
    for k in (0, 3, 6):  # first person, map mode, first person again
        r = c.get(f"/api/episodes/{row['id']}/view/{k}.png", headers=h)
        assert r.status_code == 200 and (decode_png(r.content) == _shown_image(shown[k])).all(), k
    assert c.get(f"/api/episodes/{row['id']}/map/2.png", headers=h).status_code == 200
    assert c.get(f"/api/episodes/{row['id']}/view/{row['steps'] + 1}.png", headers=h).status_code == 404
    assert c.get(f"/api/episodes/{row['id']}/reference/0.png", headers=h).status_code == 404
    # a GIF of the episode: one frame per state
    info = write_episode_video(rr.episode(row["id"]), tmp_path / "ep.gif", fps=4)
    assert info.frames == row["steps"] + 1 == len(MAP_SCRIPT) + len(study["oracle_rows"][task.task_id]["actions"]) + 1
    with Image.open(tmp_path / "ep.gif") as im:
        assert im.n_frames == info.frames
