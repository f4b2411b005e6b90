"""The SQLite run store: schema, uniqueness, JSON round trip, WAL, and the
in-commit kill hook (the uncommitted episode must vanish, the rest stay)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from urbanarena.errors import StoreError
from urbanarena.runner.store import COLUMNS, KILL_ENV, Store
from urbanarena.tasks.metrics import METRIC_KEYS

TESTS = Path(__file__).resolve().parent


def result(task_id="c/1", seed=0, agent="random", config="h1", **over):
    metrics = {k: None for k in METRIC_KEYS}
    metrics.update(tc_exact=1.0, spl=0.5, goal_dist_m=12.25, avg_steps=3.0)
    r = {
        "task_id": task_id, "seed": seed, "agent": agent, "config_hash": config, "protocol": "cityseeker-v1",
        "family": "cityseeker", "category": "basic_poi", "difficulty": "easy", "task_hash": "t" * 64,
        "trajectory": ["a", "b", "c"], "headings": [0.0, 90.0, 180.5], "actions": [1, 0, -1],
        "stop_reason": "stop", "error": None, "steps": 3, "invalid_actions": 0, "metrics": metrics,
        "timings": {"agent_s": 0.1, "total_s": 0.2}, "agent_stats": {"requests": 2},
        "started_at": "2024-01-01T00:00:00+00:00", "finished_at": "2024-01-01T00:00:01+00:00",
    }
    r.update(over)
    return r


def test_round_trip_and_columns(tmp_path):
    with Store(tmp_path / "episodes.sqlite") as st:
        assert st.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert st.add(result())
        rows = list(st.rows())
    assert len(rows) == 1
    r = rows[0]
    assert list(r) == list(COLUMNS)
    src = result()
    for k in ("task_id", "seed", "agent", "config_hash", "protocol", "family", "trajectory", "headings", "actions",
              "metrics", "agent_stats", "timings", "stop_reason", "started_at"):
        assert r[k] == src[k], k
    # one REAL column per metric key, equal to the JSON value (NULL where None)
    for k in METRIC_KEYS:
        assert r[k] == src["metrics"][k]
    assert r["duration_s"] == 0.2
    # raw SQL sees the same
    con = sqlite3.connect(tmp_path / "episodes.sqlite")
    assert con.execute("SELECT tc_exact, spl, tc, protocol FROM episodes").fetchone() == (1.0, 0.5, None, "cityseeker-v1")


def test_unique_key_and_replace(tmp_path):
    with Store(tmp_path / "episodes.sqlite") as st:
        assert st.add(result())
        assert not st.add(result(trajectory=["x"]))  # same key: ignored
        assert st.add(result(seed=1))
        assert st.add(result(agent="forward"))
        assert st.add(result(config="h2"))
        assert st.count() == 4 and st.count("h1") == 3
        assert next(st.rows(["h1"]))["trajectory"] == ["a", "b", "c"]
        assert st.add(result(trajectory=["x"], stop_reason="error"), replace=True)
        assert st.count() == 4
        first = [r for r in st.rows() if (r["seed"], r["agent"], r["config_hash"]) == (0, "random", "h1")]
        assert first[0]["trajectory"] == ["x"]
        # the UNIQUE constraint is in the schema itself
        with pytest.raises(sqlite3.IntegrityError):
            st.conn.execute("INSERT INTO episodes (task_id, seed, agent, config_hash, protocol, family, task_hash, steps,"
                            " invalid_actions, trajectory, headings, actions, metrics, agent_stats, timings)"
                            " VALUES ('c/1', 1, 'random', 'h1', 'p', 'f', 't', 0, 0, '[]', '[]', '[]', '{}', '{}', '{}')")
        keys = st.done_keys()
    assert keys[("c/1", 0, "random", "h1")] == ("t" * 64, "error")
    assert len(keys) == 4


def test_nan_metric_is_rejected_not_stored(tmp_path):
    with Store(tmp_path / "episodes.sqlite") as st:
        bad = result()
        bad["metrics"] = dict(bad["metrics"], spl=float("nan"))
        with pytest.raises(ValueError):
            st.add(bad)
        assert st.count() == 0 and not st.conn.in_transaction


def test_readonly_missing_and_garbage(tmp_path):
    with pytest.raises(StoreError, match="no run store"):
        Store(tmp_path / "nothing.sqlite", readonly=True)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="not a run store"):
        Store(junk, readonly=True)


def test_kill_inside_commit_loses_only_that_episode(tmp_path):
    """SIGKILL between INSERT and COMMIT of the 4th episode: rows 1-3 survive, row 4 is gone."""
    db = tmp_path / "episodes.sqlite"
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(TESTS)!r})
        from test_store_sqlite import result
        from urbanarena.runner.store import Store
        st = Store({str(db)!r})
        for i in range(6):
            st.add(result(task_id=f"c/{{i}}"))
        print("not killed")
    """)
    proc = subprocess.run([sys.executable, "-c", script], env={**os.environ, KILL_ENV: "4"}, capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert "not killed" not in proc.stdout
    with Store(db) as st:
        assert st.integrity_ok()
        assert sorted(r["task_id"] for r in st.rows()) == ["c/0", "c/1", "c/2"]
        st.add(result(task_id="c/3"))
        assert st.count() == 4
