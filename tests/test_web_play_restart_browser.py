"""Issue 15, defect 3: human play of arena tasks on the *rendered default city*, across a server restart.

``urbanarena play --city helsinki --tasks default`` runs as its own process (as a user runs it), on a
fresh ``URBANARENA_HOME`` holding only the built default city; Chromium (Playwright) consents, plays the
practice task and a scored task by key presses; the server is stopped and started again on the same home
and RUN_DIR (the default suite is now cached) and the participant plays the next scored task. Every
episode must start (the bug: "the episode could not start: Error: cannot create program": the renderer
was built in an episode thread while the EGL context, created in the main thread, was still current
there) and both scored episodes must be stored.

Skips with the reason when Playwright, Chromium or the 3D renderer is missing.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright not installed (pip install playwright)")

from test_web_browser import _chromium, _phase_seq, _wait_change, pytestmark  # noqa: E402,F401  (its skips)
from urbanarena.runner.store import STORE_FILE, Store  # noqa: E402

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _env(home: Path) -> dict:
    return dict(os.environ, URBANARENA_HOME=str(home), PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PlayServer:
    """``urbanarena play`` in a subprocess; ``url`` is the participant's personal link."""

    def __init__(self, home: Path, run_dir: Path, tokens: Path):
        self.port = _free_port()
        cmd = [sys.executable, "-m", "urbanarena.cli.main", "play", "--city", "helsinki", "--tasks", "default",
               "--out", str(run_dir), "--port", str(self.port), "--tokens", str(tokens), "--participant", "p1",
               "--time-limit", "0"]
        self.proc = subprocess.Popen(cmd, env=_env(home), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.url = None
        self.lines: list[str] = []

    def __enter__(self):
        t0 = time.monotonic()
        while self.url is None:
            line = self.proc.stdout.readline()
            assert line, "play server exited: " + "".join(self.lines)
            self.lines.append(line)
            m = re.search(r"(http://127\.0\.0\.1:\d+/\?token=\S+)", line)
            if m:
                self.url = m.group(1)
            assert time.monotonic() - t0 < 300, "play server did not print its link"
        while True:  # the link is printed just before uvicorn binds
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                assert self.proc.poll() is None and time.monotonic() - t0 < 300, "".join(self.lines)
                time.sleep(0.1)
        return self.url

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()


def _start_and_play(page, errors):
    """Start the next task (Enter), check its first view arrived, walk one step (W), answer; wait for the end."""
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.body.dataset.phase === 'episode'"
                           " || document.getElementById('error').textContent.trim() !== ''", timeout=120_000)
    assert page.inner_text("#error").strip() == "", page.inner_text("#error")
    assert page.get_attribute("#view", "src").startswith("data:image/png;base64,")
    before = _phase_seq(page)
    page.keyboard.press("w")
    _wait_change(page, before)
    before = _phase_seq(page)
    page.keyboard.press("Enter")
    page.keyboard.type("not sure")
    page.keyboard.press("Enter")
    _wait_change(page, before)
    page.wait_for_function("() => ['ready', 'done'].includes(document.body.dataset.phase)", timeout=120_000)
    assert not errors, errors


@pytest.mark.acceptance
def test_play_rendered_default_city_then_restart_and_play_again(tmp_path):
    home, run_dir, tokens = tmp_path / "home", tmp_path / "run", tmp_path / "tokens.tsv"
    r = subprocess.run([sys.executable, "-m", "urbanarena.cli.main", "city", "build", "helsinki"], env=_env(home),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    errors: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), headless=True)
        try:
            for launch in (1, 2):
                with PlayServer(home, run_dir, tokens) as link:
                    ctx = browser.new_context(viewport={"width": 1280, "height": 1000})
                    ctx.set_default_timeout(120_000)
                    page = ctx.new_page()
                    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
                    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
                    page.goto(link)
                    if launch == 1:
                        page.click("#agree")
                        page.wait_for_function("() => document.body.dataset.phase === 'ready'")
                        _start_and_play(page, errors)  # the practice task
                    page.wait_for_function("() => document.body.dataset.phase === 'ready'")
                    _start_and_play(page, errors)  # one scored task per launch
                    ctx.close()
        finally:
            browser.close()
    with Store(run_dir / STORE_FILE, readonly=True) as s:
        rows = list(s.rows())
    assert [r["agent"] for r in rows] == ["human:p1", "human:p1"]
    assert len({r["task_id"] for r in rows}) == 2 and all(r["stop_reason"] != "error" for r in rows)
