"""Issue 18 acceptance, slow and hostile endpoints: whole ``urbanarena run``s of ``vlm-arena`` (the inputs and
scripted model of ``test_faults_runs``: 2 tasks x 2 seeds, 20 served requests) against a fake server whose
200 replies are unusable, plus client-level checks of the deadline and the size limit.

* ``trickle``: a valid reply sent 16 bytes a second (about 20 s for its body). With ``timeout_s`` 1 s per
  socket read (each read gets bytes in time, so the read timeout alone never fires) and an attempt
  deadline of 1.5 s the attempt fails within the deadline, is counted ``timeout`` and retried; the
  episode's results equal the fault-free run.
* ``html``: a 200 with an HTML page on 30 % of the calls: results identical to the fault-free run, each
  such reply counted ``not_json`` (the server's count of the kind).
* ``huge``: 3 MB replies (with and without ``Content-Length``): refused as ``reply_too_large`` while
  streaming, never cached. Every reply huge: the response cache file stays under 200 kB (no reply in it);
  30 % huge: it holds exactly the 20 served replies (and their images) and stays under 1 MB, less than one
  refused reply (the bound of docs/model-clients.md: each entry at most ``max_reply_bytes`` plus its images).
"""

from __future__ import annotations

import json
import sqlite3
import time

import pytest

from fakes import FakeOpenAIServer, FaultSchedule
from test_faults_runs import script, stats
from test_faults_runs import without_faults as _without_transport_faults
from test_run_vlm_arena import db_rows, invoke, make_inputs, run_args
from urbanarena.agents.clients import Message, ModelRequest, make_client, parse_model_spec
from urbanarena.agents.clients.base import ModelClient
from urbanarena.agents.clients.errors import ModelTransportError
from urbanarena.agents.clients.retry import RetryPolicy

FAST = '{"max_retries": 6, "backoff_initial_s": 0, "jitter_frac": 0, "attempt_deadline_s": 1.5}'


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch):
    for k in ("OPENAI_COMPATIBLE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setattr(ModelClient, "sleep", staticmethod(lambda s: None))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile_runs")
    city_dir, task_file = make_inputs(root)
    return root, city_dir, task_file


def run(inputs, name, *, plan=None, schedule=None, cache="off", retry=FAST, **server_kw):
    root, city_dir, task_file = inputs
    out = root / name
    with FakeOpenAIServer(script, fault_plan=plan, fault_schedule=schedule, **server_kw) as srv:
        t0 = time.monotonic()
        r = invoke(*run_args(city_dir, task_file, out, srv.base_url, "--seeds", 2, "--workers", 2,
                             "-p", f"retry={retry}", "-p", "timeout_s=1.0", "--cache", cache))
        wall = time.monotonic() - t0
    return r, db_rows(out), srv, out, wall


@pytest.fixture(scope="module")
def clean(inputs):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ModelClient, "sleep", staticmethod(lambda s: None))
        r, rows, srv, _, _ = run(inputs, "clean")
    assert r.exit_code == 0, r.output
    assert len(srv.log) == 20 and all(x["evaluation_score"] == 1.0 for x in rows)
    return rows


def without_faults(rows):
    """Rows without what faults legitimately change (``test_faults_runs``), the new fault kinds included."""
    out = _without_transport_faults(rows)
    for d in out:
        if isinstance(d.get("agent_stats"), dict):
            d["agent_stats"] = {k: v for k, v in d["agent_stats"].items()
                                if not k.startswith("fault_") and k not in ("cache_misses", "cache_hits")}
    return out


def fault_sum(rows, kind):
    return sum(stats(x).get(f"fault_{kind}", 0) for x in rows)


def test_a_trickled_reply_fails_within_the_attempt_deadline_and_is_retried(inputs, clean):
    r, rows, srv, _, wall = run(inputs, "trickle", plan=["trickle", "trickle"])
    assert r.exit_code == 0, r.output
    assert srv.injected == {"trickle": 2}
    # both trickled attempts were cut at 1.5 s (their bodies take ~20 s): the run took far less than one body
    assert wall < 15.0
    assert fault_sum(rows, "timeout") == 2 and sum(stats(x)["retries"] for x in rows) == 2
    assert without_faults(rows) == without_faults(clean)


def test_html_200_on_30_percent_of_calls_gives_the_fault_free_results(inputs, clean):
    sch = FaultSchedule(rate=0.3, kinds=("html",), seed=5)
    r, rows, srv, out, _ = run(inputs, "html", schedule=sch)
    assert r.exit_code == 0, r.output
    n = srv.injected["html"]
    assert 3 <= n and len(srv.log) == 20 + n
    assert fault_sum(rows, "not_json") == n and sum(x["llm_error_count"] for x in rows) == n
    assert without_faults(rows) == without_faults(clean)
    s = json.loads(invoke("summary", out, "--json", "--resamples", 20).stdout)
    assert s["faults"]["transport"] == {"not_json": n}


@pytest.mark.parametrize("declare_length", [True, False])
def test_huge_replies_are_refused_and_never_cached(inputs, clean, declare_length):
    # every reply huge: each call gives up after its retries, no reply reaches the cache
    retry = '{"max_retries": 1, "backoff_initial_s": 0, "jitter_frac": 0}'
    r, rows, srv, out, _ = run(inputs, f"huge-{declare_length}", plan=["huge"] * 40, cache="read-write", retry=retry,
                               declare_length=declare_length)
    assert r.exit_code == 5, r.output  # every episode ended in an error (docs/runs.md)
    assert len(rows) == 4 and all("reply_too_large after 2 attempts" in (x["error"] or "") for x in rows)
    assert srv.injected == {"huge": 8} and fault_sum(rows, "reply_too_large") == 8
    cache = out / "responses.sqlite"
    assert cache.stat().st_size < 200_000
    # a mix: 30 % huge, the rest served; results as without faults, the cache holds only the served replies
    sch = FaultSchedule(rate=0.3, kinds=("huge",), seed=5)
    r, rows, srv, out, _ = run(inputs, f"huge-mix-{declare_length}", schedule=sch, cache="read-write",
                               declare_length=declare_length)
    assert r.exit_code == 0, r.output
    assert fault_sum(rows, "reply_too_large") == srv.injected["huge"] >= 3
    assert without_faults(rows) == without_faults(clean)
    assert (out / "responses.sqlite").stat().st_size < 1_000_000  # less than one refused reply (3 MB)
    with sqlite3.connect(out / "responses.sqlite") as con:
        assert con.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 20  # the served replies only


def test_call_budget_caps_the_retries_of_one_call():
    """A server that always trickles, a 0.6 s attempt deadline and a 2 s call budget: the call gives up after
    about 2 s (not after 7 attempts x 0.6 s), as a timeout."""
    with FakeOpenAIServer(["never served"], fault_plan=["trickle"] * 20) as srv:
        client = make_client(parse_model_spec(f"openai-compatible:{srv.base_url}:fake"), timeout_s=1.0,
                             retry=RetryPolicy(max_retries=6, backoff_initial_s=0.0, jitter_frac=0.0,
                                               attempt_deadline_s=0.6, call_budget_s=2.0))
        t0 = time.monotonic()
        with pytest.raises(ModelTransportError) as e:
            client.complete(ModelRequest([Message("user", "hello")]))
        took = time.monotonic() - t0
        client.close()
    assert e.value.fault_type == "timeout" and "call budget of 2 s spent" in str(e.value)
    assert 1.5 < took < 3.5 and 3 <= e.value.attempts <= 4


def test_bodies_that_break_off_on_30_percent_of_calls_give_the_fault_free_results(inputs, clean):
    """Issue 29 item 1: a 200 whose body is cut short, reset while it streams, or chunked illegally is a
    retryable transport fault counted by type (BODY_FAULT_COUNTER), never an episode error."""
    from fakes import BODY_FAULT_COUNTER, BODY_FAULTS

    sch = FaultSchedule(rate=0.3, kinds=BODY_FAULTS, seed=3)
    r, rows, srv, out, _ = run(inputs, "body", schedule=sch)
    assert r.exit_code == 0, r.output
    injected = dict(srv.injected)
    assert set(injected) == set(BODY_FAULTS), injected  # every kind occurred (seed chosen so)
    total = sum(injected.values())
    assert len(srv.log) == 20 + total and all(x["error"] is None for x in rows)
    want = {}
    for k, n in injected.items():
        want[BODY_FAULT_COUNTER[k]] = want.get(BODY_FAULT_COUNTER[k], 0) + n
    assert {k: fault_sum(rows, k) for k in want} == want
    assert sum(x["llm_error_count"] for x in rows) == total
    assert without_faults(rows) == without_faults(clean)
    s = json.loads(invoke("summary", out, "--json", "--resamples", 20).stdout)
    assert s["faults"]["transport"] == dict(sorted(want.items()))
