"""Runs of ``vlm-arena`` through the CLI: secret scan, replay from the response cache after the
server is gone, ``--max-requests`` as a clean resumable stop, and a resume that sends no request
the cache already holds (proved by the fake servers' request logs).

Inputs and the scripted server are those of ``test_run_vlm_arena`` (T junction; ``t/loc`` takes
1 request, ``t/land`` 9, every reply a function of (task, step)).
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from fakes import FakeOpenAIServer
from test_run_vlm_arena import TASK_OF, db_rows, invoke, make_inputs, run_args, script, stable, task_and_step

SECRET = "sk-urbanarena-TEST-9f3b2c7d1e0a4b5c"
#: agent_stats counters that differ between a live run and its replay (what the cache saved)
CACHE_COUNTERS = ("cache_hits", "cache_misses", "api_requests", "http_attempts", "input_tokens", "output_tokens",
                  "cached_input_tokens", "cached_output_tokens", "cost_usd", "reasoning_tokens")


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("arena_replay")
    city_dir, task_file = make_inputs(root)
    return root, city_dir, task_file


def steps_sent(log) -> Counter:
    """Multiset of (task id, step) of the requests a server answered."""
    return Counter((TASK_OF[task_and_step(r.body)[0]], task_and_step(r.body)[1]) for r in log if r.status == 200)


def test_secret_scan_no_output_file_holds_the_api_key(inputs, tmp_path, monkeypatch):
    _, city_dir, task_file = inputs
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", SECRET)
    out = tmp_path / "run"
    # faults are retried and logged; the caps create the budget ledger; traces and the cache are on
    with FakeOpenAIServer(script, api_key=SECRET, fault_plan=[None, "http_500", None, "http_429"],
                          retry_after="0") as srv:
        r = invoke(*run_args(city_dir, task_file, out, srv.base_url, "--seeds", 2, "--workers", 2, "--trace",
                             "--max-requests", 1000, "--max-usd", 1.0, "-p", 'retry={"backoff_initial_s": 0}'))
        assert r.exit_code == 0, r.output
        assert srv.log and all(x.auth_ok for x in srv.log)  # the key was really sent
        assert sum(srv.injected.values()) == 2
    for fmt, name in (("csv", "e.csv"), ("jsonl", "e.jsonl"), ("cityarena-csv", "results.csv")):
        assert invoke("export", out, "--format", fmt, "--out", out / "exports" / name).exit_code == 0
    assert invoke("cache-export", out / "responses.sqlite", "--out", out / "bundle").exit_code == 0
    files = [p for p in out.rglob("*") if p.is_file()]
    names = {p.relative_to(out).as_posix() for p in files}
    for expected in ("episodes.sqlite", "run.json", "run.log", "responses.sqlite", "budget.sqlite",
                     "exports/results.csv", "bundle/responses.jsonl"):
        assert expected in names
    assert any(n.startswith("traces/") and n.endswith("steps.jsonl") for n in names)
    assert any(n.startswith("traces/") and n.endswith(".png") for n in names)
    log = (out / "run.log").read_text()
    assert "retry" in log and "stored t/land seed 1" in log
    for p in files:
        data = p.read_bytes()
        assert SECRET.encode() not in data, p
        assert SECRET[7:].encode() not in data, p  # not even a fragment
    assert SECRET not in r.output


def test_replay_read_only_after_the_server_stopped_gives_identical_results(inputs, tmp_path):
    _, city_dir, task_file = inputs
    live = tmp_path / "live"
    with FakeOpenAIServer(script) as srv:
        url = srv.base_url
        r = invoke(*run_args(city_dir, task_file, live, url, "--seeds", 2, "--workers", 2))
        assert r.exit_code == 0, r.output
    # the server is gone: a replay reads every reply from the live run's cache, sends nothing
    replay = tmp_path / "replay"
    r = invoke(*run_args(city_dir, task_file, replay, url, "--seeds", 2, "--cache", "read-only",
                         "--cache-path", live / "responses.sqlite"))
    assert r.exit_code == 0, r.output
    a = [stable(x, CACHE_COUNTERS) for x in db_rows(live)]
    b = [stable(x, CACHE_COUNTERS) for x in db_rows(replay)]
    assert len(a) == 4 and a == b
    for x in db_rows(replay):
        st = json.loads(x["agent_stats"])
        assert st["api_requests"] == 0 and st["cache_hits"] == st["requests"] == x["llm_request_count"]
    assert not (replay / "responses.sqlite").exists()
    # a seed the cache has never seen: the first miss stops the run cleanly (exit 4), nothing lost
    r = invoke(*run_args(city_dir, task_file, replay, url, "--seeds", 3, "--cache", "read-only",
                         "--cache-path", live / "responses.sqlite"))
    assert r.exit_code == 4, r.output
    assert "stopped (cache-miss)" in r.stderr and "no API call made" in r.stderr
    meta = json.loads((replay / "run.json").read_text())
    assert meta["status"] == "stopped" and meta["stop"]["reason"] == "cache-miss" and meta["stop"]["seed"] == 2
    assert len(db_rows(replay)) == 4


def test_max_requests_stops_cleanly_and_a_resume_pays_nothing_twice(inputs, tmp_path):
    _, city_dir, task_file = inputs
    out = tmp_path / "run"
    args = run_args(city_dir, task_file, out, "URL", "--seeds", 1)

    def with_url(url, *extra):
        return [str(a).replace("URL", url) for a in args] + list(extra)

    # t/loc (1 request) finishes; t/land sends 4 requests, the 6th request would cross the cap of 5
    with FakeOpenAIServer(script) as srv:
        r = invoke(*with_url(srv.base_url, "--max-requests", 5))
        first = steps_sent(srv.log)
    assert r.exit_code == 3, r.output
    assert "stopped (budget)" in r.stderr and "max_requests=5" in r.stderr and "1 episodes stored" in r.stderr
    assert first == Counter({("t/loc", 1): 1, ("t/land", 1): 1, ("t/land", 2): 1, ("t/land", 3): 1, ("t/land", 4): 1})
    assert [(x["task_id"], x["stop_reason"]) for x in db_rows(out)] == [("t/loc", "ANSWER")]
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "stopped" and meta["stop"]["reason"] == "budget" and meta["stop"]["task_id"] == "t/land"
    # the cap holds across resumes (shared ledger): the same command stops at once, sending nothing
    with FakeOpenAIServer(script) as srv:
        r = invoke(*with_url(srv.base_url, "--max-requests", 5))
        assert r.exit_code == 3 and len(srv.log) == 0, r.output
    # resume without the cap: the 4 cached calls of t/land are not sent again, only steps 5..9
    with FakeOpenAIServer(script) as srv:
        r = invoke(*with_url(srv.base_url))
        second = steps_sent(srv.log)
    assert r.exit_code == 0, r.output
    assert "1 episodes run, 1 skipped" in r.stdout
    assert second == Counter({("t/land", k): 1 for k in range(5, 10)})
    rows = db_rows(out)
    assert [(x["task_id"], x["seed"]) for x in rows] == [("t/land", 0), ("t/loc", 0)]  # no duplicate
    land = rows[0]
    st = json.loads(land["agent_stats"])
    assert st["cache_hits"] == 4 and st["api_requests"] == 5 and land["llm_request_count"] == 9
    # and the resumed episode equals an uninterrupted run of it
    clean = tmp_path / "clean"
    with FakeOpenAIServer(script) as srv:
        assert invoke(*run_args(city_dir, task_file, clean, srv.base_url, "--seeds", 1)).exit_code == 0
    assert [stable(x, CACHE_COUNTERS) for x in rows] == [stable(x, CACHE_COUNTERS) for x in db_rows(clean)]


def test_request_cap_holds_across_worker_processes(inputs, tmp_path):
    """Two worker processes share the ledger RUN_DIR/budget.sqlite: together they send exactly the cap."""
    _, city_dir, task_file = inputs
    out = tmp_path / "run"
    with FakeOpenAIServer(script) as srv:
        r = invoke(*run_args(city_dir, task_file, out, srv.base_url, "--seeds", 2, "--workers", 2,
                             "--backend", "processes", "--max-requests", 7))
        first = steps_sent(srv.log)
    assert r.exit_code == 3, r.output
    assert sum(first.values()) == 7
    assert json.loads((out / "run.json").read_text())["backend"] == "process-pool"
    stored = len(db_rows(out))
    with FakeOpenAIServer(script) as srv:
        r = invoke(*run_args(city_dir, task_file, out, srv.base_url, "--seeds", 2, "--workers", 2,
                             "--backend", "processes"))
        second = steps_sent(srv.log)
    assert r.exit_code == 0, r.output
    assert f"{4 - stored} episodes run, {stored} skipped" in r.stdout
    # every request was paid once: both servers together saw exactly an uninterrupted run's requests
    clean = Counter({("t/loc", 1): 2, **{("t/land", k): 2 for k in range(1, 10)}})
    assert first + second == clean
    assert sorted((x["task_id"], x["seed"]) for x in db_rows(out)) == [("t/land", 0), ("t/land", 1), ("t/loc", 0),
                                                                        ("t/loc", 1)]
