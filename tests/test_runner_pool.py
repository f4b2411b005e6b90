"""Backends: a process pool returns exactly what in-process execution returns,
whatever the worker count or completion order."""

from __future__ import annotations

import pytest

from runner_util import write_inputs
from urbanarena.runner.driver import RunRequest, prepare
from urbanarena.runner.pool import AgentSpecError, InProcessBackend, ProcessPoolBackend, WorkerSpec, agent_factory
from urbanarena.runner.store import TIME_COLUMNS

VOLATILE = set(TIME_COLUMNS)


def _strip(results):
    out = {}
    for r in results:
        key = (r["task_id"], r["seed"], r["agent"], r["config_hash"])
        assert key not in out
        out[key] = {k: v for k, v in r.items() if k not in VOLATILE}
    return out


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    root = tmp_path_factory.mktemp("pool")
    city_dir, task_path, city, tf = write_inputs(root, n=4, n_tasks=6)
    req = RunRequest(city=str(city_dir), tasks=str(task_path), agent="random", out=root / "run", seeds=3,
                     protocol="urbanarena-graph-v1", max_steps=12)
    return prepare(req)


def test_pool_equals_in_process(prepared):
    p = prepared
    spec = WorkerSpec(str(p.city_source.directory), p.city.content_hash, "random", {})
    with InProcessBackend(spec, p.city) as b:
        ref = _strip(b.run(p.jobs))
    assert len(ref) == 6 * 3
    with ProcessPoolBackend(spec, workers=2, max_in_flight=3) as b:
        pooled = _strip(b.run(p.jobs))
    assert pooled == ref
    # seeds really vary the episodes and every trajectory follows graph edges
    assert len({tuple(r["trajectory"]) for r in ref.values()}) > 6
    for r in ref.values():
        t = r["trajectory"]
        assert all(b in p.city.graph[a] for a, b in zip(t, t[1:]))
        assert r["protocol"] == "urbanarena-graph-v1" and r["steps"] == 12


def test_agent_errors_in_workers_are_results(prepared):
    p = prepared
    spec = WorkerSpec(str(p.city_source.directory), p.city.content_hash, "runner_util:FailingAgent", {"fail_at": 1})
    with ProcessPoolBackend(spec, workers=2) as b:
        res = list(b.run(p.jobs[:4]))
    assert len(res) == 4
    assert all(r["stop_reason"] == "error" and "model API failed at step 1" in r["error"] for r in res)
    assert all(r["steps"] == 1 and len(r["trajectory"]) == 2 for r in res)


def test_agent_spec_errors():
    with pytest.raises(AgentSpecError, match="unknown agent 'nope'"):
        agent_factory("nope")
    with pytest.raises(AgentSpecError, match="cannot import module"):
        agent_factory("no_such_module_xyz:Agent")
    with pytest.raises(AgentSpecError, match="has no attribute"):
        agent_factory("runner_util:NoSuchAgent")
    with pytest.raises(AgentSpecError, match="agent 'random'"):
        agent_factory("random", {"bogus_param": 1})
    with pytest.raises(AgentSpecError, match="not an urbanarena Agent"):
        agent_factory("runner_util:grid_city")
    make = agent_factory("runner_util:SlowRandomAgent", {"delay_s": 0.0})
    a, b = make(), make()
    assert a is not b and a.config() == {"name": "slow-random", "stop_prob": 0.0, "delay_s": 0.0}


def test_adaptive_chunk_size(prepared):
    p = prepared
    spec = WorkerSpec(str(p.city_source.directory), p.city.content_hash, "random", {})
    b = ProcessPoolBackend(spec, workers=2, max_chunk=16, chunk_target_s=0.5)
    try:
        assert b.chunk_size() == 1  # nothing measured yet
        for done, busy, expected in [(10, 0.1, 16), (10, 1.0, 5), (4, 4.0, 1), (3, 0.6, 2)]:
            b._done, b._busy_s = done, busy
            assert b.chunk_size() == expected  # floor(0.5 s / mean episode s), clamped to [1, 16]
    finally:
        b.close()
