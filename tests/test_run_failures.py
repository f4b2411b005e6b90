"""Failures never pass as results (issue 16 item 2, issue 18 item 6): the exit statuses of docs/runs.md.

* a VLM run against a server that always fails: exit 5, stdout gives the count, the first error and the
  ``--retry-errors`` command; ``summary`` states the errored episodes above its score table; the errored
  episodes score as failures;
* a full disk during ``run`` (the store's write raising SQLite's "database or disk is full" from the second
  episode on, and ``run.json``'s temporary file raising ENOSPC): exit 6 naming the path, ``run.json`` at
  ``failed`` with the error, no stray temporary file;
* SIGTERM to the driver: exit 143, ``run.json`` at ``interrupted`` (``signal`` ``SIGTERM``), no traceback and
  no leaked-semaphore warning; the rerun resumes.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fakes import FakeOpenAIServer
from runner_util import write_inputs
from test_run_vlm_arena import db_rows, invoke, make_inputs, run_args
from urbanarena.agents.clients.base import ModelClient
from urbanarena.runner import metadata
from urbanarena.runner.store import Store

TESTS = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch):
    for k in ("OPENAI_COMPATIBLE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setattr(ModelClient, "sleep", staticmethod(lambda s: None))


def test_a_server_that_always_fails_gives_exit_5_the_count_and_the_first_error(tmp_path):
    city_dir, task_file = make_inputs(tmp_path)
    out = tmp_path / "run"
    with FakeOpenAIServer(lambda body, n: "never", fault_plan=["http_503"] * 100) as srv:
        r = invoke(*run_args(city_dir, task_file, out, srv.base_url, "--seeds", 2,
                             "-p", 'retry={"max_retries": 2, "backoff_initial_s": 0, "jitter_frac": 0}'))
    assert r.exit_code == 5, r.output
    lines = r.stdout.strip().splitlines()
    assert lines[-2].startswith("errors: 4 of 4 episodes ended in an agent or environment error")
    assert "first: t/land seed 0: " in lines[-2] or "first: t/loc seed 0: " in lines[-2]
    assert "http_503 after 3 attempts" in lines[-2] and "HTTP 503: injected http_503" in lines[-2]
    assert lines[-1].startswith("retry them (after fixing the cause) with: urbanarena run --city")
    assert lines[-1].endswith("--retry-errors")
    assert len(srv.log) == 4 * 3  # each episode's first call: 3 attempts, then the episode ends in the error
    rows = db_rows(out)
    assert [x["stop_reason"] for x in rows] == ["error"] * 4
    assert all(x["evaluation_score"] == 0.0 for x in rows)  # errored episodes count as failures
    s = invoke("summary", out, "--resamples", 20)
    assert s.exit_code == 0, s.output
    text = s.stdout
    head = text.index("errors: 4 of 4 episodes ended in an agent or environment error")
    assert head < text.index("protocol")  # above the score table (its title and header)
    assert "4 x urbanarena.agents.clients.errors.ModelTransportError: openai-compatible:fake: http_503" in text
    js = json.loads(invoke("summary", out, "--json", "--resamples", 20).stdout)
    assert js["errors"] == 4 and js["error_reasons"][0]["episodes"] == 4
    assert js["metrics"]["evaluation_score"] == 0.0


def test_a_full_disk_during_run_exits_6_names_the_path_and_records_failed(tmp_path, monkeypatch):
    city_dir, task_path, _, _ = write_inputs(tmp_path, n=4, n_tasks=4)
    out = tmp_path / "run"
    real = Store._write_episode
    calls = []

    def full_after_one(self, *a, **kw):
        calls.append(1)
        if len(calls) > 1:
            raise sqlite3.OperationalError("database or disk is full")
        return real(self, *a, **kw)

    monkeypatch.setattr(Store, "_write_episode", full_after_one)
    real_write = Path.write_bytes

    def no_space_for_temp_files(self, data):
        if self.name.startswith(".run.json.") and len(calls) > 1:
            real_write(self, data[: len(data) // 2])  # a partial temporary file, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real_write(self, data)

    monkeypatch.setattr(Path, "write_bytes", no_space_for_temp_files)
    r = invoke("run", "--city", city_dir, "--tasks", task_path, "--agent", "random", "--seeds", 2, "--workers", 1,
               "--out", out, "--max-steps", 5)
    assert r.exit_code == 6, r.output
    assert f"error: I/O failure: writing {out / 'episodes.sqlite'} failed: database or disk is full" in r.stderr
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "failed" and "database or disk is full" in meta["error"]
    assert meta["episodes"]["run"] == 1
    assert [p.name for p in out.iterdir() if p.name.endswith(".tmp")] == []
    assert len(db_rows(out)) == 1


def test_run_json_that_cannot_be_written_at_all_is_an_io_error_naming_it(tmp_path, monkeypatch):
    from urbanarena.errors import RunIOError

    metadata.write_run_json(tmp_path, {"status": "running"})
    monkeypatch.setattr(Path, "write_bytes", lambda self, d: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full")))
    real_open = open

    def ro_open(path, mode="r", *a, **kw):
        if "+" in mode or "w" in mode:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, mode, *a, **kw)

    monkeypatch.setattr("builtins.open", ro_open)
    with pytest.raises(RunIOError) as e:
        metadata.write_run_json(tmp_path, {"status": "failed"})
    assert e.value.path == str(tmp_path / "run.json") and "full" in str(e.value)
    monkeypatch.undo()
    assert json.loads((tmp_path / "run.json").read_text()) == {"status": "running"}
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(TESTS.parent / "src"), env.get("PYTHONPATH", "")])
    return env


def _count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as con:
            return con.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
    except sqlite3.Error:
        return 0


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_records_interrupted_and_exits_143(tmp_path, workers):
    city_dir, task_path, _, _ = write_inputs(tmp_path, n=5, n_tasks=12)
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "urbanarena.cli.main", "run", "--city", str(city_dir), "--tasks", str(task_path),
           "--agent", "runner_util:SlowRandomAgent", "-p", "delay_s=0.003", "--seeds", "4", "--max-steps", "12",
           "--workers", str(workers), "--out", str(out)]
    p = subprocess.Popen(cmd, env=_env(), start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    t_end = time.monotonic() + 120
    while p.poll() is None and _count(out / "episodes.sqlite") < 3 and time.monotonic() < t_end:
        time.sleep(0.005)
    assert p.poll() is None, "the run ended before it could be terminated"
    os.kill(p.pid, signal.SIGTERM)  # what `kill PID` or a job scheduler sends the driver
    _, err = p.communicate(timeout=120)
    assert p.returncode == 143, err
    assert "terminated (SIGTERM)" in err and "Traceback" not in err and "leaked semaphore" not in err
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "interrupted" and meta["signal"] == "SIGTERM"
    assert meta["episodes"]["run"] == _count(out / "episodes.sqlite") < 48
    r = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    assert _count(out / "episodes.sqlite") == 48


def test_an_episode_that_errors_at_its_start_fails_every_score(tmp_path):
    """CitySeeker task from s to e on the cross (28 m apart): an error at step 0 used to score
    tc_proximity_50m 1.0 and spl 1.0 (the start lies within 50 m of the goal); now every success and quality
    metric is 0 and the distances stay as measured (tasks/errored.py)."""
    from urbanarena.tasks.errored import ZEROED
    from urbanarena.tasks.schema import CityRef, TaskFile
    from urbanarena.world.city_io import save_city
    from vlm_util import cross_city, graph_task

    city = cross_city(tmp_path)
    city_dir = save_city(city, tmp_path / "city")
    task_file = TaskFile(city=CityRef(name=city.name, content_hash=city.content_hash),
                         tasks=[graph_task(city)]).save(tmp_path / "tasks.json")
    with FakeOpenAIServer(lambda body, n: "never", fault_plan=["http_500"] * 10) as srv:
        r = invoke("run", "--city", city_dir, "--tasks", task_file, "--agent", "vlm-cityseeker", "--model",
                   f"openai-compatible:{srv.base_url}:fake", "--out", tmp_path / "run",
                   "-p", 'retry={"max_retries": 0}')
    assert r.exit_code == 5, r.output
    [row] = db_rows(tmp_path / "run")
    m = json.loads(row["metrics"])
    assert row["stop_reason"] == "error" and json.loads(row["trajectory"]) == ["s"]
    assert m["tc_proximity_50m"] == 0.0 and m["spl"] == 0.0 and m["ndtw"] == 0.0 and m["tc_exact"] == 0.0
    assert all(m[k] == 0.0 for k in ZEROED if m.get(k) is not None)
    assert abs(m["goal_dist_m"] - 20.0 * 2 ** 0.5) < 1e-6  # measured where it stopped
    assert row["tc_proximity_50m"] == 0.0 and row["spl"] == 0.0  # the store's columns too


def test_the_html_report_states_the_errored_episodes_above_the_score_tables(tmp_path):
    city_dir, task_file = make_inputs(tmp_path)
    out = tmp_path / "run"
    with FakeOpenAIServer(lambda body, n: "never", fault_plan=["http_503"] * 100) as srv:
        r = invoke(*run_args(city_dir, task_file, out, srv.base_url, "-p", 'retry={"max_retries": 0}'))
    assert r.exit_code == 5, r.output
    rep = invoke("report", out, "--out", tmp_path / "r.html")
    assert rep.exit_code == 0, rep.output
    html = (tmp_path / "r.html").read_text()
    at = html.index("errors: 2 of 2 episodes ended in an agent or environment error")
    assert at < html.index('class="scores"')
