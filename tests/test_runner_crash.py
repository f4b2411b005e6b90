"""Crash-safety acceptance: SIGKILL a running ``urbanarena run`` at random points
(including inside a store commit, via the test hook), resume, and compare the
final store with an uninterrupted run's on every column except timestamps and
timings: same episodes, no duplicates, same trajectories and metrics."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from typer.testing import CliRunner

from runner_util import write_inputs
from urbanarena.cli.main import app
from urbanarena.runner.store import KEY_COLUMNS, KILL_ENV, TIME_COLUMNS

TESTS = Path(__file__).resolve().parent
N_TASKS, N_SEEDS = 12, 4
TOTAL = N_TASKS * N_SEEDS


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k != KILL_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra)
    return env


def _cmd(city_dir, task_path, out, workers, delay_s=0.003):
    return [sys.executable, "-m", "urbanarena.cli.main", "run", "--city", str(city_dir), "--tasks", str(task_path),
            "--agent", "runner_util:SlowRandomAgent", "-p", f"delay_s={delay_s}", "--seeds", str(N_SEEDS),
            "--max-steps", "12", "--workers", str(workers), "--out", str(out)]


def _count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def _live_in_group(pgid: int) -> list[int]:
    """Non-zombie processes of a process group (Linux /proc)."""
    pids = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            stat = (p / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(p.name))
    return pids


def _assert_group_gone(pgid: int, timeout_s: float = 10.0) -> None:
    if not Path("/proc/self/stat").exists():
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _live_in_group(pgid):
            return
        time.sleep(0.1)
    left = _live_in_group(pgid)
    for pid in left:  # clean up before failing
        os.kill(pid, signal.SIGKILL)
    pytest.fail(f"orphaned run processes still alive after the driver was killed: {left}")


def _rows(db: Path) -> dict[tuple, dict]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = [dict(r) for r in con.execute("SELECT * FROM episodes")]
    con.close()
    out = {}
    for r in rows:
        key = tuple(r[k] for k in KEY_COLUMNS)
        assert key not in out, f"duplicate episode {key}"
        out[key] = {k: v for k, v in r.items() if k not in TIME_COLUMNS}
    assert len(out) == len(rows)
    return out


def test_kill_and_resume_equals_uninterrupted_run(tmp_path):
    city_dir, task_path, _, _ = write_inputs(tmp_path, n=5, n_tasks=N_TASKS)
    ref_dir, run_dir = tmp_path / "ref", tmp_path / "crashy"
    db = run_dir / "episodes.sqlite"

    # the uninterrupted reference, in this process (1 worker; same code path as the CLI)
    ref = CliRunner().invoke(app, _cmd(city_dir, task_path, ref_dir, 1)[3:], catch_exceptions=False)
    assert ref.exit_code == 0, ref.output
    expected = _rows(ref_dir / "episodes.sqlite")
    assert len(expected) == TOTAL

    seed = int.from_bytes(os.urandom(4), "little")
    rng = random.Random(seed)
    log = [f"random seed {seed}"]

    def start(**env):
        return subprocess.Popen(_cmd(city_dir, task_path, run_dir, 2), env=_env(**env), start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    # 1) killed by the hook inside the 5th commit: after its INSERT, before COMMIT
    p = start(**{KILL_ENV: "5"})
    _, err = p.communicate(timeout=120)
    assert p.returncode == -signal.SIGKILL, err
    _assert_group_gone(p.pid)
    assert _count(db) == 4, log
    # 2) resumed and killed inside its very first commit: nothing new survives
    p = start(**{KILL_ENV: "1"})
    p.communicate(timeout=120)
    assert p.returncode == -signal.SIGKILL
    _assert_group_gone(p.pid)
    assert _count(db) == 4
    # 3) killed at random moments: during start-up, and after a random number of new commits
    p = start()
    time.sleep(rng.uniform(0.05, 0.6))
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    _assert_group_gone(p.pid)
    for _ in range(2):
        before = _count(db)
        target = min(TOTAL - 1, before + rng.randint(1, 8))
        log.append(f"kill after {target} rows")
        p = start()
        while p.poll() is None and _count(db) < target:
            time.sleep(0.005)
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)  # the driver only: its workers must exit on their own
        p.wait()
        _assert_group_gone(p.pid)
        assert before <= _count(db) < TOTAL or p.returncode == 0, log
    # 4) resume to the end
    p = start()
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    got = _rows(db)
    assert set(got) == set(expected), log
    for key, row in expected.items():
        assert got[key] == row, (key, log)


def test_ctrl_c_stops_cleanly_and_resumes(tmp_path):
    city_dir, task_path, _, _ = write_inputs(tmp_path, n=5, n_tasks=N_TASKS)
    run_dir = tmp_path / "run"
    db = run_dir / "episodes.sqlite"
    # 30 ms a step (about 9 s for the whole run on 2 workers): the interrupt lands mid-run even on a loaded
    # machine (at 3 ms a step the run could finish before the signal was delivered)
    # SIGINT at its default in the child, as in a terminal's foreground job: pytest started in the background of a
    # non-interactive shell ignores SIGINT, the child inherits that and Python then installs no Ctrl-C handler
    # (the run finished all 48 episodes with exit 0 in such a session)
    p = subprocess.Popen(_cmd(city_dir, task_path, run_dir, 2, delay_s=0.03), env=_env(), start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    while p.poll() is None and _count(db) < 3:
        time.sleep(0.005)
    assert p.poll() is None, "the run ended before it could be interrupted"
    os.killpg(p.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole foreground group
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    assert "rerun the same command to resume" in err and "Traceback" not in err
    _assert_group_gone(p.pid)
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "interrupted" and meta["episodes"]["run"] == _count(db) < TOTAL
    part = json.loads(CliRunner().invoke(app, ["summary", str(run_dir), "--json", "--resamples", "50"]).stdout)
    assert part["episodes"] == meta["episodes"]["run"] and part["planned"] == TOTAL and part["complete"] is False
    r = subprocess.run(_cmd(city_dir, task_path, run_dir, 2, delay_s=0.03), env=_env(), capture_output=True,
                       text=True, timeout=120)  # the same command (the agent's delay is part of the run's config)
    assert r.returncode == 0, r.stderr
    assert f"{TOTAL - meta['episodes']['run']} episodes run, {meta['episodes']['run']} skipped" in r.stdout
    assert len(_rows(db)) == TOTAL
