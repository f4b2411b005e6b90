"""Play, replay and the report in a real browser: Playwright driving Debian's Chromium headless.

Two participants play at once on a live ``uvicorn`` server (loopback, free port): consent, the practice
task and one scored task each, every action typed as key presses (the oracle's actions of that task);
their episodes are stored under their own ids with the oracle's positions and score. Then the replay
page steps through alice's episode, and the HTML report of the oracle run and the human run opens
without a console error. Screenshots go to a temporary folder, or to ``docs/screenshots/`` when
``URBANARENA_WRITE_SCREENSHOTS=1`` (to refresh the ones kept in the docs).

Skips with the reason when Playwright (``pip install playwright``) or a Chromium executable
(``apt-get install chromium``; ``$URBANARENA_CHROMIUM`` overrides the path) is missing.
"""

from __future__ import annotations

import os
import tempfile
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright not installed (pip install playwright)")

from urbanarena.render.scene3d.context import gl_unavailable_reason  # noqa: E402
from urbanarena.report.replay_data import RunReplay  # noqa: E402
from urbanarena.runner.store import STORE_FILE, Store  # noqa: E402
from urbanarena.web.app import create_play_app  # noqa: E402
from urbanarena.web.auth import ParticipantTokens  # noqa: E402
from urbanarena.web.play import open_play  # noqa: E402
from urbanarena.web.replay import create_replay_app  # noqa: E402
from web_util import fixture_study, suite_tasks  # noqa: E402

SHOTS = (Path(__file__).resolve().parents[1] / "docs" / "screenshots" if os.environ.get("URBANARENA_WRITE_SCREENSHOTS")
         == "1" else Path(tempfile.mkdtemp(prefix="urbanarena-shots-")))


def _chromium() -> str | None:
    env = os.environ.get("URBANARENA_CHROMIUM")
    if env:
        return env if Path(env).is_file() else None
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


pytestmark = [
    pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"3D renderer unavailable: {gl_unavailable_reason()}"),
    pytest.mark.skipif(_chromium() is None, reason="no Chromium executable (apt-get install chromium, or set "
                                                   "URBANARENA_CHROMIUM)"),
]


class LiveServer:
    """``app`` on 127.0.0.1 at a free port in a daemon thread."""

    def __init__(self, app):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    access_log=False))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self):
        self.thread.start()
        t0 = time.monotonic()
        while not self.server.started:
            assert time.monotonic() - t0 < 30, "server did not start"
            time.sleep(0.05)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("URBANARENA_HOME", str(tmp_path_factory.mktemp("browserhome")))
    yield
    mp.undo()


@pytest.fixture(scope="module")
def browser(home):
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=_chromium(), headless=True)
        yield b
        b.close()


def _watch(page, errors):
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))


def _phase_seq(page):
    return page.evaluate("() => [document.body.dataset.phase || '', document.body.dataset.seq || '']")


def _wait_change(page, before):
    page.wait_for_function("([p, s]) => (document.body.dataset.phase || '') !== p"
                           " || (document.body.dataset.seq || '') !== s", arg=before, timeout=60_000)


def _press_action(page, label):
    """Type one stored action label as the participant would (docs/play.md keys) and wait for the next view."""
    before = _phase_seq(page)
    if label.startswith("ANSWER"):
        page.keyboard.press("Enter")
        page.keyboard.type(label.partition(":")[2].strip())
        page.keyboard.press("Enter")
    else:
        kind, _, mag = label.partition(" ")
        if kind in ("W", "A", "D", "Q", "E"):
            page.keyboard.press({"": "0", "SMALL": "1", "MEDIUM": "2", "LARGE": "3"}[mag])
            page.keyboard.press(kind.lower())
        else:
            page.keyboard.press({"LEFT": "ArrowLeft", "RIGHT": "ArrowRight", "UP": "ArrowUp", "S": "s"}[kind])
    _wait_change(page, before)


def test_two_participants_play_by_keyboard_then_replay_and_report(browser, tmp_path_factory):
    study = fixture_study(str(tmp_path_factory.getbasetemp() / "webstudy"))
    suite = suite_tasks(study["suite"])
    by_instr = {t["instruction"]: tid for tid, t in suite.items()}
    oracle = study["oracle_rows"]
    reg, tokens = ParticipantTokens.issue(["alice", "bob"])
    run_dir = tmp_path_factory.mktemp("browserplay") / "run"
    svc = open_play(str(study["city_dir"]), str(study["suite"]), reg, run_dir, practice_count=1, time_limit_s=900,
                    per_participant=1)
    errors: list[str] = []
    SHOTS.mkdir(parents=True, exist_ok=True)
    played = {}
    try:
        with LiveServer(create_play_app(svc)) as base:
            # no token, no page
            anon = browser.new_context()
            resp = anon.new_page().goto(base + "/")
            assert resp.status == 401
            anon.close()
            pages = {}
            for pid in ("alice", "bob"):
                ctx = browser.new_context(viewport={"width": 1280, "height": 1000})
                ctx.set_default_timeout(120_000)  # CI machines are slow and loaded
                page = ctx.new_page()
                _watch(page, errors)
                page.goto(f"{base}/?token={tokens[pid]}")
                assert page.url == base + "/"  # the token left the address bar
                page.click("#agree")
                page.wait_for_function("() => document.body.dataset.phase === 'ready'")
                pages[pid] = page
            # practice (localization: answer the grid cell), then the scored task, both started with Enter
            practice_answer = suite[list(suite)[0]]["answer"]
            for pid, page in pages.items():
                before = _phase_seq(page)
                page.keyboard.press("Enter")
                _wait_change(page, before)
                page.wait_for_function("() => document.getElementById('task-label').textContent.includes('Practice')")
                _press_action(page, f"ANSWER: {practice_answer}")
                page.wait_for_function("() => document.getElementById('last-result').textContent.includes('Score 1')")
                before = _phase_seq(page)
                page.keyboard.press("Enter")
                _wait_change(page, before)
                played[pid] = by_instr[page.inner_text("#instruction")]
            labels = {pid: list(oracle[played[pid]]["actions"]) for pid in pages}
            assert played["alice"] != played["bob"]  # rows 0 and 1 of the counterbalanced order
            step = 0
            while any(labels.values()):  # interleave the two participants' key presses
                for pid, page in pages.items():
                    if labels[pid]:
                        _press_action(page, labels[pid].pop(0))
                if step == 2:
                    pages["alice"].screenshot(path=str(SHOTS / "play.png"), full_page=True)
                step += 1
            for pid, page in pages.items():
                page.wait_for_function("() => document.body.dataset.phase === 'done'")
                page.context.close()
    finally:
        svc.close()
    with Store(run_dir / STORE_FILE, readonly=True) as s:
        rows = {r["agent"]: r for r in s.rows()}
    assert set(rows) == {"human:alice", "human:bob"}
    for pid in ("alice", "bob"):
        r, o = rows[f"human:{pid}"], oracle[played[pid]]
        assert r["task_id"] == played[pid] and r["actions"] == o["actions"]
        assert r["details"]["positions"] == o["details"]["positions"]
        assert r["evaluation_score"] == o["evaluation_score"] == 1.0

    # replay of alice's episode in the browser
    rr = RunReplay(run_dir)
    rreg, rtok = ParticipantTokens.issue(["viewer"])
    with LiveServer(create_replay_app(rr, rreg)) as base:
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        page.set_default_timeout(120_000)
        _watch(page, errors)
        page.goto(f"{base}/?token={rtok['viewer']}")
        eid = rows["human:alice"]["id"]
        page.click(f"tr[data-id='{eid}']")
        page.wait_for_function("() => document.body.dataset.state === '0'")
        for _ in range(3):
            page.keyboard.press("ArrowRight")
        page.wait_for_function("() => document.body.dataset.state === '3'")
        page.wait_for_function("() => ['rv', 'rm'].every(id => { const i = document.getElementById(id);"
                               " return i.complete && i.naturalWidth > 0; })", timeout=60_000)
        assert page.inner_text("#o-stop").startswith("ANSWER") and page.inner_text("#o-score") == "1"
        assert page.inner_text("#s-action") == f"step 3: {rows['human:alice']['actions'][2]}"
        page.screenshot(path=str(SHOTS / "replay.png"), full_page=True)
        page.close()

    # the HTML report of an agent run and the human run side by side
    pytest.importorskip("matplotlib")
    from urbanarena.report.html import write_html_report

    report = write_html_report([study["oracle_run"], run_dir], run_dir.parent / "report.html", n_resamples=200,
                               n_boot=200)
    page = browser.new_page()
    page.set_default_timeout(120_000)
    _watch(page, errors)
    page.goto(report.as_uri())
    assert page.locator("table").count() > 0 and "human:" in page.content()
    page.close()
    assert errors == []
