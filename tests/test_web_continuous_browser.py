"""Continuous-mode play and replay in a real browser: Playwright driving Debian's Chromium headless.

A participant plays the L1 practice question (Enter, the option's letter, Enter) and the L2 walk of the
``web_continuous_util`` suite by key presses on a live server: M opens the map, + zooms, the up arrow pans,
a click on the map selects a point, M closes it; then arrow keys turn the camera in 10 degree steps and
W walks (digits choose the seconds), following the ug-oracle's checkpoints (a key-press plan computed here
on a fresh env); Enter twice stops. The stored row must hold the actions the keys stand for, the trajectory
of a direct env run of them, and success (the final sample within 15 m of the goal read from the suite
JSON). Then the replay page steps through the episode. Screenshots go to a temporary folder, or to
``docs/screenshots/`` when ``URBANARENA_WRITE_SCREENSHOTS=1``.

Skips with the reason when Playwright or a Chromium executable is missing (as ``test_web_browser.py``).
"""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright not installed (pip install playwright)")

from test_web_browser import SHOTS, LiveServer, _chromium, _phase_seq, _wait_change, _watch  # noqa: E402
from urbanarena.render.scene3d.context import gl_unavailable_reason  # noqa: E402
from urbanarena.report.replay_data import RunReplay  # noqa: E402
from urbanarena.runner.store import STORE_FILE, Store  # noqa: E402
from urbanarena.tasks.families.urbanground import UrbanGroundFamily  # noqa: E402
from urbanarena.web.app import create_play_app  # noqa: E402
from urbanarena.web.auth import ParticipantTokens  # noqa: E402
from urbanarena.web.play import open_play  # noqa: E402
from urbanarena.web.replay import create_replay_app  # noqa: E402
from web_continuous_util import continuous_study, direct_run, goal_distance_m  # noqa: E402

pytestmark = [
    pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"3D renderer unavailable: {gl_unavailable_reason()}"),
    pytest.mark.skipif(_chromium() is None, reason="no Chromium executable (apt-get install chromium, or set "
                                                   "URBANARENA_CHROMIUM)"),
]

LOOK_STEP_DEG = 10.0
#: the page's seconds keys (docs/play.md)
SECONDS_KEY = {0.25: "1", 0.5: "2", 1.0: "3", 2.0: "4"}
#: the map-mode part: (keys or a map click, the action they stand for; map_select's x, y checked to 1 px)
MAP_PART = [("m", {"action": "open_map"}), ("+", {"action": "map_zoom", "factor": 0.5}),
            ("ArrowUp", {"action": "map_pan", "east": 0.0, "north": 50.0}),
            ("click", {"action": "map_select", "x": 0.25, "y": 0.75}), ("m", {"action": "close_map"})]


def key_plan(study):
    """The walk as key presses: turn towards the oracle's next checkpoint in 10 degree steps, walk 2 / 1 / 0.5 s
    (less when near), until within 1.5 m of it; computed on a fresh env. Returns ``[(keys, action)]``."""
    from urbanarena.env.continuous import ContinuousEnv

    task, city = study["tasks"]["l2_short_range"], study["city"]
    oracle = study["oracle_rows"][task.task_id]
    waypoints = [(s[1], s[2]) for s in oracle["details"]["samples"] if s[6]][1:]
    env = ContinuousEnv(city)
    env.reset(seed=0, options=UrbanGroundFamily().env_options(task, city))
    plan = []
    for a in [a for _, a in MAP_PART]:
        env.step(a)
    for tx, ty in waypoints:
        for _ in range(6):
            p = env.pose()
            d = math.hypot(tx - p.x_m, ty - p.y_m)
            if d <= 1.5:
                break
            want = math.degrees(math.atan2(tx - p.x_m, ty - p.y_m)) % 360.0  # compass bearing
            n = round(((want - p.yaw_deg + 180.0) % 360.0 - 180.0) / LOOK_STEP_DEG)
            for _ in range(abs(n)):
                a = {"action": "look", "yaw": math.copysign(LOOK_STEP_DEG, n), "pitch": 0.0}
                env.step(a)
                plan.append((["ArrowRight" if n > 0 else "ArrowLeft"], a))
            secs = 2.0 if d > 2.8 else 1.0 if d > 1.4 else 0.5
            a = {"action": "move", "dir": "forward", "seconds": secs}
            env.step(a)
            plan.append(([SECONDS_KEY[secs], "w"], a))
    plan.append((["Enter", "Enter"], {"action": "terminate"}))
    return plan


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("URBANARENA_HOME", str(tmp_path_factory.mktemp("ugbrowserhome")))
    yield
    mp.undo()


@pytest.fixture(scope="module")
def browser(home):
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=_chromium(), headless=True)
        yield b
        b.close()


def _press(page, keys):
    before = _phase_seq(page)
    for k in keys:
        page.keyboard.press(k)
    _wait_change(page, before)


def test_play_a_continuous_task_by_keyboard_then_replay_it(browser, tmp_path_factory):
    study = continuous_study(str(tmp_path_factory.getbasetemp() / "ugwebstudy"))
    city = study["city"]
    l2 = study["tasks"]["l2_short_range"]
    plan = key_plan(study)
    reg, tokens = ParticipantTokens.issue(["erin"])
    run_dir = tmp_path_factory.mktemp("ugbrowserplay") / "run"
    svc = open_play(str(study["city_dir"]), str(study["suite"]), reg, run_dir, practice_count=1, time_limit_s=900,
                    per_participant=1)
    assert svc.plan.order_for(0)[0].task_id == l2.task_id  # row 0 of the Williams order starts with the L2 walk
    errors: list[str] = []
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        with LiveServer(create_play_app(svc)) as base:
            anon = browser.new_context()
            assert anon.new_page().goto(base + "/").status == 401  # no token, no page
            anon.close()
            ctx = browser.new_context(viewport={"width": 1400, "height": 1100})
            ctx.set_default_timeout(120_000)
            page = ctx.new_page()
            _watch(page, errors)
            page.goto(f"{base}/?token={tokens['erin']}")
            assert page.url == base + "/"
            page.click("#agree")
            page.wait_for_function("() => document.body.dataset.phase === 'ready'")
            # practice: the question, answered with its letter
            _press(page, ["Enter"])
            page.wait_for_function("() => document.getElementById('task-label').textContent.includes('Practice')")
            q = study["tasks"]["l1_orientation"]
            assert page.locator("#options button").count() == 4
            before = _phase_seq(page)
            page.keyboard.press("Enter")
            page.keyboard.type(str(q.answer))
            page.keyboard.press("Enter")
            _wait_change(page, before)
            page.wait_for_function("() => document.getElementById('last-result').textContent.includes('Success 1')")
            # the scored walk
            _press(page, ["Enter"])
            assert page.inner_text("#instruction") == UrbanGroundFamily().prompt(l2)
            page.select_option("#look-step", str(int(LOOK_STEP_DEG)))
            for keys, _a in MAP_PART:
                if keys == "click":
                    before = _phase_seq(page)
                    box = page.locator("#map").bounding_box()
                    page.mouse.click(box["x"] + 1 + 0.25 * 640, box["y"] + 1 + 0.75 * 360)  # inside the 1 px border
                    _wait_change(page, before)
                    page.screenshot(path=str(SHOTS / "play_continuous_map.png"), full_page=True)
                else:
                    _press(page, [keys])
                assert page.evaluate("() => document.body.dataset.mode") == ("first_person" if keys == "m" and
                                                                             _a["action"] == "close_map" else "map")
            for i, (keys, _a) in enumerate(plan):
                _press(page, keys)
                if i == 8:
                    page.screenshot(path=str(SHOTS / "play_continuous.png"), full_page=True)
            page.wait_for_function("() => document.body.dataset.phase === 'done'")
            ctx.close()
    finally:
        svc.close()
    with Store(run_dir / STORE_FILE, readonly=True) as s:
        [row] = s.rows()
    assert row["agent"] == "human:erin" and row["task_id"] == l2.task_id and row["stop_reason"] == "terminate"
    want = [a for _, a in MAP_PART] + [a for _, a in plan]
    sel = row["actions"][3]
    assert abs(sel["x"] - 0.25) <= 1.5 / 640 and abs(sel["y"] - 0.75) <= 1.5 / 360  # the click, to a pixel
    assert row["actions"][:3] + row["actions"][4:] == want[:3] + want[4:]
    env, _ = direct_run(city, l2, row["actions"])
    assert row["details"]["samples"] == [[s.t_s, s.x_m, s.y_m, s.yaw_deg, s.pitch_deg, s.step, s.checkpoint]
                                         for s in env.samples]
    suite = {t["task_id"]: t for t in json.loads(study["suite"].read_text())["tasks"]}
    d = goal_distance_m(city, suite[l2.task_id], row["details"]["samples"][-1][1:3])
    assert d <= 15.0 and row["metrics"]["sr"] == 1.0 and math.isclose(row["metrics"]["final_distance_m"], d,
                                                                       abs_tol=1e-9)

    # the replay page steps through the episode (its map-mode states show the map)
    rr = RunReplay(run_dir)
    rreg, rtok = ParticipantTokens.issue(["viewer"])
    with LiveServer(create_replay_app(rr, rreg)) as base:
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        page.set_default_timeout(120_000)
        _watch(page, errors)
        page.goto(f"{base}/?token={rtok['viewer']}")
        page.click(f"tr[data-id='{row['id']}']")
        page.wait_for_function("() => document.body.dataset.state === '0'")
        for _ in range(3):
            page.keyboard.press("ArrowRight")
        page.wait_for_function("() => document.body.dataset.state === '3'")
        page.wait_for_function("() => ['rv', 'rm'].every(id => { const i = document.getElementById(id);"
                               " return i.complete && i.naturalWidth > 0; })", timeout=60_000)
        assert page.inner_text("#s-action") == "step 3: map_pan east=0 north=50"
        assert page.inner_text("#o-stop") == "terminate" and page.inner_text("#o-score") == "1"
        page.screenshot(path=str(SHOTS / "replay_continuous.png"), full_page=True)
        page.close()
    assert errors == []
