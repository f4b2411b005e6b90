"""Issue 8 acceptance, fault injection: whole ``urbanarena run``s against a fake server that injects faults
from a seeded schedule.

Inputs are those of ``test_run_vlm_arena`` (T junction; ``t/loc`` answers at step 1, ``t/land`` walks 9
steps to the goal); the scripted model answers by (task, step) read from the request, so a retried or
re-asked request gets the same reply and the fault-free run is the reference. Every run has 2 tasks x 2
seeds = 4 episodes; the seeds of one task send byte-identical requests (see the schedule's concurrency
note in ``fakes.servers``), so counts are compared per run and per task.

* Transport faults at 30 %: scores, actions and positions equal the fault-free run; each fault type's
  counter (summed over the episodes) equals the server's injected count of that type; 429 waits honour
  the server's ``Retry-After`` (recorded through the client's injectable sleep: nothing really waits);
  ``--workers 1`` and ``--workers 2`` meet the same faults per request.
* Content faults at 30 % under ``cityarena-v1`` (re-request the same prompt, 3 times, without consuming a
  step) and, mixed with transport faults, under ``urbanarena-v1`` (corrective re-ask, 2 times): every
  fault is counted under its type, re-asked as the protocol defines, and no episode exceeds its step limit.
* Every reply faulted (rate 1): each step is consumed as a parse error after exactly 1 + max_reasks
  requests, and every episode stops at the step limit.
"""

from __future__ import annotations

import collections
import json

import pytest

from fakes import BODY_FAULT_COUNTER, CONTENT_FAULT_COUNTER, CONTENT_FAULTS, TRANSPORT_FAULTS, FakeOpenAIServer, FaultSchedule
from fakes.servers import MALFORMED_TEXT, REFUSAL_TEXT
from test_run_vlm_arena import PLANS, TASK_OF, db_rows, invoke, make_inputs, run_args, stable, task_and_step
from urbanarena.agents.clients.base import ModelClient
from urbanarena.agents.vlm.parsing import ECHO_MAX_CHARS, parse_arena_reply

RETRY_AFTER_S = 30.0
CLIENT_TIMEOUT_S = 3.0
PARAMS = ("-p", 'retry={"max_retries": 6, "backoff_initial_s": 0, "jitter_frac": 0}', "-p",
          f"timeout_s={CLIENT_TIMEOUT_S}", "--cache", "off")
MAX_REASKS = {"cityarena-v1": 3, "urbanarena-v1": 2}
#: agent_stats entries that count faults or their cost in requests/time (everything else must match the clean run)
FAULT_STATS = ("faults_total", "retries", "http_attempts", "reasks", "parse_failures", "parse_errors", "requests",
               "api_requests", "input_tokens", "output_tokens", "trace", "last_error_type", "last_error_message",
               "last_finish_reason", *(f"fault_{k}" for k in TRANSPORT_FAULTS),
               *(f"fault_{k}" for k in BODY_FAULT_COUNTER.values()),
               "flagged_empty", "flagged_truncated", "flagged_refusal", "flagged_oversized",
               "cost_usd")  # cost follows the tokens (re-asks cost more) when a price is known
FAULT_COLUMNS = ("llm_error_count", "llm_request_count", "parse_error_count", "total_prompt_tokens",
                 "total_completion_tokens", "total_tokens", "last_error_type", "last_error_message",
                 "last_finish_reason", "cost_usd")
# seeds chosen so that every fault type occurs in the run (asserted below, so a change cannot go unnoticed)
TRANSPORT_SEED, CONTENT_SEED, MIXED_SEED = 11, 11, 2


def script(body, n):
    """The reply of (task, step); steps beyond the plan (after a parse-error step) repeat its last reply."""
    key, step = task_and_step(body)
    plan = PLANS[key]
    return plan[min(step, len(plan)) - 1]


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch):
    for k in ("OPENAI_COMPATIBLE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(k, raising=False)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("fault_runs")
    city_dir, task_file = make_inputs(root)
    return root, city_dir, task_file


def run(inputs, name, protocol="cityarena-v1", schedule=None, workers=2, extra=()):
    """One run of 2 tasks x 2 seeds; returns (rows, server, summary, recorded retry waits)."""
    root, city_dir, task_file = inputs
    out = root / name
    waits: list[float] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ModelClient, "sleep", staticmethod(waits.append))
        with FakeOpenAIServer(script, fault_schedule=schedule, timeout_sleep_s=CLIENT_TIMEOUT_S + 1.0,
                              retry_after=str(int(RETRY_AFTER_S))) as srv:
            r = invoke(*run_args(city_dir, task_file, out, srv.base_url, "--seeds", 2, "--workers", workers,
                                 "--protocol", protocol, *PARAMS, *extra))
    assert r.exit_code == 0, r.output
    s = json.loads(invoke("summary", out, "--json", "--resamples", 20).stdout)
    return db_rows(out), srv, s, waits


def stats(row):
    return json.loads(row["agent_stats"])


def without_faults(rows):
    out = []
    for x in rows:
        d = stable(x, FAULT_STATS)
        for c in FAULT_COLUMNS:
            d.pop(c, None)
        out.append(d)
    return out


def task_of(rec):
    return TASK_OF[task_and_step(rec.body)[0]]


def fault_sequences(srv):
    """{body sha256: [fault of attempt 0, 1, ...]}."""
    seq = collections.defaultdict(dict)
    for rec in srv.log:
        seq[rec.body_sha256][rec.attempt] = rec.fault
    return {k: [v[a] for a in sorted(v)] for k, v in seq.items()}


@pytest.fixture(scope="module")
def clean(inputs):
    return {p: run(inputs, f"clean-{p}", p) for p in ("cityarena-v1", "urbanarena-v1")}


# ------------------------------------------------------------------ transport faults
def test_transport_faults_at_30_percent_change_no_score_and_are_counted_per_type(inputs, clean):
    clean_rows, clean_srv, _, _ = clean["cityarena-v1"]
    assert all(x["status"] == "ANSWER" and x["evaluation_score"] == 1.0 for x in clean_rows)
    assert len(clean_srv.log) == 20 and clean_srv.injected == {}  # (1 + 9 requests) x 2 seeds
    runs = {}
    for workers in (1, 2):
        sch = FaultSchedule(rate=0.3, kinds=TRANSPORT_FAULTS, seed=TRANSPORT_SEED)
        runs[workers] = run(inputs, f"transport-w{workers}", schedule=sch, workers=workers)
    for workers, (rows, srv, summary, waits) in runs.items():
        injected = dict(srv.injected)
        assert set(injected) == set(TRANSPORT_FAULTS)  # every type occurred
        total = sum(injected.values())
        # the rate: faults among all arrivals (20 served + the faulted ones), near 30 %
        assert len(srv.log) == 20 + total and 0.15 < total / len(srv.log) < 0.45
        # scores, actions, positions, answers: as without faults
        assert without_faults(rows) == without_faults(clean_rows)
        assert [x["evaluation_score"] for x in rows] == [x["evaluation_score"] for x in clean_rows]
        # each type's counter, summed over the episodes, is the server's injected count of that type
        st = [stats(x) for x in rows]
        assert {k: sum(s.get(f"fault_{k}", 0) for s in st) for k in injected} == injected
        assert sum(s["faults_total"] for s in st) == sum(x["llm_error_count"] for x in rows) == total
        assert sum(s["retries"] for s in st) == total and sum(s["gave_up"] for s in st) == 0
        assert sum(s["http_attempts"] for s in st) == len(srv.log)
        assert summary["faults"]["transport"] == dict(sorted(injected.items()))
        assert summary["faults"]["content"] == {} and summary["faults"]["transport_total"] == total
        # per task (its two seeds together): the faults its requests met at the server
        for task in ("t/loc", "t/land"):
            met = collections.Counter(r.fault for r in srv.log if r.fault and task_of(r) == task)
            counted = collections.Counter()
            for x, s in zip(rows, st):
                if x["task_id"] == task:
                    counted.update({k: s.get(f"fault_{k}", 0) for k in TRANSPORT_FAULTS})
            assert +counted == met
        # every 429 was followed by the server's Retry-After wait, every other fault by our zero backoff
        assert sorted(waits) == [0.0] * (total - injected["http_429"]) + [RETRY_AFTER_S] * injected["http_429"]
    # one process or two threads: the same faults met the same requests
    (_, s1, _, _), (_, s2, _, _) = runs[1], runs[2]
    assert fault_sequences(s1) == fault_sequences(s2) and s1.injected == s2.injected


def test_broken_200_replies_at_30_percent_are_retried_counted_per_type_and_change_no_score(inputs, clean):
    """Issue 29 item 1: a 200 whose body is cut short, reset mid-body, or sent in malformed chunks is a
    retryable transport fault of its own type; the run's scores equal the fault-free run's."""
    clean_rows, _, _, _ = clean["cityarena-v1"]
    sch = FaultSchedule(rate=0.3, kinds=tuple(BODY_FAULT_COUNTER), seed=TRANSPORT_SEED)
    rows, srv, summary, _ = run(inputs, "broken-replies", schedule=sch, workers=2)
    injected = dict(srv.injected)
    assert set(injected) == set(BODY_FAULT_COUNTER)  # every kind occurred
    total = sum(injected.values())
    assert len(srv.log) == 20 + total and 0.15 < total / len(srv.log) < 0.45
    assert all(x["status"] == "ANSWER" for x in rows) and len(rows) == len(clean_rows)
    assert without_faults(rows) == without_faults(clean_rows)
    assert [x["evaluation_score"] for x in rows] == [x["evaluation_score"] for x in clean_rows]
    expected = {BODY_FAULT_COUNTER[k]: n for k, n in injected.items()}
    st = [stats(x) for x in rows]
    assert {k: sum(s.get(f"fault_{k}", 0) for s in st) for k in expected} == expected
    assert sum(s["retries"] for s in st) == total and sum(s["gave_up"] for s in st) == 0
    assert summary["faults"]["transport"] == dict(sorted(expected.items()))


# ------------------------------------------------------------------ content faults
def check_content_counted(rows, srv, summary):
    injected = srv.injected_of(CONTENT_FAULTS)
    st = [stats(x) for x in rows]
    by_type = collections.Counter()
    for s in st:
        by_type.update(s["parse_errors"])
    expect = collections.Counter({CONTENT_FAULT_COUNTER[k]: v for k, v in injected.items()})
    assert by_type == expect  # every content fault counted under its type, and nothing else failed
    assert summary["faults"]["content"] == {k: expect[k] for k in summary["faults"]["content"]}
    assert summary["faults"]["content_total"] == sum(injected.values())
    flagged = collections.Counter()
    for s in st:
        flagged.update({k: s[f"flagged_{k}"] for k in ("empty", "refusal", "truncated", "oversized")})
    assert +flagged == +collections.Counter({"empty": injected.get("empty", 0) + injected.get("refusal", 0),
                                             "refusal": injected.get("refusal", 0),
                                             "truncated": injected.get("truncated", 0),
                                             "oversized": injected.get("oversized", 0)})
    # re-asks: every unusable reply but the last of a step consumed as a parse error
    assert sum(s["parse_failures"] for s in st) == sum(injected.values())
    assert sum(s["reasks"] for s in st) == sum(injected.values()) - sum(s["parse_error_steps"] for s in st)
    assert summary["faults"]["reasks"] == sum(s["reasks"] for s in st)
    return injected


def check_bounded(rows, protocol, max_steps=50):
    for x in rows:
        s = stats(x)
        assert x["steps"] <= max_steps and s["steps"] == x["steps"]
        assert x["llm_request_count"] <= x["steps"] * (1 + MAX_REASKS[protocol])
        # requests: one per step plus one per re-ask (transport retries are not requests)
        assert x["llm_request_count"] == x["steps"] + s["reasks"]


def test_content_faults_are_counted_and_re_requested_under_cityarena_v1(inputs, clean):
    clean_rows = clean["cityarena-v1"][0]
    sch = FaultSchedule(rate=0.3, kinds=CONTENT_FAULTS, seed=CONTENT_SEED)
    rows, srv, summary, _ = run(inputs, "content-cityarena", "cityarena-v1", sch)
    injected = check_content_counted(rows, srv, summary)
    assert set(injected) == set(CONTENT_FAULTS)
    check_bounded(rows, "cityarena-v1")
    # re-request: the very same prompt is sent again (same body, next attempt number), without consuming a
    # step; a body meets at most 3 faults (the schedule's cap) = max_reasks, so no step is lost
    by_body = collections.defaultdict(list)
    for rec in srv.log:
        by_body[rec.body_sha256].append(rec)
    for recs in by_body.values():
        faults = sum(r.fault is not None for r in recs)
        assert len(recs) == faults + 2  # one clean reply per seed, and one more request per fault
    assert sum(stats(x)["parse_error_steps"] for x in rows) == 0
    assert without_faults(rows) == without_faults(clean_rows)


def test_mixed_faults_are_counted_and_corrected_under_urbanarena_v1(inputs, clean):
    clean_rows = clean["urbanarena-v1"][0]
    assert all(x["status"] == "ANSWER" and x["evaluation_score"] == 1.0 for x in clean_rows)
    sch = FaultSchedule(rate=0.3, kinds=TRANSPORT_FAULTS + CONTENT_FAULTS, seed=MIXED_SEED)
    rows, srv, summary, waits = run(inputs, "mixed-urbanarena", "urbanarena-v1", sch)
    injected = check_content_counted(rows, srv, summary)
    transport = srv.injected_of(TRANSPORT_FAULTS)
    assert set(injected) == set(CONTENT_FAULTS) and len(transport) >= 3
    assert summary["faults"]["transport"] == dict(sorted(transport.items()))
    st = [stats(x) for x in rows]
    assert {k: sum(s.get(f"fault_{k}", 0) for s in st) for k in transport} == transport
    check_bounded(rows, "urbanarena-v1")
    # corrective re-ask: the next request of the step repeats the conversation, the unusable reply as the
    # assistant turn and a correction naming the problem
    bodies = [r.body for r in srv.log]
    for rec in srv.log:
        if rec.fault not in CONTENT_FAULTS:
            continue
        msgs = rec.body["messages"]
        follow = [b for b in bodies if len(b["messages"]) == len(msgs) + 2 and b["messages"][:len(msgs)] == msgs]
        assert follow, rec.fault
        said, correction = follow[0]["messages"][len(msgs)], follow[0]["messages"][len(msgs) + 1]
        assert said["role"] == "assistant" and correction["role"] == "user"
        reply_text = script(rec.body, 0)
        expect_said = {"malformed": MALFORMED_TEXT, "empty": "(empty reply)", "refusal": REFUSAL_TEXT}.get(rec.fault)
        flags = {"truncated": ["truncated"], "empty": ["empty"], "refusal": ["empty", "refusal"],
                 "oversized": ["oversized"], "malformed": []}[rec.fault]
        if rec.fault == "truncated":
            expect_said = reply_text[:len(reply_text) // 2].strip()
        if rec.fault == "oversized":
            assert said["content"].startswith(reply_text) and len(said["content"]) < ECHO_MAX_CHARS + 60
        else:
            assert said["content"] == expect_said
        text = correction["content"] if isinstance(correction["content"], str) else correction["content"][0]["text"]
        sent = {"empty": "", "refusal": "", "oversized": said["content"]}.get(rec.fault, said["content"])
        detail = parse_arena_reply(sent, flags).detail  # the reply the server sent, as the client flagged it
        assert text.startswith(f"Your previous reply could not be used: {detail}")
    # episodes without a step lost to parse errors behave as without faults
    clean_by = {(x["task_id"], x["seed"]): x for x in without_faults(clean_rows)}
    for x, d in zip(rows, without_faults(rows)):
        if stats(x)["parse_error_steps"] == 0:
            assert d == clean_by[(x["task_id"], x["seed"])]
    assert sorted(waits) == [0.0] * (sum(transport.values()) - transport.get("http_429", 0)) + [
        RETRY_AFTER_S] * transport.get("http_429", 0)


@pytest.mark.parametrize("protocol", ["cityarena-v1", "urbanarena-v1"])
def test_every_reply_faulted_ends_every_episode_at_the_step_limit(inputs, protocol):
    sch = FaultSchedule(rate=1.0, kinds=CONTENT_FAULTS, seed=3, max_per_request=None)
    rows, srv, summary, _ = run(inputs, f"all-faulted-{protocol}", protocol, sch, extra=("--max-steps", 3))
    per_step = 1 + MAX_REASKS[protocol]
    assert len(srv.log) == 4 * 3 * per_step and sum(srv.injected.values()) == len(srv.log)
    check_content_counted(rows, srv, summary)
    check_bounded(rows, protocol, max_steps=3)
    for x in rows:
        s = stats(x)
        assert x["status"] == "STEP_LIMIT" and x["steps"] == 3 and x["evaluation_score"] == 0.0
        assert x["llm_request_count"] == 3 * per_step and s["parse_error_steps"] == 3
        assert s["reasks"] == 3 * MAX_REASKS[protocol] and json.loads(x["actions"]) == ["PARSE_ERROR"] * 3
